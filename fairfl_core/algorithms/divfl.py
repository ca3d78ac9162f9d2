"""DivFL (Balakrishnan et al., ICLR 2022) as in melodi-lab/divfl, FedProx local training (μ = 0: FedAvg).

Selection maximises the facility-location function G(S) (SubTrunc paper §III-A, eqs. 9–10): the m clients
whose gradients minimise Σ_i min_{j∈S} ‖g_i − g_j‖, by lazy greedy (default), plain greedy (eq. 16) or
stochastic greedy (eq. 17; pool max(m, ⌊subsample·N⌋)). ``grad_mode="stale"`` (the reference): every
client's full-batch gradient at w_0 in round 0, afterwards only the selected clients' gradients are replaced,
by their gradient at the model they received, and only their rows/columns of the distance matrix are
recomputed. ``grad_mode="fresh"``: every gradient recomputed each round. Aggregation: sample-weighted (the
reference's ``aggregate``); ``weighting="uniform"`` gives the SubTrunc paper's plain mean.

The selection is a part, :class:`ClientSelector` (the distances and the greedy maximisation), that SubTrunc
and UnionFL compose with their own set functions (eqs. 13 and 14).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import average_step
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import Averaging, ServerPluginHyper
from fairfl_core.selection.facility_location import (
    FacilityLocation,
    GainOracle,
    pairwise_distances,
    stochastic_pool_size,
)
from fairfl_core.selection.submodular import GreedyMethod, Nonmonotone, maximize
from fairfl_core.sim.context import Simulation

__all__ = ["ClientSelector", "DivFL", "DivFLHyper", "GradMode", "Selection"]

GradMode = Literal["stale", "fresh"]


@dataclass
class DivFLHyper(Proximal, ServerPluginHyper, Averaging):
    """``greedy``: lazy | naive | stochastic; ``subsample``: stochastic pool fraction; ``pool_size``: the
    stochastic greedy's r (None: max(m, ⌊subsample · N⌋)); ``grad_mode``: stale | fresh. Clients are chosen
    by facility location, so there is no sampling field."""

    mu: float = 0.0
    greedy: GreedyMethod = "lazy"
    subsample: float = 0.1
    pool_size: int | None = None
    grad_mode: GradMode = "stale"

    def check(self) -> None:
        if self.pool_size is not None and not self.pool_size >= 1:
            raise ValueError(f"pool_size (r) must be an integer ≥ 1, got {self.pool_size}; the paper uses 10")
        if not 0 < self.subsample <= 1:
            raise ValueError(f"subsample must be in (0, 1], got {self.subsample}")


@dataclass
class Selection:
    """A round's choice: ``clients`` in greedy order, and ``pools``, the stochastic greedy's candidates of
    each step (empty for the exact greedies, which consider every unselected client)."""

    clients: np.ndarray
    pools: list[np.ndarray]


class ClientSelector:
    """DivFL's client selection, the part DivFL, SubTrunc and UnionFL compose (SubTrunc paper §III): the
    clients' gradient distances d_ij = ‖∇f_i(w) − ∇f_j(w)‖ (eq. 9, per ``grad_mode``) and the maximisation of
    a set function over them under |S| ≤ m by ``greedy`` (eqs. 16–17, §III-C).

    Its state, in the algorithm's checkpointed ``state`` (``grad_mode="stale"`` only, from the first round):
    ``grads`` ``[N, P]``, the cached gradients, and ``dist`` ``[N, N]``, their distances."""

    def __init__(self, sim: Simulation, hp: DivFLHyper) -> None:
        if hp.pool_size is not None and hp.pool_size > sim.num_clients:
            raise ValueError(
                f"pool_size (r) = {hp.pool_size} exceeds the {sim.num_clients} clients; use r ≤ N (paper: 10)"
            )
        self.sim, self.hp = sim, hp

    def distances(self, state: dict[str, Any], w: torch.Tensor) -> np.ndarray:
        """``[N, N]`` distances between the clients' gradients at ``w`` (fresh), or the cache's (stale)."""
        everyone = np.arange(self.sim.num_clients)
        if self.hp.grad_mode == "fresh":
            return pairwise_distances(self.sim.engine.gradients(w, everyone))
        if "dist" not in state:
            state["grads"] = self.sim.engine.gradients(w, everyone)
            state["dist"] = pairwise_distances(state["grads"])
        return state["dist"]

    def refresh(self, state: dict[str, Any], w: torch.Tensor, clients: np.ndarray) -> None:
        """Stale gradients: ``clients``' gradients at the model they received, ``w``, replace their rows of
        the cache, and their rows/columns of the distances are recomputed (fresh gradients: nothing)."""
        if self.hp.grad_mode == "stale":
            grads, dist = state["grads"], state["dist"]
            fresh = self.sim.engine.gradients(w, clients)
            grads[self.sim.tensor(clients)] = fresh
            rows = pairwise_distances(fresh, grads)
            dist[clients, :] = rows
            dist[:, clients] = rows.T

    def select(self, t: int, objective: GainOracle, nonmonotone: Nonmonotone = "fill") -> Selection:
        """Round t's maximiser of ``objective`` under |S| ≤ m by ``greedy`` (stochastic: the stream
        "select" of round t), cut per ``nonmonotone`` (:func:`~fairfl_core.selection.submodular.maximize`)."""
        pools: list[np.ndarray] = []
        clients = maximize(
            objective,
            self.sim.train.clients_per_round,
            method=self.hp.greedy,
            rng=self.sim.rng(t, "select"),
            pool_size=self.pool_size(),
            nonmonotone=nonmonotone,
            pools=pools,
        )
        return Selection(clients, pools)

    def pool_size(self) -> int:
        """r, the stochastic greedy's candidates per step: ``pool_size``, else max(m, ⌊subsample · N⌋)."""
        if self.hp.pool_size is not None:
            return self.hp.pool_size
        return stochastic_pool_size(self.sim.num_clients, self.sim.train.clients_per_round, self.hp.subsample)


@register("divfl")
class DivFL(FederatedAlgorithm[DivFLHyper]):
    def __init__(self, sim: Simulation, hp: DivFLHyper) -> None:
        super().__init__(sim, hp)
        self.selector = ClientSelector(sim, hp)

    def configure(self, t: int) -> Plan:
        return Plan(self.choose(t), proximal_spec(self.sim, t, self.hp.mu, self.w))

    def choose(self, t: int) -> np.ndarray:
        """The m clients maximising G (eq. 10) over the gradient distances."""
        dist = self.selector.distances(self.state, self.w)
        return self.selector.select(t, FacilityLocation(dist)).clients

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step, after the selector's refresh of the uploading clients' stale gradients."""
        self.selector.refresh(self.state, self.w, uploads.clients)
        return average_step(self.sim, self.w, uploads, self.hp)
