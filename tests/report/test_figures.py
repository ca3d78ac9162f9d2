import itertools

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
    renderer = _drawn(fig)
    assert not any(ax.get_legend() for ax in fig.axes), "legends belong outside the panels"
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
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
    assert _saved(fig, tmp_path, "scatter") == f"{STAND_IN}: accuracy vs fairness"


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
