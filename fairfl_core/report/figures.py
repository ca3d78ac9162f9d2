"""Seaborn figures of results: learning curves, per-client accuracy distributions, accuracy vs fairness,
hyperparameter sweeps; saved as PNG and PDF, with a caption of what ran under the figure.

Figures are built as ``matplotlib.figure.Figure`` objects without pyplot, so they render with the Agg
backend anywhere (scripts, tests, papermill) and still display inline in Jupyter. Every title starts with
the dataset label, which carries the stand-in label where the dataset replaces the paper's. Bands and error
bars are ± one sample standard deviation over seeds (``ddof=1``, as the tables). Axes carry the metrics' units
(:mod:`fairfl_core.metrics`: accuracies in %, dispersions in percentage points, variances in %²); legends sit
outside the panels and figures grow with the number of methods they show. Diverged runs are left out, as
the tables leave them out, and named under the title.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fairfl_core.report.tables import METRIC_LABELS

__all__ = [
    "METRIC_UNITS",
    "plot_accuracy_vs_fairness",
    "plot_client_accuracy",
    "plot_learning_curves",
    "plot_sweep",
    "save_figure",
]


METRIC_UNITS = {
    **dict.fromkeys(("global_acc", "mean", "worst5", "worst10", "best5", "min", "max", "p10", "p20"), "%"),
    **dict.fromkeys(("std", "sigma_acc", "group_gap"), "points"),
    **dict.fromkeys(("var", "group_var"), "%²"),
    "angle": "°",
    "kl": "nats",
    "loss_mean": "nats",
    "loss_var": "nats²",
}
_CHAR_IN = 0.075  # width of one legend character at matplotlib's default 10 pt, inches
_MARKERS = "osD^vP<X>hp*"


def _title(df: pd.DataFrame, what: str) -> str:
    return f"{'; '.join(dict.fromkeys(df['dataset']))}: {what}"


def _palette(df: pd.DataFrame, hue: str) -> dict:
    """One distinct colour per level: the colour-blind palette up to its 10 colours, then tab20 or husl."""
    levels = list(dict.fromkeys(df[hue]))
    name = "colorblind" if len(levels) <= 10 else "tab20" if len(levels) <= 20 else "husl"
    return dict(zip(levels, sns.color_palette(name, len(levels)), strict=True))


def _label(metric: str) -> str:
    """Axis label with the metric's unit, e.g. ``Var. (%²)``; per-group accuracies are in %."""
    unit = "%" if metric.startswith("group_acc_") else METRIC_UNITS.get(metric)
    label = METRIC_LABELS.get(metric, metric)
    return f"{label} ({unit})" if unit else label


def _legend_columns(labels: Sequence[str], width: float) -> int:
    """Columns of a legend of ``labels`` that fit ``width`` inches (at least one)."""
    entry = 0.6 + _CHAR_IN * max(len(str(t)) for t in labels)
    return max(1, min(len(labels), int(width // entry)))


def _legend_height(labels: Sequence[str], width: float) -> float:
    """Inches a legend under the panels takes: title and one 0.25-inch line per row."""
    return 0.45 + 0.25 * -(-len(labels) // _legend_columns(labels, width))


def _legend_below(fig: Figure, ax, title: str) -> None:
    """Move ``ax``'s legend under all panels of ``fig``, in as many columns as fit its width."""
    handles, labels = ax.get_legend_handles_labels()
    ax.get_legend().remove()
    fig.legend(
        handles,
        labels,
        title=title,
        loc="outside lower center",
        ncols=_legend_columns(labels, fig.get_figwidth()),
        frameon=False,
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _trained(df: pd.DataFrame, hue: str) -> tuple[pd.DataFrame, str]:
    """``df`` without the rows of diverged runs (``status`` column), as the tables leave them out: their
    metrics are the last evaluation before the divergence, not a result. Also a line naming what was left
    out, per level of ``hue``."""
    if "status" not in df or not (df["status"] == "diverged").any():
        return df, ""
    key = [c for c in (hue, "dataset", "seed") if c in df]
    runs = df.drop_duplicates(key)
    diverged = runs[runs["status"] == "diverged"].groupby(hue, sort=False).size()
    total = runs.groupby(hue, sort=False).size()
    note = "left out as diverged (as in the tables): " + "; ".join(
        f"{level} {k} of {_count(total[level], 'run')}" for level, k in diverged.items()
    )
    return df[df["status"] != "diverged"], note


def _all_diverged(df: pd.DataFrame, what: str, note: str) -> Figure:
    """The figure of runs that all diverged: no panel, the note in its place (a notebook goes on)."""
    fig = Figure(figsize=(8, 1.6), layout="constrained")
    _suptitle(fig, _title(df, f"{what}: every run diverged, nothing to plot"), note)
    return fig


def _suptitle(fig: Figure, title: str, note: str = "") -> None:
    """The figure's title, with ``note`` wrapped under it to the figure's width (the figure grows by the
    note's lines, so the panels keep their height)."""
    if not note:
        fig.suptitle(title)
        return
    width = max(40, int(fig.get_figwidth() / 0.1))  # characters of the title's 12 pt font per line
    lines = textwrap.wrap(note, width)
    fig.set_figheight(fig.get_figheight() + 0.22 * len(lines))
    fig.suptitle("\n".join([title, *lines]))


def _over_seeds(df: pd.DataFrame, hue: str) -> str:
    """How a line or point summarises its runs: "mean ± std over seeds", or "one seed" when no method and
    dataset has two."""
    if "seed" in df and df.groupby([hue, "dataset"], sort=False)["seed"].nunique().max() < 2:
        return "one seed"
    return "mean ± std over seeds"


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df]
    if missing:
        raise KeyError(f"{what}: column(s) {missing} missing; available: {list(df.columns)}")
    if df.empty:
        raise ValueError(f"{what}: no rows to plot")


def plot_learning_curves(
    curves: pd.DataFrame, metrics: Sequence[str] = ("global_acc", "var", "worst5"), hue: str = "method"
) -> Figure:
    """One panel per metric against the round: mean over seeds with a ± std band (``curves`` from
    :func:`fairfl_core.report.results.load_curves`)."""
    _require(curves, ["round", "dataset", hue, *metrics], "plot_learning_curves")
    trained, note = _trained(curves, hue)
    if trained.empty:
        return _all_diverged(curves, "learning curves", note)
    curves = trained
    palette = _palette(curves, hue)
    width = 4.2 * len(metrics)
    fig = Figure(figsize=(width, 3.4 + _legend_height(list(palette), width)), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for i, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        sns.lineplot(
            data=curves,
            x="round",
            y=metric,
            hue=hue,
            palette=palette,
            errorbar="sd",
            ax=ax,
            legend=i == len(metrics) - 1,
        )
        ax.set_ylabel(_label(metric))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_below(fig, axes[-1], hue)
    _suptitle(fig, _title(curves, f"learning curves ({_over_seeds(curves, hue)})"), note)
    return fig


def plot_client_accuracy(clients: pd.DataFrame, hue: str = "method") -> Figure:
    """Per-client test accuracy as an ECDF (left) and a horizontal violin per method (right: the method
    names read along the y axis at any count; the ECDF's colours are the violins'), seeds pooled
    (``clients`` from :func:`fairfl_core.report.results.load_client_accuracies`)."""
    _require(clients, ["acc", "dataset", hue], "plot_client_accuracy")
    trained, note = _trained(clients, hue)
    if trained.empty:
        return _all_diverged(clients, "per-client accuracy", note)
    clients = trained
    palette = _palette(clients, hue)
    fig = Figure(figsize=(11, max(3.8, 1.4 + 0.34 * len(palette))), layout="constrained")
    ecdf_ax, violin_ax = fig.subplots(1, 2, width_ratios=(1, 1.25))
    sns.ecdfplot(data=clients, x="acc", hue=hue, palette=palette, ax=ecdf_ax, legend=False)
    ecdf_ax.set_xlabel("client test accuracy (%)")
    ecdf_ax.set_ylabel("fraction of clients")
    sns.violinplot(
        data=clients,
        x="acc",
        y=hue,
        hue=hue,
        palette=palette,
        cut=0,
        inner="quart",
        orient="h",
        legend=False,
        ax=violin_ax,
    )
    violin_ax.set_xlabel("client test accuracy (%)")
    violin_ax.set_ylabel("")
    violin_ax.tick_params(axis="y", labelsize=9 if len(palette) > 10 else 10)
    rounds = sorted(set(clients["round"])) if "round" in clients else []
    at = f" at round {rounds[0]}" if len(rounds) == 1 else ""
    pooled = f" ({_count(clients['seed'].nunique(), 'seed')} pooled)" if "seed" in clients else ""
    _suptitle(fig, _title(clients, f"per-client accuracy{at}{pooled}"), note)
    return fig


def _at_chance(
    runs: pd.DataFrame, x: str, y: str, hue: str, chance: float | None
) -> tuple[pd.DataFrame, str]:
    """``runs`` without the methods whose mean ``y`` is within 1 point of ``chance`` (they would squash the
    compared methods into a corner), and a line naming them with their means."""
    if chance is None:
        return runs, ""
    means = runs.groupby(hue, sort=False)[[x, y]].mean()
    low = means[means[y] <= chance + 1.0]
    if low.empty or len(low) == len(means):
        return runs, ""
    short = {m: _label(m).split(" (")[0] for m in (x, y)}
    named = "; ".join(
        f"{level} ({short[y]} {r[y]:.1f}, {short[x]} {r[x]:.0f})" for level, r in low.iterrows()
    )
    return runs[~runs[hue].isin(low.index)], f"at chance ({chance:g} %), not drawn: {named}"


def plot_accuracy_vs_fairness(
    runs: pd.DataFrame,
    x: str = "var",
    y: str = "global_acc",
    hue: str = "method",
    chance: float | None = None,
) -> Figure:
    """Accuracy against a dispersion metric: one faint point per run, the mean per method with ± std bars;
    each method has its own colour and marker, named in a legend right of the panel. With ``chance`` (the
    accuracy of guessing, in %), methods within 1 point of it are named under the title instead of drawn,
    so that the axes stay on the methods compared."""
    _require(runs, [x, y, "dataset", hue], "plot_accuracy_vs_fairness")
    trained, note = _trained(runs, hue)
    if trained.empty:
        return _all_diverged(runs, "accuracy vs fairness", note)
    runs, at_chance = _at_chance(trained, x, y, hue, chance)
    note = " ".join(n for n in (note, at_chance) if n)
    palette = _palette(runs, hue)
    markers = {level: _MARKERS[i % len(_MARKERS)] for i, level in enumerate(palette)}
    legend_width = 0.6 + _CHAR_IN * max(len(str(level)) for level in palette)
    fig = Figure(figsize=(5.2 + legend_width, max(4.0, 1.0 + 0.25 * len(palette))), layout="constrained")
    ax = fig.subplots()
    sns.scatterplot(
        data=runs,
        x=x,
        y=y,
        hue=hue,
        style=hue,
        markers=markers,
        palette=palette,
        alpha=0.35,
        legend=False,
        ax=ax,
    )
    stats = runs.groupby(hue, sort=False)[[x, y]].agg(["mean", "std"])
    for level, row in stats.iterrows():
        ax.errorbar(
            row[(x, "mean")],
            row[(y, "mean")],
            xerr=row[(x, "std")],
            yerr=row[(y, "std")],
            fmt=markers[level],
            color=palette[level],
            capsize=3,
            label=level,
        )
    ax.legend(title=hue, loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)
    fairer = x in ("var", "std", "cv", "loss_var")
    ax.set_xlabel(f"{_label(x)}, lower is fairer" if fairer else _label(x))
    ax.set_ylabel(_label(y))
    _suptitle(fig, _title(runs, f"accuracy vs fairness ({_over_seeds(runs, hue)})"), note)
    return fig


def plot_sweep(
    runs: pd.DataFrame, param: str, metrics: Sequence[str] = ("global_acc", "var"), hue: str = "method"
) -> Figure:
    """Metrics against a hyperparameter (a column of ``runs``, e.g. ``config.algorithm.params.mu``): mean
    over seeds with ± std bars; a logarithmic axis when the positive values span more than two decades."""
    _require(runs, [param, "dataset", hue, *metrics], f"plot_sweep({param!r})")
    trained, note = _trained(runs, hue)
    if trained.empty:
        return _all_diverged(runs, f"sweep over {param.removeprefix('config.')}", note)
    runs = trained
    palette = _palette(runs, hue)
    width = 4.2 * len(metrics)
    fig = Figure(figsize=(width, 3.4 + _legend_height(list(palette), width)), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    values = pd.to_numeric(runs[param], errors="coerce")
    log = bool((values > 0).all() and values.max() / values.min() > 100)
    for i, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        sns.lineplot(
            data=runs,
            x=param,
            y=metric,
            hue=hue,
            palette=palette,
            errorbar="sd",
            marker="o",
            err_style="bars",
            ax=ax,
            legend=i == len(metrics) - 1,
        )
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(param.removeprefix("config."))
        ax.set_ylabel(_label(metric))
    _legend_below(fig, axes[-1], hue)
    what = f"sweep over {param.removeprefix('config.')} ({_over_seeds(runs, hue)})"
    _suptitle(fig, _title(runs, what), note)
    return fig


_CAPTION_GID = "fairfl-caption"  # marks the caption text that save_figure draws, to replace it on a resave
_CAPTION_CHAR_IN = 0.055  # width of one caption character at 7 pt, inches


def _draw_caption(fig: Figure, caption: str) -> None:
    """Lay ``fig`` out and draw ``caption`` wrapped under everything on it (axis labels, legends below the
    panels), left-aligned with it and as wide as it; a caption drawn before is replaced, not doubled.

    ``bbox_inches="tight"`` (``savefig``, Jupyter's inline display) enlarges the figure's box to take the
    caption in, and a legend anchored to that box (``loc="outside ..."``) would follow it onto the caption:
    such legends are pinned to the figure as it is, and the layout is kept from then on (a layout engine
    would no longer leave room for a pinned legend)."""
    for text in [t for t in fig.texts if t.get_gid() == _CAPTION_GID]:
        text.remove()
    fig.draw_without_rendering()  # lay the figure out, so that its extent is the saved one
    for legend in fig.legends:
        if legend.get_bbox_to_anchor() is fig.bbox:
            legend.set_bbox_to_anchor((0, 0, 1, 1), transform=fig.transFigure)
    if fig.get_layout_engine() is not None:
        fig.set_layout_engine("none")
    box = fig.get_tightbbox()  # inches, from the figure's lower left corner; may reach outside it
    width, height = fig.get_size_inches()
    fig.text(
        box.x0 / width,
        (box.y0 - 0.08) / height,
        textwrap.fill(caption, max(40, int(box.width / _CAPTION_CHAR_IN)), break_on_hyphens=False),
        ha="left",
        va="top",
        fontsize=7,
        color="#444",
        gid=_CAPTION_GID,
    )


def save_figure(
    fig: Figure, out_dir: str | Path, name: str, dpi: int = 150, caption: str | None = None
) -> list[Path]:
    """Save ``fig`` as ``<name>.png`` and ``<name>.pdf`` under ``out_dir``; returns both paths. ``caption``
    (e.g. :func:`fairfl_core.report.tables.caption`: what ran) is drawn in small type under the figure."""
    if caption:
        _draw_caption(fig, caption)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in ("png", "pdf")]
    for p in paths:
        fig.savefig(p, dpi=dpi, bbox_inches="tight")
    return paths
