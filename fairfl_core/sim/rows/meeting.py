"""The meeting of the run threads: a run that asks for local training waits until every live run is waiting
or done, and the pending calls are then trained together (``stacking.py``).

Only one run's Python code executes at a time (the waiting is on one condition variable, the baton), so the
runs do not compete for the CPU's threads and each run's own code is exactly its code alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import torch

from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.client_stack import ClientStack
from fairfl_core.sim.local import LocalResult, LocalSpec
from fairfl_core.sim.rows.memory import ChunkBudget, PoolRegistry
from fairfl_core.sim.rows.merge import TrainCall
from fairfl_core.sim.rows.stacking import Request, plan

if TYPE_CHECKING:
    from fairfl_core.sim.engine import Engine
    from fairfl_core.sim.protocol import Trainer

__all__ = ["RowsBatcher", "RowsTrainer", "RunDied"]

T = TypeVar("T")


class RunDied(RuntimeError):
    """The meeting stopped: a run died in it (a ``BaseException``, or its thread ended without leaving)."""


class RowsTrainer:
    """An engine's trainer whose ``train`` meets the other runs' in a :class:`RowsBatcher`
    (``RowsBatcher.attach``); its ``stack`` is the engine's own trainer's (``inner``)."""

    def __init__(self, batcher: RowsBatcher, engine: Engine, inner: Trainer) -> None:
        self.batcher, self.engine, self.inner = batcher, engine, inner

    def train(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> LocalResult:
        """The inner trainer's result, computed together with the other live runs' calls."""
        return self.batcher.train(Request(self.engine, self.inner, TrainCall(start, spec, schedule, running)))

    def stack(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        return self.inner.stack(start, spec, schedule, running)


class RowsBatcher:
    """The meeting point of the run threads (module docstring): :meth:`run` starts one thread per run, whose
    engines are :meth:`attach` ed; a thread holds the baton while its run's code runs, except while it waits
    for its training.

    Every wait wakes each ``poll`` seconds to check that no run thread ended without leaving. A run that dies
    (a ``BaseException`` escapes its code, or its thread vanishes) stops the meeting: every pending and later
    call raises :class:`RunDied` naming it, so the other runs end promptly (an ordinary exception is its own
    run's: the calls of a stack that raised re-raise it, the others go on). ``memory_gb`` and ``share`` (the
    processes that share the device) bound a stack's chunks (``memory.ChunkBudget``); ``stack``: stack calls
    on a CPU too (default: only on other devices, ``stacking.py``)."""

    def __init__(
        self,
        memory_gb: float | None = None,
        stack: bool | None = None,
        *,
        share: int = 1,
        poll: float = 5.0,
    ) -> None:
        self.pools = PoolRegistry()
        self._budget = ChunkBudget(memory_gb, share)
        self._stack_on_cpu = bool(stack)
        self._poll = poll
        self._baton = threading.Condition()
        self._members: dict[threading.Thread, str] = {}  # the run threads still in the meeting: their runs
        self._pending: list[Request] = []
        self._stopped: str | None = None  # why the meeting stopped (a run died)
        self.calls = 0  # train calls served
        self.stacks = 0  # computations that served them (a stack, or a call alone)

    def attach(self, engine: Engine) -> None:
        """Train ``engine`` through the meeting (:class:`RowsTrainer`); its other members run as they are."""
        engine.use_trainer(lambda inner: RowsTrainer(self, engine, inner))

    def run(self, runs: Sequence[tuple[str, Callable[[], T]]]) -> list[T | RunDied]:
        """Call each ``(name, function)``'s function in a thread of its own, the threads meeting here; each
        one's return value in order, or the :class:`RunDied` of a run that died."""
        out: list[T | RunDied] = [RunDied(f"run {name} never ran") for name, _ in runs]

        def member(i: int, fn: Callable[[], T]) -> None:
            with self._baton:
                try:
                    out[i] = fn()
                except BaseException as exc:  # the run cannot meet any more
                    out[i] = self._stop(f"run {runs[i][0]} raised {type(exc).__name__}: {exc}")
                finally:
                    self._leave(threading.current_thread())

        # daemon: an interrupted sweep exits (its runs resume from their checkpoints), not waiting on them
        threads = [
            threading.Thread(target=member, args=(i, fn), name=name, daemon=True)
            for i, (name, fn) in enumerate(runs)
        ]
        with self._baton:  # no meeting before every thread is a member
            self._members.update((t, t.name) for t in threads)
            for t in threads:
                t.start()
        for t in threads:
            while t.is_alive():
                t.join(self._poll)
        return out

    def train(self, request: Request) -> LocalResult:
        """``request``'s result, computed together with the other live runs' (in a :meth:`run` thread)."""
        if self._stopped is not None:
            raise RunDied(self._stopped)
        me = threading.current_thread()
        if me not in self._members:
            raise RuntimeError(f"{me.name}: a rows engine trains only inside RowsBatcher.run; run it there")
        request.run = self._members[me]
        self._pending.append(request)
        if len(self._pending) == len(self._members):
            self._flush()
        while not request.done:
            if not self._baton.wait(self._poll):
                self._watch()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _leave(self, thread: threading.Thread) -> None:
        """``thread``'s run is done: the others no longer wait for it."""
        self._members.pop(thread, None)
        if self._pending and len(self._pending) == len(self._members):
            self._flush()

    def _watch(self) -> None:
        """Stop the meeting when a run thread ended without leaving it."""
        for thread in [t for t in self._members if not t.is_alive()]:
            del self._members[thread]
            self._stop(f"run {thread.name} ended without leaving the meeting")

    def _stop(self, why: str) -> RunDied:
        """Fail every pending and later call: the meeting cannot go on (the first ``why``: its cause)."""
        if self._stopped is None:
            self._stopped = (
                f"rows meeting stopped: {why}; rerun the sweep (finished runs are kept, the others resume "
                "from their checkpoints)"
            )
        for r in self._pending:
            r.error, r.done = RunDied(self._stopped), True
        self._pending = []
        self._baton.notify_all()
        return RunDied(self._stopped)

    def _flush(self) -> None:
        """Train every pending request, stacked or alone (``stacking.plan``), and wake their runs."""
        requests, self._pending = self._pending, []
        groups = plan(requests, self._stack_on_cpu)
        for group in groups:
            try:
                group.train(self._budget)
            except Exception as exc:  # every request of the failed group raises it in its own run
                for r in group.requests:
                    r.error = exc
            except BaseException as exc:  # the flushing run dies: no request waits for a flush any more
                self._pending = [r for r in requests if not r.done]
                runs = ", ".join(sorted(r.run for r in group.requests))
                self._stop(f"{type(exc).__name__} ({exc}) in the training of run(s) {runs}")
                raise
            for r in group.requests:
                r.done = True
        self.calls += len(requests)
        self.stacks += len(groups)
        self._baton.notify_all()
