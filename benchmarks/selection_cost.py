"""Server-side cost of one SubTrunc / UnionFL selection round, for N clients with LeNet-5 (MNIST) gradients.

One round = the ``[N, N]`` distance matrix between N flattened gradients (``pairwise_distances``) + building
the objective + stochastic greedy with κ = 10, r = 10 (the paper's setting). The gradients are random
float32 vectors of the model's size: computing them is the engine's job and is not timed here. Prints one
line per N (medians over ``--repeats``; shown here on two lines)::

    N=<n> P=<params> distances_s=<x> greedy_s=<y> round_s=<median of x+y> lazy_greedy_s=<z>
        elementwise_s=<e> threads=<t>

``distances_s`` is the package's float64 Gram form (one matrix product, the nearly equal pairs recomputed
elementwise). For comparison: ``lazy_greedy_s`` is the exact greedy on the same objective, and
``elementwise_s`` the distances summed elementwise by ``torch.cdist`` without matrix products (the form the
package used before, in the gradients' float32).

Usage: ``python benchmarks/selection_cost.py [--clients 100 1000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from fairfl_core.models import build_model
from fairfl_core.selection.facility_location import lazy_greedy, pairwise_distances
from fairfl_core.selection.submodular import maximize, subtrunc_objective

KAPPA, POOL = 10, 10


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def elementwise_distances(x: torch.Tensor) -> torch.Tensor:
    return torch.cdist(x[None], x[None], compute_mode="donot_use_mm_for_euclid_dist")[0]


def one_round(grads: torch.Tensor, losses: np.ndarray, seed: int) -> tuple[float, float, float, float]:
    t_dist, dist = timed(lambda: pairwise_distances(grads))
    t_greedy, _ = timed(
        lambda: maximize(
            subtrunc_objective(dist, losses, lam=0.95),
            KAPPA,
            rng=np.random.default_rng(seed),
            pool_size=POOL,
        )
    )
    t_lazy, _ = timed(lambda: lazy_greedy(subtrunc_objective(dist, losses, lam=0.95), KAPPA))
    t_elementwise, _ = timed(lambda: elementwise_distances(grads))
    return t_dist, t_greedy, t_lazy, t_elementwise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    params = sum(p.numel() for p in build_model("lenet5_mnist").parameters())
    for n in args.clients:
        gen = torch.Generator().manual_seed(n)
        grads = torch.randn(n, params, generator=gen) * 0.01
        losses = np.random.default_rng(n).random(n) * 2.3
        runs = [one_round(grads, losses, seed) for seed in range(args.repeats)]
        t_dist, t_greedy, t_lazy, t_elementwise = (statistics.median(r[i] for r in runs) for i in range(4))
        t_round = statistics.median(r[0] + r[1] for r in runs)
        print(
            f"N={n} P={params} distances_s={t_dist:.4f} greedy_s={t_greedy:.5f} round_s={t_round:.4f} "
            f"lazy_greedy_s={t_lazy:.5f} elementwise_s={t_elementwise:.4f} threads={torch.get_num_threads()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
