"""Gossip mixing matrices of AFGA and CAFGA (TMLR 2024, Algorithms 1–2, Assumption 4.5), spectral gaps.

A gossip step replaces every client's model by a weighted average of its neighbours' models (Algorithm 1
line 14): x_i ← Σ_j W_ij x_j, i.e. X ← W X for the stacked models X (one row per client). Assumption 4.5
asks W to have entries in [0, 1] and to be doubly stochastic (W1 = 1, 1ᵀW = 1ᵀ), so gossip keeps the
average model, and measures how well-connected the clients are by the spectral gap

    ρ = ‖W − 11ᵀ/N‖₂      (spectral norm: 0 when every client averages all N, 1 when no one mixes).

Topologies, by name (``topology(name, n)``):

* ``ring`` — the paper's default (§6.1, App. B.2): clients in id order, each averages itself and its two
  neighbours with weight 1/3 each. The paper does not print the weights; these reproduce its ρ values
  (0.995 for AFGA's 50-client ring, Fig. 1a; 0.873 for CAFGA's 10-client clusters, Fig. 1b). A "ring" of
  two clients is pairwise averaging, of one client the identity.
* ``complete`` — Fig. 1's "balanced fully-connected": W = 11ᵀ/n, ρ = 0.
* ``disconnected`` — W = I: no gossip, ρ = 1.
* ``random`` — Fig. 1's "random" topology (ρ = 0.455 for AFGA, 0.766 in CAFGA's clusters); the paper does
  not describe it. Our reading: an Erdős–Rényi graph G(n, p) with Metropolis–Hastings weights
  W_ij = 1 / (1 + max(deg_i, deg_j)) on its edges and W_ii = 1 − Σ_{j≠i} W_ij, redrawn (adapting p) until
  |ρ − target| ≤ 0.01.
* ``unbalanced_complete`` — Fig. 1b's "unbalanced fully-connected" (ρ_max = 0.335): every client is connected
  to all others "but with random weighted averaging elements" (footnote 6). Our reading: B = the symmetric
  Sinkhorn scaling of (A + Aᵀ)/2 with A_ij ~ U(0, 1)⁴ (dense, doubly stochastic), then
  W = (1 − c) 11ᵀ/n + c B with c = target / ρ(B) ≤ 1, so that ρ(W) = c ρ(B) = target exactly.

CAFGA (Algorithm 2) gossips inside K disjoint clusters, each with its own W_k: the N × N matrix is
block-diagonal over the cluster assignment (``clustered``). Its connectivity is ρ_max = max_k ρ(W_k)
(Assumption D.2; ``cluster_gaps``): ρ of the whole block-diagonal matrix is 1 as soon as K > 1. The paper
uses 5 equal clusters and omits how clients are assigned (footnote 3); ``contiguous_clusters`` takes blocks
of N/K consecutive ids (the data partition is random, so this is a random clustering) and refuses a K that
does not divide N.

AFGA (a) and CAFGA (a) (§5, footnote 4): only the selected clients gossip, "over a new ring topology" among
them; ``subset_ring`` builds that ring in ascending id order inside an N × N matrix whose other rows are the
identity (non-selected clients keep their models).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "TOPOLOGIES",
    "TARGETED_TOPOLOGIES",
    "Topology",
    "DOUBLY_STOCHASTIC_ATOL",
    "RANDOM_RHO_TOL",
    "check_mixing_matrix",
    "spectral_gap",
    "ring",
    "complete",
    "disconnected",
    "random_graph",
    "unbalanced_complete",
    "metropolis_hastings",
    "topology",
    "contiguous_clusters",
    "clustered",
    "cluster_gaps",
    "subset_ring",
]

Topology = Literal["ring", "complete", "disconnected", "random", "unbalanced_complete"]
TOPOLOGIES: tuple[Topology, ...] = get_args(Topology)
TARGETED_TOPOLOGIES = ("random", "unbalanced_complete")  # built to a target spectral gap ``rho``
DOUBLY_STOCHASTIC_ATOL = 1e-8  # |row sum − 1| and |column sum − 1| allowed by ``check_mixing_matrix``
RANDOM_RHO_TOL = 0.01  # |ρ − target| accepted for a ``random`` draw

Seed = int | np.random.Generator


# -- validation and the spectral gap -------------------------------------------------------------------
def check_mixing_matrix(
    W: ArrayLike, *, atol: float = DOUBLY_STOCHASTIC_ATOL, num_clients: int | None = None
) -> np.ndarray:
    """W as a float64 array, after checking Assumption 4.5's conditions: square, finite, no negative entry,
    every row and every column summing to 1 within ``atol`` (absolute). Entries ≤ 1 then follow."""
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] == 0:
        raise ValueError(f"mixing matrix W must be square [N, N] with N ≥ 1, got shape {W.shape}")
    n = W.shape[0]
    if num_clients is not None and n != num_clients:
        raise ValueError(f"mixing matrix W is {n} × {n} but there are {num_clients} clients; build it for N")
    if not np.isfinite(W).all():
        raise ValueError("mixing matrix W has NaN or infinite entries; gossip weights must lie in [0, 1]")
    if (W < 0).any():
        i, j = np.argwhere(W < 0)[0]
        raise ValueError(
            f"mixing matrix W has a negative entry W[{i}, {j}] = {W[i, j]:.6g}; gossip weights must lie in "
            "[0, 1] (Assumption 4.5)"
        )
    for axis, what in ((1, "row"), (0, "column")):
        excess = W.sum(axis=axis) - 1.0
        k = int(np.argmax(np.abs(excess)))
        if abs(excess[k]) > atol:
            raise ValueError(
                f"mixing matrix W is not doubly stochastic: {what} {k} sums to {1.0 + excess[k]:.12g} "
                f"(tolerance {atol:g}); every row and column must sum to 1 (Assumption 4.5), e.g. use a "
                "symmetric W with unit row sums"
            )
    return W


def _gap(W: np.ndarray) -> float:
    return float(np.linalg.norm(W - 1.0 / W.shape[0], ord=2))


def spectral_gap(W: ArrayLike) -> float:
    """ρ = ‖W − 11ᵀ/N‖₂ (Assumption 4.5) of a valid mixing matrix (checked first)."""
    return _gap(check_mixing_matrix(W))


# -- topologies ------------------------------------------------------------------------------------------
def _positive_int(field: str, value: object, hint: str = "a number of clients") -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{field} must be an integer ≥ 1 ({hint}), got {value!r}")
    return int(value)


def _check_target(rho: object, name: str) -> float:
    if isinstance(rho, bool) or not isinstance(rho, int | float) or not 0 <= rho < 1:
        raise ValueError(
            f"topology {name!r} needs a target spectral gap rho in [0, 1), got {rho!r}; e.g. rho=0.455 "
            "(the paper's random topology for AFGA, Fig. 1a)"
        )
    return float(rho)


def ring(n: int) -> np.ndarray:
    """Ring in id order with weights 1/3 on self and both neighbours (n ≥ 3); pairwise averaging for n = 2,
    the identity for n = 1. ρ = (1 + 2 cos(2π/n)) / 3 for n ≥ 3."""
    n = _positive_int("n", n)
    if n <= 2:
        return np.full((n, n), 1.0 / n)
    W = np.zeros((n, n))
    i = np.arange(n)
    W[i, i] = W[i, (i + 1) % n] = W[i, (i - 1) % n] = 1.0 / 3.0
    return W


def complete(n: int) -> np.ndarray:
    """Balanced fully-connected: W = 11ᵀ/n (ρ = 0)."""
    n = _positive_int("n", n)
    return np.full((n, n), 1.0 / n)


def disconnected(n: int) -> np.ndarray:
    """No gossip: W = I (ρ = 1 for n ≥ 2)."""
    return np.eye(_positive_int("n", n))


def metropolis_hastings(adjacency: ArrayLike) -> np.ndarray:
    """Metropolis–Hastings weights of an undirected graph: W_ij = 1 / (1 + max(deg_i, deg_j)) on each edge,
    W_ii = 1 − Σ_{j≠i} W_ij (symmetric and doubly stochastic for every graph)."""
    A = np.asarray(adjacency, dtype=bool)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or (A != A.T).any():
        raise ValueError(f"adjacency must be a symmetric square boolean matrix, got shape {A.shape}")
    A = A & ~np.eye(A.shape[0], dtype=bool)
    deg = A.sum(axis=1)
    W = np.where(A, 1.0 / (1.0 + np.maximum(deg[:, None], deg[None, :])), 0.0)
    W[np.diag_indices_from(W)] = 1.0 - W.sum(axis=1)
    return W


def random_graph(
    n: int, rho: float, *, seed: Seed = 0, tol: float = RANDOM_RHO_TOL, max_draws: int = 20_000
) -> np.ndarray:
    """Erdős–Rényi G(n, p) with Metropolis–Hastings weights whose ρ is within ``tol`` of ``rho``.

    Starts at p = 1/2 and after each draw moves p by (ρ − rho) / 2 (more edges, smaller ρ), so the draws
    settle where G(n, p) has the target gap. |ρ − rho| ≤ tol < 1 − rho implies ρ < 1: the graph is connected.
    """
    n, rho = _positive_int("n", n), _check_target(rho, "random")
    if not 0 < tol < 1 - rho:
        raise ValueError(f"tol must lie in (0, 1 − rho) = (0, {1 - rho:g}) (a connected graph), got {tol}")
    rng = np.random.default_rng(seed)
    p = 0.5
    for _ in range(max_draws):
        upper = np.triu(rng.random((n, n)) < p, 1)
        W = metropolis_hastings(upper | upper.T)
        gap = _gap(W)
        if abs(gap - rho) <= tol:
            return W
        p = min(1.0, max(1.0 / n, p + 0.5 * (gap - rho)))
    raise ValueError(
        f"no random graph on {n} clients reached rho = {rho} ± {tol} in {max_draws} draws (its gaps are too "
        "coarse at this size); choose another rho, a larger tol, or the ring/complete topology"
    )


def _symmetric_sinkhorn(S: np.ndarray, atol: float = 1e-13, max_iter: int = 100_000) -> np.ndarray:
    """D S D with D diagonal such that every row (and, by symmetry, column) sums to 1; S symmetric and
    positive. Fixed-point iteration d ← sqrt(d / (S d)) (Knight, Ruiz & Uçar 2014)."""
    d = 1.0 / np.sqrt(S.sum(axis=1))
    for _ in range(max_iter):
        B = S * d[:, None] * d[None, :]
        if np.abs(B.sum(axis=1) - 1.0).max() <= atol:
            return B
        d = np.sqrt(d / (S @ d))
    raise RuntimeError("symmetric Sinkhorn scaling did not converge")  # cannot happen for positive S


def unbalanced_complete(n: int, rho: float, *, seed: Seed = 0, max_draws: int = 1000) -> np.ndarray:
    """Dense W with random unequal weights and ρ(W) = rho exactly: W = (1 − c) 11ᵀ/n + c B, where B is the
    symmetric Sinkhorn scaling of (A + Aᵀ)/2 with A_ij ~ U(0, 1)⁴ and c = rho / ρ(B) (redrawn while ρ(B) <
    rho, which would need c > 1)."""
    n, rho = _positive_int("n", n), _check_target(rho, "unbalanced_complete")
    if rho == 0:
        return complete(n)
    rng = np.random.default_rng(seed)
    for _ in range(max_draws):
        A = rng.random((n, n)) ** 4
        B = _symmetric_sinkhorn((A + A.T) / 2)
        gap = _gap(B)
        if gap >= rho:
            c = rho / gap
            return (1.0 - c) / n + c * B
    raise ValueError(
        f"random dense weights on {n} clients never reached rho = {rho} in {max_draws} draws (their gap is "
        "smaller); choose a smaller rho or the random topology"
    )


def topology(name: str, n: int, *, rho: float | None = None, seed: Seed = 0) -> np.ndarray:
    """The n × n mixing matrix of topology ``name`` (one of ``TOPOLOGIES``); ``rho`` is the target spectral
    gap of the ``random`` and ``unbalanced_complete`` topologies and must be None for the others."""
    if name not in TOPOLOGIES:
        raise ValueError(f"unknown topology {name!r}; use one of {', '.join(TOPOLOGIES)}")
    if name in TARGETED_TOPOLOGIES:
        build = random_graph if name == "random" else unbalanced_complete
        return build(n, _check_target(rho, name), seed=seed)
    if rho is not None:
        raise ValueError(
            f"topology {name!r} has a fixed spectral gap; rho applies only to "
            f"{' and '.join(TARGETED_TOPOLOGIES)} (leave rho unset)"
        )
    return {"ring": ring, "complete": complete, "disconnected": disconnected}[name](n)


# -- clusters (CAFGA) and selected-client rings (AFGA (a), CAFGA (a)) --------------------------------------
def contiguous_clusters(num_clients: int, num_clusters: int) -> np.ndarray:
    """Cluster label of each client: K equal blocks of N/K consecutive ids, cluster(i) = i // (N/K).
    CAFGA's clusters all have n = N/K clients (Algorithm 2), so K must divide N."""
    n = _positive_int("num_clients", num_clients)
    k = _positive_int("num_clusters", num_clusters, "the number of clusters")
    if n % k:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        raise ValueError(
            f"num_clusters K={k} does not divide num_clients N={n}: CAFGA splits the clients into K equal "
            f"clusters of N/K; choose K among {divisors} or pass an explicit cluster assignment to "
            "clustered()"
        )
    return np.arange(n) // (n // k)


def _check_labels(assignment: ArrayLike) -> np.ndarray:
    labels = np.asarray(assignment)
    integer = np.issubdtype(labels.dtype, np.integer)
    if labels.ndim != 1 or labels.size == 0 or not integer or labels.min() < 0:
        raise ValueError("cluster assignment must be a non-empty 1-D array of non-negative integer labels")
    return labels


def clustered(
    assignment: ArrayLike, name: str = "ring", *, rho: float | None = None, seed: Seed = 0
) -> np.ndarray:
    """Block-diagonal N × N mixing matrix of CAFGA: the clients of each cluster (``assignment[i]`` = cluster
    of client i, clusters of any sizes) gossip over topology ``name`` among themselves, in ascending id
    order; no weight crosses clusters. Random topologies draw the clusters in label order from one
    generator. With a single cluster this is ``topology(name, N)``."""
    labels = _check_labels(assignment)
    rng = np.random.default_rng(seed)
    W = np.zeros((labels.size, labels.size))
    for k in np.unique(labels):
        members = np.flatnonzero(labels == k)
        W[np.ix_(members, members)] = topology(name, members.size, rho=rho, seed=rng)
    return W


def cluster_gaps(W: ArrayLike, assignment: ArrayLike) -> np.ndarray:
    """ρ(W_k) of each cluster's block, in label order (ρ_max = the largest, Assumption D.2); refuses a W
    that mixes clients of different clusters."""
    labels = _check_labels(assignment)
    W = check_mixing_matrix(W, num_clients=labels.size)
    cross = labels[:, None] != labels[None, :]
    if (W[cross] != 0).any():
        i, j = np.argwhere(cross & (W != 0))[0]
        raise ValueError(
            f"W mixes client {i} (cluster {labels[i]}) with client {j} (cluster {labels[j]}); CAFGA's "
            "gossip stays inside clusters: build W with clustered()"
        )
    return np.array([_gap(W[np.ix_(m, m)]) for m in (np.flatnonzero(labels == k) for k in np.unique(labels))])


def subset_ring(num_clients: int, selected: ArrayLike) -> np.ndarray:
    """N × N matrix in which the ``selected`` clients gossip over a ring among themselves (ascending id
    order, ``ring(len(selected))``) and every other client keeps its model (identity row)."""
    n = _positive_int("num_clients", num_clients)
    sel = np.asarray(selected)
    if (
        sel.ndim != 1
        or sel.size == 0
        or not np.issubdtype(sel.dtype, np.integer)
        or sel.min() < 0
        or sel.max() >= n
        or np.unique(sel).size != sel.size
    ):
        raise ValueError(f"selected must be a non-empty 1-D array of distinct client ids in [0, {n}): {sel}")
    idx = np.sort(sel)
    W = np.eye(n)
    W[np.ix_(idx, idx)] = ring(idx.size)
    return W
