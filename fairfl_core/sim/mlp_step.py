"""Closed-form minibatch gradients of stacked ReLU MLPs, added into the weights by batched GEMMs.

``engine.client_axis="bmm"`` (what ``auto`` picks for these models): for a network
``[Flatten →] Linear → ReLU → … → Linear`` (``models/mlp.py``'s ``MLP``, or an ``nn.Sequential`` of those
layers) trained on the masked mean cross-entropy, backpropagation has a closed form. With a_l the input of
Linear layer l (``[K, B, in_l]`` for K stacked clients) and δ_l the gradient of client k's loss with respect
to that layer's output::

    δ_L = c_k · m_kj (softmax(z_kj) − onehot(y_kj)) / max(Σ_j m_kj, 1)      (logits z, sample mask m)
    δ_{l−1} = (δ_l W_l) ⊙ 1[a_l > 0]
    ∇W_l = δ_lᵀ a_l,   ∇b_l = Σ_j δ_l

where c_k = f′(L_k) · s_k carries a surrogate objective f of the mean loss L_k (PropFair, TERM) and a
per-client gradient scale s_k (GIFAIR-FL, masked padded steps). The gradient stays in this factored form
(:class:`FactoredGradient`): the SGD update adds ``−η δ_lᵀ a_l`` into each stacked weight with one
``baddbmm_`` per layer, so no ``[K, out, in]`` gradient is ever written and read back
(``benchmarks/README.md`` compares it with ``vmap(grad(...))``). The arithmetic is the same, so the two agree
to float64 rounding (``tests/sim/test_mlp_step.py``). The engine's full-batch per-client gradients
(``Engine.gradients``) use the same closed form for these models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn
from torch.func import grad_and_value, vmap

from fairfl_core.models.mlp import MLP

__all__ = ["FactoredGradient", "dense_relu_layers", "mlp_gradient", "output_delta"]


def _chain(module: nn.Module) -> list[nn.Module]:
    """The layers a module applies in order, for the containers whose order is known."""
    if isinstance(module, nn.Sequential):
        return [leaf for child in module for leaf in _chain(child)]
    if isinstance(module, MLP):
        return _chain(module.body) + [module.head]
    return [module]


def dense_relu_layers(model: nn.Module) -> tuple[bool, list[nn.Linear]] | None:
    """``(flattens, linears)`` if ``model`` is ``[Flatten(1, -1) →] Linear → ReLU → … → Linear`` with biases.

    ``None`` otherwise. The model's trainable parameters must be exactly the Linear layers' weights and
    biases, in that order (the flat parameter vector's order, ``ParamSpace``).
    """
    layers = _chain(model)
    flattens = bool(layers) and isinstance(layers[0], nn.Flatten)
    if flattens and (layers[0].start_dim, layers[0].end_dim) != (1, -1):
        return None
    body = layers[1:] if flattens else layers
    linears = body[0::2]
    if not body or len(body) % 2 == 0:
        return None
    if not all(isinstance(m, nn.Linear) and m.bias is not None for m in linears):
        return None
    if not all(type(m) is nn.ReLU for m in body[1::2]):
        return None
    expected = [p for m in linears for p in (m.weight, m.bias)]
    params = [p for p in model.parameters() if p.requires_grad]
    if len(params) != len(expected) or any(p is not q for p, q in zip(params, expected, strict=True)):
        return None
    return flattens, cast(list[nn.Linear], linears)


@dataclass
class FactoredGradient:
    """Every client's minibatch gradient as ``∇W_l = δ_lᵀ a_l``, ``∇b_l = Σ_j δ_l`` per Linear layer."""

    inputs: list[torch.Tensor]  # a_l [K, B, in_l]
    deltas: list[torch.Tensor]  # δ_l [K, B, out_l]

    def add_to(self, tensors: list[torch.Tensor], alpha: float) -> None:
        """``tensors += alpha · gradient`` for the stacked ``[W_0, b_0, W_1, b_1, …]`` (in place).

        Factors of another dtype than the weights (bf16 under ``engine.precision="bf16"``'s autocast, which
        must be active): their product in that dtype, added into the float32 weights."""
        for layer, (a, d) in enumerate(zip(self.inputs, self.deltas, strict=True)):
            w, b = tensors[2 * layer], tensors[2 * layer + 1]
            if a.dtype == d.dtype == w.dtype:
                w.baddbmm_(d.transpose(1, 2), a, alpha=alpha)
            else:
                w.add_(torch.bmm(d.transpose(1, 2), a), alpha=alpha)
            b.add_(d.sum(1, dtype=b.dtype), alpha=alpha)

    def tensors(self) -> list[torch.Tensor]:
        """The gradient written out, ``[∇W_0, ∇b_0, …]`` stacked over clients."""
        out = []
        for a, d in zip(self.inputs, self.deltas, strict=True):
            out += [torch.bmm(d.transpose(1, 2), a), d.sum(1)]
        return out


def output_delta(
    logits: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    scale: torch.Tensor | None = None,
    objective: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(δ_L, objective)``: the gradient of each client's ``f(masked mean cross-entropy)`` (times
    ``scale``) with respect to the logits ``[K, B, C]`` (the module docstring's δ_L), and the objective's
    value ``[K]``."""
    log_p = logits.log_softmax(-1)
    ce = -log_p.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # local.cross_entropy, from the log p it needs anyway
    count = mask.sum(1).clamp_min(1.0)
    loss = (ce * mask).sum(1) / count
    coef = mask / count[:, None]
    if objective is not None:
        slope, loss = vmap(grad_and_value(objective))(loss)
        coef = coef * slope[:, None]
    if scale is not None:
        coef = coef * scale[:, None]
    delta = log_p.exp_()
    delta.scatter_add_(-1, y.unsqueeze(-1), torch.full_like(delta[..., :1], -1.0))
    return delta.mul_(coef.unsqueeze(-1)), loss


def mlp_gradient(
    flattens: bool,
    params: list[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    scale: torch.Tensor | None = None,
    objective: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[FactoredGradient, torch.Tensor]:
    """Each client's gradient of ``f(masked mean cross-entropy)`` (times ``scale``) and the objective's value.

    ``params`` are the stacked ``[W_0 [K, out, in], b_0 [K, out], …]``; ``x`` is ``[K, B, …]``, ``y`` and
    ``mask`` ``[K, B]``, ``scale`` ``[K]`` multiplies each client's gradient (not its value).
    """
    a = x.flatten(2) if flattens else x
    if a.dim() != 3:
        raise ValueError(f"the stacked MLP step needs inputs [K, B, features], got shape {tuple(x.shape)}")
    n_layers = len(params) // 2
    inputs = []
    for layer in range(n_layers):
        inputs.append(a)
        w, b = params[2 * layer], params[2 * layer + 1]
        a = torch.baddbmm(b.unsqueeze(1), a, w.transpose(1, 2))
        if layer < n_layers - 1:
            a = a.relu_()
    delta, loss = output_delta(a, y, mask, scale, objective)
    deltas = [delta]
    for layer in range(n_layers - 1, 0, -1):
        d = torch.bmm(deltas[0], params[2 * layer])
        # ReLU's backward, 1[a > 0] ⊙ d, as one fused kernel
        deltas.insert(0, torch.ops.aten.threshold_backward(d, inputs[layer], 0.0))
    return FactoredGradient(inputs, deltas), loss
