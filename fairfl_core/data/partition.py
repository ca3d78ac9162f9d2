"""Partitioners: how a train pool is split over clients.

Pure functions: the only randomness is the `numpy.random.Generator` passed in, so the same generator state
gives the same partition. Each returns one int64 index array per client, indices into the train pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike

__all__ = [
    "group_test_pools",
    "GROUP_PRESETS",
    "GroupSpec",
    "choose_owners",
    "dirichlet",
    "equitable_fl_groups",
    "gifair_femnist_3groups",
    "holdout_size",
    "iid",
    "label_groups",
    "local_split",
    "matched_test",
    "natural",
    "pathological",
    "sensitive_dirichlet",
    "shards",
    "tail_holdout",
]

Indices = list[np.ndarray]
MIN_SHARD_SIZE = 5  # samples per shard (see `shards`)


def _labels(labels) -> np.ndarray:
    if isinstance(labels, torch.Tensor):
        labels = labels.cpu().numpy()
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"labels must be a 1-D integer array; got shape {labels.shape}, dtype {labels.dtype}"
        )
    return labels


def _check_clients(num_clients: int, num_samples: int) -> None:
    if num_clients < 1:
        raise ValueError(f"num_clients={num_clients} must be >= 1")
    if num_clients > num_samples:
        raise ValueError(
            f"num_clients={num_clients} exceeds the {num_samples} samples in the pool: use fewer clients"
        )


def _int64(parts) -> Indices:
    return [np.asarray(p, dtype=np.int64) for p in parts]


# -- label-agnostic -------------------------------------------------------------------------------------
def iid(num_samples: int, num_clients: int, rng: np.random.Generator) -> Indices:
    """Shuffle and cut into ``num_clients`` near-equal parts (sizes differ by at most one)."""
    _check_clients(num_clients, num_samples)
    return _int64(np.array_split(rng.permutation(num_samples), num_clients))


# -- label skew -----------------------------------------------------------------------------------------
def shards(
    labels, num_clients: int, shards_per_client: int, rng: np.random.Generator, num_shards: int | None = None
) -> Indices:
    """McMahan et al. (2017) / FedFV / FedEBA+ App. L.1 shards: sort by label (stable), cut into
    ``num_shards`` equal shards (default ``num_clients * shards_per_client``; the ``N mod num_shards`` samples
    at the end of the sorted order are left out), give each client ``shards_per_client`` shards drawn
    uniformly without replacement. FMNIST: 200 shards of 300, 2 per client -> 600 samples from <= 2 classes.

    A shard must hold at least ``MIN_SHARD_SIZE`` samples: a shard is a run of one class in the sorted order,
    and shards of one or two images (e.g. 100 clients x 500 shards of FMNIST's 60,000) turn the label-skewed
    partition into a draw of single images, i.e. an iid split under another name."""
    labels = _labels(labels)
    if shards_per_client < 1:
        raise ValueError(f"shards_per_client={shards_per_client} must be >= 1")
    _check_clients(num_clients, len(labels))
    needed = num_clients * shards_per_client
    num_shards = needed if num_shards is None else num_shards
    if num_shards < needed:
        raise ValueError(
            f"num_shards={num_shards} is fewer than num_clients * shards_per_client = {needed}: "
            "raise num_shards or lower shards_per_client"
        )
    if num_shards > len(labels):
        raise ValueError(
            f"num_shards={num_shards} (num_clients * shards_per_client) exceeds the {len(labels)} samples: "
            "lower num_clients or shards_per_client"
        )
    if len(labels) // num_shards < MIN_SHARD_SIZE:
        most = len(labels) // MIN_SHARD_SIZE
        if num_shards > needed:
            fix = f"partition_options.num_shards <= {most}"
        elif most >= num_clients:
            fix = f"partition_options.shards_per_client <= {most // num_clients} for {num_clients} clients"
        else:
            fix = f"num_clients <= {most // shards_per_client}"
        raise ValueError(
            f"shards_per_client={shards_per_client} x num_clients={num_clients} (num_shards={num_shards}) "
            f"cuts the {len(labels)} training samples into shards of {len(labels) // num_shards}, fewer "
            f"than {MIN_SHARD_SIZE}: use {fix}, or partition iid / dirichlet"
        )
    size = len(labels) // num_shards
    order = np.argsort(labels, kind="stable")
    chosen = rng.permutation(num_shards)[:needed].reshape(num_clients, shards_per_client)
    return _int64(np.concatenate([order[s * size : (s + 1) * size] for s in row]) for row in chosen)


def dirichlet(
    labels,
    num_clients: int,
    alpha: float,
    rng: np.random.Generator,
    min_size: int = 10,
    max_tries: int = 1000,
) -> Indices:
    """Label-Dirichlet (LDA) partition, easyFL / FedMA style (FedEBA+ App. L.1, AFGA §6): for each class,
    draw ``q ~ Dir(alpha * 1_m)``, zero the share of clients already holding >= N/m samples, renormalise,
    cut the shuffled class indices at the cumulative shares; redraw everything until every client holds
    ``min_size`` samples (at most ``max_tries`` times)."""
    labels = _labels(labels)
    if not alpha > 0:
        raise ValueError(
            f"alpha={alpha} must be > 0 (Dirichlet concentration; e.g. 0.1 skewed, 100 near-iid)"
        )
    _check_clients(num_clients, len(labels))
    if num_clients * min_size > len(labels):
        raise ValueError(
            f"min_size={min_size} for num_clients={num_clients} needs {num_clients * min_size} samples but "
            f"the pool has {len(labels)}: lower min_size or num_clients"
        )
    by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    cap = len(labels) / num_clients
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        sizes = np.zeros(num_clients, dtype=np.int64)
        for members in by_class:
            members = rng.permutation(members)
            open_ = sizes < cap  # never empty: the classes left to assign keep the total below N
            q = rng.dirichlet(np.full(num_clients, float(alpha))) * open_
            # all remaining mass can underflow to 0 for tiny alpha: then share evenly over open clients
            q = q / q.sum() if q.sum() > 0 else open_ / open_.sum()
            cuts = (np.cumsum(q)[:-1] * len(members)).astype(np.int64)
            for k, piece in enumerate(np.split(members, cuts)):
                parts[k].append(piece)
                sizes[k] += len(piece)
        if sizes.min() >= min_size:
            return _int64(np.concatenate(p) for p in parts)
    raise ValueError(
        f"dirichlet: no partition gave every client >= min_size={min_size} samples in max_tries={max_tries} "
        f"draws (alpha={alpha}, num_clients={num_clients}): raise alpha, lower min_size or num_clients"
    )


def _assign_classes(
    classes: np.ndarray, num_clients: int, k: int, assignment: str, rng: np.random.Generator, max_swaps: int
) -> np.ndarray:
    """``[num_clients, k]`` distinct classes per client (SubTrunc/UnionFL §V)."""
    c = len(classes)
    if assignment == "cyclic":
        perm = rng.permutation(classes)
        return perm[(np.arange(num_clients)[:, None] + np.arange(k)[None, :]) % c]
    if assignment == "random":
        return np.stack([rng.choice(classes, k, replace=False) for _ in range(num_clients)])
    if assignment != "balanced":
        raise ValueError(f"assignment={assignment!r} is unknown; choose 'balanced', 'cyclic' or 'random'")
    # every class appears floor or ceil(m k / C) times; rows with a repeated class are repaired by swaps
    counts = np.full(c, num_clients * k // c)
    counts[rng.choice(c, num_clients * k % c, replace=False)] += 1
    table = rng.permutation(np.repeat(classes, counts)).reshape(num_clients, k)
    for _ in range(max_swaps):
        bad = [i for i in range(num_clients) if len(np.unique(table[i])) < k]
        if not bad:
            return table
        i = bad[rng.integers(len(bad))]
        values, seen = np.unique(table[i], return_counts=True)
        j = np.flatnonzero(table[i] == values[seen > 1][0])[-1]
        i2, j2 = rng.integers(num_clients), rng.integers(k)
        # accept only swaps that remove a repeat from row i and add none to row i2
        if i2 != i and table[i2, j2] not in table[i] and table[i, j] not in table[i2]:
            table[i, j], table[i2, j2] = table[i2, j2], table[i, j]
    raise ValueError(f"pathological: could not give every client distinct classes in max_swaps={max_swaps}")


def pathological(
    labels,
    num_clients: int,
    classes_per_client: int,
    rng: np.random.Generator,
    assignment: str = "balanced",
    samples_per_class: int | None = None,
    equalize: bool = False,
    max_swaps: int = 100_000,
) -> Indices:
    """``classes_per_client`` distinct classes per client (SubTrunc/UnionFL §V: 3 of 10 per client;
    GIFAIR-FL FEMNIST-skewed, §5.1: 5 of 10, 100 images each).

    ``assignment``: ``balanced`` (every class held by the same number of clients, +-1), ``cyclic`` (client
    i gets classes pi(i..i+k-1 mod C)) or ``random`` (each client draws k classes uniformly). Data: each
    class's shuffled samples are split into equal shards over its holders, or, with
    ``samples_per_class``, each holder gets exactly that many. ``equalize`` first trims every class to the
    smallest class size."""
    labels = _labels(labels)
    classes = np.unique(labels)
    if not 1 <= classes_per_client <= len(classes):
        raise ValueError(
            f"classes_per_client={classes_per_client} must be in 1..{len(classes)} (the classes present)"
        )
    _check_clients(num_clients, len(labels))
    table = _assign_classes(classes, num_clients, classes_per_client, assignment, rng, max_swaps)
    members = {c: rng.permutation(np.flatnonzero(labels == c)) for c in classes}
    if equalize:
        smallest = min(len(m) for m in members.values())
        members = {c: m[:smallest] for c, m in members.items()}
    parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for c in classes:
        holders = np.flatnonzero((table == c).any(axis=1))
        if len(holders) == 0:
            continue
        if samples_per_class is None:
            pieces = np.array_split(members[c], len(holders))
        elif len(holders) * samples_per_class > len(members[c]):
            raise ValueError(
                f"samples_per_class={samples_per_class} for the {len(holders)} clients holding class {c} "
                f"needs {len(holders) * samples_per_class} samples but class {c} has {len(members[c])}: "
                "lower samples_per_class"
            )
        else:
            pieces = list(
                members[c][: len(holders) * samples_per_class].reshape(len(holders), samples_per_class)
            )
        for h, piece in zip(holders, pieces, strict=True):
            parts[h].append(piece)
    return _int64(np.concatenate(p) for p in parts)


# -- the sensitive attribute across clients ------------------------------------------------------------
def sensitive_dirichlet(
    groups,
    num_clients: int,
    alpha: float,
    rng: np.random.Generator,
    min_size: int = 10,
    min_group_size: int = 0,
    max_tries: int = 1000,
    names: Sequence[str] | None = None,
) -> Indices:
    """FairFed's heterogeneity over a sensitive attribute (Ezzeldin et al., AAAI 2023, §5 "configurable data
    synthesis"): for each group a, draw q_a ~ Dir(α · 1_K) and give client k the share q_{a,k} of the
    (shuffled) samples with A = a, cut at ⌊N_a · Σ_{j≤k} q_{a,j}⌋. Small α puts most of a group on few
    clients; large α (FairFed's 5000) gives every client the population's mix. Redraws everything until every
    client holds ``min_size`` samples and ``min_group_size`` of each group (at most ``max_tries`` times);
    ``names``: the groups' names for the error message."""
    groups = _labels(groups)
    if not alpha > 0:
        raise ValueError(
            f"alpha={alpha} must be > 0 (Dirichlet concentration over the sensitive attribute; FairFed: 0.1 "
            "skewed ... 5000 homogeneous)"
        )
    _check_clients(num_clients, len(groups))
    values = np.unique(groups)
    label = list(names) if names is not None else [f"group {v}" for v in values]
    if min_size < 0 or min_group_size < 0:
        raise ValueError(f"min_size={min_size}, min_group_size={min_group_size} must be >= 0")
    short = [label[i] for i, v in enumerate(values) if (groups == v).sum() < num_clients * min_group_size]
    if num_clients * min_size > len(groups) or short:
        raise ValueError(
            f"min_size={min_size} and min_group_size={min_group_size} for num_clients={num_clients} need "
            f"more samples than the pool holds ({len(groups)}; groups {short} too small): lower them or "
            "num_clients"
        )
    by_group = [np.flatnonzero(groups == v) for v in values]
    for _ in range(max_tries):
        counts = np.zeros((num_clients, len(values)), dtype=np.int64)
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for j, members in enumerate(by_group):
            q = rng.dirichlet(np.full(num_clients, alpha))
            cuts = (np.cumsum(q) * len(members)).astype(np.int64)[:-1]
            for k, piece in enumerate(np.split(rng.permutation(members), cuts)):
                parts[k].append(piece)
                counts[k, j] = len(piece)
        if (counts.sum(axis=1) >= min_size).all() and (counts >= min_group_size).all():
            return _int64(np.sort(np.concatenate(p)) for p in parts)
    worst, group = (int(v) for v in np.unravel_index(np.argmin(counts), counts.shape))
    raise ValueError(
        f"partition 'sensitive_dirichlet' (alpha={alpha}, {num_clients} clients) left a client with fewer "
        f"than min_size={min_size} samples or min_group_size={min_group_size} of a group (client {worst}: "
        f"{counts[worst, group]} of {label[group]!r}) in {max_tries} draws: raise alpha, lower num_clients, "
        "or lower partition_options.min_group_size / min_size"
    )


# -- label-disjoint groups ------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupSpec:
    """A group (cluster) of ``num_clients`` clients that all draw from ``classes``.

    Sizes: ``per_class`` samples of every class per client (Equitable-FL), or ``per_client`` samples drawn
    uniformly without replacement from the group's pool (natural class frequencies; GIFAIR), or neither:
    the group's whole remaining pool cut into equal random shards (Equitable-FL FEMNIST: §5.1 gives no
    client sizes)."""

    name: str
    classes: tuple[int, ...]
    num_clients: int
    per_client: int | None = None
    per_class: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "classes", tuple(int(c) for c in self.classes))
        if not self.classes or len(set(self.classes)) != len(self.classes):
            raise ValueError(f"group {self.name!r}: classes must be a non-empty list without repeats")
        if self.num_clients < 1:
            raise ValueError(f"group {self.name!r}: num_clients={self.num_clients} must be >= 1")
        if self.per_client is not None and self.per_class is not None:
            raise ValueError(f"group {self.name!r}: give per_client or per_class, not both")
        for field in ("per_client", "per_class"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise ValueError(f"group {self.name!r}: {field}={value} must be >= 1")


def label_groups(labels, groups: Sequence[GroupSpec], rng: np.random.Generator) -> tuple[Indices, np.ndarray]:
    """Clients organised in groups by label set (Equitable-FL Table 1, GIFAIR FEMNIST-3-groups). Samples are
    drawn without replacement over the whole partition (groups in order, clients in index order), so no
    sample is given twice even when groups share classes. Returns the per-client indices and the group
    id of each client."""
    labels = _labels(labels)
    queues = {int(c): rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)}
    used = dict.fromkeys(queues, 0)

    def take(group: GroupSpec, c: int, n: int) -> np.ndarray:
        if used[c] + n > len(queues[c]):
            raise ValueError(
                f"group {group.name!r}: class {c} has {len(queues[c]) - used[c]} samples left but {n} are "
                "needed: lower per_class/per_client (or the preset's scale) or num_clients"
            )
        used[c] += n
        return queues[c][used[c] - n : used[c]]

    parts: Indices = []
    group_ids: list[int] = []
    for g, group in enumerate(groups):
        missing = sorted(set(group.classes) - set(queues))
        if missing:
            raise ValueError(f"group {group.name!r}: classes {missing} have no samples in the pool")
        if group.per_class is not None:
            for _ in range(group.num_clients):
                parts.append(np.concatenate([take(group, c, group.per_class) for c in group.classes]))
        elif group.per_client is not None:
            for _ in range(group.num_clients):
                left = np.array([len(queues[c]) - used[c] for c in group.classes])
                if left.sum() < group.per_client:
                    raise ValueError(
                        f"group {group.name!r}: {left.sum()} samples of its classes are left but per_client="
                        f"{group.per_client}: lower per_client (or the preset's scale) or num_clients"
                    )
                counts = rng.multivariate_hypergeometric(left, group.per_client)  # uniform over the pool
                parts.append(
                    np.concatenate([take(group, c, n) for c, n in zip(group.classes, counts, strict=True)])
                )
        else:
            pool = np.concatenate([take(group, c, len(queues[c]) - used[c]) for c in group.classes])
            if len(pool) < group.num_clients:
                raise ValueError(f"group {group.name!r}: {len(pool)} samples for {group.num_clients} clients")
            parts.extend(np.array_split(rng.permutation(pool), group.num_clients))
        group_ids.extend([g] * group.num_clients)
    return _int64(parts), np.asarray(group_ids, dtype=np.int64)


def _scaled(n: int, scale: float) -> int:
    if not scale > 0:
        raise ValueError(f"scale={scale} must be > 0 (fraction of the paper's samples per client)")
    return max(1, round(n * scale))


def equitable_fl_groups(num_classes: int, scale: float = 1.0) -> list[GroupSpec]:
    """Equitable-FL Table 1 (§5.1): label-disjoint clusters over consecutive label ranges.
    10 classes (MNIST, CIFAR-10): 4 + 6 clients, {0-3}, {4-9}, 800 per class per client. CIFAR-100: 2 + 3 +
    5 clients, {0-19}, {20-49}, {50-99}, 220 / 160 / 100 per class per client. FEMNIST (62): 8, 36, 16,
    18, 12 clients over {0-1}, {2-9}, {10-24}, {25-44}, {45-61}, each cluster's pool cut in equal shards.
    ``scale`` multiplies the fixed per-class counts (structure and ratios kept)."""
    layouts: dict[int, list[tuple[tuple[int, int], int, int | None]]] = {
        10: [((0, 4), 4, 800), ((4, 10), 6, 800)],
        100: [((0, 20), 2, 220), ((20, 50), 3, 160), ((50, 100), 5, 100)],
        62: [
            ((0, 2), 8, None),
            ((2, 10), 36, None),
            ((10, 25), 16, None),
            ((25, 45), 18, None),
            ((45, 62), 12, None),
        ],
    }
    if num_classes not in layouts:
        raise ValueError(
            f"equitable_fl preset exists for 10, 100 and 62 classes (MNIST/CIFAR-10, CIFAR-100, FEMNIST); "
            f"got num_classes={num_classes}"
        )
    return [
        GroupSpec(
            f"cluster {q + 1} (classes {lo}-{hi - 1})",
            tuple(range(lo, hi)),
            clients,
            per_class=None if per_class is None else _scaled(per_class, scale),
        )
        for q, ((lo, hi), clients, per_class) in enumerate(layouts[num_classes])
    ]


# The classes playing digits, capitals and lower case: EMNIST-ByClass order (62 classes), or the labelled
# 10-class stand-in's choice (Fashion-MNIST: two shared classes, four "capital" and four "lower-case" ones).
THREE_GROUP_KINDS = {
    62: {"digits": tuple(range(0, 10)), "upper": tuple(range(10, 36)), "lower": tuple(range(36, 62))},
    10: {"digits": (1, 8), "upper": (0, 2, 5, 7), "lower": (3, 4, 6, 9)},
}


def gifair_femnist_3groups(num_classes: int = 62, scale: float = 1.0) -> list[GroupSpec]:
    """GIFAIR-FL FEMNIST-3-groups (GIFAIR-FL §5.1). Group 1: capitals + digits, 60 devices x 800 images;
    group 2: lower case + digits, 100 x 1,000; group 3: all classes, 40 x 600; images drawn uniformly from
    the group's pool. 62 classes: EMNIST ByClass (0-9 digits, 10-35 A-Z, 36-61 a-z); 10 classes: the
    labelled stand-in's kinds (``THREE_GROUP_KINDS``)."""
    if num_classes not in THREE_GROUP_KINDS:
        raise ValueError(
            f"gifair_femnist_3groups needs the 62 EMNIST-ByClass/FEMNIST classes (or a 10-class stand-in); "
            f"got {num_classes}"
        )
    kinds = THREE_GROUP_KINDS[num_classes]
    layout = (
        ("capitals + digits", ("digits", "upper"), 60, 800),
        ("lower case + digits", ("digits", "lower"), 100, 1000),
        ("mixed", ("digits", "upper", "lower"), 40, 600),
    )
    return [
        GroupSpec(name, sum((kinds[k] for k in uses), ()), clients, per_client=_scaled(n, scale))
        for name, uses, clients, n in layout
    ]


GROUP_PRESETS: dict[str, Callable[..., list[GroupSpec]]] = {
    "equitable_fl": equitable_fl_groups,
    "gifair_femnist_3groups": gifair_femnist_3groups,
}


# -- natural (one client per owner) ---------------------------------------------------------------------
def choose_owners(
    owner_ids, num_clients: int | None, rng: np.random.Generator, min_samples: int = 1
) -> np.ndarray:
    """Owner ids with at least ``min_samples`` samples, all of them or ``num_clients`` drawn uniformly without
    replacement (GIFAIR: 500 FEMNIST writers, 31 Shakespeare roles). Sorted."""
    owners, counts = np.unique(_labels(owner_ids), return_counts=True)
    eligible = owners[counts >= min_samples]
    if num_clients is None:
        return eligible
    if not 1 <= num_clients <= len(eligible):
        raise ValueError(
            f"num_clients={num_clients}: only {len(eligible)} owners have >= min_samples={min_samples} "
            "samples: lower num_clients or min_samples"
        )
    return np.sort(rng.choice(eligible, num_clients, replace=False))


def natural(owner_ids, owners=None) -> Indices:
    """One client per owner in ``owners`` (default: every owner id, ascending): its sample indices."""
    owner_ids = _labels(owner_ids)
    owners = np.unique(owner_ids) if owners is None else np.asarray(owners)
    order = np.argsort(owner_ids, kind="stable")
    ranked = owner_ids[order]
    starts = np.searchsorted(ranked, owners, side="left")
    ends = np.searchsorted(ranked, owners, side="right")
    return _int64(order[s:e] for s, e in zip(starts, ends, strict=True))


# -- per-client test and validation data ----------------------------------------------------------------
def holdout_size(frac: float, n: int) -> int:
    """``round(frac * n)`` with halves rounded up: how many of ``n`` samples a ``frac`` share holds out."""
    return int(np.floor(frac * n + 0.5))


def local_split(
    client_indices: Indices, test_frac: float, rng: np.random.Generator, val_frac: float = 0.0
) -> tuple[Indices, Indices, Indices]:
    """Shuffle each client's samples: the last ``round(test_frac * n)`` (halves up) are its local test set,
    the ``round(val_frac * n)`` before them its validation set, the rest its training set (FedEBA+'s split:
    80/20, FMNIST 600 -> 480 / 0 / 120; GIFAIR-FL §5.1: 70/10/20, 500 -> 350 / 50 / 100). The shuffle and the
    test set do not depend on ``val_frac``. Returns (train, val, test)."""
    if not 0 <= test_frac < 1:
        raise ValueError(
            f"test_frac={test_frac} must be in [0, 1) (the share of each client's data held out)"
        )
    if not 0 <= val_frac < 1 - test_frac:
        raise ValueError(
            f"val_frac={val_frac} must be >= 0 and below 1 - test_frac = {1 - test_frac:g} (the share of "
            "each client's data held out for validation): lower val_frac or test_frac"
        )
    train, val, test = [], [], []
    for ix in client_indices:
        shuffled = rng.permutation(np.asarray(ix, dtype=np.int64))
        n_test = len(shuffled) - holdout_size(test_frac, len(shuffled))
        n_train = n_test - holdout_size(val_frac, len(shuffled))
        train.append(shuffled[:n_train])
        val.append(shuffled[n_train:n_test])
        test.append(shuffled[n_test:])
    return train, val, test


def tail_holdout(client_indices: Indices, sizes: Sequence[int], gap: int = 0) -> tuple[Indices, Indices]:
    """Hold out the last ``sizes[k]`` of client k's samples, in their order, and drop the ``gap`` samples
    before them. For windows cut from one text (Shakespeare) the gap keeps every held-out input disjoint
    from every kept one: LEAF's leak-free train/test rule, applied to a validation part carved from the
    training windows. A client with nothing to hold out keeps all its samples. Returns (kept, held out)."""
    if gap < 0:
        raise ValueError(f"gap={gap} must be >= 0 (samples dropped between the kept and held-out parts)")
    kept, held = [], []
    for k, (ix, size) in enumerate(zip(client_indices, sizes, strict=True)):
        ix = np.asarray(ix, dtype=np.int64)
        cut = len(ix) - size - (gap if size else 0)
        if size and cut < 1:
            raise ValueError(
                f"client {k}: {len(ix)} samples cannot give {size} held out after a gap of {gap} and keep "
                "one: lower val_frac (or use more of the data, e.g. a smaller window_stride)"
            )
        kept.append(ix[:cut])
        held.append(ix[len(ix) - size :])
    return kept, held


def _largest_remainder(
    weights: np.ndarray, total: int, held: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Integer sizes summing to ``total`` in proportion to ``weights``; the leftover units go to the largest
    remainders, ties to the clients ``held`` fewest samples so far (then at random)."""
    quota = weights * (total / weights.sum())
    sizes = np.floor(quota).astype(np.int64)
    order = np.lexsort((rng.random(len(weights)), held, -(quota - sizes)))
    sizes[order[: total - sizes.sum()]] += 1
    return sizes


def matched_test(client_train: Indices, train_labels, test_labels, rng: np.random.Generator) -> Indices:
    """Per-client test sets cut from a separate test pool so they follow each client's training labels: the
    shuffled test samples of class c go to the clients holding class c, in proportion to their class-c
    training counts (largest remainder, keeping totals even). For Equitable-FL (a cluster's test images
    split evenly among its clients) and SubTrunc (each class's test images split over its holders), whose
    papers do not describe the clients' test sets.
    Returns indices into the test pool; classes no client holds stay unassigned."""
    train_labels, test_labels = _labels(train_labels), _labels(test_labels)
    classes = np.unique(np.concatenate([train_labels, test_labels]))
    counts = np.zeros((len(client_train), len(classes)), dtype=np.int64)
    for k, ix in enumerate(client_train):
        counts[k] = np.bincount(np.searchsorted(classes, train_labels[ix]), minlength=len(classes))
    parts: list[list[np.ndarray]] = [[] for _ in client_train]
    held = np.zeros(len(client_train), dtype=np.int64)
    for j, c in enumerate(classes):
        if counts[:, j].sum() == 0:
            continue
        members = rng.permutation(np.flatnonzero(test_labels == c))
        sizes = _largest_remainder(counts[:, j].astype(np.float64), len(members), held, rng)
        held += sizes
        for k, piece in enumerate(np.split(members, np.cumsum(sizes)[:-1])):
            if len(piece):
                parts[k].append(piece)
    return _int64(np.concatenate(p) if p else np.empty(0, dtype=np.int64) for p in parts)


def group_test_pools(
    client_train: list[np.ndarray], groups: np.ndarray, train_labels: ArrayLike, test_labels: ArrayLike
) -> list[np.ndarray]:
    """Per-group shared test pools: client k is tested on every test-pool sample whose label is among the
    classes its group's clients hold (indices into the test pool; clients of one group share one array)."""
    train_labels, test_labels, groups = np.asarray(train_labels), np.asarray(test_labels), np.asarray(groups)
    pools = {}
    for g in np.unique(groups):
        members = [ix for ix, gk in zip(client_train, groups, strict=True) if gk == g]
        classes = np.unique(train_labels[np.concatenate(members)]) if members else np.array([], dtype=int)
        pools[g] = np.flatnonzero(np.isin(test_labels, classes))
    return [pools[g] for g in groups]
