"""The quickstart notebook's claims: FedAvg and FedProx on FedEBA+'s Table 1 workload. The quickstart checks
the pipeline, not a paper: every claim is the package's observation (none enters a headline), the checks
against FedEBA+ Table 1's printed FedAvg row included."""

from __future__ import annotations

import pandas as pd

from fairfl_core.experiments.profiles import Experiment
from fairfl_core.report.bundle import PageTable, Paper, PaperRun, register_paper
from fairfl_core.report.claims import OBSERVATION, PAPER, Claim
from fairfl_core.report.paper import printed
from fairfl_core.report.tables import format_mean_std, results_table

__all__ = ["BUNDLE", "METRICS", "fairness_summary", "quickstart_claims"]

METRICS = ("global_acc", "var", "worst5", "best5")


def _printed(metric: str) -> str:
    return format_mean_std(*printed("fedeba_plus", "Table 1", "FashionMNIST", "FedAvg", metric))


def quickstart_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """FedAvg learns and matches FedEBA+ Table 1's FedAvg row; FedProx with a small μ stays close to it: the
    package's observations, all."""
    table1 = "FedEBA+ Table 1's FedAvg"
    return [
        Claim(
            "FedAvg learns: global accuracy above chance (10%)",
            "global_acc",
            "FedAvg",
            ">",
            10.0,
            source=f"{OBSERVATION}: a check of the pipeline",
        ),
        Claim(
            "FedProx with a small μ stays within 1 point of FedAvg's global accuracy",
            "global_acc",
            "FedProx (μ=0.01)",
            "≈",
            "FedAvg",
            tolerance=1.0,
            tolerance_source="the package's choice (1 point of accuracy)",
            source=f"{OBSERVATION}: Li et al. 2020's μ → 0 recovers FedAvg",
        ),
        Claim(
            "FedProx (μ=0.01) has a lower variance of client accuracies than FedAvg",
            "var",
            "FedProx (μ=0.01)",
            "<",
            "FedAvg",
            source=f"{OBSERVATION}: no paper run here states it (FedEBA+ Table 1 has no FedProx row)",
        ),
        Claim(
            "FedAvg reaches the paper's global accuracy (within 1 point)",
            "global_acc",
            "FedAvg",
            "≈",
            PAPER,
            tolerance=1.0,
            tolerance_source="the package's choice (1 point of accuracy)",
            source=f"{OBSERVATION}: a check against {table1} ({_printed('global_acc')}), not a paper claim",
        ),
        Claim(
            "FedAvg's variance matches the paper's (within 2 paper std, 9.1 %²)",
            "var",
            "FedAvg",
            "≈",
            PAPER,
            tolerance=9.1,
            tolerance_source="twice the printed seed std of FedEBA+ Table 1's FedAvg variance",
            source=f"{OBSERVATION}: a check against {table1} ({_printed('var')}), not a claim of the paper",
        ),
    ]


def fairness_summary(page: PaperRun) -> dict[str, PageTable]:
    """The page's one table: mean ± std over seeds of :data:`METRICS` at the last round, beside FedEBA+
    Table 1's printed numbers."""
    if "quickstart" not in page.runs:
        return {}
    table = results_table(page.runs["quickstart"], metrics=METRICS, paper=page.paper["quickstart"])
    title = "quickstart: mean ± std over seeds; paper = FedEBA+ Table 1"
    return {"fairness_summary": PageTable(table, title, ("quickstart",))}


BUNDLE = register_paper(
    Paper(
        "quickstart",
        ("quickstart",),
        claim_builders={"quickstart": quickstart_claims},
        printed_in="fedeba_plus",
        tables=fairness_summary,
        claims_title="quickstart: claims",
    )
)
