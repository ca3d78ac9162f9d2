"""The character LSTM's minibatch gradient written out: forward and backpropagation through time, batched over
clients by batched matmuls.

``engine.client_axis="bmm"`` for ``models/lstm.py``'s ``CharLSTM`` (both presets; an explicit opt-in, ``auto``
keeps the loop over torch's fused kernel). K clients' stacked parameters ``[K, ...]`` and minibatches
``[K, B, T]`` of token ids advance together: one ``baddbmm`` per layer for the input projections of all T
positions, then one per position for the recurrence, for every client at once, with no autograd graph.
Forward, per layer (the model docstring's equations, gates in PyTorch's layout ``[i, f, g, o]``)::

    z_t = x_t W_ihᵀ + b_ih + b_hh + h_{t−1} W_hhᵀ,    i, f, o = σ(z_i, z_f, z_o),   g = tanh(z_g)
    c_t = f ⊙ c_{t−1} + i ⊙ g,    h_t = o ⊙ tanh(c_t)                (h_{−1} = c_{−1} = 0)

then ``logits = dropout(h_T) W_headᵀ + b_head`` on the top layer's last step and the masked mean cross-entropy
(``mlp_step.output_delta`` gives δ at the logits, with the surrogate objective and the per-client scale).
Backpropagation through time (Werbos 1990; the LSTM's form as in Graves, *Supervised Sequence Labelling with
Recurrent Neural Networks*, 2012, §4.6), from t = T−1 down to 0, with dh_t the gradient arriving at h_t
(from the layer above at t, and from z_{t+1} through W_hh) and σ′ = σ(1 − σ), tanh′ = 1 − tanh²::

    dc_t = dc_{t+1} ⊙ f_{t+1} + dh_t ⊙ o_t ⊙ (1 − tanh²(c_t))
    dz_i = dc_t ⊙ g_t ⊙ i_t(1 − i_t),   dz_f = dc_t ⊙ c_{t−1} ⊙ f_t(1 − f_t)
    dz_g = dc_t ⊙ i_t ⊙ (1 − g_t²),      dz_o = dh_t ⊙ tanh(c_t) ⊙ o_t(1 − o_t)
    dh_{t−1} += dz_t W_hh,   dx_t = dz_t W_ih
    ∇W_ih = Σ_t dz_tᵀ x_t,   ∇W_hh = Σ_t dz_tᵀ h_{t−1},   ∇b = Σ_t Σ_j dz_t

(``lstm_leaf``'s one bias takes ∇b, its constant forget bias none; ``lstm_afga``'s two take ∇b each), and the
embedding's gradient is ``onehot(tokens)ᵀ dx`` (a batched matmul: the same bits on every run and device, which
a scattered add on CUDA does not give). Tensors are kept time-major, ``[K, T, B, ·]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from fairfl_core.models.dropout import SeededDropout
from fairfl_core.models.lstm import CharLSTM, LSTMLayer
from fairfl_core.sim.mlp_step import output_delta

__all__ = ["LSTMShape", "char_lstm", "lstm_gradient"]


@dataclass(frozen=True)
class LSTMShape:
    """What the written-out step needs of a :class:`~fairfl_core.models.lstm.CharLSTM` (hashable: a key of
    ``client_map.fastest_lstm_axis``'s cache)."""

    vocab: int
    embed: int
    hidden: int
    num_layers: int
    num_biases: int  # 1: one trainable bias and the constant forget bias (lstm_leaf); 2: b_ih and b_hh
    forget_bias: float
    dropout: float  # before the head (SeededDropout's p; 0: none)


def char_lstm(model: nn.Module) -> LSTMShape | None:
    """The shape of ``model`` if it is a ``CharLSTM`` whose parameters are all trainable, else None."""
    if not isinstance(model, CharLSTM) or not all(p.requires_grad for p in model.parameters()):
        return None
    if not isinstance(model.dropout, (SeededDropout, nn.Identity)):
        return None
    layer = cast(LSTMLayer, model.layers[0])
    return LSTMShape(
        vocab=model.embedding.num_embeddings,
        embed=model.embedding.embedding_dim,
        hidden=layer.hidden_size,
        num_layers=len(model.layers),
        num_biases=len(layer.bias_names),
        forget_bias=layer.forget_bias,
        dropout=model.dropout.p if isinstance(model.dropout, SeededDropout) else 0.0,
    )


@dataclass
class _Layer:
    """One layer's forward pass over ``[K, T, B, ·]``: its input, the gates (i, f, o after σ, g after tanh),
    the cell states and their tanh, the outputs h."""

    x: torch.Tensor  # [K, T·B, in]
    gates: torch.Tensor  # [K, T, B, 4H]
    cells: torch.Tensor  # [K, T, B, H]
    tanh_cells: torch.Tensor
    h: torch.Tensor


def _gate_bias(shape: LSTMShape, biases: list[torch.Tensor]) -> torch.Tensor:
    """b_ih + b_hh ``[K, 4H]``: the two biases, or the one bias plus the constant forget bias."""
    if shape.num_biases == 2:
        return biases[0] + biases[1]
    bias = biases[0].clone()
    bias[:, shape.hidden : 2 * shape.hidden] += shape.forget_bias
    return bias


def _forward(
    x: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor, steps: int
) -> _Layer:
    """The layer's forward recurrence (module docstring) over ``x [K, T·B, in]``."""
    k, hidden = x.shape[0], w_hh.shape[2]
    projected = torch.baddbmm(bias.unsqueeze(1), x, w_ih.transpose(1, 2)).view(k, steps, -1, 4 * hidden)
    gates = torch.empty_like(projected)
    cells = projected.new_empty(*projected.shape[:3], hidden)
    tanh_cells, h_all = torch.empty_like(cells), torch.empty_like(cells)
    h = c = projected.new_zeros(cells[:, 0].shape)
    for t in range(steps):
        z = torch.baddbmm(projected[:, t], h, w_hh.transpose(1, 2))
        a = torch.sigmoid(z, out=gates[:, t])  # i, f, o; g's block is then overwritten by its tanh
        i, f, g, o = a.chunk(4, dim=-1)
        torch.tanh(z[..., 2 * hidden : 3 * hidden], out=g)
        c = torch.addcmul(i * g, f, c, out=cells[:, t])
        h = torch.mul(o, torch.tanh(c, out=tanh_cells[:, t]), out=h_all[:, t])
    return _Layer(x, gates, cells, tanh_cells, h_all)


def _backward(
    layer: _Layer, w_hh: torch.Tensor, dh: torch.Tensor, d_out: torch.Tensor | None
) -> torch.Tensor:
    """dz ``[K, T, B, 4H]`` by backpropagation through time (module docstring): ``dh [K, B, H]`` arrives at
    the last step's h, ``d_out [K, T, B, H]`` (None: nothing) at every step's. Overwrites ``layer.gates``."""
    steps, hidden = layer.gates.shape[1], w_hh.shape[2]
    i, f, g, o = layer.gates.chunk(4, dim=-1)
    forget = f.clone()
    # the factors of dc and dh in dz, for every step at once: [i, f, g] ← [g σ′(i), c_{t−1} σ′(f), i tanh′(g)]
    # and o ← tanh(c) σ′(o), written over the gates; o (1 − tanh²(c)) carries dh into dc
    out_factor = o * (1 - layer.tanh_cells.square())
    c_prev = torch.cat([torch.zeros_like(layer.cells[:, :1]), layer.cells[:, :-1]], dim=1)
    coef_i, coef_g = g * (i * (1 - i)), i * (1 - g.square())
    f.mul_(1 - forget).mul_(c_prev)
    i.copy_(coef_i)
    g.copy_(coef_g)
    o.mul_(1 - o).mul_(layer.tanh_cells)
    by_cell = layer.gates[..., : 3 * hidden].unflatten(-1, (3, hidden))
    dz = torch.empty_like(layer.gates)
    dc = torch.zeros_like(dh)
    for t in reversed(range(steps)):
        if d_out is not None:
            dh = dh + d_out[:, t]
        dc = torch.addcmul(dc * forget[:, t + 1] if t + 1 < steps else dc, dh, out_factor[:, t])
        torch.mul(dc.unsqueeze(-2), by_cell[:, t], out=dz[:, t, :, : 3 * hidden].unflatten(-1, (3, hidden)))
        torch.mul(dh, o[:, t], out=dz[:, t, :, 3 * hidden :])
        if t:
            dh = torch.bmm(dz[:, t], w_hh)
    return dz


def lstm_gradient(
    shape: LSTMShape,
    params: list[torch.Tensor],
    tokens: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    scale: torch.Tensor | None = None,
    objective: Callable[[torch.Tensor], torch.Tensor] | None = None,
    noise: torch.Tensor | None = None,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Each client's gradient of ``f(masked mean cross-entropy)`` (times ``scale``), written out, and the
    objective's value ``[K]``.

    ``params``: the stacked parameters ``[K, ...]`` in the model's order (embedding, each layer's ``weight_ih,
    weight_hh`` and bias(es), the head's weight and bias); ``tokens [K, B, T]``; ``y``, ``mask [K, B]``;
    ``scale [K]`` multiplies each client's gradient (not its value); ``noise [K, B, H]``: the dropout's
    uniform noise (``models/dropout.SeededDropout``: keep where ``u ≥ p``, scaled by 1 / (1 − p)), None in
    eval mode. Returns the gradients in the order of ``params``.
    """
    k, batch, steps = tokens.shape
    per_layer = 2 + shape.num_biases
    embedding, (w_head, b_head) = params[0], params[-2:]
    weights = [params[1 + n * per_layer : 1 + (n + 1) * per_layer] for n in range(shape.num_layers)]
    # time-major [K, T·B] token ids; the embedding as a gather, its gradient as a one-hot matmul
    ids = tokens.transpose(1, 2).reshape(k, steps * batch)
    x = embedding.gather(1, ids.unsqueeze(-1).expand(-1, -1, shape.embed))
    layers = []
    for w_ih, w_hh, *biases in weights:
        layers.append(_forward(x, w_ih, w_hh, _gate_bias(shape, biases), steps))
        x = layers[-1].h.view(k, steps * batch, -1)
    features = layers[-1].h[:, -1]
    keep = None
    if noise is not None and shape.dropout:
        keep = (noise >= shape.dropout).to(features.dtype)
        features = features * keep / (1 - shape.dropout)  # SeededDropout's arithmetic
    delta, loss = output_delta(
        torch.baddbmm(b_head.unsqueeze(1), features, w_head.transpose(1, 2)), y, mask, scale, objective
    )
    grads = [torch.bmm(delta.transpose(1, 2), features), delta.sum(1)]
    dh = torch.bmm(delta, w_head)
    if keep is not None:
        dh = dh * keep / (1 - shape.dropout)
    d_out = None
    for layer, (w_ih, w_hh, *biases) in zip(reversed(layers), reversed(weights), strict=True):
        dz = _backward(layer, w_hh, dh, d_out).view(k, steps * batch, -1)
        dz_t = dz.transpose(1, 2)
        h_prev = layer.h[:, :-1].reshape(k, -1, w_hh.shape[2])
        d_bias = dz.sum(1)
        grads[:0] = [
            torch.bmm(dz_t, layer.x),
            torch.bmm(dz_t[..., batch:], h_prev),
            *[d_bias] * len(biases),
        ]
        d_x = torch.bmm(dz, w_ih)
        d_out, dh = d_x.view(k, steps, batch, -1), torch.zeros_like(dh)
    one_hot = torch.zeros(k, steps * batch, shape.vocab, dtype=d_x.dtype, device=d_x.device)
    one_hot.scatter_(-1, ids.unsqueeze(-1), 1.0)
    return [torch.bmm(one_hot.transpose(1, 2), d_x), *grads], loss
