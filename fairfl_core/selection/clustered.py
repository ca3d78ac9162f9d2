"""Clustered sampling, Algorithm 2 ("Cluster2"; Fraboni et al., ICML 2021), as the authors' reference code.

From the clients' representative gradients G_i (their last update w_i − w):

1. a dissimilarity matrix M (default arccos of the cosine similarity; 0 when a gradient is 0);
2. Ward linkage on the **rows of M as observations** (the reference's ``linkage(M, "ward")``);
3. every merge height replaced by the merged set's total importance Σ p_i (in units of ε = 1e10, integer),
   and the tree cut at ε/m: flat clusters of total importance ≤ 1/m;
4. m sampling distributions: the m heaviest clusters own one row each (mass m·p_i·ε per member); the
   other clusters' clients, shuffled within each cluster, lightest cluster first, are poured into the rows
   from row 0 up to capacity ε each (a client may straddle two rows). Each row is then normalised.
   Hence Σ_l W_l(i) = m·p_i and drawing one client per row is unbiased with weights 1/m.

A client with m·p_i > 1 (not covered by the reference) fills its own row and pours the excess first.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import torch
from scipy.cluster.hierarchy import ClusterWarning, fcluster, linkage

from fairfl_core.dataclass_io import check_option

__all__ = [
    "EPSILON",
    "MEASURES",
    "Measure",
    "cluster_distributions",
    "importance_clusters",
    "representative_distances",
    "sample_one_per_row",
]

EPSILON = 10**10  # the reference's integer resolution of importances


def _arccos(g: torch.Tensor) -> torch.Tensor:
    norms = g.norm(dim=1).double()
    nonzero = norms > 0
    safe = torch.where(nonzero, norms, 1.0)
    cos = (g @ g.T).double() / safe[:, None] / safe[None, :]
    angle = torch.arccos(cos.clamp(-1.0, 1.0))
    angle.fill_diagonal_(0.0)
    return torch.where(nonzero[:, None] & nonzero[None, :], angle, torch.zeros_like(angle))


def _l2(g: torch.Tensor) -> torch.Tensor:
    return torch.cdist(g[None], g[None], compute_mode="donot_use_mm_for_euclid_dist")[0].double() ** 2


def _l1(g: torch.Tensor) -> torch.Tensor:
    return torch.cdist(g[None], g[None], p=1.0)[0].double()


Measure = Literal["arccos", "L2", "L1"]
MEASURES = {"arccos": _arccos, "L2": _l2, "L1": _l1}


def representative_distances(grads: torch.Tensor, measure: Measure = "arccos") -> np.ndarray:
    """M_ij between representative gradients ``[n, P]``: arccos(cos(G_i, G_j)) (0 if a norm is 0),
    squared Euclidean ("L2") or L1, as the reference's ``get_similarity``."""
    check_option(measure, Measure, "similarity")
    return MEASURES[measure](grads).cpu().numpy()


def importance_clusters(dist: np.ndarray, weights: np.ndarray, m: int) -> np.ndarray:
    """Flat cluster label (1-based) per client: Ward tree on the rows of ``dist``, merge heights replaced by
    ⌊ε Σ p⌋ of the merged set, cut at ε/m."""
    n = len(weights)
    if n < 2:
        return np.ones(n, dtype=np.int64)
    with warnings.catch_warnings():  # M is deliberately used as an observation matrix (the reference's quirk)
        warnings.simplefilter("ignore", ClusterWarning)
        tree = linkage(np.asarray(dist, dtype=np.float64), method="ward")
    node_weight = np.concatenate([np.asarray(weights, dtype=np.float64), np.zeros(n - 1)])
    for i, (a, b) in enumerate(tree[:, :2].astype(np.int64)):
        node_weight[n + i] = node_weight[a] + node_weight[b]
        tree[i, 2] = int(node_weight[n + i] * EPSILON)
    return fcluster(tree, int(EPSILON / m), criterion="distance")


def _pour(rows: np.ndarray, filled: np.ndarray, pieces: list[tuple[int, int]]) -> None:
    """Fill ``rows`` (integer masses) sequentially from row 0, each up to capacity ε."""
    k = 0
    for client, mass in pieces:
        while mass > 0:
            if k >= len(rows):
                raise ValueError("clustered sampling: importances exceed m rows; weights must sum to 1")
            take = min(EPSILON - int(filled[k]), mass)
            rows[k, client] += take
            filled[k] += take
            mass -= take
            if filled[k] == EPSILON:
                k += 1


def cluster_distributions(
    labels: np.ndarray, weights: np.ndarray, m: int, rng: np.random.Generator
) -> np.ndarray:
    """The m sampling distributions ``W [m, n]`` of Algorithm 2 (rows sum to 1, Σ_l W_l(i) ≈ m p_i)."""
    labels = np.asarray(labels)
    n = len(labels)
    mass = (np.asarray(weights, dtype=np.float64) * EPSILON * m).astype(np.int64)
    names = np.unique(labels)
    cluster_mass = np.array([mass[labels == c].sum() for c in names])
    if len(names) < m:
        raise ValueError(
            f"clustered sampling found {len(names)} clusters for {m} rows; weights must sum to 1"
        )
    by_mass = names[np.argsort(cluster_mass, kind="stable")]
    rows = np.zeros((m, n), dtype=np.int64)
    filled = np.zeros(m, dtype=np.int64)
    pieces: list[tuple[int, int]] = []
    for row, c in enumerate(by_mass[len(names) - m :]):
        for client in np.flatnonzero(labels == c):
            own = min(int(mass[client]), EPSILON - int(filled[row]))
            rows[row, client] = own
            filled[row] += own
            if mass[client] > own:  # m·p_i > 1: a singleton heavier than one row
                pieces.append((int(client), int(mass[client]) - own))
    for c in by_mass[: len(names) - m]:
        members = np.flatnonzero(labels == c)
        pieces.extend((int(client), int(mass[client])) for client in rng.permutation(members))
    _pour(rows, filled, pieces)
    if (filled == 0).any():
        raise ValueError("clustered sampling produced an empty row; every client needs a positive weight")
    return rows / filled[:, None].astype(np.float64)


def sample_one_per_row(distributions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One client drawn from each row of ``distributions`` (independently; duplicates possible)."""
    cdf = np.cumsum(distributions, axis=1)
    u = rng.random(len(distributions)) * cdf[:, -1]
    return (cdf <= u[:, None]).sum(axis=1)
