"""The memory of runs as rows: one copy of each sample pool among the runs of a process
(:class:`PoolRegistry`), and the budget that bounds how many rows one stacked computation holds at once
(:class:`ChunkBudget`)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING

import torch
from torch import nn

from fairfl_core.data.federated import FederatedDataset
from fairfl_core.sim.rows.merge import TrainCall

if TYPE_CHECKING:
    from fairfl_core.sim.engine import Engine

__all__ = ["ChunkBudget", "PoolRegistry", "activation_elements", "memory_budget", "row_bytes"]


class PoolRegistry:
    """One copy of each distinct sample pool and label vector among the runs of a process: runs of different
    seeds build their federated datasets separately, and their stacks can be one only if the tensors are."""

    def __init__(self) -> None:
        self._pools: dict[tuple[Hashable, ...], FederatedDataset] = {}
        self._labels: dict[tuple[Hashable, ...], torch.Tensor] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _digest(t: torch.Tensor) -> tuple[Hashable, ...]:
        data = t.detach().cpu().contiguous().numpy().tobytes()
        return (
            tuple(t.shape),
            str(t.dtype),
            str(t.device),
            hashlib.blake2b(data, digest_size=16).hexdigest(),
        )

    def share(self, data: FederatedDataset) -> FederatedDataset:
        """``data`` with its pool and labels replaced by the registry's equal copies (first seen: kept)."""
        with self._lock:
            pool = self._pools.setdefault(self._digest(data.x), data)
            if pool is not data:
                data.use_pool(pool)
            data.y = self._labels.setdefault(self._digest(data.y), data.y)
        return data


def memory_budget(device: torch.device, gigabytes: float | None = None, share: int = 1) -> int:
    """Bytes one stacked computation of one of ``share`` processes on ``device`` may use: ``gigabytes`` if
    given (per process), else half the free memory of a CUDA device or a quarter of the available RAM, split
    evenly between the processes."""
    if gigabytes is not None:
        return int(gigabytes * 2**30)
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0] * 0.5) // share
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 0.25) // share


def activation_elements(model: nn.Module, sample: torch.Tensor) -> int:
    """Elements of every module's output for one sample (a bound on what training keeps per sample)."""
    total = 0

    def count(_module: nn.Module, _inputs: tuple[object, ...], output: object) -> None:
        nonlocal total
        if isinstance(output, torch.Tensor):
            total += output.numel()

    handles = [m.register_forward_hook(count) for m in model.modules()]
    try:
        with torch.no_grad():
            model(sample)
    finally:
        for h in handles:
            h.remove()
    return total


def row_bytes(params: int, activations: int, batch: int, dtype: torch.dtype, momentum: bool) -> int:
    """Bytes one client row of a stack holds: its parameters, gradient, step terms and momentum
    (``4 + momentum`` copies of P), and three copies of its minibatch's activations (forward, backward)."""
    size = torch.finfo(dtype).bits // 8
    return size * (params * (4 + int(momentum)) + 3 * batch * activations)


class ChunkBudget:
    """Rows per chunk of a stack within :func:`memory_budget` (``gigabytes`` per process if given, else the
    device's share of one of ``share`` processes); each model's activations measured once."""

    def __init__(self, gigabytes: float | None = None, share: int = 1) -> None:
        self.gigabytes, self.share = gigabytes, share
        self._activations: dict[tuple[Hashable, torch.dtype], int] = {}  # per sample, by model

    def rows(self, engine: Engine, call: TrainCall, rows: int) -> int:
        """Rows per chunk (at least 1, at most ``rows``) of a stack of ``rows`` rows of ``call``'s kind on
        ``engine``."""
        model = (engine.model_key, engine.dtype)
        if model not in self._activations:
            sample = engine.data.inputs(call.schedule.index[:1, 0, :1].reshape(1), engine.dtype)
            engine.eval_mode()
            self._activations[model] = activation_elements(engine.model, sample)
        per_row = row_bytes(
            engine.space.size,
            self._activations[model],
            call.spec.batch_size,
            engine.dtype,
            bool(call.spec.momentum),
        )
        return max(1, min(rows, memory_budget(engine.device, self.gigabytes, self.share) // per_row))
