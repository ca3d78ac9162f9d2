import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import tiny_sim
from tests.rounding import assert_close

# The local trainer's full-batch step mixed by the server vs the engine's gradients averaged by hand: a
# gradient sums over a client's samples (at most 32) through 7 reductions (2 layers and the loss forward and
# back, the step), then the server's weighted sum of 3 and its step.
GRADIENT_STEP = dict(terms=32, depth=7 + 2)


@pytest.mark.parametrize("work", [{"local_steps": 3}, {"local_steps": None, "local_epochs": 2}])
def test_step_is_minus_lr_times_the_aggregated_full_batch_gradient(work):
    # whatever the configured local work, a FedSGD round is x − η Σ_k (n_k/Σn) ∇F_k(x) with ∇F_k over all
    # of client k's samples (tiny clients hold 7…32 samples, the configured batch size is 4)
    sim = tiny_sim(lr=0.3, **work)
    algo = build_algorithm("fedsgd", sim, {})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    grads = sim.engine.gradients(w0, clients)
    n = torch.as_tensor(sim.train_sizes[clients], dtype=w0.dtype)
    expected = w0 - 0.3 * (n / n.sum()) @ grads
    assert_close(algo.w, expected, **GRADIENT_STEP, what="global model")


def test_uniform_weighting_averages_the_gradients():
    sim = tiny_sim(lr=0.3)
    algo = build_algorithm("fedsgd", sim, {"weighting": "uniform", "server_lr": 0.5})
    w0 = algo.w.clone()
    clients = algo.round(0).selected
    expected = w0 - 0.5 * 0.3 * sim.engine.gradients(w0, clients).mean(0)
    assert_close(algo.w, expected, **GRADIENT_STEP, what="global model")


def test_bad_server_lr_names_the_field():
    with pytest.raises(ValueError, match="server_lr"):
        build_algorithm("fedsgd", tiny_sim(), {"server_lr": 0.0})
