"""DSGD and Gossip-PGA (AFGA Table 8's decentralised baselines): reductions to local training, the gossip
keeping the network mean, PGA's exact average."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close, reduction_tolerance


def _local(sim, t=0, start=None):
    everyone = np.arange(sim.num_clients)
    start = sim.engine.init_params() if start is None else start
    return sim.engine.train(everyone, start, sim.local_spec(t), sim.seed_for(t, "batches")).params


@pytest.mark.exact_arithmetic(
    "W = I: the gossip multiplies by the identity, 1·x + 0·y + ... = x in any order"
)
def test_without_gossip_every_client_trains_its_own_model_across_rounds():
    # DSGD's stack steps the 6 clients as the engine's train does (the same operations on the same shapes)
    sim = tiny_sim()
    algo = build_algorithm("dsgd", sim, {"topology": "disconnected"})
    first = _local(sim)
    algo.round(0)
    assert torch.equal(algo.state["models"], first)
    algo.round(1)
    assert torch.equal(algo.state["models"], _local(sim, 1, first))
    assert torch.equal(algo.eval_params(), algo.state["models"].mean(0))  # the same mean


def test_gossip_keeps_the_network_mean_and_pga_averages_exactly():
    """One local step then ring gossip (W doubly stochastic): the mean model is the mean of the stepped
    models; PGA's round ends with every client at that mean."""
    dsgd = build_algorithm("dsgd", tiny_sim(local_steps=1), {})
    pga = build_algorithm("pga", tiny_sim(local_steps=1), {})
    stepped = _local(tiny_sim(local_steps=1))
    dsgd.round(0), pga.round(0)
    # the mean of W X vs the mean of X: the mixing's and the mean's sums of 6 rows, and W's entries 1/3
    # rounded (its columns sum to 1 up to a unit roundoff): 6 terms, depth 3, weights ≥ 0 (no cancellation)
    bound = dict(terms=6, depth=3, scale=float(stepped.abs().max()))
    assert_close(dsgd.w, stepped.mean(0), **bound, what="DSGD's mean")
    assert dsgd.round(1).diagnostics["consensus_error"] > 0
    assert_close(pga.state["models"], stepped.mean(0).expand(6, -1), **bound, what="PGA's models")  # as above


def test_the_complete_graph_leaves_every_client_at_the_mean():
    algo = build_algorithm("dsgd", tiny_sim(), {"topology": "complete"})
    outs = run_rounds(algo, 2)
    # W = J gives every row the same sum of 6 terms, then x̄ sums 6 more: rows apart by rounding only, at most
    # (1/N) Σ_i ‖x_i − x̄‖² ≤ P (2 reductions of 6 terms · max|x|)², P = 256 parameters of magnitude below 1
    # (about 0.4 here)
    assert all(
        o.diagnostics["consensus_error"] <= 256 * reduction_tolerance(terms=6, depth=2) ** 2 for o in outs
    )
    assert outs[0].diagnostics["peer_messages"] == 3 * 6 * 5  # Z = 3 steps, 30 directed links
