"""AFGA / CAFGA (TMLR 2024): the metrics of its tables and its claims (§6, Tables 1, 4, 5, 7; Fig. 1).

* ``acc_last5``: "Acc." of Tables 1–5, the server model's test accuracy averaged over the last 5
  evaluations (every round at paper scale; every ``eval.every`` rounds at the short profiles).
* ``rounds_to_target``: R#, the first evaluated round at which the test accuracy reaches the target. Per run
  (the claims compare seed means of it) and on the seed-mean curve (``rounds_to_target_of_mean``, the
  paper's reading of its tables); NaN, printed "R+", when never reached.
* Table 7: hours of simulated communication to reach each target, R# of the seed-mean curve × the time of one
  round (``gossip.CommCostModel``: Z gossip steps for AFGA and CAFGA, none for FedAMSGrad).
"""

from __future__ import annotations

import math

import pandas as pd

from fairfl_core import metrics
from fairfl_core.data import stand_ins
from fairfl_core.experiments.papers import afga as experiments
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.gossip import CommCostModel
from fairfl_core.report.bundle import Paper, register_paper
from fairfl_core.report.claims import Claim

__all__ = [
    "GOSSIPING",
    "BUNDLE",
    "rounds_to_target_of_mean",
    "seed_mean_rounds_column",
    "table1_claims",
    "table4_claims",
    "table5_claims",
    "table7_claims",
    "table7_hours",
    "topology_claims",
    "with_afga_metrics",
]

GOSSIPING = ("afga", "cafga")  # algorithms that gossip Z times per round (Table 7's cost model)


def _round_reached(rounds, accuracies, target: float) -> float:
    """R# (:func:`fairfl_core.metrics.rounds_to_target`) as a table cell: NaN, printed "R+", when never
    reached."""
    r = metrics.rounds_to_target(accuracies, target, rounds)
    return math.nan if r is None else float(r)


def _curve(path) -> pd.DataFrame:
    evals = pd.DataFrame(RunStore(path).records("evals"))
    return evals.loc[evals["round"] > 0, ["round", "global_acc"]]


def with_afga_metrics(runs: pd.DataFrame, target: float, last: int = 5) -> pd.DataFrame:
    """``runs`` (``report.load_runs``) plus ``acc_last5`` and ``rounds_to_target`` of each run."""
    curves = [_curve(p) for p in runs["path"]]
    return runs.assign(
        acc_last5=[metrics.last_k_mean(c["global_acc"], last) for c in curves],
        rounds_to_target=[_round_reached(c["round"], c["global_acc"], target) for c in curves],
    )


def rounds_to_target_of_mean(runs: pd.DataFrame, target: float) -> pd.Series:
    """R# of each method's seed-mean accuracy curve (index: method label; NaN: never reached)."""
    out = {}
    for method, group in runs.groupby("method", sort=False):
        mean = pd.concat([_curve(p).set_index("round")["global_acc"] for p in group["path"]], axis=1).mean(
            axis=1
        )
        out[method] = _round_reached(mean.index, mean.to_numpy(), target)
    return pd.Series(out, name="rounds_to_target")


def table7_hours(
    runs: pd.DataFrame,
    targets=(70.0, 75.0, 78.0, 80.0),
    model: CommCostModel | None = None,
) -> pd.DataFrame:
    """Table 7: per method, the simulated hours to reach each target accuracy (NaN: never reached)."""
    model = model or CommCostModel()
    rows = []
    for method, group in runs.groupby("method", sort=False):
        algorithm = group["config.algorithm.name"].iloc[0]
        steps = int(group["config.train.local_steps"].iloc[0]) if algorithm in GOSSIPING else 0
        row = {"method": method, "round (h)": model.round_seconds(steps) / 3600}
        for target in targets:
            r = rounds_to_target_of_mean(group, target).iloc[0]
            row[f"hours_to_{target:g}"] = math.nan if math.isnan(r) else model.hours_to_target(r, steps)
        rows.append(row)
    return pd.DataFrame(rows)


def table1_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§8 C1, C2, C4 and C13 on Table 1's method labels."""
    return [
        Claim(
            "AFGA beats FedAMSGrad in accuracy", "acc_last5", "AFGA", ">", "FedAMSGrad", source="Table 1, C1"
        ),
        Claim("AFGA beats FedAdam in accuracy", "acc_last5", "AFGA", ">", "FedAdam", source="Table 1, C1"),
        Claim(
            "CAFGA is at least as accurate as AFGA", "acc_last5", "CAFGA", ">=", "AFGA", source="Table 1, C2"
        ),
        Claim(
            "CAFGA reaches the target in fewer rounds than FedAMSGrad",
            "rounds_to_target",
            "CAFGA",
            "<",
            "FedAMSGrad",
            source="Table 1, C4",
        ),
        Claim(
            "the adaptive server beats the SGD server (FedAMSGrad > FedAvg)",
            "acc_last5",
            "FedAMSGrad",
            ">",
            "FedAvg",
            source="Table 1, C13",
        ),
        Claim(
            "FedProx ≈ FedAvg (within 1 point)",
            "acc_last5",
            "FedProx (μ=0.01)",
            "≈",
            "FedAvg",
            tolerance=1.0,
            source="Table 1, C13",
        ),
    ]


def table4_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§8 C5: gossip alone hurts, gossip + re-sampling helps, clustering helps more."""
    only, gossip = "FedAMSGrad only", "+ Gossip"
    afga, cafga = "+ Gossip + Re-sampling (AFGA)", "+ Gossip + Re-sampling + Clustered (CAFGA)"
    return [
        Claim(
            "gossip alone lowers FedAMSGrad's accuracy", "acc_last5", gossip, "<", only, source="Table 4, C5"
        ),
        Claim(
            "gossip + re-sampling (AFGA) beats FedAMSGrad", "acc_last5", afga, ">", only, source="Table 4, C5"
        ),
        Claim("clustering (CAFGA) beats AFGA", "acc_last5", cafga, ">", afga, source="Table 4, C5"),
    ]


def table5_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§8 C9 for the setting's method (AFGA or CAFGA): similar accuracy when only the selected clients gossip
    (its variant "<method> (a)"), but more rounds to the target."""
    claims = []
    for method in (m.label for m in experiment.method_list() if not m.label.endswith(" (a)")):
        adapted = f"{method} (a)"
        claims += [
            Claim(
                f"{adapted} is within 2.2 points of {method}",
                "acc_last5",
                adapted,
                "≈",
                method,
                tolerance=2.2,
                source="Table 5, C9",
            ),
            Claim(
                f"{adapted} needs more rounds to the target than {method}",
                "rounds_to_target",
                adapted,
                ">",
                method,
                source="Table 5, C9",
            ),
        ]
    return claims


def topology_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """§8 C6 on Fig. 1's methods that ran: a smaller spectral gap ρ gives a higher accuracy, for each
    algorithm (consecutive labels of one algorithm, in order of increasing ρ)."""
    ran = set(runs["method"])
    labels = [m.label for m in experiment.method_list() if m.label in ran]
    claims = []
    for denser, sparser in zip(labels[:-1], labels[1:], strict=True):
        if denser.split(",")[0] == sparser.split(",")[0]:
            claims.append(
                Claim(f"{denser} beats {sparser}", "acc_last5", denser, ">", sparser, source="Fig. 1, C6")
            )
    return claims


def table7_claims(target: float = 78.0) -> list[Claim]:
    """§8 C11 on ``table7_hours`` (computed from the seed-mean curves, not per run: check it on
    ``report.exact_results(hours, dataset)``): CAFGA reaches ``target`` in fewer simulated hours than
    FedAMSGrad (its gossip cost is repaid by fewer rounds)."""
    return [
        Claim(
            f"CAFGA reaches {target:g} % in fewer simulated hours than FedAMSGrad",
            f"hours_to_{target:g}",
            "CAFGA",
            "<",
            "FedAMSGrad",
            source="Table 7, C11",
        )
    ]


def seed_mean_rounds_column(runs: pd.DataFrame, target: float) -> dict[str, dict[str, str]]:
    """The column "R# of the seed-mean curve" (``paper_table(columns=...)``): each method's R# of its
    seed-mean curve, "<rounds>+" when never reached within the run's rounds."""
    mean_r = rounds_to_target_of_mean(runs, target)
    rounds = runs["config.train.rounds"].max()
    cells = {m: f"{rounds}+" if pd.isna(r) else f"{r:.0f}" for m, r in mean_r.items()}
    return {"R# of the seed-mean curve": cells}


BUNDLE = register_paper(
    Paper(
        "afga",
        experiments.ALL,
        left_out={
            "quick": {
                n: "not run at quick (2 CPU cores): run at paper"
                for n in experiments.ALL
                if n not in experiments.QUICK
            },
            "smoke": {
                "afga_table6_resnet18": (
                    "not run at smoke: ResNet-18 evaluations take minutes on a CPU; run at quick or paper"
                )
            },
        },
        unavailable=lambda n: (
            experiments.NO_CIFAR100
            if n.startswith("afga_table2") and not stand_ins.present("cifar100")
            else None
        ),
        claim_builders={
            "afga_table1_s2": table1_claims,
            "afga_table4_components": table4_claims,
            "afga_table5_s2": table5_claims,
            "afga_fig1_topology": topology_claims,
        },
        readings_heading="AFGA and CAFGA",
    )
)
