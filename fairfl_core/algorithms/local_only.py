"""Local training only: every client trains its own model on its own data and never communicates (the
usual "Local" reference of personalised FL, e.g. Ditto with λ = 0 and no global model).

Every client's model starts at the shared initial model w_0. In each round ``clients_per_round`` clients,
drawn uniformly without replacement, continue their own model for the round's local steps; client k is
evaluated with its own model. The global model stays w_0 (reported, never trained).

FedEBA+'s FAA (Table 17, after FOCUS) needs F_i(x_i*), each client's loss at the optimum of its own data:
one round of all N clients for a long local training, run and cached like any other run
(``papers/fedeba_plus/appendix_experiments.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.hyper import Hyper
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.selection import sample_clients
from fairfl_core.sim.context import Simulation

__all__ = ["LocalOnly", "LocalOnlyHyper"]


@dataclass
class LocalOnlyHyper(Hyper):
    """No hyperparameters of its own: the local step is the config's ``train`` section."""


@register("local")
class LocalOnly(FederatedAlgorithm[LocalOnlyHyper]):
    personalized = True

    def __init__(self, sim: Simulation, hp: LocalOnlyHyper) -> None:
        super().__init__(sim, hp)
        self.state["personal"] = self.w.expand(sim.num_clients, -1).clone()

    def configure(self, t: int) -> Plan:
        clients = sample_clients(
            self.sim.rng(t, "select"), self.sim.num_clients, self.sim.train.clients_per_round
        )
        return Plan(clients, self.sim.local_spec(t), start=self.state["personal"][clients])

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """Nothing is aggregated: the survivors' models replace theirs; the global model stays w_0."""
        remember_rows(self.state["personal"], uploads.clients, uploads.params)
        return Update(self.w)

    def personal_params(self) -> torch.Tensor:
        return self.state["personal"]
