"""Per-round overhead: a round's wall time against the wall time of its local training, per algorithm family.

For each algorithm (default: the families the notebooks use), the first registered experiment that runs it
is built at ``--profile`` (smoke or quick; its first config of that algorithm) and timed for ``--rounds``
rounds after one warm-up round, evaluation excluded (``algo.round(t)`` only, as ``paper_cost.py`` times a
round). Within the same rounds the engine's local training is timed: every ``train`` / ``train_pooled``
call, and every ``step`` / ``gradients`` of a ``ClientStack`` an algorithm drives itself (AFGA, DSGD; their
gossip counts as overhead). One line per algorithm::

    <algorithm> <experiment> <model> round_s=<r> local_s=<l> ratio=<r/l> [ratio > 2]

flagged when the round costs more than twice its local training (issue 30, item 2).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/round_overhead.py [--profile smoke] [--rounds 2]
[--algorithms fedavg,qffl] [--only REGEX] [--device cpu]`` (``--only``: a regular expression on the
experiments considered).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from typing import Any

import torch
from paper_cost import build, time_rounds
from round_speed import sync

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.profiles import EXPERIMENTS, experiment_configs
from fairfl_core.sim.devices import resolve_device

# the algorithm families the notebooks compare (issue 30 names these; more with --algorithms)
FAMILIES = (
    "fedavg",
    "fedeba+",
    "qffl",
    "gifair_global",
    "ditto",
    "subtrunc",
    "divfl",
    "afga",
    "cafga",
    "equitable_fl",
    "feddyn",
    "scaffold",
)
FLAG = 2.0  # a round above FLAG × its local training is flagged


class LocalTimer:
    """Wall seconds the engine spends in local training (module docstring), accumulated in ``seconds``."""

    def __init__(self, engine, device: torch.device):
        self.seconds, self.device = 0.0, device
        engine.train = self.timed(engine.train)
        engine.train_pooled = self.timed(engine.train_pooled)
        stack = engine.stack

        def timed_stack(*args, **kwargs):
            out = stack(*args, **kwargs)
            out.step = self.timed(out.step)
            out.gradients = self.timed(out.gradients)
            return out

        engine.stack = timed_stack

    def timed(self, fn: Callable) -> Callable:
        def call(*args, **kwargs) -> Any:
            sync(self.device)
            tick = time.perf_counter()
            out = fn(*args, **kwargs)
            sync(self.device)
            self.seconds += time.perf_counter() - tick
            return out

        return call


def first_config(algorithm: str, profile: str, only: str | None):
    """``(experiment, config)``: the first registered experiment's first config that runs ``algorithm``."""
    for exp in EXPERIMENTS:
        if only and not re.search(only, exp):
            continue
        for cfg in experiment_configs(exp, profile):
            if cfg.algorithm.name == algorithm:
                return exp, cfg
    return None, None


def overhead(cfg, device: torch.device, rounds: int) -> tuple[float, float]:
    """``(round_s, local_s)``: mean wall seconds of a round and of its local training, over ``rounds``
    rounds after one warm-up round."""
    algo = build(cfg, device)
    algo.round(0)
    timer = LocalTimer(algo.sim.engine, device)
    round_s = time_rounds(algo, rounds, device, first=1)
    return round_s, timer.seconds / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke", choices=("smoke", "quick"))
    parser.add_argument("--rounds", type=int, default=2, help="rounds timed after one warm-up round")
    parser.add_argument("--algorithms", default=",".join(FAMILIES), help="comma-separated algorithm names")
    parser.add_argument("--only", default=None, help="regular expression on experiment names")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = resolve_device(args.device)
    print(f"device={device} threads={torch.get_num_threads()} profile={args.profile} rounds={args.rounds}")
    for algorithm in args.algorithms.split(","):
        exp, cfg = first_config(algorithm, args.profile, args.only)
        if cfg is None:
            print(f"{algorithm:14} no experiment runs it", flush=True)
            continue
        try:
            round_s, local_s = overhead(cfg, device, args.rounds)
        except FileNotFoundError as exc:  # a dataset without a stand-in that this machine lacks
            print(f"{algorithm:14} {exp} not measured: {str(exc).splitlines()[0]}", flush=True)
            continue
        ratio = round_s / local_s if local_s > 0 else float("inf")
        flag = f" [ratio > {FLAG:g}]" if ratio > FLAG else ""
        print(
            f"{algorithm:14} {exp:40} {cfg.model.name:16} round_s={round_s:.4f} local_s={local_s:.4f} "
            f"ratio={ratio:.2f}{flag}",
            flush=True,
        )


if __name__ == "__main__":
    main()
