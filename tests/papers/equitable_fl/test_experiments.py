"""Equitable-FL's experiments: Table 2/3 rows against the paper's CSV, the offline stand-ins' structure,
the profiles, and the ablation grids."""

import pytest

from fairfl_core.data.partition import GroupSpec
from fairfl_core.experiments.profiles import experiment_configs, get_experiment
from fairfl_core.papers.equitable_fl import experiments as E
from fairfl_core.report.paper import load_paper_results

TABLES = [f"equitable_table{t}_{k}" for t in (2, 3) for k in E.SETTINGS]


def test_table2_rows_are_the_papers_seven_rows():
    paper = load_paper_results("equitable_fl")
    assert set(paper["method"]) == set(E.ROWS) and set(paper["dataset"]) == set(E.DATASETS)
    for name in TABLES:
        assert {m.paper_row for m in get_experiment(name).method_list()} == set(E.ROWS), name


@pytest.mark.parametrize("name", TABLES)
def test_every_profile_builds_valid_configs(name):
    for profile in ("smoke", "quick", "paper"):
        cfgs = experiment_configs(name, profile)
        assert len({(c.name, c.seed) for c in cfgs}) == len(cfgs)  # labels unique per seed
        for cfg in cfgs:
            cfg.validate()
            assert cfg.train.local_epochs == (
                1 if cfg.algorithm.name == "centralized" or profile == "smoke" else 5
            )


def test_paper_profile_runs_the_eta_mu_grid_with_the_papers_rounds():
    cfgs = experiment_configs("equitable_table2_mnist", "paper")
    assert {c.seed for c in cfgs} == {0, 1, 2} and {c.train.rounds for c in cfgs} == {250}
    labels = {c.name for c in cfgs}
    assert len(labels) == 6 * len(E.ETA_GRID) * len(E.MU_GRID) + len(E.ETA_GRID)  # Centralized: η only
    eq = [c for c in cfgs if c.algorithm.name == "equitable_fl"]
    assert {(c.train.lr, c.algorithm.params["mu"]) for c in eq} == {
        (a, b) for a in E.ETA_GRID for b in E.MU_GRID
    }
    resnet = experiment_configs("equitable_table3_cifar100", "paper")
    assert {c.train.rounds for c in resnet} == {100} and {c.model.name for c in resnet} == {"resnet18"}
    assert {c.train.batch_size for c in resnet} == {40} and resnet[0].model.options["norm"] == "batch"


def test_equitable_fl_uses_the_planted_number_of_clusters_and_fedprox_local_steps():
    for key, s in E.SETTINGS.items():
        cfgs = experiment_configs(f"equitable_table2_{key}", "quick")
        eq = next(c for c in cfgs if c.algorithm.name == "equitable_fl")
        assert eq.algorithm.params["num_clusters"] == s.clusters
        assert all(c.algorithm.params.get("mu") == E.MU for c in cfgs if c.algorithm.name != "centralized")
        assert eq.train.clients_per_round == (18 if key == "femnist" else 4)


@pytest.mark.skipif(E.SETTINGS["cifar100"].present, reason="real CIFAR-100 present")
def test_offline_stand_ins_keep_the_papers_client_structure():
    cfg = experiment_configs("equitable_table2_cifar100", "quick")[0]
    assert cfg.data.name == "fashion_mnist" and cfg.data.stand_in == "CIFAR-100"
    groups = [GroupSpec(**g) for g in cfg.data.partition_options["groups"]]
    assert [g.num_clients for g in groups] == [2, 3, 5]
    assert [g.per_class * len(g.classes) for g in groups] == [4400, 4800, 5000]  # Table 1's per-client sizes
    femnist = experiment_configs("equitable_table2_femnist", "quick")[0]
    sizes = [g["num_clients"] for g in femnist.data.partition_options["groups"]]
    assert sizes == [8, 36, 16, 18, 12] and femnist.data.stand_in == "FEMNIST"
    classes = [c for g in femnist.data.partition_options["groups"] for c in g["classes"]]
    assert sorted(classes) == list(range(10))  # label-disjoint, every class once


def test_quick_profiles_decide_on_three_seeds():
    for name in ("equitable_table2_mnist", "equitable_table2_cifar10", *E.ABLATIONS):
        assert sorted({c.seed for c in experiment_configs(name, "quick")}) == [0, 1, 2]


def test_ablations_vary_one_hyperparameter_of_equitable_fl():
    c = experiment_configs("equitable_table4_clusters", "quick")
    grid = [(x.algorithm.params["num_clusters"], x.train.clients_per_round) for x in c if x.seed == 0]
    # C = 4 = r would be uniform averaging (C = 1 by construction): C = 4 runs only at r = 6
    assert grid == [(1, 4), (2, 4), (3, 4), (1, 6), (2, 6), (3, 6), (4, 6)]
    assert all(k < r or k == 1 for k, r in grid)
    e = experiment_configs("equitable_table4_epochs", "paper")
    assert sorted({x.train.local_epochs for x in e}) == [1, 5, 10] and e[0].train.rounds == 50
    mu = experiment_configs("equitable_table5_mu", "quick")
    assert [x.algorithm.params["mu"] for x in mu if x.seed == 0] == list(E.MU_GRID)
