"""From a data config to a `FederatedDataset`: the dataset registry, `DataSpec` and `make_federated`.

``make_federated`` loads the dataset, partitions its train pool over clients (``partition.py``), gives every
client a test set (a local 80/20 split by default; the test pool cut to match each client's labels with
``client_test='matched'``; the loader's own per-owner split for ``natural``), optionally a validation set
(``val_frac``), and puts it all in one `FederatedDataset` whose sample pool is the train pool followed by
the test pool. ``label_noise`` corrupts the clients' training labels (symmetric flipping); their test and
validation labels and the pooled test set stay clean.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np
import torch

from . import partition as P
from .federated import Dataset, FederatedDataset
from .images import LOADERS

__all__ = [
    "DATASETS",
    "PARTITIONS",
    "DataSpec",
    "load_dataset",
    "make_federated",
    "select_classes",
    "symmetric_label_noise",
]


# -- dataset registry -------------------------------------------------------------------------------------
def _lazy(module: str, function: str, takes_root: bool = True) -> Callable[..., Dataset]:
    """A loader imported on first use, so the registry works before (or without) that module."""

    def load(root=None, **options) -> Dataset:
        loader = getattr(importlib.import_module(f".{module}", __package__), function)
        return loader(root, **options) if takes_root else loader(**options)

    load.__name__ = load.__qualname__ = function
    load.__doc__ = f"``fairfl_core.data.{module}.{function}`` (imported lazily)."
    return load


DATASETS: dict[str, Callable[..., Dataset]] = {
    **LOADERS,
    "adult": _lazy("tabular", "load_adult"),
    "compas": _lazy("tabular", "load_compas"),
    "femnist": _lazy("leaf", "load_femnist"),
    "shakespeare": _lazy("shakespeare", "load_shakespeare"),
    "shakespeare_gifair": _lazy("shakespeare_roles", "load_gifair_shakespeare"),
    "synthetic": _lazy("synthetic", "load_synthetic", takes_root=False),
}


def select_classes(dataset: Dataset, classes: list[int]) -> Dataset:
    """Keep only the samples of ``classes`` and relabel them 0..len(classes)-1 in the order given (GIFAIR
    FEMNIST-skewed: the lower-case letters a-j, EMNIST-ByClass labels 36..45)."""
    classes = [int(c) for c in classes]
    bad = [c for c in classes if not 0 <= c < dataset.num_classes]
    if bad or len(set(classes)) != len(classes):
        raise ValueError(f"classes={classes}: need distinct labels in 0..{dataset.num_classes - 1}")
    relabel = torch.full((dataset.num_classes,), -1, dtype=torch.int64)
    relabel[classes] = torch.arange(len(classes))
    kept = {s: relabel[getattr(dataset, f"y_{s}")] >= 0 for s in ("train", "test")}

    def owners(split: str, kind: str = "owner"):
        owner = getattr(dataset, f"{kind}_{split}")
        return None if owner is None else owner[kept[split]]

    return Dataset(
        name=dataset.name,
        x_train=dataset.x_train[kept["train"]],
        y_train=relabel[dataset.y_train[kept["train"]]],
        x_test=dataset.x_test[kept["test"]],
        y_test=relabel[dataset.y_test[kept["test"]]],
        num_classes=len(classes),
        source=f"{dataset.source}; classes {classes} relabelled 0..{len(classes) - 1}",
        mean=dataset.mean,
        std=dataset.std,
        owner_train=owners("train"),
        owner_test=owners("test"),
        owner_names=dataset.owner_names,
        meta={**dataset.meta, "classes": classes},
        sensitive_train=owners("train", "sensitive"),
        sensitive_test=owners("test", "sensitive"),
        sensitive_names=dataset.sensitive_names,
        sensitive_attribute=dataset.sensitive_attribute,
    )


def load_dataset(name: str, root=None, classes: list[int] | None = None, **options) -> Dataset:
    """Load dataset ``name`` from the registry (``DATASETS``); ``classes`` keeps and relabels a subset."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {sorted(DATASETS)}")
    loader = DATASETS[name]
    try:
        inspect.signature(loader).bind(root, **options)
    except TypeError as err:
        allowed = list(inspect.signature(loader).parameters)[1:]
        raise ValueError(f"{name}: {err}; its loader options are {allowed} (plus classes)") from None
    dataset = loader(root, **options)
    return dataset if classes is None else select_classes(dataset, classes)


# -- partitions as config ---------------------------------------------------------------------------------
class _Partition(NamedTuple):
    train: list[np.ndarray]  # indices into the train pool
    test: list[np.ndarray] | None = None  # indices into the test pool, when the partition fixes them
    groups: np.ndarray | None = None
    group_names: list[str] | None = None
    client_names: list[str] | None = None


def _need_clients(num_clients: int | None, partition: str) -> int:
    if num_clients is None:
        raise ValueError(f"num_clients is required for partition={partition!r}")
    return num_clients


def _iid(dataset: Dataset, num_clients, rng) -> _Partition:
    return _Partition(P.iid(len(dataset.y_train), _need_clients(num_clients, "iid"), rng))


def _shards(dataset: Dataset, num_clients, rng, shards_per_client: int = 2, num_shards=None) -> _Partition:
    n = _need_clients(num_clients, "shards")
    return _Partition(P.shards(dataset.y_train, n, shards_per_client, rng, num_shards))


def _dirichlet(
    dataset: Dataset, num_clients, rng, alpha: float, min_size: int = 10, max_tries: int = 1000
) -> _Partition:
    n = _need_clients(num_clients, "dirichlet")
    return _Partition(P.dirichlet(dataset.y_train, n, alpha, rng, min_size, max_tries))


def _pathological(
    dataset: Dataset,
    num_clients,
    rng,
    classes_per_client: int,
    assignment: str = "balanced",
    samples_per_class=None,
    equalize: bool = False,
) -> _Partition:
    n = _need_clients(num_clients, "pathological")
    parts = P.pathological(
        dataset.y_train, n, classes_per_client, rng, assignment, samples_per_class, equalize
    )
    return _Partition(parts)


def _sensitive_dirichlet(
    dataset: Dataset,
    num_clients,
    rng,
    alpha: float,
    min_size: int = 10,
    min_group_size: int = 0,
    max_tries: int = 1000,
) -> _Partition:
    n = _need_clients(num_clients, "sensitive_dirichlet")
    if dataset.sensitive_train is None:
        raise ValueError(
            "partition='sensitive_dirichlet' needs a dataset with a sensitive attribute (adult, compas); "
            f"{dataset.name} has none: use iid, shards, dirichlet, pathological or groups"
        )
    names = dataset.sensitive_names
    return _Partition(
        P.sensitive_dirichlet(
            dataset.sensitive_train, n, alpha, rng, min_size, min_group_size, max_tries, names
        )
    )


def _groups(dataset: Dataset, num_clients, rng, preset=None, groups=None, scale: float = 1.0) -> _Partition:
    if (preset is None) == (groups is None):
        raise ValueError(
            "partition='groups' needs exactly one of partition_options.preset "
            f"(one of {sorted(P.GROUP_PRESETS)}) or partition_options.groups "
            "(a list of {name, classes, num_clients, per_client | per_class})"
        )
    if preset is not None:
        if preset not in P.GROUP_PRESETS:
            raise ValueError(f"preset={preset!r} is unknown; choose one of {sorted(P.GROUP_PRESETS)}")
        specs = P.GROUP_PRESETS[preset](dataset.num_classes, scale)
    else:
        if scale != 1.0:
            raise ValueError("scale applies to presets only; write the sizes into partition_options.groups")
        try:
            specs = [P.GroupSpec(**g) for g in groups]
        except TypeError as err:
            raise ValueError(
                f"partition_options.groups: {err}; keys are {[f.name for f in fields(P.GroupSpec)]}"
            ) from err
    total = sum(g.num_clients for g in specs)
    if num_clients is not None and num_clients != total:
        raise ValueError(
            f"num_clients={num_clients} but the groups hold {total} clients: set num_clients={total}"
        )
    parts, group_ids = P.label_groups(dataset.y_train, specs, rng)
    return _Partition(parts, groups=group_ids, group_names=[g.name for g in specs])


def _natural(dataset: Dataset, num_clients, rng, min_samples: int = 1) -> _Partition:
    if dataset.owner_train is None:
        raise ValueError(
            "partition='natural' needs a dataset with owners (femnist, shakespeare, synthetic, ...); "
            f"{dataset.name} has none: use iid, shards, dirichlet, pathological or groups"
        )
    owners = P.choose_owners(dataset.owner_train, num_clients, rng, min_samples)
    test = None if dataset.owner_test is None else P.natural(dataset.owner_test, owners)
    names = None if dataset.owner_names is None else [dataset.owner_names[o] for o in owners]
    owner_groups = dataset.meta.get("owner_groups")  # e.g. GIFAIR's Shakespeare genders
    groups = None if owner_groups is None else np.asarray(owner_groups)[owners]
    return _Partition(
        P.natural(dataset.owner_train, owners),
        test,
        groups=groups,
        client_names=names,
        group_names=dataset.meta.get("group_names"),
    )


PARTITIONS: dict[str, Callable[..., _Partition]] = {
    "iid": _iid,
    "shards": _shards,
    "dirichlet": _dirichlet,
    "pathological": _pathological,
    "groups": _groups,
    "natural": _natural,
    "sensitive_dirichlet": _sensitive_dirichlet,
}


def _option_names(partition: str) -> list[str]:
    return list(inspect.signature(PARTITIONS[partition]).parameters)[3:]


# -- the config -------------------------------------------------------------------------------------------
def _choice(field_name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{field_name}={value!r} is not allowed; choose one of {sorted(allowed)}")


@dataclass
class DataSpec:
    """A federated dataset as config (serialisable with ``dataclasses.asdict``).

    ``partition``: iid | shards | dirichlet | pathological | groups | natural | sensitive_dirichlet, with
    ``partition_options`` (shards_per_client, num_shards; alpha, min_size; classes_per_client, assignment,
    samples_per_class, equalize; preset, groups, scale; min_samples; for sensitive_dirichlet, FairFed's
    Dirichlet over the sensitive attribute, alpha, min_size, min_group_size). ``client_test``: ``local`` =
    each client's data split ``1 - test_frac`` / ``test_frac`` (FedEBA+: 80/20, the easyFL/FedFV convention;
    App. L.1 does not describe the clients' test data), ``matched`` = the official test pool cut to follow
    each client's training labels (Equitable-FL, SubTrunc: their papers do not describe the clients' test
    sets), ``group`` = one test pool per group shared by its clients: the official test samples of the classes
    the group's clients hold (label-disjoint clusters, Equitable-FL Table 1, GIFAIR FEMNIST-3-groups);
    ``natural`` always uses the loader's per-owner test split. ``val_frac`` > 0 holds out that share of each
    client's data for validation (GIFAIR-FL §5.1: train / val / test = 70 / 10 / 20 with test_frac 0.2,
    val_frac 0.1): with ``local`` tests a third part of the same random split (the test part unchanged); with
    ``matched`` / ``group`` tests a random share of the client's data; with ``natural`` the last ``val_frac``
    of the owner's samples (train + test) taken from the end of its training part, after the loader's
    ``window_gap`` (Shakespeare: the windows overlapping them), as LEAF draws its leak-free train/test
    boundary. p_k stays the training count. ``pooled_test``: ``official`` test set or ``local_union`` of the
    client test sets. ``partition_seed``: None = the run seed; the FedEBA+ and GIFAIR-FL configs fix one,
    since the papers' "5 runs with different random seeds" do not say that the partition changes.
    ``stand_in``: the paper dataset this one replaces, e.g. "CIFAR-10". ``loader_options`` go to the loader
    (e.g. download, split, classes). ``label_noise`` ε ∈ [0, 1): each training label of every client is
    replaced, with probability ε, by a class drawn uniformly among the other classes (symmetric flipping,
    FedEBA+ Table 13 with ε = 0.5; `symmetric_label_noise`), drawn from the partition seed; test and
    validation labels stay clean."""

    name: str
    partition: str = "iid"
    num_clients: int | None = None
    partition_options: dict = field(default_factory=dict)
    root: str | None = None
    test_frac: float = 0.2
    val_frac: float = 0.0
    client_test: str = "local"
    pooled_test: str = "official"
    partition_seed: int | None = None
    stand_in: str | None = None
    loader_options: dict = field(default_factory=dict)
    label_noise: float = 0.0

    def __post_init__(self) -> None:
        _choice("name", self.name, DATASETS)
        _choice("partition", self.partition, PARTITIONS)
        _choice("client_test", self.client_test, ("local", "matched", "group"))
        _choice("pooled_test", self.pooled_test, ("official", "local_union"))
        if self.num_clients is not None and self.num_clients < 1:
            raise ValueError(f"num_clients={self.num_clients} must be >= 1")
        if not 0 <= self.test_frac < 1:
            raise ValueError(f"test_frac={self.test_frac} must be in [0, 1) (each client's local test share)")
        if not 0 <= self.val_frac or not self.test_frac + self.val_frac < 1:
            raise ValueError(
                f"val_frac={self.val_frac} with test_frac={self.test_frac}: need val_frac >= 0 and "
                "test_frac + val_frac < 1 (each client keeps training data); lower val_frac or test_frac"
            )
        if self.partition == "natural" and self.client_test != "local":
            raise ValueError(
                f"client_test={self.client_test!r} does not apply to partition='natural' (owners keep their "
                "tests); leave client_test='local'"
            )
        if not 0 <= self.label_noise < 1:
            raise ValueError(
                f"label_noise={self.label_noise} must be in [0, 1) (the share of training labels flipped, "
                "e.g. 0.5 for FedEBA+ Table 13; 0 = clean)"
            )
        allowed = _option_names(self.partition)
        for key in self.partition_options:
            if key not in allowed:
                raise ValueError(
                    f"partition_options.{key} is not an option of partition={self.partition!r}; "
                    f"allowed: {allowed}"
                )

    @classmethod
    def from_dict(cls, data: dict) -> DataSpec:
        known = [f.name for f in fields(cls)]
        for key in data:
            if key not in known:
                raise ValueError(f"DataSpec: unknown key {key!r}; allowed keys: {known}")
        if "name" not in data:
            raise ValueError("DataSpec: key 'name' (the dataset) is required")
        return cls(**data)


# -- label noise ------------------------------------------------------------------------------------------
def symmetric_label_noise(
    labels: np.ndarray, num_classes: int, rate: float, rng: np.random.Generator
) -> np.ndarray:
    """Symmetric label noise (FedEBA+ App. M.4 / Table 13, following LSR, Jiang et al. 2022): each label is
    replaced with probability ``rate`` by a class drawn uniformly among the ``num_classes − 1`` others,
    i.e. (y + U{1, …, C−1}) mod C. Returns a noisy copy; one draw per label, in order."""
    if num_classes < 2:
        raise ValueError(
            f"label noise needs at least 2 classes to flip between; the dataset has {num_classes}"
        )
    labels = np.asarray(labels)
    flip = rng.random(labels.shape) < rate
    shift = rng.integers(1, num_classes, size=labels.shape)
    return np.where(flip, (labels + shift) % num_classes, labels)


def _noisy_labels(
    y: torch.Tensor, train: list[np.ndarray], n_train: int, num_classes: int, rate: float, seed: int
) -> tuple[torch.Tensor, dict]:
    """``y`` (train pool then test pool) with the labels of the clients' training samples flipped
    (`symmetric_label_noise`, one draw per train-pool sample from ``[seed, 3]``, so a sample's noise does not
    depend on the local split), and the meta record: rate, the flipped pool indices, their clean labels."""
    held = np.unique(np.concatenate([np.asarray(ix, dtype=np.int64) for ix in train]))
    clean = y.numpy()
    noisy = symmetric_label_noise(clean[:n_train], num_classes, rate, np.random.default_rng([seed, 3]))
    flipped = held[noisy[held] != clean[held]]
    out = y.clone()
    out[torch.from_numpy(flipped)] = torch.from_numpy(noisy[flipped])
    return out, {"rate": rate, "flipped": flipped, "clean_labels": clean[flipped]}


# -- assembly ---------------------------------------------------------------------------------------------
def _tensors(parts: list[np.ndarray], offset: int, device) -> list[torch.Tensor]:
    return [torch.from_numpy(np.asarray(ix, dtype=np.int64) + offset).to(device) for ix in parts]


def _natural_validation(
    train: list[np.ndarray], test: list[np.ndarray], val_frac: float, gap: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The last ``val_frac`` of each owner's samples (train + test), carved from its training part after a
    gap of ``gap`` samples (`partition.tail_holdout`)."""
    sizes = [P.holdout_size(val_frac, len(tr) + len(te)) for tr, te in zip(train, test, strict=True)]
    return P.tail_holdout(train, sizes, gap)


def make_federated(spec: DataSpec, seed: int, device: str | torch.device = "cpu") -> FederatedDataset:
    """Build the federated dataset ``spec`` describes. The partition draws from ``partition_seed`` (or
    ``seed``), the per-client test and validation splits from ``seed``: same inputs, same indices."""
    dataset = load_dataset(spec.name, spec.root, **spec.loader_options)
    partition_seed = seed if spec.partition_seed is None else spec.partition_seed
    part = PARTITIONS[spec.partition](
        dataset, spec.num_clients, np.random.default_rng([partition_seed, 0]), **spec.partition_options
    )
    split_rng = np.random.default_rng([seed, 1])
    n_train = len(dataset.y_train)
    val = [np.empty(0, dtype=np.int64) for _ in part.train]
    if part.test is not None:
        train, test = part.train, _tensors(part.test, n_train, "cpu")
        if spec.val_frac:
            train, val = _natural_validation(
                part.train, part.test, spec.val_frac, dataset.meta.get("window_gap", 0)
            )
    elif spec.client_test == "local":
        train, val, local_test = P.local_split(part.train, spec.test_frac, split_rng, spec.val_frac)
        test = _tensors(local_test, 0, "cpu")
    else:
        if spec.client_test == "matched":
            test_pool = P.matched_test(part.train, dataset.y_train, dataset.y_test, split_rng)
        elif part.groups is None:
            raise ValueError(
                f"client_test='group' needs a partition with groups: use partition='groups', not "
                f"{spec.partition!r}"
            )
        else:
            test_pool = P.group_test_pools(part.train, part.groups, dataset.y_train, dataset.y_test)
        test = _tensors(test_pool, n_train, "cpu")
        train = part.train
        if spec.val_frac:
            train, val, _ = P.local_split(train, 0.0, np.random.default_rng([seed, 2]), spec.val_frac)
    client_train = _tensors(train, 0, device)
    client_val = _tensors(val, 0, device)
    client_test = [ix.to(device) for ix in test]
    if spec.pooled_test == "official":
        pooled = torch.arange(n_train, n_train + len(dataset.y_test), device=device)
    else:
        pooled = torch.unique(torch.cat(client_test)) if client_test else torch.empty(0, dtype=torch.long)
    num_clients = len(client_train)
    groups = part.groups if part.groups is not None else np.full(num_clients, -1)
    y = torch.cat([dataset.y_train, dataset.y_test])
    sensitive = None
    if dataset.sensitive_train is not None and dataset.sensitive_test is not None:
        sensitive = torch.cat([dataset.sensitive_train, dataset.sensitive_test]).to(device)
    noise = {}
    if spec.label_noise:
        y, record = _noisy_labels(y, train, n_train, dataset.num_classes, spec.label_noise, partition_seed)
        noise = {"label_noise": record}
    return FederatedDataset(
        name=dataset.name,
        x=torch.cat([dataset.x_train, dataset.x_test]).to(device),
        y=y.to(device),
        num_classes=dataset.num_classes,
        client_train=client_train,
        client_test=client_test,
        client_val=client_val,
        pooled_test=pooled.to(device),
        groups=torch.as_tensor(groups, dtype=torch.int64, device=device),
        mean=dataset.mean,
        std=dataset.std,
        client_names=part.client_names or [f"client {k}" for k in range(num_clients)],
        group_names=part.group_names,
        stand_in=spec.stand_in,
        source=dataset.source,
        sensitive=sensitive,
        sensitive_names=dataset.sensitive_names,
        sensitive_attribute=dataset.sensitive_attribute,
        meta={
            "partition": spec.partition,
            "partition_options": dict(spec.partition_options),
            "partition_seed": partition_seed,
            "seed": seed,
            "client_test": "natural" if part.test is not None else spec.client_test,
            "test_frac": spec.test_frac if part.test is None and spec.client_test == "local" else None,
            "val_frac": spec.val_frac,
            "pooled_test": spec.pooled_test,
            "train_pool": n_train,
            "test_pool": len(dataset.y_test),
            "unassigned_train": n_train - sum(len(ix) for ix in part.train),
            "dataset_meta": dataset.meta,
            **noise,
        },
    )
