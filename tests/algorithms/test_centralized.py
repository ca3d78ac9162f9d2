"""The Centralized reference: SGD on the pooled training data of all clients, as an algorithm."""

import numpy as np
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.faults import FaultConfig
from tests.conftest import tiny_federated, tiny_model
from tests.rounding import assert_close


def sim_of(num_clients, faults=None, **train):
    settings = dict(rounds=2, clients_per_round=1, batch_size=4, lr=0.2, local_steps=None, local_epochs=2)
    settings.update(train)
    data = tiny_federated(num_clients=num_clients)
    engine = Engine(tiny_model(), data, dtype=torch.float64)
    return Simulation(engine, TrainConfig(**settings), 0, faults)


def test_one_client_holding_everything_is_fedavg_on_that_client():
    central, fedavg = build_algorithm("centralized", sim_of(1), {}), build_algorithm("fedavg", sim_of(1), {})
    for t in range(2):
        out = central.round(t)
        fedavg.round(t)
        # the pooled trainer vs FedAvg's client trainer (another code path), and FedAvg's w + 1·(w_1 − w)
        # rounds: a first-layer dot product over 16 features (batches of 4) is the longest sum, 7 reductions a
        # step for 2 epochs of 2 steps (7 samples) and the average, every round so far
        assert_close(central.w, fedavg.w, terms=16, depth=(t + 1) * (7 * 4 + 1), what=f"round {t}")
    assert out.selected.tolist() == [0] and out.diagnostics["samples"] == 7


def test_the_pool_is_every_clients_training_data_and_dropouts_hold_theirs_back():
    sim = sim_of(6)
    out = build_algorithm("centralized", sim, {}).round(0)
    assert out.diagnostics["samples"] == int(sim.train_sizes.sum())
    faulty = sim_of(6, FaultConfig(rate=0.5, kind="dropout"))
    out = build_algorithm("centralized", faulty, {}).round(0)
    failed = np.asarray(out.diagnostics["faults"]["failed"])
    kept = np.setdiff1d(np.arange(6), failed)
    assert len(failed) == 3 and out.diagnostics["samples"] == int(faulty.train_sizes[kept].sum())
