import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


def test_training_trajectory_is_gifair_global():
    # with the loss cache at the post-training local models, Algorithms 2 and 3 train identically (§2.4)
    glob = build_algorithm("gifair_global", tiny_sim(), {"lam_frac": 0.7})
    per = build_algorithm("gifair_per", tiny_sim(), {"lam_frac": 0.7})
    assert [o.selected.tolist() for o in run_rounds(glob, 3)] == [
        o.selected.tolist() for o in run_rounds(per, 3)
    ]
    assert torch.equal(glob.w, per.w) and np.array_equal(glob.state["losses"], per.state["losses"])
    assert per.personalized and torch.equal(per.eval_params(), per.w)


def test_personal_models_are_the_last_local_models_and_the_global_one_before_training():
    sim = tiny_sim(clients_per_round=2)
    algo = build_algorithm("gifair_per", sim, {"lam_frac": 0.5})
    w0 = algo.w.clone()
    assert torch.equal(algo.personal_params(), w0.expand(6, -1))
    plan = algo.configure(0)
    clients = plan.clients
    local = sim.engine.train(clients, w0, plan.spec, sim.seed_for(0, "batches")).params
    algo.round(0)
    theta = algo.personal_params()
    assert torch.equal(theta[clients], local)
    others = np.setdiff1d(np.arange(6), clients)
    assert torch.equal(theta[others], algo.w.expand(len(others), -1))  # never selected: current global
    second = algo.round(1).selected
    kept = np.setdiff1d(clients, second)
    assert torch.equal(algo.personal_params()[kept], local[np.isin(clients, kept)])


def test_group_losses_are_measured_at_the_personal_models():
    sim = tiny_sim()
    algo = build_algorithm("gifair_per", sim, {"lam_frac": 0.5})
    run_rounds(algo, 3)
    trained = algo.state["trained"]
    assert trained.any()
    at_personal = sim.engine.losses(algo.personal_params(), split="train")[0].numpy()
    # F_k(θ_k), Eq. 5: the round's evaluation of its clients vs all 6 personal models at once (other shapes):
    # 2 layers, the log-softmax and the mean over a client's samples (at most 32)
    assert_close(algo.state["losses"][trained], at_personal[trained], terms=32, depth=4, what="losses")


def test_personalised_evaluation_uses_each_clients_own_model():
    sim = tiny_sim()
    algo = build_algorithm("gifair_per", sim, {"lam_frac": 0.5})
    run_rounds(algo, 3)
    theta = algo.personal_params()
    loss, acc = sim.engine.losses(theta, split="test")
    for k in range(6):
        own_loss, own_acc = sim.engine.losses(theta[k], np.array([k]), split="test")
        # one client's model alone vs the stack of 6: 2 layers (16 features), the log-softmax and the mean
        # over its 8 test samples; its accuracy counts correct answers, the same count
        assert_close(loss[k], own_loss[0], terms=16, depth=4, what=f"client {k}'s loss")
        assert torch.equal(acc[k], own_acc[0])
    glob_loss = sim.engine.losses(algo.w, split="test")[0]
    assert not torch.allclose(loss, glob_loss)  # the personal models are not the global one (beyond rounding)


def test_exact_r_variant_is_refused():
    with pytest.raises(ValueError, match="use loss_source='local' or 'minibatch'"):
        build_algorithm("gifair_per", tiny_sim(), {"loss_source": "global"})
