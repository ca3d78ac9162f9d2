"""DivFL (Balakrishnan et al., ICLR 2022) as in melodi-lab/divfl, FedProx local training (μ = 0: FedAvg).

Selection maximises the facility-location function G(S) (SubTrunc paper eqs. 9–10): the m clients whose
gradients minimise Σ_i min_{j∈S} ‖g_i − g_j‖, by lazy greedy (default), plain greedy or stochastic greedy
(pool max(m, ⌊subsample·N⌋)). ``grad_mode="stale"`` (the reference): every client's full-batch gradient at
w_0 in round 0, afterwards only the selected clients' gradients are replaced, by their gradient at the
model they received, and only their rows/columns of the distance matrix are recomputed.
``grad_mode="fresh"``: every gradient recomputed each round. Aggregation: sample-weighted (the reference's
``aggregate``); ``weighting="uniform"`` gives the SubTrunc paper's plain mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import Averaging, ServerPluginHyper
from fairfl_core.selection.facility_location import (
    FacilityLocation,
    greedy,
    lazy_greedy,
    pairwise_distances,
    stochastic_greedy,
    stochastic_pool_size,
)
from fairfl_core.sim.transfer import to_device

__all__ = ["DivFL", "DivFLHyper"]

GREEDY = ("lazy", "naive", "stochastic")
GRAD_MODES = ("stale", "fresh")


@dataclass
class DivFLHyper(Proximal, ServerPluginHyper, Averaging):
    """``greedy``: lazy | naive | stochastic; ``subsample``: stochastic pool fraction; ``pool_size``: the
    stochastic greedy's r (None: max(m, ⌊subsample · N⌋)); ``grad_mode``: stale | fresh. Clients are chosen
    by facility location, so there is no sampling field."""

    mu: float = 0.0
    greedy: str = "lazy"
    subsample: float = 0.1
    pool_size: int | None = None
    grad_mode: str = "stale"

    def check(self):
        if self.pool_size is not None and not self.pool_size >= 1:
            raise ValueError(f"pool_size (r) must be an integer ≥ 1, got {self.pool_size}; the paper uses 10")
        if self.greedy not in GREEDY:
            raise ValueError(f"greedy must be one of {GREEDY}, got {self.greedy!r}")
        if not 0 < self.subsample <= 1:
            raise ValueError(f"subsample must be in (0, 1], got {self.subsample}")
        if self.grad_mode not in GRAD_MODES:
            raise ValueError(f"grad_mode must be one of {GRAD_MODES}, got {self.grad_mode!r}")


@register("divfl")
class DivFL(FedAvg):
    Hyper = DivFLHyper

    def __init__(self, sim, hp):
        super().__init__(sim, hp)
        if hp.pool_size is not None and hp.pool_size > sim.num_clients:
            raise ValueError(
                f"pool_size (r) = {hp.pool_size} exceeds the {sim.num_clients} clients; use r ≤ N (paper: 10)"
            )

    def configure(self, t: int) -> Plan:
        clients, notes = self.select(t)
        return Plan(clients, proximal_spec(self.sim, t, self.hp.mu, self.w), notes=notes)

    def choose(self, t: int) -> np.ndarray:
        """The m clients maximising the facility-location objective over the gradient distances."""
        return self.select(t)[0]

    def select(self, t: int) -> tuple[np.ndarray, dict | None]:
        """:meth:`choose`'s clients and what the round reports about the choice (:meth:`selection_notes`)."""
        objective = self.round_objective(t)
        pools: list[np.ndarray] = []
        chosen = self.maximize(t, objective, pools)
        return chosen, self.selection_notes(t, objective, chosen, pools)

    def selection_notes(
        self, t: int, objective: FacilityLocation, chosen: np.ndarray, pools: list
    ) -> dict | None:
        """Diagnostics of round t's choice for the round's record (none for DivFL)."""
        return None

    def maximize(self, t: int, objective: FacilityLocation, pools: list | None = None) -> np.ndarray:
        """``greedy``'s maximiser of ``objective`` under |S| ≤ m, in greedy order; ``pools`` receives the
        stochastic greedy's candidates of each step (the exact greedies consider every unselected one)."""
        m = self.sim.train.clients_per_round
        if self.hp.greedy == "stochastic":
            return stochastic_greedy(objective, m, self.sim.rng(t, "select"), self.pool_size(), pools)
        return (lazy_greedy if self.hp.greedy == "lazy" else greedy)(objective, m)

    def pool_size(self) -> int:
        """r, the stochastic greedy's candidates per step: ``pool_size``, else max(m, ⌊subsample · N⌋)."""
        if self.hp.pool_size is not None:
            return self.hp.pool_size
        return stochastic_pool_size(self.sim.num_clients, self.sim.train.clients_per_round, self.hp.subsample)

    def round_objective(self, t: int) -> FacilityLocation:
        """Round t's set function, over this round's :meth:`distances`."""
        return self.objective(t, self.distances())

    def objective(self, t: int, dist: np.ndarray) -> FacilityLocation:
        """The set function maximised this round (SubTrunc / UnionFL add their terms here)."""
        return FacilityLocation(dist)

    def distances(self) -> np.ndarray:
        """``[N, N]`` distances between the clients' gradients (stale or fresh, per ``grad_mode``)."""
        everyone = np.arange(self.sim.num_clients)
        if self.hp.grad_mode == "fresh":
            return pairwise_distances(self.sim.engine.gradients(self.w, everyone))
        if "dist" not in self.state:
            self.state["grads"] = self.sim.engine.gradients(self.w, everyone)
            self.state["dist"] = pairwise_distances(self.state["grads"])
        return self.state["dist"]

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step; with stale gradients, the uploading clients' gradients at the model they received
        replace their rows of the cache."""
        if self.hp.grad_mode == "stale":
            clients, grads, dist = uploads.clients, self.state["grads"], self.state["dist"]
            fresh = self.sim.engine.gradients(self.w, clients)
            grads[to_device(clients, grads.device)] = fresh
            rows = pairwise_distances(fresh, grads)
            dist[clients, :] = rows
            dist[:, clients] = rows.T
        return super().aggregate(t, plan, uploads)
