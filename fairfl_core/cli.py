"""``fairfl`` command line: run, sweep, campaign, summarize, archive, prepare-data, flower-sim,
flower-clientapp.

Bad input (a config, a flag, a file of a results directory or of the data root) is reported as one line
``fairfl: error: ...`` naming the field or file and the fix, with exit status 2; warnings (e.g. a corrupt
file moved aside) as ``fairfl: warning: ...``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

__all__ = ["main"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML/JSON config (examples: fairfl_core/experiments/configs/)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field, e.g. --set algorithm.params.mu=0.1 (repeatable)",
    )
    p.add_argument("--results", default="results", help="results directory (default: ./results)")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N | auto (default: the config's)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _print_summary(summary: dict) -> None:
    keys = [
        "status",
        "algorithm",
        "dataset",
        "seed",
        "rounds",
        "global_acc",
        "mean",
        "var",
        "std",
        "worst5",
        "best5",
        "seconds_per_round",
    ]
    for k in keys:
        v = summary.get(k)
        print(f"  {k:>18}: {v:.4f}" if isinstance(v, float) else f"  {k:>18}: {v}")


def cmd_run(args) -> int:
    from fairfl_core.experiments.config import load_config
    from fairfl_core.experiments.runner import run_experiment
    from fairfl_core.experiments.sweep import expand_sweep

    d = load_config(args.config, args.overrides)
    d.pop("sweep", None)
    (cfg,) = expand_sweep(d)
    result = run_experiment(cfg, args.results, progress=not args.quiet, device=args.device)
    print(f"run {result.path}")
    _print_summary(result.summary)
    return 0 if result.status == "complete" else 1


def cmd_sweep(args) -> int:
    from fairfl_core.experiments.config import load_config
    from fairfl_core.experiments.sweep import expand_sweep, run_sweep

    configs = expand_sweep(load_config(args.config, args.overrides))
    print(f"sweep: {len(configs)} runs → {args.results}")
    outcomes = run_sweep(
        configs,
        args.results,
        executor=args.executor,
        workers=args.workers,
        progress=not args.quiet,
        device=args.device,
        **_ray_options(args),
        **_rows_options(args),
    )
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:  # the error's first line; the traceback stays in SweepOutcome.error
        label, error = o.config.name or o.config.algorithm.name, o.error or "no error recorded"
        print(f"FAILED {label} seed {o.config.seed} [{o.hash}]: {error.splitlines()[0]}", file=sys.stderr)
    finished = [o.config for o in outcomes if o.status != "failed"]
    if finished:  # the table of the runs that finished
        print(_summary_table(args.results, None, finished).to_string(index=False))
    return 1 if failed else 0


def _ray_options(args) -> dict:
    """run_sweep's Ray options from the flags (only with --executor ray; an error names a stray flag)."""
    given = {"ray_address": args.ray_address, "num_cpus": args.ray_cpus, "num_gpus": args.ray_gpus}
    given = {k: v for k, v in given.items() if v is not None}
    if args.executor != "ray":
        if given:
            flags = ", ".join("--" + k.replace("num_", "ray-").replace("_", "-") for k in given)
            raise ValueError(f"{flags} only apply with --executor ray (got --executor {args.executor})")
        return {}
    return given


def _rows_options(args) -> dict:
    """run_sweep's rows options from the flags (only with --executor rows; an error names a stray flag)."""
    given = {"memory_gb": args.memory_gb, "stack": args.stack or None}
    given = {k: v for k, v in given.items() if v is not None}
    if given and args.executor != "rows":
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise ValueError(f"{flags} only apply with --executor rows (got --executor {args.executor})")
    return given


def _summary_table(results_dir: str, metrics: str | None, configs=None):
    """Fairness metrics of the finished runs in ``results_dir`` (only those of ``configs`` when given)."""
    from fairfl_core.report.results import load_runs
    from fairfl_core.report.tables import results_table

    chosen = metrics.split(",") if metrics else ("global_acc", "mean", "var", "std", "worst5", "best5")
    return results_table(load_runs(results_dir, configs), chosen)


def cmd_summarize(args) -> int:
    table = _summary_table(args.results_dir, args.metrics)
    print(table.to_markdown(index=False) if args.format == "markdown" else table.to_csv(index=False))
    return 0


def cmd_archive(args) -> int:
    from fairfl_core.experiments import archive
    from fairfl_core.experiments.profiles import experiment_configs
    from fairfl_core.papers import EXPERIMENTS

    results = args.results or f"results/{args.profile}"
    if args.action == "pack":
        if args.ledger:  # a page's runs: reports/<profile>/<notebook>/runs.jsonl
            ledger = Path(args.ledger)
            sources = {ledger.parent.name: archive.ledger_runs(ledger, results)}
        else:
            names = args.names or sorted(EXPERIMENTS)
            sources = {name: experiment_configs(name, args.profile) for name in names}
        for name, configs in sources.items():
            packed = archive.pack(name, args.profile, configs, results, args.root)
            if packed is not None:
                path, n, of = packed
                print(f"{path}: {n} of {of} runs ({path.stat().st_size / 1e3:.0f} kB)")
            elif args.names or args.ledger:
                print(f"{name}: no finished run at profile {args.profile!r} to archive", file=sys.stderr)
        return 0
    if not args.names:
        raise ValueError(f"archive {args.action}: name the archive files, e.g. published/quick/runs/*.tar.xz")
    if args.action == "list":
        for path in args.names:
            profile, name, runs = archive.read_manifest(path)
            print(f"{path}: {name} at {profile}, {len(runs)} runs")
            for r in runs:
                print(f"  {r.hash}  {r.label}  seed {r.seed}  numbers {r.numbers_version}")
        return 0
    done, notes = archive.unpack(args.names, results, args.profile)
    for note in notes:
        print(f"fairfl: {note}", file=sys.stderr)
    print(f"unpacked {done} run(s) into {results}")
    return 0


def cmd_campaign(args) -> int:
    import fairfl_core.papers  # noqa: F401  (registers the catalogue)
    from fairfl_core.experiments.campaign import (
        campaign_configs,
        campaign_pages,
        experiments_of,
        progress_markdown,
        progress_table,
        run_campaign,
    )

    results = args.results or f"results/{args.profile}"
    pages = campaign_pages(args.pages, args.profile)
    if args.status:
        print(progress_markdown(progress_table(pages, args.profile, results, args.root)))
        return 0
    print(f"campaign: {', '.join(experiments_of(args.pages))}", flush=True)
    run_campaign(
        campaign_configs(args.pages, args.profile),
        args.profile,
        results,
        workers=args.workers,
        chunk=args.chunk,
        root=args.root,
        device=args.device,
        pages=pages,
        say=lambda line: print(line, flush=True),
    )
    return 0


def cmd_prepare_data(args) -> int:
    from fairfl_core.data.prepare import prepare_offline_data

    report = prepare_offline_data(args.root)
    for name, status in report.items():
        print(f"  {name:>14}: {status}")
    return 0


def cmd_flower_sim(args) -> int:
    """The config's runs as a Flower simulation (``fairfl_core/flower``, docs/flower.md)."""
    from fairfl_core.flower.apps import load_experiments
    from fairfl_core.flower.simulation import simulate

    try:
        results = simulate(load_experiments(args.config, args.overrides), num_cpus=args.cpus)
    except ImportError as exc:  # Flower is an optional extra: the message names it
        print(f"fairfl: error: {exc}", file=sys.stderr)
        return 2
    for result in results:
        _print_summary(result.summary)
    return 0 if all(r.summary["status"] == "complete" for r in results) else 1


def cmd_flower_clientapp(args) -> int:
    """The long-lived ClientApp process of a SuperNode started with --isolation process."""
    from fairfl_core.flower.clientapp_process import serve

    serve(args.runtime_api_address)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fairfl", description="Fair federated learning reproductions")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one experiment config")
    _common(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="run a sweep config (algorithms × seeds × grid)")
    _common(p)
    p.add_argument("--executor", default="inline", choices=["inline", "process", "ray", "rows"])
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="processes (with rows: each trains its share as rows), or a local Ray's CPUs; default: cores/2",
    )
    p.add_argument(
        "--stack", action="store_true", help="with --executor rows: stack the runs' training on CPUs too"
    )
    p.add_argument(
        "--memory-gb", type=float, default=None, help="with --executor rows: bound of one stacked computation"
    )
    p.add_argument(
        "--ray-address", default=None, help="Ray cluster to use (default: $RAY_ADDRESS, else a local one)"
    )
    p.add_argument(
        "--ray-cpus", type=_positive_int, default=None, help="CPUs per run (default: engine.threads or 1)"
    )
    p.add_argument("--ray-gpus", type=float, default=None, help="GPUs per run (default: 1 on cuda, else 0)")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser(
        "campaign",
        help="compute every missing run of some pages at a profile, packing archive chunks: the page with "
        "the least compute left first, each page's runs cheapest first",
    )
    p.add_argument("profile", choices=["smoke", "quick", "paper"])
    p.add_argument(
        "pages",
        nargs="+",
        help="pages (fedeba_plus, fedeba_plus_ablations, fedeba_plus_appendix, quickstart, client_dropout) "
        "or experiment names",
    )
    p.add_argument("--workers", type=_positive_int, default=1, help="processes, one torch thread each")
    p.add_argument(
        "--chunk", type=_positive_int, default=10, help="finished runs per archive chunk (default: 10)"
    )
    p.add_argument("--results", default=None, help="results directory (default: results/<profile>)")
    p.add_argument("--root", default="published", help="where <profile>/runs/ is (default: published)")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N | auto (default: the configs')")
    p.add_argument(
        "--status",
        action="store_true",
        help="compute nothing: print each experiment's runs archived, finished and left, the hours its "
        "runs took and the hours left at the measured rate",
    )
    p.set_defaults(func=cmd_campaign)
    p = sub.add_parser("summarize", help="table of final fairness metrics, mean ± std over seeds")
    p.add_argument("results_dir")
    p.add_argument("--metrics", default=None, help="comma-separated summary keys")
    p.add_argument("--format", default="markdown", choices=["markdown", "csv"])
    p.set_defaults(func=cmd_summarize)
    p = sub.add_parser("archive", help="pack, unpack or list run archives (published/<profile>/runs/)")
    actions = p.add_subparsers(dest="action", required=True)
    for action, names in (
        ("pack", "experiments (default: every one with finished runs; --ledger: a page's runs instead)"),
        ("unpack", "archive files, e.g. published/quick/runs/*.tar.xz"),
        ("list", "archive files"),
    ):
        a = actions.add_parser(action, help=f"{action} run archives")
        a.add_argument("names", nargs="*", help=names)
        a.add_argument("--profile", default="quick", choices=["smoke", "quick", "paper"])
        a.add_argument("--results", default=None, help="results directory (default: results/<profile>)")
        a.add_argument("--root", default="published", help="where <profile>/runs/ is (default: published)")
        if action == "pack":
            a.add_argument(
                "--ledger",
                default=None,
                help="pack the runs a notebook loaded (reports/<profile>/<nb>/runs.jsonl)",
            )
        a.set_defaults(func=cmd_archive)
    p = sub.add_parser("prepare-data", help="fetch/check the datasets that work offline")
    p.add_argument("--root", default=None, help="data root (default: $FAIRFL_DATA or ~/.cache/fairfl)")
    p.set_defaults(func=cmd_prepare_data)
    p = sub.add_parser("flower-sim", help="run a config (or a sweep's runs) as a Flower simulation")
    p.add_argument("config", help="YAML/JSON config, as for fairfl run or fairfl sweep (docs/flower.md)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--cpus", type=_positive_int, default=None, help="Ray CPUs (default: all cores)")
    p.set_defaults(func=cmd_flower_sim)
    p = sub.add_parser(
        "flower-clientapp",
        help="the ClientApp of a SuperNode started with --isolation process: one process, every message",
    )
    p.add_argument(
        "--runtime-api-address", required=True, help="the SuperNode's Runtime API, host:port (its --port)"
    )
    p.set_defaults(func=cmd_flower_clientapp)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except (ValueError, OSError) as exc:  # bad input, or a file/directory that cannot be used
            print(f"fairfl: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("fairfl: interrupted; the same command resumes from the last checkpoint", file=sys.stderr)
            return 130


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of processes (e.g. 2)")
    return int(text)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"fairfl: warning: {message}", file=file or sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
