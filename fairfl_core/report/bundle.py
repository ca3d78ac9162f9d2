"""A paper as one registered bundle: its experiments and what its notebook runs at each profile, its claims
(one signature, ``claims(experiment, runs) -> list[Claim]``), its printed numbers
(``papers/<name>/results.csv``) and its readings (``papers/<name>/readings.md``).

Each paper's folder (``fairfl_core/papers/<name>/``, its ``claims.py``) registers its bundle once; a notebook
asks it::

    bundle = get_paper("afga")
    names, skipped = bundle.planned(profile)  # the experiments run at this profile; why the others are not
    claims = bundle.claims(get_experiment(names[0]), runs)
    bundle.value("Table 1, Setting 2", "CIFAR-10", "AFGA", "acc_last5")  # a printed number
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash
from fairfl_core.experiments.outcome import SweepOutcome
from fairfl_core.experiments.profiles import (
    EXPERIMENTS,
    PROFILES,
    Experiment,
    distinct_configs,
    experiment_configs,
    get_experiment,
)
from fairfl_core.experiments.sweep import run_sweep
from fairfl_core.report.claims import (
    NOT_CHECKED_OFFLINE,
    PAPER,
    Claim,
    Scale,
    check_claims,
    claims_caption,
    op_text,
    paper_verdict,
    save_claims,
)
from fairfl_core.report.paper import (
    LEFT_OUT,
    PAPERS_DIR,
    experiment_paper_values,
    load_paper_results,
    paper_table,
    printed,
)
from fairfl_core.report.results import load_runs, model_spec
from fairfl_core.report.tables import aggregate, caption, save_table

__all__ = [
    "NOT_RUN",
    "PAPERS",
    "PageClaims",
    "PageTable",
    "PaperRun",
    "ClaimBuilder",
    "check_bundle",
    "Paper",
    "get_paper",
    "paper_dataset",
    "paper_rows",
    "paper_scale",
    "register_paper",
]

NOT_RUN = "not run at this profile"

ClaimBuilder = Callable[[Experiment, pd.DataFrame], list[Claim]]


def _available(experiment: str) -> str | None:
    return None


def paper_dataset(experiment: Experiment) -> str:
    """The paper's dataset column of ``experiment``: ``PaperTable.column`` where set, else its config's
    dataset (never a stand-in) as the paper names it (``PaperTable.datasets``), or the dataset's own name
    where the paper prints no numbers for it."""
    data = str(experiment.base_config()["data"]["name"])
    if experiment.paper and experiment.paper.column:
        return experiment.paper.column
    return experiment.paper.datasets.get(data, data) if experiment.paper else data


@functools.cache
def _data_of(experiment: str) -> tuple[str, bool, str]:
    """(the paper dataset its runs stand for, whether they run on a stand-in, their data section without the
    stand-in's label) of ``experiment`` at the paper profile on this machine."""
    section = dataclasses.asdict(experiment_configs(experiment, "paper")[0].data)
    stand_in = section.pop("stand_in")
    label = stand_in or paper_dataset(get_experiment(experiment))
    return label, bool(stand_in), json.dumps(section, sort_keys=True, default=str)


def _shared_data(paper: str, name: str) -> str | None:
    """:meth:`Paper.shares_data` among the experiments that print into ``paper``'s numbers: one for another
    dataset, real or a stand-in registered before ``name``, with the same data section."""
    label, stand_in, section = _data_of(name)
    if not stand_in:
        return None
    order = list(EXPERIMENTS)
    for other in order:
        experiment = EXPERIMENTS[other]
        if other == name or not experiment.paper or experiment.paper.paper != paper:
            continue
        other_label, other_stand_in, other_section = _data_of(other)
        first = not other_stand_in or order.index(other) < order.index(name)
        if other_section == section and other_label != label and first:
            return other
    return None


def paper_scale(experiment: Experiment) -> Scale:
    """The paper's scale of ``experiment``: its paper profile's rounds and model on the paper's own data
    (the profile as registered, not its stand-in)."""
    paper = experiment.profiles["paper"]
    config = apply_overrides(experiment.base_config(), list(paper.overrides))
    return Scale(paper.rounds, model_spec(config["model"]))


def paper_rows(experiment: Experiment) -> dict[str, str]:
    """Paper row → method label of ``experiment``: how a claim names the methods it compares."""
    return {m.paper_row: m.label for m in experiment.method_list() if m.paper_row}


@dataclass(frozen=True)
class PageTable:
    """A table of a paper's page as :meth:`Paper.run` saves it: the ``table``, the ``title`` of its caption
    and the ``experiments`` whose runs it shows (the caption says what ran for them)."""

    table: pd.DataFrame
    title: str
    experiments: tuple[str, ...]


@dataclass(frozen=True)
class PageClaims:
    """A claims table of a paper's page, checked by :func:`~fairfl_core.report.claims.check_claims` (or in
    its columns), as :meth:`Paper.run` saves it: the ``table``, the ``title`` of its caption and its
    rounding. Beside the experiments' claims (``claims.csv``), a bundle's ``more_claims`` gives those on
    numbers computed from the runs rather than compared between methods (hours from seed-mean curves, a
    trend over λ) or computed without runs (a toy example)."""

    table: pd.DataFrame
    title: str
    decimals: int = 2


@dataclass(frozen=True)
class PaperRun:
    """What :meth:`Paper.run` computed at ``profile`` (with ``seeds`` where given): each run experiment's
    ``configs``, the sweep's ``outcomes``, its runs as ``loaded`` and as the paper reads them (``runs``: with
    its derived metrics, e.g. one tuned value per method) and the paper's
    numbers they reproduce (``paper``), the page's ``tables`` as saved, why the other experiments were
    ``skipped``, the page's ``claims`` and ``more_claims`` as saved (with the page's verdicts), the method
    rows the run was restricted to (``methods``; None: all) and, on a page that shows failed runs, each
    experiment's failed methods with their errors (``failed``)."""

    profile: str
    seeds: list[int] | None
    configs: dict[str, list[ExperimentConfig]]
    outcomes: list[SweepOutcome]
    loaded: dict[str, pd.DataFrame]
    runs: dict[str, pd.DataFrame]
    paper: dict[str, pd.DataFrame]
    skipped: dict[str, str]
    methods: list[str] | None = None
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    claims: pd.DataFrame = field(default_factory=pd.DataFrame)
    more_claims: dict[str, pd.DataFrame] = field(default_factory=dict)

    def left_out_reason(self) -> str:
        """Why a method row of a run experiment has no runs: the profile leaves it out, or ``methods`` did."""
        if self.methods is None:
            return LEFT_OUT
        return f"not run: left out of this notebook run (methods={self.methods})"


def _derived(name: str, runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    return runs


def _as_checked(page: PaperRun, claims: pd.DataFrame) -> pd.DataFrame:
    return claims


@dataclass(frozen=True)
class Paper:
    """One paper's page. ``name``: its notebook (``notebooks/[NN_]<name>.ipynb``) and its folder
    ``papers/<name>/`` (unless ``printed_in`` names another); ``experiments``: the catalogue names its
    notebook runs, in order; ``title``: the paper whose claims the page counts in the main number
    (``report.headline``; empty for a page of the package's own, whose claims are observations);
    ``left_out``: profile → {experiment: why the notebook does not run it there}; ``unavailable``:
    experiment → why it cannot run on this machine (e.g. data without a stand-in), or None;
    ``claim_builders``: experiment name (or its prefix) → ``claims(experiment, runs) -> list[Claim]``;
    ``printed_in``: the folder of its printed numbers and readings when it is not ``papers/<name>/`` (an
    appendix bundle reads its paper's).

    What :meth:`run` makes of the runs: ``derive(experiment, runs, profile)`` adds the paper's own metrics to
    an experiment's runs (default: none); ``paper_numbers(experiment, runs)`` the paper's numbers they
    reproduce (default: those of the experiment's table,
    :func:`~fairfl_core.report.paper.experiment_paper_values`); ``tables(page)`` the page's tables by file
    name (default: one per experiment, its ``metrics`` beside the paper's numbers); ``annotate_claims(page,
    claims)`` adds the page's own columns to the checked claims or orders them (default: as checked);
    ``more_claims(page)`` the page's other claims tables by file name (:class:`PageClaims`);
    ``shows_failed_runs``: a failed run becomes its row's reason (``page.failed``) instead of stopping the
    page; ``claims_title``,
    ``claims_name`` and ``claims_decimals`` its claims table's title (default ``"<name>: claims"``), file
    name and rounding."""

    name: str
    experiments: tuple[str, ...]
    title: str = ""
    left_out: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unavailable: Callable[[str], str | None] = _available
    claim_builders: Mapping[str, ClaimBuilder] = field(default_factory=dict)
    printed_in: str = ""
    metrics: tuple[str, ...] = ("global_acc", "var")
    derive: Callable[[str, pd.DataFrame, str], pd.DataFrame] = _derived
    paper_numbers: Callable[[Experiment, pd.DataFrame], pd.DataFrame] = experiment_paper_values
    tables: Callable[[PaperRun], dict[str, PageTable]] | None = None
    annotate_claims: Callable[[PaperRun, pd.DataFrame], pd.DataFrame] = _as_checked
    more_claims: Callable[[PaperRun], dict[str, PageClaims]] | None = None
    shows_failed_runs: bool = False
    claims_title: str = ""
    claims_name: str = "claims"
    claims_decimals: int = 2

    def __post_init__(self) -> None:
        unknown = set(self.left_out) - set(PROFILES)
        if unknown:
            raise ValueError(f"paper {self.name!r}: left_out names unknown profiles {sorted(unknown)}")

    def why_not(self, experiment: str, profile: str) -> str | None:
        """Why the notebook does not run ``experiment`` at ``profile`` (None: it does)."""
        return self.unavailable(experiment) or self.left_out.get(profile, {}).get(experiment)

    def planned(self, profile: str) -> tuple[list[str], dict[str, str]]:
        """The experiments the notebook runs at ``profile``, and why each other one is not run."""
        if profile not in PROFILES:
            raise ValueError(f"profile {profile!r}: choose one of {list(PROFILES)}")
        skipped = {n: why for n in self.experiments if (why := self.why_not(n, profile))}
        return [n for n in self.experiments if n not in skipped], skipped

    def run(
        self,
        profile: str,
        results_dir: str | Path,
        output_dir: str | Path,
        *,
        seeds: list[int] | None = None,
        device: str = "auto",
        executor: str = "inline",
        workers: int | None = None,
        left_out: Mapping[str, str] | None = None,
        methods: list[str] | None = None,
        overrides: Mapping[str, list[str]] | None = None,
    ) -> PaperRun:
        """Run the experiments planned at ``profile`` as one sweep (finished runs under ``results_dir`` are
        reused, interrupted ones resume) and save to ``output_dir`` the page's tables with their captions and
        its claims (``claims.csv``: each experiment's claims aggregated over exactly the metrics they name,
        and those of the experiments not run, read in the printed numbers).

        ``left_out``: experiment → why this notebook run leaves it out too (a notebook parameter): neither
        run nor checked (its claims stay on the pages that run it);
        ``methods``: run only these method rows; ``overrides``: experiment → config overrides of its runs
        (e.g. a calibrated step size)."""
        names, skipped = self.planned(profile)
        unknown = sorted(set(left_out or {}) - set(self.experiments))
        if unknown:
            raise ValueError(
                f"left_out: no experiment {unknown} in paper {self.name!r}: {list(self.experiments)}"
            )
        dropped = dict(left_out or {})
        names = [n for n in names if n not in dropped]
        configs = {
            name: experiment_configs(name, profile, seeds=seeds, overrides=(overrides or {}).get(name, ()))
            for name in names
        }
        if methods is not None:
            labels = {c.name for cs in configs.values() for c in cs}
            if not set(methods) <= labels:
                raise ValueError(f"methods: no row {sorted(set(methods) - labels)}; rows: {sorted(labels)}")
            configs = {name: [c for c in cs if c.name in methods] for name, cs in configs.items()}
        outcomes = run_sweep(
            distinct_configs(configs),
            results_dir,
            device=device,
            progress=False,
            executor=executor,
            workers=workers,
        )
        page = self._read(
            PaperRun(profile, seeds, configs, outcomes, {}, {}, {}, skipped | dropped, methods), results_dir
        )
        page = self._save_tables(page, output_dir)
        checked = [n for n in self.experiments if n not in dropped]
        return self._save_claims(page, checked, output_dir)

    def _read(self, page: PaperRun, results_dir: str | Path) -> PaperRun:
        """``page`` with its runs as loaded and as the paper reads them (:attr:`derive`) and the paper's
        numbers they reproduce; a failed run stops the page (``load_runs`` names it) unless the page shows
        failed runs (:attr:`shows_failed_runs`: ``page.failed``)."""
        errors = {
            o.hash: (o.error or "failed").splitlines()[0] for o in page.outcomes if o.status == "failed"
        }
        tolerated = errors if self.shows_failed_runs else {}
        failed = {
            n: {c.name: tolerated[config_hash(c)] for c in cs if config_hash(c) in tolerated}
            for n, cs in page.configs.items()
        }
        ok = {n: [c for c in cs if config_hash(c) not in tolerated] for n, cs in page.configs.items()}
        loaded = {n: load_runs(results_dir, cs) for n, cs in ok.items()}
        runs = {n: self.derive(n, found, page.profile) for n, found in loaded.items()}
        paper = {n: self.paper_numbers(get_experiment(n), found) for n, found in runs.items()}
        return dataclasses.replace(page, loaded=loaded, runs=runs, paper=paper, failed=failed)

    def _save_tables(self, page: PaperRun, output_dir: str | Path) -> PaperRun:
        """Save the page's tables (:attr:`tables`, default :meth:`experiment_tables`) with their captions."""
        tables = (self.tables or self.experiment_tables)(page)
        for name, shown in tables.items():
            title = caption(shown.title, list(shown.experiments), page.profile, page.seeds)
            save_table(shown.table, output_dir, name, caption=title)
        return dataclasses.replace(page, tables={name: shown.table for name, shown in tables.items()})

    def _save_claims(self, page: PaperRun, checked: list[str], output_dir: str | Path) -> PaperRun:
        """Check the claims of the ``checked`` experiments (:meth:`check_run`) and save them with the page's
        other claims tables (:attr:`more_claims`); each save decides every claims table of the page again,
        so the page returns them as written last."""
        found = [c for c in (self.check_run(page, name) for name in self.claimed(checked)) if not c.empty]
        tables: dict[str, PageClaims] = {}
        if found:
            claims = self.annotate_claims(page, pd.concat(found, ignore_index=True))
            title = self.claims_title or f"{self.name}: claims"
            tables[self.claims_name] = PageClaims(claims, title, self.claims_decimals)
        tables |= self.more_claims(page) if self.more_claims else {}
        for name, shown in tables.items():
            title = claims_caption(shown.title, page.profile)
            save_claims(shown.table, output_dir, name, caption=title, decimals=shown.decimals)
        saved = {name: pd.read_csv(Path(output_dir) / f"{name}.csv") for name in tables}
        claims = saved.pop(self.claims_name, pd.DataFrame())
        return dataclasses.replace(page, claims=claims, more_claims=saved)

    def experiment_tables(self, page: PaperRun) -> dict[str, PageTable]:
        """One table per run experiment: its :attr:`metrics` beside the paper's numbers, with a row for each
        printed method it did not run (:func:`~fairfl_core.report.paper.paper_table`)."""
        tables = {}
        for name, runs in page.runs.items():
            experiment = get_experiment(name)
            table, _ = paper_table(
                experiment, runs, self.metrics, failed=page.failed.get(name), left_out=page.left_out_reason()
            )
            tables[name] = PageTable(table, f"{experiment.description}; mean ± std over seeds", (name,))
        return tables

    def check_run(self, page: PaperRun, name: str) -> pd.DataFrame:
        """:meth:`check` of experiment ``name`` on ``page``: on the aggregate of exactly the metrics its
        claims name, or, where the page did not run it, on the printed numbers alone."""
        runs = page.runs.get(name)
        if runs is None:
            return self.check(name, None)
        named = tuple(dict.fromkeys(c.metric for c in self.claims(get_experiment(name), runs)))
        agg = aggregate(runs, metrics=named) if named else None
        return self.check(name, runs, agg, page.paper[name])

    def claims(self, experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
        """The paper's claims checked on ``experiment``'s ``runs`` (the builder of the longest matching
        name prefix; none: no claim)."""
        keys = [k for k in self.claim_builders if experiment.name.startswith(k)]
        return self.claim_builders[max(keys, key=len)](experiment, runs) if keys else []

    def check(
        self,
        name: str,
        runs: pd.DataFrame | None,
        agg: pd.DataFrame | None = None,
        paper: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Every claim of experiment ``name``, one row each (an ``experiment`` column first): checked by
        :func:`~fairfl_core.report.claims.check_claims` on ``agg`` (and ``paper``) where its methods ran;
        where the experiment did not run (``runs`` None) or a method it names did not, the result says
        :data:`NOT_RUN`, the value is blank and ``holds_in_paper`` is read from the printed numbers."""
        experiment = get_experiment(name)
        ran = set() if runs is None else set(runs["method"])
        claims = self.claims(experiment, pd.DataFrame({"method": sorted(ran)}) if runs is None else runs)
        named = [
            {c.method} | ({c.than} if isinstance(c.than, str) and c.than != PAPER else set()) for c in claims
        ]
        checked = [c for c, n in zip(claims, named, strict=True) if n <= ran]
        scale, offline = paper_scale(experiment), bool(self.shares_data(name))
        rows = [check_claims(checked, agg, paper, scale, offline)] if checked and agg is not None else []
        rows += [
            pd.DataFrame([self._not_run(experiment, c) for c in claims if c not in checked])
            if len(checked) < len(claims)
            else pd.DataFrame()
        ]
        parts = [r for r in rows if not r.empty]
        if not parts:  # an experiment without claims
            return pd.DataFrame(columns=["experiment", "kind", "claim", "dataset", "result", "source"])
        table = pd.concat(parts, ignore_index=True)
        return table.assign(experiment=name)[["experiment", *table.columns]]

    def shares_data(self, name: str) -> str | None:
        """The experiment of another of the paper's dataset columns whose data ``name``'s stand-in runs on
        (at the paper profile on this machine: the same data section but for the stand-in's label), or None:
        such a stand-in adds no evidence of its own (CIFAR-10's column on the Fashion-MNIST column's data)."""
        return _shared_data(self.printed_in or self.name, name)

    def _not_run(self, experiment: Experiment, claim: Claim) -> dict:
        """The row of a claim whose runs are absent: only the verdict on the paper's printed numbers, read in
        the claim's dataset column (default: the experiment's, :func:`paper_dataset`)."""
        rows = {label: row for row, label in paper_rows(experiment).items()}
        values = self.values()
        table = experiment.paper.table if experiment.paper else None
        dataset = claim.dataset or paper_dataset(experiment)
        hit = values[(values["table"] == table) & (values["dataset"] == dataset)] if table else values[:0]

        def cell(label: str) -> float | None:
            v = hit[(hit["method"] == rows.get(label)) & (hit["metric"] == claim.metric)]["value"]
            return float(v.iloc[0]) if len(v) else None

        left = cell(claim.method)
        right = float(claim.than) if not isinstance(claim.than, str) else cell(claim.than)
        size = claim.effect  # the size the sentence states, relative to other rows where it says so
        if claim.relative_effect is not None:
            anchor = cell(claim.relative_effect[0])
            size = None if right is None or anchor is None else claim.relative_effect[1] * (right - anchor)
        effect = size if size is not None else None if left is None or right is None else left - right
        return {
            "kind": claim.kind,
            "primary": claim.primary,
            "claim": claim.text,
            "dataset": dataset,
            "metric": claim.metric,
            "method": claim.method,
            "than": claim.than,
            "op": op_text(claim),
            "margin": claim.tolerance,
            "result": NOT_CHECKED_OFFLINE if self.unavailable(experiment.name) else NOT_RUN,
            "holds_in_paper": paper_verdict(claim, left, right, size),
            "paper_effect": math.nan if effect is None else effect,
            "source": claim.source,
        }

    def claimed(self, names: list[str]) -> list[str]:
        """Those of ``names`` that have claims, in the order of ``claim_builders``."""
        return [n for key in self.claim_builders for n in names if n.startswith(key)]

    def values(self) -> pd.DataFrame:
        """Every printed number of the paper (:func:`~fairfl_core.report.paper.load_paper_results`)."""
        return load_paper_results(self.printed_in or self.name)

    def value(self, table: str, dataset: str, method: str, metric: str) -> float:
        """One printed number (:func:`~fairfl_core.report.paper.printed`)."""
        return printed(self.printed_in or self.name, table, dataset, method, metric)[0]

    def folder(self, root: Path = PAPERS_DIR) -> Path:
        """The paper's folder: its experiments, claims, printed numbers and readings."""
        return root / (self.printed_in or self.name)

    def readings(self, root: Path = PAPERS_DIR) -> str:
        """The paper's ``readings.md``: how the package reads what the paper leaves open."""
        path = self.folder(root) / "readings.md"
        if not path.is_file():
            raise FileNotFoundError(
                f"paper {self.name!r} has no {path}; write how it reads what the paper leaves open"
            )
        return path.read_text()


PAPERS: dict[str, Paper] = {}


def register_paper(paper: Paper) -> Paper:
    """Add ``paper`` to :data:`PAPERS` (once per name); its experiments must be registered."""
    if paper.name in PAPERS:
        raise ValueError(f"paper {paper.name!r} is already registered")
    for name in paper.experiments:
        get_experiment(name)
    PAPERS[paper.name] = paper
    return paper


def check_bundle(paper: Paper) -> None:
    """The contract of a registered paper, raising ``ValueError`` with what to fix: its experiments are
    registered; at every profile each is planned or has a reason starting "not run"; each claim builder has
    the one signature ``claims(experiment, runs) -> list[Claim]`` and names registered experiments; its
    printed numbers load (where it has any, and where an experiment cites them) and its ``readings.md``
    exists."""
    problems = [f"experiment {n!r} is not registered" for n in paper.experiments if n not in EXPERIMENTS]
    for profile in PROFILES:
        run, skipped = paper.planned(profile) if not problems else ([], {})
        problems += [
            f"at {profile}, {n!r}: the reason must start 'not run' ({why!r})"
            for n, why in skipped.items()
            if not why.startswith("not run")
        ]
    for key, builder in paper.claim_builders.items():
        parameters = list(inspect.signature(builder).parameters)
        if parameters != ["experiment", "runs"]:
            problems.append(f"claim builder {key!r} takes {parameters}, not (experiment, runs)")
        if typing.get_type_hints(builder).get("return") != list[Claim]:
            problems.append(f"claim builder {key!r} is not annotated `-> list[Claim]`")
        if not any(n.startswith(key) for n in EXPERIMENTS):
            problems.append(f"claim builder {key!r} names no registered experiment")
    folder = paper.folder()
    cited = any(EXPERIMENTS[n].paper for n in paper.experiments if n in EXPERIMENTS)
    if cited or (folder / "results.csv").exists():
        try:
            paper.values()
        except (FileNotFoundError, ValueError) as e:
            problems.append(str(e))
    if not (folder / "readings.md").is_file():
        problems.append(
            f"no {folder / 'readings.md'}: write how the package reads what the paper leaves open"
        )
    if problems:
        raise ValueError(f"paper {paper.name!r}: " + "; ".join(problems))


def get_paper(name: str) -> Paper:
    """The bundle of paper ``name`` (registered by its folder, ``fairfl_core/papers/<name>/``)."""
    if name not in PAPERS:
        hint = "" if PAPERS else " (none: `import fairfl_core.papers` loads them)"
        raise KeyError(
            f"no paper {name!r}; registered: {sorted(PAPERS)}{hint} (add one as docs/extending.md shows)"
        )
    return PAPERS[name]
