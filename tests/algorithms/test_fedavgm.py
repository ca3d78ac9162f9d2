import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close


def _server_round(algo, params: torch.Tensor) -> None:
    """Aggregate ``params`` of clients 0 and 1 and take the server step, as ``round`` does."""
    server_round(algo, np.array([0, 1]), params)


def test_two_rounds_accumulate_momentum_by_hand():
    # clients 0 and 1 hold 7 and 12 samples; both rounds they return w + 1 and w − 2, so
    # Δ̄ = (7·1 + 12·(−2))/19 = −17/19 each round. η_g = 2 (Hsu et al.: v ← βv + Δ̄, w ← w + η_g v):
    # round 1: v = −17/19, w1 = w0 − 34/19;  round 2: v = 0.9·(−17/19) − 17/19 = −1.7, w2 = w1 − 3.4
    algo = build_algorithm("fedavgm", tiny_sim(), {"server_lr": 2.0})
    w0 = algo.w.clone()
    for _ in range(2):
        _server_round(algo, torch.stack([algo.w + 1.0, algo.w - 2.0]))
    # the plug-in's steps vs the values by hand: each round the updates' differences, their sum of 2 terms and
    # the momentum (depth 3 a round, 2 rounds), of the magnitude of the parameters along the way (|w0| + 5.2)
    # and the updates (2); η_g v is η_g = 2 times that, and w adds the two steps
    mag = float(w0.abs().max()) + 34 / 19 + 3.4 + 2
    assert_close(
        algo.state["server_velocity"], torch.full_like(w0, 2.0 * -1.7), terms=2, depth=6, scale=2 * mag
    )
    assert_close(algo.w, w0 - 34 / 19 - 3.4, terms=2, depth=8, scale=3 * mag, what="w")


def test_fedavgm_is_fedavg_with_the_server_momentum_plug_in_at_the_paper_beta():
    a = build_algorithm("fedavg", tiny_sim(), {"server_momentum": 0.9})
    b = build_algorithm("fedavgm", tiny_sim(), {})
    run_rounds(a, 3), run_rounds(b, 3)
    assert torch.equal(a.w, b.w)


def test_beta_zero_is_fedavg():
    a = build_algorithm("fedavg", tiny_sim(), {"server_lr": 0.7})
    b = build_algorithm("fedavgm", tiny_sim(), {"server_momentum": 0.0, "server_lr": 0.7})
    run_rounds(a, 3), run_rounds(b, 3)
    assert torch.equal(a.w, b.w)


@pytest.mark.parametrize("beta", [1.0, -0.1, 1.5])
def test_beta_outside_unit_interval_names_the_field(beta):
    with pytest.raises(ValueError, match=r"server_momentum must be in \[0, 1\)"):
        build_algorithm("fedavgm", tiny_sim(), {"server_momentum": beta})
