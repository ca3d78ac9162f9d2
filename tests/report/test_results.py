import json

import pytest

from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.outcome import SweepOutcome
from fairfl_core.experiments.runner import RunResult
from fairfl_core.experiments.store import RunStore
from fairfl_core.report.results import (
    load_client_accuracies,
    load_curves,
    load_diagnostics,
    load_runs,
    outcome_table,
)
from tests.report.conftest import make_config, two_method_results, write_run


def test_load_runs_reads_the_given_configs_in_order(tmp_path):
    configs = two_method_results(tmp_path)
    runs = load_runs(tmp_path, configs[::-1])
    assert list(zip(runs["method"], runs["seed"], strict=True)) == [
        ("FedAvg", 1),
        ("FedAvg", 0),
        ("FedProx", 1),
        ("FedProx", 0),
    ]
    first = runs.iloc[0]
    assert first["hash"] == config_hash(configs[-1]) and first["var"] == pytest.approx(200.0)
    assert first["data"] == "fashion_mnist" and first["dataset"] == "fashion_mnist"
    assert runs.set_index("method").loc["FedProx", "config.algorithm.params.mu"].tolist() == [0.01, 0.01]


def test_load_runs_setting_is_shared_by_the_seeds_of_one_setting_only(tmp_path):
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    settings = runs.groupby("method")["setting"].unique()
    assert [len(s) for s in settings] == [1, 1] and settings["FedAvg"][0] != settings["FedProx"][0]
    fedavg = runs[runs["method"] == "FedAvg"].set_index("seed")  # the config hash at seed 0:
    assert fedavg.loc[1, "setting"] == fedavg.loc[0, "hash"] != fedavg.loc[1, "hash"]


def test_load_runs_labels_by_config_name_even_if_the_cached_summary_has_another(tmp_path):
    cfg = make_config("old label")
    write_run(tmp_path, cfg, {0: (10.0, [10.0, 20.0])})
    cfg.name = "New label"  # name is not part of the run's identity: same directory
    assert load_runs(tmp_path, [cfg])["method"].tolist() == ["New label"]


def test_load_runs_without_configs_reads_every_finished_run(tmp_path):
    two_method_results(tmp_path)
    unfinished = RunStore(tmp_path / "deadbeef")
    unfinished.open(make_config("x").to_dict())
    assert len(load_runs(tmp_path)) == 4


def test_load_runs_names_unfinished_runs_and_the_fix(tmp_path):
    configs = two_method_results(tmp_path)
    missing = make_config("FedAvg", seed=7)
    with pytest.raises(FileNotFoundError, match=r"1 run\(s\) not finished.*FedAvg.*run_sweep"):
        load_runs(tmp_path, [*configs, missing])
    with pytest.raises(FileNotFoundError, match="no finished runs"):
        load_runs(tmp_path / "empty")


def test_load_curves_computes_metrics_from_each_evaluation(tmp_path):
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    curves = load_curves(runs)
    assert len(curves) == 4 * 3
    fedavg0 = curves[(curves["method"] == "FedAvg") & (curves["seed"] == 0)].set_index("round")
    assert fedavg0.loc[2, "mean"] == pytest.approx(50.0)  # clients [40, 50, 50, 60]
    assert fedavg0.loc[2, "var"] == pytest.approx(50.0)
    assert fedavg0.loc[4, "var"] == pytest.approx(500.0)
    assert fedavg0.loc[4, "global_acc"] == pytest.approx(70.0)
    assert fedavg0.loc[0, "worst5"] == pytest.approx(10.0)


def test_curves_and_client_accuracies_use_personalised_models_when_present(tmp_path):
    cfg = make_config("Ditto", "fedavg")
    write_run(
        tmp_path,
        cfg,
        {0: (10.0, [0.0, 0.0]), 2: (50.0, [40.0, 60.0])},
        personal={0: [20.0, 20.0], 2: [90.0, 70.0]},
    )
    runs = load_runs(tmp_path, [cfg])
    assert load_curves(runs).set_index("round").loc[2, "mean"] == pytest.approx(80.0)
    assert load_client_accuracies(runs)["acc"].tolist() == [90.0, 70.0]


def test_a_personalised_run_read_with_global_models_reports_its_global_model(tmp_path):
    own = make_config("Ditto", "ditto", params={"lam": 0.5})
    glob = make_config("Ditto (global model)", "ditto", params={"lam": 0.5}, models="global")
    write_run(
        tmp_path,
        own,
        {0: (10.0, [0.0, 0.0]), 2: (50.0, [40.0, 60.0])},
        personal={0: [20.0, 20.0], 2: [90.0, 70.0]},
    )
    runs = load_runs(tmp_path, [own, glob]).set_index("method")
    assert runs.loc["Ditto", "mean"] == 80.0 and runs.loc["Ditto", "evaluated"] == "personal"
    g = runs.loc["Ditto (global model)"]
    assert g["mean"] == 50.0 and g["var"] == 100.0 and g["evaluated"] == "global"
    assert "global_model" not in runs
    assert runs["hash"].nunique() == 1
    curves = load_curves(runs.reset_index()).set_index(["method", "round"])
    assert curves.loc[("Ditto (global model)", 2), "mean"] == 50.0
    assert curves.loc[("Ditto", 2), "mean"] == 80.0
    accs = load_client_accuracies(runs.reset_index())
    assert accs[accs["method"] == "Ditto (global model)"]["acc"].tolist() == [40.0, 60.0]


def test_global_models_of_a_run_finished_without_them_name_the_run_and_the_fix(tmp_path):
    glob = make_config("Ditto", "ditto", models="global")
    path = write_run(tmp_path, glob, {2: (50.0, [40.0, 60.0])}, personal={2: [90.0, 70.0]})
    summary = json.loads((path / "summary.json").read_text())
    del summary["global_model"]
    (path / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="eval.models: global.*delete that run directory to rerun it"):
        load_runs(tmp_path, [glob])


def test_load_client_accuracies_last_or_given_round(tmp_path):
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    last = load_client_accuracies(runs)
    assert len(last) == 16 and set(last["round"]) == {4}
    fedprox1 = last[(last["method"] == "FedProx") & (last["seed"] == 1)]
    assert fedprox1["acc"].tolist() == [65.0, 75.0, 75.0, 85.0] and fedprox1["client"].tolist() == [
        0,
        1,
        2,
        3,
    ]
    assert load_client_accuracies(runs, round_=2)["acc"].tolist()[:4] == [40.0, 50.0, 50.0, 60.0]
    with pytest.raises(ValueError, match=r"no evaluation at round 3; evaluated rounds: \[0, 2, 4\]"):
        load_client_accuracies(runs, round_=3)


def test_outcome_table_reports_status_and_first_error_line(tmp_path):
    ok, bad = make_config("FedAvg"), make_config("FedProx", "fedprox", seed=1)
    path = write_run(tmp_path, ok, {0: (10.0, [10.0])})
    table = outcome_table(
        [
            SweepOutcome(ok, RunResult(path, RunStore(path).summary())),
            SweepOutcome(bad, None, "ValueError: boom\nTraceback ..."),
        ]
    )
    assert table.to_dict("records") == [
        {"method": "FedAvg", "seed": 0, "status": "complete", "hash": config_hash(ok), "error": ""},
        {
            "method": "FedProx",
            "seed": 1,
            "status": "failed",
            "hash": config_hash(bad),
            "error": "ValueError: boom",
        },
    ]


def test_load_diagnostics_has_one_row_per_run_and_round_with_the_logged_values(tmp_path):
    configs = two_method_results(tmp_path)
    runs = load_runs(tmp_path, configs)
    fedavg0 = runs[(runs["method"] == "FedAvg") & (runs["seed"] == 0)].iloc[0]
    store = RunStore(fedavg0["path"])
    for t, branch in enumerate(["gradient", "model"]):
        diagnostics = {"fair_angle": 10.0 * t, "branch": branch}
        store.append("rounds", {"round": t, "selected": [0], "diagnostics": diagnostics})
    diags = load_diagnostics(runs)
    mine = diags[diags["hash"] == fedavg0["hash"]]
    assert mine[["round", "fair_angle", "branch"]].values.tolist() == [
        [0, 0.0, "gradient"],
        [1, 10.0, "model"],
    ]
    assert set(mine["method"]) == {"FedAvg"} and set(mine["seed"]) == {0}
    assert len(diags) == 2  # the other runs logged no rounds
