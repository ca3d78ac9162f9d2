"""BatchNorm: per-client running statistics during training, their plain average at the server, and
evaluation in eval mode, so that one client's numbers depend neither on other clients nor on batch sizes."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from tests.conftest import tiny_federated
from tests.rounding import assert_close

CLIENTS = np.array([0, 3, 5])

# Two computations of the same BatchNorm training or evaluation (a batch and a client alone, batched and
# sequential trainers, the engine and a plain module): the rounding bound of tests/rounding.py. The longest
# sums have 64 terms (the dense layer's 64 inputs; the batch statistics' and the convolution's weight
# gradients over 4 samples × 16 pixels); a step passes through 10 reductions (convolution, batch mean and
# variance, dense layer, log-softmax and mean forward; the dense layer, BatchNorm's two sums and the
# convolution backward); an evaluation through 5 (the running statistics are fixed: convolution, dense layer,
# log-softmax, mean, and the accuracy's mean).
TERMS, STEP, EVAL = 64, 10, 5


def bn_model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 4)
    )


def _engine(kind="batched", **kw):
    return Engine(bn_model(), tiny_federated(), kind=kind, dtype=torch.float64, **kw)


def _trained(engine):
    """An engine whose global running statistics come from one round of training (not the initial 0 / 1)."""
    spec = LocalSpec(lr=0.1, batch_size=4, steps=3)
    result = engine.train(CLIENTS, engine.init_params(), spec, seed=0)
    engine.set_running_stats(result.running.mean(0))
    return result.params.mean(0)


def test_a_clients_accuracy_depends_neither_on_other_clients_nor_on_the_evaluation_batch():
    big, small = _engine(eval_batch=8192), _engine(eval_batch=5)
    w = _trained(big)
    _trained(small)
    alone = big.losses(w, np.array([2]), "test")
    for engine in (big, small):
        together = engine.losses(w, np.arange(6), "test")
        stacked = engine.losses(w.expand(6, -1), np.arange(6), "test")
        for loss, acc in (together, stacked):
            assert_close(loss[2], alone[0][0], terms=TERMS, depth=EVAL, what="loss")
            assert_close(acc[2], alone[1][0], terms=TERMS, depth=EVAL, what="accuracy")


@pytest.mark.parametrize("client_axis", ["vmap", "loop"])
def test_each_client_keeps_its_own_running_statistics_batched_as_sequential(client_axis):
    spec = LocalSpec(lr=0.1, batch_size=4, steps=3, momentum=0.9)
    out = {}
    for kind, axis in (("batched", client_axis), ("sequential", "auto")):
        engine = _engine(kind, client_axis=axis, chunk_size=2)
        out[kind] = engine.train(CLIENTS, engine.init_params(), spec, seed=1)
    batched, sequential = out["batched"], out["sequential"]
    assert batched.running.shape == (3, 8)  # running mean and variance of 4 channels
    assert_close(batched.running, sequential.running, terms=TERMS, depth=STEP * 3, what="running statistics")
    assert_close(batched.params, sequential.params, terms=TERMS, depth=STEP * 3, what="parameters")
    assert (batched.running[0] - batched.running[1]).abs().max() > 1e-6
    init = _engine().running
    assert (batched.running - init).abs().min() > 0


def test_a_plain_module_gives_the_same_running_statistics():
    """Client 3's three steps by hand with ``nn.BatchNorm2d`` in train mode (momentum 0.1)."""
    engine = _engine()
    spec = LocalSpec(lr=0.1, batch_size=4, steps=3)
    result = engine.train(CLIENTS, engine.init_params(), spec, seed=2)
    schedule = engine.schedule(CLIENTS, spec, seed=2)
    model = bn_model().double().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for s in range(3):
        idx = schedule.index[1, s]
        opt.zero_grad()
        logits = model(engine.data.inputs(idx, torch.float64))
        nn.functional.cross_entropy(logits, engine.data.y[idx]).backward()
        opt.step()
    bn = model[1]
    expected = torch.cat([bn.running_mean, bn.running_var])
    assert_close(result.running[1], expected, terms=TERMS, depth=STEP * 3, what="running statistics")


def test_the_server_averages_the_uploaded_statistics_and_evaluates_with_them():
    train = TrainConfig(rounds=2, clients_per_round=3, batch_size=4, lr=0.1, local_steps=2)
    sim = Simulation(_engine(), train, seed=0)
    algo = build_algorithm("fedavg", sim, {})
    start, running = algo.w.clone(), algo.state["running"].clone()
    out = algo.round(0)
    local = Simulation(_engine(), train, seed=0).engine
    local.set_running_stats(running)
    expected = local.train(out.selected, start, sim.local_spec(0), sim.seed_for(0, "batches"))
    # the same local training; the server's average of 3 clients' statistics against their mean here
    assert_close(algo.state["running"], expected.running.mean(0), terms=3, what="averaged running statistics")
    assert torch.equal(sim.engine.running, algo.state["running"])
    resumed = build_algorithm("fedavg", Simulation(_engine(), train, seed=0), {})
    resumed.load_state_dict(copy.deepcopy(algo.state_dict()))
    algo.round(1), resumed.round(1)
    assert torch.equal(algo.w, resumed.w) and torch.equal(algo.state["running"], resumed.state["running"])


def test_padded_minibatches_and_personal_models_are_refused_with_the_fix():
    engine = _engine()
    with pytest.raises(ValueError, match="padded minibatch.*batch_size that divides"):
        engine.train(CLIENTS, engine.init_params(), LocalSpec(lr=0.1, batch_size=5, epochs=1), seed=0)
    train = TrainConfig(rounds=1, clients_per_round=2, batch_size=4, lr=0.1, local_steps=1)
    with pytest.raises(ValueError, match="GroupNorm"):
        build_algorithm("ditto", Simulation(_engine(), train, seed=0), {})
    momentum_free = bn_model()
    momentum_free[1].momentum = None
    with pytest.raises(ValueError, match="momentum=0.1"):
        Engine(momentum_free, tiny_federated())


@pytest.mark.parametrize("kind", ["batched", "sequential"])
def test_gossip_mixes_the_running_statistics_with_the_parameters(kind):
    """AFGA's gossip X ← W X also mixes each client's BatchNorm running mean and variance (W = J here:
    afterwards every client holds the average of both)."""
    engine = _engine(kind)
    stack = engine.stack(CLIENTS, engine.init_params(), LocalSpec(lr=0.1, batch_size=4, steps=3), seed=0)
    stack.step()
    before = stack.result()
    assert (before.running[0] - before.running[1]).abs().max() > 1e-6
    average = torch.full((3, 3), 1 / 3, dtype=torch.float64)
    stack.mix(lambda x: (average @ x.reshape(3, -1)).reshape(x.shape))
    after = stack.result()
    # Σ_j fl(1/3) x_j against (Σ_j x_j) / 3: 3 terms, 4 roundings with the rounded 1/3, of sizes ≤ max|x|
    for key in ("running", "params"):
        x = getattr(before, key)
        mean = x.mean(0).expand(3, -1)
        assert_close(getattr(after, key), mean, terms=4, scale=float(x.abs().max()), what=key)


def test_a_stack_can_start_from_each_clients_own_running_statistics():
    """Decentralised methods keep every client's running statistics across rounds: a stack started from
    per-client statistics ``[K, Q]`` holds them row by row."""
    engine = _engine()
    own = engine.running.expand(3, -1) + torch.arange(3, dtype=torch.float64)[:, None]
    spec = LocalSpec(lr=0.1, batch_size=4, steps=3)
    stack = engine.stack(CLIENTS, engine.init_params(), spec, seed=0, running=own)
    assert torch.equal(stack.result().running, own)
    stack.step()
    shared = engine.stack(CLIENTS, engine.init_params(), spec, seed=0)
    shared.step()
    assert not torch.allclose(stack.result().running, shared.result().running)
