import math

import pandas as pd
import pytest

from fairfl_core.report.claims import PAPER, Claim, check_claims, seed_outcome
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


# seed_outcome by hand: d = x̄_a − x̄_b, SE = √(s_a²/n_a + s_b²/n_b), band 2·SE
@pytest.mark.parametrize(
    ("op", "value", "reference", "tolerance", "result", "se"),
    [
        # d = −2, SE = √(1/4 + 1/4) = 0.7071, band 1.414: margin 2 is outside the band
        ("<", (10.0, 1.0, 4), (12.0, 1.0, 4), 0.0, "holds", math.sqrt(0.5)),
        ("<", (14.0, 1.0, 4), (12.0, 1.0, 4), 0.0, "fails", math.sqrt(0.5)),
        # s = 2: SE = √2, band 2.83 > |d| = 2
        ("<", (10.0, 2.0, 4), (12.0, 2.0, 4), 0.0, "within noise", math.sqrt(2.0)),
        # "no lower accuracy" short by 0.02 on 5 seeds of std 0.3: SE = √(0.036) = 0.190
        (">=", (86.48, 0.3, 5), (86.50, 0.3, 5), 0.0, "within noise", math.sqrt(0.036)),
        # "≈" with tolerance 4, d = −4: margin 4 − 4 = 0 in the band; tolerance 6: margin 2 > 1.414
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 4.0, "within noise", math.sqrt(0.5)),
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 6.0, "holds", math.sqrt(0.5)),
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 1.0, "fails", math.sqrt(0.5)),
        # an exact reference adds nothing: SE = 2/√4 = 1, band 2; margin 2 is in it, 2.5 is not
        (">", (12.0, 2.0, 4), 10.0, 0.0, "within noise", 1.0),
        (">", (12.5, 2.0, 4), 10.0, 0.0, "holds", 1.0),
        # equal means with a spread: within noise for every op
        ("<", (10.0, 1.0, 4), (10.0, 1.0, 4), 0.0, "within noise", math.sqrt(0.5)),
        (">=", (10.0, 1.0, 4), (10.0, 1.0, 4), 0.0, "within noise", math.sqrt(0.5)),
        # one seed on a side: no SE, the sign decides (a 0.02 shortfall fails)
        (">=", (86.48, math.nan, 1), (86.50, 0.3, 5), 0.0, "fails", math.nan),
        ("<", (10.0, math.nan, 1), (12.0, math.nan, 1), 0.0, "holds", math.nan),
        ("≈", (71.0, math.nan, 1), (75.0, math.nan, 1), 4.5, "holds", math.nan),
        # equal means without a band (one seed, or no spread): the predicate's own boundary
        (">=", (10.0, math.nan, 1), (10.0, math.nan, 1), 0.0, "holds", math.nan),
        (">", (10.0, math.nan, 1), (10.0, math.nan, 1), 0.0, "fails", math.nan),
        ("≈", (50.0, 0.0, 3), 50.0, 1e-9, "holds", 0.0),
        ("<=", (0.0, 0.0, 3), (0.0, 0.0, 3), 0.0, "holds", 0.0),
        ("<", (0.0, 0.0, 3), (0.0, 0.0, 3), 0.0, "fails", 0.0),
    ],
)
def test_seed_outcome_on_hand_numbers(op, value, reference, tolerance, result, se):
    outcome = seed_outcome(op, value, reference, tolerance)
    ref = reference[0] if isinstance(reference, tuple) else reference
    assert outcome.result == result
    assert outcome.difference == pytest.approx(value[0] - ref, abs=1e-12)
    assert outcome.se == pytest.approx(se, abs=1e-12, nan_ok=True)


def test_seed_outcome_band_scales_with_z():
    # d = −2, SE = √2: within noise at z = 2 (band 2.83), holds at z = 1 (band 1.41)
    assert seed_outcome("<", (10.0, 2.0, 4), (12.0, 2.0, 4), z=1.0).result == "holds"


def test_claim_row_carries_the_numbers_behind_its_outcome(agg):
    # var: FedProx 125, 50 (mean 87.5, std 75/√2); FedAvg 500, 200 (mean 350, std 300/√2)
    # SE = √((75²/2)/2 + (300²/2)/2) = √23906.25 = 154.62; band 309.2 > |d| = 262.5
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg", source="Sec. 5"), agg)
    assert row["result"] == "within noise" and row["basis"] == "2·SE"
    assert row["value"] == pytest.approx(87.5) and row["reference"] == pytest.approx(350.0)
    assert row["value_std"] == pytest.approx(75 / math.sqrt(2)) and row["seeds"] == 2
    assert row["difference"] == pytest.approx(-262.5) and row["se"] == pytest.approx(math.sqrt(23906.25))
    assert row["relative_%"] == pytest.approx(-75.0)
    assert row["than"] == "FedAvg" and row["source"] == "Sec. 5"


def test_claim_outcomes_on_two_seeds(agg):
    # global accuracies: FedProx 74, 76 (mean 75, std √2); FedAvg 70, 72 (mean 71): SE = √2, band 2.83
    row = _one(Claim("FedProx is more accurate", "global_acc", "FedProx", ">", "FedAvg"), agg)
    assert row["result"] == "holds" and row["difference"] == pytest.approx(4.0)
    assert row["se"] == pytest.approx(math.sqrt(2))
    reverse = _one(Claim("FedAvg is more accurate", "global_acc", "FedAvg", ">", "FedProx"), agg)
    assert reverse["result"] == "fails"
    # against the constant 350 (FedAvg's own var mean): d = 0, SE = 150
    assert _one(Claim("equal is not less", "var", "FedAvg", "<", 350.0), agg)["result"] == "within noise"


def test_approximate_claims_use_the_tolerance(agg):
    # global accuracies: FedProx 75, FedAvg 71 (d = 4, band 2.83); margin = tolerance − 4
    outcome = {
        tol: _one(Claim("close", "global_acc", "FedProx", "≈", "FedAvg", tolerance=tol), agg)["result"]
        for tol in (7.0, 4.0, 1.0)
    }
    assert outcome == {7.0: "holds", 4.0: "within noise", 1.0: "fails"}
    row = _one(Claim("closer", "global_acc", "FedProx", "≈", "FedAvg", tolerance=3.9), agg)
    assert row["op"] == "≈ (±3.9)"


def test_claims_against_constants_and_the_paper(agg):
    # FedAvg global_acc 71 (std √2, 2 seeds): SE = 1 against an exact number
    row = _one(Claim("above chance", "global_acc", "FedAvg", ">", 10), agg, PAPER_VALUES)
    assert row["result"] == "holds" and row["reference"] == 10.0 and row["holds_in_paper"] == "holds"
    assert row["se"] == pytest.approx(1.0)
    row = _one(Claim("matches paper", "global_acc", "FedAvg", "≈", PAPER, tolerance=1.0), agg, PAPER_VALUES)
    assert row["result"] == "fails" and row["reference"] == pytest.approx(86.49)
    assert row["difference"] == pytest.approx(71.0 - 86.49) and row["holds_in_paper"] == "n/a"


def test_holds_in_paper_evaluates_the_same_predicate_on_the_paper_numbers(agg):
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg"), agg, PAPER_VALUES)
    assert row["holds_in_paper"] == "holds"  # 55.0 < 62.44
    row = _one(Claim("FedAvg lowers the variance", "var", "FedAvg", "<", "FedProx"), agg, PAPER_VALUES)
    assert row["holds_in_paper"] == "fails"
    row = _one(
        Claim("no paper row for FedProx acc", "global_acc", "FedProx", ">", "FedAvg"), agg, PAPER_VALUES
    )
    assert row["holds_in_paper"] == "n/a"


def test_missing_method_or_paper_value_is_reported_not_guessed(agg):
    row = _one(Claim("q-FFL lowers the variance", "var", "q-FFL", "<", "FedAvg"), agg)
    assert row["result"] == "missing" and pd.isna(row["value"]) and row["reference"] == pytest.approx(350.0)
    assert pd.isna(row["difference"]) and pd.isna(row["se"]) and row["basis"] == ""
    assert _one(Claim("matches paper", "var", "FedAvg", "≈", PAPER, tolerance=1), agg)["result"] == "missing"


def test_claims_are_checked_on_each_dataset_unless_one_is_named(tmp_path):
    configs = two_method_results(tmp_path)
    other = make_config("FedAvg", data="mnist")
    write_run(tmp_path, other, {0: (50.0, [40.0, 60.0])})
    agg = aggregate(load_runs(tmp_path, [*configs, other]), metrics=["var"])
    claim = Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg")
    table = check_claims([claim], agg)
    assert table[["dataset", "result"]].values.tolist() == [
        ["fashion_mnist", "within noise"],
        ["mnist", "missing"],
    ]
    named = Claim("on mnist", "var", "FedAvg", ">", 99.0, dataset="mnist")  # one seed: the sign decides
    assert check_claims([named], agg)[["dataset", "value", "result", "basis"]].values.tolist() == [
        ["mnist", 100.0, "holds", "sign (no SE)"]
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
