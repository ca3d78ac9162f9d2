"""The GIFAIR-FL notebooks' checks and summaries (the claims of §5 of the paper): claims checklists per
table, the numeric targets, group accuracies and discrepancies beside the paper's (printed and recomputed from
its own rows), the λ sweeps of Figures 4–5. Everything works on the long table of
:func:`fairfl_core.report.tables.aggregate` (and ``experiment_paper_values``); the notebooks only call these.

Group metrics are the run summaries' ``group_acc_<g>`` (mean of the group's client accuracies, A10) and
the discrepancy ``group_gap``, read as the paper reads it: max − min of the group accuracies' means over
seeds (:func:`seed_mean_discrepancy`), not the mean over seeds of each run's max − min. Which group is
"worst" and "best" is read from our FedAvg runs; the paper's verdict on the same claim uses the paper's
numbers for those same groups. Every comparison is decided on seeds (``report.claims.seed_outcome``: holds,
within noise or fails against Welch's t at 95 % on the difference of seed means; not decided with fewer than
3 seeds a side).

At the paper profile a table runs every value of each method's grid; :func:`tuned_methods` keeps the value
rule A9 chooses on the validation split, and every function here then works on that one value per method.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from fairfl_core.experiments.papers import gifair_fl
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.report.bundle import Paper, register_paper
from fairfl_core.report.claims import Claim, seed_outcome
from fairfl_core.report.paper import paper_cell
from fairfl_core.report.selection import select_a9
from fairfl_core.report.tables import aggregate

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = [
    "BUNDLE",
    "GROUP_LABELS",
    "checklist_claims",
    "seed_mean_discrepancy",
    "gap_table",
    "group_metrics",
    "lambda_checks",
    "lambda_table",
    "method_labels",
    "plot_group_accuracies",
    "plot_lambda_sweep",
    "targets_table",
    "Tuning",
    "tuned_methods",
]

GROUP_LABELS = {
    "gifair_table4_femnist_3groups": ("Group 1", "Group 2", "Group 3"),
    "gifair_table6_shakespeare_gender": ("Male", "Female"),
    "gifair_table6_shakespeare_gender_random_split": ("Male", "Female"),
    "gifair_table6_shakespeare_gender_2000_windows": ("Male", "Female"),
    "gifair_fig4_lambda_shakespeare": ("Male", "Female"),
    "gifair_fig5_lambda_femnist": ("Group 1", "Group 2", "Group 3"),
}
FAIR_GLOBAL_BASELINES = ("q-FFL", "TERM", "AFL", "FedMGDA+")
LAM = "config.algorithm.params.lam_frac"


class Tuning(NamedTuple):
    """A table reduced to one value per method: the ``experiment`` listing the chosen methods, their
    ``runs`` and the ``selection`` (one row per method with a hyperparameter: its value and why)."""

    experiment: Experiment
    runs: pd.DataFrame
    selection: pd.DataFrame


def tuned_methods(experiment: Experiment, runs: pd.DataFrame) -> Tuning:
    """The selection rule ("A9": q-FFL's, §5) on a table's runs (``report.load_runs``): a method that ran
    several values (the paper profile's grids) keeps the one with the lowest validation Var(a) (group tables:
    validation discrepancy) among those whose mean validation accuracy is within 1 point of FedAvg's
    (:func:`fairfl_core.report.selection.select_a9`); a method that ran one value (the smoke and quick
    profiles) keeps it, marked as fixed. A group table's runs come back with the paper's discrepancy
    (:func:`seed_mean_discrepancy`, on validation and test), which the selection also uses."""

    if experiment.name in GROUP_LABELS:
        runs = seed_mean_discrepancy(runs, len(GROUP_LABELS[experiment.name]))
    tuned = runs[runs["algorithm"].isin(gifair_fl.HYPERPARAMETERS)]
    labels = tuned.groupby("algorithm", sort=False)["method"].unique()
    fixed = [a for a, values in labels.items() if len(values) == 1]
    parts = [
        pd.DataFrame(
            {"algorithm": fixed, "method": [labels[a][0] for a in fixed], "rule": "fixed (not selected)"}
        )
    ]
    grid = tuned[~tuned["algorithm"].isin(fixed)]
    if len(grid):
        columns = {a: f"config.algorithm.params.{p}" for a, p in gifair_fl.HYPERPARAMETERS.items()}
        fairness = "val_group_gap" if experiment.name in GROUP_LABELS else "val_var"
        parts.append(select_a9(grid, runs[runs["algorithm"] == "fedavg"], columns, fairness=fairness))
    selection = pd.concat([p for p in parts if len(p)], ignore_index=True)
    keep = set(runs["method"]) - set(tuned["method"]) | set(selection["method"])
    methods = tuple(m for m in gifair_fl.GRIDS[experiment.name] if m.label in keep)
    order = {m.label: i for i, m in enumerate(methods)}
    return Tuning(
        replace(experiment, methods=methods),
        runs[runs["method"].isin(keep)].reset_index(drop=True),
        selection.sort_values("method", key=lambda s: s.map(order), kind="stable").reset_index(drop=True),
    )


def seed_mean_discrepancy(runs: pd.DataFrame, n_groups: int) -> pd.DataFrame:
    """``runs`` (``report.load_runs``) with ``group_gap`` and ``val_group_gap`` as the paper's discrepancy:
    max − min of the group accuracies' means over seeds. Per setting (the seeds of one method: ``setting``,
    else ``method``) the groups with the largest and the smallest mean accuracy over seeds are fixed, and each
    run gets their accuracy difference in that run: its mean over seeds is the paper's discrepancy, its std
    the spread over seeds (a seed where the two swap gives a negative value). E.g. two seeds with group
    accuracies (70, 80) and (84, 80): each run's max − min is 10 and 4 (mean 7), the paper's discrepancy
    is 80 − 77 = 3 (runs: 10 and −4)."""
    key = runs["setting"] if "setting" in runs else runs["method"]
    out = runs.copy()
    for prefix in ("", "val_"):
        if f"{prefix}group_gap" not in runs:
            continue
        columns = [f"{prefix}group_acc_{g}" for g in range(n_groups)]
        missing = [c for c in columns if c not in runs]
        if missing:
            raise KeyError(
                f"runs hold {prefix}group_gap but not {missing}: load them with report.load_runs, whose "
                "summaries hold every group's accuracy"
            )
        acc = runs[columns].apply(pd.to_numeric, errors="coerce")
        means = acc.groupby(key, sort=False).transform("mean").to_numpy(float)
        high = np.where(np.isnan(means), -np.inf, means).argmax(axis=1)
        low = np.where(np.isnan(means), np.inf, means).argmin(axis=1)
        rows, values = np.arange(len(runs)), acc.to_numpy(float)
        out[f"{prefix}group_gap"] = values[rows, high] - values[rows, low]
    return out


def group_metrics(experiment: str) -> list[str]:
    """``group_acc_0``, … and ``group_gap`` for a group-fairness experiment, [] otherwise."""
    labels = GROUP_LABELS.get(experiment, ())
    return [f"group_acc_{g}" for g in range(len(labels))] + (["group_gap"] if labels else [])


def method_labels(experiment: Experiment) -> dict[str, str]:
    """Paper row (``FedAvg``, ``GIFAIR-FL-Global``, ...) → our method label."""
    return {m.paper_row: m.label for m in experiment.method_list() if m.paper_row}


def _mean(agg: pd.DataFrame, method: str, metric: str) -> float:
    hit = agg[(agg["method"] == method) & (agg["metric"] == metric)]["mean"]
    return float(hit.iloc[0]) if len(hit) else math.nan


def _worst_best(agg: pd.DataFrame, fedavg: str, n: int) -> tuple[str, str]:
    accs = {f"group_acc_{g}": _mean(agg, fedavg, f"group_acc_{g}") for g in range(n)}
    return min(accs, key=lambda g: accs[g]), max(accs, key=lambda g: accs[g])


def _printed(paper: pd.DataFrame, method: str, metric: str) -> float:
    """The paper's printed value of one cell (``paper_cell``), NaN where it prints none."""
    value = paper_cell(paper, method, metric)
    return math.nan if value is None else value


def _individual_claims(m: dict[str, str]) -> list[Claim]:

    fed, glob, per, ditto = m["FedAvg"], m["GIFAIR-FL-Global"], m["GIFAIR-FL-Per"], m["Ditto"]
    fair = [m[b] for b in FAIR_GLOBAL_BASELINES if b in m]
    return [
        Claim("C1 GIFAIR-FL-Global lowers √Var(a) below FedAvg's", "std", glob, "<", fed, source="§8 C1"),
        Claim(
            "C2 GIFAIR-FL-Global's mean accuracy is not below FedAvg's", "mean", glob, ">=", fed, source="C2"
        ),
        *[
            Claim(f"C3 GIFAIR-FL-Global's √Var(a) is below {b}'s", "std", glob, "<", b, source="§8 C3")
            for b in fair
        ],
        Claim("C4 GIFAIR-FL-Per's mean accuracy is not below Ditto's", "mean", per, ">=", ditto, source="C4"),
        Claim("C4 GIFAIR-FL-Per's √Var(a) is below Ditto's", "std", per, "<", ditto, source="§8 C4"),
        Claim("C5 Ditto (personalised) beats FedAvg's mean accuracy", "mean", ditto, ">", fed, source="C5"),
        Claim("C5 GIFAIR-FL-Per beats GIFAIR-FL-Global's mean accuracy", "mean", per, ">", glob, source="C5"),
        *[Claim(f"C6 {b} lowers √Var(a) below FedAvg's", "std", b, "<", fed, source="§8 C6") for b in fair],
    ]


def _group_claims(m: dict[str, str], agg: pd.DataFrame, n: int) -> list[Claim]:

    fed, glob, per = m["FedAvg"], m["GIFAIR-FL-Global"], m["GIFAIR-FL-Per"]
    others = [label for row, label in m.items() if row not in ("GIFAIR-FL-Global", "GIFAIR-FL-Per")]
    worst, best = _worst_best(agg, fed, n)
    claims = [
        Claim(f"C7 GIFAIR-FL-Global's discrepancy is below {o}'s", "group_gap", glob, "<", o, source="§8 C7")
        for o in [*others, per]
    ]
    for gifair in (glob, per):
        claims += [
            Claim(f"C8 {gifair} raises the worst group above {o}", worst, gifair, ">", o, source="§8 C8")
            for o in others
        ]
    claims += [
        Claim(
            "C9 GIFAIR-FL-Per keeps the best group within 1 point of FedAvg",
            best,
            per,
            "≈",
            fed,
            1.0,
            source="§8 C9",
        ),
        Claim(
            "C9 the paper's text: GIFAIR-FL-Global's boost 'did not affect the performance of other groups' "
            "(best group within 1 point of FedAvg; the paper's own tables disagree)",
            best,
            glob,
            "≈",
            fed,
            1.0,
            source="GIFAIR-FL §5.3 vs Tables 4, 6",
        ),
    ]
    claims += [
        Claim(f"C10 GIFAIR-FL-Per's discrepancy is below {o}'s", "group_gap", per, "<", o, source="§8 C10")
        for o in others
    ]
    return claims


def checklist_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """The spec's claims (§8 C1–C10) for one table, with our method labels; group claims read FedAvg's worst
    and best group from ``runs``."""
    m = method_labels(experiment)
    n = len(GROUP_LABELS.get(experiment.name, ()))
    if not n:
        return _individual_claims(m)
    return _group_claims(m, aggregate(runs, metrics=[f"group_acc_{g}" for g in range(n)]), n)


def targets_table(experiment: Experiment, agg: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The spec's reproduction targets for individual fairness (§8 C1, C2): GIFAIR-FL-Global's √Var(a) at
    most 0.75 × FedAvg's (at least 25% lower), its mean accuracy at least FedAvg's − 1 point; ours
    (seed-aware, ``report.claims.seed_outcome``: ``se`` of the difference, ``result`` holds | within noise |
    fails) and the paper's (printed means: the sign decides)."""

    m = method_labels(experiment)
    fed, glob = m["FedAvg"], m["GIFAIR-FL-Global"]

    def ours(method: str, metric: str) -> tuple[float, float, int] | float:
        hit = agg[(agg["method"] == method) & (agg["metric"] == metric)]
        if not len(hit):
            return math.nan
        return float(hit["mean"].iloc[0]), float(hit["std"].iloc[0]), int(hit["n"].iloc[0])

    paper_value = functools.partial(_printed, paper)

    def mean(side: tuple | float) -> float:
        return side[0] if isinstance(side, tuple) else side

    def affine(side: tuple | float, scale: float, shift: float) -> tuple | float:
        if isinstance(side, tuple):
            return scale * side[0] + shift, scale * side[1], side[2]
        return scale * side + shift

    rows = []
    for source, get in (("reproduced", ours), ("paper", paper_value)):
        std_f, std_g, mean_f, mean_g = get(fed, "std"), get(glob, "std"), get(fed, "mean"), get(glob, "mean")
        targets = (
            ("C1 √Var(a) reduced by >= 25% vs FedAvg", std_f, std_g, "<=", affine(std_f, 0.75, 0.0)),
            ("C2 mean accuracy >= FedAvg - 1 point", mean_f, mean_g, ">=", affine(mean_f, 1.0, -1.0)),
        )
        for target, f, g, op, bound in targets:
            known = not any(math.isnan(mean(x)) for x in (f, g))
            outcome = seed_outcome(op, g, bound) if known else None
            change = mean(g) - mean(f)
            rows.append(
                {
                    "numbers": source,
                    "target": target,
                    "FedAvg": mean(f),
                    "GIFAIR-FL-Global": mean(g),
                    "change": f"{100 * change / mean(f):+.0f}%" if op == "<=" else f"{change:+.2f}",
                    "se": outcome.se if outcome else math.nan,
                    "result": outcome.result if outcome else "missing",
                }
            )
    return pd.DataFrame(rows)


def gap_table(experiment: Experiment, agg: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Per method: each group's accuracy and the discrepancy, ours and the paper's (printed, and recomputed
    from its printed group rows: Table 4 prints 6.0 for GIFAIR-FL-Global and 9.02 for Ditto, its rows give
    4.88 and 9.68), and the change of the worst and best group (of FedAvg) against FedAvg."""
    labels = GROUP_LABELS[experiment.name]
    rows_of = {label: row for row, label in method_labels(experiment).items()}
    fed = method_labels(experiment)["FedAvg"]
    worst, best = _worst_best(agg, fed, len(labels))

    paper_value = functools.partial(_printed, paper)

    out = []
    for method in dict.fromkeys(agg["method"]):
        row = {"method": method, "paper row": rows_of.get(method, "")}
        for g, label in enumerate(labels):
            row[f"{label} reproduced"] = _mean(agg, method, f"group_acc_{g}")
            row[f"{label} paper"] = paper_value(method, f"group_acc_{g}")
        paper_groups = [row[f"{label} paper"] for label in labels]
        row["discrepancy reproduced"] = _mean(agg, method, "group_gap")
        row["discrepancy paper (printed)"] = paper_value(method, "group_gap")
        row["discrepancy paper (from its rows)"] = max(paper_groups) - min(paper_groups)
        for which, metric in (("worst", worst), ("best", best)):
            label = labels[int(metric.rsplit("_", 1)[1])]
            row[f"{which} group ({label}) vs FedAvg reproduced"] = _mean(agg, method, metric) - _mean(
                agg, fed, metric
            )
            row[f"{which} group ({label}) vs FedAvg paper"] = paper_value(method, metric) - paper_value(
                fed, metric
            )
        out.append(row)
    return pd.DataFrame(out)


def plot_group_accuracies(
    agg: pd.DataFrame, paper: pd.DataFrame, labels: tuple[str, ...], title: str | None = None
) -> Figure:
    """Group accuracies per method: reproduced (mean ± std over seeds, left) beside the paper's printed values
    (right, ± its std where printed). Horizontal bars, one row per method (names read along the y axis),
    one bar per group; the figure grows with the methods. ``title`` (e.g. the experiment's description, which
    tells a table's variants apart) heads the figure, wrapped to its width; default: the dataset."""
    import textwrap

    import seaborn as sns  # plotting libraries load only when drawing
    from matplotlib.figure import Figure

    head = textwrap.fill(f"{title or '; '.join(dict.fromkeys(agg['dataset']))}: group accuracies", 110)

    metrics = {f"group_acc_{g}": label for g, label in enumerate(labels)}
    methods = list(dict.fromkeys(agg.loc[agg["metric"].isin(metrics), "method"]))
    colours = dict(zip(labels, sns.color_palette("colorblind", len(labels)), strict=True))
    bar = 0.8 / len(labels)
    fig = Figure(figsize=(11, 1.8 + 0.2 * len(methods) * len(labels)), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True, sharey=True)
    sides = (("reproduced", agg, "mean", "std"), ("paper", paper, "paper_value", "paper_std"))
    for ax, (side, table, value, std) in zip(axes, sides, strict=True):
        shown = table[table["metric"].isin(metrics) & table["method"].isin(methods)]
        for g, (metric, label) in enumerate(metrics.items()):
            rows = shown[shown["metric"] == metric].drop_duplicates("method").set_index("method")
            err = rows[std].reindex(methods) if std in rows else None
            ax.barh(
                [i + (g - (len(labels) - 1) / 2) * bar for i in range(len(methods))],
                rows[value].reindex(methods) if value in rows else [math.nan] * len(methods),
                height=bar,
                xerr=err,
                color=colours[label],
                label=label,
                capsize=2,
            )
        ax.set_title(side if value in shown and shown[value].notna().any() else f"{side}: no values")
        ax.set_xlabel("group test accuracy (%)")
    axes[0].set_yticks(range(len(methods)), methods)
    axes[0].invert_yaxis()
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, title="group", loc="outside lower center", ncols=len(labels), frameon=False)
    fig.suptitle(head)
    return fig


def lambda_table(runs: pd.DataFrame, labels: tuple[str, ...]) -> pd.DataFrame:
    """Group accuracies and discrepancy (means over seeds, :func:`seed_mean_discrepancy`) per λ/λ_max, λ
    ascending."""
    metrics = [f"group_acc_{g}" for g in range(len(labels))] + ["group_gap"]
    runs = seed_mean_discrepancy(runs, len(labels))
    table = runs.assign(**{LAM: pd.to_numeric(runs[LAM])}).groupby(LAM)[metrics].mean()
    return table.rename(columns={f"group_acc_{g}": label for g, label in enumerate(labels)}).rename_axis(
        "λ/λ_max"
    )


TREND_P = 0.05  # two-sided level of the Spearman test of C11's trend


def lambda_checks(runs: pd.DataFrame, labels: tuple[str, ...]) -> pd.DataFrame:
    """Figures 4–5 claims (§8 C11, C12) on a λ sweep's runs: the discrepancy falls with λ (Spearman's ρ over
    every run's (λ, discrepancy): holds when ρ < 0 at two-sided p < :data:`TREND_P`, fails when ρ > 0 at
    that level, else within noise) and is smaller at the largest λ than at λ = 0; at large λ the best group
    (of λ = 0) drops while the worst group plateaus (changes by at most 1 point) between the middle and the
    largest λ. The comparisons of two λ are seed-aware (``report.claims.seed_outcome`` on their seed
    means). Columns: claim, value (ρ or the difference), se, basis, result."""
    from scipy.stats import spearmanr

    names = {f"group_acc_{g}": label for g, label in enumerate(labels)}
    data = seed_mean_discrepancy(runs, len(labels)).rename(columns=names)
    data = data.assign(**{c: pd.to_numeric(data[c]) for c in [LAM, *labels, "group_gap"]})
    stats = data.groupby(LAM)[[*labels, "group_gap"]].agg(["mean", "std", "count"])
    lams = stats.index.to_numpy()
    first, middle, last = lams[0], lams[len(lams) // 2], lams[-1]
    start = stats.loc[first, [(label, "mean") for label in labels]].droplevel(1)
    worst, best = start.idxmin(), start.idxmax()

    def side(lam: float, column: str) -> tuple[float, float, int]:
        mean, std, count = stats.loc[lam, column].to_numpy(float)
        return float(mean), float(std), int(count)

    def compare(text: str, column: str, op: str, lam: float, than: float, tolerance: float = 0.0) -> tuple:
        o = seed_outcome(op, side(lam, column), side(than, column), tolerance)
        return text, o.difference, o.se, o.basis, o.result

    trend = data[[LAM, "group_gap"]].dropna()
    if len(lams) > 2 and trend["group_gap"].nunique() > 1:
        rho, p = (float(x) for x in spearmanr(trend[LAM], trend["group_gap"]))
        noise = p >= TREND_P
        result = "within noise" if noise else "holds" if rho < 0 else "fails"
        first_row = (rho, math.nan, f"Spearman over {len(trend)} runs, p = {p:.3g}", result)
    else:
        first_row = (math.nan, math.nan, "fewer than 3 λ or a constant discrepancy", "missing")
    rows = [
        ("C11 discrepancy decreases with λ (Spearman ρ < 0)", *first_row),
        compare(f"C11 discrepancy at λ={last:g}λmax below λ=0", "group_gap", "<", last, first),
        compare(f"C12 best group ({best}) drops from λ={middle:g} to {last:g}λmax", best, "<", last, middle),
        compare(
            f"C12 worst group ({worst}) plateaus from λ={middle:g} to {last:g}λmax (within 1 point)",
            worst,
            "≈",
            last,
            middle,
            1.0,
        ),
    ]
    return pd.DataFrame(rows, columns=["claim", "value", "se", "basis", "result"])


def plot_lambda_sweep(runs: pd.DataFrame, labels: tuple[str, ...]) -> Figure:
    """Figures 4–5: group accuracies (left) and the discrepancy (right, :func:`seed_mean_discrepancy`)
    against λ/λ_max, mean ± std over seeds (λ = 0 is FedAvg)."""
    import seaborn as sns
    from matplotlib.figure import Figure

    metrics = {f"group_acc_{g}": label for g, label in enumerate(labels)}
    data = seed_mean_discrepancy(runs, len(labels)).assign(**{LAM: pd.to_numeric(runs[LAM])})
    long = data.melt(id_vars=[LAM, "seed"], value_vars=list(metrics), var_name="group", value_name="acc")
    long["group"] = long["group"].map(metrics)
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    sns.lineplot(data=long, x=LAM, y="acc", hue="group", marker="o", errorbar="sd", err_style="bars", ax=left)
    left.set_ylabel("group test accuracy (%)")
    sns.move_legend(
        left, "lower center", bbox_to_anchor=(0.5, 1.0), ncols=len(labels), title=None, frameon=False
    )
    sns.lineplot(
        data=data, x=LAM, y="group_gap", marker="o", errorbar="sd", err_style="bars", ax=right, color="k"
    )
    right.set_ylabel("discrepancy (max − min, points)")
    for ax in (left, right):
        ax.set_xlabel("λ / λ_max")
    fig.suptitle(f"{'; '.join(dict.fromkeys(runs['dataset']))}: GIFAIR-FL-Global against λ (λ = 0 is FedAvg)")
    return fig


BUNDLE = register_paper(
    Paper(
        "gifair_fl",
        (
            "gifair_table2_femnist_skewed",
            "gifair_table3_femnist_original",
            "gifair_table4_femnist_3groups",
            "gifair_table5_shakespeare",
            "gifair_table6_shakespeare_gender",
            "gifair_table6_shakespeare_gender_random_split",  # the paper's split (§5.1): test text overlaps
            "gifair_table6_shakespeare_gender_2000_windows",  # roles with >= 2,000 windows (not the paper's)
        ),
        claim_builders={"gifair_table": checklist_claims},
        readings_heading="GIFAIR-FL",
    )
)
