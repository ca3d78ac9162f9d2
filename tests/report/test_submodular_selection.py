"""Table I's training loss and its curve from a run's records, and the claims: each quoted or an observation,
each once, the other readings and a shared stand-in as variants, identical selections never counted."""

import json
import math

import pandas as pd
import pytest

from fairfl_core import report
from fairfl_core.data import stand_ins
from fairfl_core.experiments.profiles import get_experiment
from fairfl_core.report import submodular_selection as R
from fairfl_core.report.bundle import NOT_RUN
from fairfl_core.report.claims import OBSERVATION, STAND_IN_EFFECT
from fairfl_core.report.index import claim_counts, claim_outcome


def test_train_loss_is_the_mean_of_the_last_rounds(tmp_path):
    losses = [2.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1]
    (tmp_path / "rounds.jsonl").write_text(
        "".join(
            json.dumps({"round": r, "diagnostics": {"train_loss": x}}) + "\n" for r, x in enumerate(losses)
        )
    )
    out = R.with_train_loss(pd.DataFrame({"path": [str(tmp_path)]}))
    assert out["train_loss"].iloc[0] == pytest.approx((0.5 + 0.4 + 0.3 + 0.2 + 0.1) / 5)
    assert out["ln_loss_auc"].iloc[0] == pytest.approx(math.log(4.5 / 7))  # the whole curve's mean, ln


def test_table1_claims_compare_subtrunc_and_unionfl_with_every_baseline_once():
    experiment = get_experiment("submodular_table1_mnist")
    claims = R.table1_claims(experiment, pd.DataFrame())
    row = report.paper_rows(experiment)
    s, u = row["SubTrunc"], row["UnionFL"]  # SubTrunc (λ=0.95, averaged G) on MNIST
    base = [row[r] for r in ("DivFL", "Random", "Power-of-Choice")]
    lower = [(c.method, c.than) for c in claims if c.metric == "std"]
    assert lower == [(s, b) for b in base] + [(u, b) for b in base] + [(s, u)]
    for metric, op in (("ln_loss_auc", "≈"), ("global_acc", ">=")):
        pairs = [(c.method, c.than) for c in claims if c.metric == metric]
        assert pairs == [(s, b) for b in base] + [(u, b) for b in base]
        assert {c.op for c in claims if c.metric == metric} == {op}
    assert len(claims) == 19 and {c.kind for c in claims} == {"paper"}
    assert all(c.source.startswith('§V-A (Table I): "') for c in claims)
    assert {c.dataset for c in claims} == {"MNIST"}  # not run: read in the paper's own column


def test_a_similar_rate_is_the_largest_training_loss_ratio_table_i_calls_similar():
    factor, pair = R.similar_loss_factor()
    assert factor == pytest.approx(0.21 / 0.16) and pair == "SubTrunc 0.21 against DivFL 0.16, MNIST"
    claims = R.table1_claims(get_experiment("submodular_table1_cifar10"), pd.DataFrame())
    rate = [c for c in claims if c.metric == "ln_loss_auc"]
    assert len(rate) == 6 and all(c.tolerance == pytest.approx(math.log(1.3125)) for c in rate)
    assert all("as evidenced by their training loss" in c.source for c in rate)
    assert {c.dataset for c in claims} == {"CIFAR-10"}


def test_subtrunc_claims_on_the_other_readings_runs_are_observations():
    experiment = get_experiment("submodular_table1_mnist")
    labels = [m.label for m in experiment.method_list()] + ["SubTrunc (λ=0.95, normalised G)"]
    runs = pd.DataFrame({"method": labels, "dataset": "MNIST", "data": "mnist"})
    claims = R.table1_claims(experiment, runs)
    paper = [c for c in claims if c.kind == "paper"]
    assert len(paper) == 19 and all(c.dataset is None for c in paper)
    for reading in ("literal", "normalised"):
        variants = [c for c in claims if c.method == f"SubTrunc (λ=0.95, {reading} G)"]
        assert len(variants) == 10  # SubTrunc's 4 dissimilarity, 3 rate and 3 accuracy claims
        assert all(c.kind == "observation" and c.text.endswith(f"(variant: {reading} G)") for c in variants)
        assert all(
            f"variant: {reading} G" in c.source and "The paper's claim: §V-A" in c.source for c in variants
        )
    only_literal = runs[runs["method"] != "SubTrunc (λ=0.95, normalised G)"]
    assert len(R.table1_claims(experiment, only_literal)) == 29  # a reading that did not run has no rows


def test_sweep_claims_pick_the_extremes_by_value_not_by_position():
    experiment = get_experiment("submodular_table2_mnist")
    for runs in (pd.DataFrame(), pd.DataFrame({"method": []})):  # not run (Paper.check passes no methods)
        claims = R.lambda_claims(experiment, runs)
        assert [(c.metric, c.op) for c in claims] == [("std", "<"), ("global_acc", ">=")]
        assert {(c.method, c.than) for c in claims} == {
            ("SubTrunc (λ=0.95, averaged G)", "SubTrunc (λ=0.01, averaged G)")
        }
    ran = pd.DataFrame({"method": ["SubTrunc (λ=0.1, averaged G)", "SubTrunc (λ=0.5, averaged G)"]})
    lam = R.lambda_claims(experiment, ran)  # only the λ values run
    assert {(c.method, c.than) for c in lam} == {
        ("SubTrunc (λ=0.5, averaged G)", "SubTrunc (λ=0.1, averaged G)")
    }
    window = R.window_claims(get_experiment("submodular_table3_mnist"), pd.DataFrame())
    assert {(c.method, c.than) for c in window} == {("UnionFL (window=10)", "UnionFL (window=2)")}


def test_the_lambda_claims_of_the_other_reading_are_observations():
    experiment = get_experiment("submodular_table2_mnist")
    runs = pd.DataFrame(
        {"method": [f"SubTrunc (λ={x}, {r} G)" for r in ("averaged", "literal") for x in (0.01, 0.95)]}
    )
    claims = R.lambda_claims(experiment, runs)
    assert [(c.kind, c.method) for c in claims] == [
        ("paper", "SubTrunc (λ=0.95, averaged G)"),
        ("paper", "SubTrunc (λ=0.95, averaged G)"),
        ("observation", "SubTrunc (λ=0.95, literal G)"),
        ("observation", "SubTrunc (λ=0.95, literal G)"),
    ]
    assert claims[0].source.startswith('§V-B (Table II): "as the values for λ get closer to zero')
    assert claims[1].source.startswith('§V-B (Table II): "while still maintaining a comparable testing')


PLACES = ('§V-A (Table I): "', '§V-B (Table II): "', '§V-B (Table III): "', '§V-C (Table IV): "')


@pytest.mark.parametrize("name", R.BUNDLE.experiments)
@pytest.mark.parametrize("ran", [False, True])
def test_every_claim_is_quoted_with_its_place_or_an_observation_and_each_paper_claim_once(name, ran):
    experiment = get_experiment(name)
    labels = [m.label for m in experiment.method_list()]
    if name.startswith("submodular_table1_"):
        labels.append(R._relabel(report.paper_rows(experiment)["SubTrunc"], "normalised"))
    runs = pd.DataFrame({"method": labels, "dataset": "d", "data": "mnist"}) if ran else pd.DataFrame()
    claims = R.BUNDLE.claims(experiment, runs)
    assert claims
    for c in claims:
        quoted = c.source.startswith(PLACES) and c.source.count('"') >= 2
        assert quoted or c.source.startswith(OBSERVATION), c.source
        assert quoted == (c.kind == "paper")
    paper = [(c.text, c.dataset) for c in claims if c.kind == "paper"]
    assert len(set(paper)) == len(paper)  # no two paper claims of one experiment share text and dataset
    assert len({(c.method, c.metric, c.op, c.than) for c in claims}) == len(claims)  # no row twice


def test_the_quotes_are_the_papers_words():
    assert "Increasing the window size results in model’s that perform better" in R.S_WINDOW  # as printed
    assert R.S_PHI.startswith('§V-C (Table IV): "This new function was able to produce lower client')
    assert R.S_LOWEST.endswith(
        '"with SubTrunc being able to consistently achieve the lowest score among all methods"'
    )


@pytest.mark.parametrize("mnist_here", [False, True])
def test_a_cifar_column_on_the_mnist_columns_stand_in_gives_observations(mnist_here):
    experiment = get_experiment("submodular_table4_cifar10")
    runs = pd.DataFrame(
        {
            "method": [m.label for m in experiment.method_list()],
            "dataset": "fashion_mnist (stand-in for CIFAR-10)",
            "data": "fashion_mnist",
        }
    )
    mnist = get_experiment("submodular_table4_mnist")
    mnist_runs = runs.assign(method=[m.label for m in mnist.method_list()])
    with stand_ins.assume("mnist", mnist_here), stand_ins.assume("cifar10", False):
        assert R.shares_stand_in(experiment, runs) is not mnist_here
        (claim,) = R.phi_claims(experiment, runs)
        (verdict,) = R.phi_claims(mnist, mnist_runs)
    if mnist_here:  # MNIST itself in the MNIST column: the CIFAR-10 column's stand-in is another data set
        assert claim.kind == "paper" and claim.source == R.S_PHI
    else:
        assert claim.kind == "observation" and "the verdict is the MNIST column's row" in claim.source
        assert claim.source.endswith(R.S_PHI)
    assert verdict.kind == "paper"  # the MNIST column gives the verdict


def _curves(acc):
    """Random's curves: ``acc[lr]`` lists the accuracy at rounds 50, 100, 150, 200 (two seeds, ±1)."""
    return pd.DataFrame(
        [
            {"lr": lr, "round": r, "seed": s, "global_acc": a + (1 if s else -1)}
            for lr, values in acc.items()
            for r, a in zip((50, 100, 150, 200), values, strict=True)
            for s in (0, 1)
        ]
    )


def test_calibration_takes_the_smallest_k_within_tolerance_at_the_default_lr():
    curves = _curves({0.01: [70.0, 80.5, 84.0, 86.0], 0.05: [83.0, 88.0, 90.0, 91.0]})
    cal = R.calibrate(curves, target=83.0, default_lr=0.01, rounds=(50, 100, 150, 200))
    # at η = 0.01: gaps 13, 2.5, 1, 3 -> K = 100 is the smallest within 3; η stays the default
    assert (cal.rounds, cal.lr, cal.accuracy, cal.within) == (100, 0.01, 80.5, True)


def test_calibration_tunes_lr_when_no_k_reaches_the_target():
    curves = _curves(
        {0.01: [60.0, 65.0, 70.0, 74.0], 0.02: [70.0, 76.0, 81.5, 85.0], 0.05: [75.0, 78.0, 86.5, 90.0]}
    )
    cal = R.calibrate(curves, target=83.0, default_lr=0.01, rounds=(50, 100, 150, 200))
    # no K within 3 at η = 0.01: K = 200 (gap 9); at K = 200 the gaps are 9, 2, 7 -> η = 0.02
    assert (cal.rounds, cal.lr, cal.accuracy, cal.within) == (200, 0.02, 85.0, True)
    far = R.calibrate(curves, target=99.0, default_lr=0.01, rounds=(50, 100, 150, 200))
    assert (far.rounds, far.lr, far.within) == (200, 0.05, False)


def test_calibration_reads_only_the_candidate_rounds_and_needs_them():
    curves = _curves({0.01: [70.0, 80.5, 84.0, 86.0]})
    assert R.calibrate(curves, 83.0, 0.01, rounds=(50,)).rounds == 50  # a short profile's one K
    with pytest.raises(ValueError, match="no evaluation at rounds \\[300\\]"):
        R.calibrate(curves, 83.0, 0.01, rounds=(100, 300))


def test_loss_curve_takes_the_loss_of_the_round_ending_at_each_evaluation(tmp_path):
    (tmp_path / "rounds.jsonl").write_text(
        "".join(json.dumps({"round": r, "diagnostics": {"train_loss": 1.0 / r}}) + "\n" for r in (1, 2, 3, 4))
    )
    curves = pd.DataFrame({"hash": ["h"] * 3, "round": [0, 2, 4], "global_acc": [10.0, 50.0, 70.0]})
    out = R.with_loss_curve(curves, pd.DataFrame({"hash": ["h"], "path": [str(tmp_path)]}))
    assert out["train_loss"].iloc[1:].tolist() == [0.5, 0.25] and pd.isna(out["train_loss"].iloc[0])


def _selections(path, rounds):
    path.mkdir()
    (path / "rounds.jsonl").write_text(
        "".join(json.dumps({"round": t + 1, "selected": s}) + "\n" for t, s in enumerate(rounds))
    )
    return str(path)


def test_selection_agreement_compares_each_round_with_the_reference_run_of_the_same_seed(tmp_path):
    ref = [[1, 2, 3, 4], [5, 6, 7, 8]]
    runs = pd.DataFrame(
        {
            "method": ["DivFL", "SubTrunc", "UnionFL", "DivFL", "UnionFL"],
            "seed": [0, 0, 0, 1, 1],
            "path": [
                _selections(tmp_path / "d0", ref),
                _selections(tmp_path / "s0", [[4, 3, 2, 1], [8, 7, 6, 5]]),  # same sets, another order
                _selections(tmp_path / "u0", [[1, 2, 3, 9], [9, 10, 11, 12]]),  # 3 of 4, then none
                _selections(tmp_path / "d1", [[1, 2, 3, 4]]),
                _selections(tmp_path / "u1", [[1, 2, 9, 10]]),
            ],
        }
    )
    out = R.selection_agreement(runs, "DivFL").set_index(["method", "seed"])
    assert out.loc[("SubTrunc", 0), "same_set"] == 100.0 and out.loc[("SubTrunc", 0), "overlap"] == 100.0
    assert out.loc[("UnionFL", 0), "same_set"] == 0.0 and out.loc[("UnionFL", 0), "overlap"] == 37.5
    assert out.loc[("UnionFL", 1), "overlap"] == 50.0 and out.loc[("DivFL", 1), "same_set"] == 100.0
    with pytest.raises(ValueError, match="no 'Random' run of seed 0"):
        R.selection_agreement(runs, "Random")


def _selection_runs(tmp_path, picks, diagnostics=None):
    """Runs whose rounds selected ``picks[(method, seed)]`` (one list of clients per round)."""
    rows = []
    for (method, seed), rounds in picks.items():
        path = tmp_path / f"{method}-{seed}"
        path.mkdir()
        extra = (diagnostics or {}).get(method, {})
        (path / "rounds.jsonl").write_text(
            "".join(
                json.dumps({"round": r, "selected": s, "diagnostics": {"train_loss": 0.1, **extra}}) + "\n"
                for r, s in enumerate(rounds)
            )
        )
        rows.append({"method": method, "seed": seed, "path": str(path)})
    return pd.DataFrame(rows)


def test_claims_between_runs_with_the_same_picks_in_every_round_are_marked(tmp_path):
    runs = _selection_runs(
        tmp_path,
        {
            ("A", 0): [[1, 2], [3, 4]],
            ("B", 0): [[2, 1], [4, 3]],  # the same sets as A
            ("C", 0): [[1, 2], [3, 5]],  # differs in round 1
            ("A", 1): [[5, 6]],
            ("B", 1): [[6, 5]],
        },
    )
    claims = pd.DataFrame(
        {"method": ["A", "C", "A"], "than": ["B", "A", "paper"], "result": ["holds", "holds", "fails"]}
    )
    out = R.mark_identical_selections(claims, runs)
    assert out["identical_selections"].tolist() == [True, False, False]
    assert out["result"].tolist() == [R.IDENTICAL, "holds", "fails"]
    assert claim_outcome(R.IDENTICAL) == "not checked"


def test_the_lambda_sweep_gives_each_readings_trend_and_how_often_it_left_divfl(tmp_path):
    experiment = get_experiment("submodular_table2_mnist")
    labels = {
        (0.01, "averaged"): "SubTrunc (λ=0.01, averaged G)",
        (0.95, "averaged"): "SubTrunc (λ=0.95, averaged G)",
        (0.01, "literal"): "SubTrunc (λ=0.01, literal G)",
        (0.95, "literal"): "SubTrunc (λ=0.95, literal G)",
    }
    picks = {(label, seed): [[0], [1]] for label in labels.values() for seed in (0, 1, 2)}
    diag = {
        label: {"differs_from_divfl": lam == 0.95 and r == "averaged"} for (lam, r), label in labels.items()
    }
    runs = _selection_runs(tmp_path, picks, diag)
    # averaged: dissimilarity 10 ± 0.5 at λ = 0.01 falls to 8 ± 0.5 at 0.95; literal: flat (9 at both)
    std = {labels[(0.01, "averaged")]: 10.0, labels[(0.95, "averaged")]: 8.0}
    runs["std"] = [
        std.get(m, 9.0) + 0.5 * (s - 1) * (m in std)
        for m, s in zip(runs["method"], runs["seed"], strict=True)
    ]
    runs["global_acc"] = 80.0
    sweep = R.lambda_sweep(experiment, runs).set_index("method")
    assert sweep.loc[labels[(0.95, "averaged")], "differs_from_divfl_%"] == 100.0
    assert sweep.loc[labels[(0.95, "literal")], "differs_from_divfl_%"] == 0.0
    by_reading = sweep.drop_duplicates("reading").set_index("reading")
    assert by_reading.loc["averaged", "std_change"] == pytest.approx(-2.0)
    assert by_reading.loc["averaged", "falls"] == "holds" and by_reading.loc["literal", "falls"] == "fails"


def test_the_claims_table_decides_on_seeds_marks_identical_runs_and_compares_directions_only(tmp_path):
    experiment = get_experiment("submodular_table1_mnist")
    row = report.paper_rows(experiment)
    literal = "SubTrunc (λ=0.95, literal G)"
    picks = {  # per method: the clients of its two rounds
        row["DivFL"]: [[1, 2], [3, 4]],
        literal: [[2, 1], [4, 3]],  # DivFL's clients: the literal reading's run is DivFL's
        row["SubTrunc"]: [[1, 5], [3, 4]],
        row["UnionFL"]: [[7, 8], [9, 10]],
        row["Random"]: [[8, 7], [10, 9]],  # UnionFL's clients: their claims are not evidence
        row["Power-of-Choice"]: [[11, 12], [13, 14]],
    }
    losses = {row["Power-of-Choice"]: {"train_loss": 0.2}}  # every other run: 0.1 in every round
    runs = _selection_runs(tmp_path, {(m, s): p for m, p in picks.items() for s in (0, 1, 2)}, losses)
    std = {row["DivFL"]: 11, literal: 11, row["SubTrunc"]: 8, row["UnionFL"]: 10, row["Random"]: 13,
           row["Power-of-Choice"]: 12}  # fmt: skip
    runs = R.with_train_loss(runs).assign(
        std=[std[m] + s - 1 for m, s in zip(runs["method"], runs["seed"], strict=True)],
        global_acc=[80.0 + s - 1 for s in runs["seed"]],
        dataset="fashion_mnist (stand-in for MNIST)",
        data="fashion_mnist",
        stand_in="MNIST",
        status="done",
    )
    agg = report.aggregate(runs, metrics=R.CLAIM_METRICS)
    table = R.claims_table(experiment.name, runs, agg, report.experiment_paper_values(experiment, runs))
    assert len(table) == 19 + 10 and (table["experiment"] == experiment.name).all()
    paper = table[table["kind"] == "paper"].set_index("claim")
    # std ±1 over 3 seeds a side: SE = √(2/3) = 0.816, df 4, t = 2.776: |d| > 2.27 decides
    assert paper.loc["SubTrunc has a lower client dissimilarity than DivFL", "result"] == "holds"  # d = −3
    assert paper.loc["UnionFL has a lower client dissimilarity than DivFL", "result"] == "within noise"
    assert paper.loc["UnionFL has a lower client dissimilarity than Random", "result"] == R.IDENTICAL
    # the rate: |ln 0.1 − ln 0.1| = 0 ≤ ln 1.3125; |ln 0.1 − ln 0.2| = 0.69 > 0.27 (equal seeds: the sign)
    assert paper.loc["SubTrunc's training loss falls at a similar rate to DivFL's", "result"] == "holds"
    poc = "SubTrunc's training loss falls at a similar rate to Power-of-Choice's"
    assert paper.loc[poc, "result"] == "fails"
    variant = table[table["method"] == literal]
    assert (variant["kind"] == "observation").all() and len(variant) == 10
    assert (variant["result"] == R.IDENTICAL).sum() == 3  # against DivFL: its dissimilarity, rate, accuracy
    # the headline: the 19 paper claims, the 3 of identical runs not checked, the observations not at all
    assert claim_counts(table) == {
        "holds": 6, "within noise": 8, "fails": 2, "not decided": 0, "not checked": 3
    }  # fmt: skip
    assert (table["interval_holds_paper_effect"] == STAND_IN_EFFECT).all()  # a stand-in: directions only
    printed = paper["holds_in_paper"]
    assert printed["SubTrunc has a lower client dissimilarity than DivFL"] == "holds"  # 7.96 < 8.89
    assert printed["UnionFL has a lower client dissimilarity than Power-of-Choice"] == "fails"  # 8.59, 8.59
    assert printed["SubTrunc's training loss falls at a similar rate to DivFL's"] == "n/a"  # no curve printed


def test_a_table_that_did_not_run_lists_its_claims_with_the_papers_verdict_in_its_own_column():
    window = R.claims_table("submodular_table3_cifar10", None).set_index("claim")
    assert (window["result"] == NOT_RUN).all() and not window["identical_selections"].any()
    assert (window["dataset"] == "CIFAR-10").all()
    # CIFAR-10: 35.86 > 35.62 holds, 12.56 < 12.51 fails (MNIST's 8.52 < 8.77 would hold)
    assert window["holds_in_paper"].to_dict() == {
        "a longer window raises the accuracy": "holds",
        "a longer window lowers the dissimilarity": "fails",
    }
    assert claim_counts(window.reset_index())["not checked"] == 2  # shown, never counted
