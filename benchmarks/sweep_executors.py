"""Sweep executors on one experiment: the process pool against runs as rows (and, optionally, Ray).

Every executor runs the same configs (an experiment's profile, its first ``--runs`` configs, every run
shortened to ``--rounds`` rounds) into a fresh results directory, one after the other in this process, with
``--workers`` processes (rows: ``sim/rows/``, on CPUs one run per task unless ``stack=True``, with which
each process trains its contiguous share of the runs as rows; Ray: a local instance of ``--workers`` CPUs).
Per-run torch threads: cores / workers.
The last line is

``sweep_executors experiment=… runs=… rounds=… process_s=… rows_s=… rows_speedup=… stacked_s=…
stacked_speedup=… [ray_s=… ray_start_s=…]``

with each executor's best of ``--repeats`` sweeps (2: timed in the order A B C C B A, so a drift of the
machine's speed favours none) and ``rows_speedup`` = process_s / rows_s (above 1: rows is faster).
``stacked`` is the rows executor with ``stack=True`` (calls stacked on the CPU too, which the CPU default
leaves alone). Every executor's runs are checked to have the process executor's evaluation records, digit for
digit.

Usage: ``python benchmarks/sweep_executors.py [--experiment fedeba_table1_fmnist] [--profile quick]
[--rounds 20] [--runs 12] [--workers 2] [--repeats 2] [--ray]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.sweep import run_sweep

EXECUTORS = {"process": ("process", {}), "rows": ("rows", {}), "stacked": ("rows", {"stack": True})}


def timed(configs, results: Path, executor: str, workers: int, **options) -> tuple[float, list]:
    tick = time.perf_counter()
    out = run_sweep(configs, results, executor=executor, workers=workers, progress=False, **options)
    seconds = time.perf_counter() - tick
    failed = [o.error for o in out if o.status == "failed"]
    assert not failed, failed
    return seconds, out


def evals(outcome) -> list:
    lines = (outcome.result.path / "evals.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "wall_time"} for line in lines]


def sweep(
    configs, tmp: Path, workers: int, repeats: int = 2, executors=EXECUTORS, **options
) -> tuple[dict[str, float], dict[str, int]]:
    """Each executor's best seconds over ``repeats`` sweeps of ``configs`` (2: in the order A B C C B A, so a
    drift of the machine's speed favours none), and per executor after the first, how many runs' evaluation
    records differ from the first executor's. ``executors``: name → (executor, its options, ``workers``
    among them to override ``workers``); ``options`` go to every ``run_sweep`` (e.g. ``device``)."""
    seconds: dict[str, list[float]] = {name: [] for name in executors}
    order = list(executors) if repeats == 1 else [*executors, *reversed(executors)]
    outs = {}
    for i, name in enumerate(order):
        executor, own = executors[name]
        own = {"workers": workers, **own}
        s, outs[name] = timed(configs, tmp / f"{name}-{i}", executor, **own, **options)
        seconds[name].append(s)
    first, *others = executors
    differ = {
        name: sum(evals(a) != evals(b) for a, b in zip(outs[first], outs[name], strict=True))
        for name in others
    }
    return {name: min(v) for name, v in seconds.items()}, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="fedeba_table1_fmnist")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per run")
    parser.add_argument("--runs", type=int, default=None, help="only the first N configs (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="processes / Ray CPUs")
    parser.add_argument("--repeats", type=int, choices=[1, 2], default=2, help="1: A B C; 2: A B C C B A")
    parser.add_argument("--ray", action="store_true", help="also time the Ray executor")
    args = parser.parse_args()
    configs = experiment_configs(args.experiment, args.profile, overrides=[f"train.rounds={args.rounds}"])
    configs = configs[: args.runs]
    n = len({config_hash(c) for c in configs})  # one run per distinct config (two labels may share one)
    print(f"{args.experiment} ({args.profile}): {n} runs of {args.rounds} rounds, {args.workers} workers")
    with tempfile.TemporaryDirectory() as tmp:
        seconds, differ = sweep(configs, Path(tmp), args.workers, args.repeats)
        for name, count in differ.items():
            assert count == 0, f"{count} runs differ between process and {name}"
        process_s, rows_s, stacked_s = (seconds[name] for name in EXECUTORS)
        line = (
            f"sweep_executors experiment={args.experiment} runs={n} rounds={args.rounds} "
            f"process_s={process_s:.1f} rows_s={rows_s:.1f} rows_speedup={process_s / rows_s:.2f} "
            f"stacked_s={stacked_s:.1f} stacked_speedup={process_s / stacked_s:.2f}"
        )
        if args.ray:
            import ray

            tick = time.perf_counter()
            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
            start_s = time.perf_counter() - tick
            ray_s, _ = timed(configs, Path(tmp) / "ray", "ray", args.workers)
            ray.shutdown()
            line += f" ray_s={ray_s:.1f} ray_start_s={start_s:.1f}"
    print(line)


if __name__ == "__main__":
    main()
