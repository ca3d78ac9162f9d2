"""Ditto (Li, Hu, Beirami, Smith, ICML 2021, "Ditto: Fair and Robust Federated Learning Through
Personalization"), as the official code litian96/ditto ``flearn/trainers_MTL/ditto.py`` runs it.

The global model is trained exactly as FedAvg's. Every client also owns a personal model v_k (initialised
to the initial global model, kept for all clients). A selected client updates v_k on the **same
minibatches** as its global local steps (paper Alg. 1, personal objective F_k(v) + λ/2 ‖v − w*‖²)::

    v_k ← v_k − η (∇F_k(v_k; b) + λ (v_k − w^t))        w^t = the global model received this round

Client k is evaluated with v_k. Default λ = 0.5 (in both FedEBA+ Table 6's grid {0, 0.5} and GIFAIR-FL's
{0.01, …, 5}). λ = 0 is purely local training; large λ keeps v_k near w^t (keep η λ < 2 for stability).

Faults (``sim/faults.py``): the global model averages the survivors as FedAvg does; a dropped client's round
is lost with it, so only survivors' v_k are replaced. Personal steps run on the same minibatches as the
global ones (every selected client trains, then the survivors' rows are kept), and a straggler's personal
steps stop where its global steps stop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper
from fairfl_core.sim.local import LocalResult

__all__ = ["Ditto", "DittoHyper"]


@dataclass
class DittoHyper(FedAvgHyper):
    """``lam``: weight λ of the personal objective's pull (λ/2)‖v − w^t‖² towards the global model."""

    lam: float = 0.5

    def check(self):
        if not self.lam >= 0:
            raise ValueError(f"lam (Ditto's λ) must be non-negative, got {self.lam}")


@register("ditto")
class Ditto(FedAvg):
    Hyper = DittoHyper
    personalized = True

    def __init__(self, sim, hp):
        super().__init__(sim, hp)
        self.state["personal"] = self.w.expand(sim.num_clients, -1).clone()

    def reports(self, t: int, clients: np.ndarray, result: LocalResult) -> dict:
        """Personal steps of the selected clients: same round seed → the same minibatches as the global
        steps; the proximal reference is the received (round-start) global model."""
        spec = self.sim.local_spec(t, prox_mu=self.hp.lam, prox_ref=self.w)
        selected, seed = self.faults.selected, self.sim.seed_for(t, "batches")
        personal = self.sim.engine.train(
            selected, self.state["personal"][selected], spec, seed, self.faults.train_work
        )
        return {"personal": self.faults.kept(personal)}  # the survivors' rows

    def after_round(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict) -> None:
        """Store the new v_k (out of place: saved states stay put)."""
        ids, first = np.unique(clients, return_index=True)  # one row per client (sampling with replacement)
        first = torch.as_tensor(first, device=self.w.device)
        self.state["personal"] = self.state["personal"].index_copy(
            0, torch.as_tensor(ids, device=self.w.device), reports["personal"].params[first]
        )

    def diagnostics(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict) -> dict:
        return {
            **super().diagnostics(t, clients, result, reports),
            "personal_train_loss": float(reports["personal"].train_loss.mean()),
        }

    def personal_params(self) -> torch.Tensor:
        return self.state["personal"]
