"""Seconds per gossip step X ← W X over N stacked client models (AFGA Algorithm 1 line 14), dense vs sparse W.

W is the 1/3 ring over N clients (AFGA's default; CAFGA's block-diagonal rings have the same 3N non-zeros);
X is ``[N, P]`` float32 with P = the model's parameters plus its BatchNorm running statistics (gossiped
too): ConvMixer-256-8 (10 classes) and AFGA's Shakespeare LSTM (``lstm_afga``). ``fairfl_core.gossip.Mixer``
does the product, with W dense (2N²P flops) or sparse (COO, 6NP flops), writing into a reused output buffer
(``out=``) as an engine gossiping every local step would; ``sparse_alloc_s`` is the sparse product returning
a fresh tensor. The three are timed alternately, ``--repeats`` times each, and the medians printed, one line
per N and model (shown here on two lines)::

    N=<n> model=<name> P=<p> dense_s=<x> sparse_s=<y> sparse_alloc_s=<z> dense/sparse=<x/y>
        memory_gb=<X, the buffer and a fresh W X> threads=<t>

Both products are linear in P, so narrower tensors are timed and the times scaled to P when needed, which
the line then states: ``timed_p=<P'>`` when the three [N, P] tensors (X, the buffer, a fresh W X) would
exceed ``--max-gb``, and ``dense_p=<P''>`` when one dense product would exceed ``--dense-max-gflop`` (to keep
the runs short on a shared machine; at N = 1000 and P = 600k it is 1.2 TFLOP). An AFGA round has Z steps
(Z = 24 on CIFAR, 100 on Shakespeare).

Usage: ``python benchmarks/gossip_cost.py [--clients 100 1000] [--repeats 3] [--max-gb 8]
[--dense-max-gflop 100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fairfl_core.gossip import Mixer, ring
from fairfl_core.models import build_model

MODELS = {"convmixer": {"num_classes": 10}, "lstm_afga": {}}


def gossiped_size(name: str) -> int:
    model = build_model(name, **MODELS[name])
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() for t in tensors if t.is_floating_point())


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(n: int, p: int, repeats: int, max_bytes: float, dense_max_flop: float) -> dict[str, float]:
    """Median seconds per step at full width P (scaled from the timed widths), and the timed widths."""
    timed_p = min(p, int(max_bytes // (3 * n * 4)))
    dense_p = min(timed_p, max(1, int(dense_max_flop // (2 * n * n))))
    X = torch.randn(n, timed_p, generator=torch.Generator().manual_seed(0))
    Y = torch.zeros_like(X)
    Xd, Yd = X[:, :dense_p].contiguous(), Y[:, :dense_p].contiguous()
    dense, sparse = Mixer(ring(n), sparse=False), Mixer(ring(n), sparse=True)
    dense(X[:, :1]), sparse(X[:, :1])  # convert W once, outside the timings
    runs = {
        "dense": (lambda: dense(Xd, out=Yd), dense_p),
        "sparse": (lambda: sparse(X, out=Y), timed_p),
        "sparse_alloc": (lambda: sparse(X), timed_p),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (run, _) in runs.items():
            times[name].append(seconds(run))
    out = {name: statistics.median(times[name]) * p / width for name, (_, width) in runs.items()}
    return {**out, "timed_p": timed_p, "dense_p": dense_p, "gb": 3 * n * timed_p * 4 / 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-gb", type=float, default=8.0, help="memory for X, the buffer and a fresh W X")
    parser.add_argument("--dense-max-gflop", type=float, default=100.0, help="one timed dense step")
    args = parser.parse_args()
    for n in args.clients:
        for name in MODELS:
            p = gossiped_size(name)
            s = measure(n, p, args.repeats, args.max_gb * 1e9, args.dense_max_gflop * 1e9)
            line = (
                f"N={n} model={name} P={p} dense_s={s['dense']:.4f} sparse_s={s['sparse']:.4f} "
                f"sparse_alloc_s={s['sparse_alloc']:.4f} dense/sparse={s['dense'] / s['sparse']:.1f} "
                f"memory_gb={s['gb']:.2f} threads={torch.get_num_threads()}"
            )
            for key in ("timed_p", "dense_p"):
                if s[key] < p:
                    line += f" {key}={s[key]}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
