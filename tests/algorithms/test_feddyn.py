"""FedDyn (Acar et al., ICLR 2021, Algorithm 1): the server step by hand, the local objective's gradient
terms, and the first round (h = 0) against FedProx's local step."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.feddyn import feddyn_server_step
from tests.algorithms.conftest import tiny_sim


def test_server_step_by_hand():
    x = torch.tensor([1.0, 0.0], dtype=torch.float64)
    h = torch.tensor([0.5, -0.5], dtype=torch.float64)
    local = torch.tensor([[2.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    # Σ (θ_i − x) = [0, 2]; h ← h − 0.1 · [0, 2] / 4 = [0.5, −0.55]; x = mean θ − h / 0.1 = [1, 1] − [5, −5.5]
    new_x, new_h = feddyn_server_step(x, h, local, alpha=0.1, num_clients=4)
    torch.testing.assert_close(new_h, torch.tensor([0.5, -0.55], dtype=torch.float64))
    torch.testing.assert_close(new_x, torch.tensor([-4.0, 6.5], dtype=torch.float64))


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
    torch.testing.assert_close(dyn.state["h"], h, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dyn.w, local.mean(0) - h / alpha, rtol=1e-12, atol=1e-12)
    rows = torch.as_tensor(selected)
    torch.testing.assert_close(dyn.state["h_i"][rows], -alpha * (local - x0), rtol=1e-12, atol=1e-12)
    others = np.setdiff1d(np.arange(6), selected)
    assert (dyn.state["h_i"][torch.as_tensor(others)] == 0).all()


def test_alpha_must_be_positive():
    with pytest.raises(ValueError, match="alpha"):
        build_algorithm("feddyn", tiny_sim(), {"alpha": 0.0})
