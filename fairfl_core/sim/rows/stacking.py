"""Stacks or alone: which of the runs' pending training calls become one stacked computation, decided once
per call (:func:`stacking`), and each group's training.

Two calls share a stack when these are equal: their engines' ``Engine.stack_identity()`` (the data pool and
labels, the model, dtype, device, client axis and precision), whether running statistics are given, and the
specs' ``merge.spec_key``. A call trains alone, as it would in its own run, when its engine trains
sequentially, has no stack identity, or runs on a CPU without ``stack_on_cpu`` (the package docstring says
why).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fairfl_core.sim.batched_trainer import BatchedTrainer
from fairfl_core.sim.local import LocalResult
from fairfl_core.sim.rows.memory import ChunkBudget
from fairfl_core.sim.rows.merge import TrainCall, merge_calls, spec_key, split_result

if TYPE_CHECKING:
    from fairfl_core.sim.engine import Engine
    from fairfl_core.sim.protocol import Trainer

__all__ = ["Group", "Request", "plan", "stacking"]


@dataclass
class Request:
    """A run's pending ``train`` call: its engine and that engine's own trainer (``inner``), the call, the
    calling run's name, and once served its result or error."""

    engine: Engine
    inner: Trainer
    call: TrainCall
    run: str = ""
    result: LocalResult | None = None
    error: BaseException | None = None
    done: bool = False


def stacking(request: Request, stack_on_cpu: bool) -> tuple[BatchedTrainer, Hashable] | None:
    """The trainer and key of the stack ``request`` joins (the requests of equal keys: one stack), or None:
    it trains alone."""
    engine, inner = request.engine, request.inner
    identity = engine.stack_identity()
    if (
        not isinstance(inner, BatchedTrainer)
        or identity is None
        or (engine.device.type == "cpu" and not stack_on_cpu)
    ):
        return None
    return inner, (identity, request.call.running is None, spec_key(request.call.spec))


@dataclass
class Group:
    """Requests trained as one computation: those of one stack (``trainer`` its first request's batched
    trainer), or one request alone (``trainer`` None)."""

    trainer: BatchedTrainer | None
    requests: list[Request]

    def train(self, budget: ChunkBudget) -> None:
        """Each request's result: alone, its own trainer's; in a stack, its rows of the merged call's, the
        stack trained in chunks that fit ``budget``."""
        first = self.requests[0]
        if self.trainer is None:
            c = first.call
            first.result = first.inner.train(c.start, c.spec, c.schedule, c.running)
            return
        calls = [r.call for r in self.requests]
        merged = merge_calls(calls)
        out = self.trainer.train(
            merged.start,
            merged.spec,
            merged.schedule,
            merged.running,
            chunk_size=budget.rows(first.engine, first.call, merged.rows),
        )
        for r, result in zip(self.requests, split_result(out, calls), strict=True):
            r.result = result


def plan(requests: Sequence[Request], stack_on_cpu: bool) -> list[Group]:
    """The requests as groups, in the order of each group's first request."""
    groups: list[Group] = []
    stacks: dict[Hashable, Group] = {}
    for r in requests:
        how = stacking(r, stack_on_cpu)
        if how is None:
            groups.append(Group(None, [r]))
            continue
        trainer, key = how
        if key not in stacks:
            stacks[key] = Group(trainer, [])
            groups.append(stacks[key])
        stacks[key].requests.append(r)
    return groups
