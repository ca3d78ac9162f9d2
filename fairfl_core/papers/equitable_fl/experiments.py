"""Equitable-FL (Equitable Federated Learning with Activation Clustering): Table 2 (simple models), Table 3
(ResNet-18), the C / E / μ ablations of Tables 4–5 and Figure 6, and the curves of Figures 2–5.

Protocol (§5.1): planted label-disjoint clusters of clients (Table 1, ``data.partition.equitable_fl_groups``),
per-client test sets cut from the official test images of the cluster's classes (``client_test:
matched``), r = 40 % of the clients per round (20 % on FEMNIST) drawn uniformly without replacement, E = 5
local FedProx epochs of plain SGD (batch 32: not given), C = the planted number of clusters, 250 rounds
(simple models) or 100 (ResNet-18, BatchNorm), 3 runs. η and μ are tuned over {0.001, 0.01, 0.1} ×
{0.001, 0.01, 0.1, 1} (the best value is not reported): the ``paper`` profile runs the whole grid for every
method, and the report keeps, per method, the cell with the best final accuracy
(``papers.equitable_fl.claims``); the ``smoke`` and ``quick`` profiles run one shared, not tuned value
η = μ = 0.01 for every method.

Methods (Table 2 rows): Centralized (``centralized``: SGD on the pooled data, one epoch per round, so K
epochs), FedProx (p ∝ n_k over the participants), FedProx + Cluster2 (``clustered_sampling``), FedProx +
pow-d (``power_of_choice``, d = min(n, 2r)), FairFed with clipped weights (β = 1), GIFAIR-FL-Global with the
planted clusters as oracle groups and FedProx local steps (``gifair_global_prox``, λ = 0.5 λ_max) and
Equitable-FL. All but Centralized use the FedProx local step.

Data offline (no MNIST, CIFAR or FEMNIST files here): each setting swaps in a **labelled Fashion-MNIST
stand-in with the paper's client structure**, compared with the paper on direction and size only:

* MNIST → Fashion-MNIST with the exact counts (clusters {0–3} × 4 and {4–9} × 6 clients, 800 per class per
  client), MLP 784-200-200-10;
* CIFAR-10 → the same Fashion-MNIST split with the LeNet-5 CNN on 1×28×28 inputs;
* CIFAR-100 → Fashion-MNIST clusters {0–1} × 2, {2–4} × 3, {5–9} × 5 clients with the paper's per-client
  sizes 4,400 / 4,800 / 5,000 (2,200 / 1,600 / 1,000 per class), the 5-conv CNN on 1×28×28;
* FEMNIST → Fashion-MNIST clusters of 8, 36, 16, 18, 12 clients over {0}, {1}, {2–3}, {4–6}, {7–9} (the
  paper's 2 / 8 / 15 / 20 / 17 of 62 classes in proportion), each cluster's images cut in equal shards.

ResNet-18 (Table 3, ablations) uses BatchNorm, whose batch statistics need full minibatches: batch 40 on the
CIFAR-100 layout (4,400 / 4,800 / 5,000 are multiples of 40), GroupNorm on FEMNIST (shards of unequal size).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fairfl_core.data import stand_ins
from fairfl_core.experiments.profiles import (
    Experiment,
    Method,
    PaperTable,
    Profile,
    register_experiment,
    stand_in_profiles,
)

__all__ = [
    "ABLATIONS",
    "DATASETS",
    "ETA_GRID",
    "MU_GRID",
    "ROWS",
    "SETTINGS",
    "grid_methods",
    "methods",
    "table_experiment",
]

PAPER = "equitable_fl"
ETA_GRID = (0.001, 0.01, 0.1)
MU_GRID = (0.001, 0.01, 0.1, 1.0)
ETA, MU = 0.01, 0.01  # the one shared value of the short profiles
ROWS = ("Centralized", "FedProx", "Cluster2", "Pow-d", "FairFed", "GIFAIR", "Equitable-FL")
DATASETS = ("MNIST", "CIFAR-10", "CIFAR-100", "FEMNIST")


def methods(clusters: int, eta: float = ETA, mu: float = MU, tag: bool = False) -> tuple[Method, ...]:
    """Table 2's seven rows at learning rate ``eta`` and proximal weight ``mu`` (``tag``: the values in the
    labels, for the paper profile's grid)."""

    def label(row: str, with_mu: bool = True) -> str:
        values = f"η={eta:g}" + (f", μ={mu:g}" if with_mu else "")
        return f"{row} ({values})" if tag else row

    lr = (f"train.lr={eta}",)
    prox = {"mu": mu}
    return (
        Method(label("Centralized", False), "centralized", {}, "Centralized", (*lr, "train.local_epochs=1")),
        Method(label("FedProx"), "fedprox", prox, "FedProx", lr),
        Method(label("Cluster2"), "clustered_sampling", prox, "Cluster2", lr),
        Method(label("Pow-d"), "power_of_choice", prox, "Pow-d", lr),
        Method(label("FairFed"), "fairfed", {**prox, "beta": 1.0}, "FairFed", lr),
        Method(
            label("GIFAIR"),
            "gifair_global_prox",
            {**prox, "lam_frac": 0.5, "groups": "partition"},
            "GIFAIR",
            lr,
        ),
        Method(label("Equitable-FL"), "equitable_fl", {**prox, "num_clusters": clusters}, "Equitable-FL", lr),
    )


def grid_methods(clusters: int) -> tuple[Method, ...]:
    """Every row at every (η, μ) of the paper's grids (Centralized: every η)."""
    out = []
    for eta in ETA_GRID:
        for i, mu in enumerate(MU_GRID):
            out += [m for m in methods(clusters, eta, mu, tag=True) if i == 0 or m.algorithm != "centralized"]
    return tuple(out)


# -- the four data settings: real files when present, else the labelled stand-in ------------------------
def _groups(layout: Iterable[tuple[range, int, int | None]], per_client: int | None = None) -> str:
    """``data.partition_options`` listing the clusters ``(classes, clients, per class per client or None)``
    (None: the cluster's pool cut in equal shards, or ``per_client`` images each)."""
    groups = []
    for q, (classes, clients, per_class) in enumerate(layout):
        size = {"per_class": per_class} if per_class else ({"per_client": per_client} if per_client else {})
        groups.append({"name": f"cluster {q + 1}", "classes": list(classes), "num_clients": clients, **size})
    return f"data.partition_options={json.dumps({'groups': groups})}"


_C100 = [(range(0, 2), 2, 2200), (range(2, 5), 3, 1600), (range(5, 10), 5, 1000)]
_FEMNIST = [(range(0, 1), 8, None), (range(1, 2), 36, None), (range(2, 4), 16, None)]
_FEMNIST += [(range(4, 7), 18, None), (range(7, 10), 12, None)]
_PRESET_SMOKE = ("data.partition_options={preset: equitable_fl, scale: 0.05}",)


@dataclass(frozen=True)
class Setting:
    """One column of Tables 2–3: its config, C, the number of classes, its data set in the stand-in registry
    (``data/stand_ins.py``), the stand-in's overrides and the smoke partition (a few samples per client in
    the same clusters)."""

    column: str
    config: str
    clusters: int
    classes: int
    dataset: str
    stand_in: tuple[str, ...]
    smoke_stand_in: tuple[str, ...] = _PRESET_SMOKE

    @property
    def present(self) -> bool:
        return stand_ins.present(self.dataset)

    @property
    def data(self) -> tuple[str, ...]:
        return () if self.present else self.stand_in

    @property
    def smoke_data(self) -> tuple[str, ...]:
        return _PRESET_SMOKE if self.present else self.smoke_stand_in

    @property
    def label(self) -> str:
        return "" if self.present else f"stand-in (no {self.column} files here: Fashion-MNIST), "

    @property
    def num_classes(self) -> int:
        return self.classes if self.present else 10

    @property
    def rgb(self) -> bool:
        return self.present and self.column.startswith("CIFAR")


FASHION = ("data.name=fashion_mnist",)
SETTINGS = {
    "mnist": Setting(
        "MNIST",
        "equitable_mnist_mlp.yaml",
        2,
        10,
        "mnist",
        stand_ins.STAND_INS["mnist"],
    ),
    "cifar10": Setting(
        "CIFAR-10",
        "equitable_cifar10_cnn.yaml",
        2,
        10,
        "cifar10",
        stand_ins.STAND_INS["cifar10"],
    ),
    "cifar100": Setting(
        "CIFAR-100",
        "equitable_cifar100_cnn.yaml",
        3,
        100,
        "cifar100",
        (
            *FASHION,
            "data.stand_in=CIFAR-100",
            _groups(_C100),
            "model.options={num_classes: 10, in_channels: 1, input_size: 28}",
        ),
        (_groups([(c, n, p // 50) for c, n, p in _C100]),),
    ),
    "femnist": Setting(
        "FEMNIST",
        "equitable_femnist_cnn.yaml",
        5,
        62,
        "femnist",
        (*FASHION, "data.stand_in=FEMNIST", _groups(_FEMNIST), "model.options={num_classes: 10}"),
        (_groups(_FEMNIST, per_client=20),),
    ),
}


def _mlp(s: Setting) -> tuple[str, ...]:
    return (
        "model.name=mlp",
        f"model.options={{num_classes: {s.num_classes}, in_features: {3072 if s.rgb else 784}}}",
    )


def _resnet(s: Setting) -> tuple[str, ...]:
    """ResNet-18 (CIFAR stem) with BatchNorm, batch 40 on the CIFAR-100 layout; GroupNorm on FEMNIST."""
    norm = "group" if s.column == "FEMNIST" else "batch"
    options = f"{{num_classes: {s.num_classes}, in_channels: {3 if s.rgb else 1}, norm: {norm}}}"
    batch = ("train.batch_size=40",) if s.column == "CIFAR-100" else ()
    return ("model.name=resnet18", f"model.options={options}", *batch)


SMOKE = (
    "CI check: a few samples per client in the same clusters, MLP, 1 local epoch, 2 rounds, 1 seed; not "
    "comparable to the paper"
)
# 3 seeds within 25 minutes on 2 CPU cores (benchmarks/README.md, "Equitable-FL's round"): a CIFAR-10
# column round (LeNet-5, 750 looped local steps) costs about 20 s on one loaded core, an MNIST one 2-3 s
QUICK_ROUNDS = {"mnist": 20, "cifar10": 4, "cifar100": 10, "femnist": 10}
QUICK_SEEDS = (0, 1, 2)
ABLATION_QUICK_ROUNDS = 15


def table_experiment(key: str, resnet: bool = False) -> Experiment:
    """Table 2 (``resnet=False``) or Table 3's column ``key``."""
    s = SETTINGS[key]
    table = "Table 3" if resnet else "Table 2"
    return Experiment(
        name=f"equitable_{'table3' if resnet else 'table2'}_{key}",
        description=f"Equitable-FL {table}: {s.column}, {_arch(resnet)}, the seven rows",
        config=s.config,
        profiles=stand_in_profiles(s.dataset, lambda: _table_profiles(key, resnet)),
        methods=methods(s.clusters),
        # Table 3's numbers are missing from the source text: no paper values to compare with
        paper=None if resnet else PaperTable(PAPER, table, {k: v.column for k, v in SETTINGS.items()}),
    )


def _arch(resnet: bool) -> str:
    return "ResNet-18" if resnet else "simple model"


def _table_profiles(key: str, resnet: bool) -> dict[str, Profile]:
    s = SETTINGS[key]
    model = _resnet(s) if resnet else ()
    arch = _arch(resnet)
    rounds = 100 if resnet else 250
    smoke = (*s.data, *s.smoke_data, *_mlp(s), "train.local_epochs=1")
    return {
        "smoke": Profile(SMOKE, 2, (0,), 1, smoke),
        "quick": Profile(
            f"{s.label}{arch}, {QUICK_ROUNDS[key]} of the {rounds} rounds, {len(QUICK_SEEDS)} seeds, one "
            f"shared η = {ETA}, μ = {MU} (not tuned)",
            QUICK_ROUNDS[key],
            QUICK_SEEDS,
            1,
            (*s.data, *model),
        ),
        "paper": Profile(
            f"{s.label}{arch}, {rounds} rounds, 3 seeds, every method over the η × μ grid (best final "
            "accuracy kept per method)",
            rounds,
            (0, 1, 2),
            1,
            (*s.data, *model),
            grid_methods(s.clusters),
        ),
    }


for _key in SETTINGS:
    register_experiment(table_experiment(_key))
    register_experiment(table_experiment(_key, resnet=True))


# -- ablations (Tables 4-5, Figure 6): Equitable-FL on the CIFAR-100 setting, ResNet-18, 50 rounds ---------
def _equitable(label: str, *, clusters: int = 3, mu: float = MU, overrides: tuple[str, ...] = ()) -> Method:
    params = {"mu": mu, "num_clusters": clusters}
    return Method(label, "equitable_fl", params, None, (f"train.lr={ETA}", *overrides))


WIDER_R = 6  # participants per round of the C ablation's second grid (C = 4 < r)


def _cluster_grid(quick: bool) -> tuple[Method, ...]:
    """C ∈ {1, 2, 3} at the paper's r = 4 (40 % of 10 clients), where C = 4 = r would make every participant
    its own cluster, i.e. uniform averaging, the same as C = 1 by construction; then C ∈ {1, 2, 3, 4} at
    r = 6 (§3 allows any r ≤ n), where every C differs."""
    wider = (f"train.clients_per_round={WIDER_R}",)
    return (
        *(_equitable(f"C={c}", clusters=c) for c in (1, 2, 3)),
        *(_equitable(f"C={c} (r={WIDER_R})", clusters=c, overrides=wider) for c in (1, 2, 3, 4)),
    )


ABLATIONS = {
    "equitable_table4_clusters": (
        f"Table 4 / Fig. 6 (left): the number of clusters C (planted: 3) at r = 4 (C = 4 = r is C = 1 by "
        f"construction, not run) and at r = {WIDER_R}",
        _cluster_grid,
    ),
    "equitable_table4_epochs": (
        "Table 4 / Fig. 6 (middle): local epochs E",
        lambda quick: tuple(
            _equitable(f"E={e}", overrides=(f"train.local_epochs={e}",))
            for e in ((1, 2, 5) if quick else (1, 5, 10))
        ),
    ),
    "equitable_table5_mu": (
        "Table 5 / Fig. 6 (right): the proximal weight μ",
        lambda quick: tuple(_equitable(f"μ={mu:g}", mu=mu) for mu in MU_GRID),
    ),
}


def _ablation(name: str) -> Experiment:
    description, grid = ABLATIONS[name]
    s = SETTINGS["cifar100"]
    return Experiment(
        name=name,
        description=f"Equitable-FL {description}, CIFAR-100 setting",
        config=s.config,
        profiles=stand_in_profiles(s.dataset, lambda: _ablation_profiles(grid)),
        methods=grid(False),
    )


def _ablation_profiles(grid: Callable[[bool], tuple[Method, ...]]) -> dict[str, Profile]:
    s = SETTINGS["cifar100"]
    return {
        "smoke": Profile(
            SMOKE, 2, (0,), 1, (*s.data, *s.smoke_data, *_mlp(s), "train.local_epochs=1"), grid(True)
        ),
        "quick": Profile(
            f"{s.label}MLP 784-200-200 instead of ResNet-18 (2 CPU cores), {ABLATION_QUICK_ROUNDS} of the 50 "
            f"rounds, {len(QUICK_SEEDS)} seeds; E grid {{1, 2, 5}}",
            ABLATION_QUICK_ROUNDS,
            QUICK_SEEDS,
            1,
            (*s.data, *_mlp(s)),
            grid(True),
        ),
        "paper": Profile(
            f"{s.label}ResNet-18 (BatchNorm, batch 40), 50 rounds, 3 seeds; E grid {{1, 5, 10}}",
            50,
            (0, 1, 2),
            1,
            (*s.data, *_resnet(s)),
        ),
    }


for _name in ABLATIONS:
    register_experiment(_ablation(_name))


QUICK_TABLES = ("equitable_table2_mnist", "equitable_table2_cifar10")
