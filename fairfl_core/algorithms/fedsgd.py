"""FedSGD (McMahan et al., AISTATS 2017, §2 "FedSGD"; FedEBA+ baseline [48]).

Each selected client takes ONE gradient step on its whole training set (B = ∞, E = 1) and the server
averages like FedAvg, so x_{t+1} = x_t − η_t Σ_k p_k ∇F_k(x_t).
"""

from __future__ import annotations

from fairfl_core.algorithms.base import Plan, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.local import LocalSpec

__all__ = ["FedSGD", "full_batch_spec"]


def full_batch_spec(sim: Simulation, t: int) -> LocalSpec:
    """The round's local spec reduced to one step on each client's whole training set.

    The batch size is the largest client's n_k, so every client's single minibatch holds all its samples
    and the step is w − η_t ∇F_k(w) with ∇F_k the full-batch gradient of the mean loss.
    """
    return sim.local_spec(t, steps=1, epochs=None, batch_size=int(sim.train_sizes.max()))


@register("fedsgd")
class FedSGD(FedAvg[FedAvgHyper]):
    """FedAvg with the local work replaced by one full-batch gradient step."""

    def configure(self, t: int) -> Plan:
        return Plan(select_clients(self.sim, t, self.hp), full_batch_spec(self.sim, t))
