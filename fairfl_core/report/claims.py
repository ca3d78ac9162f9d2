"""Claims checklist: a paper's statements as predicates evaluated on the reproduced results.

A :class:`Claim` compares one method's mean (over seeds) of a summary metric with another method's, a
number, or the paper's printed value (``than=PAPER``). :func:`check_claims` shows, per claim and dataset,
both numbers, their difference, its standard error and the outcome, and whether the claim also holds in the
paper's numbers.

The outcome is decided on seeds (:func:`seed_outcome`). A verdict needs at least :data:`MIN_SEEDS` = 3 seeds
on each side that has seeds; with fewer the claim is **not decided** (and counted neither as holding nor as
failing). With enough seeds, the difference of the seed means d = x̄_a − x̄_b has the standard error
SE = √(s_a²/n_a + s_b²/n_b) (s the std over the n seeds; a number or the paper's printed value is exact and
adds nothing) and Welch–Satterthwaite's degrees of freedom ν = SE⁴ / Σ (s²/n)² / (n − 1). The claim's
margin m (−d for ``<``/``<=``, d for ``>``/``>=``, tolerance − |d| for ``≈``) is compared with the band
t·SE, t the 97.5 % quantile of Student's t with ν degrees of freedom (:data:`CONFIDENCE` = 95 % two-sided):
m > t·SE **holds**, m < −t·SE **fails**, otherwise **within noise**. Two exact sides (the paper's printed
numbers, a deterministic toy computation) have no band: the sign of m decides, and a margin of exactly 0 is
the predicate's own boundary (``<=``, ``>=`` and ``≈`` hold there, ``<`` and ``>`` fail). Seeds whose
values are all equal (SE = 0 with enough seeds) are decided by the sign too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
from scipy.stats import t as student_t

from fairfl_core.report.paper import paper_cell

__all__ = [
    "CONFIDENCE",
    "MIN_SEEDS",
    "NOT_DECIDED",
    "OBSERVATION",
    "STAND_IN_EFFECT",
    "OPS",
    "PAPER",
    "Claim",
    "Outcome",
    "RULE",
    "check_claims",
    "claims_caption",
    "exact_results",
    "interval",
    "seed_outcome",
    "welch",
]

PAPER = "paper"  # `than` sentinel: the paper's value for the same method, metric and dataset
MIN_SEEDS = 3  # seeds a side needs for a verdict
CONFIDENCE = 0.95  # two-sided confidence of the band t·SE
NOT_DECIDED = "not decided"
OBSERVATION = "the package's observation"  # a claim's source when the paper does not state it
STAND_IN_EFFECT = "n/a (stand-in: direction only)"  # a stand-in's numbers are not the paper dataset's
RULE = (
    f"a verdict needs {MIN_SEEDS} seeds a side (Welch's t at 95 %, each row's df and interval beside it); "
    "with fewer the claim is not decided; only the paper's claims (quoted, with their place) count in a "
    "headline, the package's observations are listed apart; what each experiment ran is its table's caption"
)


def claims_caption(title: str, profile: str) -> str:
    """The caption of a claims table: ``title``, the profile and the decision rule (:data:`RULE`)."""
    smoke = "; smoke checks the pipeline and decides no claim" if profile == "smoke" else ""
    return f"{title} ({profile} profile; {RULE}{smoke})"


# the claim's margin (positive: the predicate holds) from (difference = value - reference, tolerance)
OPS: dict[str, Callable[[float, float], float]] = {
    "<": lambda d, _: -d,
    "<=": lambda d, _: -d,
    ">": lambda d, _: d,
    ">=": lambda d, _: d,
    "≈": lambda d, tol: tol - abs(d),
}
INCLUSIVE = ("<=", ">=", "≈")  # hold at a margin of exactly 0


class Outcome(NamedTuple):
    """``result`` (holds | within noise | fails | not decided), the ``difference`` of the means, its
    standard error ``se`` (NaN without enough seeds or between exact numbers), Welch's degrees of freedom
    ``df`` and the ``basis`` of the verdict in words (e.g. ``t(3.9)·SE, 95%``, ``sign (exact numbers)``,
    ``not decided (2 seeds)``)."""

    result: str
    difference: float
    se: float
    df: float = math.nan
    basis: str = ""


Side = (
    tuple[float, float, float] | float
)  # (mean, std, seeds) over seeds (seeds ∞: exact), or an exact number


def welch(sides: list[tuple[float, float, float]]) -> tuple[float, float]:
    """(SE, ν) of the difference of the means of ``sides`` (mean, std, n): SE = √Σ s²/n and
    Welch–Satterthwaite's ν = SE⁴ / Σ (s²/n)²/(n − 1); exact sides (n = ∞) add nothing. ν is NaN when
    SE = 0."""
    parts = [(std**2 / n, n) for _, std, n in sides if math.isfinite(n)]
    var = sum(v for v, _ in parts)
    if var == 0:
        return 0.0, math.nan
    return math.sqrt(var), var**2 / sum(v**2 / (n - 1) for v, n in parts)


def seed_outcome(
    op: str, value: Side, reference: Side, tolerance: float = 0.0, confidence: float = CONFIDENCE
) -> Outcome:
    """The outcome of ``value op reference`` (the rule: the module docstring). Each side is a (mean, std,
    seeds) triple over seeds, or a plain number that is exact (a constant, a paper value)."""
    sides = [_side(value), _side(reference)]
    difference = sides[0][0] - sides[1][0]
    few = [n for *_, n in sides if n < MIN_SEEDS]
    if few:
        seeds = f"{min(few):g} seed{'s' if min(few) != 1 else ''}"
        return Outcome(NOT_DECIDED, difference, math.nan, math.nan, f"{NOT_DECIDED} ({seeds})")
    margin = OPS[op](difference, tolerance)
    se, df = welch(sides)
    if se == 0:
        exact = all(not math.isfinite(n) for *_, n in sides)
        band, basis = 0.0, "sign (exact numbers)" if exact else "sign (equal seeds)"
        se = math.nan if exact else 0.0
    else:
        band, basis = _t(df, confidence) * se, f"t({df:.1f})·SE, {100 * confidence:g}%"
    if margin > band or (margin == band == 0 and op in INCLUSIVE):
        result = "holds"
    elif margin < -band or band == 0:
        result = "fails"
    else:
        result = "within noise"
    return Outcome(result, difference, se, df, basis)


def interval(outcome: Outcome, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided ``confidence`` interval of the difference, d ± t_ν·SE (Welch); (NaN, NaN) without a
    standard error, and the point d itself when SE = 0."""
    if math.isnan(outcome.se):
        return math.nan, math.nan
    if outcome.se == 0:
        return outcome.difference, outcome.difference
    half = _t(outcome.df, confidence) * outcome.se
    return outcome.difference - half, outcome.difference + half


def _side(side: Side) -> tuple[float, float, float]:
    """(mean, std, seeds) of a side; an exact number has std 0 and infinitely many seeds."""
    return (
        (float(side[0]), float(side[1]), side[2]) if isinstance(side, tuple) else (float(side), 0.0, math.inf)
    )


def _t(df: float, confidence: float) -> float:
    """Student's t quantile of a two-sided ``confidence`` band with ``df`` degrees of freedom."""
    return float(student_t.ppf(1 - (1 - confidence) / 2, df))


@dataclass(frozen=True)
class Claim:
    """``method``'s ``metric`` ``op`` ``than``, e.g. ``Claim("FedProx lowers the variance", "var",
    "FedProx", "<", "FedAvg")``. ``than``: a method label, a number, or ``PAPER``. ``op`` ``"≈"`` claims that
    the absolute difference is at most ``tolerance`` (in the metric's unit); :func:`seed_outcome` judges
    it. ``dataset``: the dataset label to check on (default: every dataset of the results). ``source``: where
    the paper states it, with its words (e.g. ``§5.2: "... reduces performance variance ..."``), or
    :data:`OBSERVATION` (optionally followed by why) for a comparison the paper does not state, which is shown
    but never counted in a headline (``kind``). ``effect``: a size the paper states in the metric's unit as
    ``value − reference`` (e.g. +1.01 accuracy points); without it the paper's printed numbers give it where
    they exist. Each row says whether our interval of the difference contains it."""

    text: str
    metric: str
    method: str
    op: str
    than: str | float
    tolerance: float = 0.0
    dataset: str | None = None
    source: str = ""
    effect: float | None = None

    @property
    def kind(self) -> str:
        """``paper`` (a statement of the paper, counted in a headline) or ``observation`` (the package's)."""
        return "observation" if self.source.startswith(OBSERVATION) else "paper"

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"claim {self.text!r}: op={self.op!r} must be one of {list(OPS)}")
        if self.tolerance and self.op != "≈":
            raise ValueError(f"claim {self.text!r}: tolerance applies to op '≈' only (got op {self.op!r})")


def _stat(agg: pd.DataFrame, dataset: str, method: str, metric: str) -> tuple[float, float, float] | None:
    hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method) & (agg["metric"] == metric)]
    if hit.empty or pd.isna(hit["mean"].iloc[0]):
        return None
    row = hit.iloc[0]
    return float(row["mean"]), float(row["std"]), float(row["n"])


def _paper_verdict(claim: Claim, value: float | None, reference: float | None) -> str:
    """The claim on the paper's printed means (exact numbers: the sign of the margin decides)."""
    if value is None or reference is None:
        return "n/a"
    return seed_outcome(claim.op, value, reference, claim.tolerance).result


def _check_one(claim: Claim, agg: pd.DataFrame, paper: pd.DataFrame | None, dataset: str) -> dict:
    left = _stat(agg, dataset, claim.method, claim.metric)
    right: Side | None
    if isinstance(claim.than, (int, float)):
        right, reference_name = float(claim.than), "constant"
    elif claim.than == PAPER:
        right, reference_name = paper_cell(paper, claim.method, claim.metric, dataset), "paper"
    else:
        right, reference_name = _stat(agg, dataset, claim.than, claim.metric), claim.than
    reference = right[0] if isinstance(right, tuple) else right
    outcome = (
        Outcome("missing", math.nan, math.nan)
        if left is None or right is None
        else seed_outcome(claim.op, left, right, claim.tolerance)
    )
    in_paper, metric, paper_effect = "n/a", claim.metric, claim.effect
    if claim.than != PAPER:
        p_left = paper_cell(paper, claim.method, metric, dataset)
        p_right = (
            paper_cell(paper, claim.than, metric, dataset)
            if isinstance(claim.than, str)
            else float(claim.than)
        )
        in_paper = _paper_verdict(claim, p_left, p_right)
        if paper_effect is None and p_left is not None and p_right is not None:
            paper_effect = p_left - p_right
    diff = outcome.difference
    low, high = interval(outcome)
    contains = (
        "n/a" if paper_effect is None or math.isnan(low) else "yes" if low <= paper_effect <= high else "no"
    )
    return {
        "kind": claim.kind,
        "claim": claim.text,
        "dataset": dataset,
        "metric": claim.metric,
        "method": claim.method,
        "value": left[0] if left else None,
        "value_std": left[1] if left else math.nan,
        "seeds": left[2] if left else 0,
        "reference_seeds": right[2] if isinstance(right, tuple) else math.nan,
        "op": claim.op + (f" (±{claim.tolerance:g})" if claim.op == "≈" else ""),
        "than": reference_name,
        "reference": reference,
        "reference_std": right[1] if isinstance(right, tuple) else math.nan,
        "difference": diff,
        "se": outcome.se,
        "df": outcome.df,
        "interval_low": low,
        "interval_high": high,
        "paper_effect": math.nan if paper_effect is None else paper_effect,
        "interval_holds_paper_effect": contains,
        "basis": outcome.basis,
        "relative_%": 100 * diff / abs(reference) if reference else math.nan,
        "result": outcome.result,
        "holds_in_paper": in_paper,
        "source": claim.source,
    }


def check_claims(
    claims: Iterable[Claim], agg: pd.DataFrame, paper: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Evaluate ``claims`` on ``agg`` (the long table of :func:`fairfl_core.report.tables.aggregate`, which
    must hold each claim's metric) and, where given, on ``paper`` (from ``experiment_paper_values``).

    One row per claim and dataset: its ``kind`` (paper | observation), the method's mean (± std, seeds), the
    reference it is compared with, difference (value - reference), its standard error ``se``, Welch's ``df``,
    the 95 % interval of the difference, the paper's effect (``Claim.effect``, else the difference of the
    paper's printed numbers) and whether the interval holds it (on a stand-in dataset, whose sizes are not the
    paper dataset's, :data:`STAND_IN_EFFECT`: direction only), the ``basis`` of the outcome (e.g.
    ``t(3.9)·SE, 95%`` or ``not decided (2 seeds)``), the relative difference in %, ``result`` (holds |
    within noise | fails | not decided, :func:`seed_outcome`; missing: a method or paper value is absent) and
    ``holds_in_paper`` (the same predicate on the paper's printed means, which carry no seeds: holds | fails;
    n/a without them).
    """
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
        rows += [_check_one(claim, agg, paper, d) for d in datasets]
    table = pd.DataFrame(rows)
    if len(table) and "stand_in" in agg:  # direction only: a stand-in's size is not the paper's effect
        flagged = agg["stand_in"].map(lambda v: isinstance(v, str) and bool(v))
        on = table["dataset"].isin(set(agg.loc[flagged, "dataset"]))
        table["interval_holds_paper_effect"] = table["interval_holds_paper_effect"].astype(object)
        table.loc[on, "interval_holds_paper_effect"] = STAND_IN_EFFECT
    return table


def exact_results(table: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """A computed table (a ``method`` column, one column per metric, e.g. a toy example's points) on
    ``dataset``, in the long form of :func:`~fairfl_core.report.tables.aggregate` that :func:`check_claims`
    reads. Its numbers are computed once by a deterministic computation, not means over seeds: exact numbers
    (``std`` 0, ``n`` ∞), so the sign of each claim's margin decides."""
    long = table.melt(id_vars="method", var_name="metric", value_name="mean")
    return long.assign(dataset=dataset, std=0.0, n=math.inf)
