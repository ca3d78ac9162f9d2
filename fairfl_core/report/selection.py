"""Hyperparameter selection on validation data: GIFAIR-FL's rule (named "A9" in the tables; §5, the q-FFL rule
"the best q is the q value where the variance decreases the most while the averaged testing accuracy is
superior or similar to FedAvg"), applied to the clients' validation splits, never to their test splits.

Per method, each hyperparameter value's validation metrics are averaged over its seeds. Among the values whose
mean validation accuracy is at least FedAvg's − ``tolerance`` points, the one with the lowest validation
fairness metric wins (``val_var`` = Var(a) for individual fairness, ``val_group_gap`` = the discrepancy for
group fairness); when none qualifies, the most accurate one. Ties go to the smaller value.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["select_a9"]


def _check_columns(table: pd.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in table]
    if missing:
        raise KeyError(
            f"{what} lack column(s) {missing}: validation metrics come from runs whose data holds a "
            "validation split (set data.val_frac > 0, GIFAIR-FL: 0.1, and rerun)"
        )


def _finite_runs(runs: pd.DataFrame, metrics: list[str]) -> pd.Series:
    """Per run: complete (when a ``status`` column says so) with finite values of ``metrics``."""
    ok = np.isfinite(runs[metrics].apply(pd.to_numeric, errors="coerce").to_numpy(float)).all(axis=1)
    if "status" in runs:
        ok &= (runs["status"] == "complete").to_numpy()
    return pd.Series(ok, index=runs.index)


def select_a9(
    runs: pd.DataFrame,
    fedavg: pd.DataFrame,
    hyperparameter: Mapping[str, str],
    *,
    fairness: str = "val_var",
    accuracy: str = "val_mean",
    tolerance: float = 1.0,
    by: str = "algorithm",
) -> pd.DataFrame:
    """The selection rule on ``runs`` (rows of :func:`fairfl_core.report.results.load_runs`: one per method ×
    value × seed) against the ``fedavg`` rows (one per seed).

    ``by`` names the column that tells the methods apart; ``hyperparameter`` maps each method to the
    column holding its value (e.g. ``{"qffl": "config.algorithm.params.q"}``). A value is a candidate when
    every one of its runs completed with finite ``accuracy`` and ``fairness``. Returns one row per method
    (in order of first appearance): ``by``, ``method`` (the chosen runs' label), ``hyperparameter``,
    ``value``, ``seeds``, the chosen value's means of ``accuracy`` and ``fairness`` over seeds,
    ``fedavg_<accuracy>`` (FedAvg's mean over seeds), ``threshold`` (= that − ``tolerance``), the number of
    ``candidates`` and of ``qualifying`` values, and ``rule`` (why this value).
    """
    _check_columns(runs, [by, "method", "seed", accuracy, fairness], "runs")
    _check_columns(fedavg, [accuracy], "the FedAvg rows")
    unknown = sorted(set(runs[by]) - set(hyperparameter))
    if unknown:
        raise KeyError(
            f"no hyperparameter column for {by} {unknown}; pass hyperparameter={{name: column}} for each"
        )
    reference = pd.to_numeric(fedavg[accuracy], errors="coerce")
    if not np.isfinite(reference).any():
        raise ValueError(f"the FedAvg rows have no finite {accuracy}: run FedAvg with a validation split")
    fedavg_accuracy = float(reference[np.isfinite(reference)].mean())
    threshold = fedavg_accuracy - tolerance
    rows = []
    for name, part in runs.groupby(by, sort=False):
        column = hyperparameter[name]
        _check_columns(part, [column], f"the runs of {name}")
        part = part.assign(
            value=pd.to_numeric(part[column]),
            _ok=_finite_runs(part, [accuracy, fairness]),
            **{m: pd.to_numeric(part[m], errors="coerce") for m in (accuracy, fairness)},
        )
        values = part.groupby("value", sort=True).agg(
            method=("method", "first"),
            seeds=("seed", "nunique"),
            ok=("_ok", "all"),
            **{m: (m, "mean") for m in (accuracy, fairness)},
        )
        candidates = values[values["ok"]].reset_index()
        if candidates.empty:
            raise ValueError(
                f"{by}={name}: no value of {column} has complete runs with finite {accuracy} and "
                f"{fairness}; rerun the diverged or failed runs"
            )
        qualifying = candidates[candidates[accuracy] >= threshold]
        if len(qualifying):
            best = qualifying.sort_values([fairness, "value"], kind="stable").iloc[0]
            rule = f"A9: lowest {fairness} among values with {accuracy} >= FedAvg's - {tolerance:g}"
        else:
            best = candidates.sort_values([accuracy, "value"], ascending=[False, True], kind="stable").iloc[0]
            rule = f"fallback: no value has {accuracy} >= FedAvg's - {tolerance:g}; the most accurate"
        rows.append(
            {
                by: name,
                "method": best["method"],
                "hyperparameter": column,
                "value": best["value"],
                "seeds": int(best["seeds"]),
                accuracy: best[accuracy],
                fairness: best[fairness],
                f"fedavg_{accuracy}": fedavg_accuracy,
                "threshold": threshold,
                "candidates": len(candidates),
                "qualifying": len(qualifying),
                "rule": rule,
            }
        )
    return pd.DataFrame(rows)
