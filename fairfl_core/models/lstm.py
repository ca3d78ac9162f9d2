"""Character LSTM for Shakespeare next-character prediction, with explicit gate math.

Input: int64 token ids ``[B, T]`` (LEAF: T = 80, vocabulary of 80 symbols); output: logits ``[B, vocab]``
for the character after the last position. ``Embedding → num_layers × LSTM(hidden) → last step → head``.

Each layer computes, over the layer's own parameters (so ``functional_call`` and ``torch.func.grad`` see
ordinary parameters), with gates in PyTorch's layout ``[i, f, g, o]``::

    i, f, g, o = split(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)
    c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),   h_t = σ(o) ⊙ tanh(c_t)

by one of two kernels (``LSTMLayer.kernel``, the same function; only the last float bits differ):

* ``"fused"`` (default): torch's fused LSTM kernel (``torch.lstm``: oneDNN on CPU, cuDNN on CUDA). It has no
  ``vmap`` batching rule, so the engine loops over clients for it (``client_axis="loop"``).
* ``"gates"``: the equations above written out, the input projection of all T positions as one matmul, then
  one ``h W_hhᵀ`` per position. It maps under ``vmap``, so with ``engine.client_axis="vmap"`` every client of
  a step (and every run of a rows batch) advances one position in one batched matmul (:func:`use_kernel`).

With ``engine.client_axis="bmm"`` local training and full-batch gradients skip both: ``sim/lstm_step.py``
writes the forward pass and backpropagation through time out for all clients at once.

Presets:

* ``lstm_leaf`` — LEAF ``models/shakespeare/stacked_lstm.py`` (also q-FFL's and Ditto's, hence GIFAIR-FL
  §5.2): embedding 8, 2 × ``BasicLSTMCell(256)``, dense 256 → 80. TensorFlow's ``BasicLSTMCell`` has
  **one** bias of 4·256 per layer and adds a constant ``forget_bias = 1.0`` (not a parameter) to the forget
  gate: 640 + 271,360 + 525,312 + 20,560 = **817,872** parameters. In PyTorch's form that is b_ih = b and a
  constant b_hh that is 1.0 on the forget block and 0 elsewhere.
* ``lstm_afga`` — AFGA §6: embedding 80, 2 × LSTM(256) in PyTorch form (**two** biases ``b_ih``, ``b_hh`` per
  layer, no forget bias), Dropout(0.05) before the dense layer: 6,400 + 346,112 + 526,336 + 20,560 =
  **899,408** parameters. Numerically identical to ``nn.LSTM`` with the same weights.

``features`` is the top layer's last hidden state h_T (after AFGA's dropout, identity in eval mode).
Initialisation: PyTorch's ``nn.LSTM``/``nn.Embedding``/``nn.Linear`` defaults (LEAF's TensorFlow code uses
Glorot-uniform kernels and zero biases).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from fairfl_core.models.dropout import SeededDropout


class LSTMLayer(nn.Module):
    """One LSTM layer over a whole sequence ``[B, T, in] → [B, T, hidden]`` (zero initial state).

    ``num_biases=2``: PyTorch's trainable ``bias_ih`` and ``bias_hh``; ``num_biases=1``: one trainable
    ``bias`` plus the constant ``forget_bias`` on the forget gate (TensorFlow's ``BasicLSTMCell``)."""

    kernel = "fused"  # or "gates" (module docstring; set by :func:`use_kernel`)

    def __init__(self, input_size: int, hidden_size: int, num_biases: int, forget_bias: float):
        super().__init__()
        gates = 4 * hidden_size
        self.hidden_size, self.forget_bias = hidden_size, forget_bias
        self.weight_ih = nn.Parameter(torch.empty(gates, input_size))
        self.weight_hh = nn.Parameter(torch.empty(gates, hidden_size))
        self.bias_names = ("bias_ih", "bias_hh") if num_biases == 2 else ("bias",)
        for name in self.bias_names:
            self.register_parameter(name, nn.Parameter(torch.empty(gates)))
        bound = 1.0 / math.sqrt(hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def _biases(self) -> tuple[torch.Tensor, torch.Tensor]:
        # attribute lookups (not get_parameter): under functional_call the parameters are plain tensors
        if len(self.bias_names) == 2:
            return getattr(self, "bias_ih"), getattr(self, "bias_hh")  # noqa: B009
        bias = getattr(self, "bias")  # noqa: B009
        constant = torch.zeros_like(bias)
        constant[self.hidden_size : 2 * self.hidden_size] = self.forget_bias
        return bias, constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kernel == "gates":
            return self._gates(x)
        state = x.new_zeros(1, x.shape[0], self.hidden_size)
        weights = [self.weight_ih, self.weight_hh, *self._biases()]
        # the kernel's train flag keeps what a backward pass needs (no dropout here: it changes no output);
        # cuDNN refuses the backward of an eval-mode call, which the engine's full-batch gradients make
        train = self.training or torch.is_grad_enabled()
        out, *_ = torch.lstm(x, (state, state), weights, True, 1, 0.0, train, False, True)
        return out

    def _gates(self, x: torch.Tensor) -> torch.Tensor:
        bias_ih, bias_hh = self._biases()
        projected = x @ self.weight_ih.T + (bias_ih + bias_hh)  # [B, T, 4H]: every position at once
        h = c = x.new_zeros(x.shape[0], self.hidden_size)
        outputs = []
        for t in range(x.shape[1]):
            i, f, g, o = (projected[:, t] + h @ self.weight_hh.T).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1)


def use_kernel(model: nn.Module, kernel: str) -> nn.Module:
    """Set every :class:`LSTMLayer` of ``model`` to ``kernel`` (``"fused"`` or ``"gates"``); returns it."""
    if kernel not in ("fused", "gates"):
        raise ValueError(f"LSTM kernel must be 'fused' or 'gates', got {kernel!r}")
    for module in model.modules():
        if isinstance(module, LSTMLayer):
            module.kernel = kernel
    return model


class CharLSTM(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        hidden_size: int,
        num_layers: int,
        num_biases: int,
        forget_bias: float,
        dropout: float,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        sizes = [embed_dim] + [hidden_size] * num_layers
        self.layers = nn.ModuleList(
            LSTMLayer(sizes[k], hidden_size, num_biases, forget_bias) for k in range(num_layers)
        )
        self.dropout = SeededDropout(dropout) if dropout else nn.Identity()
        self.head = nn.Linear(hidden_size, vocab_size)

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.dropout(x[:, -1])

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(tokens))


def _lstm_preset(embed_dim: int, num_biases: int, forget_bias: float, dropout: float):
    def build(
        *, vocab_size: int = 80, embed_dim: int = embed_dim, hidden_size: int = 256, num_layers: int = 2
    ) -> CharLSTM:
        return CharLSTM(vocab_size, embed_dim, hidden_size, num_layers, num_biases, forget_bias, dropout)

    return build


PRESETS = {
    "lstm_leaf": _lstm_preset(embed_dim=8, num_biases=1, forget_bias=1.0, dropout=0.0),
    "lstm_afga": _lstm_preset(embed_dim=80, num_biases=2, forget_bias=0.0, dropout=0.05),
}
