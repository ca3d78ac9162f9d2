"""Local training at step level: the stacked state of K clients, advanced one step for any subset of them.

A :class:`ClientStack` holds the K clients' parameters (one contiguous ``[K, ...]`` tensor per parameter),
their momentum buffers, their position in their own minibatch stream (a ``BatchSchedule``: client k's s-th
step uses ``schedule.index[k, s]``), their running objective and their statistics. ``step(rows)`` advances
the given rows by one step each, on each row's next minibatch, and leaves the other rows exactly as they are;
``mix(fn)`` replaces the stacked parameters X by fn(X) (gossip X ← W X); ``result()`` reads everything out.
How a step is computed is a subclass's: ``batched_trainer.BatchedStack`` (every row in one call) and
``sequential.SequentialStack`` (the reference, row after row). A trainer's ``train`` is a loop of ``step()``
over the schedule, so training K steps at once and taking K single steps give the same numbers
(``tests/sim/test_stack.py``). A row that takes no step (its schedule is padded or exhausted) keeps its
parameters and momentum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import torch
from torch import nn

from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.local import LocalResult, LocalSpec
from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.precision import Precision
from fairfl_core.sim.statistics import ClientStatistic, StepView
from fairfl_core.sim.transfer import to_device

__all__ = ["ClientStack", "SampleInputs", "StackTrainer", "check_full_batches", "per_row"]


class StackTrainer(Protocol):
    """What a :class:`ClientStack` reads of the trainer that built it."""

    model: nn.Module
    space: ParamSpace
    stats_space: ParamSpace | None  # the BatchNorm running statistics' (None without BatchNorm)
    precision: Precision


class SampleInputs(Protocol):
    """Model inputs for sample indices ``idx`` in ``dtype`` (``FederatedDataset.inputs``)."""

    def __call__(self, idx: torch.Tensor, dtype: torch.dtype = ...) -> torch.Tensor: ...


TrainerT = TypeVar("TrainerT", bound=StackTrainer)


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


def per_row(values: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """A per-client ``[R]`` vector shaped to multiply each stacked parameter tensor ``[R, ...]``."""
    return [values.view(-1, *([1] * (t.dim() - 1))) for t in like]


class ClientStack(Generic[TrainerT]):
    """The local-training state of K clients (module docstring); subclasses define ``step``."""

    def __init__(
        self,
        trainer: TrainerT,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> None:
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
        self.running: dict[str, torch.Tensor] = {}  # each client's BatchNorm running statistics [K, ...]
        if running is not None:
            if trainer.stats_space is None:
                raise ValueError("running statistics are given exactly for models with BatchNorm layers")
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
        self.stats: dict[str, tuple[ClientStatistic[Any], Any]] = {  # each statistic and its accumulator
            stat.name: (stat, stat.start(schedule)) for stat in spec.statistics
        }

    @property
    def num_clients(self) -> int:
        return len(self.cursor)

    skips_idle_rows = False  # a subclass that computes each row alone sets it: idle rows are left out

    def step(self, rows: np.ndarray | None = None) -> None:
        """Advance ``rows`` (indices into the K clients, None = all) by one step each, on each one's next
        minibatch; a row whose schedule is padded or exhausted there stays as it is. Where
        :attr:`skips_idle_rows`, such a row is left out of the step's computation (a stack of clients with
        unequal schedules then costs the steps its clients take, not K times its longest schedule)."""
        sel, host_rows, steps, on = self._positions(rows)
        if self.skips_idle_rows and on.any() and not on.all():
            hosts = np.arange(self.num_clients) if host_rows is None else host_rows
            idle = hosts[~on]
            self._advance(
                to_device(idle, self.device),
                idle,
                torch.zeros(len(idle), dtype=self.dtype, device=self.device),
                on[~on],
            )
            host_rows, steps = hosts[on], steps[on]
            sel, on = to_device(host_rows, self.device), on[on]
        if on.any():
            with self.trainer.precision.training():
                self._step(sel, host_rows, steps, on)
        elif len(steps):
            self._advance(sel, host_rows, torch.zeros(len(steps), dtype=self.dtype, device=self.device), on)

    def _step(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on: np.ndarray
    ) -> None:
        """One step of the rows ``sel`` (None: all, in lockstep) at least one of which really steps."""
        raise NotImplementedError

    def _positions(
        self, rows: np.ndarray | None
    ) -> tuple[torch.Tensor | None, np.ndarray | None, np.ndarray, np.ndarray]:
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
        return to_device(host_rows, self.device), host_rows, steps, on

    def _batch(
        self, sel: torch.Tensor | None, steps: np.ndarray, on: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample index and sample mask ``[R, B]`` of the rows' step (mask 0 where a row does not step)."""
        schedule = self.schedule
        at = np.minimum(steps, schedule.num_steps - 1)
        if sel is None:
            idx, m = schedule.index[:, int(at[0])], schedule.mask[:, int(at[0])]
        else:
            at_t = to_device(at, self.device)
            idx, m = schedule.index[sel, at_t], schedule.mask[sel, at_t]
        if not on.all():
            m = m * to_device(on, m.device, m.dtype)[:, None]
        return idx, m.to(self.dtype)

    def _advance(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, loss: torch.Tensor, on: np.ndarray
    ) -> None:
        """Add the stepping rows' objective to their running sum and move their cursors on."""
        gained = loss if on.all() else torch.where(to_device(on, self.device), loss, 0.0)
        if sel is None:
            self.loss_sum += gained
            self.cursor += 1
        else:
            self.loss_sum.index_add_(0, sel, gained)
            self.cursor[host_rows] += 1

    def _record(
        self,
        sel: torch.Tensor | None,
        steps: np.ndarray,
        on: np.ndarray,
        m: torch.Tensor,
        loss: torch.Tensor,
        features: Callable[[], torch.Tensor],
    ) -> None:
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

        active = to_device(on, self.device, self.dtype)
        view = StepView(sel, np.asarray(steps), active, m, loss.detach(), once)
        for stat, acc in self.stats.values():
            stat.update(acc, view)

    def _directions(
        self, sel: torch.Tensor | None, host_rows: np.ndarray | None, steps: np.ndarray, on: np.ndarray
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
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
        with self.trainer.precision.training():
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
        done = to_device(self.steps_taken(), self.device, self.dtype)
        stats = {name: stat.finish(acc) for name, (stat, acc) in self.stats.items()}
        stats_space = self.trainer.stats_space
        running = (
            stats_space.flatten(self.running, batch_dims=1)
            if self.running and stats_space is not None
            else None
        )
        return LocalResult(self.flat_params(), self.loss_sum / done.clamp_min(1), stats, running)
