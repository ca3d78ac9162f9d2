import itertools
import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from fairfl_core.report.figures import (
    METRIC_UNITS,
    _label,
    plot_accuracy_vs_fairness,
    plot_client_accuracy,
    plot_learning_curves,
    plot_sweep,
    save_figure,
)
from fairfl_core.report.results import load_client_accuracies, load_curves, load_runs
from tests.report.conftest import two_method_results

STAND_IN = "fashion_mnist (stand-in for CIFAR-10)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("results")
    return load_runs(d, two_method_results(d, stand_in="CIFAR-10"))


def _drawn(fig):
    """Lay ``fig`` out with Agg and return its renderer (the extents below are in display pixels)."""
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def _overlapping(artists, renderer):
    boxes = [a.get_window_extent(renderer) for a in artists if a.get_text()]
    return [(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2) if a.overlaps(b)]


def _legend_clear_of_panels(fig):
    """The figure's one legend: its texts, after checking it covers no panel and not the title."""
    renderer = _drawn(fig)
    (legend,) = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert not box.overlaps(fig._suptitle.get_window_extent(renderer))
    return [t.get_text() for t in legend.get_texts()]


def _many_methods(n=14):
    """Per-client accuracies of ``n`` methods with long labels, 20 clients each."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "method": np.repeat([f"FedEBA+ (literal Eq. 11 units, α=0.{i})" for i in range(n)], 20),
            "acc": rng.uniform(0, 100, 20 * n),
            "dataset": "fashion_mnist",
            "seed": 0,
            "round": 10,
        }
    )


def test_axis_labels_carry_the_metrics_units():
    assert _label("global_acc") == "Global Acc. (%)" and _label("var") == "Var. (%²)"
    assert _label("group_acc_1") == "group_acc_1 (%)" and _label("angle") == "Angle (°)"
    assert _label("cv") == "C_v"  # scale-free
    assert _label("extra_cost") == "Additional cost (%)"  # the unit is in the label already
    assert set(METRIC_UNITS.values()) == {"%", "points", "%²", "°", "nats", "nats²"}


def _saved(fig, tmp_path, name):
    paths = save_figure(fig, tmp_path / "figs", name)
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert all(p.exists() and p.stat().st_size > 1000 for p in paths)
    return fig.get_suptitle()


def test_learning_curves_one_panel_per_metric_titled_with_the_stand_in_label(runs, tmp_path):
    fig = plot_learning_curves(load_curves(runs), metrics=("global_acc", "var"))
    assert len(fig.axes) == 2 and [ax.get_ylabel() for ax in fig.axes] == ["Global Acc. (%)", "Var. (%²)"]
    assert len(fig.axes[0].lines) >= 2  # one mean line per method
    assert sorted(_legend_clear_of_panels(fig)) == ["FedAvg", "FedProx"]
    assert all(float(t).is_integer() for ax in fig.axes for t in ax.get_xticks())  # rounds are whole
    assert _saved(fig, tmp_path, "curves").startswith(f"{STAND_IN}: learning curves")


def test_client_accuracy_ecdf_and_violin(runs, tmp_path):
    fig = plot_client_accuracy(load_client_accuracies(runs))
    assert len(fig.axes) == 2
    assert sorted(t.get_text() for t in fig.axes[1].get_yticklabels()) == ["FedAvg", "FedProx"]
    assert _saved(fig, tmp_path, "clients") == f"{STAND_IN}: per-client accuracy at round 4 (2 seeds pooled)"


def test_client_accuracy_names_many_long_labelled_methods_without_overlap():
    few, many = plot_client_accuracy(_many_methods(2)), plot_client_accuracy(_many_methods(14))
    assert many.get_figheight() > few.get_figheight()  # grows with the methods
    renderer = _drawn(many)
    labels = many.axes[1].get_yticklabels()
    assert len(labels) == 14 and _overlapping(labels, renderer) == []
    colours = {tuple(c.get_facecolor()[0]) for c in many.axes[1].collections if len(c.get_facecolor())}
    assert len(colours) == 14  # beyond the 10 colour-blind colours, still one colour per method
    assert many.get_suptitle().endswith("at round 10 (1 seed pooled)")


def test_accuracy_vs_fairness_marks_each_method_mean(runs, tmp_path):
    fig = plot_accuracy_vs_fairness(runs)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Var. (%²), lower is fairer", "Global Acc. (%)")
    assert sorted(_legend_clear_of_panels(fig)) == ["FedAvg", "FedProx"]
    assert _saved(fig, tmp_path, "scatter") == f"{STAND_IN}: accuracy vs fairness (mean ± std over seeds)"


def test_a_method_at_chance_is_named_under_the_title_not_drawn(runs):
    low = runs.assign(global_acc=runs["global_acc"].where(runs["method"] != "FedAvg", 10.5))
    fig = plot_accuracy_vs_fairness(low, chance=10.0)
    assert [c.get_label() for c in fig.axes[0].containers] == ["FedProx"]  # the axes hold the compared ones
    title = " ".join(fig.get_suptitle().split())
    assert title.endswith("at chance (10 %), not drawn: FedAvg (Global Acc. 10.5, Var. 350)")
    assert len(plot_accuracy_vs_fairness(low).axes[0].containers) == 2  # without ``chance``: every method


def test_curves_of_one_seed_do_not_claim_a_spread_over_seeds(runs):
    one = load_curves(runs[runs["seed"] == 0])
    assert plot_learning_curves(one).get_suptitle().endswith("learning curves (one seed)")
    assert "mean ± std over seeds" in plot_learning_curves(load_curves(runs)).get_suptitle()


def test_sweep_plot_over_a_config_column(runs, tmp_path):
    swept = runs.assign(**{"config.train.lr": [0.01, 0.01, 0.1, 0.1]})
    fig = plot_sweep(swept, "config.train.lr", metrics=("var",))
    assert fig.axes[0].get_xlabel() == "train.lr"
    assert sorted(_legend_clear_of_panels(fig)) == ["FedAvg", "FedProx"]
    assert _saved(fig, tmp_path, "sweep").startswith(f"{STAND_IN}: sweep over train.lr")


def test_missing_columns_and_empty_data_are_named(runs):
    with pytest.raises(KeyError, match=r"\['worst10'\] missing"):
        plot_learning_curves(load_curves(runs), metrics=("worst10",))
    with pytest.raises(ValueError, match="no rows to plot"):
        plot_accuracy_vs_fairness(runs.iloc[:0])


def _group_tables(methods, labels):
    """``aggregate``-like and ``experiment_paper_values``-like long tables of group accuracies: method i,
    group g has mean 10 i + g + 1 (std 0.5) reproduced and 10 i + g + 5 in the paper."""
    rows = [
        (m, f"group_acc_{g}", 10.0 * i + g + 1) for i, m in enumerate(methods) for g in range(len(labels))
    ]
    agg = pd.DataFrame(rows, columns=["method", "metric", "mean"]).assign(dataset="shakespeare", std=0.5)
    paper = agg.rename(columns={"mean": "paper_value"}).assign(paper_value=lambda d: d["paper_value"] + 4)
    return agg, paper.drop(columns="std").assign(paper_std=math.nan)


def test_group_accuracies_put_each_bar_at_its_method_and_group():
    from fairfl_core.papers.gifair_fl.claims import plot_group_accuracies

    methods = ["FedAvg", "q-FFL (q=0.01)", "GIFAIR-FL-Global (λ = 0.5 λ_max)"]
    labels = ("male", "female")  # not alphabetical: bars follow the labels' order
    agg, paper = _group_tables(methods, labels)
    fig = plot_group_accuracies(agg, paper, labels)
    renderer = _drawn(fig)
    reproduced, printed = fig.axes
    assert [t.get_text() for t in reproduced.get_yticklabels()] == methods
    assert _overlapping(reproduced.get_yticklabels(), renderer) == []
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(labels)
    assert not any(ax.get_legend() for ax in fig.axes)
    for ax, shift in ((reproduced, 0), (printed, 4)):
        for g, container in enumerate(c for c in ax.containers if hasattr(c, "patches")):
            for i, bar in enumerate(container.patches):
                assert round(bar.get_y() + bar.get_height() / 2) == i  # the method's row
                assert bar.get_width() == 10 * i + g + 1 + shift
            if ax is reproduced:  # each ± std bar spans its own bar's end
                (segments,) = [c.get_segments() for c in container.errorbar.lines[2]]
                ends = [(seg[0][0] + seg[1][0]) / 2 for seg in segments]
                assert ends == [bar.get_width() for bar in container.patches]
                assert [seg[1][0] - seg[0][0] for seg in segments] == [1.0] * len(methods)


def test_group_accuracies_title_names_the_variant_within_the_figure():
    from fairfl_core.papers.gifair_fl.claims import plot_group_accuracies

    labels = ("male", "female")
    agg, paper = _group_tables(["FedAvg"], labels)
    assert fig_title(plot_group_accuracies(agg, paper, labels)).endswith(": group accuracies")
    sentence = "GIFAIR-FL Table 6: by gender on Shakespeare, both genders from roles with >= 2,000 windows"
    long = f"{sentence} {sentence}"
    fig = plot_group_accuracies(agg, paper, labels, title=long)
    renderer = _drawn(fig)
    assert fig_title(fig).replace("\n", " ") == f"{long}: group accuracies"
    assert fig._suptitle.get_window_extent(renderer).width <= fig.bbox.width  # wrapped to the figure


def fig_title(fig) -> str:
    return fig._suptitle.get_text()


def test_lambda_sweep_legend_clear_of_the_data():
    from fairfl_core.papers.gifair_fl.claims import LAM, plot_lambda_sweep

    runs = pd.DataFrame(
        {
            LAM: [0.0, 0.0, 0.5, 0.5, 0.9, 0.9],
            "seed": [0, 1] * 3,
            "group_acc_0": [50.0, 52, 48, 49, 45, 46],
            "group_acc_1": [30.0, 31, 38, 39, 44, 45],
            "group_gap": [20.0, 21, 10, 10, 1, 1],
            "dataset": "shakespeare",
        }
    ).assign(method=lambda d: [f"GIFAIR-FL-Global (λ={lam}λmax)" for lam in d[LAM]])
    fig = plot_lambda_sweep(runs, ("male", "female"))
    renderer = _drawn(fig)
    left = fig.axes[0]
    box = left.get_legend().get_window_extent(renderer)
    assert box.y0 >= left.get_window_extent(renderer).y1 - 1  # above the panel, not on the lines
    assert [ax.get_xlabel() for ax in fig.axes] == ["λ / λ_max", "λ / λ_max"]


def _with_diverged(df, method="FedAvg", seed=1):
    """``df`` with ``method``'s run of ``seed`` marked diverged (its rows keep their metrics)."""
    hit = (df["method"].str.startswith(method)) & (df["seed"] == seed)
    return df.assign(status=df["status"].where(~hit, "diverged"))


def test_figures_leave_diverged_runs_out_as_the_tables_do_and_say_so(runs):
    marked = _with_diverged(runs)
    fig = plot_accuracy_vs_fairness(marked, x="var", y="global_acc")
    means = {c.get_label(): c.lines[0].get_xydata()[0].tolist() for c in fig.axes[0].containers}
    fedavg = next(label for label in means if label.startswith("FedAvg"))
    assert means[fedavg] == [500.0, 70.0]  # seed 0 alone: seed 1 (var 200, global 72) diverged
    title = fig._suptitle.get_text()
    assert "left out as diverged (as in the tables)" in title and "1 of 2 runs" in title

    curves = _with_diverged(load_curves(runs))
    assert set(load_curves(runs)["status"]) == {"complete"}
    clients = _with_diverged(load_client_accuracies(runs))
    for fig in (plot_learning_curves(curves), plot_client_accuracy(clients)):
        assert "1 of 2 runs" in fig._suptitle.get_text()
    assert any(t.get_text().startswith("FedAvg") for t in fig.axes[1].get_yticklabels())  # seed 0 stays
    assert plot_accuracy_vs_fairness(runs)._suptitle.get_text().count("\n") == 0  # nothing left out


def test_a_figure_of_diverged_runs_only_names_them(runs):
    fig = plot_accuracy_vs_fairness(runs.assign(status="diverged"))
    assert not fig.axes  # no panel drawn from the diverged runs' last evaluations
    title = fig._suptitle.get_text()
    assert (
        "accuracy vs fairness: every run diverged, nothing to plot" in title and "FedAvg 2 of 2 runs" in title
    )


def _png_height(path) -> int:
    from PIL import Image

    with Image.open(path) as image:
        return image.height


def test_a_caption_is_drawn_once_under_the_figure_inside_the_saved_image(runs, tmp_path):
    plain = save_figure(plot_learning_curves(load_curves(runs)), tmp_path / "plain", "curves")
    caption = "Learning curves (smoke profile: 6 rounds, 2 seeds; data stand-in for CIFAR-10) " * 3
    fig = plot_learning_curves(load_curves(runs))
    save_figure(fig, tmp_path / "figs", "curves", caption="an earlier caption")
    paths = save_figure(fig, tmp_path / "figs", "curves", caption=caption)  # replaces it, not a second one
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert all(p.exists() and p.stat().st_size > 1000 for p in paths)
    drawn = [t for t in fig.texts if " ".join(t.get_text().split()) == caption.strip()]  # wrapped, not cut
    assert len(drawn) == 1 and not any("earlier" in t.get_text() for t in fig.texts)
    assert _png_height(paths[0]) > _png_height(plain[0])  # the tight box takes the caption in
    gaps = []  # caption to the lowest panel or legend, on each draw of the saving (tight box included)

    def measure(event):
        box = drawn[0].get_window_extent(event.renderer)
        gaps.append(min(a.get_tightbbox(event.renderer).y0 for a in [*fig.axes, *fig.legends]) - box.y1)

    fig.canvas.mpl_connect("draw_event", measure)
    save_figure(fig, tmp_path / "figs", "curves")
    assert gaps and min(gaps) > 0  # under the panels, their x-axis labels and the legend below them
