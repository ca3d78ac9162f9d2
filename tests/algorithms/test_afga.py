"""AFGA and CAFGA (TMLR 2024, Algorithms 1–2): reductions to FedAMSGrad and to each other, the gossip
invariants on whole rounds, the communication-adapted variants and the errors."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.afga import stratified_sample
from fairfl_core.gossip import Mixer
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close, reduction_tolerance

# Batch 2 × 3 steps fits in every tiny client's first epoch (≥ 7 samples), so a client's minibatch stream
# does not depend on which other clients share its stack: AFGA's stack holds all N clients, FedAMSGrad's S_r.
ONE_EPOCH = dict(batch_size=2, local_steps=3, lr=0.5)


# AFGA's stack of all 6 clients against FedAMSGrad's stack of the 3 selected (or CAFGA's code path): the same
# float64 operations on other shapes or in another order. The longest sum is a first-layer dot product over
# the 16 features (batches of 2, the server's mean of 3 updates); 7 reductions a local step (2 layers and the
# loss forward and back, the update) for 3 steps in each of 3 rounds, and 3 more a round for the server's mean
# and its AMSGrad step; all times 1 + the gain η (1 − β1)/√τ = 0.01 · 0.1 / 10⁻⁴ = 10 with which that step
# η m/√(v̂ + τ) can pass an error of the mean update on (AFGA's defaults).
BOUND = dict(terms=16, depth=(7 * 3 * 3 + 3 * 3) * (1 + 10))


def _states(algo):
    return {k: v for k, v in algo.state_dict().items() if isinstance(v, torch.Tensor)}


def _assert_same(a, b):
    assert _states(a).keys() == _states(b).keys()
    for key, value in _states(a).items():
        assert_close(value, _states(b)[key], **BOUND, what=key)


def test_no_resampling_and_no_gossip_is_fedamsgrad():
    """S_{r,t} = S_r and W = I (Section 3.2): the same S_r, minibatches and server steps as FedAMSGrad."""
    afga = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {"resample": False, "gossip": False})
    fedams = build_algorithm("fedamsgrad", tiny_sim(**ONE_EPOCH), {})
    a, f = run_rounds(afga, 3), run_rounds(fedams, 3)
    assert [o.selected.tolist() for o in a] == [o.selected.tolist() for o in f]
    _assert_same(afga, fedams)
    assert all(o.diagnostics["peer_messages"] == 0 for o in a)


def test_resampling_and_gossip_each_change_the_round():
    plain = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {"resample": False, "gossip": False})
    run_rounds(plain, 2)
    for params in ({"resample": False}, {"gossip": False}, {}):
        algo = build_algorithm("afga", tiny_sim(**ONE_EPOCH), params)
        run_rounds(algo, 2)
        assert not torch.allclose(algo.w, plain.w), params  # apart by far more than rounding: not a bound


def test_a_complete_graph_leaves_every_client_at_the_network_mean():
    """W = J (ρ = 0): after every gossip step all N models are equal, so the consensus error is 0; a ring
    (ρ < 1) leaves them apart."""
    complete = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {"topology": "complete"})
    ring = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {})
    out_c, out_r = complete.round(0), ring.round(0)
    # W = J gives every row the same sum of 6 terms, then x̄ sums 6 more: rows apart by rounding only, at most
    # (1/N) Σ_i ‖x_i − x̄‖² ≤ P (2 reductions of 6 terms · max|x|)², P = 256 parameters of magnitude below 1
    # (about 0.3 here)
    assert out_c.diagnostics["consensus_error"] <= 256 * reduction_tolerance(terms=6, depth=2) ** 2
    assert out_r.diagnostics["consensus_error"] > 1e-6
    # a ring of N = 6 sends 2 messages per client per step, Z = 3 steps
    assert out_r.diagnostics["peer_messages"] == 3 * 2 * 6


def test_gossip_keeps_the_network_mean_of_a_round():
    """X ← W X with W doubly stochastic keeps the mean of the N client models (the gossip of Algorithm 1
    line 14, on the stack in AFGA's row order after its first re-sampled step)."""
    sim = tiny_sim(**ONE_EPOCH)
    algo = build_algorithm("afga", sim, {})
    selected = algo.sample(sim.rng(0, "select"))
    order = np.concatenate([selected, np.setdiff1d(np.arange(6), selected)])
    stack = sim.engine.stack(order, algo.w, sim.local_spec(0), sim.seed_for(0, "batches"))
    stack.step(np.argsort(order)[np.sort(algo.sample(sim.rng(0, "resample")))])
    before = stack.flat_params()
    stack.mix(Mixer(algo.W[np.ix_(order, order)]))
    after = stack.flat_params()
    assert not torch.allclose(after, before)  # gossip moved the models by far more than rounding
    # the mean of W X vs the mean of X: the mixing's and the mean's sums of 6 rows, and W's entries 1/3
    # rounded (its columns sum to 1 up to a unit roundoff): 6 terms, depth 3, of weights ≥ 0 (no cancellation)
    assert_close(
        after.mean(0), before.mean(0), terms=6, depth=3, scale=float(before.abs().max()), what="mean"
    )


def test_cafga_with_one_cluster_is_afga():
    afga = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {})
    cafga = build_algorithm("cafga", tiny_sim(**ONE_EPOCH), {"num_clusters": 1})
    run_rounds(afga, 3), run_rounds(cafga, 3)
    _assert_same(afga, cafga)


def test_cafga_samples_per_cluster_and_gossips_inside_clusters():
    algo = build_algorithm("cafga", tiny_sim(clients_per_round=2, **ONE_EPOCH), {"num_clusters": 2})
    assert algo.gossip.clusters.tolist() == [0, 0, 0, 1, 1, 1]
    for t in range(5):
        picked = algo.sample(algo.sim.rng(t, "select"))
        assert sorted(algo.gossip.clusters[picked].tolist()) == [0, 1]
    W = algo.W
    assert (W[:3, 3:] == 0).all() and (W[3:, :3] == 0).all()
    labels = np.array([0, 0, 1, 1, 1])
    drawn = stratified_sample(np.random.default_rng(0), labels, 2)
    assert len(set(drawn)) == 4 and sorted(labels[drawn].tolist()) == [0, 0, 1, 1]


def test_selected_ring_with_one_client_per_round_is_fedamsgrad():
    """AFGA (a), "selected_ring": only S_r trains and gossips over a ring on S_r; a ring of one client is
    the identity, so with M = 1 the round is FedAMSGrad's."""
    sim = dict(ONE_EPOCH, clients_per_round=1)
    adapted = build_algorithm("afga", tiny_sim(**sim), {"comm_adapted": "selected_ring"})
    fedams = build_algorithm("fedamsgrad", tiny_sim(**sim), {})
    run_rounds(adapted, 3), run_rounds(fedams, 3)
    _assert_same(adapted, fedams)


def test_active_ring_gossips_only_among_the_active_clients():
    algo = build_algorithm("afga", tiny_sim(**ONE_EPOCH), {"comm_adapted": "active_ring"})
    rows = np.array([3, 1, 0, 2, 4, 5])
    W = algo._rings(rows, np.array([0, 4, 5]))
    members = [2, 4, 5]  # the rows of clients 0, 4, 5
    assert np.array_equal(W[np.ix_(members, members)], np.full((3, 3), 1 / 3))  # ring() stores 1.0 / 3.0
    others = [0, 1, 3]
    assert np.array_equal(W[np.ix_(others, others)], np.eye(3))
    out = algo.round(0)
    assert out.diagnostics["peer_messages"] == 3 * 6  # a ring of 3 active clients: 6 messages per step


@pytest.mark.parametrize(
    "params,train,match",
    [
        ({"num_clusters": 4}, {}, "does not divide num_clients"),
        ({"topology": "star"}, {}, r"topology must be one of \('ring', 'complete'"),
        ({"comm_adapted": "selected_ring", "resample": False}, {}, "leave resample and gossip"),
        ({"comm_adapted": "everyone"}, {}, "comm_adapted must be"),
        ({"tau": 0.0}, {}, "tau"),
        ({}, {"clients_per_round": 7}, "exceeds num_clients"),
        ({}, {"local_steps": 0}, "local_steps"),
    ],
)
def test_bad_settings_are_refused_with_the_field(params, train, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("afga", tiny_sim(**{**ONE_EPOCH, **train}), params)
