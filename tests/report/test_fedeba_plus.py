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
    assert points[rf.FIG1_EBA] == pytest.approx(-0.967, abs=5e-4)  # the printed τ = 1
    assert points[rf.FIG1_EBA_FITTED] == pytest.approx(-0.1, abs=1e-3)  # the fitted τ = 5.311
    checked = _checked(points)
    # at the printed τ, EBA lands at x = −0.967 with loss variance 42.30 (FedAvg's 7.91): the least fair of
    # the three, so its three claims fail; q-FFL's two hold
    assert list(checked["result"][:5]) == ["fails", "fails", "holds", "fails", "holds"]
    # the paper's entropies (App. I.1: EBA 0.996, q-FFL 0.942, FedAvg 0.890) order as the paper says
    assert list(checked["holds_in_paper"][:5]) == ["n/a"] * 3 + ["holds"] * 2
    assert checked["reference"].iloc[0] == -0.1  # EBA's printed point
    # at the fitted τ (a reading, the package's observations) EBA's three claims hold
    fitted = checked.iloc[5:]
    assert list(fitted["result"]) == ["holds"] * 3
    assert fitted["source"].str.startswith("the package's observation").all()
    assert checked["source"].iloc[:5].isin(["Fig. 1", "App. I.1"]).all()


def test_figure1_claims_fail_when_the_ordering_does_not_hold():
    points = rf.figure1_points()
    points["FedAvg"] = points[rf.FIG1_EBA_FITTED]  # FedAvg as fair as the fitted EBA: no strict ordering
    assert list(_checked(points)["result"][:5]) == ["fails", "fails", "fails", "fails", "fails"]
