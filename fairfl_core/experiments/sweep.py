"""Sweeps: algorithms × seeds × settings, run through an executor, and their summary table.

A sweep config is a run config plus a ``sweep`` section::

    sweep:
      algorithms: [fedavg, {name: fedprox, params: {mu: 0.01}, label: FedProx},
                   {name: fedavg, label: FedAvg lr 0.02, overrides: [train.lr=0.02]}]
      seeds: [0, 1, 2]
      grid: {train.lr: [0.05, 0.1]}        # dotted keys, cartesian product

An algorithm entry's ``overrides`` (``section.field=value``, as ``--set``) apply to its runs only, after the
grid: a control that differs from the base config in one setting.

Executors: ``inline`` (this process), ``process`` (a local process pool), ``ray`` (one Ray task per run on a
cluster or a local Ray instance, :mod:`fairfl_core.experiments.ray_executor`) and ``rows`` (every run in a
thread of this process, their local training stacked as rows of one computation, :mod:`fairfl_core.sim.rows`;
the same numbers as alone; experimental until measured on a GPU). Runs whose results exist are never
scheduled, so a sweep killed at any moment and started again recomputes no finished run and resumes the others
from their checkpoints (:mod:`fairfl_core.experiments.runner`). A pool worker exits when the sweep's process
dies, even by SIGKILL. A run that raises is reported as ``failed`` with its config hash and error, and the
sweep carries on; a run whose pool process dies is ``failed`` naming it, unless it had finished (``rows``: a
run that dies stops the runs still training, naming it). Configs of one run (equal hashes: one setting
reported under two labels) run once. With ``$FAIRFL_FROM_ARCHIVE`` set (``reproduce.sh --from-archive``) a
sweep computes nothing: it raises :class:`RunsMissing`, naming the runs its results directory lacks. Tables of
the results: :mod:`fairfl_core.report`.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import multiprocessing as mp
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash
from fairfl_core.experiments.outcome import SweepOutcome, run_one
from fairfl_core.experiments.ray_executor import ray_executor
from fairfl_core.experiments.runner import cached_run
from fairfl_core.experiments.store import writable_results_dir
from fairfl_core.sim.devices import parse_device, resolve_device
from fairfl_core.sim.rows import RowsBatcher

__all__ = ["EXECUTORS", "FROM_ARCHIVE", "RunsMissing", "expand_sweep", "run_sweep"]

FROM_ARCHIVE = "FAIRFL_FROM_ARCHIVE"  # set: sweeps only reuse finished runs (reproduce.sh --from-archive)


class RunsMissing(RuntimeError):
    """A sweep that may not compute (:data:`FROM_ARCHIVE`) lacks finished runs."""


def expand_sweep(d: dict[str, Any]) -> list[ExperimentConfig]:
    """All run configs of a sweep config (a config without ``sweep`` is one run)."""
    d = json.loads(json.dumps(d))
    sweep = d.pop("sweep", {}) or {}
    if not isinstance(sweep, dict):
        raise ValueError(f"sweep must be a mapping (algorithms, seeds, grid), not a {type(sweep).__name__}")
    unknown = sorted(set(sweep) - {"algorithms", "seeds", "grid"})
    if unknown:
        raise ValueError(f"unknown sweep field(s) {unknown}; valid: ['algorithms', 'grid', 'seeds']")
    named = "algorithms" in sweep  # each algorithm of a sweep names its runs (``label`` or its name)
    algorithms = sweep.get("algorithms") or [d.get("algorithm", {"name": "fedavg"})]
    seeds = sweep.get("seeds") or [d.get("seed", 0)]
    grid = sweep.get("grid") or {}
    _check_sweep(algorithms, seeds, grid, named)
    keys = list(grid)
    configs = []
    for alg, seed, values in itertools.product(algorithms, seeds, itertools.product(*grid.values())):
        alg = {"name": alg} if isinstance(alg, str) else alg
        one = apply_overrides(d, [f"{k}={json.dumps(v)}" for k, v in zip(keys, values, strict=True)])
        one = apply_overrides(one, alg.get("overrides", []))
        one["algorithm"] = {"name": alg["name"], "params": {**alg.get("params", {})}}
        one["seed"] = seed
        if named:
            one["name"] = alg.get("label", alg["name"])
        configs.append(ExperimentConfig.from_dict(one).validate())
    return configs


def _check_sweep(algorithms, seeds, grid, named: bool) -> None:
    """``ValueError`` naming the sweep field whose shape is wrong, with an example of the right one."""
    if not isinstance(algorithms, list):
        raise ValueError(f"sweep.algorithms = {algorithms!r} must be a list, e.g. [fedavg, fedprox]")
    keys = {"name", "params", "label", "overrides"}
    for i, a in enumerate(algorithms):
        if not isinstance(a, str) and not (
            isinstance(a, dict)
            and set(a) <= keys
            and isinstance(a.get("name"), str)
            and isinstance(a.get("params", {}), dict)
            and isinstance(a.get("overrides", []), list)
        ):
            field = f"sweep.algorithms[{i}]" if named else "algorithm"
            raise ValueError(
                f"{field} = {a!r} must be an algorithm name or a "
                f"mapping with keys {sorted(keys)} (name required, params a mapping, overrides a list), e.g. "
                "{name: qffl, params: {q: 1}}"
            )
    if not isinstance(seeds, list):
        raise ValueError(f"sweep.seeds = {seeds!r} must be a list of seeds, e.g. [0, 1, 2]")
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ValueError(
            f"sweep.grid = {grid!r} must map dotted fields to non-empty lists, e.g. {{train.lr: [0.05, 0.1]}}"
        )


def _inline(configs, results_dir, progress, device, workers):
    return [run_one(c, results_dir, progress, device) for c in configs]


def _exit_with_parent() -> None:
    """Wait for the sweep's process to end (its sentinel pipe closes, whatever killed it), then exit: a
    worker never outlives the sweep to finish a run nobody waits for. Its run resumes from its checkpoint."""
    parent = mp.parent_process()
    if parent is not None:
        parent.join()
    os._exit(1)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: ``taskset``, a container's cpuset), not the
    machine's: a pool sized by the machine's count oversubscribes a pinned job."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def worker_init(threads: int) -> None:
    import torch

    threading.Thread(target=_exit_with_parent, name="exit-with-parent", daemon=True).start()
    torch.set_num_threads(threads)


def _process_pool(configs, results_dir, progress, device, workers):
    workers = workers or max(1, usable_cores() // 2)
    return _pooled([[x] for x in enumerate(configs)], False, results_dir, device, workers)


def _pooled(shards, stacked: bool, results_dir, device, workers: int, **rows) -> list[SweepOutcome]:
    """Each shard (``(index, config)`` pairs) a task of a pool of ``workers`` processes with cores/``workers``
    torch threads (:func:`_rows_here`); the outcomes in index order. The runs of a shard whose worker process
    died are :func:`_lost`."""
    threads = max(1, usable_cores() // workers)
    with cf.ProcessPoolExecutor(
        workers, mp_context=mp.get_context("spawn"), initializer=worker_init, initargs=(threads,)
    ) as pool:
        futures = [
            pool.submit(_rows_here, shard, stacked, results_dir, False, device, **rows) for shard in shards
        ]
        done = []
        for future, shard in zip(futures, shards, strict=True):
            try:
                done += future.result()
            except Exception as exc:  # the worker process died (BrokenProcessPool)
                why = f"its worker process died ({type(exc).__name__}: {exc}); rerun the sweep to resume it"
                done += [(i, _lost(cfg, results_dir, f"run {_name(cfg)}: {why}")) for i, cfg in shard]
    return [outcome for _, outcome in sorted(done, key=lambda pair: pair[0])]


def _name(cfg: ExperimentConfig) -> str:
    """How errors name a run: its config name and hash."""
    return f"{cfg.name} ({config_hash(cfg)})"


def _lost(cfg: ExperimentConfig, results_dir, why: str) -> SweepOutcome:
    """The outcome of a run whose thread or worker process died: its result if it had finished, else
    ``failed`` with ``why``."""
    done = cached_run(cfg, results_dir)
    return SweepOutcome(cfg, done, None if done else why)


def _rows_here(
    items, stacked: bool, results_dir, progress, device, memory_gb=None, stack=None, share: int = 1
):
    """Train ``items`` (``(index, config)`` pairs) in this process, their local training stacked as rows
    (``sim/rows/``; ``share``: the processes sharing the device's memory), or one after the other as alone
    when not ``stacked``; ``[(index, outcome)]``. A run that dies stops the others (``RowsBatcher``): they
    are reported ``failed`` naming it, the finished ones done."""
    if not stacked:
        return [(i, run_one(cfg, results_dir, progress, device)) for i, cfg in items]
    batcher = RowsBatcher(memory_gb, stack, share=share)
    bar = tqdm(total=len(items), disable=not progress, desc="runs as rows", unit="run")
    torch_threads = torch.get_num_threads()  # a new thread's intra-op pool starts at the machine's default

    def job(cfg: ExperimentConfig) -> Callable[[], SweepOutcome]:
        def one() -> SweepOutcome:
            torch.set_num_threads(torch_threads)
            outcome = run_one(cfg, results_dir, False, device, rows=batcher)
            bar.update()
            return outcome

        return one

    got = batcher.run([(_name(cfg), job(cfg)) for _, cfg in items])
    bar.close()
    return [
        (i, o if isinstance(o, SweepOutcome) else _lost(cfg, results_dir, str(o)))
        for (i, cfg), o in zip(items, got, strict=True)
    ]


def _rows(configs, results_dir, progress, device, workers, memory_gb: float | None = None, stack=None):
    """The runs as rows. On a GPU (``workers`` None or 1) every run in this process, stacked. On CPUs
    ``stack`` (default: off) decides: unstacked, each run is a task of a pool of ``workers`` processes, as
    with the process pool (a run's own stacked GEMMs already run near the CPU's peak, ``sim/rows/``);
    stacked, each process trains a contiguous share of the runs (a method's seeds together) as rows. Pool
    processes get cores/``workers`` torch threads. ``memory_gb`` bounds one stacked computation of one
    process (default: its 1/``workers`` share of the device's, ``rows.memory_budget``)."""
    gpu = resolve_device(device or "auto").type == "cuda"
    stacked = gpu or bool(stack)
    if workers is None:
        workers = 1 if gpu else max(1, usable_cores() // 2)
    workers = min(workers, len(configs))
    items = list(enumerate(configs))
    if workers == 1:
        done = _rows_here(items, stacked, results_dir, progress, device, memory_gb, stack)
        return [outcome for _, outcome in sorted(done, key=lambda pair: pair[0])]
    bounds = [round(i * len(items) / workers) for i in range(workers + 1)]
    shards = [items[bounds[i] : bounds[i + 1]] for i in range(workers)] if stacked else [[x] for x in items]
    return _pooled(
        shards, stacked, results_dir, device, workers, memory_gb=memory_gb, stack=stack, share=workers
    )


EXECUTORS: dict[str, Callable[..., list[SweepOutcome]]] = {
    "inline": _inline,
    "process": _process_pool,
    "ray": ray_executor,
    "rows": _rows,
}
EXECUTOR_OPTIONS = {"ray": {"ray_address", "num_cpus", "num_gpus"}, "rows": {"memory_gb", "stack"}}


def run_sweep(
    configs: Iterable[ExperimentConfig],
    results_dir: str | Path = "results",
    *,
    executor: str = "inline",
    workers: int | None = None,
    progress: bool = True,
    device: str | None = None,
    **options,
) -> list[SweepOutcome]:
    """Run every config not already finished under ``results_dir`` through ``executor`` and return one
    outcome per config, in order. ``workers``: the pool's processes (also the ``rows`` executor's: on CPUs,
    each trains its share of the runs as rows), or a local Ray instance's CPUs. ``options``: the ``ray``
    executor's ``ray_address``, ``num_cpus`` and ``num_gpus`` per run
    (:mod:`fairfl_core.experiments.ray_executor`), the ``rows`` executor's ``memory_gb`` (one stacked
    computation's bound per process; default: half a GPU's free memory or a quarter of RAM, over ``workers``)
    and ``stack`` (stack calls on a CPU too; default: on GPUs only)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {sorted(EXECUTORS)}, got {executor!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers={workers!r} must be a positive number of processes (None: half the cores)")
    allowed = EXECUTOR_OPTIONS.get(executor, set())
    if set(options) - allowed:
        raise ValueError(
            f"executor options {sorted(set(options) - allowed)} do not apply to executor={executor!r}; "
            + "; ".join(f"{name} takes {sorted(opts)}" for name, opts in EXECUTOR_OPTIONS.items())
        )
    if device is not None:
        parse_device(device)
    writable_results_dir(results_dir)  # checked once, before any run starts
    configs = list(configs)
    distinct: dict[
        str, ExperimentConfig
    ] = {}  # configs of one run (same hash: e.g. one run reported as two rows) run once
    for c in configs:
        distinct.setdefault(config_hash(c), c)
    done = {h: cached_run(c, results_dir) for h, c in distinct.items()}  # finished runs are never scheduled
    todo = [c for h, c in distinct.items() if done[h] is None]
    if todo and os.environ.get(FROM_ARCHIVE):
        missing = [f"{c.name} seed {c.seed} ({config_hash(c)})" for c in todo]
        raise RunsMissing(
            f"{len(todo)} of {len(distinct)} runs are not in {results_dir} (from the archive): "
            f"{', '.join(missing)}; run without --from-archive to compute them"
        )
    outcomes = (
        EXECUTORS[executor](todo, str(results_dir), progress, device, workers, **options) if todo else []
    )
    by_hash = {h: SweepOutcome(distinct[h], r) for h, r in done.items() if r is not None}
    by_hash |= {o.hash: o for o in outcomes}
    return [replace(by_hash[config_hash(c)], config=c) for c in configs]
