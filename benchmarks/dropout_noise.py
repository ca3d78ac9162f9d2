"""The dropout noise of a round (``sim/batches.py``: ``dropout_noise``): today's generator per row and step
against one generator per row and round (the noise of all its steps drawn at once).

Today row r's noise at step s comes from a generator seeded with ``SeedSequence([seed_r, s])``, so it depends
on the row and the step alone (a row stepped at any time, AFGA's re-sampled subsets included). One generator
per row and round draws other numbers (its stream is not the per-step streams), so the masks, and every
result of a model with ``SeededDropout``, would change: this script only measures what it would gain. Both
draw the same amount of noise for K rows × S steps of batch B, per round, at the models with
``SeededDropout`` (``models/__init__.py``).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/dropout_noise.py [--clients 10] [--batch 10] [--steps 20]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from fairfl_core.models import build_model
from fairfl_core.models.dropout import model_dropouts
from fairfl_core.sim.batches import BatchSchedule, draw_schedule, dropout_noise

MODELS = {"ditto_cnn_femnist": (1, 28, 28), "equitable_cnn_femnist": (1, 28, 28), "lstm_afga": (80,)}


def per_round(schedule: BatchSchedule, shapes: list) -> None:
    """The alternative: one generator per row and round, every step's noise ``[S, B, *shape]`` at once,
    then each step's rows stacked as ``dropout_noise`` returns them."""
    steps, batch = schedule.index.shape[1], schedule.index.shape[2]
    drawn = []
    for seed in schedule.seeds:
        gen = torch.Generator().manual_seed(int(seed) & ((1 << 63) - 1))
        drawn.append([torch.rand((steps, batch, *shape), generator=gen) for shape in shapes])
    for s in range(steps):
        tuple(torch.stack([row[i][s] for row in drawn]) for i in range(len(shapes)))


def per_step(schedule: BatchSchedule, shapes: list) -> None:
    """Today: ``dropout_noise`` at every step for every row."""
    rows = np.arange(schedule.index.shape[0])
    for s in range(schedule.index.shape[1]):
        dropout_noise(schedule, rows, np.full(len(rows), s), shapes, torch.device("cpu"))


def best_of(fn, *args, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        tick = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - tick)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    k, b, s = args.clients, args.batch, args.steps
    print(f"threads={torch.get_num_threads()} K={k} B={b} S={s} (best of 3)")
    for name, sample in MODELS.items():
        model = build_model(name)
        dtype = torch.long if len(sample) == 1 else torch.float32

        def inputs(idx, _dtype, sample=sample, dtype=dtype):
            return torch.zeros((len(idx), *sample), dtype=dtype)

        shapes = [shape for _, shape in model_dropouts(model, inputs, torch.device("cpu"))]
        pool = torch.arange(k * b * s).reshape(k, -1)
        schedule = draw_schedule(pool, np.full(k, b * s), b, steps=s, seed=1)
        today, alternative = best_of(per_step, schedule, shapes), best_of(per_round, schedule, shapes)
        print(
            f"{name:22} shapes={shapes} per row and step {today * 1e3:.1f} ms/round "
            f"({today / (k * s) * 1e6:.0f} us per row-step), "
            f"per row and round {alternative * 1e3:.1f} ms/round, "
            f"gain {today / alternative:.2f}x ({(today - alternative) / (k * s) * 1e6:.0f} us per row-step)"
        )


if __name__ == "__main__":
    main()
