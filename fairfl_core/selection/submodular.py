"""SubTrunc and UnionFL client selection (Castillo J., Kaya, Ye, Hashemi, "Submodular Maximization Approaches
for Equitable Client Selection in Federated Learning", arXiv 2408.13683): the set functions and their greedy
maximisation, on top of DivFL's facility location G(S) (eqs. 9–10,
:mod:`~fairfl_core.selection.facility_location`).

SubTrunc (eqs. 11–13) maximises::

    W(S) = G(S) + λ · min(b, Σ_{i∈S} φ(f_i(w))),        φ ∈ {identity, log1p = ln(1 + x)}

a truncated loss term that rewards high-loss clients until their φ-losses add up to b; W is monotone
submodular (Prop. 3). UnionFL (eq. 14, Prop. 4) maximises::

    h_t(S) = G(S) − μ · |U_t ∩ S|,        U_t = S_{t−window} ∪ … ∪ S_{t−1}

which penalises clients selected in the last ``window`` rounds; the penalty is modular, so h_t is submodular
but not monotone. Both are maximised under |S| ≤ κ by stochastic greedy (eq. 17) or exact greedy (eq. 16).

Readings where the paper is silent:

* f_i(w) is whatever loss vector the caller passes (one entry per candidate, non-negative).
* Scale of G in SubTrunc's W (``objective_scale``, ``docs/readings.md``): eq. 9 writes G as a sum over the
  N clients, so its gains are sums of N gradient distances against H's at most λ·b ≈ 1 (``"literal"``,
  :func:`literal_scale`); ``"averaged"`` takes Ḡ/N, the mean over clients as in the averaged objective of
  eq. 3 (:func:`averaged_scale`); ``"normalised"`` takes G/Ḡ(∅), so that G ∈ [0, 1]
  (:func:`normalised_scale`). Each multiplies G by a positive constant, so G's own greedy order (DivFL's) is
  the same under all three; only its weight against H changes.
* ``distance_scale`` (SubTrunc and UnionFL): ``"none"`` uses the distances as they are; ``"mean"`` divides
  them by their mean between distinct clients. G still sums over N clients, so this does not put G on H's
  scale (a LeNet's distances are already of order 1).
* UnionFL before round ``window``: U_t is the union of the rounds that exist (empty at the first round).
* UnionFL's non-monotonicity: Algorithm 1 selects a set "of size κ", so ``nonmonotone="fill"`` (default)
  always takes κ clients, the best candidate even when its gain is negative; ``"stop"`` ends the greedy before
  the first pick that would lower the objective. The first pick is always kept: the gains from S = ∅ contain
  the auxiliary constant n·D0 that defines G(∅), so their sign means nothing.
* Stochastic greedy draws a fresh pool of min(r, |N∖S|) candidates from the unselected ones at every step,
  with the ``numpy`` Generator passed in; ties go to the first maximiser in the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from fairfl_core.dataclass_io import check_option
from fairfl_core.selection.facility_location import (
    DistanceScale,
    FacilityLocation,
    GainOracle,
    facility_location_cost,
    facility_location_gain,
    greedy,
    lazy_greedy,
    normalize_distances,
    stochastic_greedy,
)

__all__ = [
    "OBJECTIVE_SCALES",
    "PHI",
    "GreedyMethod",
    "Nonmonotone",
    "ObjectiveScale",
    "Phi",
    "averaged_scale",
    "literal_scale",
    "loss_transform",
    "maximize",
    "normalised_scale",
    "recent_union",
    "scale_objective",
    "selection_trace",
    "stop_before_loss",
    "subtrunc_objective",
    "trace_summary",
    "unionfl_objective",
]

Phi = Literal["identity", "log1p"]
PHI: dict[str, Callable[[np.ndarray], np.ndarray]] = {"identity": lambda x: x, "log1p": np.log1p}
GreedyMethod = Literal["stochastic", "lazy", "naive"]
Nonmonotone = Literal["fill", "stop"]


def loss_transform(losses, phi: Phi = "log1p") -> np.ndarray:
    """φ(f_i(w)) for every client (eq. 12): ``"log1p"`` = ln(1 + x) (paper default) or ``"identity"``."""
    check_option(phi, Phi, "phi")
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 1 or not np.isfinite(losses).all() or (losses < 0).any():
        raise ValueError(
            "losses must be a vector of finite, non-negative client losses (f_i(w), e.g. mean cross-entropy)"
        )
    return PHI[phi](losses)


def literal_scale(dist: np.ndarray) -> float:
    """The factor c of c·G for eq. 9 as written: 1 (G sums distance reductions over the N clients)."""
    return 1.0


def averaged_scale(dist: np.ndarray) -> float:
    """The factor c of c·G for Ḡ/N, G averaged over the N clients (rows of ``dist``), as eq. 3 averages
    the clients' objectives: 1/N."""
    return 1.0 / np.asarray(dist).shape[0]


def normalised_scale(dist: np.ndarray) -> float:
    """The factor c of c·G for G/Ḡ(∅), Ḡ(∅) = N·D0 with D0 = max d (eq. 9): G(S) ∈ [0, 1]. Identical
    gradients (max d = 0, G ≡ 0) are left unscaled."""
    empty = facility_location_cost(np.asarray(dist, dtype=np.float64), [])
    return 1.0 / empty if empty > 0 else 1.0


ObjectiveScale = Literal["literal", "averaged", "normalised"]
OBJECTIVE_SCALES: dict[str, Callable[[np.ndarray], float]] = {
    "literal": literal_scale,
    "averaged": averaged_scale,
    "normalised": normalised_scale,
}


def scale_objective(dist: np.ndarray, reading: ObjectiveScale = "literal") -> np.ndarray:
    """``dist`` multiplied by the ``reading``'s factor c: G is linear in d (D0 = max d scales with it), so
    the facility location over c·d is c·G."""
    check_option(reading, ObjectiveScale, "objective_scale")
    dist = np.asarray(dist, dtype=np.float64)
    return dist * OBJECTIVE_SCALES[reading](dist)


def subtrunc_objective(
    dist: np.ndarray,
    losses,
    *,
    lam: float,
    budget: float = 1.10,
    phi: Phi = "log1p",
    distance_scale: DistanceScale = "none",
    objective_scale: ObjectiveScale = "literal",
) -> FacilityLocation:
    """W(S) = c·G(S) + λ·min(b, Σ_{i∈S} φ(losses_i)) (eq. 13) over the ``[N, N]`` gradient distances ``dist``.

    ``budget`` is the truncation level b > 0 (paper: 1.10), ``lam`` the weight λ ≥ 0; λ = 0 is DivFL;
    ``objective_scale`` picks c (module docstring).
    """
    dist = scale_objective(normalize_distances(dist, distance_scale), objective_scale)
    return FacilityLocation(dist, phi=loss_transform(losses, phi), lam=lam, budget=budget)


def selection_trace(
    objective: FacilityLocation, chosen: np.ndarray, pools: Sequence[np.ndarray] | None = None
) -> list[dict]:
    """Per greedy step of ``chosen`` (the picks in order; ``pools``: each step's candidates, default every
    unselected one): ``g_gap``, G's gain of its best minus its second-best candidate (NaN for a single
    candidate); ``h_range``, the spread of H's gains over the candidates; ``unsaturated``, whether H could
    still grow before the pick; ``steered``, whether the pick differs from G's own best candidate."""
    state, steps = objective.start(), []
    everyone = np.arange(objective.num_candidates)
    for step, e in enumerate(np.asarray(chosen, dtype=np.int64)):
        pool = np.asarray(pools[step]) if pools is not None else np.setdiff1d(everyone, state.chosen)
        g = facility_location_gain(objective.dist, state.nearest, pool)
        h = objective.truncated_gain(state, pool)
        top = np.sort(g)[::-1]
        steps.append(
            {
                "g_gap": float(top[0] - top[1]) if len(top) > 1 else float("nan"),
                "h_range": float(h.max() - h.min()),
                "unsaturated": not objective.saturated(state),
                "steered": int(pool[int(np.argmax(g))]) != int(e),
            }
        )
        objective.add(state, int(e))
    return steps


def trace_summary(steps: Sequence[dict]) -> dict[str, float | int]:
    """One round's :func:`selection_trace` in a few numbers: the min and median of G's best-vs-second gap
    over the steps, H's largest range, and the counts of steps where H was not saturated and where it
    changed the pick."""
    gaps = np.asarray([s["g_gap"] for s in steps], dtype=float)
    gaps = gaps[np.isfinite(gaps)]
    return {
        "g_gap_min": float(gaps.min()) if gaps.size else float("nan"),
        "g_gap_median": float(np.median(gaps)) if gaps.size else float("nan"),
        "h_range_max": max((s["h_range"] for s in steps), default=0.0),
        "unsaturated_steps": sum(bool(s["unsaturated"]) for s in steps),
        "steered_steps": sum(bool(s["steered"]) for s in steps),
    }


def recent_union(history: Sequence, window: int, num_clients: int) -> np.ndarray:
    """Membership mask of U_t, the union of the last ``window`` selections in ``history`` (oldest first).

    Fewer than ``window`` past rounds: the union of those that exist.
    """
    if isinstance(window, bool) or int(window) != window or window < 1:
        raise ValueError(f"window (UnionFL's look-back, in rounds) must be an integer ≥ 1, got {window!r}")
    member = np.zeros(num_clients, dtype=bool)
    for chosen in list(history)[-int(window) :]:
        chosen = np.asarray(chosen, dtype=np.int64)
        if chosen.size and not (0 <= chosen.min() and chosen.max() < num_clients):
            raise ValueError(
                f"history holds client ids outside [0, {num_clients}): pass the ids selected in past rounds"
            )
        member[chosen] = True
    return member


def unionfl_objective(
    dist: np.ndarray,
    history: Sequence,
    *,
    mu: float = 1.0,
    window: int = 5,
    distance_scale: DistanceScale = "none",
) -> FacilityLocation:
    """h_t(S) = G(S) − μ·|U_t ∩ S| (eq. 14) over the ``[N, N]`` gradient distances ``dist``.

    ``history``: the client ids selected in each past round, oldest first; ``window``: rounds in U_t
    (paper: 5); ``mu``: the penalty μ ≥ 0 per recently selected client (paper: 1); μ = 0 is DivFL.
    """
    if not mu >= 0:
        raise ValueError(f"mu (μ) must be non-negative, got {mu}")
    dist = normalize_distances(dist, distance_scale)
    return FacilityLocation(dist, bonus=-mu * recent_union(history, window, dist.shape[1]))


def stop_before_loss(objective: GainOracle, chosen: np.ndarray) -> np.ndarray:
    """The greedy sequence ``chosen`` cut before its first pick (after the first) whose gain Δ(e | S) < 0.

    Greedy picks do not depend on the picks after them, so this is exactly the greedy that stops as soon as
    its best candidate would lower the objective.
    """
    state = objective.start()
    for step, e in enumerate(chosen):
        if step and float(objective.gains(state, np.array([e]))[0]) < 0:
            return np.asarray(chosen[:step])
        objective.add(state, int(e))
    return np.asarray(chosen)


def maximize(
    objective: GainOracle,
    k: int,
    *,
    method: GreedyMethod = "stochastic",
    rng: np.random.Generator | None = None,
    pool_size: int | None = None,
    nonmonotone: Nonmonotone = "fill",
    pools: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Select up to ``k`` (κ) candidates, in greedy order.

    ``method``: ``"stochastic"`` (eq. 17, needs ``rng`` and ``pool_size`` = r), ``"lazy"`` (exact greedy,
    eq. 16, with lazy evaluations) or ``"naive"`` (eq. 16 evaluating every candidate at every step);
    ``nonmonotone``: ``"fill"`` (always k) or ``"stop"`` (:func:`stop_before_loss`); ``pools``, when given,
    receives the stochastic greedy's candidates of each step (the exact greedies consider every unselected
    one and leave it empty).
    """
    check_option(method, GreedyMethod, "method")
    check_option(nonmonotone, Nonmonotone, "nonmonotone")
    if method == "stochastic":
        if rng is None or pool_size is None:
            raise ValueError('method "stochastic" needs rng (a numpy Generator) and pool_size (r)')
        chosen = stochastic_greedy(objective, k, rng, pool_size, pools)
    else:
        chosen = (lazy_greedy if method == "lazy" else greedy)(objective, k)
    return stop_before_loss(objective, chosen) if nonmonotone == "stop" else chosen
