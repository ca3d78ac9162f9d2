"""DataSpec and make_federated: the FedEBA+ FMNIST setting on the real data, determinism, the groups /
matched-test path (Equitable-FL), natural owners, and config errors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from fairfl_core.data import DATASETS, DataSpec, make_federated
from fairfl_core.data.build import symmetric_label_noise
from fairfl_core.data.federated import Dataset

needs_fmnist = pytest.mark.skipif(
    not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").is_file(),
    reason="real Fashion-MNIST absent: apt-get install dataset-fashion-mnist",
)
FEDEBA = {
    "name": "fashion_mnist",
    "partition": "shards",
    "num_clients": 100,
    "partition_options": {"shards_per_client": 2},
}


def client_sets(fed) -> list[tuple[int, ...]]:
    return [
        tuple(sorted(torch.cat([a, b]).tolist()))
        for a, b in zip(fed.client_train, fed.client_test, strict=True)
    ]


@pytest.fixture(scope="module")
def fedeba_fmnist():
    return make_federated(DataSpec.from_dict(FEDEBA), seed=0)


# -- the FedEBA+ FMNIST setting at full scale ---------------------------------------------------------------
@needs_fmnist
def test_fedeba_fmnist_setting(fedeba_fmnist):
    fed = fedeba_fmnist
    assert fed.num_clients == 100 and fed.x.shape == (70000, 1, 28, 28)
    assert fed.train_sizes().tolist() == [480] * 100 and fed.test_sizes().tolist() == [120] * 100
    all_local = torch.cat([*fed.client_train, *fed.client_test])
    assert len(torch.unique(all_local)) == 60000 and int(all_local.max()) < 60000  # the whole train pool
    for a, b in zip(fed.client_train, fed.client_test, strict=True):
        assert len(torch.unique(fed.y[torch.cat([a, b])])) <= 2
    assert torch.equal(fed.pooled_test, torch.arange(60000, 70000))
    assert torch.bincount(fed.y[fed.pooled_test]).tolist() == [1000] * 10
    assert fed.groups.tolist() == [-1] * 100 and fed.num_groups == 0
    assert fed.meta["partition"] == "shards" and fed.meta["test_frac"] == 0.2
    assert fed.mean == (0.2860,) and "fashion-mnist" in fed.source


@needs_fmnist
def test_same_seed_same_indices_other_seed_other_indices(fedeba_fmnist):
    again = make_federated(DataSpec.from_dict(FEDEBA), seed=0)
    assert all(torch.equal(a, b) for a, b in zip(again.client_train, fedeba_fmnist.client_train, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(again.client_test, fedeba_fmnist.client_test, strict=True))
    other = make_federated(DataSpec.from_dict(FEDEBA), seed=1)
    assert client_sets(other) != client_sets(fedeba_fmnist)


@needs_fmnist
def test_a_fixed_partition_seed_keeps_clients_and_varies_the_local_split(fedeba_fmnist):
    spec = DataSpec.from_dict({**FEDEBA, "partition_seed": 0})
    run1, run2 = make_federated(spec, seed=1), make_federated(spec, seed=2)
    assert client_sets(run1) == client_sets(run2) == client_sets(fedeba_fmnist)
    assert not all(torch.equal(a, b) for a, b in zip(run1.client_test, run2.client_test, strict=True))
    assert run1.meta["partition_seed"] == 0 and run1.meta["seed"] == 1


@needs_fmnist
def test_equitable_fl_groups_with_matched_test_on_fmnist_stand_in():
    spec = DataSpec(
        "fashion_mnist",
        partition="groups",
        partition_options={"preset": "equitable_fl"},
        client_test="matched",
        stand_in="MNIST",
        partition_seed=0,
    )
    fed = make_federated(spec, seed=0)
    assert fed.train_sizes().tolist() == [3200] * 4 + [4800] * 6  # 800 per class per client
    assert fed.test_sizes().tolist() == [1000] * 10  # 4000 / 4 and 6000 / 6 official test images
    test_counts = fed.class_counts("test")
    assert test_counts[:4, :4].tolist() == [[250] * 4] * 4 and test_counts[:4, 4:].sum() == 0
    assert fed.groups.tolist() == [0] * 4 + [1] * 6
    assert fed.group_names[0].startswith("cluster 1") and fed.label() == "fashion_mnist (stand-in for MNIST)"
    assert int(torch.cat(fed.client_test).min()) >= 60000  # from the official test pool


# -- small real data (digits) -------------------------------------------------------------------------------
def test_dirichlet_on_digits_with_local_union_pool():
    spec = DataSpec(
        "digits",
        partition="dirichlet",
        num_clients=10,
        partition_options={"alpha": 0.5},
        pooled_test="local_union",
    )
    fed = make_federated(spec, seed=3)
    assert int((fed.train_sizes() + fed.test_sizes()).min()) >= 10
    assert torch.equal(fed.pooled_test, torch.sort(torch.cat(fed.client_test)).values)
    assert fed.meta["unassigned_train"] == 0
    assert json.dumps(asdict(spec))  # the config is plain data


def test_pathological_with_matched_test_on_digits():
    spec = DataSpec(
        "digits", partition="pathological", num_clients=10, partition_options={"classes_per_client": 3}
    )
    fed = make_federated(DataSpec(**{**asdict(spec), "client_test": "matched"}), seed=0)
    train, test = fed.class_counts("train") > 0, fed.class_counts("test") > 0
    assert (train.sum(axis=1) == 3).all() and np.array_equal(train, test)
    assert sum(fed.test_sizes()) == 360  # every official test image goes to a holder of its class


def test_natural_partition_uses_the_owner_split(monkeypatch):
    def fake(root=None):
        x = torch.arange(12, dtype=torch.float32)[:, None]
        owners = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3])
        y = torch.zeros(12, dtype=torch.int64)
        names = ["ann", "bob", "cy", "dee"]
        return Dataset(
            "fake", x, y, x[:4], y[:4], 1, "fake",
            owner_train=owners, owner_test=torch.tensor([0, 2, 2, 3]), owner_names=names,
        )  # fmt: skip

    monkeypatch.setitem(DATASETS, "fake", fake)
    fed = make_federated(DataSpec("fake", partition="natural", partition_options={"min_samples": 3}), seed=0)
    assert fed.client_names == ["ann", "cy", "dee"]  # bob has 2 < 3 samples
    assert [ix.tolist() for ix in fed.client_train] == [[0, 1, 2], [5, 6, 7, 8], [9, 10, 11]]
    assert [ix.tolist() for ix in fed.client_test] == [
        [12],
        [13, 14],
        [15],
    ]  # test pool follows the train pool
    two = make_federated(DataSpec("fake", partition="natural", num_clients=2), seed=0)
    assert two.num_clients == 2


# -- validation split (GIFAIR-FL's 70/10/20) ----------------------------------------------------------------
def _digest(fed) -> str:
    h = hashlib.sha256()
    for part in (fed.client_train, fed.client_test):
        for ix in part:
            h.update(ix.numpy().tobytes())
            h.update(b"|")
    h.update(fed.pooled_test.numpy().tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(
    ("spec", "digest"),
    [
        (
            {
                "name": "digits",
                "partition": "dirichlet",
                "num_clients": 12,
                "partition_options": {"alpha": 0.5},
            },
            "1900cea5624da1f9",
        ),
        (
            {
                "name": "digits",
                "partition": "pathological",
                "num_clients": 10,
                "partition_options": {"classes_per_client": 3},
                "client_test": "matched",
            },
            "d0e03931768d2d1a",
        ),
        (
            {
                "name": "synthetic",
                "partition": "natural",
                "num_clients": 10,
                "loader_options": {"num_clients": 30},
            },
            "6a99e8df7d1e54f6",
        ),
    ],
)
def test_without_validation_the_indices_are_those_before_val_frac_existed(spec, digest):
    fed = make_federated(DataSpec.from_dict(spec), seed=3)  # digests recorded before val_frac was added
    assert _digest(fed) == digest
    assert not fed.has_validation and fed.val_sizes().tolist() == [0] * fed.num_clients


def _union(*parts) -> list[list[int]]:
    return [sorted(torch.cat(ix).tolist()) for ix in zip(*parts, strict=True)]


def test_local_validation_is_a_third_part_of_the_random_split():
    spec = {"name": "digits", "partition": "iid", "num_clients": 7, "partition_seed": 0}
    plain = make_federated(DataSpec.from_dict(spec), seed=1)
    fed = make_federated(DataSpec.from_dict({**spec, "val_frac": 0.1}), seed=1)
    n = plain.train_sizes() + plain.test_sizes()  # 1437 digits over 7 clients: 205 or 206 each
    assert fed.val_sizes().tolist() == np.floor(0.1 * n + 0.5).astype(int).tolist()
    assert (fed.train_sizes() == n - fed.val_sizes() - fed.test_sizes()).all()  # p_k: training samples
    assert all(torch.equal(a, b) for a, b in zip(fed.client_test, plain.client_test, strict=True))
    assert _union(fed.client_train, fed.client_val) == _union(plain.client_train)
    assert fed.has_validation and fed.meta["val_frac"] == 0.1
    again = make_federated(DataSpec.from_dict({**spec, "val_frac": 0.1}), seed=1)
    assert all(torch.equal(a, b) for a, b in zip(fed.client_val, again.client_val, strict=True))


def test_matched_test_keeps_its_pool_and_validation_comes_from_the_client_data():
    spec = {
        "name": "digits",
        "partition": "pathological",
        "num_clients": 10,
        "partition_options": {"classes_per_client": 3},
        "client_test": "matched",
    }
    plain = make_federated(DataSpec.from_dict(spec), seed=0)
    fed = make_federated(DataSpec.from_dict({**spec, "val_frac": 0.1}), seed=0)
    assert all(torch.equal(a, b) for a, b in zip(fed.client_test, plain.client_test, strict=True))
    assert _union(fed.client_train, fed.client_val) == _union(plain.client_train)
    assert fed.val_sizes().tolist() == np.floor(0.1 * plain.train_sizes() + 0.5).astype(int).tolist()


def _owners_dataset(gap: int):
    def load(root=None):
        owners = torch.tensor([0] * 10 + [1] * 4)  # owner a: 10 training windows, owner b: 4
        x = torch.arange(14, dtype=torch.float32)[:, None]
        y = torch.zeros(14, dtype=torch.int64)
        test_owners = torch.tensor([0, 0, 1, 1])
        return Dataset(
            "windows", x, y, x[:4], y[:4], 1, "fake", owner_train=owners, owner_test=test_owners,
            owner_names=["a", "b"], meta={"window_gap": gap},
        )  # fmt: skip

    return load


def test_natural_validation_is_the_end_of_each_owners_training_windows_behind_the_gap(monkeypatch):
    monkeypatch.setitem(DATASETS, "windows", _owners_dataset(gap=2))
    fed = make_federated(DataSpec("windows", partition="natural", val_frac=0.1), seed=0)
    # owner a: round(0.1 * (10 + 2)) = 1 validation window, the last; the 2 before it dropped (leak-free);
    # owner b: round(0.1 * (4 + 2)) = 1, and after the gap of 2 one training window is left
    assert [ix.tolist() for ix in fed.client_val] == [[9], [13]]
    assert [ix.tolist() for ix in fed.client_train] == [[0, 1, 2, 3, 4, 5, 6], [10]]
    assert [ix.tolist() for ix in fed.client_test] == [[14, 15], [16, 17]]  # the loader's own test split
    monkeypatch.setitem(DATASETS, "windows", _owners_dataset(gap=3))
    with pytest.raises(ValueError, match="client 1: 4 samples cannot give 1 held out after a gap of 3"):
        make_federated(DataSpec("windows", partition="natural", val_frac=0.1), seed=0)


# -- errors name the field ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "digits", "partiton": "iid"}, "unknown key 'partiton'"),
        ({"partition": "iid"}, "key 'name'"),
        ({"name": "imagenet"}, "name='imagenet'"),
        ({"name": "digits", "partition": "zipf"}, "partition='zipf'"),
        (
            {"name": "digits", "partition": "shards", "partition_options": {"alpha": 1}},
            "partition_options.alpha",
        ),
        ({"name": "digits", "test_frac": 1.5}, "test_frac=1.5"),
        ({"name": "digits", "pooled_test": "all"}, "pooled_test='all'"),
        ({"name": "digits", "num_clients": 0}, "num_clients=0"),
        ({"name": "digits", "val_frac": -0.1}, "val_frac=-0.1 with test_frac=0.2: need val_frac >= 0"),
        ({"name": "digits", "test_frac": 0.5, "val_frac": 0.5}, "test_frac \\+ val_frac < 1"),
    ],
)
def test_spec_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        DataSpec.from_dict(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (DataSpec("digits", num_clients=5000), "num_clients=5000 exceeds the 1437 samples"),
        (DataSpec("digits", partition="iid"), "num_clients is required"),
        (
            DataSpec("digits", partition="shards", num_clients=1000),
            "num_shards=2000 .* exceeds the 1437 samples",
        ),
        (DataSpec("digits", partition="dirichlet", num_clients=5, partition_options={"alpha": 0}), "alpha=0"),
        (
            DataSpec(
                "digits", partition="groups", num_clients=7, partition_options={"preset": "equitable_fl"}
            ),
            "num_clients=7 but the groups hold 10 clients",
        ),
        (DataSpec("digits", partition="groups"), "exactly one of partition_options.preset"),
        (DataSpec("digits", partition="natural"), "needs a dataset with owners"),
    ],
)
def test_make_federated_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        make_federated(spec, seed=0)


def test_explicit_groups_in_the_config():
    groups = [
        {"name": "low", "classes": [0, 1], "num_clients": 2, "per_class": 20},
        {"name": "high", "classes": [8, 9], "num_clients": 1},
    ]
    fed = make_federated(
        DataSpec("digits", partition="groups", partition_options={"groups": groups}, test_frac=0.25), seed=0
    )
    assert fed.train_sizes().tolist()[:2] == [30, 30] and fed.group_names == ["low", "high"]
    with pytest.raises(ValueError, match="unexpected keyword argument 'size'"):
        bad = [{"name": "x", "classes": [0], "num_clients": 1, "size": 3}]
        make_federated(DataSpec("digits", partition="groups", partition_options={"groups": bad}), seed=0)


def test_group_test_pools_are_shared_within_a_group_and_follow_its_classes():
    from fairfl_core.data.partition import group_test_pools

    train_labels = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    test_labels = np.array([3, 2, 1, 0, 0, 3])
    clients = [np.array([0, 2]), np.array([1, 3]), np.array([4, 6])]  # group 0: classes {0,1}; group 1: {2,3}
    pools = group_test_pools(clients, np.array([0, 0, 1]), train_labels, test_labels)
    assert pools[0].tolist() == pools[1].tolist() == [2, 3, 4]
    assert pools[2].tolist() == [0, 1, 5]


def test_group_test_pools_need_groups():
    with pytest.raises(ValueError, match="client_test='group' needs a partition with groups"):
        make_federated(DataSpec("digits", partition="iid", num_clients=4, client_test="group"), seed=0)


# -- symmetric label noise (FedEBA+ Table 13) -------------------------------------------------------------
def test_symmetric_label_noise_by_hand():
    # default_rng(0): random(4) = [0.637, 0.270, 0.041, 0.017] (flip where < 0.5: labels 1, 2, 3), then
    # integers(1, 4, 4) = [1, 3, 2, 3]: 1 → (1 + 3) % 4 = 0, 2 → (2 + 2) % 4 = 0, 3 → (3 + 3) % 4 = 2
    noisy = symmetric_label_noise(np.array([0, 1, 2, 3]), 4, 0.5, np.random.default_rng(0))
    assert noisy.tolist() == [0, 0, 0, 2]
    labels = np.arange(4)
    assert np.array_equal(symmetric_label_noise(labels, 4, 0.0, np.random.default_rng(1)), labels)


def test_symmetric_label_noise_rate_and_uniform_other_class():
    labels = np.zeros(200_000, dtype=np.int64)
    noisy = symmetric_label_noise(labels, 10, 0.5, np.random.default_rng(3))
    assert abs((noisy != 0).mean() - 0.5) < 0.005
    counts = np.bincount(noisy[noisy != 0], minlength=10)[1:]  # 9 other classes, 1/9 of the flips each
    assert counts.min() > 0.95 * counts.mean() and counts.max() < 1.05 * counts.mean()
    with pytest.raises(ValueError, match="at least 2 classes"):
        symmetric_label_noise(labels, 1, 0.5, np.random.default_rng(0))


def _digits_noise(**changes):
    spec = {"name": "digits", "partition": "shards", "num_clients": 10, "partition_seed": 0, **changes}
    return make_federated(DataSpec.from_dict(spec), seed=4)


def test_label_noise_flips_training_labels_only():
    clean, noisy = _digits_noise(), _digits_noise(label_noise=0.5)
    train = torch.cat(noisy.client_train)
    assert [torch.equal(a, b) for a, b in zip(clean.client_train, noisy.client_train, strict=True)] == [
        True
    ] * 10
    record = noisy.meta["label_noise"]
    flipped = torch.as_tensor(record["flipped"])
    changed = torch.nonzero(clean.y != noisy.y).flatten()
    assert torch.equal(changed, flipped) and torch.isin(flipped, train).all()
    assert np.array_equal(record["clean_labels"], clean.y[flipped].numpy()) and record["rate"] == 0.5
    assert abs(len(flipped) / len(train) - 0.5) < 0.06  # about half of the 1,150 training labels
    for split in (noisy.client_test, [noisy.pooled_test]):  # test labels stay clean
        idx = torch.cat(split)
        assert torch.equal(noisy.y[idx], clean.y[idx])
    assert "label_noise" not in clean.meta


def test_label_noise_follows_the_partition_seed():
    a, b = _digits_noise(label_noise=0.5), _digits_noise(label_noise=0.5)
    assert torch.equal(a.y, b.y)
    other = _digits_noise(label_noise=0.5, partition_seed=1)
    assert not np.array_equal(a.meta["label_noise"]["flipped"], other.meta["label_noise"]["flipped"])


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_label_noise_out_of_range_names_the_field(rate):
    with pytest.raises(ValueError, match=rf"label_noise={rate} must be in \[0, 1\)"):
        DataSpec.from_dict({"name": "digits", "label_noise": rate})


# -- a sensitive attribute (Adult, COMPAS) ------------------------------------------------------------------
def _with_groups(root=None):
    x = torch.arange(40, dtype=torch.float32)[:, None]
    y = torch.tensor([0, 1] * 20)
    s = torch.tensor([0] * 15 + [1] * 25)
    return Dataset(
        "fake", x, y, x[:10], y[:10], 2, "fake",
        sensitive_train=s, sensitive_test=s[:10], sensitive_names=["a", "b"], sensitive_attribute="toy",
    )  # fmt: skip


def test_the_sensitive_attribute_follows_the_samples_into_the_pool(monkeypatch):
    monkeypatch.setitem(DATASETS, "fake", _with_groups)
    spec = DataSpec("fake", partition="sensitive_dirichlet", num_clients=3, partition_options={"alpha": 0.5})
    fed = make_federated(spec, seed=0)
    assert torch.equal(
        fed.sensitive, torch.cat([_with_groups().sensitive_train, _with_groups().sensitive_test])
    )
    assert fed.sensitive_names == ["a", "b"] and fed.sensitive_attribute == "toy"
    counts = fed.sensitive_counts("train")
    for k, ix in enumerate(fed.client_train):
        assert counts[k].tolist() == np.bincount(fed.sensitive[ix].numpy(), minlength=2).tolist()
    other = make_federated(DataSpec("fake", partition="iid", num_clients=3), seed=0)
    assert torch.equal(other.sensitive, fed.sensitive)  # any partition keeps it
    moved = fed.to("cpu")
    assert moved.sensitive is fed.sensitive
    assert make_federated(DataSpec("digits", partition="iid", num_clients=3), seed=0).sensitive is None


def test_the_sensitive_partition_is_in_the_config_and_needs_the_attribute(monkeypatch):
    from fairfl_core.experiments.config import ExperimentConfig, config_hash

    base = ExperimentConfig.from_dict(
        {"data": {"name": "digits", "partition": "sensitive_dirichlet", "num_clients": 3,
                  "partition_options": {"alpha": 0.5}}}
    )  # fmt: skip
    other = ExperimentConfig.from_dict(
        {**base.to_dict(), "data": {**base.to_dict()["data"], "partition_options": {"alpha": 0.1}}}
    )
    assert config_hash(base) != config_hash(other)
    with pytest.raises(
        ValueError, match="partition_options.q is not an option of partition='sensitive_dirichlet'"
    ):
        DataSpec("digits", partition="sensitive_dirichlet", num_clients=3, partition_options={"q": 1})
    with pytest.raises(ValueError, match="needs a dataset with a sensitive attribute .* digits has none"):
        make_federated(base.data, seed=0)
