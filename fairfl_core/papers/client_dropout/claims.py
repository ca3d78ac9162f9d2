"""The client-dropout notebook's bundle: one experiment, no paper table, no claim (no paper implemented here
measures dropout; the page shows each method's change against p = 0, ``experiments.dropout_effects``)."""

from __future__ import annotations

from fairfl_core.papers.client_dropout.experiments import dropout_effects, with_fault_columns
from fairfl_core.report.bundle import PageTable, Paper, PaperRun, register_paper
from fairfl_core.report.tables import results_table

__all__ = ["BUNDLE", "METRICS", "dropout_tables"]

METRICS = ("global_acc", "var", "worst5", "best5")


def dropout_tables(page: PaperRun) -> dict[str, PageTable]:
    """Mean ± std over seeds of :data:`METRICS` per method and fault, and each method's change from p = 0."""
    if "client_dropout" not in page.runs:
        return {}
    runs, name = page.runs["client_dropout"], ("client_dropout",)
    return {
        "dropout_fairness": PageTable(
            results_table(runs, metrics=METRICS),
            "client_dropout: mean ± std over seeds; no paper measures this",
            name,
        ),
        "dropout_effects": PageTable(
            dropout_effects(runs).round(2), "client_dropout: means over seeds and change from p = 0", name
        ),
    }


BUNDLE = register_paper(
    Paper(
        "client_dropout",
        ("client_dropout",),
        derive=lambda name, runs, profile: with_fault_columns(runs),
        tables=dropout_tables,
    )
)
