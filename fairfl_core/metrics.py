"""Fairness and performance metrics of the five fairfl papers, as pure functions.

Conventions
-----------
- Accuracies are in **percent (0-100)**, as every paper reports them; every dispersion metric (variance,
  std, gaps, sigma_acc, client dissimilarity) is then in percentage points (variance in %^2). Scale-free
  metrics (C_v, angle, KL, entropy, NMI) do not depend on the unit.
- Variances and standard deviations are **population** statistics (1/m, ``ddof=0``), as in FedEBA+ Sec. 5
  and GIFAIR-FL Sec. 5.
- Inputs may be sequences, numpy arrays or torch tensors (converted with ``.detach().cpu().numpy()``).
  Empty, non-1-D, non-finite or mismatched inputs raise ``ValueError`` naming the argument.

Paper keys below: FedEBA+ = "Entropy-driven Fair and Effective FL", GIFAIR = GIFAIR-FL, Equitable-FL,
SubTrunc = SubTrunc/UnionFL, DivFL = its reference code's metrics, AFGA; each metric cites the section or
table of the paper that defines it.

``fairness_summary`` keys (stable; a key whose input was not given holds NaN, except per-group keys)
-----------------------------------------------------------------------------------------------------
=============  ====================================================================================
n              number of clients m
mean           mean_i a_i (unweighted over clients)
var, std       population variance / std of a (FedEBA+ Var., Std.; GIFAIR sqrt(Var(a)); SubTrunc CD)
min, max       worst / best single client
worst5, best5  mean of the ceil(0.05 m) smallest / largest a_i (FedEBA+ Table 1)
worst10        mean of the ceil(0.10 m) smallest a_i (GIFAIR Sec. 5 extra)
p10, p20       10th / 20th percentile of a, linear interpolation (DivFL)
cv             std / global_acc (FedEBA+ Table 18); NaN without global_acc
angle          angle between a and the all-ones vector, degrees (FedEBA+ Table 19)
kl             KL(a / sum(a) || uniform), natural log (FedEBA+ Table 19)
               (angle and kl are NaN when every accuracy is 0)
global_acc     the given global (pooled test set) accuracy, or NaN
sigma_acc      sqrt(mean_i (a_i - global_acc)^2) (Equitable-FL sigma_Acc); NaN without global_acc
loss_mean      mean of the per-client losses, or NaN
loss_var       population variance of the per-client losses (FedEBA+ Def. 3.1), or NaN
group_gap      max - min group accuracy (GIFAIR discrepancy), NaN without groups
group_var      population variance of group accuracies (GIFAIR Def. 1), NaN without groups
group_acc_<g>  accuracy of group g (only when groups are given)
=============  ====================================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.metrics import normalized_mutual_info_score

__all__ = [
    "angle",
    "best_fraction",
    "client_disagreement",
    "client_dissimilarity",
    "cluster_nmi",
    "coefficient_of_variation",
    "cumulative_moving_average",
    "cv_improvement",
    "entropy_of_normalised",
    "extra_communication_fraction",
    "faa",
    "fairness_summary",
    "group_accuracies",
    "group_variance",
    "jain_index",
    "kl_to_uniform",
    "largest_group_gap",
    "last_k_mean",
    "mean",
    "nmi",
    "percentile",
    "rounds_to_target",
    "sigma_acc",
    "std",
    "variance",
    "worst_fraction",
]


# --------------------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------------------


def _as_vector(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty, finite, 1-D float64 array, or raise ValueError naming ``name``."""
    if hasattr(x, "detach"):  # torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector (one value per client); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass at least one client's value")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} contains NaN or inf at positions {np.flatnonzero(~np.isfinite(arr))[:5]}; "
            "evaluate those clients again or leave them out"
        )
    return arr


def _as_labels(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty 1-D array of labels (any hashable dtype), or raise ValueError."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D vector of labels (one per client); got shape {arr.shape}"
        )
    return arr


def _same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.size != b.size:
        raise ValueError(
            f"{name_a} has {a.size} entries but {name_b} has {b.size}; pass one value per client"
        )


def _as_distribution(v: Any, name: str) -> np.ndarray:
    """Normalise a non-negative vector with positive sum to a probability vector."""
    arr = _as_vector(v, name)
    if np.any(arr < 0):
        raise ValueError(
            f"{name} must be non-negative to be normalised to a distribution; min is {arr.min()}"
        )
    total = arr.sum()
    if total <= 0:
        raise ValueError(f"{name} sums to 0; it cannot be normalised to a distribution")
    return arr / total


def _check_fraction(frac: float) -> None:
    if not 0 < frac <= 1:
        raise ValueError(f"frac must be in (0, 1] (e.g. 0.05 for the worst 5%); got {frac}")


def _fraction_count(m: int, frac: float) -> int:
    """ceil(frac * m), robust to float noise (0.07 * 100 = 7.000000000000001 must give 7)."""
    return max(1, math.ceil(round(frac * m, 9)))


# --------------------------------------------------------------------------------------------------------
# per-client accuracy / loss vectors
# --------------------------------------------------------------------------------------------------------


def mean(a: Any) -> float:
    """Unweighted mean over clients, (1/m) sum_i a_i (GIFAIR Sec. 5 a-bar; FedEBA+ Sec. 5 a-bar)."""
    return float(_as_vector(a, "a").mean())


def variance(a: Any) -> float:
    """Population variance (1/m) sum_i (a_i - a-bar)^2 (FedEBA+ Sec. 5 "Var.", Def. 3.1; GIFAIR Var(a))."""
    return float(_as_vector(a, "a").var())


def std(a: Any) -> float:
    """Population standard deviation sqrt(variance(a)) (FedEBA+ "Std."; GIFAIR sqrt(Var(a)))."""
    return math.sqrt(variance(a))


def worst_fraction(a: Any, frac: float = 0.05) -> float:
    """Mean of the ceil(frac*m) smallest entries (FedEBA+ Table 1 "Worst 5%", q-FFL convention)."""
    _check_fraction(frac)
    arr = np.sort(_as_vector(a, "a"))
    return float(arr[: _fraction_count(arr.size, frac)].mean())


def best_fraction(a: Any, frac: float = 0.05) -> float:
    """Mean of the ceil(frac*m) largest entries (FedEBA+ Table 1 "Best 5%")."""
    _check_fraction(frac)
    arr = np.sort(_as_vector(a, "a"))
    return float(arr[-_fraction_count(arr.size, frac) :].mean())


def percentile(a: Any, q: float) -> float:
    """q-th percentile (q in [0, 100]) with linear interpolation, as DivFL's ``np.quantile`` (10th/20th)."""
    if not 0 <= q <= 100:
        raise ValueError(f"q is a percentile and must be in [0, 100] (e.g. 10); got {q}")
    return float(np.percentile(_as_vector(a, "a"), q))


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
    arr = _as_vector(a, "a")
    if not np.any(arr):
        raise ValueError("a is the zero vector; its angle to the all-ones vector is undefined")
    return float(np.degrees(np.arctan2(arr.std(), arr.mean())))


def kl_to_uniform(a: Any) -> float:
    """KL(a-hat || u) = sum_i a-hat_i ln(m a-hat_i), a-hat = a / sum(a) (FedEBA+ Table 19; natural log).

    Equals ln(m) minus the (natural-log) entropy of a-hat; terms with a-hat_i = 0 contribute 0.
    """
    p = _as_distribution(a, "a")
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p.size * p[nz])))


def entropy_of_normalised(v: Any, base: float = 2.0) -> float:
    """Entropy -sum_i f-hat_i log_base(f-hat_i) of f-hat = v / sum(v) (FedEBA+ App. I.1: losses, base 2)."""
    if not (base > 0 and base != 1):
        raise ValueError(f"base must be positive and not 1 (2 for bits, math.e for nats); got {base}")
    p = _as_distribution(v, "v")
    nz = p > 0
    return float(-np.sum(p[nz] * np.log(p[nz])) / math.log(base))


def faa(losses: Any, optimal_losses: Any) -> float:
    """FAA = max_{i,j} |(F_i(x) - F_i(x_i*)) - (F_j(x) - F_j(x_j*))| (FedEBA+ Table 17, from FOCUS).

    ``losses`` are the clients' test losses F_i(x) of the evaluated model, ``optimal_losses`` the losses
    F_i(x_i*) of each client's own optimal (locally trained) model. The maximum over pairs of the excess
    losses e_i is max(e) - min(e). Pass zeros as ``optimal_losses`` for the "excess loss = loss" shortcut.
    """
    f = _as_vector(losses, "losses")
    f_star = _as_vector(optimal_losses, "optimal_losses")
    _same_length(f, f_star, "losses", "optimal_losses")
    excess = f - f_star
    return float(excess.max() - excess.min())


def sigma_acc(a: Any, global_acc: float) -> float:
    """Equitable-FL sigma_Acc = sqrt((1/n) sum_i (Acc_i - Acc)^2): spread of client accuracies around the
    global (pooled test set) accuracy Acc, not around their mean (Equitable-FL §4.4; docs/readings.md)."""
    arr = _as_vector(a, "a")
    if not math.isfinite(global_acc):
        raise ValueError(f"global_acc must be a finite accuracy; got {global_acc}")
    return float(np.sqrt(np.mean((arr - global_acc) ** 2)))


def client_disagreement(losses: Any, literal: bool = False) -> float:
    """Equitable-FL client disagreement (Eq. 9) over a round's participants' test losses f_i(w_{k+1}).

    Default: the mean of |f_i - f_j| over unordered pairs i < j (the text's "average absolute difference
    between two participating clients"). ``literal=True`` keeps Eq. 9 as printed: the double sum over
    ordered pairs divided by C(r, 2), i.e. twice the default (Equitable-FL Eq. 9).
    """
    f = _as_vector(losses, "losses")
    r = f.size
    if r < 2:
        raise ValueError(f"client disagreement needs at least 2 participants' losses; got {r}")
    pair_sum = np.abs(f[:, None] - f[None, :]).sum() / 2  # sum over i < j
    cd = pair_sum / (r * (r - 1) / 2)
    return float(2 * cd if literal else cd)


def _mean_absolute_deviation(a: np.ndarray) -> float:
    return float(np.mean(np.abs(a - a.mean())))


def _mean_pairwise_difference(a: np.ndarray) -> float:
    m = a.size
    return float(np.abs(a[:, None] - a[None, :]).sum() / (m * (m - 1))) if m > 1 else 0.0


_DISSIMILARITY: dict[str, Callable[[np.ndarray], float]] = {
    "std": lambda a: float(a.std()),
    "mad": _mean_absolute_deviation,
    "pairwise": _mean_pairwise_difference,
    "range": lambda a: float(a.max() - a.min()),
    "var": lambda a: float(a.var()),
}


def client_dissimilarity(a: Any, kind: str = "std") -> float:
    """SubTrunc/UnionFL "client dissimilarity [%]" of per-client test accuracies (in %).

    The paper gives no formula ("the difference of the final model's performance ... across all clients").
    ``kind``:
    ``"std"`` (default) population std sqrt((1/n) sum_i (acc_i - a-bar)^2); ``"mad"`` mean absolute deviation
    (1/n) sum_i |acc_i - a-bar|; ``"pairwise"`` (1/(n(n-1))) sum_{i != j} |acc_i - acc_j|; ``"range"``
    max - min; ``"var"`` population variance (DivFL's fairness metric).
    """
    if kind not in _DISSIMILARITY:
        raise ValueError(f"kind must be one of {sorted(_DISSIMILARITY)}; got {kind!r}")
    return _DISSIMILARITY[kind](_as_vector(a, "a"))


def nmi(labels_pred: Any, labels_true: Any, nan_if_one_true_cluster: bool = False) -> float:
    """Normalised mutual information with arithmetic normalisation (Equitable-FL Fig. 2; sklearn's
    ``normalized_mutual_info_score(labels_true, labels_pred, average_method="arithmetic")``).

    With a single true cluster sklearn returns 0 (or 1 if the prediction is also one cluster); set
    ``nan_if_one_true_cluster`` to get NaN instead, so ``np.nanmean`` over rounds averages only the rounds
    with >= 2 true clusters present (docs/readings.md).
    """
    pred = _as_labels(labels_pred, "labels_pred")
    true = _as_labels(labels_true, "labels_true")
    _same_length(pred, true, "labels_pred", "labels_true")
    if nan_if_one_true_cluster and np.unique(true).size < 2:
        return math.nan
    return float(normalized_mutual_info_score(true, pred, average_method="arithmetic"))


def cluster_nmi(
    labels: Any, planted_groups: Any, participants: Any = None, nan_if_one_true_cluster: bool = False
) -> float:
    """NMI of found clusters against the planted ones (Equitable-FL Fig. 2), via ``nmi``.

    ``planted_groups`` holds the planted cluster of every one of the n clients (e.g. the group ids of
    ``data.partition.label_groups``). Per round, ``labels`` are the round's cluster labels of its participants
    and ``participants`` their client indices, in the same order: the NMI is taken over the participants
    only. With ``participants=None``, ``labels`` has one label per client (the all-clients figure).
    """
    groups = _as_labels(planted_groups, "planted_groups")
    pred = _as_labels(labels, "labels")
    if participants is None:
        _same_length(pred, groups, "labels", "planted_groups")
        return nmi(pred, groups, nan_if_one_true_cluster)
    idx = _as_labels(participants, "participants")
    _same_length(pred, idx, "labels", "participants")
    if not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= groups.size:
        raise ValueError(
            f"participants must be client indices in [0, {groups.size}) (one per entry of planted_groups); "
            f"got {idx[:5].tolist()}"
        )
    if np.unique(idx).size != idx.size:
        raise ValueError("participants has repeated client indices; give each participant once")
    return nmi(pred, groups[idx], nan_if_one_true_cluster)


def jain_index(counts: Any) -> float:
    """Jain's fairness index (sum c_i)^2 / (n sum c_i^2) of participation counts (SubTrunc Sec. 5 item 4)."""
    c = _as_vector(counts, "counts")
    if np.any(c < 0):
        raise ValueError(f"counts must be non-negative; min is {c.min()}")
    sq = float(np.sum(c**2))
    if sq == 0:
        raise ValueError("counts are all zero; Jain's index is undefined (no client ever participated)")
    return float(c.sum() ** 2 / (c.size * sq))


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


# --------------------------------------------------------------------------------------------------------
# curves over rounds
# --------------------------------------------------------------------------------------------------------


def cumulative_moving_average(x: Any) -> np.ndarray:
    """CMA_k = (1/k) sum_{j <= k} x_j, the smoothing of every Equitable-FL curve (Sec. 5 item 5)."""
    arr = _as_vector(x, "x")
    return np.cumsum(arr) / np.arange(1, arr.size + 1)


def last_k_mean(curve: Any, k: int = 5) -> float:
    """Mean of the last k evaluations (AFGA "Acc." = last-5-round average)."""
    arr = _as_vector(curve, "curve")
    if not 1 <= k <= arr.size:
        raise ValueError(f"k must be in [1, len(curve)={arr.size}]; got {k}")
    return float(arr[-k:].mean())


def rounds_to_target(curve: Any, target: float, rounds: Any = None) -> int | None:
    """AFGA R#: the first round whose accuracy is >= target, or None if never reached (printed "R+").

    ``rounds`` gives the round number of each entry of ``curve`` (default 1, 2, ..., len(curve)).
    """
    acc = _as_vector(curve, "curve")
    r = np.arange(1, acc.size + 1) if rounds is None else _as_vector(rounds, "rounds")
    _same_length(acc, r, "curve", "rounds")
    hit = np.flatnonzero(acc >= target)
    return int(r[hit[0]]) if hit.size else None


# --------------------------------------------------------------------------------------------------------
# group metrics (GIFAIR-FL)
# --------------------------------------------------------------------------------------------------------


def _group_members(groups: Any, m: int) -> dict[Any, np.ndarray]:
    """Client indices per group, from a label per client or a {group: client indices} mapping."""
    if isinstance(groups, Mapping):
        members = {g: np.asarray(list(idx), dtype=np.int64) for g, idx in groups.items()}
        if not members:
            raise ValueError("groups is an empty mapping; give at least one group of client indices")
        for g, idx in members.items():
            if idx.size == 0:
                raise ValueError(f"group {g!r} has no clients; remove it or assign clients to it")
            if idx.min() < 0 or idx.max() >= m:
                raise ValueError(
                    f"group {g!r} has client indices outside [0, {m}); use indices of the m clients"
                )
        return members
    labels = _as_labels(groups, "groups")
    if labels.size != m:
        raise ValueError(
            f"groups has {labels.size} labels but there are {m} clients; give one label per client"
        )
    return {g.item() if hasattr(g, "item") else g: np.flatnonzero(labels == g) for g in np.unique(labels)}


def group_accuracies(a: Any, groups: Any, weights: Any = None) -> dict[Any, float]:
    """Accuracy A_i of each group (GIFAIR Tables 4 and 6).

    Default (GIFAIR A10): the unweighted mean of the group's client accuracies, (1/|A_i|) sum_{k in A_i} a_k.
    With ``weights`` (one per client, e.g. test-sample counts): the weighted mean, which with test counts
    is the pooled accuracy over all of the group's test samples.
    ``groups`` is a label per client or a mapping {group: client indices}. Keys are sorted labels (mapping
    order for a mapping).
    """
    arr = _as_vector(a, "a")
    w = None if weights is None else _as_vector(weights, "weights")
    if w is not None:
        _same_length(arr, w, "a", "weights")
        if np.any(w < 0):
            raise ValueError(f"weights must be non-negative (e.g. test-sample counts); min is {w.min()}")
    result = {}
    for g, idx in _group_members(groups, arr.size).items():
        if w is None:
            result[g] = float(arr[idx].mean())
            continue
        total = w[idx].sum()
        if total <= 0:
            raise ValueError(f"group {g!r} has zero total weight; give its clients positive weights")
        result[g] = float(np.dot(w[idx], arr[idx]) / total)
    return result


def _group_values(group_acc: Mapping[Any, float] | Any) -> np.ndarray:
    values = list(group_acc.values()) if isinstance(group_acc, Mapping) else group_acc
    return _as_vector(values, "group_acc")


def largest_group_gap(group_acc: Mapping[Any, float] | Any) -> float:
    """GIFAIR discrepancy max_i A_i - min_i A_i (Table 4 caption), from group accuracies (dict or vector)."""
    v = _group_values(group_acc)
    return float(v.max() - v.min())


def group_variance(group_acc: Mapping[Any, float] | Any) -> float:
    """Population variance of group accuracies, GIFAIR Def. 1 (for 2 groups it equals (gap / 2)^2)."""
    return float(_group_values(group_acc).var())


# --------------------------------------------------------------------------------------------------------
# the standard set stored with every run
# --------------------------------------------------------------------------------------------------------


def fairness_summary(
    acc: Any,
    loss: Any = None,
    global_acc: float | None = None,
    groups: Any = None,
    *,
    group_weights: Any = None,
) -> dict[str, float]:
    """The standard metric set of a run (keys documented in the module docstring); accuracies in %.

    ``global_acc`` is the global model's accuracy on the pooled test set (FedEBA+ A17); ``groups`` and
    ``group_weights`` are passed to ``group_accuracies``.
    """
    a = _as_vector(acc, "acc")
    nan = math.nan
    summary = {
        "n": float(a.size),
        "mean": mean(a),
        "var": variance(a),
        "std": std(a),
        "min": float(a.min()),
        "max": float(a.max()),
        "worst5": worst_fraction(a, 0.05),
        "worst10": worst_fraction(a, 0.10),
        "best5": best_fraction(a, 0.05),
        "p10": percentile(a, 10),
        "p20": percentile(a, 20),
        "cv": nan,
        "angle": angle(a) if np.any(a) else nan,
        "kl": kl_to_uniform(a) if a.sum() > 0 and np.all(a >= 0) else nan,
        "global_acc": nan,
        "sigma_acc": nan,
        "loss_mean": nan,
        "loss_var": nan,
        "group_gap": nan,
        "group_var": nan,
    }
    if global_acc is not None:
        summary["global_acc"] = float(global_acc)
        summary["cv"] = coefficient_of_variation(summary["std"], global_acc)
        summary["sigma_acc"] = sigma_acc(a, global_acc)
    if loss is not None:
        f = _as_vector(loss, "loss")
        _same_length(a, f, "acc", "loss")
        summary["loss_mean"] = mean(f)
        summary["loss_var"] = variance(f)
    if groups is not None:
        ga = group_accuracies(a, groups, weights=group_weights)
        summary["group_gap"] = largest_group_gap(ga)
        summary["group_var"] = group_variance(ga)
        summary.update({f"group_acc_{g}": v for g, v in ga.items()})
    elif group_weights is not None:
        raise ValueError("group_weights was given without groups; pass groups too or drop group_weights")
    return summary
