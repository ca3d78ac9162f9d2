"""DSGD and Gossip-PGA (AFGA Table 8's decentralised baselines): reductions to local training, the gossip
keeping the network mean, PGA's exact average."""

import numpy as np
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, tiny_sim


def _local(sim, t=0, start=None):
    everyone = np.arange(sim.num_clients)
    start = sim.engine.init_params() if start is None else start
    return sim.engine.train(everyone, start, sim.local_spec(t), sim.seed_for(t, "batches")).params


def test_without_gossip_every_client_trains_its_own_model_across_rounds():
    sim = tiny_sim()
    algo = build_algorithm("dsgd", sim, {"topology": "disconnected"})
    first = _local(sim)
    algo.round(0)
    torch.testing.assert_close(algo.state["models"], first, rtol=1e-12, atol=1e-12)
    algo.round(1)
    torch.testing.assert_close(algo.state["models"], _local(sim, 1, first), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(algo.eval_params(), algo.state["models"].mean(0), rtol=1e-12, atol=1e-12)


def test_gossip_keeps_the_network_mean_and_pga_averages_exactly():
    """One local step then ring gossip (W doubly stochastic): the mean model is the mean of the stepped
    models; PGA's round ends with every client at that mean."""
    dsgd = build_algorithm("dsgd", tiny_sim(local_steps=1), {})
    pga = build_algorithm("pga", tiny_sim(local_steps=1), {})
    stepped = _local(tiny_sim(local_steps=1))
    dsgd.round(0), pga.round(0)
    torch.testing.assert_close(dsgd.w, stepped.mean(0), rtol=1e-12, atol=1e-12)
    assert dsgd.round(1).diagnostics["consensus_error"] > 0
    torch.testing.assert_close(pga.state["models"], stepped.mean(0).expand(6, -1), rtol=1e-12, atol=1e-12)


def test_the_complete_graph_leaves_every_client_at_the_mean():
    algo = build_algorithm("dsgd", tiny_sim(), {"topology": "complete"})
    outs = run_rounds(algo, 2)
    assert all(o.diagnostics["consensus_error"] < 1e-20 for o in outs)
    assert outs[0].diagnostics["peer_messages"] == 3 * 6 * 5  # Z = 3 steps, 30 directed links
