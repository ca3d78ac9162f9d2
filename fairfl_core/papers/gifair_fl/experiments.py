"""GIFAIR-FL (Yue, Nouiehed & Al Kontar, "GIFAIR-FL: A Framework for Group and Individual Fairness in
Federated Learning"): Tables 2–6 and the λ sweeps of Figures 4–5 (§5 of the paper).

Data: the base configs (``configs/gifair_*.yaml``) describe the paper's data. FEMNIST-skewed and
FEMNIST-3-groups draw from EMNIST ByClass and FEMNIST-original from LEAF FEMNIST; when those files are not
under the data root (the offline case) the experiment swaps in a **labelled stand-in on real images with the
same partition structure** (``stand_in`` = the paper's dataset, so tables compare it with that column):

* FEMNIST-skewed → Fashion-MNIST, 100 clients × 5 of the 10 classes × 100 images;
* FEMNIST-original → Fashion-MNIST over 500 clients of unequal sizes (Dirichlet(0.5) label skew; LEAF's
  writers have no offline counterpart);
* FEMNIST-3-groups → Fashion-MNIST in three groups of 60 / 100 / 40 clients with the paper's per-device
  size ratio 800 : 1,000 : 600 (× 0.3, the pool holds 60,000 images): two classes shared by all groups
  ("digits": trouser, bag), group 1 adds {T-shirt, pullover, sandal, sneaker} ("capitals"), group 2
  {dress, coat, shirt, ankle boot} ("lower case"), group 3 has all ten (the confusable pairs meet there).

Shakespeare is the real Gutenberg text (LEAF-style roles; ``fairfl_core/data/shakespeare_roles.py``), split by
LEAF's leak-free rule (each role's first 80 % of windows train, test after a gap, so no test input overlaps a
training one). The paper split each device at random (§5.1, following q-FFL and Ditto), which puts test
windows between training windows of the same text; Table 6 also runs on that split
(``gifair_table6_shakespeare_gender_random_split``, labelled): it measures how well a model recalls its roles'
own text rather than how it generalises, which is where a gender gap can come from. Table 6 draws its 25
male and 10 female roles from every role the loader keeps, as the paper does (no size floor);
``gifair_table6_shakespeare_gender_2000_windows`` (labelled) draws both from the roles with at least 2,000
windows, which leaves out the small roles.

Methods: the same sampling for all (10 clients ∝ p_k, simple average, as q-FFL's and Ditto's code) except AFL
(full participation, as fair_flearn runs it): one full-batch gradient per client and round on FEMNIST-original
(fair_flearn), the other methods' local training on Shakespeare (FLGo; the batched engine pads a full-batch
step to the largest role, far too slow on 31 roles of very unequal sizes).

Hyperparameters: every client's data is split 70/10/20 into train / validation / test (``data.val_frac:
0.1``; on Shakespeare the validation windows come from the end of each role's training windows). The
``paper`` profile runs every value of each method's grid (the paper's §5 "Implementation" prints q ∈ {0,
0.001, 0.01, 0.1, 1, 2, 5, 10}, TERM t ∈ {1, 2, 5}, Ditto λ ∈ {0.01, 0.05, 0.1, 0.5, 1, 2, 5} and GIFAIR λ ∈
{0, 0.1, …, 0.9} λ_max; it prints none for AFL and FedMGDA+, which run γ_λ ∈ {0.001, 0.01, 0.1} and
ε ∈ {0.05, 0.1, 0.5, 1}; the paper profile's ``methods``) and the selection rule (§5, q-FFL's) chooses one
value per method on the validation metrics (``papers.gifair_fl.claims.tuned_methods``). The ``smoke`` and
``quick`` profiles (CPU budget) run one **fixed, not selected** value of each grid: q = 1, t = 1, γ_λ = 0.01,
ε = 0.1, λ_Ditto = 0.5; GIFAIR λ = 0.9 λ_max for individual fairness (d = K) and 0.5 λ_max for groups (the
paper's "moderate" λ, Figure 4). q = 1 is the smallest printed q that moves q-FFL clearly away from
FedAvg: q = 0 is FedAvg, and with q ≤ 0.1 the weights F_k^q of losses between 0.3 and 3 lie within 0.89–1.12
(q = 1: 0.3–3). The λ sweeps cover the paper's whole grid {0, 0.1, …, 0.9} λ_max at every profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fairfl_core.data import stand_ins
from fairfl_core.data.partition import gifair_femnist_3groups
from fairfl_core.experiments.profiles import (
    Experiment,
    Method,
    PaperTable,
    Profile,
    each_variant,
    register_experiment,
    stand_in_profiles,
)

__all__ = ["GRIDS", "HYPERPARAMETERS", "LAMBDA_GRID", "Tuned", "femnist_stand_ins"]

PAPER = "gifair_fl"
LAMBDA_GRID = tuple(round(0.1 * i, 1) for i in range(10))  # λ / λ_max, Figures 4–5
SAME_SAMPLING = {"sampling": "size", "weighting": "uniform"}
RANDOM_SPLIT = "data.loader_options.split=leaky"  # Shakespeare's random per-window split (GIFAIR-FL §5.1)
LARGE_ROLES = "data.loader_options.min_windows=2000"  # both genders drawn from roles with >= 2,000 windows


@dataclass(frozen=True)
class Tuned:
    """A compared method with one hyperparameter ``param``: the paper's ``grid`` (§5, chosen by the selection
    rule at the paper profile) and the ``fixed`` value the smoke and quick profiles run."""

    row: str  # the paper's row
    algorithm: str
    param: str
    symbol: str  # the label's name for param
    grid: tuple[float, ...]
    fixed: float
    params: Mapping = field(default_factory=dict)  # the algorithm's other parameters
    unit: str = ""

    def method(self, value: float) -> Method:
        label = f"{self.row} ({self.symbol}={value:g}{self.unit})"
        return Method(label, self.algorithm, {**self.params, self.param: float(value)}, self.row)


def _floats(*values: float) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


FEDAVG = Method("FedAvg", "fedavg", SAME_SAMPLING, "FedAvg")
QFFL = Tuned("q-FFL", "qffl", "q", "q", _floats(0, 0.001, 0.01, 0.1, 1, 2, 5, 10), 1.0, SAME_SAMPLING)
TERM = Tuned("TERM", "term", "t", "t", _floats(1, 2, 5), 1.0, SAME_SAMPLING)
AFL_GRADIENT = Tuned("AFL", "afl", "lr_lambda", "γ_λ", (0.001, 0.01, 0.1), 0.01, {"client_step": "gradient"})
AFL_LOCAL = replace(AFL_GRADIENT, params={"client_step": "local"})
FEDMGDA = Tuned("FedMGDA+", "fedmgda+", "epsilon", "ε", (0.05, 0.1, 0.5, 1.0), 0.1, SAME_SAMPLING)
DITTO = Tuned("Ditto", "ditto", "lam", "λ", _floats(0.01, 0.05, 0.1, 0.5, 1, 2, 5), 0.5, SAME_SAMPLING)
GIFAIR_GLOBAL = Tuned("GIFAIR-FL-Global", "gifair_global", "lam_frac", "λ", LAMBDA_GRID, 0.9, unit="λmax")
GIFAIR_PER = replace(GIFAIR_GLOBAL, row="GIFAIR-FL-Per", algorithm="gifair_per")
INDIVIDUAL = (GIFAIR_GLOBAL, GIFAIR_PER)  # λ = 0.9 λ_max at the short profiles
GROUPS = tuple(replace(t, fixed=0.5) for t in INDIVIDUAL)  # 0.5 λ_max
HYPERPARAMETERS = {t.algorithm: t.param for t in (QFFL, TERM, AFL_GRADIENT, FEDMGDA, DITTO, *INDIVIDUAL)}


def _fixed(entries: tuple[Method | Tuned, ...]) -> tuple[Method, ...]:
    return tuple(e.method(e.fixed) if isinstance(e, Tuned) else e for e in entries)


def _grid(entries: tuple[Method | Tuned, ...]) -> tuple[Method, ...]:
    return tuple(m for e in entries for m in ([e.method(v) for v in e.grid] if isinstance(e, Tuned) else [e]))


# -- the FEMNIST settings: real data when present, else a stand-in ---------------------------------------
_THREE_GROUPS: list[
    dict[str, Any]
] = [  # the preset's layout written out, so that the stand-in's config states its classes
    {"name": g.name, "classes": list(g.classes), "num_clients": g.num_clients, "per_client": g.per_client}
    for g in gifair_femnist_3groups(10, scale=0.3)
]
_SMALL_GROUPS = [
    {**g, "num_clients": g["num_clients"] // 10, "per_client": g["per_client"] // 3} for g in _THREE_GROUPS
]


@dataclass(frozen=True)
class _FemnistSetting:
    """Which real data a FEMNIST setting needs, its classes, its stand-in and its smoke-scale overrides."""

    needs: str  # "EMNIST" | "LEAF FEMNIST"
    classes: int
    stand_in: tuple[str, ...]
    smoke_real: tuple[str, ...]
    smoke_stand_in: tuple[str, ...]


_FEMNIST = {
    "femnist_skewed": _FemnistSetting(
        "EMNIST",
        10,
        (
            "data.name=fashion_mnist",
            "data.stand_in=FEMNIST-skewed",
            "data.loader_options={}",
            "data.partition_options={classes_per_client: 5, samples_per_class: 100, assignment: balanced}",
        ),
        ("data.num_clients=20",),
        ("data.num_clients=20",),
    ),
    "femnist_original": _FemnistSetting(
        "LEAF FEMNIST",
        62,
        (
            "data.name=fashion_mnist",
            "data.stand_in=FEMNIST-original",
            "data.partition=dirichlet",
            "data.partition_options={alpha: 0.5, min_size: 10}",
            "data.test_frac=0.2",
        ),
        ("data.num_clients=40",),
        (),
    ),
    "femnist_3groups": _FemnistSetting(
        "EMNIST",
        62,
        (
            "data.name=fashion_mnist",
            "data.stand_in=FEMNIST-3-groups",
            "data.loader_options={}",
            f"data.partition_options={{groups: {_THREE_GROUPS}}}",
        ),
        ("data.partition_options={preset: gifair_femnist_3groups, scale: 0.1}",),
        ("data.num_clients=20", f"data.partition_options={{groups: {_SMALL_GROUPS}}}"),
    ),
}


def femnist_stand_ins(setting: str) -> tuple[str, ...]:
    """The overrides that replace the paper's data of ``setting`` by its stand-in, or () when the real data
    (EMNIST ByClass, LEAF FEMNIST) is under the data root."""
    spec = _FEMNIST[setting]
    present = stand_ins.present("femnist" if spec.needs == "LEAF FEMNIST" else "emnist")
    return () if present else spec.stand_in


def _femnist_profiles(setting: str) -> dict[str, Profile]:
    """The setting's profiles on EMNIST ByClass or LEAF FEMNIST, each carrying its stand-in's."""
    needs = "femnist" if _FEMNIST[setting].needs == "LEAF FEMNIST" else "emnist"
    return stand_in_profiles(needs, lambda: _femnist_scales(setting))


def _femnist_scales(setting: str) -> dict[str, Profile]:
    spec, data = _FEMNIST[setting], femnist_stand_ins(setting)
    classes = 10 if data else spec.classes
    what = f"stand-in (no {spec.needs} here), " if data else ""
    mlp = ("model.name=mlp", f"model.options={{num_classes: {classes}}}")
    smoke = spec.smoke_stand_in if data else spec.smoke_real
    return {
        "smoke": Profile(
            f"CI check: {what}MLP, fewer clients, 1 local epoch, 2 rounds, 1 seed; not comparable to paper",
            2,
            (0,),
            2,
            (*data, *mlp, "train.local_epochs=1", *smoke),
        ),
        "quick": Profile(
            f"{what}MLP 784-200-200 instead of the CNN (2 CPU cores), 40 of the 500 rounds, 3 of the 5 seeds "
            "(a verdict needs 3 a side)",
            40,
            (0, 1, 2),
            10,
            (*data, *mlp),
        ),
        "paper": Profile(
            f"{what}paper scale: Ditto's CNN, 500 rounds (Ditto's setting), 5 seeds",
            500,
            (0, 1, 2, 3, 4),
            10,
            (*data, f"model.options.num_classes={classes}"),
        ),
    }


def _shakespeare_profiles() -> dict:
    return {
        "smoke": Profile(
            "CI check: every 500th window, 20-character inputs, LSTM of 16 units, 2 rounds, 1 seed; not "
            "comparable to the paper",
            2,
            (0,),
            2,
            (
                "data.loader_options.window_stride=500",
                "data.loader_options.seq_len=20",
                "model.options={hidden_size: 16}",
            ),
        ),
        "quick": Profile(
            "every 20th window of each role (sizes kept in proportion), 20-character inputs, LSTM of 64 "
            "units, 25 local steps per round without lr decay (one epoch with 0.95 decay never leaves the "
            "unigram plateau in 30 rounds), 80 of the 500 rounds, 3 of the 5 seeds (a verdict needs 3 a "
            "side; 2 CPU cores)",
            80,
            (0, 1, 2),
            10,
            (
                "data.loader_options.window_stride=20",
                "data.loader_options.seq_len=20",
                "model.options={hidden_size: 64}",
                "train.local_epochs=null",
                "train.local_steps=25",
                "train.lr_decay=1.0",
            ),
        ),
        "paper": Profile("paper scale: all windows, LSTM 256, 500 rounds, 5 seeds", 500, (0, 1, 2, 3, 4), 10),
    }


def _variant(profiles: dict[str, Profile], what: str, override: str) -> dict[str, Profile]:
    """``profiles`` with one more ``override``, described by ``what``."""
    return {
        name: replace(p, description=f"{what}; {p.description}", overrides=(*p.overrides, override))
        for name, p in profiles.items()
    }


def _random_split(profiles: dict[str, Profile]) -> dict[str, Profile]:
    """``profiles`` on the paper's random per-window 70/10/20 split of each role (§5.1, as q-FFL's and Ditto's
    Shakespeare data): test windows overlap training text, so accuracy partly measures memorised text; the
    leak-free LEAF split (the other tables) is the valid measure of generalisation."""
    what = "random per-window 70/10/20 split of each role (§5.1; test text overlaps training text)"
    return _variant(profiles, what, RANDOM_SPLIT)


def _large_roles(profiles: dict[str, Profile]) -> dict[str, Profile]:
    """``profiles`` with both genders drawn from the roles with at least 2,000 windows (not the paper's draw,
    which has no size floor)."""
    what = "both genders drawn from roles with >= 2,000 windows (a floor the paper does not have)"
    return _variant(profiles, what, LARGE_ROLES)


_FIXED_NOTE = "one fixed value per method, not selected (no grid at this scale)"
_GRID_NOTE = "every value of each method's grid, one chosen per method by rule A9 on validation"


def _table_profiles(profiles: dict[str, Profile], grid: tuple[Method, ...]) -> dict[str, Profile]:
    """A table's profiles: one fixed value per method at the short ones, the whole ``grid`` (for the
    selection on validation) at paper."""
    return {
        name: each_variant(p, lambda q: replace(q, description=f"{q.description}; {_FIXED_NOTE}"))
        if name != "paper"
        else each_variant(p, lambda q: replace(q, description=f"{q.description}; {_GRID_NOTE}", methods=grid))
        for name, p in profiles.items()
    }


# name → (description, base config, compared methods, paper columns, profiles)
TABLES: dict[str, tuple[str, str, tuple[Method | Tuned, ...], dict[str, str], dict[str, Profile]]] = {
    "gifair_table2_femnist_skewed": (
        "Table 2: individual fairness on FEMNIST-skewed (d = K = 100)",
        "gifair_femnist_skewed.yaml",
        (FEDAVG, QFFL, TERM, FEDMGDA, DITTO, *INDIVIDUAL),
        {"emnist": "FEMNIST-skewed"},
        _femnist_profiles("femnist_skewed"),
    ),
    "gifair_table3_femnist_original": (
        "Table 3: individual fairness on FEMNIST-original (d = K = 500)",
        "gifair_femnist_original.yaml",
        (FEDAVG, QFFL, TERM, AFL_GRADIENT, DITTO, *INDIVIDUAL),
        {"femnist": "FEMNIST-original"},
        _femnist_profiles("femnist_original"),
    ),
    "gifair_table4_femnist_3groups": (
        "Table 4: group fairness on FEMNIST-3-groups (d = 3, K = 200)",
        "gifair_femnist_3groups.yaml",
        (FEDAVG, QFFL, TERM, FEDMGDA, DITTO, *GROUPS),
        {"emnist": "FEMNIST-3-groups"},
        _femnist_profiles("femnist_3groups"),
    ),
    "gifair_table5_shakespeare": (
        "Table 5: individual fairness on Shakespeare, LEAF leak-free split (d = K = 31 roles; the paper "
        "splits each role at random per window)",
        "gifair_shakespeare.yaml",
        (FEDAVG, QFFL, AFL_LOCAL, DITTO, *INDIVIDUAL),
        {"shakespeare_gifair": "Shakespeare"},
        _shakespeare_profiles(),
    ),
    "gifair_table6_shakespeare_gender": (
        "Table 6: group fairness by gender on Shakespeare, LEAF leak-free split (d = 2: the paper's draw of "
        "25 male, 10 female roles; the paper splits each role at random per window)",
        "gifair_shakespeare_gender.yaml",
        (FEDAVG, QFFL, FEDMGDA, DITTO, *GROUPS),
        {"shakespeare_gifair": "Shakespeare"},
        _shakespeare_profiles(),
    ),
    "gifair_table6_shakespeare_gender_random_split": (
        "Table 6: group fairness by gender on Shakespeare, the paper's random per-window split (d = 2: the "
        "same 25 male, 10 female roles)",
        "gifair_shakespeare_gender.yaml",
        (FEDAVG, QFFL, FEDMGDA, DITTO, *GROUPS),
        {"shakespeare_gifair": "Shakespeare"},
        _random_split(_shakespeare_profiles()),
    ),
    "gifair_table6_shakespeare_gender_2000_windows": (
        "Table 6: group fairness by gender on Shakespeare, LEAF leak-free split, both genders drawn from "
        "roles with >= 2,000 windows (d = 2: 25 male, 10 female roles; not the paper's draw)",
        "gifair_shakespeare_gender.yaml",
        (FEDAVG, QFFL, FEDMGDA, DITTO, *GROUPS),
        {"shakespeare_gifair": "Shakespeare"},
        _large_roles(_shakespeare_profiles()),
    ),
}
# the paper profile's methods: every value of each method's grid
GRIDS = {name: _grid(entries) for name, (_, _, entries, _, _) in TABLES.items()}
for _name, (_description, _config, _entries, _datasets, _profiles) in TABLES.items():
    register_experiment(
        Experiment(
            name=_name,
            description=f"GIFAIR-FL {_description}",
            config=_config,
            profiles=_table_profiles(_profiles, GRIDS[_name]),
            methods=_fixed(_entries),
            paper=PaperTable(PAPER, _description.split(":")[0], _datasets),
        )
    )


def _lambda_methods() -> tuple[Method, ...]:
    return tuple(GIFAIR_GLOBAL.method(f) for f in LAMBDA_GRID)


register_experiment(
    Experiment(
        name="gifair_fig4_lambda_shakespeare",
        description="GIFAIR-FL Figure 4: GIFAIR-FL-Global's male and female accuracy on Shakespeare (d = 2, "
        "LEAF leak-free split) against λ/λ_max ∈ {0, 0.1, ..., 0.9} (λ = 0 is FedAvg)",
        config="gifair_shakespeare_gender.yaml",
        profiles=_shakespeare_profiles(),
        methods=_lambda_methods(),
    )
)
register_experiment(
    Experiment(
        name="gifair_fig5_lambda_femnist",
        description="GIFAIR-FL Figure 5: GIFAIR-FL-Global's group accuracies on FEMNIST-3-groups (d = 3) "
        "against λ/λ_max ∈ {0, 0.1, ..., 0.9} (λ = 0 is FedAvg)",
        config="gifair_femnist_3groups.yaml",
        profiles=_femnist_profiles("femnist_3groups"),
        methods=_lambda_methods(),
    )
)


# -- where Table 6's gender gap comes from: FedAvg as the scale grows toward the paper's -------------------
# (axis, value, overrides) of each step, from the quick profile's 80 rounds, LSTM of 64 units and every 20th
# window toward the paper's 500 rounds, 256 units and every window, one axis at a time, then all three
GAP_STEPS = (
    ("base", "80 rounds, LSTM 64, every 20th window", ()),
    ("rounds", "160 rounds", ("train.rounds=160",)),
    ("rounds", "320 rounds", ("train.rounds=320",)),
    ("width", "LSTM 128", ("model.options={hidden_size: 128}",)),
    ("width", "LSTM 256", ("model.options={hidden_size: 256}",)),
    ("windows", "every 10th window", ("data.loader_options.window_stride=10",)),
    ("windows", "every 5th window", ("data.loader_options.window_stride=5",)),
    (
        "all",
        "320 rounds, LSTM 128, every 5th window",
        ("train.rounds=320", "model.options={hidden_size: 128}", "data.loader_options.window_stride=5"),
    ),
)
GAP_SMOKE_STEPS = (("base", "the smoke profile's 2 rounds", ()), ("rounds", "4 rounds", ("train.rounds=4",)))


def gap_methods(steps: tuple[tuple[str, str, tuple[str, ...]], ...]) -> tuple[Method, ...]:
    """FedAvg at each step of ``steps`` (its label names the axis and the value)."""
    return tuple(replace(FEDAVG, label=f"FedAvg, {axis}: {value}", overrides=o) for axis, value, o in steps)


def _gap_profiles() -> dict[str, Profile]:
    profiles = _random_split(_shakespeare_profiles())
    return {
        "smoke": replace(profiles["smoke"], methods=gap_methods(GAP_SMOKE_STEPS)),
        "quick": replace(
            profiles["quick"],
            description=f"{profiles['quick'].description}; then one axis at a time toward the paper's 500 "
            "rounds, LSTM 256 and every window (about 1 CPU-hour)",
            methods=gap_methods(GAP_STEPS),
        ),
        "paper": replace(profiles["paper"], methods=(replace(FEDAVG, label="FedAvg, paper: its setting"),)),
    }


register_experiment(
    Experiment(
        name="gifair_gender_gap_scale",
        description="GIFAIR-FL Table 6's gender gap (male − female accuracy) of FedAvg on the paper's random "
        "split as rounds, LSTM width and windows per role grow toward the paper's (the package's "
        "observation)",
        config="gifair_shakespeare_gender.yaml",
        profiles=_gap_profiles(),
        methods=gap_methods(GAP_STEPS),
    )
)
