"""FedDyn (Acar et al., ICLR 2021, "Federated Learning Based on Dynamic Regularization", Algorithm 1), a
baseline of AFGA's Tables 1–3 and 6.

Every client i keeps h_i (the gradient of its linear penalty), the server h (all zero at the start). A
selected client minimises F_i(θ) − ⟨h_i, θ⟩ + (α/2) ‖θ − x_r‖² by local SGD from x_r
(``LocalSpec.grad_shift`` = −h_i, proximal term α around x_r), then::

    h_i ← h_i − α (θ_i − x_r)
    h   ← h − α (1/N) Σ_{i∈S} (θ_i − x_r)
    x_{r+1} = (1/|S|) Σ_{i∈S} θ_i − h / α

α is not given by AFGA (its grid note: {0.1, 0.01, 0.001}); 0.01 is the default.

Faults, beyond the rule of ``base.py``: S is the set of clients whose θ_i arrives; only their h_i change and h
adds their terms divided by N.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import select_clients
from fairfl_core.algorithms.hyper import ClientSampling, ServerPluginHyper
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.context import Simulation

__all__ = ["FedDyn", "FedDynHyper", "feddyn_server_step"]


@dataclass
class FedDynHyper(ServerPluginHyper, ClientSampling):
    """``alpha``: weight α > 0 of the dynamic regulariser; the server averages uniformly (Algorithm 1)."""

    alpha: float = 0.01

    def check(self) -> None:
        if not self.alpha > 0:
            raise ValueError(f"alpha (FedDyn's α) must be positive, got {self.alpha}; try 0.01")


def feddyn_server_step(
    x: torch.Tensor, h: torch.Tensor, local: torch.Tensor, alpha: float, num_clients: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x_{r+1}, h) from the received model ``x`` [P], the server's ``h`` [P] and the uploaded θ_i ``[S, P]``:
    h ← h − α Σ_{i∈S} (θ_i − x) / N, x_{r+1} = mean_i θ_i − h / α (Acar et al., Algorithm 1)."""
    h = h - alpha * (local - x).sum(0) / num_clients
    return local.mean(0) - h / alpha, h


@register("feddyn")
class FedDyn(FederatedAlgorithm[FedDynHyper]):
    def __init__(self, sim: Simulation, hp: FedDynHyper) -> None:
        super().__init__(sim, hp)
        self.state["h"] = torch.zeros_like(self.w)
        self.state["h_i"] = self.w.new_zeros(sim.num_clients, self.w.numel())

    def configure(self, t: int) -> Plan:
        """Local SGD on ∇F_i(θ) − h_i + α (θ − x_r)."""
        clients = select_clients(self.sim, t, self.hp)
        h_i = self.state["h_i"][self.sim.tensor(clients)]
        return Plan(clients, self.sim.local_spec(t, grad_shift=-h_i, prox_mu=self.hp.alpha, prox_ref=self.w))

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        clients, local, alpha = uploads.clients, uploads.params, self.hp.alpha
        h_i = self.state["h_i"][self.sim.tensor(clients)]
        remember_rows(self.state["h_i"], clients, h_i - alpha * (local - self.w))
        w, self.state["h"] = feddyn_server_step(self.w, self.state["h"], local, alpha, self.sim.num_clients)
        p = torch.full((len(clients),), 1.0 / len(clients), dtype=self.w.dtype, device=self.w.device)
        return Update(w, p, diagnostics={"h_norm": float(self.state["h"].norm())})
