"""The group-fairness experiments (``papers/group_fairness/experiments.py``): their runs and profiles, the
partition in the config, and a run's summary and evaluations on data with a sensitive attribute (small files
in the real formats, ``tests/data/tabular_files.py``) against one on data without."""

from __future__ import annotations

import numpy as np
import pytest

from fairfl_core import metrics
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import experiment_configs, get_experiment
from fairfl_core.experiments.runner import run_experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.papers.group_fairness import experiments as G
from tests.data.tabular_files import ADULT_FEATURES, COMPAS_FEATURES, write_tabular
from tests.experiments.conftest import digits_config


def test_the_experiments_run_every_method_on_both_data_sets_at_two_heterogeneity_levels():
    assert G.EXPERIMENTS == [
        "group_fairness_adult",
        "group_fairness_adult_skewed",
        "group_fairness_compas",
        "group_fairness_compas_skewed",
    ]
    labels = [m.label for m in get_experiment("group_fairness_adult").method_list()]
    assert labels[:4] == [G.FEDAVG.label, G.FAIRFED.label, G.GIFAIR_GLOBAL.label, G.GIFAIR_PER.label]
    algorithms = {m.algorithm for m in G.METHODS}
    assert algorithms == {
        "fedavg",
        "fairfed",
        "gifair_global",
        "gifair_per",
        "qffl",
        "fedeba+",
        "ditto",
        "afl",
    }
    for name in G.EXPERIMENTS:
        quick = experiment_configs(name, "quick")
        assert len({c.seed for c in quick}) >= 5 and len(quick) == 5 * len(G.METHODS)
        data = quick[0].data
        assert data.partition == "sensitive_dirichlet" and data.num_clients == 5
        assert data.partition_options["alpha"] == (0.1 if name.endswith("_skewed") else 0.5)
        assert data.partition_seed is None  # redrawn for each seed, shared by the methods of a seed
        assert {c.train.clients_per_round for c in quick} == {5}
    gifair = next(
        c for c in experiment_configs("group_fairness_compas", "smoke") if c.algorithm.name == "gifair_per"
    )
    assert gifair.algorithm.params["groups"] == "sensitive"
    assert experiment_configs("group_fairness_compas", "quick")[0].data.loader_options == {
        "sensitive": "race",
        "split_seed": 0,
    }


def test_the_partition_is_part_of_the_config_and_its_hash():
    mild, skewed = (experiment_configs(n, "quick", seeds=[0])[0] for n in G.EXPERIMENTS[:2])
    assert mild.data.partition_options != skewed.data.partition_options
    assert config_hash(mild) != config_hash(skewed)


def test_the_models_input_matches_the_real_data():
    assert experiment_configs("group_fairness_adult", "smoke")[0].model.options["in_features"] == 87
    assert experiment_configs("group_fairness_compas", "smoke")[0].model.options["in_features"] == 18


@pytest.fixture
def small_data(tmp_path, unlisted_files):
    return write_tabular(tmp_path / "data")


def _run(name: str, algorithm: str, root, results) -> tuple[dict, list[dict]]:
    features = ADULT_FEATURES if "adult" in name else COMPAS_FEATURES
    overrides = [
        f"data.root={root}",
        "data.num_clients=3",
        "train.clients_per_round=3",
        "data.partition_options={alpha: 5.0, min_size: 5}",
        f"model.options.in_features={features}",
    ]
    cfg = next(
        c for c in experiment_configs(name, "smoke", overrides=overrides) if c.algorithm.name == algorithm
    )
    result = run_experiment(cfg, results, progress=False)
    return result.summary, RunStore(result.path).records("evals")


@pytest.mark.parametrize("algorithm", ["fedavg", "fairfed", "gifair_per"])
def test_a_run_records_the_group_metrics_in_its_evaluations_and_summary(small_data, tmp_path, algorithm):
    summary, evals = _run("group_fairness_adult", algorithm, small_data, tmp_path / "results")
    last = evals[-1]
    counts = last["group_counts"]
    assert counts["groups"] == ["female", "male"]
    assert np.asarray(counts["pooled"]).sum() == 28  # the official test rows without a missing value
    assert np.asarray(counts["client"]).shape == (3, 2, 2, 2)
    assert last["spd"] == metrics.statistical_parity_difference(counts["pooled"])
    assert last["eod"] == metrics.equal_opportunity_difference(counts["pooled"])
    models = "personal" if algorithm == "gifair_per" else "client"
    expected = metrics.parity_summary(counts["pooled"], counts[models], names=counts["groups"])
    for key, value in expected.items():
        assert summary[key] == value, key
    assert summary["spd"] == last["spd"] and summary["eod_abs"] == abs(last["eod"])
    if algorithm == "gifair_per":  # the personalised method's global model keeps its own group metrics
        assert summary["global_model"]["local_spd"] == expected_global(counts)
    assert all("spd" in e and "group_counts" in e for e in evals)


def expected_global(counts) -> float | None:
    return metrics.parity_summary(counts["pooled"], counts["client"])["local_spd"]


def test_compas_runs_and_other_data_carry_no_group_metrics(small_data, tmp_path):
    summary, _ = _run("group_fairness_compas_skewed", "fairfed", small_data, tmp_path / "results")
    assert summary["status"] == "complete" and "eod" in summary
    plain = run_experiment(digits_config(rounds=2), tmp_path / "digits", progress=False)
    assert not {"spd", "eod", "local_spd", "client_eod_defined"} & set(plain.summary)
    assert not any("group_counts" in e or "spd" in e for e in RunStore(plain.path).records("evals"))
