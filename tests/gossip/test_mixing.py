"""Gossip X ← W X over stacked client models (AFGA Algorithm 1 line 14) and its diagnostics, in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fairfl_core.gossip import (
    Mixer,
    clustered,
    complete,
    consensus_error,
    contiguous_clusters,
    disconnected,
    gossip,
    peer_messages,
    random_graph,
    ring,
    spectral_gap,
    subset_ring,
    unbalanced_complete,
)
from tests.rounding import assert_close, gamma, reduction_tolerance


def stacked(n: int, p: int = 37, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, p, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


MATRICES = {
    "ring": ring(50),
    "random": random_graph(50, 0.455, seed=1),
    "cafga_unbalanced": clustered(contiguous_clusters(50, 5), "unbalanced_complete", rho=0.335, seed=1),
    "cafga_rings": clustered(contiguous_clusters(50, 5), "ring"),
    "subset_ring": subset_ring(50, np.array([3, 17, 18, 40, 41])),
    "complete": complete(50),
}


@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("sparse", [False, True])
def test_gossip_keeps_the_average_model(name, sparse):
    X = stacked(50)
    mixer = Mixer(MATRICES[name], sparse=sparse)
    Y = X
    for _ in range(20):
        Y = mixer(Y)
    # the average moves by rounding (a product of rows of 50 terms at each of 20 steps, and the two means) and
    # by W's defect from double stochasticity at each step: 1ᵀW = 1ᵀ holds to Sinkhorn's tolerance for the
    # unbalanced clusters (topology.py), to rounding for the others. Terms of size at most max|X|.
    scale, defect = float(X.abs().max()), float(np.abs(MATRICES[name].sum(axis=0) - 1).max())
    bound = reduction_tolerance(terms=50, depth=20 + 2) * scale + 20 * defect * scale
    assert float((Y.mean(0) - X.mean(0)).abs().max()) <= bound


@pytest.mark.parametrize("name", MATRICES)
def test_sparse_and_dense_products_agree(name):
    X = stacked(50, p=101)
    dense, sparse = Mixer(MATRICES[name], sparse=False)(X), Mixer(MATRICES[name], sparse=True)(X)
    # another kernel: rows of 50 terms W_ij x_j, whose sizes add up to at most max|X| (W's rows sum to 1)
    assert_close(dense, sparse, terms=50, scale=float(X.abs().max()), what="dense against sparse W X")
    assert torch.equal(dense, torch.as_tensor(MATRICES[name]) @ X)  # the same product


@pytest.mark.parametrize("sparse", [False, True])
def test_gossip_into_a_reused_output_buffer(sparse):
    W, X = random_graph(30, 0.5, seed=0), torch.randn(30, 4, 3, dtype=torch.float64)
    mixer, buffer = Mixer(W, sparse=sparse), torch.full((30, 4, 3), float("nan"), dtype=torch.float64)
    assert mixer(X, out=buffer) is buffer
    # torch.mm's out= overload is another aten operation than the plain product (the kernel may differ): rows
    # of 30 terms whose sizes add up to at most max|X|
    assert_close(buffer, mixer(X), terms=30, scale=float(X.abs().max()), what="W X written into out")
    with pytest.raises(ValueError, match="must not be X itself"):
        mixer(X, out=X)
    with pytest.raises(ValueError, match=r"got \(30, 12\) torch.float64 for X \(30, 4, 3\)"):
        mixer(X, out=torch.empty(30, 12, dtype=torch.float64))
    with pytest.raises(ValueError, match="out must be a contiguous tensor"):
        mixer(X, out=torch.empty(30, 4, 3))  # float32


def test_sparse_storage_is_chosen_for_rings_only():
    assert Mixer(ring(50)).sparse and Mixer(clustered(contiguous_clusters(100, 5), "ring")).sparse
    assert not Mixer(complete(50)).sparse and not Mixer(ring(5)).sparse


@pytest.mark.exact_arithmetic("a row of the identity gives 1·x + 0·y + ... = x exactly in any order")
@pytest.mark.parametrize("sparse", [False, True])
def test_identity_leaves_models_unchanged(sparse):
    X = stacked(20)
    assert torch.equal(Mixer(disconnected(20), sparse=sparse)(X), X)


@pytest.mark.exact_arithmetic("the other clients' rows are rows of the identity: exact in any order")
@pytest.mark.parametrize("sparse", [False, True])
def test_subset_ring_leaves_the_other_clients_untouched(sparse):
    selected = np.array([1, 4, 6, 9])
    X = stacked(12)
    Y = Mixer(subset_ring(12, selected), sparse=sparse)(X)
    others = np.setdiff1d(np.arange(12), selected)
    assert torch.equal(Y[others], X[others])
    expected = torch.as_tensor(ring(4)) @ X[selected]
    assert_close(Y[selected], expected, terms=4, what="mixed rows")  # a dense row of 4 against a sparse row
    assert not torch.allclose(Y[selected], X[selected])


def test_complete_graph_gives_every_client_the_average():
    X = stacked(8)
    # Σ_j (1/8) x_j against (Σ_j x_j) / 8 (1/8 is exact): sums of 8 terms in two orders, of sizes ≤ max|X|
    assert_close(gossip(X, complete(8)), X.mean(0).expand(8, -1), terms=8, scale=float(X.abs().max()))


@pytest.mark.parametrize(
    "W", [ring(20), random_graph(30, 0.6, seed=2), unbalanced_complete(10, 0.335, seed=0)]
)
def test_consensus_error_decays_at_least_at_rate_rho(W):
    # X_t − 1x̄ᵀ = (W − J)^t (X_0 − 1x̄ᵀ) and ‖(W − J)^t‖₂ ≤ ρ^t, so the consensus error is ≤ ρ^{2t} × its start
    rho, mixer = spectral_gap(W), Mixer(W)
    n, p = W.shape[0], 37
    X = stacked(n, p)
    start, size = consensus_error(X), float(X.abs().max())
    # Rounding, in the square roots (‖a + b‖ ≤ ‖a‖ + ‖b‖): ρ from the SVD is off by 2n reductions of n terms
    # relative to ‖W − 11ᵀ/n‖_F (tests/gossip/test_topology.py::gap_bound), which ρ^t amplifies t times, and
    # the consensus error sums n·p terms in 2 reductions. A floor: every step leaves at most γ_n·max|X| of
    # rounding per entry (W's rows sum to 1), and W's defect from double stochasticity (Sinkhorn's tolerance
    # for unbalanced_complete, topology.py) leaks as much of the mean; later steps contract both by ρ, so at
    # most (γ_n + defect) max|X| / (1 − ρ) per entry, and p times its square in the consensus error.
    frobenius = float(np.linalg.norm(W - 1 / n))
    defect = float(np.abs(W.sum(axis=1) - 1).max())
    floor = math.sqrt(p) * (gamma(n) + defect) * size / (1 - rho)
    for t in range(1, 61):
        X = mixer(X)
        relative = reduction_tolerance(terms=n, depth=t * 2 * n) * frobenius / rho
        relative += reduction_tolerance(terms=n * p, depth=2)
        assert math.sqrt(consensus_error(X)) <= rho**t * math.sqrt(start) * (1 + relative) + floor


def test_ring_rate_is_attained_by_its_slowest_mode():
    n = 16
    phase = 2 * np.pi * np.arange(n) / n
    X = torch.as_tensor(np.stack([np.cos(phase), np.sin(phase)], axis=1))  # eigenvectors of λ_1
    rho, mixer, start = spectral_gap(ring(n)), Mixer(ring(n)), consensus_error(X)
    frobenius = float(np.linalg.norm(ring(n) - 1 / n))
    for t in range(1, 31):
        X = mixer(X)
        # rounding bound: ρ from the SVD is off by 2n reductions of n terms relative to ‖W − 11ᵀ/n‖_F
        # (tests/gossip/test_topology.py::gap_bound), which ρ^{2t} multiplies 2t times relative to ρ; t gossip
        # steps on both coordinates (2t), and the consensus error's mean and sum over 2n entries, and start's
        scale = rho ** (2 * t) * start * frobenius / rho
        bound = dict(terms=2 * n, depth=2 * t * (2 * n + 1) + 3, scale=scale)
        assert_close(consensus_error(X), rho ** (2 * t) * start, **bound, what=f"consensus error, step {t}")


def test_repeated_ring_gossip_converges_to_the_average():
    X0 = stacked(6)
    X, mixer = X0, Mixer(ring(6))
    for _ in range(100):  # ρ = 2/3, ρ^100 ≈ 2.5e-18
        X = mixer(X)
    # a convergence check, not a rounding bound: what is left of the spread (ρ^100) plus the rounding of 100
    # steps, which the same contraction damps
    assert torch.allclose(X, X0.mean(0).expand(6, -1), rtol=0, atol=1e-13)


def test_consensus_error_by_hand():
    X = torch.tensor([[0.0, 0.0], [2.0, 0.0], [1.0, 3.0]], dtype=torch.float64)  # mean (1, 1): 2 + 2 + 4
    assert consensus_error(X) == 8 / 3  # integer mean, squares and sum: exact in any order, then 8 / 3
    assert consensus_error(X.reshape(3, 1, 2)) == 8 / 3
    assert consensus_error(torch.ones(4, 5, dtype=torch.float64)) == 0.0


def test_peer_messages_per_gossip_step():
    assert peer_messages(ring(50)) == 100  # 2 per client
    assert peer_messages(ring(2)) == 2 and peer_messages(ring(1)) == 0
    assert peer_messages(complete(10)) == 90
    assert peer_messages(disconnected(10)) == 0
    assert peer_messages(clustered(contiguous_clusters(50, 5), "ring")) == 100  # same as AFGA's ring
    assert Mixer(subset_ring(50, np.array([2, 8, 30, 31]))).peer_messages == 8


def test_stacked_state_mixes_parameters_and_batchnorm_statistics():
    W = ring(6)
    g = torch.Generator().manual_seed(0)
    state = {
        "conv.weight": torch.randn(6, 3, 2, generator=g, dtype=torch.float64),
        "bn.running_mean": torch.randn(6, 4, generator=g, dtype=torch.float64),
        "bn.running_var": torch.rand(6, 4, generator=g, dtype=torch.float64),
        "bn.num_batches_tracked": torch.arange(6),
    }
    mixed = Mixer(W).state(state)
    Wt = torch.as_tensor(W)
    for name in ("conv.weight", "bn.running_mean", "bn.running_var"):
        expected = (Wt @ state[name].reshape(6, -1)).reshape(state[name].shape)
        assert torch.equal(mixed[name], expected)  # the same product
    assert mixed["bn.num_batches_tracked"] is state["bn.num_batches_tracked"]


def test_float32_and_float64_share_one_mixer():
    mixer, X = Mixer(ring(40)), stacked(40)
    # float32 against float64: five roundings in float32 (X and W cast, the product, the sum of a ring row's
    # 3 terms), of terms whose sizes add up to at most max|X|
    assert_close(mixer(X.float()), mixer(X), terms=5, scale=float(X.abs().max()), dtype=torch.float32)
    assert mixer(X.float()).dtype == torch.float32


def test_bad_gossip_inputs_are_refused():
    mixer = Mixer(ring(5))
    with pytest.raises(ValueError, match=r"W is 5 × 5, the tensor has shape \(4, 3\)"):
        mixer(torch.zeros(4, 3))
    with pytest.raises(ValueError, match="gossip mixes floating tensors, got dtype torch.int64"):
        mixer(torch.zeros(5, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="not doubly stochastic"):
        Mixer(np.array([[0.5, 0.5], [0.2, 0.8]]))
    with pytest.raises(ValueError, match="consensus error needs one row per client"):
        consensus_error(torch.tensor(1.0))
