"""``fairfl flower-sim``: a config's runs in Flower's Simulation Runtime, one virtual SuperNode per fairfl
client; the runs of a sweep config one after another in the same simulation (Ray starts once).

Flower 1.42 runs the ClientApps of a simulation on Ray actors, its only backend; ``run_simulation``
(deprecated in favour of ``flwr run``, but the entry point that takes app objects) runs the ServerApp in a
thread of this process. Each actor builds the config's engine once and answers the messages of whichever
nodes it is given. Ray gets ``num_cpus`` CPUs (default: all) and each ClientApp asks for one CPU and
``gpus_per_client`` of a GPU, so at most ``num_cpus`` ClientApps compute at a time.
"""

from __future__ import annotations

from collections.abc import Callable

from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.runner import run_data
from fairfl_core.flower import flower_module
from fairfl_core.flower.apps import client_app, server_app
from fairfl_core.flower.server import FederationResult
from fairfl_core.flower.support import check_flower_config

__all__ = ["simulate"]


def simulate(
    cfgs: list[ExperimentConfig],
    *,
    num_cpus: int | None = None,
    gpus_per_client: float = 0.0,
    report: Callable[[str], None] = print,
) -> list[FederationResult]:
    """Run each config of ``cfgs`` as a Flower simulation (module docstring), all with the same number of
    clients; ``report`` gets one line per round."""
    for cfg in cfgs:
        cfg.validate()
        check_flower_config(cfg)  # before Ray starts
    simulation = flower_module("simulation")
    sizes = sorted({run_data(cfg).num_clients for cfg in cfgs})
    if len(sizes) != 1:
        raise ValueError(
            f"the configs' data have {sizes} clients, but one Flower simulation has one set of SuperNodes: "
            "simulate the configs of each size separately"
        )
    backend = {"client_resources": {"num_cpus": 1, "num_gpus": gpus_per_client}}
    if num_cpus is not None:
        backend["init_args"] = {"num_cpus": num_cpus}
    results: list[FederationResult] = []
    simulation.run_simulation(
        server_app=server_app(cfgs, report, results.append),
        client_app=client_app(),
        num_supernodes=sizes[0],
        backend_config=backend,
    )
    if len(results) < len(cfgs):
        raise RuntimeError(
            f"the Flower simulation ended after {len(results)} of {len(cfgs)} runs: see Flower's log above"
        )
    return results
