"""Table I's training loss and its curve from a run's records, and the claims: each quoted or an observation,
each once and on its own evidence, the abstract's primary, margins from the paper's tables, the other readings
as variants, the stand-ins not checked, identical selections never counted."""

import json
import math

import pandas as pd
import pytest

from fairfl_core import report
from fairfl_core.experiments.profiles import get_experiment
from fairfl_core.papers.submodular_selection import claims as R
from fairfl_core.report.bundle import NOT_RUN
from fairfl_core.report.claims import NOT_CHECKED_OFFLINE, OBSERVATION, STAND_IN_EFFECT
from fairfl_core.report.index import claim_counts, claim_outcome
from fairfl_core.report.stats import VERDICTS


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
    # primary: the six "outperform the baselines" claims, which the abstract states
    assert [(c.method, c.than) for c in claims if c.primary] == lower[:6]
    assert all('Abstract: "revealing significant improvements in fairness' in c.source for c in claims[:6])
    # "comparable" accuracy: not lower by more than the baseline's seed std printed in Table I (MNIST)
    accuracy = {c.than: c for c in claims if c.metric == "global_acc" and c.method == s}
    assert {b: accuracy[b].tolerance for b in base} == {base[0]: 0.91, base[1]: 0.99, base[2]: 1.97}
    assert accuracy[base[0]].tolerance_source == (
        "Table I's printed seed std of DivFL's testing accuracy, MNIST (82.16 ± 0.91)"
    )


def test_a_similar_rate_is_the_largest_training_loss_ratio_table_i_calls_similar():
    factor, pair = R.similar_loss_factor()
    assert factor == pytest.approx(0.21 / 0.16) and pair == "SubTrunc 0.21 against DivFL 0.16, MNIST"
    claims = R.table1_claims(get_experiment("submodular_table1_cifar10"), pd.DataFrame())
    rate = [c for c in claims if c.metric == "ln_loss_auc"]
    assert len(rate) == 6 and all(c.tolerance == pytest.approx(math.log(1.3125)) for c in rate)
    assert all("as evidenced by their training loss" in c.source for c in rate)
    assert all("SubTrunc 0.21 against DivFL 0.16, MNIST: a factor 1.31" in c.tolerance_source for c in rate)
    accuracy = [c.tolerance for c in claims if c.metric == "global_acc"]
    assert accuracy == [1.28, 0.94, 0.65] * 2  # CIFAR-10's printed stds of DivFL, Random, Power-of-Choice
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
        assert not any(c.primary for c in variants)  # the default reading's rows are the primary ones
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
        assert claims[1].tolerance == 0.99  # Table II's printed seed std at λ = 0.01 (82.18 ± 0.99)
    ran = pd.DataFrame({"method": ["SubTrunc (λ=0.1, averaged G)", "SubTrunc (λ=0.5, averaged G)"]})
    lam = R.lambda_claims(experiment, ran)  # only the λ values run
    assert {(c.method, c.than) for c in lam} == {
        ("SubTrunc (λ=0.5, averaged G)", "SubTrunc (λ=0.1, averaged G)")
    }
    assert lam[1].tolerance == 1.04 and "(83.13 ± 1.04)" in lam[1].tolerance_source  # at λ = 0.10
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
        assert bool(c.tolerance) == bool(c.tolerance_source)  # every margin says where it comes from
        assert c.primary == (c.kind == "paper" and c.source == R.S_BASELINES)
    paper = [(c.text, c.dataset) for c in claims if c.kind == "paper"]
    assert len(set(paper)) == len(paper)  # no two paper claims of one experiment share text and dataset
    assert len({(c.method, c.metric, c.op, c.than) for c in claims}) == len(claims)  # no row twice


def test_the_quotes_are_the_papers_words():
    assert "Increasing the window size results in model’s that perform better" in R.S_WINDOW  # as printed
    assert R.S_PHI.startswith('§V-C (Table IV): "This new function was able to produce lower client')
    assert R.S_LOWEST.endswith(
        '"with SubTrunc being able to consistently achieve the lowest score among all methods"'
    )
    assert R.S_BASELINES.endswith(
        'Abstract: "revealing significant improvements in fairness as measured by a client dissimilarity '
        'metric"'
    )


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
    """Runs whose rounds selected ``picks[(method, seed)]`` (one list of clients per round); ``diagnostics``:
    per method, what each round records (or a list, one record per round). The runs of one seed share data
    and model, so they carry the seed's pairing key, as ``report.load_runs`` gives them."""
    rows = []
    for (method, seed), rounds in picks.items():
        path = tmp_path / f"{method}-{seed}"
        path.mkdir(parents=True)
        extra = (diagnostics or {}).get(method, {})
        records = extra if isinstance(extra, list) else [extra] * len(rounds)
        (path / "rounds.jsonl").write_text(
            "".join(
                json.dumps({"round": r, "selected": s, "diagnostics": {"train_loss": 0.1, **d}}) + "\n"
                for r, (s, d) in enumerate(zip(rounds, records, strict=True))
            )
        )
        rows.append({"method": method, "seed": seed, "path": str(path), "pairing": f"seed {seed}"})
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
        {
            "method": ["A", "C", "A", "A", "C"],
            "than": ["B", "A", "paper", "B", "A"],
            "result": ["holds", "holds", "fails", NOT_CHECKED_OFFLINE, NOT_CHECKED_OFFLINE],
            "stand_in_result": ["", "", "", "fails", "holds"],
        }
    )
    out = R.mark_identical_selections(claims, runs)
    assert out["identical_selections"].tolist() == [True, False, False, True, False]
    # a paper claim on a stand-in stays not checked; its direction on the stand-in is what is not evidence
    assert out["result"].tolist() == [R.IDENTICAL, "holds", "fails", NOT_CHECKED_OFFLINE, NOT_CHECKED_OFFLINE]
    assert out["stand_in_result"].tolist() == ["", "", "", R.IDENTICAL, "holds"]
    assert claim_outcome(R.IDENTICAL) == "not checked"


def test_the_lambda_sweep_decides_each_readings_trend_on_paired_seeds(tmp_path):
    experiment = get_experiment("submodular_table2_mnist")
    labels = {
        (0.01, "averaged"): "SubTrunc (λ=0.01, averaged G)",
        (0.95, "averaged"): "SubTrunc (λ=0.95, averaged G)",
        (0.01, "literal"): "SubTrunc (λ=0.01, literal G)",
        (0.95, "literal"): "SubTrunc (λ=0.95, literal G)",
    }
    picks = {(label, seed): [[0], [lam == 0.95]] for (lam, _), label in labels.items() for seed in (0, 1, 2)}
    diag = {
        label: {"steered_steps": 2 * (lam == 0.95 and r == "averaged")} for (lam, r), label in labels.items()
    }
    runs = _selection_runs(tmp_path / "runs", picks, diag)
    std = {  # seeds 0, 1, 2: the seeds spread the values far more than λ moves them
        labels[(0.01, "averaged")]: [10.0, 14.0, 18.0],
        labels[(0.95, "averaged")]: [9.0, 13.0, 17.5],  # per seed −1, −1, −0.5
        labels[(0.01, "literal")]: [10.0, 14.0, 18.0],
        labels[(0.95, "literal")]: [11.0, 15.0, 18.5],  # per seed +1, +1, +0.5
    }
    runs["std"] = [std[m][s] for m, s in zip(runs["method"], runs["seed"], strict=True)]
    runs["global_acc"] = 80.0
    sweep = R.lambda_sweep(experiment, runs).set_index("method")
    assert sweep.loc[labels[(0.95, "averaged")], "steered_%"] == 100.0
    assert sweep.loc[labels[(0.95, "literal")], "steered_%"] == 0.0
    by_reading = sweep.drop_duplicates("reading").set_index("reading")
    assert by_reading.loc["averaged", "std_change"] == pytest.approx(13.5 - 14 - 1 / 3)  # 13.17 − 14
    # paired: per-seed d mean −0.833, sd 0.289, SE 0.167, t(2) = −5.0, p = 0.038 < 0.05: it falls; the
    # literal reading's +0.833 rises (t = +5.0: fails)
    assert by_reading.loc["averaged", "falls"] == "holds" and by_reading.loc["literal", "falls"] == "fails"
    assert by_reading["test"].str.startswith("paired t(2)").all()
    # without the pairing (other data or model per seed): Welch, SE = √(16/3 + 18.08/3) = 3.37, t = −0.25
    welch = R.lambda_sweep(experiment, runs.drop(columns="pairing")).drop_duplicates("reading")
    assert welch["falls"].tolist() == ["undetermined"] * 2 and welch["test"].str.startswith("Welch").all()
    # the same clients at both ends in every round: the same run, whatever its numbers
    same = _selection_runs(tmp_path / "same", {k: [[0], [1]] for k in picks}, diag).assign(
        std=runs["std"], global_acc=80.0
    )
    assert (R.lambda_sweep(experiment, same)["falls"] == R.IDENTICAL).all()


def _table1(tmp_path, stand_in: bool):
    """Table I's claims table on three paired seeds of hand-made runs (every std per seed below), on the MNIST
    column itself or on its Fashion-MNIST stand-in."""
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
    methods = (row["DivFL"], literal, row["SubTrunc"], row["UnionFL"], row["Random"], row["Power-of-Choice"])
    loss = dict(zip(methods, (0.1, 0.1, 0.11, 0.12, 0.13, 0.2), strict=True))  # in every round
    accuracy = dict(zip(methods, (80.0, 80.0, 80.5, 80.25, 80.1, 79.5), strict=True))  # + seed − 1
    runs = _selection_runs(
        tmp_path,
        {(m, s): p for m, p in picks.items() for s in (0, 1, 2)},
        {m: {"train_loss": x} for m, x in loss.items()},
    )
    std = {
        row["DivFL"]: [11.0, 12.0, 13.0],
        literal: [11.0, 12.0, 13.0],
        row["SubTrunc"]: [8.0, 9.5, 10.0],
        row["UnionFL"]: [10.5, 12.0, 12.5],
        row["Random"]: [8.4, 10.1, 10.4],
        row["Power-of-Choice"]: [12.0, 13.0, 14.5],
    }
    data = (
        {"dataset": "fashion_mnist (stand-in for MNIST)", "data": "fashion_mnist", "stand_in": "MNIST"}
        if stand_in
        else {"dataset": "MNIST", "data": "mnist", "stand_in": None}
    )
    runs = R.with_train_loss(runs).assign(
        std=[std[m][s] for m, s in zip(runs["method"], runs["seed"], strict=True)],
        global_acc=[accuracy[m] + s - 1 for m, s in zip(runs["method"], runs["seed"], strict=True)],
        status="done",
        rounds=2,
        **{"config.model.name": "lenet5_mnist"},
        **data,
    )
    agg = report.aggregate(runs, metrics=R.CLAIM_METRICS)
    return R.claims_table(experiment.name, runs, agg, report.experiment_paper_values(experiment, runs))


LOWER = "{} has a lower client dissimilarity than {}"


def test_the_claims_table_decides_on_paired_seeds_against_the_papers_size_and_marks_identical_runs(tmp_path):
    table = _table1(tmp_path, stand_in=False)
    assert len(table) == 19 + 10 and (table["experiment"] == "submodular_table1_mnist").all()
    paper = table[table["kind"] == "paper"].set_index("claim")
    std = paper[paper["metric"] == "std"]
    assert std["test"].str.startswith(("paired t(2)", "paired, equal per-seed contrasts")).all()
    # the paper's size of d: Table I's printed MNIST difference (SubTrunc 7.96, UnionFL 8.59, DivFL 8.89,
    # Random 9.16, Power-of-Choice 8.59); t(2) at 95 %: 4.303
    st_divfl = std.loc[LOWER.format("SubTrunc", "DivFL")]
    # d per seed −3, −2.5, −3: mean −2.833, SE 0.167, interval ±0.717; beyond the paper's −0.93: holds
    assert st_divfl["difference"] == pytest.approx(-17 / 6) and st_divfl["se"] == pytest.approx(1 / 6)
    assert st_divfl["interval_low"] == pytest.approx(-17 / 6 - 4.3027 / 6, abs=1e-3)
    assert st_divfl["paper_effect"] == pytest.approx(-0.93) and st_divfl["result"] == "holds"
    # d per seed −0.4, −0.6, −0.4: mean −0.467, SE 0.0667, t = −7.0 (p 0.020); against −1.20: t = 11.0
    # (p 0.008), the paper's size excluded and not reached
    assert std.loc[LOWER.format("SubTrunc", "Random"), "result"] == "smaller than the paper's"
    # d per seed −0.5, 0, −0.5: mean −0.333, SE 0.167, t = −2.0 (p 0.18); the paper's −0.30 inside: at the
    # observed spread 6 seeds a side would exclude 0 (t(5)·0.167·√(3/6) = 0.303 < 0.333)
    un_divfl = std.loc[LOWER.format("UnionFL", "DivFL")]
    assert un_divfl["result"] == "undetermined" and un_divfl["seeds_to_decide"] == 6
    # d per seed −1.5, −1, −2: t = −5.20 (p 0.035); the paper's size is 0 (8.59 against 8.59), exceeded
    un_poc = std.loc[LOWER.format("UnionFL", "Power-of-Choice")]
    assert un_poc["result"] == "holds" and un_poc["holds_in_paper"] == "fails"
    st_un = std.loc[LOWER.format("SubTrunc", "UnionFL")]  # −2.5 in every seed: no spread, the sign decides
    assert st_un["test"].startswith("paired, equal per-seed contrasts") and st_un["result"] == "holds"
    assert std.loc[LOWER.format("UnionFL", "Random"), "result"] == R.IDENTICAL
    # the rate, in every seed: |ln 0.11 − ln 0.1| = 0.10 ≤ ln 1.3125 = 0.27; |ln 0.11 − ln 0.2| = 0.60 > 0.27
    assert paper.loc["SubTrunc's training loss falls at a similar rate to DivFL's", "result"] == "holds"
    poc = "SubTrunc's training loss falls at a similar rate to Power-of-Choice's"
    assert paper.loc[poc, "result"] == "fails"
    # accuracy: the same d in every seed (+0.5 against DivFL, +1 against Power-of-Choice, ...), never below
    # −margin (DivFL's printed 0.91): comparable
    assert paper.loc["SubTrunc's accuracy is comparable to DivFL's", "result"] == "holds"
    assert paper.loc["SubTrunc's accuracy is comparable to DivFL's", "margin"] == 0.91
    assert paper["primary"].sum() == 6
    assert (paper["rounds_share"] == 0.02).all() and (paper["data"] == "real").all()  # 2 of 100 rounds
    variant = table[table["method"] == "SubTrunc (λ=0.95, literal G)"]
    assert (variant["kind"] == "observation").all() and len(variant) == 10
    assert (variant["result"] == R.IDENTICAL).sum() == 3  # against DivFL: its dissimilarity, rate, accuracy
    # the headline: the 19 paper claims, the 3 of identical runs not checked, the observations not at all
    assert claim_counts(table) == {
        "holds": 12, "smaller than the paper's": 1, "not reproduced at the paper's size": 0,
        "undetermined": 1, "fails": 2, "not decided": 0, "not checked": 3,
    }  # fmt: skip
    printed = paper["holds_in_paper"]
    assert printed[LOWER.format("SubTrunc", "DivFL")] == "holds"  # 7.96 < 8.89
    assert printed["SubTrunc's training loss falls at a similar rate to DivFL's"] == "n/a"  # no curve printed


def test_on_the_stand_in_the_papers_claims_are_decided_on_direction_only(tmp_path):
    table = _table1(tmp_path, stand_in=True)
    paper = table[table["kind"] == "paper"].set_index("claim")
    assert len(paper) == 19 and (paper["stand_in_result"] == "").all()
    assert (paper["data"] == "stand-in for MNIST").all() and paper["primary"].sum() == 6
    assert (paper.loc[paper["metric"] == "std", "size_source"] == STAND_IN_EFFECT).all()
    direction = paper["result"]
    # the numbers of the MNIST test, on direction only: SubTrunc against Random holds (no size to miss)
    assert direction[LOWER.format("SubTrunc", "Random")] == "holds"
    assert direction[LOWER.format("UnionFL", "DivFL")] == "undetermined"
    assert direction[LOWER.format("UnionFL", "Random")] == R.IDENTICAL  # the same runs: not evidence
    # indicative verdicts (the data column says stand-in); the identical selections are no evidence
    assert claim_counts(table)["not checked"] == (direction == R.IDENTICAL).sum() == 3
    variant = table[table["method"] == "SubTrunc (λ=0.95, literal G)"]  # observations: decided, not counted
    assert (variant["result"] == R.IDENTICAL).sum() == 3 and (variant["stand_in_result"] == "").all()


def test_a_cifar_column_on_the_stand_in_keeps_the_papers_claims_decided_paired(tmp_path):
    experiment = get_experiment("submodular_table4_cifar10")
    row = report.paper_rows(experiment)
    identity, ln = row["Identity"], row["ln(1+x)"]
    runs = _selection_runs(tmp_path, {(m, s): [[s, m == ln]] for m in (identity, ln) for s in (0, 1, 2)})
    std = {identity: [12.0, 13.0, 14.2], ln: [12.5, 13.5, 14.5]}  # per seed −0.5, −0.5, −0.3
    runs = R.with_train_loss(runs).assign(
        std=[std[m][s] for m, s in zip(runs["method"], runs["seed"], strict=True)],
        global_acc=30.0,
        status="done",
        dataset="fashion_mnist (stand-in for CIFAR-10)",
        data="fashion_mnist",
        stand_in="CIFAR-10",
    )
    paper = report.experiment_paper_values(experiment, runs)
    (claim,) = R.claims_table(experiment.name, runs, report.aggregate(runs, R.CLAIM_METRICS), paper).to_dict(
        "records"
    )
    assert claim["kind"] == "paper" and claim["source"] == R.S_PHI  # not the MNIST column's observation
    assert claim["result"] == NOT_CHECKED_OFFLINE
    # paired: d mean −0.433, sd 0.115, SE 0.0667, t(2) = −6.5, p = 0.023: the direction holds on the stand-in
    assert claim["stand_in_result"] == "holds" and claim["test"].startswith("paired t(2)")
    unpaired = runs.drop(columns="pairing")  # Welch: SE = √(1.213/3 + 1/3) = 0.859, t = −0.50
    (welch,) = R.claims_table(
        experiment.name, unpaired, report.aggregate(unpaired, R.CLAIM_METRICS), paper
    ).to_dict("records")
    assert welch["stand_in_result"] == "undetermined" and welch["test"].startswith("Welch")


def _table2(tmp_path, name, lambda_001_is_divfl=True):
    """Table II's λ = 0.01 and 0.95 runs (averaged G) on MNIST: λ = 0.01 with DivFL's picks and values,
    recording no steered greedy step in any round unless ``lambda_001_is_divfl`` is False (then one in its
    last round); λ = 0.95 with Table I's SubTrunc values (:func:`_table1`)."""
    small, large = "SubTrunc (λ=0.01, averaged G)", "SubTrunc (λ=0.95, averaged G)"
    flags = {
        small: [{"steered_steps": 0}, {"steered_steps": int(not lambda_001_is_divfl)}],
        large: [{"steered_steps": 3}, {"steered_steps": 0}],
    }
    picks = {(small, s): [[1, 2], [3, 4]] for s in (0, 1, 2)} | {
        (large, s): [[1, 5], [3, 4]] for s in (0, 1, 2)
    }
    runs = _selection_runs(tmp_path / name, picks, flags)
    std = {small: [11.0, 12.0, 13.0], large: [8.0, 9.5, 10.0]}
    accuracy = {small: 80.0, large: 80.5}
    return R.with_train_loss(runs).assign(
        std=[std[m][s] for m, s in zip(runs["method"], runs["seed"], strict=True)],
        global_acc=[accuracy[m] + s - 1 for m, s in zip(runs["method"], runs["seed"], strict=True)],
        status="done",
        dataset="MNIST",
        data="mnist",
        stand_in=None,
    )


def test_table_iis_claims_on_divfls_runs_are_table_is_evidence_and_observations(tmp_path):
    mnist, cifar = get_experiment("submodular_table2_mnist"), get_experiment("submodular_table2_cifar10")
    runs = _table2(tmp_path, "t2")
    assert R.is_divfl(runs, "SubTrunc (λ=0.01, averaged G)")
    assert not R.is_divfl(runs, "SubTrunc (λ=0.95, averaged G)") and not R.is_divfl(runs, "DivFL")
    again = R.lambda_claims(mnist, runs)
    assert [c.kind for c in again] == ["observation"] * 2
    assert 'the same evidence as Table I\'s row "SubTrunc has a lower client dissimilarity than DivFL"' in (
        again[0].source
    )
    assert again[0].source.endswith(R.S_LAMBDA) and again[1].source.endswith(R.S_LAMBDA_ACCURACY)
    assert "row \"SubTrunc's accuracy is comparable to DivFL's\"" in again[1].source
    # λ = 0.01 picking another set in one round: its runs are its own, and the sentences the paper's claims
    assert [c.kind for c in R.lambda_claims(mnist, _table2(tmp_path, "t2b", False))] == ["paper"] * 2
    # the CIFAR-10 column's Table I runs λ = 0.50: its λ = 0.95 runs are not Table I's
    assert [c.kind for c in R.lambda_claims(cifar, runs)] == ["paper"] * 2
    # on one page: no two paper claims decided on the same runs and metric; the observation shows whose
    t1 = _table1(tmp_path, stand_in=False)
    t2 = R.claims_table(mnist.name, runs, report.aggregate(runs, R.CLAIM_METRICS))
    page = pd.concat([t1, t2], ignore_index=True)
    decided = page[(page["kind"] == "paper") & page["result"].isin(VERDICTS)]
    assert not decided["evidence"].duplicated().any()
    table1_row = t1.set_index("claim").loc[LOWER.format("SubTrunc", "DivFL"), "evidence"]
    assert t2.loc[t2["metric"] == "std", "evidence"].tolist() == [table1_row]


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
