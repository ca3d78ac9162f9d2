"""UnionFL (Castillo J., Kaya, Ye, Hashemi, arXiv 2408.13683, eq. 14, Prop. 4, Algorithm 1): DivFL's
selection penalised for clients chosen in the last ``window`` rounds,

    h_t(S) = G(S) − μ · |U_t ∩ S|,        U_t = S_{t−window} ∪ … ∪ S_{t−1}     (``selection/submodular.py``)

maximised by stochastic greedy with r candidates per step, then FedAvg's local SGD (Algorithm 1: no proximal
term; ``mu`` is eq. 14's μ only) and an unweighted average. μ = 0 is DivFL with the same settings. The
distances and the greedy are DivFL's selector (``divfl.ClientSelector``); h_t is the objective this file gives
it.

Readings (``docs/readings.md``): before round ``window`` U_t is the union of the rounds that exist; h_t is
not monotone, and Algorithm 1 selects κ clients, so ``nonmonotone="fill"`` always takes κ (``"stop"`` ends
the greedy before the first pick that lowers h_t); gradients and distances as SubTrunc's. The selections of
the last ``window`` rounds live in the checkpointed state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.divfl import ClientSelector
from fairfl_core.algorithms.fedavg import average_step
from fairfl_core.algorithms.subtrunc import SelectionHyper
from fairfl_core.selection.submodular import Nonmonotone, unionfl_objective
from fairfl_core.sim.context import Simulation

__all__ = ["UnionFL", "UnionFLHyper"]


@dataclass
class UnionFLHyper(SelectionHyper):
    """``mu`` μ ≥ 0 per recently selected client (paper: 1), ``window`` rounds of look-back (5; Table III:
    2, 5, 10), ``nonmonotone`` ``"fill"`` | ``"stop"``."""

    mu: float = 1.0
    window: int = 5
    nonmonotone: Nonmonotone = "fill"

    def check(self) -> None:
        if not self.mu >= 0:
            raise ValueError(f"mu (μ) must be ≥ 0 (0 is DivFL), got {self.mu}")
        if isinstance(self.window, bool) or int(self.window) != self.window or self.window < 1:
            raise ValueError(
                f"window (UnionFL's look-back, in rounds) must be an integer ≥ 1, got {self.window}"
            )


@register("unionfl")
class UnionFL(FederatedAlgorithm[UnionFLHyper]):
    def __init__(self, sim: Simulation, hp: UnionFLHyper) -> None:
        super().__init__(sim, hp)
        self.selector = ClientSelector(sim, hp)
        # the last ``window`` selections, oldest first, padded with −1 (a "stop" round may pick fewer)
        self.state["history"] = np.full((0, sim.train.clients_per_round), -1, dtype=np.int64)

    def configure(self, t: int) -> Plan:
        return Plan(self.choose(t), self.sim.local_spec(t))

    def choose(self, t: int) -> np.ndarray:
        """The greedy maximiser of h_t (eq. 14) over the selector's distances, cut per ``nonmonotone``."""
        dist = self.selector.distances(self.state, self.w)
        history = [row[row >= 0] for row in self.state["history"]]
        hp = self.hp
        objective = unionfl_objective(
            dist, history, mu=hp.mu, window=hp.window, distance_scale=hp.distance_scale
        )
        return self.selector.select(t, objective, hp.nonmonotone).clients

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step, after the selector's refresh; the round's selection joins the window (not when
        nothing arrives)."""
        row = np.full((1, self.sim.train.clients_per_round), -1, dtype=np.int64)
        row[0, : len(plan.clients)] = plan.clients
        self.state["history"] = np.concatenate([self.state["history"], row])[-self.hp.window :]
        self.selector.refresh(self.state, self.w, uploads.clients)
        return average_step(self.sim, self.w, uploads, self.hp)
