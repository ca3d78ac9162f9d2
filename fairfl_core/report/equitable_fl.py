"""Equitable-FL reporting: per-round curves (accuracy, σ_Acc, client disagreement CD, NMI) with their
cumulative moving averages (Figures 2–6), the paper profile's choice of (η, μ) per method, the headline
comparison with FedProx and the §8 claims checklist, all computed from the runs.

CD (Eq. 9) at round k is computed for every method alike from what the runner stores: the test losses of the
round's participants (``rounds`` records: ``selected``) at the model evaluated after that round (``evals``:
``client_loss``; the experiments evaluate every round). Default: the mean of |f_i − f_j| over unordered pairs
(the text's definition); ``literal=True``: the printed double sum over C(r, 2). A table's CD is the CMA at
the last round, i.e. the mean over rounds (``cd_cma``). NMI comes from Equitable-FL's own diagnostics:
``nmi_mean`` averages the per-round NMI over the rounds with at least two planted clusters among the
participants, ``nmi_all_last`` is the all-clients figure at the last round.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from fairfl_core import metrics
from fairfl_core.experiments.papers import equitable_fl as experiments
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.report.bundle import Paper, paper_dataset, register_paper
from fairfl_core.report.claims import Claim, seed_outcome
from fairfl_core.report.results import load_diagnostics
from fairfl_core.report.tables import aggregate

__all__ = [
    "CLAIMS",
    "CURVES",
    "BUNDLE",
    "ablation_claims",
    "accuracy_claims",
    "best_of_grid",
    "headline",
    "plot_curves",
    "round_curves",
    "table2_claims",
    "with_equitable_metrics",
]

CURVES = {
    "global_acc": "test accuracy (%)",
    "sigma_acc": "σ_Acc",
    "cd": "client disagreement CD",
    "nmi": "NMI",
}


def round_curves(runs: pd.DataFrame, literal: bool = False) -> pd.DataFrame:
    """One row per (run, evaluated round ≥ 1): ``global_acc``, ``sigma_acc``, ``cd`` over the round's
    participants (NaN with fewer than 2), Equitable-FL's ``nmi`` / ``nmi_all`` (NaN for other methods), and
    each one's CMA (``<metric>_cma``, over the rounds so far)."""
    rows = []
    for run in runs.itertuples(index=False):
        store = RunStore(run.path)
        rounds = {r["round"]: r for r in store.records("rounds")}
        for rec in store.records("evals"):
            t = rec["round"]
            if t not in rounds:
                continue
            acc = np.asarray(rec[client_accuracy_key(rec)], dtype=float)
            participants = np.unique(rounds[t]["selected"])
            loss = np.asarray(rec["client_loss"], dtype=float)[participants]
            diag = rounds[t]["diagnostics"]
            rows.append(
                {
                    "method": run.method,
                    "dataset": run.dataset,
                    "seed": run.seed,
                    "hash": run.hash,
                    "round": t,
                    "global_acc": rec["global_acc"],
                    "sigma_acc": metrics.sigma_acc(acc, rec["global_acc"]),
                    "cd": metrics.client_disagreement(loss, literal) if len(loss) > 1 else np.nan,
                    "nmi": np.nan if diag.get("nmi") is None else diag["nmi"],
                    "nmi_all": np.nan if diag.get("nmi_all") is None else diag["nmi_all"],
                }
            )
    df = pd.DataFrame(rows).sort_values(["hash", "round"], kind="stable")
    for m in ("global_acc", "sigma_acc", "cd", "nmi"):
        df[f"{m}_cma"] = df.groupby("hash")[m].transform(metrics.cumulative_moving_average)
    return df.reset_index(drop=True)


def with_equitable_metrics(runs: pd.DataFrame, literal: bool = False) -> pd.DataFrame:
    """``runs`` plus ``cd_cma`` (the CD curve's CMA at the last round), ``nmi_mean`` (per-round NMI averaged
    over the rounds with ≥ 2 planted clusters present), ``nmi_raw_mean`` (every round, scikit-learn's 0 for
    one planted cluster), ``nmi_all_last`` and ``fallback_rounds`` (rounds that used a degenerate-case
    fallback); NaN where a method logs none."""
    curves = round_curves(runs, literal)
    cd = curves.groupby("hash")["cd"].mean()
    out = runs.assign(cd_cma=runs["hash"].map(cd))
    diags = load_diagnostics(runs)
    if "nmi_raw" not in diags:
        return out.assign(nmi_mean=np.nan, nmi_raw_mean=np.nan, nmi_all_last=np.nan, fallback_rounds=np.nan)
    diags = diags[diags["nmi_raw"].notna()].sort_values("round")
    by = diags.groupby("hash")
    return out.assign(
        nmi_mean=runs["hash"].map(by["nmi"].apply(lambda s: pd.to_numeric(s).mean())),
        nmi_raw_mean=runs["hash"].map(by["nmi_raw"].mean()),
        nmi_all_last=runs["hash"].map(by["nmi_all"].last() if "nmi_all" in diags else pd.Series(dtype=float)),
        fallback_rounds=runs["hash"].map(by["fallback_used"].sum()),
    )


def best_of_grid(runs: pd.DataFrame, metric: str = "global_acc") -> pd.DataFrame:
    """The paper profile's model selection: per dataset and paper row (``row``: the label before " ("),
    the (η, μ) label with the best seed-mean final ``metric``; its runs, relabelled to the row, with the
    chosen label in ``chosen``. Identity (up to the added columns) when each row has one label."""
    runs = runs.assign(row=runs["method"].str.split(" (", n=1, regex=False).str[0])
    means = runs.groupby(["dataset", "row", "method"], sort=False)[metric].mean().reset_index()
    best = means.loc[means.groupby(["dataset", "row"], sort=False)[metric].idxmax()]
    keep = runs.merge(best[["dataset", "method"]], on=["dataset", "method"])
    return keep.assign(chosen=keep["method"], method=keep["row"]).drop(columns="row")


def headline(runs: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """The quick profile's question, per dataset: is Equitable-FL's σ_Acc lower than FedProx's, at no lower
    accuracy, with an NMI close to 1 (≥ 0.9)? Seed-aware outcomes (``claims.seed_outcome``) and the paper's
    relative σ_Acc change beside ours (``runs`` from ``with_equitable_metrics``)."""
    agg = aggregate(runs, ("global_acc", "sigma_acc", "nmi_mean"))
    rows = []
    for dataset in dict.fromkeys(agg["dataset"]):

        def stat(method, metric, dataset=dataset):
            hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method) & (agg["metric"] == metric)]
            return (
                None
                if hit.empty
                else (float(hit["mean"].iloc[0]), float(hit["std"].iloc[0]), int(hit["n"].iloc[0]))
            )

        eq_s, fp_s = stat("Equitable-FL", "sigma_acc"), stat("FedProx", "sigma_acc")
        eq_a, fp_a = stat("Equitable-FL", "global_acc"), stat("FedProx", "global_acc")
        nmi = stat("Equitable-FL", "nmi_mean")
        if None in (eq_s, fp_s, eq_a, fp_a):
            continue
        row = {
            "dataset": dataset,
            "σ_Acc FedProx": fp_s[0],
            "σ_Acc Equitable-FL": eq_s[0],
            "σ_Acc change %": 100 * (eq_s[0] - fp_s[0]) / fp_s[0],
            "lower σ_Acc": seed_outcome("<", eq_s, fp_s).result,
            "Acc FedProx": fp_a[0],
            "Acc Equitable-FL": eq_a[0],
            "no lower accuracy": seed_outcome(">=", eq_a, fp_a).result,
            "NMI (mean over rounds)": np.nan if nmi is None else nmi[0],
            "NMI ≥ 0.9": "missing" if nmi is None else seed_outcome(">=", nmi, 0.9).result,
        }
        if paper is not None and len(paper):
            cell = paper[(paper["dataset"] == dataset) & (paper["metric"] == "sigma_acc")].set_index("method")
            if {"FedProx", "Equitable-FL"} <= set(cell.index):
                p_fp, p_eq = cell.loc["FedProx", "paper_value"], cell.loc["Equitable-FL", "paper_value"]
                row["paper σ_Acc FedProx → Equitable-FL"] = f"{p_fp:g} → {p_eq:g}"
                row["paper σ_Acc change %"] = 100 * (p_eq - p_fp) / p_fp
        rows.append(row)
    return pd.DataFrame(rows)


FEDERATED = ("FedProx", "Cluster2", "Pow-d", "FairFed", "GIFAIR")
# where each claim comes from: the paper's sentence (quoted, with its section) or the package's observation
S53 = (
    '§5.3: "The average accuracy and σ_Acc are presented in Tables 2 and 3 [...]. Our results indicate that '
    "the Equitable-FL significantly outperforms other baselines, except the FEMNIST dataset "
    '(regarding average accuracy)."'
)
S53_CD = (
    '§5.3: "Equitable-FL consistently outperforms other baselines in reducing client disagreement in highly '
    'heterogeneous settings, as illustrated in Figure 3."'
)
FIG2 = 'Fig. 2 caption: "Our observations reveal that the NMIs are close to 1"'
S54_C = (
    '§5.4: "with correct cluster assignment, i.e., C = 3, our framework significantly reduces the '
    'disagreement among clients as well as improves the test accuracy."'
)
S54_E = (
    '§5.4: "with increasing local iterations, our algorithm consistently manages to reduce the disagreement '
    'among [the source text breaks off here]"'
)
OBSERVATION = "the package's observation (spec §8's reading of the paper's {}, not a sentence of the paper)"
T2_OBS = OBSERVATION.format("Table 2")


def _is_femnist(dataset: str) -> bool:
    return "femnist" in dataset.lower()


CLAIMS = (
    *(
        Claim(f"C1: Equitable-FL has a lower σ_Acc than {m}", "sigma_acc", "Equitable-FL", "<", m, source=S53)
        for m in FEDERATED
    ),
    *(
        Claim(
            f"C2: Equitable-FL has a lower CD (CMA) than {m}", "cd_cma", "Equitable-FL", "<", m, source=S53_CD
        )
        for m in FEDERATED
    ),
    Claim(
        "C3: Equitable-FL's σ_Acc is below Centralized's",
        "sigma_acc",
        "Equitable-FL",
        "<",
        "Centralized",
        source=T2_OBS,
    ),
    *(
        Claim(f"C6: Centralized's accuracy > {m}'s", "global_acc", "Centralized", ">", m, source=T2_OBS)
        for m in (*FEDERATED, "Equitable-FL")
    ),
    *(
        Claim(f"C7: FairFed's σ_Acc is above {m}'s", "sigma_acc", "FairFed", ">", m, source=T2_OBS)
        for m in ("FedProx", "Cluster2", "Pow-d", "GIFAIR", "Equitable-FL")
    ),
    Claim(
        "C8: GIFAIR ≈ FedProx in accuracy (±0.3)", "global_acc", "GIFAIR", "≈", "FedProx", 0.3, source=T2_OBS
    ),
    Claim("C8: GIFAIR ≈ FedProx in σ_Acc (±1)", "sigma_acc", "GIFAIR", "≈", "FedProx", 1.0, source=T2_OBS),
    Claim("C9: Cluster2 raises σ_Acc over FedProx", "sigma_acc", "Cluster2", ">", "FedProx", source=T2_OBS),
    Claim("C9: Pow-d raises σ_Acc over FedProx", "sigma_acc", "Pow-d", ">", "FedProx", source=T2_OBS),
    Claim(
        "C11: activation clustering recovers the planted clusters (NMI ≥ 0.9)",
        "nmi_mean",
        "Equitable-FL",
        ">=",
        0.9,
        source=FIG2,
    ),
)


def accuracy_claims(datasets) -> list[Claim]:
    """§5.3's accuracy claim as written: Equitable-FL's accuracy above every federated baseline's on each
    dataset but FEMNIST (C4), and the package's reading of the FEMNIST exception (C5: Cluster2 above
    Equitable-FL there, Table 2's only such cell)."""
    out = []
    for d in dict.fromkeys(datasets):
        if _is_femnist(d):
            out.append(
                Claim(
                    "C5: Cluster2's accuracy > Equitable-FL's (FEMNIST)",
                    "global_acc",
                    "Cluster2",
                    ">",
                    "Equitable-FL",
                    dataset=d,
                    source=T2_OBS,
                )
            )
        else:
            out += [
                Claim(
                    f"C4: Equitable-FL's accuracy > {m}'s",
                    "global_acc",
                    "Equitable-FL",
                    ">",
                    m,
                    dataset=d,
                    source=S53,
                )
                for m in FEDERATED
            ]
    return out


def table2_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C1–C9 and C11 of the checklist on Table 2's or Table 3's runs (``with_equitable_metrics``), each with
    its source; C4 (every dataset but FEMNIST) and C5 (FEMNIST only) per dataset; C10 (seed spread) is the
    ``value_std`` column. Without runs (no ``dataset`` column) the datasets are the paper's column of
    ``experiment``."""
    datasets = runs["dataset"] if "dataset" in runs else [paper_dataset(experiment)]
    return [*CLAIMS, *accuracy_claims(datasets)]


def ablation_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C12–C14 on the ablation runs (labels ``C=…`` with an optional `` (r=…)``, ``E=…``, ``μ=…``): C = 3
    gives the best accuracy and the lowest σ_Acc and CD (within each number of participants r); larger E
    lowers CD; larger μ lowers CD and σ_Acc but costs accuracy (the largest value against the smallest)."""
    methods = list(dict.fromkeys(runs["method"]))
    claims = []
    cs = [m for m in methods if m.startswith("C=")]
    for three in (m for m in cs if m.split()[0] == "C=3"):
        suffix = three[3:]
        for other in (m for m in cs if m != three and m[3:] == suffix):
            claims += [
                Claim(
                    f"C12: {three} has a higher accuracy than {other}",
                    "global_acc",
                    three,
                    ">",
                    other,
                    source=S54_C,
                ),
                Claim(
                    f"C12: {three} has a lower σ_Acc than {other}",
                    "sigma_acc",
                    three,
                    "<",
                    other,
                    source=OBSERVATION.format("Table 4 caption"),
                ),
                Claim(f"C12: {three} has a lower CD than {other}", "cd_cma", three, "<", other, source=S54_C),
            ]
    mu_source = OBSERVATION.format("Table 5 caption; the §5.4 text on μ is cut off in the source")
    for prefix, tag in (("E=", "C13"), ("μ=", "C14")):
        grid = [m for m in methods if m.startswith(prefix)]
        if len(grid) > 1:
            lo, hi = grid[0], grid[-1]
            source = S54_E if tag == "C13" else mu_source
            claims.append(
                Claim(f"{tag}: {hi} has a lower CD than {lo}", "cd_cma", hi, "<", lo, source=source)
            )
            if tag == "C14":
                claims += [
                    Claim(f"C14: {hi} has a lower σ_Acc than {lo}", "sigma_acc", hi, "<", lo, source=source),
                    Claim(
                        f"C14: {hi} has a lower accuracy than {lo}", "global_acc", hi, "<", lo, source=source
                    ),
                ]
    return claims


def plot_curves(curves: pd.DataFrame, metric: str, title: str = "") -> Figure:
    """The CMA of ``metric`` against the round, one panel per dataset, one line per method (mean over seeds,
    band: the seeds' spread), as the paper's Figures 2–6."""
    datasets = list(dict.fromkeys(curves["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4), squeeze=False)
    data = curves.dropna(subset=[f"{metric}_cma"])
    for ax, dataset in zip(axes[0], datasets, strict=True):
        sns.lineplot(
            data=data[data["dataset"] == dataset],
            x="round",
            y=f"{metric}_cma",
            hue="method",
            errorbar="sd",
            ax=ax,
        )
        ax.set_title(dataset, fontsize=9)
        ax.set_ylabel(f"{CURVES.get(metric, metric)} (CMA)")
        ax.legend(fontsize=7)
    fig.suptitle(title or CURVES.get(metric, metric))
    fig.tight_layout()
    return fig


_TABLES = tuple(f"equitable_table{t}_{k}" for t in (2, 3) for k in experiments.SETTINGS)
_QUICK_LEFT_OUT = {
    "2": "not run at this profile (quick): the 5-conv and FEMNIST CNNs do not fit 25 minutes on 2 CPU cores",
    "3": "not run at this profile (quick): ResNet-18 needs a GPU (minutes per round on 2 CPU cores); its "
    "claims are checked at the paper profile",
}
BUNDLE = register_paper(
    Paper(
        "equitable_fl",
        _TABLES,
        left_out={"quick": {n: _QUICK_LEFT_OUT[n[15]] for n in _TABLES if n not in experiments.QUICK_TABLES}},
        claim_builders={
            "equitable_table2_": table2_claims,
            "equitable_table3_": table2_claims,
            "equitable_table4_": ablation_claims,
            "equitable_table5_": ablation_claims,
        },
        readings_heading="Equitable-FL",
    )
)
