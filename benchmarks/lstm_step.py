"""W3 benchmark: the Shakespeare LSTM-256 local step (LEAF's 2-layer ``lstm_leaf``), batched vs sequential.

W3 = one local SGD step of 10 clients × batch 10 × 80 characters (a round of one local step; the token ids are
random, which does not change the arithmetic). The same process times, in interleaved blocks (medians):

* ``batched``: the engine's default for recurrent models, ``client_axis="auto"``: torch's fused LSTM kernel
  (oneDNN on CPU, cuDNN on CUDA), one call per client;
* ``vmap_gates``: the engine with ``client_axis="vmap"``: the gate equations written out (``models/lstm.py``,
  kernel ``"gates"``) and vmapped over the stacked clients, one batched matmul per character for all clients;
* ``bmm``: the engine with ``client_axis="bmm"``: forward and backpropagation through time written out
  (``sim/lstm_step.py``), one batched matmul per character and layer for all clients, no autograd;
* ``sequential``: the sequential reference engine (one module, ``torch.optim.SGD``, client after client);
* the FLOP/s of a large fp32 matmul.

The last line is ``W3 batched_s_per_round=… sequential_s_per_round=… speedup=… efficiency=…`` with
efficiency = training FLOP/s of the batched engine / matmul FLOP/s; the FLOP floor is the step's FLOPs at the
matmul's rate. ``--gifair-round`` also times rounds of the GIFAIR-FL Shakespeare quick profile (FedAvg, real
role data) with ``client_axis`` ``auto`` and ``bmm``, interleaved.

Usage: ``python benchmarks/lstm_step.py [--repeats 5] [--steps 2] [--gifair-round] [--device cuda]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from round_speed import matmul_flops, sync

from fairfl_core.data.federated import FederatedDataset
from fairfl_core.models import build_model
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec

CLIENTS, BATCH, SEQ, VOCAB = 10, 10, 80, 80


def step_flops(model: torch.nn.Module, clients: int = CLIENTS, batch: int = BATCH) -> float:
    """Forward + backward ≈ 3 × forward; forward per sequence: every layer's 4 gates at every character
    (2·4H·(in + H) per character) plus the head at the last one."""
    per_char = sum(
        2 * layer.weight_ih.shape[0] * sum(layer.weight_ih.shape[1:] + layer.weight_hh.shape[1:])
        for layer in model.layers
    )
    head = 2 * model.head.in_features * model.head.out_features
    return 3 * clients * batch * (SEQ * per_char + head)


def token_data(clients: int = CLIENTS, batch: int = BATCH, seed: int = 0) -> FederatedDataset:
    """``clients`` clients of 4 batches of random ``SEQ``-character sequences and next characters each."""
    gen = torch.Generator().manual_seed(seed)
    per_client = 4 * batch
    x = torch.randint(0, VOCAB, (clients * per_client + 4, SEQ), generator=gen)
    y = torch.randint(0, VOCAB, (len(x),), generator=gen)
    train = [torch.arange(k * per_client, (k + 1) * per_client) for k in range(clients)]
    tail = torch.arange(clients * per_client, len(x))
    return FederatedDataset("tokens", x, y, VOCAB, train, [tail] * clients, tail, torch.full((clients,), -1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing blocks (medians)")
    parser.add_argument("--steps", type=int, default=2, help="local steps per timing block and engine")
    parser.add_argument("--gifair-round", action="store_true")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = resolve_device(args.device)
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__}")
    data, clients = token_data().to(device), np.arange(CLIENTS)
    spec = LocalSpec(lr=0.8, batch_size=BATCH, steps=1)
    model = build_model("lstm_leaf")
    engines = {
        "batched": Engine(model, data),
        "vmap_gates": Engine(model, data, client_axis="vmap"),
        "bmm": Engine(model, data, client_axis="bmm"),
        "sequential": Engine(model, data, kind="sequential"),
    }
    w = engines["batched"].init_params()
    runs = {name: (lambda s, e=engine: e.train(clients, w, spec, seed=s)) for name, engine in engines.items()}
    for run in runs.values():  # warm-up
        run(0)
    peaks, times = [], {name: [] for name in runs}
    for block in range(args.repeats):
        peaks.append(matmul_flops(device, reps=5))
        for name, run in runs.items():
            sync(device)
            start = time.perf_counter()
            for s in range(args.steps):
                run(block * args.steps + s)
            sync(device)
            times[name].append((time.perf_counter() - start) / args.steps)
    peak = statistics.median(peaks)
    med = {name: statistics.median(v) for name, v in times.items()}
    flops = step_flops(model)
    print(
        f"training GFLOP per step={flops / 1e9:.2f} matmul GFLOP/s={peak / 1e9:.1f} FLOP floor "
        f"{flops / peak:.4f} s (medians of {args.repeats} interleaved blocks of {args.steps} steps)"
    )
    for name, values in times.items():
        print(
            f"  {name} s/step: median {med[name]:.4f} ({flops / med[name] / peak:.3f} of the matmul peak), "
            "blocks " + " ".join(f"{v:.4f}" for v in values)
        )
    if args.gifair_round:
        from fairfl_core.algorithms import build_algorithm
        from fairfl_core.experiments.profiles import experiment_configs
        from fairfl_core.experiments.runner import run_data
        from fairfl_core.sim.context import Simulation

        quick = experiment_configs("gifair_table5_shakespeare", "quick")
        cfg = next(c for c in quick if c.algorithm.name == "fedavg")
        round_data, round_model = run_data(cfg, device), build_model(cfg.model.name, **cfg.model.options)
        algos = {
            axis: build_algorithm(
                "fedavg",
                Simulation(Engine(round_model, round_data, client_axis=axis), cfg.train, cfg.seed),
                cfg.algorithm.params,
            )
            for axis in ("auto", "bmm")
        }
        rounds: dict[str, list[float]] = {axis: [] for axis in algos}
        for r in range(args.repeats + 1):  # round 0 warms up
            for axis, algo in algos.items():
                start = time.perf_counter()
                algo.round(r)
                sync(device)
                if r:
                    rounds[axis].append(time.perf_counter() - start)
        auto_s, bmm_s = (statistics.median(rounds[axis]) for axis in algos)
        print(
            f"GIFAIR Shakespeare quick round (FedAvg, {cfg.data.name}, median of {args.repeats}): "
            f"auto {auto_s:.3f} s, bmm {bmm_s:.3f} s, bmm/auto={bmm_s / auto_s:.2f}"
        )
    print(
        f"W3 batched_s_per_round={med['batched']:.4f} sequential_s_per_round={med['sequential']:.4f} "
        f"speedup={med['sequential'] / med['batched']:.2f} efficiency={flops / med['batched'] / peak:.3f} "
        f"vmap_gates/batched={med['vmap_gates'] / med['batched']:.2f} "
        f"bmm/batched={med['bmm'] / med['batched']:.2f}"
    )


if __name__ == "__main__":
    main()
