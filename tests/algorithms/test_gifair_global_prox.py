"""GIFAIR-FL-Global with FedProx local training (Equitable-FL's GIFAIR baseline)."""

import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, tiny_sim


def test_lambda_zero_is_fedprox_and_lambda_changes_the_run():
    params = {"mu": 0.3}
    prox = build_algorithm("fedprox", tiny_sim(), params)
    zero = build_algorithm("gifair_global_prox", tiny_sim(), {**params, "lam_frac": 0.0})
    run_rounds(prox, 3), run_rounds(zero, 3)
    assert (prox.w - zero.w).abs().max() < 1e-12
    fair = build_algorithm("gifair_global_prox", tiny_sim(), {**params, "lam_frac": 0.9})
    run_rounds(fair, 3)
    assert (fair.w - prox.w).abs().max() > 1e-6


def test_the_proximal_term_reaches_the_local_step():
    algo = build_algorithm("gifair_global_prox", tiny_sim(), {"mu": 0.3})
    spec = algo.configure(0).spec
    assert spec.prox_mu == 0.3 and torch.equal(spec.prox_ref, algo.w) and spec.grad_scale is not None
    assert algo.hp.sampling == "uniform" and algo.hp.weighting == "size"
