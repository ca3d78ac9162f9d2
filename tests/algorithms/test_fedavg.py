import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import Plan
from fairfl_core.algorithms.fedavg import average_weights, select_clients
from fairfl_core.selection import sample_clients
from tests.algorithms.conftest import run_rounds, tiny_sim, uploads_of
from tests.rounding import assert_close


def test_size_weighted_aggregate_by_hand():
    sim = tiny_sim()
    algo = build_algorithm("fedavg", sim, {"weighting": "size", "server_lr": 0.5})
    clients = np.array([0, 1])  # 7 and 12 training samples
    w = algo.w
    params = torch.stack([w + 1.0, w - 2.0])
    update = algo.aggregate(0, Plan(clients, sim.local_spec(0)), uploads_of(clients, params))
    # w + 0.5 * (7/19 * 1 + 12/19 * (-2)) = w - 0.5 * 17/19 the server's sum of 2 weighted updates vs the
    # value by hand: the updates' differences, the sum, the step, of the magnitude of the parameters and
    # updates (|w| + 2)
    assert_close(update.w, w - 0.5 * 17 / 19, terms=2, depth=3, scale=float(w.abs().max()) + 2, what="w")
    assert torch.equal(
        update.weights, torch.tensor([7 / 19, 12 / 19], dtype=w.dtype)
    )  # 7 + 12 exact, divided


def test_uniform_weights_and_size_sampling():
    sim = tiny_sim(clients_per_round=6)
    algo = build_algorithm("fedavg", sim, {"weighting": "uniform", "sampling": "size", "replacement": True})
    p = average_weights(sim, np.array([0, 3, 3]), algo.hp, algo.w)
    assert torch.equal(p, torch.full((3,), 1 / 3, dtype=p.dtype))  # 1.0 / 3 each
    picks = np.concatenate([select_clients(sim, t, algo.hp) for t in range(300)])
    freq = np.bincount(picks, minlength=6) / len(picks)
    # a frequency of 900 draws: sampling error (about 0.015), not rounding
    assert np.allclose(freq, sim.train_sizes / sim.train_sizes.sum(), atol=0.03)


def test_fedprox_with_mu_zero_is_fedavg():
    a = build_algorithm("fedavg", tiny_sim(), {})
    b = build_algorithm("fedprox", tiny_sim(), {"mu": 0.0})
    run_rounds(a, 3), run_rounds(b, 3)
    assert torch.equal(a.w, b.w)


def test_fedprox_pulls_local_models_towards_the_global_one():
    drift = {}
    for mu in (0.0, 5.0):
        sim = tiny_sim()
        algo = build_algorithm("fedprox", sim, {"mu": mu})
        res = sim.engine.train(np.array([0, 1, 2]), algo.w, algo.configure(0).spec, seed=0)
        drift[mu] = float((res.params - algo.w).norm())
    assert drift[5.0] < drift[0.0]


@pytest.mark.parametrize(
    "name", ["fedprox", "clustered_sampling", "equitable_fl", "fairfed", "power_of_choice"]
)
def test_proximal_algorithms_send_the_proximal_term_towards_the_received_model(name):
    algo = build_algorithm(name, tiny_sim(), {"mu": 0.3})
    spec = algo.configure(0).spec
    assert spec.prox_mu == 0.3 and spec.prox_ref is algo.w


def test_sampling_errors_name_the_problem():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="exceeds the 5 clients"):
        sample_clients(rng, 5, 6)
    with pytest.raises(ValueError, match="non-negative"):
        sample_clients(rng, 3, 1, probs=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="sampling must be one of"):
        build_algorithm("fedavg", tiny_sim(), {"sampling": "magic"})
    with pytest.raises(ValueError, match="unknown field"):
        build_algorithm("fedavg", tiny_sim(), {"q": 1.0})
