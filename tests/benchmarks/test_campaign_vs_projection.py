"""``benchmarks/campaign_vs_projection.py``: measured hours per run against the projection's, by hand."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fairfl_core.experiments.config import config_hash
from tests.experiments.conftest import digits_config

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_vs_projection  # noqa: E402


def test_measured_hours_per_run_and_their_ratios_by_hand():
    fedavg = [replace(digits_config(rounds=2), seed=s) for s in (0, 1)]
    qffl = replace(fedavg[0], algorithm=replace(fedavg[0].algorithm, name="qffl"))
    pages = {"p": {"a": [*fedavg, qffl], "b": [fedavg[0]]}, "q": {"a": [*fedavg, qffl]}}
    seconds = {config_hash(fedavg[0]): 3600.0, config_hash(fedavg[1]): 7200.0, config_hash(qffl): 9000.0}
    projection = {"experiments": [{"experiment": "a", "runs": 4, "alone_s": 4 * 1800.0}]}
    report = campaign_vs_projection.compare(projection, pages, seconds)
    a, b = report["experiments"]["a"], report["experiments"]["b"]
    assert (a["runs"], a["finished"], b["finished"]) == (3, 3, 1)
    assert a["measured_h_per_run"] == pytest.approx((1 + 2 + 2.5) / 3, rel=1e-12)
    assert a["projected_h_per_run"] == 0.5 and a["ratio"] == pytest.approx((5.5 / 3) / 0.5, rel=1e-12)
    assert b["projected_h_per_run"] is None and b["ratio"] is None  # no projection of b
    algorithms = report["algorithms"]  # a run of several experiments or pages counts once
    assert algorithms["fedavg"]["finished"] == 2 and algorithms["fedavg"]["measured_h_per_run"] == 1.5
    assert algorithms["qffl"]["to_fedavg"] == pytest.approx(2.5 / 1.5, rel=1e-12)
    table = campaign_vs_projection.markdown(report)
    assert "| a | 3 | 3 | 1.833 | 0.5000 | 3.67 |" in table and "| b | 1 | 1 | 1.000 | - | - |" in table
