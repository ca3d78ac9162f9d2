"""Run one experiment: config → data, model, engine, algorithm → rounds with evaluation, checkpoints, summary.

A complete run is never recomputed while it stands for its config under this code: its directory is keyed
by the config hash, and its summary records the numbers version of the code that computed it
(``fairfl_core/numbers_version.py``; a run of another version is recomputed, with one line saying why). An
interrupted one resumes from its last checkpoint of this numbers version and ends with exactly the numbers of
an uninterrupted run (all randomness is counter-based, see :class:`fairfl_core.sim.context.Simulation`). A
non-finite loss or parameter stops the run and marks it ``diverged`` with the round.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from fairfl_core import metrics
from fairfl_core.algorithms.base import algorithm_class
from fairfl_core.data.build import DataSpec, make_federated
from fairfl_core.data.federated import FederatedDataset
from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.store import RecoveryWarning, RunStore, client_accuracy_key, writable_results_dir
from fairfl_core.models import build_model
from fairfl_core.numbers_version import numbers_version
from fairfl_core.provenance import provenance
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import parse_device, resolve_device
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.protocol import ClientEngine
from fairfl_core.sim.rows import PoolRegistry, RowsBatcher

__all__ = [
    "RunResult",
    "build_engine",
    "cached_run",
    "eval_summary",
    "evaluate",
    "federated_data",
    "run_data",
    "run_experiment",
    "run_numbers_version",
    "stale",
]


@dataclass
class RunResult:
    path: Path
    summary: dict[str, Any]

    @property
    def status(self) -> str:
        return self.summary["status"]


@lru_cache(maxsize=4)
def _federated_cached(spec_json: str, seed: int) -> FederatedDataset:
    return make_federated(DataSpec.from_dict(json.loads(spec_json)), seed=seed)


def federated_data(spec: DataSpec, seed: int, device: torch.device) -> FederatedDataset:
    """The partitioned dataset (built once per process and reused across a sweep), on ``device``."""
    from dataclasses import asdict

    return _federated_cached(json.dumps(asdict(spec), sort_keys=True, default=str), seed).to(device)


def run_data(cfg: ExperimentConfig, device: str | torch.device = "cpu") -> FederatedDataset:
    """The federated dataset a run of ``cfg`` trains on (partition seed: ``data.partition_seed`` if set,
    else the run seed)."""
    seed = cfg.seed if cfg.data.partition_seed is None else cfg.data.partition_seed
    return federated_data(cfg.data, seed, torch.device(device))


def evaluate(algo, sim: Simulation, t: int) -> dict[str, Any]:
    """Evaluate the global model on every client's local test split and on the pooled test set
    (and, for personalised methods, each client's own model on its own test split). Accuracies in %.

    When the dataset holds validation data the same per-client numbers on it are added as ``val_client_*``
    (and ``val_personal_*``), ``None`` for a client without validation samples. When its samples carry a
    sensitive attribute, ``group_counts`` holds the ``[A, y, ŷ]`` counts (``metrics/parity.py``) of the
    global model on the pooled test set (``pooled``) and on each client's test split (``client``), of the
    personalised models on them (``personal``) and the groups' names, and ``spd`` / ``eod`` the global model's
    statistical parity and equal opportunity differences on the pooled test set (points)."""
    engine = sim.engine
    w = algo.eval_params()
    loss, acc = engine.losses(w, split="test")
    g_acc, g_loss = engine.pooled(w)
    rec = {
        "round": t,
        "global_acc": 100 * g_acc,
        "global_loss": g_loss,
        "client_acc": (100 * acc).tolist(),
        "client_loss": loss.tolist(),
    }
    personal = algo.personal_params()
    if personal is not None:
        p_loss, p_acc = engine.losses(personal, split="test")
        rec.update(personal_acc=(100 * p_acc).tolist(), personal_loss=p_loss.tolist())
    if engine.data.has_validation:
        rec.update(_validation(engine, w, "client"))
        if personal is not None:
            rec.update(_validation(engine, personal, "personal"))
    if engine.data.sensitive is not None:
        rec.update(_group_counts(engine, w, personal))
    return rec


def _group_counts(engine: ClientEngine, w: torch.Tensor, personal: torch.Tensor | None) -> dict[str, Any]:
    """The evaluation's group counts and the global model's SPD and EOD on the pooled test set."""
    names = engine.data.sensitive_names
    counts: dict[str, Any] = {
        "groups": names,
        "pooled": engine.pooled_group_counts(w).tolist(),
        "client": engine.group_counts(w, split="test").tolist(),
    }
    if personal is not None:
        counts["personal"] = engine.group_counts(personal, split="test").tolist()
    where = "the pooled test set"
    return {
        "group_counts": counts,
        "spd": metrics.statistical_parity_difference(counts["pooled"], names, where),
        "eod": metrics.equal_opportunity_difference(counts["pooled"], names, where),
    }


def _validation(engine: ClientEngine, w: torch.Tensor, models: str) -> dict[str, list[float | None]]:
    """``val_<models>_acc`` (%) and ``val_<models>_loss`` per client; None where a client has no validation
    samples (its numbers would be 0 / 0)."""
    loss, acc = engine.losses(w, split="val")
    held = engine.counts("val") > 0
    return {
        f"val_{models}_acc": [a if h else None for a, h in zip((100 * acc).tolist(), held, strict=True)],
        f"val_{models}_loss": [x if h else None for x, h in zip(loss.tolist(), held, strict=True)],
    }


def _fairness(
    acc: list[float | None], loss: list[float | None], groups: np.ndarray, global_acc: float | None = None
) -> dict[str, Any]:
    """`metrics.fairness_summary` over the clients with a value (groups only when at least two remain),
    NaN as None."""
    held = np.array([a is not None for a in acc])
    kept = groups[held]
    has_groups = (kept >= 0).all() and len(np.unique(kept)) > 1
    out = metrics.fairness_summary(
        np.asarray(acc, dtype=float)[held],
        loss=np.asarray(loss, dtype=float)[held],
        global_acc=global_acc,
        groups=kept if has_groups else None,
    )
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def eval_summary(rec: dict[str, Any], groups: np.ndarray, acc_key: str | None = None) -> dict[str, Any]:
    """The fairness metrics of an evaluation (the personalised models' where there are some; on data with a
    sensitive attribute also :func:`~fairfl_core.metrics.parity.parity_summary`'s) and, with validation
    data, the same on it as ``val_<key>`` (``val_mean``, ``val_var``, ``val_group_gap``, ...; none of the
    pooled-test ones). A personalised method's summary also holds its global model's metrics as
    ``global_model`` (the rows of ``eval.models: global``)."""
    acc_key = acc_key or client_accuracy_key(rec)
    loss_key = acc_key.replace("_acc", "_loss")
    out = _fairness(rec[acc_key], rec[loss_key], groups, rec["global_acc"])
    out["evaluated"] = "personal" if acc_key == "personal_acc" else "global"
    if "group_counts" in rec:  # data with a sensitive attribute (metrics/parity.py)
        counts = rec["group_counts"]
        models = "personal" if acc_key == "personal_acc" else "client"
        out.update(metrics.parity_summary(counts["pooled"], counts[models], names=counts["groups"]))
    if f"val_{acc_key}" in rec:
        val = _fairness(rec[f"val_{acc_key}"], rec[f"val_{loss_key}"], groups)
        out.update({f"val_{k}": v for k, v in val.items() if k not in ("global_acc", "cv", "sigma_acc")})
    if acc_key == "personal_acc":
        out["global_model"] = eval_summary(rec, groups, "client_acc")
    return out


class PendingRounds:
    """Round records not yet written: their tensors (the training loss, whether the global model is finite)
    stay on the engine's device until the next evaluation or checkpoint reads them all at once, so a round
    makes the host wait for the device only where the run evaluates, and the round a run diverged is still
    known exactly (the first one whose model is not finite)."""

    def __init__(self):
        self.records: list[dict[str, Any]] = []
        self.finite: list[torch.Tensor] = []

    def add(self, record: dict[str, Any], finite: torch.Tensor, seconds: float) -> None:
        """One round's ``record``, its model's finiteness (a bool tensor) and its host time."""
        self.records.append({**record, "seconds": seconds})
        self.finite.append(finite)

    def flush(self, store: RunStore) -> int | None:
        """Write the records up to the first round whose model is not finite and return that round (None:
        every pending round is finite). The wait for the device counts in the last written round's
        seconds."""
        if not self.records:
            return None
        tick = time.perf_counter()
        finite = torch.stack(self.finite).tolist()
        upto = finite.index(False) + 1 if False in finite else len(finite)
        records = self.records[:upto]
        records[-1]["seconds"] += time.perf_counter() - tick
        store.extend("rounds", records)
        self.records, self.finite = [], []
        return None if all(finite) else records[-1]["round"]


def _resumable(store: RunStore, algo, start: int, cfg: ExperimentConfig) -> bool:
    """Whether a run continues from the checkpoint of round ``start``: its records hold every round and
    evaluation up to ``start``, and the run had not diverged there (finite parameters and losses)."""
    rounds = [r["round"] for r in store.records("rounds") if r["round"] <= start]
    evals = [r for r in store.records("evals") if r["round"] <= start]
    every = cfg.eval.every
    due = {0, *range(every, start + 1, every)} | ({start} if start == cfg.train.rounds else set())
    return (
        rounds == list(range(1, start + 1))
        and due <= {r["round"] for r in evals}
        and np.isfinite(evals[-1]["client_loss"]).all()
        and bool(torch.isfinite(algo.eval_params()).all())
    )


def resolved_hyper(hyper: Any) -> dict[str, Any]:
    """A built ``Hyper`` with every default filled in, as JSON stores it. The config hash covers only the
    fields a config sets, so a cached run is checked against these (:func:`stale`)."""
    return json.loads(json.dumps(dataclasses.asdict(hyper), default=str))


# Hyperparameters added after runs were cached, with the value that gives those runs' numbers: a cached run
# that does not record one ran at that value (as ``config._ADDED_WITH_DEFAULT`` for the config's fields).
HYPER_ADDED_WITH_DEFAULT: dict[str, Any] = {"server_momentum_lr": 1.0}


def changed_hyper(stored: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """Hyperparameters whose resolved value differs from the cached run's (none for a run older than the
    record; a field the record predates counts at its ``HYPER_ADDED_WITH_DEFAULT`` value)."""
    if stored is None:
        return []
    stored = {**{k: v for k, v in HYPER_ADDED_WITH_DEFAULT.items() if k in current}, **stored}
    return sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))


def run_numbers_version(cfg: ExperimentConfig) -> str:
    """The numbers version of ``cfg``'s run under this code (``fairfl_core/numbers_version.py``)."""
    return numbers_version(cfg.algorithm.name, cfg.model.name)


def stale(summary: dict[str, Any], cfg: ExperimentConfig, hyper: Any = None) -> str | None:
    """Why a finished run's ``summary`` does not stand for ``cfg`` under this code, or None when it does:
    another numbers version (or none recorded), or other resolved hyperparameters (``hyper``: ``cfg``'s
    built ``Hyper``, built here when not given)."""
    recorded, current = summary.get("numbers_version"), run_numbers_version(cfg)
    if recorded != current:
        was = recorded or "not recorded (a run older than numbers versions)"
        return f"computed by numbers version {was}, this code computes {current}"
    changed = changed_hyper(summary.get("algorithm_hyper"), resolved_hyper(hyper or cfg.checked_hyper()))
    if changed:
        return f"the cached run used other values of {changed} (an algorithm default changed since)"
    return None


def build_engine(
    cfg: ExperimentConfig, device: str | None = None, pools: PoolRegistry | None = None
) -> Engine:
    """The engine that trains ``cfg`` on this machine: its data on ``device`` (default: the config's), its
    model, trainer and dtype; sets the torch threads of ``engine.threads``. ``pools``: share the sample pool
    and labels with the other runs of this process that hold equal ones (the rows executor)."""
    if cfg.engine.threads:
        torch.set_num_threads(cfg.engine.threads)
    data = run_data(cfg, resolve_device(device or cfg.engine.device))
    if pools is not None:
        data = pools.share(data)
    if cfg.train.clients_per_round > data.num_clients:
        raise ValueError(
            f"config field train.clients_per_round = {cfg.train.clients_per_round} exceeds the "
            f"{data.num_clients} clients of {data.label()}; lower it or raise data.num_clients"
        )
    return Engine(
        build_model(cfg.model.name, seed=cfg.seed, **cfg.model.options),
        data,
        kind=cfg.engine.kind,
        chunk_size=cfg.engine.chunk_size,
        eval_batch=cfg.eval.batch,
        dtype=getattr(torch, cfg.engine.dtype),
        client_axis=cfg.engine.client_axis,
        precision=cfg.engine.precision,
        model_key=(cfg.model.name, json.dumps(cfg.model.options, sort_keys=True)),
    )


def cached_run(cfg: ExperimentConfig, results_dir: str | Path) -> RunResult | None:
    """The finished run of ``cfg`` under ``results_dir``, or None: not run, unfinished, or :func:`stale`
    (another numbers version, other resolved hyperparameters; ``run_experiment`` recomputes it)."""
    store = RunStore(Path(results_dir) / config_hash(cfg))
    if not store.is_done():
        return None
    cached = store.summary()
    if cached is None or stale(cached, cfg):
        return None
    return RunResult(store.path, cached)


def run_experiment(
    cfg: ExperimentConfig,
    results_dir: str | Path = "results",
    *,
    resume: bool = True,
    progress: bool = True,
    device: str | None = None,
    rows: RowsBatcher | None = None,
) -> RunResult:
    """Run ``cfg`` to the end (or resume it) under ``results_dir`` and return its result. ``rows``: train
    together with the other runs of this batcher (``sim/rows/``), with the same numbers as alone."""
    hyper = cfg.checked_hyper()
    parse_device(device or cfg.engine.device)
    if cfg.engine.precision != "exact":
        warnings.warn(
            f"{cfg.name or cfg.algorithm.name}: engine.precision={cfg.engine.precision!r} computes other "
            "numbers than 'exact'; read its fidelity check (benchmarks/README.md) before reporting a table "
            "from it",
            stacklevel=2,
        )
    store = RunStore(writable_results_dir(results_dir) / config_hash(cfg))
    # a rows thread must not wait: it holds the meeting's baton, which the other process's runs may need
    with store.computing(wait=rows is None):
        return _compute(cfg, store, hyper, resume=resume, progress=progress, device=device, rows=rows)


def _compute(
    cfg: ExperimentConfig,
    store: RunStore,
    hyper: Any,
    *,
    resume: bool,
    progress: bool,
    device: str | None,
    rows: RowsBatcher | None,
) -> RunResult:
    """:func:`run_experiment` in ``store``, whose lock this process holds."""
    store.open(cfg.to_dict())
    if resume and store.is_done():
        cached = store.summary()  # None (with a warning) when corrupt: recomputed
        why = None if cached is None else stale(cached, cfg, hyper)
        if cached is not None and why is None:
            return RunResult(store.path, cached)
        if why is not None:
            store.retire_summary(f"{store.path}: {why}")
        resume = False
    engine = build_engine(cfg, device, pools=None if rows is None else rows.pools)
    if rows is not None:
        rows.attach(engine)
    sim = Simulation(engine, cfg.train, cfg.seed, cfg.faults)
    version = run_numbers_version(cfg)
    algo, start = _start(store, cfg, sim, hyper, version, resume)
    status, diverged_at = _train(algo, sim, store, cfg, start, version, progress)
    summary = _summary(store, cfg, sim, hyper, version, status, diverged_at)
    store.save_checkpoint(summary["rounds"], algo.state_dict(), version)
    store.finish(summary)
    return RunResult(store.path, summary)


def _start(
    store: RunStore, cfg: ExperimentConfig, sim: Simulation, hyper: Any, version: str, resume: bool
) -> tuple[Any, int]:
    """The algorithm and the round it starts from: the last checkpoint that can be continued
    (:func:`_resumable`), or round 0 with its first evaluation recorded."""
    cls = algorithm_class(cfg.algorithm.name)
    algo = cls(sim, hyper)
    refused = []

    def continues(round_: int, state: dict[str, Any]) -> bool:
        algo.load_state_dict(state)
        if _resumable(store, algo, round_, cfg):
            return True
        refused.append(round_)
        warnings.warn(
            f"{store.path}: the checkpoint of round {round_} cannot be continued (records before it are "
            "missing, or the run had diverged there)",
            RecoveryWarning,
            stacklevel=4,
        )
        return False

    ck = store.load_checkpoint(sim.engine.device, version, continues) if resume else None
    if ck is not None:
        store.truncate(ck[0])  # ``continues`` loaded its state
        return algo, ck[0]
    if refused:  # a refused state was loaded into algo: start from a fresh one
        warnings.warn(f"{store.path}: recomputing the run from round 0", RecoveryWarning, stacklevel=3)
        algo = cls(sim, hyper)
    store.truncate(-1)
    store.append("evals", {**evaluate(algo, sim, 0), "wall_time": 0.0})
    return algo, 0


def _train(
    algo, sim: Simulation, store: RunStore, cfg: ExperimentConfig, start: int, version: str, progress: bool
) -> tuple[str, int | None]:
    """Rounds ``start`` … ``train.rounds``: records, evaluations and checkpoints as the config says;
    ``(status, diverged round)``: ``"complete"``, or ``"diverged"`` at the first non-finite parameter or
    loss."""
    rounds, every = cfg.train.rounds, cfg.eval.every
    t0 = time.perf_counter()
    bar = tqdm(
        range(start, rounds),
        initial=start,
        total=rounds,
        disable=not progress,
        desc=f"{cfg.algorithm.name} seed {cfg.seed}",
        unit="round",
        leave=False,
    )
    pending = PendingRounds()
    status, diverged_at = "complete", None
    for t in bar:
        tick = time.perf_counter()
        try:
            out = algo.round(t)
        except Exception:  # a round after an unread divergence may fail on its non-finite numbers
            diverged_at = pending.flush(store)
            if diverged_at is None:
                raise
            status = "diverged"
            break
        record = {"round": t + 1, "selected": out.selected, "diagnostics": out.diagnostics}
        pending.add(record, torch.isfinite(algo.eval_params()).all(), time.perf_counter() - tick)
        evaluates = (t + 1) % every == 0 or t + 1 == rounds
        checkpoints = (t + 1) % cfg.checkpoint_every == 0 and t + 1 < rounds
        if evaluates or checkpoints:
            diverged_at = pending.flush(store)
            if diverged_at is not None:
                status = "diverged"
                break
        if evaluates:
            last = {**evaluate(algo, sim, t + 1), "wall_time": time.perf_counter() - t0}
            if not np.isfinite(last["client_loss"]).all():
                status, diverged_at = "diverged", t + 1
            store.append("evals", last)
            acc = np.asarray(last.get("personal_acc", last["client_acc"]))
            bar.set_postfix(acc=f"{acc.mean():.2f}", std=f"{acc.std():.2f}", glob=f"{last['global_acc']:.2f}")
            if status == "diverged":
                break
        if checkpoints:
            store.save_checkpoint(t + 1, algo.state_dict(), version)
    bar.close()
    return status, diverged_at


def _summary(
    store: RunStore,
    cfg: ExperimentConfig,
    sim: Simulation,
    hyper: Any,
    version: str,
    status: str,
    diverged_at: int | None,
) -> dict[str, Any]:
    """The run's ``summary.json``: its last finite evaluation (a run that diverged at an evaluation, with
    finite parameters and non-finite losses, is summarised by the one before, as one whose parameters went
    non-finite is), its identity and provenance."""
    evals = store.records("evals")
    final = next(e for e in reversed(evals) if np.isfinite(e["client_loss"]).all() or e is evals[0])
    data = sim.data
    return {
        "status": status,
        "diverged_round": diverged_at,
        "name": cfg.name,
        "algorithm": cfg.algorithm.name,
        "algorithm_hyper": resolved_hyper(hyper),
        "dataset": data.label(),
        "seed": cfg.seed,
        "rounds": final["round"],
        "hash": store.path.name,
        "numbers_version": version,
        "seconds_per_round": float(np.mean([r["seconds"] for r in store.records("rounds")] or [0.0])),
        "device": str(sim.engine.device),
        "provenance": provenance(),
        "data_files": data.meta["dataset_meta"].get("data_files", []),
        **eval_summary(final, sim.groups),
    }
