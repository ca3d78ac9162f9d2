import math

import pandas as pd
import pytest

from fairfl_core.report.claims import PAPER, Claim, check_claims
from fairfl_core.report.results import load_runs
from fairfl_core.report.tables import aggregate
from tests.report.conftest import make_config, two_method_results, write_run

PAPER_VALUES = pd.DataFrame(
    [
        {
            "dataset": "fashion_mnist",
            "method": "FedAvg",
            "metric": "var",
            "paper_value": 62.44,
            "paper_std": 4.55,
        },
        {
            "dataset": "fashion_mnist",
            "method": "FedProx",
            "metric": "var",
            "paper_value": 55.0,
            "paper_std": 1.0,
        },
        {
            "dataset": "fashion_mnist",
            "method": "FedAvg",
            "metric": "global_acc",
            "paper_value": 86.49,
            "paper_std": 0.09,
        },
    ]
)


@pytest.fixture
def agg(tmp_path):
    return aggregate(load_runs(tmp_path, two_method_results(tmp_path)), metrics=["var", "global_acc"])


def _one(claim, agg, paper=None):
    return check_claims([claim], agg, paper).iloc[0]


def test_claim_passes_with_the_numbers_behind_it(agg):
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg", source="Sec. 5"), agg)
    assert row["result"] == "pass"
    assert row["value"] == pytest.approx(87.5) and row["reference"] == pytest.approx(350.0)
    assert row["value_std"] == pytest.approx(75 / math.sqrt(2)) and row["seeds"] == 2
    assert row["difference"] == pytest.approx(-262.5)
    assert row["relative_%"] == pytest.approx(-75.0)
    assert row["than"] == "FedAvg" and row["source"] == "Sec. 5"


def test_claim_fails_when_the_predicate_is_false(agg):
    row = _one(Claim("FedAvg lowers the variance", "var", "FedAvg", "<", "FedProx"), agg)
    assert row["result"] == "fail" and row["difference"] == pytest.approx(262.5)
    assert _one(Claim("equal is not less", "var", "FedAvg", "<", 350.0), agg)["result"] == "fail"
    assert _one(Claim("but at most", "var", "FedAvg", "<=", 350.0), agg)["result"] == "pass"


def test_approximate_claims_use_the_tolerance(agg):
    # global accuracies: FedProx 75, FedAvg 71
    assert (
        _one(Claim("close", "global_acc", "FedProx", "≈", "FedAvg", tolerance=4.0), agg)["result"] == "pass"
    )
    row = _one(Claim("closer", "global_acc", "FedProx", "≈", "FedAvg", tolerance=3.9), agg)
    assert row["result"] == "fail" and row["op"] == "≈ (±3.9)"


def test_claims_against_constants_and_the_paper(agg):
    row = _one(Claim("above chance", "global_acc", "FedAvg", ">", 10), agg, PAPER_VALUES)
    assert row["result"] == "pass" and row["reference"] == 10.0 and row["holds_in_paper"] == "pass"
    row = _one(Claim("matches paper", "global_acc", "FedAvg", "≈", PAPER, tolerance=1.0), agg, PAPER_VALUES)
    assert row["result"] == "fail" and row["reference"] == pytest.approx(86.49)
    assert row["difference"] == pytest.approx(71.0 - 86.49) and row["holds_in_paper"] == "n/a"


def test_holds_in_paper_evaluates_the_same_predicate_on_the_paper_numbers(agg):
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg"), agg, PAPER_VALUES)
    assert row["holds_in_paper"] == "pass"  # 55.0 < 62.44
    row = _one(Claim("FedAvg lowers the variance", "var", "FedAvg", "<", "FedProx"), agg, PAPER_VALUES)
    assert row["holds_in_paper"] == "fail"
    row = _one(
        Claim("no paper row for FedProx acc", "global_acc", "FedProx", ">", "FedAvg"), agg, PAPER_VALUES
    )
    assert row["holds_in_paper"] == "n/a"


def test_missing_method_or_paper_value_is_reported_not_guessed(agg):
    row = _one(Claim("q-FFL lowers the variance", "var", "q-FFL", "<", "FedAvg"), agg)
    assert row["result"] == "missing" and pd.isna(row["value"]) and row["reference"] == pytest.approx(350.0)
    assert _one(Claim("matches paper", "var", "FedAvg", "≈", PAPER, tolerance=1), agg)["result"] == "missing"


def test_claims_are_checked_on_each_dataset_unless_one_is_named(tmp_path):
    configs = two_method_results(tmp_path)
    other = make_config("FedAvg", data="mnist")
    write_run(tmp_path, other, {0: (50.0, [40.0, 60.0])})
    agg = aggregate(load_runs(tmp_path, [*configs, other]), metrics=["var"])
    claim = Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg")
    table = check_claims([claim], agg)
    assert table[["dataset", "result"]].values.tolist() == [["fashion_mnist", "pass"], ["mnist", "missing"]]
    named = Claim("on mnist", "var", "FedAvg", ">", 99.0, dataset="mnist")
    assert check_claims([named], agg)[["dataset", "value", "result"]].values.tolist() == [
        ["mnist", 100.0, "pass"]
    ]


def test_invalid_claims_are_rejected_with_the_fix(agg):
    with pytest.raises(ValueError, match="op='!=' must be one of"):
        Claim("x", "var", "FedAvg", "!=", "FedProx")
    with pytest.raises(ValueError, match="tolerance applies to op '≈' only"):
        Claim("x", "var", "FedAvg", "<", "FedProx", tolerance=1.0)
    with pytest.raises(KeyError, match=r"metric 'worst5' is not aggregated"):
        check_claims([Claim("x", "worst5", "FedAvg", "<", "FedProx")], agg)
    with pytest.raises(ValueError, match="dataset 'cifar10' not in the results"):
        check_claims([Claim("x", "var", "FedAvg", "<", "FedProx", dataset="cifar10")], agg)


def test_a_stand_in_run_never_takes_the_real_datasets_paper_number(tmp_path):
    # the same data name (fashion_mnist), but the runs stand in for CIFAR-10: the FashionMNIST numbers
    # keyed by the real run's label must not be used
    agg = aggregate(load_runs(tmp_path, two_method_results(tmp_path, stand_in="CIFAR-10")), metrics=["var"])
    row = _one(Claim("matches paper", "var", "FedAvg", "≈", PAPER, tolerance=1), agg, PAPER_VALUES)
    assert row["dataset"] == "fashion_mnist (stand-in for CIFAR-10)" and row["result"] == "missing"
