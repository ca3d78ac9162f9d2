"""Client faults: a fraction of each round's selected clients fail, as in FedProx's systems-heterogeneity
experiments with 0, 50 and 90 % stragglers (Li et al., MLSys 2020; reference code litian96/FedProx
``flearn/trainers/fedavg.py`` and ``fedprox.py``, ``drop_percent``).

With rate p and K selected clients, ``round(K (1 − p))`` of them (Python's ``round``, as the reference code)
are drawn uniformly without replacement to complete the round normally; the other ``K − round(K (1 − p))``
fail, drawn from the counter-based stream ``Simulation.rng(t, "faults")`` (a resumed run draws the same):

* ``kind="dropout"``: the client trains but never uploads (the reference's FedAvg: "simply drop the slow
  devices"); the server receives nothing from it, neither its model nor any statistic it would report.
* ``kind="straggler"``: the client completes only the first ⌈f · K_k⌉ of its K_k scheduled local steps
  (f = ``straggler_work``; f · K_k is rounded to 9 decimals first, so 0.3 · 10 counts as 3; at least one
  step) and uploads that model (the reference's FedProx, which draws a straggler's epochs uniformly from
  [1, E); a fixed f keeps the effect of the work fraction measurable). Its later steps are padded steps of
  the round's ``BatchSchedule``: its minibatches are the first ones of its full schedule.

How each algorithm aggregates the clients that upload is stated in its module docstring; the flow is
``FedAvg.round`` (``algorithms/fedavg.py``). p = 0 draws nothing and runs exactly as without faults.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.local import LocalResult
from fairfl_core.sim.transfer import to_device

__all__ = [
    "FaultKind",
    "FaultConfig",
    "RoundFaults",
    "completed_steps",
    "draw_faults",
    "truncate_schedule",
]

FaultKind = Literal["dropout", "straggler"]


@dataclass
class FaultConfig:
    """The ``faults`` config section: ``rate`` p ∈ [0, 1) of each round's selected clients fail; ``kind``
    ``"dropout"`` | ``"straggler"``; ``straggler_work`` f ∈ (0, 1], the fraction of its local steps a
    straggler completes (module docstring)."""

    rate: float = 0.0
    kind: FaultKind = "dropout"
    straggler_work: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.rate < 1:
            raise ValueError(
                f"config field faults.rate = {self.rate!r} is invalid: must be in [0, 1) (0 = no faults)"
            )
        check_option(self.kind, FaultKind, "faults.kind")
        if not 0 < self.straggler_work <= 1:
            raise ValueError(
                f"config field faults.straggler_work = {self.straggler_work!r} is invalid: must be in (0, 1]"
            )


@dataclass(frozen=True)
class RoundFaults:
    """One round's faults, aligned with its selection ``selected`` ``[K]`` (a client drawn twice has two
    entries): ``failed`` marks the clients that dropped out or straggled, ``work`` the fraction of their
    scheduled local steps each completes (1 except for stragglers). ``kind`` is ``"none"`` without faults."""

    kind: str
    selected: np.ndarray
    failed: np.ndarray
    work: np.ndarray

    @classmethod
    def none(cls, selected: np.ndarray) -> RoundFaults:
        k = len(selected)
        return cls("none", selected, np.zeros(k, dtype=bool), np.ones(k))

    @property
    def uploaded(self) -> np.ndarray:
        """Which selected clients upload ``[K]`` (all but the dropped ones)."""
        return ~self.failed if self.kind == "dropout" else np.ones(len(self.selected), dtype=bool)

    @property
    def survivors(self) -> np.ndarray:
        """The clients whose upload the server receives, in selection order."""
        up = self.uploaded
        return self.selected if up.all() else self.selected[up]

    @property
    def train_work(self) -> np.ndarray | None:
        """The work fractions for ``Engine.train``; None when every client completes its steps."""
        return self.work if (self.work < 1).any() else None

    def kept(self, rows: Any) -> Any:
        """The survivors' rows of a per-selected-client tensor ``[K, ...]`` or ``LocalResult`` (as is when all
        upload)."""
        up = self.uploaded
        if up.all():
            return rows
        if isinstance(rows, LocalResult):
            return rows.rows(to_device(np.flatnonzero(up), rows.params.device))
        return rows[to_device(np.flatnonzero(up), rows.device)]

    def steps_done(self, scheduled: Any) -> np.ndarray:
        """Local steps each survivor completed, from its scheduled count (aligned with ``survivors``)."""
        scheduled = np.asarray(scheduled)
        work = self.work[self.uploaded]
        return scheduled if (work == 1).all() else completed_steps(scheduled, work)

    def record(self) -> dict[str, Any]:
        """What the round's diagnostics keep (JSON-able): kind, failed client ids, how many uploaded."""
        return {
            "kind": self.kind,
            "failed": self.selected[self.failed].tolist(),
            "uploaded": int(self.uploaded.sum()),
        }


def draw_faults(config: FaultConfig, rng: np.random.Generator, selected: np.ndarray) -> RoundFaults:
    """The round's faults: ``K − round(K (1 − p))`` of the K selected clients fail, drawn uniformly without
    replacement (FedProx reference code); no draw at p = 0."""
    selected = np.asarray(selected)
    if config.rate == 0:
        return RoundFaults.none(selected)
    k = len(selected)
    failed = np.zeros(k, dtype=bool)
    failed[rng.choice(k, k - round(k * (1 - config.rate)), replace=False)] = True
    work = np.where(failed, config.straggler_work, 1.0) if config.kind == "straggler" else np.ones(k)
    return RoundFaults(config.kind, selected, failed, work)


def completed_steps(scheduled: np.ndarray, work: np.ndarray) -> np.ndarray:
    """⌈f_k · K_k⌉ of K_k scheduled steps (f_k K_k rounded to 9 decimals first), at least 1."""
    scheduled = np.asarray(scheduled, dtype=np.int64)
    done = np.ceil(np.round(np.asarray(work, dtype=np.float64) * scheduled, 9)).astype(np.int64)
    return np.clip(done, 1, scheduled)


def truncate_schedule(schedule: BatchSchedule, steps: np.ndarray) -> BatchSchedule:
    """``schedule`` with client k's steps from ``steps[k]`` on padded (``active`` False, ``mask`` 0): the
    engines treat those as no-ops, so client k trains on its first ``steps[k]`` minibatches only. Steps no
    client takes any more are cut off."""
    active = schedule.active & (np.arange(schedule.num_steps)[None, :] < np.asarray(steps)[:, None])
    width = int(active.sum(axis=1).max(initial=0))
    active = active[:, :width]
    on = to_device(active, schedule.mask.device, schedule.mask.dtype)
    mask = schedule.mask[:, :width] * on[:, :, None]
    return replace(schedule, index=schedule.index[:, :width], mask=mask, active=active)
