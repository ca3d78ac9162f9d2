"""The character LSTM's written-out step (``client_axis="bmm"``, ``lstm_step.py``): by hand, against autograd
on the gates kernel, stacked against alone, in the engine against the fused loop, and its scope."""

import copy
import functools
import math

import numpy as np
import pytest
import torch
from torch.func import functional_call, grad_and_value, vmap

from fairfl_core.algorithms.propfair import propfair_objective
from fairfl_core.data.federated import FederatedDataset
from fairfl_core.models import build_model
from fairfl_core.models.dropout import SeededDropout, supplied_noise
from fairfl_core.models.lstm import use_kernel
from fairfl_core.sim import client_map
from fairfl_core.sim.client_map import ClientAxis, fastest_lstm_axis
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec, masked_mean_loss
from fairfl_core.sim.lstm_step import char_lstm, lstm_gradient
from tests.rounding import assert_close

HIDDEN, SEQ, BATCH = 8, 6, 4
PRESETS = ("lstm_leaf", "lstm_afga")


def _stacked(model, k, spread, dtype):
    """``model``'s parameters for ``k`` clients, each moved by its own noise of size ``spread``."""
    gen = torch.Generator().manual_seed(1)
    return {
        n: (p.detach().expand(k, *p.shape) + spread * torch.randn(k, *p.shape, generator=gen)).to(dtype)
        for n, p in model.named_parameters()
    }


def _autograd(model, params, tokens, y, mask, noise, objective=None):
    """``vmap(grad)`` of the masked mean loss through the gates kernel, with ``noise`` as the dropout's."""
    gates = use_kernel(copy.deepcopy(model), "gates").train()
    dropouts = [m for m in gates.modules() if isinstance(m, SeededDropout)]

    def loss(p, x, yk, mk, uk):
        with supplied_noise(dict.fromkeys(dropouts, uk)):
            value = masked_mean_loss(functional_call(gates, p, (x,)), yk, mk)
        return objective(value) if objective is not None else value

    return vmap(grad_and_value(loss))(params, tokens, y, mask, noise)


def _minibatches(k, vocab, seed=0, dtype=torch.float64):
    """``k`` clients' different token ids ``[k, B, T]``, labels, a mask (client 1 short, client 2 padded) and
    dropout noise ``[k, B, H]``."""
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (k, BATCH, SEQ), generator=gen)
    y = torch.randint(0, vocab, (k, BATCH), generator=gen)
    mask = torch.ones(k, BATCH, dtype=dtype)
    mask[1, 3:] = 0
    mask[2] = 0
    return tokens, y, mask, torch.rand(k, BATCH, HIDDEN, generator=gen, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_two_steps_of_one_cell_by_hand(dtype):
    """One layer of hidden size 1, W_ih = W_hh = 0, so every position's gates are σ/tanh of the bias:
    c_0 = i g, c_1 = f c_0 + i g, h_1 = o tanh(c_1); head (1, −1), label 0: ∂loss/∂h_1 = 2 (σ(2 h_1) − 1).
    Backward by the module docstring's equations, in Python's math."""
    model = build_model("lstm_leaf", vocab_size=2, embed_dim=1, hidden_size=1, num_layers=1).to(dtype)
    b_i, b_f, b_g, b_o = 0.25, -0.5, 0.75, 0.375  # exact in float32 and float64
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor([[2.0], [-1.0]]))
        model.layers[0].weight_ih.zero_()
        model.layers[0].weight_hh.zero_()
        model.layers[0].bias.copy_(torch.tensor([b_i, b_f, b_g, b_o]))
        model.head.weight.copy_(torch.tensor([[1.0], [-1.0]]))
        model.head.bias.zero_()
    params = [p.detach().unsqueeze(0) for p in model.parameters()]
    tokens, y, mask = torch.tensor([[[0, 1]]]), torch.tensor([[0]]), torch.ones(1, 1, dtype=dtype)
    grads, loss = lstm_gradient(char_lstm(model), params, tokens, y, mask)

    def sig(z):
        return 1 / (1 + math.exp(-z))

    i, f, g, o = sig(b_i), sig(b_f + 1.0), math.tanh(b_g), sig(b_o)  # LEAF's forget bias 1.0
    c0 = i * g
    c1 = f * c0 + i * g
    h0, h1 = o * math.tanh(c0), o * math.tanh(c1)
    dh1 = 2 * (sig(2 * h1) - 1)
    dc1 = dh1 * o * (1 - math.tanh(c1) ** 2)
    dz1 = [
        dc1 * g * i * (1 - i),
        dc1 * c0 * f * (1 - f),
        dc1 * i * (1 - g * g),
        dh1 * math.tanh(c1) * o * (1 - o),
    ]
    dc0 = dc1 * f  # nothing arrives at h_0 through W_hh = 0
    dz0 = [dc0 * g * i * (1 - i), 0.0, dc0 * i * (1 - g * g), 0.0]
    expected = {
        "loss": math.log(1 + math.exp(-2 * h1)),
        "bias": [a + b for a, b in zip(dz0, dz1, strict=True)],
        "weight_ih": [[2.0 * a - 1.0 * b] for a, b in zip(dz0, dz1, strict=True)],  # x_0 = 2, x_1 = −1
        "weight_hh": [[b * h0] for b in dz1],
        "head.weight": [[(sig(2 * h1) - 1) * h1], [(1 - sig(2 * h1)) * h1]],
    }
    # a handful of σ, tanh and products per value on each side: sums of at most 2 terms, 12 roundings deep
    close = functools.partial(assert_close, terms=2, depth=12, dtype=dtype)
    exact = functools.partial(torch.tensor, dtype=torch.float64)
    close(loss, exact([expected["loss"]]), what="loss")
    _, w_ih, w_hh, bias, w_head, _ = grads
    close(bias[0], exact(expected["bias"]), what="∇b")
    close(w_ih[0], exact(expected["weight_ih"]), what="∇W_ih")
    close(w_hh[0], exact(expected["weight_hh"]), what="∇W_hh")
    close(w_head[0], exact(expected["head.weight"]), what="∇W_head")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", PRESETS)
def test_gradients_equal_autograd_on_the_gates_kernel(name, dtype):
    """Three clients with their own parameters and minibatches (one short, one padded), a per-client scale,
    PropFair's objective and, for lstm_afga, the dropout's noise."""
    model = build_model(name, hidden_size=HIDDEN)
    params = _stacked(model, 3, 0.05, dtype)
    tokens, y, mask, noise = _minibatches(3, 80, dtype=dtype)
    scale = torch.tensor([1.0, 2.5, 0.7], dtype=dtype)
    objective = functools.partial(propfair_objective, M=5.0, eps=0.2, huber=False)
    ref_grads, ref_loss = _autograd(model, params, tokens, y, mask, noise, objective)
    shape = char_lstm(model)
    grads, loss = lstm_gradient(shape, list(params.values()), tokens, y, mask, scale, objective, noise)
    # two implementations of the same sums: the weight gradients sum over SEQ positions × BATCH samples (the
    # gate products over at most 80 + HIDDEN terms); a gradient passes through the forward chain of SEQ
    # positions, two layers, the head and the loss, and as many reductions back
    bound = dict(terms=80 + HIDDEN + SEQ * BATCH, depth=2 * (SEQ + 4) + 2, dtype=dtype)
    assert_close(loss, ref_loss, **bound, what="objective")
    for (n, ref), ours in zip(ref_grads.items(), grads, strict=True):
        assert_close(ours, ref * scale.view(-1, *[1] * (ref.dim() - 1)), **bound, what=n)
    assert all(float(g[2].abs().max()) == 0.0 for g in grads)  # nothing from an all-masked minibatch


def test_stacked_clients_equal_each_client_alone():
    model = build_model("lstm_afga", hidden_size=HIDDEN)
    params = _stacked(model, 3, 0.05, torch.float64)
    tokens, y, mask, noise = _minibatches(3, 80)
    mask[2] = 1.0
    shape = char_lstm(model)
    grads, loss = lstm_gradient(shape, list(params.values()), tokens, y, mask, noise=noise)
    for k in range(3):
        one = [p[k : k + 1] for p in params.values()]
        alone, loss_k = lstm_gradient(
            shape, one, *(t[k : k + 1] for t in (tokens, y, mask)), noise=noise[k : k + 1]
        )
        # the same arithmetic in batched kernels of another size: SEQ × BATCH-term sums, the forward and
        # backward chains as above
        bound = dict(terms=80 + HIDDEN + SEQ * BATCH, depth=2 * (SEQ + 4) + 2)
        assert_close(loss[k : k + 1], loss_k, **bound, what=f"client {k} loss")
        for g, g_k in zip(grads, alone, strict=True):
            assert_close(g[k : k + 1], g_k, **bound, what=f"client {k} gradient")


def _token_data(vocab=80, n=40, seed=0) -> FederatedDataset:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (n, SEQ), generator=gen)
    y = torch.randint(0, vocab, (n,), generator=gen)
    train = [torch.arange(0, 14), torch.arange(14, 24), torch.arange(24, 36)]  # 14, 10 and 12 samples
    test = torch.arange(36, n)
    return FederatedDataset("tokens", x, y, vocab, train, [test] * 3, test, torch.full((3,), -1))


@pytest.mark.parametrize("name", PRESETS)
def test_twenty_local_steps_follow_the_fused_loop(name):
    """The engine's local training on ``bmm`` (written out) and ``loop`` (fused kernel, autograd): 20 SGD
    steps with momentum, three clients of unequal data (so short last minibatches), lstm_afga's dropout
    masks supplied alike."""
    data, model = _token_data(), build_model(name, hidden_size=HIDDEN)
    spec = LocalSpec(lr=0.5, batch_size=BATCH, steps=20, momentum=0.5)
    out = {}
    for axis in ("bmm", "loop"):
        engine = Engine(model, data, client_axis=axis, dtype=torch.float64)
        out[axis] = engine.train(np.arange(3), engine.init_params(), spec, seed=4)
    # per step the bound of the gradient test (SEQ × BATCH-term sums through 2 (SEQ + 4) + 2 reductions),
    # 20 steps one after another
    bound = dict(terms=80 + HIDDEN + SEQ * BATCH, depth=20 * (2 * (SEQ + 4) + 2))
    assert_close(out["bmm"].params, out["loop"].params, **bound, what="parameters after 20 steps")
    assert_close(out["bmm"].train_loss, out["loop"].train_loss, **bound, what="mean training loss")


def test_full_batch_gradients_follow_the_fused_loop():
    data, model = _token_data(), build_model("lstm_leaf", hidden_size=HIDDEN)
    out = {}
    for axis in ("bmm", "loop"):
        engine = Engine(
            model, data, client_axis=axis, dtype=torch.float64, eval_batch=12
        )  # chunks of samples
        w = engine.init_params()
        out[axis] = engine.gradients_and_losses(torch.stack([w, w * 0.9, w * 1.1]), np.arange(3))
    # sums over a client's 14 samples × SEQ positions, in chunks; the bound of the gradient test otherwise
    bound = dict(terms=80 + HIDDEN + 14 * SEQ, depth=2 * (SEQ + 4) + 3)
    assert_close(out["bmm"][0], out["loop"][0], **bound, what="gradients")
    assert_close(out["bmm"][1], out["loop"][1], **bound, what="losses")


def test_bmm_is_an_opt_in_for_the_lstm_and_auto_is_unchanged():
    model, cpu = build_model("lstm_leaf", hidden_size=HIDDEN), torch.device("cpu")
    assert ClientAxis.resolve("auto", model, cpu) == ClientAxis("loop")  # every cached Shakespeare run's
    bmm = ClientAxis.resolve("bmm", model, cpu)
    assert (bmm.name, bmm.mapped, bmm.lstm_kernel, bmm.lstm) == ("bmm", "loop", "fused", char_lstm(model))
    conv = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    with pytest.raises(
        ValueError, match=r"^[^\n]*or the character LSTM \(models/lstm.py\); Sequential is not"
    ):
        ClientAxis.resolve("bmm", conv, cpu)
    with pytest.raises(ValueError, match="use client_axis 'loop'"):
        Engine(model, _token_data(), client_axis="bmm", precision="bf16")
    assert char_lstm(build_model("mlp")) is None


def test_measure_times_once_per_shape_and_is_auto_for_other_models(monkeypatch):
    model = build_model("lstm_leaf", hidden_size=HIDDEN)
    calls, choice = [], ["bmm"]

    def fake(m, shape, clients, batch, seq_len, repeats):
        calls.append((clients, batch, seq_len))
        return choice[0]

    monkeypatch.setattr(client_map, "_FASTEST", {})
    monkeypatch.setattr(client_map, "_measure", fake)
    assert fastest_lstm_axis(model, 3, BATCH, SEQ) == "bmm"
    assert fastest_lstm_axis(model, 3, BATCH, SEQ) == "bmm"
    assert calls == [(3, BATCH, SEQ)]  # cached
    data, spec = _token_data(), LocalSpec(lr=0.5, batch_size=BATCH, steps=3)
    out = {}
    for axis in ("measure", "bmm"):
        engine = Engine(model, data, client_axis=axis, dtype=torch.float64)
        out[axis] = engine.train(np.arange(3), engine.init_params(), spec, seed=1).params
    assert torch.equal(out["measure"], out["bmm"])  # the measured choice runs the same computation
    # the batched step keeps idle rows in the call, masked; a loop leaves them out, as client_axis "loop" does
    for measured, skips in (("bmm", False), ("loop", True)):
        monkeypatch.setattr(client_map, "_FASTEST", {})
        choice[0] = measured
        engine = Engine(model, data, client_axis="measure")
        assert engine.stack(np.arange(3), engine.init_params(), spec, seed=0).skips_idle_rows is skips
    mlp = build_model("mlp", in_features=12, num_classes=5)
    assert ClientAxis.resolve("measure", mlp, torch.device("cpu")) == ClientAxis("bmm")


def test_measure_picks_one_of_the_two_steps(monkeypatch):
    monkeypatch.setattr(client_map, "_FASTEST", {})
    model = build_model("lstm_leaf", hidden_size=HIDDEN)
    assert fastest_lstm_axis(model, 2, BATCH, SEQ, repeats=1) in ("loop", "bmm")
    assert list(client_map._FASTEST.values()) == [fastest_lstm_axis(model, 2, BATCH, SEQ)]
