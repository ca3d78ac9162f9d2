"""Dropout whose masks the trainer supplies, drawn on the CPU from the run's counter-based seeds.

``torch.nn.Dropout`` draws its mask from torch's generator on the input's device: the masks then depend on
the device (CUDA's generator draws other numbers than the CPU's), on everything the process drew before, and
on how many clients share a stacked call. :class:`SeededDropout` is the same inverted dropout (zero with
probability p, scale the rest by 1 / (1 − p)) with the uniform noise ``u`` of each client's minibatch
supplied by the engine (``sim/batches.py``: :func:`~fairfl_core.sim.batches.dropout_noise`), so a client's
masks are a function of the run's seed, the round, the client's row and the step alone. Called outside the
engine (a notebook calling ``model.train(); model(x)``), it falls back to ``torch.nn.Dropout``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

__all__ = ["PROBE", "SeededDropout", "draws_from_torch", "dropout_shapes", "model_dropouts", "supplied_noise"]

PROBE = object()  # the value of the context while shapes are probed
_NOISE: ContextVar[dict | object | None] = ContextVar("fairfl_dropout_noise", default=None)
_SHAPES: ContextVar[list] = ContextVar("fairfl_dropout_shapes")


class SeededDropout(nn.Dropout):
    """Inverted dropout, mask ``u ≥ p`` from the supplied uniform noise ``u`` of the input's shape."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = _NOISE.get()
        if noise is PROBE:
            _SHAPES.get().append((self, tuple(x.shape[1:])))
            return x
        if not self.training or self.p == 0:
            return x
        if not isinstance(noise, dict):  # outside the engine
            return super().forward(x)
        return x * (noise[self] >= self.p).to(x.dtype) / (1 - self.p)


@contextmanager
def supplied_noise(noise: dict[nn.Module, torch.Tensor]) -> Iterator[None]:
    """Within the block, each :class:`SeededDropout` in ``noise`` masks with its tensor (shaped like its
    input)."""
    token = _NOISE.set(noise)
    try:
        yield
    finally:
        _NOISE.reset(token)


def dropout_shapes(model: nn.Module, sample: torch.Tensor) -> list[tuple[SeededDropout, tuple[int, ...]]]:
    """The model's :class:`SeededDropout` layers in forward order with the per-sample shape of their input,
    from one eval-mode forward pass of ``sample`` (``[1, ...]``; nothing in the model changes)."""
    if not any(isinstance(m, SeededDropout) for m in model.modules()):
        return []
    found: list = []
    token, shapes_token = _NOISE.set(PROBE), _SHAPES.set(found)
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(sample)
    finally:
        _NOISE.reset(token)
        _SHAPES.reset(shapes_token)
        model.train(training)
    return found


def draws_from_torch(model: nn.Module) -> bool:
    """Whether training the model draws from torch's generator (dropout masks other than
    :class:`SeededDropout`'s, whose noise the engine supplies per row)."""
    return any(
        isinstance(m, nn.modules.dropout._DropoutNd) and not isinstance(m, SeededDropout) and m.p > 0
        for m in model.modules()
    )


def model_dropouts(model: nn.Module, inputs: Callable, device) -> list:
    """The model's :class:`SeededDropout` layers with their per-sample input shapes (probed on sample 0)."""
    if not any(isinstance(m, SeededDropout) for m in model.modules()):
        return []
    dtype = next(model.parameters()).dtype
    return dropout_shapes(model, inputs(torch.zeros(1, dtype=torch.long, device=device), dtype))
