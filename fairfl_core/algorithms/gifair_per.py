"""GIFAIR-FL-Per (Yue, Nouiehed & Al Kontar, GIFAIR-FL, Algorithm 3): GIFAIR-FL-Global whose group losses
are taken at the clients' personalised models and which returns one model per client.

Objective (Eq. 4): Σ_k p_k F_k(θ) + λ Σ_{i<j} |L_i({θ_k}) − L_j({θ_k})| with L_i = (1/|A_i|) Σ_{k∈A_i}
F_k(θ_k); r_k from the ranking of these losses (Eq. 5). Local training still starts from the global θ each
round; a selected client's post-training model becomes its personalised θ_k, the others keep theirs, and
client k is evaluated with θ_k (the current global model while k has never been selected).

With the loss cache of Algorithm 2 (``loss_source="local"``: F_k at the post-training local model) the
training trajectory is exactly GIFAIR-FL-Global's; only the returned models differ. The
exact-r variant ``loss_source="global"`` has no meaning here (the losses must be at θ_k) and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg
from fairfl_core.algorithms.gifair_global import GIFAIRHyper, GroupPenalty
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.context import Simulation

__all__ = ["GIFAIRPer", "GIFAIRPerHyper"]


@dataclass
class GIFAIRPerHyper(GIFAIRHyper):
    """As GIFAIR-FL-Global's; ``loss_source`` is ``"local"`` (F_k(θ_k), Eq. 5) or ``"minibatch"``."""

    def check(self) -> None:
        if self.loss_source == "global":
            raise ValueError(
                "loss_source='global' measures losses at the global model, but GIFAIR-FL-Per ranks groups "
                "by the losses at the personalised models (Eq. 5): use loss_source='local' or 'minibatch'"
            )


@register("gifair_per")
class GIFAIRPer(FedAvg[GIFAIRPerHyper]):
    """Algorithm 3: GIFAIR-FL-Global's round (the ``GroupPenalty``'s scales and loss cache), plus each
    client's personalised θ_k in ``state["personal"]`` ``[N, P]`` and ``state["trained"]`` ``[N]``."""

    personalized = True

    def __init__(self, sim: Simulation, hp: GIFAIRPerHyper) -> None:
        super().__init__(sim, hp)
        self.penalty = GroupPenalty(sim, hp)
        self.groups = self.penalty.groups
        self.state.update(self.penalty.init_state(self.w))
        self.state["personal"] = self.w.expand(sim.num_clients, -1).clone()
        self.state["trained"] = np.zeros(sim.num_clients, dtype=bool)

    def configure(self, t: int) -> Plan:
        return self.penalty.plan(t, self.state, self.w, self.hp)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        if self.hp.unbiased:
            return self.penalty.unbiased_update(self.w, uploads, self.sim.num_clients, self.hp.server_lr)
        return super().aggregate(t, plan, uploads)

    def apply(self, update: Update, uploads: Uploads) -> None:
        """The new model and the refreshed loss cache, then θ_k ← the post-training local model of each
        uploading client (in place)."""
        super().apply(update, uploads)
        update.diagnostics.update(self.penalty.refresh(self.state, uploads))
        remember_rows(self.state["personal"], uploads.clients, uploads.params)
        remember_rows(self.state["trained"], uploads.clients, np.ones(len(uploads.clients), dtype=bool))

    def personal_params(self) -> torch.Tensor:
        """θ_k for every client that has trained, the current global model for the others."""
        trained = self.sim.tensor(self.state["trained"])
        return torch.where(trained[:, None], self.state["personal"], self.w)
