"""Claims checklist: a paper's statements as predicates decided on the reproduced runs.

A :class:`Claim` compares one method's mean (over seeds) of a summary metric with another method's, a
number, or the paper's printed value (``than=PAPER``). :func:`check_claims` gives one row per claim and
dataset: both sides, their difference d with its interval, the test used and why, the paper's size of d
where it gives one, the verdict class at 95 % (``result``) and the same predicate on the paper's printed
numbers (``holds_in_paper``). The statistics are :mod:`fairfl_core.report.stats`:

- a verdict needs :data:`MIN_SEEDS` seeds a side (fewer: **not decided**); a side whose values are censored
  (a target never reached) never enters a t-test (**not decided (censored)**);
- **paired t** where the two methods' runs of each seed share partition, initial model, client sampling and
  minibatch streams (equal pairing keys, ``report.results``), else **Welch's t**;
- classes: **holds**, **smaller than the paper's**, **not reproduced at the paper's size**, **undetermined**
  (the row gives the seeds that would decide it), **fails**;
- a size the sentence states ("3×", "+2 points") is the size the claim is decided on (``Claim.effect``,
  ``Claim.relative_effect``); without one, the paper's printed numbers give it; an equivalence claim (``≈``)
  states its margin and where it comes from (``Claim.tolerance_source``).

**Multiplicity.** A paper's *primary* claims (its abstract and contributions, ``Claim.primary``) are decided
at 95 % each. Every other paper claim's tests are Holm-adjusted within its page (:func:`page_verdicts`), and
the page's headline counts that ``verdict``.

**Kinds.** ``paper`` (a quoted sentence of the paper), ``observation`` (the package's, never counted), and
``analytic`` (decided on computed numbers: a formula evaluated, a property by construction; listed apart).

**Stand-ins.** On a labelled stand-in a paper claim is decided on direction only (never against the paper's
size) and its row says so (``data``: stand-in for ...), so it is never a verdict at the paper's scale. Where
the stand-in's data is another column's of the paper (``offline``: the CIFAR-10 column run on the
Fashion-MNIST column's data), it adds no evidence of its own: its paper claims are **not checked (no offline
data)** and stay in the count, the stand-in's direction in ``stand_in_result``.

**Scale.** Each row says the share of the paper's rounds its runs trained, the model (the paper's or a
substitute) and the data (real or a stand-in) (:class:`Scale`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fairfl_core.report import stats
from fairfl_core.report.paper import paper_cell
from fairfl_core.report.stats import CONFIDENCE, MIN_SEEDS, Sample
from fairfl_core.report.tables import save_table

__all__ = [
    "CONFIDENCE",
    "MIN_SEEDS",
    "NOT_CHECKED_OFFLINE",
    "NOT_DECIDED",
    "OBSERVATION",
    "OPS",
    "PAPER",
    "RULE",
    "STAND_IN_EFFECT",
    "Claim",
    "Outcome",
    "Scale",
    "check_claims",
    "claims_caption",
    "evidence_key",
    "exact_results",
    "interval",
    "op_text",
    "page_verdicts",
    "paper_verdict",
    "save_claims",
    "scale_columns",
    "seed_outcome",
]

PAPER = "paper"  # `than` sentinel: the paper's value for the same method, metric and dataset
NOT_DECIDED = "not decided"
NOT_CHECKED_OFFLINE = "not checked (no offline data)"
OBSERVATION = "the package's observation"  # a claim's source when the paper does not state it
STAND_IN_EFFECT = "n/a (stand-in: direction only)"  # a stand-in's numbers are not the paper dataset's
OPS = ("<", "<=", ">", ">=", "≈")
MARGINED = ("≈", ">=", "<=")  # ops that take a tolerance: equivalence, and non-inferiority by a margin
SHIFT = {">=": 1.0, "<=": -1.0}  # a non-inferiority margin m tests d + m ≥ 0 or d − m ≤ 0
RULE = (
    f"a verdict needs {MIN_SEEDS} seeds a side; paired t where a seed's runs share partition, initial "
    "model, client sampling and minibatch streams, else Welch's t; 95 % intervals of the difference; "
    "classes: holds, smaller than the paper's, not reproduced at the paper's size, undetermined, fails, "
    "each against the size the paper states or prints; the paper's primary claims (abstract, "
    "contributions) at 95 % each, its other claims Holm-adjusted within the page (the verdict column); "
    "only the paper's quoted claims count, the package's observations and analytic checks are listed "
    "apart; each row gives its share of the paper's rounds, model and data"
)


def claims_caption(title: str, profile: str) -> str:
    """The caption of a claims table: ``title``, the profile and the decision rule (:data:`RULE`)."""
    smoke = "; smoke checks the pipeline and decides no claim" if profile == "smoke" else ""
    return f"{title} ({profile} profile; {RULE}{smoke})"


@dataclass(frozen=True)
class Claim:
    """``method``'s ``metric`` ``op`` ``than``, e.g. ``Claim("FedProx lowers the variance", "var",
    "FedProx", "<", "FedAvg")``. ``than``: a method label, a number, or ``PAPER``.

    - ``op`` ``"≈"`` claims |d| ≤ ``tolerance`` (in the metric's unit); ``">="`` / ``"<="`` with a
      ``tolerance`` m claim non-inferiority, d ≥ −m / d ≤ m ("almost no loss"); ``tolerance_source`` states
      where the margin comes from (a paper claim needs one).
    - ``dataset``: the dataset label to check on (default: every dataset of the results).
    - ``source``: where the paper states it, with its words (e.g. ``§5.2: "... reduces variance ..."``), or
      :data:`OBSERVATION` (optionally followed by why) for the package's own comparison (never counted).
    - ``effect``: the size of d = value − reference the sentence states, in the metric's unit (+2 points);
      ``relative_effect`` = (anchor, k): a size stated relative to other runs, d = k·(μ_reference −
      μ_anchor) (FedEBA+'s "3× the variance reduction of q-FFL": anchor FedAvg, k = 2). Without either, the
      paper's printed numbers give the size where they exist.
    - ``primary``: stated in the paper's abstract or contributions (decided at 95 % alone, not adjusted).
    - ``analytic``: decided by construction or by evaluating a formula, not by an experiment (listed apart).
    """

    text: str
    metric: str
    method: str
    op: str
    than: str | float
    tolerance: float = 0.0
    dataset: str | None = None
    source: str = ""
    effect: float | None = None
    relative_effect: tuple[str, float] | None = None
    primary: bool = False
    analytic: bool = False
    tolerance_source: str = ""

    @property
    def kind(self) -> str:
        """``paper`` (counted in a headline), ``observation`` (the package's) or ``analytic``."""
        if self.source.startswith(OBSERVATION):
            return "observation"
        return "analytic" if self.analytic else "paper"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"claim {self.text!r}: op={self.op!r} must be one of {list(OPS)}")
        if self.tolerance and self.op not in MARGINED:
            raise ValueError(
                f"claim {self.text!r}: tolerance applies to ops {list(MARGINED)} only (got op {self.op!r})"
            )
        if self.effect is not None and self.relative_effect is not None:
            raise ValueError(f"claim {self.text!r}: give effect or relative_effect, not both")
        if self.tolerance and not self.tolerance_source:
            raise ValueError(
                f"claim {self.text!r}: tolerance={self.tolerance:g} needs its tolerance_source (where the "
                "margin comes from: the paper's table, its text, or the package's choice)"
            )


@dataclass(frozen=True)
class Outcome:
    """A claim decided on two samples: ``result`` (a class of :mod:`~fairfl_core.report.stats`, or not
    decided), the ``difference`` with its ``se``, ``df``, ``test`` and 95 % interval (``low``, ``high``), the
    two p-values, the paper's ``size`` (None: none) and :func:`stats.seeds_to_decide` where undetermined."""

    result: str
    difference: float
    se: float = math.nan
    df: float = math.nan
    test: str = ""
    p: float = math.nan
    p_size: float = math.nan
    low: float = math.nan
    high: float = math.nan
    size: float | None = None
    seeds_to_decide: int | None = None


SideLike = Sample | tuple[float, float, float] | float


def _sample(side: SideLike) -> Sample:
    if isinstance(side, Sample):
        return side
    if isinstance(side, tuple):
        return Sample(float(side[0]), float(side[1]), side[2])
    return Sample(float(side))


def seed_outcome(
    op: str,
    value: SideLike,
    reference: SideLike,
    tolerance: float = 0.0,
    confidence: float = CONFIDENCE,
    effect: float | None = None,
    anchor: tuple[SideLike, float] | None = None,
) -> Outcome:
    """``value op reference`` decided on seeds (module docstring). Each side is a :class:`Sample`, a (mean,
    std, seeds) summary or an exact number. ``effect``: the paper's size of the difference; ``anchor`` =
    (sample, k): a size k·(reference − anchor) estimated on the same runs."""
    a, b = _sample(value), _sample(reference)
    difference = a.mean - b.mean
    censored = [s for s in (a, b) if s.censored]
    if censored:
        n = sum(s.censored for s in censored)
        why = f"{NOT_DECIDED} (censored: {n} run{'s' if n > 1 else ''} only bound the value)"
        return Outcome(why, difference, test=why)
    few = [s.n for s in (a, b) if s.n < MIN_SEEDS]
    if few:
        seeds = f"{min(few):g} seed{'s' if min(few) != 1 else ''}"
        return Outcome(NOT_DECIDED, difference, test=f"{NOT_DECIDED} ({seeds})")
    shift = SHIFT.get(op, 0.0) * tolerance  # a non-inferiority margin: the claim is on d ± m, not a size
    d = stats.contrast([(1.0, a), (-1.0, b), *([(shift, Sample(1.0))] if shift else [])])
    size_estimate, size = None, None if shift else effect
    if anchor is not None and not shift:
        c, k = _sample(anchor[0]), anchor[1]
        size = k * (b.mean - c.mean)
        size_estimate = stats.contrast([(1.0, a), (-1.0 - k, b), (k, c)])  # d − k(μ_b − μ_c)
    elif effect is not None and not shift:
        size_estimate = stats.contrast([(1.0, a), (-1.0, b), (-effect, Sample(1.0))])
    p, p_size = stats.p_values(op, d, size_estimate, tolerance)
    alpha = 1 - confidence
    result = stats.classify(op, d.value, size, p, p_size, alpha)
    low, high = (x - shift for x in d.interval(confidence))
    undetermined = result == stats.UNDETERMINED
    return Outcome(
        result,
        difference,
        d.se,
        d.df,
        d.test,
        p,
        p_size,
        low,
        high,
        size,
        stats.seeds_to_decide(d, size_estimate, tolerance if op == "≈" else None) if undetermined else None,
    )


def interval(outcome: Outcome) -> tuple[float, float]:
    """The 95 % interval of the difference (NaN, NaN when not decided)."""
    return outcome.low, outcome.high


@dataclass(frozen=True)
class Scale:
    """The paper's scale of an experiment: its ``rounds`` and ``model`` (the paper profile's, on real
    data); each claims row says how its runs compare."""

    rounds: int
    model: str


def _sample_of(agg: pd.DataFrame, dataset: str, method: str, metric: str) -> tuple[Sample, pd.Series] | None:
    hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method) & (agg["metric"] == metric)]
    if hit.empty or pd.isna(hit["mean"].iloc[0]):
        return None
    row = hit.iloc[0]
    values = row.get("values")
    if isinstance(values, Mapping) and values:
        sample = Sample.of(values, row.get("keys") or {}, int(row.get("censored", 0) or 0))
    else:
        sample = Sample(
            float(row["mean"]), float(row["std"]), float(row["n"]), censored=int(row.get("censored", 0) or 0)
        )
    return sample, row


def _missing(agg: pd.DataFrame, dataset: str, methods: list[str]) -> str:
    """A claim's result when a side has no value: "missing", saying so where a method's every run diverged."""
    for method in methods:
        hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method)]
        if not hit.empty and "diverged" in hit and 0 < hit["diverged"].iloc[0] == hit["runs"].iloc[0]:
            return f"missing: {method} diverged in {hit['runs'].iloc[0]} of {hit['runs'].iloc[0]} seeds"
    return "missing"


def paper_verdict(claim: Claim, value: float | None, reference: float | None, size: float | None) -> str:
    """The claim on the paper's printed means (exact: the signs decide), against the size it states."""
    if value is None or reference is None:
        return "n/a"
    result = seed_outcome(claim.op, value, reference, claim.tolerance, effect=size).result
    return "smaller than stated" if result == stats.SMALLER else result


def op_text(claim: Claim) -> str:
    """The claim's predicate as a table shows it, with its margin and the margin's source."""
    if not claim.tolerance:
        return claim.op
    bound = f"±{claim.tolerance:g}" if claim.op == "≈" else f"margin {claim.tolerance:g}"
    return f"{claim.op} ({bound}: {claim.tolerance_source})"


def _number(x: float | None) -> float:
    return math.nan if x is None else float(x)


def evidence_key(metric: str, left: Sample | None, right: Sample | None) -> str:
    """A key of the numbers a row compares: two rows with the same key decide on the same evidence."""

    def numbers(s: Sample | None):
        if s is None:
            return None
        if s.values:
            return sorted((int(k), round(float(v), 9)) for k, v in s.values.items())
        return [round(s.mean, 9), round(s.std, 9) if math.isfinite(s.std) else None, str(s.n)]

    blob = json.dumps([metric, numbers(left), numbers(right)])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def scale_columns(rows: list[pd.Series], scale: Scale | None) -> dict[str, object]:
    stand_in = next((r["stand_in"] for r in rows if isinstance(r.get("stand_in"), str) and r["stand_in"]), "")
    data = f"stand-in for {stand_in}" if stand_in else "real"
    if scale is None:
        return {"rounds_share": math.nan, "model": "n/a", "data": data}
    rounds = [float(r["rounds"]) for r in rows if pd.notna(r.get("rounds"))]
    models = {str(r["model"]) for r in rows if isinstance(r.get("model"), str)}
    share = min(rounds) / scale.rounds if rounds else math.nan
    model = (
        "n/a"
        if not models
        else f"the paper's ({scale.model})"
        if models == {scale.model}
        else f"substituted ({', '.join(sorted(models))} for {scale.model})"
    )
    return {"rounds_share": share, "model": model, "data": data}


def _check_one(
    claim: Claim,
    agg: pd.DataFrame,
    paper: pd.DataFrame | None,
    dataset: str,
    scale: Scale | None,
    offline: bool,
) -> dict:
    left = _sample_of(agg, dataset, claim.method, claim.metric)
    right: tuple[Sample, pd.Series] | None
    if isinstance(claim.than, (int, float)):
        right, reference_name = (Sample(float(claim.than)), pd.Series(dtype=object)), "constant"
    elif claim.than == PAPER:
        printed = paper_cell(paper, claim.method, claim.metric, dataset)
        right = None if printed is None else (Sample(printed), pd.Series(dtype=object))
        reference_name = "paper"
    else:
        right, reference_name = _sample_of(agg, dataset, claim.than, claim.metric), claim.than
    anchor = None
    if claim.relative_effect is not None:
        found = _sample_of(agg, dataset, claim.relative_effect[0], claim.metric)
        anchor = None if found is None else (found[0], claim.relative_effect[1])
    rows = [s[1] for s in (left, right) if s is not None and not s[1].empty]
    on_stand_in = any(isinstance(r.get("stand_in"), str) and r["stand_in"] for r in rows)
    kind = claim.kind
    if kind == "paper" and left is not None and right is not None and left[0].exact and right[0].exact:
        kind = "analytic"  # computed numbers on both sides
    # the paper's size of d: stated (a constant, or relative to other runs), else from its printed numbers
    p_left = paper_cell(paper, claim.method, claim.metric, dataset) if claim.than != PAPER else None
    p_right = (
        None
        if claim.than == PAPER
        else paper_cell(paper, claim.than, claim.metric, dataset)
        if isinstance(claim.than, str)
        else float(claim.than)
    )
    size, in_paper_size, size_source = (
        claim.effect,
        claim.effect,
        "stated" if claim.effect is not None else "",
    )
    if claim.relative_effect is not None:
        name, k = claim.relative_effect
        size_source = f"stated: {k:g}·(reference − {name})"
        printed_anchor = paper_cell(paper, name, claim.metric, dataset)
        in_paper_size = None if p_right is None or printed_anchor is None else k * (p_right - printed_anchor)
    elif size is None and isinstance(claim.than, str) and p_left is not None and p_right is not None:
        size, size_source = p_left - p_right, "printed numbers"  # of two methods
    if on_stand_in or claim.op == "≈":
        size, anchor, size_source = None, None, STAND_IN_EFFECT if on_stand_in else ""
    relative = claim.relative_effect is not None and not on_stand_in
    if left is None or right is None or (relative and anchor is None):
        absent = [claim.method] if left is None else [claim.than] if right is None else []
        verdict = Outcome(_missing(agg, dataset, [n for n in absent if isinstance(n, str)]), math.nan)
    else:
        verdict = seed_outcome(
            claim.op, left[0], right[0], claim.tolerance, effect=None if relative else size, anchor=anchor
        )
    result, stand_in_result = verdict.result, ""
    if offline and kind == "paper":
        result, stand_in_result = NOT_CHECKED_OFFLINE, verdict.result
    in_paper = paper_verdict(claim, p_left, p_right, in_paper_size)
    reference = right[0].mean if right is not None else None
    diff = verdict.difference
    value_sample = left[0] if left is not None else None
    right_sample = right[0] if right is not None else None
    return {
        "kind": kind,
        "primary": claim.primary,
        "claim": claim.text,
        "dataset": dataset,
        "metric": claim.metric,
        "method": claim.method,
        "value": value_sample.mean if value_sample else None,
        "value_std": value_sample.std if value_sample else math.nan,
        "seeds": value_sample.n if value_sample else 0,
        "reference_seeds": right_sample.n if right_sample and not right_sample.exact else math.nan,
        "op": op_text(claim),
        "margin": claim.tolerance,
        "than": reference_name,
        "reference": reference,
        "reference_std": right_sample.std if right_sample and not right_sample.exact else math.nan,
        "difference": diff,
        "se": verdict.se,
        "df": verdict.df,
        "interval_low": verdict.low,
        "interval_high": verdict.high,
        "test": verdict.test,
        "p": verdict.p,
        "paper_effect": _number(verdict.size if verdict.size is not None else size),
        "size_source": size_source,
        "p_size": verdict.p_size,
        "relative_%": 100 * diff / abs(reference) if reference else math.nan,
        "result": result,
        "seeds_to_decide": verdict.seeds_to_decide,
        "stand_in_result": stand_in_result,
        "holds_in_paper": in_paper,
        **scale_columns(rows, scale),
        "evidence": evidence_key(claim.metric, value_sample, right_sample),
        "source": claim.source,
    }


def check_claims(
    claims: Iterable[Claim],
    agg: pd.DataFrame,
    paper: pd.DataFrame | None = None,
    scale: Scale | None = None,
    offline: bool = False,
) -> pd.DataFrame:
    """Decide ``claims`` on ``agg`` (the long table of :func:`fairfl_core.report.tables.aggregate`, which
    must hold each claim's metric) and, where given, on ``paper`` (from ``experiment_paper_values``), at the
    paper's ``scale``; ``offline``: the runs are a stand-in on another column's data, so the paper's claims
    are not checked here (module docstring). One row per claim and dataset (columns in order): ``kind``,
    ``primary``, the claim, both sides (mean, std, seeds), the difference with its SE, df and 95 % interval,
    ``test`` (paired or Welch, and why), ``p``, the paper's size ``paper_effect`` (``size_source``: stated,
    printed numbers, or direction only on a stand-in) and ``p_size``, ``result`` (the class at 95 %; missing:
    a method or paper value is absent), ``seeds_to_decide`` (undetermined rows), ``stand_in_result``,
    ``holds_in_paper``, ``rounds_share``, ``model``, ``data``, ``evidence`` (a key of the numbers compared)
    and ``source``."""
    rows = []
    for claim in claims:
        if claim.metric not in set(agg["metric"]):
            raise KeyError(
                f"claim {claim.text!r}: metric {claim.metric!r} is not aggregated; "
                f"aggregate(runs, metrics=[..., {claim.metric!r}])"
            )
        datasets = [claim.dataset] if claim.dataset else list(dict.fromkeys(agg["dataset"]))
        unknown = [d for d in datasets if d not in set(agg["dataset"])]
        if unknown:
            raise ValueError(
                f"claim {claim.text!r}: dataset {unknown[0]!r} not in the results; "
                f"datasets: {sorted(set(agg['dataset']))}"
            )
        rows += [_check_one(claim, agg, paper, d, scale, offline) for d in datasets]
    return pd.DataFrame(rows)


COUNTED_KIND = "paper"


def page_verdicts(
    tables: Mapping[str, pd.DataFrame], alpha: float = 1 - CONFIDENCE
) -> dict[str, pd.DataFrame]:
    """The claims ``tables`` of one page with ``p_holm``, ``p_size_holm`` and ``verdict``: each decided
    non-primary paper claim's two p-values Holm-adjusted over all of them on the page, and its class from the
    adjusted values (:func:`stats.classify`); a primary claim's verdict is its ``result`` at 95 %, and every
    other row's (not decided, not checked, observations, analytic checks) too."""
    family: list[tuple[str, int, str]] = []
    pvalues: list[float] = []
    for name, table in tables.items():
        if not {"p", "p_size", "kind", "result"} <= set(table.columns):
            continue
        primary = (
            table["primary"].astype(str).str.lower().isin(("true", "1")) if "primary" in table else False
        )
        adjustable = (table["kind"] == COUNTED_KIND) & ~primary & table["result"].isin(stats.VERDICTS)
        for i in table.index[adjustable]:
            for column in ("p", "p_size"):
                family.append((name, i, column))
                pvalues.append(float(table.at[i, column]))
    adjusted = stats.holm(pvalues)
    out = {}
    for name, table in tables.items():
        table = table.copy()
        if "result" in table.columns:
            table["p_holm"] = math.nan
            table["p_size_holm"] = math.nan
            table["verdict"] = table["result"]
        out[name] = table
    for (name, i, column), p in zip(family, adjusted, strict=True):
        out[name].at[i, f"{column}_holm"] = p
    for table in out.values():
        if "p_holm" not in table.columns:
            continue
        for i in table.index[table["p_holm"].notna()]:
            row = table.loc[i]
            size = (
                float(row["paper_effect"])
                if pd.notna(row["paper_effect"]) and row["size_source"] not in ("", STAND_IN_EFFECT)
                else None
            )
            p_size = float(row["p_size_holm"]) if pd.notna(row["p_size_holm"]) else math.nan
            op = str(row["op"]).split(" ")[0]
            margin = float(row["margin"]) if "margin" in row and pd.notna(row["margin"]) else 0.0
            table.at[i, "verdict"] = stats.classify(
                op,
                float(row["difference"]) + SHIFT.get(op, 0.0) * margin,
                size,
                float(row["p_holm"]),
                p_size,
                alpha,
            )
    return out


P_COLUMNS = ("p", "p_size", "p_holm", "p_size_holm", "rounds_share")  # written to 6 places
PAGE_COLUMNS = ("p_holm", "p_size_holm", "verdict")  # what page_verdicts adds


def save_claims(
    table: pd.DataFrame, out_dir: str | Path, name: str, caption: str | None = None, decimals: int = 2
) -> pd.DataFrame:
    """Write the claims ``table`` as ``save_table`` does (numbers to ``decimals`` places, p-values and shares
    of the paper's rounds to 6), then decide the page: every claims table of ``out_dir`` (a CSV with ``claim``
    and ``p`` columns) gets the page's Holm-adjusted ``verdict`` (:func:`page_verdicts`), each rewritten with
    its caption. Returns the table as written, with its verdicts."""
    out = Path(out_dir)
    numbers = table.select_dtypes("number").columns
    rounded = table.copy()
    for column in numbers:
        rounded[column] = table[column].round(6 if column in P_COLUMNS else decimals)
    save_table(rounded.drop(columns=list(PAGE_COLUMNS), errors="ignore"), out, name, caption)
    tables, captions = {}, {}
    for csv in sorted(out.glob("*.csv")):
        found = pd.read_csv(csv)
        if {"claim", "p"} <= set(found.columns):
            tables[csv.stem] = found.drop(columns=list(PAGE_COLUMNS), errors="ignore")
            captions[csv.stem] = _caption(csv.with_suffix(".md"))
    for stem, decided in page_verdicts(tables).items():
        columns = list(decided.columns)
        at = columns.index("result") + 1
        order = [*columns[:at], *PAGE_COLUMNS]
        order += [c for c in columns[at:] if c not in order]
        save_table(decided[order], out, stem, captions[stem])
    return pd.read_csv(out / f"{name}.csv")


def _caption(md: Path) -> str | None:
    """The caption ``save_table`` wrote above a Markdown table (None: none)."""
    text = md.read_text() if md.exists() else ""
    head = text.split("\n\n", 1)[0]
    return None if not text or head.startswith("|") else head


def exact_results(table: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """A computed table (a ``method`` column, one column per metric, e.g. a toy example's points) on
    ``dataset``, in the long form of :func:`~fairfl_core.report.tables.aggregate` that :func:`check_claims`
    reads. Its numbers are computed once by a deterministic computation, not means over seeds: exact numbers
    (``std`` 0, ``n`` ∞), so the sign of each claim's margin decides (an ``analytic`` row)."""
    long = table.melt(id_vars="method", var_name="metric", value_name="mean")
    return long.assign(dataset=dataset, std=0.0, n=math.inf)
