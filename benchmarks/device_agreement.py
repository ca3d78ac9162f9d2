"""One set of numbers per config and seed on every device: W1 in float64 on two devices, compared.

W1 (FedEBA+ Table 1 Fashion-MNIST: 100 clients × 2 shards, MLP 784-200-200-10, 10 clients a round, 10 local
steps of batch 50) runs FedAvg for ``--rounds`` rounds in float64 on each of ``--devices`` (default: cpu and
cuda), from the same config and seed. Every random draw is made on the CPU (``sim/batches.py``,
``models/dropout.py``), so the runs must select the same clients and end with the same parameters up to
float64 rounding: the check passes when every round's selection agrees, the final client test accuracies are
identical and the parameters differ by at most ``--tol`` (default 1e-9). Prints those figures and exits 1
when the check fails.

Usage: ``python benchmarks/device_agreement.py [--rounds 30] [--devices cpu cuda] [--tol 1e-9]``
(``benchmarks/gpu_check.py`` also compares float32 with ``engine.precision=exact``).
"""

from __future__ import annotations

import argparse
import sys

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, load_config
from fairfl_core.experiments.runner import build_engine
from fairfl_core.sim.context import Simulation

CONFIG = "fairfl_core/experiments/configs/fmnist_fedavg.yaml"


def w1_config(*overrides: str, path: str = CONFIG) -> ExperimentConfig:
    """W1's config (or ``path``'s) with ``KEY=VALUE`` overrides (``fairfl run --set``)."""
    return ExperimentConfig.from_dict(apply_overrides(load_config(path), list(overrides))).validate()


def run(cfg: ExperimentConfig, device: str, rounds: int):
    """``(selections, final parameters, client test accuracies in %)`` of ``rounds`` FedAvg rounds."""
    engine = build_engine(cfg, device)
    algo = build_algorithm(cfg.algorithm.name, Simulation(engine, cfg.train, cfg.seed), cfg.algorithm.params)
    selected = [algo.round(t).selected.tolist() for t in range(rounds)]
    w = algo.eval_params()
    _, acc = engine.losses(w, split="test")
    return selected, w.cpu(), (acc * 100).cpu()


def compare(a, b) -> dict:
    """How two :func:`run` results differ: same selections, largest parameter and client accuracy gaps."""
    (sel_a, w_a, acc_a), (sel_b, w_b, acc_b) = a, b
    return {
        "same_selection": sel_a == sel_b,
        "max_param_diff": float((w_a.double() - w_b.double()).abs().max()),
        "max_client_acc_diff": float((acc_a - acc_b).abs().max()),
        "mean_acc": float(acc_a.mean()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--devices", nargs=2, default=["cpu", "cuda"])
    parser.add_argument("--tol", type=float, default=1e-9)
    parser.add_argument("--config", default=CONFIG)
    args = parser.parse_args()
    cfg = w1_config("engine.dtype=float64", path=args.config)
    a, b = args.devices
    d = compare(run(cfg, a, args.rounds), run(cfg, b, args.rounds))
    ok = d["same_selection"] and d["max_client_acc_diff"] == 0.0 and d["max_param_diff"] <= args.tol
    print(
        f"agreement {a} vs {b} float64 rounds={args.rounds} same_selection={d['same_selection']} "
        f"max_param_diff={d['max_param_diff']:.3e} max_client_acc_diff={d['max_client_acc_diff']:.4f} "
        f"mean_acc={d['mean_acc']:.2f} {'OK' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
