"""The group-fairness bundle (``papers/group_fairness/claims.py``): its plan, its observations decided on
seeds, the changes against FedAvg and the generated conclusion, on hand-made runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairfl_core import report
from fairfl_core.experiments.profiles import get_experiment
from fairfl_core.papers.group_fairness import claims as R
from fairfl_core.papers.group_fairness import experiments as G
from fairfl_core.report.claims import OBSERVATION
from tests.conftest import tiny_sensitive

NAME = "group_fairness_adult"
LABELS = [m.label for m in G.METHODS]


def _runs(shift: dict[str, dict[str, float]], seeds: int = 5) -> pd.DataFrame:
    """One run per method and seed: FedAvg's metrics plus ``shift[method][metric]``, with seed noise that
    the methods of a seed share (paired) and a small one of their own."""
    base = {"global_acc": 84.0, "mean": 86.0, "spd_abs": 18.0, "eod_abs": 12.0}
    base |= {"local_spd_abs": 17.0, "local_eod_abs": 11.0}
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(seeds):
        common = rng.normal(0, 1.0)
        for method in LABELS:
            row = {
                "method": method, "dataset": "adult", "data": "adult", "stand_in": None, "status": "complete",
                "seed": seed, "rounds": 100, "model": "logreg", "pairing": f"seed-{seed}",
                "config.train.rounds": 100,
            }  # fmt: skip
            for metric, value in base.items():
                own = rng.normal(0, 0.05)
                row[metric] = value + common + own + shift.get(method, {}).get(metric, 0.0)
            row["spd"], row["eod"] = -row["spd_abs"], -row["eod_abs"]
            rows.append(row)
    return pd.DataFrame(rows)


SHIFTS = {
    G.FAIRFED.label: {"eod_abs": -2.0, "spd_abs": -1.0, "global_acc": -0.2},
    G.GIFAIR_GLOBAL.label: {"eod_abs": 0.02, "spd_abs": 0.0},
    G.GIFAIR_PER.label: {"local_eod_abs": 3.0, "mean": -3.0},
}


def test_the_observations_decided_on_seeds():
    runs = _runs(SHIFTS)
    claims = R.group_fairness_claims(get_experiment(NAME), runs)
    assert all(c.source.startswith(OBSERVATION) and c.kind == "observation" for c in claims)
    assert len(claims) == 9 + 4  # 3 a method for FairFed and GIFAIR-FL (Global, Per); 1 for the other 4
    agg = report.aggregate(runs, metrics=R.CLAIM_METRICS)
    table = report.get_paper("group_fairness").check(NAME, runs, agg)
    result = dict(zip(table["claim"], table["result"], strict=True))
    fairfed, gifair, per = G.FAIRFED.label, G.GIFAIR_GLOBAL.label, G.GIFAIR_PER.label
    assert result[f"{fairfed} lowers the absolute EOD of the global model against FedAvg"] == "holds"
    assert result[f"{fairfed} lowers the absolute SPD of the global model against FedAvg"] == "holds"
    # 0.2 points below FedAvg, with a margin of 1: non-inferior
    assert result[f"{fairfed} keeps the global accuracy within 1 point of FedAvg's"] == "holds"
    assert result[f"{gifair} lowers the absolute EOD of the global model against FedAvg"] == "undetermined"
    assert result[f"{per} lowers the absolute EOD of the clients' own models against FedAvg"] == "fails"
    assert result[f"{per} keeps the mean client accuracy within 1 point of FedAvg's"] == "fails"
    ditto = table[table["method"] == G.DITTO.label].iloc[0]
    assert ditto["metric"] == "local_eod_abs"  # a personalised method: its clients' own models
    assert (table["kind"] == "observation").all() and (table["experiment"] == NAME).all()


def test_too_few_seeds_decide_nothing_and_the_conclusion_says_what_was_decided(tmp_path):
    runs = _runs(SHIFTS)
    agg = report.aggregate(runs, metrics=R.CLAIM_METRICS)
    bundle = report.get_paper("group_fairness")
    claims = report.save_claims(bundle.check(NAME, runs, agg), tmp_path, "claims")
    text = R.conclusion(claims)
    assert text.startswith("adult:") and text.count("\n- ") == 3
    fairfed = next(line for line in text.splitlines() if line.startswith(f"- {G.FAIRFED.label}"))
    assert "lowers the absolute EOD: holds (" in fairfed and "95 % interval" in fairfed
    few = _runs(SHIFTS, seeds=2)
    table = bundle.check(NAME, few, report.aggregate(few, metrics=R.CLAIM_METRICS))
    assert (table["result"] == "not decided").all()


def test_the_changes_against_fedavg_by_hand():
    runs = _runs(SHIFTS)
    effects = R.effects_table(runs).set_index("method")
    means = runs.groupby("method")[["eod_abs", "global_acc"]].mean()
    fairfed = G.FAIRFED.label
    assert effects.loc[fairfed, "Δ absolute EOD"] == pytest.approx(
        means.loc[fairfed, "eod_abs"] - means.loc["FedAvg", "eod_abs"]
    )
    assert effects.loc["FedAvg"].drop("dataset").abs().max() == 0.0
    assert effects.loc[fairfed, "Δ Global Acc."] == pytest.approx(-0.2, abs=0.1)


def test_the_spread_table_gives_each_clients_groups_and_gifair_group():
    fed = tiny_sensitive()
    table = R.spread_table(fed)
    counts = fed.sensitive_counts("train")
    assert table["samples of group 0"].tolist() == counts[:, 0].tolist()
    shares = 100 * counts / counts.sum(axis=0)
    assert np.allclose(table["share of group 1 (%)"], shares[:, 1])
    larger = np.where(shares[:, 1] > shares[:, 0], "g1", "g0")
    assert table["GIFAIR-FL group"].tolist() == larger.tolist()
    assert set(table["groups"]) == {"g0 / g1"}


def test_the_plan_runs_every_experiment_where_the_data_are(monkeypatch):
    from fairfl_core.data import stand_ins

    bundle = report.get_paper("group_fairness")
    monkeypatch.setattr(stand_ins, "present", lambda name, root=None: True)
    assert bundle.planned("quick") == (G.EXPERIMENTS, {})
    monkeypatch.setattr(stand_ins, "present", lambda name, root=None: name == "compas")
    names, skipped = bundle.planned("smoke")
    assert names == ["group_fairness_compas", "group_fairness_compas_skewed"]
    assert all("UCI Adult is absent" in why and "fairfl prepare-data" in why for why in skipped.values())
    table = bundle.check("group_fairness_adult", None)
    assert (table["result"] == "not checked (no offline data)").all()
