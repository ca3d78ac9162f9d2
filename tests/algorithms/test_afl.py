import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.afl import afl_lambda_step, project_simplex
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close, reduction_tolerance

D = torch.float64
# A full-batch gradient of the tiny MLP sums over a client's samples, at most 32 (the largest tiny client),
# through 7 reductions (2 layers and the loss forward and back, the step); the server then mixes 6 clients.
GRADIENT_STEP = dict(terms=32, depth=7 + 2)


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
    # the projection's cumulative sum (at most 3 terms of v and the −1) and the shift v − τ vs the exact
    # result: depth 2, of magnitude Σ|v| + 1
    x = project_simplex(torch.tensor(v, dtype=D))
    assert_close(x, torch.tensor(expected, dtype=D), terms=3, depth=2, scale=sum(map(abs, v)) + 1)


def test_simplex_projection_satisfies_the_kkt_conditions():
    # x = Proj(v) ⟺ x ∈ Δ and v − x = τ on supp(x), v ≤ τ off it
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = torch.as_tensor(rng.normal(size=7) * 2, dtype=D)
        x = project_simplex(v)
        # Σx = 1 up to the cumulative sum of 7 terms, the shift and this sum: depth 3, magnitude Σ|v| + 1
        assert (x >= 0).all()
        assert_close(x.sum(), 1.0, terms=7, depth=3, scale=float(v.abs().sum()) + 1, what="sum")
        on = x > 0
        tau = (v - x)[on]
        # v − (v − τ): two roundings of elementwise differences (terms 1, depth 2) of magnitude |v| + |τ|
        scale = float(v.abs().max() + tau.abs().max())
        assert_close(tau, tau[0].expand_as(tau), terms=1, depth=2, scale=scale, what="tau")
        assert (v[~on] <= tau[0] + reduction_tolerance(terms=1, depth=2) * scale).all()


def test_lambda_step_by_hand():
    # λ + 0.1·[1, 3] = [0.6, 0.8] → ρ = 2, τ = (1.4 − 1)/2 = 0.2 → [0.4, 0.6]
    lam = afl_lambda_step(torch.tensor([0.5, 0.5], dtype=D), torch.tensor([1.0, 3.0], dtype=D), 0.1)
    # the step's cumulative sum of 2 terms and the shift vs the exact result, of magnitude 0.6 + 0.8 + 1
    assert_close(lam, torch.tensor([0.4, 0.6], dtype=D), terms=2, depth=2, scale=2.4)


def test_equal_losses_keep_lambda():
    lam = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    # the step's cumulative sum of 3 terms and the shift vs λ itself, of magnitude Σ(λ + 0.2) + 1
    assert_close(afl_lambda_step(lam, torch.full((3,), 2.0, dtype=D), 0.1), lam, terms=3, depth=2, scale=2.6)


def test_gradient_rounds_by_hand_and_the_averaged_iterate():
    # all 6 clients; round 1: w1 = w0 − η Σ λ_k ∇F_k(w0) with λ = 1/6, then λ = Proj(1/6 + γ_λ F(w0));
    # the evaluated model is the mean of the iterates w1, w2, w3
    sim = tiny_sim(lr=0.3)
    algo = build_algorithm("afl", sim, {"client_step": "gradient", "lr_lambda": 0.5})
    w0 = algo.w.clone()
    assert list(algo.round(0).selected) == list(range(6))
    grads = sim.engine.gradients(w0, np.arange(6))
    # the local trainer's step mixed by the server vs the engine's gradients averaged by hand
    assert_close(algo.w, w0 - 0.3 * grads.mean(0), **GRADIENT_STEP, what="w1")
    losses = sim.engine.losses(w0, np.arange(6), "train")[0]
    expected_lam = project_simplex(torch.full((6,), 1 / 6, dtype=D) + 0.5 * losses)
    assert torch.equal(algo.state["lam"], expected_lam)  # the same losses (same call) through the same steps
    iterates = [algo.w.clone()]
    for t in (1, 2):
        lam, w = algo.state["lam"].clone(), algo.w.clone()
        algo.round(t)
        step = lam @ sim.engine.gradients(w, np.arange(6))
        assert_close(algo.w, w - 0.3 * step, **GRADIENT_STEP, what=f"w{t + 1}")  # as above
        iterates.append(algo.w.clone())
    # the running average (c w̄ + w)/(c + 1) of 3 iterates vs their mean: 3 terms, 3 updates
    assert_close(algo.eval_params(), torch.stack(iterates).mean(0), terms=3, depth=3, what="averaged iterate")


def test_fixed_lambda_is_fedavg_with_full_participation():
    a = build_algorithm("fedavg", tiny_sim(clients_per_round=6), {"weighting": "uniform"})
    b = build_algorithm("afl", tiny_sim(clients_per_round=6), {"lr_lambda": 0.0})
    run_rounds(a, 3), run_rounds(b, 3)
    # FedAvg's uniform weights vs λ: the same local training, averages of 6 clients with weights apart by a
    # few ulps, whose difference then goes through the next rounds' training: the longest sum a first-layer
    # dot product over 16 features (batches of 4), 7 reductions a local step, 3 steps and the average a round
    assert_close(a.w, b.w, terms=16, depth=3 * (7 * 3 + 1), what="global model")
    # λ projected 3 times: a cumulative sum of 6 terms (of magnitude Σλ + 1 = 2) and the shift each
    assert_close(b.state["lam"], torch.full((6,), 1 / 6, dtype=D), terms=6, depth=3 * 2, scale=2.0, what="λ")


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
    # as in test_gradient_rounds_by_hand_and_the_averaged_iterate, with λ renormalised over 3
    assert_close(algo.w, w0 - 0.3 * sim.engine.gradients(w0, reporting).mean(0), **GRADIENT_STEP, what="w1")
    estimate = torch.zeros(6, dtype=D)
    estimate[reporting] = 2.0 * sim.engine.losses(w0, reporting, "train")[0]
    expected_lam = project_simplex(torch.full((6,), 1 / 6, dtype=D) + 0.5 * estimate)
    assert torch.equal(algo.state["lam"], expected_lam)  # the same losses (same call) through the same steps
