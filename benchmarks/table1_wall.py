"""Wall time of the whole FedEBA+ Table 1 Fashion-MNIST experiment at the paper profile (issue #20).

The experiment (``experiment_configs("fedeba_table1_fmnist", "paper")``: every Table 1 method and its
controls × 5 seeds × 2,000 rounds) is swept into fresh results directories with the process executor (one
torch thread per run; ``--executor inline``: one run at a time with ``--workers`` threads) at two shortened
lengths R₁ < R₂. A sweep's wall time is a + b·R: a per-run part that
does not depend on the length (start-up, data, first evaluation, divergence of the runs that stop early) and
a per-round part. The two sweeps give a and b, and the full length's wall time is projected as a + 2000·b;
``--rounds 2000`` alone times the real experiment instead (hours on 2 CPU cores).

``--results DIR`` keeps the runs in DIR instead of a temporary directory (a single ``--rounds 2000`` then also
produces the paper profile's Table 1 runs for the notebook; DIR must not hold finished runs of these configs,
which would be reused and not timed); ``--first LABEL`` (repeatable) schedules those rows' runs before the
others, so that a sweep cut short has finished the rows that matter most.

``--methods`` keeps the paper's twelve Table 1 methods (the issue's "12 methods × 5 seeds"), dropping the
controls this package adds. Prints each sweep's time and the last line

``table1_wall runs=… rounds=R1,R2 wall_s=…,… per_round_s=… fixed_s=… projected_2000_rounds_h=… executor=…``
``workers=… methods=…`` (one line), after one line per method of the longer sweep: its runs' mean training
seconds per round (the runner's ``seconds_per_round``: evaluation and start-up excluded) and its share of
the sweep's training time.

Usage: ``python benchmarks/table1_wall.py [--rounds 50 100] [--executor process|inline] [--workers 2]
[--methods paper|all] [--results DIR] [--first LABEL ...]``
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.runner import cached_run
from fairfl_core.experiments.sweep import run_sweep

# the rows of the paper's Table 1 (Fashion-MNIST); the experiment's other labels are this package's controls
PAPER_ROWS = (
    "FedAvg",
    "FedSGD",
    "q-FFL (q=0.5)",
    "FedMGDA+ (ε=0.03)",
    "Ditto (λ=0.5)",
    "PropFair (M=0.2, ε=0.2)",
    "PropFair (M=5, ε=0.2; Table 7 grid)",
    "TERM (t=0.1)",
    "AAggFF (normal CDF)",
    "Prac-FedEBA+ (θ=15°)",
    "FedEBA+",
    "FedEBA+ (literal Eq. 11 units)",
)


def sweep_seconds(
    rounds: int,
    methods: str,
    executor: str,
    workers: int,
    results: str | None = None,
    first: tuple[str, ...] = (),
) -> tuple[int, float, dict]:
    configs = experiment_configs("fedeba_table1_fmnist", "paper", overrides=[f"train.rounds={rounds}"])
    labels = {c.name for c in configs}
    if methods == "paper":
        missing = set(PAPER_ROWS) - labels
        assert not missing, f"Table 1 rows renamed: {sorted(missing)}"
        configs = [c for c in configs if c.name in PAPER_ROWS]
    unknown = set(first) - {c.name for c in configs}
    if unknown:
        raise SystemExit(f"--first {sorted(unknown)}: no such row; rows: {sorted({c.name for c in configs})}")
    configs.sort(key=lambda c: first.index(c.name) if c.name in first else len(first))  # stable
    for c in configs:
        c.engine.threads = 1 if executor == "process" else workers
    runs = len({config_hash(c) for c in configs})  # labels sharing one config run once
    with contextlib.ExitStack() as stack:
        if results is None:
            results = stack.enter_context(tempfile.TemporaryDirectory())
        elif Path(results).is_dir() and any(cached_run(c, results) for c in configs):
            raise SystemExit(
                f"--results {results} already holds finished runs of these configs; time into "
                "an empty directory"
            )
        tick = time.perf_counter()
        pool = workers if executor == "process" else None
        out = run_sweep(configs, results, executor=executor, workers=pool, progress=False)
        seconds = time.perf_counter() - tick
    failed = [o.error for o in out if o.status == "failed"]
    assert not failed, failed
    print(f"{runs} runs of {rounds} rounds, {executor}, {workers} workers: {seconds:.1f} s", flush=True)
    training: dict[str, list[tuple[float, int]]] = {}
    for o in {o.hash: o for o in out}.values():  # one per run (two labels may share a run)
        s = o.result.summary
        training.setdefault(o.config.name, []).append((s["seconds_per_round"], s["rounds"]))
    return runs, seconds, training


def print_training(training: dict[str, list[tuple[float, int]]]) -> None:
    total = {name: sum(sec * n for sec, n in runs) for name, runs in training.items()}
    for name, runs in training.items():
        per_round = sum(sec for sec, _ in runs) / len(runs)
        rounds = max(n for _, n in runs)
        print(
            f"  {name}: s_per_round={per_round:.3f} rounds={rounds} "
            f"share={total[name] / sum(total.values()):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[50, 100], help="one or two run lengths")
    parser.add_argument("--executor", choices=("process", "inline"), default="process")
    parser.add_argument("--workers", type=int, default=2, help="processes of the pool (inline: threads)")
    parser.add_argument("--methods", choices=("paper", "all"), default="paper")
    parser.add_argument("--results", help="keep the runs here (an empty directory); default: a temporary one")
    parser.add_argument("--first", action="append", default=[], metavar="LABEL", help="run this row first")
    args = parser.parse_args()
    if len(args.rounds) not in (1, 2) or len(set(args.rounds)) != len(args.rounds):
        parser.error("--rounds takes one length, or two different ones to fit a + b·R")
    if args.results and len(args.rounds) != 1:
        parser.error("--results keeps the runs of one length: give a single --rounds")
    timed = [
        sweep_seconds(r, args.methods, args.executor, args.workers, args.results, tuple(args.first))
        for r in args.rounds
    ]
    runs, walls = timed[0][0], [s for _, s, _ in timed]
    print_training(timed[-1][2])
    if len(args.rounds) == 1:
        r = args.rounds[0]
        per_round, fixed = walls[0] / r, 0.0
    else:
        (r1, r2), (w1, w2) = args.rounds, walls
        per_round = (w2 - w1) / (r2 - r1)
        fixed = w1 - per_round * r1
    projected = fixed + 2000 * per_round
    print(
        f"table1_wall runs={runs} rounds={','.join(map(str, args.rounds))} "
        f"wall_s={','.join(f'{w:.1f}' for w in walls)} per_round_s={per_round:.3f} fixed_s={fixed:.1f} "
        f"projected_2000_rounds_h={projected / 3600:.2f} executor={args.executor} workers={args.workers} "
        f"methods={args.methods}"
    )


if __name__ == "__main__":
    main()
