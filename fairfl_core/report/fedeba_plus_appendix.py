"""FedEBA+'s appendix (App. M) as its own bundle: the claims of Tables 9, 10, 11 and 13 on their experiments,
and of Tables 17–19 on the Table 1 runs, whose metrics (FAA, C_v's improvement) are computed here. Its
printed numbers are FedEBA+'s (``paper_results/fedeba_plus.csv``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.papers.fedeba_plus_appendix import OURS, client_optimum_losses
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.report.bundle import ClaimBuilder, Paper, paper_rows, register_paper
from fairfl_core.report.claims import Claim

__all__ = [
    "BUNDLE",
    "table9_claims",
    "tables17_19_claims",
    "with_cv_improvement",
    "with_faa",
]


def with_cv_improvement(runs: pd.DataFrame, reference: str = "FedAvg") -> pd.DataFrame:
    """``runs`` plus ``cv_improvement`` (Table 18, in %): 100 (C_v^ref − C_v) / C_v^ref of each run against
    the mean C_v of the ``reference`` method's runs on the same dataset (NaN where it has none)."""
    ref = runs[runs["method"] == reference].groupby("dataset")["cv"].mean()
    improvement = [
        100 * metrics.cv_improvement(cv, ref[d]) if d in ref and pd.notna(cv) else np.nan
        for d, cv in zip(runs["dataset"], pd.to_numeric(runs["cv"]), strict=True)
    ]
    return runs.assign(cv_improvement=improvement)


def with_faa(runs: pd.DataFrame, local_steps: int) -> pd.DataFrame:
    """``runs`` plus ``faa`` (Table 17): ``metrics.faa`` of the clients' test losses at the last evaluation
    (the personalised models' for personalised methods) against F_i(x_i*) = ``client_optimum_losses`` of
    the run's data, model and seed (a cached ``local`` run beside it), or 0 with ``local_steps = 0``."""
    optimum: dict[str, np.ndarray] = {}
    values = []
    for path in runs["path"]:
        store = RunStore(path)
        last = store.records("evals")[-1]
        loss = np.asarray(last[client_accuracy_key(last).replace("_acc", "_loss")], dtype=float)
        if not local_steps:
            values.append(metrics.faa(loss, np.zeros_like(loss)))
            continue
        config = store.config()
        key = json.dumps([config[k] for k in ("data", "model", "seed")] + [config["train"]], sort_keys=True)
        if key not in optimum:
            optimum[key] = client_optimum_losses(
                ExperimentConfig.from_dict(config), local_steps, Path(path).parent
            )
        values.append(metrics.faa(loss, optimum[key]))
    return runs.assign(faa=values)


def _beats(
    experiment: Experiment, table: str, metric: str, what: str, source: str, op: str = "<"
) -> list[Claim]:
    """The claims "FedEBA+ has a ``what`` than <baseline>", one per baseline of ``experiment`` whose row
    ``table`` prints in the experiment's column (none: the table does not print that column)."""
    printed = BUNDLE.values().query("table == @table")
    printed = set(printed.loc[printed["dataset"].isin(_columns(experiment)), "method"])
    return [
        Claim(f"FedEBA+ has a {what} than {m.label}", metric, OURS, op, m.label, source=source)
        for m in experiment.method_list()
        if m.label != OURS and m.paper_row in printed
    ]


def _columns(experiment: Experiment) -> set[str]:
    return set(experiment.paper.datasets.values()) if experiment.paper else set()


def table9_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Table 9 and App. M's text: FedEBA+ has the lowest client-accuracy std and raises the worst 5% over
    FedAvg at no cost in global accuracy."""
    ours_row = next(row for row, label in paper_rows(experiment).items() if label == OURS)

    def printed(method: str, metric: str) -> str:
        return f"{BUNDLE.value('Table 9', 'CIFAR-10', method, metric):.2f}"

    def change(metric: str) -> str:
        return f"Table 9 ({printed('FedAvg', metric)} → {printed(ours_row, metric)})"

    return [
        *_beats(
            experiment,
            "Table 9",
            "std",
            "lower client-accuracy std",
            f"Table 9 and App. M text ({printed(ours_row, 'std')} lowest)",
        ),
        Claim(
            "FedEBA+ raises the worst-5% accuracy over FedAvg",
            "worst5",
            OURS,
            ">",
            "FedAvg",
            source=change("worst5"),
        ),
        Claim(
            "FedEBA+ has no lower global accuracy than FedAvg",
            "global_acc",
            OURS,
            ">=",
            "FedAvg",
            source=change("global_acc"),
        ),
    ]


def _fairer_and_more_accurate(setting: str, claim: str) -> ClaimBuilder:
    """Tables 10, 11 and 13 (§8 ``claim``): FedEBA+ has a lower variance and a higher global accuracy than
    every baseline, each ``setting``."""

    def claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
        table = experiment.paper.table if experiment.paper else ""
        source = f"{table}, {claim}"
        return [
            *_beats(experiment, table, "var", f"lower variance {setting}", source),
            *_beats(experiment, table, "global_acc", f"higher global accuracy {setting}", source, ">"),
        ]

    return claims


def tables17_19_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Tables 17–19 (§8 C15) on a Table 1 column's runs: FedEBA+ has a lower FAA, C_v, angle to the all-ones
    vector and KL(a‖u) than each baseline these tables print (Table 19 prints Fashion-MNIST only)."""
    return [
        *_beats(experiment, "Table 17", "faa", "lower FAA", "Table 17, C15"),
        *_beats(experiment, "Table 18", "cv", "lower C_v", "Table 18, C15"),
        *_beats(experiment, "Table 19", "angle", "smaller angle to the all-ones vector", "Table 19, C15"),
        *_beats(experiment, "Table 19", "kl", "smaller KL(a‖u)", "Table 19, C15"),
    ]


BUNDLE = register_paper(
    Paper(
        "fedeba_plus_appendix",
        (
            "fedeba_table9_mlp",
            "fedeba_table10_momentum",
            "fedeba_table11_fedvarp",
            "fedeba_table13_noise_fmnist",
            "fedeba_table13_noise_cifar10",
            "fedeba_table1_fmnist",
            "fedeba_table1_cifar10",
        ),
        claim_builders={
            "fedeba_table9_mlp": table9_claims,
            "fedeba_table10_momentum": _fairer_and_more_accurate("with momentum", "C12"),
            "fedeba_table11_fedvarp": _fairer_and_more_accurate("with FedVARP", "C12"),
            "fedeba_table13_noise_": _fairer_and_more_accurate("under label noise", "C14"),
            "fedeba_table1_": tables17_19_claims,
        },
        printed_in="fedeba_plus",
        readings_heading="FedEBA+",
    )
)
