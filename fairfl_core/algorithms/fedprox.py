"""FedProx (Li et al., MLSys 2020, Eq. 2): FedAvg whose local objective adds (μ/2)‖w − w^t‖²."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import Plan, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients
from fairfl_core.algorithms.hyper import Hyper
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.local import LocalSpec

__all__ = ["FedProx", "FedProxHyper", "Proximal", "proximal_spec"]


@dataclass
class Proximal(Hyper):
    """``mu``: weight μ of the proximal term (μ/2)‖w − w^t‖² of the local objective (0: FedAvg's)."""

    mu: float = 0.01

    def check(self) -> None:
        if self.mu < 0:
            raise ValueError(f"mu must be non-negative, got {self.mu}")


@dataclass
class FedProxHyper(Proximal, FedAvgHyper):
    """FedAvg's groups and the proximal weight μ."""


def proximal_spec(sim: Simulation, t: int, mu: float, w: torch.Tensor) -> LocalSpec:
    """Round t's local step with the proximal term (μ/2)‖w − w^t‖² towards the received model ``w``."""
    return sim.local_spec(t, prox_mu=mu, prox_ref=w)


@register("fedprox")
class FedProx(FedAvg[FedProxHyper]):
    def configure(self, t: int) -> Plan:
        return Plan(select_clients(self.sim, t, self.hp), proximal_spec(self.sim, t, self.hp.mu, self.w))
