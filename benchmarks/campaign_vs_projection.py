"""A campaign's measured hours against ``paper_cost.py``'s projection, per experiment and per algorithm.

``paper_cost.py`` projects an experiment from one timed round of its first config (FedAvg, for the FedEBA+
Fashion-MNIST experiments) on the machine's threads; a campaign runs every config, one torch thread each,
and each run's round records keep the seconds it took (:func:`~fairfl_core.experiments.campaign.run_seconds`).
For the experiments of the pages given, this prints a Markdown table: the finished runs, their measured
hours per run, the projection's hours per run, and the ratio; then per algorithm over every finished run of
the pages, the mean measured hours per run and its ratio to FedAvg's, which says how much of the gap is the
projection's use of one (cheap) config. Nothing is computed: the runs are read from ``results/<profile>``
and the profile's archives.

Usage: ``python benchmarks/campaign_vs_projection.py PROJECTION.json PAGE... [--profile paper]
[--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.campaign import campaign_pages, measured_seconds
from fairfl_core.experiments.config import ExperimentConfig, config_hash


def compare(
    projection: dict,
    pages: Mapping[str, Mapping[str, Sequence[ExperimentConfig]]],
    seconds: Mapping[str, float],
) -> dict:
    """Per experiment of ``pages`` (:func:`campaign_pages`): its runs, those finished (in ``seconds``, by
    config hash), their mean measured hours per run, the projection's hours per run (``paper_cost.py``'s
    ``alone_s`` over its runs) and the ratio; per algorithm over every finished run once: the runs, the mean
    measured hours per run and its ratio to FedAvg's."""
    projected = {e["experiment"]: e["alone_s"] / 3600 / e["runs"] for e in projection["experiments"]}
    experiments: dict[str, dict] = {}
    by_algorithm: dict[str, dict[str, float]] = defaultdict(dict)
    for experiment_runs in pages.values():
        for experiment, configs in experiment_runs.items():
            hashes = {config_hash(c): c for c in configs}
            for h, cfg in hashes.items():
                if h in seconds:
                    by_algorithm[cfg.algorithm.name][h] = seconds[h] / 3600
            hours = [seconds[h] / 3600 for h in hashes if h in seconds]
            if not hours or experiment in experiments:
                continue
            measured = statistics.fmean(hours)
            plan = projected.get(experiment)
            experiments[experiment] = {
                "runs": len(hashes),
                "finished": len(hours),
                "measured_h_per_run": measured,
                "projected_h_per_run": plan,
                "ratio": measured / plan if plan else None,
            }
    mean = {name: statistics.fmean(runs.values()) for name, runs in sorted(by_algorithm.items())}
    fedavg = mean.get("fedavg")
    algorithms = {
        name: {
            "finished": len(by_algorithm[name]),
            "measured_h_per_run": hours,
            "to_fedavg": hours / fedavg if fedavg else None,
        }
        for name, hours in mean.items()
    }
    return {"experiments": experiments, "algorithms": algorithms}


def markdown(report: dict) -> str:
    def num(x: float | None, digits: int) -> str:
        return "-" if x is None else f"{x:.{digits}f}"

    lines = [
        "| experiment | runs | finished | measured h/run | projected h/run | measured ÷ projected |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in report["experiments"].items():
        lines.append(
            f"| {name} | {e['runs']} | {e['finished']} | {e['measured_h_per_run']:.3f} | "
            f"{num(e['projected_h_per_run'], 4)} | {num(e['ratio'], 2)} |"
        )
    lines += ["", "| algorithm | finished runs | measured h/run | ÷ FedAvg's |", "|---|---|---|---|"]
    for name, a in report["algorithms"].items():
        lines.append(
            f"| {name} | {a['finished']} | {a['measured_h_per_run']:.3f} | {num(a['to_fedavg'], 2)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projection", type=Path, help="a paper_cost.py --json file")
    parser.add_argument("pages", nargs="+", help="pages or experiments, as for `fairfl campaign`")
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--results", default=None, help="default: results/<profile>")
    parser.add_argument("--root", default="published")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    seconds = measured_seconds(args.profile, args.results or f"results/{args.profile}", args.root)
    report = compare(
        json.loads(args.projection.read_text()), campaign_pages(args.pages, args.profile), seconds
    )
    report |= {"profile": args.profile, "pages": args.pages}
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
