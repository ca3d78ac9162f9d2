import math

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans

from fairfl_core.metrics import cluster_nmi
from fairfl_core.selection import activation_clustering as AC
from fairfl_core.selection.activation_clustering import (
    REDUCTIONS,
    LastBatchActivationMean,
    activation_statistic,
    cluster_weights,
    equitable_weights,
    kmeans_labels,
    similarity_matrix,
    spectral_embedding,
)
from fairfl_core.sim.batches import draw_schedule
from fairfl_core.sim.statistics import ActivationMean
from tests.rounding import assert_close

F64 = torch.float64


def nmi_bound(groups) -> dict:
    """The rounding bound (tests/rounding.py) of sklearn's NMI against a value it equals in real arithmetic
    (1 for the same partition): the mutual information sums over at most r contingency cells terms
    p_ij (log n_ij − log r − log n_i n_j + 2 log r), of sizes up to 6 p_ij log r, and the entropies over at
    most r clusters; a cell's term, the sums and the division by the mean entropy H (that of ``groups``, the
    smaller of the two here) are 3 reductions in sequence."""
    groups = np.asarray(groups)
    r = groups.size
    p = np.bincount(np.unique(groups, return_inverse=True)[1]) / r
    return dict(terms=r, depth=3, scale=6 * math.log(r) / float(-(p * np.log(p)).sum()))


def planted_activations(sizes, dim=12, samples=40, seed=0):
    """Activation vectors of clients in planted clusters: cluster q's penultimate units fire on its own block
    of features (post-ReLU h), as label-disjoint clients' features do. Returns A [r, dim] and the groups."""
    gen = torch.Generator().manual_seed(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    block = dim // len(sizes)
    rows = []
    for q in groups:
        base = torch.zeros(dim, dtype=F64)
        base[q * block : (q + 1) * block] = 3.0
        h = torch.relu(base + torch.randn(samples, dim, generator=gen, dtype=F64))
        rows.append(torch.log_softmax(h, -1).mean(0))  # Definition 1, mean over samples
    return torch.stack(rows), groups


def cluster_totals(result):
    return np.bincount(result.labels, weights=result.weights)


# ------------------------------------------------------------------------------------------------------
# the reductions: which client statistic each one is
# ------------------------------------------------------------------------------------------------------


def test_reductions_map_to_the_engine_statistic():
    assert set(REDUCTIONS) == {"last_epoch_mean", "last_batch_mean", "post_train_mean"}
    default = activation_statistic()
    assert type(default) is ActivationMean and (default.transform, default.window) == (
        "log_softmax",
        "last_epoch",
    )
    assert isinstance(activation_statistic("last_batch_mean"), LastBatchActivationMean)
    assert activation_statistic("post_train_mean") is None  # computed by the server after training
    assert AC.check_reduction("last_batch_mean") == "last_batch_mean"


def test_last_batch_statistic_starts_at_each_clients_last_completed_step():
    schedule = draw_schedule(torch.arange(20).view(2, 10), np.array([10, 7]), 3, epochs=2, seed=0)
    acc = LastBatchActivationMean().start(schedule)
    assert acc["first"].tolist() == [7, 5]  # 2 x ceil(10/3) = 8 and 2 x ceil(7/3) = 6 steps
    assert ActivationMean().start(schedule)["first"].tolist() == [4, 3]  # the last epoch's steps


# ------------------------------------------------------------------------------------------------------
# similarity and spectral embedding (Algorithm 1, lines 15-17)
# ------------------------------------------------------------------------------------------------------


def test_similarity_gram_and_cosine_by_hand():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    assert np.array_equal(similarity_matrix(a), [[1, 1, 0], [1, 2, 2], [0, 2, 4]])
    r2 = 1 / math.sqrt(2)
    cosine = [[1, r2, 0], [r2, 1, r2], [0, r2, 1]]
    # unit rows (a norm of 2 terms and a division) and their dot products of 2 terms, against 1 / √2 (two
    # roundings): 3 reductions of 2 terms
    assert_close(similarity_matrix(a, "cosine"), cosine, terms=2, depth=3, what="cosine similarities")


def test_literal_embedding_is_the_top_eigenvectors_of_s():
    a, _ = planted_activations([2, 3, 4])
    s = similarity_matrix(a)
    u = spectral_embedding(s, 3)
    lam = np.linalg.eigvalsh(s)[::-1][:3]
    # eigh is backward stable: it reduces the n × n S to tridiagonal form by Householder reflections in
    # sequence (2n reductions of n terms, as the SVD in tests/gossip/test_topology.py::gap_bound), so its
    # eigenpairs are exact for S + E, ‖E‖ ≤ 2n γ_n ‖S‖_F: the residual S u − λ u is bounded by that, plus
    # the product S u (and eigvalsh's own λ, another such reduction); u's columns are orthonormal to the same
    # order
    n = s.shape[0]
    eig = dict(terms=n, depth=2 * (2 * n) + 1)
    assert_close(s @ u, u * lam, **eig, scale=float(np.linalg.norm(s)), what="S u against λ u")
    assert_close(u.T @ u, np.eye(3), **eig, scale=1.0, what="uᵀ u")


def test_normalised_variants_have_unit_rows_and_use_the_normalised_affinity():
    a, _ = planted_activations([2, 3])
    s = similarity_matrix(a)
    for variant in ("row_normalised", "normalised_laplacian"):
        norms = np.linalg.norm(spectral_embedding(s, 2, variant), axis=1)
        assert_close(norms, np.ones(5), terms=2, depth=2, what=variant)  # rows of 2 / their norm, norm again
    d = s.sum(1)
    m = s / np.sqrt(np.outer(d, d))
    lam, vectors = np.linalg.eigh(m)
    u = vectors[:, ::-1][:, :2]
    expected = u / np.linalg.norm(u, axis=1, keepdims=True)
    got = spectral_embedding(s, 2, "normalised_laplacian")
    signs = np.sign((got * expected).sum(0))  # eigenvectors are defined up to sign
    # D^-1/2 S D^-1/2 formed in two ways (one reduction) and two backward-stable eighs of the n × n matrix (2n
    # reductions of n terms each, relative to ‖M‖_F, as above); an eigenvector moves by at most the matrix's
    # perturbation over its eigenvalue's gap to the others (Davis–Kahan), and the unit rows by at most twice
    # that over the smallest row norm
    n, gap = m.shape[0], min(lam[-1] - lam[-2], lam[-2] - lam[-3])
    scale = 2 * float(np.linalg.norm(m)) / (gap * np.linalg.norm(u, axis=1).min())
    assert_close(got, expected * signs, terms=n, depth=2 * (2 * n) + 2, scale=scale, what="embedding")


# ------------------------------------------------------------------------------------------------------
# equitable weights (Eq. 6) and the spec's worked examples
# ------------------------------------------------------------------------------------------------------


VARIANTS = [
    (similarity, spectral)
    for similarity in ("gram", "cosine")
    for spectral in ("literal", "row_normalised", "normalised_laplacian")
]


@pytest.mark.parametrize(
    "sizes, similarity, spectral",
    [(sizes, "gram", "literal") for sizes in ([1, 3], [4, 6], [8, 36, 16, 18, 12])]
    + [([2, 3, 5], *variant) for variant in VARIANTS],
)
def test_m1_perfect_clusters_weigh_exactly_one_over_c(sizes, similarity, spectral):
    # M1: weights sum to 1 and each found cluster's weight is exactly 1/C; the planted clusters are found
    a, groups = planted_activations(sizes, dim=10 * len(sizes))
    res = cluster_weights(a, len(sizes), similarity=similarity, spectral=spectral)
    assert_close(cluster_nmi(res.labels, groups), 1.0, **nmi_bound(groups), what="NMI")
    assert not res.fallback_used and res.effective_clusters == len(sizes)
    # a cluster's weights fl(1/(C n_q)) summed over its n_q members; all r weights summed
    assert_close(cluster_totals(res), np.full(len(sizes), 1 / len(sizes)), terms=max(sizes), what="totals")
    assert_close(res.weights.sum(), 1.0, terms=sum(sizes), what="sum of the weights")
    assert np.array_equal(res.weights, 1 / (len(sizes) * np.asarray(sizes)[groups]))


def test_m2_worked_example_equitable_half_half_against_fedprox_0_18():
    # one participant of cluster 1 (N = 3200) and three of cluster 2 (N = 4800 each)
    a, groups = planted_activations([1, 3])
    res = cluster_weights(a, 2)
    assert np.array_equal(res.labels, groups)
    assert np.array_equal(res.weights, [1 / 2, 1 / 6, 1 / 6, 1 / 6])
    assert np.array_equal(cluster_totals(res), [0.5, 0.5])
    n = np.array([3200, 4800, 4800, 4800])
    fedprox_cluster1 = (n / n.sum())[groups == 0].sum()
    assert fedprox_cluster1 == 2 / 11  # 3200 / 16400 (integer sum) and 2 / 11: one real number, one rounding
    assert round(fedprox_cluster1, 2) == 0.18


def test_c_equal_one_is_the_uniform_average_over_participants():
    a, _ = planted_activations([2, 3])
    res = cluster_weights(a, 1)
    assert np.array_equal(res.labels, np.zeros(5, dtype=np.int64))
    assert np.array_equal(res.weights, np.full(5, 0.2))
    assert not res.fallback_used


def test_equitable_weights_by_hand_and_label_names_do_not_matter():
    res = equitable_weights([7, 7, 3, 7, 9], 3)
    assert np.array_equal(res.labels, [0, 0, 1, 0, 2])  # numbered by first appearance
    assert np.array_equal(res.weights, [1 / 9, 1 / 9, 1 / 3, 1 / 9, 1 / 3])  # 1.0 / (3 · 3) is 1 / 9
    renamed = equitable_weights(np.array(["b", "b", "a", "b", "c"]), 3)
    assert np.array_equal(renamed.weights, res.weights) and np.array_equal(renamed.labels, res.labels)


# ------------------------------------------------------------------------------------------------------
# degenerate cases (fallbacks) and determinism
# ------------------------------------------------------------------------------------------------------


def test_fallback_when_participants_equal_clusters():
    a, _ = planted_activations([2, 1])
    res = cluster_weights(a, 3)
    assert res.fallback_used and res.fallback == "one participant per cluster"
    assert np.array_equal(res.labels, [0, 1, 2]) and np.array_equal(res.weights, np.full(3, 1 / 3))
    single = cluster_weights(a[:1], 1)
    assert single.fallback_used and np.array_equal(single.weights, [1.0])


def test_fallback_when_a_cluster_is_empty_uses_the_clusters_found():
    res = equitable_weights([0, 0, 1, 1, 1], 3)
    assert res.fallback_used and res.fallback == "empty cluster" and res.effective_clusters == 2
    assert_close(cluster_totals(res), [0.5, 0.5], terms=3, what="totals")  # fl(1/6) summed 3 times
    full = equitable_weights([0, 0, 1, 2, 1], 3)
    assert not full.fallback_used and full.fallback == "" and full.effective_clusters == 3


def test_kmeans_on_fewer_distinct_points_than_c_returns_fewer_labels_without_warning(recwarn):
    labels = kmeans_labels(np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]), 3)
    assert np.unique(labels).size == 2 and equitable_weights(labels, 3).fallback_used
    assert not recwarn.list


def test_no_fallback_in_the_regular_case():
    a, _ = planted_activations([2, 3])
    res = cluster_weights(a, 2)
    assert not res.fallback_used and res.fallback == "" and res.num_clusters == 2


def test_kmeans_is_sklearns_with_the_seed_and_deterministic():
    u = np.random.default_rng(0).normal(size=(30, 3))  # no cluster structure
    labels = kmeans_labels(u, 3, seed=5)
    assert np.array_equal(labels, kmeans_labels(u, 3, seed=5))
    reference = KMeans(n_clusters=3, n_init=10, random_state=5).fit_predict(u)
    assert_close(cluster_nmi(labels, reference), 1.0, **nmi_bound(reference))  # same partition, renumbered
    assert labels[0] == 0 and np.array_equal(np.unique(labels[: np.argmax(labels == 2)]), [0, 1])
    a, _ = planted_activations([3, 4, 3], dim=30)
    assert np.array_equal(cluster_weights(a, 3, seed=4).labels, cluster_weights(a, 3, seed=4).labels)


def test_participant_order_permutes_the_weights():
    a, groups = planted_activations([2, 3, 5], dim=30)
    perm = np.random.default_rng(1).permutation(len(groups))
    res, res_perm = cluster_weights(a, 3), cluster_weights(a[perm], 3)
    assert np.array_equal(res_perm.weights, res.weights[perm])
    assert_close(cluster_nmi(res_perm.labels, groups[perm]), 1.0, **nmi_bound(groups))


# ------------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------------

A4 = planted_activations([2, 2])[0]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: cluster_weights(A4, 0), r"num_clusters \(C\) must be an integer >= 1"),
        (lambda: cluster_weights(A4, 2.0), r"num_clusters \(C\) must be an integer >= 1"),
        (lambda: cluster_weights(A4, 5), "num_clusters=5 exceeds the 4 participants.*at least 5 clients"),
        (
            lambda: cluster_weights(A4, 2, similarity="l2"),
            r"similarity must be one of \('gram', 'cosine'\), got 'l2'",
        ),
        (lambda: cluster_weights(A4, 2, spectral="njw"), "spectral must be one of .*'normalised_laplacian'"),
        (lambda: cluster_weights(A4, 4, spectral="njw"), "spectral must be one of"),
        (lambda: cluster_weights(A4[0], 1), r"activations must be a non-empty \[r, D\] matrix"),
        (lambda: cluster_weights(A4 * math.nan, 1), r"NaN or inf in the rows of participant\(s\) \[0, 1, 2"),
        (lambda: similarity_matrix(np.zeros((2, 3)), "cosine"), "are zero.*use similarity='gram'"),
        (lambda: spectral_embedding(-np.ones((3, 3)), 2, "normalised_laplacian"), "positive row sums"),
        (lambda: spectral_embedding(np.ones((2, 3)), 1), r"symmetric \[r, r\]"),
        (lambda: equitable_weights([0, 1, 2], 2), "3 distinct clusters but num_clusters=2"),
        (lambda: equitable_weights([], 2), "labels must be a non-empty 1-D vector"),
        (
            lambda: AC.check_reduction("mean"),
            r"reduction must be one of \('last_epoch_mean', 'last_batch_mean'",
        ),
        (lambda: activation_statistic("max"), "reduction must be one of"),
    ],
)
def test_bad_input_raises_value_error_naming_the_field(call, match):
    with pytest.raises(ValueError, match=match):
        call()
