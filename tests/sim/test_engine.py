"""The batched engine against the sequential reference, and the engine's per-client computations."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from tests.conftest import tiny_federated, tiny_model
from tests.rounding import assert_close


def bound(steps: int, extra: int = 0) -> dict:
    """The rounding bound (tests/rounding.py) between two computations of the same training or evaluation
    (batched and sequential trainers, a batch and a client alone, the engine and a plain module): sums over
    at most the tiny fixture's 117 training samples (its widths 16 and 12 and test sets of 8 are shorter),
    7 reductions a local step (2 layers and the loss forward and back, the update) for ``steps`` steps, and
    ``extra`` more: 4 for a loss (2 layers, log-softmax, the mean), 7 for a gradient."""
    return dict(terms=117, depth=7 * steps + extra)


LOSS, GRADIENT = 4, 7


def assert_accuracy(actual, expected, n: int, what: str = "accuracy") -> None:
    """An accuracy is a count of correct argmaxes over n samples divided by n: exact in any order, but a mean
    whose output --kernel-jitter moves, so compared at the bound of a mean of n terms."""
    assert_close(actual, expected, terms=n, what=what)


def _engine(kind, dtype=torch.float64, **kw):
    return Engine(tiny_model(), tiny_federated(), kind=kind, dtype=dtype, **kw)


@pytest.mark.parametrize("prox_mu", [0.1, 0.0])  # without μ: weight decay is the only w-dependent term
@pytest.mark.parametrize("client_axis", ["bmm", "vmap", "loop"])
@pytest.mark.parametrize("steps,epochs", [(4, None), (None, 2)])
def test_local_step_matches_torch_sgd_with_every_transform(steps, epochs, client_axis, prox_mu):
    clients = np.array([0, 2, 5])
    mix = torch.randn(
        _engine("batched").space.size, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    spec = dict(
        lr=0.1,
        batch_size=5,
        steps=steps,
        epochs=epochs,
        momentum=0.9,
        weight_decay=1e-3,
        prox_mu=prox_mu,
        grad_scale=torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64),
        mix_alpha=0.3,
        mix_vector=mix,
        grad_shift=0.01 * torch.stack([mix, -mix, 2 * mix]),
    )
    out = {}
    for kind in ("batched", "sequential"):
        e = _engine(kind, chunk_size=2, client_axis=client_axis)
        out[kind] = e.train(clients, e.init_params(), LocalSpec(**spec), seed=3)
    # at most 2 epochs of 7 steps (client 5: 32 samples in batches of 5); the loss is a mean over them
    assert_close(out["batched"].params, out["sequential"].params, **bound(14), what="parameters")
    assert_close(out["batched"].train_loss, out["sequential"].train_loss, **bound(14, 1), what="train loss")


@pytest.mark.parametrize("client_axis", ["bmm", "vmap"])
@pytest.mark.parametrize("algorithm,params", [("fedavg", {}), ("fedprox", {"mu": 0.5})])
def test_batched_and_sequential_runs_agree(algorithm, params, client_axis):
    train = TrainConfig(rounds=3, clients_per_round=3, batch_size=4, lr=0.2, local_steps=3)
    final = {}
    for kind in ("batched", "sequential"):
        sim = Simulation(_engine(kind, client_axis=client_axis), train, seed=7)
        algo = build_algorithm(algorithm, sim, params)
        for t in range(3):
            algo.round(t)
        final[kind] = algo.w
    # 3 rounds of 3 local steps, and each round's average over 3 clients
    assert_close(final["batched"], final["sequential"], **bound(3 * 3, 3), what="global model")


@pytest.mark.parametrize("client_axis", ["bmm", "vmap"])
def test_losses_and_gradients_match_a_plain_module(client_axis):
    e = _engine("batched", client_axis=client_axis)
    w = e.init_params()
    model = tiny_model().double()
    loss, acc = e.losses(w, np.array([1, 3]))
    grads = e.gradients(w, np.array([1, 3]))
    grads_too, pass_loss = e.gradients_and_losses(w, np.array([1, 3]))
    assert torch.equal(grads_too, grads)  # one computation
    data = e.data
    for row, k in enumerate([1, 3]):
        ix = data.client_train[k]
        out = model(data.inputs(ix, torch.float64))
        ref = F.cross_entropy(out, data.y[ix])
        assert_close(loss[row], ref, **bound(0, LOSS), what="loss")
        assert_close(pass_loss[row], ref, **bound(0, LOSS), what="loss of the gradients' pass")
        assert_accuracy(acc[row], (out.argmax(1) == data.y[ix]).double().mean(), len(ix))
        model.zero_grad()
        ref.backward()
        g = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        assert_close(grads[row], g, **bound(0, GRADIENT), what="gradient")


def smoothed(logits, y):
    """Label-smoothed cross-entropy (ε = 0.1), per sample: a loss other than the default."""
    return F.cross_entropy(logits, y, reduction="none", label_smoothing=0.1)


@pytest.mark.parametrize("client_axis", ["bmm", "vmap", "loop"])
def test_a_custom_loss_defines_losses_gradients_and_training_alike(client_axis):
    e = _engine("batched", eval_batch=7, client_axis=client_axis)
    w, clients = e.init_params(), np.array([1, 3])
    loss, _ = e.losses(w, clients, loss=smoothed)
    loss_s, _ = e.losses(torch.stack([w, w]), clients, loss=smoothed)  # the per-client-model path
    grads = e.gradients(w, clients, loss=smoothed)
    pass_loss = e.gradients_and_losses(w, clients, loss=smoothed)[1]
    model = tiny_model().double()
    for row, k in enumerate(clients):
        ix = e.data.client_train[k]
        ref = smoothed(model(e.data.inputs(ix, torch.float64)), e.data.y[ix]).mean()
        assert_close(loss[row], ref, **bound(0, LOSS), what="loss")
        assert_close(pass_loss[row], ref, **bound(0, LOSS), what="loss of the gradients' pass")
        assert_close(loss_s[row], ref, **bound(0, LOSS), what="loss of the stacked models")
        model.zero_grad()
        ref.backward()
        g = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        assert_close(grads[row], g, **bound(0, GRADIENT), what="gradient")
    assert (grads - e.gradients(w, clients)).abs().max() > 1e-4  # the default (cross-entropy) differs
    assert (loss - e.losses(w, clients)[0]).abs().min() > 1e-4
    # one local step on each client's whole training set (B ≥ n_k) moves w by −η × that gradient
    spec = LocalSpec(lr=0.5, batch_size=10_000, steps=1, loss=smoothed)
    stepped = e.train(clients, w, spec, seed=0).params
    # the step's gradient and update w − 0.5 g, and the subtraction back: terms of size |w| + 0.5 |g|, / 0.5
    scale = float((w.abs() + 0.5 * grads.abs()).max()) / 0.5
    assert_close((w - stepped) / 0.5, grads, **bound(1, 1), scale=scale, what="step / lr")


@pytest.mark.parametrize("client_axis", ["bmm", "vmap", "loop"])
def test_stacked_models_losses_and_gradients_equal_one_model_each(client_axis):
    e = _engine("batched", eval_batch=7, client_axis=client_axis)  # small chunks: the chunked paths
    w = e.init_params()
    stacked = torch.stack([w, w * 0.5, w * 2])
    clients = np.array([0, 4, 5])
    loss_s, acc_s = e.losses(stacked, clients, split="test")
    grads_s = e.gradients(stacked, clients)
    pass_loss = e.gradients_and_losses(stacked, clients)[1]
    train_loss = e.losses(stacked, clients)[0]
    assert_close(pass_loss, train_loss, **bound(0, LOSS), what="loss of the gradients' pass")
    for row, k in enumerate(clients):
        loss_1, acc_1 = e.losses(stacked[row], np.array([k]), split="test")
        assert_close(loss_s[row], loss_1[0], **bound(0, LOSS), what="loss")
        assert_accuracy(acc_s[row], acc_1[0], 8)  # 8 test samples a client
        single = e.gradients(stacked[row], np.array([k]))[0]
        assert_close(grads_s[row], single, **bound(0, GRADIENT), what="gradient")


def test_convolutional_model_trains_alike_on_both_client_axes_and_sequentially():
    def conv():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(12, 4)
        )

    spec = LocalSpec(lr=0.1, batch_size=5, steps=3, momentum=0.9, prox_mu=0.1)
    out = {}
    for kind, axis in [("batched", "vmap"), ("batched", "loop"), ("sequential", "auto")]:
        e = Engine(conv(), tiny_federated(), kind=kind, dtype=torch.float64, client_axis=axis)
        out[kind, axis] = e.train(np.array([0, 3, 5]), e.init_params(), spec, seed=1).params
    # 3 steps; the convolution's and the dense layer's reductions are shorter than 117 terms
    assert_close(out["batched", "loop"], out["sequential", "auto"], **bound(3), what="loop")
    assert_close(out["batched", "vmap"], out["sequential", "auto"], **bound(3), what="vmap")


def test_client_axis_auto_loops_over_convolutional_models_on_cpu_and_takes_the_mlp_closed_form():
    conv = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    assert Engine(conv, tiny_federated()).client_axis.name == "loop"
    assert _engine("batched").client_axis.name == "bmm"
    tanh = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4)
    )
    assert Engine(tanh, tiny_federated()).client_axis.name == "vmap"
    with pytest.raises(ValueError, match="client_axis must be one of"):
        _engine("batched", client_axis="threads")
    with pytest.raises(ValueError, match="needs a ReLU MLP.*Sequential is not one: use 'auto' or 'vmap'"):
        Engine(conv, tiny_federated(), client_axis="bmm")


def test_pooled_test_accuracy():
    e = _engine("batched")
    w = e.init_params()
    acc, loss = e.pooled(w)
    ix = e.data.pooled_test
    with torch.no_grad():
        out = tiny_model().double()(e.data.inputs(ix, torch.float64))
    assert_accuracy(acc, float((out.argmax(1) == e.data.y[ix]).double().mean()), len(ix))
    # python floats of float64 values; the pooled test set is 20 samples
    assert_close(loss, float(F.cross_entropy(out, e.data.y[ix])), **bound(0, LOSS), what="pooled loss")


def test_validation_losses_match_a_plain_module_and_the_stacked_path():
    from dataclasses import replace

    data = tiny_federated()
    spare = data.pooled_test  # any samples serve as validation indices here
    sizes = [3, 0, 5, 1, 0, 4]
    starts = np.cumsum([0, *sizes])
    val = [spare[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]
    e = Engine(tiny_model(), replace(data, client_val=val), dtype=torch.float64, eval_batch=4)
    assert e.counts("val").tolist() == sizes
    w = e.init_params()
    model = tiny_model().double()
    loss, acc = e.losses(w, split="val")
    stacked_loss, stacked_acc = e.losses(torch.stack([w] * 6), split="val")
    some_loss, _ = e.losses(w, np.array([5, 2]), split="val")
    with torch.no_grad():
        for k, ix in enumerate(val):
            if not len(ix):  # no validation samples: 0 / 0 reads as 0
                assert loss[k] == acc[k] == 0
                continue
            out = model(e.data.inputs(ix, torch.float64))
            assert_close(loss[k], F.cross_entropy(out, e.data.y[ix]), **bound(0, LOSS), what="loss")
            assert_accuracy(acc[k], (out.argmax(1) == e.data.y[ix]).double().mean(), len(ix))
    # the stacked path and a subset of clients: other batch shapes
    assert_close(stacked_loss, loss, **bound(0, LOSS), what="stacked losses")
    assert_accuracy(stacked_acc, acc, max(sizes), "stacked accuracies")
    assert_close(some_loss, loss[[5, 2]], **bound(0, LOSS), what="losses of clients 5 and 2")


# -- group counts (a sensitive attribute of the samples) ----------------------------------------------------
def _counts_by_hand(fed, predict, idx) -> list:
    """[group, label, prediction] counts of the samples ``idx``, one sample at a time."""
    counts = np.zeros((2, 2, 2), dtype=np.int64)
    for i in idx.tolist():
        x = fed.inputs(torch.tensor([i]), torch.float64)
        counts[int(fed.sensitive[i]), int(fed.y[i]), int(predict(x).argmax(-1))] += 1
    return counts.tolist()


@pytest.mark.parametrize("client_axis", ["bmm", "vmap", "loop"])
def test_group_counts_count_each_clients_samples_by_group_label_and_prediction(client_axis):
    from torch.func import functional_call

    from tests.conftest import tiny_sensitive

    fed = tiny_sensitive()
    engine = Engine(tiny_model(num_classes=2), fed, dtype=torch.float64, client_axis=client_axis)
    w = engine.init_params()
    module = tiny_model(num_classes=2).double()  # the engine's initial model, as a plain module
    clients = np.array([4, 0, 2])
    for split in ("train", "test"):
        counts = engine.group_counts(w, clients, split)
        assert counts.shape == (3, 2, 2, 2) and counts.dtype == torch.int64
        for row, k in enumerate(clients):
            assert counts[row].tolist() == _counts_by_hand(fed, module, fed.client_indices(split)[k])
    assert engine.pooled_group_counts(w).tolist() == _counts_by_hand(fed, module, fed.pooled_test)
    # one model per client ([K, P]): each client's samples through its own model
    stacked = w + 0.3 * torch.randn(fed.num_clients, len(w), generator=torch.Generator().manual_seed(1))
    counts = engine.group_counts(stacked, split="test")
    for k in range(fed.num_clients):
        params = engine.space.unflatten(stacked[k])

        def own(x, params=params):
            return functional_call(module, params, (x,))

        assert counts[k].tolist() == _counts_by_hand(fed, own, fed.client_test[k])
    assert counts.sum() == sum(fed.test_sizes())


def test_group_counts_need_a_sensitive_attribute():
    engine = _engine("batched")
    with pytest.raises(ValueError, match="sensitive attribute .* tiny has no sensitive attribute"):
        engine.group_counts(engine.init_params())
