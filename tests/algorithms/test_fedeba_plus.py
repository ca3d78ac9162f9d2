import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedavg import select_clients
from fairfl_core.algorithms.fedeba_plus import (
    Alignment,
    alignment_diagnostics,
    fair_angle,
    fair_angle_test,
    local_steps,
    model_alignment_update,
    prac_fair_update,
)
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.algorithms.test_fedeba import weights_scale
from tests.rounding import assert_close, reduction_tolerance

D = torch.float64
# A round by hand vs the algorithm's (tiny_sim, τ = 0.5): full-batch losses and gradients sum over a client's
# samples (at most 32); the losses pass through 4 reductions (2 layers, the log-softmax, the mean), a gradient
# through 7 (2 layers and the loss forward and back, the step), the softmax weights and the server's weighted
# sums through 3 more; exp(F/τ) turns the losses' error into a relative one of the weights (weights_scale).
ROUND_TERMS = 32


def t64(values):
    return torch.tensor(values, dtype=D)


@pytest.mark.parametrize(
    "losses,degrees",
    [
        ([1.0, 2.0, 3.0], math.degrees(math.acos(6 / math.sqrt(14 * 3)))),  # 22.2077°
        ([1.0, 0.0], 45.0),  # cos = 1 / (1·√2)
        ([0.0, 0.0, 5.0], math.degrees(math.acos(1 / math.sqrt(3)))),  # 54.7356°
        ([2.0, 2.0, 2.0], 0.0),  # equal losses: exactly fair
        ([0.0, 0.0], 0.0),
    ],
)
def test_fair_angle_by_hand(losses, degrees):
    # atan2 of the std and the mean (sums of at most 3 losses) vs arccos of ⟨L, 1⟩/(‖L‖ √n) by hand: depth 3
    # (the sums, the ratio, the angle), in degrees per radian times the arccos's condition cos φ / sin φ
    # (at most 2.5 here)
    assert_close(fair_angle(losses), degrees, terms=3, depth=3, scale=math.degrees(2.5))


def _arccos_error(cos: float, err: float) -> float:
    """The most arccos can move when its argument ``cos`` moves by ``err``: err / √(1 − c²) at the largest c
    within reach (the mean value theorem), and never more than arccos(1 − err) (its modulus of continuity)."""
    hi = min(cos + err, 1.0)
    first_order = err / math.sqrt(1 - hi**2) if hi < 1 else math.inf
    return min(first_order, math.acos(1 - err))


def test_fair_angle_is_the_arccos_of_alg1_and_its_tangent_the_coefficient_of_variation():
    rng = np.random.default_rng(0)
    for _ in range(50):
        losses = rng.exponential(1.0, size=rng.integers(2, 12))
        cos = losses.sum() / (np.linalg.norm(losses) * math.sqrt(len(losses)))
        phi = fair_angle(losses)
        # cos by hand: the sum, the norm's sum of squares and the ratio of n terms (depth 3); fair_angle's
        # atan2 of the std and mean is well conditioned (an error of that size in radians)
        err = reduction_tolerance(terms=len(losses), depth=3)
        by_hand = math.degrees(math.acos(min(cos, 1.0)))
        assert abs(phi - by_hand) <= math.degrees(_arccos_error(min(cos, 1.0), err) + err)
        # tan φ vs numpy's std / mean: the sums of n terms (depth 3) and the angle's round trip, whose error
        # tan turns into a relative one 1/(sin φ cos φ) times larger
        r = math.radians(phi)
        cv = losses.std() / losses.mean()
        scale = cv * (1 + 1 / (math.sin(r) * math.cos(r)))
        assert_close(math.tan(r), cv, terms=len(losses), depth=4, scale=scale, what="tan φ")
        assert 0 <= phi <= 90  # non-negative losses: θ = 90° never triggers gradient alignment
    # the θ grid in CV terms (spec §2.4): 15° ⇔ CV 0.268, 30° ⇔ 0.577, 45° ⇔ 1 (CVs printed to 4 decimals:
    # the tolerance of 0.01° is theirs, not rounding)
    for theta, cv in [(15, 0.2679), (30, 0.5774), (45, 1.0)]:
        assert fair_angle([1 - cv, 1 + cv]) == pytest.approx(theta, abs=0.01)


def test_fair_angle_test_and_alignment_diagnostics_by_hand():
    losses = t64([1.0, 0.0])  # φ = 45° (cos = 1 / √2)
    plan = fair_angle_test(losses, Alignment(alpha=0.5, theta=40.0))
    assert plan.branch == "gradient" and plan.pre_losses is losses and plan.one_step is None
    assert plan.fair_angle == fair_angle(losses)
    assert fair_angle_test(losses, Alignment(alpha=0.5, theta=50.0)).branch == "model"
    assert fair_angle_test(losses, Alignment(alpha=0.0, theta=0.0)).branch == "none"  # α = 0: FedEBA
    # round t = 3 (4 rounds) with 2 extra exchanges: f = 2/4, cost f / (1 + f) = 1/3 (Table 3)
    diagnostics = alignment_diagnostics(3, plan, 2)
    assert list(diagnostics) == ["fair_angle", "branch", "extra_comms", "extra_cost"]
    assert diagnostics["branch"] == "gradient" and diagnostics["extra_comms"] == 2
    assert_close(diagnostics["extra_cost"], 1 / 3, terms=1, depth=2)


def test_local_steps_by_hand():
    # tiny_sim's clients 0 and 1 hold 7 and 12 samples, batches of 4
    assert local_steps(tiny_sim(), 0, np.array([0, 1])).tolist() == [3, 3]  # K = 3 local steps each
    epochs = tiny_sim(local_steps=None, local_epochs=2)
    assert local_steps(epochs, 0, np.array([0, 1])).tolist() == [4, 6]  # 2 epochs of ⌈7/4⌉, ⌈12/4⌉


@pytest.mark.parametrize("name", ["fedeba+", "prac_fedeba+"])
def test_the_extra_exchange_count_is_the_only_state_beyond_the_model(name):
    algo = build_algorithm(name, tiny_sim(), {"theta": 0.0})
    assert list(algo.state) == ["w", "extra_comms"] and algo.state["extra_comms"] == 0
    run_rounds(algo, 2)
    assert algo.state_dict()["extra_comms"] == (2 if name == "fedeba+" else 0)


def test_model_alignment_update_by_hand():
    # (1 − ½)·(¼[1,0] + ¾[0,2]) + ½·(½[2,2] + ½[4,0]) = (0.125, 0.75) + (1.5, 0.5)
    out = model_alignment_update(
        t64([[1.0, 0.0], [0.0, 2.0]]), t64([0.25, 0.75]), t64([[2.0, 2.0], [4.0, 0.0]]), t64([0.5, 0.5]), 0.5
    )
    # two weighted sums of 2 rows and their combination (depth 2)
    assert_close(out, t64([1.625, 1.25]), terms=2, depth=2)


def test_prac_closed_form_by_hand():
    deltas, p, p_tilde = t64([[1.0, 0.0], [0.0, 2.0]]), t64([0.25, 0.75]), t64([0.5, 0.5])
    # equal K: (1−α) p·Δ + α p̃·Δ = ½(0.25, 1.5) + ½(0.5, 1.0)
    # (the divisions by K, three sums of 2 terms and their combination: depth 3)
    out = prac_fair_update(deltas, p, p_tilde, 0.5, t64([2.0, 2.0]))
    assert_close(out, t64([0.375, 1.25]), terms=2, depth=3)
    # K = (1, 3): ½(0.25, 1.5) + ½·(p·K = 2.5)·(p̃·Δ/K = (0.5, 1/3))
    out = prac_fair_update(deltas, p, p_tilde, 0.5, t64([1.0, 3.0]))
    assert_close(out, t64([0.75, 7 / 6]), terms=2, depth=3)


def test_prac_closed_form_equals_algorithm_3_with_recorded_gradients():
    # Clients run plain GD on F_i(x) = ½‖A_i x − b_i‖²; Alg. 3 line 14 averages the recorded local
    # gradients (Eq. 12), line 15 aligns Δ̂_i = (1 − α)Δ_i − α η K_i g̃, line 16 aggregates with p.
    rng = np.random.default_rng(1)
    eta, alpha, steps = 0.05, 0.7, [3, 5, 4]
    p, p_tilde = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    x_t = rng.normal(size=4)
    deltas, mean_grads = [], []
    for k in steps:
        a, b = rng.normal(size=(6, 4)), rng.normal(size=6)
        x, grads = x_t.copy(), []
        for _ in range(k):
            grads.append(a.T @ (a @ x - b))
            x = x - eta * grads[-1]
        deltas.append(x - x_t)
        mean_grads.append(np.mean(grads, axis=0))
    g_tilde = p_tilde @ np.array(mean_grads)
    aligned = [(1 - alpha) * d - alpha * eta * k * g_tilde for d, k in zip(deltas, steps, strict=True)]
    expected = p @ np.array(aligned)
    out = prac_fair_update(t64(np.array(deltas)), t64(p), t64(p_tilde), alpha, t64(steps))
    # Δ_i accumulated over K_i ≤ 5 GD steps vs −η K_i times their recorded gradients' mean: each step sums 6
    # rows twice (A x − b, Aᵀ r), then the mean over the steps, the 3-term averages and the combination
    assert_close(out, expected, terms=6, depth=2 * 5 + 3, what="aligned update")


@pytest.mark.parametrize("name", ["fedeba+", "prac_fedeba+"])
def test_alpha_zero_is_fedeba_without_extra_communication(name):
    a = build_algorithm("fedeba", tiny_sim(), {"tau": 0.5})
    b = build_algorithm(name, tiny_sim(), {"tau": 0.5, "alpha": 0.0, "theta": 0.0})
    run_rounds(a, 2)
    outs = run_rounds(b, 2)
    assert torch.equal(a.w, b.w)
    assert [o.diagnostics["branch"] for o in outs] == ["none"] * 2
    assert outs[-1].diagnostics["extra_comms"] == 0


@pytest.mark.parametrize("name", ["fedeba+", "prac_fedeba+"])
def test_a_huge_temperature_gives_uniform_weights(name):
    a = build_algorithm(name, tiny_sim(), {"tau": 1e15, "alpha": 0.5})
    b = build_algorithm(name, tiny_sim(), {"entropy_weights": False, "weighting": "uniform", "alpha": 0.5})
    outs = run_rounds(a, 2)
    run_rounds(b, 2)
    # τ = 10¹⁵: weights off uniform by F/τ ≈ 2·10⁻¹⁵ and their rounding, then through the rest of the run
    # (2 rounds of the weights, one-step alignment gradients and 3 local steps)
    assert_close(a.w, b.w, terms=ROUND_TERMS, depth=2 * (3 + 7 + 7 * 3), what="global model")
    # entropy of 3 weights: the softmax's and the entropy's sums of 3
    assert_close(outs[-1].diagnostics["weights_entropy"], math.log(3), terms=3, depth=3, what="entropy")


def test_theta_controls_the_branch_and_the_extra_communication():
    outs = run_rounds(build_algorithm("fedeba+", tiny_sim(), {"theta": 90.0}), 3)
    assert [o.diagnostics["branch"] for o in outs] == ["model"] * 3  # φ ≤ 90° for losses ≥ 0
    assert outs[-1].diagnostics["extra_comms"] == 0
    outs = run_rounds(build_algorithm("fedeba+", tiny_sim(), {"theta": 0.0}), 3)
    assert [o.diagnostics["branch"] for o in outs] == ["gradient"] * 3
    assert [o.diagnostics["extra_comms"] for o in outs] == [1, 2, 3]
    assert outs[-1].diagnostics["extra_cost"] == 0.5  # Table 3, θ = 0°
    d = outs[-1].diagnostics
    assert d["fair_angle"] > 0 and {"weights_entropy", "tau", "weight_max"} <= d.keys()


@pytest.mark.parametrize("units,scale", [("gradient", 1.0), ("update", 0.2)])
def test_gradient_alignment_round_by_hand(units, scale):
    sim = tiny_sim(lr=0.2)
    params = {"tau": 0.5, "alpha": 0.6, "fair_grad": "full", "fair_grad_units": units}
    algo = build_algorithm("fedeba+", sim, params)
    w0, clients = algo.w.clone(), select_clients(sim, 0, algo.hp)
    losses = sim.engine.losses(w0, clients)[0]
    # "update": g̃ = Σ p̃_i (x_t − x^i_{t,1}) = η Σ p̃_i ∇F_i(x_t), η = 0.2
    g_tilde = scale * torch.softmax(losses / 0.5, 0) @ sim.engine.gradients(w0, clients)
    spec = sim.local_spec(0, mix_alpha=0.6, mix_vector=g_tilde)  # h = 0.4 ∇F_i(x; ξ) + 0.6 g̃
    local = sim.engine.train(clients, w0, spec, sim.seed_for(0, "batches")).params
    post = sim.engine.losses(local, clients)[0]
    out = algo.round(0)
    assert out.diagnostics["branch"] == "gradient"
    assert out.diagnostics["fair_angle"] == fair_angle(losses)  # the same function of the same losses
    # g̃ (the losses, the softmax, the gradients: 4 + 3 + 7), the 3 local steps it enters, the post-training
    # losses, the weights and the weighted sum
    expected = w0 + torch.softmax(post / 0.5, 0) @ (local - w0)
    scale = weights_scale(w0, local, post, 0.5)
    assert_close(algo.w, expected, terms=ROUND_TERMS, depth=14 + 7 * 3 + 4 + 3, scale=scale, what="w")


@pytest.mark.parametrize("scale,factor", [("one_step", 1.0), ("local_steps", 3.0)])
def test_model_alignment_round_by_hand(scale, factor):
    sim = tiny_sim(lr=0.2)
    params = {"tau": 0.5, "alpha": 0.6, "theta": 90.0, "fair_grad": "full", "model_align_scale": scale}
    algo = build_algorithm("fedeba+", sim, params)
    w0, clients = algo.w.clone(), select_clients(sim, 0, algo.hp)
    local = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    p = torch.softmax(sim.engine.losses(local, clients)[0] / 0.5, 0)
    one_step = -0.2 * factor * sim.engine.gradients(w0, clients)  # x_{t,1} − x_t, full-batch step
    expected = w0 + 0.4 * (p @ (local - w0)) + 0.6 * one_step.mean(0)
    algo.round(0)
    # the one-step updates (a gradient, 7), the weights (the losses, the softmax: 4 + 3) and the sums (2)
    scale = weights_scale(w0, local, sim.engine.losses(local, clients)[0], 0.5)
    assert_close(algo.w, expected, terms=ROUND_TERMS, depth=7 + 7 + 2, scale=scale, what="w")


def test_minibatch_fair_gradient_is_the_full_gradient_when_the_minibatch_holds_all_data():
    # tiny clients hold 7–32 samples: with B = 64 one minibatch is the whole local training set
    a = build_algorithm("fedeba+", tiny_sim(batch_size=64), {"fair_grad": "minibatch", "tau": 0.5})
    b = build_algorithm("fedeba+", tiny_sim(batch_size=64), {"fair_grad": "full", "tau": 0.5})
    run_rounds(a, 2), run_rounds(b, 2)
    # the gradient over the one minibatch (the local training's, the samples in its order) vs the engine's
    # full-batch gradient, then 2 rounds of the alignment (g̃: 4 + 3 + 7), 3 local steps and the weights
    assert_close(a.w, b.w, terms=ROUND_TERMS, depth=2 * (14 + 7 * 3 + 4 + 3), what="global model")


def test_fedavg_plus_alignment_ablation_uses_prior_weights():
    # FedAvg+② (A19): p and p̃ replaced by q; with α = 0 it is FedAvg with the same weighting
    a = build_algorithm("fedavg", tiny_sim(), {"weighting": "size"})
    b = build_algorithm("fedeba+", tiny_sim(), {"entropy_weights": False, "weighting": "size", "alpha": 0.0})
    run_rounds(a, 2), run_rounds(b, 2)
    # the same weights q, FedAvg's vs FedEBA+'s update of 3 clients (2 reductions), then the second round's
    # training: a first-layer dot product over 16 features (batches of 4), 7 reductions a step
    assert_close(a.w, b.w, terms=16, depth=2 * (7 * 3 + 2), what="global model")
    sim = tiny_sim()
    algo = build_algorithm("fedeba+", sim, {"entropy_weights": False, "alpha": 0.5, "fair_grad": "full"})
    w0, clients = algo.w.clone(), select_clients(sim, 0, algo.hp)
    g_tilde = 0.2 * sim.engine.gradients(w0, clients).mean(0)  # the default "update" units: η ∇F, η = 0.2
    spec = sim.local_spec(0, mix_alpha=0.5, mix_vector=g_tilde)
    local = sim.engine.train(clients, w0, spec, sim.seed_for(0, "batches")).params
    algo.round(0)
    # g̃ (the gradients, their mean and η: 7 + 2), the 3 local steps it enters, the average of 3 and the step
    assert_close(algo.w, local.mean(0), terms=ROUND_TERMS, depth=9 + 7 * 3 + 2, what="global model")


@pytest.mark.parametrize("theta,branch", [(0.0, "gradient"), (90.0, "model")])
def test_prac_round_by_hand(theta, branch):
    sim = tiny_sim()
    algo = build_algorithm("prac_fedeba+", sim, {"tau": 0.5, "alpha": 0.6, "theta": theta})
    w0, clients = algo.w.clone(), select_clients(sim, 0, algo.hp)
    local = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    deltas = local - w0
    p = torch.softmax(sim.engine.losses(local, clients)[0] / 0.5, 0)
    if branch == "gradient":  # (1 − α) Σ p_i Δ_i + α Σ p̃_j Δ_j with p̃ from the received model's losses
        aligned = torch.softmax(sim.engine.losses(w0, clients)[0] / 0.5, 0) @ deltas
    else:  # Eq. 8 with Δ̃_i = Δ_i / K, K = 3
        aligned = (deltas / 3).mean(0)
    out = algo.round(0)
    assert out.diagnostics["branch"] == branch
    assert out.diagnostics["extra_comms"] == 0  # same communication as FedAvg
    # the losses (4) and weights (3) of both weightings, and the combination's sums (2)
    scale = weights_scale(w0, local, sim.engine.losses(w0, clients)[0], 0.5)
    scale += weights_scale(w0, local, sim.engine.losses(local, clients)[0], 0.5)
    expected = w0 + 0.4 * (p @ deltas) + 0.6 * aligned
    assert_close(algo.w, expected, terms=ROUND_TERMS, depth=4 + 3 + 2, scale=scale, what="global model")


@pytest.mark.parametrize(
    "name,params,field",
    [
        ("fedeba+", {"alpha": 1.5}, "alpha .alignment weight. must be in"),
        ("fedeba+", {"theta": -1.0}, "theta .fair angle. must be"),
        ("fedeba+", {"fair_grad": "exact"}, "fair_grad must be one of"),
        ("fedeba+", {"fair_grad_units": "lr"}, "fair_grad_units must be one of"),
        ("fedeba+", {"model_align_scale": "K"}, "model_align_scale must be one of"),
        ("prac_fedeba+", {"tau": 0.0}, "tau .EBA temperature."),
        ("prac_fedeba+", {"fair_grad": "full"}, "unknown field"),
    ],
)
def test_bad_hyperparameters_name_the_field(name, params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm(name, tiny_sim(), params)


def test_model_alignment_with_dropouts_averages_the_survivors_only():
    # 2 of 4 drop out after the pre-training exchange: p, Δ_t and Eq. 9's mean of Δ̃^a run over the survivors R
    sim = tiny_sim(lr=0.2, clients_per_round=4, faults=FaultConfig(rate=0.5))
    params = {"tau": 0.5, "alpha": 0.6, "theta": 90.0, "fair_grad": "full"}
    algo = build_algorithm("fedeba+", sim, params)
    w0 = algo.w.clone()
    out = algo.round(0)
    alive = ~sim.faults(0, out.selected).failed
    survivors = out.selected[alive]
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    local = local[torch.as_tensor(alive)]
    p = torch.softmax(sim.engine.losses(local, survivors)[0] / 0.5, 0)
    one_step = -0.2 * sim.engine.gradients(w0, survivors)
    assert len(survivors) == 2 and out.diagnostics["branch"] == "model"
    # as in test_model_alignment_round_by_hand: the one-step updates (7), the weights (4 + 3), the sums (2)
    expected = w0 + 0.4 * (p @ (local - w0)) + 0.6 * one_step.mean(0)
    scale = weights_scale(w0, local, sim.engine.losses(local, survivors)[0], 0.5)
    assert_close(algo.w, expected, terms=ROUND_TERMS, depth=7 + 7 + 2, scale=scale, what="global model")


def test_prac_model_branch_divides_a_stragglers_update_by_the_steps_it_completed():
    # Eq. 8 with Δ̃_i = Δ_i / K_i: K_i = ⌈0.5 · 3⌉ = 2 for the 2 stragglers, 3 for the others
    faults = FaultConfig(rate=0.5, kind="straggler", straggler_work=0.5)
    sim = tiny_sim(clients_per_round=4, faults=faults)
    algo = build_algorithm("prac_fedeba+", sim, {"tau": 0.5, "alpha": 0.6, "theta": 90.0})
    w0 = algo.w.clone()
    out = algo.round(0)
    seed, slow = sim.seed_for(0, "batches"), sim.faults(0, out.selected).failed
    local = sim.engine.train(
        out.selected, w0, sim.local_spec(0), seed, sim.faults(0, out.selected).work
    ).params
    deltas = local - w0
    p = torch.softmax(sim.engine.losses(local, out.selected)[0] / 0.5, 0)
    steps = torch.as_tensor(np.where(slow, 2.0, 3.0), dtype=D)
    assert slow.sum() == 2 and out.diagnostics["branch"] == "model"
    # as in test_prac_round_by_hand: the losses (4) and weights (3), the combination's sums (2)
    expected = w0 + 0.4 * (p @ deltas) + 0.6 * (deltas / steps[:, None]).mean(0)
    scale = weights_scale(w0, local, sim.engine.losses(local, out.selected)[0], 0.5)
    assert_close(algo.w, expected, terms=ROUND_TERMS, depth=4 + 3 + 2, scale=scale, what="global model")
