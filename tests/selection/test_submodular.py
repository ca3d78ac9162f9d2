import itertools

import numpy as np
import pytest
import torch

from fairfl_core.selection.facility_location import (
    FacilityLocation,
    greedy,
    lazy_greedy,
    normalize_distances,
    pairwise_distances,
    stochastic_greedy,
)
from fairfl_core.selection.submodular import (
    OBJECTIVE_SCALES,
    averaged_scale,
    literal_scale,
    loss_transform,
    maximize,
    normalised_scale,
    recent_union,
    scale_objective,
    selection_trace,
    stop_before_loss,
    subtrunc_objective,
    trace_summary,
    unionfl_objective,
)
from tests.rounding import assert_close, reduction_tolerance


def random_dist(seed, n=7, dim=3):
    rng = np.random.default_rng(seed)
    return pairwise_distances(torch.as_tensor(rng.standard_normal((n, dim))))


def random_subtrunc(seed, n=7, phi="log1p"):
    rng = np.random.default_rng(100 + seed)
    losses = rng.random(n) * 2.5
    # a budget inside the range of the subset sums, so some subsets are truncated and some are not
    budget = 0.4 * float(loss_transform(losses, phi).sum())
    return subtrunc_objective(random_dist(seed, n), losses, lam=0.7 + seed, budget=budget, phi=phi)


def random_unionfl(seed, n=7):
    rng = np.random.default_rng(200 + seed)
    history = [rng.choice(n, 2, replace=False) for _ in range(3)]
    return unionfl_objective(random_dist(seed, n), history, mu=0.3 + seed, window=2)


def subset(mask, n):
    return [i for i in range(n) if mask >> i & 1]


def value_table(obj):
    n = obj.num_candidates
    return np.array([obj.value(subset(mask, n)) for mask in range(1 << n)])


def diminishing_returns_and_monotone(values, n):
    """(Δ(e|A) ≥ Δ(e|B) for all A ⊆ B, e ∉ B;  f(A) ≤ f(A ∪ {e}) for all A, e), from all subsets' values.
    Equal gains in real arithmetic may differ by rounding: each value is off by at most γ_{n+2} of the largest
    value (n distance terms, n·D0, the bonus and H), so a gain, a difference of two, by twice that, and two
    gains compared by 4 γ_{n+2}: depth 2 of tests/rounding.py's bound."""
    tol = reduction_tolerance(terms=n + 2, depth=2) * float(np.abs(values).max())
    submodular = monotone = True
    for b in range(1 << n):
        a = b
        while True:  # every submask a of b
            for e in range(n):
                if not b >> e & 1:
                    gain_a = values[a | 1 << e] - values[a]
                    gain_b = values[b | 1 << e] - values[b]
                    submodular &= gain_a >= gain_b - tol
                    monotone &= gain_a >= -tol
            if a == 0:
                break
            a = (a - 1) & b
    return bool(submodular), bool(monotone)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("build", [random_subtrunc, random_unionfl])
def test_marginal_gains_match_brute_force(seed, build):
    obj = build(seed)
    n, values = obj.num_candidates, value_table(obj)
    for mask in range(1 << n):
        state = obj.start()
        for e in subset(mask, n):
            obj.add(state, e)
        outside = np.array([e for e in range(n) if not mask >> e & 1], dtype=np.int64)
        if len(outside) == 0:
            continue
        brute = values[mask | (1 << outside)] - values[mask]
        # incremental gains against differences of values: each value sums n distance terms, n·D0, the bonus
        # and λ·min(b, Σφ) (n + 2 terms), and the difference of two values takes 2 such reductions; the
        # terms' sizes are bounded by the largest value
        bound = dict(terms=n + 2, depth=2, scale=float(np.abs(values).max()))
        assert_close(obj.gains(state, outside), brute, **bound, what=f"gains after {subset(mask, n)}")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("phi", ["log1p", "identity"])
def test_subtrunc_is_monotone_submodular(seed, phi):
    obj = random_subtrunc(seed, phi=phi)
    assert diminishing_returns_and_monotone(value_table(obj), obj.num_candidates) == (True, True)


@pytest.mark.parametrize("seed", range(3))
def test_unionfl_is_submodular(seed):
    obj = random_unionfl(seed)
    submodular, _ = diminishing_returns_and_monotone(value_table(obj), obj.num_candidates)
    assert submodular


def test_unionfl_is_not_monotone():
    # clients 0 and 1 have the same gradient and 1 was selected last round: once 0 is in S, adding 1
    # represents nobody better (ΔG = 0) and costs μ, so h({0, 1}) = h({0}) − μ
    dist = pairwise_distances(torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]], dtype=torch.float64))
    obj = unionfl_objective(dist, [[1]], mu=1.0, window=1)
    assert obj.value([0, 1]) == obj.value([0]) - 1.0
    assert diminishing_returns_and_monotone(value_table(obj), 3) == (True, False)
    # the same instance without the penalty is monotone (G alone)
    assert diminishing_returns_and_monotone(value_table(FacilityLocation(dist)), 3) == (True, True)


def test_truncation_is_active_exactly_when_the_phi_sum_exceeds_b():
    rng = np.random.default_rng(0)
    n, lam, b = 8, 0.9, 1.1
    losses = rng.random(n) * 1.5
    phi = np.log1p(losses)
    obj = subtrunc_objective(np.zeros((n, n)), losses, lam=lam, budget=b)  # G ≡ 0: W = H
    actives = set()
    for r in range(n + 1):
        for s in itertools.combinations(range(n), r):
            total = float(phi[list(s)].sum())
            h = obj.value(s)
            active = total > b
            actives.add(active)
            assert h == lam * min(total, b)
            assert (h < lam * total) == active
    assert actives == {False, True}
    # along a greedy path: an element's gain is its full λ·φ until the budget binds, then only what is left
    state = obj.start()
    for e in range(n):
        before = state.used
        gain = float(obj.gains(state, np.array([e]))[0])
        assert gain == lam * (min(b, before + phi[e]) - min(b, before))  # the same operations (G's gain is 0)
        # unsaturated, λ·((Σφ + φ_e) − Σφ) equals λ φ_e up to the rounding of the sum, the difference and the
        # products: 2γ_2 of λ (Σφ + φ_e); saturated, it is λ (b − Σφ), less than λ φ_e by far more
        full = abs(gain - lam * phi[e]) <= reduction_tolerance(terms=2) * lam * (before + phi[e])
        assert full == (before + phi[e] <= b)
        obj.add(state, e)


def test_one_pick_saturates_the_budget_at_initial_losses():
    # the paper's b = 1.10 with φ = ln(1+x) and losses ≈ ln 10 (a 10-class model at initialisation)
    dist = random_dist(0, n=6)
    obj = subtrunc_objective(dist, np.full(6, np.log(10.0)), lam=5.0, budget=1.10)
    state = obj.start()
    obj.add(state, 3)
    all_others = np.array([0, 1, 2, 4, 5])
    assert np.array_equal(obj.gains(state, all_others), FacilityLocation(dist).gains(state, all_others))


def test_large_lambda_and_budget_pick_the_highest_loss_of_each_pool():
    n, k, r = 30, 6, 5
    losses = np.random.default_rng(1).permutation(n) * 0.1  # φ gaps ≥ 0.02: λ·φ outweighs G's gains (< 200)
    obj = subtrunc_objective(random_dist(1, n), losses, lam=1e6, budget=np.inf)
    assert np.array_equal(lazy_greedy(obj, k), np.argsort(-losses)[:k])
    picked = maximize(obj, k, rng=np.random.default_rng(4), pool_size=r)
    rng, remaining = np.random.default_rng(4), np.arange(n)
    for e in picked:
        pool = rng.choice(remaining, size=r, replace=False)
        assert e == pool[np.argmax(losses[pool])]
        remaining = remaining[remaining != e]


@pytest.mark.parametrize("seed", range(4))
def test_zero_lambda_and_zero_mu_reduce_to_divfl(seed):
    n, k, r = 20, 5, 4
    dist = random_dist(seed, n)
    losses = np.random.default_rng(seed).random(n)
    divfl = FacilityLocation(dist)
    history = [[0, 1, 2], [3, 4], lazy_greedy(divfl, k)]
    subtrunc = subtrunc_objective(dist, losses, lam=0.0)
    unionfl = unionfl_objective(dist, history, mu=0.0, window=2)
    expected = stochastic_greedy(divfl, k, np.random.default_rng(seed), r)
    for obj in (subtrunc, unionfl):
        assert np.array_equal(maximize(obj, k, rng=np.random.default_rng(seed), pool_size=r), expected)
        assert np.array_equal(maximize(obj, k, method="lazy"), lazy_greedy(divfl, k))
    # with the terms switched on, the same seed gives another selection
    assert not np.array_equal(
        maximize(unionfl_objective(dist, history, mu=1e3, window=2), k, method="lazy"), lazy_greedy(divfl, k)
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("build", [random_subtrunc, random_unionfl])
def test_stochastic_greedy_with_r_equal_n_is_lazy_greedy(seed, build):
    obj = build(seed, n=12)
    for k in (1, 4, 12):
        full = maximize(obj, k, rng=np.random.default_rng(seed), pool_size=12)
        assert np.array_equal(full, maximize(obj, k, method="lazy"))
        assert np.array_equal(full, maximize(obj, k, method="naive"))


@pytest.mark.parametrize("build", [random_subtrunc, random_unionfl])
def test_seeded_determinism(build):
    obj = build(0, n=40)
    runs = {
        seed: [maximize(obj, 10, rng=np.random.default_rng(seed), pool_size=10) for _ in range(2)]
        for seed in range(5)
    }
    for first, second in runs.values():
        assert np.array_equal(first, second) and len(set(first.tolist())) == 10
    assert len({tuple(first) for first, _ in runs.values()}) > 1


def test_nonmonotone_fill_takes_k_and_stop_cuts_before_a_loss():
    # 4 clients in two identical pairs; last round picked 1 and 3. After 0 and 2 nothing is gained, and
    # every remaining candidate costs μ
    pts = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 0.0], [5.0, 0.0]], dtype=torch.float64)
    obj = unionfl_objective(pairwise_distances(pts), [[1, 3]], mu=1.0, window=5)
    fill = maximize(obj, 3, method="lazy")
    assert sorted(fill[:2].tolist()) == [0, 2] and len(fill) == 3
    assert np.array_equal(maximize(obj, 3, method="lazy", nonmonotone="stop"), fill[:2])
    assert obj.value(fill) == obj.value(fill[:2]) - 1.0
    # the first pick stays whatever its gain: it carries the auxiliary constant n·D0
    heavy = unionfl_objective(pairwise_distances(pts), [[0, 1, 2, 3]], mu=1e6, window=1)
    assert len(maximize(heavy, 3, method="lazy", nonmonotone="stop")) == 1
    # a monotone objective never stops early
    sub = random_subtrunc(0, n=12)
    assert np.array_equal(stop_before_loss(sub, lazy_greedy(sub, 12)), lazy_greedy(sub, 12))


def test_recent_union_uses_the_last_window_rounds():
    history = [[0, 1], [2], np.array([3, 4]), []]
    assert np.flatnonzero(recent_union(history, 3, 6)).tolist() == [2, 3, 4]
    assert np.flatnonzero(recent_union(history, 10, 6)).tolist() == [0, 1, 2, 3, 4]  # t < window
    assert not recent_union([], 5, 6).any()
    obj = unionfl_objective(random_dist(0, n=6), history, mu=0.5, window=3)
    assert obj.bonus.tolist() == [0, 0, -0.5, -0.5, -0.5, 0]


def test_distance_scale_mean_changes_the_balance_with_mu():
    dist = random_dist(2, n=6)
    scaled = normalize_distances(dist, "mean")
    # the mean of the 30 off-diagonal distances (a sum of 36 terms) divides them, which sum to 30 means again
    assert_close((scaled.sum() - np.trace(scaled)) / 30, 1.0, terms=36, depth=2)
    assert np.array_equal(normalize_distances(dist), dist)
    assert np.array_equal(normalize_distances(np.zeros((3, 3)), "mean"), np.zeros((3, 3)))
    # G alone: the same choices in any units
    assert np.array_equal(lazy_greedy(FacilityLocation(scaled), 3), lazy_greedy(FacilityLocation(dist), 3))
    # five clients close together and one far away (client 5), which was selected last round: leaving it
    # out costs about 10 / mean distance ≈ 3 in mean units, more than μ = 1, but only 0.01 in raw units
    # when the gradients are 1000 times smaller
    rng = np.random.default_rng(0)
    pts = np.concatenate([0.1 * rng.standard_normal((5, 2)), [[10.0, 0.0]]])
    tiny = pairwise_distances(torch.as_tensor(pts)) * 1e-3
    raw = maximize(unionfl_objective(tiny, [[5]], window=1), 2, method="lazy")
    mean = maximize(unionfl_objective(tiny, [[5]], window=1, distance_scale="mean"), 2, method="lazy")
    assert 5 not in raw and 5 in mean
    same = unionfl_objective(tiny * 1e3, [[5]], window=1, distance_scale="mean")
    assert np.array_equal(mean, maximize(same, 2, method="lazy"))


def test_bad_inputs_name_the_field():
    dist, losses = random_dist(0, n=5), np.ones(5)
    for b in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match=r"budget \(b\) must be positive"):
            subtrunc_objective(dist, losses, lam=0.5, budget=b)
    with pytest.raises(ValueError, match=r"lam \(λ\) must be non-negative"):
        subtrunc_objective(dist, losses, lam=-0.1)
    with pytest.raises(ValueError, match="phi must be one of"):
        subtrunc_objective(dist, losses, lam=0.5, phi="sqrt")
    with pytest.raises(ValueError, match="losses must be"):
        subtrunc_objective(dist, -losses, lam=0.5)
    with pytest.raises(ValueError, match="phi must have one entry per candidate"):
        subtrunc_objective(dist, np.ones(4), lam=0.5)
    for window in (0, -2, 1.5):
        with pytest.raises(ValueError, match="window"):
            unionfl_objective(dist, [[0]], window=window)
    with pytest.raises(ValueError, match=r"mu \(μ\) must be non-negative"):
        unionfl_objective(dist, [[0]], mu=-1.0)
    with pytest.raises(ValueError, match="history holds client ids outside"):
        unionfl_objective(dist, [[5]])
    obj = subtrunc_objective(dist, losses, lam=0.5)
    for r in (0, 6):
        with pytest.raises(ValueError, match=r"pool_size \(r\) must be between 1 and the number of"):
            maximize(obj, 2, rng=np.random.default_rng(0), pool_size=r)
    with pytest.raises(ValueError, match="cannot select 6 of 5"):
        maximize(obj, 6, method="lazy")
    with pytest.raises(ValueError, match="needs rng"):
        maximize(obj, 2)
    with pytest.raises(ValueError, match="method must be one of"):
        maximize(obj, 2, method="exact")
    with pytest.raises(ValueError, match="nonmonotone must be one of"):
        maximize(obj, 2, method="lazy", nonmonotone="skip")
    with pytest.raises(ValueError, match="distance scale must be one of"):
        normalize_distances(dist, "max")
    with pytest.raises(ValueError, match="square"):
        normalize_distances(dist[:, :3], "mean")


# G's scale against H (objective_scale, docs/readings.md): d below gives D0 = 4, Ḡ(∅) = 3·4 = 12 and
# G({0}) = 12 − 6 = 6, G({1}) = 12 − 5 = 7, G({2}) = 12 − 7 = 5; φ = ln(1 + (e − 1)) = 1 for client 2 only.
HAND_DIST = np.array([[0.0, 2.0, 4.0], [2.0, 0.0, 3.0], [4.0, 3.0, 0.0]])
HAND_LOSSES = np.array([0.0, 0.0, np.e - 1])


@pytest.mark.parametrize("reading,factor", [("literal", 1.0), ("averaged", 1 / 3), ("normalised", 1 / 12)])
def test_each_objective_scale_multiplies_g_by_its_hand_computed_factor(reading, factor):
    assert OBJECTIVE_SCALES[reading](HAND_DIST) == factor  # 1.0, 1.0 / 3 and 1.0 / (3 · 4): same divisions
    g = FacilityLocation(scale_objective(HAND_DIST, reading))
    # scaled distances (one rounding), then n·D0 − Σ of 3 nearest distances: terms of sizes up to 24 factor
    values = [g.value([e]) for e in range(3)]
    assert_close(values, [6 * factor, 7 * factor, 5 * factor], terms=4, depth=2, scale=24 * factor)
    assert g.value([]) == 0.0


def test_the_scale_decides_whether_h_outweighs_g():
    """Literal: G({1}) = 7 > G({2}) + λ·φ_2 = 5 + 0.95, so G's best goes first. Averaged: 7/3 < 5/3 + 0.95;
    normalised: 7/12 < 5/12 + 0.95: the high-loss client 2 goes first."""
    first = {
        reading: int(
            greedy(subtrunc_objective(HAND_DIST, HAND_LOSSES, lam=0.95, objective_scale=reading), 1)[0]
        )
        for reading in OBJECTIVE_SCALES
    }
    assert first == {"literal": 1, "averaged": 2, "normalised": 2}


def test_normalised_scale_leaves_identical_gradients_unscaled():
    assert normalised_scale(np.zeros((3, 3))) == 1.0
    assert averaged_scale(np.zeros((4, 4))) == 0.25 and literal_scale(HAND_DIST) == 1.0


def test_an_unknown_objective_scale_names_the_choices():
    with pytest.raises(ValueError, match="objective_scale must be one of"):
        subtrunc_objective(HAND_DIST, HAND_LOSSES, lam=0.95, objective_scale="mean")


def test_the_trace_records_g_gaps_h_range_saturation_and_steering_by_hand():
    """Averaged (G/3), λ = 0.95, b = 1.1. Step 1 from ∅: G gains (6, 7, 5)/3, H gains (0, 0, 0.95): W picks
    client 2, G alone would pick 1 (steered), gap (7 − 6)/3. Step 2 from {2} (Σφ = 1 < b, not saturated):
    G gains of 0 and 1 are both (4 + 1)/3 = (2 + 3)/3, H adds 0 to both: client 0 (first), gap 0."""
    objective = subtrunc_objective(HAND_DIST, HAND_LOSSES, lam=0.95, budget=1.1, objective_scale="averaged")
    chosen = greedy(objective, 2)
    assert chosen.tolist() == [2, 0]
    steps = selection_trace(objective, chosen)
    # G's gains sum 3 terms of the scaled distances (each rounded by the scaling) and a gap is the difference
    # of two: 2 reductions of 3 terms, of sizes adding up to 7/3; H's gain is λ·φ with φ = log1p(e − 1) ≈ 1
    # (the literal e − 1, log1p, the product: 3 roundings)
    g_bound = dict(terms=3, depth=2, scale=7 / 3)
    assert_close([s["g_gap"] for s in steps], [1 / 3, 0.0], **g_bound, what="G gaps")
    assert_close([s["h_range"] for s in steps], [0.95, 0.0], terms=3, what="H ranges")
    assert [s["unsaturated"] for s in steps] == [True, True]
    assert [s["steered"] for s in steps] == [True, False]
    summary = trace_summary(steps)
    assert_close(summary["g_gap_min"], 0.0, **g_bound, what="smallest G gap")
    assert_close(summary["g_gap_median"], 1 / 6, **g_bound, what="median G gap")  # (gap + 0) / 2
    assert_close(summary["h_range_max"], 0.95, terms=3, what="largest H range")
    assert (summary["unsaturated_steps"], summary["steered_steps"]) == (2, 1)


def test_the_trace_sees_h_saturate_and_follows_the_stochastic_pools():
    """b = 0.5 < φ_2 = 1: after client 2 H is saturated; the trace uses the pools the greedy drew."""
    objective = subtrunc_objective(HAND_DIST, HAND_LOSSES, lam=0.95, budget=0.5, objective_scale="normalised")
    pools = []
    chosen = stochastic_greedy(objective, 3, np.random.default_rng(0), 2, pools)
    assert [len(p) for p in pools] == [2, 2, 1] and all(e in p for e, p in zip(chosen, pools, strict=True))
    steps = selection_trace(objective, chosen, pools)
    after = chosen.tolist().index(2) + 1
    assert [s["unsaturated"] for s in steps] == [i < after for i in range(3)]
    assert np.isnan(steps[2]["g_gap"]) and steps[2]["h_range"] == 0.0
