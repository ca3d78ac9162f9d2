import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedopt import (
    FedAdamHyper,
    FedAMSGradHyper,
    ServerOptimizer,
    adagrad_server_step,
    adam_server_step,
    amsgrad_server_step,
    yogi_server_step,
)
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close

NAMES = ["fedadagrad", "fedadam", "fedyogi", "fedamsgrad"]


def by_hand(steps: int) -> dict:
    """The server steps vs values by hand, coordinate by coordinate: elementwise arithmetic only (no sums),
    each operation rounding once (terms 1), about 6 operations a step (the moments' products and sums, the
    square root, the denominator, the quotient, the step), and as many again for the literals' own."""
    return dict(terms=1, depth=2 * 6 * steps)


def t(*values):
    return torch.tensor(values, dtype=torch.float64)


def test_adam_one_and_two_steps_by_hand():
    # β1 = 0.5, β2 = 0.75, τ = 0.5, η = 1, m = v = 0, w = [1, −2]
    # step 1, Δ = [2, −4]: m = 0.5Δ = [1, −2]; v = 0.25Δ² = [1, 4]; √v = [1, 2]
    #   w = [1 + 1/1.5, −2 − 2/2.5] = [5/3, −2.8]
    # step 2, Δ = [0, 2]: m = 0.5[1, −2] + 0.5[0, 2] = [0.5, 0]; v = 0.75[1, 4] + 0.25[0, 4] = [0.75, 4]
    #   w = [5/3 + 0.5/(√0.75 + 0.5), −2.8]
    hp = dict(lr=1.0, beta1=0.5, beta2=0.75, tau=0.5)
    w, m, v = adam_server_step(t(1, -2), t(2, -4), t(0, 0), t(0, 0), **hp)
    assert_close(m, t(1, -2), **by_hand(1), what="m")
    assert_close(v, t(1, 4), **by_hand(1), what="v")
    assert_close(w, t(5 / 3, -2.8), **by_hand(1), what="w")
    w, m, v = adam_server_step(w, t(0, 2), m, v, **hp)
    assert_close(m, t(0.5, 0), **by_hand(2), what="m")
    assert_close(v, t(0.75, 4), **by_hand(2), what="v")
    assert_close(w, t(5 / 3 + 0.5 / (math.sqrt(0.75) + 0.5), -2.8), **by_hand(2), what="w")


def test_adagrad_one_and_two_steps_by_hand():
    # β1 = 0.5, τ = 0.5, η = 1, v_{−1} = τ² = 0.25, w = [0, 0]
    # step 1, Δ = [1.2, −2/3]: m = [0.6, −1/3]; v = 0.25 + Δ² = [1.69, 25/36]; √v = [1.3, 5/6]
    #   w = [0.6/1.8, (−1/3)/(4/3)] = [1/3, −1/4]
    # step 2, Δ = [8.4, 0]: m = 0.5[0.6, −1/3] + 0.5[8.4, 0] = [4.5, −1/6]
    #   v = [1.69 + 70.56, 25/36] = [72.25, 25/36]
    #   √v = [8.5, 5/6]; w = [1/3 + 4.5/9, −1/4 − (1/6)/(4/3)] = [5/6, −3/8]
    hp = dict(lr=1.0, beta1=0.5, tau=0.5)
    w, m, v = adagrad_server_step(t(0, 0), t(1.2, -2 / 3), t(0, 0), t(0.25, 0.25), **hp)
    assert_close(v, t(1.69, 25 / 36), **by_hand(1), what="v")
    assert_close(w, t(1 / 3, -1 / 4), **by_hand(1), what="w")
    w, m, v = adagrad_server_step(w, t(8.4, 0), m, v, **hp)
    assert_close(m, t(4.5, -1 / 6), **by_hand(2), what="m")
    assert_close(v, t(72.25, 25 / 36), **by_hand(2), what="v")
    assert_close(w, t(5 / 6, -3 / 8), **by_hand(2), what="w")


def test_yogi_one_and_two_steps_by_hand():
    # β1 = 0.5, β2 = 0.75, τ = 0.5, η = 1, v_{−1} = 0.25, w = [0, 0]
    # step 1, Δ = [0.75, −0.28]: Δ² = [0.5625, 0.0784]; sign(v − Δ²) = [−1, +1]
    #   v = 0.25 + 0.25·[0.5625, −0.0784] = [0.390625, 0.2304] (v grows where Δ² > v, shrinks elsewhere)
    #   √v = [0.625, 0.48]; m = [0.375, −0.14]; w = [0.375/1.125, −0.14/0.98] = [1/3, −1/7]
    #   (Adam would give v = 0.75·0.25 + 0.25Δ² = [0.328125, 0.2071]: Yogi's change is additive)
    # step 2, Δ = [0.625, 0]: Δ² = [0.390625, 0] so sign(v − Δ²) = [0, +1] and v stays put
    #   m = [0.5, −0.07]; w = [1/3 + 0.5/1.125, −1/7 − 0.07/0.98] = [7/9, −3/14]
    hp = dict(lr=1.0, beta1=0.5, beta2=0.75, tau=0.5)
    w, m, v = yogi_server_step(t(0, 0), t(0.75, -0.28), t(0, 0), t(0.25, 0.25), **hp)
    assert_close(v, t(0.390625, 0.2304), **by_hand(1), what="v")
    assert_close(w, t(1 / 3, -1 / 7), **by_hand(1), what="w")
    w, m, v = yogi_server_step(w, t(0.625, 0), m, v, **hp)
    assert_close(v, t(0.390625, 0.2304), **by_hand(2), what="v")
    assert_close(m, t(0.5, -0.07), **by_hand(2), what="m")
    assert_close(w, t(7 / 9, -3 / 14), **by_hand(2), what="w")


def test_amsgrad_one_and_two_steps_by_hand():
    # β1 = 0.5, β2 = 0.75, ε = 0.09, η = 1, m = v = v̂ = 0, w = [0, 0]
    # step 1, Δ = [0.8, −1.75]: m = [0.4, −0.875]; v = 0.25Δ² = [0.16, 0.765625] = v̂
    #   √(v̂ + ε) = [0.5, 0.925]; w = [0.8, −0.875/0.925] = [0.8, −35/37]
    # step 2, Δ = [0, 2]: m = [0.2, 0.5625]; v = 0.75[0.16, 0.765625] + 0.25[0, 4] = [0.12, 1.57421875]
    #   v̂ = max elementwise = [0.16 (kept: v fell), 1.57421875 (new: v rose)]
    #   w = [0.8 + 0.2/0.5, −35/37 + 0.5625/√1.66421875] = [1.2, ·]
    hp = dict(lr=1.0, beta1=0.5, beta2=0.75, tau=0.09)
    zero = t(0, 0)
    w, m, v, v_hat = amsgrad_server_step(zero, t(0.8, -1.75), zero, zero, zero, **hp)
    assert_close(v_hat, t(0.16, 0.765625), **by_hand(1), what="v̂")
    assert_close(w, t(0.8, -35 / 37), **by_hand(1), what="w")
    w, m, v, v_hat = amsgrad_server_step(w, t(0, 2), m, v, v_hat, **hp)
    assert_close(v, t(0.12, 1.57421875), **by_hand(2), what="v")
    assert_close(v_hat, t(0.16, 1.57421875), **by_hand(2), what="v̂")
    assert_close(w, t(1.2, -35 / 37 + 0.5625 / math.sqrt(1.66421875)), **by_hand(2), what="w")


def test_amsgrad_max_stabilization_by_hand():
    # β1 = 0.5, β2 = 0.75, ε = 0.09: Δ = [0.4, −1.75] → v = [0.04, 0.765625]
    # v̂ = max(0, v, ε) = [0.09, 0.765625]; √v̂ = [0.3, 0.875]; m = [0.2, −0.875] → w = [2/3, −1]
    zero = t(0, 0)
    w, _, v, v_hat = amsgrad_server_step(
        zero,
        t(0.4, -1.75),
        zero,
        zero,
        zero,
        lr=1.0,
        beta1=0.5,
        beta2=0.75,
        tau=0.09,
        variant="max_stabilization",
    )
    assert_close(v, t(0.04, 0.765625), **by_hand(1), what="v")
    assert_close(v_hat, t(0.09, 0.765625), **by_hand(1), what="v̂")
    assert_close(w, t(2 / 3, -1), **by_hand(1), what="w")


def test_server_optimizer_keeps_its_moments_in_the_state_by_hand():
    # FedAdam's part, η = 1, β1 = 0.5, β2 = 0.75, τ = 0.5, v_{−1} = τ² = 0.25, w = [1, −2], Δ = [2, −4]:
    # m = 0.5Δ = [1, −2]; v = 0.75 · 0.25 + 0.25Δ² = [1.1875, 4.1875]; w + m/(√v + τ)
    adam = ServerOptimizer(adam_server_step)
    hp = FedAdamHyper(server_lr=1.0, beta1=0.5, beta2=0.75, tau=0.5)
    state = {"w": t(1, -2), **adam.init_state(t(1, -2), hp)}
    assert torch.equal(state["m"], t(0, 0)) and torch.equal(state["v"], t(0.25, 0.25))  # 0.5² is exact
    w = adam.step(state, state["w"], t(2, -4), hp)
    assert_close(state["m"], t(1, -2), **by_hand(1), what="m")
    assert_close(state["v"], t(1.1875, 4.1875), **by_hand(1), what="v")
    expected = t(1 + 1 / (math.sqrt(1.1875) + 0.5), -2 - 2 / (math.sqrt(4.1875) + 0.5))
    assert_close(w, expected, **by_hand(1), what="w")
    assert torch.equal(state["w"], t(1, -2))  # the caller stores w
    # FedAMSGrad's part: three moments, all 0 at AFGA's v_0 = 0, and ``variant`` read from the Hyper; the
    # numbers of test_amsgrad_max_stabilization_by_hand: v̂ = max(0, v, ε) = [0.09, 0.765625], w = [2/3, −1]
    ams = ServerOptimizer(amsgrad_server_step, ("beta1", "beta2", "tau", "variant"), ("m", "v", "v_hat"))
    hp = FedAMSGradHyper(server_lr=1.0, beta1=0.5, beta2=0.75, tau=0.09, variant="max_stabilization")
    state = ams.init_state(t(0, 0), hp)
    assert list(state) == ["m", "v", "v_hat"] and all(torch.equal(x, t(0, 0)) for x in state.values())
    w = ams.step(state, t(0, 0), t(0.4, -1.75), hp)
    assert_close(state["v_hat"], t(0.09, 0.765625), **by_hand(1), what="v̂")
    assert_close(w, t(2 / 3, -1), **by_hand(1), what="w")


def test_no_bias_correction():
    """torch.optim.Adam (bias-corrected, v_0 = 0) on the gradient −Δ gives a different step than FedAdam."""
    lr, b1, b2, tau = 1.0, 0.5, 0.75, 0.5
    w0, delta = t(1, -2), t(2, -4)
    p = torch.nn.Parameter(w0.clone())
    opt = torch.optim.Adam([p], lr=lr, betas=(b1, b2), eps=tau)
    p.grad = -delta
    opt.step()
    # bias-corrected: m̂ = m/(1 − β1) = Δ, √v̂ = √(v/(1 − β2)) = |Δ| → w0 + [2/2.5, −4/4.5]
    corrected = w0 + t(2 / 2.5, -4 / 4.5)
    assert_close(p.detach(), corrected, **by_hand(1), what="torch.optim.Adam")  # its own elementwise steps
    ours, _, _ = adam_server_step(w0, delta, t(0, 0), t(0, 0), lr=lr, beta1=b1, beta2=b2, tau=tau)
    # m = 0.5Δ, √v = 0.5|Δ|: no 1/(1 − β^t) factors
    assert_close(ours, w0 + t(1 / 1.5, -2 / 2.5), **by_hand(1), what="FedAdam")
    assert not torch.allclose(ours, corrected, atol=1e-3)  # apart by 0.13 and more: far beyond rounding


def test_amsgrad_v_hat_is_a_running_elementwise_max():
    gen = torch.Generator().manual_seed(0)
    m = v = v_hat = torch.zeros(50, dtype=torch.float64)
    w = torch.zeros_like(m)
    previous = v_hat
    for step in range(30):
        delta = torch.randn(50, generator=gen, dtype=torch.float64) * (3.0 if step == 5 else 0.3)
        w, m, v, v_hat = amsgrad_server_step(w, delta, m, v, v_hat, lr=0.1, beta1=0.9, beta2=0.99, tau=1e-8)
        assert torch.equal(v_hat, torch.maximum(previous, v))
        assert (v_hat >= previous).all()
        previous = v_hat
    assert (v < v_hat).any()  # after the large step, v decays while v̂ keeps its maximum

    algo = build_algorithm("fedamsgrad", tiny_sim())
    seen = [algo.state["v_hat"]]
    for r in range(4):
        algo.round(r)
        assert torch.equal(algo.state["v_hat"], torch.maximum(seen[-1], algo.state["v"]))
        seen.append(algo.state["v_hat"])
    assert (seen[-1] > 0).any()

    stabilized = build_algorithm("fedamsgrad", tiny_sim(), {"variant": "max_stabilization", "tau": 1e-3})
    stabilized.round(0)  # v̂_1 = max(v̂_0 = 0, v_1, ε)
    assert torch.equal(stabilized.state["v_hat"], stabilized.state["v"].clamp_min(1e-3))


def test_default_tau_follows_each_methods_paper():
    # Reddi et al.: τ = 1e-3 for FedAdagrad, FedAdam and FedYogi; FedAMSGrad keeps AFGA's ε = 1e-8
    taus = {name: build_algorithm(name, tiny_sim()).hp.tau for name in NAMES}
    assert taus == {"fedadagrad": 1e-3, "fedadam": 1e-3, "fedyogi": 1e-3, "fedamsgrad": 1e-8}
    # one FedAdam step at the defaults (η 0.01, β1 0.9, β2 0.99, τ 1e-3, v_{−1} = τ²) on Δ = 0.1:
    # m = 0.1 · 0.1 = 0.01, v = 0.99e-6 + 0.01 · 0.01 = 1.0099e-4, w = 0.01 · 0.01 / (√1.0099e-4 + 1e-3)
    adam = build_algorithm("fedadam", tiny_sim())
    w0 = adam.w.clone()
    w = adam.server_optimizer.step(adam.state, w0, torch.full_like(w0, 0.1), adam.hp)
    # one step by hand, read back as w − w0: that difference carries the rounding of w (magnitude |w0|)
    step = torch.full_like(w0, 1e-4 / (math.sqrt(1.0099e-4) + 1e-3))
    assert_close(w - w0, step, **by_hand(1), scale=float(w0.abs().max()) + 0.01, what="step")
    assert (w - w0)[0].item() == pytest.approx(0.0090502, abs=1e-7)  # printed to 7 decimals: not rounding


def test_initial_state_follows_the_papers():
    adam = build_algorithm("fedadam", tiny_sim(), {"tau": 0.1})
    assert torch.equal(adam.state["m"], torch.zeros_like(adam.w))
    # Reddi Alg. 2: v_{−1} = τ², one rounded product, against the literal 0.01 (rounded too)
    assert_close(adam.state["v"], torch.full_like(adam.w, 0.01), terms=1, depth=2, what="v")
    tff = build_algorithm("fedyogi", tiny_sim(), {"initial_accumulator": 0.0})
    assert torch.equal(tff.state["v"], torch.zeros_like(tff.w))
    ams = build_algorithm("fedamsgrad", tiny_sim())
    assert all(torch.equal(ams.state[k], torch.zeros_like(ams.w)) for k in ("m", "v", "v_hat"))  # AFGA Alg. 1


def test_aggregate_uses_the_weighted_pseudo_gradient():
    sim = tiny_sim()
    algo = build_algorithm("fedadagrad", sim, {"weighting": "size", "server_lr": 0.5, "tau": 1.0})
    w = algo.w
    params = torch.stack([w + 1.0, w - 2.0])  # clients 0, 1 hold 7 and 12 samples
    new = server_round(algo, np.array([0, 1]), params).w
    # Δ = 7/19 − 24/19 = −17/19; β1 = 0: m = Δ; v = τ² + Δ² = (19² + 17²)/19²; √v = √650/19
    # w + 0.5 · (−17/19) / (√650/19 + 1) = w − 8.5/(√650 + 19)
    # the updates' differences and their weighted sum of 2 (terms 2), then the step's elementwise operations,
    # of the magnitude of the parameters and updates (|w| + 2)
    scale = float(w.abs().max()) + 2
    assert_close(new, w - 8.5 / (math.sqrt(650) + 19), terms=2, depth=2 + 6, scale=scale, what="w")
    assert_close(algo.state["v"], torch.full_like(w, 650 / 361), terms=2, depth=2 + 3, what="v")  # τ² + Δ²


@pytest.mark.parametrize("tau, v0, fedavg_lr", [(0.25, None, 0.5), (0.25, 1.0, 0.8)])
def test_fedadam_without_moments_is_scaled_fedavg(tau, v0, fedavg_lr):
    # β1 = 0 → m_t = Δ_t; β2 = 1 → v_t = v_{−1} for all t; so w ← w + η/(√v_{−1} + τ) · Δ_t, FedAvg with
    # server lr η/(√v_{−1} + τ): η = 0.25, v_{−1} = τ² → 0.25/0.5 = 0.5; v_{−1} = 1 → 1.0/1.25 = 0.8
    eta = 0.25 if v0 is None else 1.0
    adam = build_algorithm(
        "fedadam",
        tiny_sim(),
        {
            "beta1": 0.0,
            "beta2": 1.0,
            "tau": tau,
            "server_lr": eta,
            "initial_accumulator": v0,
            "weighting": "size",
        },
    )
    avg = build_algorithm("fedavg", tiny_sim(), {"server_lr": fedavg_lr, "weighting": "size"})
    run_rounds(adam, 3), run_rounds(avg, 3)
    # η Δ/(√v + τ) vs FedAvg's η' Δ: the same training and average, scaled in another order (a few ulps), then
    # through the next rounds' training: a first-layer dot product over 16 features (batches of 4) is the
    # longest sum, 7 reductions a local step, 3 steps and 2 for the server a round, 3 rounds
    assert_close(adam.w, avg.w, terms=16, depth=3 * (7 * 3 + 2), what="global model")
    assert not torch.allclose(
        adam.w, build_algorithm("fedavg", tiny_sim()).w
    )  # it did move (beyond rounding)


@pytest.mark.parametrize(
    "name, params, field",
    [
        ("fedadam", {"beta1": 1.0}, "beta1"),
        ("fedyogi", {"beta2": 1.5}, "beta2"),
        ("fedadagrad", {"tau": 0.0}, "tau"),
        ("fedamsgrad", {"initial_accumulator": -1.0}, "initial_accumulator"),
        ("fedamsgrad", {"variant": "adam"}, "variant"),
        ("fedadam", {"server_lr": -0.1}, "server_lr"),
    ],
)
def test_bad_hyperparameters_name_the_field(name, params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm(name, tiny_sim(), params)


def test_fedadagrad_has_no_beta2():
    with pytest.raises(ValueError, match="beta2"):
        build_algorithm("fedadagrad", tiny_sim(), {"beta2": 0.9})
