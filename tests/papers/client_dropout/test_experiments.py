"""The client-dropout experiment: its runs, the fault columns read back from configs, the dropout effects."""

import pandas as pd
import pytest

from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.papers.client_dropout.experiments import dropout_effects, with_fault_columns


def test_runs_without_faults_are_table_1s_runs():
    dropout = experiment_configs("client_dropout", "paper", seeds=[0])
    table1 = {config_hash(c): c.name for c in experiment_configs("fedeba_table1_fmnist", "paper", seeds=[0])}
    settings = [(c.name, c.faults.rate, c.faults.kind) for c in dropout]
    assert len(settings) == 12 and ("FedEBA+, straggler p=0.5", 0.5, "straggler") in settings
    same = {c.name: table1.get(config_hash(c)) for c in dropout if c.faults.rate == 0}
    assert same == {
        "FedAvg, dropout p=0": "FedAvg",
        "q-FFL (q=0.5), dropout p=0": "q-FFL (q=0.5)",
        "FedEBA+, dropout p=0": "FedEBA+",
    }


def _runs() -> pd.DataFrame:
    rows = [
        ("FedAvg, dropout p=0", 0.0, "dropout", 80.0, 100.0),
        ("FedAvg, dropout p=0", 0.0, "dropout", 82.0, 60.0),
        ("FedAvg, dropout p=0.5", 0.5, "dropout", 79.0, 110.0),
        ("FedAvg, dropout p=0.5", 0.5, "dropout", 81.0, 130.0),
        ("FedAvg, straggler p=0.5", 0.5, "straggler", 84.0, 70.0),
    ]
    columns = ["method", "config.faults.rate", "config.faults.kind", "global_acc", "var"]
    runs = pd.DataFrame(rows, columns=columns)
    return runs.assign(worst5=1.0, best5=2.0)


def test_fault_columns_and_the_change_from_no_dropout():
    runs = with_fault_columns(_runs())
    assert runs["compared"].eq("FedAvg").all()
    assert runs["fault_kind"].tolist() == ["dropout"] * 4 + ["straggler"] and runs["p"].tolist()[-1] == 0.5
    effects = dropout_effects(runs).iloc[0]
    assert effects["global_acc p=0"] == 81.0 and effects["global_acc change"] == pytest.approx(-1.0)
    assert effects["var p=0"] == 80.0 and effects["var p=0.5"] == 120.0  # the straggler run is left out
    assert effects["var change"] == pytest.approx(50.0)  # % of the p = 0 variance


def test_runs_cached_before_the_faults_section_count_as_p0():
    old = _runs().iloc[:2].drop(columns=["config.faults.rate", "config.faults.kind"])
    runs = with_fault_columns(old)
    assert runs["p"].tolist() == [0.0, 0.0] and runs["fault_kind"].tolist() == ["dropout", "dropout"]
