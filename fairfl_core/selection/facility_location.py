"""Facility-location client selection (DivFL) and the greedy maximisers SubTrunc / UnionFL build on.

DivFL (Balakrishnan et al., ICLR 2022; SubTrunc paper eqs. 9–10) picks the set S of κ clients whose
gradients best represent every client's gradient::

    Ḡ(S) = Σ_i min_{j∈S} d_ij,          G(S) = Ḡ(∅) − Ḡ(S),        max_{|S| ≤ κ} G(S)

with ``d_ij = ‖∇f_i(w) − ∇f_j(w)‖``. ``Ḡ(∅)`` uses the auxiliary element ``m_i(∅) = D0 ≥ max d_ij``
(any such D0 gives the same greedy choices). The general objective maximised here is

    W(S) = G(S) + Σ_{e∈S} bonus_e + λ · min(b, Σ_{e∈S} φ_e)

which is DivFL (bonus = 0, λ = 0), SubTrunc (eq. 13: φ_e = φ(f_e(w)), truncation b) and UnionFL
(eq. 14: bonus_e = −μ·1[e ∈ U_t]); :mod:`fairfl_core.selection.submodular` builds the last two. Every
instance is submodular, so lazy greedy returns exactly what plain greedy (eq. 16) returns. Stochastic greedy
(eq. 17; Mirzasoleiman et al., AAAI 2015) draws a fresh pool of candidates from the unselected ones at every
step. The three greedy procedures only call a :class:`GainOracle` (``FacilityLocation`` is one).

The paper uses the distances as they are (gradient-norm units), so G's gains scale with the gradients while
SubTrunc's λ·b and UnionFL's μ do not; :func:`normalize_distances` offers ``"mean"`` (divide by the mean
distance between distinct clients) as an alternative to the default ``"none"``. G still sums over the n
clients either way; SubTrunc's ``objective_scale`` (``selection/submodular.py``) rescales G itself.

Rows of ``dist`` are the clients to be represented, columns the candidates (usually both are all clients).
Ties go to the lowest candidate index (stochastic greedy: the first in the drawn pool).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch

from fairfl_core.dataclass_io import check_option

__all__ = [
    "DistanceScale",
    "FacilityLocation",
    "GRAM_RELATIVE_ERROR",
    "GainOracle",
    "facility_location_cost",
    "facility_location_gain",
    "greedy",
    "lazy_greedy",
    "normalize_distances",
    "pairwise_distances",
    "stochastic_greedy",
    "stochastic_pool_size",
]


GRAM_RELATIVE_ERROR = 1e-6  # the largest relative error pairwise_distances accepts from its Gram form
_GRAM_CHUNK = 16384  # columns per float64 product: bounds the float64 copies at [K + M, 16384]


def pairwise_distances(x: torch.Tensor, y: torch.Tensor | None = None) -> np.ndarray:
    """Euclidean distances ``[K, M]`` between the rows of ``x`` and of ``y`` (default ``x``), float64.

    One float64 Gram product, d² = ‖a‖² + ‖b‖² − 2a·b. Its rounding error is at most
    E = γ_{P+2}·(‖a‖ + ‖b‖)² (Higham 2002, Lemma 3.1: every dot product of length P, in any order, plus the
    two additions), so where d̂² − E ≥ E / :data:`GRAM_RELATIVE_ERROR` the distance is within that relative
    error of the exact one. The other pairs (nearly equal rows, whose terms cancel) are recomputed elementwise
    as ‖a − b‖ in float64: equal rows are at distance exactly 0, as is ``x`` against itself on the diagonal.
    """
    same = y is None
    y = x if y is None else y
    if x.dim() != 2 or y.dim() != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(
            f"pairwise_distances needs [K, P] and [M, P] rows, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    gram = torch.zeros(len(x), len(y), dtype=torch.float64, device=x.device)
    sq_x = torch.zeros(len(x), dtype=torch.float64, device=x.device)
    sq_y = sq_x if same else torch.zeros(len(y), dtype=torch.float64, device=x.device)
    for lo in range(0, x.shape[1], _GRAM_CHUNK):
        a = x[:, lo : lo + _GRAM_CHUNK].double()
        b = a if same else y[:, lo : lo + _GRAM_CHUNK].double()
        gram += a @ b.T
        sq_x += (a * a).sum(1)
        if not same:
            sq_y += (b * b).sum(1)
    d2 = sq_x[:, None] + sq_y[None, :] - 2 * gram
    bound = _gamma(x.shape[1] + 2) * (sq_x.sqrt()[:, None] + sq_y.sqrt()[None, :]) ** 2
    loose = d2 - bound < bound / GRAM_RELATIVE_ERROR
    if same:
        d2 = (d2 + d2.T) / 2  # a·b and b·a may round apart in the product; the distance is symmetric
        loose |= loose.T.clone()  # so both halves of a recomputed pair are recomputed
        loose.fill_diagonal_(False)
        d2.fill_diagonal_(0.0)
    for i in loose.any(1).nonzero().flatten().tolist():
        cols = loose[i].nonzero().flatten()
        d2[i, cols] = (x[i].double() - y[cols].double()).square().sum(1)
    return d2.clamp_min_(0.0).sqrt_().cpu().numpy()


def _gamma(n: int) -> float:
    """γ_n = n·u / (1 − n·u) in float64 (Higham 2002, Lemma 3.1)."""
    nu = n * torch.finfo(torch.float64).eps / 2
    return nu / (1 - nu)


DistanceScale = Literal["none", "mean"]


def normalize_distances(dist: np.ndarray, scale: DistanceScale = "none") -> np.ndarray:
    """The ``[N, N]`` distances in the units G is maximised in: ``"none"`` (the paper: raw gradient-norm
    units) or ``"mean"`` (divided by the mean of d_ij over i ≠ j, so one unit is a typical client distance).

    A matrix whose off-diagonal entries are all 0 (identical gradients) is returned unscaled.
    """
    check_option(scale, DistanceScale, "distance scale")
    dist = np.asarray(dist, dtype=np.float64)
    if scale == "none":
        return dist
    if dist.ndim != 2 or dist.shape[0] != dist.shape[1] or dist.shape[0] < 2:
        raise ValueError(
            f'distance scale "mean" needs a square [clients, clients] matrix of at least 2 clients, '
            f'got shape {dist.shape}: use scale "none"'
        )
    n = dist.shape[0]
    mean = (dist.sum() - np.trace(dist)) / (n * (n - 1))
    return dist / mean if mean > 0 else dist


def facility_location_gain(dist: np.ndarray, nearest: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Δ_G(e | S) = Σ_i [m_i − min(m_i, d_ie)] for every candidate e (SubTrunc §III-A, eq. 10).

    ``nearest`` is m_i(S) = min_{j∈S} d_ij (D0 for the empty set). Each candidate's sum runs over one
    contiguous row, so a gain does not depend on which other candidates are evaluated with it.
    """
    cols = dist.T[np.asarray(candidates)]
    return (nearest - np.minimum(nearest, cols)).sum(axis=1)


def facility_location_cost(dist: np.ndarray, selected, empty_value: float | None = None) -> float:
    """Ḡ(S) = Σ_i min_{j∈S} d_ij (eq. 9); for S = ∅ it is n · D0 (D0 defaults to max d)."""
    selected = np.asarray(selected, dtype=np.int64)
    if len(selected) == 0:
        d0 = float(dist.max()) if empty_value is None else float(empty_value)
        return dist.shape[0] * d0
    return float(dist[:, selected].min(axis=1).sum())


class GainOracle(Protocol):
    """What the greedy procedures call: ``start()`` gives the state of S = ∅ (with a ``chosen`` list),
    ``gains(state, candidates)`` the vector Δ(e | S) over a batch of candidates, ``add(state, e)`` makes
    S ← S ∪ {e}."""

    @property
    def num_candidates(self) -> int: ...

    def start(self) -> Any: ...

    def gains(self, state: Any, candidates: np.ndarray) -> np.ndarray: ...

    def add(self, state: Any, e: int) -> None: ...


@dataclass
class _State:
    nearest: np.ndarray  # m_i(S)
    used: float = 0.0  # Σ_{e∈S} φ_e
    chosen: list[int] = field(default_factory=list)


@dataclass
class FacilityLocation:
    """W(S) = G(S) + Σ_{e∈S} bonus_e + λ·min(b, Σ_{e∈S} φ_e) over the columns of ``dist``.

    ``dist``: ``[n, c]`` dissimilarities (use :meth:`from_similarity` for similarities);
    ``bonus``: modular term per candidate (UnionFL: −μ·1[e ∈ U_t]); ``phi``, ``lam``, ``budget``:
    the truncated term of SubTrunc (eq. 11); ``empty_value``: D0 (default max d; must be ≥ max d).
    """

    dist: np.ndarray
    bonus: np.ndarray | None = None
    phi: np.ndarray | None = None
    lam: float = 0.0
    budget: float = float("inf")
    empty_value: float | None = None

    def __post_init__(self):
        self.dist = np.asarray(self.dist, dtype=np.float64)
        if self.dist.ndim != 2 or self.dist.size == 0:
            raise ValueError(
                f"dist must be a non-empty [clients, candidates] matrix, got shape {self.dist.shape}"
            )
        if not np.isfinite(self.dist).all() or (self.dist < 0).any():
            raise ValueError("dist must be finite and non-negative (pass similarities via from_similarity)")
        c = self.num_candidates
        for name in ("bonus", "phi"):
            value = getattr(self, name)
            if value is not None:
                value = np.asarray(value, dtype=np.float64)
                if value.shape != (c,):
                    raise ValueError(
                        f"{name} must have one entry per candidate ({c}), got shape {value.shape}"
                    )
                setattr(self, name, value)
        if not self.lam >= 0:
            raise ValueError(f"lam (λ) must be non-negative, got {self.lam}")
        if not self.budget > 0:
            raise ValueError(
                f"budget (b) must be positive (the truncation level of λ·min(b, Σφ)), got {self.budget}"
            )
        if self.phi is not None and (self.phi < 0).any():
            raise ValueError("phi values must be non-negative (the truncated term must stay submodular)")
        d_max = float(self.dist.max())
        if self.empty_value is None:
            self.empty_value = d_max
        elif self.empty_value < d_max:
            raise ValueError(
                f"empty_value (D0) = {self.empty_value} is below max d = {d_max}; it would clip "
                "distances and change the choices: use a value ≥ max d or leave it None"
            )

    @classmethod
    def from_similarity(cls, similarity: np.ndarray, **kwargs) -> FacilityLocation:
        """Facility location Σ_i max_{j∈S} s_ij: the same greedy choices as d = max s − s."""
        s = np.asarray(similarity, dtype=np.float64)
        return cls(dist=s.max() - s, **kwargs)

    @property
    def num_candidates(self) -> int:
        return self.dist.shape[1]

    def start(self) -> _State:
        return _State(nearest=np.full(self.dist.shape[0], self.empty_value))

    def gains(self, state: _State, candidates: np.ndarray) -> np.ndarray:
        """Δ_W(e | S) for each candidate e (eqs. 10, 13, 14)."""
        g = facility_location_gain(self.dist, state.nearest, candidates)
        if self.bonus is not None:
            g = g + self.bonus[candidates]
        return g + self.truncated_gain(state, candidates)

    def truncated_gain(self, state: _State, candidates: np.ndarray) -> np.ndarray:
        """Δ_H(e | S) = λ·[min(b, Σ_{j∈S} φ_j + φ_e) − min(b, Σ_{j∈S} φ_j)] (eq. 11; 0 without φ or λ)."""
        if self.phi is None or not self.lam:
            return np.zeros(len(candidates))
        return self.lam * (
            np.minimum(self.budget, state.used + self.phi[candidates]) - min(self.budget, state.used)
        )

    def saturated(self, state: _State) -> bool:
        """Whether H = λ·min(b, Σ_{j∈S} φ_j) has reached λ·b (no candidate can add to it any more)."""
        return self.phi is None or not self.lam or state.used >= self.budget

    def add(self, state: _State, e: int) -> None:
        np.minimum(state.nearest, self.dist[:, e], out=state.nearest)
        if self.phi is not None:
            state.used += float(self.phi[e])
        state.chosen.append(int(e))

    def value(self, selected) -> float:
        """W(S) (for checks and reports; the greedy procedures use only gains)."""
        selected = np.asarray(selected, dtype=np.int64)
        nearest = np.full(self.dist.shape[0], self.empty_value)
        if len(selected):
            nearest = np.minimum(nearest, self.dist[:, selected].min(axis=1))
        w = self.dist.shape[0] * self.empty_value - float(nearest.sum())
        if self.bonus is not None:
            w += float(self.bonus[selected].sum())
        if self.phi is not None:
            w += self.lam * min(self.budget, float(self.phi[selected].sum()))
        return w


def _check_k(objective: GainOracle, k: int) -> None:
    if not 0 < k <= objective.num_candidates:
        raise ValueError(
            f"cannot select {k} of {objective.num_candidates} candidates: clients_per_round must be "
            "between 1 and the number of candidates"
        )


def greedy(objective: GainOracle, k: int) -> np.ndarray:
    """Plain greedy (eq. 16): add argmax_e Δ(e | S) over all unselected e, k times."""
    _check_k(objective, k)
    state = objective.start()
    remaining = np.arange(objective.num_candidates)
    for _ in range(k):
        best = int(np.argmax(objective.gains(state, remaining)))
        objective.add(state, int(remaining[best]))
        remaining = np.delete(remaining, best)
    return np.asarray(state.chosen)


def lazy_greedy(objective: GainOracle, k: int) -> np.ndarray:
    """Lazy greedy (Minoux 1978; DivFL's default): the same set as :func:`greedy`, fewer gain evaluations.

    Stale gains are upper bounds (submodularity); an element whose gain is fresh for the current step and
    still heads the queue is the argmax (ties: lowest index, as in :func:`greedy`).
    """
    _check_k(objective, k)
    state = objective.start()
    all_idx = np.arange(objective.num_candidates)
    heap = [(-float(g), int(e), 0) for e, g in zip(all_idx, objective.gains(state, all_idx), strict=True)]
    heapq.heapify(heap)
    while len(state.chosen) < k:
        neg_gain, e, step = heapq.heappop(heap)
        if step == len(state.chosen):
            objective.add(state, e)
        else:
            fresh = float(objective.gains(state, np.array([e]))[0])
            heapq.heappush(heap, (-fresh, e, len(state.chosen)))
    return np.asarray(state.chosen)


def stochastic_pool_size(num_candidates: int, k: int, subsample: float) -> int:
    """Pool size of DivFL's stochastic greedy: max(κ, ⌊subsample · n⌋) (r = 10 for n = 100, κ = 10)."""
    if not 0 < subsample <= 1:
        raise ValueError(f"subsample must be in (0, 1], got {subsample}")
    return max(k, int(subsample * num_candidates))


def stochastic_greedy(
    objective: GainOracle,
    k: int,
    rng: np.random.Generator,
    pool_size: int,
    pools: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Stochastic greedy (eq. 17): each step, argmax of Δ(e | S) over a fresh random pool R ⊆ N∖S
    of size min(r, |N∖S|), drawn with ``rng``; ``pools``, when given, receives each step's pool.

    When the pool covers every unselected candidate it is taken in index order (no draw), so
    ``pool_size = n`` reproduces :func:`greedy` exactly.
    """
    _check_k(objective, k)
    if not 1 <= pool_size <= objective.num_candidates:
        raise ValueError(
            f"pool_size (r) must be between 1 and the number of candidates ({objective.num_candidates}), "
            f"got {pool_size}"
        )
    state = objective.start()
    remaining = np.arange(objective.num_candidates)
    for _ in range(k):
        pool = (
            remaining if pool_size >= len(remaining) else rng.choice(remaining, size=pool_size, replace=False)
        )
        if pools is not None:
            pools.append(pool)
        e = int(pool[int(np.argmax(objective.gains(state, pool)))])
        objective.add(state, e)
        remaining = remaining[remaining != e]
    return np.asarray(state.chosen)
