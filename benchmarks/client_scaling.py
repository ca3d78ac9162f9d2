"""N-scaling benchmark: one FedAvg round of 10 clients costs the same at N = 100, 1,000 and 10,000 clients.

Each N runs in its own process (so that its peak memory is its own): N synthetic clients of ``--samples``
inputs of Fashion-MNIST's size (784 features, 10 classes; random values, which do not change the arithmetic),
W1's MLP 784-200-200-10, 10 clients per round × 10 local steps of batch ``--samples`` on the batched engine.
The round's time excludes evaluation; medians over ``--rounds`` rounds after 3 warm-up rounds. One line per N:

``scale N=… s_per_round=… peak_rss_mb=… data_mb=…``

then ``scale ratio_1000=… ratio_10000=…`` (each N's round time over N = 100's) and the peak memory's growth.
``data_mb`` is the clients' inputs alone (N × samples × 784 × 4 bytes): peak memory should grow by about
that much and no faster.

Usage: ``python benchmarks/client_scaling.py [--clients 100 1000 10000] [--samples 20] [--rounds 30]``
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

FEATURES, CLASSES, PER_ROUND, STEPS = 784, 10, 10, 10


def one(n: int, samples: int, rounds: int) -> None:
    import torch

    from fairfl_core.algorithms import build_algorithm
    from fairfl_core.data.federated import FederatedDataset
    from fairfl_core.experiments.config import TrainConfig
    from fairfl_core.models import build_model
    from fairfl_core.sim.context import Simulation
    from fairfl_core.sim.engine import Engine

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n * samples + 100, FEATURES, generator=gen)
    y = torch.randint(0, CLASSES, (len(x),), generator=gen)
    train = [torch.arange(k * samples, (k + 1) * samples) for k in range(n)]
    tail = torch.arange(n * samples, len(x))
    data = FederatedDataset("synthetic", x, y, CLASSES, train, [tail] * n, tail, torch.full((n,), -1))
    model = build_model("mlp", in_features=FEATURES, num_classes=CLASSES)
    cfg = TrainConfig(
        rounds=rounds + 3, clients_per_round=PER_ROUND, batch_size=samples, lr=0.1, local_steps=STEPS
    )
    algo = build_algorithm("fedavg", Simulation(Engine(model, data), cfg, seed=0), {})
    times = []
    for t in range(rounds + 3):
        start = time.perf_counter()
        algo.round(t)
        times.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data_mb = x.numel() * 4 / 2**20
    print(
        f"scale N={n} s_per_round={statistics.median(times[3:]):.4f} peak_rss_mb={peak_mb:.0f} "
        f"data_mb={data_mb:.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--samples", type=int, default=20, help="samples per client (= the batch size)")
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds per N")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one is not None:
        one(args.one, args.samples, args.rounds)
        return
    found = {}
    for n in args.clients:
        cmd = [
            sys.executable,
            __file__,
            "--one",
            str(n),
            "--samples",
            str(args.samples),
            "--rounds",
            str(args.rounds),
        ]
        line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(line, flush=True)
        found[n] = {k: float(v) for k, v in (f.split("=") for f in line.split()[1:])}
    base = found[args.clients[0]]
    ratios = " ".join(
        f"ratio_{n}={found[n]['s_per_round'] / base['s_per_round']:.3f}" for n in args.clients[1:]
    )
    growth = " ".join(
        f"rss_growth_{n}_mb={found[n]['peak_rss_mb'] - base['peak_rss_mb']:.0f}"
        f"(data +{found[n]['data_mb'] - base['data_mb']:.0f})"
        for n in args.clients[1:]
    )
    print(f"scale {ratios} {growth}")


if __name__ == "__main__":
    main()
