"""Ditto (Li, Hu, Beirami, Smith, ICML 2021, "Ditto: Fair and Robust Federated Learning Through
Personalization"), as the official code litian96/ditto ``flearn/trainers_MTL/ditto.py`` runs it.

The global model is trained exactly as FedAvg's. Every client also owns a personal model v_k (initialised
to the initial global model, kept for all clients). A selected client updates v_k on the **same
minibatches** as its global local steps (paper Alg. 1, personal objective F_k(v) + λ/2 ‖v − w*‖²)::

    v_k ← v_k − η (∇F_k(v_k; b) + λ (v_k − w^t))        w^t = the global model received this round

Client k is evaluated with v_k. Default λ = 0.5 (in both FedEBA+ Table 6's grid {0, 0.5} and GIFAIR-FL's
{0.01, …, 5}). λ = 0 is purely local training; large λ keeps v_k near w^t (keep η λ < 2 for stability).

Faults, beyond the rule of ``base.py``: the global model averages the survivors as FedAvg does; a dropped
client's round is lost with it, so only survivors' v_k are replaced. Personal steps run on the same
minibatches as the global ones (every selected client trains, then the survivors' rows are kept), and a
straggler's personal steps stop where its global steps stop.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.faults import RoundFaults
from fairfl_core.sim.local import LocalResult

__all__ = ["Ditto", "DittoHyper"]


@dataclass
class DittoHyper(FedAvgHyper):
    """``lam``: weight λ of the personal objective's pull (λ/2)‖v − w^t‖² towards the global model."""

    lam: float = 0.5

    def check(self) -> None:
        if not self.lam >= 0:
            raise ValueError(f"lam (Ditto's λ) must be non-negative, got {self.lam}")


@register("ditto")
class Ditto(FedAvg[DittoHyper]):
    personalized = True

    def __init__(self, sim: Simulation, hp: DittoHyper) -> None:
        super().__init__(sim, hp)
        self.state["personal"] = self.w.expand(sim.num_clients, -1).clone()

    def client_update(self, t: int, plan: Plan, faults: RoundFaults) -> LocalResult:
        """FedAvg's local training, then the personal steps on the same minibatches (same round seed) with
        the received global model as the proximal reference. The v_k of clients whose round completes are
        stored (they never leave the client); each one's personal training loss is reported."""
        result = super().client_update(t, plan, faults)
        spec = self.sim.local_spec(t, prox_mu=self.hp.lam, prox_ref=self.w)
        start, seed = self.state["personal"][plan.clients], self.sim.seed_for(t, "batches")
        personal = self.sim.engine.train(plan.clients, start, spec, seed, faults.train_work)
        kept = faults.kept(personal.params)
        remember_rows(self.state["personal"], faults.survivors, kept)
        return LocalResult(result.params, result.train_loss, {"personal_train_loss": personal.train_loss})

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        update = super().aggregate(t, plan, uploads)
        update.diagnostics["personal_train_loss"] = uploads.result.stats["personal_train_loss"].mean()
        return update

    def personal_params(self) -> torch.Tensor:
        return self.state["personal"]
