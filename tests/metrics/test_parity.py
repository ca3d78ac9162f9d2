"""Statistical parity and equal opportunity differences (``metrics/parity.py``, FairFed §3), by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fairfl_core import metrics as M
from fairfl_core.metrics.parity import parity_defined

# 8 samples: group 0 = the first four, group 1 = the last four
Y = [1, 1, 0, 0, 1, 1, 1, 0]
P = [1, 0, 1, 0, 1, 1, 0, 0]
S = [0, 0, 0, 0, 1, 1, 1, 1]


def test_group_confusion_counts_by_hand():
    counts = M.group_confusion(Y, P, S)
    assert counts.shape == (2, 2, 2) and counts.dtype == np.int64
    # group 0: (y=1, ŷ=1), (1, 0), (0, 1), (0, 0); group 1: (1, 1) twice, (1, 0), (0, 0)
    assert counts[0].tolist() == [[1, 1], [1, 1]]
    assert counts[1].tolist() == [[1, 0], [1, 2]]
    assert np.array_equal(M.group_confusion(torch.tensor(Y), torch.tensor(P), torch.tensor(S)), counts)


def test_spd_and_eod_by_hand():
    counts = M.group_confusion(Y, P, S)
    # P(ŷ=1 | A=0) = 2/4, P(ŷ=1 | A=1) = 2/4: SPD 0; TPR(A=0) = 1/2, TPR(A=1) = 2/3: EOD = 100 (1/2 − 2/3)
    assert M.positive_rates(counts).tolist() == [0.5, 0.5]
    assert M.true_positive_rates(counts).tolist() == [0.5, 2 / 3]
    assert M.statistical_parity_difference(counts) == 0.0
    assert M.equal_opportunity_difference(counts) == pytest.approx(100 * (1 / 2 - 2 / 3), abs=1e-12)
    # group 1 predicted positive once more: P(ŷ=1 | A=1) = 3/4, SPD = 100 (2/4 − 3/4) = −25 points
    more = M.group_confusion(Y, [1, 0, 1, 0, 1, 1, 1, 0], S)
    assert M.statistical_parity_difference(more) == -25.0
    assert M.equal_opportunity_difference(more) == -50.0  # TPR 1/2 against 3/3


def test_a_missing_group_is_a_one_line_error_naming_the_fix():
    only_zero = M.group_confusion([1, 0], [1, 0], [0, 0])
    with pytest.raises(ValueError) as info:
        M.statistical_parity_difference(only_zero, ["female", "male"], "client 3's test data")
    message = str(info.value)
    assert "\n" not in message and "client 3's test data hold no samples of ['male']" in message
    assert "min_group_size" in message and "sensitive_dirichlet" in message
    no_positive = M.group_confusion([1, 0, 0, 0], [1, 0, 1, 0], [0, 0, 1, 1])  # group 1 has no y = 1
    assert M.statistical_parity_difference(no_positive) == 0.0  # SPD is defined: 1/2 − 1/2
    with pytest.raises(ValueError, match=r"no positive \(y = 1\) samples of \['group 1'\]"):
        M.equal_opportunity_difference(no_positive)
    assert parity_defined(no_positive, "spd") and not parity_defined(no_positive, "eod")


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="must hold 0 and 1 only"):
        M.group_confusion([2], [1], [0])
    with pytest.raises(ValueError, match="one each"):
        M.group_confusion([1, 0], [1], [0, 1])
    with pytest.raises(ValueError, match=r"shape \(2, 2, 2\)"):
        M.statistical_parity_difference(np.zeros((2, 2)))


def test_parity_summary_pools_counts_and_counts_the_clients_with_a_value():
    # client 0 holds samples 0–3 and 4–5, client 1 only samples 6–7 (group 1 only)
    clients = np.stack([M.group_confusion(Y[:6], P[:6], S[:6]), M.group_confusion(Y[6:], P[6:], S[6:])])
    pooled = M.group_confusion(Y, P, S)
    out = M.parity_summary(pooled, clients, names=["f", "m"])
    assert out["spd"] == 0.0 and out["spd_abs"] == 0.0
    assert out["eod"] == pytest.approx(-100 / 6) and out["eod_abs"] == pytest.approx(100 / 6)
    # the union of the clients' data is the pooled data here: the same values
    assert out["local_spd"] == 0.0 and out["local_eod"] == pytest.approx(-100 / 6)
    # client 0: P(ŷ=1 | f) = 2/4, P(ŷ=1 | m) = 2/2: SPD −50; TPR 1/2 against 2/2: EOD −50; client 1 has none
    assert out["client_spd_defined"] == 1 and out["client_eod_defined"] == 1
    assert out["client_spd_mean_abs"] == 50.0 and out["client_spd_max_abs"] == 50.0
    assert out["client_eod_mean_abs"] == 50.0
    assert out["group_positive_rate_f"] == 50.0 and out["group_tpr_m"] == pytest.approx(200 / 3)
    # personalised models: the union of their own predictions
    local = np.stack([M.group_confusion(Y[:6], [1, 1, 0, 0, 1, 1], S[:6]), clients[1]])
    mixed = M.parity_summary(pooled, local, names=["f", "m"])
    # f: 2/4 positive, m: (2 + 0)/4 → 0; TPR f 2/2, m (2 + 0)/3 → 100 (1 − 2/3)
    assert mixed["local_spd"] == 0.0 and mixed["local_eod"] == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match="the pooled test set hold no samples"):
        M.parity_summary(M.group_confusion([1, 0], [1, 0], [0, 0]), clients)
    nobody = M.parity_summary(pooled, clients[1:])
    assert nobody["client_spd_mean_abs"] is None and nobody["client_spd_defined"] == 0
