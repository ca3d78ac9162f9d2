"""The FedEBA+ appendix's tables that are metrics of runs (Tables 17–19) and its claims (App. M), on the
experiments of ``fairfl_core.experiments.papers.fedeba_plus_appendix``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.papers.fedeba_plus import TABLE1
from fairfl_core.experiments.papers.fedeba_plus_appendix import (
    OURS,
    TABLE9,
    TABLE10,
    TABLE11,
    TABLE13,
    client_optimum_losses,
)
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.report.claims import Claim

__all__ = ["appendix_claims", "with_cv_improvement", "with_faa"]


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
    the run's data, model and seed (computed once per such triple), or 0 with ``local_steps = 0``."""
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
            optimum[key] = client_optimum_losses(ExperimentConfig.from_dict(config), local_steps)
        values.append(metrics.faa(loss, optimum[key]))
    return runs.assign(faa=values)


def appendix_claims() -> dict[str, list]:
    """The appendix's claims per table as ``report.Claim`` lists, on the method labels of the appendix's
    experiments (Tables 17–19: on Table 1's labels, against the baselines those tables print)."""

    def beats(metric, what, methods, source, op="<", rows=None):
        return [
            Claim(f"FedEBA+ has a {what} than {m.label}", metric, OURS, op, m.label, source=source)
            for m in methods
            if m.label != OURS and (rows is None or m.paper_row in rows)
        ]

    in_17, in_18_19 = ("FedAvg", "q-FFL"), ("FedAvg", "q-FFL", "FedMGDA+", "PropFair", "TERM")
    return {
        "Table 9": [
            *beats("std", "lower client-accuracy std", TABLE9, "Table 9 and App. M text (8.10 lowest)"),
            Claim(
                "FedEBA+ raises the worst-5% accuracy over FedAvg",
                "worst5",
                OURS,
                ">",
                "FedAvg",
                source="Table 9 (19.84 → 40.07)",
            ),
            Claim(
                "FedEBA+ has no lower global accuracy than FedAvg",
                "global_acc",
                OURS,
                ">=",
                "FedAvg",
                source="Table 9 (46.85 → 54.43)",
            ),
        ],
        "Table 10": [
            *beats("var", "lower variance with momentum", TABLE10, "Table 10, C12"),
            *beats("global_acc", "higher global accuracy with momentum", TABLE10, "Table 10, C12", ">"),
        ],
        "Table 11": [
            *beats("var", "lower variance with FedVARP", TABLE11, "Table 11, C12"),
            *beats("global_acc", "higher global accuracy with FedVARP", TABLE11, "Table 11, C12", ">"),
        ],
        "Table 13": [
            *beats("var", "lower variance under label noise", TABLE13, "Table 13, C14"),
            *beats("global_acc", "higher global accuracy under label noise", TABLE13, "Table 13, C14", ">"),
        ],
        "Table 17": beats("faa", "lower FAA", TABLE1, "Table 17, C15", rows=in_17),
        "Table 18": beats("cv", "lower C_v", TABLE1, "Table 18, C15", rows=in_18_19),
        "Table 19": [
            *beats("angle", "smaller angle to the all-ones vector", TABLE1, "Table 19, C15", rows=in_18_19),
            *beats("kl", "smaller KL(a‖u)", TABLE1, "Table 19, C15", rows=in_18_19),
        ],
    }
