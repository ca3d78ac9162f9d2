"""FedProx (Li et al., MLSys 2020, Eq. 2): FedAvg whose local objective adds (μ/2)‖w − w^t‖².

Faults (``sim/faults.py``): aggregation as FedAvg's over the survivors; a straggler's proximal local run stops
after ⌈f K⌉ steps and is aggregated like the others (the partial work FedProx incorporates).
"""

from __future__ import annotations

from dataclasses import dataclass

from fairfl_core.algorithms.base import Plan, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients

__all__ = ["FedProx", "FedProxHyper"]


@dataclass
class FedProxHyper(FedAvgHyper):
    mu: float = 0.01

    def check(self):
        if self.mu < 0:
            raise ValueError(f"mu must be non-negative, got {self.mu}")


@register("fedprox")
class FedProx(FedAvg):
    Hyper = FedProxHyper

    def configure(self, t: int) -> Plan:
        spec = self.sim.local_spec(t, prox_mu=self.hp.mu, prox_ref=self.w)
        return Plan(select_clients(self.sim, t, self.hp), spec)
