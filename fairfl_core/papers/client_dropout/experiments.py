"""Client dropout and fairness: FedAvg, q-FFL (q = 0.5) and FedEBA+ on the FedEBA+ Table 1 Fashion-MNIST
workload (W1: 100 clients × 2 label shards, MLP, 10 clients per round, K = 10 steps of batch 50, lr 0.1
decayed 0.999) when a fraction p ∈ {0, 0.2, 0.5} of each round's selected clients drops out before
uploading (``faults.kind = dropout``, ``sim/faults.py``), plus one straggler row per method (p = 0.5, half
of the local steps). No paper implemented here measures this, so the experiment has no paper table.

The methods are Table 1's (``papers/fedeba_plus/experiments.py``: q-FFL q = 0.5 with its reference
sampling, FedEBA+ with g̃ in one-step-update units); how each aggregates the survivors is stated in its module
docstring. At p = 0 the runs are exactly Table 1's runs (same config hash).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import pandas as pd

from fairfl_core.experiments.profiles import Experiment, Method, Profile, register_experiment
from fairfl_core.papers.fedeba_plus.experiments import FEDAVG, FEDEBA_PLUS, SMOKE_SHARDS, TABLE1

__all__ = ["COMPARED", "RATES", "STRAGGLER", "dropout_effects", "dropout_methods", "with_fault_columns"]

RATES = (0.0, 0.2, 0.5)
STRAGGLER = (0.5, 0.5)  # (p, straggler_work) of the straggler rows
COMPARED = (FEDAVG, next(m for m in TABLE1 if m.algorithm == "qffl"), FEDEBA_PLUS)


def _variants() -> Iterator[tuple[Method, float, str]]:
    """(compared method, p, kind) of every run: each method at each dropout rate, then as stragglers."""
    for kind, rates in (("dropout", RATES), ("straggler", STRAGGLER[:1])):
        for method in COMPARED:
            for rate in rates:
                yield method, rate, kind


def _method(method: Method, rate: float, kind: str) -> Method:
    """``method`` under faults (no ``faults`` setting at p = 0, so those runs are Table 1's)."""
    faults: tuple[str, ...] = (f"faults.rate={rate}", f"faults.kind={kind}") if rate else ()
    if kind == "straggler":
        faults += (f"faults.straggler_work={STRAGGLER[1]}",)
    return replace(method, label=f"{method.label}, {kind} p={rate:g}", paper_row=None, overrides=faults)


def dropout_methods() -> tuple[Method, ...]:
    """The experiment's runs: each compared method at every rate of ``RATES``, then with stragglers."""
    return tuple(_method(*v) for v in _variants())


def with_fault_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (from ``report.load_runs``) plus ``compared`` (the method's label without faults),
    ``fault_kind`` and ``p`` from each run's config (p = 0, kind "dropout" for runs cached before the
    ``faults`` section existed, whose config has none)."""
    compared = {_method(*v).label: v[0].label for v in _variants()}
    none = pd.Series(index=runs.index, dtype=object)
    rate = pd.to_numeric(runs.get("config.faults.rate", none), errors="coerce").fillna(0.0)
    kind = runs.get("config.faults.kind", none).where(rate > 0, "dropout")
    return runs.assign(compared=runs["method"].map(compared), fault_kind=kind, p=rate)


def dropout_effects(
    runs: pd.DataFrame, metrics: Sequence[str] = ("global_acc", "var", "worst5", "best5")
) -> pd.DataFrame:
    """Per compared method, the mean over seeds of each metric at every dropout rate (columns
    ``<metric> p=<p>``) and its change from p = 0 to the largest rate (``<metric> change``; for ``var`` in
    % of its p = 0 value)."""
    dropout = with_fault_columns(runs).query("fault_kind == 'dropout'")
    means = dropout.groupby(["compared", "p"], sort=False)[list(metrics)].mean()
    top = max(dropout["p"])
    rows = []
    for method in dict.fromkeys(dropout["compared"]):
        row = {"method": method}
        for metric in metrics:
            for p in sorted(set(dropout["p"])):
                row[f"{metric} p={p:g}"] = means.loc[(method, p), metric]
            base, last = means.loc[(method, 0.0), metric], means.loc[(method, top), metric]
            row[f"{metric} change"] = 100 * (last - base) / base if metric == "var" else last - base
        rows.append(row)
    return pd.DataFrame(rows)


register_experiment(
    Experiment(
        name="client_dropout",
        description="FedAvg, q-FFL (q=0.5) and FedEBA+ on FedEBA+ Table 1's Fashion-MNIST workload when a "
        f"fraction p ∈ {{{', '.join(f'{r:g}' for r in RATES)}}} of each round's selected clients drops out "
        "before uploading, plus stragglers at p=0.5 completing half their local steps (no paper measures "
        "this)",
        config="fmnist_fedavg.yaml",
        methods=dropout_methods(),
        profiles={
            "smoke": Profile(
                "CI check: 10% of the data (each client gets 2 label shards of 30 images; pooled test = the "
                "union of the client test splits), 2 local steps, 4 rounds, 1 seed; numbers far from "
                "converged",
                4,
                (0,),
                2,
                (*SMOKE_SHARDS, "train.local_steps=2"),
            ),
            "quick": Profile(
                "real Fashion-MNIST, all 100 clients, Table 1's protocol: 300 of the 2000 rounds, 1 seed (12 "
                "runs on 2 CPU cores; no seed-to-seed spread)",
                300,
                (0,),
                20,
            ),
            "paper": Profile(
                "paper scale: 2000 rounds, 5 seeds, evaluation every 20 rounds", 2000, (0, 1, 2, 3, 4), 20
            ),
        },
    )
)
