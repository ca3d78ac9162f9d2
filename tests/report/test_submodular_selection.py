"""Table I's training loss from a run's records, and the claims' wiring."""

import json

import pandas as pd
import pytest

from fairfl_core import report
from fairfl_core.experiments.profiles import get_experiment
from fairfl_core.report import submodular_selection as R
from fairfl_core.report.index import claim_outcome


def test_train_loss_is_the_mean_of_the_last_rounds(tmp_path):
    losses = [2.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1]
    (tmp_path / "rounds.jsonl").write_text(
        "".join(
            json.dumps({"round": r, "diagnostics": {"train_loss": x}}) + "\n" for r, x in enumerate(losses)
        )
    )
    out = R.with_train_loss(pd.DataFrame({"path": [str(tmp_path)]}))
    assert out["train_loss"].iloc[0] == pytest.approx((0.5 + 0.4 + 0.3 + 0.2 + 0.1) / 5)


def test_table1_claims_compare_subtrunc_with_every_other_selector():
    experiment = get_experiment("submodular_table1_mnist")
    claims = R.table1_claims(experiment, pd.DataFrame())
    row = report.paper_rows(experiment)
    s = row["SubTrunc"]  # SubTrunc (λ=0.95, averaged G) on MNIST
    lower = [(c.method, c.than) for c in claims if c.metric == "std" and c.method == s]
    assert lower == [(s, row[r]) for r in ("DivFL", "Random", "Power-of-Choice", "UnionFL")]
    assert all(c.op == ">=" for c in claims if c.metric == "global_acc")
    assert all(c.source.startswith('§V-A: "') for c in claims)
    assert len({(c.method, c.metric, c.than) for c in claims}) == len(claims)  # each claim once


def test_sweep_claims_pick_the_extremes_by_value_not_by_position():
    experiment = get_experiment("submodular_table2_mnist")
    (lam,) = R.lambda_claims(experiment, pd.DataFrame())
    assert (lam.method, lam.than) == ("SubTrunc (λ=0.95, averaged G)", "SubTrunc (λ=0.01, averaged G)")
    ran = pd.DataFrame({"method": ["SubTrunc (λ=0.1, averaged G)", "SubTrunc (λ=0.5, averaged G)"]})
    (lam,) = R.lambda_claims(experiment, ran)  # only the λ values run
    assert (lam.method, lam.than) == ("SubTrunc (λ=0.5, averaged G)", "SubTrunc (λ=0.1, averaged G)")
    window = R.window_claims(get_experiment("submodular_table3_mnist"), pd.DataFrame())
    assert {(c.method, c.than) for c in window} == {("UnionFL (window=10)", "UnionFL (window=2)")}


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
