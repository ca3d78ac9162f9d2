"""FedMGDA+ (Hu et al., IEEE TNSE 2022, "FedMGDA+: Federated Learning meets Multi-objective Optimization").

Each selected client trains like FedAvg; the server normalises the updates, d̂_k = (w − w_k)/‖w − w_k‖, and
finds the min-norm convex combination inside an ε-box around a centre c_k (paper Alg. 1, ‖λ − λ⁰‖_∞ ≤ ε)::

    λ* = argmin_λ ‖Σ_k λ_k d̂_k‖²   s.t.  Σ_k λ_k = 1,  max(0, c_k − ε) ≤ λ_k ≤ min(1, c_k + ε)
    w ← w − η_g Σ_k λ*_k d̂_k

``box_centre``: ``"uniform"`` (default) c_k = 1/m over the m received updates, as the AAggFF code's FedMGDA
baseline (``src/server/fedmgdaserver.py``: 1/N − ε ≤ λ ≤ 1/N + ε); ``"weights"`` c_k = the FedAvg weights
p_k of ``weighting`` (∝ n_k by default), as FLGo ``flgo/algorithm/fedmgda.py`` (λ0 = n_k / Σ n). The two
coincide when the clients are equally large or ``weighting="uniform"``. ε = 0 keeps the centre (FedAvg on
normalised updates); ε ≥ 1 is plain MGDA on normalised updates. Default ε = 0.1: FLGo's default and the
smallest of AAggFF's grid {0.1, 0.5, 1.0}; η_g = ``server_lr`` = 1 (FLGo's η). FedEBA+ Tables 1/6 set
ε = 0.03 in their experiment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, average_weights
from fairfl_core.dataclass_io import check_option

__all__ = [
    "BoxCentre",
    "FedMGDA",
    "FedMGDAHyper",
    "box_centre",
    "min_norm_in_box",
    "normalise_rows",
    "project_capped_simplex",
]

BoxCentre = Literal["uniform", "weights"]


@dataclass
class FedMGDAHyper(FedAvgHyper):
    """``epsilon``: half-width of the box; ``box_centre``: ``"uniform"`` (1/m) or ``"weights"`` (the
    FedAvg weights); ``server_lr`` is the global step η_g."""

    epsilon: float = 0.1
    box_centre: BoxCentre = "uniform"

    def check(self) -> None:
        if not self.epsilon >= 0:
            raise ValueError(f"epsilon must be non-negative (0 keeps the box centre), got {self.epsilon}")


def box_centre(centre: BoxCentre, weights: np.ndarray) -> np.ndarray:
    """The ε-box centre over the received clients, in float64 summing to 1: 1/m for ``"uniform"``, the
    FedAvg ``weights`` renormalised for ``"weights"`` (float32 weights can sum to 1 + 1e-8: outside the box
    at ε = 0)."""
    check_option(centre, BoxCentre, "box_centre")
    weights = np.asarray(weights, dtype=np.float64)
    if centre == "uniform":
        return np.full(len(weights), 1.0 / len(weights))
    return weights / weights.sum()


def normalise_rows(updates: torch.Tensor) -> torch.Tensor:
    """d̂_k = d_k / ‖d_k‖ (FedMGDA+ Alg. 1); an all-zero update stays zero instead of becoming NaN."""
    norms = updates.norm(dim=1, keepdim=True)
    return torch.where(norms > 0, updates / norms.clamp_min(torch.finfo(updates.dtype).tiny), 0.0)


def project_capped_simplex(v: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto {x : Σx = 1, lower ≤ x ≤ upper}, exactly.

    The projection is clip(v − τ, lower, upper) for the τ with φ(τ) = Σ clip(v − τ, lower, upper) = 1;
    φ is non-increasing and linear between its breakpoints v − upper, v − lower, so τ is found by locating
    the segment and interpolating (no iterative bisection).
    """
    v, lower, upper = (np.asarray(a, dtype=np.float64) for a in (v, lower, upper))
    if lower.sum() > 1 + 1e-9 or upper.sum() < 1 - 1e-9 or (lower > upper).any():
        raise ValueError(
            "the box [lower, upper] does not meet the simplex: need lower ≤ upper and Σ lower ≤ 1 ≤ Σ upper"
        )
    breaks = np.sort(np.concatenate([v - upper, v - lower]))
    phi = np.clip(v[None, :] - breaks[:, None], lower, upper).sum(axis=1)  # non-increasing in τ
    hit = int(np.argmax(phi <= 1.0))  # first breakpoint where φ ≤ 1 (φ(last) = Σ lower ≤ 1)
    if hit == 0 or phi[hit] == 1.0:
        tau = breaks[hit]
    else:
        lo, hi = breaks[hit - 1], breaks[hit]
        tau = lo + (phi[hit - 1] - 1.0) * (hi - lo) / (phi[hit - 1] - phi[hit])
    return np.clip(v - tau, lower, upper)


def _box_simplex_vertex(grad: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """argmin_s ⟨grad, s⟩ over the capped simplex: fill the budget 1 − Σ lower by increasing gradient."""
    order = np.argsort(grad, kind="stable")
    caps = (upper - lower)[order]
    before = np.cumsum(caps) - caps
    s = lower.copy()
    s[order] += np.clip(1.0 - lower.sum() - before, 0.0, caps)
    return s


def _duality_gap(gram: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """Frank–Wolfe gap ⟨∇f(x), x − s⟩ of f(x) = xᵀGx: an upper bound on f(x) − min f (convexity)."""
    grad = 2.0 * gram @ x
    return float(grad @ (x - _box_simplex_vertex(grad, lower, upper)))


def _active_set_candidate(
    gram: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray, slack: float = 1e-9
) -> np.ndarray | None:
    """Exact minimiser for the active set guessed from ``x``: coordinates within ``slack`` of a bound are
    fixed there, the rest solve the equality-constrained KKT system [2G_FF 1; 1ᵀ 0] (least squares, so a
    singular G is fine). None when the solution leaves the box (the guess was wrong)."""
    z = np.where(x <= lower + slack, lower, np.where(x >= upper - slack, upper, x))
    free = (z > lower) & (z < upper)
    k = int(free.sum())
    if k:
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = 2.0 * gram[np.ix_(free, free)]
        kkt[:k, k] = kkt[k, :k] = 1.0
        rhs = np.append(-2.0 * gram[np.ix_(free, ~free)] @ z[~free], 1.0 - z[~free].sum())
        z[free] = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:k]
    feasible = (z >= lower - 1e-12).all() and (z <= upper + 1e-12).all() and abs(z.sum() - 1.0) < 1e-12
    return np.clip(z, lower, upper) if feasible else None


def min_norm_in_box(
    gram: np.ndarray, prior: np.ndarray, eps: float, tol: float = 1e-13, max_iter: int = 20_000
) -> np.ndarray:
    """FedMGDA+'s weights λ* = argmin λᵀ G λ over the simplex ∩ {|λ_k − c_k| ≤ ε} (FedMGDA+ Alg. 1).

    ``gram`` is G = D̂ D̂ᵀ of the normalised updates, ``prior`` the box centre c (summing to 1).
    Accelerated projected gradient (FISTA with function-value restart, exact capped-simplex projection)
    identifies the active bounds; every few iterations the KKT system on the free coordinates is solved
    exactly for the guessed active set. Either iterate is returned only once its Frank–Wolfe duality gap
    (≥ f(λ) − f(λ*)) is ≤ ``tol``, a certificate of optimality. The QP is convex; when G is singular
    the minimiser need not be unique and a minimiser is returned.
    """
    gram = np.asarray(gram, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    if gram.shape != (len(prior), len(prior)):
        raise ValueError(f"gram must be [{len(prior)}, {len(prior)}] to match prior, got {gram.shape}")
    if eps < 0:
        raise ValueError(f"eps must be non-negative, got {eps}")
    lower, upper = np.maximum(0.0, prior - eps), np.minimum(1.0, prior + eps)
    lipschitz = 2.0 * float(np.linalg.eigvalsh(gram)[-1])
    x = project_capped_simplex(prior, lower, upper)
    if lipschitz <= 0:
        return x

    def value(z: np.ndarray) -> float:
        return float(z @ gram @ z)

    y, theta, fx = x, 1.0, value(x)
    for it in range(max_iter):
        if _duality_gap(gram, x, lower, upper) <= tol:
            return x
        if it % 5 == 0:
            exact = _active_set_candidate(gram, x, lower, upper)
            if exact is not None and _duality_gap(gram, exact, lower, upper) <= tol:
                return exact
        x_new = project_capped_simplex(y - 2.0 * gram @ y / lipschitz, lower, upper)
        f_new = value(x_new)
        if f_new > fx and theta > 1.0:  # restart the momentum: the next step is a monotone plain step
            y, theta = x, 1.0
            continue
        theta_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta**2))
        y = x_new + (theta - 1.0) / theta_new * (x_new - x)
        x, fx, theta = x_new, f_new, theta_new
    return x


@register("fedmgda+")
class FedMGDA(FedAvg[FedMGDAHyper]):
    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """w − η_g Σ λ*_k d̂_k: the normalised updates d̂_k and their min-norm weights λ* in the box around
        ``box_centre``."""
        directions = normalise_rows(self.w - uploads.params)
        p = average_weights(self.sim, uploads.clients, self.hp, self.w)
        prior = box_centre(self.hp.box_centre, p.cpu().numpy())
        gram = (directions @ directions.T).cpu().numpy().astype(np.float64)
        lam = min_norm_in_box(gram, prior, self.hp.epsilon)
        step = self.sim.tensor(lam, self.w.dtype) @ directions
        return Update(self.w - self.hp.server_lr * step, p, self.hp.server_lr, {"lambda": lam.tolist()})
