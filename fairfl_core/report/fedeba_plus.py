"""FedEBA+'s claims per table (Table 1, Table 3, Tables 7/15/16, Fig. 9, Fig. 14, App. M) as ``Claim`` lists
on the labels of its experiments, the appendix's tables that are metrics of runs (Tables 17–19), and the
Fig. 1 toy example (App. I.1) with its claims."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fairfl_core import metrics
from fairfl_core.algorithms.fedeba import figure1_toy, toy_losses
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.papers.fedeba_plus import TABLE1
from fairfl_core.experiments.papers.fedeba_plus_appendix import (
    OURS,
    TABLE9,
    TABLE10,
    TABLE11,
    TABLE13,
    client_optimum_losses,
)
from fairfl_core.experiments.profiles import Experiment, get_experiment
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.report.bundle import Paper, paper_rows, register_paper
from fairfl_core.report.claims import PAPER, Claim
from fairfl_core.report.paper import load_paper_results, printed

__all__ = [
    "BUNDLE",
    "ablation_claims",
    "annealing_claims",
    "appendix_claims",
    "dirichlet_claims",
    "fairer_than_fedavg",
    "figure1_claims",
    "figure1_points",
    "figure1_table",
    "sensitivity_claims",
    "table1_claims",
    "theta_claims",
    "with_cv_improvement",
    "with_faa",
]


def fairer_than_fedavg(labels, source: str) -> list[Claim]:
    """For each method label: a lower client-accuracy variance than FedAvg at no lower global accuracy."""
    return [
        *(
            Claim(f"{m} has a lower variance than FedAvg", "var", m, "<", "FedAvg", source=source)
            for m in labels
        ),
        *(
            Claim(
                f"{m} has no lower global accuracy than FedAvg",
                "global_acc",
                m,
                ">=",
                "FedAvg",
                source=source,
            )
            for m in labels
        ),
    ]


def with_cv_improvement(runs: pd.DataFrame, reference: str = "FedAvg") -> pd.DataFrame:
    """``runs`` plus ``cv_improvement`` (Table 18, in %): 100 (C_v^ref − C_v) / C_v^ref of each run against
    the mean C_v of the ``reference`` method's runs on the same dataset (NaN where it has none)."""
    ref = runs[runs["method"] == reference].groupby("dataset")["cv"].mean()
    improvement = [
        100 * metrics.cv_improvement(cv, ref[d]) if d in ref and pd.notna(cv) else np.nan
        for d, cv in zip(runs["dataset"], pd.to_numeric(runs["cv"]), strict=True)
    ]
    return runs.assign(cv_improvement=improvement)


def with_faa(runs: pd.DataFrame, local_steps: int) -> pd.DataFrame:
    """``runs`` plus ``faa`` (Table 17): ``metrics.faa`` of the clients' test losses at the last evaluation
    (the personalised models' for personalised methods) against F_i(x_i*) = ``client_optimum_losses`` of
    the run's data, model and seed (a cached ``local`` run beside it), or 0 with ``local_steps = 0``."""
    optimum: dict[str, np.ndarray] = {}
    values = []
    for path in runs["path"]:
        store = RunStore(path)
        last = store.records("evals")[-1]
        loss = np.asarray(last[client_accuracy_key(last).replace("_acc", "_loss")], dtype=float)
        if not local_steps:
            values.append(metrics.faa(loss, np.zeros_like(loss)))
            continue
        config = store.config()
        key = json.dumps([config[k] for k in ("data", "model", "seed")] + [config["train"]], sort_keys=True)
        if key not in optimum:
            optimum[key] = client_optimum_losses(
                ExperimentConfig.from_dict(config), local_steps, Path(path).parent
            )
        values.append(metrics.faa(loss, optimum[key]))
    return runs.assign(faa=values)


def appendix_claims() -> dict[str, list]:
    """The appendix's claims per table as ``report.Claim`` lists, on the method labels of the appendix's
    experiments (Tables 17–19: on Table 1's labels, against the baselines those tables print)."""

    def beats(metric, what, methods, source, op="<", rows=None):
        return [
            Claim(f"FedEBA+ has a {what} than {m.label}", metric, OURS, op, m.label, source=source)
            for m in methods
            if m.label != OURS and (rows is None or m.paper_row in rows)
        ]

    in_17, in_18_19 = ("FedAvg", "q-FFL"), ("FedAvg", "q-FFL", "FedMGDA+", "PropFair", "TERM")
    ours = paper_rows(get_experiment("fedeba_table9_mlp"))  # label -> row below
    ours_row = next(row for row, label in ours.items() if label == OURS)

    def table9(method: str, metric: str) -> str:
        return f"{printed('fedeba_plus', 'Table 9', 'CIFAR-10', method, metric)[0]:.2f}"

    def change(metric: str) -> str:
        return f"Table 9 ({table9('FedAvg', metric)} → {table9(ours_row, metric)})"

    return {
        "Table 9": [
            *beats(
                "std",
                "lower client-accuracy std",
                TABLE9,
                f"Table 9 and App. M text ({table9(ours_row, 'std')} lowest)",
            ),
            Claim(
                "FedEBA+ raises the worst-5% accuracy over FedAvg",
                "worst5",
                OURS,
                ">",
                "FedAvg",
                source=change("worst5"),
            ),
            Claim(
                "FedEBA+ has no lower global accuracy than FedAvg",
                "global_acc",
                OURS,
                ">=",
                "FedAvg",
                source=change("global_acc"),
            ),
        ],
        "Table 10": [
            *beats("var", "lower variance with momentum", TABLE10, "Table 10, C12"),
            *beats("global_acc", "higher global accuracy with momentum", TABLE10, "Table 10, C12", ">"),
        ],
        "Table 11": [
            *beats("var", "lower variance with FedVARP", TABLE11, "Table 11, C12"),
            *beats("global_acc", "higher global accuracy with FedVARP", TABLE11, "Table 11, C12", ">"),
        ],
        "Table 13": [
            *beats("var", "lower variance under label noise", TABLE13, "Table 13, C14"),
            *beats("global_acc", "higher global accuracy under label noise", TABLE13, "Table 13, C14", ">"),
        ],
        "Table 17": beats("faa", "lower FAA", TABLE1, "Table 17, C15", rows=in_17),
        "Table 18": beats("cv", "lower C_v", TABLE1, "Table 18, C15", rows=in_18_19),
        "Table 19": [
            *beats("angle", "smaller angle to the all-ones vector", TABLE1, "Table 19, C15", rows=in_18_19),
            *beats("kl", "smaller KL(a‖u)", TABLE1, "Table 19, C15", rows=in_18_19),
        ],
    }


def table1_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Table 1's claims (FedEBA+ §5.2) on the labels of ``fedeba_table1_fmnist``: FedEBA+ against FedAvg and
    every baseline, Prac-FedEBA+ against FedAvg, and FedEBA+'s own row against the paper's numbers (cited in
    ``source`` from ``paper_results/fedeba_plus.csv``, Fashion-MNIST; CIFAR-10)."""
    row = paper_rows(get_experiment("fedeba_table1_fmnist"))
    ours, prac = row["FedEBA+"], row["Prac-FedEBA+"]
    baselines = [
        m.label
        for m in get_experiment("fedeba_table1_fmnist").method_list()
        if m.label not in (ours, "FedAvg")
    ]
    printed = load_paper_results("fedeba_plus").query("table == 'Table 1'")
    value = printed.set_index(["dataset", "method", "metric"])["value"]
    spread = printed.set_index(["dataset", "method", "metric"])["std"]
    columns = ("FashionMNIST", "CIFAR-10")

    def change(metric: str, names: tuple[str, str] = ("", "")) -> str:
        return "; ".join(
            f"{n}{value[c, 'FedAvg', metric]:.2f} → {value[c, 'FedEBA+', metric]:.2f}"
            for n, c in zip(names, columns, strict=True)
        )

    def prac_cells(metric: str) -> str:
        return "; ".join(f"{value[c, 'Prac-FedEBA+', metric]:.2f}" for c in columns)

    stds = ", ".join(f"± {spread[c, 'FedEBA+', 'var']:.2f}" for c in columns)
    return [
        Claim(
            "FedEBA+ has a lower client-accuracy variance than FedAvg",
            "var",
            ours,
            "<",
            "FedAvg",
            source=f"Table 1 ({change('var', ('FMNIST ', 'CIFAR-10 '))})",
        ),
        Claim(
            "FedEBA+ has no lower global accuracy than FedAvg",
            "global_acc",
            ours,
            ">=",
            "FedAvg",
            source=f"Table 1 ({change('global_acc', ('FMNIST ', 'CIFAR-10 '))})",
        ),
        Claim(
            "FedEBA+ raises the worst-5% accuracy over FedAvg",
            "worst5",
            ours,
            ">",
            "FedAvg",
            source=f"Table 1 ({change('worst5')})",
        ),
        Claim(
            "FedEBA+ does not lower the best-5% accuracy",
            "best5",
            ours,
            ">=",
            "FedAvg",
            source=f"Table 1 ({change('best5')})",
        ),
        *fairer_than_fedavg([prac], f"Table 1 ({prac_cells('var')} and {prac_cells('global_acc')})"),
        *(
            Claim(f"FedEBA+ has a lower variance than {b}", "var", ours, "<", b, source="Table 1, C4")
            for b in baselines
        ),
        *(
            Claim(
                f"FedEBA+ has a higher global accuracy than {b}",
                "global_acc",
                ours,
                ">",
                b,
                source="Table 1, C4",
            )
            for b in baselines
        ),
        Claim(
            "FedEBA+ reaches the paper's global accuracy (within 1 point)",
            "global_acc",
            ours,
            "≈",
            PAPER,
            tolerance=1.0,
            source="Table 1, row FedEBA+",
        ),
        Claim(
            "FedEBA+'s variance matches the paper's (within 2 paper std)",
            "var",
            ours,
            "≈",
            PAPER,
            tolerance=8.8,
            source=f"Table 1, row FedEBA+ ({stds})",
        ),
    ]


def _fedeba_plus_labels(experiment: Experiment) -> list[str]:
    """The labels of the experiment's FedEBA+ runs, in its order."""
    return [m.label for m in experiment.method_list() if m.algorithm == "fedeba+"]


def theta_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Table 3's claims on FedEBA+ at increasing fair angles θ."""
    theta = _fedeba_plus_labels(experiment)
    return [
        *(
            Claim(
                f"{b} costs no more extra communication than {a}", "extra_cost", b, "<=", a, source="Table 3"
            )
            for a, b in zip(theta[:-1], theta[1:], strict=True)
        ),
        Claim(
            "θ=0° aligns gradients every round: 50% extra cost",
            "extra_cost",
            theta[0],
            "≈",
            50.0,
            tolerance=1e-9,
            source="Table 3",
        ),
        Claim(
            "θ=90° never aligns gradients: no extra cost",
            "extra_cost",
            theta[-1],
            "≈",
            0.0,
            tolerance=1e-9,
            source="Table 3; φ ≤ 90° for non-negative losses",
        ),
        *fairer_than_fedavg(theta, "Tables 1 and 3"),
    ]


def ablation_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Table 15's claims: EBA aggregation alone (①), the alignment alone (②) and both."""
    row = paper_rows(experiment)
    one, two, both = row["FedAvg+①"], row["FedAvg+②"], row["FedAvg+①+②"]
    return [
        Claim(
            "EBA aggregation (①) lowers the variance of FedAvg", "var", one, "<", "FedAvg", source="Table 15"
        ),
        Claim(
            "EBA aggregation (①) does not lower FedAvg's accuracy",
            "global_acc",
            one,
            ">=",
            "FedAvg",
            source="Table 15 (C2)",
        ),
        Claim(
            "the alignment (②) raises FedAvg's accuracy", "global_acc", two, ">", "FedAvg", source="Table 15"
        ),
        Claim("① + ② has a lower variance than ① alone", "var", both, "<", one, source="Table 15 (C7)"),
        Claim("① + ② has a lower variance than ② alone", "var", both, "<", two, source="Table 15 (C7)"),
        Claim(
            "① + ② has a higher worst-5% accuracy than FedAvg",
            "worst5",
            both,
            ">",
            "FedAvg",
            source="Table 15",
        ),
        Claim("① lowers the variance more than ② (FMNIST)", "var", one, "<", two, source="Table 15 (C7)"),
    ]


def sensitivity_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Tables 7 and 16's claims on the (α, τ) variants of FedEBA+."""
    return [
        *fairer_than_fedavg(_fedeba_plus_labels(experiment), "Table 16 (C9)"),
        Claim(
            "a larger α lowers the variance (α=0.9 vs α=0)",
            "var",
            "FedEBA+ α=0.9, τ=0.1",
            "<",
            "FedEBA+ α=0, τ=0.1",
            source="Tables 7, 16 (C9)",
        ),
        Claim(
            "a smaller τ is fairer (τ=0.05 vs τ=5.0 at α=0.9)",
            "var",
            "FedEBA+ α=0.9, τ=0.05",
            "<",
            "FedEBA+ α=0.9, τ=5.0",
            source="Table 16, Remark 4.2 (C9)",
        ),
    ]


def annealing_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Fig. 9's claims: each annealing schedule of τ against a constant τ."""
    methods = [m for m in experiment.method_list() if m.algorithm == "fedeba+"]
    (constant,) = [m.label for m in methods if "tau_schedule" not in m.params]
    annealed = [m.label for m in methods if "tau_schedule" in m.params]
    return [
        Claim(f"{a} has a lower variance than a constant τ", "var", a, "<", constant, source="Fig. 9 (C17)")
        for a in annealed
    ] + [
        Claim(
            f"{a} keeps the accuracy of a constant τ (within 1 point)",
            "global_acc",
            a,
            "≈",
            constant,
            tolerance=1.0,
            source="Fig. 9 (C17)",
        )
        for a in annealed
    ]


def dirichlet_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """Fig. 14's claims under Dirichlet label skew."""
    return fairer_than_fedavg(["FedEBA+"], "Fig. 14 (C13)")


# -- Fig. 1: the toy example (App. I.1) ------------------------------------------------------------------
FIG1_TAU = 5.311  # puts EBA at the paper's x ≈ −0.1; the paper prints τ = 1, which gives x = −0.967
_FIG1_PAPER_ROW = {"FedAvg": "FedAvg", "q-FFL (paper's printed point)": "q-FFL", f"EBA (τ={FIG1_TAU})": "EBA"}


def _fig1_paper(method: str, metric: str) -> float:
    paper = load_paper_results("fedeba_plus")
    hit = paper[(paper["table"] == "Figure 1") & (paper["method"] == method) & (paper["metric"] == metric)]
    return float(hit["value"].iloc[0])


def figure1_points() -> dict[str, float]:
    """x_{t+1} of each aggregation on the toy (``algorithms.fedeba.figure1_toy``), plus the paper's printed
    q-FFL point, which the q-FedAvg formula does not give (it gives 8/21 ≈ 0.381)."""
    toy = figure1_toy(tau=FIG1_TAU)
    return {
        "FedAvg": toy["fedavg"],
        "q-FFL (formula, q=1)": toy["qffl"],
        "q-FFL (paper's printed point)": _fig1_paper("q-FFL", "x_next"),
        f"EBA (τ={FIG1_TAU})": toy["eba"],
        "EBA (τ=1, as printed)": figure1_toy(tau=1.0)["eba"],
    }


def figure1_table(points: dict[str, float]) -> pd.DataFrame:
    """Per point: x_{t+1} beside the paper's, the two losses, their gap and variance, and the entropy (bits)
    of the normalised losses (App. I.1, higher = fairer)."""
    rows = []
    for name, x in points.items():
        f1, f2 = toy_losses(x)
        paper_row = _FIG1_PAPER_ROW.get(name)
        rows.append(
            {
                "method": name,
                "x_{t+1}": x,
                "paper x_{t+1}": _fig1_paper(paper_row, "x_next") if paper_row else np.nan,
                "F_1": f1,
                "F_2": f2,
                "gap |F_1 - F_2|": abs(f1 - f2),
                "variance": np.var([f1, f2]),
                "entropy (bits)": metrics.entropy_of_normalised([f1, f2]),
                "paper entropy": _fig1_paper(paper_row, "entropy") if paper_row else np.nan,
            }
        )
    return pd.DataFrame(rows)


def figure1_claims(table: pd.DataFrame) -> pd.DataFrame:
    """App. I.1's claims, computed from ``figure1_table``: EBA's point, and the orderings of the loss
    variance and of the entropy (EBA fairest, FedAvg least fair)."""
    row = table.set_index("method")
    eba, qffl, printed = f"EBA (τ={FIG1_TAU})", "q-FFL (formula, q=1)", "q-FFL (paper's printed point)"

    def ordered(column, names, descending):
        values = [float(row.loc[n, column]) for n in names]
        holds = all((a > b) if descending else (a < b) for a, b in zip(values[:-1], values[1:], strict=True))
        return [round(v, 3) for v in values], holds

    claims = []
    x, target = float(row.loc[eba, "x_{t+1}"]), float(row.loc[eba, "paper x_{t+1}"])
    claims.append(
        (
            f"Fig. 1: EBA (τ={FIG1_TAU}) lands at the paper's x ≈ {target:g}",
            round(x, 4),
            target,
            abs(x - target) < 1e-3,
        )
    )
    values, holds = ordered("variance", (eba, qffl, "FedAvg"), descending=False)
    claims.append(("Fig. 1: loss variance EBA < q-FFL < FedAvg", values, None, holds))
    values, holds = ordered("entropy (bits)", (eba, printed, "FedAvg"), descending=True)
    paper = [float(row.loc[n, "paper entropy"]) for n in (eba, printed, "FedAvg")]
    claims.append(("App. I.1: entropy of the normalised losses EBA > q-FFL > FedAvg", values, paper, holds))
    return pd.DataFrame(
        [{"claim": c, "value": v, "paper": p, "result": "pass" if ok else "fail"} for c, v, p, ok in claims]
    )


BUNDLE = register_paper(
    Paper(
        "fedeba_plus",
        ("fedeba_table1_fmnist", "fedeba_table1_cifar10"),
        claim_builders={
            "fedeba_table1_": table1_claims,
            "fedeba_table3_theta": theta_claims,
            "fedeba_table15_ablation": ablation_claims,
            "fedeba_table16_sensitivity": sensitivity_claims,
            "fedeba_fig9_annealing": annealing_claims,
            "fedeba_fig14_dirichlet": dirichlet_claims,
        },
        readings_heading="FedEBA+",
    )
)
