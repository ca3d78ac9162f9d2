"""A finished run's reported model against its last iterate, from the run's final checkpoint.

AFL reports the average of its iterates (``AFL.eval_params``: fair_flearn's ``resulting_model``, FLGo's
``result_model``), so its published accuracy is the averaged iterate's. This script loads each finished
run's final checkpoint (``results/<profile>/<hash>/checkpoint.pt``, which the run archive does not keep: run
it where the runs were computed), evaluates the reported model and the last iterate ``w`` on the pooled test
set and on the clients' test splits the way the runner does, checks that the reported model reproduces the
run's
``summary.json``, and prints one row per run group (name, server momentum and its step, label noise):
mean ± std over the group's seeds of the global accuracy and the variance of the clients' accuracies. Runs
that diverged are counted, not evaluated (their summary is an earlier evaluation than their checkpoint).

Usage: ``.venv/bin/python scripts/last_iterate.py [results/paper] [--algorithm afl]`` (a few seconds a run
on one CPU thread).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from fairfl_core.algorithms.base import algorithm_class
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.runner import build_engine, eval_summary, evaluate
from fairfl_core.sim.context import Simulation


class _Iterate:
    """An algorithm seen through another model: what :func:`evaluate` asks of it."""

    def __init__(self, w: torch.Tensor) -> None:
        self.w = w

    def eval_params(self) -> torch.Tensor:
        return self.w

    def personal_params(self) -> None:
        return None


def reported_and_last(run: Path) -> dict[str, dict[str, float]]:
    """``{"reported": ..., "last": ...}``: the run's summary metrics (``global_acc``, ``var``, ...) of its
    reported model and of its last iterate at the final checkpoint."""
    cfg = ExperimentConfig.from_dict(json.loads((run / "config.json").read_text()))
    summary = json.loads((run / "summary.json").read_text())
    sim = Simulation(build_engine(cfg, "cpu"), cfg.train, cfg.seed, cfg.faults)
    algo = algorithm_class(cfg.algorithm.name)(sim, cfg.checked_hyper())
    checkpoint = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=False)
    algo.load_state_dict(checkpoint["state"])
    out = {
        which: eval_summary(evaluate(model, sim, checkpoint["round"]), sim.groups)
        for which, model in (("reported", algo), ("last", _Iterate(algo.w)))
    }
    # on the machine that computed the run the two are one computation; elsewhere other kernels may flip the
    # prediction of a test sample at a near-tie: 0.05 points is 5 of Fashion-MNIST's 10,000 test images
    if abs(out["reported"]["global_acc"] - summary["global_acc"]) > 0.05:
        raise SystemExit(
            f"{run}: the reported model's accuracy {out['reported']['global_acc']:.4f} is not the summary's "
            f"{summary['global_acc']:.4f} (±0.05): the checkpoint is not the run's final state; recompute "
            "the run"
        )
    return out


def group(cfg: dict) -> tuple:
    params = cfg["algorithm"]["params"]
    return (
        cfg["name"],
        params.get("server_momentum", 0.0),
        params.get("server_momentum_lr", 1.0),
        cfg["data"]["label_noise"],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results/paper", type=Path)
    parser.add_argument("--algorithm", default="afl", help="the algorithm's registered name (default: afl)")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        raise SystemExit(f"{args.results}: no such results folder; pass results/<profile> (results/paper)")
    torch.set_num_threads(1)
    rows: dict[tuple, list[dict]] = defaultdict(list)
    diverged: dict[tuple, int] = defaultdict(int)
    for run in sorted(args.results.iterdir()):
        if not (run / "summary.json").exists() or not (run / "checkpoint.pt").exists():
            continue
        cfg = json.loads((run / "config.json").read_text())
        if cfg["algorithm"]["name"] != args.algorithm:
            continue
        if json.loads((run / "summary.json").read_text())["diverged_round"] is not None:
            diverged[group(cfg)] += 1
        else:
            rows[group(cfg)].append(reported_and_last(run))
    if not rows and not diverged:
        raise SystemExit(f"no finished {args.algorithm} run with a checkpoint under {args.results}")
    print(
        "| run | momentum β | server step η | label noise | seeds (diverged) | accuracy, reported | "
        "accuracy, last iterate | variance, reported | variance, last iterate |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(set(rows) | set(diverged), key=str):
        runs = rows[key]
        cells = [
            f"{np.mean(v):.2f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.2f}" if v else "—"
            for metric in ("global_acc", "var")
            for v in ([r[which][metric] for r in runs] for which in ("reported", "last"))
        ]
        print("| " + " | ".join(map(str, (*key, f"{len(runs)} ({diverged[key]})", *cells))) + " |")


if __name__ == "__main__":
    main()
