"""Runs as rows: the local training of many concurrent runs as one stacked computation.

R runs of one experiment (seeds × methods × hyperparameter values) each keep their own algorithm, engine,
store and checkpoints, and run in their own thread (the ``rows`` executor of ``experiments/sweep.py``).
Their engines train through a :class:`RowsTrainer` (``Engine.use_trainer``), whose calls come here (``train``
and ``train_pooled``; ``stack`` is the engine's own): a run that asks for local training waits until every
live run is waiting or done, and the pending calls are then executed together. Calls that can share a stack
do: their clients become rows of one :class:`~fairfl_core.sim.client_stack.ClientStack`, each with its own
starting point, minibatch schedule, running statistics and step terms.

A row's numbers do not depend on the other rows of its stack (``batched_trainer.py``: a row that does not step
is multiplied by exact ones and zeros; every per-client computation is its own slice of a batched kernel), so
each run gets exactly the numbers it gets alone. Two calls share a stack when these are equal: the data pool
and labels (the same tensors, see :class:`PoolRegistry`), the engines' ``model_key`` (the model's registry
name and options; an engine without one never shares a stack), dtype, client axis and precision, and the
spec's learning rate, batch size, local work, momentum, objective, loss and statistics. Their step terms may
differ: term ``i`` of the merged spec applies each call's own term ``i`` to that call's rows
(:class:`RowTerms`), a missing term contributing the exact identity (scale 1, drift 0). Models that draw
dropout masks from torch's generator (other than ``SeededDropout``) never share a stack.

Experimental until a GPU measurement shows it pays (on CPUs 0.96–1.04× of the process pool; never measured on
a GPU). Stacking is for GPUs, where one run's step is a few dozen small kernel launches and R runs' rows give
each launch R times the work. On CPUs the batched GEMMs of one run's clients already run near the matmul peak,
and a larger stack is slower per row (``benchmarks/README.md``), so by default (``stack=None``) calls on a CPU
train one after the other, each as it would alone; ``stack=True`` stacks them there too (the tests do, to
check the numbers).

Only one run's Python code executes at a time (the waiting is on one condition variable), so the runs do not
compete for the CPU's threads and each run's own code is exactly its code alone.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch
from torch import nn

from fairfl_core.data.federated import FederatedDataset
from fairfl_core.models.dropout import draws_from_torch
from fairfl_core.sim.batched_trainer import BatchedTrainer
from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.client_stack import ClientStack
from fairfl_core.sim.local import LocalResult, LocalSpec, StepTerm
from fairfl_core.sim.params import ParamSpace

if TYPE_CHECKING:
    from fairfl_core.sim.engine import Engine
    from fairfl_core.sim.protocol import Trainer

__all__ = [
    "PoolRegistry",
    "RowTerms",
    "RowsBatcher",
    "RowsTrainer",
    "RunDied",
    "activation_elements",
    "concat_schedules",
    "memory_budget",
    "merge_specs",
    "row_bytes",
    "spec_key",
]


T = TypeVar("T")


# -- merging calls into one stack -------------------------------------------------------------------------
def concat_schedules(schedules: Sequence[BatchSchedule]) -> BatchSchedule:
    """The schedules of consecutive groups of rows as one; shorter ones padded with inactive steps."""
    if len({s.index.shape[2] for s in schedules}) != 1:
        raise ValueError("schedules of one stack need one batch size")
    steps = max(s.num_steps for s in schedules)

    def pad(t: torch.Tensor, s: BatchSchedule) -> torch.Tensor:
        extra = steps - s.num_steps
        return t if extra == 0 else torch.cat([t, t.new_zeros(t.shape[0], extra, t.shape[2])], dim=1)

    return BatchSchedule(
        index=torch.cat([pad(s.index, s) for s in schedules]),
        mask=torch.cat([pad(s.mask, s) for s in schedules]),
        active=np.concatenate([np.pad(s.active, ((0, 0), (0, steps - s.num_steps))) for s in schedules]),
        epoch_steps=np.concatenate([s.epoch_steps for s in schedules]),
        seeds=np.concatenate([s.seeds for s in schedules]),
    )


@dataclass
class RowTerms(StepTerm):
    """Step term ``i`` of several calls stacked as consecutive row ranges: each range's own term (None: the
    call has fewer terms) gives that range's scale and drift; an absent one gives exactly 1 and 0, so each
    row's step is the one it takes alone."""

    parts: list[tuple[int, int, StepTerm | None]]  # (first row, end row, term)

    def bind(self, space: ParamSpace, start):
        return RowTerms(
            [(lo, hi, t and t.bind(space, [s[lo:hi] for s in start])) for lo, hi, t in self.parts]
        )

    def rows(self, rows: slice) -> RowTerms:
        parts = []
        for lo, hi, t in self.parts:
            a, b = max(lo, rows.start), min(hi, rows.stop)
            if a < b:
                parts.append((a - rows.start, b - rows.start, t and t.rows(slice(a - lo, b - lo))))
        return RowTerms(parts)

    def _split(self, rows: torch.Tensor | None):
        """``(positions in the stepping rows, the term's own rows)`` of each part."""
        for lo, hi, t in self.parts:
            if rows is None:
                yield slice(lo, hi), None, t, hi - lo
            else:
                inside = ((rows >= lo) & (rows < hi)).nonzero().squeeze(1)
                yield inside, rows[inside] - lo, t, len(inside)

    def scale(self, rows):
        pieces = [(at, t.scale(own) if t else None, n) for at, own, t, n in self._split(rows)]
        if all(s is None for _, s, _ in pieces):
            return None
        like = next(s for _, s, _ in pieces if s is not None)
        out = like.new_ones(self._count(rows))
        for at, s, _ in pieces:
            if s is not None:
                out[at] = s
        return out

    def drift(self, ws, rows):
        pieces = []
        for at, own, t, _ in self._split(rows):
            part_ws = [w[at] for w in ws]
            pieces.append((at, t.drift(part_ws, own) if t else None))
        if all(d is None for _, d in pieces):
            return None
        if rows is None and all(d is not None for _, d in pieces):  # every range has a term: concatenate
            return [torch.cat(parts) for parts in zip(*(d for _, d in pieces), strict=True)]
        out = [torch.zeros_like(w) for w in ws]
        for at, d in pieces:
            if d is not None:
                for o, v in zip(out, d, strict=True):
                    o[at] = v
        return out

    def _count(self, rows) -> int:
        return self.parts[-1][1] if rows is None else len(rows)


def merge_specs(specs: Sequence[LocalSpec], sizes: Sequence[int]) -> LocalSpec:
    """One spec for the calls' rows stacked in order (``specs`` share a :func:`spec_key`)."""
    terms = [spec.step_terms() for spec in specs]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    width = max(len(t) for t in terms)
    merged = [
        RowTerms(
            [
                (int(bounds[c]), int(bounds[c + 1]), ts[i] if i < len(ts) else None)
                for c, ts in enumerate(terms)
            ]
        )
        for i in range(width)
    ]
    first = specs[0]
    return LocalSpec(
        lr=first.lr,
        batch_size=first.batch_size,
        steps=first.steps,
        epochs=first.epochs,
        momentum=first.momentum,
        objective=first.objective,
        loss=first.loss,
        terms=merged,
        statistics=first.statistics,
    )


def _callable_key(fn: Callable | None):
    """Equal for two functions that compute the same thing: the same object, or the same code with equal
    closure values (an algorithm builds its objective anew each round); otherwise the object itself."""
    if fn is None or not hasattr(fn, "__code__"):
        return fn
    cells = []
    for cell in fn.__closure__ or ():
        value = cell.cell_contents
        if not isinstance(value, int | float | str | bool | type(None)):
            return fn
        cells.append(value)
    return (fn.__code__, tuple(cells), fn.__defaults__)


def spec_key(spec: LocalSpec) -> tuple:
    """What two calls' specs must share to be one stack (the step terms need not)."""
    statistics: object = tuple(spec.statistics)
    try:
        hash(statistics)
    except TypeError:  # statistics that cannot be compared never share a stack
        statistics = id(spec.statistics)
    return (
        spec.lr,
        spec.batch_size,
        spec.steps,
        spec.epochs,
        spec.momentum,
        _callable_key(spec.objective),
        _callable_key(spec.loss),
        statistics,
    )


# -- shared data pools ------------------------------------------------------------------------------------
class PoolRegistry:
    """One copy of each distinct sample pool and label vector among the runs of a process: runs of different
    seeds build their federated datasets separately, and their stacks can be one only if the tensors are."""

    def __init__(self):
        self._pools: dict[tuple, FederatedDataset] = {}
        self._labels: dict[tuple, torch.Tensor] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _digest(t: torch.Tensor) -> tuple:
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
                data.x, data._normalised = pool.x, pool._normalised
            data.y = self._labels.setdefault(self._digest(data.y), data.y)
        return data


# -- memory ------------------------------------------------------------------------------------------------
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

    def count(_module, _inputs, output):
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


# -- the batcher -------------------------------------------------------------------------------------------
class RunDied(RuntimeError):
    """The meeting stopped: a run died in it (a ``BaseException``, or its thread ended without leaving)."""


class RowsTrainer:
    """An engine's trainer whose ``train`` meets the other runs' in a :class:`RowsBatcher`
    (``RowsBatcher.attach``); ``stack`` and everything else are the engine's own trainer's (``inner``)."""

    def __init__(self, batcher: RowsBatcher, engine: Engine, inner: Trainer):
        self.batcher, self.engine, self.inner = batcher, engine, inner

    def train(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> LocalResult:
        """The inner trainer's result, computed together with the other live runs' calls."""
        return self.batcher.train(_Call(self, start, spec, schedule, running))

    def stack(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        return self.inner.stack(start, spec, schedule, running)

    def __getattr__(self, name: str):
        if name == "inner":  # not yet set (a copy being built)
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass
class _Call:
    trainer: RowsTrainer
    start: torch.Tensor
    spec: LocalSpec
    schedule: BatchSchedule
    running: torch.Tensor | None
    run: str = ""  # the calling run's name
    result: LocalResult | None = None
    error: BaseException | None = None
    done: bool = False
    rows: int = field(init=False)

    def __post_init__(self):
        self.rows = self.schedule.index.shape[0]

    @property
    def engine(self) -> Engine:
        return self.trainer.engine

    def key(self, stack_on_cpu: bool) -> tuple:
        e, inner = self.engine, self.trainer.inner
        if (
            not isinstance(inner, BatchedTrainer)
            or e.model_key is None
            or draws_from_torch(e.model)
            or (e.device.type == "cpu" and not stack_on_cpu)
        ):
            return ("alone", id(self))
        return (
            id(e.data.x),
            id(inner.labels),
            e.model_key,
            e.dtype,
            str(e.device),
            e.client_axis.name,
            e.precision.mode,
            self.running is None,
            spec_key(self.spec),
        )


class RowsBatcher:
    """The meeting point of the run threads (module docstring): :meth:`run` starts one thread per run, whose
    engines are :meth:`attach` ed; a thread holds the baton while its run's code runs, except while it waits
    for its training.

    Every wait wakes each ``poll`` seconds to check that no run thread ended without leaving. A run that dies
    (a ``BaseException`` escapes its code, or its thread vanishes) stops the meeting: every pending and later
    call raises :class:`RunDied` naming it, so the other runs end promptly (an ordinary exception is its own
    run's: the calls of a stack that raised re-raise it, the others go on). ``share``: the processes that
    share the device (:func:`memory_budget`)."""

    def __init__(
        self,
        memory_gb: float | None = None,
        stack: bool | None = None,
        *,
        share: int = 1,
        poll: float = 5.0,
    ):
        self.pools = PoolRegistry()
        self._memory_gb = memory_gb
        self._stack_on_cpu = bool(stack)
        self._share = share
        self._poll = poll
        self._baton = threading.Condition()
        self._members: dict[threading.Thread, str] = {}  # the run threads still in the meeting: their runs
        self._pending: list[_Call] = []
        self._stopped: str | None = None  # why the meeting stopped (a run died)
        self._activations: dict[tuple, int] = {}  # per sample, by model
        self.calls = 0  # train calls served
        self.stacks = 0  # stacked computations that served them

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

    def train(self, call: _Call) -> LocalResult:
        """``call``'s result, computed together with the other live runs' calls (in a :meth:`run` thread)."""
        if self._stopped is not None:
            raise RunDied(self._stopped)
        me = threading.current_thread()
        if me not in self._members:
            raise RuntimeError(f"{me.name}: a rows engine trains only inside RowsBatcher.run; run it there")
        call.run = self._members[me]
        self._pending.append(call)
        if len(self._pending) == len(self._members):
            self._flush()
        while not call.done:
            if not self._baton.wait(self._poll):
                self._watch()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

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
        for c in self._pending:
            c.error, c.done = RunDied(self._stopped), True
        self._pending = []
        self._baton.notify_all()
        return RunDied(self._stopped)

    def _flush(self) -> None:
        calls, self._pending = self._pending, []
        groups: dict[tuple, list[_Call]] = {}
        for c in calls:
            groups.setdefault(c.key(self._stack_on_cpu), []).append(c)
        for group in groups.values():
            try:
                self._train_group(group)
            except Exception as exc:  # every call of the failed stack raises it in its own run
                for c in group:
                    c.error = exc
            except BaseException as exc:  # the flushing run dies: no call waits for a flush any more
                self._pending = [c for c in calls if not c.done]
                runs = ", ".join(sorted(c.run for c in group))
                self._stop(f"{type(exc).__name__} ({exc}) in the training of run(s) {runs}")
                raise
            for c in group:
                c.done = True
        self.calls += len(calls)
        self.stacks += len(groups)
        self._baton.notify_all()

    def _chunk(self, call: _Call, rows: int) -> int:
        """Rows per chunk of a stack of ``call``'s kind that fit the memory budget (at least 1)."""
        e = call.engine
        model = (e.model_key, e.dtype)
        if model not in self._activations:
            sample = e.data.inputs(call.schedule.index[:1, 0, :1].reshape(1), e.dtype)
            e.eval_mode()
            self._activations[model] = activation_elements(e.model, sample)
        per_row = row_bytes(
            e.space.size,
            self._activations[model],
            call.spec.batch_size,
            e.dtype,
            bool(call.spec.momentum),
        )
        budget = memory_budget(e.device, self._memory_gb, self._share)
        return max(1, min(rows, budget // per_row))

    def _train_group(self, group: list[_Call]) -> None:
        first = group[0]
        inner = first.trainer.inner
        if len(group) == 1:  # nothing to stack with (an engine of its own kind, or the only such call)
            args = (first.start, first.spec, first.schedule, first.running)
            if first.key(self._stack_on_cpu)[0] == "alone" or not isinstance(inner, BatchedTrainer):
                first.result = inner.train(*args)
            else:
                first.result = inner.train(*args, self._chunk(first, first.rows))
            return
        sizes = [c.rows for c in group]
        start = torch.cat([c.start if c.start.dim() == 2 else c.start.expand(c.rows, -1) for c in group])
        runnings = [c.running for c in group if c.running is not None]  # all of them or none (the key)
        running = None
        if runnings:
            running = torch.cat(
                [r if r.dim() == 2 else r.expand(c.rows, -1) for r, c in zip(runnings, group, strict=True)]
            )
        spec = merge_specs([c.spec for c in group], sizes)
        schedule = concat_schedules([c.schedule for c in group])
        assert isinstance(inner, BatchedTrainer)  # the key of a stack of several calls
        out = inner.train(start, spec, schedule, running, chunk_size=self._chunk(first, sum(sizes)))
        lo = 0
        for c in group:
            c.result = out.rows(torch.arange(lo, lo + c.rows, device=start.device))
            lo += c.rows
