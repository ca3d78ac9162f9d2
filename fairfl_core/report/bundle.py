"""A paper as one registered bundle: its experiments and what its notebook runs at each profile, its claims
(one signature, ``claims(experiment, runs) -> list[Claim]``), its printed numbers
(``paper_results/<name>.csv``) and its readings (its section of ``docs/readings.md``).

Each paper's report module (``report/<name>.py``) registers its bundle once; a notebook asks it::

    bundle = get_paper("afga")
    names, skipped = bundle.planned(profile)  # the experiments run at this profile; why the others are not
    claims = bundle.claims(get_experiment(names[0]), runs)
    bundle.value("Table 1, Setting 2", "CIFAR-10", "AFGA", "acc_last5")  # a printed number
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fairfl_core.experiments.config import apply_overrides
from fairfl_core.experiments.profiles import (
    EXPERIMENTS,
    PROFILES,
    Experiment,
    experiment_configs,
    get_experiment,
)
from fairfl_core.report.claims import (
    NOT_CHECKED_OFFLINE,
    PAPER,
    Claim,
    Scale,
    check_claims,
    op_text,
    paper_verdict,
)
from fairfl_core.report.paper import load_paper_results, printed
from fairfl_core.report.results import model_spec

__all__ = [
    "NOT_RUN",
    "PAPERS",
    "READINGS",
    "ClaimBuilder",
    "Paper",
    "get_paper",
    "paper_dataset",
    "paper_rows",
    "paper_scale",
    "register_paper",
]

NOT_RUN = "not run at this profile"

READINGS = Path(__file__).resolve().parents[2] / "docs" / "readings.md"
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
class Paper:
    """One paper. ``name``: its ``paper_results/<name>.csv``; ``experiments``: the catalogue names its main
    notebook runs, in order; ``left_out``: profile → {experiment: why the notebook does not run it there};
    ``unavailable``: experiment → why it cannot run on this machine (e.g. data without a stand-in), or None;
    ``claim_builders``: experiment name (or its prefix) → ``claims(experiment, runs)``; ``printed_in``: the
    ``paper_results`` CSV of its numbers when it is not ``<name>.csv`` (an appendix bundle reads its paper's);
    ``readings_heading``: the start of its heading in ``docs/readings.md``."""

    name: str
    experiments: tuple[str, ...]
    left_out: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unavailable: Callable[[str], str | None] = _available
    claim_builders: Mapping[str, ClaimBuilder] = field(default_factory=dict)
    printed_in: str = ""
    readings_heading: str = ""

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

    def readings(self, path: Path = READINGS) -> str:
        """The paper's section of ``docs/readings.md``: how the package reads what the paper leaves open."""
        text = path.read_text()
        start = text.find(f"\n## {self.readings_heading}")
        if not self.readings_heading or start < 0:
            raise KeyError(f"{path} has no section '## {self.readings_heading}' for paper {self.name!r}")
        end = text.find("\n## ", start + 1)
        return text[start + 1 : None if end < 0 else end].strip()


PAPERS: dict[str, Paper] = {}


def register_paper(paper: Paper) -> Paper:
    """Add ``paper`` to :data:`PAPERS` (once per name); its experiments must be registered."""
    if paper.name in PAPERS:
        raise ValueError(f"paper {paper.name!r} is already registered")
    for name in paper.experiments:
        get_experiment(name)
    PAPERS[paper.name] = paper
    return paper


def get_paper(name: str) -> Paper:
    """The bundle of paper ``name``, registered by ``fairfl_core.report.<name>``."""
    if name not in PAPERS:
        try:
            importlib.import_module(f"fairfl_core.report.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"fairfl_core.report.{name}":
                raise
    if name not in PAPERS:
        raise KeyError(
            f"no paper {name!r}; registered: {sorted(PAPERS)} (add one as docs/extending.md shows)"
        )
    return PAPERS[name]
