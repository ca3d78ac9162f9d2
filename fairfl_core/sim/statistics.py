"""Client statistics accumulated during local training (``LocalSpec.statistics``).

At every local step the trainer hands each statistic a :class:`StepView` of the stepping clients: their
parameters before the step, the minibatch, its sample mask and the minibatch objective. A statistic keeps a
per-client accumulator over the K trained clients and returns one tensor ``[K, ...]`` at the end, in
``LocalResult.stats[name]``. Every trainer (batched on any client axis, sequential) feeds the same views, so a
statistic is written once.

Built in:

* :class:`ActivationMean`: the mean over a client's samples of a transform of its penultimate activations h
  (``model.features``). Equitable-FL (Algorithm 1) sends the server a^i, the mean of log_softmax(h) over the
  samples of the last local epoch (``transform="log_softmax"``, ``window="last_epoch"``, the defaults); the
  other reductions are ``transform`` ``"none"`` | ``"softmax"`` and ``window`` ``"all"``. The last epoch of a
  client with n samples and batch size B is its last ⌈n / min(B, n)⌉ completed steps (exactly the last epoch
  in ``epochs`` mode; the last pass over n samples' worth of minibatches in ``steps`` mode).
* :class:`StepLosses`: the minibatch objective of every step, ``[K, S]`` (NaN where a client took no step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypedDict, TypeVar

import numpy as np
import torch

from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.transfer import to_device

__all__ = [
    "ActivationMean",
    "ActivationSums",
    "ClientStatistic",
    "StepLosses",
    "StepView",
    "Transform",
    "Window",
]

A = TypeVar("A")  # a statistic's accumulator


@dataclass
class StepView:
    """One local step of the stepping clients (R of the K rows; ``rows`` indexes them, None = all K)."""

    rows: torch.Tensor | None
    step: np.ndarray  # [R] each stepping client's step number (its position in its batch schedule)
    active: torch.Tensor  # [R] 1 where the client really steps (0: padded, exhausted or truncated)
    mask: torch.Tensor  # [R, B] sample weights of the minibatch (0 for padding)
    loss: torch.Tensor  # [R] minibatch objective before the step
    features: Callable[
        [], torch.Tensor
    ]  # → [R, B, D] penultimate activations before the step (computed once)


class ClientStatistic(Generic[A]):
    """Accumulates a per-client quantity over local training in an accumulator ``A``; subclasses implement
    the three methods."""

    name: str

    def start(self, schedule: BatchSchedule) -> A:
        """A fresh accumulator for the K clients of ``schedule``."""
        raise NotImplementedError

    def update(self, acc: A, view: StepView) -> None:
        raise NotImplementedError

    def finish(self, acc: A) -> torch.Tensor:
        raise NotImplementedError


Transform = Literal["log_softmax", "softmax", "none"]
Window = Literal["last_epoch", "all"]
TRANSFORMS: dict[Transform, Callable[[torch.Tensor], torch.Tensor]] = {
    "log_softmax": lambda h: h.log_softmax(-1),
    "softmax": lambda h: h.softmax(-1),
    "none": lambda h: h,
}


class ActivationSums(TypedDict):
    """:class:`ActivationMean`'s accumulator: each client's first step inside the window ``[K]``, the sums of
    its transformed activations ``[K, D]`` (None before the first) and their sample weights ``[K]``."""

    first: np.ndarray
    sum: torch.Tensor | None
    count: torch.Tensor


@dataclass(frozen=True)
class ActivationMean(ClientStatistic[ActivationSums]):
    """Mean of ``transform(h)`` over the samples a client trains on in ``window`` (module docstring)."""

    transform: Transform = "log_softmax"
    window: Window = "last_epoch"
    name: str = "activation"

    def __post_init__(self) -> None:
        check_option(self.transform, Transform, "activation transform")
        check_option(self.window, Window, "activation window")

    def start(self, schedule: BatchSchedule) -> ActivationSums:
        done = schedule.active.sum(axis=1)
        first = (
            np.maximum(done - schedule.epoch_steps, 0) if self.window == "last_epoch" else np.zeros_like(done)
        )
        k = schedule.index.shape[0]
        return {"first": first, "sum": None, "count": schedule.mask.new_zeros(k)}

    def update(self, acc: ActivationSums, view: StepView) -> None:
        first = acc["first"] if view.rows is None else acc["first"][view.rows.cpu().numpy()]
        inside = to_device(view.step >= first, view.mask.device).to(view.mask) * view.active
        if not inside.any():
            return
        weights = view.mask * inside[:, None]  # [R, B]
        total = (TRANSFORMS[self.transform](view.features()) * weights[..., None]).sum(1)  # [R, D]
        sums = acc["sum"]
        if sums is None:
            sums = acc["sum"] = total.new_zeros(len(acc["count"]), total.shape[-1])
        rows = slice(None) if view.rows is None else view.rows
        sums[rows] += total
        acc["count"][rows] += weights.sum(1)

    def finish(self, acc: ActivationSums) -> torch.Tensor:
        if acc["sum"] is None:
            raise ValueError("no client trained on any sample, so there is no activation vector to report")
        return acc["sum"] / acc["count"].clamp_min(1)[:, None]


@dataclass(frozen=True)
class StepLosses(ClientStatistic[torch.Tensor]):
    """The minibatch objective of each client's every step, ``[K, S]`` (NaN where it took no step)."""

    name: str = "step_losses"

    def start(self, schedule: BatchSchedule) -> torch.Tensor:
        mask = schedule.mask
        return torch.full(schedule.active.shape, float("nan"), dtype=mask.dtype, device=mask.device)

    def update(self, acc: torch.Tensor, view: StepView) -> None:
        rows = torch.arange(acc.shape[0], device=acc.device) if view.rows is None else view.rows
        on = view.active > 0
        acc[rows[on], to_device(view.step, acc.device)[on]] = view.loss.detach()[on]

    def finish(self, acc: torch.Tensor) -> torch.Tensor:
        return acc
