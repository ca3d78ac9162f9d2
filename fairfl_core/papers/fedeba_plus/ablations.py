"""FedEBA+'s ablations as their own bundle: the fair angle θ (Table 3, Figs. 10–13), the components
(Table 15), α and τ (Table 16 with Table 7's α rows, Fig. 5), annealed τ (Fig. 9) and the Dirichlet skew
(Fig. 14's analogue). Their claims are FedEBA+'s (``claims.py``), their printed numbers FedEBA+'s
(``papers/fedeba_plus/results.csv``)."""

from __future__ import annotations

import pandas as pd

from fairfl_core.experiments.profiles import Experiment, get_experiment
from fairfl_core.papers.fedeba_plus import TITLE
from fairfl_core.papers.fedeba_plus import claims as rf
from fairfl_core.report.bundle import PageTable, Paper, PaperRun, register_paper
from fairfl_core.report.paper import experiment_paper_values, paper_values
from fairfl_core.report.results import with_extra_cost
from fairfl_core.report.tables import aggregate, results_table

__all__ = ["BUNDLE", "DIRICHLET_ALPHA", "EXPERIMENTS", "METRICS", "ablation_tables", "derived", "printed"]

EXPERIMENTS = {
    "theta": "fedeba_table3_theta",
    "ablation": "fedeba_table15_ablation",
    "sensitivity": "fedeba_table16_sensitivity",
    "annealing": "fedeba_fig9_annealing",
    "dirichlet": "fedeba_fig14_dirichlet",
}
"""The notebook's keys (its ``experiments`` parameter) and their experiments."""
METRICS = ("global_acc", "var", "worst5", "best5")
THETA_METRICS = (*METRICS, "extra_cost", "gradient_rounds")  # Table 3's extra communication
DIRICHLET_ALPHA = "config.data.partition_options.alpha"


def derived(name: str, runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """Table 3's extra communication (``report.with_extra_cost``) on the θ runs; on the Dirichlet runs, each
    α a dataset of its own (Fig. 14 compares the methods at each α)."""
    if name == EXPERIMENTS["theta"]:
        return with_extra_cost(runs)
    if name == EXPERIMENTS["dirichlet"]:
        return runs.assign(dataset=runs["dataset"] + ", Dirichlet α=" + runs[DIRICHLET_ALPHA].astype(str))
    return runs


def printed(experiment: Experiment, runs: pd.DataFrame) -> pd.DataFrame:
    """The printed numbers the runs reproduce: Table 16's sweep completes with Table 7's α rows."""
    if experiment.name == EXPERIMENTS["sensitivity"]:
        return paper_values(experiment, runs, ("Table 16", "Table 7"))
    return experiment_paper_values(experiment, runs)


def ablation_tables(page: PaperRun) -> dict[str, PageTable]:
    """One table per experiment run, each FedEBA+ row naming its units of g̃ (``claims.with_reading``): mean
    ± std over seeds beside the printed numbers; Fig. 14's analogue as the mean over seeds per α."""
    tables = {}
    for name, runs in page.runs.items():
        experiment = get_experiment(name)
        if name == EXPERIMENTS["dirichlet"]:
            agg = aggregate(runs, metrics=("global_acc", "var", "worst5"))
            means = agg.pivot_table(index=["dataset", "method"], columns="metric", values="mean", sort=False)
            title = "Fig. 14 analogue: mean over seeds per Dirichlet α"
            tables[name] = PageTable(rf.with_reading(means.reset_index(), experiment), title, (name,))
            continue
        metrics = THETA_METRICS if name == EXPERIMENTS["theta"] else METRICS
        table = results_table(runs, metrics=metrics, paper=page.paper[name])
        tables[name] = PageTable(rf.with_reading(table, experiment), experiment.description, (name,))
    return tables


BUNDLE = register_paper(
    Paper(
        "fedeba_plus_ablations",
        tuple(EXPERIMENTS.values()),
        title=TITLE,
        claim_builders={k: v for k, v in rf.BUNDLE.claim_builders.items() if k in EXPERIMENTS.values()},
        printed_in="fedeba_plus",
        derive=derived,
        paper_numbers=printed,
        tables=ablation_tables,
        claims_title="FedEBA+ ablation claims",
        claims_decimals=3,
    )
)
