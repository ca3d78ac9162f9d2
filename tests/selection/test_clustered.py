import numpy as np
import pytest
import torch

from fairfl_core.selection.clustered import (
    cluster_distributions,
    importance_clusters,
    representative_distances,
    sample_one_per_row,
)
from tests.rounding import assert_close

G = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]], dtype=torch.float64)


def test_arccos_by_hand_with_zero_gradients_at_zero():
    m = representative_distances(G, "arccos")
    q = np.pi / 4
    # norms and dot products of 2 terms, the two divisions, and arccos (slope 1/sin θ ≤ √2 here): 3 reductions
    expected = [[0, 2 * q, q, 0], [2 * q, 0, q, 0], [q, q, 0, 0], [0, 0, 0, 0]]
    assert_close(m, expected, terms=2, depth=3, what="arccos distances")


def test_l2_is_squared_and_l1_by_hand():
    # √2 squared again: the differences, their squares, the sum, √ and the square, 5 roundings in sequence
    # (γ_5, Higham 2002, Lemma 3.1); the other entries are integers
    assert_close(representative_distances(G, "L2")[0], [0, 2, 1, 1], terms=5, what="L2")
    assert np.array_equal(representative_distances(G, "L1")[0], [0, 2, 1, 1])  # sums of |0 or 1|: exact
    assert representative_distances(G, "L2")[1, 2] == 1.0  # √1 squared: exact
    with pytest.raises(ValueError, match="similarity must be one of"):
        representative_distances(G, "cosine")


def test_identical_gradients_within_groups_share_a_cluster():
    rng = np.random.default_rng(0)
    directions = rng.standard_normal((3, 20))
    group = np.array([0, 1, 2, 0, 1, 2])
    grads = torch.as_tensor(directions[group] * rng.uniform(0.5, 2.0, (6, 1)))  # same direction per group
    labels = importance_clusters(representative_distances(grads, "arccos"), np.full(6, 1 / 6), m=3)
    assert len(set(labels)) == 3
    for g in range(3):
        assert len(set(labels[group == g])) == 1


def test_clusters_respect_the_importance_cap():
    rng = np.random.default_rng(1)
    grads = torch.as_tensor(rng.standard_normal((12, 5)))
    p = rng.uniform(1, 3, 12)
    p /= p.sum()
    labels = importance_clusters(representative_distances(grads, "L2"), p, m=4)
    totals = np.array([p[labels == c].sum() for c in np.unique(labels)])
    # not a rounding bound: the tree cuts at integer importances ⌊ε Σ p⌋ of resolution 1/ε = 1e-10
    assert (totals <= 1 / 4 + 1e-9).all() and len(totals) >= 4


def test_allocation_by_hand_kept_clusters_and_pouring():
    # p = (.25, .25, .3, .2), m = 2 → masses m·p = (.5, .5, .6, .4); clusters {0,1}=1.0, {2}=.6, {3}=.4.
    # The two heaviest own a row (row 0: {2}, row 1: {0,1}); client 3 is poured into row 0.
    w = cluster_distributions(
        np.array([1, 1, 2, 3]), np.array([0.25, 0.25, 0.3, 0.2]), 2, np.random.default_rng(0)
    )
    # not a rounding bound: the masses m·p are truncated to integers of resolution 1/ε = 1e-10 (the
    # reference's) before the rows are normalised, here and in the two tests below
    assert np.allclose(w, [[0, 0, 0.6, 0.4], [0.5, 0.5, 0, 0]])


def test_allocation_client_straddles_two_rows():
    # singletons with m·p = (.7, .7, .6): client 2 fills row 0's remaining .3, then .3 of row 1
    w = cluster_distributions(np.array([1, 2, 3]), np.array([0.35, 0.35, 0.3]), 2, np.random.default_rng(0))
    assert np.allclose(w, [[0.7, 0, 0.3], [0, 0.7, 0.3]])


def test_allocation_client_heavier_than_a_row():
    # m·p = (1.4, .4, .2): client 0 fills row 1 and pours its excess .4 first into row 0
    w = cluster_distributions(np.array([1, 2, 3]), np.array([0.7, 0.2, 0.1]), 2, np.random.default_rng(0))
    assert np.allclose(w, [[0.4, 0.4, 0.2], [1, 0, 0]])


@pytest.mark.parametrize("seed", range(3))
def test_rows_are_distributions_and_columns_sum_to_m_p(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(1, 4, 15)
    p /= p.sum()
    labels = importance_clusters(
        representative_distances(torch.as_tensor(rng.standard_normal((15, 4))), "L1"), p, 5
    )
    w = cluster_distributions(labels, p, 5, rng)
    # integer masses over their integer row total, summed over the 15 clients: rounding only
    assert_close(w.sum(axis=1), np.ones(5), terms=15, what="row sums")
    # not a rounding bound: each m·p_i is truncated to integers of resolution 1/ε = 1e-10
    assert np.allclose(w.sum(axis=0), 5 * p, atol=1e-8)


def test_sampling_one_client_per_row_is_unbiased():
    w = np.array([[0, 0, 0.6, 0.4], [0.5, 0.5, 0, 0]])
    rng = np.random.default_rng(0)
    draws = np.stack([sample_one_per_row(w, rng) for _ in range(4000)])
    assert set(draws[:, 0]) == {2, 3} and set(draws[:, 1]) == {0, 1}
    freq = np.bincount(draws.ravel(), minlength=4) / draws.size
    assert np.allclose(freq, w.sum(axis=0) / 2, atol=0.02)  # = p; statistical: 8000 draws, not rounding
