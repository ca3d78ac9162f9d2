import math

import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.term import running_tilt_weights, tilt_weights
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close

D = torch.float64
UNIFORM2 = torch.full((2,), 0.5, dtype=D)
# The weights vs their closed forms: the exponentials (and log p), the normaliser's sum of 2 and the
# division, and the closed form's own rounded e: depth 3 of 2 terms (one more for the running normaliser).
BY_HAND = dict(terms=2, depth=3)


def test_softmax_weights_by_hand():
    # F = [1, 2], t = 1: e = [e^{−1}, 1] → ω = [1/(1+e), e/(1+e)] = [0.26894, 0.73106]
    w = tilt_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0, UNIFORM2)
    assert_close(w, torch.tensor([1 / (1 + math.e), math.e / (1 + math.e)], dtype=D), **BY_HAND)
    # a size prior p = [1/4, 3/4] multiplies: ω ∝ [e^{−1}/4, 3/4] → [1/(1+3e), 3e/(1+3e)]
    w = tilt_weights(torch.tensor([1.0, 2.0], dtype=D), 1.0, torch.tensor([0.25, 0.75], dtype=D))
    assert_close(w, torch.tensor([1 / (1 + 3 * math.e), 3 * math.e / (1 + 3 * math.e)], dtype=D), **BY_HAND)


def test_running_normaliser_by_hand():
    # TERM tilting.py, m = 2, F = [1, 2], t = 1, e = [0.367879, 1], mean(e) = 0.683940
    # round 1: Z = ½·0 + ½·0.683940 = 0.341970,  ω = e/(2Z) = [0.537883, 1.462117]
    # round 2: Z = ½·0.341970 + ½·0.683940 = 0.512955,  ω = e/(2Z) = [0.358589, 0.974745]
    losses = torch.tensor([1.0, 2.0], dtype=D)
    mean_e = (math.exp(-1) + 1) / 2
    w, z = running_tilt_weights(losses, 1.0, UNIFORM2, 0.0)
    assert_close(z, mean_e / 2, **BY_HAND, what="Z")
    assert_close(w, torch.tensor([math.exp(-1), 1.0], dtype=D) / (2 * mean_e / 2), terms=2, depth=4, what="ω")
    w, z = running_tilt_weights(losses, 1.0, UNIFORM2, z)
    assert_close(z, 0.75 * mean_e, terms=2, depth=4, what="Z")
    assert torch.allclose(w, torch.tensor([0.358589, 0.974745], dtype=D), atol=1e-6)  # printed to 6 decimals


def test_large_tilt_concentrates_on_the_worst_client_and_zero_tilt_is_uniform():
    losses = torch.tensor([0.3, 2.0, 1.9], dtype=D)
    prior = torch.full((3,), 1 / 3, dtype=D)
    assert tilt_weights(losses, 50.0, prior)[1] > 0.99
    # t = 0: exp(0) = 1 times p, normalised by its sum of 3 (depth 2)
    assert_close(tilt_weights(losses, 0.0, prior), prior, terms=3, depth=2)
    # t = 10⁻⁹ is the prior only to first order in t times the loss spread (1.7e-9): a limit, not rounding
    assert torch.allclose(tilt_weights(losses, 1e-9, prior), prior, atol=1e-9)


@pytest.mark.parametrize("weighting", ["uniform", "size"])
def test_zero_tilt_run_is_fedavg(weighting):
    a = build_algorithm("fedavg", tiny_sim(), {"weighting": weighting})
    b = build_algorithm("term", tiny_sim(), {"weighting": weighting, "t": 0.0})
    run_rounds(a, 3), run_rounds(b, 3)
    # t = 0: p exp(0)/Σ p exp(0) vs FedAvg's p, a few ulps apart, averaged over 3 clients, then through the
    # next rounds' training: the longest sum a first-layer dot product over 16 features (batches of 4),
    # 7 reductions a local step, 3 steps, the weights and the average a round, 3 rounds
    assert_close(a.w, b.w, terms=16, depth=3 * (7 * 3 + 2), what="global model")


@pytest.mark.parametrize("normalizer", ["softmax", "running"])
def test_round_tilts_by_losses_at_the_received_model(normalizer):
    sim = tiny_sim()
    algo = build_algorithm("term", sim, {"t": 2.0, "normalizer": normalizer})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    local = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    losses = sim.engine.losses(w0, clients, "train")[0]
    prior = torch.full((3,), 1 / 3, dtype=D)
    if normalizer == "softmax":
        omega = tilt_weights(losses, 2.0, prior)
    else:
        omega, z = running_tilt_weights(losses, 2.0, prior, 0.0)
        assert algo.state["tilt_norm"] == z  # the same function of the same losses
    # the same weights; the server's weighted sum of 3 updates and step vs by hand
    assert_close(algo.w, w0 + omega @ (local - w0), terms=3, depth=2, what="global model")


@pytest.mark.parametrize(
    "params,field",
    [
        ({"t": -1.0}, "t .tilt. must be"),
        ({"t": float("inf")}, "t = inf is not finite"),
        ({"normalizer": "ema"}, "normalizer must be one of"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("term", tiny_sim(), params)
