"""Metrics of curves over rounds: Equitable-FL's cumulative moving average, AFGA's last-5 accuracy, R# and
mean accuracy over rounds (its convergence speed), and FedEBA+'s extra communication of gradient-alignment
rounds."""

from __future__ import annotations

from typing import Any

import numpy as np

from fairfl_core.metrics._inputs import as_vector, same_length

__all__ = [
    "cumulative_moving_average",
    "extra_communication_fraction",
    "last_k_mean",
    "mean_over_rounds",
    "rounds_to_target",
]


def cumulative_moving_average(x: Any) -> np.ndarray:
    """CMA_k = (1/k) sum_{j <= k} x_j, the smoothing of every Equitable-FL curve (Sec. 5 item 5). A NaN entry
    (a round without the metric, e.g. CD with one participant) is skipped: CMA_k averages the finite x_j so
    far, NaN before the first."""
    arr = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or np.isinf(arr).any():
        raise ValueError(f"x must be a non-empty 1-D curve without inf; got shape {arr.shape}")
    seen = np.cumsum(~np.isnan(arr))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.cumsum(np.nan_to_num(arr)) / np.where(seen > 0, seen, np.nan)


def last_k_mean(curve: Any, k: int = 5) -> float:
    """Mean of the last k evaluations, all of them if the curve is shorter (AFGA "Acc." = last-5-round
    average)."""
    arr = as_vector(curve, "curve")
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}")
    return float(arr[-k:].mean())


def rounds_to_target(curve: Any, target: float, rounds: Any = None) -> int | None:
    """AFGA R#: the first round whose accuracy is >= target, or None if never reached (printed "R+").

    ``rounds`` gives the round number of each entry of ``curve`` (default 1, 2, ..., len(curve)).
    """
    acc = as_vector(curve, "curve")
    r = np.arange(1, acc.size + 1) if rounds is None else as_vector(rounds, "rounds")
    same_length(acc, r, "curve", "rounds")
    hit = np.flatnonzero(acc >= target)
    return int(r[hit[0]]) if hit.size else None


def mean_over_rounds(curve: Any, rounds: Any = None) -> float:
    """The area under a curve divided by its span of rounds,
    (1/(r_n − r_1)) Σ_k (r_{k+1} − r_k)(a_k + a_{k+1})/2 (the trapezoidal rule over the evaluated rounds
    r_1 < … < r_n; one point: its value). For AFGA's Figs. 1, 2 and 6 ("faster convergence"): a curve that
    rises sooner has the larger mean at the same final accuracy.

    ``rounds`` gives the round number of each entry of ``curve`` (default 1, 2, ..., len(curve)).
    """
    acc = as_vector(curve, "curve")
    r = np.arange(1, acc.size + 1, dtype=np.float64) if rounds is None else as_vector(rounds, "rounds")
    same_length(acc, r, "curve", "rounds")
    if acc.size == 1:
        return float(acc[0])
    steps = np.diff(r)
    if (steps <= 0).any():
        raise ValueError(f"rounds must increase strictly; got {r.tolist()}")
    return float((steps * (acc[1:] + acc[:-1]) / 2).sum() / (r[-1] - r[0]))


def extra_communication_fraction(alignment_rounds: int, total_rounds: int) -> float:
    """FedEBA+ Table 3/8 additional communication cost f / (1 + f), f = alignment_rounds / total_rounds.

    Every gradient-alignment round costs one extra exchange on top of the one per round, so theta = 0
    (alignment every round) gives 50%.
    """
    if total_rounds <= 0:
        raise ValueError(f"total_rounds must be positive; got {total_rounds}")
    if not 0 <= alignment_rounds <= total_rounds:
        raise ValueError(
            f"alignment_rounds must be in [0, total_rounds={total_rounds}]; got {alignment_rounds}"
        )
    f = alignment_rounds / total_rounds
    return f / (1 + f)
