"""Equitable-FL reporting: per-round curves (accuracy, σ_Acc, client disagreement CD, NMI) with their
cumulative moving averages (Figures 2–6), the paper profile's choice of (η, μ) per method, the headline
comparison with FedProx and the claims, all computed from the runs.

CD (Eq. 9) at round k is computed for every method alike from what the runner stores: the test losses of the
round's participants (``rounds`` records: ``selected``) at the model evaluated after that round (``evals``:
``client_loss``; the experiments evaluate every round). Default: the mean of |f_i − f_j| over unordered pairs
(the text's definition); ``literal=True``: the printed double sum over C(r, 2). A table's CD is the CMA at
the last round, i.e. the mean over rounds (``cd_cma``). NMI comes from Equitable-FL's own diagnostics:
``nmi_mean`` averages the per-round NMI over the rounds with at least two planted clusters among the
participants, ``nmi_all_last`` is the all-clients figure at the last round.

Claims. Each is the paper's (its sentence quoted with its place: the abstract, the contributions (§1.1),
§5.2–5.4, the captions of Figs. 2–4 and Table 2's printed numbers) or the package's observation
(``OBSERVATION`` and why), which is shown and never counted. The primary claims (decided at 95 % alone) are
C1, the abstract's "reducing the bias existing amongst various client clusters" (σ_Acc), and C2, the
contributions' "minimizes client disagreements" (CD), against every federated baseline in every column of
Tables 2 and 3; the other paper claims are Holm-adjusted within their page. On a stand-in a claim is decided
on direction only (indicative: its ``data`` says so); the CIFAR-10 column's stand-in is the MNIST column's
data, so its paper claims are "not checked (no offline data)", the direction in ``stand_in_result``
(``report.bundle.Paper.shares_data``). Fig. 2's NMI on the simple models (Fig. 2 shows ResNet-18) and the C
ablation at the wider r are observations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from fairfl_core import metrics
from fairfl_core.experiments.profiles import Experiment, get_experiment
from fairfl_core.experiments.store import RunStore, client_accuracy_key
from fairfl_core.papers.equitable_fl import TITLE
from fairfl_core.papers.equitable_fl import experiments as experiments
from fairfl_core.report.bundle import PageTable, Paper, PaperRun, paper_dataset, register_paper
from fairfl_core.report.claims import OBSERVATION, Claim, seed_outcome
from fairfl_core.report.results import load_diagnostics
from fairfl_core.report.stats import Sample
from fairfl_core.report.tables import aggregate, results_table

__all__ = [
    "ABLATIONS",
    "BUNDLE",
    "METRICS",
    "COLUMNS",
    "CURVES",
    "OBSERVED",
    "ablation_claims",
    "accuracy_claims",
    "best_of_grid",
    "fairness_claims",
    "ablation_tables",
    "derived",
    "headline",
    "observation",
    "page_tables",
    "plot_curves",
    "round_curves",
    "stand_in_datasets",
    "table2_claims",
    "with_equitable_metrics",
    "with_tuning",
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


def stand_in_datasets(runs: pd.DataFrame) -> set[str]:
    """The dataset labels of ``runs`` that are stand-ins (a ``stand_in`` set in their config): compared with
    the paper on direction only."""
    if "stand_in" not in runs or "dataset" not in runs:
        return set()
    flagged = runs["stand_in"].map(lambda s: isinstance(s, str) and bool(s))
    return set(runs.loc[flagged, "dataset"])


def _seeds(agg: pd.DataFrame, dataset: str, method: str, metric: str) -> Sample | None:
    """``method``'s per-seed ``metric`` on ``dataset`` with the runs' pairing keys (None: no value)."""
    hit = agg[(agg["dataset"] == dataset) & (agg["method"] == method) & (agg["metric"] == metric)]
    if hit.empty or not hit["values"].iloc[0]:
        return None
    row = hit.iloc[0]
    return Sample.of(row["values"], row["keys"], int(row["censored"]))


def headline(runs: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per dataset: is Equitable-FL's σ_Acc lower than FedProx's and its accuracy higher (§5.3: it
    "significantly outperforms other baselines"), with an NMI close to 1 (≥ 0.9)? Decided as the claims are
    (``claims.seed_outcome`` on the per-seed values: paired t where a seed's runs share data and model, else
    Welch's t; not decided under 3 seeds a side; ``runs`` from ``with_equitable_metrics``), against the
    paper's printed difference (``paper``) on a real dataset, on direction only on a stand-in. Beside them,
    the paper's direction on its printed means; its numbers and relative change only on a real dataset."""
    agg = aggregate(runs, ("global_acc", "sigma_acc", "nmi_mean"))
    stand_ins = stand_in_datasets(runs)
    rows = []
    for dataset in dict.fromkeys(agg["dataset"]):
        eq_s, fp_s = (_seeds(agg, dataset, m, "sigma_acc") for m in ("Equitable-FL", "FedProx"))
        eq_a, fp_a = (_seeds(agg, dataset, m, "global_acc") for m in ("Equitable-FL", "FedProx"))
        nmi = _seeds(agg, dataset, "Equitable-FL", "nmi_mean")
        if eq_s is None or fp_s is None or eq_a is None or fp_a is None:
            continue
        cells = (
            paper[paper["dataset"] == dataset].set_index(["method", "metric"])["paper_value"].to_dict()
            if paper is not None and len(paper)
            else {}
        )
        printed = all(
            (m, x) in cells for m in ("FedProx", "Equitable-FL") for x in ("sigma_acc", "global_acc")
        )
        real = printed and dataset not in stand_ins
        # the paper's printed Equitable-FL − FedProx, the size decided on (none on a stand-in: direction only)
        size = (
            {m: cells[("Equitable-FL", m)] - cells[("FedProx", m)] for m in ("sigma_acc", "global_acc")}
            if real
            else {}
        )
        row = {
            "dataset": dataset,
            "σ_Acc FedProx": fp_s.mean,
            "σ_Acc Equitable-FL": eq_s.mean,
            "σ_Acc change %": 100 * (eq_s.mean - fp_s.mean) / fp_s.mean,
            "lower σ_Acc": seed_outcome("<", eq_s, fp_s, effect=size.get("sigma_acc")).result,
            "Acc FedProx": fp_a.mean,
            "Acc Equitable-FL": eq_a.mean,
            "higher accuracy": seed_outcome(">", eq_a, fp_a, effect=size.get("global_acc")).result,
            "NMI (mean over rounds)": np.nan if nmi is None else nmi.mean,
            "NMI ≥ 0.9": "missing" if nmi is None else seed_outcome(">=", nmi, 0.9).result,
        }
        if printed:
            p_fp, p_eq = cells[("FedProx", "sigma_acc")], cells[("Equitable-FL", "sigma_acc")]
            row["paper: lower σ_Acc"] = seed_outcome("<", p_eq, p_fp).result
            p_acc = seed_outcome(">", cells[("Equitable-FL", "global_acc")], cells[("FedProx", "global_acc")])
            row["paper: higher accuracy"] = p_acc.result
            if real:
                row["paper σ_Acc FedProx → Equitable-FL"] = f"{p_fp:g} → {p_eq:g}"
                row["paper σ_Acc change %"] = 100 * (p_eq - p_fp) / p_fp
        rows.append(row)
    return pd.DataFrame(rows)


# -- the claims -----------------------------------------------------------------------------------------
# Each claim's source is the paper's words, quoted from its text with their place ("σ_Acc", "μ" and "C = 3"
# render its $\sigma_{Acc}$, $\mu$, $C = 3$; "[...]": words left out), or the package's observation with why.
FEDERATED = ("FedProx", "Cluster2", "Pow-d", "FairFed", "GIFAIR")
ABSTRACT = (
    'Abstract: "We assess the effectiveness of our proposed strategy against common baselines, demonstrating '
    "its efficacy in terms of reducing the bias existing amongst various client clusters and consequently "
    'ameliorating algorithmic bias against specific groups."'
)
CONTRIBUTION = (
    '§1.1 (contributions): "We have conducted thorough experiments to compare our framework against baseline '
    "algorithms using popular vision datasets like MNIST, CIFAR-10, CIFAR-100, and FEMNIST. Our findings "
    "demonstrate that our algorithm not only delivers high accuracy, but it also minimizes client "
    'disagreements, thus mitigating the algorithmic bias against certain groups."'
)
S53 = (
    '§5.3: "The average accuracy and σ_Acc are presented in Tables 2 and 3 as well as in Figures 4 and 5. '
    "Our results indicate that the Equitable-FL significantly outperforms other baselines, except the "
    'FEMNIST dataset (regarding average accuracy)."'
)
S53_CD = (
    '§5.3: "Our findings demonstrate that Equitable-FL consistently outperforms other baselines in reducing '
    'client disagreement in highly heterogeneous settings, as illustrated in Figure 3."'
)
S53_ARCH = (
    '§5.3: "Additionally, we show that the effectiveness of our framework in mitigating bias is independent '
    'of the model architecture used."'
)
S52_GIFAIR = (
    "§5.2 (on GIFAIR, given the clients' clusters): \"To conduct the experiments, we provided those details "
    "to the algorithm, and in that scenario as well, the algorithm's performance in reducing the "
    'disagreement between clients is inferior to ours."'
)
CAPTION = (
    "Equitable-FL consistently outperforms other baselines, invariant to the model architecture, datasets, "
    "and number of clusters."
)
FIG3 = f'Fig. 3 caption (CD; first row: the simple models, second row: ResNet-18): "{CAPTION}"'
FIG4 = f'Fig. 4 caption (σ_Acc; first row: the simple models, second row: ResNet-18): "{CAPTION}"'
FIG2 = (
    'Fig. 2 caption: "NMI comparison across various vision datasets using ResNet-18 model architectures. '
    "[...] Our observations reveal that the NMIs are close to 1, suggesting that the algorithm's performance "
    'aligns closely with the true cluster labels of the clients."'
)
S54_C = (
    '§5.4: "In Table 4, we show that with correct cluster assignment, i.e., C = 3, our framework '
    'significantly reduces the disagreement among clients as well as improves the test accuracy."'
)
S54_E = (
    '§5.4: "Additionally, we show in Table 4 that with increasing local iterations, our algorithm '
    'consistently manages to reduce the disagreement among clients, mitigating the effect of client drift."'
)
S54_MU = (
    '§5.4: "In Table 5, we show that if we increase the μ, the disagreement or the effect of client drift '
    'will reduce but at the price of accuracy."'
)
CENTRALIZED = (
    "confound: Centralized makes one pass over the pooled data per round, the federated methods E = 5 local "
    "epochs on each round's r clients (other steps and data per round)"
)
OBSERVED = {
    "C3": "a reading of Table 2, whose CIFAR-10 column alone prints Equitable-FL's σ_Acc below "
    f"Centralized's; no sentence of the paper states it; {CENTRALIZED}",
    "C6": 'a reading of Table 2, whose caption says only that the Centralized row is "just for reference"; '
    + CENTRALIZED,
    "C7": "a reading of Table 2 (FairFed's σ_Acc is the highest of every column); §5.2 says only that "
    "FairFed's weights can be negative and are clipped at 0",
    "C8": "a reading of Table 2 (GIFAIR's and FedProx's rows differ by at most 0.22 accuracy and 0.87 "
    "σ_Acc points)",
    "C9": "a reading of Table 2 (true in its MNIST, CIFAR-10 and CIFAR-100 columns, not in FEMNIST's)",
    "C5 (Table 3)": "Table 3's numbers are missing from the source text: Table 2's FEMNIST exception "
    "(Cluster2 above Equitable-FL) read into Table 3; §5.3's words: " + S53,
    "C11 (Table 2)": "variant: Fig. 2 shows the NMI of the ResNet-18 runs (Table 3's rows carry the "
    "verdict); these are the simple models; the paper's words: " + FIG2,
    "C12 σ_Acc": "Table 4's caption says that it tabulates σ_Acc; no sentence states that C = 3 lowers it",
    "C14 σ_Acc": "Table 5's caption says that it tabulates σ_Acc; §5.4 states the effect of μ on the "
    "disagreement and the accuracy only",
}


C8_MARGIN = (
    "the package's choice (the spec's): ±0.3 accuracy points and ±1 σ_Acc point, because Table 2's GIFAIR "
    "and FedProx rows lie within them in every column (at most 0.22 and 0.87 apart)"
)


def observation(why: str) -> str:
    """The source of a claim the paper does not state: :data:`OBSERVATION` and why."""
    return f"{OBSERVATION}: {why}"


# experiment -> (table, column key of experiments.SETTINGS): Tables 2 (simple models) and 3 (ResNet-18)
COLUMNS = {f"equitable_table{t}_{key}": (t, key) for t in (2, 3) for key in experiments.SETTINGS}


def _values(runs: pd.DataFrame, method: str, column: str) -> set:
    """The values of ``column`` in ``method``'s runs (empty without that column)."""
    if column not in runs or "method" not in runs:
        return set()
    return {v for v in runs.loc[runs["method"] == method, column] if not pd.isna(v)}


TUNED = (("η", "config.train.lr"), ("μ", "config.algorithm.params.mu"))


def with_tuning(claim: Claim, runs: pd.DataFrame) -> Claim:
    """``claim`` saying so in its text where its two methods ran at a different η or μ (a confound): the
    paper profile keeps each method's best cell of the grid, as the paper does ("present results for the best
    outcomes"); the short profiles share one η and μ. A method without a μ (Centralized) is compared on η."""
    if not isinstance(claim.than, str):
        return claim
    differ = []
    for name, column in TUNED:
        mine, theirs = _values(runs, claim.method, column), _values(runs, claim.than, column)
        if mine and theirs and mine != theirs:
            differ.append(name)
    if not differ:
        return claim
    verb = "differ" if len(differ) > 1 else "differs"
    return replace(
        claim, text=f"{claim.text} ({' and '.join(differ)} {verb}: each method's best of the grid)"
    )


def accuracy_claims(datasets: Iterable[str], table: int = 2) -> list[Claim]:
    """§5.3's accuracy claim as written: Equitable-FL's accuracy above every federated baseline's on each
    dataset but FEMNIST (C4), and the stated FEMNIST exception (C5: Cluster2 above Equitable-FL there,
    Table 2's only such cell; on Table 3, whose numbers are missing, the package's observation)."""
    out = []
    for d in dict.fromkeys(datasets):
        if _is_femnist(d):
            source = (
                f"{S53} (the exception: Table 2's FEMNIST column prints Cluster2's accuracy above "
                "Equitable-FL's)"
                if table == 2
                else observation(OBSERVED["C5 (Table 3)"])
            )
            out.append(
                Claim(
                    "C5: Cluster2's accuracy > Equitable-FL's (FEMNIST)",
                    "global_acc",
                    "Cluster2",
                    ">",
                    "Equitable-FL",
                    dataset=d,
                    source=source,
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


def _is_femnist(dataset: str) -> bool:
    return "femnist" in dataset.lower()


def fairness_claims(table: int) -> list[Claim]:
    """C1–C3 and C6–C9, C11 of Table ``table`` (2: simple models; 3: ResNet-18), each with its source. C1
    (the abstract) and C2 (the contributions) are primary."""
    sigma = f"{ABSTRACT}; {S53 if table == 2 else S53_ARCH}; {FIG4}"
    cd = f"{CONTRIBUTION}; {S53_CD if table == 2 else S53_ARCH}; {FIG3}"
    why = {k: observation(v) for k, v in OBSERVED.items()}
    nmi = (
        "C11: activation clustering recovers the planted clusters (NMI ≥ 0.9: the package's reading of "
        '"close to 1")'
    )
    return [
        *(
            Claim(
                f"C1: Equitable-FL has a lower σ_Acc than {m}",
                "sigma_acc",
                "Equitable-FL",
                "<",
                m,
                source=sigma,
                primary=True,
            )
            for m in FEDERATED
        ),
        *(
            Claim(
                f"C2: Equitable-FL has a lower CD (CMA) than {m}",
                "cd_cma",
                "Equitable-FL",
                "<",
                m,
                source=f"{CONTRIBUTION}; {S52_GIFAIR}" if m == "GIFAIR" and table == 2 else cd,
                primary=True,
            )
            for m in FEDERATED
        ),
        Claim(
            "C3: Equitable-FL's σ_Acc is below Centralized's",
            "sigma_acc",
            "Equitable-FL",
            "<",
            "Centralized",
            source=why["C3"],
        ),
        *(
            Claim(
                f"C6: Centralized's accuracy > {m}'s", "global_acc", "Centralized", ">", m, source=why["C6"]
            )
            for m in (*FEDERATED, "Equitable-FL")
        ),
        *(
            Claim(f"C7: FairFed's σ_Acc is above {m}'s", "sigma_acc", "FairFed", ">", m, source=why["C7"])
            for m in ("FedProx", "Cluster2", "Pow-d", "GIFAIR", "Equitable-FL")
        ),
        Claim(
            "C8: GIFAIR ≈ FedProx in accuracy (±0.3)",
            "global_acc",
            "GIFAIR",
            "≈",
            "FedProx",
            0.3,
            source=why["C8"],
            tolerance_source=C8_MARGIN,
        ),
        Claim(
            "C8: GIFAIR ≈ FedProx in σ_Acc (±1)",
            "sigma_acc",
            "GIFAIR",
            "≈",
            "FedProx",
            1.0,
            source=why["C8"],
            tolerance_source=C8_MARGIN,
        ),
        Claim(
            "C9: Cluster2 raises σ_Acc over FedProx",
            "sigma_acc",
            "Cluster2",
            ">",
            "FedProx",
            source=why["C9"],
        ),
        Claim("C9: Pow-d raises σ_Acc over FedProx", "sigma_acc", "Pow-d", ">", "FedProx", source=why["C9"]),
        Claim(
            nmi, "nmi_mean", "Equitable-FL", ">=", 0.9, source=FIG2 if table == 3 else why["C11 (Table 2)"]
        ),
    ]


def table2_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """The claims of Table 2's or Table 3's column ``experiment`` on its ``runs``
    (``with_equitable_metrics``): C1–C3, C6–C9, C11 (:func:`fairness_claims`), C4 on every dataset but
    FEMNIST and C5 on FEMNIST only (:func:`accuracy_claims`); C10 (seed spread) is the ``value_std``
    column. Two methods at different (η, μ) say so (:func:`with_tuning`). Without runs (no ``dataset``
    column) the datasets are the paper's column of ``experiment``."""
    table, _ = COLUMNS[experiment.name]
    datasets = runs["dataset"] if "dataset" in runs else [paper_dataset(experiment)]
    return [with_tuning(c, runs) for c in (*fairness_claims(table), *accuracy_claims(datasets, table))]


def _grid(methods: list[str], prefix: str) -> list[str]:
    """The labels ``<prefix><value>`` of ``methods`` in increasing value."""
    return sorted((m for m in methods if m.startswith(prefix)), key=lambda m: float(m[len(prefix) :]))


def ablation_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """C12–C14 on the ablation runs (labels ``C=…`` with an optional `` (r=…)``, ``E=…``, ``μ=…``).

    C12 (§5.4): C = 3 gives a higher accuracy and a lower CD than every other C at the paper's r = 4 (the
    lower σ_Acc: the package's observation); at the wider r the same comparisons are observations (a variant
    of the paper's setting). C13 (§5.4): each increase of E lowers the CD ("consistently"); C14 (§5.4): each
    increase of μ lowers the CD and the accuracy (the σ_Acc of the largest against the smallest μ: the
    package's observation). None is primary: §5.4 is neither the abstract nor the contributions."""
    methods = list(dict.fromkeys(runs["method"]))
    claims = []
    wider = f" (r={experiments.WIDER_R})"
    variant = (
        f"variant: r = {experiments.WIDER_R} participants per round, not the paper's r = 4 (40 % of 10 "
        "clients, where C = 4 = r would be uniform averaging); the r = 4 rows carry the verdict"
    )
    for suffix in ("", wider):
        grid = [m for m in methods if m.startswith("C=") and m.endswith(suffix) and (suffix or "(" not in m)]
        three = f"C=3{suffix}"
        if three not in grid:
            continue
        paper_source = f"{observation(variant)}; the paper's words: {S54_C}" if suffix else S54_C
        sigma_source = observation(OBSERVED["C12 σ_Acc"] + (f"; {variant}" if suffix else ""))
        for other in (m for m in grid if m != three):
            claims += [
                Claim(
                    f"C12: {three} has a higher accuracy than {other}",
                    "global_acc",
                    three,
                    ">",
                    other,
                    source=paper_source,
                ),
                Claim(
                    f"C12: {three} has a lower σ_Acc than {other}",
                    "sigma_acc",
                    three,
                    "<",
                    other,
                    source=sigma_source,
                ),
                Claim(
                    f"C12: {three} has a lower CD than {other}",
                    "cd_cma",
                    three,
                    "<",
                    other,
                    source=paper_source,
                ),
            ]
    epochs = _grid(methods, "E=")
    for lo, hi in zip(epochs, epochs[1:], strict=False):
        text = f"C13: {hi} has a lower CD than {lo} (more local steps per round, the same rounds)"
        claims.append(Claim(text, "cd_cma", hi, "<", lo, source=S54_E))
    mus = _grid(methods, "μ=")
    for lo, hi in zip(mus, mus[1:], strict=False):
        claims += [
            Claim(f"C14: {hi} has a lower CD than {lo}", "cd_cma", hi, "<", lo, source=S54_MU),
            Claim(f"C14: {hi} has a lower accuracy than {lo}", "global_acc", hi, "<", lo, source=S54_MU),
        ]
    if len(mus) > 1:
        lo, hi = mus[0], mus[-1]
        claims.append(
            Claim(
                f"C14: {hi} has a lower σ_Acc than {lo}",
                "sigma_acc",
                hi,
                "<",
                lo,
                source=observation(OBSERVED["C14 σ_Acc"]),
            )
        )
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


_TABLES = tuple(COLUMNS)
# why each column the quick profile leaves out is not run there, by experiment name
_QUICK_LEFT_OUT = {
    "equitable_table2_cifar100": "not run at this profile (quick): the 5-conv CNN does not fit 25 minutes on "
    "2 CPU cores",
    "equitable_table2_femnist": "not run at this profile (quick): the FEMNIST CNN (90 clients) does not fit "
    "25 minutes on 2 CPU cores",
    **{
        f"equitable_table3_{key}": "not run at this profile (quick): ResNet-18 needs a GPU (minutes per "
        "round on 2 CPU cores); its claims are checked at the paper profile"
        for key in experiments.SETTINGS
    },
}
METRICS = ("global_acc", "sigma_acc", "cd_cma", "nmi_mean")
"""The columns of the page's tables: accuracy, σ_Acc, CD (CMA at the last round) and Equitable-FL's NMI."""


def derived(name: str, runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """``runs`` with the paper's metrics (:func:`with_equitable_metrics`); at the paper profile, the best
    (η, μ) of each row's grid first (§5.2's "best outcome", :func:`best_of_grid`)."""
    return with_equitable_metrics(best_of_grid(runs) if profile == "paper" else runs)


def _stacked(page: PaperRun, names: list[str], paper: bool = True) -> pd.DataFrame:
    return pd.concat(
        [results_table(page.runs[n], metrics=METRICS, paper=page.paper[n] if paper else None) for n in names],
        ignore_index=True,
    )


def page_tables(page: PaperRun) -> dict[str, PageTable]:
    """Table 2 (every column run, beside the printed numbers), the headline comparison with FedProx, and
    Table 3 (ResNet-18) where it ran."""
    table2 = [n for n in page.runs if n.startswith("equitable_table2")]
    table3 = [n for n in page.runs if n.startswith("equitable_table3")]
    tables = {}
    if table2:
        runs = pd.concat([page.runs[n] for n in table2], ignore_index=True)
        printed = pd.concat([page.paper[n] for n in table2], ignore_index=True)
        tables["table2"] = PageTable(_stacked(page, table2), "Equitable-FL Table 2", tuple(table2))
        tables["headline"] = PageTable(headline(runs, printed), "Equitable-FL vs FedProx", tuple(table2))
    if table3:
        title = "Equitable-FL Table 3, ResNet-18"
        tables["table3"] = PageTable(_stacked(page, table3, paper=False), title, tuple(table3))
    return tables


def ablation_tables(page: PaperRun) -> dict[str, PageTable]:
    """One table per ablation of Tables 4–5 (no printed numbers beside them: the paper plots them)."""
    return {
        n: PageTable(_stacked(page, [n], paper=False), get_experiment(n).description, (n,)) for n in page.runs
    }


_BUILDERS = {
    "equitable_table2_": table2_claims,
    "equitable_table3_": table2_claims,
    "equitable_table4_": ablation_claims,
    "equitable_table5_": ablation_claims,
}
BUNDLE = register_paper(
    Paper(
        "equitable_fl",
        _TABLES,
        title=TITLE,
        left_out={"quick": {n: _QUICK_LEFT_OUT[n] for n in _TABLES if n not in experiments.QUICK_TABLES}},
        claim_builders=_BUILDERS,
        derive=derived,
        tables=page_tables,
        claims_title="Equitable-FL claims",
    )
)
ABLATIONS = register_paper(
    Paper(
        "equitable_fl_ablations",
        tuple(experiments.ABLATIONS),
        title=TITLE,
        claim_builders=_BUILDERS,
        printed_in="equitable_fl",
        derive=lambda name, runs, profile: with_equitable_metrics(runs),
        tables=ablation_tables,
        claims_title="Equitable-FL ablation claims",
        claims_name="ablation_claims",
    )
)
