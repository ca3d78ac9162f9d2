import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


def test_global_model_is_fedavgs():
    fedavg = build_algorithm("fedavg", tiny_sim(), {})
    ditto = build_algorithm("ditto", tiny_sim(), {"lam": 0.5})
    run_rounds(fedavg, 3), run_rounds(ditto, 3)
    assert torch.equal(fedavg.w, ditto.w)
    assert torch.equal(ditto.eval_params(), ditto.w)


def test_personal_models_start_at_the_initial_global_model_and_only_selected_ones_move():
    sim = tiny_sim(clients_per_round=2)
    algo = build_algorithm("ditto", sim, {})
    w0 = algo.w.clone()
    assert algo.personalized and algo.personal_params().shape == (6, w0.numel())
    assert torch.equal(algo.personal_params(), w0.expand(6, -1))
    selected = algo.round(0).selected
    others = np.setdiff1d(np.arange(6), selected)
    assert torch.equal(algo.personal_params()[others], w0.expand(len(others), -1))
    assert not torch.equal(algo.personal_params()[selected], w0.expand(len(selected), -1))


def test_lambda_zero_personal_step_uses_the_same_minibatches_as_the_global_step():
    # round 0: v_k = w⁰ and λ = 0, so the personal step is the global local step on the same batches
    sim = tiny_sim()
    algo = build_algorithm("ditto", sim, {"lam": 0.0})
    w0 = algo.w.clone()
    selected = algo.round(0).selected
    local = sim.engine.train(selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    assert torch.equal(algo.personal_params()[selected], local)


def test_a_dropped_client_keeps_its_personal_model():
    # 2 of 4 drop out: their v_k stay at w⁰; with λ = 0 the survivors' v_k are their global local models
    sim = tiny_sim(clients_per_round=4, faults=FaultConfig(rate=0.5))
    algo = build_algorithm("ditto", sim, {"lam": 0.0})
    w0 = algo.w.clone()
    selected = algo.round(0).selected
    dropped = sim.faults(0, selected).failed
    local = sim.engine.train(selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    personal = algo.personal_params()
    assert dropped.sum() == 2 and torch.equal(personal[selected[dropped]], w0.expand(2, -1))
    assert torch.equal(personal[selected[~dropped]], local[torch.as_tensor(~dropped)])


def test_personal_update_by_hand():
    # one full-batch step per round (B ≥ n_k), all 6 clients, η = 0.2, λ = 5 so that η λ = 1:
    # v ← v − η (∇F_k(v) + λ (v − w^t)) = w^t − η ∇F_k(v)   (Ditto Eq. 2 / Alg. 1)
    sim = tiny_sim(clients_per_round=6, batch_size=64, local_steps=1, lr=0.2)
    algo = build_algorithm("ditto", sim, {"lam": 5.0})
    clients = np.arange(6)
    algo.round(0)
    w1, v1 = algo.w.clone(), algo.personal_params().clone()
    algo.round(1)
    expected = w1 - 0.2 * sim.engine.gradients(v1, clients)
    # Ditto's personal step vs the engine's full-batch gradient by hand: a gradient sums over a client's
    # samples (at most 32) through 7 reductions, then the step's sum of the gradient and the pull
    assert_close(algo.personal_params(), expected, terms=32, depth=7 + 2, what="personal models")


def test_large_lambda_keeps_personal_models_near_the_global_one():
    # η λ = 1 (the largest pull that stays a contraction): each step resets v to w^t − η ∇F_k(v), so
    # ‖v − w^t‖ is one gradient step, whereas λ = 0 drifts for 4 rounds × 3 steps
    gap = {}
    for lam in (0.0, 5.0):
        algo = build_algorithm("ditto", tiny_sim(clients_per_round=6), {"lam": lam})
        run_rounds(algo, 3)
        received = algo.w.clone()
        algo.round(3)
        gap[lam] = float((algo.personal_params() - received).norm(dim=1).mean())
    assert gap[5.0] < 0.4 * gap[0.0]


def test_personal_evaluation_and_checkpoint_resume():
    sim = tiny_sim()
    algo = build_algorithm("ditto", sim, {})
    run_rounds(algo, 2)
    loss, acc = sim.engine.losses(algo.personal_params(), split="test")
    assert loss.shape == acc.shape == (6,) and torch.isfinite(loss).all()
    resumed = build_algorithm("ditto", tiny_sim(), {})
    resumed.load_state_dict(algo.state_dict())
    algo.round(2), resumed.round(2)
    assert torch.equal(algo.personal_params(), resumed.personal_params())


def test_bad_lambda_names_the_field():
    with pytest.raises(ValueError, match="lam \\(Ditto's λ\\) must be non-negative"):
        build_algorithm("ditto", tiny_sim(), {"lam": -1.0})
