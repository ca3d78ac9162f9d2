import pandas as pd
import pytest

from fairfl_core.experiments.profiles import Experiment, Method, PaperTable, Profile
from fairfl_core.report.paper import (
    LEFT_OUT,
    PAPER_COLUMNS,
    PAPERS_DIR,
    experiment_paper_values,
    load_paper_results,
    missing_reasons,
    paper_table,
    with_missing_rows,
)
from fairfl_core.report.results import load_runs
from fairfl_core.report.tables import results_table
from tests.report.conftest import two_method_results

ROWS = [
    ("toy", "Table 1", "FashionMNIST", "FedAvg", "var", "62.44", "4.55", "Table 1, row FedAvg, column Var."),
    ("toy", "Table 1", "FashionMNIST", "FedAvg", "global_acc", "86.49", "0.09", "Table 1, row FedAvg, Acc."),
    ("toy", "Table 1", "CIFAR-10", "FedAvg", "var", "103.83", "", "Table 1, row FedAvg, C10 Var."),
    ("toy", "Table 1", "FashionMNIST", "q-FFL", "var", "54.91", "2.82", "Table 1, row q-FFL, column Var."),
    ("toy", "Table 2", "FashionMNIST", "FedAvg", "var", "1.0", "0.1", "Table 2, row FedAvg"),
]


def _write(directory, rows=ROWS, name="toy", columns=PAPER_COLUMNS):
    (directory / name).mkdir(exist_ok=True)
    pd.DataFrame(rows, columns=columns).to_csv(directory / name / "results.csv", index=False)


def _experiment():
    profile = Profile("p", 1, (0,), 1)
    return Experiment(
        name="toy",
        description="",
        config="fmnist_baselines_sweep.yaml",
        profiles={"smoke": profile, "quick": profile, "paper": profile},
        methods=(Method("FedAvg", "fedavg", paper_row="FedAvg"), Method("FedProx", "fedprox", {"mu": 0.01})),
        paper=PaperTable("toy", "Table 1", {"fashion_mnist": "FashionMNIST"}),
    )


def test_shipped_paper_files_pass_validation():
    files = sorted(PAPERS_DIR.glob("*/results.csv"))
    assert files, "no fairfl_core/papers/<paper>/results.csv"
    for f in files:
        df = load_paper_results(f.parent.name)
        assert df["value"].notna().all() and df["source"].str.contains("Table|Figure").all()


def test_load_paper_results_parses_numbers_and_empty_std(tmp_path):
    _write(tmp_path)
    df = load_paper_results("toy", tmp_path)
    assert df["value"].tolist()[:3] == [62.44, 86.49, 103.83]
    assert pd.isna(df["std"].iloc[2])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: [x[:-1] for x in r], r"missing column\(s\) \['source'\]"),
        (
            lambda r: [r[0][:5] + ("n/a",) + r[0][6:]],
            r"column 'value' is not a number in data row\(s\) \[1\]",
        ),
        (lambda r: [r[0], r[0]], "the same cell is listed twice"),
        (lambda r: [("other",) + r[0][1:]], "column 'paper' must be 'toy'"),
        (lambda r: [r[0][:3] + ("",) + r[0][4:]], r"column 'method' is empty in data row\(s\) \[1\]"),
    ],
)
def test_load_paper_results_rejects_malformed_files(tmp_path, mutate, message):
    rows = mutate(ROWS)
    columns = PAPER_COLUMNS if len(rows[0]) == len(PAPER_COLUMNS) else PAPER_COLUMNS[: len(rows[0])]
    _write(tmp_path, rows, columns=columns)
    with pytest.raises(ValueError, match=message):
        load_paper_results("toy", tmp_path)


def test_unknown_paper_lists_the_available_ones(tmp_path):
    _write(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"available papers: \['toy'\]"):
        load_paper_results("nope", tmp_path)


def test_experiment_paper_values_join_on_paper_row_and_dataset(tmp_path):
    _write(tmp_path)
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    values = experiment_paper_values(_experiment(), runs, tmp_path)
    # only FedAvg has a paper row; only Table 1 and the FashionMNIST column are used
    assert values[["data", "method", "metric", "paper_value"]].values.tolist() == [
        ["fashion_mnist", "FedAvg", "var", 62.44],
        ["fashion_mnist", "FedAvg", "global_acc", 86.49],
    ]


def test_a_stand_in_run_is_compared_with_the_dataset_it_stands_in_for(tmp_path):
    _write(tmp_path)
    runs = load_runs(tmp_path, two_method_results(tmp_path, stand_in="CIFAR-10"))
    values = experiment_paper_values(_experiment(), runs, tmp_path)
    assert values[["paper_dataset", "metric", "paper_value"]].values.tolist() == [["CIFAR-10", "var", 103.83]]
    assert values["dataset"].tolist() == ["fashion_mnist (stand-in for CIFAR-10)"]


def test_experiment_without_paper_table_has_no_values_and_wrong_table_is_named(tmp_path):
    _write(tmp_path)
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    exp = _experiment()
    assert experiment_paper_values(Experiment(**{**exp.__dict__, "paper": None}), runs, tmp_path).empty
    bad = Experiment(**{**exp.__dict__, "paper": PaperTable("toy", "Table 9")})
    with pytest.raises(ValueError, match=r"no rows for 'Table 9'.*tables there: \['Table 1', 'Table 2'\]"):
        experiment_paper_values(bad, runs, tmp_path)


def test_missing_reasons_say_why_a_paper_row_was_not_run():
    exp = _experiment()  # FedAvg has a paper row, FedProx none
    assert missing_reasons(exp, ["FedAvg", "FedProx"]) == {}
    assert missing_reasons(exp, ["FedProx"]) == {"FedAvg": LEFT_OUT}
    subset = missing_reasons(exp, [], left_out="not run: left out of this notebook run", extra={"X": "no"})
    assert subset == {"X": "no", "FedAvg": "not run: left out of this notebook run"}
    assert missing_reasons(exp, [], failed={"FedAvg": "diverged"}) == {"FedAvg": "run failed: diverged"}


def test_paper_table_is_the_chain_of_values_table_and_missing_rows(tmp_path):
    """``paper_table`` = experiment_paper_values → results_table → missing_reasons → with_missing_rows."""
    runs = load_runs(tmp_path, two_method_results(tmp_path))
    cited = PaperTable("fedeba_plus", "Table 1", {"fashion_mnist": "FashionMNIST"})
    exp = Experiment(**{**_experiment().__dict__, "paper": cited})
    extra = {"q-FFL": "not implemented"}
    table, paper = paper_table(exp, runs, ("global_acc", "var"), extra=extra, columns={"R#": {"FedAvg": "3"}})
    chained = results_table(runs, metrics=("global_acc", "var"), paper=experiment_paper_values(exp, runs))
    chained["R#"] = ["3" if m == "FedAvg" else "" for m in chained["method"]]
    chained = with_missing_rows(chained, runs, exp, missing_reasons(exp, runs["method"], extra=extra))
    pd.testing.assert_frame_equal(table, chained)
    assert table.loc[table["method"] == "q-FFL", "Var. paper"].tolist() == ["54.91 ± 2.82"]
    assert paper["paper_value"].tolist()[:2] == [86.49, 62.44]  # FedAvg's row, every printed metric
    no_paper = Experiment(**{**exp.__dict__, "paper": None})
    assert "note" not in paper_table(no_paper, runs, ("var",)).table
