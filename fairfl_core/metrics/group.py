"""Metrics of groups and clusters of clients: GIFAIR-FL's group accuracies, gap and variance (Def. 1), and
the NMI of found clusters against planted ones (Equitable-FL Fig. 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.metrics import normalized_mutual_info_score

from fairfl_core.metrics._inputs import as_labels, as_vector, same_length

__all__ = ["cluster_nmi", "group_accuracies", "group_variance", "largest_group_gap", "nmi"]


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
    labels = as_labels(groups, "groups")
    if labels.size != m:
        raise ValueError(
            f"groups has {labels.size} labels but there are {m} clients; give one label per client"
        )
    return {g.item() if hasattr(g, "item") else g: np.flatnonzero(labels == g) for g in np.unique(labels)}


def group_accuracies(a: Any, groups: Any, weights: Any = None) -> dict[Any, float]:
    """Accuracy A_i of each group (GIFAIR Tables 4 and 6).

    Default (GIFAIR-FL does not define it; read as its group loss L_i is, §3 Objective (1)): the unweighted
    mean of the group's client accuracies, (1/|A_i|) sum_{k in A_i} a_k.
    With ``weights`` (one per client, e.g. test-sample counts): the weighted mean, which with test counts
    is the pooled accuracy over all of the group's test samples.
    ``groups`` is a label per client or a mapping {group: client indices}. Keys are sorted labels (mapping
    order for a mapping).
    """
    arr = as_vector(a, "a")
    w = None if weights is None else as_vector(weights, "weights")
    if w is not None:
        same_length(arr, w, "a", "weights")
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
    return as_vector(values, "group_acc")


def largest_group_gap(group_acc: Mapping[Any, float] | Any) -> float:
    """GIFAIR discrepancy max_i A_i - min_i A_i (Table 4 caption), from group accuracies (dict or vector)."""
    v = _group_values(group_acc)
    return float(v.max() - v.min())


def group_variance(group_acc: Mapping[Any, float] | Any) -> float:
    """Population variance of group accuracies, GIFAIR Def. 1 (for 2 groups it equals (gap / 2)^2)."""
    return float(_group_values(group_acc).var())


def nmi(labels_pred: Any, labels_true: Any, nan_if_one_true_cluster: bool = False) -> float:
    """Normalised mutual information with arithmetic normalisation (Equitable-FL Fig. 2; sklearn's
    ``normalized_mutual_info_score(labels_true, labels_pred, average_method="arithmetic")``).

    With a single true cluster sklearn returns 0 (or 1 if the prediction is also one cluster); set
    ``nan_if_one_true_cluster`` to get NaN instead, so ``np.nanmean`` over rounds averages only the rounds
    with >= 2 true clusters present (docs/readings.md).
    """
    pred = as_labels(labels_pred, "labels_pred")
    true = as_labels(labels_true, "labels_true")
    same_length(pred, true, "labels_pred", "labels_true")
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
    groups = as_labels(planted_groups, "planted_groups")
    pred = as_labels(labels, "labels")
    if participants is None:
        same_length(pred, groups, "labels", "planted_groups")
        return nmi(pred, groups, nan_if_one_true_cluster)
    idx = as_labels(participants, "participants")
    same_length(pred, idx, "labels", "participants")
    if not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= groups.size:
        raise ValueError(
            f"participants must be client indices in [0, {groups.size}) (one per entry of planted_groups); "
            f"got {idx[:5].tolist()}"
        )
    if np.unique(idx).size != idx.size:
        raise ValueError("participants has repeated client indices; give each participant once")
    return nmi(pred, groups[idx], nan_if_one_true_cluster)
