"""Power-of-Choice (Cho, Wang, Joshi, 2020, π_pow-d): the m highest-loss clients of a random candidate set."""

from __future__ import annotations

import numpy as np

__all__ = ["default_candidates", "highest_loss_clients"]


def default_candidates(num_clients: int, m: int) -> int:
    """d = min(N, 2m), the canonical pow-d setting (Equitable-FL's baseline; Cho et al. use d ∈ {2m, …})."""
    return min(num_clients, 2 * m)


def highest_loss_clients(candidates: np.ndarray, losses, m: int) -> np.ndarray:
    """The ``m`` candidates with the largest local loss F_k(w), as client ids (sorted).

    ``losses[j]`` belongs to ``candidates[j]``; the ranking indexes the *candidate* array, never the
    list of all clients (FLGo's ``powerofchoice.py`` does the latter, which is wrong whenever d < N).
    Ties go to the lower client id.
    """
    candidates = np.asarray(candidates)
    losses = np.asarray(losses, dtype=np.float64)
    if losses.shape != candidates.shape:
        raise ValueError(
            f"one loss per candidate needed: {losses.shape} losses for {candidates.shape} candidates"
        )
    if not 0 < m <= len(candidates):
        raise ValueError(
            f"cannot select {m} clients from {len(candidates)} candidates: d must be ≥ clients_per_round"
        )
    order = np.lexsort((candidates, -losses))
    return np.sort(candidates[order[:m]])
