"""A campaign: every missing run of some published pages at one profile, computed until complete, stopping and
resuming anywhere, its finished runs packed into archive chunks that never change once written.

    fairfl campaign paper fedeba_plus_ablations fedeba_plus_appendix quickstart client_dropout --workers 1

:func:`campaign_configs` lists the runs of the named pages (:data:`PAGES`, or experiment names) at the
profile, each distinct config once; :func:`plan` keeps those neither finished in the results directory nor
held by an archive of the profile (``published/<profile>/runs/**.tar.xz``), cheapest first by
:func:`cost_units`, and :func:`page_order` finishes one page at a time, the page with the least compute left
first (:func:`campaign_pages`), and within it one experiment at a time, so that each page (or a notebook's
choice of its tables) can be published as soon as its own runs are done.
:func:`run_campaign` runs them
(inline with one torch thread when ``workers`` is 1, else a pool of ``workers`` single-threaded processes),
prints a line per finished run with the runs done and left and the hours left at the rate measured so far,
and every ``chunk`` finished runs (and at its start and end) packs the finished runs no archive holds into a
new chunk ``published/<profile>/runs/chunks/<nnnn>.tar.xz``; when a page's last run finishes it packs a chunk
and says the page can be published. A chunk is written once and never rewritten, so
a commit of new chunks adds only new runs. A run interrupted with the machine resumes from its checkpoint if
the work tree survived (:mod:`~fairfl_core.experiments.runner`), and is recomputed otherwise.
:func:`progress_table` (``fairfl campaign ... --status``) says where each experiment stands without
computing anything: runs archived, finished and left, the hours its runs took, the hours left.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing as mp
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from fairfl_core.experiments import archive
from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.outcome import SweepOutcome, run_one
from fairfl_core.experiments.profiles import EXPERIMENTS, experiment_configs
from fairfl_core.experiments.runner import cached_run, run_data
from fairfl_core.experiments.store import RunStore
from fairfl_core.experiments.sweep import worker_init

__all__ = [
    "CHUNKS",
    "FULL_PARTICIPATION",
    "PAGES",
    "Campaign",
    "ExperimentProgress",
    "archived_hashes",
    "campaign_configs",
    "campaign_pages",
    "cost_units",
    "experiments_of",
    "measured_seconds",
    "pack_chunk",
    "page_order",
    "plan",
    "progress_markdown",
    "progress_table",
    "run_campaign",
    "run_seconds",
]

CHUNKS = "chunks"  # published/<profile>/runs/chunks/<nnnn>.tar.xz

# The experiments each page's runs come from, at the paper profile, where the page's notebook runs only
# some of its experiments there: the CIFAR-10 CNN columns (no CIFAR-10 offline; their stand-in at 2000 CNN
# rounds is not part of these pages) are left out. A name that is no page is an experiment's.
PAGES: dict[str, tuple[str, ...]] = {
    "fedeba_plus": ("fedeba_table1_fmnist",),
    "fedeba_plus_ablations": (
        "fedeba_table3_theta",
        "fedeba_table15_ablation",
        "fedeba_table16_sensitivity",
        "fedeba_fig9_annealing",
    ),
    "fedeba_plus_appendix": (
        "fedeba_table9_mlp",
        "fedeba_table10_momentum",
        "fedeba_table11_fedvarp",
        "fedeba_table13_noise_fmnist",
        "fedeba_table1_fmnist",
    ),
    "quickstart": ("quickstart",),
    "client_dropout": ("client_dropout",),
}


def experiments_of(names: Iterable[str]) -> list[str]:
    """The experiments of ``names`` (pages of :data:`PAGES` or experiment names), each once, in order."""
    out: dict[str, None] = {}
    for name in names:
        if name in PAGES:
            out |= dict.fromkeys(PAGES[name])
        elif name in EXPERIMENTS:
            out[name] = None
        else:
            raise ValueError(
                f"{name!r} is neither a page ({', '.join(PAGES)}) nor a registered experiment; "
                "`fairfl campaign --help` lists the pages"
            )
    return list(out)


FULL_PARTICIPATION = ("afl",)  # algorithms that train every client every round (AFL, Mohri et al. 2019)


def cost_units(cfg: ExperimentConfig) -> float:
    """A run's compute in units proportional to its floating-point work on one model: the samples it passes
    forward and backward in local training (rounds × training clients × local steps × batch, three passes;
    every client for :data:`FULL_PARTICIPATION`) plus those its evaluations pass forward (every client's
    test split and the pooled test set, once per evaluation). It orders a campaign's runs and turns the
    seconds per unit measured so far into the hours left."""
    data = run_data(cfg)
    every = data.num_clients if cfg.algorithm.name in FULL_PARTICIPATION else cfg.train.clients_per_round
    steps = cfg.train.local_steps or 1
    train = cfg.train.rounds * every * steps * cfg.train.batch_size * 3
    tested = sum(len(t) for t in data.client_test) + len(data.pooled_test)
    return float(train + cfg.train.rounds // cfg.eval.every * tested)


def archived_hashes(profile: str, root: str | Path = "published", excluding: str | None = None) -> set[str]:
    """The runs held by the archives of ``profile`` (the pages' and the chunks; ``excluding``: but page
    ``excluding``'s own), by config hash."""
    folder = Path(root) / profile / archive.ARCHIVES
    paths = [p for p in folder.rglob("*.tar.xz") if p != folder / f"{excluding}.tar.xz"]
    return {r.hash for path in sorted(paths) for r in archive.read_manifest(path)[2]}


def campaign_configs(names: Sequence[str], profile: str) -> list[ExperimentConfig]:
    """Every distinct run of ``names`` (pages or experiments, :func:`experiments_of`) at ``profile``."""
    configs: dict[str, ExperimentConfig] = {}
    for experiment in experiments_of(names):
        for cfg in experiment_configs(experiment, profile):
            configs.setdefault(config_hash(cfg), cfg)
    return list(configs.values())


def campaign_pages(names: Sequence[str], profile: str) -> dict[str, dict[str, list[ExperimentConfig]]]:
    """Each of ``names`` (a page or an experiment) → each of its experiments (:func:`experiments_of`) → that
    experiment's distinct runs at ``profile``."""
    return {
        name: {experiment: campaign_configs([experiment], profile) for experiment in experiments_of([name])}
        for name in dict.fromkeys(names)
    }


def plan(
    configs: Iterable[ExperimentConfig], profile: str, results_dir: str | Path, root: str | Path = "published"
) -> list[ExperimentConfig]:
    """The runs of ``configs`` still to compute (neither finished in ``results_dir`` nor held by an archive
    of ``profile``), cheapest first (:func:`cost_units`)."""
    held = archived_hashes(profile, root)
    todo = [c for c in configs if config_hash(c) not in held and cached_run(c, results_dir) is None]
    return sorted(todo, key=cost_units)


def pack_chunk(
    configs: Iterable[ExperimentConfig], profile: str, results_dir: str | Path, root: str | Path = "published"
) -> tuple[Path, int] | None:
    """Pack the finished runs of ``configs`` that no archive of ``profile`` holds into a new chunk
    (numbered after the last one); (its path, its runs), or None when there is nothing new."""
    held = archived_hashes(profile, root)
    new = [c for c in configs if config_hash(c) not in held and cached_run(c, results_dir) is not None]
    if not new:
        return None
    folder = Path(root) / profile / archive.ARCHIVES / CHUNKS
    numbers = [int(p.name.split(".")[0]) for p in folder.glob("*.tar.xz") if p.name.split(".")[0].isdigit()]
    name = f"{CHUNKS}/{max(numbers, default=0) + 1:04d}"
    packed = archive.pack(name, profile, new, results_dir, root)
    assert packed is not None  # every one of ``new`` is finished
    return packed[0], packed[1]


def page_order(
    pages: Mapping[str, Mapping[str, Sequence[ExperimentConfig]]], todo: Sequence[ExperimentConfig]
) -> list[ExperimentConfig]:
    """``todo`` one page at a time, the page with the least compute left first (:func:`cost_units` of its
    runs in ``todo``), and within a page one experiment at a time the same way, so that a page's tables
    can be published as each finishes; each experiment's runs cheapest first. A run that pages or
    experiments share goes with the first of them to be computed; a run of no page comes last."""
    cost = {config_hash(c): cost_units(c) for c in todo}
    left = {config_hash(c): c for c in todo}

    def hashes(cfgs: Iterable[ExperimentConfig]) -> list[str]:
        return list(dict.fromkeys(config_hash(c) for c in cfgs))

    def least_left(groups: Mapping[str, list[str]]) -> list[str]:
        return sorted(groups, key=lambda name: sum(cost.get(h, 0.0) for h in groups[name]))

    ordered: list[ExperimentConfig] = []
    for page in least_left({n: hashes(c for cfgs in e.values() for c in cfgs) for n, e in pages.items()}):
        experiments = {name: hashes(cfgs) for name, cfgs in pages[page].items()}
        for name in least_left(experiments):
            mine = [left.pop(h) for h in experiments[name] if h in left]
            ordered += sorted(mine, key=lambda c: cost[config_hash(c)])
    return ordered + sorted(left.values(), key=lambda c: cost[config_hash(c)])


@dataclass
class Campaign:
    """Progress of a campaign: runs finished here, the seconds their rounds took (each run's own, as
    :func:`run_seconds`, so that a run resumed from a checkpoint does not look nearly free) and their cost
    units."""

    total: int
    todo: int
    done: int = 0
    seconds: float = 0.0
    units: float = 0.0
    units_left: float = 0.0

    def hours_left(self, workers: int) -> float:
        """Hours to finish at the rate measured so far (NaN before the first run finishes)."""
        if not self.units:
            return float("nan")
        return self.seconds / self.units * self.units_left / workers / 3600

    def line(self, outcome: SweepOutcome, seconds: float, workers: int) -> str:
        status = outcome.status if outcome.error is None else f"failed: {outcome.error.splitlines()[0]}"
        left = self.hours_left(workers)
        eta = f"{left:.1f} h left at the measured rate" if left == left else "rate not measured yet"
        return (
            f"[{self.done}/{self.todo} done, {self.todo - self.done} left; {self.total} runs in all] "
            f"{outcome.config.name} seed {outcome.config.seed} ({outcome.hash}): {status} in "
            f"{seconds:.0f} s; "
            f"{eta} ({workers} worker{'s' if workers > 1 else ''})"
        )


def run_campaign(
    configs: Sequence[ExperimentConfig],
    profile: str,
    results_dir: str | Path,
    *,
    workers: int = 1,
    chunk: int = 10,
    root: str | Path = "published",
    device: str | None = None,
    pages: Mapping[str, Mapping[str, Sequence[ExperimentConfig]]] | None = None,
    say: Callable[[str], None] = print,
) -> Campaign:
    """Compute every missing run of ``configs`` (:func:`campaign_configs`) at ``profile`` (:func:`plan`),
    cheapest first, or one of ``pages`` (:func:`campaign_pages`) and one of its experiments at a time
    (:func:`page_order`), packing a new chunk every ``chunk`` finished runs, at the start and the end, and
    when the last run of a page, or of an experiment of a page of several, finishes (then saying so, and
    how to publish a page); returns the campaign's progress."""
    if workers < 1 or chunk < 1:
        raise ValueError(f"workers={workers}, chunk={chunk}: both must be at least 1")
    todo = plan(configs, profile, results_dir, root)
    if pages:
        todo = page_order(pages, todo)
    missing = {config_hash(c) for c in todo}
    groups: dict[tuple[str, str | None], Iterable[ExperimentConfig]] = {}
    for page, experiments in (pages or {}).items():
        if len(experiments) > 1:
            groups |= {(page, name): cfgs for name, cfgs in experiments.items()}
        groups[page, None] = [c for cfgs in experiments.values() for c in cfgs]
    waiting = {key: {config_hash(c) for c in cfgs} & missing for key, cfgs in groups.items()}
    waiting = {key: hashes for key, hashes in waiting.items() if hashes}
    progress = Campaign(len(configs), len(todo), units_left=sum(map(cost_units, todo)))

    def pack() -> None:
        packed = pack_chunk(configs, profile, results_dir, root)
        if packed:
            say(f"packed {packed[1]} finished run(s) into {packed[0]} (commit it)")

    pack()  # runs finished by an earlier, interrupted campaign
    say(
        f"campaign at {profile}: {len(configs)} runs; {len(configs) - len(todo)} finished or archived, "
        f"{len(todo)} to compute, {'one page at a time, ' if pages else ''}cheapest first, "
        f"{workers} worker{'s' if workers > 1 else ''}"
    )
    since_chunk = 0
    for outcome, seconds in _outcomes(todo, str(results_dir), workers, device):
        progress.done += 1
        if outcome.error is None:  # the run's own round seconds: a resumed run counts its earlier rounds too
            progress.seconds += run_seconds((Path(results_dir) / outcome.hash / "rounds.jsonl").read_text())
            progress.units += cost_units(outcome.config)
        progress.units_left -= cost_units(outcome.config)
        say(progress.line(outcome, seconds, workers))
        since_chunk += 1
        if outcome.error is None:
            for hashes in waiting.values():
                hashes.discard(outcome.hash)
        finished = [key for key, hashes in waiting.items() if not hashes]
        if since_chunk >= chunk or finished:
            pack()
            since_chunk = 0
        for key in finished:
            del waiting[key]
            say(_finished_line(*key, profile))
    pack()
    return progress


def run_seconds(rounds_jsonl: str | bytes) -> float:
    """Seconds a run took: the sum of its rounds' seconds (``rounds.jsonl``; each round's evaluation is
    counted in its round)."""
    text = rounds_jsonl.decode() if isinstance(rounds_jsonl, bytes) else rounds_jsonl
    return sum(json.loads(line)["seconds"] for line in text.splitlines() if line.strip())


@dataclass(frozen=True)
class ExperimentProgress:
    """One experiment of a page in a campaign: its distinct runs, those an archive of the profile holds,
    those finished in the results directory but not yet packed, those left, the hours its finished runs
    took (measured, one process each) and the hours left at the campaign's measured rate."""

    page: str
    experiment: str
    runs: int
    archived: int
    unpacked: int
    left: int
    hours: float
    hours_left: float


def progress_table(
    pages: Mapping[str, Mapping[str, Sequence[ExperimentConfig]]],
    profile: str,
    results_dir: str | Path,
    root: str | Path = "published",
) -> list[ExperimentProgress]:
    """Where each experiment of ``pages`` (:func:`campaign_pages`) stands, without computing anything;
    the rate is the seconds per :func:`cost_units` measured over every finished run of ``pages``. A page
    of several experiments ends with a row ``"all"``, and several pages with a row ``"all", "all"``, which
    count a run that experiments share once."""
    held = archived_hashes(profile, root)
    seconds = measured_seconds(profile, results_dir, root)
    every = {config_hash(c): c for e in pages.values() for cfgs in e.values() for c in cfgs}
    measured = [h for h in every if h in seconds]
    units = sum(cost_units(every[h]) for h in measured)
    rate = sum(seconds[h] for h in measured) / units if units else float("nan")

    def row(page: str, experiment: str, cfgs: Iterable[ExperimentConfig]) -> ExperimentProgress:
        runs = {config_hash(c): c for c in cfgs}
        archived = [h for h in runs if h in held]
        unpacked = [h for h in runs if h not in held and cached_run(runs[h], results_dir) is not None]
        left = [c for h, c in runs.items() if h not in held and h not in unpacked]
        return ExperimentProgress(
            page,
            experiment,
            len(runs),
            len(archived),
            len(unpacked),
            len(left),
            sum(seconds.get(h, 0.0) for h in runs) / 3600,
            rate * sum(map(cost_units, left)) / 3600 if left else 0.0,
        )

    rows = []
    for page, experiments in pages.items():
        rows += [row(page, name, cfgs) for name, cfgs in experiments.items()]
        if len(experiments) > 1:
            rows.append(row(page, "all", [c for cfgs in experiments.values() for c in cfgs]))
    if len(pages) > 1:
        rows.append(row("all", "all", every.values()))
    return rows


def progress_markdown(rows: Sequence[ExperimentProgress]) -> str:
    """:func:`progress_table` as a Markdown table."""
    lines = [
        "| page | experiment | runs | archived | finished, not packed | left | hours measured | hours left |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        left = f"{r.hours_left:.1f}" if r.hours_left == r.hours_left else "rate not measured yet"
        page, name = (f"**{n}**" if n == "all" else n for n in (r.page, r.experiment))
        counts = f"{r.runs} | {r.archived} | {r.unpacked} | {r.left}"
        lines.append(f"| {page} | {name} | {counts} | {r.hours:.1f} | {left} |")
    return "\n".join(lines)


def measured_seconds(profile: str, results_dir: str | Path, root: str | Path) -> dict[str, float]:
    """:func:`run_seconds` of every finished run in ``results_dir`` and in the archives of ``profile``."""
    seconds = {
        h: run_seconds(rounds)
        for path in sorted((Path(root) / profile / archive.ARCHIVES).rglob("*.tar.xz"))
        for h, rounds in archive.run_files(path, "rounds.jsonl").items()
    }
    for folder in Path(results_dir).glob("*/"):
        if RunStore(folder).is_done():
            seconds[folder.name] = run_seconds((folder / "rounds.jsonl").read_text())
    return seconds


def _finished_line(name: str, experiment: str | None, profile: str) -> str:
    """What a campaign says when the last run of ``name`` (a page of :data:`PAGES`, or an experiment), or of
    its ``experiment``, finishes."""
    if experiment is not None:
        return f"{experiment} (of {name}): every run finished and packed"
    if name not in PAGES:
        return f"{name}: every run finished and packed (an experiment, not a page)"
    return (
        f"{name}: every run finished and packed; publish it with ./reproduce.sh --profile {profile} --only "
        f"{name} --from-archive --publish"
    )


def _timed(cfg: ExperimentConfig, results_dir: str, device: str | None) -> tuple[SweepOutcome, float]:
    start = time.perf_counter()
    outcome = run_one(cfg, results_dir, False, device)
    return outcome, time.perf_counter() - start


def _outcomes(todo: list[ExperimentConfig], results_dir: str, workers: int, device: str | None):
    """(outcome, seconds) of each run of ``todo`` as it finishes."""
    if workers == 1:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for cfg in todo:
                yield _timed(cfg, results_dir, device)
        finally:
            torch.set_num_threads(threads)
        return
    with cf.ProcessPoolExecutor(
        workers, mp_context=mp.get_context("spawn"), initializer=worker_init, initargs=(1,)
    ) as pool:
        futures = [pool.submit(_timed, cfg, results_dir, device) for cfg in todo]
        for future in cf.as_completed(futures):
            yield future.result()
