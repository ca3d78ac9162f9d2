"""The ``ray`` sweep executor: one Ray task per run, on an existing cluster or a local Ray instance.

``ray.init(address=...)`` reaches the cluster named by ``ray_address`` or ``$RAY_ADDRESS``; with neither, a
local instance with ``workers`` CPUs (default: all cores) starts, or the one already started in this process
is reused. Each task asks for ``num_cpus`` (default: the config's ``engine.threads``, else 1; the run uses
that many torch threads) and ``num_gpus`` (default: 1 for a ``cuda`` device, else 0). Runs write to the same
results directory with the store's atomic writes, so on a cluster ``results_dir`` must be a path every node
sees (a shared filesystem); a sweep interrupted anywhere resumes like the process executor's. A run that
raises, or whose worker dies, comes back as ``failed`` with its config hash and error; the others go on.
Ray is the optional extra ``fairfl[ray]``: only this module imports it, and only when the executor runs.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence

from tqdm.auto import tqdm

from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.outcome import SweepOutcome, run_one

__all__ = ["ray_executor", "task_resources"]

INSTALL = 'Ray is not installed: pip install "fairfl[ray]" (or pip install ray) to use --executor ray'


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError(INSTALL) from exc
    return ray


def task_resources(
    cfg: ExperimentConfig, device: str | None, num_cpus: int | None, num_gpus: float | None
) -> dict[str, float]:
    """The CPUs and GPUs one run's task asks Ray for: the given ones, else ``engine.threads`` (or 1) CPUs and
    one GPU when the run's device is ``cuda``."""
    cpus = num_cpus if num_cpus is not None else (cfg.engine.threads or 1)
    gpus = num_gpus if num_gpus is not None else float((device or cfg.engine.device).startswith("cuda"))
    if cpus < 1 or gpus < 0:
        raise ValueError(f"Ray resources per run: num_cpus={cpus} must be >= 1 and num_gpus={gpus} >= 0")
    return {"num_cpus": cpus, "num_gpus": gpus}


def _connect(ray, address: str | None, workers: int | None) -> None:
    address = address or os.environ.get("RAY_ADDRESS")
    if ray.is_initialized():
        return
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # unreachable address, a cluster of another Ray version, ...
        where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
        raise ConnectionError(
            f"could not start or reach {where} ({type(exc).__name__}: {exc}); check --ray-address / "
            "RAY_ADDRESS, or leave both unset for a local instance. No run was started."
        ) from exc


def _run_task(cfg: ExperimentConfig, results_dir: str, device: str | None, threads: int):
    """One run inside a Ray worker (the sweep's own failure handling: an exception becomes ``failed``)."""
    import torch

    torch.set_num_threads(threads)
    return run_one(cfg, results_dir, False, device)


def ray_executor(
    configs: Sequence[ExperimentConfig],
    results_dir: str,
    progress: bool,
    device: str | None,
    workers: int | None,
    *,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    num_gpus: float | None = None,
):
    """Run ``configs`` as Ray tasks and return their :class:`SweepOutcome` in the order of ``configs``."""
    ray = _ray()
    resources = [task_resources(c, device, num_cpus, num_gpus) for c in configs]  # bad values: before init
    _connect(ray, ray_address, workers)
    remote = ray.remote(_run_task)
    pending = {
        remote.options(**r).remote(c, results_dir, device, int(r["num_cpus"])): i
        for i, (c, r) in enumerate(zip(configs, resources, strict=True))
    }
    outcomes: list = [None] * len(configs)
    bar = tqdm(total=len(configs), desc="ray sweep", unit="run", disable=not progress)
    while pending:
        (ref,), _ = ray.wait(list(pending), num_returns=1)
        i = pending.pop(ref)
        try:
            outcomes[i] = ray.get(ref)
        except Exception as exc:  # the worker died (killed, out of memory) or the task could not run
            cfg = configs[i]
            outcomes[i] = SweepOutcome(
                cfg,
                None,
                f"{type(exc).__name__} on a Ray worker, run {config_hash(cfg)}: {exc}\n"
                f"{traceback.format_exc(limit=3)}",
            )
        bar.update()
        bar.set_postfix_str(f"{configs[i].name or configs[i].algorithm.name} seed {configs[i].seed}")
    bar.close()
    return outcomes
