"""Mixing matrices and spectral gaps of AFGA/CAFGA (TMLR 2024, Assumption 4.5, Fig. 1, Algorithm 2, §5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairfl_core.gossip import (
    TOPOLOGIES,
    check_mixing_matrix,
    cluster_gaps,
    clustered,
    complete,
    contiguous_clusters,
    disconnected,
    metropolis_hastings,
    random_graph,
    ring,
    spectral_gap,
    subset_ring,
    topology,
    unbalanced_complete,
)
from tests.rounding import assert_close, reduction_tolerance


def ring_rho(n: int) -> float:
    """The 1/3 ring is the circulant (I + S + Sᵀ)/3 (S = cyclic shift). The DFT diagonalises every circulant
    matrix, with eigenvalues λ_k = (1 + ω^k + ω^{−k})/3 = (1 + 2 cos(2πk/n))/3, ω = e^{2πi/n} (Gray, "Toeplitz
    and Circulant Matrices: A Review", 2006, §3.1). λ_0 = 1 belongs to the vector 1, which W − 11ᵀ/n removes;
    W is symmetric, so ρ = max_{k≠0} |λ_k|. For n ≥ 3 the largest is λ_1 (the most negative is ≥ −1/3, and
    λ_1 ≥ 1/3 once n ≥ 4; n = 3 gives 0 = |λ_1| = |λ_2|)."""
    return (1 + 2 * math.cos(2 * math.pi / n)) / 3


def gap_bound(W: np.ndarray, svds: int = 1) -> dict:
    """The rounding bound (``tests/rounding.py``) of ρ(W) = ‖W − 11ᵀ/n‖₂ from LAPACK's SVD against another
    computation of it. The SVD is backward stable (Higham 2002, Thm 19.4 and §19.3; Golub & Van Loan 2013,
    §8.6): it reduces A = W − 11ᵀ/n to bidiagonal form by 2n Householder reflections applied in sequence, each
    a dot product of n terms, so it is the exact SVD of A + ΔA with ‖ΔA‖_F ≤ 2n · γ_n · ‖A‖_F, and by Weyl's
    inequality σ_max moves by at most ‖ΔA‖₂ ≤ ‖ΔA‖_F: terms n, depth 2n per SVD, scale ‖A‖_F (at least 1,
    the size of a closed form's terms), and one more reduction for the other side (a closed form's cos)."""
    n = W.shape[0]
    return dict(terms=n, depth=svds * 2 * n + 1, scale=max(float(np.linalg.norm(W - 1.0 / n)), 1.0))


# Metropolis–Hastings rows: W_ii = 1 − Σ_{j≠i} W_ij, then the check's Σ_j W_ij: two sums of n terms whose
# sizes add up to at most 2 (the 1 and the row), the rounding bound of tests/rounding.py
def mh_atol(n: int) -> float:
    return 2 * reduction_tolerance(terms=n, depth=2)


# Sinkhorn stops when B's row sums are within 1e-13 of 1 (topology.py), so an unbalanced_complete W is
# doubly stochastic to that tolerance, not to rounding: the checks of W that may be one keep 1e-12
SINKHORN_ATOL = 1e-12


@pytest.mark.parametrize("n", [*range(3, 41), 50, 64, 99, 100, 257])
def test_ring_spectral_gap_matches_its_closed_form(n):
    assert_close(spectral_gap(ring(n)), ring_rho(n), **gap_bound(ring(n)), what="ρ of the ring")


def test_ring_reproduces_the_papers_spectral_gaps():
    # Fig. 1a: AFGA's 50-client ring has ρ = 0.995; Fig. 1b: CAFGA's 10-client clusters ρ_max = 0.873
    assert round(spectral_gap(ring(50)), 3) == 0.995
    assert round(spectral_gap(ring(10)), 3) == 0.873


def test_ring_weights_and_small_rings():
    W = ring(5)
    assert W[0].tolist() == [1 / 3, 1 / 3, 0, 0, 1 / 3]  # the same division 1.0 / 3.0
    assert np.array_equal(W, W.T)
    assert np.array_equal(ring(1), np.eye(1))
    assert np.array_equal(ring(2), np.full((2, 2), 0.5))  # pairwise averaging, not weights 1/3 and 2/3
    assert np.array_equal(ring(3), complete(3))  # both 1.0 / 3.0 everywhere
    assert spectral_gap(ring(2)) == 0.0  # W − 11ᵀ/2 = 0.5 − 0.5 = 0 exactly


def test_complete_and_disconnected_gaps():
    assert spectral_gap(complete(50)) == 0.0  # W − 11ᵀ/n = 1/50 − 1/50 = 0 exactly
    assert_close(spectral_gap(disconnected(50)), 1.0, **gap_bound(disconnected(50)), what="ρ(I)")
    assert spectral_gap(disconnected(1)) == 0.0  # 1 − 1 = 0


def test_metropolis_hastings_on_a_path_by_hand():
    # path 0 - 1 - 2: degrees 1, 2, 1, every edge weight 1/(1 + 2) = 1/3
    A = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)
    expected = np.array([[2 / 3, 1 / 3, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1 / 3, 2 / 3]])
    # off the diagonal 1/(1 + 2) is the same division as 1 / 3; W_ii = 1 − Σ_{j≠i} W_ij against a hand
    # fraction: a sum of 3 + 1 terms of sizes adding up to at most 2
    assert_close(metropolis_hastings(A), expected, terms=4, scale=2.0, what="Metropolis–Hastings W")


@pytest.mark.parametrize(("n", "rho"), [(50, 0.455), (10, 0.766), (20, 0.9)])
def test_random_topology_hits_the_target_gap(n, rho):
    W = random_graph(n, rho, seed=3)
    check_mixing_matrix(W, atol=mh_atol(n))
    assert np.array_equal(W, W.T)
    assert abs(spectral_gap(W) - rho) <= 0.01
    assert np.array_equal(W, random_graph(n, rho, seed=3))
    assert not np.array_equal(W, random_graph(n, rho, seed=4))


def test_random_topology_at_rho_zero_is_the_complete_graph():
    # the same 1/12 off the diagonal; W_ii = 1 − 11 × (1/12), a sum of 12 terms of sizes adding up to 2
    assert_close(random_graph(12, 0.0), complete(12), terms=12, scale=2.0, what="W")


@pytest.mark.parametrize("seed", range(5))
def test_unbalanced_complete_has_the_exact_target_gap(seed):
    W = unbalanced_complete(10, 0.335, seed=seed)  # Fig. 1b
    check_mixing_matrix(W, atol=SINKHORN_ATOL)
    # ρ(W) = c ρ(B) with c = 0.335 / ρ(B) exactly in real arithmetic (W − 11ᵀ/n = c (B − 11ᵀ/n)): two SVDs,
    # and the rounding of c and of W's entries (one more reduction)
    assert_close(spectral_gap(W), 0.335, **gap_bound(W, svds=2), what="ρ(W)")
    assert (W > 0).all()  # fully connected
    off = W[~np.eye(10, dtype=bool)]
    assert off.std() > 1e-3  # unequal ("unbalanced") weights


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_topology_is_symmetric_and_doubly_stochastic(name):
    rho = {"random": 0.5, "unbalanced_complete": 0.3}.get(name)
    W = topology(name, 16, rho=rho, seed=1)
    assert np.array_equal(check_mixing_matrix(W, atol=SINKHORN_ATOL), W)
    # symmetric by construction, except that unbalanced_complete scales S_ij by d_i d_j as (S_ij d_i) d_j, so
    # W_ij and W_ji round differently: two products, then (1 − c)/n + c B (a product and a sum)
    assert_close(W, W.T, terms=2, depth=2, what="W against Wᵀ")


def test_cafga_with_one_cluster_equals_afga():
    assert np.array_equal(clustered(contiguous_clusters(50, 1), "ring"), ring(50))
    assert np.array_equal(
        clustered(np.zeros(30, dtype=int), "random", rho=0.5, seed=7), random_graph(30, 0.5, seed=7)
    )


def test_cafga_block_diagonal_rings():
    labels = contiguous_clusters(50, 5)  # Setting 2: 5 clusters of 10
    assert np.array_equal(labels, np.repeat(np.arange(5), 10))
    W = clustered(labels, "ring")
    for k in range(5):
        block = slice(10 * k, 10 * (k + 1))
        assert np.array_equal(W[block, block], ring(10))
    assert np.count_nonzero(W) == 5 * 30  # nothing outside the blocks
    assert_close(cluster_gaps(W, labels), [ring_rho(10)] * 5, **gap_bound(ring(10)), what="ρ of the blocks")
    # the whole network is disconnected across clusters: ρ(W) = 1
    assert_close(spectral_gap(W), 1.0, **gap_bound(W), what="ρ(W)")


def test_clusters_of_any_assignment_and_size():
    labels = np.array([0, 1, 0, 1, 0, 2])  # clusters {0, 2, 4}, {1, 3}, {5}
    W = clustered(labels, "ring")
    assert (W[np.ix_([0, 2, 4], [0, 2, 4])] == 1 / 3).all()  # ring(3) is 1.0 / 3.0 everywhere
    assert np.array_equal(W[np.ix_([1, 3], [1, 3])], np.full((2, 2), 0.5))
    assert W[5, 5] == 1.0
    assert W[0, 1] == W[1, 0] == W[4, 5] == 0
    assert cluster_gaps(W, labels).tolist() == [0.0, 0.0, 0.0]  # blocks 1/3, 1/2 and 1 minus themselves


def test_cluster_gaps_of_random_clusters_hit_the_target():
    labels = contiguous_clusters(50, 5)
    gaps = cluster_gaps(clustered(labels, "random", rho=0.766, seed=0), labels)  # Fig. 1b
    assert np.abs(gaps - 0.766).max() <= 0.01


def test_subset_ring_embeds_a_ring_over_the_selected_clients():
    selected = np.array([7, 2, 5, 9])
    W = subset_ring(10, selected)
    others = np.setdiff1d(np.arange(10), selected)
    assert np.array_equal(W[others], np.eye(10)[others])
    assert np.array_equal(W[:, others], np.eye(10)[:, others])
    assert np.array_equal(W[np.ix_([2, 5, 7, 9], [2, 5, 7, 9])], ring(4))  # ring in ascending id order
    check_mixing_matrix(W, atol=reduction_tolerance(terms=10))  # rows of 10 terms summing to 1
    assert np.array_equal(subset_ring(6, [4]), np.eye(6))


# -- validation ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("W", "match"),
    [
        (np.ones((2, 3)) / 3, "must be square"),
        (np.ones((2, 2, 2)), "must be square"),
        (np.zeros((0, 0)), "must be square"),
        (np.array([[0.5, 0.5], [0.5, np.nan]]), "NaN or infinite"),
        (np.array([[1.5, -0.5], [-0.5, 1.5]]), r"negative entry W\[0, 1\] = -0.5"),
        (np.array([[0.5, 0.4], [0.5, 0.5]]), "not doubly stochastic: row 0 sums to 0.9"),
        (np.array([[0.5, 0.5], [0.9, 0.1]]), "not doubly stochastic: column 1 sums to 0.6"),
        (np.array([[1.0, 0.0], [1.0, 0.0]]), "not doubly stochastic: column 0 sums to 2"),
    ],
)
def test_bad_mixing_matrices_are_refused(W, match):
    with pytest.raises(ValueError, match=match):
        check_mixing_matrix(W)
    with pytest.raises(ValueError, match="mixing matrix W"):
        spectral_gap(W)


def test_doubly_stochastic_tolerance():
    W = ring(4)
    W[0, 0] += 5e-9
    W[1, 1] -= 5e-9
    check_mixing_matrix(W)  # within the default 1e-8
    with pytest.raises(ValueError, match="tolerance 1e-09"):
        check_mixing_matrix(W, atol=1e-9)
    with pytest.raises(ValueError, match="W is 4 × 4 but there are 5 clients"):
        check_mixing_matrix(ring(4), num_clients=5)


def test_topology_name_and_rho_are_checked():
    with pytest.raises(ValueError, match="unknown topology 'star'; use one of ring, complete"):
        topology("star", 5)
    with pytest.raises(ValueError, match="topology 'random' needs a target spectral gap rho"):
        topology("random", 5)
    with pytest.raises(ValueError, match="needs a target spectral gap rho in \\[0, 1\\), got 1.0"):
        topology("unbalanced_complete", 5, rho=1.0)
    with pytest.raises(ValueError, match="topology 'ring' has a fixed spectral gap"):
        topology("ring", 5, rho=0.5)
    with pytest.raises(ValueError, match="n must be an integer ≥ 1"):
        ring(0)
    with pytest.raises(ValueError, match="no random graph on 2 clients reached rho = 0.5"):
        random_graph(2, 0.5, max_draws=50)


def test_cluster_and_subset_inputs_are_checked():
    with pytest.raises(
        ValueError, match=r"num_clusters K=3 does not divide num_clients N=50.*\[1, 2, 5, 10, 25, 50\]"
    ):
        contiguous_clusters(50, 3)
    with pytest.raises(ValueError, match="non-negative integer labels"):
        clustered(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="W mixes client 0 \\(cluster 0\\) with client 1 \\(cluster 1\\)"):
        cluster_gaps(ring(4), [0, 1, 0, 1])
    for bad in ([], [1, 1], [0, 10], [-1], [[0, 1]], [0.0, 1.0]):
        with pytest.raises(ValueError, match="distinct client ids in \\[0, 10\\)"):
            subset_ring(10, np.array(bad))
