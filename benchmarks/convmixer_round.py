"""W4 benchmark: one AFGA round of ConvMixer-256-8 (AFGA's CIFAR-10 model), batched vs sequential.

W4 = AFGA's CIFAR-10 Setting 2 on synthetic inputs of CIFAR's shape (3×32×32, random values and labels, which
do not change the arithmetic): N = 50 clients, M = 5 of them step at each of Z local iterations (batch 50),
then all 50 gossip over the ring, then the AMSGrad server step. The same process times, in interleaved blocks
(medians):

* ``batched``: the engine's default for convolutional models on CPU (``client_axis="auto"``: one reverse-mode
  call per client) running AFGA's round, gossip included;
* ``sequential``: the same round on the sequential reference engine;
* ``gossip``: the round's Z gossip steps alone (``gossip.Mixer`` on the stacked N models);
* the conv peak: the faster of one ConvMixer-256-8 training step (forward + backward) of a single model on 50
  images (one client's step) and on M × 50 = 250 images (the iteration's convolutions as one computation);
* the FLOP/s of a large fp32 matmul (as W1).

The last line is ``W4 batched_s_per_round=… sequential_s_per_round=… speedup=… efficiency=…`` with efficiency
= training FLOP/s of the batched round / the conv peak's FLOP/s; the matmul fraction is printed above it.
``--local-steps`` below the paper's Z = 24 shortens every timed round alike (a round costs Z iterations).

Usage: ``python benchmarks/convmixer_round.py [--local-steps 24] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from round_speed import matmul_flops, sync
from torch import nn
from torch.nn import functional as F

from fairfl_core.algorithms import build_algorithm
from fairfl_core.data.federated import FederatedDataset
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.gossip import Mixer, topology
from fairfl_core.models import build_model
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.engine import Engine

N, M, BATCH, PER_CLIENT = 50, 5, 50, 100


def forward_flops(model: nn.Module, shape: tuple[int, ...] = (3, 32, 32)) -> float:
    """FLOPs of one input's forward pass: every convolution's and linear layer's multiply-adds, at the output
    sizes a forward pass of one input of ``shape`` gives (activations, normalisation and pooling are
    elementwise and left out)."""
    flops = []

    def count(m, _, out):
        if isinstance(m, nn.Conv2d):
            flops.append(
                2 * out[0].numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
            )
        elif isinstance(m, nn.Linear):
            flops.append(2 * m.in_features * m.out_features)

    hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model.eval()(torch.zeros(1, *shape))
    for h in hooks:
        h.remove()
    return float(sum(flops))


def synthetic_clients(
    shape: tuple[int, ...] = (3, 32, 32), clients: int = N, per_client: int = PER_CLIENT, seed: int = 0
) -> FederatedDataset:
    """``clients`` clients of ``per_client`` random inputs of ``shape`` and random labels (10 classes)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(clients * per_client + BATCH, *shape, generator=gen)
    y = torch.randint(0, 10, (len(x),), generator=gen)
    train = [torch.arange(k * per_client, (k + 1) * per_client) for k in range(clients)]
    tail = torch.arange(clients * per_client, len(x))
    return FederatedDataset("synthetic", x, y, 10, train, [tail] * clients, tail, torch.full((clients,), -1))


def conv_peak(
    model: nn.Module,
    shape: tuple[int, ...] = (3, 32, 32),
    batches: tuple[int, ...] = (BATCH, M * BATCH),
    reps=2,
) -> float:
    """FLOP/s of single-model training steps (forward + backward) on inputs of ``shape``: the fastest of the
    ``batches`` sizes."""
    best, per_input = 0.0, forward_flops(model, shape)
    for batch in batches:
        device = next(model.parameters()).device
        x, y = torch.randn(batch, *shape, device=device), torch.randint(0, 10, (batch,), device=device)
        model.train()
        F.cross_entropy(model(x), y).backward()  # warm-up
        start = time.perf_counter()
        for _ in range(reps):
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
        best = max(best, 3 * per_input * batch * reps / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--local-steps", type=int, default=24, help="Z, local iterations per round (paper: 24)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing blocks (medians)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = resolve_device(args.device)
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__} Z={args.local_steps}")
    data, model = synthetic_clients().to(device), build_model("convmixer", num_classes=10, in_channels=3)
    train = TrainConfig(
        rounds=10, clients_per_round=M, batch_size=BATCH, lr=2.0, local_steps=args.local_steps
    )
    algos = {
        kind: build_algorithm("afga", Simulation(Engine(model, data, kind=kind), train, seed=0), {})
        for kind in ("batched", "sequential")
    }
    mixer, stacked = Mixer(topology("ring", N)), algos["batched"].w.expand(N, -1).contiguous()
    out = torch.empty_like(stacked)

    def gossip(_):
        for _ in range(args.local_steps):
            mixer(stacked, out=out)

    runs = {"batched": algos["batched"].round, "sequential": algos["sequential"].round, "gossip": gossip}
    peak_model = build_model("convmixer", num_classes=10, in_channels=3).to(device)
    for run in runs.values():  # warm-up
        run(0)
    peaks, matmuls, times = [], [], {name: [] for name in runs}
    for block in range(args.repeats):
        peaks.append(conv_peak(peak_model))
        matmuls.append(matmul_flops(device, reps=5))
        for name, run in runs.items():
            sync(device)
            start = time.perf_counter()
            run(block + 1)
            sync(device)
            times[name].append(time.perf_counter() - start)
    peak = statistics.median(peaks)
    med = {name: statistics.median(v) for name, v in times.items()}
    flops = 3 * forward_flops(model) * M * BATCH * args.local_steps
    matmul = statistics.median(matmuls)
    print(
        f"training GFLOP per round={flops / 1e9:.1f} conv peak GFLOP/s={peak / 1e9:.1f} matmul GFLOP/s="
        f"{matmul / 1e9:.1f} (medians of {args.repeats} interleaved blocks); batched round at "
        f"{flops / med['batched'] / matmul:.3f} of the matmul peak"
    )
    for name, values in times.items():
        share = "" if name == "gossip" else f" ({flops / med[name] / peak:.3f} of the conv peak)"
        print(
            f"  {name} s/round: median {med[name]:.3f}{share}, blocks " + " ".join(f"{v:.3f}" for v in values)
        )
    print(
        f"W4 batched_s_per_round={med['batched']:.3f} sequential_s_per_round={med['sequential']:.3f} "
        f"speedup={med['sequential'] / med['batched']:.2f} efficiency={flops / med['batched'] / peak:.3f}"
    )


if __name__ == "__main__":
    main()
