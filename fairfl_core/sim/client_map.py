"""Map a per-client function over the stacked client axis: one ``torch.func.vmap`` call, or a Python loop.

``vmap`` is the default for dense models. Under ``vmap`` a convolution of K stacked clients becomes one
grouped convolution, which CPU kernels run at about half the speed of K plain ones, so ``client_axis="auto"``
loops over clients for convolutional models on CPU. Recurrent models run torch's fused LSTM kernel, which has
no ``vmap`` batching rule, so ``auto`` loops over clients for them on every device; ``vmap`` runs them on the
written-out gate equations instead (``models/lstm.py``, set by the engine), one batched matmul per position
for all clients (``benchmarks/README.md`` has the measured figures). Both compute the same function of
the same stacked tensors; only the kernels (and so the last float bits) differ. A third axis, ``bmm``, is the
gradient written out as batched matmuls, used by local training and the engine's full-batch gradients: the
closed form of ReLU MLPs (``mlp_step.py``, what ``auto`` picks for them; every function mapped here runs under
``vmap`` for it) and backpropagation through time of the character LSTM (``lstm_step.py``, only when asked
for; the other functions loop over torch's fused kernel). ``measure`` times the LSTM's two steps at each shape
and takes the faster (:func:`fastest_lstm_axis`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap
from torch.utils._pytree import PyTree, tree_leaves, tree_map

from fairfl_core.dataclass_io import check_option
from fairfl_core.models.lstm import LSTMLayer, use_kernel
from fairfl_core.sim.local import masked_mean_loss
from fairfl_core.sim.lstm_step import LSTMShape, char_lstm, lstm_gradient
from fairfl_core.sim.mlp_step import dense_relu_layers

__all__ = [
    "ClientAxis",
    "ClientAxisName",
    "client_grad_and_value",
    "client_map",
    "fastest_lstm_axis",
]

ClientAxisName = Literal["auto", "vmap", "loop", "bmm", "measure"]


@dataclass(frozen=True)
class ClientAxis:
    """How an engine's clients run side by side, decided once (:meth:`resolve`) and read by the engine and
    its trainer alike.

    ``name``: ``"vmap"``, ``"loop"``, ``"bmm"`` or ``"measure"``; ``relu_mlp``: the ReLU MLP's layers for
    ``bmm``'s closed-form step (``mlp_step.dense_relu_layers``), else None; ``lstm``: the character LSTM's
    shape for its written-out step (``lstm_step.char_lstm``) under ``bmm`` and ``measure``, else None.
    """

    name: str
    relu_mlp: tuple[bool, list[nn.Linear]] | None = field(default=None, compare=False)
    lstm: LSTMShape | None = None

    @classmethod
    def resolve(cls, client_axis: ClientAxisName, model: nn.Module, device: torch.device) -> ClientAxis:
        """``auto`` takes the closed-form step of ``mlp_step.py`` for ReLU MLPs, loops for recurrent models
        and for convolutional models on CPU, and vmaps otherwise. A name other than ``auto`` is taken as
        given (``bmm`` only for a ReLU MLP or the character LSTM); ``measure`` is ``auto`` for every model
        but the character LSTM."""
        check_option(client_axis, ClientAxisName, "engine.client_axis")
        relu_mlp, lstm = dense_relu_layers(model), char_lstm(model)
        if client_axis == "bmm" and relu_mlp is None and lstm is None:
            raise ValueError(
                "engine.client_axis='bmm' needs a ReLU MLP ([Flatten →] Linear → ReLU → … → Linear, every "
                f"Linear with a bias) or the character LSTM (models/lstm.py); {type(model).__name__} is not "
                "one: use 'auto' or 'vmap'"
            )
        if client_axis == "measure" and lstm is None:
            client_axis = "auto"
        if client_axis == "auto":
            recurrent = any(isinstance(m, LSTMLayer) for m in model.modules())
            has_conv = any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())
            if relu_mlp is not None:
                client_axis = "bmm"
            elif recurrent or (has_conv and device.type == "cpu"):
                client_axis = "loop"
            else:
                client_axis = "vmap"
        if client_axis in ("bmm", "measure") and lstm is not None:
            return cls(client_axis, lstm=lstm)
        return cls(client_axis, relu_mlp if client_axis == "bmm" else None)

    @property
    def mapped(self) -> str:
        """The axis of every per-client function mapped by :func:`client_map` (``bmm`` writes out local
        training's and full-batch gradients only: the rest runs under ``vmap``, or for the LSTM in a loop over
        its fused kernel)."""
        if self.lstm is not None:
            return "loop"
        return "vmap" if self.name == "bmm" else self.name

    def writes_out_lstm(self, model: nn.Module, clients: int, batch: int, seq_len: int) -> bool:
        """Whether the character LSTM's gradients of ``clients`` × ``batch`` sequences of ``seq_len`` run
        written out (``lstm_step.py``): always under ``bmm``, where it measured faster under ``measure``."""
        if self.lstm is None:
            return False
        return self.name == "bmm" or fastest_lstm_axis(model, clients, batch, seq_len) == "bmm"

    @property
    def lstm_kernel(self) -> str:
        """The LSTM layers' kernel (``models.lstm.use_kernel``): the written-out gates map under ``vmap``;
        torch's fused kernel is faster everywhere else."""
        return "gates" if self.name == "vmap" else "fused"


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

    def looped(*args: PyTree) -> PyTree:
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        first, dim = next((a, d) for a, d in zip(args, dims, strict=True) if d is not None)

        def client(k: int) -> tuple[PyTree, ...]:
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

    def autograd(
        params: dict[str, torch.Tensor], *args: PyTree
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        leaves = {name: t.detach().requires_grad_() for name, t in params.items()}
        with torch.enable_grad():
            value = fn(leaves, *args)
            grads = torch.autograd.grad(value, list(leaves.values()), allow_unused=True)
        filled = [
            torch.zeros_like(t) if g is None else g for t, g in zip(leaves.values(), grads, strict=True)
        ]
        return dict(zip(leaves, filled, strict=True)), value.detach()

    return client_map(autograd, client_axis, in_dims=in_dims, randomness=randomness)


_FASTEST: dict[tuple, str] = {}


def fastest_lstm_axis(model: nn.Module, clients: int, batch: int, seq_len: int, repeats: int = 3) -> str:
    """``"loop"`` or ``"bmm"``: the faster way to take the character LSTM's minibatch gradients of ``clients``
    × ``batch`` random sequences of ``seq_len`` tokens on the model's device and dtype, torch's fused kernel
    client by client (autograd) or the written-out step (``lstm_step.py``); best of ``repeats`` interleaved
    timings after one warm-up each. Cached per (model shape, clients, batch, seq_len, device, dtype) in this
    process. Draws nothing from torch's global generator."""
    shape = char_lstm(model)
    if shape is None:
        raise ValueError(
            f"fastest_lstm_axis times the character LSTM (models/lstm.py), not {type(model).__name__}"
        )
    probe = next(model.parameters())
    key = (shape, clients, batch, seq_len, str(probe.device), probe.dtype)
    if key not in _FASTEST:
        fused = use_kernel(copy.deepcopy(model), "fused").eval()
        _FASTEST[key] = _measure(fused, shape, clients, batch, seq_len, repeats)
    return _FASTEST[key]


def _measure(model: nn.Module, shape: LSTMShape, clients: int, batch: int, seq_len: int, repeats: int) -> str:
    probe = next(model.parameters())
    params = {n: p.detach().expand(clients, *p.shape).clone() for n, p in model.named_parameters()}
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, shape.vocab, (clients, batch, seq_len), generator=gen).to(probe.device)
    y = torch.randint(0, shape.vocab, (clients, batch), generator=gen).to(probe.device)
    mask = torch.ones(clients, batch, dtype=probe.dtype, device=probe.device)

    def loss(p: dict[str, torch.Tensor], x: torch.Tensor, yk: torch.Tensor, mk: torch.Tensor) -> torch.Tensor:
        return masked_mean_loss(functional_call(model, p, (x,)), yk, mk)

    looped = client_grad_and_value(loss, "loop")
    steps = {
        "loop": lambda: looped(params, tokens, y, mask),
        "bmm": lambda: lstm_gradient(shape, list(params.values()), tokens, y, mask),
    }
    best = dict.fromkeys(steps, float("inf"))
    for repeat in range(repeats + 1):  # the first round warms up
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            if probe.device.type == "cuda":
                torch.cuda.synchronize(probe.device)
            if repeat:
                best[name] = min(best[name], time.perf_counter() - start)
    return min(best, key=lambda name: best[name])
