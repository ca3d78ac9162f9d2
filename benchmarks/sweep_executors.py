"""Sweep executors: the FedEBA+ Table 1 Fashion-MNIST quick sweep with the process executor and with Ray.

Both executors run the same configs (``experiment_configs("fedeba_table1_fmnist", "quick")``: every method of
Table 1 and its controls × the quick seeds) into fresh results directories with ``--workers`` processes /
Ray CPUs and one torch thread per run. ``--rounds`` below the profile's 400 shortens every run alike (the
overhead per run does not depend on its length). Prints the wall times and the last line

``sweep_executors runs=… rounds=… process_s=… ray_s=… ray_start_s=… overhead_per_run_s=…``

where ``ray_s`` is the sweep's time on a running local Ray instance, ``ray_start_s`` the time to start that
instance (paid once per sweep, not per run) and ``overhead_per_run_s`` = (ray_s − process_s) / runs.

Usage: ``python benchmarks/sweep_executors.py [--rounds 400] [--workers 2] [--methods 4]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import ray

import fairfl_core.experiments.papers  # noqa: F401  (registers the experiments)
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.sweep import run_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400, help="rounds per run (quick profile: 400)")
    parser.add_argument("--workers", type=int, default=2, help="processes / Ray CPUs")
    parser.add_argument("--methods", type=int, default=None, help="only the first M methods (default: all)")
    args = parser.parse_args()
    configs = experiment_configs("fedeba_table1_fmnist", "quick", overrides=[f"train.rounds={args.rounds}"])
    if args.methods:
        names = list(dict.fromkeys(c.name for c in configs))[: args.methods]
        configs = [c for c in configs if c.name in names]
    for c in configs:
        c.engine.threads = 1
    print(f"{len(configs)} configs of {args.rounds} rounds, {args.workers} workers")
    with tempfile.TemporaryDirectory() as tmp:
        tick = time.perf_counter()
        out = run_sweep(
            configs, Path(tmp) / "process", executor="process", workers=args.workers, progress=False
        )
        process_s = time.perf_counter() - tick
        assert all(o.status != "failed" for o in out), [o.error for o in out if o.error]
        tick = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        start_s = time.perf_counter() - tick
        tick = time.perf_counter()
        out = run_sweep(configs, Path(tmp) / "ray", executor="ray", progress=False)
        ray_s = time.perf_counter() - tick
        ray.shutdown()
        assert all(o.status != "failed" for o in out), [o.error for o in out if o.error]
    n = len({config_hash(c) for c in configs})  # one run per distinct config (two labels may share one)
    print(
        f"sweep_executors runs={n} rounds={args.rounds} process_s={process_s:.1f} ray_s={ray_s:.1f} "
        f"ray_start_s={start_s:.1f} overhead_per_run_s={(ray_s - process_s) / n:.2f}"
    )


if __name__ == "__main__":
    main()
