"""Local training at step level: the stacked state of K clients, advanced one step for any subset of them.

A :class:`ClientStack` holds the K clients' parameters (one contiguous ``[K, ...]`` tensor per parameter),
their momentum buffers, their position in their own minibatch stream (a ``BatchSchedule``: client k's s-th
step uses ``schedule.index[k, s]``), their running objective and their statistics. ``step(rows)`` advances
the given rows by one step each, on each row's next minibatch, and leaves the other rows exactly as they are;
``mix(fn)`` replaces the stacked parameters X by fn(X) (gossip X ← W X); ``result()`` reads everything out.
``BatchedTrainer.train`` is a loop of ``step()`` over the schedule, so training K steps at once and taking K
single steps give the same numbers (``tests/sim/test_stack.py``).

All stepping rows' minibatch gradients come from one call: ``vmap(grad(...))`` over the client axis, a loop of
reverse-mode autograd calls (recurrent models; convolutional models on CPU), or the closed form of
``mlp_step.py`` added into the weights by batched GEMMs (ReLU MLPs). The step itself is ``local.py``'s:
``w ← w − η (s g + δ)``, with momentum ``b ← β b + s g + δ``, ``w ← w − η b``. A row that takes no step (its
schedule is padded or exhausted) keeps its parameters and momentum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from fairfl_core.models.dropout import SeededDropout, dropout_shapes, supplied_noise
from fairfl_core.sim.batches import BatchSchedule, dropout_noise
from fairfl_core.sim.client_map import client_grad_and_value, client_map
from fairfl_core.sim.local import LocalResult, LocalSpec, combine, masked_mean_loss, take
from fairfl_core.sim.mlp_step import dense_relu_layers, mlp_gradient
from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.statistics import StepView

__all__ = [
    "BatchedStack",
    "BatchedTrainer",
    "ClientStack",
    "FeatureView",
    "draws_from_torch",
    "model_dropouts",
    "per_row",
]


class FeatureView(nn.Module):
    """A model whose ``forward`` is ``model.features(x)`` (parameter names prefixed ``inner.``)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.inner = model

    def forward(self, x):
        return self.inner.features(x)


class BatchedTrainer:
    """Local training of many clients as one stacked computation (``torch.func``)."""

    def __init__(
        self,
        model: nn.Module,
        space: ParamSpace,
        inputs: Callable,
        labels: torch.Tensor,
        chunk_size: int | None = None,
        client_axis: str = "vmap",
        stats_space: ParamSpace | None = None,
    ):
        self.model, self.space, self.stats_space = model, space, stats_space
        self.inputs, self.labels = inputs, labels
        self.chunk_size = chunk_size
        self.client_axis = client_axis
        self.relu_mlp = dense_relu_layers(model) if client_axis == "bmm" else None  # checked by the engine
        view = FeatureView(model)

        def features(params, stats, x):
            tensors = {f"inner.{n}": t for n, t in {**params, **stats}.items()}
            return functional_call(view, tensors, (x,))

        self.features = client_map(features, "vmap" if client_axis == "bmm" else client_axis)
        self.dropouts = model_dropouts(model, inputs, labels.device)

    def gradient_fn(self, spec: LocalSpec) -> Callable:
        """``(params {name: [R, ...]}, stats, x, y, mask, scale [R] | None, noise) → (gradient, objective
        [R])``; ``noise``: each dropout layer's ``[R, B, ...]`` (``batches.dropout_noise``).

        ``stats``: the rows' running statistics ``{name: [R, ...]}`` (empty without BatchNorm), updated in
        place by the train-mode forward pass.

        The gradient has ``add_to(tensors, alpha)``: the closed form of ``mlp_step.py`` for
        ``client_axis="bmm"`` (unless the spec brings its own ``loss``), else the gradient of the loss mapped
        over the client axis. Gradients are taken with respect to the stacked parameter tensors and the SGD
        update runs on them, so no step copies the whole ``[K, P]`` (differentiating the flat vector itself
        makes autograd materialise a zero-padded ``[K, P]`` per parameter tensor).
        """
        objective = spec.objective
        if self.client_axis == "bmm" and spec.loss is None:
            assert self.relu_mlp is not None  # the engine checked the model
            flattens = self.relu_mlp[0]

            def closed_form(params, stats, x, y, m, scale, noise):
                return mlp_gradient(flattens, list(params.values()), x, y, m, scale, objective)

            return closed_form
        model, base_loss = self.model, spec.loss or masked_mean_loss
        layers = [layer for layer, _ in self.dropouts]

        def loss(params, stats, x, y, m, noise):
            with supplied_noise(dict(zip(layers, noise, strict=True))):
                value = base_loss(functional_call(model, (params, stats), (x,)), y, m)
            return objective(value) if objective is not None else value

        # the engine supplies every mask (SeededDropout); a model whose own dropout draws from torch's
        # generator gets one mask per client
        axis = "vmap" if self.client_axis == "bmm" else self.client_axis
        randomness = "different" if draws_from_torch(model) else "error"
        mapped = client_grad_and_value(loss, axis, randomness=randomness)

        def autograd(params, stats, x, y, m, scale, noise):
            grads, value = mapped(params, stats, x, y, m, noise)
            g = list(grads.values())
            if scale is not None:
                torch._foreach_mul_(g, per_row(scale, g))
            return ExplicitGradient(g), value

        return autograd

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


def check_full_batches(schedule: BatchSchedule) -> None:
    """BatchNorm's batch statistics cannot leave padding out: every step a client takes must be a full
    minibatch."""
    partial = (schedule.mask.sum(-1) < schedule.mask.shape[-1]).cpu().numpy() & schedule.active
    if partial.any():
        raise ValueError(
            "a model with BatchNorm would normalise a padded minibatch (one with fewer than batch_size "
            "samples: the last of an epoch, or every one of a client holding fewer than batch_size samples): "
            "use a batch_size that divides every client's sample count and local_steps mode, or a model with "
            "GroupNorm (norm='group')"
        )


def draws_from_torch(model: nn.Module) -> bool:
    """Whether training the model draws from torch's generator (dropout masks other than
    :class:`~fairfl_core.models.dropout.SeededDropout`'s, whose noise the engine supplies per row)."""
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


def per_row(values: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """A per-client ``[R]`` vector shaped to multiply each stacked parameter tensor ``[R, ...]``."""
    return [values.view(-1, *([1] * (t.dim() - 1))) for t in like]


class ClientStack:
    """The local-training state of K clients (module docstring); subclasses define ``step``."""

    def __init__(self, trainer, start: torch.Tensor, spec: LocalSpec, schedule: BatchSchedule, running=None):
        k = schedule.index.shape[0]
        self.trainer, self.spec, self.schedule = trainer, spec, schedule
        self.dtype, self.device = start.dtype, start.device
        # one contiguous [K, ...] tensor per parameter: a batched GEMM into a strided view of the flat [K, P]
        # runs client by client
        flat = start if start.dim() == 2 else start.expand(k, -1)
        self.params = {
            name: t.clone(memory_format=torch.contiguous_format)
            for name, t in trainer.space.unflatten(flat).items()
        }
        self.ws = list(self.params.values())
        self.running = {}  # each client's BatchNorm running statistics, {name: [K, ...]}
        if running is not None:
            check_full_batches(schedule)
            stats = trainer.stats_space.unflatten(running)  # [Q] shared or [K, Q] per client
            self.running = {
                n: (t if running.dim() == 2 else t.expand(k, *t.shape)).clone(
                    memory_format=torch.contiguous_format
                )
                for n, t in stats.items()
            }
        self.terms = [term.bind(trainer.space, self.ws) for term in spec.step_terms()]
        self.cursor = np.zeros(k, dtype=np.int64)
        self.loss_sum = torch.zeros(k, dtype=self.dtype, device=self.device)
        self.stats = {stat.name: (stat, stat.start(schedule)) for stat in spec.statistics}

    @property
    def num_clients(self) -> int:
        return len(self.cursor)

    def step(self, rows: np.ndarray | None = None) -> None:
        """Advance ``rows`` (indices into the K clients, None = all) by one step each, on each one's next
        minibatch; a row whose schedule is padded or exhausted there stays as it is."""
        sel, host_rows, steps, on = self._positions(rows)
        if on.any():
            self._step(sel, host_rows, steps, on)
        elif len(steps):
            self._advance(sel, host_rows, torch.zeros(len(steps), dtype=self.dtype, device=self.device), on)

    def _step(self, sel, host_rows, steps, on) -> None:
        """One step of the rows ``sel`` (None: all, in lockstep) at least one of which really steps."""
        raise NotImplementedError

    def _positions(self, rows: np.ndarray | None):
        """``(sel, host_rows, steps, on)`` of the stepping rows: ``sel`` a LongTensor (None: all K rows, every
        one at the same step), their step numbers, and whether each really steps (bool ``[R]``)."""
        schedule = self.schedule
        if rows is None and (self.cursor == self.cursor[0]).all():
            steps = self.cursor.copy()
            s = min(int(steps[0]), schedule.num_steps - 1)
            return None, None, steps, schedule.active[:, s] & (steps < schedule.num_steps)
        host_rows = np.arange(self.num_clients) if rows is None else np.asarray(rows, dtype=np.int64)
        inside = ((host_rows >= 0) & (host_rows < self.num_clients)).all()
        if not inside or len(np.unique(host_rows)) != len(host_rows):
            raise ValueError(
                f"step(rows): rows must be distinct indices in [0, {self.num_clients}) of the stacked "
                f"clients, got {host_rows.tolist()}"
            )
        steps = self.cursor[host_rows]
        at = np.minimum(steps, schedule.num_steps - 1)
        on = schedule.active[host_rows, at] & (steps < schedule.num_steps)
        return torch.as_tensor(host_rows, device=self.device), host_rows, steps, on

    def _batch(self, sel, steps, on):
        """Sample index and sample mask ``[R, B]`` of the rows' step (mask 0 where a row does not step)."""
        schedule = self.schedule
        at = np.minimum(steps, schedule.num_steps - 1)
        if sel is None:
            idx, m = schedule.index[:, int(at[0])], schedule.mask[:, int(at[0])]
        else:
            at_t = torch.as_tensor(at, device=self.device)
            idx, m = schedule.index[sel, at_t], schedule.mask[sel, at_t]
        if not on.all():
            m = m * torch.as_tensor(on, device=m.device).to(m)[:, None]
        return idx, m.to(self.dtype)

    def _advance(self, sel, host_rows, loss, on) -> None:
        """Add the stepping rows' objective to their running sum and move their cursors on."""
        gained = loss if on.all() else torch.where(torch.as_tensor(on, device=self.device), loss, 0.0)
        if sel is None:
            self.loss_sum += gained
            self.cursor += 1
        else:
            self.loss_sum.index_add_(0, sel, gained)
            self.cursor[host_rows] += 1

    def _record(self, sel, steps, on, m, loss, features: Callable[[], torch.Tensor]) -> None:
        """Feed the statistics a view of this step (features computed at most once, in eval mode)."""
        if not self.stats:
            return
        cache: list[torch.Tensor] = []

        def once() -> torch.Tensor:
            if not cache:
                model, training = self.trainer.model, self.trainer.model.training
                model.eval()
                with torch.no_grad():
                    cache.append(features())
                model.train(training)
            return cache[0]

        active = torch.as_tensor(on, device=self.device).to(self.dtype)
        view = StepView(sel, np.asarray(steps), active, m, loss.detach(), once)
        for stat, acc in self.stats.values():
            stat.update(acc, view)

    def _directions(self, sel, host_rows, steps, on) -> tuple[list[torch.Tensor], torch.Tensor]:
        """The rows' step directions (one ``[R, ...]`` tensor per parameter) and objectives ``[R]``."""
        raise NotImplementedError

    def gradients(self, rows: np.ndarray | None = None) -> torch.Tensor:
        """The step directions d = s g + δ of ``rows`` (None = all) at their current parameters, each on its
        next minibatch, as ``[R, P]`` (zeros for a row whose schedule is padded or exhausted there). Streams,
        objectives and statistics advance as in ``step``; parameters and momentum do not move: an algorithm
        with an update rule of its own (DAdam's per-client Adam moments) applies it with ``add``."""
        sel, host_rows, steps, on = self._positions(rows)
        if not on.any():
            self._advance(sel, host_rows, torch.zeros(len(steps), dtype=self.dtype, device=self.device), on)
            return torch.zeros(len(steps), self.trainer.space.size, dtype=self.dtype, device=self.device)
        directions, loss = self._directions(sel, host_rows, steps, on)
        self._advance(sel, host_rows, loss, on)
        return self.trainer.space.flatten(dict(zip(self.params, directions, strict=True)), batch_dims=1)

    def add(self, delta: torch.Tensor) -> None:
        """X ← X + ``delta`` (``[K, P]``) for the stacked parameters."""
        for t, d in zip(self.ws, self.trainer.space.unflatten(delta.to(self.dtype)).values(), strict=True):
            t.add_(d)

    def mix(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """X ← fn(X) for each stacked parameter tensor ``[K, ...]`` and each client's BatchNorm running
        statistics (gossip: ``fn = Mixer(W)``)."""
        for t in (*self.ws, *self.running.values()):
            t.copy_(fn(t))

    def flat_params(self) -> torch.Tensor:
        """The K clients' current parameters ``[K, P]`` (a copy)."""
        return self.trainer.space.flatten(self.params, batch_dims=1)

    def steps_taken(self) -> np.ndarray:
        """Steps each client has really taken (padded and exhausted ones excluded)."""
        upto = np.minimum(self.cursor, self.schedule.num_steps)
        return (self.schedule.active & (np.arange(self.schedule.num_steps)[None, :] < upto[:, None])).sum(
            axis=1
        )

    def result(self) -> LocalResult:
        """Parameters, mean objective over the steps each client took, statistics, running statistics."""
        done = torch.as_tensor(self.steps_taken(), dtype=self.dtype, device=self.device)
        stats = {name: stat.finish(acc) for name, (stat, acc) in self.stats.items()}
        running = self.trainer.stats_space.flatten(self.running, batch_dims=1) if self.running else None
        return LocalResult(self.flat_params(), self.loss_sum / done.clamp_min(1), stats, running)


class BatchedStack(ClientStack):
    """Every stepping row's gradient in one mapped call; the update on the stacked tensors."""

    def __init__(self, trainer: BatchedTrainer, start, spec, schedule, running=None):
        super().__init__(trainer, start, spec, schedule, running)
        self.bufs = [torch.zeros_like(t) for t in self.ws] if spec.momentum else None
        self.gradient = trainer.gradient_fn(spec)

    def _gradient(self, sel, steps, on_host) -> _Gradient:
        """The part of a step before the update (running and in-training statistics updated)."""
        dtype = self.dtype
        idx, m = self._batch(sel, steps, on_host)
        ws = take(self.ws, sel)
        on = None if on_host.all() else torch.as_tensor(on_host, device=self.device).to(dtype)
        scale, drift = combine(self.terms, ws, sel)
        step_scale = scale if on is None else on * (1.0 if scale is None else scale)
        x, y = self.trainer.inputs(idx, dtype), self.trainer.labels[idx]
        params = self.params if sel is None else dict(zip(self.params, ws, strict=True))
        running = self.running if sel is None else {n: t[sel] for n, t in self.running.items()}
        before = {n: t.clone() for n, t in running.items()} if on is not None else {}
        if not self.trainer.model.training:  # the engine's evaluations switch it to eval mode
            self.trainer.model.train()
        noise: tuple[torch.Tensor, ...] = ()
        if self.trainer.dropouts:  # the rows' masks, drawn on the CPU (no host copy of sel otherwise)
            rows = np.arange(self.num_clients) if sel is None else sel.cpu().numpy()
            shapes = [shape for _, shape in self.trainer.dropouts]
            noise = dropout_noise(self.schedule, rows, steps, shapes, self.device)
        grad, loss = self.gradient(params, running, x, y, m, step_scale, noise)
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

    def _step(self, sel, host_rows, steps, on_host) -> None:
        spec, lr = self.spec, self.spec.lr
        g = self._gradient(sel, steps, on_host)
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

    def _directions(self, sel, host_rows, steps, on_host):
        g = self._gradient(sel, steps, on_host)
        d = [torch.zeros_like(w) for w in g.ws] if g.drift is None else [t.clone() for t in g.drift]
        g.grad.add_to(d, 1.0)
        return d, g.loss


@dataclass
class _Gradient:
    """A batched step's parts before the update: the stepping rows' parameters, their gradient
    (``add_to``), the step terms' drift (masked), the step mask (None: every row steps) as ``[R]`` and per
    parameter tensor, and the objective ``[R]``."""

    ws: list[torch.Tensor]
    grad: ExplicitGradient
    drift: list[torch.Tensor] | None
    on: torch.Tensor | None
    on_rows: list[torch.Tensor] | None
    loss: torch.Tensor


@dataclass
class ExplicitGradient:
    """Per-client gradients written out, stacked per parameter tensor (cf. ``mlp_step.FactoredGradient``)."""

    grads: list[torch.Tensor]

    def add_to(self, tensors: list[torch.Tensor], alpha: float) -> None:
        torch._foreach_add_(tensors, self.grads, alpha=alpha)
