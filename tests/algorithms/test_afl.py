import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.afl import afl_lambda_step, project_simplex
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim

D = torch.float64


@pytest.mark.parametrize(
    "v,expected",
    [
        # already on the simplex: unchanged
        ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
        # equal entries: shift by (1 − 0.9)/3 each
        ([0.3, 0.3, 0.3], [1 / 3, 1 / 3, 1 / 3]),
        # u = [1, 0.5, −1]: j=1: 1 − 0/1 > 0; j=2: 0.5 − 0.5/2 > 0; j=3: −1 − (−0.5)/3 < 0 → ρ=2, τ=0.25
        ([1.0, 0.5, -1.0], [0.75, 0.25, 0.0]),
        # u = [−1, −2]: j=1: −1 − (−2)/1 = 1 > 0; j=2: −2 − (−4)/2 = 0 (not > 0) → ρ=1, τ=−2
        ([-2.0, -1.0], [0.0, 1.0]),
        ([2.0, 0.0], [1.0, 0.0]),
    ],
)
def test_simplex_projection_on_known_vectors(v, expected):
    assert torch.allclose(project_simplex(torch.tensor(v, dtype=D)), torch.tensor(expected, dtype=D))


def test_simplex_projection_satisfies_the_kkt_conditions():
    # x = Proj(v) ⟺ x ∈ Δ and v − x = τ on supp(x), v ≤ τ off it
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = torch.as_tensor(rng.normal(size=7) * 2, dtype=D)
        x = project_simplex(v)
        assert (x >= 0).all() and abs(float(x.sum()) - 1) < 1e-12
        on = x > 0
        tau = (v - x)[on]
        assert (tau - tau[0]).abs().max() < 1e-12
        assert (v[~on] <= tau[0] + 1e-12).all()


def test_lambda_step_by_hand():
    # λ + 0.1·[1, 3] = [0.6, 0.8] → ρ = 2, τ = (1.4 − 1)/2 = 0.2 → [0.4, 0.6]
    lam = afl_lambda_step(torch.tensor([0.5, 0.5], dtype=D), torch.tensor([1.0, 3.0], dtype=D), 0.1)
    assert torch.allclose(lam, torch.tensor([0.4, 0.6], dtype=D))


def test_equal_losses_keep_lambda():
    lam = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    assert torch.allclose(afl_lambda_step(lam, torch.full((3,), 2.0, dtype=D), 0.1), lam)


def test_gradient_rounds_by_hand_and_the_averaged_iterate():
    # all 6 clients; round 1: w1 = w0 − η Σ λ_k ∇F_k(w0) with λ = 1/6, then λ = Proj(1/6 + γ_λ F(w0));
    # the evaluated model is the mean of the iterates w1, w2, w3
    sim = tiny_sim(lr=0.3)
    algo = build_algorithm("afl", sim, {"client_step": "gradient", "lr_lambda": 0.5})
    w0 = algo.w.clone()
    assert list(algo.round(0).selected) == list(range(6))
    grads = sim.engine.gradients(w0, np.arange(6))
    assert (algo.w - (w0 - 0.3 * grads.mean(0))).abs().max() < 1e-12
    losses = sim.engine.losses(w0, np.arange(6), "train")[0]
    expected_lam = project_simplex(torch.full((6,), 1 / 6, dtype=D) + 0.5 * losses)
    assert torch.allclose(algo.state["lam"], expected_lam, atol=1e-14)
    iterates = [algo.w.clone()]
    for t in (1, 2):
        lam, w = algo.state["lam"].clone(), algo.w.clone()
        algo.round(t)
        step = lam @ sim.engine.gradients(w, np.arange(6))
        assert (algo.w - (w - 0.3 * step)).abs().max() < 1e-12
        iterates.append(algo.w.clone())
    assert (algo.eval_params() - torch.stack(iterates).mean(0)).abs().max() < 1e-12


def test_fixed_lambda_is_fedavg_with_full_participation():
    a = build_algorithm("fedavg", tiny_sim(clients_per_round=6), {"weighting": "uniform"})
    b = build_algorithm("afl", tiny_sim(clients_per_round=6), {"lr_lambda": 0.0})
    run_rounds(a, 3), run_rounds(b, 3)
    assert (a.w - b.w).abs().max() < 1e-12
    assert torch.allclose(b.state["lam"], torch.full((6,), 1 / 6, dtype=D))


def test_lambda_moves_to_the_worst_client():
    sim = tiny_sim()
    algo = build_algorithm("afl", sim, {"lr_lambda": 0.1})
    losses = sim.engine.losses(algo.w, None, "train")[0]
    algo.round(0)
    assert int(algo.state["lam"].argmax()) == int(losses.argmax())


@pytest.mark.parametrize(
    "params,field",
    [
        ({"lr_lambda": -0.1}, "lr_lambda"),
        ({"lr_lambda": float("nan")}, "lr_lambda"),
        ({"client_step": "adam"}, "client_step must be one of"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("afl", tiny_sim(), params)


def test_with_dropouts_lambda_is_renormalised_and_the_losses_estimated_from_the_reporting_clients():
    # 3 of 6 report: w1 = w0 − η Σ_{k∈R} (λ_k / Σ_R λ) ∇F_k(w0); λ = Proj(λ + γ_λ F̂), F̂ = (6/3) F on R,
    # 0 off R
    sim = tiny_sim(lr=0.3, faults=FaultConfig(rate=0.5))
    algo = build_algorithm("afl", sim, {"client_step": "gradient", "lr_lambda": 0.5})
    w0 = algo.w.clone()
    out = algo.round(0)
    reporting = out.selected[~sim.faults(0, out.selected).failed]
    assert len(reporting) == 3 and out.diagnostics["faults"]["uploaded"] == 3
    assert (algo.w - (w0 - 0.3 * sim.engine.gradients(w0, reporting).mean(0))).abs().max() < 1e-12
    estimate = torch.zeros(6, dtype=D)
    estimate[reporting] = 2.0 * sim.engine.losses(w0, reporting, "train")[0]
    expected_lam = project_simplex(torch.full((6,), 1 / 6, dtype=D) + 0.5 * estimate)
    assert torch.allclose(algo.state["lam"], expected_lam, atol=1e-14)
