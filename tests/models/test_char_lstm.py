"""The explicit-gate character LSTM against ``torch.nn.LSTM`` (an independent implementation).

Compared in float64 (measured difference 1e-16): ``nn.LSTM`` runs oneDNN kernels whose summation order
depends on the CPU, and 80 recurrent steps accumulate float32 rounding (4e-8 of logits of size 0.27 on an AMD
EPYC) that no CPU-independent tolerance bounds tightly."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from fairfl_core.models import build_model
from fairfl_core.models.lstm import use_kernel
from tests.models.conftest import SEQ_LEN
from tests.rounding import assert_close

HIDDEN = 32  # small widths keep the comparison fast; the gate math does not depend on them

# Two implementations of the LSTM, compared at the rounding bound of tests/rounding.py. Forward: the gate
# products have at most 80 + HIDDEN terms (lstm_afga's embedding and the hidden state), and the logits pass
# through the recurrence's chain of SEQ_LEN positions, the second layer's last step and the head. Gradients:
# the weight gradients sum over SEQ_LEN positions × 4 samples, through the forward chain, the loss's 2 and as
# many reductions back.
FORWARD = dict(terms=80 + HIDDEN, depth=SEQ_LEN + 2)
GRADIENT = dict(terms=SEQ_LEN * 4, depth=2 * (SEQ_LEN + 2) + 2)


def reference_lstm(model, biases):
    """``nn.LSTM`` + ``nn.Linear`` carrying ``model``'s weights; ``biases(layer)`` gives (b_ih, b_hh)."""
    lstm = nn.LSTM(model.embedding.embedding_dim, HIDDEN, num_layers=len(model.layers), batch_first=True)
    lstm = lstm.to(model.head.weight.dtype)
    with torch.no_grad():
        for k, layer in enumerate(model.layers):
            b_ih, b_hh = biases(layer)
            getattr(lstm, f"weight_ih_l{k}").copy_(layer.weight_ih)
            getattr(lstm, f"weight_hh_l{k}").copy_(layer.weight_hh)
            getattr(lstm, f"bias_ih_l{k}").copy_(b_ih)
            getattr(lstm, f"bias_hh_l{k}").copy_(b_hh)

    def forward(tokens):
        out, _ = lstm(model.embedding(tokens))
        return model.head(out[:, -1])

    return forward


def explicit_gates(model, tokens):
    """The LSTM equations written out step by step, an oracle independent of torch's fused kernel:
    i, f, g, o = split(x_t W_ihᵀ + h W_hhᵀ + b_ih + b_hh), c = σ(f) c + σ(i) tanh(g), h = σ(o) tanh(c)."""
    x = model.embedding(tokens)
    for layer in model.layers:
        b_ih, b_hh = layer._biases()
        h = c = x.new_zeros(x.shape[0], HIDDEN)
        steps = []
        for t in range(x.shape[1]):
            i, f, g, o = (x[:, t] @ layer.weight_ih.T + h @ layer.weight_hh.T + b_ih + b_hh).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            steps.append(h)
        x = torch.stack(steps, dim=1)
    return model.head(x[:, -1])


def test_both_presets_equal_the_gate_equations_written_out(make_input):
    for name in ("lstm_leaf", "lstm_afga"):
        model = build_model(name, hidden_size=HIDDEN).double().eval()
        tokens = make_input(name, (4,))
        with torch.no_grad():
            assert_close(model(tokens), explicit_gates(model, tokens), **FORWARD, what=name)


def test_afga_lstm_equals_torch_lstm(make_input):
    """Two biases, no forget bias: exactly PyTorch's LSTM."""
    model = build_model("lstm_afga", hidden_size=HIDDEN).double().eval()
    tokens = make_input("lstm_afga", (4,))
    expected = reference_lstm(model, lambda layer: (layer.bias_ih, layer.bias_hh))
    with torch.no_grad():
        assert_close(model(tokens), expected(tokens), **FORWARD, what="logits")


def test_leaf_lstm_is_basic_lstm_cell_with_forget_bias_one(make_input):
    """LEAF/TF ``BasicLSTMCell``: one bias b per layer and +1.0 on the forget gate, i.e. PyTorch's LSTM with
    b_ih = b and b_hh = (0, 1, 0, 0) over the gate blocks [i, f, g, o]."""
    model = build_model("lstm_leaf", hidden_size=HIDDEN).double().eval()
    assert [n for n, _ in model.layers[0].named_parameters()] == ["weight_ih", "weight_hh", "bias"]
    forget_one = torch.zeros(4 * HIDDEN, dtype=torch.float64)
    forget_one[HIDDEN : 2 * HIDDEN] = 1.0
    expected = reference_lstm(model, lambda layer: (layer.bias, forget_one))
    tokens = make_input("lstm_leaf", (4,))
    with torch.no_grad():
        assert_close(model(tokens), expected(tokens), **FORWARD, what="logits")
        without = reference_lstm(model, lambda layer: (layer.bias, torch.zeros_like(forget_one)))
        assert not torch.allclose(model(tokens), without(tokens), atol=1e-4)  # far beyond rounding


def test_lstm_init_follows_torch_default():
    """Weights and biases uniform in ±1/√H as in ``nn.LSTM``."""
    model = build_model("lstm_leaf")
    bound = 1.0 / 256**0.5
    for p in model.layers.parameters():
        assert p.abs().max() <= bound and p.abs().max() > 0.9 * bound


def test_gates_kernel_equals_the_fused_kernel_forward_and_gradient(make_input):
    """``use_kernel(model, "gates")`` computes the same function as torch's fused kernel, and so the same
    gradients (float64, module docstring)."""
    for name in ("lstm_leaf", "lstm_afga"):
        fused = build_model(name, hidden_size=HIDDEN).double().eval()
        gates = use_kernel(copy.deepcopy(fused), "gates")
        assert {layer.kernel for layer in gates.layers} == {"gates"}
        tokens = make_input(name, (4,))
        labels = torch.arange(4) % 80
        outputs, grads = [], []
        for model in (fused, gates):
            out = model(tokens)
            outputs.append(out.detach())
            grads.append(torch.autograd.grad(F.cross_entropy(out, labels), list(model.parameters())))
        assert_close(outputs[1], outputs[0], **FORWARD, what=f"{name} logits")
        for g_gates, g_fused in zip(grads[1], grads[0], strict=True):
            assert_close(g_gates, g_fused, **GRADIENT, what=f"{name} gradient")


def test_gates_kernel_maps_over_stacked_clients(make_input):
    """Under ``vmap`` the gates kernel steps all clients at once and equals each client's fused forward."""
    models = [build_model("lstm_afga", seed=k, hidden_size=HIDDEN).double().eval() for k in range(3)]
    params, buffers = stack_module_state(models)
    base = use_kernel(copy.deepcopy(models[0]).to("meta"), "gates")
    tokens = make_input("lstm_afga", (3, 2))
    out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, tokens)
    with torch.no_grad():
        for k, model in enumerate(models):
            assert_close(out[k], model(tokens[k]), **FORWARD, what=f"client {k}")


def test_use_kernel_names_the_kernels():
    with pytest.raises(ValueError, match="'fused' or 'gates', got 'cudnn'"):
        use_kernel(build_model("lstm_leaf", hidden_size=HIDDEN), "cudnn")


def test_an_eval_mode_gradient_asks_the_fused_kernel_for_its_backward(make_input, monkeypatch):
    """cuDNN refuses the backward of an LSTM call made with train=False; the engine's full-batch gradients
    run in eval mode, so the layer passes train=True wherever autograd records, and False only without it."""
    model = build_model("lstm_afga", hidden_size=HIDDEN).eval()
    tokens = make_input("lstm_afga", (2,))
    flags, real = [], torch.lstm

    def spy(*args):
        flags.append(args[6])
        return real(*args)

    monkeypatch.setattr(torch, "lstm", spy)
    model(tokens).sum().backward()
    with torch.no_grad():
        model(tokens)
    assert flags == [True, True, False, False]  # two layers with autograd, two without
