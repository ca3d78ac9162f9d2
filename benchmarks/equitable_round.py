"""Equitable-FL's round against its local training (issue #30, item 2), Table 2's MNIST column.

The workload is the ``quick`` profile's Equitable-FL run of ``equitable_table2_mnist`` (10 clients, r = 4,
E = 5 epochs of batch 32, MLP 784-200-200-10; the labelled Fashion-MNIST stand-in without the MNIST files).
In one process, in interleaved blocks (medians), it times:

* ``local``: the round's local training alone, FedProx's local epochs of the same clients
  (``Engine.train`` with Equitable-FL's spec less its activation statistic);
* ``train+stat``: the same with the activation-vector statistic the clients upload (``ActivationMean``);
* ``round``: a whole Equitable-FL round as the runs make it now (``round_metrics`` off, the default);
* ``round+metrics``: the same with ``round_metrics=True`` (CD, σ_Acc and the all-clients NMI at every
  round's new model: the default before issue #30);
* ``evaluate``: the runner's evaluation after a round (every round in these experiments).

The last line is ``EQ round_s=… local_s=… ratio=… ratio_with_metrics=…``.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/equitable_round.py [--rounds 2] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.runner import build_engine, evaluate
from fairfl_core.sim.context import Simulation


def equitable_config(experiment: str = "equitable_table2_mnist", profile: str = "quick"):
    """The Equitable-FL run of ``experiment`` at ``profile`` (seed 0)."""
    configs = experiment_configs(experiment, profile, seeds=[0])
    return next(c for c in configs if c.algorithm.name == "equitable_fl")


class Run:
    """One Equitable-FL run (its own engine and algorithm) whose rounds advance as they are timed."""

    def __init__(self, cfg, **params):
        self.engine = build_engine(cfg)
        self.sim = Simulation(self.engine, cfg.train, cfg.seed, cfg.faults)
        self.algo = build_algorithm("equitable_fl", self.sim, {**cfg.algorithm.params, **params})
        self.t = 0

    def round(self) -> None:
        self.algo.round(self.t)
        self.t += 1

    def local(self, statistic: bool) -> None:
        """Round t's local training of its clients from the current model, without aggregating."""
        plan = self.algo.configure(self.t)
        spec = plan.spec if statistic else replace(plan.spec, statistics=())
        self.engine.train(plan.clients, self.algo.w, spec, self.sim.seed_for(self.t, "batches"))
        self.t += 1


def timed(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds per block")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved blocks (medians)")
    args = parser.parse_args()
    cfg = equitable_config()
    print(f"threads={torch.get_num_threads()} torch={torch.__version__} data={cfg.data.name}")
    now, before, train = Run(cfg), Run(cfg, round_metrics=True), Run(cfg)
    for run in (now, before, train):  # warm-up
        run.round()
    work = {
        "local": lambda: train.local(statistic=False),
        "train+stat": lambda: train.local(statistic=True),
        "round": now.round,
        "round+metrics": before.round,
        "evaluate": lambda: evaluate(now.algo, now.sim, now.t),
    }
    blocks: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(args.repeats):
        for name, fn in work.items():
            blocks[name].append(timed(fn, args.rounds))
    med = {name: statistics.median(b) for name, b in blocks.items()}
    for name, b in blocks.items():
        print(f"{name} s: median {med[name]:.3f}, blocks " + " ".join(f"{x:.3f}" for x in b))
    local = med["local"]
    print(
        f"EQ round_s={med['round']:.3f} local_s={local:.3f} ratio={med['round'] / local:.2f} "
        f"ratio_with_metrics={med['round+metrics'] / local:.2f} stat_ratio={med['train+stat'] / local:.2f} "
        f"evaluate_s={med['evaluate']:.3f}"
    )


if __name__ == "__main__":
    main()
