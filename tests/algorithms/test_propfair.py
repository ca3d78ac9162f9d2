import math

import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.propfair import propfair_objective
from tests.algorithms.conftest import run_rounds, tiny_sim


def _value_and_slope(loss: float, **kw) -> tuple[float, float]:
    f = torch.tensor(loss, dtype=torch.float64, requires_grad=True)
    value = propfair_objective(f, **kw)
    value.backward()
    return float(value.detach()), float(f.grad)


@pytest.mark.parametrize("huber", [False, True])
def test_log_branch_by_hand(huber):
    # M = 2, ε = 0.5, f = 0.5: M − f = 1.5 ≥ ε. L = −log(1 − 0.5/2) = −log 0.75 = 0.2876821…,
    # dL/df = 1/(M − f) = 2/3, whichever continuation
    value, slope = _value_and_slope(0.5, M=2.0, eps=0.5, huber=huber)
    assert value == pytest.approx(0.28768207245178090, abs=1e-15)
    assert slope == pytest.approx(2 / 3, abs=1e-15)


def test_default_continuation_is_loss_over_M():
    # f = 1.8: M − f = 0.2 < ε = 0.5. Official default: L = f/M = 0.9, dL/df = 1/M = 0.5
    assert _value_and_slope(1.8, M=2.0, eps=0.5) == pytest.approx((0.9, 0.5), abs=1e-15)
    # past M itself (the log's argument would be negative): still finite, no NaN from the unused branch
    assert _value_and_slope(3.0, M=2.0, eps=0.5) == pytest.approx((1.5, 0.5), abs=1e-15)


def test_huber_continuation_is_loss_over_eps():
    # f = 1.8: L = f/ε = 3.6, dL/df = 1/ε = 2 (the slope of the paper's −log ε + (f − (M − ε))/ε)
    assert _value_and_slope(1.8, M=2.0, eps=0.5, huber=True) == pytest.approx((3.6, 2.0), abs=1e-15)
    assert _value_and_slope(3.0, M=2.0, eps=0.5, huber=True) == pytest.approx((6.0, 2.0), abs=1e-15)


def test_threshold_is_the_code_test_M_minus_f_below_eps():
    # M = 0.5, ε = 0.25, f = 0.25: M − f = ε exactly (all dyadic, no rounding) → still the log branch:
    # L = −log(1 − 0.5) = log 2, slope 1/(M − f) = 4; just above, f/M with slope 1/M = 2
    assert _value_and_slope(0.25, M=0.5, eps=0.25) == pytest.approx((math.log(2), 4.0), abs=1e-15)
    assert _value_and_slope(0.25 + 2**-20, M=0.5, eps=0.25)[1] == 2.0
    # the Huber continuation keeps the slope 1/ε = 4 across the threshold
    assert _value_and_slope(0.25 + 2**-20, M=0.5, eps=0.25, huber=True)[1] == 4.0


def test_every_positive_loss_is_past_the_threshold_when_M_equals_eps():
    # FedEBA+ Table 1: M = ε = 0.2 → M − f < ε for all f > 0, L = 5 f under both continuations
    for huber in (False, True):
        for f in (1e-6, 0.1, 2.3):
            value, slope = _value_and_slope(f, M=0.2, eps=0.2, huber=huber)
            assert (value, slope) == pytest.approx((5 * f, 5.0), rel=1e-12)


def test_large_M_is_fedavg_with_the_learning_rate_scaled_by_M():
    # dL/df = 1/(M − f) = (1/M)(1 + f/M + …): with lr·M, PropFair's step → FedAvg's step as M → ∞
    M = 1e7
    fedavg = build_algorithm("fedavg", tiny_sim(lr=0.2), {})
    propfair = build_algorithm("propfair", tiny_sim(lr=0.2 * M), {"M": M})
    run_rounds(fedavg, 2), run_rounds(propfair, 2)
    assert torch.allclose(fedavg.w, propfair.w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "M,eps,huber,scale",
    [(0.2, 0.2, False, 5.0), (0.2, 0.2, True, 5.0), (0.2, 0.5, False, 5.0), (0.2, 0.5, True, 2.0)],
)
def test_all_losses_past_the_threshold_is_fedavg_with_a_scaled_lr(M, eps, huber, scale):
    # M − ε ≤ 0: every minibatch takes the continuation, L = f/M (default) or f/ε (huber) → lr·(1/M or 1/ε)
    fedavg = build_algorithm("fedavg", tiny_sim(lr=0.2 * scale), {})
    propfair = build_algorithm("propfair", tiny_sim(lr=0.2), {"M": M, "eps": eps, "huber": huber})
    run_rounds(fedavg, 2), run_rounds(propfair, 2)
    assert torch.allclose(fedavg.w, propfair.w, atol=1e-12)


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="M \\(the PropFair baseline\\) must be positive"):
        build_algorithm("propfair", tiny_sim(), {"M": 0.0})
    with pytest.raises(ValueError, match="eps \\(the PropFair threshold\\) must be positive"):
        build_algorithm("propfair", tiny_sim(), {"eps": -1.0})
    with pytest.raises(ValueError, match="huber.*expected bool"):
        build_algorithm("propfair", tiny_sim(), {"huber": "yes"})
