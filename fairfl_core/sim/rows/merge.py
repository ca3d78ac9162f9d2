"""The pure merge of runs as rows: several ``Trainer.train`` calls as one stack's call, and its result split
back into each call's rows.

A row's numbers do not depend on the other rows of its stack (``batched_trainer.py``: a row that does not step
is multiplied by exact ones and zeros; every per-client computation is its own slice of a batched kernel), so
each call's rows of the merged result are the numbers the call gets alone. The calls' specs share a
:func:`spec_key` (learning rate, batch size, local work, momentum, objective, loss and statistics); their step
terms may differ: term ``i`` of the merged spec applies each call's own term ``i`` to that call's rows
(:class:`RowTerms`), a missing term contributing the exact identity (scale 1, drift 0).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.local import LocalResult, LocalSpec, StepTerm, Tensors
from fairfl_core.sim.params import ParamSpace

__all__ = [
    "RowTerms",
    "TrainCall",
    "concat_schedules",
    "merge_calls",
    "merge_specs",
    "spec_key",
    "split_result",
]


@dataclass
class TrainCall:
    """One ``Trainer.train`` call: its rows' starting points ``start`` (``[P]`` shared or ``[K, P]``), spec,
    schedule and running statistics (``[Q]`` or ``[K, Q]``; None without BatchNorm)."""

    start: torch.Tensor
    spec: LocalSpec
    schedule: BatchSchedule
    running: torch.Tensor | None

    @property
    def rows(self) -> int:
        return self.schedule.index.shape[0]


def merge_calls(calls: Sequence[TrainCall]) -> TrainCall:
    """The calls' rows stacked in order as one call (their specs share a :func:`spec_key`; running
    statistics given for all of them or for none); one call is itself."""
    if len(calls) == 1:
        return calls[0]

    def rows_of(t: torch.Tensor, rows: int) -> torch.Tensor:
        return t if t.dim() == 2 else t.expand(rows, -1)

    runnings = [(c.running, c.rows) for c in calls if c.running is not None]
    return TrainCall(
        start=torch.cat([rows_of(c.start, c.rows) for c in calls]),
        spec=merge_specs([c.spec for c in calls], [c.rows for c in calls]),
        schedule=concat_schedules([c.schedule for c in calls]),
        running=torch.cat([rows_of(r, rows) for r, rows in runnings]) if runnings else None,
    )


def split_result(result: LocalResult, calls: Sequence[TrainCall]) -> list[LocalResult]:
    """Each call's rows of the result of :func:`merge_calls` ``(calls)``."""
    if len(calls) == 1:
        return [result]
    out, lo = [], 0
    for c in calls:
        out.append(result.rows(torch.arange(lo, lo + c.rows, device=result.params.device)))
        lo += c.rows
    return out


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

    def bind(self, space: ParamSpace, start: Tensors) -> RowTerms:
        return RowTerms(
            [
                (lo, hi, None if t is None else t.bind(space, [s[lo:hi] for s in start]))
                for lo, hi, t in self.parts
            ]
        )

    def rows(self, rows: slice) -> RowTerms:
        parts: list[tuple[int, int, StepTerm | None]] = []
        for lo, hi, t in self.parts:
            a, b = max(lo, rows.start), min(hi, rows.stop)
            if a < b:
                parts.append(
                    (a - rows.start, b - rows.start, None if t is None else t.rows(slice(a - lo, b - lo)))
                )
        return RowTerms(parts)

    def _split(
        self, rows: torch.Tensor | None
    ) -> Iterator[tuple[slice | torch.Tensor, torch.Tensor | None, StepTerm | None]]:
        """``(positions in the stepping rows, the term's own rows, the term)`` of each part."""
        for lo, hi, t in self.parts:
            if rows is None:
                yield slice(lo, hi), None, t
            else:
                inside = ((rows >= lo) & (rows < hi)).nonzero().squeeze(1)
                yield inside, rows[inside] - lo, t

    def scale(self, rows: torch.Tensor | None) -> torch.Tensor | None:
        pieces = [(at, None if t is None else t.scale(own)) for at, own, t in self._split(rows)]
        given = [s for _, s in pieces if s is not None]
        if not given:
            return None
        out = given[0].new_ones(self.parts[-1][1] if rows is None else len(rows))
        for at, s in pieces:
            if s is not None:
                out[at] = s
        return out

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors | None:
        pieces = [
            (at, None if t is None else t.drift([w[at] for w in ws], own)) for at, own, t in self._split(rows)
        ]
        given = [d for _, d in pieces if d is not None]
        if not given:
            return None
        if rows is None and len(given) == len(pieces):  # every range has a term: concatenate
            return [torch.cat(parts) for parts in zip(*given, strict=True)]
        out = [torch.zeros_like(w) for w in ws]
        for at, d in pieces:
            if d is not None:
                for o, v in zip(out, d, strict=True):
                    o[at] = v
        return out


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


def _callable_key(fn: Callable[..., torch.Tensor] | None) -> Hashable:
    """Equal for two functions that compute the same thing: the same object, or the same code with equal
    closure values (an algorithm builds its objective anew each round); any other callable: itself."""
    if not isinstance(fn, types.FunctionType):
        return fn
    cells = []
    for cell in fn.__closure__ or ():
        value = cell.cell_contents
        if not isinstance(value, int | float | str | bool | type(None)):
            return fn
        cells.append(value)
    return (fn.__code__, tuple(cells), fn.__defaults__)


def spec_key(spec: LocalSpec) -> tuple[Hashable, ...]:
    """What two calls' specs must share to be one stack (the step terms need not)."""
    statistics: Hashable = tuple(spec.statistics)
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
