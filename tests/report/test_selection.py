"""Rule A9 (GIFAIR-FL spec §2.6) on hand-made validation results."""

from __future__ import annotations

import pandas as pd
import pytest

from fairfl_core.report.selection import select_a9

Q = "config.algorithm.params.q"
T = "config.algorithm.params.t"


def runs(rows: list[tuple]) -> pd.DataFrame:
    """Rows (algorithm, value, seed, val_mean, val_var[, status]) in the layout of ``load_runs``."""
    out = []
    for algorithm, value, seed, acc, var, *status in rows:
        param = {"qffl": Q, "term": T}[algorithm]
        out.append(
            {
                "method": f"{algorithm} ({value:g})",
                "algorithm": algorithm,
                "seed": seed,
                "status": status[0] if status else "complete",
                "val_mean": acc,
                "val_var": var,
                "val_group_gap": var / 10,
                param: value,
            }
        )
    return pd.DataFrame(out)


FEDAVG = pd.DataFrame({"seed": [0, 1], "val_mean": [79.0, 81.0]})  # 80 over seeds: the bar is 79
COLUMNS = {"qffl": Q, "term": T}


def test_the_fairest_value_that_keeps_fedavgs_accuracy_wins():
    table = runs(
        [
            ("qffl", 0.0, 0, 80.0, 60.0),
            ("qffl", 0.0, 1, 80.0, 60.0),
            ("qffl", 1.0, 0, 79.5, 30.0),  # mean 79.25 >= 79, var 25: chosen
            ("qffl", 1.0, 1, 79.0, 20.0),
            ("qffl", 5.0, 0, 78.0, 5.0),  # the lowest variance, but 78.5 < 79: not allowed
            ("qffl", 5.0, 1, 79.0, 5.0),
        ]
    )
    (row,) = select_a9(table, FEDAVG, COLUMNS).to_dict("records")
    assert row["method"] == "qffl (1)" and row["value"] == 1.0 and row["seeds"] == 2
    assert row["val_mean"] == pytest.approx(79.25) and row["val_var"] == pytest.approx(25.0)
    assert row["fedavg_val_mean"] == 80.0 and row["threshold"] == 79.0
    assert (row["candidates"], row["qualifying"]) == (3, 2) and row["rule"].startswith("A9")
    loose = select_a9(table, FEDAVG, COLUMNS, tolerance=2.0)  # 78.5 >= 78: now q=5 qualifies
    assert loose["value"].tolist() == [5.0]


def test_no_value_within_a_point_falls_back_to_the_most_accurate():
    table = runs([("term", 1.0, 0, 70.0, 10.0), ("term", 2.0, 0, 75.0, 50.0), ("term", 5.0, 0, 60.0, 1.0)])
    (row,) = select_a9(table, FEDAVG, COLUMNS).to_dict("records")
    assert row["value"] == 2.0 and row["qualifying"] == 0 and row["rule"].startswith("fallback")


def test_ties_go_to_the_smaller_value_and_methods_are_chosen_separately():
    table = runs(
        [
            ("qffl", 2.0, 0, 85.0, 10.0),
            ("qffl", 0.1, 0, 81.0, 10.0),  # same variance as q=2: the smaller q wins
            ("term", 5.0, 0, 70.0, 1.0),
            ("term", 1.0, 0, 70.0, 9.0),  # fallback tie on accuracy: the smaller t wins
        ]
    )
    chosen = select_a9(table, FEDAVG, COLUMNS).set_index("algorithm")
    assert chosen.loc["qffl", "value"] == 0.1 and chosen.loc["term", "value"] == 1.0
    assert list(chosen.index) == ["qffl", "term"]  # in order of first appearance


def test_group_fairness_minimises_the_validation_discrepancy():
    table = runs([("qffl", 0.0, 0, 80.0, 40.0), ("qffl", 1.0, 0, 80.0, 20.0)])
    table.loc[0, "val_group_gap"] = 1.0  # q=0 has the larger variance but the smaller discrepancy
    chosen = select_a9(table, FEDAVG, COLUMNS, fairness="val_group_gap")
    assert chosen["value"].tolist() == [0.0] and chosen["val_group_gap"].tolist() == [1.0]


def test_values_with_a_diverged_seed_are_not_candidates():
    table = runs(
        [
            ("qffl", 10.0, 0, 80.0, 1.0),
            ("qffl", 10.0, 1, 80.0, 1.0, "diverged"),
            ("qffl", 1.0, 0, 80.0, 30.0),
        ]
    )
    (row,) = select_a9(table, FEDAVG, COLUMNS).to_dict("records")
    assert row["value"] == 1.0 and row["candidates"] == 1
    with pytest.raises(ValueError, match="qffl: no value of config.algorithm.params.q has complete runs"):
        select_a9(table[table[Q] == 10.0], FEDAVG, COLUMNS)


def test_missing_validation_metrics_or_hyperparameter_columns_are_named():
    table = runs([("qffl", 1.0, 0, 80.0, 30.0)])
    with pytest.raises(KeyError, match=r"runs lack column\(s\) \['val_var'\].*data.val_frac > 0"):
        select_a9(table.drop(columns="val_var"), FEDAVG, COLUMNS)
    with pytest.raises(KeyError, match=r"no hyperparameter column for algorithm \['qffl'\]"):
        select_a9(table, FEDAVG, {"term": T})
    with pytest.raises(ValueError, match="the FedAvg rows have no finite val_mean"):
        select_a9(table, FEDAVG.assign(val_mean=float("nan")), COLUMNS)
