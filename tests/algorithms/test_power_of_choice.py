import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.selection import sample_clients
from tests.algorithms.conftest import server_round, tiny_sim

LOSS_TABLE = np.array([0.3, 2.0, 0.8, 1.5, 0.1, 0.9])  # client 1 has the largest loss of all


def with_loss_table(sim):
    """Make every client's 'loss at the global model' a known number."""
    real = sim.engine.losses

    def losses(w, clients=None, split="train"):
        clients = np.arange(sim.num_clients) if clients is None else np.asarray(clients)
        return torch.as_tensor(LOSS_TABLE[clients]), real(w, clients, split)[1]

    sim.engine.losses = losses
    return sim


@pytest.mark.parametrize("d", [3, 4, 6])
def test_selects_the_top_m_of_the_drawn_candidates(d):
    sim = with_loss_table(tiny_sim(clients_per_round=2))
    algo = build_algorithm("power_of_choice", sim, {"d": d})
    saw_client_1_left_out = False
    for t in range(12):
        candidates = sample_clients(sim.rng(t, "candidates"), 6, d, sim.train_sizes)
        expected = np.sort(candidates[np.argsort(-LOSS_TABLE[candidates])[:2]])
        assert np.array_equal(algo.choose(t), expected)
        saw_client_1_left_out |= 1 not in candidates
    assert saw_client_1_left_out or d == 6  # d < N: the global top-loss client is not always a candidate


def test_d_equal_m_is_size_proportional_sampling_and_default_d_is_2m():
    sim = tiny_sim(clients_per_round=2)
    algo = build_algorithm("power_of_choice", sim, {"d": 2})
    assert np.array_equal(algo.choose(5), sample_clients(sim.rng(5, "candidates"), 6, 2, sim.train_sizes))
    assert build_algorithm("power_of_choice", sim, {}).num_candidates == 4


def test_aggregation_is_the_plain_mean():
    algo = build_algorithm("power_of_choice", tiny_sim(), {})
    update = server_round(
        algo, np.array([0, 3, 5]), algo.w + torch.eye(3, algo.w.numel(), dtype=torch.float64)
    )
    assert torch.equal(update.weights, torch.full((3,), 1 / 3, dtype=torch.float64))  # 1.0 / 3 each


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="d = 7 must lie between clients_per_round"):
        build_algorithm("power_of_choice", tiny_sim(), {"d": 7})
    with pytest.raises(ValueError, match="d = 2 must lie between clients_per_round"):
        build_algorithm("power_of_choice", tiny_sim(), {"d": 2})
    with pytest.raises(ValueError, match="d must be a positive"):
        build_algorithm("power_of_choice", tiny_sim(), {"d": 0})
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['replacement'\]"):
        build_algorithm("power_of_choice", tiny_sim(), {"replacement": True})  # d distinct candidates
