import pytest

from fairfl_core.experiments import profiles
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.profiles import (
    Experiment,
    Method,
    Profile,
    distinct_configs,
    experiment_configs,
    get_experiment,
    profile_table,
    register_experiment,
)


def _key(cfg):
    return cfg.name, cfg.algorithm.name, dict(cfg.algorithm.params), cfg.seed


def test_quickstart_smoke_is_fedavg_and_fedprox_on_the_fmnist_shards_workload():
    configs = experiment_configs("quickstart", "smoke")
    assert [_key(c) for c in configs] == [
        ("FedAvg", "fedavg", {}, 0),
        ("FedAvg", "fedavg", {}, 1),
        ("FedProx (μ=0.01)", "fedprox", {"mu": 0.01}, 0),
        ("FedProx (μ=0.01)", "fedprox", {"mu": 0.01}, 1),
    ]
    c = configs[0]
    assert (c.train.rounds, c.eval.every) == (6, 2)
    # everything else comes from configs/fmnist_baselines_sweep.yaml (FedEBA+ Table 1 setup)
    assert (c.data.name, c.data.partition, c.data.num_clients, c.data.partition_options) == (
        "fashion_mnist",
        "shards",
        100,
        {"shards_per_client": 2},
    )
    assert (c.train.clients_per_round, c.train.local_steps, c.train.batch_size, c.train.lr) == (
        10,
        10,
        50,
        0.1,
    )


@pytest.mark.parametrize(
    ("profile", "rounds", "seeds", "every"),
    [("quick", 300, [0, 1, 2], 10), ("paper", 2000, [0, 1, 2, 3, 4], 20)],
)
def test_quickstart_quick_and_paper_scale(profile, rounds, seeds, every):
    configs = experiment_configs("quickstart", profile)
    assert sorted({c.seed for c in configs}) == seeds and len(configs) == 2 * len(seeds)
    assert {(c.train.rounds, c.eval.every) for c in configs} == {(rounds, every)}


def test_seeds_overrides_and_device():
    base = experiment_configs("quickstart", "smoke", seeds=[3])
    assert [c.seed for c in base] == [3, 3]
    tuned = experiment_configs("quickstart", "smoke", seeds=[3], overrides=["train.lr=0.05"], device="cpu")
    assert {c.train.lr for c in tuned} == {0.05} and {c.engine.device for c in tuned} == {"cpu"}
    on_cpu = experiment_configs("quickstart", "smoke", seeds=[3], device="cpu")
    assert [config_hash(c) for c in on_cpu] == [config_hash(c) for c in base]  # device is not identity
    with pytest.raises(ValueError, match="seeds=\\[-1\\] must be a non-empty list"):
        experiment_configs("quickstart", "smoke", seeds=[-1])


def test_unknown_experiment_or_profile_lists_the_valid_ones():
    with pytest.raises(
        ValueError, match=r"unknown experiment 'nope'; registered experiments: \[.*'quickstart'"
    ):
        experiment_configs("nope", "smoke")
    with pytest.raises(ValueError, match=r"unknown profile 'fast'.*valid: \['smoke', 'quick', 'paper'\]"):
        experiment_configs("quickstart", "fast")


def test_profile_table_describes_each_scale():
    table = profile_table("quickstart")
    assert table["profile"].tolist() == ["smoke", "quick", "paper"]
    assert table.set_index("profile").loc["paper", "rounds"] == 2000


def _experiment(name="toy", profiles_=None, config="fmnist_baselines_sweep.yaml", methods=None):
    p = Profile("tiny", 2, (0,), 1, overrides=("data.num_clients=20",))
    return Experiment(name, "", config, profiles_ or {"smoke": p, "quick": p, "paper": p}, methods)


def test_register_experiment_checks_profiles_names_and_config(monkeypatch):
    monkeypatch.setattr(profiles, "EXPERIMENTS", {})
    register_experiment(_experiment())
    assert get_experiment("toy").name == "toy"
    with pytest.raises(ValueError, match="registered twice"):
        register_experiment(_experiment())
    p = Profile("p", 1, (0,), 1)
    with pytest.raises(ValueError, match=r"missing \['paper'\], unknown \['ci'\]"):
        register_experiment(_experiment("b", {"smoke": p, "quick": p, "ci": p}))
    with pytest.raises(FileNotFoundError, match="no config missing.yaml"):
        register_experiment(_experiment("c", config="missing.yaml"))


def test_methods_default_to_the_config_sweep_list_with_readable_labels(monkeypatch):
    monkeypatch.setattr(profiles, "EXPERIMENTS", {})
    register_experiment(_experiment())
    configs = experiment_configs("toy", "smoke")
    assert [_key(c) for c in configs] == [
        ("fedavg", "fedavg", {}, 0),
        ("fedprox (mu=0.01)", "fedprox", {"mu": 0.01}, 0),
    ]
    assert {c.data.num_clients for c in configs} == {20}  # the profile's override


def test_profile_rejects_empty_seeds_and_nonpositive_rounds():
    with pytest.raises(ValueError, match="at least one seed"):
        Profile("p", 1, (), 1)
    with pytest.raises(ValueError, match="rounds=0"):
        Profile("p", 0, (0,), 1)


def test_method_sweep_entry_carries_label_and_params():
    assert Method("Q", "qffl", {"q": 0.5}, "q-FFL").as_sweep_entry() == {
        "name": "qffl",
        "params": {"q": 0.5},
        "label": "Q",
    }


def test_method_overrides_apply_to_its_own_runs_only_and_leave_the_others_hashes(monkeypatch):
    monkeypatch.setattr(profiles, "EXPERIMENTS", {})
    plain = Method("FedAvg", "fedavg")
    control = Method("FedAvg (lr 0.02)", "fedavg", overrides=("train.lr=0.02",))
    assert "overrides" not in plain.as_sweep_entry()
    assert control.as_sweep_entry()["overrides"] == ["train.lr=0.02"]
    register_experiment(_experiment())
    without = experiment_configs("toy", "smoke")
    monkeypatch.setattr(profiles, "EXPERIMENTS", {})
    register_experiment(_experiment(methods=(plain, control)))
    fedavg, fedavg_slow = experiment_configs("toy", "smoke")
    assert fedavg.train.lr == without[0].train.lr != 0.02 and fedavg_slow.train.lr == 0.02
    assert config_hash(fedavg) == config_hash(without[0]) != config_hash(fedavg_slow)
    assert fedavg_slow.name == "FedAvg (lr 0.02)"


def test_distinct_configs_lists_a_run_two_tables_share_once():
    seed0, seed1 = (experiment_configs("quickstart", "smoke", seeds=[s]) for s in (0, 1))
    assert distinct_configs({"a": seed0, "b": [*seed0, *seed1]}) == [*seed0, *seed1]
