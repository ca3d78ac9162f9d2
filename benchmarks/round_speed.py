"""W1 round-speed benchmark: batched vs sequential engine on the FedEBA+ Table 1 Fashion-MNIST setting.

W1 = real Fashion-MNIST, 100 clients with 2 label shards each, MLP 784-200-200-10, 10 clients per round,
10 local steps of batch 50, lr 0.1 (evaluation excluded from the per-round timing). The same process
measures the FLOP/s of a large fp32 matmul, and the last line is::

    W1 batched_s_per_round=<x> sequential_s_per_round=<y> speedup=<y/x> efficiency=<e>

with e = training FLOP/s of the batched engine / matmul FLOP/s.

Usage: ``python benchmarks/round_speed.py [--rounds 50] [--device cpu] [--full-run] [--cnn-rounds 3]``;
``--full-run`` also times a complete 2000-round FedAvg run of W1 with evaluation every 20 rounds
(``fairfl run`` path); ``--cnn-rounds N`` (N > 0) also times FedEBA+'s CIFAR-10 CNN workload (the
Fashion-MNIST stand-in when CIFAR-10 is absent) with the client axis vmapped, looped
(``engine.client_axis``) and sequential.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.experiments.runner import resolve_device, run_data, run_experiment
from fairfl_core.models import build_model
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine

CONFIG = "fairfl_core/experiments/configs/fmnist_fedavg.yaml"
CNN_CONFIG = "fairfl_core/experiments/configs/fedeba_cifar10_cnn.yaml"


def train_flops_per_round(cfg: ExperimentConfig, model: torch.nn.Module) -> float:
    """Forward + backward ≈ 3 × 2 × MACs of the Linear layers, per sample, times samples per round."""
    macs = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear))
    samples = cfg.train.clients_per_round * cfg.train.local_steps * cfg.train.batch_size
    return 3 * 2 * macs * samples


def matmul_flops(device: torch.device, n: int = 2048, reps: int = 20) -> float:
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    for _ in range(3):
        a @ b
    _sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - t)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def seconds_per_round(
    cfg: ExperimentConfig,
    kind: str,
    device: torch.device,
    rounds: int,
    warmup: int = 3,
    client_axis: str = "auto",
) -> float:
    data = run_data(cfg, device)
    model = build_model(cfg.model.name, seed=0, **cfg.model.options)
    engine = Engine(model, data, kind=kind, client_axis=client_axis)
    algo = build_algorithm("fedavg", Simulation(engine, cfg.train, seed=0), cfg.algorithm.params)
    for t in range(warmup):
        algo.round(t)
    _sync(device)
    start = time.perf_counter()
    for t in range(warmup, warmup + rounds):
        algo.round(t)
    _sync(device)
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--sequential-rounds", type=int, default=None, help="default: --rounds")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--full-run", action="store_true")
    parser.add_argument("--cnn-rounds", type=int, default=0, help="also time the CNN workload (0: skip)")
    args = parser.parse_args()
    device = resolve_device(args.device)
    cfg = ExperimentConfig.from_dict(load_config(CONFIG)).validate()
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__}")

    flops = train_flops_per_round(cfg, build_model(cfg.model.name))
    peak = matmul_flops(device)
    batched = seconds_per_round(cfg, "batched", device, args.rounds)
    sequential = seconds_per_round(cfg, "sequential", device, args.sequential_rounds or args.rounds)
    print(
        f"training GFLOP per round={flops / 1e9:.2f} matmul GFLOP/s={peak / 1e9:.1f} "
        f"batched GFLOP/s={flops / batched / 1e9:.1f}"
    )
    if args.cnn_rounds > 0:
        from fairfl_core.experiments.papers.fedeba_plus import cifar10_stand_in

        cnn = ExperimentConfig.from_dict(load_config(CNN_CONFIG, list(cifar10_stand_in()))).validate()
        times = {
            name: seconds_per_round(cnn, kind, device, args.cnn_rounds, warmup=1, client_axis=axis)
            for name, kind, axis in [
                ("batched_vmap", "batched", "vmap"),
                ("batched_loop", "batched", "loop"),
                ("sequential", "sequential", "auto"),
            ]
        }
        print(
            f"CNN ({cnn.data.name}, {cnn.model.name}) "
            + " ".join(f"{k}_s_per_round={v:.3f}" for k, v in times.items())
        )
    if args.full_run:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            result = run_experiment(cfg, tmp, progress=False, device=str(device))
            print(
                f"W1 full FedAvg run: {cfg.train.rounds} rounds with evaluation every {cfg.eval.every}: "
                f"{time.perf_counter() - start:.1f} s, final mean client acc {result.summary['mean']:.2f}%, "
                f"var {result.summary['var']:.2f}"
            )
    print(
        f"W1 batched_s_per_round={batched:.4f} sequential_s_per_round={sequential:.4f} "
        f"speedup={sequential / batched:.2f} efficiency={flops / batched / peak:.3f}"
    )


if __name__ == "__main__":
    main()
