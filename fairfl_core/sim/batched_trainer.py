"""The batched trainer: the stepping rows of a :class:`~fairfl_core.sim.client_stack.ClientStack` advanced
by one stacked computation.

All stepping rows' minibatch gradients come from one call: ``vmap(grad(...))`` over the client axis, a loop of
reverse-mode autograd calls (recurrent models; convolutional models on CPU), the closed form of
``mlp_step.py`` added into the weights by batched GEMMs (ReLU MLPs), or the character LSTM's backpropagation
through time written out as batched matmuls (``lstm_step.py``, ``client_axis="bmm"`` or ``"measure"``). The
step itself is ``local.py``'s: ``w ← w − η (s g + δ)``, with momentum ``b ← β b + s g + δ``, ``w ← w − η b``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from fairfl_core.models.dropout import draws_from_torch, model_dropouts, supplied_noise
from fairfl_core.sim.batches import BatchSchedule, NoiseAhead
from fairfl_core.sim.client_map import ClientAxis, client_grad_and_value, client_map
from fairfl_core.sim.client_stack import ClientStack, SampleInputs, per_row
from fairfl_core.sim.feature_view import FeatureView
from fairfl_core.sim.local import LocalResult, LocalSpec, Tensors, combine, masked_mean_loss, take
from fairfl_core.sim.lstm_step import lstm_gradient
from fairfl_core.sim.mlp_step import mlp_gradient
from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.precision import Precision
from fairfl_core.sim.transfer import to_device

__all__ = ["BatchedStack", "BatchedTrainer", "ExplicitGradient", "GradientFn", "StepGradient", "StepInputs"]

Params = dict[str, torch.Tensor]  # {name: [R, ...]}


class StepGradient(Protocol):
    """The stepping rows' minibatch gradients, added into stacked per-parameter tensors."""

    def add_to(self, tensors: list[torch.Tensor], alpha: float) -> None: ...


@dataclass
class StepInputs:
    """One step of the stepping rows: their parameters and running statistics ``{name: [R, ...]}`` (empty
    without BatchNorm; the train-mode forward pass updates them in place), the minibatch ``x``, labels ``y``
    and sample mask ``[R, B]``, the gradient scale ``[R]`` (None: 1) and each dropout layer's noise
    ``[R, B, ...]`` (``batches.dropout_noise``)."""

    params: Params
    stats: Params
    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor
    scale: torch.Tensor | None
    noise: tuple[torch.Tensor, ...]


GradientFn = Callable[[StepInputs], tuple[StepGradient, torch.Tensor]]  # → (gradient, objective [R])


class BatchedTrainer:
    """Local training of many clients as one stacked computation (``torch.func``)."""

    def __init__(
        self,
        model: nn.Module,
        space: ParamSpace,
        inputs: SampleInputs,
        labels: torch.Tensor,
        chunk_size: int | None = None,
        client_axis: ClientAxis | None = None,
        stats_space: ParamSpace | None = None,
        precision: Precision | None = None,
    ) -> None:
        """``client_axis``: the engine's (default: ``vmap``); ``precision``: the engine's (default: exact)."""
        self.model, self.space, self.stats_space = model, space, stats_space
        self.inputs, self.labels = inputs, labels
        self.chunk_size = chunk_size
        self.client_axis = client_axis or ClientAxis("vmap")
        self.precision = precision or Precision("exact", labels.device.type)
        view = FeatureView(model)

        def features(params: Params, stats: Params, x: torch.Tensor) -> torch.Tensor:
            tensors = {f"inner.{n}": t for n, t in {**params, **stats}.items()}
            return functional_call(view, tensors, (x,))

        self.features = client_map(features, self.client_axis.mapped)
        self.dropouts = model_dropouts(model, inputs, labels.device)

    def gradient_fn(self, spec: LocalSpec, clients: int = 1, batch: int = 1) -> GradientFn:
        """``StepInputs → (gradient, objective [R])``; ``clients`` × ``batch``: the stack's shape (what
        ``client_axis="measure"`` times the LSTM's two steps at).

        The gradient has ``add_to(tensors, alpha)``: the closed form of ``mlp_step.py`` for
        ``client_axis="bmm"`` (unless the spec brings its own ``loss``), the LSTM's written out by
        ``lstm_step.py`` where the axis takes it, else the gradient of the loss mapped over the client axis.
        Gradients are taken with respect to the stacked parameter tensors and the SGD update runs on them, so
        no step copies the whole ``[K, P]`` (differentiating the flat vector itself makes autograd
        materialise a zero-padded ``[K, P]`` per parameter tensor).
        """
        objective = spec.objective
        relu_mlp = self.client_axis.relu_mlp
        if relu_mlp is not None and spec.loss is None:
            flattens = relu_mlp[0]

            def closed_form(s: StepInputs) -> tuple[StepGradient, torch.Tensor]:
                return mlp_gradient(flattens, list(s.params.values()), s.x, s.y, s.mask, s.scale, objective)

            return closed_form
        lstm = self.client_axis.lstm
        if lstm is not None and self.writes_out_lstm(spec, clients, batch):

            def written_out(s: StepInputs) -> tuple[StepGradient, torch.Tensor]:
                params = list(s.params.values())
                grads, value = lstm_gradient(lstm, params, s.x, s.y, s.mask, s.scale, objective, *s.noise)
                return ExplicitGradient(grads), value

            return written_out
        return self._autograd_fn(spec)

    def _autograd_fn(self, spec: LocalSpec) -> GradientFn:
        """:meth:`gradient_fn`'s gradient of the loss, mapped over the client axis."""
        model, sample_loss, objective = self.model, spec.loss, spec.objective
        layers = [layer for layer, _ in self.dropouts]

        def loss(
            params: Params,
            stats: Params,
            x: torch.Tensor,
            y: torch.Tensor,
            m: torch.Tensor,
            noise: tuple[torch.Tensor, ...],
        ) -> torch.Tensor:
            with supplied_noise(dict(zip(layers, noise, strict=True))):
                value = masked_mean_loss(functional_call(model, (params, stats), (x,)), y, m, sample_loss)
            return objective(value) if objective is not None else value

        # the engine supplies every mask (SeededDropout); a model whose own dropout draws from torch's
        # generator gets one mask per client
        randomness = "different" if draws_from_torch(model) else "error"
        mapped = client_grad_and_value(loss, self.client_axis.mapped, randomness=randomness)

        def autograd(s: StepInputs) -> tuple[StepGradient, torch.Tensor]:
            grads, value = mapped(s.params, s.stats, s.x, s.y, s.mask, s.noise)
            g = list(grads.values())
            if s.scale is not None:
                torch._foreach_mul_(g, per_row(s.scale, g))
            return ExplicitGradient(g), value

        return autograd

    def writes_out_lstm(self, spec: LocalSpec, clients: int, batch: int) -> bool:
        """Whether the LSTM's minibatch gradients of a stack of ``clients`` × ``batch`` run written out
        (``ClientAxis.writes_out_lstm``; a spec with its own ``loss`` takes autograd)."""
        if self.client_axis.lstm is None or spec.loss is not None:
            return False
        seq_len = self.inputs(torch.zeros(1, dtype=torch.long, device=self.labels.device)).shape[-1]
        return self.client_axis.writes_out_lstm(self.model, clients, batch, seq_len)

    def stack(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        """The K clients of ``schedule`` at ``start`` (``[P]`` shared or ``[K, P]``), with running statistics
        ``running`` (``[Q]`` shared or ``[K, Q]``; None without BatchNorm), ready to step."""
        return BatchedStack(self, start, spec, schedule, running)

    def train(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
        chunk_size: int | None = None,
    ) -> LocalResult:
        """Every client's whole schedule, ``chunk_size`` clients at a time (bounds memory; default the
        trainer's)."""
        k_clients = schedule.index.shape[0]
        chunk = min(chunk_size or self.chunk_size or k_clients, k_clients)
        parts = []
        for lo in range(0, k_clients, chunk):
            rows = slice(lo, min(lo + chunk, k_clients))
            part_spec = spec if chunk == k_clients else spec.rows(rows)
            part_start = start[rows] if start.dim() == 2 else start
            part = self.stack(part_start, part_spec, schedule.rows(rows), running)
            for _ in range(schedule.num_steps):
                part.step()
            parts.append(part.result())
        return LocalResult.concat(parts)


class BatchedStack(ClientStack[BatchedTrainer]):
    """Every stepping row's gradient in one mapped call; the update on the stacked tensors."""

    def __init__(
        self,
        trainer: BatchedTrainer,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> None:
        super().__init__(trainer, start, spec, schedule, running)
        clients, batch = schedule.index.shape[0], schedule.index.shape[2]
        # a loop computes each row alone, so leaving a row out changes no other row's bits (a batched kernel
        # of another size may round otherwise)
        self.skips_idle_rows = trainer.client_axis.mapped == "loop" and not trainer.writes_out_lstm(
            spec, clients, batch
        )
        self.bufs = [torch.zeros_like(t) for t in self.ws] if spec.momentum else None
        self.gradient = trainer.gradient_fn(spec, clients, batch)
        self.noise = NoiseAhead(schedule, [shape for _, shape in trainer.dropouts], self.device)

    def _gradient(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on_host: np.ndarray
    ) -> _Gradient:
        """The part of a step before the update (running and in-training statistics updated)."""
        dtype = self.dtype
        idx, m = self._batch(sel, steps, on_host)
        ws = take(self.ws, sel)
        on = None if on_host.all() else to_device(on_host, self.device, dtype)
        scale, drift = combine(self.terms, ws, sel)
        step_scale = scale if on is None else on * (1.0 if scale is None else scale)
        x, y = self.trainer.inputs(idx, dtype), self.trainer.labels[idx]
        params = self.params if sel is None else dict(zip(self.params, ws, strict=True))
        running = self.running if sel is None else {n: t[sel] for n, t in self.running.items()}
        before = {n: t.clone() for n, t in running.items()} if on is not None else {}
        if not self.trainer.model.training:  # the engine's evaluations switch it to eval mode
            self.trainer.model.train()
        noise = self.noise(host_rows, steps)
        grad, loss = self.gradient(StepInputs(params, running, x, y, m, step_scale, noise))
        if on is not None:  # a row that does not step keeps its statistics too
            for n, old in before.items():
                running[n].copy_(torch.where(per_row(on, [old])[0] > 0, running[n], old))
        if sel is not None:
            for n, t in running.items():
                self.running[n].index_copy_(0, sel, t)
        self._record(sel, steps, on_host, m, loss, lambda: self.trainer.features(params, running, x))
        on_rows = None if on is None else per_row(on, ws)
        if drift is not None and on_rows is not None:
            drift = torch._foreach_mul(drift, on_rows)
        return _Gradient(ws, grad, drift, on, on_rows, loss.detach())

    def _step(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on_host: np.ndarray
    ) -> None:
        spec, lr = self.spec, self.spec.lr
        g = self._gradient(sel, host_rows, steps, on_host)
        ws, drift, on, on_rows = g.ws, g.drift, g.on, g.on_rows
        if self.bufs is None:
            if drift is not None:
                torch._foreach_add_(ws, drift, alpha=-lr)
            g.grad.add_to(ws, -lr)
        else:
            bufs = take(self.bufs, sel)
            beta = spec.momentum if on is None else per_row(on * spec.momentum + (1 - on), ws)
            torch._foreach_mul_(bufs, beta)
            if drift is not None:
                torch._foreach_add_(bufs, drift)
            g.grad.add_to(bufs, 1.0)
            torch._foreach_add_(ws, bufs if on_rows is None else torch._foreach_mul(bufs, on_rows), alpha=-lr)
            if sel is not None:
                for t, b in zip(self.bufs, bufs, strict=True):
                    t.index_copy_(0, sel, b)
        if sel is not None:
            for t, w in zip(self.ws, ws, strict=True):
                t.index_copy_(0, sel, w.detach())
        self._advance(sel, host_rows, g.loss, on_host)

    def _directions(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on_host: np.ndarray
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        g = self._gradient(sel, host_rows, steps, on_host)
        d = [torch.zeros_like(w) for w in g.ws] if g.drift is None else [t.clone() for t in g.drift]
        g.grad.add_to(d, 1.0)
        return d, g.loss


@dataclass
class _Gradient:
    """A batched step's parts before the update: the stepping rows' parameters, their gradient
    (``add_to``), the step terms' drift (masked), the step mask (None: every row steps) as ``[R]`` and per
    parameter tensor, and the objective ``[R]``."""

    ws: list[torch.Tensor]
    grad: StepGradient
    drift: Tensors | None
    on: torch.Tensor | None
    on_rows: list[torch.Tensor] | None
    loss: torch.Tensor


@dataclass
class ExplicitGradient:
    """Per-client gradients written out, stacked per parameter tensor (cf. ``mlp_step.FactoredGradient``)."""

    grads: list[torch.Tensor]

    def add_to(self, tensors: list[torch.Tensor], alpha: float) -> None:
        torch._foreach_add_(tensors, self.grads, alpha=alpha)
