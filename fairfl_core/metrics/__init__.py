"""Fairness and performance metrics of the five fairfl papers, as pure functions, by what they measure:
:mod:`~fairfl_core.metrics.client` (one round's per-client vector), :mod:`~fairfl_core.metrics.group`
(groups and clusters of clients), :mod:`~fairfl_core.metrics.parity` (groups of samples by a sensitive
attribute: FairFed's statistical parity and equal opportunity differences) and
:mod:`~fairfl_core.metrics.curve` (curves over rounds); this module adds :func:`fairness_summary`, the
standard set stored with every run (and, on data with a sensitive attribute,
:func:`~fairfl_core.metrics.parity.parity_summary` beside it).

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
from typing import Any

import numpy as np

from fairfl_core.metrics._inputs import as_vector, same_length
from fairfl_core.metrics.client import (
    angle,
    best_fraction,
    client_disagreement,
    coefficient_of_variation,
    cv_improvement,
    entropy_of_normalised,
    faa,
    kl_to_uniform,
    mean,
    percentile,
    sigma_acc,
    std,
    variance,
    worst_fraction,
)
from fairfl_core.metrics.curve import (
    cumulative_moving_average,
    extra_communication_fraction,
    last_k_mean,
    mean_over_rounds,
    rounds_to_target,
)
from fairfl_core.metrics.group import (
    cluster_nmi,
    group_accuracies,
    group_variance,
    largest_group_gap,
    nmi,
)
from fairfl_core.metrics.parity import (
    equal_opportunity_difference,
    group_confusion,
    parity_summary,
    positive_rates,
    statistical_parity_difference,
    true_positive_rates,
)

__all__ = [
    "angle",
    "best_fraction",
    "client_disagreement",
    "cluster_nmi",
    "coefficient_of_variation",
    "cumulative_moving_average",
    "cv_improvement",
    "entropy_of_normalised",
    "equal_opportunity_difference",
    "extra_communication_fraction",
    "faa",
    "fairness_summary",
    "group_accuracies",
    "group_confusion",
    "group_variance",
    "kl_to_uniform",
    "largest_group_gap",
    "last_k_mean",
    "mean",
    "mean_over_rounds",
    "nmi",
    "parity_summary",
    "percentile",
    "positive_rates",
    "rounds_to_target",
    "sigma_acc",
    "statistical_parity_difference",
    "std",
    "true_positive_rates",
    "variance",
    "worst_fraction",
]


def fairness_summary(
    acc: Any,
    loss: Any = None,
    global_acc: float | None = None,
    groups: Any = None,
    *,
    group_weights: Any = None,
) -> dict[str, float]:
    """The standard metric set of a run (keys documented in the module docstring); accuracies in %.

    ``global_acc`` is the global model's accuracy on the pooled test set (FedEBA+'s "Global Acc.", Table 1);
    ``groups`` and ``group_weights`` are passed to ``group_accuracies``.
    """
    a = as_vector(acc, "acc")
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
        f = as_vector(loss, "loss")
        same_length(a, f, "acc", "loss")
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
