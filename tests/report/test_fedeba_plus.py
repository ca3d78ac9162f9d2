"""The Fig. 1 toy table and claims (App. I.1) from the paper's numbers and hand computations."""

import numpy as np
import pytest

from fairfl_core import report
from fairfl_core.report import fedeba_plus as rf


def test_figure1_table_by_hand():
    table = rf.figure1_table({"FedAvg": 0.5}).iloc[0]
    # F_1(0.5) = 2 (1.5)² = 4.5, F_2(0.5) = ½ (4.5)² = 10.125
    assert (table["F_1"], table["F_2"]) == (4.5, 10.125)
    assert table["gap |F_1 - F_2|"] == 5.625 and table["variance"] == pytest.approx((5.625 / 2) ** 2)
    p = np.array([4.5, 10.125]) / 14.625
    assert table["entropy (bits)"] == pytest.approx(-(p * np.log2(p)).sum())
    assert table["paper x_{t+1}"] == 0.5 and table["paper entropy"] == 0.890  # App. I.1


def _checked(points):
    return report.check_claims(rf.figure1_claims(), *rf.figure1_results(rf.figure1_table(points)))


def test_figure1_points_and_claims():
    points = rf.figure1_points()
    assert points["q-FFL (formula, q=1)"] == pytest.approx(8 / 21)
    assert points["q-FFL (paper's printed point)"] == -0.4
    checked = _checked(points)
    assert list(checked["result"]) == ["holds"] * 5
    # the paper's entropies (App. I.1: EBA 0.996, q-FFL 0.942, FedAvg 0.890) order the same way
    assert list(checked["holds_in_paper"]) == ["n/a"] * 3 + ["holds"] * 2
    assert checked["reference"].iloc[0] == -0.1  # EBA's printed point


def test_figure1_claims_fail_when_the_ordering_does_not_hold():
    points = rf.figure1_points()
    points["FedAvg"] = points[rf.FIG1_EBA]  # FedAvg as fair as EBA: no strict ordering
    assert list(_checked(points)["result"]) == ["holds", "holds", "fails", "holds", "fails"]
