"""The fidelity check a fast ``engine.precision`` is offered with: one paper table run both ways.

Every run of an experiment's table (``--experiment``, ``--profile``) is trained in ``exact`` and in the fast
mode (``--mode tf32|bf16``, ``sim/precision.py``) from the same configs and seeds. Per table row (a method)
and metric (mean client accuracy, its standard deviation, the worst 10 %, the global model's accuracy), the
fast mode passes where its mean over seeds lies within half the seed-to-seed standard deviation of the exact
runs: a change of precision must move a row by less than reseeding does. Rows with fewer than 3 seeds are
"not decided". ``--mode float64`` is the control: exact float32 against exact float64, a change of rounding
alone, which shows how much of a fast mode's verdict any change of the last bits explains. The last line is::

    fidelity <experiment> <profile> <mode> device=<d> rows=<n> pass=<p> fail=<f> not_decided=<u> verdict=<v>

and ``--json`` writes every comparison. Runs are kept under ``--results`` (default ``results/fidelity``), so
an interrupted check resumes.

Usage: ``python benchmarks/precision_fidelity.py --experiment quickstart --profile quick --mode bf16
[--device cuda] [--results DIR] [--workers N] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.sweep import run_sweep

METRICS = ("mean", "std", "worst10", "global_acc")
MIN_SEEDS = 3


def compare(exact: dict[str, list[dict]], fast: dict[str, list[dict]]) -> list[dict]:
    """Per row and metric: both means, the exact runs' seed-to-seed std, and the verdict (``pass``: the
    means differ by at most half that std; ``not decided`` below :data:`MIN_SEEDS` seeds a side)."""
    out = []
    for row, runs in exact.items():
        for metric in METRICS:
            a = np.array([r[metric] for r in runs], dtype=float)
            b = np.array([r[metric] for r in fast.get(row, [])], dtype=float)
            if min(len(a), len(b)) < MIN_SEEDS:
                verdict, spread = "not decided", float("nan")
            else:
                spread = float(a.std(ddof=1))
                verdict = "pass" if abs(b.mean() - a.mean()) <= 0.5 * spread else "fail"
            out.append(
                {
                    "row": row,
                    "metric": metric,
                    "seeds": [len(a), len(b)],
                    "exact": float(a.mean()) if len(a) else None,
                    "fast": float(b.mean()) if len(b) else None,
                    "seed_std": spread,
                    "verdict": verdict,
                }
            )
    return out


MODES = {"exact": [], "tf32": ["engine.precision=tf32"], "bf16": ["engine.precision=bf16"]}
MODES["float64"] = ["engine.dtype=float64"]  # the control: exact arithmetic with other rounding


def summaries(
    experiment: str, profile: str, mode: str, results: str, device: str | None, workers: int | None
) -> dict:
    """Each row's finished-run summaries of ``experiment`` at ``profile`` in ``mode`` (:data:`MODES`)."""
    configs = experiment_configs(experiment, profile, overrides=MODES[mode], device=device)
    rows: dict[str, list[dict]] = defaultdict(list)
    executor = "inline" if workers is None else "process"
    for outcome in run_sweep(configs, results, device=device, executor=executor, workers=workers):
        if outcome.result is None:
            raise RuntimeError(f"{outcome.config.name} (seed {outcome.config.seed}) failed: {outcome.error}")
        rows[outcome.config.name].append(outcome.result.summary)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="quickstart")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--mode", choices=["tf32", "bf16", "float64"], default="bf16")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: this one)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--results", default="results/fidelity")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    exact = summaries(args.experiment, args.profile, "exact", args.results, args.device, args.workers)
    fast = summaries(args.experiment, args.profile, args.mode, args.results, args.device, args.workers)
    table = compare(exact, fast)
    counts = {v: sum(c["verdict"] == v for c in table) for v in ("pass", "fail", "not decided")}
    verdict = "pass" if counts["fail"] == 0 and counts["not decided"] == 0 else "fail"
    if counts["fail"] == 0 and counts["not decided"]:
        verdict = "not decided"
    for c in table:
        print(
            f"{c['row']:32} {c['metric']:10} exact={c['exact']:.4f} {args.mode}={c['fast']:.4f} "
            f"seed_std={c['seed_std']:.4f} {c['verdict']}"
        )
    device = next(iter(exact.values()))[0]["device"]
    print(
        f"fidelity {args.experiment} {args.profile} {args.mode} device={device} rows={len(exact)} "
        f"pass={counts['pass']} fail={counts['fail']} not_decided={counts['not decided']} verdict={verdict}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "experiment": args.experiment,
                    "profile": args.profile,
                    "mode": args.mode,
                    "device": device,
                    "verdict": verdict,
                    "comparisons": table,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
