"""SubTrunc/UnionFL experiments (Tables I–IV): every printed row has a run, the shared runs are one run, the
paper's constants reach the configs, and the notebook's plan says why a table is not run and still lists its
claims."""

import pytest

from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs, get_experiment
from fairfl_core.papers.submodular_selection import claims as R
from fairfl_core.papers.submodular_selection import experiments as E
from fairfl_core.report.bundle import NOT_RUN
from fairfl_core.report.paper import load_paper_results

NAMES = [f"submodular_table{i}_{key}" for key in ("mnist", "cifar10") for i in range(1, 5)]


@pytest.mark.parametrize("name", NAMES)
def test_every_printed_row_has_a_run(name):
    exp = get_experiment(name)
    paper = load_paper_results("submodular_selection")
    printed = set(paper.loc[paper["table"] == exp.paper.table, "method"])
    rows = {m.paper_row for m in exp.method_list()}
    assert rows - {None} == printed  # None: SubTrunc under the other readings of G's scale, labelled
    for m in exp.method_list():
        if m.paper_row is None:
            assert m.algorithm == "subtrunc" and E.reading_of(m) != E.READING
            assert f"{E.reading_of(m)} G" in m.label


def test_the_other_readings_differ_from_subtrunc_only_in_the_scale_of_g():
    cfg = {c.name: c for c in experiment_configs("submodular_table1_mnist", "paper", seeds=[0])}
    default = cfg["SubTrunc (λ=0.95, averaged G)"].algorithm.params
    assert "objective_scale" not in default  # the default reading (SubTruncHyper's)
    for reading in ("literal", "normalised"):
        other = cfg[f"SubTrunc (λ=0.95, {reading} G)"].algorithm.params
        assert other == {**default, "objective_scale": reading}
    quick = {c.name for c in experiment_configs("submodular_table1_mnist", "quick", seeds=[0])}
    assert "SubTrunc (λ=0.95, literal G)" in quick and "SubTrunc (λ=0.95, normalised G)" not in quick


def test_the_lambda_sweep_runs_under_both_readings_with_three_seeds_at_quick():
    quick = experiment_configs("submodular_table2_mnist", "quick")
    assert {c.seed for c in quick} == {0, 1, 2}
    runs = {(c.algorithm.params["lam"], c.algorithm.params.get("objective_scale", E.READING)) for c in quick}
    assert runs == {(x, r) for x in E.QUICK_LAMBDAS for r in (E.READING, E.ALTERNATIVE)}
    paper = experiment_configs("submodular_table2_mnist", "paper", seeds=[0])
    assert len(paper) == 2 * len(E.LAMBDAS)
    assert {c.seed for c in experiment_configs("submodular_table1_mnist", "quick")} == {0, 1, 2}


def test_shared_rows_are_one_run_and_the_constants_are_the_papers():
    def hashes(name):
        return {c.name: config_hash(c) for c in experiment_configs(name, "paper", seeds=[0])}

    t1, t2, t3, t4 = (hashes(f"submodular_table{i}_mnist") for i in range(1, 5))
    sub = "SubTrunc (λ=0.95, averaged G)"
    assert t1[sub] == t2[sub] == t4[sub]
    assert t1["SubTrunc (λ=0.95, literal G)"] == t2["SubTrunc (λ=0.95, literal G)"]
    assert t1["UnionFL (window=5)"] == t3["UnionFL (window=5)"]
    cfg = {c.name: c for c in experiment_configs("submodular_table1_mnist", "paper", seeds=[0])}
    sub = cfg[sub]
    assert sub.algorithm.params == {"pool_size": 10, "lam": 0.95}
    assert (sub.data.num_clients, sub.train.clients_per_round) == (100, 10)
    assert sub.data.partition == "pathological" and sub.data.partition_options == {"classes_per_client": 3}
    cifar = {c.name: c for c in experiment_configs("submodular_table1_cifar10", "paper", seeds=[0])}
    assert (
        cifar["SubTrunc (λ=0.5, averaged G)"].algorithm.params["lam"] == 0.5
        and cifar["Random"].train.lr == 0.02
    )
    assert cifar["Random"].model.name == "lenet5_cifar10" and cifar["Random"].train.rounds == 200


@pytest.mark.parametrize("column", ["MNIST", "CIFAR-10"])
def test_calibration_runs_random_over_the_lr_grid_to_the_largest_k(column):
    name = f"submodular_calibration_{E.COLUMNS[column]}"
    assert E.column_of(name) == column
    rounds, lrs = E.CALIBRATION[column]
    paper = experiment_configs(name, "paper", seeds=[0])
    assert [(c.algorithm.name, c.algorithm.params, c.train.lr) for c in paper] == [
        ("fedavg", {"weighting": "uniform"}, lr) for lr in lrs
    ]
    assert {c.train.rounds for c in paper} == {max(rounds)} and paper[0].train.lr == (
        0.01 if column == "MNIST" else 0.02
    )
    assert E.calibration_rounds(column, "paper") == rounds
    assert E.calibration_rounds(column, "quick") == (experiment_configs(name, "quick")[0].train.rounds,)
    # the calibration's default-η Random at quick is Table I's Random run (one run, shared)
    table1 = {
        c.name: config_hash(c)
        for c in experiment_configs(f"submodular_table1_{E.COLUMNS[column]}", "quick", seeds=[0])
    }
    assert config_hash(experiment_configs(name, "quick", seeds=[0])[0]) == table1["Random"]


def test_calibrated_values_reach_every_table_run():
    assert E.calibrated_overrides(150, 0.02, "paper") == ("train.lr=0.02", "train.rounds=150")
    assert E.calibrated_overrides(150, 0.02, "quick") == ("train.lr=0.02",)
    cfgs = experiment_configs(
        "submodular_table2_cifar10", "paper", seeds=[0], overrides=E.calibrated_overrides(300, 0.05, "paper")
    )
    assert {(c.train.rounds, c.train.lr) for c in cfgs} == {(300, 0.05)}


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_every_table_of_both_columns_is_claimed_and_listed_where_the_profile_does_not_run_it(profile):
    names, skipped = R.BUNDLE.planned(profile)
    assert R.BUNDLE.claimed(list(R.BUNDLE.experiments)) == [
        f"submodular_table{i}_{key}" for i in range(1, 5) for key in ("mnist", "cifar10")
    ]  # Tables I–IV, both columns: every one has claims
    assert set(names) | set(skipped) == set(NAMES)
    for name in skipped:
        table = R.claims_table(name, None)
        assert len(table) and (table["result"] == NOT_RUN).all() and (table["kind"] == "paper").all()
        assert set(table["dataset"]) == {E.column_of(name)}
        rate = table["metric"] == "ln_loss_auc"  # the paper prints no training-loss curve
        assert set(table.loc[~rate, "holds_in_paper"]) <= {"holds", "fails"}
        assert set(table.loc[rate, "holds_in_paper"]) <= {"n/a"}
