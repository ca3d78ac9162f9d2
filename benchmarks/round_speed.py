"""W1 round-speed benchmark: batched vs sequential engine on the FedEBA+ Table 1 Fashion-MNIST setting.

W1 = real Fashion-MNIST, 100 clients with 2 label shards each, MLP 784-200-200-10, 10 clients per round,
10 local steps of batch 50, lr 0.1 (evaluation excluded from the per-round timing). The same process
measures the FLOP/s of a large fp32 matmul, and the last line is::

    W1 batched_s_per_round=<x> sequential_s_per_round=<y> speedup=<y/x> efficiency=<e>

with e = training FLOP/s of the batched engine / matmul FLOP/s.

Usage: ``python benchmarks/round_speed.py [--rounds 50] [--device cpu] [--full-run] [--cnn-rounds 3]
[--rows 5]``;
``--rows N`` also times N runs of W1 (seeds 0…N−1) trained together as rows (``sim/rows/``), with their
efficiency (N × a round's FLOPs over the wall time of a round of all N, against the matmul rate);
``--full-run`` also times a complete 2000-round FedAvg run of W1 with evaluation every 20 rounds
(``fairfl run`` path); ``--cnn-rounds N`` (N > 0) also times FedEBA+'s CIFAR-10 CNN workload (the
Fashion-MNIST stand-in when CIFAR-10 is absent) with the client axis vmapped, looped
(``engine.client_axis``) and sequential.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.experiments.runner import run_data, run_experiment
from fairfl_core.models import build_model
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.rows import RowsBatcher, RunDied

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
    sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - t)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class Workload:
    """An engine running FedAvg on a config, warmed up; ``time(n)``: mean wall time of its next n rounds."""

    def __init__(self, cfg: ExperimentConfig, kind: str, device: torch.device, client_axis="auto", warmup=3):
        data = run_data(cfg, device)
        model = build_model(cfg.model.name, seed=0, **cfg.model.options)
        engine = Engine(model, data, kind=kind, client_axis=client_axis)
        self.algo = build_algorithm("fedavg", Simulation(engine, cfg.train, seed=0), cfg.algorithm.params)
        self.device, self.t = device, 0
        self.time(warmup)

    def time(self, rounds: int) -> float:
        sync(self.device)
        start = time.perf_counter()
        for _ in range(rounds):
            self.algo.round(self.t)
            self.t += 1
        sync(self.device)
        return (time.perf_counter() - start) / rounds


def rows_round(cfg: ExperimentConfig, device: torch.device, runs: int, rounds: int) -> float:
    """Wall seconds of one round of ``runs`` FedAvg runs of W1 (seeds 0, 1, …) trained together as rows
    (``sim/rows/``), after one warm-up round."""
    batcher = RowsBatcher(stack=True)
    data = batcher.pools.share(run_data(cfg, device))
    algos = []
    for seed in range(runs):
        model = build_model(cfg.model.name, seed=seed, **cfg.model.options)
        engine = Engine(model, data, model_key=cfg.model.name)
        batcher.attach(engine)
        algos.append(
            build_algorithm("fedavg", Simulation(engine, cfg.train, seed=seed), cfg.algorithm.params)
        )
    return rows_rounds(batcher, algos, rounds, device)


def rows_rounds(batcher: RowsBatcher, algos: list, rounds: int, device: torch.device) -> float:
    """Wall seconds of one round of all ``algos`` (their engines attached to ``batcher``) trained together,
    from the first run's end of a warm-up round to the last run's end of ``rounds`` more (a slight
    overestimate: it holds the other runs' ends of round 0)."""
    marks: list[float] = []

    def work(algo):
        algo.round(0)
        sync(device)
        marks.append(time.perf_counter())
        for t in range(1, rounds + 1):
            algo.round(t)

    for out in batcher.run([(f"run {i}", lambda a=algo: work(a)) for i, algo in enumerate(algos)]):
        if isinstance(out, RunDied):
            raise out
    sync(device)
    return (time.perf_counter() - min(marks)) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--sequential-rounds", type=int, default=None, help="default: --rounds")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing blocks (medians)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--full-run", action="store_true")
    parser.add_argument("--cnn-rounds", type=int, default=0, help="also time the CNN workload (0: skip)")
    parser.add_argument("--rows", type=int, default=0, help="also time N runs of W1 as rows (0: skip)")
    args = parser.parse_args()
    device = resolve_device(args.device)
    cfg = ExperimentConfig.from_dict(load_config(CONFIG)).validate()
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__}")

    flops = train_flops_per_round(cfg, build_model(cfg.model.name))
    # batched = the engine's default (client_axis auto: the closed-form MLP step); batched_vmap = the
    # generic vmap(grad) step on the same model, for comparison
    workloads = {
        "batched": Workload(cfg, "batched", device),
        "batched_vmap": Workload(cfg, "batched", device, client_axis="vmap"),
        "sequential": Workload(cfg, "sequential", device),
    }
    block = {name: max(1, args.rounds // args.repeats) for name in workloads}
    block["sequential"] = max(1, (args.sequential_rounds or args.rounds) // args.repeats)
    # interleaved blocks, medians: this machine's speed drifts (other tenants on the host), and every
    # figure of a block (matmul peak, each engine) is taken within the same few seconds
    peaks, times = [], {name: [] for name in workloads}
    for _ in range(args.repeats):
        peaks.append(matmul_flops(device, reps=5))
        for name, workload in workloads.items():
            times[name].append(workload.time(block[name]))
    peak = statistics.median(peaks)
    med = {name: statistics.median(v) for name, v in times.items()}
    batched, sequential = med["batched"], med["sequential"]
    print(
        f"training GFLOP per round={flops / 1e9:.2f} matmul GFLOP/s={peak / 1e9:.1f} "
        f"batched GFLOP/s={flops / batched / 1e9:.1f} (medians of {args.repeats} interleaved blocks)"
    )
    for name, values in times.items():
        print(f"  {name} s/round: median {med[name]:.4f}, blocks " + " ".join(f"{v:.4f}" for v in values))
    if args.cnn_rounds > 0:
        from fairfl_core.papers.fedeba_plus.experiments import cifar10_stand_in

        cnn = ExperimentConfig.from_dict(load_config(CNN_CONFIG, list(cifar10_stand_in()))).validate()
        times = {
            name: Workload(cnn, kind, device, client_axis=axis, warmup=1).time(args.cnn_rounds)
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
    if args.rows > 1:
        s_rows = rows_round(cfg, device, args.rows, max(1, args.rounds // args.repeats))
        print(
            f"W1 rows={args.rows} s_per_round={s_rows:.4f} (all {args.rows} runs) "
            f"s_per_run_round={s_rows / args.rows:.4f} vs alone {batched:.4f} "
            f"efficiency={args.rows * flops / s_rows / peak:.3f}"
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
