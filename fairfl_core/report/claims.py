"""Claims checklist: a paper's statements as predicates evaluated on the reproduced results.

A :class:`Claim` compares one method's mean (over seeds) of a summary metric with another method's, a
number, or the paper's printed value (``than=PAPER``). :func:`check_claims` shows, per claim and dataset,
both numbers, their difference and the verdict, and whether the claim also holds in the paper's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd

__all__ = ["OPS", "PAPER", "Claim", "check_claims"]

PAPER = "paper"  # `than` sentinel: the paper's value for the same method, metric and dataset


# predicate on (difference = value - reference, tolerance)
OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda d, _: d < 0,
    "<=": lambda d, _: d <= 0,
    ">": lambda d, _: d > 0,
    ">=": lambda d, _: d >= 0,
    "≈": lambda d, tol: abs(d) <= tol,
}


@dataclass(frozen=True)
class Claim:
    """``method``'s ``metric`` ``op`` ``than``, e.g. ``Claim("FedProx lowers the variance", "var",
    "FedProx", "<", "FedAvg")``. ``than``: a method label, a number, or ``PAPER``. ``op`` ``"≈"`` holds when
    the absolute difference is at most ``tolerance`` (in the metric's unit). ``dataset``: the dataset label
    to check on (default: every dataset of the results). ``source``: where the paper states it."""

    text: str
    metric: str
    method: str
    op: str
    than: str | float
    tolerance: float = 0.0
    dataset: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"claim {self.text!r}: op={self.op!r} must be one of {list(OPS)}")
        if self.tolerance and self.op != "≈":
            raise ValueError(f"claim {self.text!r}: tolerance applies to op '≈' only (got op {self.op!r})")


def _stat(agg: pd.DataFrame, dataset: str, method: str, metric: str) -> tuple[float, float, int] | None:
    hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method) & (agg["metric"] == metric)]
    if hit.empty or pd.isna(hit["mean"].iloc[0]):
        return None
    row = hit.iloc[0]
    return float(row["mean"]), float(row["std"]), int(row["n"])


def _paper_value(paper: pd.DataFrame | None, dataset: str, method: str, metric: str) -> float | None:
    if paper is None or paper.empty:
        return None
    hit = paper[(paper["dataset"] == dataset) & (paper["method"] == method) & (paper["metric"] == metric)]
    return None if hit.empty else float(hit["paper_value"].iloc[0])


def _verdict(claim: Claim, value: float | None, reference: float | None) -> str:
    if value is None or reference is None:
        return "missing"
    return "pass" if OPS[claim.op](value - reference, claim.tolerance) else "fail"


def _check_one(claim: Claim, agg: pd.DataFrame, paper: pd.DataFrame | None, dataset: str) -> dict:
    left = _stat(agg, dataset, claim.method, claim.metric)
    if isinstance(claim.than, (int, float)):
        right, reference_name = (float(claim.than), math.nan, 0), "constant"
    elif claim.than == PAPER:
        value = _paper_value(paper, dataset, claim.method, claim.metric)
        right, reference_name = (None if value is None else (value, math.nan, 0)), "paper"
    else:
        right, reference_name = _stat(agg, dataset, claim.than, claim.metric), claim.than
    value, reference = (left[0] if left else None), (right[0] if right else None)
    diff = value - reference if left and right else math.nan
    in_paper = "n/a"
    if claim.than != PAPER:
        p_left = _paper_value(paper, dataset, claim.method, claim.metric)
        p_right = (
            float(claim.than)
            if reference_name == "constant"
            else _paper_value(paper, dataset, claim.than, claim.metric)
        )
        in_paper = "n/a" if p_left is None or p_right is None else _verdict(claim, p_left, p_right)
    return {
        "claim": claim.text,
        "dataset": dataset,
        "metric": claim.metric,
        "method": claim.method,
        "value": value,
        "value_std": left[1] if left else math.nan,
        "seeds": left[2] if left else 0,
        "op": claim.op + (f" (±{claim.tolerance:g})" if claim.op == "≈" else ""),
        "than": reference_name,
        "reference": reference,
        "reference_std": right[1] if right else math.nan,
        "difference": diff,
        "relative_%": 100 * diff / abs(reference) if reference else math.nan,
        "result": _verdict(claim, value, reference),
        "holds_in_paper": in_paper,
        "source": claim.source,
    }


def check_claims(
    claims: Iterable[Claim], agg: pd.DataFrame, paper: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Evaluate ``claims`` on ``agg`` (the long table of :func:`fairfl_core.report.tables.aggregate`, which
    must hold each claim's metric) and, where given, on ``paper`` (from ``experiment_paper_values``).

    One row per claim and dataset: the method's mean (± std, seeds), the reference it is compared with,
    difference (value - reference) and relative difference in %, ``result`` (pass | fail | missing: a
    method or paper value is absent) and ``holds_in_paper`` (pass | fail | n/a).
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
    return pd.DataFrame(rows)
