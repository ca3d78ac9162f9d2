"""Helpers for algorithm tests: tiny synthetic engines for exact checks, real digits for short runs."""

from __future__ import annotations

import functools

import numpy as np
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import Plan, Update, Uploads
from fairfl_core.data import DataSpec, make_federated
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models import build_model
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.faults import FaultConfig, RoundFaults
from fairfl_core.sim.local import LocalResult
from tests.conftest import tiny_federated, tiny_model

# Hyperparameters for algorithms whose defaults do not fit tiny_sim's 6 clients (3 per round): CAFGA's K = 5
# clusters must divide both.
TINY_PARAMS = {"cafga": {"num_clusters": 3}}


def tiny_sim(
    kind: str = "batched", dtype=torch.float64, seed: int = 0, faults: FaultConfig | None = None, **train
) -> Simulation:
    """6 unequal clients of 4×4 images, a 2-layer MLP: fast, exact (float64) checks."""
    settings = dict(rounds=3, clients_per_round=3, batch_size=4, lr=0.2, local_steps=3)
    settings.update(train)
    return Simulation(
        Engine(tiny_model(), tiny_federated(), kind=kind, dtype=dtype), TrainConfig(**settings), seed, faults
    )


@functools.lru_cache(maxsize=1)
def _digits():
    spec = DataSpec(name="digits", partition="dirichlet", num_clients=10, partition_options={"alpha": 0.5})
    return make_federated(spec, seed=0)


def digits_sim(seed: int = 0, **train) -> Simulation:
    """Real scikit-learn digits (1,797 8×8 images) over 10 Dirichlet(0.5) clients, MLP 64-200-200-10."""
    settings = dict(rounds=10, clients_per_round=5, batch_size=20, lr=0.05, local_steps=5)
    settings.update(train)
    model = build_model("mlp", in_features=64, seed=seed)
    return Simulation(Engine(model, _digits()), TrainConfig(**settings), seed)


def short_run(name: str, params: dict | None = None, rounds: int = 10, **train) -> tuple[float, float]:
    """Mean client test accuracy (fraction) before and after ``rounds`` rounds on real digits."""
    sim = digits_sim(**train)
    algo = build_algorithm(name, sim, params or {})

    def mean_acc():
        w = algo.personal_params() if algo.personalized else algo.eval_params()
        return float(sim.engine.losses(w, split="test")[1].mean())

    before = mean_acc()
    for t in range(rounds):
        algo.round(t)
    return before, mean_acc()


def run_rounds(algo, rounds: int) -> list:
    return [algo.round(t) for t in range(rounds)]


def uploads_of(
    clients, params: torch.Tensor, train_loss: torch.Tensor | None = None, steps: int = 3
) -> Uploads:
    """Uploads of ``clients`` (all arrive) holding the local models ``params``."""
    clients = np.asarray(clients)
    loss = torch.zeros(len(clients), dtype=params.dtype) if train_loss is None else train_loss
    return Uploads(
        clients, LocalResult(params, loss), np.full(len(clients), steps), RoundFaults.none(clients)
    )


def server_round(
    algo, clients, params: torch.Tensor, new_w: torch.Tensor | None = None, t: int = 0
) -> Update:
    """What ``round`` does after local training: aggregate ``params`` of ``clients`` (or take ``new_w`` as the
    aggregate) and apply the server step."""
    uploads = uploads_of(clients, params if params is not None else algo.w.expand(len(clients), -1))
    plan = Plan(np.asarray(clients), algo.sim.local_spec(t))
    update = algo.aggregate(t, plan, uploads) if new_w is None else Update(new_w)
    algo.apply(update, uploads)
    return update


__all__ = ["digits_sim", "run_rounds", "server_round", "short_run", "tiny_sim", "uploads_of", "np"]
