"""Metrics of one round's per-client vector (accuracies in %, or losses): mean, dispersion, tails, angle,
KL, entropy, FAA, sigma_Acc and client disagreement; each cites the paper that defines it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fairfl_core.metrics._inputs import (
    as_distribution,
    as_vector,
    check_fraction,
    fraction_count,
    same_length,
)

__all__ = [
    "angle",
    "best_fraction",
    "client_disagreement",
    "coefficient_of_variation",
    "cv_improvement",
    "entropy_of_normalised",
    "faa",
    "kl_to_uniform",
    "mean",
    "percentile",
    "sigma_acc",
    "std",
    "variance",
    "worst_fraction",
]


def mean(a: Any) -> float:
    """Unweighted mean over clients, (1/m) sum_i a_i (GIFAIR Sec. 5 a-bar; FedEBA+ Sec. 5 a-bar)."""
    return float(as_vector(a, "a").mean())


def variance(a: Any) -> float:
    """Population variance (1/m) sum_i (a_i - a-bar)^2 (FedEBA+ Sec. 5 "Var.", Def. 3.1; GIFAIR Var(a))."""
    return float(as_vector(a, "a").var())


def std(a: Any) -> float:
    """Population standard deviation sqrt(variance(a)) (FedEBA+ "Std."; GIFAIR sqrt(Var(a)))."""
    return math.sqrt(variance(a))


def worst_fraction(a: Any, frac: float = 0.05) -> float:
    """Mean of the ceil(frac*m) smallest entries (FedEBA+ Table 1 "Worst 5%", q-FFL convention)."""
    check_fraction(frac)
    arr = np.sort(as_vector(a, "a"))
    return float(arr[: fraction_count(arr.size, frac)].mean())


def best_fraction(a: Any, frac: float = 0.05) -> float:
    """Mean of the ceil(frac*m) largest entries (FedEBA+ Table 1 "Best 5%")."""
    check_fraction(frac)
    arr = np.sort(as_vector(a, "a"))
    return float(arr[-fraction_count(arr.size, frac) :].mean())


def percentile(a: Any, q: float) -> float:
    """q-th percentile (q in [0, 100]) with linear interpolation, as DivFL's ``np.quantile`` (10th/20th)."""
    if not 0 <= q <= 100:
        raise ValueError(f"q is a percentile and must be in [0, 100] (e.g. 10); got {q}")
    return float(np.percentile(as_vector(a, "a"), q))


def coefficient_of_variation(std_value: float, acc: float) -> float:
    """C_v = std / acc (FedEBA+ Sec. 5, Table 18; acc = global accuracy, same unit as std)."""
    if not acc > 0:
        raise ValueError(f"acc must be positive to divide by it (C_v = std / acc); got {acc}")
    if std_value < 0:
        raise ValueError(f"std_value must be non-negative; got {std_value}")
    return float(std_value / acc)


def cv_improvement(cv: float, cv_reference: float) -> float:
    """Relative C_v improvement over a reference (FedAvg): (C_v^ref - C_v) / C_v^ref, as a fraction.

    FedEBA+ Table 18 prints it in percent (e.g. q-FFL on FMNIST: -23%).
    """
    if not cv_reference > 0:
        raise ValueError(f"cv_reference must be positive; got {cv_reference}")
    return float((cv_reference - cv) / cv_reference)


def angle(a: Any) -> float:
    """Angle in degrees between a and the all-ones vector (FedEBA+ Table 19, "cosine similarity" metric).

    phi = arccos(sum_i a_i / (||a||_2 sqrt(m))). Since ||a||^2 = m (mean^2 + var), cos phi =
    mean / sqrt(mean^2 + var) and sin phi = std / sqrt(mean^2 + var), so phi = arctan2(std, mean) and
    tan phi = std / mean. Computed as arctan2: exact for uniform vectors (phi = 0), where arccos is not.
    """
    arr = as_vector(a, "a")
    if not np.any(arr):
        raise ValueError("a is the zero vector; its angle to the all-ones vector is undefined")
    return float(np.degrees(np.arctan2(arr.std(), arr.mean())))


def kl_to_uniform(a: Any) -> float:
    """KL(a-hat || u) = sum_i a-hat_i ln(m a-hat_i), a-hat = a / sum(a) (FedEBA+ Table 19; natural log).

    Equals ln(m) minus the (natural-log) entropy of a-hat; terms with a-hat_i = 0 contribute 0.
    """
    p = as_distribution(a, "a")
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p.size * p[nz])))


def entropy_of_normalised(v: Any, base: float = 2.0) -> float:
    """Entropy -sum_i f-hat_i log_base(f-hat_i) of f-hat = v / sum(v) (FedEBA+ App. I.1: losses, base 2)."""
    if not (base > 0 and base != 1):
        raise ValueError(f"base must be positive and not 1 (2 for bits, math.e for nats); got {base}")
    p = as_distribution(v, "v")
    nz = p > 0
    return float(-np.sum(p[nz] * np.log(p[nz])) / math.log(base))


def faa(losses: Any, optimal_losses: Any) -> float:
    """FAA = max_{i,j} |(F_i(x) - F_i(x_i*)) - (F_j(x) - F_j(x_j*))| (FedEBA+ Table 17, from FOCUS).

    ``losses`` are the clients' test losses F_i(x) of the evaluated model, ``optimal_losses`` the losses
    F_i(x_i*) of each client's own optimal (locally trained) model. The maximum over pairs of the excess
    losses e_i is max(e) - min(e). Pass zeros as ``optimal_losses`` for the "excess loss = loss" shortcut.
    """
    f = as_vector(losses, "losses")
    f_star = as_vector(optimal_losses, "optimal_losses")
    same_length(f, f_star, "losses", "optimal_losses")
    excess = f - f_star
    return float(excess.max() - excess.min())


def sigma_acc(a: Any, global_acc: float) -> float:
    """Equitable-FL sigma_Acc = sqrt((1/n) sum_i (Acc_i - Acc)^2): spread of client accuracies around the
    global (pooled test set) accuracy Acc, not around their mean (Equitable-FL §5.2; docs/readings.md)."""
    arr = as_vector(a, "a")
    if not math.isfinite(global_acc):
        raise ValueError(f"global_acc must be a finite accuracy; got {global_acc}")
    return float(np.sqrt(np.mean((arr - global_acc) ** 2)))


def client_disagreement(losses: Any, literal: bool = False) -> float:
    """Equitable-FL client disagreement (Eq. 9) over a round's participants' test losses f_i(w_{k+1}).

    Default: the mean of |f_i - f_j| over unordered pairs i < j (the text's "average absolute difference
    between two participating clients"). ``literal=True`` keeps Eq. 9 as printed: the double sum over
    ordered pairs divided by C(r, 2), i.e. twice the default (Equitable-FL Eq. 9).
    """
    f = as_vector(losses, "losses")
    r = f.size
    if r < 2:
        raise ValueError(f"client disagreement needs at least 2 participants' losses; got {r}")
    pair_sum = np.abs(f[:, None] - f[None, :]).sum() / 2  # sum over i < j
    cd = pair_sum / (r * (r - 1) / 2)
    return float(2 * cd if literal else cd)
