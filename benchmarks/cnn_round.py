"""W2 benchmark: one round of FedEBA+'s CIFAR-10 CNN (``cnn_cifar10``: conv 64-64 5×5, 1600-384-192-10),
batched vs sequential.

W2 = FedEBA+ Table 1's CIFAR-10 column: 10 clients per round × K = 10 local steps of batch 50 (a FedAvg round:
FedEBA+'s own extra work, the losses and one-step updates at configure time, is left out so that the FLOPs
counted are the local training's), at two input shapes: 1×28×28 (the offline Fashion-MNIST stand-in) and
3×32×32 (CIFAR's shape), on synthetic inputs (random values and labels, which do not change the arithmetic).
The same process times, in interleaved blocks (medians):

* ``batched``: the engine's default for convolutional models on CPU (``client_axis="auto"``);
* ``sequential``: the same round on the sequential reference engine;
* the conv peak: the faster of one ``cnn_cifar10`` training step (forward + backward) of a single model on 50
  inputs (one client's step) and on 10 × 50 = 500 inputs (a local step of all clients as one computation);
* the FLOP/s of a large fp32 matmul (as W1).

One line per shape: ``W2[CxHxW] batched_s_per_round=… sequential_s_per_round=… speedup=… efficiency=…`` with
efficiency = training FLOP/s of the batched round / the conv peak's FLOP/s.

Usage: ``python benchmarks/cnn_round.py [--repeats 5]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from convmixer_round import conv_peak, forward_flops, synthetic_clients
from round_speed import matmul_flops, sync

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models import build_model
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.engine import Engine

CLIENTS, STEPS, BATCH = 10, 10, 50
SHAPES = ((1, 28, 28), (3, 32, 32))


def workload(shape: tuple[int, ...], repeats: int, device: torch.device) -> str:
    c, size = shape[0], shape[1]
    model = build_model("cnn_cifar10", in_channels=c, input_size=size)
    data = synthetic_clients(shape, clients=CLIENTS, per_client=STEPS * BATCH).to(device)
    train = TrainConfig(rounds=10, clients_per_round=CLIENTS, batch_size=BATCH, lr=0.1, local_steps=STEPS)
    rounds = {
        kind: build_algorithm("fedavg", Simulation(Engine(model, data, kind=kind), train, seed=0), {}).round
        for kind in ("batched", "sequential")
    }
    peak_model = build_model("cnn_cifar10", in_channels=c, input_size=size).to(device)
    for run in rounds.values():  # warm-up
        run(0)
    peaks, matmuls, times = [], [], {name: [] for name in rounds}
    for block in range(repeats):
        peaks.append(conv_peak(peak_model, shape, (BATCH, CLIENTS * BATCH)))
        matmuls.append(matmul_flops(device, reps=5))
        for name, run in rounds.items():
            sync(device)
            start = time.perf_counter()
            run(block + 1)
            sync(device)
            times[name].append(time.perf_counter() - start)
    peak, matmul = statistics.median(peaks), statistics.median(matmuls)
    med = {name: statistics.median(v) for name, v in times.items()}
    flops = 3 * forward_flops(model, shape) * CLIENTS * STEPS * BATCH
    tag = "x".join(map(str, shape))
    print(
        f"[{tag}] training GFLOP per round={flops / 1e9:.2f} conv peak GFLOP/s={peak / 1e9:.1f} matmul "
        f"GFLOP/s={matmul / 1e9:.1f} (medians of {repeats} interleaved blocks); batched round at "
        f"{flops / med['batched'] / matmul:.3f} of the matmul peak"
    )
    for name, values in times.items():
        print(
            f"  {name} s/round: median {med[name]:.3f} ({flops / med[name] / peak:.3f} of the conv peak), "
            "blocks " + " ".join(f"{v:.3f}" for v in values)
        )
    return (
        f"W2[{tag}] batched_s_per_round={med['batched']:.3f} sequential_s_per_round={med['sequential']:.3f} "
        f"speedup={med['sequential'] / med['batched']:.2f} efficiency={flops / med['batched'] / peak:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing blocks (medians)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = resolve_device(args.device)
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__}")
    lines = [workload(shape, args.repeats, device) for shape in SHAPES]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
