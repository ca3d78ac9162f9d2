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
* Scale: the paper compares G's gains, sums of gradient distances, with λ·b and μ as they are
  (``distance_scale="none"``); ``"mean"`` first divides the distances by their mean between distinct clients.
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

import numpy as np

from fairfl_core.selection.facility_location import (
    FacilityLocation,
    GainOracle,
    greedy,
    lazy_greedy,
    normalize_distances,
    stochastic_greedy,
)

__all__ = [
    "GREEDY_METHODS",
    "NONMONOTONE",
    "PHI",
    "loss_transform",
    "maximize",
    "recent_union",
    "stop_before_loss",
    "subtrunc_objective",
    "unionfl_objective",
]

PHI: dict[str, Callable[[np.ndarray], np.ndarray]] = {"identity": lambda x: x, "log1p": np.log1p}
GREEDY_METHODS = ("stochastic", "lazy", "naive")
NONMONOTONE = ("fill", "stop")


def loss_transform(losses, phi: str = "log1p") -> np.ndarray:
    """φ(f_i(w)) for every client (eq. 12): ``"log1p"`` = ln(1 + x) (paper default) or ``"identity"``."""
    if phi not in PHI:
        raise ValueError(f"phi must be one of {tuple(PHI)}, got {phi!r}")
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 1 or not np.isfinite(losses).all() or (losses < 0).any():
        raise ValueError(
            "losses must be a vector of finite, non-negative client losses (f_i(w), e.g. mean cross-entropy)"
        )
    return PHI[phi](losses)


def subtrunc_objective(
    dist: np.ndarray,
    losses,
    *,
    lam: float,
    budget: float = 1.10,
    phi: str = "log1p",
    distance_scale: str = "none",
) -> FacilityLocation:
    """W(S) = G(S) + λ·min(b, Σ_{i∈S} φ(losses_i)) (eq. 13) over the ``[N, N]`` gradient distances ``dist``.

    ``budget`` is the truncation level b > 0 (paper: 1.10), ``lam`` the weight λ ≥ 0; λ = 0 is DivFL.
    """
    return FacilityLocation(
        normalize_distances(dist, distance_scale), phi=loss_transform(losses, phi), lam=lam, budget=budget
    )


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
    distance_scale: str = "none",
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
    method: str = "stochastic",
    rng: np.random.Generator | None = None,
    pool_size: int | None = None,
    nonmonotone: str = "fill",
) -> np.ndarray:
    """Select up to ``k`` (κ) candidates, in greedy order.

    ``method``: ``"stochastic"`` (eq. 17, needs ``rng`` and ``pool_size`` = r), ``"lazy"`` (exact greedy,
    eq. 16, with lazy evaluations) or ``"naive"`` (eq. 16 evaluating every candidate at every step);
    ``nonmonotone``: ``"fill"`` (always k) or ``"stop"`` (:func:`stop_before_loss`).
    """
    if method not in GREEDY_METHODS:
        raise ValueError(f"method must be one of {GREEDY_METHODS}, got {method!r}")
    if nonmonotone not in NONMONOTONE:
        raise ValueError(f"nonmonotone must be one of {NONMONOTONE}, got {nonmonotone!r}")
    if method == "stochastic":
        if rng is None or pool_size is None:
            raise ValueError('method "stochastic" needs rng (a numpy Generator) and pool_size (r)')
        chosen = stochastic_greedy(objective, k, rng, pool_size)
    else:
        chosen = (lazy_greedy if method == "lazy" else greedy)(objective, k)
    return stop_before_loss(objective, chosen) if nonmonotone == "stop" else chosen
