"""SCAFFOLD (Karimireddy et al., ICML 2020, Algorithm 1 with option II of Eq. 4).

The server keeps a control variate c, every client i its own c_i (all zero at the start). A selected client
runs its local steps on the corrected direction g_i(y) + c − c_i (``LocalSpec.grad_shift``), then::

    c_i⁺ = c_i − c + (w − y_i) / (K_i η_l)                     option II (Eq. 4)
    w ← w + η_g Σ_{i∈S} p_i (y_i − w)                           (Alg. 1 line 16, p_i = 1/|S|)
    c ← c + (1/N) Σ_{i∈S} (c_i⁺ − c_i)                          (line 17: c + |S|/N · mean Δc_i)

so that c = (1/N) Σ_i c_i holds after every round. K_i is client i's number of local steps this round (in
epoch mode it depends on n_i: E·⌈n_i / B⌉) and η_l the round's (decayed) client learning rate. With plain
SGD (no momentum, no weight decay) c_i⁺ is the mean minibatch gradient along client i's local trajectory.
Same update as FLGo ``flgo/algorithm/scaffold.py`` and NIID-Bench ``train_net_scaffold`` (zero initial
controls, Δc summed over S and divided by N, uniform mean of Δy); neither clips gradients.

Stability at a large local rate: ``docs/readings.md`` (AFGA and CAFGA, SCAFFOLD). The references keep to
small default learning rates (NIID-Bench and Flower's niid_bench baseline use 0.01).

Faults, beyond the rule of ``base.py``: S is the set of clients whose upload (y_i, Δc_i) arrives: w averages
their updates (1/|S|), c adds their Δc_i / N and only their c_i change; a dropped client keeps its c_i. A
straggler computes c_i⁺ with K_i = the ⌈f K_i⌉ steps it completed (option II: the mean gradient over its
steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.context import Simulation

__all__ = ["Scaffold", "ScaffoldHyper", "scaffold_client_controls", "scaffold_server_control"]


def scaffold_client_controls(
    c_i: torch.Tensor,
    c: torch.Tensor,
    start: torch.Tensor,
    local: torch.Tensor,
    steps: torch.Tensor,
    lr: float,
) -> torch.Tensor:
    """Option II of Karimireddy et al. Eq. (4): c_i⁺ = c_i − c + (w − y_i) / (K_i η_l).

    ``c_i``, ``local``: [K, P]; ``c``, ``start`` (= w): [P]; ``steps``: [K] local step counts K_i.
    """
    return c_i - c + (start - local) / (steps.to(local)[:, None] * lr)


def scaffold_server_control(c: torch.Tensor, delta_c: torch.Tensor, num_clients: int) -> torch.Tensor:
    """Karimireddy et al. Alg. 1 line 17: c ← c + (|S|/N) · (1/|S|) Σ_{i∈S} Δc_i = c + (1/N) Σ_{i∈S} Δc_i."""
    return c + delta_c.sum(0) / num_clients


@dataclass
class ScaffoldHyper(FedAvgHyper):
    """Uniform averaging and η_g = 1 (Alg. 1; AFGA Table 9 uses η_g = 1, η_l = 0.1). One control variate per
    client, so clients are sampled without replacement."""

    weighting: Weighting = "uniform"

    def check(self) -> None:
        if self.replacement:
            raise ValueError(
                "replacement must be False for SCAFFOLD: each client's control variate c_i is "
                "updated once per round, so a client cannot be drawn twice"
            )


@register("scaffold")
class Scaffold(FedAvg[ScaffoldHyper]):
    def __init__(self, sim: Simulation, hp: ScaffoldHyper) -> None:
        super().__init__(sim, hp)
        self.state["c"] = torch.zeros_like(self.w)
        self.state["c_i"] = self.w.new_zeros(sim.num_clients, self.w.numel())

    def configure(self, t: int) -> Plan:
        """Local steps on g_i(y) + c − c_i."""
        clients = select_clients(self.sim, t, self.hp)
        shift = self.state["c"] - self.state["c_i"][self.sim.tensor(clients)]
        return Plan(clients, self.sim.local_spec(t, grad_shift=shift))

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step, then c_i⁺ of the uploading clients (their completed steps K_i) and c."""
        update = super().aggregate(t, plan, uploads)
        clients = uploads.clients
        c_i = self.state["c_i"][self.sim.tensor(clients)]
        steps = torch.as_tensor(uploads.steps)
        c_plus = scaffold_client_controls(c_i, self.state["c"], self.w, uploads.params, steps, plan.spec.lr)
        self.state["c"] = scaffold_server_control(self.state["c"], c_plus - c_i, self.sim.num_clients)
        remember_rows(self.state["c_i"], clients, c_plus)
        update.diagnostics["control_norm"] = float(self.state["c"].norm())
        return update
