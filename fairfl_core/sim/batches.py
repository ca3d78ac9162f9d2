"""Minibatch schedules for a round's local training, drawn for all clients at once.

Both engines (batched and sequential) consume the same schedule, so they see identical minibatches. The
permutations are drawn on the CPU from the round's counter-based seed and only then moved to the engine's
device, so a config and seed give the same minibatches on every device (CUDA's generator draws other numbers
than the CPU's).

A client with ``n`` local samples walks through successive random permutations of its data (sampling
without replacement within an epoch, as a shuffled DataLoader does):

* **steps** mode (FedEBA+: "K = 10 local steps, B = 50"): ``steps`` minibatches of ``b = min(B, n)``
  samples; the stream continues into the next permutation when one is exhausted.
* **epochs** mode (Equitable-FL, GIFAIR: "E local epochs"): each epoch is a fresh permutation cut into
  ``ceil(n / B)`` minibatches, the last one possibly smaller (``drop_last=False``).

Clients with fewer minibatches than the longest are padded: a padded step has ``active = False`` and an
all-zero sample mask, and the engines leave such a client's state untouched on that step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.sim.transfer import to_device

__all__ = ["BatchSchedule", "NoiseAhead", "draw_schedule", "dropout_noise", "steps_per_client"]


@dataclass
class BatchSchedule:
    """``index[k, s, j]`` is a global sample index; ``mask`` weights it (0 for padding)."""

    index: torch.Tensor  # int64 [K, S, B]
    mask: torch.Tensor  # float [K, S, B]
    active: np.ndarray  # bool [K, S] (host copy: which steps update each client)
    epoch_steps: np.ndarray  # int [K] minibatches in one pass over a client's data, ⌈n_k / min(B, n_k)⌉
    seeds: np.ndarray  # uint64 [K] each row's seed for the draws of its steps (dropout masks)

    @property
    def num_steps(self) -> int:
        return self.index.shape[1]

    def rows(self, rows: slice) -> BatchSchedule:
        """The schedule of the clients in ``rows``."""
        return BatchSchedule(
            self.index[rows], self.mask[rows], self.active[rows], self.epoch_steps[rows], self.seeds[rows]
        )


def steps_per_client(
    counts: np.ndarray, batch_size: int, steps: int | None, epochs: int | None
) -> np.ndarray:
    if (steps is None) == (epochs is None):
        raise ValueError("local work must be given as exactly one of `local_steps` or `local_epochs`")
    if steps is not None:
        return np.full(len(counts), steps, dtype=np.int64)
    return epochs * -(-counts // batch_size)


def draw_schedule(
    padded_index: torch.Tensor,
    counts: np.ndarray,
    batch_size: int,
    *,
    steps: int | None = None,
    epochs: int | None = None,
    seed: int,
    dtype: torch.dtype = torch.float32,
) -> BatchSchedule:
    """Draw every client's minibatches for one round.

    ``padded_index`` is ``[K, max_n]`` (row k's first ``counts[k]`` entries are client k's sample
    indices); ``seed`` fixes the draw (the same seed gives the same minibatches, which Ditto relies on).
    """
    counts = np.asarray(counts, dtype=np.int64)
    if (counts <= 0).any():
        raise ValueError("every selected client needs at least one training sample")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    device = padded_index.device
    k_clients, width = padded_index.shape
    n_steps = steps_per_client(counts, batch_size, steps, epochs)
    s_max = int(n_steps.max())
    b = batch_size

    # position of sample j of step s in the client's stream of permutations
    s_ar = np.arange(s_max)[None, :, None]
    j_ar = np.arange(b)[None, None, :]
    n = counts[:, None, None]
    if steps is not None:
        bk = np.minimum(b, counts)[:, None, None]
        pos = s_ar * bk + j_ar
        valid = j_ar < bk
    else:
        per_epoch = -(-n // b)
        pos = (s_ar // per_epoch) * n + (s_ar % per_epoch) * b + j_ar
        valid = ((s_ar % per_epoch) * b + j_ar) < n
    valid = valid & (s_ar < n_steps[:, None, None])
    epoch = np.where(valid, pos // n, 0)
    within = np.where(valid, pos % n, 0)
    n_epochs = int(epoch.max()) + 1

    gen = torch.Generator().manual_seed(int(seed))  # on the CPU whatever the engine's device
    keys = torch.rand((k_clients, n_epochs, width), generator=gen)
    keys = keys.masked_fill(torch.arange(width) >= torch.as_tensor(counts)[:, None, None], 2.0)
    perm = keys.argsort(dim=-1)  # valid columns first, in random order

    kk = torch.arange(k_clients)[:, None, None]
    local = perm[kk, torch.as_tensor(epoch), torch.as_tensor(within)]  # [K, S, B] positions in each row
    kk, local = to_device(kk, device), to_device(local, device)
    index = padded_index[kk, local]
    mask = to_device(valid, device, dtype)
    active = np.arange(s_max)[None, :] < n_steps[:, None]
    epoch_steps = -(-counts // np.minimum(b, counts))
    seeds = np.random.SeedSequence([int(seed), 0xD0]).generate_state(k_clients, dtype=np.uint64)
    return BatchSchedule(index=index, mask=mask, active=active, epoch_steps=epoch_steps, seeds=seeds)


def dropout_noise(
    schedule: BatchSchedule,
    rows: Sequence[int] | np.ndarray,
    steps: Sequence[int] | np.ndarray,
    shapes: Sequence[tuple[int, ...]],
    device: torch.device,
) -> tuple[torch.Tensor, ...]:
    """Uniform noise ``[R, B, *shape]`` for each dropout layer (``models/dropout.py``) at step ``steps[r]`` of
    row ``rows[r]``: drawn on the CPU by a generator seeded with the row's seed and the step, so it depends
    on nothing else (not the device, not the other rows), then moved to ``device``."""
    if not shapes:
        return ()
    batch = schedule.index.shape[2]
    per_row = []
    for r, s in zip(np.asarray(rows).tolist(), np.asarray(steps).tolist(), strict=True):
        state = np.random.SeedSequence([int(schedule.seeds[r]), int(s)]).generate_state(1, dtype=np.uint64)[0]
        gen = torch.Generator().manual_seed(int(state))
        per_row.append([torch.rand((batch, *shape), generator=gen) for shape in shapes])
    return tuple(to_device(torch.stack(layer), device) for layer in zip(*per_row, strict=True))


class NoiseAhead:
    """:func:`dropout_noise` drawn ahead: every row's noise for a window of steps at once, moved to the device
    in one copy per layer, so a step reads its noise from the device instead of drawing and copying it (on a
    GPU the host no longer stalls the launch queue each step). The same per-row-and-step generators draw it,
    so the same bits. The window holds at most ``budget`` bytes (at least one step)."""

    def __init__(
        self,
        schedule: BatchSchedule,
        shapes: Sequence[tuple[int, ...]],
        device: torch.device,
        budget: int = 2**26,
    ):
        self.schedule, self.shapes, self.device = schedule, list(shapes), device
        k, batch = schedule.index.shape[0], schedule.index.shape[2]
        step_bytes = 4 * k * batch * sum(int(np.prod(shape)) for shape in self.shapes)
        self.window = int(np.clip(budget // max(step_bytes, 1), 1, schedule.num_steps))
        self.start = 0
        self.noise: tuple[torch.Tensor, ...] = ()  # each layer's [K, window, B, *shape]

    def __call__(self, rows: np.ndarray | None, steps: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Each layer's noise ``[R, B, *shape]`` of row ``rows[r]`` (None: every row) at step ``steps[r]``."""
        if not self.shapes:
            return ()
        lo, hi = int(steps.min()), int(steps.max())
        if hi - lo >= self.window:  # rows too far apart to share a window: drawn as they are
            every = np.arange(self.schedule.index.shape[0]) if rows is None else rows
            return dropout_noise(self.schedule, every, steps, self.shapes, self.device)
        if not self.noise or lo < self.start or hi >= self.start + self.window:
            self._draw(lo)
        if rows is None and lo == hi:
            return tuple(layer[:, lo - self.start] for layer in self.noise)
        every = np.arange(self.schedule.index.shape[0]) if rows is None else rows
        at = to_device(every, self.device), to_device(steps - self.start, self.device)
        return tuple(layer[at] for layer in self.noise)

    def _draw(self, start: int) -> None:
        k = self.schedule.index.shape[0]
        span = np.arange(start, min(start + self.window, self.schedule.num_steps))
        rows, steps = np.repeat(np.arange(k), len(span)), np.tile(span, k)
        drawn = dropout_noise(self.schedule, rows, steps, self.shapes, self.device)
        self.start = start
        self.noise = tuple(t.view(k, len(span), *t.shape[1:]) for t in drawn)
