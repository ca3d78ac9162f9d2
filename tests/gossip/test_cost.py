"""Simulated communication time (TMLR 2024, App. B.1.1, Table 7)."""

from __future__ import annotations

import numpy as np
import pytest

from fairfl_core.gossip import CommCostModel, transfer_seconds
from tests.rounding import assert_close

# The cost model against hand values: a few products and sums of decimal constants, no long reduction. γ_n
# bounds n roundings in sequence (Higham 2002, Lemma 3.1), so terms counts the roundings of the longest chain,
# the decimal literals' own on both sides included.

Z = 24  # Setting 1's local iterations: AFGA and CAFGA gossip Z times per round

# Table 7 (CIFAR-10, Setting 1): hours to 70 / 75 / 78 / 80 % test accuracy
TABLE7 = {
    "FedAMSGrad": (0, [76.0, 128.0, 194.0, 281.0]),
    "AFGA": (Z, [91.76, 130.98, 223.48, 250.86]),
    "CAFGA": (Z, [76.22, 102.86, 172.42, 179.82]),
}
TABLE1_ROUNDS_TO_78 = {"FedAMSGrad": 388, "AFGA": 302, "CAFGA": 233}  # Table 1, Setting 1, R# (78 %)


def test_default_round_times():
    model = CommCostModel()
    assert model.round_seconds(0) == 1800.0  # 100 × 18 s = 0.50 h
    # + 24 × 20 × 1.8 s = 0.74 h; roundings: the literal 1.8, × 1.8, the sum
    assert_close(model.round_seconds(Z), 2664.0, terms=3)


def test_table_7_from_table_1_rounds():
    """Table 7's 78 % column recomputed from Table 1's rounds to 78 %, an independent table of the paper."""
    model = CommCostModel()
    for method, rounds in TABLE1_ROUNDS_TO_78.items():
        steps, hours = TABLE7[method]
        # round_seconds (3), × rounds, / 3600 and the printed hours' literal: 6 roundings
        assert_close(model.hours_to_target(rounds, steps), hours[2], terms=6, what=method)


def test_every_table_7_cell_is_whole_rounds_times_the_round_time():
    model = CommCostModel()
    for steps, hours in TABLE7.values():
        rounds = np.asarray(hours) / model.hours_to_target(1, steps)
        # hours_to_target (5 roundings), the literal and the division: 7
        assert_close(rounds, np.round(rounds), terms=7, what="rounds")
        assert_close(model.hours_to_target(np.round(rounds), steps), hours, terms=6, what="hours")


def test_cost_from_links_by_hand():
    # ConvMixer-256-8 in float32: 594,186 × 4 bytes; server 1 MB/s + 50 ms, peer 10 MB/s + 10 ms
    model = CommCostModel.from_links(
        2_376_744,
        server_bandwidth=1e6,
        peer_bandwidth=1e7,
        server_latency=0.05,
        peer_latency=0.01,
        server_transfers_per_round=10,
        peer_transfers_per_gossip_step=2,
    )
    # latency literal + bytes / bandwidth against the literal: 4 roundings
    assert_close(model.server_transfer_s, 2.426744, terms=4)
    assert_close(model.peer_transfer_s, 0.2476744, terms=4)
    # 10 × 2.426744 + 24 × 2 × 0.2476744 = 24.26744 + 11.8883712: a transfer (3), × count, sum, literal
    assert_close(model.round_seconds(Z), 36.1558112, terms=6)
    # round_seconds (5), × 100, / 3600, and the literal and its division: 9
    assert_close(model.hours_to_target(100, Z), 3615.58112 / 3600, terms=9)
    assert transfer_seconds(1000, 100) == 10.0


def test_bad_cost_inputs_are_refused():
    with pytest.raises(ValueError, match="peer_transfer_s must be a finite number ≥ 0, got -1"):
        CommCostModel(peer_transfer_s=-1)
    with pytest.raises(ValueError, match="server_transfers_per_round must be a finite number ≥ 0, got nan"):
        CommCostModel(server_transfers_per_round=float("nan"))
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s must be positive"):
        transfer_seconds(10, 0)
    with pytest.raises(ValueError, match="latency_s must be a finite number ≥ 0"):
        transfer_seconds(10, 1, latency_s=-0.1)
    with pytest.raises(ValueError, match="gossip_steps must be an integer ≥ 0"):
        CommCostModel().round_seconds(-1)
    with pytest.raises(ValueError, match="gossip_steps must be an integer ≥ 0"):
        CommCostModel().round_seconds(2.5)
    with pytest.raises(ValueError, match="rounds must be finite and ≥ 0"):
        CommCostModel().hours_to_target([10, -1])
