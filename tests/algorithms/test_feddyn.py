"""FedDyn (Acar et al., ICLR 2021, Algorithm 1): the server step by hand, the local objective's gradient
terms, and the first round (h = 0) against FedProx's local step."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.feddyn import feddyn_server_step
from tests.algorithms.conftest import tiny_sim
from tests.rounding import assert_close


def test_server_step_by_hand():
    x = torch.tensor([1.0, 0.0], dtype=torch.float64)
    h = torch.tensor([0.5, -0.5], dtype=torch.float64)
    local = torch.tensor([[2.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    # Σ (θ_i − x) = [0, 2]; h ← h − 0.1 · [0, 2] / 4 = [0.5, −0.55]; x = mean θ − h / 0.1 = [1, 1] − [5, −5.5]
    new_x, new_h = feddyn_server_step(x, h, local, alpha=0.1, num_clients=4)
    # h: the differences, their sum of 2 terms and the step (depth 2); x adds the mean of 2 and h/α (depth 3)
    assert_close(new_h, torch.tensor([0.5, -0.55], dtype=torch.float64), terms=2, depth=2, what="h")
    assert_close(new_x, torch.tensor([-4.0, 6.5], dtype=torch.float64), terms=2, depth=3, what="x")


def test_first_round_trains_as_fedprox_then_corrects_with_h():
    """With h_i = 0 the first local objective is FedProx's with μ = α: the same local models; the server
    then steps to mean θ − h/α with h = −α Σ(θ_i − x)/N, and h_i = −α (θ_i − x)."""
    alpha = 0.5
    dyn = build_algorithm("feddyn", tiny_sim(), {"alpha": alpha})
    x0 = dyn.w.clone()
    sim = tiny_sim()
    selected = dyn.round(0).selected
    spec = sim.local_spec(0, prox_mu=alpha, prox_ref=x0)
    local = sim.engine.train(selected, x0, spec, sim.seed_for(0, "batches")).params
    h = -alpha * (local - x0).sum(0) / 6
    # the server step vs the formula by hand on the same local models: h sums 3 clients' updates (depth 2: the
    # differences, the sum), of magnitude α Σ|θ_i − x|/N; x adds the mean of 3 and h/α (depth 3)
    scale_h = alpha * float((local - x0).abs().sum(0).max()) / 6
    assert_close(dyn.state["h"], h, terms=3, depth=2, scale=scale_h, what="h")
    scale_x = float(local.abs().max()) + scale_h / alpha
    assert_close(dyn.w, local.mean(0) - h / alpha, terms=3, depth=3, scale=scale_x, what="x")
    rows = torch.as_tensor(selected)
    # h_i: one difference and its product with α, elementwise (terms 1, depth 2)
    scale_i = alpha * float((local - x0).abs().max())
    assert_close(dyn.state["h_i"][rows], -alpha * (local - x0), terms=1, depth=2, scale=scale_i, what="h_i")
    others = np.setdiff1d(np.arange(6), selected)
    assert (dyn.state["h_i"][torch.as_tensor(others)] == 0).all()


def test_alpha_must_be_positive():
    with pytest.raises(ValueError, match="alpha"):
        build_algorithm("feddyn", tiny_sim(), {"alpha": 0.0})
