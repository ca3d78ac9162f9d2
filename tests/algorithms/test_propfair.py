import math

import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.propfair import propfair_objective
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


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
    # the logarithm and the quotient round once (0.25 and 0.75 are exact), as do the 17-digit literal and 2/3
    assert_close(value, 0.28768207245178090, terms=1, depth=2, what="value")
    assert_close(slope, 2 / 3, terms=1, depth=2, what="slope")


def test_default_continuation_is_loss_over_M():
    # f = 1.8: M − f = 0.2 < ε = 0.5. Official default: L = f/M = 0.9, dL/df = 1/M = 0.5
    # (halving is exact: 1.8/2 is the double nearest 0.9)
    assert _value_and_slope(1.8, M=2.0, eps=0.5) == (0.9, 0.5)
    # past M itself (the log's argument would be negative): still finite, no NaN from the unused branch
    assert _value_and_slope(3.0, M=2.0, eps=0.5) == (1.5, 0.5)


def test_huber_continuation_is_loss_over_eps():
    # f = 1.8: L = f/ε = 3.6, dL/df = 1/ε = 2 (the slope of the paper's −log ε + (f − (M − ε))/ε)
    # (dividing by 0.5 doubles, exactly: 1.8·2 is the double nearest 3.6)
    assert _value_and_slope(1.8, M=2.0, eps=0.5, huber=True) == (3.6, 2.0)
    assert _value_and_slope(3.0, M=2.0, eps=0.5, huber=True) == (6.0, 2.0)


def test_threshold_is_the_code_test_M_minus_f_below_eps():
    # M = 0.5, ε = 0.25, f = 0.25: M − f = ε exactly (all dyadic, no rounding) → still the log branch:
    # L = −log(1 − 0.5) = log 2, slope 1/(M − f) = 4; just above, f/M with slope 1/M = 2
    value, slope = _value_and_slope(0.25, M=0.5, eps=0.25)
    assert_close(value, math.log(2), terms=1, depth=2, what="value")  # −log 0.5 vs log 2: one rounding each
    assert slope == 4.0  # 1/(0.5 − 0.25): exact
    assert _value_and_slope(0.25 + 2**-20, M=0.5, eps=0.25)[1] == 2.0
    # the Huber continuation keeps the slope 1/ε = 4 across the threshold
    assert _value_and_slope(0.25 + 2**-20, M=0.5, eps=0.25, huber=True)[1] == 4.0


def test_every_positive_loss_is_past_the_threshold_when_M_equals_eps():
    # FedEBA+ Table 1: M = ε = 0.2 → M − f < ε for all f > 0, L = 5 f under both continuations
    for huber in (False, True):
        for f in (1e-6, 0.1, 2.3):
            value, slope = _value_and_slope(f, M=0.2, eps=0.2, huber=huber)
            # f/0.2 (the rounded 0.2) vs 5 f: one quotient or product each (terms 1, depth 2)
            assert_close([value, slope], [5 * f, 5.0], terms=1, depth=2, scale=5 * max(f, 1.0))


def test_large_M_is_fedavg_with_the_learning_rate_scaled_by_M():
    # dL/df = 1/(M − f) = (1/M)(1 + f/M + …): with lr·M, PropFair's step → FedAvg's step as M → ∞
    M = 1e7
    fedavg = build_algorithm("fedavg", tiny_sim(lr=0.2), {})
    propfair = build_algorithm("propfair", tiny_sim(lr=0.2 * M), {"M": M})
    run_rounds(fedavg, 2), run_rounds(propfair, 2)
    # FedAvg's step only to first order in f/M ≈ 1e-7 (times the step lr·M = 2e6 / M): a limit, not rounding
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
    # lr·(1/M) ∇f vs (lr/M) ∇f: the same steps scaled in another order (a rounding a step), carried through
    # the training: a first-layer dot product over 16 features (batches of 4), 7 reductions a local step,
    # 3 steps and the average a round, 2 rounds
    assert_close(fedavg.w, propfair.w, terms=16, depth=2 * (7 * 3 + 1), what="global model")


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="M \\(the PropFair baseline\\) must be positive"):
        build_algorithm("propfair", tiny_sim(), {"M": 0.0})
    with pytest.raises(ValueError, match="eps \\(the PropFair threshold\\) must be positive"):
        build_algorithm("propfair", tiny_sim(), {"eps": -1.0})
    with pytest.raises(ValueError, match="huber.*expected bool"):
        build_algorithm("propfair", tiny_sim(), {"huber": "yes"})
