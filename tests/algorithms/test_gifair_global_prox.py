"""GIFAIR-FL-Global with FedProx local training (Equitable-FL's GIFAIR baseline)."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.gifair_global_prox import round_scales
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


def test_lambda_zero_is_fedprox_and_lambda_changes_the_run():
    params = {"mu": 0.3}
    prox = build_algorithm("fedprox", tiny_sim(), params)
    zero = build_algorithm("gifair_global_prox", tiny_sim(), {**params, "lam_frac": 0.0})
    run_rounds(prox, 3), run_rounds(zero, 3)
    assert torch.equal(prox.w, zero.w)  # λ = 0: every scale is 1, the same FedProx steps and average
    fair = build_algorithm("gifair_global_prox", tiny_sim(), {**params, "lam_frac": 0.9})
    run_rounds(fair, 3)
    assert (fair.w - prox.w).abs().max() > 1e-6  # apart by far more than rounding


def test_the_proximal_term_reaches_the_local_step():
    algo = build_algorithm("gifair_global_prox", tiny_sim(), {"mu": 0.3})
    spec = algo.configure(0).spec
    assert spec.prox_mu == 0.3 and torch.equal(spec.prox_ref, algo.w) and spec.grad_scale is not None
    assert algo.hp.sampling == "uniform" and algo.hp.weighting == "size"


def test_round_scales_by_hand():
    """Three participants of cluster 0 (n = 100, loss 1) and one of cluster 1 (n = 300, loss 2):
    p = (1/6, 1/6, 1/6, 1/2), |A| = (3, 3, 3, 1), λ_max = min p_k |A_k| / (2 − 1) = 0.5, λ = 0.25 at
    lam_frac 0.5; r = −1 for the lower-loss cluster, +1 for the other: α = 1 − 0.25/0.5, 1 + 0.25/0.5."""
    scale, lam = round_scales(np.array([100, 100, 100, 300]), np.array([4, 4, 4, 7]), [1, 1, 1, 2], 0.5)
    # p = n/Σn, p_k |A_k|, its minimum times lam_frac: one rounding each (terms 1, depth 3); a scale
    # 1 ± λ/(p_k |A_k|) adds 3 more
    assert_close(lam, 0.25, terms=1, depth=3, what="λ")
    assert_close(scale, [0.5, 0.5, 0.5, 1.5], terms=1, depth=6, what="scales")
    one, lam_one = round_scales(np.array([100, 300]), np.array([2, 2]), [1.0, 5.0], 0.5)
    assert lam_one == 0 and one.tolist() == [1.0, 1.0]


def test_round_counting_scales_from_the_participants_losses_at_the_global_model():
    sim = tiny_sim(clients_per_round=4)
    algo = build_algorithm("gifair_global_prox", sim, {"mu": 0.3, "groups": "partition"})
    plan = algo.configure(0)
    clients = plan.clients
    assert len(set(algo.groups[clients])) > 1  # two clusters present: the scales are not all 1
    losses = sim.engine.losses(algo.w, clients, "train")[0].numpy()
    expected, _ = round_scales(sim.train_sizes[clients], algo.groups[clients], losses, algo.hp.lam_frac)
    assert np.array_equal(plan.spec.grad_scale.numpy(), expected)  # the same function of the same losses
    assert np.ptp(expected) > 0
    cached = build_algorithm("gifair_global_prox", tiny_sim(clients_per_round=4), {"counting": "all"})
    assert np.array_equal(cached.configure(0).spec.grad_scale.numpy(), cached.scales(clients))  # the same
    diag = algo.round(1).diagnostics
    assert {"lambda", "scale_min", "scale_max"} <= set(diag)


def test_bad_counting_names_the_choices():
    with pytest.raises(ValueError, match="counting must be one of"):
        build_algorithm("gifair_global_prox", tiny_sim(), {"counting": "cache"})
