import numpy as np
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim


def test_each_selected_client_continues_its_own_model_and_the_global_model_never_moves():
    sim = tiny_sim(clients_per_round=2)
    algo = build_algorithm("local", sim, {})
    w0 = algo.w.clone()
    assert algo.personalized and torch.equal(algo.personal_params(), w0.expand(6, -1))
    expected = w0.expand(6, -1).clone()
    for t in range(3):
        before = algo.personal_params().clone()
        selected = algo.round(t).selected
        assert len(np.unique(selected)) == 2
        trained = sim.engine.train(selected, before[selected], sim.local_spec(t), sim.seed_for(t, "batches"))
        expected[selected] = trained.params
        assert torch.equal(algo.personal_params(), expected)
    assert torch.equal(algo.w, w0) and torch.equal(algo.eval_params(), w0)


def test_local_training_only_is_ditto_with_lambda_zero_on_the_personal_models():
    """Ditto's personal step with λ = 0 is plain local SGD of v_k on the round's minibatches: with every
    client selected each round, its v_k follow the same path as the local-only models."""
    local = build_algorithm("local", tiny_sim(clients_per_round=6), {})
    ditto = build_algorithm("ditto", tiny_sim(clients_per_round=6), {"lam": 0.0})
    run_rounds(local, 3), run_rounds(ditto, 3)
    # λ = 0 adds 0 · (v − w) to the gradient, exactly: the same steps on the same shapes
    assert torch.equal(local.personal_params(), ditto.personal_params())


def test_a_dropped_client_keeps_its_model():
    sim = tiny_sim(clients_per_round=4, faults=FaultConfig(rate=0.5))
    algo = build_algorithm("local", sim, {})
    w0 = algo.w.clone()
    selected = algo.round(0).selected
    dropped = sim.faults(0, selected).failed
    assert dropped.sum() == 2
    assert torch.equal(algo.personal_params()[selected[dropped]], w0.expand(2, -1))
    assert not torch.equal(algo.personal_params()[selected[~dropped]], w0.expand(2, -1))
