"""The group-fairness notebook's bundle (issue #53): FedAvg, FairFed, GIFAIR-FL (Global, Per), q-FFL,
FedEBA+, Ditto and AFL on Adult (sex) and COMPAS (race), 5 clients under FairFed's Dirichlet over the
sensitive attribute (``papers/group_fairness/experiments.py``).

Every claim is the package's observation (no paper states them, so none enters a headline): whether FairFed
(Ezzeldin et al., AAAI 2023) and GIFAIR-FL (Yue, Nouiehed & Al Kontar) lower the absolute statistical parity
and equal opportunity differences of FedAvg's global model (``metrics/parity.py``; GIFAIR-FL-Per and Ditto:
of the clients' own models on their test data) and whether they keep its accuracy within a 1-point margin;
and whether the client-level fair methods (q-FFL, FedEBA+, AFL, Ditto) move the group gaps at all. Each is
decided on seeds by ``report.claims.check_claims`` (paired t: a seed's runs share the partition, the initial
model and the streams). FairFed's printed Adult and COMPAS numbers are not placed beside ours: its Table 2
runs FairFed with local reweighting, which fairfl does not implement (``papers/group_fairness/results.csv``).
"""

from __future__ import annotations

import math

import pandas as pd

from fairfl_core.algorithms.gifair_global import sensitive_group_ids
from fairfl_core.data.federated import FederatedDataset
from fairfl_core.experiments.profiles import Experiment
from fairfl_core.papers.group_fairness import experiments as E
from fairfl_core.report.bundle import Paper, register_paper
from fairfl_core.report.claims import OBSERVATION, Claim
from fairfl_core.report.tables import METRIC_LABELS, aggregate, format_mean_std

__all__ = [
    "ACCURACY_MARGIN",
    "CLAIM_METRICS",
    "GAP_METRICS",
    "TABLE_METRICS",
    "conclusion",
    "effects_table",
    "group_fairness_claims",
    "spread_table",
]

TABLE_METRICS = ("global_acc", "spd", "eod", "mean", "local_spd", "local_eod")
GAP_METRICS = ("spd_abs", "eod_abs")
CLAIM_METRICS = ("global_acc", "mean", "spd_abs", "eod_abs", "local_spd_abs", "local_eod_abs")
ACCURACY_MARGIN = 1.0  # points: "at what accuracy cost" is decided as non-inferiority by this margin
MARGIN_SOURCE = "the package's margin: 1 point of accuracy"


def _why(method: str) -> str:
    return f"{OBSERVATION}: no paper states it ({method} against FedAvg on a sensitive attribute)"


def _lowers(method: str, personal: bool) -> list[Claim]:
    """``method`` lowers FedAvg's |SPD| and |EOD| (its global model's on the official test set, or the
    clients' own models' on their test data for a personalised method) and keeps its accuracy within the
    margin."""
    prefix, where = ("local_", "of the clients' own models") if personal else ("", "of the global model")
    accuracy = "mean" if personal else "global_acc"
    return [
        Claim(
            f"{method} lowers the absolute EOD {where} against FedAvg",
            f"{prefix}eod_abs",
            method,
            "<",
            E.FEDAVG.label,
            source=_why(method),
        ),
        Claim(
            f"{method} lowers the absolute SPD {where} against FedAvg",
            f"{prefix}spd_abs",
            method,
            "<",
            E.FEDAVG.label,
            source=_why(method),
        ),
        Claim(
            f"{method} keeps the {'mean client' if personal else 'global'} accuracy within "
            f"{ACCURACY_MARGIN:g} point of FedAvg's",
            accuracy,
            method,
            ">=",
            E.FEDAVG.label,
            tolerance=ACCURACY_MARGIN,
            tolerance_source=MARGIN_SOURCE,
            source=_why(method),
        ),
    ]


def group_fairness_claims(experiment: Experiment, runs: pd.DataFrame) -> list[Claim]:
    """FairFed and GIFAIR-FL against FedAvg on |EOD|, |SPD| and accuracy; q-FFL, FedEBA+, AFL and Ditto on
    |EOD| (the package's observations, all)."""
    labels = [m.label for m in experiment.method_list()]
    claims = _lowers(E.FAIRFED.label, False) + _lowers(E.GIFAIR_GLOBAL.label, False)
    claims += _lowers(E.GIFAIR_PER.label, True)
    for method in labels:
        if method in {E.FEDAVG.label, E.FAIRFED.label, E.GIFAIR_GLOBAL.label, E.GIFAIR_PER.label}:
            continue
        personal = method in E.PERSONALISED
        where = "of the clients' own models" if personal else "of the global model"
        claims.append(
            Claim(
                f"{method} lowers the absolute EOD {where} against FedAvg",
                "local_eod_abs" if personal else "eod_abs",
                method,
                "<",
                E.FEDAVG.label,
                source=f"{OBSERVATION}: a client-level fair method on a group gap it does not target",
            )
        )
    return claims


def effects_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and method, the change against FedAvg of the seed means: global accuracy, |SPD|, |EOD|
    (global model on the official test set) and the clients' own models' mean accuracy, |SPD| and |EOD| on
    their test data, in points (negative gap changes narrow the gap)."""
    agg = aggregate(runs, CLAIM_METRICS)
    means = agg.pivot_table(index=["dataset", "method"], columns="metric", values="mean", sort=False)
    rows = []
    for (dataset, method), row in means.iterrows():
        base = means.loc[(dataset, E.FEDAVG.label)]
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                **{f"Δ {METRIC_LABELS[m]}": row[m] - base[m] for m in CLAIM_METRICS},
            }
        )
    return pd.DataFrame(rows)


def spread_table(data: FederatedDataset) -> pd.DataFrame:
    """How the sensitive attribute is spread over the clients of ``data``: per client its training samples of
    each group, its share of each group's training samples (%) and the group GIFAIR-FL's ``groups:
    sensitive`` puts it in (the one whose share is larger)."""
    counts = data.sensitive_counts("train")
    names = data.sensitive_names or ["group 0", "group 1"]
    shares = 100 * counts / counts.sum(axis=0)
    try:
        grouped = [names[g] for g in sensitive_group_ids(counts, names)]
    except ValueError:  # every client in one group: GIFAIR-FL refuses such a partition
        grouped = [names[int(g)] for g in shares.argmax(axis=1)]
    return pd.DataFrame(
        {
            "client": range(data.num_clients),
            "groups": " / ".join(names),
            "samples of group 0": counts[:, 0],
            "samples of group 1": counts[:, 1],
            "share of group 0 (%)": shares[:, 0],
            "share of group 1 (%)": shares[:, 1],
            "GIFAIR-FL group": grouped,
        }
    )


def _cell(table: pd.DataFrame, dataset: str, claim_start: str) -> pd.Series | None:
    hit = table[(table["dataset"] == dataset) & table["claim"].str.startswith(claim_start)]
    return None if hit.empty else hit.iloc[0]


def _said(row: pd.Series | None) -> str:
    if row is None:
        return "not checked"
    low, high = row.get("interval_low"), row.get("interval_high")
    interval = (
        f", 95 % interval of the difference [{low:+.2f}, {high:+.2f}]"
        if isinstance(low, float) and math.isfinite(low)
        else ""
    )
    return (
        f"{row.get('verdict', row['result'])} ({format_mean_std(row['value'], row['value_std'])} against "
        + (f"{format_mean_std(row['reference'], row['reference_std'])}{interval})")
    )


def conclusion(claims: pd.DataFrame) -> str:
    """The notebook's conclusion, generated from the claims table: per dataset, whether FairFed and
    GIFAIR-FL narrow |EOD| and |SPD| against FedAvg and what they cost in accuracy."""
    lines = []
    for dataset in dict.fromkeys(claims["dataset"]):
        lines.append(f"{dataset}:")
        for method in (E.FAIRFED.label, E.GIFAIR_GLOBAL.label, E.GIFAIR_PER.label):
            personal = method in E.PERSONALISED
            where = "of the clients' own models" if personal else "of the global model"
            eod = _cell(claims, dataset, f"{method} lowers the absolute EOD")
            spd = _cell(claims, dataset, f"{method} lowers the absolute SPD")
            accuracy = _cell(claims, dataset, f"{method} keeps")
            lines.append(
                f"- {method}, {where}: lowers the absolute EOD: {_said(eod)}; the absolute SPD: "
                f"{_said(spd)}; accuracy within {ACCURACY_MARGIN:g} point of FedAvg's: {_said(accuracy)}."
            )
    return "\n".join(lines)


BUNDLE = register_paper(
    Paper(
        "group_fairness",
        tuple(E.EXPERIMENTS),
        unavailable=E.absent,
        claim_builders={"group_fairness_": group_fairness_claims},
        metrics=TABLE_METRICS,
        claims_title="Group fairness: the package's observations",
    )
)
