"""Reporting: results → tables (mean ± std, paper beside reproduced), figures, claims checklists; the HTML
index of a reproduction is :mod:`fairfl_core.report.index`.

Typical use in a notebook::

    runs = load_runs(results_dir, configs)
    table, paper = paper_table(get_experiment("quickstart"), runs, metrics=("global_acc", "var"))
    save_table(table, output_dir, "fairness_summary")
    save_figure(plot_learning_curves(load_curves(runs)), output_dir, "learning_curves")
"""

from fairfl_core.report.bundle import PAPERS, Paper, get_paper, paper_rows, register_paper
from fairfl_core.report.claims import PAPER, Claim, check_claims, claims_caption, exact_results, save_claims
from fairfl_core.report.figures import (
    plot_accuracy_vs_fairness,
    plot_client_accuracy,
    plot_learning_curves,
    plot_sweep,
    save_figure,
)
from fairfl_core.report.paper import (
    LEFT_OUT,
    experiment_paper_values,
    load_paper_results,
    missing_reasons,
    paper_table,
    paper_values,
    with_missing_rows,
)
from fairfl_core.report.results import (
    load_client_accuracies,
    load_curves,
    load_diagnostics,
    load_runs,
    outcome_table,
    with_extra_cost,
)
from fairfl_core.report.selection import select_a9
from fairfl_core.report.tables import aggregate, caption, format_mean_std, results_table, save_table

__all__ = [
    "LEFT_OUT",
    "PAPER",
    "PAPERS",
    "Claim",
    "Paper",
    "aggregate",
    "caption",
    "check_claims",
    "claims_caption",
    "exact_results",
    "experiment_paper_values",
    "format_mean_std",
    "get_paper",
    "load_client_accuracies",
    "load_curves",
    "load_diagnostics",
    "load_paper_results",
    "load_runs",
    "missing_reasons",
    "outcome_table",
    "paper_rows",
    "paper_table",
    "paper_values",
    "plot_accuracy_vs_fairness",
    "plot_client_accuracy",
    "plot_learning_curves",
    "plot_sweep",
    "register_paper",
    "results_table",
    "save_claims",
    "save_figure",
    "save_table",
    "select_a9",
    "with_extra_cost",
    "with_missing_rows",
]
