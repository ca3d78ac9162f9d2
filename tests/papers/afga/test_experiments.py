"""AFGA's experiments (Tables 1-6, 8; Figs. 1, 2, 6): every paper row is run or has a reason, the protocol
and Table 9's learning rates reach the run configs, and the settings are the paper's."""

import pytest

from fairfl_core.experiments.profiles import experiment_configs, get_experiment
from fairfl_core.papers.afga import experiments as A
from fairfl_core.report.paper import load_paper_results

TABLES = [
    *(f"afga_table{t}_s{s}" for t in (1, 2, 3) for s in (1, 2)),
    "afga_table4_components",
    *(f"afga_table5_s{s}" for s in (1, 2, 3, 4)),
    "afga_table6_resnet18",
    "afga_table8_decentralised",
]


@pytest.mark.parametrize("name", TABLES)
def test_every_paper_row_is_run_or_has_a_reason(name):
    exp = get_experiment(name)
    paper = load_paper_results("afga")
    printed = set(paper.loc[paper["table"] == exp.paper.table, "method"])
    assert {m.paper_row for m in exp.method_list() if m.paper_row} == printed


@pytest.mark.parametrize("setting", [1, 2, 3, 4])
def test_paper_profile_is_the_papers_protocol(setting):
    name = (
        "afga_table1_s1" if setting == 1 else "afga_table1_s2" if setting == 2 else f"afga_table5_s{setting}"
    )
    n, m = A.SETTINGS[setting]
    for cfg in experiment_configs(name, "paper"):
        assert (cfg.data.num_clients, cfg.train.clients_per_round) == (n, m)
        assert cfg.data.partition == "dirichlet" and cfg.data.partition_options == {
            "alpha": 0.6,
            "min_size": 10,
        }
        assert (cfg.train.rounds, cfg.train.local_steps, cfg.train.batch_size, cfg.eval.every) == (
            500,
            24,
            50,
            1,
        )
        assert cfg.train.momentum == 0 and cfg.train.lr_decay == 1.0
        assert cfg.model.name == "convmixer"
        assert {k: cfg.model.options.get(k, d) for k, d in (("dim", 256), ("depth", 8))} == {
            "dim": 256,
            "depth": 8,
        }
    assert sorted({c.seed for c in experiment_configs(name, "paper")}) == [0, 1, 2]


def test_learning_rates_are_table_9_read_with_the_adaptive_columns_swapped():
    lrs = {
        c.name: (c.train.lr, c.algorithm.params.get("server_lr"))
        for c in experiment_configs("afga_table1_s2", "paper", seeds=[0])
    }
    assert (
        lrs["FedAvg"][0]
        == lrs["SCAFFOLD"][0]
        == lrs["FedProx (μ=0.01)"][0]
        == lrs["FedDyn (α=0.01)"][0]
        == 0.1
    )
    assert lrs["FedAMSGrad"][0] == lrs["FedAdam"][0] == 1.0 and lrs["FedAdam"][1] == 0.01
    assert lrs["AFGA"] == lrs["CAFGA"] == (2.0, None)  # η = 0.01 is AFGA's default
    cafga = next(c for c in experiment_configs("afga_table1_s2", "paper", seeds=[0]) if c.name == "CAFGA")
    assert cafga.algorithm.name == "cafga" and cafga.algorithm.params == {}


def test_table4_gossip_alone_keeps_the_selection_and_the_quick_profile_is_setting_2():
    methods = {m.label: m for m in get_experiment("afga_table4_components").method_list()}
    assert methods["+ Gossip"].params == {"resample": False}
    assert methods["+ Re-sampling (no gossip)"].params == {"gossip": False}
    for name in A.QUICK:
        configs = experiment_configs(name, "quick")
        for cfg in configs:
            assert (cfg.data.num_clients, cfg.train.clients_per_round, cfg.train.rounds) == (
                50,
                5,
                A.QUICK_ROUNDS,
            )
            assert cfg.model.options["dim"] == 32 and cfg.data.stand_in in (None, "CIFAR-10")
            assert cfg.eval.every == 1  # R# is read every round
        assert sorted({c.seed for c in configs}) == [0, 1, 2]  # the claims are decided on 3 seeds


def test_table4_has_the_matched_rate_control():
    lrs = {c.name: c.train.lr for c in experiment_configs("afga_table4_components", "paper", seeds=[0])}
    assert lrs["FedAMSGrad only"] == 1.0
    assert (
        lrs["FedAMSGrad only (η_l = 2.0)"] == lrs["+ Gossip"] == lrs["+ Gossip + Re-sampling (AFGA)"] == 2.0
    )


def test_the_communication_adapted_rows_use_the_selected_ring():
    for setting in (1, 2, 3, 4):
        adapted = [
            m for m in get_experiment(f"afga_table5_s{setting}").method_list() if m.label.endswith("(a)")
        ]
        assert len(adapted) == 1 and adapted[0].params["comm_adapted"] == "selected_ring"


def test_shakespeare_and_cifar100_tables_use_their_models_rates_and_targets():
    shakespeare = {c.name: c for c in experiment_configs("afga_table3_s1", "paper", seeds=[0])}
    assert shakespeare["AFGA"].train.lr == 10.0 and shakespeare["FedAvg"].train.lr == 1.0
    assert shakespeare["AFGA"].model.name == "lstm_afga" and shakespeare["AFGA"].train.local_steps == 100
    assert shakespeare["AFGA"].data.num_clients == 100 and shakespeare["AFGA"].data.partition == "natural"
    cifar100 = {c.name: c for c in experiment_configs("afga_table2_s2", "paper", seeds=[0])}
    assert cifar100["AFGA"].train.lr == 1.0 and cifar100["AFGA"].model.options == {"num_classes": 100}
    assert cifar100["AFGA"].train.rounds == 600
    assert (
        A.target("afga_table2_s1") == A.target("afga_table3_s2") == 52.0
        and A.target("afga_table1_s1") == 78.0
    )
    resnet = experiment_configs("afga_table6_resnet18", "paper", seeds=[0])[0]
    assert resnet.model.name == "resnet18" and resnet.model.options["norm"] == "batch"
