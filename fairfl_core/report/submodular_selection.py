"""SubTrunc / UnionFL (arXiv 2408.13683): Table I's training loss and the §V claims on the experiments'
method labels (``experiments/papers/submodular_selection.py``).

"Client dissimilarity [%]" is read as the population standard deviation of the clients' test accuracies
(``std`` of ``metrics.fairness_summary``; the paper gives no formula); "Training Loss" as the mean local
minibatch loss of the selected clients over the last 5 rounds (the paper does not define it either).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairfl_core.experiments.papers import submodular_selection as experiments
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.report.bundle import Paper, paper_rows, register_paper
from fairfl_core.report.claims import Claim
from fairfl_core.report.paper import load_paper_results

__all__ = [
    "BUNDLE",
    "Calibration",
    "calibrate",
    "lambda_claims",
    "paper_random_accuracy",
    "phi_claims",
    "selection_agreement",
    "table1_claims",
    "window_claims",
    "with_loss_curve",
    "with_train_loss",
]


def with_train_loss(runs: pd.DataFrame, last: int = 5) -> pd.DataFrame:
    """``runs`` plus ``train_loss``: the mean over the last ``last`` rounds of the rounds' mean local loss."""
    losses = []
    for path in runs["path"]:
        rounds = [r["diagnostics"].get("train_loss") for r in RunStore(path).records("rounds")]
        values = np.asarray([x for x in rounds if x is not None], dtype=float)
        losses.append(float(values[-last:].mean()) if values.size else np.nan)
    return runs.assign(train_loss=losses)


def with_loss_curve(curves: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``curves`` (``report.load_curves`` of ``runs``) plus ``train_loss``: the mean local loss of the round
    that ends at each evaluation (§VII's training-loss curves)."""
    paths = dict(zip(runs["hash"], runs["path"], strict=True))
    per_run = {
        h: {r["round"]: r["diagnostics"].get("train_loss") for r in RunStore(p).records("rounds")}
        for h, p in paths.items()
    }
    loss = [per_run[h].get(r) for h, r in zip(curves["hash"], curves["round"], strict=True)]
    return curves.assign(train_loss=pd.to_numeric(pd.Series(loss, index=curves.index), errors="coerce"))


def selection_agreement(runs: pd.DataFrame, reference: str) -> pd.DataFrame:
    """How often each method picks what ``reference`` (e.g. DivFL) picks, run against run of the same seed
    over their common rounds: ``same_set`` (% of rounds with the identical set of clients) and ``overlap`` (%:
    mean share of a round's clients that the reference also selected)."""
    picks = {
        (m, seed): [set(r["selected"]) for r in RunStore(p).records("rounds")]
        for m, seed, p in zip(runs["method"], runs["seed"], runs["path"], strict=True)
    }
    rows = []
    for (method, seed), sets in picks.items():
        ref = picks.get((reference, seed))
        if ref is None:
            raise ValueError(f"no {reference!r} run of seed {seed} to compare {method!r} with")
        pairs = list(zip(sets, ref, strict=False))
        rows.append(
            {
                "method": method,
                "seed": seed,
                "rounds": len(pairs),
                "same_set": 100 * np.mean([a == b for a, b in pairs]),
                "overlap": 100 * np.mean([len(a & b) / len(b) for a, b in pairs]),
            }
        )
    return pd.DataFrame(rows)


def table1_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C1–C3 of §V on Table I: SubTrunc and UnionFL against DivFL, Random and Power-of-Choice."""
    row = paper_rows(experiment)
    subtrunc, unionfl = row["SubTrunc"], row["UnionFL"]
    others = {name: row[name] for name in ("DivFL", "Random", "Power-of-Choice")}
    claims = [
        Claim(
            f"SubTrunc has a lower client dissimilarity than {name}",
            "std",
            subtrunc,
            "<",
            label,
            source="Table I, C1",
        )
        for name, label in [("UnionFL", unionfl), *others.items()]
    ]
    claims += [
        Claim(
            f"UnionFL has a lower client dissimilarity than {name}",
            "std",
            unionfl,
            "<",
            others[name],
            source="Table I, C2",
        )
        for name in ("DivFL", "Random")
    ]
    claims += [
        Claim(
            f"{who} is at least as accurate as {name}",
            "global_acc",
            label,
            ">=",
            others[name],
            source="Table I, C3",
        )
        for who, label in (("SubTrunc", subtrunc), ("UnionFL", unionfl))
        for name in ("DivFL", "Random")
    ]
    return claims


def _extremes(experiment: Experiment, param: str) -> tuple[str, str]:
    """The labels of the smallest and the largest value of ``param`` among the experiment's methods."""
    methods = sorted(experiment.method_list(), key=lambda m: m.params[param])
    return methods[0].label, methods[-1].label


def lambda_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C6 (Table II): a larger λ lowers the client dissimilarity."""
    smallest, largest = _extremes(experiment, "lam")
    return [
        Claim(
            "a larger λ lowers the client dissimilarity", "std", largest, "<", smallest, source="Table II, C6"
        )
    ]


def window_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C8 (Table III): a longer UnionFL window raises the accuracy and lowers the dissimilarity."""
    shortest, longest = _extremes(experiment, "window")
    return [
        Claim(
            "a longer window raises the accuracy",
            "global_acc",
            longest,
            ">",
            shortest,
            source="Table III, C8",
        ),
        Claim(
            "a longer window lowers the dissimilarity", "std", longest, "<", shortest, source="Table III, C8"
        ),
    ]


def phi_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C9 (Table IV): φ = identity gives a lower dissimilarity than ln(1 + x)."""
    row = paper_rows(experiment)
    return [
        Claim(
            "φ = identity lowers the dissimilarity against ln(1+x)",
            "std",
            row["Identity"],
            "<",
            row["ln(1+x)"],
            source="Table IV, C9",
        )
    ]


@dataclass(frozen=True)
class Calibration:
    """The calibrated K (``rounds``) and η (``lr``), Random's mean accuracy there, the paper's Random
    (``target``), whether they are within the tolerance, and every candidate's accuracy (``table``)."""

    rounds: int
    lr: float
    accuracy: float
    target: float
    within: bool
    table: pd.DataFrame


def paper_random_accuracy(column: str) -> float:
    """The paper's Random test accuracy in Table I's ``column`` (the calibration's target)."""
    paper = load_paper_results("submodular_selection")
    hit = paper[
        (paper["table"] == "Table I")
        & (paper["dataset"] == column)
        & (paper["method"] == "Random")
        & (paper["metric"] == "global_acc")
    ]
    return float(hit["value"].iloc[0])


def calibrate(
    curves: pd.DataFrame, target: float, default_lr: float, rounds: tuple[int, ...], tol: float = 3.0
) -> Calibration:
    """§IV's calibration rule on Random's accuracy curves (``curves``: columns ``lr``, ``round``,
    ``global_acc``, one row per run and evaluation; seeds are averaged): K first, at ``default_lr``, the
    smallest of ``rounds`` whose accuracy is within ``tol`` points of ``target`` (none: the closest); then
    η at that K, ``default_lr`` if it is within ``tol`` already, else the closest η."""
    mean = curves[curves["round"].isin(rounds)].groupby(["lr", "round"], as_index=False)["global_acc"].mean()
    mean["gap"] = (mean["global_acc"] - target).abs()
    missing = sorted(set(rounds) - set(mean.loc[mean["lr"] == default_lr, "round"]))
    if missing:
        raise ValueError(
            f"Random at η = {default_lr:g} has no evaluation at rounds {missing}: run it that long"
        )
    at_default = mean[mean["lr"] == default_lr].sort_values("round")
    close = at_default[at_default["gap"] <= tol]
    k = int((close if len(close) else at_default.nsmallest(1, "gap")).iloc[0]["round"])
    at_k = mean[mean["round"] == k]
    default = at_k[at_k["lr"] == default_lr].iloc[0]
    best = default if default["gap"] <= tol else at_k.nsmallest(1, "gap").iloc[0]
    return Calibration(
        k, float(best["lr"]), float(best["global_acc"]), target, bool(best["gap"] <= tol), mean
    )


BUNDLE = register_paper(
    Paper(
        "submodular_selection",
        tuple(f"submodular_table{i}_{key}" for key in experiments.COLUMNS.values() for i in range(1, 5)),
        left_out={
            "quick": {
                f"submodular_table{i}_{key}": "not run at quick (2 CPU cores): run at paper"
                for key in experiments.COLUMNS.values()
                for i in range(1, 5)
                if f"submodular_table{i}_{key}" not in experiments.QUICK
            },
            "smoke": {
                f"submodular_table{i}_cifar10": (
                    "not run at smoke (the MNIST column checks the same code): run at paper"
                )
                for i in range(1, 5)
            },
        },
        claim_builders={
            "submodular_table1_": table1_claims,
            "submodular_table2_": lambda_claims,
            "submodular_table3_": window_claims,
            "submodular_table4_": phi_claims,
        },
        readings_heading="SubTrunc and UnionFL",
    )
)
