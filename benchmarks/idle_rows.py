"""Idle rows: a round's local training when a stack steps only the clients that still have minibatches.

A stack of K clients with unequal schedules (``local_epochs`` over clients of unequal sizes) used to step
every client as many times as its longest client, the finished ones masked. On the loop client axis (LSTMs
everywhere, convolutional models on CPU) each client is its own computation, so the stack now leaves idle
rows out (``ClientStack.skips_idle_rows``) with the same bits (``tests/sim/test_stack.py``). For each
registered experiment on that axis, round 0 of its first config at ``--profile``:

    <experiment> <model> K=<clients> padding=<K × longest schedule / steps taken> [skipped_s=<s> carried_s=<s>
        ratio=<carried / skipped>]

``padding`` comes from the round's schedule alone (no training); ``--time`` also trains the round's clients
both ways, in one process (``--only``: a regular expression on experiment names; timing a paper-profile
Shakespeare round takes minutes).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/idle_rows.py [--profile paper] [--only REGEX] [--time]``
"""

from __future__ import annotations

import argparse
import re
import time

import torch
from paper_cost import build, first_plan

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.profiles import EXPERIMENTS, experiment_configs
from fairfl_core.sim.client_map import ClientAxis


def train_round(engine, clients, start, spec, skip: bool) -> float:
    """Seconds to train ``clients`` through round 0's schedule, idle rows skipped or carried."""
    stack = engine.stack(clients, start, spec, seed=0)
    stack.skips_idle_rows = skip
    tick = time.perf_counter()
    for _ in range(stack.schedule.num_steps):
        stack.step()
    return time.perf_counter() - tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper", choices=("smoke", "quick", "paper"))
    parser.add_argument("--only", default=None, help="regular expression on experiment names")
    parser.add_argument("--time", action="store_true", help="also train the round both ways")
    args = parser.parse_args()
    device = torch.device("cpu")
    print(f"device={device} threads={torch.get_num_threads()} profile={args.profile}", flush=True)
    for exp in EXPERIMENTS:
        if args.only and not re.search(args.only, exp):
            continue
        cfg = experiment_configs(exp, args.profile)[0]
        if cfg.train.local_epochs is None:  # a fixed number of local steps: every client takes them all
            continue
        try:
            algo = build(cfg, device)
        except FileNotFoundError as exc:  # a dataset without a stand-in that this machine lacks
            print(f"{exp} not measured: {str(exc).splitlines()[0]}", flush=True)
            continue
        engine = algo.sim.engine
        if ClientAxis.resolve(cfg.engine.client_axis, engine.model, device).name != "loop":
            continue
        clients, start, spec = first_plan(algo)
        schedule = engine.schedule(clients, spec, seed=0)
        taken = int(schedule.active.sum())
        line = (
            f"{exp:44} {cfg.model.name:18} K={len(clients)} "
            f"padding={len(clients) * schedule.num_steps / max(taken, 1):.2f}"
        )
        if args.time:
            skipped = train_round(engine, clients, start, spec, True)
            carried = train_round(engine, clients, start, spec, False)
            line += f" skipped_s={skipped:.2f} carried_s={carried:.2f} ratio={carried / skipped:.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
