"""GIFAIR-FL's experiments (Tables 2-6, Figures 4-5), paper numbers and notebook checks."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from fairfl_core import report
from fairfl_core.experiments.profiles import experiment_configs, get_experiment
from fairfl_core.papers.gifair_fl import claims as G
from fairfl_core.papers.gifair_fl import experiments as E
from fairfl_core.report.paper import experiment_paper_values, load_paper_results

FEMNIST_TABLES = [
    "gifair_table2_femnist_skewed",
    "gifair_table3_femnist_original",
    "gifair_table4_femnist_3groups",
]


def test_every_methods_paper_row_has_the_papers_numbers():
    paper = load_paper_results("gifair_fl")
    for name in [*FEMNIST_TABLES, "gifair_table5_shakespeare", "gifair_table6_shakespeare_gender"]:
        exp = get_experiment(name)
        rows = set(paper.loc[paper["table"] == exp.paper.table, "method"])
        assert {m.paper_row for m in exp.method_list()} == rows, name


@pytest.mark.parametrize("name", FEMNIST_TABLES)
def test_femnist_settings_run_on_a_labelled_stand_in_without_emnist(name, monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRFL_DATA", str(tmp_path))  # an empty data root: no EMNIST, no LEAF FEMNIST
    setting = name.split("_", 2)[2]
    overrides = E.femnist_stand_ins(setting)
    assert "data.name=fashion_mnist" in overrides
    cfg = experiment_configs(name, "paper", overrides=list(overrides))[0]
    assert cfg.data.stand_in.startswith("FEMNIST") and cfg.model.name == "ditto_cnn_femnist"
    assert cfg.model.options["num_classes"] == 10
    assert (cfg.train.rounds, cfg.train.lr, cfg.train.lr_decay, cfg.train.local_epochs) == (500, 0.1, 0.99, 2)
    assert cfg.train.batch_size == 32 and cfg.train.clients_per_round == 10


def test_gifair_lambda_is_a_fraction_of_lambda_max_per_setting():
    individual = {
        m.params["lam_frac"]
        for m in get_experiment("gifair_table2_femnist_skewed").method_list()
        if m.algorithm.startswith("gifair")
    }
    groups = {
        m.params["lam_frac"]
        for m in get_experiment("gifair_table6_shakespeare_gender").method_list()
        if m.algorithm.startswith("gifair")
    }
    assert individual == {0.9} and groups == {0.5}
    sweep = [m.params["lam_frac"] for m in get_experiment("gifair_fig4_lambda_shakespeare").method_list()]
    assert sweep == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def _agg(rows: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"dataset": "d", "data": "x", "method": m, "metric": k, "mean": v, "std": np.nan, "n": 1}
            for m, values in rows.items()
            for k, v in values.items()
        ]
    )


def test_targets_table_on_hand_numbers():
    exp = get_experiment("gifair_table2_femnist_skewed")
    m = G.method_labels(exp)
    agg = _agg({m["FedAvg"]: {"mean": 80.0, "std": 20.0}, m["GIFAIR-FL-Global"]: {"mean": 79.5, "std": 14.0}})
    paper = pd.DataFrame(
        [
            {"dataset": "d", "method": m[k], "metric": x, "paper_value": v}
            for k, x, v in [
                ("FedAvg", "std", 22.3),
                ("GIFAIR-FL-Global", "std", 5.7),
                ("FedAvg", "mean", 79.2),
                ("GIFAIR-FL-Global", "mean", 87.9),
            ]
        ]
    )
    t = G.targets_table(exp, agg, paper).set_index("target")
    c1, c2 = t.index  # the checklist's own C1 and C2, nothing else
    assert c1.startswith("C1 ") and c2.startswith("C2 ")
    # one seed: not decided, whatever the numbers (a 30% reduction, −0.5 points)
    assert t["result"].tolist() == ["not decided", "not decided"]
    assert t["test"].tolist() == ["not decided (1 seed)"] * 2
    # the paper's printed numbers are exact: the sign decides (−74%; +8.7 points)
    assert t["holds_in_paper"].tolist() == ["holds", "holds"]
    assert t.loc[c1, "change"] == "-30%" and t.loc[c1, "change paper"] == "-74%"
    assert t.loc[c2, "change"] == "-0.50" and t.loc[c2, "change paper"] == "+8.70"
    assert t["source"].str.startswith('Abstract: "Compared to existing algorithms').all()  # primary claims
    assert (
        t["source"].str.contains('§5.3 (Tables 2, 3, 5): "As shown in Tables 2, 3 and 5', regex=False).all()
    )


@pytest.mark.parametrize(
    ("std_g", "mean_g", "c1", "c2"),
    [
        # 4 seeds, every std 2 (√Var) and 1 (ā): SE = √(4/4 + 4/4) = √2 and √(1/4 + 1/4) = 0.707, Welch's
        # ν = 6 for both (equal variances and n), t_6 = 2.447: bands 3.46 and 1.73. C2 is non-inferiority by
        # 1 point: d + 1 is tested
        (18.0, 79.5, "undetermined", "undetermined"),  # C1 d = −2, C2 d + 1 = 0.5: inside the bands
        (14.0, 77.0, "holds", "fails"),  # C1 d = −6, C2 d + 1 = −2: outside
    ],
)
def test_targets_table_is_seed_aware_and_agrees_with_the_checklist(std_g, mean_g, c1, c2):
    exp = get_experiment("gifair_table2_femnist_skewed")
    m = G.method_labels(exp)
    rows = [(m["FedAvg"], "std", 20.0, 2.0), (m["FedAvg"], "mean", 80.0, 1.0)]
    rows += [(m["GIFAIR-FL-Global"], "std", std_g, 2.0), (m["GIFAIR-FL-Global"], "mean", mean_g, 1.0)]
    agg = pd.DataFrame(
        [{"dataset": "d", "method": k, "metric": x, "mean": v, "std": sd, "n": 4} for k, x, v, sd in rows]
    )
    paper = pd.DataFrame(columns=["dataset", "method", "metric", "paper_value"])
    t = G.targets_table(exp, agg, paper)
    assert t["result"].tolist() == [c1, c2]
    assert t["test"].tolist() == ["Welch t(6.0): seed summaries only"] * 2
    assert t["holds_in_paper"].tolist() == ["n/a", "n/a"]
    # one definition: the checklist's C1 and C2 rows give the same verdicts
    claims = [c for c in G.checklist_claims(exp, pd.DataFrame()) if c.text.startswith(("C1 ", "C2 "))]
    checked = report.check_claims(claims, agg, paper)
    assert checked["claim"].tolist() == t["target"].tolist()
    assert checked["result"].tolist() == t["result"].tolist()
    assert checked.loc[0, "se"] == pytest.approx(math.sqrt(2))


def test_gap_table_recomputes_the_papers_discrepancy_from_its_rows():
    exp = get_experiment("gifair_table4_femnist_3groups")
    m = G.method_labels(exp)
    groups = {
        label: {
            "group_acc_0": 70.0 + i,
            "group_acc_1": 90.0 - i,
            "group_acc_2": 80.0,
            "group_gap": 20.0 - 2 * i,
        }
        for i, label in enumerate(m.values())
    }
    runs = pd.DataFrame(
        {"dataset": ["fashion_mnist (stand-in)"], "data": ["fashion_mnist"], "stand_in": ["FEMNIST-3-groups"]}
    )
    paper = experiment_paper_values(exp, runs)
    table = G.gap_table(exp, _agg(groups), paper).set_index("paper row")
    assert table.loc["GIFAIR-FL-Global", "discrepancy paper (printed)"] == 6.0
    assert table.loc["GIFAIR-FL-Global", "discrepancy paper (from its rows)"] == pytest.approx(4.88)
    assert table.loc["Ditto", "discrepancy paper (from its rows)"] == pytest.approx(9.68)
    # FedAvg's worst group here is group 1 (70 < 80 < 90): the others' change against FedAvg
    assert table.loc["q-FFL", "worst group (Group 1) vs FedAvg reproduced"] == pytest.approx(1.0)
    assert table.loc["q-FFL", "best group (Group 2) vs FedAvg paper"] == pytest.approx(88.24 - 90.93)


def test_group_claims_take_the_worst_group_from_fedavg():
    exp = get_experiment("gifair_table6_shakespeare_gender_random_split")
    m = G.method_labels(exp)
    runs = pd.DataFrame(
        [
            {"dataset": "d", "data": "x", "stand_in": None, "method": label, "status": "finished", "seed": 0}
            | {"group_acc_0": 40.0, "group_acc_1": 70.0, "group_gap": 30.0}
            for label in m.values()
        ]
    )
    claims = G.checklist_claims(exp, runs)
    paper = [c for c in claims if c.kind == "paper"]
    worst = {c.metric for c in claims if c.text.startswith("C8")}
    best = {c.metric for c in claims if c.text.startswith("C9")}
    assert worst == {"group_acc_0"} and best == {"group_acc_1"}
    assert {c.text for c in paper if c.text.startswith("C8")} == {
        "C8 GIFAIR-FL-Global raises the worst group (Male, FedAvg's) above FedAvg",
        "C8 GIFAIR-FL-Per raises the worst group (Male, FedAvg's) above FedAvg",
    }
    baselines = len(m) - 2  # FedAvg, q-FFL, FedMGDA+, Ditto
    assert sum(c.text.startswith("C7") for c in paper) == baselines  # Global against every baseline
    assert sum(c.text.startswith("C10") for c in paper) == baselines
    # Global against Per, and the worst group against the baselines other than FedAvg: observations
    observed = [c.text for c in claims if c.kind == "observation"]
    assert "GIFAIR-FL-Global's discrepancy is below GIFAIR-FL-Per's" in observed
    assert len(observed) == 1 + 2 * (baselines - 1)


def _discrepancy_runs(accs: dict[str, list[tuple[float, ...]]]) -> pd.DataFrame:
    """One run per method and seed (position in the list) with the given group accuracies; ``group_gap`` is
    each run's own max − min, as the runner writes it."""
    return pd.DataFrame(
        [
            {
                "method": m,
                "setting": f"s-{m}",
                "seed": seed,
                **{f"group_acc_{g}": a for g, a in enumerate(acc)},
                "group_gap": max(acc) - min(acc),
            }
            for m, per_seed in accs.items()
            for seed, acc in enumerate(per_seed)
        ]
    )


def test_discrepancy_is_max_minus_min_of_the_seed_mean_group_accuracies():
    # A: seeds (70, 80, 86) and (84, 80, 70); each run's max − min is 16 and 14 (mean 15), but the seed
    # means are (77, 80, 78): discrepancy 80 − 77 = 3, per run group 2 − group 1 = 10 and −4.
    # B keeps its order: (60, 70, 80), (62, 72, 78): per run 20 and 16, means (61, 71, 79): 18.
    runs = _discrepancy_runs({"A": [(70, 80, 86), (84, 80, 70)], "B": [(60, 70, 80), (62, 72, 78)]})
    assert runs.groupby("method")["group_gap"].mean().to_dict() == {"A": 15.0, "B": 18.0}  # the other reading
    fixed = G.seed_mean_discrepancy(runs, 3)
    assert fixed["group_gap"].tolist() == [10.0, -4.0, 20.0, 16.0]
    assert fixed.groupby("method")["group_gap"].agg(["mean", "std"]).to_dict("index") == {
        "A": {"mean": 3.0, "std": pytest.approx(14 / math.sqrt(2))},
        "B": {"mean": 18.0, "std": pytest.approx(4 / math.sqrt(2))},
    }
    assert fixed[["group_acc_0", "seed"]].equals(runs[["group_acc_0", "seed"]])  # nothing else changes
    val = runs.assign(val_group_gap=0.0, **{f"val_group_acc_{g}": runs[f"group_acc_{g}"] for g in range(3)})
    assert G.seed_mean_discrepancy(val, 3)["val_group_gap"].tolist() == [10.0, -4.0, 20.0, 16.0]
    with pytest.raises(KeyError, match=r"val_group_gap but not \['val_group_acc_0'"):
        G.seed_mean_discrepancy(runs.assign(val_group_gap=1.0), 3)


def _lambda_runs(male: list[float], female: list[float]) -> pd.DataFrame:
    """Three seeds per λ ∈ {0, 0.3, 0.6, 0.9}: male = mean + (0.5, −0.5, 0), female = mean − the same (per-run
    gap + (1, −1, 0): std 1; each group's std 0.5)."""
    rows = []
    for lam, m, f in zip([0.0, 0.3, 0.6, 0.9], male, female, strict=True):
        for seed, e in enumerate((0.5, -0.5, 0.0)):
            acc = {"group_acc_0": m + e, "group_acc_1": f - e}
            rows.append(
                {"method": f"λ={lam}", "seed": seed, G.LAM: lam, **acc, "group_gap": abs(m - f + 2 * e)}
            )
    return pd.DataFrame(rows)


def test_lambda_checks_read_figures_4_and_5_seed_aware():
    falling = _lambda_runs([72, 70, 69, 64], [40, 48, 52, 52.5])  # gaps 32, 22, 17, 11.5
    checks = G.lambda_checks(falling, ("Male", "Female"), "Figure 4").set_index("claim")
    # Spearman over the 12 runs: λ rank deviations ±4.5, ±1.5 (3 ties each), gap ranks 12..1 by λ group:
    # Σ dx·dy = −135, Σ dx² = 135, Σ dy² = 143, so ρ = −√(135/143)
    trend = checks.loc["C11 discrepancy decreases with λ (Spearman ρ < 0)"]
    assert trend["value"] == pytest.approx(-math.sqrt(135 / 143)) and trend["result"] == "holds"
    assert trend["kind"] == "paper" and trend["source"] == G.S_FIG4_TREND
    # the gap's per-run std is 1 at every λ: SE = √(1/3 + 1/3), Welch's ν = 4 (the runs carry no pairing
    # keys), band 2.776·SE = 2.27
    gap = checks.loc["C11 discrepancy at λ=0.9λmax below λ=0"]
    assert gap["difference"] == pytest.approx(-20.5) and gap["se"] == pytest.approx(math.sqrt(2 / 3))
    assert gap["value"] == pytest.approx(11.5) and gap["test"] == "Welch t(4.0): no pairing keys recorded"
    assert gap["result"] == "holds" and gap["kind"] == "observation"  # C11's second reading
    # groups: std 0.5 per λ, SE = √(1/6) = 0.408, band 1.13; Male drops 5 points, Female rises 0.5: its
    # interval [−0.63, 1.63] is neither inside nor outside the plateau's ±1 point
    best = checks.loc["C12 best group (Male) drops from λ=0.6 to 0.9λmax"]
    assert (best["difference"], best["result"], best["kind"]) == (pytest.approx(-5.0), "holds", "paper")
    worst = checks.loc["C12 worst group (Female) plateaus from λ=0.6 to 0.9λmax (within 1 point)"]
    assert (worst["difference"], worst["result"]) == (pytest.approx(0.5), "undetermined")
    assert best["source"] == worst["source"] == G.S_FIG4_PLATEAU
    flat = G.lambda_checks(_lambda_runs([60] * 4, [50] * 4), ("Male", "Female"), "Figure 4")
    assert flat["result"].iloc[:2].tolist() == ["undetermined", "undetermined"]
    # Figure 5: the paper states only the trend; the plateau rows are the package's observations
    fig5 = G.lambda_checks(falling, ("Male", "Female"), "Figure 5")
    assert fig5["kind"].tolist() == ["paper", "observation", "observation", "observation"]
    assert fig5["source"].iloc[0] == G.S_FIG5_TREND


def test_lambda_checks_on_one_seed_are_not_decided():
    one = _lambda_runs([72, 70, 69, 64], [40, 48, 52, 52.5]).query("seed == 0")  # the quick profile's seed
    checks = G.lambda_checks(one, ("Male", "Female"), "Figure 4")
    assert checks["result"].tolist() == ["not decided"] * 4
    assert checks["test"].iloc[0].startswith("not decided (1 seed per λ); Spearman over 4 runs")


TABLES = [
    *FEMNIST_TABLES,
    "gifair_table5_shakespeare",
    "gifair_table6_shakespeare_gender",
    "gifair_table6_shakespeare_gender_random_split",
    "gifair_table6_shakespeare_gender_2000_windows",
]


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
@pytest.mark.parametrize(
    ("variant", "option"),
    [("random_split", {"split": "leaky"}), ("2000_windows", {"min_windows": 2000})],
)
def test_table6_variants_change_only_the_split_or_the_role_floor(profile, variant, option):
    table6 = experiment_configs("gifair_table6_shakespeare_gender", profile)
    other = experiment_configs(f"gifair_table6_shakespeare_gender_{variant}", profile)
    assert [c.name for c in other] == [c.name for c in table6]
    for a, b in zip(table6, other, strict=True):
        assert a.data.loader_options.get("split", "leak_free") == "leak_free"
        assert a.data.loader_options["min_windows"] == 64  # the paper's draw: no size floor
        assert b.data.loader_options == {**a.data.loader_options, **option}
        assert b.to_dict() | {"data": None} == a.to_dict() | {"data": None}
    assert get_experiment(f"gifair_table6_shakespeare_gender_{variant}").paper.table == "Table 6"


def test_every_setting_holds_out_ten_percent_of_each_clients_data_for_validation():
    for name in [*TABLES, "gifair_fig4_lambda_shakespeare", "gifair_fig5_lambda_femnist"]:
        for profile in ("smoke", "paper"):
            cfg = experiment_configs(name, profile)[0]
            assert (cfg.data.val_frac, cfg.data.test_frac) == (0.1, 0.2), (name, profile)


PAPER_GRIDS = {  # GIFAIR-FL §5 "Implementation" (q, t, λ_Ditto, λ); AFL and FedMGDA+: not printed
    "qffl": {0, 0.001, 0.01, 0.1, 1, 2, 5, 10},
    "term": {1, 2, 5},
    "afl": {0.001, 0.01, 0.1},
    "fedmgda+": {0.05, 0.1, 0.5, 1},
    "ditto": {0.01, 0.05, 0.1, 0.5, 1, 2, 5},
    "gifair_global": {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
    "gifair_per": {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
}


def test_the_short_profiles_fixed_values_lie_in_the_printed_grids():
    tuned = (E.QFFL, E.TERM, E.AFL_GRADIENT, E.FEDMGDA, E.DITTO, *E.INDIVIDUAL, *E.GROUPS)
    assert all(t.fixed in PAPER_GRIDS[t.algorithm] for t in tuned)
    assert E.QFFL.fixed == 1.0  # GIFAIR-FL §5: q ∈ {0, 0.001, 0.01, 0.1, 1, 2, 5, 10}


@pytest.mark.parametrize("name", TABLES)
def test_short_profiles_run_one_fixed_value_and_the_paper_profile_every_grid_value(name):
    exp = get_experiment(name)
    for profile, seeds in (("smoke", (0,)), ("quick", (0, 1, 2))):  # quick: 3 seeds, a verdict's minimum
        configs = experiment_configs(name, profile)
        assert [(c.name, c.seed) for c in configs] == [(m.label, s) for m in exp.method_list() for s in seeds]
        assert "one fixed value per method, not selected" in exp.profiles[profile].description
    assert "rule A9" in exp.profiles["paper"].description
    paper = experiment_configs(name, "paper")
    fixed = {m.label for m in exp.method_list()}
    labels = {c.name for c in paper}
    assert fixed < labels and len(paper) == 5 * len(labels) and {c.seed for c in paper} == {0, 1, 2, 3, 4}
    grids: dict[str, set] = {}
    for c in paper:
        key = E.HYPERPARAMETERS.get(c.algorithm.name)
        grids.setdefault(c.algorithm.name, set()).add(c.algorithm.params.get(key))
        if c.algorithm.name in ("fedavg", "qffl", "term", "fedmgda+", "ditto"):  # sampling ∝ p_k (A1)
            assert (c.algorithm.params["sampling"], c.algorithm.params["weighting"]) == ("size", "uniform")
    tuned = {m.algorithm for m in exp.method_list()} - {"fedavg"}
    assert grids == {"fedavg": {None}, **{a: PAPER_GRIDS[a] for a in tuned}}
    by_seed = {}
    for c in paper:  # the runs of one seed differ only in their method
        d = c.to_dict()
        by_seed.setdefault(c.seed, set()).add(json.dumps({**d, "name": "", "algorithm": {}}, sort_keys=True))
    assert all(len(v) == 1 for v in by_seed.values())


def _runs(rows: list[tuple[str, str, str, float | None, int, float, float]]) -> pd.DataFrame:
    """Hand-made load_runs rows: method, algorithm, param, value, seed, val_mean, fairness (val_var)."""
    return pd.DataFrame(
        [
            {
                "method": m,
                "algorithm": a,
                "seed": s,
                "status": "complete",
                "val_mean": acc,
                "val_var": var,
                "val_group_gap": var / 10,
                **{f"val_group_acc_{g}": acc + var / 10 * share for g, share in enumerate((0, 1, 0.5))},
                **({f"config.algorithm.params.{p}": v} if p else {}),
            }
            for m, a, p, v, s, acc, var in rows
        ]
    )


QFFL_VALUES = [(0.0, 81, 90), (1.0, 80.5, 40), (2.0, 79, 5)]  # q=2 is fairest but 2 points below FedAvg


def test_tuned_methods_keep_the_a9_value_and_the_fixed_ones():
    exp = get_experiment("gifair_table2_femnist_skewed")
    runs = _runs(
        [
            ("FedAvg", "fedavg", "", None, 0, 80.0, 100.0),
            ("FedAvg", "fedavg", "", None, 1, 82.0, 100.0),  # FedAvg: 81, so values need >= 80
            *[(f"q-FFL (q={q:g})", "qffl", "q", q, s, a, v) for q, a, v in QFFL_VALUES for s in (0, 1)],
            ("TERM (t=1)", "term", "t", 1.0, 0, 60.0, 300.0),
            ("TERM (t=1)", "term", "t", 1.0, 1, 60.0, 300.0),
        ]
    )  # fmt: skip
    tuning = G.tuned_methods(exp, runs)
    assert [m.label for m in tuning.experiment.method_list()] == ["FedAvg", "q-FFL (q=1)", "TERM (t=1)"]
    assert G.method_labels(tuning.experiment) == {
        "FedAvg": "FedAvg",
        "q-FFL": "q-FFL (q=1)",
        "TERM": "TERM (t=1)",
    }
    assert sorted(set(tuning.runs["method"])) == ["FedAvg", "TERM (t=1)", "q-FFL (q=1)"]
    rule = tuning.selection.set_index("method")["rule"]
    assert rule["q-FFL (q=1)"].startswith("A9") and rule["TERM (t=1)"] == "fixed (not selected)"
    group = G.tuned_methods(get_experiment("gifair_table4_femnist_3groups"), runs)
    assert group.selection.set_index("algorithm").loc["qffl", "val_group_gap"] == 4.0  # the discrepancy
