"""Group fairness across a binary sensitive attribute A ∈ {0, 1} of the samples (not of the clients): the
statistical parity difference and the equal opportunity difference of FairFed (Ezzeldin et al., AAAI 2023,
§3 "Group fairness metrics"), globally and per client.

Sign convention (FairFed's, with group 0 the unprivileged group: female, non-white; ``data/tabular.py``),
in percentage points like every gap of :mod:`fairfl_core.metrics`, for the positive class ŷ = 1 (Adult:
income > 50K; COMPAS: two-year recidivism)::

    SPD = 100 · (P(ŷ = 1 | A = 0) − P(ŷ = 1 | A = 1))
    EOD = 100 · (P(ŷ = 1 | A = 0, y = 1) − P(ŷ = 1 | A = 1, y = 1))     (true-positive rates)

0 is parity; a negative value means group 0 is predicted positive less often (SPD) or, among the truly
positive, recognised less often (EOD). Both are computed from confusion counts per group
(:func:`group_confusion`, ``[A, y, ŷ]``), so that a global value over many clients' data is the value on
their union (FairFed Eq. 7 sums such counts by secure aggregation), never an average of the clients'.

A difference needs both of its groups: SPD a sample of each group, EOD a positive (y = 1) sample of each.
:func:`statistical_parity_difference` and :func:`equal_opportunity_difference` raise a one-line
``ValueError`` naming the empty group and the fix; :func:`parity_summary` records a client whose local test
data lack a group as ``None`` and counts the clients with a value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "equal_opportunity_difference",
    "group_confusion",
    "parity_defined",
    "parity_summary",
    "positive_rates",
    "statistical_parity_difference",
    "true_positive_rates",
]

GROUPS = 2  # a binary sensitive attribute
CLASSES = 2  # binary classification: the positive class is 1
FIX = (
    "the metric needs samples of both groups: use a partition that gives every client both (partition "
    "'sensitive_dirichlet' with a larger alpha or partition_options.min_group_size), or more test data"
)


def _array(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector (one entry per sample); got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() > 1):
        raise ValueError(f"{name} must hold 0 and 1 only (binary); got values {np.unique(arr)[:5].tolist()}")
    return arr.astype(np.int64)


def group_confusion(y_true: Any, y_pred: Any, sensitive: Any) -> np.ndarray:
    """``[A, y, ŷ]`` counts (int64 ``[2, 2, 2]``): entry ``[a, y, p]`` is the number of samples of group a
    with label y predicted p. Inputs are 0/1 vectors of equal length."""
    y, p, a = _array(y_true, "y_true"), _array(y_pred, "y_pred"), _array(sensitive, "sensitive")
    if not len(y) == len(p) == len(a):
        raise ValueError(
            f"y_true, y_pred and sensitive have {len(y)}, {len(p)} and {len(a)} entries; one each"
        )
    flat = np.bincount(a * CLASSES * CLASSES + y * CLASSES + p, minlength=GROUPS * CLASSES * CLASSES)
    return flat.reshape(GROUPS, CLASSES, CLASSES)


def _counts(counts: Any) -> np.ndarray:
    arr = np.asarray(counts, dtype=np.float64)
    if arr.shape != (GROUPS, CLASSES, CLASSES) or (arr < 0).any():
        raise ValueError(
            f"counts must be non-negative [group, label, prediction] counts of shape (2, 2, 2) "
            f"(group_confusion); got shape {arr.shape}"
        )
    return arr


def positive_rates(counts: Any) -> np.ndarray:
    """P(ŷ = 1 | A = a) for a = 0, 1 (NaN for a group without samples)."""
    c = _counts(counts)
    n = c.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, c[:, :, 1].sum(axis=1) / np.maximum(n, 1), math.nan)


def true_positive_rates(counts: Any) -> np.ndarray:
    """P(ŷ = 1 | A = a, y = 1) for a = 0, 1 (NaN for a group without positive samples)."""
    c = _counts(counts)
    n = c[:, 1, :].sum(axis=1)
    return np.where(n > 0, c[:, 1, 1] / np.maximum(n, 1), math.nan)


def _names(names: Sequence[str] | None) -> list[str]:
    return list(names) if names is not None else ["group 0", "group 1"]


def statistical_parity_difference(
    counts: Any, names: Sequence[str] | None = None, where: str = "the data"
) -> float:
    """SPD = 100 (P(ŷ=1 | A=0) − P(ŷ=1 | A=1)) in points from ``[A, y, ŷ]`` counts (FairFed §3); raises a
    one-line ``ValueError`` when a group has no sample in ``where``."""
    rates = positive_rates(counts)
    empty = [n for n, r in zip(_names(names), rates, strict=True) if math.isnan(r)]
    if empty:
        raise ValueError(f"statistical parity difference: {where} hold no samples of {empty}; {FIX}")
    return float(100 * (rates[0] - rates[1]))


def equal_opportunity_difference(
    counts: Any, names: Sequence[str] | None = None, where: str = "the data"
) -> float:
    """EOD = 100 (TPR(A=0) − TPR(A=1)) in points from ``[A, y, ŷ]`` counts (FairFed §3, the metric of its
    Algorithm 1); raises a one-line ``ValueError`` when a group has no positive sample in ``where``."""
    rates = true_positive_rates(counts)
    empty = [n for n, r in zip(_names(names), rates, strict=True) if math.isnan(r)]
    if empty:
        raise ValueError(
            f"equal opportunity difference: {where} hold no positive (y = 1) samples of {empty}; {FIX}"
        )
    return float(100 * (rates[0] - rates[1]))


def parity_defined(counts: Any, metric: str) -> bool:
    """Whether ``metric`` (``"spd"`` or ``"eod"``) is defined on these counts (both groups present; for EOD
    with a positive sample each)."""
    rates = positive_rates(counts) if metric == "spd" else true_positive_rates(counts)
    return bool(np.isfinite(rates).all())


METRICS = {"spd": statistical_parity_difference, "eod": equal_opportunity_difference}


def _maybe(counts: Any, metric: str) -> float | None:
    return METRICS[metric](counts) if parity_defined(counts, metric) else None


def parity_summary(
    pooled: Any, clients: Any, local: Any | None = None, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """The group-fairness keys of a run's summary, in points:

    ``spd``, ``eod`` (and ``spd_abs``, ``eod_abs``) on ``pooled`` (``[A, y, ŷ]`` counts of the global model
    on the pooled test set; raises when a group is absent there); ``local_spd``, ``local_eod`` (and ``_abs``)
    on the union of the clients' test data, each client's samples predicted by the model it is evaluated with
    (``local`` ``[K, A, y, ŷ]``, default ``clients``: the same as ``clients`` unless the method personalises);
    ``client_spd_mean_abs``, ``client_spd_max_abs`` (and eod): the mean and the largest |value| over the
    clients of ``clients`` ``[K, A, y, ŷ]`` (the evaluated models on each client's test data) where it is
    defined, ``client_spd_defined`` / ``client_eod_defined``: on how many clients it is (None for all four
    when on none); ``group_positive_rate_<g>``, ``group_tpr_<g>`` (%) on the pooled test set."""
    where = "the pooled test set"
    pooled = _counts(pooled)
    per_client = np.asarray(clients, dtype=np.float64).reshape(-1, GROUPS, CLASSES, CLASSES)
    union = per_client if local is None else np.asarray(local, dtype=np.float64).reshape(per_client.shape)
    out: dict[str, Any] = {}
    for metric, fn in METRICS.items():
        value = fn(pooled, names, where)
        out[metric], out[f"{metric}_abs"] = value, abs(value)
        total = _maybe(union.sum(axis=0), metric)
        out[f"local_{metric}"] = total
        out[f"local_{metric}_abs"] = None if total is None else abs(total)
        values = [v for v in (_maybe(c, metric) for c in per_client) if v is not None]
        out[f"client_{metric}_mean_abs"] = float(np.mean(np.abs(values))) if values else None
        out[f"client_{metric}_max_abs"] = float(np.max(np.abs(values))) if values else None
        out[f"client_{metric}_defined"] = len(values)
    for g, name in enumerate(_names(names)):
        out[f"group_positive_rate_{name}"] = float(100 * positive_rates(pooled)[g])
        tpr = true_positive_rates(pooled)[g]
        out[f"group_tpr_{name}"] = None if math.isnan(tpr) else float(100 * tpr)
    return out
