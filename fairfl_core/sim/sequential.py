"""The sequential reference trainer: one ``nn.Module`` and one ``torch.optim.SGD``, client by client.

Each step of each client loads its parameters into the module, takes the minibatch gradient by ``backward``,
adds ``local.py``'s step terms (the same term objects as the batched trainer) and lets ``torch.optim.SGD``
apply it, with the client's own momentum buffer. It exists to check the batched trainer: the tests require
equal parameters in float64 for every registered algorithm.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from fairfl_core.models.dropout import model_dropouts, supplied_noise
from fairfl_core.sim.batches import BatchSchedule, dropout_noise
from fairfl_core.sim.client_stack import ClientStack, SampleInputs
from fairfl_core.sim.feature_view import FeatureView
from fairfl_core.sim.local import LocalResult, LocalSpec, combine, masked_mean_loss
from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.precision import Precision
from fairfl_core.sim.transfer import to_device

__all__ = ["SequentialStack", "SequentialTrainer"]


class SequentialTrainer:
    def __init__(
        self,
        model: nn.Module,
        space: ParamSpace,
        inputs: SampleInputs,
        labels: torch.Tensor,
        stats_space: ParamSpace | None = None,
        precision: Precision | None = None,
    ) -> None:
        """``precision``: the engine's (default: exact)."""
        self.model = copy.deepcopy(model)
        self.precision = precision or Precision("exact", labels.device.type)
        self.space, self.stats_space, self.inputs, self.labels = space, stats_space, inputs, labels
        self.params = [dict(self.model.named_parameters())[n] for n in space.names]
        buffers = dict(self.model.named_buffers())
        self.buffers = [buffers[n] for n in stats_space.names] if stats_space is not None else []
        self.dropouts = model_dropouts(self.model, inputs, labels.device)
        self.features = FeatureView(self.model)

    def stack(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> SequentialStack:
        return SequentialStack(self, start, spec, schedule, running)

    def train(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> LocalResult:
        stack = self.stack(start, spec, schedule, running)
        for _ in range(schedule.num_steps):
            stack.step()
        return stack.result()


def _grad(p: torch.Tensor) -> torch.Tensor:
    """``p``'s gradient from the last ``backward``."""
    if p.grad is None:
        raise RuntimeError(
            "a parameter took no part in the loss: the sequential trainer has no gradient for it"
        )
    return p.grad


class SequentialStack(ClientStack[SequentialTrainer]):
    """K clients stepped one after another through the module and ``torch.optim.SGD``."""

    def __init__(
        self,
        trainer: SequentialTrainer,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> None:
        super().__init__(trainer, start, spec, schedule, running)
        self.opt = torch.optim.SGD(trainer.params, lr=spec.lr, momentum=spec.momentum)
        self.momentum: dict[int, list[torch.Tensor]] = {}  # each client's SGD momentum buffers

    def _step(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on: np.ndarray
    ) -> None:
        host_rows = np.arange(self.num_clients) if host_rows is None else host_rows
        idx, m = self._batch(sel, steps, on)
        losses = torch.zeros(len(host_rows), dtype=self.dtype, device=self.device)
        for r, k in enumerate(host_rows):
            if not on[r]:
                continue
            losses[r] = self._direction(k, idx[r], m[r], steps[r : r + 1], on[r : r + 1])
            self._swap_momentum(k)
            self.opt.step()
            with torch.no_grad():
                for p, w in zip(self.trainer.params, self.ws, strict=True):
                    w[k].copy_(p)
        self._advance(sel, None if sel is None else host_rows, losses, on)

    def _directions(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on: np.ndarray
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        host_rows = np.arange(self.num_clients) if host_rows is None else host_rows
        idx, m = self._batch(sel, steps, on)
        losses = torch.zeros(len(host_rows), dtype=self.dtype, device=self.device)
        directions = [w.new_zeros(len(host_rows), *w.shape[1:]) for w in self.ws]
        for r, k in enumerate(host_rows):
            if on[r]:
                losses[r] = self._direction(k, idx[r], m[r], steps[r : r + 1], on[r : r + 1])
                for d, p in zip(directions, self.trainer.params, strict=True):
                    d[r].copy_(_grad(p))
        return directions, losses

    def _direction(
        self, k: int, idx: torch.Tensor, m: torch.Tensor, steps: np.ndarray, on: np.ndarray
    ) -> torch.Tensor:
        """Client k's step direction s g + δ at its parameters, left in the module's ``.grad``; its running
        and in-training statistics are updated. Returns its objective."""
        model, params = self.trainer.model, self.trainer.params
        own = to_device([k], self.device)
        ws = [t[k : k + 1] for t in self.ws]
        own_running = [t[k] for t in self.running.values()]
        with torch.no_grad():
            for p, w in zip(params, ws, strict=True):
                p.copy_(w[0])
            for buf, stat in zip(self.trainer.buffers, own_running, strict=True):
                buf.copy_(stat)
        x, y = self.trainer.inputs(idx, self.dtype), self.trainer.labels[idx]
        self.opt.zero_grad(set_to_none=False)
        model.train()
        layers, shapes = zip(*self.trainer.dropouts, strict=True) if self.trainer.dropouts else ((), ())
        noise = [u[0] for u in dropout_noise(self.schedule, [k], steps, list(shapes), self.device)]
        with supplied_noise(dict(zip(layers, noise, strict=True))):
            value = masked_mean_loss(model(x), y, m, self.spec.loss)
        if self.spec.objective is not None:
            value = self.spec.objective(value)
        value.backward()
        model.eval()
        with torch.no_grad():  # the train-mode forward pass updated the client's running statistics
            for buf, stat in zip(self.trainer.buffers, own_running, strict=True):
                stat.copy_(buf)
        self._record(own, steps, on, m[None], value.detach()[None], lambda: self.trainer.features(x)[None])
        scale, drift = combine(self.terms, ws, own)
        with torch.no_grad():
            for i, p in enumerate(params):
                if scale is not None:
                    _grad(p).mul_(scale[0])
                if drift is not None:
                    _grad(p).add_(drift[i][0])
        return value.detach()

    def _swap_momentum(self, k: int) -> None:
        """Give the optimiser client k's momentum buffers (fresh zeros before its first step)."""
        if not self.spec.momentum:
            return
        if k not in self.momentum:
            self.momentum[k] = [torch.zeros_like(p) for p in self.trainer.params]
        for p, buf in zip(self.trainer.params, self.momentum[k], strict=True):
            self.opt.state[p]["momentum_buffer"] = buf
