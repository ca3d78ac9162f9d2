"""Kernel launches and host waits per W1 round, counted by the torch profiler (runs on a CPU too).

A round of W1 (FedAvg on FedEBA+ Table 1's Fashion-MNIST MLP setting, ``round_speed.py``) is timed out of
the host when it makes the host wait for the device. This counts, per round after a warm-up, excluding
evaluation (``runner.PendingRounds`` reads the device there):

* ``ops``: aten operators dispatched (each is a kernel launch or more on a GPU);
* ``reads``: operators that read a device value on the host: ``aten::_local_scalar_dense`` (``item()``,
  ``float()``, ``bool()`` of a tensor), ``aten::nonzero`` and ``aten::is_nonzero`` (data-dependent shapes);
* on CUDA also ``kernels`` (``cudaLaunchKernel`` calls) and ``syncs`` (``cudaStreamSynchronize``,
  ``cudaDeviceSynchronize`` and blocking ``cudaMemcpy`` calls).

On a CPU ``reads`` counts the waits a GPU would make at the same places; the tests require none in a FedAvg
round. The last line is::

    W1 device=<d> ops_per_round=<n> reads_per_round=<r> kernels_per_round=<k> syncs_per_round=<s>

Usage: ``python benchmarks/round_launches.py [--device cpu] [--rounds 5] [--config PATH]
[--set KEY=VALUE ...]`` (``--set``: config overrides, e.g. ``algorithm.name=qffl``).
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
from torch.profiler import ProfilerActivity, profile

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.experiments.runner import build_engine
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import resolve_device

CONFIG = "fairfl_core/experiments/configs/fmnist_fedavg.yaml"
READS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero")
SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy")


def count_rounds(cfg: ExperimentConfig, device: str = "cpu", rounds: int = 5, warmup: int = 2) -> dict:
    """Per-round counts (module docstring) of ``rounds`` rounds of ``cfg``'s algorithm after ``warmup``."""
    engine = build_engine(cfg, device)
    sim = Simulation(engine, cfg.train, cfg.seed, cfg.faults)
    algo = build_algorithm(cfg.algorithm.name, sim, cfg.algorithm.params)
    for t in range(warmup):
        algo.round(t)
    cuda = engine.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for t in range(warmup, warmup + rounds):
            algo.round(t)
        if cuda:
            torch.cuda.synchronize()  # the profile's last event: not counted below
    names = Counter(e.name for e in prof.events())
    out = {
        "device": str(engine.device),
        "ops_per_round": sum(n for name, n in names.items() if name.startswith("aten::")) / rounds,
        "reads_per_round": sum(names[name] for name in READS) / rounds,
    }
    if cuda:
        out["kernels_per_round"] = names["cudaLaunchKernel"] / rounds
        out["syncs_per_round"] = (sum(names[name] for name in SYNCS) - 1) / rounds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--set", nargs="*", default=[], help="config overrides, e.g. algorithm.name=qffl")
    args = parser.parse_args()
    cfg = ExperimentConfig.from_dict(load_config(args.config, args.set))
    counts = count_rounds(cfg, str(resolve_device(args.device)), args.rounds)
    label = "W1" if not args.set and args.config == CONFIG else f"{cfg.algorithm.name}"
    print(
        f"{label} "
        + " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in counts.items())
    )


if __name__ == "__main__":
    main()
