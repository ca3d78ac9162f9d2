"""Agnostic Federated Learning (Mohri, Sivek & Suresh, ICML 2019, Eq. 2 and the stochastic mirror
descent of §4), as litian96/fair_flearn ``flearn/trainers/afl.py`` and FLGo ``flgo/algorithm/afl.py``
implement it.

min_w max_{λ ∈ Δ_N} Σ_k λ_k F_k(w) by gradient descent–ascent with FULL participation. Every round all N
clients report F_k(w) (mean loss on the whole training set at the received model) and a direction g_k:

* ``client_step="local"`` (FLGo, the FedEBA+ baseline): the FedAvg local training, g_k = (w − w_k)/η_t;
* ``client_step="gradient"`` (fair_flearn): one full-batch gradient, g_k = ∇F_k(w).

Then, with γ_w = η_t (the round's client learning rate, fair_flearn's ``--learning_rate``)::

    w ← w − γ_w Σ_k λ_k g_k                  (= w + Σ_k λ_k (w_k − w))
    λ ← Proj_Δ(λ + γ_λ F(w))                 (Euclidean projection onto the simplex)
    w̄ ← (c w̄ + w) / (c + 1),  c ← c + 1      (evaluated model: the average of the iterates w_1 … w_c)

λ starts uniform. γ_λ = 0.01 is FLGo's default and fair_flearn's Fashion-MNIST value (fair_flearn#15;
there γ_w = 0.001 is set through ``train.lr``); FedEBA+ tunes γ_λ ∈ {0.1, 0.5, 0.7}, GIFAIR-FL
γ_λ ∈ {0.001, 0.01, 0.1}.

Faults, beyond the rule of ``base.py``: only the reporting clients R ⊂ [N] enter the round. The model step
mixes their updates with λ renormalised over R, w ← w + Σ_{k∈R} (λ_k / Σ_{j∈R} λ_j)(w_k − w) (no step when
every λ_k, k ∈ R, is 0, as the full-participation step then makes none); the dual step uses the unbiased
estimate of the loss vector from R, F̂_k = (N/|R|) F_k for k ∈ R and 0 otherwise, as Stochastic-AFL estimates
F from sampled clients (Mohri et al. §4): λ ← Proj_Δ(λ + γ_λ F̂). With R = [N] both are the steps above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedsgd import full_batch_spec
from fairfl_core.algorithms.hyper import ServerPluginHyper
from fairfl_core.sim.context import Simulation

__all__ = ["AFL", "AFLHyper", "afl_lambda_step", "project_simplex"]


@dataclass
class AFLHyper(ServerPluginHyper):
    """``lr_lambda``: dual step γ_λ ≥ 0 (0 keeps λ uniform); ``client_step``: see the module docstring; the
    server plug-ins (momentum, FedVARP) act on the model step."""

    lr_lambda: float = 0.01
    client_step: Literal["local", "gradient"] = "local"

    def check(self) -> None:
        if not (self.lr_lambda >= 0 and np.isfinite(self.lr_lambda)):
            raise ValueError(f"lr_lambda (γ_λ) must be a finite number >= 0, got {self.lr_lambda}; try 0.01")


def project_simplex(v: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of ``v`` ``[N]`` onto the probability simplex (Wang & Carreira-Perpiñán 2013,
    Alg. 1; fair_flearn ``model_utils.project``): sort u = v descending, ρ = max{j : u_j − (Σ_{i≤j} u_i − 1)/j
    > 0}, τ = (Σ_{i≤ρ} u_i − 1)/ρ, result max(v − τ, 0)."""
    u = torch.sort(v, descending=True).values
    css = torch.cumsum(u, 0) - 1.0
    j = torch.arange(1, len(v) + 1, dtype=v.dtype, device=v.device)
    rho = int(torch.nonzero(u - css / j > 0).max()) + 1
    return torch.clamp(v - css[rho - 1] / rho, min=0.0)


def afl_lambda_step(lam: torch.Tensor, losses: torch.Tensor, lr_lambda: float) -> torch.Tensor:
    """AFL's projected dual ascent step λ ← Proj_Δ(λ + γ_λ F) (Mohri et al. 2019, §4; fair_flearn afl.py)."""
    return project_simplex(lam + lr_lambda * losses.to(lam.dtype))


@register("afl")
class AFL(FederatedAlgorithm[AFLHyper]):
    def __init__(self, sim: Simulation, hp: AFLHyper) -> None:
        super().__init__(sim, hp)
        n = sim.num_clients
        self.state.update(
            lam=torch.full((n,), 1.0 / n, dtype=self.w.dtype, device=self.w.device),
            w_avg=self.w.clone(),
            avg_count=0,
        )

    def configure(self, t: int) -> Plan:
        """Every client, with FedAvg's local training or one full-batch gradient step."""
        local = full_batch_spec(self.sim, t) if self.hp.client_step == "gradient" else self.sim.local_spec(t)
        return Plan(np.arange(self.sim.num_clients), local)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The λ-weighted model step (λ renormalised over the reporting clients) and the dual step on F̂."""
        clients, n = uploads.clients, self.sim.num_clients
        losses = self.sim.engine.losses(self.w, clients, "train")[0]  # F_k at the received model
        lam = self.state["lam"][clients]
        if len(clients) < n and lam.sum() > 0:  # λ_R = 0: no step, as without faults
            lam = lam / lam.sum()
        new_w = self.w + lam @ (uploads.params - self.w)
        estimate = losses.new_zeros(n)
        estimate[clients] = losses * (n / len(clients))  # F̂: unbiased from R
        self.state["lam"] = afl_lambda_step(self.state["lam"], estimate, self.hp.lr_lambda)
        diagnostics = {
            "lambda_max": float(self.state["lam"].max()),
            "lambda_support": int((self.state["lam"] > 0).sum()),
            "loss_at_global_max": float(losses.max()),
        }
        return Update(new_w, lam, 1.0, diagnostics)

    def apply(self, update: Update, uploads: Uploads) -> None:
        """The model step, then the running average of the iterates w̄ ← (c w̄ + w) / (c + 1)."""
        super().apply(update, uploads)
        c = self.state["avg_count"]
        self.state["w_avg"] = (c * self.state["w_avg"] + self.w) / (c + 1)
        self.state["avg_count"] = c + 1

    def eval_params(self) -> torch.Tensor:
        """The averaged iterate w̄ (fair_flearn's ``resulting_model``, FLGo's ``result_model``)."""
        return self.state["w_avg"]
