"""The Fig. 1 toy (App. I.1) against the numbers the paper prints."""

import numpy as np
import pytest

from fairfl_core.algorithms.qffl import LOSS_OFFSET
from fairfl_core.metrics import entropy_of_normalised
from fairfl_core.papers.fedeba_plus.figure1 import figure1_toy, toy_losses
from tests.rounding import assert_close


def test_figure1_toy_as_the_spec_states_it():
    # F_1 = 2(x−2)², F_2 = ½(x+4)², x_t = 0, one step of 1/4: x_1 = 2, x_2 = −1; losses (0, 4.5)
    assert np.array_equal(toy_losses([2.0, -1.0]), [0.0, 4.5])  # small binary fractions: exact
    x = figure1_toy(tau=5.311)
    assert x["fedavg"] == 0.5  # the mean of 2 and −1: exact
    # the paper's printed values, to 3 decimals (their tolerance, not rounding):
    assert x["eba"] == pytest.approx(-0.1, abs=1e-3)  # p_1 = 1/(1 + e^{4.5/5.311}) = 0.300
    # q = 1, L = 1: Δ = (−16, 8), h = (12, 9) at F = 8 + LOSS_OFFSET: x = (8 + δ)/(21 + 2δ), up to the sums
    # of 2 clients and the division
    qffl = (8 + LOSS_OFFSET) / (21 + 2 * LOSS_OFFSET)
    assert_close(x["qffl"], qffl, terms=2, depth=3, what="q-FFL")
    assert figure1_toy(tau=1.0)["eba"] == pytest.approx(-0.967, abs=1e-3)  # the printed τ = 1 (A28)

    def variance(xx):
        f = toy_losses(xx)
        return float(np.var([f[0], f[1]]))  # two clients: (gap / 2)²

    assert variance(x["fedavg"]) == 2.8125**2  # 7.91; binary fractions of few bits: exact
    assert variance(x["eba"]) == pytest.approx(0.6075**2, rel=1e-2)  # paper: (0.6)², printed (not rounding)
    assert variance(x["eba"]) < variance(x["qffl"]) < variance(x["fedavg"])
    assert variance(-0.4) < variance(x["fedavg"])  # the paper's printed q-FFL point
    # entropy of the normalised losses (log₂): EBA 0.996, q-FFL (x = −0.4) 0.943, FedAvg 0.890, printed to 3
    # decimals: half a unit of the last (5e-4) is their tolerance, not rounding
    assert entropy_of_normalised(toy_losses(x["eba"])) == pytest.approx(0.996, abs=5e-4)
    assert entropy_of_normalised(toy_losses(-0.4)) == pytest.approx(0.943, abs=5e-4)
    assert entropy_of_normalised(toy_losses(x["fedavg"])) == pytest.approx(0.890, abs=5e-4)
