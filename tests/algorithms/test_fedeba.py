import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedeba import (
    annealed_tau,
    eba_weights,
    figure1_toy,
    toy_losses,
    weights_entropy,
)
from fairfl_core.metrics import entropy_of_normalised
from tests.algorithms.conftest import run_rounds, tiny_sim

D = torch.float64
E = math.e


def test_eba_weights_by_hand():
    # F = [1, 2], τ = 1: p = [e, e²] / (e + e²) = [1/(1+e), e/(1+e)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0)
    assert torch.allclose(p, torch.tensor([1 / (1 + E), E / (1 + E)], dtype=D))
    # τ = 0.5 doubles the exponent gap: [1/(1+e²), e²/(1+e²)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 0.5)
    assert torch.allclose(p, torch.tensor([1 / (1 + E**2), E**2 / (1 + E**2)], dtype=D))
    # size prior q = [1/4, 3/4] (Eq. 22): p ∝ [e/4, 3e²/4] → [1/(1+3e), 3e/(1+3e)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0, torch.tensor([0.25, 0.75], dtype=D))
    assert torch.allclose(p, torch.tensor([1 / (1 + 3 * E), 3 * E / (1 + 3 * E)], dtype=D))


def test_eba_weights_do_not_overflow_at_small_temperature():
    # F/τ = [2000, 2020]: exp would overflow; the softmax gives [1/(1+e^20), e^20/(1+e^20)]
    p = eba_weights(torch.tensor([100.0, 101.0]), 0.05)
    assert torch.isfinite(p).all()
    assert float(p[0]) == pytest.approx(1 / (1 + math.exp(20)), rel=1e-4)


def test_temperature_limits():
    losses = torch.tensor([0.3, 2.0, 1.9], dtype=D)
    uniform = torch.full((3,), 1 / 3, dtype=D)
    prior = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    assert torch.allclose(eba_weights(losses, math.inf), uniform)  # τ → ∞: FedAvg (uniform)
    assert torch.allclose(eba_weights(losses, 1e9), uniform, atol=1e-8)
    assert torch.allclose(eba_weights(losses, math.inf, prior), prior)  # … or the prior
    assert float(eba_weights(losses, 1e-3)[1]) > 1 - 1e-12  # τ → 0: the max-loss client (AFL-like)


@pytest.mark.parametrize(
    "schedule,expected",
    # τ_0 = 1, κ = 0.1, t = 10 → 1 + κt = 2
    [("constant", 1.0), ("linear", 0.5), ("concave", 1 / math.sqrt(2)), ("convex", 0.125)],
)
def test_annealing_schedules_by_hand(schedule, expected):
    assert annealed_tau(1.0, 10, schedule, 0.1) == pytest.approx(expected)
    assert annealed_tau(5.0, 0, schedule, 0.1) == 5.0  # round 0 (the paper's t = 1) starts at τ_0


def test_entropies_by_hand():
    assert weights_entropy(torch.full((4,), 0.25, dtype=D)) == pytest.approx(math.log(4))
    assert weights_entropy(torch.tensor([1.0, 0.0, 0.0], dtype=D)) == 0.0


def test_figure1_toy_as_the_spec_states_it():
    # F_1 = 2(x−2)², F_2 = ½(x+4)², x_t = 0, one step of 1/4: x_1 = 2, x_2 = −1; losses (0, 4.5)
    assert np.allclose(toy_losses([2.0, -1.0]), [0.0, 4.5])
    x = figure1_toy(tau=5.311)
    assert x["fedavg"] == pytest.approx(0.5)
    assert x["eba"] == pytest.approx(-0.1, abs=1e-3)  # p_1 = 1/(1 + e^{4.5/5.311}) = 0.300
    assert x["qffl"] == pytest.approx(8 / 21)  # q = 1, L = 1: Δ = (−16, 8), h = (12, 9)
    assert figure1_toy(tau=1.0)["eba"] == pytest.approx(-0.967, abs=1e-3)  # the printed τ = 1 (A28)

    def variance(xx):
        f = toy_losses(xx)
        return float(np.var([f[0], f[1]]))  # two clients: (gap / 2)²

    assert variance(x["fedavg"]) == pytest.approx(2.8125**2)  # 7.91
    assert variance(x["eba"]) == pytest.approx(0.6075**2, rel=1e-2)  # paper: (0.6)²
    assert variance(x["eba"]) < variance(x["qffl"]) < variance(x["fedavg"])
    assert variance(-0.4) < variance(x["fedavg"])  # the paper's printed q-FFL point
    # entropy of the normalised losses (log₂): EBA 0.996, q-FFL (x = −0.4) 0.943, FedAvg 0.890
    assert entropy_of_normalised(toy_losses(x["eba"])) == pytest.approx(0.996, abs=5e-4)
    assert entropy_of_normalised(toy_losses(-0.4)) == pytest.approx(0.943, abs=5e-4)
    assert entropy_of_normalised(toy_losses(x["fedavg"])) == pytest.approx(0.890, abs=5e-4)


@pytest.mark.parametrize("weighting", ["uniform", "size"])
def test_round_weights_by_the_post_training_losses(weighting):
    sim = tiny_sim()
    algo = build_algorithm("fedeba", sim, {"tau": 0.5, "weighting": weighting})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    local = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    post = torch.stack([sim.engine.losses(local[k], clients[k : k + 1])[0][0] for k in range(3)])
    q = torch.full((3,), 1 / 3, dtype=D)
    if weighting == "size":
        n = torch.as_tensor(sim.train_sizes[clients], dtype=D)
        q = n / n.sum()
    p = q * torch.exp(post / 0.5) / (q * torch.exp(post / 0.5)).sum()
    assert (algo.w - (w0 + p @ (local - w0))).abs().max() < 1e-12


def test_last_epoch_average_uses_the_local_minibatch_losses():
    sim = tiny_sim()
    algo = build_algorithm("fedeba", sim, {"tau": 0.5, "loss_eval": "last_epoch_avg"})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    res = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches"))
    p = torch.softmax(res.train_loss / 0.5, 0)
    assert (algo.w - (w0 + p @ (res.params - w0))).abs().max() < 1e-12


@pytest.mark.parametrize("weighting", ["uniform", "size"])
def test_a_huge_temperature_is_fedavg(weighting):
    a = build_algorithm("fedavg", tiny_sim(), {"weighting": weighting})
    b = build_algorithm("fedeba", tiny_sim(), {"weighting": weighting, "tau": 1e15})
    run_rounds(a, 3), run_rounds(b, 3)
    assert (a.w - b.w).abs().max() < 1e-12


def test_annealed_temperature_and_diagnostics():
    algo = build_algorithm("fedeba", tiny_sim(), {"tau": 2.0, "tau_schedule": "linear", "tau_kappa": 1.0})
    outs = run_rounds(algo, 3)
    assert [o.diagnostics["tau"] for o in outs] == pytest.approx([2.0, 1.0, 2 / 3])
    d = outs[-1].diagnostics
    assert 0 < d["weights_entropy"] <= math.log(3) + 1e-12
    assert 1 / 3 <= d["weight_max"] <= 1
    assert {"train_loss", "post_loss_max"} <= d.keys()


@pytest.mark.parametrize(
    "params,field",
    [
        ({"tau": 0.0}, "tau .EBA temperature. must be > 0"),
        ({"tau": -1.0}, "tau .EBA temperature. must be > 0"),
        ({"loss_eval": "best"}, "loss_eval must be one of"),
        ({"tau_schedule": "cosine"}, "tau_schedule must be one of"),
        ({"tau_kappa": -0.1}, "tau_kappa"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("fedeba", tiny_sim(), params)
