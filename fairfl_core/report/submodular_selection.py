"""SubTrunc / UnionFL (arXiv 2408.13683): Table I's training loss, the selection diagnostics, the λ sweep per
reading of G's scale, and the §V claims on the experiments' method labels
(``experiments/papers/submodular_selection.py``).

"Client dissimilarity [%]" is read as the population standard deviation of the clients' test accuracies
(``std`` of ``metrics.fairness_summary``; the paper gives no formula); "Training Loss" as the mean local
minibatch loss of the selected clients over the last 5 rounds (the paper does not define it either).
A claim comparing two runs that selected the same clients in every round of every seed is marked
(:func:`mark_identical_selections`): its outcome says so instead of holding or failing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairfl_core.experiments.papers import submodular_selection as experiments
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.report.bundle import Paper, paper_rows, register_paper
from fairfl_core.report.claims import Claim, seed_outcome
from fairfl_core.report.paper import load_paper_results

__all__ = [
    "BUNDLE",
    "IDENTICAL",
    "Calibration",
    "calibrate",
    "lambda_claims",
    "lambda_sweep",
    "mark_identical_selections",
    "paper_random_accuracy",
    "phi_claims",
    "selection_agreement",
    "selection_diagnostics",
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
    that ends at each evaluation (the training-loss curves; the paper shows dissimilarity over training in
    §V-A, "The dissimilarity evolution of our method ...")."""
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


IDENTICAL = "identical selections (not evidence)"
DIAGNOSTICS = (
    "differs_from_divfl",
    "steered_steps",
    "unsaturated_steps",
    "h_range_max",
    "g_gap_min",
    "g_gap_median",
)


def mark_identical_selections(claims: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``claims`` (``report.check_claims``) plus ``identical_selections``: whether the claim's two runs picked
    the same set of clients in every round of every common seed (then they are the same run and ``result``
    becomes :data:`IDENTICAL`); False where the reference is not a run."""
    methods = set(runs["method"])
    same = []
    for method, than in zip(claims["method"], claims["than"], strict=True):
        pair = runs[runs["method"].isin([method, than])]
        if method not in methods or than not in methods or method == than:
            same.append(False)
            continue
        agreement = selection_agreement(pair, than)
        mine = agreement[agreement["method"] == method]
        same.append(bool(len(mine)) and bool((mine["same_set"] == 100).all()))
    out = claims.assign(identical_selections=same)
    out.loc[out["identical_selections"], "result"] = IDENTICAL
    return out


def selection_diagnostics(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SubTrunc run (one row per method and seed), its rounds' selection diagnostics
    (``algorithms/subtrunc.py``): the % of rounds whose set differs from DivFL's greedy on the same gradients
    and draws, the mean number of greedy steps per round where H changed G's pick and where H was not yet
    saturated, the mean of H's largest spread, and the median over rounds of G's smallest and median
    best-vs-second gap."""
    rows = []
    for method, seed, path in zip(runs["method"], runs["seed"], runs["path"], strict=True):
        records = [r["diagnostics"] for r in RunStore(path).records("rounds")]
        records = [d for d in records if "differs_from_divfl" in d]
        if not records:
            continue
        frame = pd.DataFrame(records, columns=list(DIAGNOSTICS)).astype(float)
        rows.append(
            {
                "method": method,
                "seed": seed,
                "rounds": len(frame),
                "differs_from_divfl_%": 100 * frame["differs_from_divfl"].mean(),
                "steered_steps": frame["steered_steps"].mean(),
                "unsaturated_steps": frame["unsaturated_steps"].mean(),
                "h_range_max": frame["h_range_max"].mean(),
                "g_gap_min": frame["g_gap_min"].median(),
                "g_gap_median": frame["g_gap_median"].median(),
            }
        )
    return pd.DataFrame(rows)


def lambda_sweep(experiment: Experiment, runs: pd.DataFrame) -> pd.DataFrame:
    """Table II per reading of G's scale: for each λ run, the mean (over seeds) client dissimilarity and
    accuracy and the % of rounds whose set differs from DivFL's; then per reading the trend from the
    smallest to the largest λ (``std`` at the largest minus at the smallest; ``falls``: the seed-aware
    outcome of "dissimilarity at the largest λ < at the smallest", ``report.claims.seed_outcome``)."""
    methods = {m.label: m for m in experiment.method_list()}
    diag = selection_diagnostics(runs).groupby("method")["differs_from_divfl_%"].mean()
    rows = []
    for label, part in runs.groupby("method", sort=False):
        m = methods[label]
        std = pd.to_numeric(part["std"], errors="coerce")
        rows.append(
            {
                "reading": experiments.reading_of(m),
                "lam": m.params["lam"],
                "method": label,
                "seeds": len(part),
                "std": std.mean(),
                "std_sd": std.std(),
                "global_acc": pd.to_numeric(part["global_acc"], errors="coerce").mean(),
                "differs_from_divfl_%": diag.get(label, float("nan")),
            }
        )
    table = pd.DataFrame(rows).sort_values(["reading", "lam"], kind="stable").reset_index(drop=True)
    trend = []
    for reading, part in table.groupby("reading", sort=False):
        low, high = part.iloc[0], part.iloc[-1]
        sides = [
            (r["std"], 0.0 if pd.isna(r["std_sd"]) else r["std_sd"], int(r["seeds"])) for r in (high, low)
        ]
        trend.append(
            {
                "reading": reading,
                "trend": f"λ {low['lam']:g} → {high['lam']:g}",
                "std_change": high["std"] - low["std"],
                "falls": seed_outcome("<", sides[0], sides[1]).result if len(part) > 1 else "n/a",
            }
        )
    return table.merge(pd.DataFrame(trend), on="reading", how="left")


# the paper's sentences each claim checks (arXiv 2408.13683)
C1_C2 = (
    '§V-A: "SubTrunc and UnionFL outperform the baselines by achieving a lower overall client dissimilarity '
    'score, [...] with SubTrunc being able to consistently achieve the lowest score among all methods."'
)
C3 = (
    '§V-A: "both SubTrunc and UnionFL converge at a similar rate to the baseline methods [...] while '
    'maintaining a comparable performance under testing accuracy" (read: at least as accurate)'
)
C6 = (
    '§V-B: "as the values for λ get closer to zero, i.e. as the method approaches DivFL, the client '
    'dissimilarity score degrades, whereas as λ increases, the client dissimilarity improves"'
)
C8 = (
    "§V-B: \"Increasing the window size results in model's that perform better under both a testing "
    'accuracy and client dissimilarity standpoint."'
)
C9 = (
    '§V-C: "This new function [the identity] was able to produce lower client dissimilarity scores across '
    'both datasets under non-iid conditions"'
)


def table1_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-A on Table I: SubTrunc (the default reading of G's scale) and UnionFL against the baselines DivFL,
    Random and Power-of-Choice, and SubTrunc against UnionFL."""
    row = paper_rows(experiment)
    subtrunc, unionfl = row["SubTrunc"], row["UnionFL"]
    others = {name: row[name] for name in ("DivFL", "Random", "Power-of-Choice")}
    claims = [
        Claim(f"{who} has a lower client dissimilarity than {name}", "std", label, "<", other, source=C1_C2)
        for who, label in (("SubTrunc", subtrunc), ("UnionFL", unionfl))
        for name, other in others.items()
    ]
    claims.append(
        Claim(
            "SubTrunc has a lower client dissimilarity than UnionFL",
            "std",
            subtrunc,
            "<",
            unionfl,
            source=C1_C2,
        )
    )
    claims += [
        Claim(f"{who} is at least as accurate as {name}", "global_acc", label, ">=", others[name], source=C3)
        for who, label in (("SubTrunc", subtrunc), ("UnionFL", unionfl))
        for name in ("DivFL", "Random")
    ]
    return claims


def _extremes(experiment: Experiment, param: str, methods=None) -> tuple[str, str]:
    """The labels of the smallest and the largest value of ``param`` among ``methods`` (default: the
    experiment's)."""
    methods = sorted(methods or experiment.method_list(), key=lambda m: m.params[param])
    return methods[0].label, methods[-1].label


def lambda_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-B (Table II) on the default reading of G's scale: a larger λ lowers the client dissimilarity (the
    other reading's trend is in :func:`lambda_sweep`). The extremes are those of the λ values run."""
    ran = set(runs["method"]) if "method" in runs else None
    default = [
        m
        for m in experiment.method_list()
        if experiments.reading_of(m) == experiments.READING and (ran is None or m.label in ran)
    ]
    smallest, largest = _extremes(experiment, "lam", default)
    return [
        Claim(
            f"a larger λ lowers the client dissimilarity ({experiments.READING} G)",
            "std",
            largest,
            "<",
            smallest,
            source=C6,
        )
    ]


def window_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-B (Table III): a longer UnionFL window raises the accuracy and lowers the dissimilarity."""
    shortest, longest = _extremes(experiment, "window")
    return [
        Claim("a longer window raises the accuracy", "global_acc", longest, ">", shortest, source=C8),
        Claim("a longer window lowers the dissimilarity", "std", longest, "<", shortest, source=C8),
    ]


def phi_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§V-C (Table IV): φ = identity gives a lower dissimilarity than ln(1 + x)."""
    row = paper_rows(experiment)
    return [
        Claim(
            "φ = identity lowers the dissimilarity against ln(1+x)",
            "std",
            row["Identity"],
            "<",
            row["ln(1+x)"],
            source=C9,
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
    """The package's calibration rule (docs/readings.md; the paper gives no K or η) on Random's accuracy
    curves (``curves``: columns ``lr``, ``round``, ``global_acc``, one row per run and evaluation; seeds are
    averaged): K first, at ``default_lr``, the smallest of ``rounds`` whose accuracy is within ``tol`` points
    of ``target`` (none: the closest); then η at that K, ``default_lr`` if it is within ``tol`` already, else
    the closest η."""
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
