"""Equitable-FL reporting: CD and σ_Acc curves from stored runs, NMI summaries, the grid choice, the
headline comparison and the claims (each the paper's quoted sentence with its place or the package's
observation; C1 and C2 primary; a stand-in's paper claims not checked, its direction beside them), on
hand-written runs in the real store format. A seed's FedProx and Equitable-FL runs written here share data
and model: their claims are decided by the paired t on per-seed differences."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairfl_core import metrics
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import get_experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.papers.equitable_fl import claims as R
from fairfl_core.papers.equitable_fl import experiments as E
from fairfl_core.report.bundle import NOT_RUN
from fairfl_core.report.claims import (
    NOT_CHECKED_OFFLINE,
    OBSERVATION,
    STAND_IN_EFFECT,
    check_claims,
    seed_outcome,
)
from fairfl_core.report.index import claim_counts, paper_claims
from fairfl_core.report.paper import experiment_paper_values
from fairfl_core.report.results import load_runs
from fairfl_core.report.tables import aggregate
from tests.report.conftest import make_config

LOSS = [0.2, 0.6, 1.0, 1.4]


def write(results: Path, method, algorithm, seed, accs, rounds, stand_in=None, data="fashion_mnist"):
    """A run of ``data`` evaluated after rounds 1 and 2: ``accs`` {round: (global, [client acc])}, ``rounds``
    {round: (selected, diagnostics)}; every client's test loss is LOSS. ``stand_in``: the dataset the run
    stands in for (its label then says so, as the runner's)."""
    cfg = make_config(method, algorithm, seed, data=data, stand_in=stand_in)
    store = RunStore(results / config_hash(cfg))
    store.open(cfg.to_dict())
    for t, (selected, diag) in rounds.items():
        store.append("rounds", {"round": t, "selected": selected, "diagnostics": diag, "seconds": 0.1})
    for t, (g, acc) in accs.items():
        store.append(
            "evals", {"round": t, "global_acc": g, "global_loss": 1.0, "client_acc": acc, "client_loss": LOSS}
        )
    g, acc = accs[max(accs)]
    summary = {
        "status": "complete",
        "name": method,
        "algorithm": algorithm,
        "dataset": f"{data} (stand-in for {stand_in})" if stand_in else data,
        "seed": seed,
        "rounds": max(accs),
        "seconds_per_round": 0.1,
        **metrics.fairness_summary(np.asarray(acc), global_acc=g),
    }
    store.finish(summary)
    return cfg


def results(
    tmp_path, fedprox_sigma=(8.0, 10.0), equitable_sigma=(2.0, 3.0), stand_in=None, data="fashion_mnist"
):
    """FedProx (accuracy 80, σ_Acc ``fedprox_sigma[seed]``) and Equitable-FL (81, ``equitable_sigma``), one
    run per seed, each seed's two runs on the same data and model (paired)."""
    cfgs = []
    for seed in range(len(fedprox_sigma)):
        s = fedprox_sigma[seed]
        cfgs.append(
            write(
                tmp_path,
                "FedProx",
                "fedprox",
                seed,
                {
                    0: (50, [50] * 4),
                    1: (80, [80 - s, 80 + s, 80 - s, 80 + s]),
                    2: (80, [80 - s, 80 + s, 80 - s, 80 + s]),
                },
                {1: ([0, 1], {}), 2: ([0, 1, 2], {})},
                stand_in,
                data,
            )
        )
        s = equitable_sigma[seed]
        diag1 = {"nmi": None, "nmi_raw": 0.0, "nmi_all": 0.5, "fallback_used": False}
        diag2 = {"nmi": 1.0, "nmi_raw": 1.0, "nmi_all": 1.0, "fallback_used": True}
        cfgs.append(
            write(
                tmp_path,
                "Equitable-FL",
                "equitable_fl",
                seed,
                {1: (81, [81 - s, 81 + s] * 2), 2: (81, [81 - s, 81 + s] * 2)},
                {1: ([0, 1], diag1), 2: ([0, 1, 2], diag2)},
                stand_in,
                data,
            )
        )
    return load_runs(tmp_path, cfgs)


def test_cd_and_sigma_curves_by_hand(tmp_path):
    curves = R.round_curves(results(tmp_path))
    fp = curves[(curves["method"] == "FedProx") & (curves["seed"] == 0)].set_index("round")
    assert list(fp.index) == [1, 2]  # round 0 has no participants
    assert fp.loc[1, "cd"] == pytest.approx(0.4)  # |0.2 - 0.6|
    assert fp.loc[2, "cd"] == pytest.approx((0.4 + 0.8 + 0.4) / 3)  # pairs of clients 0, 1, 2
    assert fp.loc[2, "cd_cma"] == pytest.approx((0.4 + 1.6 / 3) / 2)
    assert fp.loc[2, "sigma_acc"] == pytest.approx(8.0)  # every client 8 points from the global 80
    literal = R.round_curves(results(tmp_path), literal=True)
    assert literal["cd"].iloc[0] == pytest.approx(0.8)  # the printed double sum: twice the text's mean


def test_nmi_summary_skips_rounds_with_one_planted_cluster(tmp_path):
    runs = R.with_equitable_metrics(results(tmp_path))
    eq = runs[runs["method"] == "Equitable-FL"].iloc[0]
    assert eq["nmi_mean"] == pytest.approx(1.0) and eq["nmi_raw_mean"] == pytest.approx(0.5)
    assert eq["nmi_all_last"] == pytest.approx(1.0) and eq["fallback_rounds"] == 1
    assert np.isnan(runs[runs["method"] == "FedProx"]["nmi_mean"]).all()
    assert eq["cd_cma"] == pytest.approx((0.4 + 1.6 / 3) / 2)


PLACE = re.compile(r"^(Abstract|§\d|Table \d|Fig\. \d|App\. )")  # where in the paper a quote comes from
METRICS = ("global_acc", "sigma_acc", "cd_cma", "nmi_mean")
ABLATION_RUNS = pd.DataFrame(
    {
        "method": ["C=1", "C=2", "C=3", "C=1 (r=6)", "C=2 (r=6)", "C=3 (r=6)", "C=4 (r=6)"]
        + ["E=1", "E=2", "E=5", "μ=0.001", "μ=0.01", "μ=0.1", "μ=1"]
    }
)


def assert_sources(claims):
    """Every claim (Claim objects or check rows) is the paper's, with a quote (a ``"``) after its place, or
    the package's observation with why; no two paper claims share their text and dataset."""
    rows = pd.DataFrame(
        [{"claim": c.text, "dataset": c.dataset, "source": c.source, "kind": c.kind} for c in claims]
        if isinstance(claims, list)
        else claims
    )
    observed = rows["source"].str.startswith(f"{OBSERVATION}: ")
    assert (rows.loc[observed, "kind"] == "observation").all() and (
        rows.loc[~observed, "kind"] == "paper"
    ).all()
    quoted = rows.loc[~observed, "source"]
    bad = quoted[~(quoted.str.match(PLACE) & quoted.str.count('"').ge(2))]
    assert bad.empty, bad.tolist()
    assert rows.loc[observed, "source"].str.len().gt(len(OBSERVATION) + 10).all()  # with why
    paper = rows[~observed].fillna({"dataset": ""})
    assert not paper.duplicated(["claim", "dataset"]).any(), paper[paper.duplicated(["claim", "dataset"])]


def test_headline_and_claims_compare_with_fedprox(tmp_path):
    runs = R.with_equitable_metrics(results(tmp_path, (8.0, 10.0, 9.0), (2.0, 3.0, 2.5)))  # 3 seeds: decided
    row = R.headline(runs).iloc[0]
    assert row["σ_Acc FedProx"] == pytest.approx(9.0) and row["σ_Acc Equitable-FL"] == pytest.approx(2.5)
    # σ_Acc per seed: 2 − 8, 3 − 10, 2.5 − 9 = −6, −7, −6.5 (paired: SE 0.5/√3); accuracy 81 − 80 = 1 in every
    # seed and NMI 1 in every seed against 0.9 (no spread: the sign decides). No paper numbers: no size
    assert row["lower σ_Acc"] == "holds" and row["higher accuracy"] == "holds" and row["NMI ≥ 0.9"] == "holds"
    worse_runs = results(tmp_path / "w", (8.0, 10.0, 9.0), equitable_sigma=(12.0, 14.0, 13.0))
    worse = R.headline(R.with_equitable_metrics(worse_runs)).iloc[0]
    assert worse["lower σ_Acc"] == "fails"  # +4 in every seed
    two_seeds = R.headline(R.with_equitable_metrics(results(tmp_path / "two"))).iloc[0]
    assert two_seeds["lower σ_Acc"] == "not decided"
    experiment = get_experiment("equitable_table2_mnist")
    claims = check_claims(R.BUNDLE.claims(experiment, runs), aggregate(runs, METRICS))
    c1 = claims[claims["claim"] == "C1: Equitable-FL has a lower σ_Acc than FedProx"].iloc[0]
    assert c1["result"] == "holds" and c1["value"] == pytest.approx(2.5) and c1["kind"] == "paper"
    assert c1["se"] == pytest.approx(0.5 / np.sqrt(3)) and c1["test"].startswith("paired t(2)")
    assert c1["source"].startswith(R.ABSTRACT) and R.S53 in c1["source"]
    assert (claims[claims["claim"].str.contains("Cluster2")]["result"] == "missing").all()
    assert_sources(claims)


def test_the_paired_design_decides_where_welch_cannot(tmp_path):
    """A seed's FedProx and Equitable-FL runs share partition, model and streams: C1 is decided on the
    per-seed differences. σ_Acc FedProx 8, 12, 10 and Equitable-FL 7, 11, 9.5: differences −1, −1, −0.5,
    mean −5/6, sd √(1/12) = 0.2887, SE 1/6, t(2) = −5; with 2 df p = 1 − t/√(2 + t²) = 1 − √(25/27) =
    0.03775 < 0.05: holds, interval −5/6 ± 4.3027/6 = (−1.5504, −0.1162). Welch on the same numbers: SE² =
    4/3 + 4.0833/3 = 2.694, t = −0.508 (p ≈ 0.64): undetermined."""
    runs = R.with_equitable_metrics(results(tmp_path, (8.0, 12.0, 10.0), (7.0, 11.0, 9.5)))
    agg = aggregate(runs, METRICS)
    c1 = check_claims(R.BUNDLE.claims(get_experiment("equitable_table2_mnist"), runs), agg)
    c1 = c1.set_index("claim").loc["C1: Equitable-FL has a lower σ_Acc than FedProx"]
    assert c1["test"].startswith("paired t(2)") and c1["df"] == 2
    assert c1["difference"] == pytest.approx(-5 / 6) and c1["se"] == pytest.approx(1 / 6)
    assert c1["p"] == pytest.approx(1 - np.sqrt(25 / 27)) and c1["result"] == "holds"
    assert (c1["interval_low"], c1["interval_high"]) == pytest.approx((-1.5504, -0.1162), abs=1e-4)
    assert R.headline(runs).iloc[0]["lower σ_Acc"] == "holds"
    sigma = agg[agg["metric"] == "sigma_acc"].set_index("method")
    summary = {m: (sigma.at[m, "mean"], sigma.at[m, "std"], sigma.at[m, "n"]) for m in sigma.index}
    welch = seed_outcome("<", summary["Equitable-FL"], summary["FedProx"])
    assert welch.test.startswith("Welch t(4.0)") and welch.p == pytest.approx(0.64, abs=0.01)
    assert welch.result == "undetermined"


def test_every_claim_quotes_the_paper_with_its_place_or_is_an_observation():
    """Every experiment's claims (without runs: its paper column; the ablations on their labels), and the
    sources the report module names, follow the rule; the observations are those the paper does not state."""
    for name in R.BUNDLE.experiments:
        assert_sources(R.BUNDLE.claims(get_experiment(name), pd.DataFrame({"method": []})))
    ablation = R.ablation_claims(get_experiment("equitable_table4_clusters"), ABLATION_RUNS)
    assert_sources(ablation)
    for quote in (
        R.ABSTRACT,
        R.CONTRIBUTION,
        R.S53,
        R.S53_CD,
        R.S53_ARCH,
        R.S52_GIFAIR,
        R.FIG2,
        R.FIG3,
        R.FIG4,
        R.S54_C,
        R.S54_E,
        R.S54_MU,
    ):
        assert PLACE.match(quote) and quote.endswith('"') and quote.count('"') % 2 == 0, quote
    mnist = {
        c.text.split(":")[0]: c.kind
        for c in R.table2_claims(get_experiment("equitable_table2_mnist"), pd.DataFrame({"method": []}))
    }
    assert {k for k, kind in mnist.items() if kind == "paper"} == {"C1", "C2", "C4"}  # C11: ResNet-18 only
    assert {k for k, kind in mnist.items() if kind == "observation"} == {"C3", "C6", "C7", "C8", "C9", "C11"}
    c8 = [c for c in R.fairness_claims(2) if c.op == "≈"]
    assert len(c8) == 2 and all(c.tolerance_source.startswith("the package's choice") for c in c8)


def test_the_primary_claims_are_the_abstracts_and_the_contributions():
    """C1 (σ_Acc: the abstract's "reducing the bias existing amongst various client clusters") and C2 (CD:
    the contributions' "minimizes client disagreements") against each federated baseline, in both tables,
    are primary, each quoting its sentence first; nothing else is, the ablations (§5.4) included."""
    no_runs = pd.DataFrame({"method": []})
    for table in (2, 3):
        claims = R.table2_claims(get_experiment(f"equitable_table{table}_cifar100"), no_runs)
        primary = [c for c in claims if c.primary]
        assert {c.text.split(":")[0] for c in primary} == {"C1", "C2"} and len(primary) == 10
        assert {c.than for c in primary} == set(R.FEDERATED) and {c.kind for c in primary} == {"paper"}
        assert all(c.source.startswith(R.ABSTRACT) for c in primary if c.metric == "sigma_acc")
        assert all(c.source.startswith(R.CONTRIBUTION) for c in primary if c.metric == "cd_cma")
        assert "minimizes client disagreements" in R.CONTRIBUTION
        assert "reducing the bias existing amongst various client clusters" in R.ABSTRACT
    for name in E.ABLATIONS:
        assert not any(c.primary for c in R.ablation_claims(get_experiment(name), ABLATION_RUNS))


def test_a_stand_in_column_keeps_the_papers_claims():
    """The CIFAR-10 stand-in (the MNIST stand-in's Fashion-MNIST partition) keeps the paper's claims as
    they are on real data: each stays a paper claim and ``check_claims`` marks it not checked."""
    fmnist = pd.DataFrame({"method": ["FedProx"], "dataset": ["d"], "stand_in": ["CIFAR-10"]})
    for table in (2, 3):
        experiment = get_experiment(f"equitable_table{table}_cifar10")
        claims = R.table2_claims(experiment, fmnist)
        assert claims == R.table2_claims(experiment, fmnist.assign(stand_in=None))
        # C1 and C2 against 5 baselines, C4 against 5; C11 (NMI, Fig. 2) on ResNet-18
        assert sum(c.kind == "paper" for c in claims) == 15 + (table == 3)


def test_a_stand_in_columns_paper_claims_are_counted_not_checked(tmp_path):
    """Checked on runs, the CIFAR-10 stand-in's paper claims stay in the count as not checked, the stand-in's
    direction beside each; on real data the same runs decide them (by hand below)."""
    cifar_runs = R.with_equitable_metrics(
        results(tmp_path / "c", (8.0, 10.0, 9.0), (2.0, 3.0, 2.5), "CIFAR-10")
    )
    real_runs = R.with_equitable_metrics(results(tmp_path / "r", (8.0, 10.0, 9.0), (2.0, 3.0, 2.5)))
    cifar = R.BUNDLE.check("equitable_table2_cifar10", cifar_runs, aggregate(cifar_runs, METRICS))
    counted = paper_claims(cifar).set_index("claim")
    assert len(counted) == 15 and claim_counts(cifar)["not checked"] == 15
    assert claim_counts(cifar)["holds"] == claim_counts(cifar)["fails"] == 0
    ran = counted[counted["result"] != NOT_RUN]  # against FedProx, the one baseline these runs have
    assert (ran["result"] == NOT_CHECKED_OFFLINE).all() and len(ran) == 3
    assert (ran["data"] == "stand-in for CIFAR-10").all()
    # σ_Acc −6, −7, −6.5 per seed and accuracy +1 in every seed hold on the stand-in; both methods see the
    # same test losses, so their CD is equal in every seed and "lower CD" fails at a margin of exactly 0
    assert ran["stand_in_result"].to_dict() == {
        "C1: Equitable-FL has a lower σ_Acc than FedProx": "holds",
        "C2: Equitable-FL has a lower CD (CMA) than FedProx": "fails",
        "C4: Equitable-FL's accuracy > FedProx's": "holds",
    }
    real = R.BUNDLE.check("equitable_table2_mnist", real_runs, aggregate(real_runs, METRICS))
    decided = paper_claims(real)
    decided = decided[decided["result"] != NOT_RUN].set_index("claim")
    assert decided["result"].to_dict() == ran["stand_in_result"].to_dict()
    assert decided["primary"].to_dict() == {
        "C1: Equitable-FL has a lower σ_Acc than FedProx": True,
        "C2: Equitable-FL has a lower CD (CMA) than FedProx": True,
        "C4: Equitable-FL's accuracy > FedProx's": False,
    }
    assert decided["evidence"].is_unique and claim_counts(real)["holds"] == 2


def test_one_seed_decides_nothing(tmp_path):
    """The smoke profile's single seed: every claim is "not decided (1 seed)" (claims.seed_outcome), so the
    headline counts neither holds nor fails (the smoke index once showed 156 holds / 92 fails)."""
    runs = R.with_equitable_metrics(results(tmp_path, (8.0,), (2.0,)))
    table = R.BUNDLE.check("equitable_table2_mnist", runs, aggregate(runs, METRICS))
    ran = table[table["result"] != NOT_RUN]  # the methods of these runs: FedProx, Equitable-FL
    assert (
        len(ran) and (ran["result"] == "not decided").all() and (ran["test"] == "not decided (1 seed)").all()
    )
    counts = claim_counts(table)
    assert counts["holds"] == counts["fails"] == counts["undetermined"] == 0 and counts["not decided"] > 0
    assert (R.headline(runs).iloc[0][["lower σ_Acc", "higher accuracy"]] == "not decided").all()


def test_real_data_is_decided_on_the_papers_size_a_stand_in_on_direction_only(tmp_path):
    """On real MNIST the paper's printed difference is the size decided on: σ_Acc 1.17 − 2.26 = −1.09. Here
    σ_Acc FedProx 8, 10, 9 and Equitable-FL 7.4, 9.5, 8.6: differences −0.6, −0.5, −0.4, mean −0.5, sd 0.1,
    SE 0.1/√3, t(2)² = 0.25/(0.01/3) = 75 for 0 (p = 1 − √(75/77) = 0.0131) and (0.59)²/(0.01/3) = 104.43
    for −1.09 (p = 1 − √(104.43/106.43) = 0.0094): lower, but by less than the paper's. Accuracy +1 in every
    seed against the paper's 97.75 − 96.97 = 0.78: holds. On the stand-in for MNIST the same runs are decided
    on direction only (holds); its data is no other column's, so it is not "not checked"."""
    runs = R.with_equitable_metrics(results(tmp_path, (8.0, 10.0, 9.0), (7.4, 9.5, 8.6), data="mnist"))
    experiment = get_experiment("equitable_table2_mnist")
    paper = experiment_paper_values(experiment, runs)
    table = R.BUNDLE.check(experiment.name, runs, aggregate(runs, METRICS), paper).set_index("claim")
    c1 = table.loc["C1: Equitable-FL has a lower σ_Acc than FedProx"]
    assert c1["paper_effect"] == pytest.approx(1.17 - 2.26) and c1["size_source"] == "printed numbers"
    assert c1["p"] == pytest.approx(1 - np.sqrt(75 / 77), abs=1e-6)
    assert c1["p_size"] == pytest.approx(1 - np.sqrt((0.59**2 * 300) / (2 + 0.59**2 * 300)), abs=1e-6)
    assert c1["result"] == "smaller than the paper's" and c1["holds_in_paper"] == "holds"
    assert c1["data"] == "real" and c1["rounds_share"] == pytest.approx(4 / 250)
    c4 = table.loc["C4: Equitable-FL's accuracy > FedProx's"]
    assert c4["paper_effect"] == pytest.approx(0.78) and c4["result"] == "holds"
    row = R.headline(runs, paper).iloc[0]
    assert row["lower σ_Acc"] == "smaller than the paper's" and row["higher accuracy"] == "holds"
    assert row["paper σ_Acc FedProx → Equitable-FL"] == "2.26 → 1.17"
    assert R.stand_in_datasets(runs) == set()

    stand_in = R.with_equitable_metrics(
        results(tmp_path / "s", (8.0, 10.0, 9.0), (7.4, 9.5, 8.6), "MNIST", data="fashion_mnist")
    )
    paper = experiment_paper_values(experiment, stand_in)
    table = R.BUNDLE.check(experiment.name, stand_in, aggregate(stand_in, METRICS), paper).set_index("claim")
    c1 = table.loc["C1: Equitable-FL has a lower σ_Acc than FedProx"]
    assert np.isnan(c1["paper_effect"]) and c1["size_source"] == STAND_IN_EFFECT
    assert c1["result"] == "holds" and c1["stand_in_result"] == "" and c1["data"] == "stand-in for MNIST"
    assert c1["holds_in_paper"] == "holds"  # 1.17 < 2.26
    assert R.stand_in_datasets(stand_in) == {"fashion_mnist (stand-in for MNIST)"}
    row = R.headline(stand_in, paper).iloc[0]
    assert row["lower σ_Acc"] == "holds" and row["paper: lower σ_Acc"] == "holds"
    assert "paper σ_Acc change %" not in row and "paper σ_Acc FedProx → Equitable-FL" not in row


def test_nmi_close_to_1_is_a_paper_claim_on_resnet18_only():
    """Fig. 2 shows the NMI of ResNet-18 runs: Table 3's C11 is the paper's, Table 2's the variant."""
    no_runs = pd.DataFrame({"method": []})
    (t2,) = [
        c for c in R.table2_claims(get_experiment("equitable_table2_cifar100"), no_runs) if "C11" in c.text
    ]
    (t3,) = [
        c for c in R.table2_claims(get_experiment("equitable_table3_cifar100"), no_runs) if "C11" in c.text
    ]
    assert t3.kind == "paper" and t3.source == R.FIG2 and t3.than == 0.9
    assert t2.kind == "observation" and "variant: Fig. 2 shows the NMI of the ResNet-18 runs" in t2.source


def test_accuracy_claim_as_written_spares_femnist_only():
    """§5.3: Equitable-FL outperforms every other federated baseline in accuracy, except on FEMNIST, where
    Table 2 prints the exception (Cluster2 above Equitable-FL): the paper's on Table 2, an observation on
    Table 3, whose numbers are missing."""
    claims = R.accuracy_claims(["fashion_mnist (stand-in for MNIST)", "fashion_mnist (stand-in for FEMNIST)"])
    c4 = [c for c in claims if c.text.startswith("C4")]
    assert {c.than for c in c4} == set(R.FEDERATED) and {c.dataset for c in c4} == {
        "fashion_mnist (stand-in for MNIST)"
    }
    (c5,) = [c for c in claims if c.text.startswith("C5")]
    assert c5.dataset == "fashion_mnist (stand-in for FEMNIST)" and c5.kind == "paper"
    assert c5.source.startswith(R.S53) and "except the FEMNIST dataset" in c5.source
    (c5_table3,) = [c for c in R.accuracy_claims(["FEMNIST"], table=3) if c.text.startswith("C5")]
    assert c5_table3.kind == "observation"


def test_cluster_ablation_compares_c3_within_each_number_of_participants():
    runs = pd.DataFrame({"method": ["C=1", "C=2", "C=3", "C=1 (r=6)", "C=3 (r=6)", "C=4 (r=6)"]})
    claims = R.ablation_claims(get_experiment("equitable_table4_clusters"), runs)
    pairs = {(c.method, c.than) for c in claims}
    assert pairs == {("C=3", "C=1"), ("C=3", "C=2"), ("C=3 (r=6)", "C=1 (r=6)"), ("C=3 (r=6)", "C=4 (r=6)")}
    kinds = {(c.method, c.metric): c.kind for c in claims}
    # §5.4 states C = 3's lower CD and higher accuracy at the paper's r = 4; σ_Acc and r = 6 are observations
    assert kinds[("C=3", "cd_cma")] == kinds[("C=3", "global_acc")] == "paper"
    assert kinds[("C=3", "sigma_acc")] == "observation"
    assert {kinds[("C=3 (r=6)", m)] for m in ("cd_cma", "global_acc", "sigma_acc")} == {"observation"}
    wider = next(c for c in claims if c.method == "C=3 (r=6)" and c.metric == "cd_cma")
    assert "variant: r = 6" in wider.source and wider.source.endswith(R.S54_C)


def test_epochs_and_mu_ablations_check_each_increase():
    """§5.4: "with increasing local iterations [...] consistently [...] reduce the disagreement" and "if we
    increase the μ, the disagreement [...] will reduce but at the price of accuracy": each step of the grid,
    in increasing order whatever the label order; μ's σ_Acc (not stated) is one observation."""
    runs = pd.DataFrame({"method": ["E=5", "E=1", "E=2", "μ=0.001", "μ=0.01", "μ=0.1", "μ=1"]})
    claims = R.ablation_claims(get_experiment("equitable_table4_epochs"), runs)
    e = [(c.method, c.than) for c in claims if c.text.startswith("C13")]
    assert e == [("E=2", "E=1"), ("E=5", "E=2")]
    assert all(
        c.source == R.S54_E and c.metric == "cd_cma" and c.op == "<" for c in claims if "C13" in c.text
    )
    mu = [(c.method, c.than, c.metric, c.kind) for c in claims if c.text.startswith("C14")]
    steps = [("μ=0.01", "μ=0.001"), ("μ=0.1", "μ=0.01"), ("μ=1", "μ=0.1")]
    assert mu == [(*s, m, "paper") for s in steps for m in ("cd_cma", "global_acc")] + [
        ("μ=1", "μ=0.001", "sigma_acc", "observation")
    ]
    assert all(c.op == "<" for c in claims if c.text.startswith("C14"))  # lower CD, lower accuracy


def test_ablation_claims_are_checked_at_the_papers_scale(tmp_path):
    """The bundle checks the ablations at their paper scale (50 rounds, ResNet-18): E=2 against E=1 on the
    CIFAR-100 stand-in trains 4 of 50 rounds with the MLP; not primary, decided on direction only."""
    accs = {1: (81, [80, 82] * 2), 2: (81, [80, 82] * 2)}
    rounds = {1: ([0, 1], {}), 2: ([0, 1, 2], {})}
    cfgs = [
        write(tmp_path, f"E={e}", "equitable_fl", seed, accs, rounds, "CIFAR-100")
        for seed in range(3)
        for e in (1, 2)
    ]
    runs = R.with_equitable_metrics(load_runs(tmp_path, cfgs))
    table = R.BUNDLE.check("equitable_table4_epochs", runs, aggregate(runs, METRICS))
    (row,) = table.itertuples(index=False)
    assert row.claim.startswith("C13: E=2 has a lower CD than E=1") and row.kind == "paper"
    assert not row.primary and row.result != NOT_CHECKED_OFFLINE and row.stand_in_result == ""
    assert (
        row.rounds_share == pytest.approx(4 / 50)
        and row.model == "substituted (mlp for resnet18(norm=batch))"
    )
    assert row.data == "stand-in for CIFAR-100"


def test_a_tuned_pair_names_its_confound():
    """At the paper profile each method keeps its best (η, μ) of the grid: a claim between two methods at a
    different η or μ says so; at one shared value (the short profiles) it does not. Centralized has no μ."""
    runs = pd.DataFrame(
        {
            "method": ["Equitable-FL", "FedProx", "Centralized"],
            "config.train.lr": [0.01, 0.1, 0.01],
            "config.algorithm.params.mu": [0.01, 0.01, np.nan],
        }
    )
    claims = {c.text: c for c in R.table2_claims(get_experiment("equitable_table2_mnist"), runs)}
    assert (
        "C1: Equitable-FL has a lower σ_Acc than FedProx (η differs: each method's best of the grid)"
        in claims
    )
    assert "C3: Equitable-FL's σ_Acc is below Centralized's" in claims  # the same η, no μ on one side
    shared = R.table2_claims(
        get_experiment("equitable_table2_mnist"), runs.assign(**{"config.train.lr": 0.01})
    )
    assert "C1: Equitable-FL has a lower σ_Acc than FedProx" in {c.text for c in shared}
    c6 = next(c for c in shared if c.text.startswith("C6"))
    assert "confound: Centralized makes one pass over the pooled data per round" in c6.source


def test_the_quick_profile_says_why_each_column_is_left_out():
    """An explicit mapping by experiment (no name parsing): the ResNet-18 columns need a GPU, the CIFAR-100
    and FEMNIST simple models do not fit the budget."""
    left_out = R.BUNDLE.left_out["quick"]
    assert set(left_out) == set(R.COLUMNS) - set(E.QUICK_TABLES)
    assert all("ResNet-18 needs a GPU" in left_out[f"equitable_table3_{k}"] for k in E.SETTINGS)
    assert "5-conv CNN" in left_out["equitable_table2_cifar100"]
    assert "FEMNIST CNN" in left_out["equitable_table2_femnist"]
    assert R.COLUMNS["equitable_table3_cifar10"] == (3, "cifar10")


def test_best_of_grid_keeps_the_best_final_accuracy_per_row():
    runs = pd.DataFrame(
        {
            "dataset": ["d"] * 4,
            "method": ["FedProx (η=0.01, μ=0.1)"] * 2 + ["FedProx (η=0.1, μ=0.1)"] * 2,
            "seed": [0, 1, 0, 1],
            "global_acc": [80.0, 82.0, 85.0, 84.0],
        }
    )
    best = R.best_of_grid(runs)
    assert best["method"].tolist() == ["FedProx", "FedProx"] and set(best["chosen"]) == {
        "FedProx (η=0.1, μ=0.1)"
    }


def test_claims_of_a_column_not_run_are_listed_with_the_papers_verdict_in_that_column():
    """FEMNIST's column not run: its claims say so, each in the FEMNIST column, and their ``holds_in_paper``
    reads FEMNIST's printed numbers (Cluster2 76.12 > Equitable-FL 75.54 there, but 95.38 < 97.75 on MNIST,
    the table's first column)."""
    rows = R.BUNDLE.check("equitable_table2_femnist", None)
    assert (rows["result"] == NOT_RUN).all() and set(rows["dataset"]) == {"FEMNIST"}
    by_claim = rows.set_index("claim")["holds_in_paper"]
    assert by_claim["C5: Cluster2's accuracy > Equitable-FL's (FEMNIST)"] == "holds"
    assert by_claim["C1: Equitable-FL has a lower σ_Acc than FedProx"] == "holds"  # 16.21 < 22.99
    assert not rows["claim"].str.startswith("C4:").any()  # §5.3 excepts FEMNIST from the accuracy claim
    cifar100 = R.BUNDLE.check("equitable_table2_cifar100", None)
    assert set(cifar100["dataset"]) == {"CIFAR-100"} and cifar100["claim"].str.startswith("C4:").any()
    assert_sources(cifar100)
