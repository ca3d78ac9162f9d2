"""SubTrunc / UnionFL (Castillo J., Kaya, Ye, Hashemi, "Submodular Maximization Approaches for Equitable
Client Selection in Federated Learning", arXiv 2408.13683): Tables I–IV on the MNIST and CIFAR-10 columns.

Protocol (§V): 100 clients with 3 distinct classes each (every class held by 30 clients, equal shards),
κ = 10 clients per round, stochastic greedy with r = 10 candidates per step, LeNet-5, FedAvg local SGD and an
unweighted average, b = 1.10, μ = 1, φ = ln(1+x), window 5; λ = 0.95 (MNIST) and 0.50 (CIFAR-10) in Tables I
and IV. The paper gives no rounds, local steps, learning rate or batch size: E = 20 steps of batch 32, 5
seeds, and K and η by the package's own calibration rule (``submodular_calibration_*``, readings.md):
Random alone runs over an η grid; K is chosen first at the default η (0.01 MNIST, 0.02 CIFAR-10), then η,
so that Random's final accuracy comes within 3 points of the paper's Random (Table I), and the notebook runs
every table at the calibrated K and η. The short profiles keep their round budget and calibrate η only.
Gradients and losses are fresh every round. Power-of-Choice draws all d = N clients as candidates (the
package's choice: the paper gives no d).

G's scale against H (``objective_scale``, readings.md): the default reading :data:`READING` and the
other one, :data:`ALTERNATIVE`, both run in Table I (SubTrunc's row and a labelled row of the other reading)
and over the whole λ sweep of Table II; the paper's printed rows are compared with the default reading's.
The normalised reading (G/Ḡ(∅)) joins Table I at the paper profile.

Offline neither MNIST nor CIFAR-10 is available: both columns then run on the labelled Fashion-MNIST
stand-in with the same partition (CIFAR-10's LeNet on 1×28×28 inputs). Runs shared between tables (Table I's
SubTrunc rows are Table II's λ rows and Table IV's ln(1+x) row, its UnionFL Table III's window-5 row) are
one run.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from fairfl_core.data import stand_ins
from fairfl_core.experiments.profiles import (
    Experiment,
    Method,
    PaperTable,
    Profile,
    get_profile,
    register_experiment,
    stand_in_profiles,
)

__all__ = [
    "ALTERNATIVE",
    "CALIBRATION",
    "COLUMNS",
    "LAMBDAS",
    "QUICK",
    "READING",
    "TABLES",
    "reading_of",
    "calibrated_overrides",
    "calibration_rounds",
    "column_of",
    "table_methods",
]

PAPER = "submodular_selection"
SELECTION = {"pool_size": 10}  # r = 10 (§V); fresh gradients, stochastic greedy, unweighted average
LAMBDA = {"MNIST": 0.95, "CIFAR-10": 0.50}
QUICK = ("submodular_table1_mnist", "submodular_table2_mnist")
READING, ALTERNATIVE = "averaged", "literal"  # objective_scale: SubTrunc's default, the other reading run
LAMBDAS = (0.01, 0.10, 0.25, 0.50, 0.75, 0.95)  # Table II
QUICK_LAMBDAS = (0.01, 0.95)  # Table II's extremes at quick (2 CPU cores)
QUICK_ROUNDS = 8  # with 3 seeds and both readings: about 20 minutes on 2 CPU cores
# the package's calibration: the candidate K (rounds) and η of each column, the default η first
CALIBRATION = {
    "MNIST": ((50, 100, 150, 200), (0.01, 0.005, 0.02, 0.05)),
    "CIFAR-10": ((100, 200, 300, 400), (0.02, 0.01, 0.05, 0.1)),
}
TABLES = ("Table I", "Table II", "Table III", "Table IV")


def reading_of(method: Method) -> str:
    """The ``objective_scale`` reading of a SubTrunc method (its explicit parameter, else the default)."""
    return method.params.get("objective_scale", READING)


def _subtrunc(lam: float, reading: str, paper_row: str | None = None) -> Method:
    """SubTrunc at λ under ``reading``; only the default reading's rows reproduce a paper row."""
    params = {**SELECTION, "lam": lam, **({} if reading == READING else {"objective_scale": reading})}
    return Method(
        f"SubTrunc (λ={lam}, {reading} G)", "subtrunc", params, paper_row if reading == READING else None
    )


def table_methods(column: str) -> dict[str, tuple[Method, ...]]:
    """The methods of Tables I–IV for ``column`` ("MNIST" or "CIFAR-10"), labelled by their paper rows."""
    lam = LAMBDA[column]
    divfl = Method(
        "DivFL", "divfl", {"greedy": "stochastic", "grad_mode": "fresh", "weighting": "uniform"}, "DivFL"
    )
    subtrunc = _subtrunc(lam, READING, "SubTrunc")
    unionfl = Method("UnionFL (window=5)", "unionfl", {**SELECTION, "window": 5}, "UnionFL")
    random = Method("Random", "fedavg", {"weighting": "uniform"}, "Random")
    poc = Method(
        "Power-of-Choice (d=N)",
        "power_of_choice",
        {"d": 100, "sampling": "uniform", "weighting": "uniform"},
        "Power-of-Choice",
    )
    lambdas = tuple(_subtrunc(x, r, f"{x:.2f}") for r in (READING, ALTERNATIVE) for x in LAMBDAS)
    windows = tuple(
        replace(
            unionfl, label=f"UnionFL (window={w})", params={**unionfl.params, "window": w}, paper_row=str(w)
        )
        for w in (2, 5, 10)
    )
    phis = (
        replace(
            subtrunc,
            label=f"SubTrunc (λ={lam}, {READING} G, φ=identity)",
            params={**subtrunc.params, "phi": "identity"},
            paper_row="Identity",
        ),
        replace(subtrunc, paper_row="ln(1+x)"),
    )
    return {
        "Table I": (divfl, subtrunc, unionfl, random, poc, _subtrunc(lam, ALTERNATIVE)),
        "Table II": lambdas,
        "Table III": windows,
        "Table IV": phis,
    }


def _quick_methods(column: str) -> dict[str, tuple[Method, ...]]:
    """The methods each table runs at quick: Table I as at paper, Table II at λ ∈ QUICK_LAMBDAS (both
    readings)."""
    methods = table_methods(column)
    return {
        "Table I": methods["Table I"],
        "Table II": tuple(m for m in methods["Table II"] if m.params["lam"] in QUICK_LAMBDAS),
    }


def _paper_methods(column: str) -> dict[str, tuple[Method, ...]]:
    """Table I at the paper profile also runs the normalised reading (G/Ḡ(∅))."""
    return {"Table I": (*table_methods(column)["Table I"], _subtrunc(LAMBDA[column], "normalised"))}


def _data(column: str) -> tuple[tuple[str, ...], str]:
    """Overrides of the column's data and model (the stand-in's when the real set is absent), description."""
    if column == "MNIST":
        data = stand_ins.stand_in("mnist")
        return data, "stand-in (no MNIST here: Fashion-MNIST), " if data else ""
    stand_in = tuple(o for o in stand_ins.stand_in("cifar10") if o.startswith("data."))
    model = "model.options={in_channels: 1, input_size: 28}" if stand_in else "model.options={}"
    what = "stand-in (no CIFAR-10 here: Fashion-MNIST), " if stand_in else ""
    return (*stand_in, "model.name=lenet5_cifar10", model, "train.lr=0.02"), what


def _profiles(column: str, table: str | None = None) -> dict[str, Profile]:
    """The three profiles of ``table`` in ``column`` (``table`` None: of the calibration, Random only)."""
    data, what = _data(column)
    rounds = 100 if column == "MNIST" else 200
    short = _quick_methods(column).get(table) if table else None
    return {
        "smoke": Profile(
            f"CI check: {what}10 samples per class per client, tested on a fifth of them (not on the "
            "official test set), 2 local steps, 2 rounds (evaluated at 0 and 2), 1 seed",
            2,
            (0,),
            2,
            (
                *data,
                "data.partition_options={classes_per_client: 3, samples_per_class: 10}",
                # the official test set through LeNet-5 twice an evaluation (per client and pooled) would be
                # most of a smoke run's time
                "data.client_test=local",
                "data.pooled_test=local_union",
                "train.local_steps=2",
            ),
            methods=short,
        ),
        "quick": Profile(
            f"{what}the paper's clients and protocol, {QUICK_ROUNDS} of the {rounds} rounds, 3 of 5 seeds"
            + (f", λ ∈ {{{', '.join(map(str, QUICK_LAMBDAS))}}}" if table == "Table II" else ""),
            QUICK_ROUNDS,
            (0, 1, 2),
            5,
            data,
            methods=short,
        ),
        "paper": Profile(
            f"{what}{rounds} rounds, 5 seeds (K, E, η not given by the paper)",
            rounds,
            (0, 1, 2, 3, 4),
            5,
            (*data, f"train.rounds={rounds}"),
            methods=_paper_methods(column).get(table) if table else None,
        ),
    }


COLUMNS = {"MNIST": "mnist", "CIFAR-10": "cifar10"}
for _column, _key in COLUMNS.items():
    for _number, (_table, _methods) in enumerate(table_methods(_column).items(), start=1):
        _name = f"submodular_table{_number}_{_key}"
        register_experiment(
            Experiment(
                _name,
                f"SubTrunc/UnionFL {_table}, {_column} column",
                "submodular_mnist_lenet.yaml",
                stand_in_profiles(_key, partial(_profiles, _column, _table)),
                _methods,
                PaperTable(PAPER, _table, {"mnist": "MNIST", "cifar10": "CIFAR-10"}, column=_column),
            )
        )


def column_of(experiment: str) -> str:
    """The paper column ("MNIST" or "CIFAR-10") of a table or calibration experiment."""
    return {key: column for column, key in COLUMNS.items()}[experiment.rsplit("_", 1)[1]]


def calibration_rounds(column: str, profile: str) -> tuple[int, ...]:
    """The K candidates of the calibration at ``profile``: the paper grid, or the short profile's own round
    budget (its K is fixed; only η is calibrated)."""
    rounds = CALIBRATION[column][0]
    return (
        rounds
        if profile == "paper"
        else (get_profile(f"submodular_table1_{COLUMNS[column]}", profile).rounds,)
    )


def _calibration(column: str) -> Experiment:
    """Random alone at every η of the grid, run to the largest K; the K candidates are read off its curve
    (a constant-η run's first K rounds are the K-round run: every draw is seeded per round)."""
    rounds, lrs = CALIBRATION[column]
    methods = tuple(
        Method(f"Random (η={lr:g})", "fedavg", {"weighting": "uniform"}, None, (f"train.lr={lr}",))
        for lr in lrs
    )

    def profiles() -> dict[str, Profile]:
        scales = _profiles(column)
        paper = replace(
            scales["paper"],
            rounds=max(rounds),
            overrides=tuple(o for o in scales["paper"].overrides if not o.startswith("train.rounds=")),
            description=f"{_data(column)[1]}runs of {max(rounds)} rounds, K read at {rounds}, 5 seeds",
        )
        return {**scales, "paper": paper}

    return Experiment(
        f"submodular_calibration_{COLUMNS[column]}",
        f"SubTrunc/UnionFL calibration (the package's rule): Random over "
        f"η ∈ {{{', '.join(f'{x:g}' for x in lrs)}}}, {column} column",
        "submodular_mnist_lenet.yaml",
        stand_in_profiles(COLUMNS[column], profiles),
        methods,
    )


for _column in COLUMNS:
    register_experiment(_calibration(_column))


def calibrated_overrides(rounds: int, lr: float, profile: str) -> tuple[str, ...]:
    """The settings every table's run takes from the calibration: η always, K at the paper profile (the
    short profiles keep their round budget)."""
    return (f"train.lr={lr}", *((f"train.rounds={rounds}",) if profile == "paper" else ()))
