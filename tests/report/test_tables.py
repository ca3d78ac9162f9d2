import math

import pandas as pd
import pytest

from fairfl_core.report.results import load_runs
from fairfl_core.report.tables import aggregate, distinct_methods, format_mean_std, results_table, save_table
from tests.report.conftest import make_config, two_method_results, write_run


@pytest.fixture
def runs(tmp_path):
    return load_runs(tmp_path, two_method_results(tmp_path))


def test_format_mean_std_rounds_and_handles_missing_std_and_mean():
    assert format_mean_std(86.494, 0.0912) == "86.49 ± 0.09"
    assert format_mean_std(86.496, 0.0912, decimals=1) == "86.5 ± 0.1"
    assert format_mean_std(62.44, math.nan) == "62.44"  # one seed: no std
    assert format_mean_std(math.nan, 1.0) == "–"
    assert format_mean_std(None, None) == "–"


def test_aggregate_mean_and_sample_std_over_seeds_in_order_of_appearance(runs):
    agg = aggregate(runs, metrics=["var", "global_acc", "worst5"])
    assert list(dict.fromkeys(agg["method"])) == ["FedProx", "FedAvg"]
    var = agg[agg["metric"] == "var"].set_index("method")
    # FedProx final variances 125 and 50; FedAvg 500 and 200 (see conftest); std with ddof=1
    assert var.loc["FedProx", "mean"] == pytest.approx(87.5)
    assert var.loc["FedProx", "std"] == pytest.approx(75 / math.sqrt(2))
    assert var.loc["FedAvg", "mean"] == pytest.approx(350.0)
    assert var.loc["FedAvg", "std"] == pytest.approx(300 / math.sqrt(2))
    assert (var["n"] == 2).all() and (var["diverged"] == 0).all()
    worst = agg[agg["metric"] == "worst5"].set_index("method")
    assert worst.loc["FedAvg", "mean"] == pytest.approx(45.0)  # mean of the single worst client: 40, 50


def test_aggregate_counts_diverged_runs(runs):
    runs.loc[runs["method"].eq("FedAvg") & runs["seed"].eq(1), "status"] = "diverged"
    info = aggregate(runs, ["var"]).set_index("method")
    assert info.loc["FedAvg", "diverged"] == 1 and info.loc["FedProx", "diverged"] == 0
    # a diverged run's metrics are its last evaluation before the divergence, not a result: left out
    assert info.loc["FedAvg", "n"] == 1 and info.loc["FedAvg", "mean"] == pytest.approx(500.0)
    table = results_table(runs, metrics=["var"]).set_index("method")
    assert (
        table.loc["FedAvg", "Var. reproduced"] == "500.00"
        and table.loc["FedAvg", "diverged"] == "1 of 2 seeds"
    )
    runs.loc[runs["method"].eq("FedAvg"), "status"] = "diverged"
    table = results_table(runs, metrics=["var"]).set_index("method")
    assert (
        table.loc["FedAvg", "Var. reproduced"] == "diverged"
        and table.loc["FedAvg", "diverged"] == "2 of 2 seeds"
    )
    assert table.loc["FedProx", "diverged"] == "" and "diverged" not in results_table(
        runs[runs["method"].eq("FedProx")]
    )


def test_aggregate_rejects_unknown_metric(runs):
    with pytest.raises(KeyError, match="not_a_metric"):
        aggregate(runs, ["not_a_metric"])


def _paper(method="FedAvg", metric="var", value=62.44, std=4.55):
    return pd.DataFrame(
        [
            {
                "dataset": "fashion_mnist",
                "data": "fashion_mnist",
                "method": method,
                "metric": metric,
                "paper_value": value,
                "paper_std": std,
                "paper_dataset": "FashionMNIST",
                "source": "Table 1",
            }
        ]
    )


def test_results_table_puts_paper_beside_reproduced_only_where_the_paper_has_a_number(runs):
    table = results_table(runs, metrics=["global_acc", "var"], paper=_paper())
    assert list(table.columns) == [
        "dataset",
        "method",
        "seeds",
        "Global Acc. reproduced",
        "Var. reproduced",
        "Var. paper",
    ]
    rows = table.set_index("method")
    assert rows.loc["FedAvg", "Var. reproduced"] == "350.00 ± 212.13"
    assert rows.loc["FedAvg", "Var. paper"] == "62.44 ± 4.55"
    assert rows.loc["FedProx", "Var. paper"] == ""
    assert rows.loc["FedProx", "Global Acc. reproduced"] == "75.00 ± 1.41"
    assert "stand-in" not in table


def test_results_table_without_paper_has_no_paper_columns(runs):
    table = results_table(runs, metrics=["var"])
    assert not any("paper" in c for c in table.columns)


def test_results_table_labels_stand_in_datasets(tmp_path):
    runs = load_runs(tmp_path, two_method_results(tmp_path, stand_in="CIFAR-10"))
    table = results_table(runs, metrics=["var"])
    assert set(table["dataset"]) == {"fashion_mnist (stand-in for CIFAR-10)"}
    assert set(table["stand-in"]) == {"stand-in for CIFAR-10: compare effects, not values"}


def test_save_table_writes_csv_markdown_and_latex(tmp_path, runs):
    table = results_table(runs, metrics=["worst5"])
    paths = save_table(table, tmp_path / "out", "summary", caption="Worst clients")
    assert pd.read_csv(paths["csv"]).equals(table)
    caption, header = paths["md"].read_text().split("\n")[0::2][:2]
    assert caption == "Worst clients" and [c.strip() for c in header.split("|")[1:3]] == ["dataset", "method"]
    tex = paths["tex"].read_text()
    assert (
        "Worst 5\\% reproduced" in tex and "\\caption{Worst clients}" in tex and "\\label{tab:summary}" in tex
    )


def test_metrics_missing_in_every_run_show_a_dash_and_seeds_count_runs(runs):
    runs = runs.assign(group_gap=None)  # the runner stores None where a metric does not apply
    table = results_table(runs, metrics=["group_gap", "var"])
    assert set(table["Group gap reproduced"]) == {"–"} and table["seeds"].tolist() == [2, 2]
    info = aggregate(runs, ["group_gap"])
    assert info["n"].tolist() == [0, 0] and info["runs"].tolist() == [2, 2]


def _two_settings_of_fedprox(results_dir, names=("fedprox", "fedprox")):
    """FedProx at mu 0.01 and mu 0.1 under the given run names, seeds 0 and 1 (final variances 125, 50 at
    mu 0.01 and 500, 200 at mu 0.1)."""
    finals = {(0.01, 0): [60.0, 70.0, 80.0, 90.0], (0.01, 1): [65.0, 75.0, 75.0, 85.0]}
    finals |= {(0.1, 0): [40.0, 60.0, 80.0, 100.0], (0.1, 1): [50.0, 70.0, 70.0, 90.0]}
    configs = []
    for ((mu, seed), acc), name in zip(finals.items(), [names[0]] * 2 + [names[1]] * 2, strict=True):
        cfg = make_config(name, "fedprox", seed, params={"mu": mu})
        write_run(results_dir, cfg, {0: (10.0, [10.0] * 4), 4: (70.0, acc)})
        configs.append(cfg)
    return configs


def test_two_settings_of_one_algorithm_under_one_name_never_pool(tmp_path):
    configs = _two_settings_of_fedprox(tmp_path)
    for runs in (load_runs(tmp_path, configs), load_runs(tmp_path)):  # a sweep's summary; `fairfl summarize`
        table = results_table(runs, metrics=["var"]).set_index("method")
        assert sorted(table.index) == ["fedprox (mu=0.01)", "fedprox (mu=0.1)"]
        assert table["seeds"].tolist() == [2, 2]
        assert table.loc["fedprox (mu=0.01)", "Var. reproduced"] == "87.50 ± 53.03"
        assert table.loc["fedprox (mu=0.1)", "Var. reproduced"] == "350.00 ± 212.13"


def test_distinct_labels_of_settings_are_kept(tmp_path):
    runs = load_runs(tmp_path, _two_settings_of_fedprox(tmp_path, names=("FedProx small", "FedProx large")))
    assert distinct_methods(runs) is runs
    assert results_table(runs, metrics=["var"])["method"].tolist() == ["FedProx small", "FedProx large"]


def test_a_shared_label_is_split_by_the_config_fields_that_differ_and_only_within_a_dataset(tmp_path):
    configs = []
    for seed in (0, 1):
        for lr, data in ((0.1, "fashion_mnist"), (0.02, "fashion_mnist"), (0.02, "mnist")):
            cfg = make_config("FedAvg", seed=seed, data=data)
            cfg.train.lr = lr
            write_run(tmp_path, cfg, {4: (70.0, [60.0, 70.0, 80.0, 90.0 + seed])})
            configs.append(cfg)
    table = results_table(load_runs(tmp_path, configs), metrics=["var"])
    assert list(zip(table["dataset"], table["method"], table["seeds"], strict=True)) == [
        ("fashion_mnist", "FedAvg (train.lr=0.1)", 2),
        ("fashion_mnist", "FedAvg (train.lr=0.02)", 2),
        ("mnist", "FedAvg", 2),  # one setting on this dataset: its label is kept
    ]


def test_a_caption_says_what_ran():
    from fairfl_core.experiments.profiles import get_profile
    from fairfl_core.report.tables import caption

    text = caption("FedEBA+ Table 1", "fedeba_table1_fmnist", "quick")
    assert text.startswith("FedEBA+ Table 1 (quick profile: ")
    assert get_profile("fedeba_table1_fmnist", "quick").description in text  # rounds, seeds, substitutions
    assert text.endswith(
        "model mlp; data fashion_mnist, 100 clients, shards partition fixed across seeds (partition seed 0))"
    )
    assert caption("x", "afga_table1_s1", "quick").endswith("redrawn for each seed)")
    assert "seeds 0, 4;" in caption("x", "fedeba_table1_fmnist", "quick", seeds=[0, 4])
    # one seed has no spread: the caption does not promise one
    spread = "T: mean ± std over seeds"
    assert caption(spread, "fedeba_table1_fmnist", "quick").startswith(spread)  # 3 seeds
    assert caption(spread, "client_dropout", "quick").startswith("T: one seed, no spread (quick profile")
    assert caption(spread, "fedeba_table1_fmnist", "quick", seeds=[4]).startswith("T: one seed, no spread")


def test_a_caption_of_several_experiments_names_what_each_ran():
    from fairfl_core.papers.fedeba_plus.experiments import QUICK_BUDGETS
    from fairfl_core.report.tables import caption

    one = caption("T", ["fedeba_table1_fmnist", "fedeba_table1_fmnist"], "quick")
    assert one == caption("T", "fedeba_table1_fmnist", "quick")
    two = caption("T", ["fedeba_table1_fmnist", "fedeba_table9_mlp"], "quick")
    assert two.startswith("T (quick profile; fedeba_table1_fmnist: real Fashion-MNIST")
    assert "; fedeba_table9_mlp: " in two and "300 of the 2000 rounds" in two and "400 of the 2000" in two
    assert QUICK_BUDGETS in two  # two round budgets in one profile: the caption says why
