"""Map a per-client function over the stacked client axis: one ``torch.func.vmap`` call, or a Python loop.

``vmap`` is the default for dense models. Under ``vmap`` a convolution of K stacked clients becomes one
grouped convolution, which CPU kernels run at about half the speed of K plain ones, so ``client_axis="auto"``
loops over clients for convolutional models on CPU. Recurrent models run torch's fused LSTM kernel, which has
no ``vmap`` batching rule, so ``auto`` loops over clients for them on every device; ``vmap`` runs them on the
written-out gate equations instead (``models/lstm.py``, set by the engine), one batched matmul per position
for all clients (``benchmarks/README.md`` has the measured figures). Both compute the same function of
the same stacked tensors; only the kernels (and so the last float bits) differ. A third axis, ``bmm``, is the
closed-form gradient of ReLU MLPs (``mlp_step.py``, what ``auto`` picks for them), used by local training
and the engine's full-batch gradients; every function mapped here runs under ``vmap`` for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.func import grad_and_value, vmap
from torch.utils._pytree import tree_leaves, tree_map

from fairfl_core.models.lstm import LSTMLayer
from fairfl_core.sim.mlp_step import dense_relu_layers

__all__ = ["CLIENT_AXES", "ClientAxis", "client_grad_and_value", "client_map"]

CLIENT_AXES = ("auto", "vmap", "loop", "bmm")


@dataclass(frozen=True)
class ClientAxis:
    """How an engine's clients run side by side, decided once (:meth:`resolve`) and read by the engine and
    its trainer alike.

    ``name``: ``"vmap"``, ``"loop"`` or ``"bmm"``; ``relu_mlp``: the ReLU MLP's layers for ``bmm``'s
    closed-form step (``mlp_step.dense_relu_layers``), else None.
    """

    name: str
    relu_mlp: tuple[bool, list[nn.Linear]] | None = field(default=None, compare=False)

    @classmethod
    def resolve(cls, client_axis: str, model: nn.Module, device: torch.device) -> ClientAxis:
        """``auto`` takes the closed-form step of ``mlp_step.py`` for ReLU MLPs, loops for recurrent models
        and for convolutional models on CPU, and vmaps otherwise. A name other than ``auto`` is taken as
        given (``bmm`` only for a ReLU MLP)."""
        if client_axis not in CLIENT_AXES:
            raise ValueError(f"engine.client_axis must be one of {CLIENT_AXES}, got {client_axis!r}")
        relu_mlp = dense_relu_layers(model)
        if client_axis == "bmm" and relu_mlp is None:
            raise ValueError(
                "engine.client_axis='bmm' needs a ReLU MLP ([Flatten →] Linear → ReLU → … → Linear, every "
                f"Linear with a bias); {type(model).__name__} is not one: use 'auto' or 'vmap'"
            )
        if client_axis == "auto":
            recurrent = any(isinstance(m, LSTMLayer) for m in model.modules())
            has_conv = any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())
            if relu_mlp is not None:
                client_axis = "bmm"
            elif recurrent or (has_conv and device.type == "cpu"):
                client_axis = "loop"
            else:
                client_axis = "vmap"
        return cls(client_axis, relu_mlp if client_axis == "bmm" else None)

    @property
    def mapped(self) -> str:
        """The axis of every per-client function mapped by :func:`client_map` (``bmm`` has a closed form for
        local training and full-batch gradients only: the rest runs under ``vmap``)."""
        return "vmap" if self.name == "bmm" else self.name

    @property
    def lstm_kernel(self) -> str:
        """The LSTM layers' kernel (``models.lstm.use_kernel``): the written-out gates map under ``vmap``;
        torch's fused kernel is faster everywhere else."""
        return "gates" if self.name == "vmap" else "fused"

    @property
    def computes_rows_alone(self) -> bool:
        """Each row's computation is its own call (the loop), so leaving a row out changes no other row's
        bits; a batched kernel of another size may round otherwise."""
        return self.name == "loop"


def client_map(
    fn: Callable, client_axis: str, in_dims: int | tuple = 0, randomness: str = "error"
) -> Callable:
    """``fn`` applied to each client's slice of its arguments (pytrees), outputs stacked along dim 0.

    ``in_dims`` as for ``vmap``: an int for every argument, or one entry per argument (``None``: shared by
    all clients). ``randomness`` is passed to ``vmap``; the loop draws each client's randomness in turn.
    """
    if client_axis in ("vmap", "bmm"):
        return vmap(fn, in_dims=in_dims, randomness=randomness)
    if client_axis != "loop":
        raise ValueError(f"client_axis must be 'vmap', 'bmm' or 'loop' here, got {client_axis!r}")

    def looped(*args):
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        first, dim = next((a, d) for a, d in zip(args, dims, strict=True) if d is not None)

        def client(k: int) -> tuple:
            return tuple(
                a if d is None else tree_map(lambda t, d=d: t.select(d, k), a)
                for a, d in zip(args, dims, strict=True)
            )

        outs = [fn(*client(k)) for k in range(tree_leaves(first)[0].shape[dim])]
        return tree_map(lambda *parts: torch.stack(parts), outs[0], *outs[1:])

    return looped


def client_grad_and_value(
    fn: Callable, client_axis: str, in_dims: int | tuple = 0, randomness: str = "error"
) -> Callable:
    """Per-client ``(gradient of fn w.r.t. its first argument, fn's value)``, stacked along dim 0.

    ``fn(params: dict, *args) → scalar``. ``vmap`` / ``bmm``: ``vmap(grad_and_value(fn))``. ``loop``: each
    client's gradient by reverse-mode autograd (``torch.autograd.grad``), which runs fused kernels' own
    backward (torch's fused LSTM, much faster than ``torch.func.grad`` through it on CPU); the same numbers.
    """
    if client_axis in ("vmap", "bmm"):
        return vmap(grad_and_value(fn), in_dims=in_dims, randomness=randomness)

    def autograd(params: dict, *args):
        leaves = {name: t.detach().requires_grad_() for name, t in params.items()}
        with torch.enable_grad():
            value = fn(leaves, *args)
            grads = torch.autograd.grad(value, list(leaves.values()), allow_unused=True)
        filled = [
            torch.zeros_like(t) if g is None else g for t, g in zip(leaves.values(), grads, strict=True)
        ]
        return dict(zip(leaves, filled, strict=True)), value.detach()

    return client_map(autograd, client_axis, in_dims=in_dims, randomness=randomness)
