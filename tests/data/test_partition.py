"""Partitioners on crafted labels: structure, sizes, determinism, presets and errors."""

from __future__ import annotations

import numpy as np
import pytest

from fairfl_core.data import partition as P


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def assert_disjoint(parts, total=None):
    joined = np.concatenate(parts)
    assert len(np.unique(joined)) == len(joined), "a sample went to two clients"
    if total is not None:
        assert np.array_equal(np.sort(joined), np.arange(total)), "the parts do not cover the pool"
    assert all(p.dtype == np.int64 for p in parts)


def same(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# -- iid --------------------------------------------------------------------------------------------------
def test_iid_near_equal_disjoint_covering():
    parts = P.iid(103, 10, rng())
    assert sorted(len(p) for p in parts) == [10] * 7 + [11] * 3
    assert_disjoint(parts, 103)
    with pytest.raises(ValueError, match="num_clients=11 exceeds the 10 samples"):
        P.iid(10, 11, rng())


# -- shards -----------------------------------------------------------------------------------------------
def test_shards_follow_the_sorted_order_and_give_at_most_two_labels():
    labels = rng(1).permutation(np.repeat(np.arange(10), 60))  # 600 samples, 60 per class
    parts = P.shards(labels, 20, 2, rng())  # 40 shards of 15: each shard lies inside one class
    assert [len(p) for p in parts] == [30] * 20
    assert_disjoint(parts, 600)
    order = np.argsort(labels, kind="stable")
    blocks = {tuple(order[s * 15 : (s + 1) * 15]) for s in range(40)}
    for p in parts:
        assert tuple(p[:15]) in blocks and tuple(p[15:]) in blocks
        assert len(np.unique(labels[p])) <= 2


def test_shards_leave_out_the_remainder_and_honour_num_shards():
    labels = np.repeat(np.arange(5), 21)  # 105 samples, 10 shards of 10, 5 left out
    parts = P.shards(labels, 5, 2, rng())
    assert_disjoint(parts)
    assert sum(len(p) for p in parts) == 100
    assert not np.isin(np.arange(100, 105), np.concatenate(parts)).any()
    more = P.shards(labels, 5, 2, rng(), num_shards=20)  # 20 shards of 5, only 10 handed out
    assert [len(p) for p in more] == [10] * 5


def test_shards_are_deterministic_and_vary_with_the_seed():
    labels = np.repeat(np.arange(10), 30)
    assert same(P.shards(labels, 10, 2, rng(3)), P.shards(labels, 10, 2, rng(3)))
    assert not same(P.shards(labels, 10, 2, rng(3)), P.shards(labels, 10, 2, rng(4)))


def test_shards_errors_name_the_field():
    labels = np.zeros(50, dtype=np.int64)
    with pytest.raises(ValueError, match="num_shards=60 .* exceeds the 50 samples"):
        P.shards(labels, 30, 2, rng())
    with pytest.raises(ValueError, match="num_shards=3 is fewer than"):
        P.shards(labels, 2, 2, rng(), num_shards=3)
    with pytest.raises(ValueError, match="shards_per_client=0"):
        P.shards(labels, 2, 0, rng())
    with pytest.raises(ValueError, match="1-D integer"):
        P.shards(np.zeros(5), 2, 1, rng())


# -- dirichlet --------------------------------------------------------------------------------------------
def test_dirichlet_min_size_disjoint_covering_and_deterministic():
    labels = rng(2).integers(0, 10, 2000)
    parts = P.dirichlet(labels, 20, 0.1, rng(5), min_size=10)
    assert min(len(p) for p in parts) >= 10
    assert_disjoint(parts, 2000)
    assert same(parts, P.dirichlet(labels, 20, 0.1, rng(5)))
    assert not same(parts, P.dirichlet(labels, 20, 0.1, rng(6)))


def test_dirichlet_large_alpha_is_near_balanced_small_alpha_is_skewed():
    labels = np.repeat(np.arange(10), 1000)
    balanced = P.dirichlet(labels, 10, 1e4, rng())
    counts = np.stack([np.bincount(labels[p], minlength=10) for p in balanced])
    assert np.abs(counts - 100).max() <= 10  # every client ~100 of every class
    skewed = P.dirichlet(labels, 10, 0.05, rng())
    shares = np.stack([np.bincount(labels[p], minlength=10) / len(p) for p in skewed])
    assert np.median(shares.max(axis=1)) > 0.5  # most clients dominated by one class


def test_dirichlet_stops_filling_clients_that_hold_n_over_m():
    # 2 clients, 2 classes of 50; tiny alpha puts a whole class on one client, which is then full
    # (50 >= N/m), so the second class must go to the other client: succeeds on the first draw every time
    labels = np.repeat([0, 1], 50)
    for seed in range(20):
        parts = P.dirichlet(labels, 2, 1e-4, rng(seed), min_size=1, max_tries=1)
        assert sorted(len(p) for p in parts) == [50, 50]
        assert all(len(np.unique(labels[p])) == 1 for p in parts)


def test_dirichlet_errors():
    labels = np.repeat(np.arange(10), 10)
    for alpha in (0, -1.0):
        with pytest.raises(ValueError, match=f"alpha={alpha} must be > 0"):
            P.dirichlet(labels, 5, alpha, rng())
    with pytest.raises(ValueError, match="min_size=30 .* needs 150 samples"):
        P.dirichlet(labels, 5, 1.0, rng(), min_size=30)
    with pytest.raises(ValueError, match="max_tries=3"):  # exactly 10 each is (almost) never drawn
        P.dirichlet(labels, 10, 1e-3, rng(), min_size=10, max_tries=3)


# -- pathological -----------------------------------------------------------------------------------------
def test_pathological_balanced_three_distinct_classes_each_class_nine_holders():
    labels = rng(7).permutation(np.repeat(np.arange(10), 90))
    parts = P.pathological(labels, 30, 3, rng())
    assert_disjoint(parts, 900)
    held = [np.unique(labels[p]) for p in parts]
    assert all(len(h) == 3 for h in held)
    holders = np.bincount(np.concatenate(held), minlength=10)
    assert holders.tolist() == [9] * 10  # 30 * 3 / 10
    assert all(np.bincount(labels[p], minlength=10).max() == 10 for p in parts)  # 90 / 9 per holder


def test_pathological_cyclic_random_fixed_count_and_equalize():
    labels = np.repeat(np.arange(5), [40, 40, 40, 40, 30])
    cyclic = P.pathological(labels, 10, 2, rng(), assignment="cyclic")
    pairs = {tuple(sorted(np.unique(labels[p]))) for p in cyclic}
    assert len(pairs) == 5  # only C distinct client types, consecutive in a permuted order
    fixed = P.pathological(labels, 10, 2, rng(), assignment="random", samples_per_class=3)
    assert all(len(p) == 6 and len(np.unique(labels[p])) == 2 for p in fixed)
    equal = P.pathological(labels, 10, 2, rng(), equalize=True)
    assert sum(len(p) for p in equal) == 5 * 30


def test_pathological_errors():
    labels = np.repeat(np.arange(4), 5)
    with pytest.raises(ValueError, match="classes_per_client=5 must be in 1..4"):
        P.pathological(labels, 4, 5, rng())
    with pytest.raises(ValueError, match="samples_per_class=4 .* lower samples_per_class"):
        P.pathological(labels, 4, 4, rng(), samples_per_class=4)
    with pytest.raises(ValueError, match="assignment='zigzag'"):
        P.pathological(labels, 4, 2, rng(), assignment="zigzag")


# -- label groups and presets -----------------------------------------------------------------------------
def test_equitable_fl_ten_class_preset_matches_table_1():
    labels = rng(8).permutation(np.repeat(np.arange(10), 5000))
    parts, groups = P.label_groups(labels, P.equitable_fl_groups(10), rng())
    assert groups.tolist() == [0] * 4 + [1] * 6  # first 4 clients hold the first 4 classes
    assert [len(p) for p in parts] == [3200] * 4 + [4800] * 6
    assert_disjoint(parts)
    for k, p in enumerate(parts):
        counts = np.bincount(labels[p], minlength=10)
        want = [800] * 4 + [0] * 6 if k < 4 else [0] * 4 + [800] * 6
        assert counts.tolist() == want


def test_equitable_fl_cifar100_and_femnist_presets():
    labels = np.repeat(np.arange(100), 500)
    parts, groups = P.label_groups(labels, P.equitable_fl_groups(100), rng())
    assert [len(p) for p in parts] == [4400] * 2 + [4800] * 3 + [5000] * 5
    assert np.bincount(groups).tolist() == [2, 3, 5]

    labels = rng(9).integers(0, 62, 20000)
    parts, groups = P.label_groups(labels, P.equitable_fl_groups(62), rng())
    assert np.bincount(groups).tolist() == [8, 36, 16, 18, 12] and len(parts) == 90
    assert_disjoint(parts, 20000)  # each cluster's whole pool is used
    bounds = [(0, 2), (2, 10), (10, 25), (25, 45), (45, 62)]
    for g, (lo, hi) in enumerate(bounds):
        sizes = [len(p) for p, q in zip(parts, groups, strict=True) if q == g]
        assert max(sizes) - min(sizes) <= 1  # equal shards
        members = np.concatenate([p for p, q in zip(parts, groups, strict=True) if q == g])
        assert labels[members].min() >= lo and labels[members].max() < hi


def test_equitable_fl_scale_keeps_the_structure():
    groups = P.equitable_fl_groups(10, scale=0.1)
    assert [(g.num_clients, g.per_class) for g in groups] == [(4, 80), (6, 80)]
    with pytest.raises(ValueError, match="num_classes=7"):
        P.equitable_fl_groups(7)


def test_gifair_femnist_three_groups():
    labels = rng(10).permutation(np.repeat(np.arange(62), 500))
    specs = P.gifair_femnist_3groups(62, scale=0.1)
    parts, groups = P.label_groups(labels, specs, rng())
    assert np.bincount(groups).tolist() == [60, 100, 40]
    assert [len(p) for p in parts] == [80] * 60 + [100] * 100 + [60] * 40
    assert_disjoint(parts)
    used = [
        np.unique(np.concatenate([labels[p] for p, q in zip(parts, groups, strict=True) if q == g]))
        for g in range(3)
    ]
    assert used[0].max() <= 35  # capitals + digits
    assert not np.isin(np.arange(10, 36), used[1]).any()  # lower case + digits: no capitals
    assert np.isin(np.arange(62), used[2]).mean() > 0.9  # mixed: (almost) every class appears
    full = P.gifair_femnist_3groups()
    assert sum(g.num_clients * g.per_client for g in full) == 172_000  # GIFAIR-FL §5.1


def test_gifair_three_groups_on_a_ten_class_stand_in_keep_the_structure():
    """Two classes shared by every group, four only in groups 1 and 3, four only in groups 2 and 3."""
    specs = P.gifair_femnist_3groups(10, scale=0.3)
    assert [(g.num_clients, g.per_client) for g in specs] == [(60, 240), (100, 300), (40, 180)]
    one, two, mixed = (set(g.classes) for g in specs)
    assert one & two == {1, 8} and mixed == set(range(10)) and len(one) == len(two) == 6


def test_label_groups_errors():
    labels = np.repeat(np.arange(4), 10)
    with pytest.raises(ValueError, match="class 0 has 10 samples left but 12 .* lower per_class"):
        P.label_groups(labels, [P.GroupSpec("a", (0, 1), 1, per_class=12)], rng())
    with pytest.raises(ValueError, match=r"classes \[7\] have no samples"):
        P.label_groups(labels, [P.GroupSpec("a", (0, 7), 1, per_class=1)], rng())
    with pytest.raises(ValueError, match="per_client or per_class, not both"):
        P.GroupSpec("a", (0,), 1, per_client=1, per_class=1)
    with pytest.raises(ValueError, match="without repeats"):
        P.GroupSpec("a", (0, 0), 1)
    with pytest.raises(ValueError, match="62 EMNIST"):
        P.gifair_femnist_3groups(47)


# -- natural ----------------------------------------------------------------------------------------------
def test_natural_and_choose_owners():
    owners = np.array([2, 0, 2, 1, 2, 0, 5])
    parts = P.natural(owners)
    assert [p.tolist() for p in parts] == [[1, 5], [3], [0, 2, 4], [6]]
    assert P.choose_owners(owners, None, rng(), min_samples=2).tolist() == [0, 2]
    picked = P.choose_owners(owners, 2, rng())
    assert len(picked) == 2 and np.all(np.diff(picked) > 0) and np.isin(picked, [0, 1, 2, 5]).all()
    assert [p.tolist() for p in P.natural(owners, [5, 0])] == [[6], [1, 5]]
    with pytest.raises(ValueError, match="only 2 owners have >= min_samples=2"):
        P.choose_owners(owners, 3, rng(), min_samples=2)


# -- per-client test data ---------------------------------------------------------------------------------
def test_local_split_ratios():
    clients = [np.arange(600), np.arange(600, 605), np.arange(605, 606)]
    train, val, test = P.local_split(clients, 0.2, rng())
    assert [(len(a), len(b)) for a, b in zip(train, test, strict=True)] == [(480, 120), (4, 1), (1, 0)]
    assert [len(v) for v in val] == [0, 0, 0]
    for a, b, c in zip(train, test, clients, strict=True):
        assert np.array_equal(np.sort(np.concatenate([a, b])), c)
    all_train, _, no_test = P.local_split(clients, 0.0, rng())
    assert [len(t) for t in no_test] == [0, 0, 0]
    with pytest.raises(ValueError, match=r"test_frac=1.0 must be in \[0, 1\)"):
        P.local_split(clients, 1.0, rng())


def test_local_split_70_10_20_keeps_the_test_part_of_the_80_20_split():
    clients = [np.arange(500), np.arange(500, 507)]  # GIFAIR-FL FEMNIST-skewed: 500 -> 350 / 50 / 100
    train, val, test = P.local_split(clients, 0.2, rng(), val_frac=0.1)
    assert [(len(a), len(b), len(c)) for a, b, c in zip(train, val, test, strict=True)] == [
        (350, 50, 100),
        (5, 1, 1),  # 7: round(1.4) = 1 test, round(0.7) = 1 validation
    ]
    train80, _, test80 = P.local_split(clients, 0.2, rng())  # the same generator state
    for a, b, c, a80, c80 in zip(train, val, test, train80, test80, strict=True):
        assert np.array_equal(c, c80)  # adding validation leaves the test part as it was
        assert np.array_equal(np.concatenate([a, b]), a80)  # and takes the validation part from training
    assert P.holdout_size(0.1, 5) == 1 and P.holdout_size(0.1, 4) == 0  # halves round up
    with pytest.raises(ValueError, match=r"val_frac=0.8 must be >= 0 and below 1 - test_frac = 0.8"):
        P.local_split(clients, 0.2, rng(), val_frac=0.8)


def test_tail_holdout_takes_the_last_samples_behind_a_gap():
    clients = [np.arange(10), np.arange(10, 16), np.arange(16, 18)]
    kept, held = P.tail_holdout(clients, [2, 1, 0], gap=3)
    assert [k.tolist() for k in kept] == [[0, 1, 2, 3, 4], [10, 11], [16, 17]]  # 5-7, 12-14 dropped
    assert [h.tolist() for h in held] == [[8, 9], [15], []]  # nothing held out: no gap either
    with pytest.raises(ValueError, match="client 0: 4 samples cannot give 1 held out after a gap of 3"):
        P.tail_holdout([np.arange(4)], [1], gap=3)
    with pytest.raises(ValueError, match="gap=-1 must be >= 0"):
        P.tail_holdout(clients, [0, 0, 0], gap=-1)


def test_matched_test_follows_training_labels():
    train_labels = np.array([0, 0, 1, 0, 1, 1, 1])
    clients = [np.array([0, 1]), np.array([3, 2]), np.array([4, 5, 6])]  # class-0 counts 2, 1, 0
    test_labels = np.array([0] * 6 + [1] * 4 + [2] * 3)
    tests = P.matched_test(clients, train_labels, test_labels, rng())
    counts = np.stack([np.bincount(test_labels[t], minlength=3) for t in tests])
    assert counts[:, 0].tolist() == [4, 2, 0]  # 6 class-0 test images split 2:1:0
    assert counts[:, 1].tolist() == [0, 1, 3]  # 4 class-1 images split 0:1:3
    assert counts[:, 2].sum() == 0  # nobody trains on class 2
    assert_disjoint(tests)


def test_matched_test_largest_remainder_for_equal_holders():
    train_labels = np.zeros(3, dtype=np.int64)
    tests = P.matched_test(
        [np.array([0]), np.array([1]), np.array([2])], train_labels, np.zeros(10, np.int64), rng()
    )
    assert sorted(len(t) for t in tests) == [3, 3, 4]


# -- the sensitive attribute across clients (FairFed) -------------------------------------------------------
def test_sensitive_dirichlet_follows_fairfeds_draw_by_hand():
    groups = np.array([0] * 6 + [1] * 4)
    parts = P.sensitive_dirichlet(groups, 3, 0.5, rng(7), min_size=0)
    assert_disjoint(parts, total=10)
    # the same draws by hand: per group, q ~ Dir(0.5, 0.5, 0.5), then the shuffled members cut at
    # ⌊N_a Σ_{j≤k} q_j⌋
    draws = rng(7)
    expected: list[list[int]] = [[], [], []]
    for members in (np.arange(6), np.arange(6, 10)):
        q = draws.dirichlet([0.5, 0.5, 0.5])
        cuts = [int(len(members) * q[0]), int(len(members) * (q[0] + q[1]))]
        shuffled = draws.permutation(members)
        for k, piece in enumerate((shuffled[: cuts[0]], shuffled[cuts[0] : cuts[1]], shuffled[cuts[1] :])):
            expected[k] += piece.tolist()
    assert [p.tolist() for p in parts] == [sorted(e) for e in expected]
    assert same(parts, P.sensitive_dirichlet(groups, 3, 0.5, rng(7), min_size=0))  # deterministic


def test_sensitive_dirichlet_skew_follows_alpha():
    groups = np.repeat([0, 1], [3000, 1000])

    def spread(alpha: float) -> float:
        parts = P.sensitive_dirichlet(groups, 5, alpha, rng(1))
        shares = np.array([groups[p].mean() for p in parts])  # each client's share of group 1
        return float(shares.std())

    assert spread(5000.0) < 0.01 < 0.1 < spread(0.1)  # FairFed's homogeneous and most skewed levels


def test_sensitive_dirichlet_redraws_for_min_group_size_and_names_the_fix():
    groups = np.repeat([0, 1], [200, 100])
    parts = P.sensitive_dirichlet(groups, 4, 0.3, rng(2), min_group_size=5)
    assert all(np.bincount(groups[p], minlength=2).min() >= 5 for p in parts)
    with pytest.raises(ValueError) as info:
        P.sensitive_dirichlet(groups, 4, 0.01, rng(2), min_group_size=20, max_tries=3, names=["f", "m"])
    message = str(info.value)
    assert "\n" not in message and "in 3 draws" in message and "raise alpha" in message
    assert "partition_options.min_group_size" in message
    with pytest.raises(ValueError, match="need more samples than the pool holds"):
        P.sensitive_dirichlet(groups, 4, 0.5, rng(), min_group_size=30, names=["f", "m"])
    with pytest.raises(ValueError, match=r"alpha=0.0 must be > 0"):
        P.sensitive_dirichlet(groups, 4, 0.0, rng())
