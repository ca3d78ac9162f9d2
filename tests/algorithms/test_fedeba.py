import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import Uploads
from fairfl_core.algorithms.fedeba import (
    EBAWeighting,
    FedEBAHyper,
    annealed_tau,
    eba_weights,
    weights_entropy,
)
from fairfl_core.sim.faults import RoundFaults
from fairfl_core.sim.local import LocalResult
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close, reduction_tolerance

D = torch.float64
E = math.e


# The softmax of 2 logits vs its closed form: the logits (and log q), the exponentials with the sum of 2 and
# the division, and the closed form's own rounded e: depth 3 of 2 terms.
BY_HAND = dict(terms=2, depth=3)


def test_eba_weights_by_hand():
    # F = [1, 2], τ = 1: p = [e, e²] / (e + e²) = [1/(1+e), e/(1+e)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0)
    assert_close(p, torch.tensor([1 / (1 + E), E / (1 + E)], dtype=D), **BY_HAND)
    # τ = 0.5 doubles the exponent gap: [1/(1+e²), e²/(1+e²)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 0.5)
    assert_close(p, torch.tensor([1 / (1 + E**2), E**2 / (1 + E**2)], dtype=D), **BY_HAND)
    # size prior q = [1/4, 3/4] (Eq. 22): p ∝ [e/4, 3e²/4] → [1/(1+3e), 3e/(1+3e)]
    p = eba_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0, torch.tensor([0.25, 0.75], dtype=D))
    assert_close(p, torch.tensor([1 / (1 + 3 * E), 3 * E / (1 + 3 * E)], dtype=D), **BY_HAND)


def test_eba_weights_do_not_overflow_at_small_temperature():
    # F/τ = [2000, 2020]: exp would overflow; the softmax gives [1/(1+e^20), e^20/(1+e^20)]
    p = eba_weights(torch.tensor([100.0, 101.0]), 0.05)
    assert torch.isfinite(p).all()
    # float32: each logit F/τ ≈ 2020 is rounded by up to u·2020, so their gap moves p_0 by up to 2u·2020
    # relative, and the softmax's exponentials, sum and division add a few u more
    expected = 1 / (1 + math.exp(20))
    assert_close(float(p[0]), expected, terms=1, depth=1, scale=expected * (2020 + 1.5), dtype=torch.float32)


def test_temperature_limits():
    losses = torch.tensor([0.3, 2.0, 1.9], dtype=D)
    uniform = torch.full((3,), 1 / 3, dtype=D)
    prior = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    # τ → ∞: FedAvg (uniform): logits 0, the softmax's sum of 3 and its division
    assert_close(eba_weights(losses, math.inf), uniform, terms=3, depth=2)
    # τ = 10⁹ is uniform only to first order in the loss spread over τ (1.7e-9): a limit, not a rounding bound
    assert torch.allclose(eba_weights(losses, 1e9), uniform, atol=1e-8)
    # … or the prior: log q then exp, the sum of 3 and the division
    assert_close(eba_weights(losses, math.inf, prior), prior, terms=3, depth=3)
    # τ → 0: the max-loss client (AFL-like); 1 − e^{−100} is 1 up to the softmax's sum of 3 and division
    assert float(eba_weights(losses, 1e-3)[1]) >= 1 - reduction_tolerance(terms=3, depth=2)


@pytest.mark.parametrize(
    "schedule,expected",
    # τ_0 = 1, κ = 0.1, t = 10 → 1 + κt = 2
    [("constant", 1.0), ("linear", 0.5), ("concave", 1 / math.sqrt(2)), ("convex", 0.125)],
)
def test_annealing_schedules_by_hand(schedule, expected):
    # κ t, the power and the division, elementwise, vs the literal
    assert_close(annealed_tau(1.0, 10, schedule, 0.1), expected, terms=1, depth=3)
    assert annealed_tau(5.0, 0, schedule, 0.1) == 5.0  # round 0 (the paper's t = 1) starts at τ_0


def test_entropies_by_hand():
    # −Σ p log p: the logarithms and the sum of 4 terms
    assert_close(weights_entropy(torch.full((4,), 0.25, dtype=D)), math.log(4), terms=4, depth=2)
    assert weights_entropy(torch.tensor([1.0, 0.0, 0.0], dtype=D)) == 0.0


def test_eba_weighting_by_hand():
    # tiny_sim's clients 1 and 5 hold 12 and 32 samples: the size prior q = [3/11, 8/11] (Eq. 22); their
    # last-epoch losses F = [2, 1]; τ_1 = 2 / (1 + 1·1) = 1 (linear annealing, κ = 1)
    hp = FedEBAHyper(
        weighting="size",
        tau=2.0,
        tau_schedule="linear",
        tau_kappa=1.0,
        loss_eval="last_epoch_avg",
        server_lr=0.5,
    )
    eba, w, clients = EBAWeighting(tiny_sim(), hp), torch.tensor([1.0, 1.0], dtype=D), np.array([1, 5])
    uploads = Uploads(
        clients,
        LocalResult(torch.zeros(2, 2, dtype=D), torch.tensor([2.0, 1.0], dtype=D)),
        np.array([3, 3]),
        RoundFaults.none(clients),
    )
    assert eba.tau(1) == 1.0
    # n_i / Σ n: one sum of 2 and the division
    assert_close(eba.prior(clients, w), torch.tensor([3 / 11, 8 / 11], dtype=D), terms=2, depth=1)
    # p ∝ q e^F = [3e²/11, 8e/11] → [3e, 8] / (3e + 8); log q added to the logits (one more rounding)
    p, diagnostics = eba.round_weights(1, uploads, w)
    expected = torch.tensor([3 * E / (3 * E + 8), 8 / (3 * E + 8)], dtype=D)
    assert_close(p, expected, **BY_HAND)
    assert list(diagnostics) == ["tau", "weights_entropy", "weight_max", "post_loss_max"]
    assert diagnostics["tau"] == 1.0 and diagnostics["post_loss_max"] == 2.0
    assert_close(diagnostics["weight_max"], 3 * E / (3 * E + 8), **BY_HAND)
    # −Σ p log p: p's roundings (depth 3) times dH/dp_i = −(log p_i + 1), then the logs and the sum of 2
    entropy = -float((expected * expected.log()).sum())
    assert_close(diagnostics["weights_entropy"], entropy, terms=2, depth=3 + 2, scale=1 + entropy)
    # x_t + η Δ_t = [1, 1] + ½ [2, −4]: exact
    update = eba.update(w, torch.tensor([2.0, -4.0], dtype=D), p, diagnostics)
    assert torch.equal(update.w, torch.tensor([2.0, -1.0], dtype=D))
    assert update.weights is p and update.server_lr == 0.5 and update.diagnostics is diagnostics
    # without entropy_weights the weights are q whatever the losses (FedAvg+②)
    flat = EBAWeighting(tiny_sim(), FedEBAHyper(weighting="size", entropy_weights=False))
    assert torch.equal(flat.weights(0, clients, torch.tensor([9.0, 0.0], dtype=D), w), flat.prior(clients, w))


def weights_scale(w0: torch.Tensor, local: torch.Tensor, losses: torch.Tensor, tau: float) -> float:
    """The magnitude behind the server's x + Σ p_i Δ_i: the parameters, and the updates Δ_i times twice the
    largest logit F/τ, the factor by which exp(F/τ) turns an error of the losses into a relative one of
    the weights (δp_i = p_i (δℓ_i − Σ_j p_j δℓ_j))."""
    return float(w0.abs().max()) + 2 * float(losses.abs().max()) / tau * float((local - w0).abs().max())


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
    # each client's loss alone vs the engine's stacked evaluation: 4 reductions (2 layers, the log-softmax,
    # the mean over at most 32 samples), then the softmax and the weighted sum of 3 updates and the step (3
    # more)
    scale = weights_scale(w0, local, post, 0.5)
    assert_close(algo.w, w0 + p @ (local - w0), terms=32, depth=4 + 3, scale=scale, what="global model")


def test_last_epoch_average_uses_the_local_minibatch_losses():
    sim = tiny_sim()
    algo = build_algorithm("fedeba", sim, {"tau": 0.5, "loss_eval": "last_epoch_avg"})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    res = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches"))
    p = torch.softmax(res.train_loss / 0.5, 0)
    # the same training and losses; the algorithm adds log q to the logits (one rounding), then the softmax's
    # sum of 3 and the weighted sum of 3 updates and the step
    scale = weights_scale(w0, res.params, res.train_loss, 0.5)
    assert_close(algo.w, w0 + p @ (res.params - w0), terms=3, depth=3, scale=scale, what="global model")


@pytest.mark.parametrize("weighting", ["uniform", "size"])
def test_a_huge_temperature_is_fedavg(weighting):
    a = build_algorithm("fedavg", tiny_sim(), {"weighting": weighting})
    b = build_algorithm("fedeba", tiny_sim(), {"weighting": weighting, "tau": 1e15})
    run_rounds(a, 3), run_rounds(b, 3)
    # τ = 10¹⁵ moves the weights off q by F/τ ≈ 2·10⁻¹⁵ relative, within one reduction's rounding: weights a
    # few ulps apart, averaged over 3 clients, then through the next rounds' training: the longest sum a
    # first-layer dot product over 16 features (batches of 4), 7 reductions a local step, 3 steps, the weights
    # and the average a round, 3 rounds
    assert_close(a.w, b.w, terms=16, depth=3 * (7 * 3 + 2), what="global model")


def test_annealed_temperature_and_diagnostics():
    algo = build_algorithm("fedeba", tiny_sim(), {"tau": 2.0, "tau_schedule": "linear", "tau_kappa": 1.0})
    outs = run_rounds(algo, 3)
    assert [o.diagnostics["tau"] for o in outs] == [2.0, 1.0, 2 / 3]  # 2 / (1 + t): one rounded division
    d = outs[-1].diagnostics
    # entropy of 3 weights at most log 3, up to the rounding of the softmax's sum and the entropy's (3 terms)
    assert 0 < d["weights_entropy"] <= math.log(3) * (1 + reduction_tolerance(terms=3, depth=2))
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
