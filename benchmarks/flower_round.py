"""W1 as a Flower simulation: seconds per FedAvg round through fairfl's Flower apps vs fairfl's own engine.

W1 is ``round_speed.py``'s workload (FedEBA+ Table 1, Fashion-MNIST MLP 784-200-200-10, 100 clients, 10 per
round, 10 local steps of batch 50), FedAvg. The Flower run is ``fairfl_core.flower.simulation.simulate``:
Flower's Simulation Runtime with 100 SuperNodes on Ray (``--cpus`` CPUs, one per ClientApp); a round is the
ServerApp's ``algorithm.round(t)`` (train messages out, each client's local training alone on its node, the
replies back, aggregation), evaluation excluded, the first ``--warmup`` rounds (Ray actors starting, each
building the dataset) dropped. The fairfl figure is ``round_speed.Workload``'s batched engine in this process
on the same config. The last line is::

    flower_w1 flower_s_per_round=<x> fairfl_s_per_round=<y> ratio=<x/y>

Usage: ``python benchmarks/flower_round.py [--rounds 5] [--warmup 1] [--cpus 2]`` from the repository root.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from round_speed import CONFIG, Workload

from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.flower.simulation import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each")
    parser.add_argument("--warmup", type=int, default=1, help="untimed first rounds of each")
    parser.add_argument("--cpus", type=int, default=2, help="Ray CPUs of the Flower simulation")
    args = parser.parse_args()
    total = args.warmup + args.rounds
    overrides = [f"train.rounds={total}", f"eval.every={total}", "engine.device=cpu"]
    cfg = ExperimentConfig.from_dict(load_config(CONFIG, overrides)).validate()
    print(f"threads={torch.get_num_threads()} torch={torch.__version__} ray_cpus={args.cpus}")

    (run,) = simulate([cfg], num_cpus=args.cpus, report=print)
    flower = statistics.mean(r["seconds"] for r in run.rounds[args.warmup :])
    fairfl = Workload(cfg, "batched", torch.device("cpu"), warmup=args.warmup).time(args.rounds)
    ratio = flower / fairfl
    print(f"flower_w1 flower_s_per_round={flower:.4f} fairfl_s_per_round={fairfl:.4f} ratio={ratio:.1f}")


if __name__ == "__main__":
    main()
