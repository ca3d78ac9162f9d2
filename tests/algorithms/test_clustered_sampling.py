import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.selection.clustered import EPSILON, importance_clusters, representative_distances
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


def test_round_stores_each_sampled_clients_last_update_and_averages_uniformly():
    sim = tiny_sim()
    algo = build_algorithm("clustered_sampling", sim, {})
    w0 = algo.w.clone()
    assert not algo.state["rep_grads"].any()  # G_i = 0 before anyone trained
    clients = algo.round(0).selected
    res = sim.engine.train(clients, w0, sim.local_spec(0), sim.seed_for(0, "batches"))  # μ = 0
    # 1/m each, a duplicate counts twice: the server's weighted sum of 3 updates vs their mean, then the step
    assert_close(algo.w, w0 + (res.params - w0).mean(0), terms=3, depth=2, what="global model")
    ids, first = np.unique(clients, return_index=True)
    assert torch.equal(algo.state["rep_grads"][ids], res.params[first] - w0)  # the same training, difference
    assert not algo.state["rep_grads"][np.setdiff1d(np.arange(6), ids)].any()  # the others stay stale (0)


def test_distributions_are_unbiased_for_the_sample_sizes():
    sim = tiny_sim()
    algo = build_algorithm("clustered_sampling", sim, {})
    run_rounds(algo, 2)
    w = algo.distributions(2)
    p = sim.train_sizes / sim.train_sizes.sum()
    assert w.shape == (3, 6)
    # a row's integer masses sum to its divisor exactly: its 6 quotients and their sum round (6 terms, depth
    # 2)
    assert_close(w.sum(axis=1), np.ones(3), terms=6, depth=2, what="row sums")
    # the columns carry m·p_i up to the integer resolution of the masses, not rounding: ⌊m p_i ε⌋ loses less
    # than 1/ε, and each row is divided by its mass, short of ε by less than one unit per client (6)
    assert np.abs(w.sum(axis=0) - 3 * p).max() <= (1 + 3 * 6) / EPSILON


def test_clients_with_the_same_update_direction_cluster_together():
    sim = tiny_sim(clients_per_round=2)  # groups 0/1 alternate; group 0 holds 51 of 117 samples (≤ 1/m)
    algo = build_algorithm("clustered_sampling", sim, {})
    directions = torch.randn(
        2, algo.w.numel(), dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    algo.state["rep_grads"] = directions[sim.groups] * torch.arange(1.0, 7.0, dtype=torch.float64)[:, None]
    p = sim.train_sizes / sim.train_sizes.sum()
    labels = importance_clusters(representative_distances(algo.state["rep_grads"], "arccos"), p, 2)
    for c in np.unique(labels):
        assert len(set(sim.groups[labels == c])) == 1  # a cluster never mixes the two directions
    assert len(set(labels[sim.groups == 0])) == 1  # group 0 fits under the 1/m cap: one cluster


@pytest.mark.parametrize(
    "params, field",
    [
        ({"similarity": "cosine"}, "similarity must be one of"),
        ({"sampling": "size"}, r"unknown field\(s\) \[.sampling.\]"),
        ({"weighting": "equal"}, "weighting must be one of"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("clustered_sampling", tiny_sim(), params)
