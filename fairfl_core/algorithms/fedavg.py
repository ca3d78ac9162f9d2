"""FedAvg (McMahan et al., 2017): sample clients, train them locally, average their models.

w ← w + η_g Σ_k p_k (w_k − w), with p_k ∝ n_k over the clients whose upload arrives, or uniform
(``weighting``). The steps are pure helpers that other algorithms reuse (``select_clients``,
``average_weights``, ``averaged``; ``average_step``, the server's whole step). The algorithm is the contract
of ``base.py`` at its simplest, generic in its Hyper: an algorithm whose Hyper is a ``FedAvgHyper``
subclasses ``FedAvg[ItsHyper]``; one without FedAvg's groups (no ``sampling``: Clustered Sampling, DivFL; no
``weighting``: FairFed) subclasses ``FederatedAlgorithm`` and composes the helpers.

FedOpt (Reddi et al., ICLR 2021, Alg. 2) replaces the server's step by an optimiser on the pseudo-gradient
Δ = Σ_k p_k (w_k − w): an algorithm that sets ``server_optimizer`` (``fedopt.py``: FedAdam, ...) keeps the
optimiser's moments in ``state`` and steps with it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.hyper import Averaging, ClientSampling, FedAvgHyper
from fairfl_core.selection import sample_clients
from fairfl_core.sim.context import Simulation

__all__ = [
    "FedAvg",
    "FedAvgHyper",
    "ServerStep",
    "average_step",
    "average_weights",
    "averaged",
    "select_clients",
]

F = TypeVar("F", bound=FedAvgHyper, covariant=True)


class ServerStep(Protocol):
    """A server step on the pseudo-gradient Δ with state of its own, ``FedAvg.server_optimizer``
    (``fedopt.ServerOptimizer``)."""

    def init_state(self, w: torch.Tensor, hp: FedAvgHyper) -> dict[str, torch.Tensor]: ...

    def step(
        self, state: dict[str, Any], w: torch.Tensor, delta: torch.Tensor, hp: FedAvgHyper
    ) -> torch.Tensor: ...


def select_clients(sim: Simulation, t: int, hp: ClientSampling) -> np.ndarray:
    """Round t's clients: ``clients_per_round`` drawn uniformly or ∝ n_k, with or without replacement."""
    probs = sim.train_sizes if hp.sampling == "size" else None
    return sample_clients(
        sim.rng(t, "select"), sim.num_clients, sim.train.clients_per_round, probs, hp.replacement
    )


def average_weights(sim: Simulation, clients: np.ndarray, hp: Averaging, like: torch.Tensor) -> torch.Tensor:
    """p_k ∝ n_k (``weighting="size"``) or 1/|clients| over ``clients``, in ``like``'s dtype on the engine's
    device."""
    if hp.weighting == "uniform":
        p = np.full(len(clients), 1.0 / len(clients))
    else:
        n = sim.train_sizes[clients]
        p = n / n.sum()
    return sim.tensor(p, like.dtype)


def averaged(w: torch.Tensor, params: torch.Tensor, p: torch.Tensor, server_lr: float = 1.0) -> torch.Tensor:
    """w + η_g Σ_k p_k (w_k − w)."""
    return w + server_lr * (p @ (params - w))


def average_step(sim: Simulation, w: torch.Tensor, uploads: Uploads, hp: Averaging) -> Update:
    """FedAvg's server step over the uploads: w + η_g Σ_k p_k (w_k − w) with p of ``weighting``."""
    p = average_weights(sim, uploads.clients, hp, w)
    return Update(averaged(w, uploads.params, p, hp.server_lr), p, hp.server_lr)


@register("fedavg")
class FedAvg(FederatedAlgorithm[F]):
    Hyper = FedAvgHyper
    server_optimizer: ClassVar[ServerStep | None] = None

    def __init__(self, sim: Simulation, hp: F) -> None:
        super().__init__(sim, hp)
        if self.server_optimizer is not None:
            self.state.update(self.server_optimizer.init_state(self.w, hp))

    def configure(self, t: int) -> Plan:
        return Plan(select_clients(self.sim, t, self.hp), self.sim.local_spec(t))

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        if self.server_optimizer is None:
            return average_step(self.sim, self.w, uploads, self.hp)
        p = average_weights(self.sim, uploads.clients, self.hp, self.w)
        w = self.server_optimizer.step(self.state, self.w, p @ (uploads.params - self.w), self.hp)
        return Update(w, p, self.hp.server_lr)
