"""Result tables: mean ± std over seeds per method, the paper's number beside each reproduced one, written
as CSV, Markdown and LaTeX.

Standard deviations over seeds are sample standard deviations (``ddof=1``); with a
single seed there is none and only the mean is shown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from fairfl_core.experiments.profiles import experiment_configs, get_profile

__all__ = [
    "METRIC_LABELS",
    "aggregate",
    "caption",
    "distinct_methods",
    "format_mean_std",
    "results_table",
    "save_table",
]

METRIC_LABELS = {
    "global_acc": "Global Acc.",
    "mean": "Mean Acc.",
    "var": "Var.",
    "std": "Std.",
    "worst5": "Worst 5%",
    "worst10": "Worst 10%",
    "best5": "Best 5%",
    "acc_last5": "Acc. (mean of the last 5 evaluations)",
    "min": "Min",
    "max": "Max",
    "p10": "P10",
    "p20": "P20",
    "cv": "C_v",
    "angle": "Angle",
    "kl": "KL",
    "sigma_acc": "σ_Acc",
    "loss_mean": "Mean loss",
    "train_loss": "Training loss",
    "loss_var": "Loss var.",
    "group_gap": "Group gap",
    "group_var": "Group var.",
    "extra_cost": "Additional cost (%)",
    "spd": "SPD (points)",
    "eod": "EOD (points)",
    "spd_abs": "absolute SPD",
    "eod_abs": "absolute EOD",
    "local_spd": "SPD, clients' models",
    "local_eod": "EOD, clients' models",
    "local_spd_abs": "absolute SPD, clients' models",
    "local_eod_abs": "absolute EOD, clients' models",
    "gradient_rounds": "Gradient-alignment rounds (%)",
}
DEFAULT_METRICS = ("global_acc", "var", "worst5", "best5")


def distinct_methods(runs: pd.DataFrame, by: Sequence[str] = ("dataset", "method")) -> pd.DataFrame:
    """``runs`` (from :func:`fairfl_core.report.results.load_runs`) where no group of ``by`` mixes settings.

    Runs of one setting differ only in the seed (equal ``setting`` column). A group that holds several
    settings, e.g. a sweep that lists one algorithm twice with other params and no labels, gets its
    ``method`` extended by the config fields that tell its settings apart:
    ``"fedeba+ (fair_grad_units=gradient)"`` (``config.`` and ``algorithm.params.`` left out of the names).
    Every other row keeps its label. Without a ``setting`` column, or without ``method`` in ``by``, ``runs``
    is returned as it is."""
    by = list(by)
    if "setting" not in runs or "method" not in by:
        return runs
    mixed = runs.groupby(by, sort=False, dropna=False)["setting"].transform("nunique") > 1
    if not mixed.any():
        return runs
    fields = [c for c in runs if c.startswith("config.") and c not in ("config.seed", "config.name")]
    method = runs["method"].copy()
    for _, part in runs[mixed].groupby(by, sort=False, dropna=False):
        values = part[fields].map(lambda v: json.dumps(v, sort_keys=True, default=str))
        fixed = values.groupby(part["setting"]).nunique().max() == 1  # constant within each setting
        keys = [f for f in fields if fixed[f] and values[f].nunique() > 1]
        short = {k: k.removeprefix("config.").removeprefix("algorithm.params.") for k in keys}
        for i in part.index:
            names = ", ".join(f"{short[k]}={part.at[i, k]}" for k in keys)
            method[i] = f"{part.at[i, 'method']} ({names})"
    return runs.assign(method=method)


def aggregate(
    runs: pd.DataFrame, metrics: Iterable[str] = DEFAULT_METRICS, by: Sequence[str] = ("dataset", "method")
) -> pd.DataFrame:
    """Long table of mean, std (ddof=1) and ``n`` (runs with a value) per group of ``by`` and metric, groups
    in order of first appearance; a group never pools two settings (:func:`distinct_methods`). Also carries
    ``data``/``stand_in`` of each group (for the paper join), its number of ``runs`` and of ``diverged``
    runs, its configured ``rounds`` and ``model`` (the scale of a claim), and what the claims' paired tests
    need: ``values`` (seed → value) and ``keys`` (seed → the run's pairing key, ``report.results``), and
    ``censored``: runs whose value only bounds it (a column ``<metric>_censored`` of the runs marks them).
    Missing values (``None`` in a summary) are skipped, and so are the metrics of a diverged run: they are its
    last evaluation before the divergence (the initial model's, for a run that diverges before its first
    evaluation), not a result of the run."""
    runs = distinct_methods(runs, by)
    metrics, by = list(metrics), list(by)
    unknown = [m for m in metrics if m not in runs]
    if unknown:
        raise KeyError(
            f"metric(s) {unknown} not in the run summaries; available: "
            f"{[c for c in runs.columns if c in METRIC_LABELS]}"
        )
    trained = runs["status"] != "diverged"
    runs = runs.assign(**{m: pd.to_numeric(runs[m], errors="coerce").where(trained) for m in metrics})
    for column, default in (
        ("config.train.rounds", runs.get("rounds")),
        ("model", runs.get("config.model.name")),
    ):
        if column not in runs:
            runs = runs.assign(**{column: default})
    if "pairing" not in runs:
        runs = runs.assign(pairing=None)
    groups = runs.groupby(by, sort=False, dropna=False)
    info = groups.agg(
        runs=("status", "size"),
        data=("data", "first"),
        stand_in=("stand_in", "first"),
        diverged=("status", lambda s: int((s == "diverged").sum())),
        rounds=("config.train.rounds", "max"),
        model=("model", "first"),
    )
    rows = []
    for m in metrics:
        values = groups[m].agg(mean="mean", std="std", n="count")
        seeds = groups[[m, "seed", "pairing"]].apply(_seed_values, include_groups=False)
        values = values.assign(values=seeds.map(lambda v: v[0]), keys=seeds.map(lambda v: v[1]))
        censored = f"{m}_censored"
        flags = (
            runs[censored].fillna(False).astype(bool) if censored in runs else pd.Series(False, runs.index)
        )
        values["censored"] = flags.groupby([runs[b] for b in by], sort=False, dropna=False).sum().astype(int)
        rows.append(values.join(info).assign(metric=m).reset_index())
    return pd.concat(rows, ignore_index=True)[
        [*by, "data", "stand_in", "metric", "mean", "std", "n", "runs", "diverged", "rounds", "model"]
        + ["values", "keys", "censored"]
    ]


def _seed_values(group: pd.DataFrame) -> tuple[dict[int, float], dict[int, str]]:
    """(seed → value, seed → pairing key) of one group's runs with a value (the first column)."""
    metric = group.columns[0]
    kept = group[group[metric].notna()]
    values = {int(s): float(v) for s, v in zip(kept["seed"], kept[metric], strict=True)}
    keys = {int(s): str(k) for s, k in zip(kept["seed"], kept["pairing"], strict=True) if isinstance(k, str)}
    return values, keys


def format_mean_std(mean: float | None, std: float | None, decimals: int = 2) -> str:
    """``"86.49 ± 0.09"``; only the mean when there is no std (one seed); ``"–"`` without a mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def results_table(
    runs: pd.DataFrame,
    metrics: Iterable[str] = DEFAULT_METRICS,
    paper: pd.DataFrame | None = None,
    decimals: int = 2,
) -> pd.DataFrame:
    """Display table, one row per (dataset, method): seeds, then per metric the reproduced ``mean ± std``
    over the seeds that did not diverge ("diverged" when none trained; a ``diverged`` column counts them
    when any did) and, where ``paper`` (from :func:`fairfl_core.report.paper.experiment_paper_values`) has a
    number for it, the paper's beside it. Stand-in datasets get a ``stand-in`` column saying what they
    replace."""
    agg = aggregate(runs, metrics)
    if paper is not None and len(paper):
        agg = agg.merge(
            paper[["dataset", "method", "metric", "paper_value", "paper_std"]],
            on=["dataset", "method", "metric"],
            how="left",
        )
    agg["reproduced"] = [
        "diverged" if d and d == r else format_mean_std(m, s, decimals)
        for m, s, d, r in zip(agg["mean"], agg["std"], agg["diverged"], agg["runs"], strict=True)
    ]
    keys = ["dataset", "method"]
    table = agg.drop_duplicates(keys)[[*keys, "runs", "diverged", "stand_in"]].rename(
        columns={"runs": "seeds"}
    )
    if table["diverged"].any():  # the means are over the seeds that did not diverge
        table["diverged"] = [
            f"{d} of {r} seeds" if d else "" for d, r in zip(table["diverged"], table["seeds"], strict=True)
        ]
    else:
        table = table.drop(columns="diverged")
    for m in agg["metric"].unique():
        part = agg[agg["metric"] == m].set_index(keys)
        label = METRIC_LABELS.get(m, m)
        table[f"{label} reproduced"] = part["reproduced"].reindex(table.set_index(keys).index).to_numpy()
        if "paper_value" in part and part["paper_value"].notna().any():
            paper_cells = [
                format_mean_std(v, s, decimals) if pd.notna(v) else ""
                for v, s in zip(part["paper_value"], part["paper_std"], strict=True)
            ]
            table[f"{label} paper"] = (
                pd.Series(paper_cells, index=part.index).reindex(table.set_index(keys).index).to_numpy()
            )
    has_stand_in = table["stand_in"].map(lambda s: isinstance(s, str) and bool(s))
    if has_stand_in.any():
        table["stand-in"] = [
            f"stand-in for {s}: compare effects, not values" if flag else ""
            for s, flag in zip(table["stand_in"], has_stand_in, strict=True)
        ]
    return table.drop(columns="stand_in").reset_index(drop=True)


def caption(
    title: str, experiment: str | Sequence[str], profile: str, seeds: Iterable[int] | None = None
) -> str:
    """``title`` and what ran at ``profile`` on this machine: the profile's description (its rounds against
    the paper's, seeds, model, substituted or untuned settings; ``experiments.profiles``), the seeds where
    ``seeds`` replaces the profile's, the model, and the data set with its stand-in label and partition
    (fixed across seeds, or redrawn for each). A table of several experiments names each one's. With one
    seed, "mean ± std over seeds" in ``title`` reads "one seed, no spread"."""
    seeds = None if seeds is None else list(seeds)  # read once per experiment
    names = [experiment] if isinstance(experiment, str) else list(dict.fromkeys(experiment))
    if all(len(seeds if seeds is not None else get_profile(n, profile).seeds) == 1 for n in names):
        title = title.replace("mean ± std over seeds", "one seed, no spread")
    if not isinstance(experiment, str):
        names = list(dict.fromkeys(experiment))
        if len(names) != 1:
            return (
                f"{title} ({profile} profile; "
                + "; ".join(f"{n}: {_what_ran(n, profile, seeds)}" for n in names)
                + ")"
            )
        experiment = names[0]
    return f"{title} ({profile} profile: {_what_ran(experiment, profile, seeds)})"


def _what_ran(experiment: str, profile: str, seeds: Iterable[int] | None) -> str:
    chosen = get_profile(experiment, profile)
    config = experiment_configs(experiment, profile, seeds=seeds)[0]
    data = config.data
    where = f"{data.name}" + (f", stand-in for {data.stand_in}" if data.stand_in else "")
    split = f"{data.num_clients} clients, {data.partition} partition" if data.num_clients else data.partition
    split += (
        f" fixed across seeds (partition seed {data.partition_seed})"
        if data.partition_seed is not None
        else " redrawn for each seed"
    )
    ran = f"seeds {', '.join(map(str, seeds))}; " if seeds is not None else ""
    return f"{chosen.description}; {ran}model {config.model.name}; data {where}, {split}"


def save_table(
    df: pd.DataFrame, out_dir: str | Path, name: str, caption: str | None = None
) -> dict[str, Path]:
    """Write ``df`` as ``<name>.csv``, ``.md`` and ``.tex`` under ``out_dir``; returns the three paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {ext: out / f"{name}.{ext}" for ext in ("csv", "md", "tex")}
    df.to_csv(paths["csv"], index=False)
    paths["md"].write_text((f"{caption}\n\n" if caption else "") + df.to_markdown(index=False) + "\n")
    paths["tex"].write_text(df.to_latex(index=False, escape=True, caption=caption, label=f"tab:{name}"))
    return paths
