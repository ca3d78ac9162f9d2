"""Read finished runs from a results directory (the layout of :mod:`fairfl_core.experiments.store`) into
tidy DataFrames: one row per run, per evaluation (learning curves) or per client (final accuracies)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.outcome import SweepOutcome
from fairfl_core.experiments.store import RunStore, client_accuracy_key

__all__ = [
    "CURVE_METRICS",
    "load_client_accuracies",
    "load_diagnostics",
    "load_curves",
    "load_runs",
    "model_spec",
    "outcome_table",
    "with_extra_cost",
]

CURVE_METRICS = ("global_acc", "mean", "var", "std", "worst5", "best5")


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flatten(v, f"{key}.") if isinstance(v, dict) and v else {key: v})
    return out


def _setting(config: dict[str, Any]) -> str:
    """Hash of a run's config with the seed left out: the runs of one setting share it across seeds."""
    return config_hash(dataclasses.replace(ExperimentConfig.from_dict(config), seed=0))


INPUT_OPTIONS = (
    "in_channels",
    "in_features",
    "input_size",
    "num_classes",
)  # the data's shape, not the model's


def model_spec(model: dict[str, Any] | None) -> str:
    """A model as a claim's scale names it: its name and the options that size it (width, depth, ...), not
    those the data fixes (:data:`INPUT_OPTIONS`), e.g. ``convmixer(depth=2, dim=32, patch_size=4)``."""
    model = model or {}
    options = {k: v for k, v in (model.get("options") or {}).items() if k not in INPUT_OPTIONS}
    sized = ", ".join(f"{k}={options[k]}" for k in sorted(options))
    return f"{model.get('name')}({sized})" if sized else str(model.get("name"))


def _pairing(config: dict[str, Any]) -> str:
    """What a run draws from its seed and shares with every other method's run of that seed: the partition
    (its data section, the partition seed resolved), the initial model (its model section) and the client
    sampling and minibatch streams (counter-based on the seed, ``sim/context.py``). Runs of one seed with
    equal keys are paired in the claims' tests."""
    data = dict(config["data"])
    seed = config.get("seed", 0)
    data["partition_seed"] = seed if data.get("partition_seed") is None else data["partition_seed"]
    blob = json.dumps({"seed": seed, "data": data, "model": config.get("model")}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _judged(summary: dict[str, Any], models: str, path: Path) -> dict[str, Any]:
    """The summary metrics of the models the run's row reports (``eval.models``): a personalised method's
    own models by default, its global model with ``global``."""
    global_model = summary.pop("global_model", None)
    if models != "global" or summary.get("evaluated") != "personal":
        return summary
    if global_model is None:
        raise ValueError(
            f"run {path} ({summary.get('name')}) is asked for its global model's metrics (eval.models: "
            "global) but finished before fairfl stored them in summary.json; delete that run directory to "
            "rerun it"
        )
    return {**summary, **global_model}


def _run_row(path: Path, label: str | None, models: str = "own") -> dict[str, Any]:
    store = RunStore(path)
    summary, config = store.summary(), store.config()
    if summary is None:
        raise FileNotFoundError(f"run {path} has no readable summary.json; run its experiment to finish it")
    config.setdefault("eval", {})["models"] = models
    summary = _judged(summary, models, path)
    data = config["data"]
    row = {
        "method": label or summary.get("name") or summary["algorithm"],
        "algorithm": summary["algorithm"],
        "data": data["name"],
        "stand_in": data.get("stand_in"),
        "dataset": summary["dataset"],
        "seed": summary["seed"],
        "status": summary["status"],
        "rounds": summary["rounds"],
        "hash": path.name,
        "setting": _setting(config),
        "pairing": _pairing(config),
        "model": model_spec(config.get("model")),
        "path": str(path),
    }
    row.update({k: v for k, v in summary.items() if k not in row and k != "name"})
    row.update({f"config.{k}": v for k, v in _flatten(config).items()})
    return row


def load_runs(results_dir: str | Path, configs: Iterable[ExperimentConfig] | None = None) -> pd.DataFrame:
    """One row per finished run: ``method`` (the config's name, i.e. the method label), ``dataset`` (its
    display label, carrying the stand-in), ``data`` / ``stand_in``, ``seed``, ``status``, ``setting`` (the
    config hash without the seed: equal for the seeds of one setting, see
    :func:`fairfl_core.report.tables.distinct_methods`), every summary
    metric (keys of :func:`fairfl_core.metrics.fairness_summary`) and the flattened config as
    ``config.<section>.<field>`` columns.

    With ``configs``: exactly those runs (by config hash), in that order, so a results directory shared
    by several experiments is read one experiment at a time. Without: every finished run in the directory.
    """
    results_dir = Path(results_dir)
    if configs is None:
        # a corrupt summary.json is left out with a warning naming it (running the experiment recomputes it)
        found = sorted(results_dir.glob("*/summary.json"))
        paths: list[tuple[Path, str | None, str]] = [
            (f.parent, None, "own") for f in found if RunStore(f.parent).summary() is not None
        ]
        if not paths:
            raise FileNotFoundError(
                f"no finished runs under {results_dir} (each run writes <hash>/summary.json)"
            )
    else:
        paths = [(results_dir / config_hash(c), c.name or None, c.eval.models) for c in configs]
        missing = [f"{label} ({p.name})" for p, label, _ in paths if not RunStore(p).is_done()]
        if missing:
            raise FileNotFoundError(
                f"{len(missing)} run(s) not finished under {results_dir}: {missing}; "
                "run them first (run_sweep(configs, results_dir) or `fairfl sweep`)"
            )
    rows = pd.DataFrame([_run_row(*p) for p in paths])
    _record_in_ledger(rows)
    return rows


LEDGER = "FAIRFL_RUN_LEDGER"


def _plain(value: Any) -> Any:
    """A pandas cell as JSON writes it (numpy scalars as numbers, NaN as None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _record_in_ledger(rows: pd.DataFrame) -> None:
    """Append each run's hash, algorithm, model, numbers version, commit and what ran (rounds, seed, dataset
    with its stand-in label, partition, clients) to the file named by
    ``$FAIRFL_RUN_LEDGER``, if set: ``reproduce.sh`` sets it per notebook, so that a published page can say
    which code computed its runs (``report/publish.py``)."""
    ledger = os.environ.get(LEDGER)
    if not ledger:
        return
    with open(ledger, "a") as f:
        for _, row in rows.iterrows():
            provenance, version = row.get("provenance"), row.get("numbers_version")
            record = {
                "hash": row["hash"],
                "algorithm": row["algorithm"],
                "model": row.get("config.model.name"),
                "numbers_version": version if isinstance(version, str) else None,
                "commit": provenance.get("git_commit") if isinstance(provenance, dict) else None,
                # what ran, for the page's header
                "rounds": _plain(row.get("config.train.rounds")),
                "seed": _plain(row.get("seed")),
                "dataset": row.get("dataset"),
                "partition": row.get("config.data.partition"),
                "clients": _plain(row.get("config.data.num_clients")),
            }
            f.write(json.dumps(record) + "\n")


def _accuracy_key(run, rec: dict[str, Any]) -> str:
    """The per-client accuracies of evaluation ``rec`` that ``run``'s row reports (see :func:`_judged`)."""
    return "client_acc" if getattr(run, "evaluated", None) == "global" else client_accuracy_key(rec)


def load_curves(runs: pd.DataFrame, metrics_: Iterable[str] = CURVE_METRICS) -> pd.DataFrame:
    """Learning curves: one row per (run, evaluation) with ``round``, ``wall_time`` and each metric of
    ``metrics_`` computed from that evaluation's per-client accuracies (``global_acc`` is the pooled test
    accuracy) or, for a metric the evaluation records itself (``spd``, ``eod`` on data with a sensitive
    attribute), read from it, plus the run's method, dataset, seed and status (the figures leave diverged
    runs out)."""
    metrics_ = list(metrics_)
    rows = []
    for run in runs.itertuples(index=False):
        for rec in RunStore(run.path).records("evals"):
            summary = metrics.fairness_summary(
                np.asarray(rec[_accuracy_key(run, rec)]), global_acc=rec["global_acc"]
            )
            rows.append(
                {
                    "method": run.method,
                    "dataset": run.dataset,
                    "seed": run.seed,
                    "status": run.status,
                    "hash": run.hash,
                    "round": rec["round"],
                    "wall_time": rec.get("wall_time"),
                    **{m: summary[m] if m in summary else rec[m] for m in metrics_},
                }
            )
    return pd.DataFrame(rows)


def load_client_accuracies(runs: pd.DataFrame, round_: int | None = None) -> pd.DataFrame:
    """Per-client test accuracy (%), one row per (run, client), at evaluation ``round_`` (default: last),
    with the run's method, dataset, seed and status."""
    rows = []
    for run in runs.itertuples(index=False):
        evals = RunStore(run.path).records("evals")
        at = [r for r in evals if round_ is None or r["round"] == round_]
        if not at:
            raise ValueError(
                f"run {run.hash} ({run.method}, seed {run.seed}) has no evaluation at round "
                f"{round_}; evaluated rounds: {[r['round'] for r in evals]}"
            )
        rec = at[-1]
        acc = rec[_accuracy_key(run, rec)]
        rows += [
            {
                "method": run.method,
                "dataset": run.dataset,
                "seed": run.seed,
                "status": run.status,
                "round": int(rec["round"]),
                "client": k,
                "acc": float(a),
            }
            for k, a in enumerate(acc)
        ]
    return pd.DataFrame(rows)


def outcome_table(outcomes: Iterable[SweepOutcome]) -> pd.DataFrame:
    """Status of each run of a sweep: method, seed, status (complete | diverged | failed), run directory
    hash and, for a failed run, the first line of its error."""
    return pd.DataFrame(
        [
            {
                "method": o.config.name or o.config.algorithm.name,
                "seed": o.config.seed,
                "status": o.status,
                "hash": config_hash(o.config),
                "error": o.error.splitlines()[0] if o.error else "",
            }
            for o in outcomes
        ]
    )


def load_diagnostics(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-round diagnostics of ``runs`` (e.g. FedEBA+'s ``fair_angle``, ``branch``, ``weights_entropy``,
    ``extra_comms``): one row per (run, round) with the run's method, dataset and seed."""
    rows = [
        {
            "method": run.method,
            "dataset": run.dataset,
            "seed": run.seed,
            "hash": run.hash,
            "round": rec["round"],
        }
        | rec["diagnostics"]
        for run in runs.itertuples(index=False)
        for rec in RunStore(run.path).records("rounds")
    ]
    return pd.DataFrame(rows)


def with_extra_cost(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` plus Table 3's columns from the per-round diagnostics: ``extra_cost`` (%, extra exchanges /
    all exchanges after the last round) and ``gradient_rounds`` (% of rounds that aligned gradients); NaN
    for methods that log no fair-angle branch."""
    diags = load_diagnostics(runs)
    if "branch" not in diags:
        return runs.assign(extra_cost=math.nan, gradient_rounds=math.nan)
    diags = diags[diags["branch"].notna()]
    last = diags.sort_values("round").groupby("hash")["extra_cost"].last()
    share = diags.groupby("hash")["branch"].apply(lambda b: (b == "gradient").mean())
    return runs.assign(extra_cost=100 * runs["hash"].map(last), gradient_rounds=100 * runs["hash"].map(share))
