import itertools

import numpy as np
import pytest
import torch

from fairfl_core.selection.facility_location import (
    GRAM_RELATIVE_ERROR,
    FacilityLocation,
    facility_location_cost,
    facility_location_gain,
    greedy,
    lazy_greedy,
    pairwise_distances,
    stochastic_greedy,
    stochastic_pool_size,
)

D3 = np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 2.0], [4.0, 2.0, 0.0]])


def clustered_points(seed=0, per=5, spread=0.05):
    """Three tight clusters far apart (known answer: one pick per cluster)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    pts = np.concatenate([c + spread * rng.standard_normal((per, 2)) for c in centres])
    return pts, np.repeat(np.arange(3), per)


def random_objective(seed, n=9, extras=False):
    rng = np.random.default_rng(seed)
    pts = rng.standard_normal((n, 3))
    dist = pairwise_distances(torch.as_tensor(pts))
    if not extras:
        return FacilityLocation(dist)
    return FacilityLocation(
        dist, bonus=-rng.integers(0, 2, n) * 0.7, phi=np.log1p(rng.random(n) * 2), lam=0.8, budget=1.1
    )


def brute_force(objective, k):
    return max(itertools.combinations(range(objective.num_candidates), k), key=objective.value)


def test_gain_and_cost_by_hand():
    # D0 = max d = 4: Δ(e|∅) = Σ_i (4 − d_ie) = 7, 9, 6
    assert np.allclose(facility_location_gain(D3, np.full(3, 4.0), np.arange(3)), [7, 9, 6])
    # after picking 1: m = d[:, 1] = (1, 0, 2); Δ(0|{1}) = 1, Δ(2|{1}) = 2
    assert np.allclose(facility_location_gain(D3, D3[:, 1].copy(), np.array([0, 2])), [1, 2])
    assert facility_location_cost(D3, []) == 12.0
    assert facility_location_cost(D3, [1]) == 3.0
    assert facility_location_cost(D3, [1, 2]) == 1.0
    obj = FacilityLocation(D3)
    assert obj.value([1]) == 9.0 and obj.value([1, 2]) == 11.0
    assert list(greedy(obj, 2)) == [1, 2]


def test_points_in_clusters_get_one_pick_each():
    pts, cluster = clustered_points()
    obj = FacilityLocation(pairwise_distances(torch.as_tensor(pts)))
    for picked in (
        greedy(obj, 3),
        lazy_greedy(obj, 3),
        stochastic_greedy(obj, 3, np.random.default_rng(0), 15),
    ):
        assert sorted(cluster[picked]) == [0, 1, 2]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("extras", [False, True])
def test_lazy_greedy_equals_greedy(seed, extras):
    obj = random_objective(seed, extras=extras)
    for k in (1, 3, 9):
        assert np.array_equal(lazy_greedy(obj, k), greedy(obj, k))


def test_lazy_greedy_breaks_ties_like_greedy():
    dist = np.ones((4, 4)) - np.eye(4)  # every candidate has the same gain at every step
    obj = FacilityLocation(dist)
    assert list(greedy(obj, 3)) == [0, 1, 2] == list(lazy_greedy(obj, 3))


@pytest.mark.parametrize("seed", range(4))
def test_stochastic_greedy_with_full_pool_equals_greedy(seed):
    obj = random_objective(seed, extras=seed % 2 == 1)
    pool = stochastic_pool_size(obj.num_candidates, 4, subsample=1.0)
    assert np.array_equal(stochastic_greedy(obj, 4, np.random.default_rng(seed), pool), greedy(obj, 4))


def test_stochastic_greedy_picks_the_best_of_each_pool():
    obj = random_objective(0, n=30)
    picked = stochastic_greedy(obj, 5, np.random.default_rng(7), pool_size=4)
    assert len(set(picked.tolist())) == 5
    assert np.array_equal(picked, stochastic_greedy(obj, 5, np.random.default_rng(7), pool_size=4))
    # replay: every pick is the argmax over a pool of 4 drawn from the unselected candidates
    rng, state, remaining = np.random.default_rng(7), obj.start(), np.arange(30)
    for e in picked:
        pool = rng.choice(remaining, size=4, replace=False)
        assert e == pool[np.argmax(obj.gains(state, pool))]
        obj.add(state, e)
        remaining = remaining[remaining != e]


def test_pool_size_follows_the_divfl_reference():
    assert stochastic_pool_size(100, 10, 0.1) == 10  # the SubTrunc paper's r
    assert stochastic_pool_size(100, 20, 0.1) == 20
    assert stochastic_pool_size(10, 3, 1.0) == 10
    with pytest.raises(ValueError, match="subsample"):
        stochastic_pool_size(10, 3, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_greedy_near_brute_force_and_exact_for_one_pick(seed):
    obj = random_objective(seed, n=8, extras=True)
    assert obj.value(greedy(obj, 1)) == pytest.approx(obj.value(brute_force(obj, 1)))
    best = obj.value(brute_force(obj, 3))
    assert obj.value(greedy(obj, 3)) >= (1 - 1 / np.e) * best


def test_gains_along_the_greedy_path_add_up_to_the_value():
    obj = random_objective(3, extras=True)
    state, total = obj.start(), 0.0
    for e in greedy(obj, 4):
        total += float(obj.gains(state, np.array([e]))[0])
        obj.add(state, e)
    assert total == pytest.approx(obj.value(state.chosen) - obj.value([]))


def test_d0_above_the_max_does_not_change_choices_and_below_is_refused():
    obj = random_objective(1)
    bigger = FacilityLocation(obj.dist, empty_value=10 * obj.dist.max())
    assert np.array_equal(greedy(obj, 4), greedy(bigger, 4))
    with pytest.raises(ValueError, match="empty_value"):
        FacilityLocation(obj.dist, empty_value=0.5 * obj.dist.max())


def test_similarity_form_makes_the_same_choices():
    pts, _ = clustered_points(seed=2)
    sim = pts @ pts.T
    assert np.array_equal(
        greedy(FacilityLocation.from_similarity(sim), 4), greedy(FacilityLocation(sim.max() - sim), 4)
    )


def test_unionfl_penalty_and_subtrunc_truncation_steer_the_choice():
    pts, cluster = clustered_points()
    dist = pairwise_distances(torch.as_tensor(pts))
    # UnionFL (eq. 14): penalising cluster 0's members beyond their gain keeps them out
    bonus = np.where(cluster == 0, -1e3, 0.0)
    assert 0 not in cluster[greedy(FacilityLocation(dist, bonus=bonus), 3)]
    # SubTrunc (eq. 13): a large λ with a budget for one φ prefers the high-loss client first, then G decides
    phi = np.zeros(15)
    phi[7] = 1.0
    picked = greedy(FacilityLocation(dist, phi=phi, lam=1e3, budget=1.0), 3)
    assert picked[0] == 7 and sorted(cluster[picked]) == [0, 1, 2]


def test_rectangular_candidates():
    dist = np.array([[0.0, 5.0], [1.0, 4.0], [5.0, 0.5]])  # 3 clients represented by 2 candidates
    assert list(greedy(FacilityLocation(dist), 1)) == [0]  # costs 6 vs 9.5


def test_pairwise_distances_exact():
    x = torch.tensor([[0.0, 3.0], [4.0, 0.0], [0.0, 3.0]], dtype=torch.float64)
    d = pairwise_distances(x)
    assert np.allclose(d, [[0, 5, 0], [5, 0, 5], [0, 5, 0]]) and d[0, 2] == 0.0
    assert np.allclose(pairwise_distances(x[:1], x), [[0, 5, 0]])


def _exact_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """‖a − b‖ with each float32 difference exact in float64, each square rounded once (relative error
    2⁻⁵³) and the sum correctly rounded (math.fsum): the reference the Gram form is held to."""
    import math

    diff = x[:, None, :].astype(np.float64) - y[None, :, :].astype(np.float64)
    return np.sqrt([[math.fsum(row) for row in block] for block in diff**2])


def test_pairwise_distances_are_within_the_gram_bound_of_the_exact_ones():
    """float32 rows of P = 50,000 (gradient-sized): every distance within GRAM_RELATIVE_ERROR (plus the
    final square root's half ulp) of the exact one, including pairs 1e-5 apart relative to their norm, which
    the Gram form alone would get wrong (its error bound there, γ_P·4‖a‖² ≈ 2e-11‖a‖², is about 20 % of
    d² = 1e-10‖a‖²) and which are recomputed elementwise."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 50_000, generator=gen) * 0.01
    x[3] = x[0] + 1e-5 * 0.01 * torch.randn(50_000, generator=gen)  # nearly equal to row 0
    x[4] = x[1]  # equal to row 1
    y = torch.cat([x[:2], torch.randn(3, 50_000, generator=gen)])
    for a, b in ((x, None), (x, y)):
        got = pairwise_distances(a, b)
        exact = _exact_distances(a.numpy(), (a if b is None else b).numpy())
        tol = (GRAM_RELATIVE_ERROR + np.finfo(np.float64).eps) * exact
        assert (np.abs(got - exact) <= tol).all(), np.abs(got - exact).max()
    d = pairwise_distances(x)
    assert d[1, 4] == d[4, 1] == 0.0 and (np.diag(d) == 0).all() and (d == d.T).all()
    assert d[0, 3] > 0


def test_pairwise_distances_in_the_papers_regime():
    """100 clients' LeNet-5-sized gradients (P = 61,706) that share a common direction, as clients' gradients
    at one model do: the distances are far below the norms, where the Gram form cancels most; still within
    the bound of the exact distances."""
    gen = torch.Generator().manual_seed(1)
    common = torch.randn(61_706, generator=gen)
    x = common + 0.01 * torch.randn(12, 61_706, generator=gen)
    got, exact = pairwise_distances(x), _exact_distances(x.numpy(), x.numpy())
    assert (np.abs(got - exact) <= (GRAM_RELATIVE_ERROR + np.finfo(np.float64).eps) * exact).all()


def test_pairwise_distances_name_mismatched_rows():
    with pytest.raises(ValueError, match=r"\[K, P\] and \[M, P\] rows, got \(2, 3\) and \(2, 4\)"):
        pairwise_distances(torch.zeros(2, 3), torch.zeros(2, 4))


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="cannot select 4 of 3"):
        greedy(FacilityLocation(D3), 4)
    with pytest.raises(ValueError, match="non-negative"):
        FacilityLocation(-D3)
    with pytest.raises(ValueError, match="bonus must have one entry per candidate"):
        FacilityLocation(D3, bonus=np.zeros(2))
    with pytest.raises(ValueError, match="pool_size"):
        stochastic_greedy(FacilityLocation(D3), 1, np.random.default_rng(0), 0)
