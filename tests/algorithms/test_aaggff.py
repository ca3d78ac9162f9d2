import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.aaggff import (
    CDFS,
    AAggFFHyper,
    aaggff_decision,
    aaggff_gradient,
    aaggff_responses,
)
from tests.algorithms.conftest import tiny_sim
from tests.rounding import assert_close, reduction_tolerance

D = torch.float64


def t64(values):
    return torch.tensor(values, dtype=D)


# The by-hand values below are printed to 6 decimals: their tolerance of 1e-6 is that printing, not rounding
# error, and is kept.


def test_responses_by_hand():
    # F = (1, 3), mean 2 → u = (½, 3/2); C = ½
    # normal: ½ Φ(∓½) = ½ (0.308538, 0.691462)
    assert torch.allclose(aaggff_responses(t64([1.0, 3.0]), 0.5), t64([0.154269, 0.345731]), atol=1e-6)
    # the official code's normal branch: ½ (1.5 − Φ(u − 1)) decreases with the loss
    as_coded = aaggff_responses(t64([1.0, 3.0]), 0.5, "normal_as_coded")
    assert torch.allclose(as_coded, t64([0.595731, 0.404269]), atol=1e-6)
    # Weibull: ½ (1 − e^{−u²}) = ½ (0.221199, 0.894601)
    weibull = aaggff_responses(t64([1.0, 3.0]), 0.5, "weibull")
    assert torch.allclose(weibull, t64([0.110600, 0.447300]), atol=1e-6)


def test_every_cdf_but_the_coded_normal_increases_with_the_loss():
    u = torch.linspace(0.2, 3.0, 15, dtype=D)
    for name, cdf in CDFS.items():
        values = cdf(u)
        assert ((values >= 0) & (values <= 1.5)).all(), name
        steps = values.diff()
        assert (steps < 0).all() if name == "normal_as_coded" else (steps > 0).all(), name


def test_standard_doubly_robust_gradient_by_hand():
    # m = 4, S = {0, 1}, C = ½, p = C·1, responses r = (0.154269, 0.345731): r̄ = ¼,
    # r̃ = r̄ + (r − r̄)/C on S = (0.058538, 0.441462, ¼, ¼), d = 1 + 2·¼ = 3/2, ⟨p, r̃ − r̄⟩ = ½ · 0 = 0
    # ∇ = −r̃/d = (−0.039025, −0.294308, −1/6, −1/6)
    responses = aaggff_responses(t64([1.0, 3.0]), 0.5)
    grad = aaggff_gradient(torch.full((4,), 0.5, dtype=D), responses, np.array([0, 1]), 0.5)
    assert torch.allclose(grad, t64([-0.039025, -0.294308, -1 / 6, -1 / 6]), atol=1e-6)
    assert AAggFFHyper().dr_estimate == "standard"


def test_gradient_as_coded_and_decision_by_hand():
    # the official code's estimate drops r̄ on S: r̃ = (−0.191462, 0.191462, ¼, ¼), ⟨p, r̃ − r̄⟩ = ½ (−½) = −¼
    # ∇ = −r̃/d + r̄ (−¼)/d² = (0.099864, −0.155419, −0.194444, −0.194444)
    responses = aaggff_responses(t64([1.0, 3.0]), 0.5)
    grad = aaggff_gradient(torch.full((4,), 0.5, dtype=D), responses, np.array([0, 1]), 0.5, "as_coded")
    assert torch.allclose(grad, t64([0.099864, -0.155419, -0.194444, -0.194444]), atol=1e-6)
    # p ∝ exp(−∇ √(log 4) / (√2 · 2.5)) at round 0 (the code's round 1)
    p = aaggff_decision(grad, 0, 0.5)
    assert torch.allclose(p, t64([0.232846, 0.253507, 0.256823, 0.256823]), atol=1e-6)
    # the FTRL step shrinks as 1/√(t + 2): a later round moves p less from uniform
    assert float(aaggff_decision(grad, 98, 0.5).max()) < float(p.max())


def test_round_by_hand():
    sim = tiny_sim()  # 3 of 6 clients: C = ½
    algo = build_algorithm("aaggff", sim, {})
    w0, clients = algo.w.clone(), algo.configure(0).clients
    losses = sim.engine.losses(w0, clients)[0]
    grad = aaggff_gradient(torch.full((6,), 0.5, dtype=D), aaggff_responses(losses, 0.5), clients, 0.5)
    p = aaggff_decision(grad, 0, 0.5)[clients]
    local = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    out = algo.round(0)
    # the server's average vs the same formula by hand: the normalising sum and the weighted sum of 3 clients'
    # updates (3 terms), then the step
    assert_close(algo.w, w0 + (p / p.sum()) @ (local - w0), terms=3, depth=3, what="global model")
    assert torch.equal(algo.state["cum_grad"], grad)  # 0 + the same function of the same losses: identical
    # entropy of 3 weights at most log 3, up to the rounding of the normalising sum and the entropy's (3
    # terms)
    assert out.diagnostics["weights_entropy"] <= math.log(3) * (1 + reduction_tolerance(terms=3, depth=2))


def test_bad_cdf_names_the_field():
    with pytest.raises(ValueError, match="cdf must be one of"):
        build_algorithm("aaggff", tiny_sim(), {"cdf": "cauchy"})
    with pytest.raises(ValueError, match=r"dr_estimate must be one of \('standard', 'as_coded'\)"):
        build_algorithm("aaggff", tiny_sim(), {"dr_estimate": "code"})
