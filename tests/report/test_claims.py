import math

import pandas as pd
import pytest

from fairfl_core.report.claims import (
    OBSERVATION,
    PAPER,
    Claim,
    Scale,
    check_claims,
    interval,
    op_text,
    page_verdicts,
    seed_outcome,
)
from fairfl_core.report.index import claim_outcome
from fairfl_core.report.results import load_runs
from fairfl_core.report.stats import Sample
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
    """Two seeds a method: too few for a verdict."""
    return aggregate(load_runs(tmp_path, two_method_results(tmp_path)), metrics=["var", "global_acc"])


@pytest.fixture
def agg3(tmp_path):
    """Three seeds a method: global accuracy FedProx 75 ± 1, FedAvg 71 ± 1."""
    configs = two_method_results(tmp_path, seeds=3)
    return aggregate(load_runs(tmp_path, configs), metrics=["var", "global_acc"])


def _one(claim, agg, paper=None):
    return check_claims([claim], agg, paper).iloc[0]


# seed_outcome by hand: d = x̄_a − x̄_b, SE = √(s_a²/n_a + s_b²/n_b), Welch's ν = SE⁴ / Σ (s²/n)²/(n − 1),
# band t_{0.975, ν}·SE (Student's t table: t(3) = 3.1824, t(4) = 2.7764, t(6) = 2.4469, t(8) = 2.3060)
@pytest.mark.parametrize(
    ("op", "value", "reference", "tolerance", "result", "se", "df"),
    [
        # n = 4, s = 1 both: SE = √(1/4 + 1/4) = 0.7071, ν = 0.25 / (2 · 0.0625 / 3) = 6, band 1.730
        ("<", (10.0, 1.0, 4), (12.0, 1.0, 4), 0.0, "holds", math.sqrt(0.5), 6.0),
        ("<", (14.0, 1.0, 4), (12.0, 1.0, 4), 0.0, "fails", math.sqrt(0.5), 6.0),
        # s = 2: SE = √2, band 3.46 > |d| = 2
        ("<", (10.0, 2.0, 4), (12.0, 2.0, 4), 0.0, "undetermined", math.sqrt(2.0), 6.0),
        # Welch at ν = 4 (n = 3, equal s): SE = √(2/3) = 0.8165, band 2.267: |d| = 3 holds, |d| = 2 does not
        # (the former normal band 2·SE = 1.633 called d = 2 a hold on 3 seeds)
        ("<", (10.0, 1.0, 3), (13.0, 1.0, 3), 0.0, "holds", math.sqrt(2 / 3), 4.0),
        ("<", (10.0, 1.0, 3), (12.0, 1.0, 3), 0.0, "undetermined", math.sqrt(2 / 3), 4.0),
        # "no lower accuracy" short by 0.02 on 5 seeds of std 0.3: SE = √0.036 = 0.190, ν = 8
        (">=", (86.48, 0.3, 5), (86.50, 0.3, 5), 0.0, "undetermined", math.sqrt(0.036), 8.0),
        # "≈" with tolerance 4, d = −4: the interval [−5.73, −2.27] straddles −4; within 6: inside; 1: outside
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 4.0, "undetermined", math.sqrt(0.5), 6.0),
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 6.0, "holds", math.sqrt(0.5), 6.0),
        ("≈", (71.0, 1.0, 4), (75.0, 1.0, 4), 1.0, "fails", math.sqrt(0.5), 6.0),
        # an exact reference adds nothing: SE = 2/√4 = 1, ν = n − 1 = 3, band 3.18: margin 2.5 is in it
        (">", (12.5, 2.0, 4), 10.0, 0.0, "undetermined", 1.0, 3.0),
        (">", (13.5, 2.0, 4), 10.0, 0.0, "holds", 1.0, 3.0),
        # equal means with a spread: undetermined for every op
        ("<", (10.0, 1.0, 4), (10.0, 1.0, 4), 0.0, "undetermined", math.sqrt(0.5), 6.0),
        (">=", (10.0, 1.0, 4), (10.0, 1.0, 4), 0.0, "undetermined", math.sqrt(0.5), 6.0),
        # fewer than 3 seeds on a side: not decided, whatever the numbers
        (">=", (86.48, math.nan, 1), (86.50, 0.3, 5), 0.0, "not decided", math.nan, math.nan),
        ("<", (10.0, 0.1, 2), (20.0, 0.1, 2), 0.0, "not decided", math.nan, math.nan),
        ("<", (10.0, 0.1, 3), (20.0, 0.1, 2), 0.0, "not decided", math.nan, math.nan),
        # exact numbers on both sides (the paper's printed means, a deterministic toy): the sign decides, and
        # a margin of exactly 0 is the predicate's own boundary
        ("<", 10.0, 12.0, 0.0, "holds", 0.0, math.nan),
        ("≈", 71.0, 75.0, 4.5, "holds", 0.0, math.nan),
        (">=", 10.0, 10.0, 0.0, "holds", 0.0, math.nan),
        (">", 10.0, 10.0, 0.0, "fails", 0.0, math.nan),
        # seeds without spread: SE = 0, the sign decides
        ("≈", (50.0, 0.0, 3), 50.0, 1e-9, "holds", 0.0, math.nan),
        ("<=", (0.0, 0.0, 3), (0.0, 0.0, 3), 0.0, "holds", 0.0, math.nan),
        ("<", (0.0, 0.0, 3), (0.0, 0.0, 3), 0.0, "fails", 0.0, math.nan),
    ],
)
def test_seed_outcome_on_hand_numbers(op, value, reference, tolerance, result, se, df):
    outcome = seed_outcome(op, value, reference, tolerance)
    val = value[0] if isinstance(value, tuple) else value
    ref = reference[0] if isinstance(reference, tuple) else reference
    assert outcome.result == result
    assert outcome.difference == val - ref  # one subtraction, as the implementation does
    assert outcome.se == pytest.approx(se, rel=1e-12, nan_ok=True)
    assert outcome.df == pytest.approx(df, rel=1e-12, nan_ok=True)


def test_the_test_says_how_a_claim_was_decided():
    assert seed_outcome("<", (10.0, 1.0, 3), (13.0, 1.0, 3)).test == "Welch t(4.0): seed summaries only"
    assert seed_outcome("<", (10.0, 1.0, 3), 13.0).test == "one-sample t(2.0)"
    assert seed_outcome("<", (10.0, 1.0, 2), (13.0, 1.0, 3)).test == "not decided (2 seeds)"
    assert seed_outcome("<", (10.0, 1.0, 1), (13.0, 1.0, 3)).test == "not decided (1 seed)"
    assert seed_outcome("<", 10.0, 13.0).test == "exact numbers"


def test_non_inferiority_by_a_margin():
    # "almost no loss" with margin 0.35: d = −0.04 on 5 seeds of std 0.1 a side, SE = √(0.002 + 0.002) =
    # 0.0632, ν = 8, t(8) = 2.306: the interval of d + 0.35 is 0.31 ± 0.146, above 0: no more than 0.35 lost
    close = seed_outcome(">=", (95.80, 0.1, 5), (95.84, 0.1, 5), tolerance=0.35)
    assert close.result == "holds" and close.difference == pytest.approx(-0.04)
    assert close.low == pytest.approx(-0.04 - 2.306004 * math.sqrt(0.004), rel=1e-5)  # the interval of d
    assert seed_outcome(">=", (95.80, 0.1, 5), (95.84, 0.1, 5)).result == "undetermined"  # without a margin
    # d = −0.84: d + 0.35 = −0.49 ± 0.146, below 0: more than the margin lost
    assert seed_outcome(">=", (95.00, 0.1, 5), (95.84, 0.1, 5), tolerance=0.35).result == "fails"
    # the mirror image for "<=" (no more than 0.35 above)
    assert seed_outcome("<=", (95.88, 0.1, 5), (95.84, 0.1, 5), tolerance=0.35).result == "holds"
    claim = Claim("no loss", "best5", "A", ">=", "B", tolerance=0.35, tolerance_source="Table 1's std")
    assert op_text(claim) == ">= (margin 0.35: Table 1's std)"
    with pytest.raises(ValueError, match="tolerance applies to ops"):
        Claim("x", "var", "A", "<", "B", tolerance=1.0)


def test_a_censored_value_never_enters_a_t_test():
    reached = Sample.of({0: 12.0, 1: 14.0, 2: 13.0})
    bound = Sample.of({0: 20.0, 1: 20.0, 2: 18.0}, censored=2)  # two runs never reached the target
    outcome = seed_outcome("<", reached, bound)
    assert outcome.result == "not decided (censored: 2 runs only bound the value)"
    assert math.isnan(outcome.se) and math.isnan(outcome.p)


def test_the_band_widens_with_the_confidence():
    # ν = 4, SE = 0.8165, d = −2: band t(0.95 two-sided) 2.267 holds it inside; at 80% (t 1.533) it holds
    assert seed_outcome("<", (10.0, 1.0, 3), (12.0, 1.0, 3)).result == "undetermined"
    assert seed_outcome("<", (10.0, 1.0, 3), (12.0, 1.0, 3), confidence=0.8).result == "holds"


def test_a_size_stated_by_the_paper_decides_the_class():
    # d = −3, SE = √(2/3), ν = 4: [−5.27, −0.73]
    assert seed_outcome("<", (10.0, 1.0, 3), (13.0, 1.0, 3), effect=-4.0).result == "holds"
    assert (
        seed_outcome("<", (10.0, 1.0, 3), (13.0, 1.0, 3), effect=-10.0).result == "smaller than the paper's"
    )
    # d = −1: [−3.27, 1.27] holds 0 but not −10
    weak = seed_outcome("<", (12.0, 1.0, 3), (13.0, 1.0, 3), effect=-10.0)
    assert weak.result == "not reproduced at the paper's size" and weak.seeds_to_decide is None
    undetermined = seed_outcome("<", (11.0, 1.0, 3), (13.0, 1.0, 3), effect=-2.5)
    assert undetermined.result == "undetermined" and undetermined.seeds_to_decide == 4


def test_claim_row_carries_the_numbers_behind_its_outcome(agg):
    # var: FedProx 125, 50 (mean 87.5, std 75/√2); FedAvg 500, 200 (mean 350, std 300/√2); 2 seeds a side
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg", source="Sec. 5"), agg)
    assert row["result"] == "not decided" and row["test"] == "not decided (2 seeds)"
    assert row["value"] == pytest.approx(87.5) and row["reference"] == pytest.approx(350.0)
    assert (
        row["value_std"] == pytest.approx(75 / math.sqrt(2)) and row["seeds"] == row["reference_seeds"] == 2
    )
    assert row["difference"] == pytest.approx(-262.5) and pd.isna(row["se"])
    assert row["relative_%"] == pytest.approx(-75.0)
    assert row["than"] == "FedAvg" and row["source"] == "Sec. 5"


def test_claim_outcomes_on_three_seeds(agg, agg3):
    # global accuracies over 3 seeds: FedProx 74, 76, 75 and FedAvg 70, 72, 71: the runs of a seed share
    # their draws, so the test is paired: per-seed differences 4, 4, 4, no spread: the sign decides
    claim = Claim("FedProx is more accurate", "global_acc", "FedProx", ">", "FedAvg")
    row = _one(claim, agg3)
    assert row["result"] == "holds" and row["difference"] == pytest.approx(4.0)
    assert row["se"] == 0.0 and row["test"].startswith("paired, equal per-seed contrasts")
    reverse = _one(Claim("FedAvg is more accurate", "global_acc", "FedAvg", ">", "FedProx"), agg3)
    assert reverse["result"] == "fails"
    # variance: FedProx 125, 50, 81.25 and FedAvg 500, 200, 325: per-seed differences −375, −150, −243.75
    var = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg"), agg3)
    diffs = [-375.0, -150.0, -243.75]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / 2)
    assert var["se"] == pytest.approx(sd / math.sqrt(3)) and var["df"] == 2.0
    # −256.25 ± 4.30 · 65.2 = [−536.8, 24.3] holds 0; the paper prints no size: undetermined
    assert var["test"].startswith("paired t(2)") and var["result"] == "undetermined"
    # against the constant 71 (FedAvg's own mean): d = 0, SE = 1/√3
    assert (
        _one(Claim("equal is not less", "global_acc", "FedAvg", "<", 71.0), agg3)["result"] == "undetermined"
    )
    # the same numbers on 2 seeds: not decided
    assert _one(claim, agg)["result"] == "not decided"


def test_approximate_claims_use_the_tolerance(agg3):
    # global accuracies: FedProx 75, FedAvg 71 over 3 paired seeds, d = 4 on each
    outcome = {
        tol: _one(
            Claim("close", "global_acc", "FedProx", "≈", "FedAvg", tolerance=tol, tolerance_source="test"),
            agg3,
        )["result"]
        for tol in (7.0, 4.0, 1.0)
    }
    assert outcome == {7.0: "holds", 4.0: "holds", 1.0: "fails"}  # d = 4 on every seed: exact
    claim = Claim("closer", "global_acc", "FedProx", "≈", "FedAvg", tolerance=3.9, tolerance_source="Fig. 2")
    assert _one(claim, agg3)["op"] == "≈ (±3.9: Fig. 2)"


def test_claims_against_constants_and_the_paper(agg3):
    # FedAvg global_acc 71 ± 1 over 3 seeds: SE = 1/√3 against an exact number, ν = 2
    row = _one(Claim("above chance", "global_acc", "FedAvg", ">", 10), agg3, PAPER_VALUES)
    assert row["result"] == "holds" and row["reference"] == 10.0 and row["holds_in_paper"] == "holds"
    assert row["se"] == pytest.approx(1 / math.sqrt(3)) and row["df"] == pytest.approx(2.0)
    claim = Claim("matches paper", "global_acc", "FedAvg", "≈", PAPER, tolerance=1.0, tolerance_source="test")
    row = _one(claim, agg3, PAPER_VALUES)
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
    assert pd.isna(row["difference"]) and pd.isna(row["se"]) and row["test"] == ""
    assert (
        _one(Claim("matches paper", "var", "FedAvg", "≈", PAPER, tolerance=1, tolerance_source="test"), agg)[
            "result"
        ]
        == "missing"
    )


def test_a_method_whose_every_run_diverged_is_named_as_the_reason(tmp_path):
    configs = two_method_results(tmp_path)  # FedProx, then FedAvg: 2 seeds each
    for cfg in configs[2:]:  # every FedAvg run diverged
        write_run(tmp_path, cfg, {4: (10.0, [10.0] * 4)}, status="diverged")
    agg = aggregate(load_runs(tmp_path, configs), metrics=["var"])
    row = _one(Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg"), agg)
    assert row["result"] == "missing: FedAvg diverged in 2 of 2 seeds" and pd.isna(row["reference"])
    assert claim_outcome(row["result"]) == "not checked"  # as any missing side
    row = _one(Claim("FedAvg lowers the variance", "var", "FedAvg", "<", "FedProx"), agg)
    assert row["result"] == "missing: FedAvg diverged in 2 of 2 seeds"


def test_claims_are_checked_on_each_dataset_unless_one_is_named(tmp_path):
    configs = two_method_results(tmp_path)
    other = make_config("FedAvg", data="mnist")
    write_run(tmp_path, other, {0: (50.0, [40.0, 60.0])})
    agg = aggregate(load_runs(tmp_path, [*configs, other]), metrics=["var"])
    claim = Claim("FedProx lowers the variance", "var", "FedProx", "<", "FedAvg")
    table = check_claims([claim], agg)
    assert table[["dataset", "result"]].values.tolist() == [
        ["fashion_mnist", "not decided"],
        ["mnist", "missing"],
    ]
    named = Claim("on mnist", "var", "FedAvg", ">", 99.0, dataset="mnist")  # one seed: not decided
    assert check_claims([named], agg)[["dataset", "value", "result", "test"]].values.tolist() == [
        ["mnist", 100.0, "not decided", "not decided (1 seed)"]
    ]


def test_invalid_claims_are_rejected_with_the_fix(agg):
    with pytest.raises(ValueError, match="op='!=' must be one of"):
        Claim("x", "var", "FedAvg", "!=", "FedProx")
    with pytest.raises(ValueError, match="tolerance applies to ops"):
        Claim("x", "var", "FedAvg", "<", "FedProx", tolerance=1.0)
    with pytest.raises(KeyError, match=r"metric 'worst5' is not aggregated"):
        check_claims([Claim("x", "worst5", "FedAvg", "<", "FedProx")], agg)
    with pytest.raises(ValueError, match="dataset 'cifar10' not in the results"):
        check_claims([Claim("x", "var", "FedAvg", "<", "FedProx", dataset="cifar10")], agg)


def test_a_stand_in_run_never_takes_the_real_datasets_paper_number(tmp_path):
    # the same data name (fashion_mnist), but the runs stand in for CIFAR-10: the FashionMNIST numbers
    # keyed by the real run's label must not be used
    agg = aggregate(load_runs(tmp_path, two_method_results(tmp_path, stand_in="CIFAR-10")), metrics=["var"])
    row = _one(
        Claim("matches paper", "var", "FedAvg", "≈", PAPER, tolerance=1, tolerance_source="test"),
        agg,
        PAPER_VALUES,
    )
    assert row["dataset"] == "fashion_mnist (stand-in for CIFAR-10)" and row["result"] == "missing"
    assert pd.isna(row["reference"]) and row["data"] == "stand-in for CIFAR-10"
    # a stand-in on another column's data adds no evidence: the paper's claims are not checked there
    offline = check_claims([Claim("lower", "var", "FedProx", "<", "FedAvg")], agg, offline=True).iloc[0]
    assert (
        offline["result"] == "not checked (no offline data)" and offline["stand_in_result"] == "not decided"
    )


def test_the_interval_of_the_difference_by_hand():
    # d = −3, SE = √(2/3) = 0.8165, ν = 4, t = 2.7764: d ± 2.2669
    low, high = interval(seed_outcome("<", (10.0, 1.0, 3), (13.0, 1.0, 3)))
    assert low == pytest.approx(-3 - 2.776445 * math.sqrt(2 / 3), rel=1e-6)
    assert high == pytest.approx(-3 + 2.776445 * math.sqrt(2 / 3), rel=1e-6)
    assert all(math.isnan(x) for x in interval(seed_outcome("<", (10.0, 1.0, 2), (13.0, 1.0, 3))))


def test_a_claim_is_decided_against_the_papers_size(agg):
    # var over 2 seeds is not decided; on 3 seeds (agg3 below) the printed numbers give the size
    row = _one(Claim("lower variance", "var", "FedProx", "<", "FedAvg"), agg, PAPER_VALUES)
    assert row["paper_effect"] == pytest.approx(55.0 - 62.44) and row["size_source"] == "printed numbers"
    assert row["result"] == "not decided" and row["kind"] == "paper"


def test_a_stated_size_and_the_printed_numbers(agg3):
    # FedProx 75 vs FedAvg 71 on 3 paired seeds: d = 4 on every seed (exact): any size it reaches holds
    small = _one(Claim("more accurate", "global_acc", "FedProx", ">", "FedAvg", effect=1.01), agg3)
    assert small["paper_effect"] == 1.01 and small["size_source"] == "stated" and small["result"] == "holds"
    large = _one(Claim("more accurate", "global_acc", "FedProx", ">", "FedAvg", effect=5.0), agg3)
    assert large["result"] == "smaller than the paper's"
    # the paper's own numbers against a stated size: 55.0 − 62.44 = −7.44 against −10
    stated = _one(Claim("lower variance", "var", "FedProx", "<", "FedAvg", effect=-10.0), agg3, PAPER_VALUES)
    assert stated["holds_in_paper"] == "smaller than stated"
    # a constant is a threshold, not a size
    chance = _one(Claim("above chance", "global_acc", "FedAvg", ">", 10), agg3, PAPER_VALUES)
    assert pd.isna(chance["paper_effect"]) and chance["size_source"] == ""


def test_a_relative_size_is_estimated_on_the_same_runs(agg3):
    # "FedProx's accuracy gain over FedAvg is 2× (FedAvg − 0)": the anchor is a method; here FedAvg against
    # itself makes the size 2·(μ_FedAvg − μ_FedAvg) = 0, so any established gain holds
    claim = Claim("gain", "global_acc", "FedProx", ">", "FedAvg", relative_effect=("FedAvg", 2.0))
    row = _one(claim, agg3)
    assert row["paper_effect"] == 0.0 and row["size_source"] == "stated: 2·(reference − FedAvg)"
    assert row["result"] == "holds"
    with pytest.raises(ValueError, match="give effect or relative_effect, not both"):
        Claim("x", "var", "A", "<", "B", effect=1.0, relative_effect=("C", 2.0))


def test_rows_carry_their_scale_and_their_evidence(agg3):
    claim = Claim("more accurate", "global_acc", "FedProx", ">", "FedAvg")
    row = _one(claim, agg3)
    assert (row["model"], row["data"]) == ("n/a", "real") and pd.isna(row["rounds_share"])
    scaled = check_claims([claim], agg3, scale=Scale(rounds=16, model="cnn")).iloc[0]
    assert scaled["rounds_share"] == 0.25 and scaled["model"] == "substituted (mlp for cnn)"
    assert check_claims([claim], agg3, scale=Scale(4, "mlp")).iloc[0]["model"] == "the paper's (mlp)"
    twice = check_claims([claim, Claim("again", "global_acc", "FedProx", ">", "FedAvg")], agg3)
    assert twice["evidence"].nunique() == 1  # one piece of evidence under two sentences
    other = check_claims([Claim("var", "var", "FedProx", "<", "FedAvg")], agg3)
    assert other["evidence"].iloc[0] != twice["evidence"].iloc[0]


def test_holm_within_a_page_adjusts_the_non_primary_paper_claims():
    def table(results, p, primary, kind="paper"):
        n = len(p)
        return pd.DataFrame(
            {
                "kind": [kind] * n,
                "primary": primary,
                "op": ["<"] * n,
                "difference": [-1.0] * n,
                "paper_effect": [math.nan] * n,
                "size_source": [""] * n,
                "p": p,
                "p_size": [math.nan] * n,
                "result": results,
            }
        )

    tables = {
        "a.csv": table(["holds", "holds"], [0.01, 0.04], [True, False]),
        "b.csv": table(["holds", "undetermined"], [0.03, 0.5], [False, False]),
        "c.csv": table(["holds"], [0.001], [False], kind="observation"),
    }
    out = page_verdicts(tables)
    # family: 0.04, 0.03, 0.5 (the primary claim and the observation stay out): Holm 0.09, 0.09, 0.5
    assert out["a.csv"]["verdict"].tolist() == ["holds", "undetermined"]
    assert out["a.csv"]["p_holm"].iloc[1] == pytest.approx(0.09) and pd.isna(out["a.csv"]["p_holm"].iloc[0])
    assert out["b.csv"]["p_holm"].tolist() == pytest.approx([0.09, 0.5])
    assert out["b.csv"]["verdict"].tolist() == ["undetermined", "undetermined"]
    assert out["c.csv"]["verdict"].tolist() == ["holds"] and pd.isna(out["c.csv"]["p_holm"].iloc[0])


def test_exact_sides_make_an_analytic_claim():
    agg = pd.DataFrame(
        {
            "dataset": "toy",
            "method": ["A", "B"],
            "metric": "loss",
            "mean": [1.0, 2.0],
            "std": 0.0,
            "n": math.inf,
        }
    )
    row = check_claims([Claim("A is lower", "loss", "A", "<", "B", source='§1: "A is lower"')], agg).iloc[0]
    assert row["kind"] == "analytic" and row["result"] == "holds"


def test_the_packages_observations_are_marked():
    assert Claim("x", "var", "A", "<", "B", source=f"{OBSERVATION}: a control").kind == "observation"
    assert Claim("x", "var", "A", "<", "B", source='§5: "A is fairer"').kind == "paper"


def test_a_claims_caption_states_the_rule_and_smoke_decides_nothing():
    from fairfl_core.report.claims import MIN_SEEDS, RULE, claims_caption

    quick = claims_caption("FedEBA+ Table 1 claims", "quick")
    assert quick == f"FedEBA+ Table 1 claims (quick profile; {RULE})"
    assert f"{MIN_SEEDS} seeds a side" in RULE and "paired t" in RULE and "Holm" in RULE
    assert claims_caption("x", "smoke").endswith("; smoke checks the pipeline and decides no claim)")


def test_save_claims_decides_the_page_and_keeps_each_caption(tmp_path, agg3):
    from fairfl_core.report.claims import save_claims

    accuracy = check_claims([Claim("more accurate", "global_acc", "FedProx", ">", "FedAvg")], agg3)
    variance = check_claims([Claim("lower variance", "var", "FedProx", "<", "FedAvg")], agg3)
    save_claims(accuracy, tmp_path, "claims_a", caption="A's claims")
    written = save_claims(variance, tmp_path, "claims_b", caption="B's claims")
    # the page's family: the accuracy claim (p 0, exact per-seed differences) and the variance claim (p of a
    # paired t(2) on −375, −150, −243.75): Holm multiplies the larger by 1, the smaller by 2
    p_var = float(variance["p"].iloc[0])
    assert written["p_holm"].iloc[0] == pytest.approx(round(p_var, 6))
    a = pd.read_csv(tmp_path / "claims_a.csv")
    assert a["p_holm"].iloc[0] == 0.0 and a["verdict"].iloc[0] == "holds"
    assert list(a.columns[list(a.columns).index("result") + 1 :][:3]) == ["p_holm", "p_size_holm", "verdict"]
    assert (tmp_path / "claims_a.md").read_text().startswith("A's claims\n\n|")  # the caption kept
    assert (tmp_path / "claims_b.md").read_text().startswith("B's claims\n\n|")


def test_a_margin_without_its_source_is_refused():
    with pytest.raises(ValueError, match=r"tolerance=1 needs its tolerance_source"):
        Claim("close", "global_acc", "A", "≈", "B", tolerance=1.0)
    assert (
        Claim("close", "global_acc", "A", "≈", "B", tolerance=1.0, tolerance_source="ours").tolerance == 1.0
    )
