"""The statistics of a verdict (``report/stats.py``) on hand-computed numbers.

Student's t quantiles used below (two-sided 95 %): t(2) = 4.3027, t(3) = 3.1824, t(4) = 2.7764,
t(6) = 2.4469."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t as student_t

from fairfl_core.report.stats import (
    FAILS,
    HOLDS,
    NOT_AT_SIZE,
    SMALLER,
    UNDETERMINED,
    Sample,
    classify,
    contrast,
    holm,
    p_values,
    seeds_to_decide,
)

SHARED = {0: "k0", 1: "k1", 2: "k2"}  # each seed's runs share partition, model and streams


def test_welch_by_hand():
    # n = 4, s = 1 a side: SE = √(1/4 + 1/4) = 0.7071, ν = 0.25 / (2 · 0.0625 / 3) = 6
    d = contrast([(1.0, Sample(10.0, 1.0, 4)), (-1.0, Sample(12.0, 1.0, 4))])
    assert d.value == -2.0 and d.se == pytest.approx(math.sqrt(0.5)) and d.df == pytest.approx(6.0)
    assert d.test.startswith("Welch t(6.0): seed summaries only")
    low, high = d.interval()
    assert low == pytest.approx(-2 - 2.446912 * math.sqrt(0.5), rel=1e-6)
    # against an exact number: the one-sample t, SE = 2/√4 = 1, ν = 3
    one = contrast([(1.0, Sample(12.5, 2.0, 4)), (-1.0, Sample(10.0))])
    assert (one.se, one.df) == (1.0, pytest.approx(3.0)) and one.test.startswith("one-sample t(3.0)")
    assert contrast([(1.0, Sample(1.0)), (-1.0, Sample(3.0))]).test == "exact numbers"


def test_a_paired_design_decides_where_welch_cannot():
    # A = 10, 20, 30 and B = 11, 21, 31.5 on seeds 0-2 that share their draws: the seed moves both by ±10
    a = Sample.of({0: 10.0, 1: 20.0, 2: 30.0}, SHARED)
    b = Sample.of({0: 11.0, 1: 21.0, 2: 31.5}, SHARED)
    paired = contrast([(1.0, a), (-1.0, b)])
    # per-seed differences −1, −1, −1.5: mean −7/6, sd = √((1/36 + 1/36 + 4/36)/2) = 0.2887, SE = 0.1667
    assert paired.paired and paired.test.startswith("paired t(2): each seed's runs share partition")
    assert paired.value == pytest.approx(-7 / 6) and paired.se == pytest.approx(
        math.sqrt(1 / 12) / math.sqrt(3)
    )
    assert paired.df == 2.0 and paired.interval()[1] < 0  # −1.1667 + 4.3027 · 0.1667 = −0.4495
    p, _ = p_values("<", paired)
    assert classify("<", paired.value, None, p, math.nan) == HOLDS
    # the same numbers as if the seeds shared nothing (keys differ): Welch, SE = √(s_a²/3 + s_b²/3) = 8.27
    unshared = Sample.of(b.values, {0: "x", 1: "y", 2: "z"})
    welch = contrast([(1.0, a), (-1.0, unshared)])
    assert not welch.paired and "partition, initial model or streams not shared" in welch.test
    mean_b = 63.5 / 3
    var_b = ((11 - mean_b) ** 2 + (21 - mean_b) ** 2 + (31.5 - mean_b) ** 2) / 2
    assert welch.se == pytest.approx(math.sqrt(100 / 3 + var_b / 3))
    p, _ = p_values("<", welch)
    assert classify("<", welch.value, None, p, math.nan) == UNDETERMINED
    # different seeds cannot be paired either
    other = Sample.of({1: 11.0, 2: 21.0, 3: 31.5}, {1: "k1", 2: "k2", 3: "k3"})
    assert "different seeds" in contrast([(1.0, a), (-1.0, other)]).test


# d = −3 or −1 with SE = √(2/3) (n = 3, s = 1 a side, Welch ν = 4): interval d ± 2.2669
@pytest.mark.parametrize(
    ("mean_a", "size", "result"),
    [
        (10.0, -3.5, HOLDS),  # d = −3: [−5.27, −0.73] excludes 0 and holds −3.5
        (10.0, -2.0, HOLDS),  # d = −3 is beyond the paper's −2 but holds it: the size is reached
        (10.0, -10.0, SMALLER),  # [−5.27, −0.73] excludes 0 and −10
        (12.0, -10.0, NOT_AT_SIZE),  # d = −1: [−3.27, 1.27] holds 0, excludes −10
        (12.0, -2.0, UNDETERMINED),  # holds both 0 and −2
        (16.0, -2.0, FAILS),  # d = +3: the opposite direction is established
        (10.0, None, HOLDS),  # no size: the direction decides
    ],
)
def test_each_verdict_class_by_hand(mean_a, size, result):
    a, b = Sample(mean_a, 1.0, 3), Sample(13.0, 1.0, 3)
    d = contrast([(1.0, a), (-1.0, b)])
    against = None if size is None else contrast([(1.0, a), (-1.0, b), (-size, Sample(1.0))])
    p, p_size = p_values("<", d, against)
    assert classify("<", d.value, size, p, p_size) == result


def test_a_relative_size_is_a_contrast_of_three_methods():
    # FedEBA+'s "3×": d = E − Q against the size 2·(Q − F), i.e. E − 3Q + 2F = 0, paired on 3 seeds.
    # E = 40, 41, 42; Q = 50, 52, 51; F = 60, 61, 62: per seed E − 3Q + 2F = 10, 7, 13 (mean 10, sd 3)
    e = Sample.of({0: 40.0, 1: 41.0, 2: 42.0}, SHARED)
    q = Sample.of({0: 50.0, 1: 52.0, 2: 51.0}, SHARED)
    f = Sample.of({0: 60.0, 1: 61.0, 2: 62.0}, SHARED)
    size = contrast([(1.0, e), (-3.0, q), (2.0, f)])
    assert size.paired and size.value == pytest.approx(10.0) and size.se == pytest.approx(math.sqrt(3.0))
    d = contrast([(1.0, e), (-1.0, q)])  # −10, −11, −9: SE = 1/√3, t(2)·SE = 2.48: the direction holds
    p, p_size = p_values("<", d, size)
    # the size interval 10 ± 4.3027·√3 = [2.55, 17.45] excludes 0: FedEBA+ lowers F's variance by 20, twice
    # q-FFL's 10, not three times
    assert classify("<", d.value, 2 * (51 - 61), p, p_size) == SMALLER


def test_equivalence_is_decided_on_its_margin():
    # d = −4, SE = √0.5, ν = 6: interval [−5.73, −2.27]
    d = contrast([(1.0, Sample(71.0, 1.0, 4)), (-1.0, Sample(75.0, 1.0, 4))])
    verdicts = {m: classify("≈", d.value, None, *p_values("≈", d, tolerance=m)) for m in (6.0, 4.0, 1.0)}
    assert verdicts == {6.0: HOLDS, 4.0: UNDETERMINED, 1.0: FAILS}
    # TOST at margin 6: one-sided p of d ≥ 6 is t_6.cdf((−4 − 6)/√0.5), of d ≤ −6 t_6.sf((−4 + 6)/√0.5),
    # the larger; doubled so that the test agrees with the 95 % two-sided interval
    p, _ = p_values("≈", d, tolerance=6.0)
    assert p == pytest.approx(2 * student_t.sf(2 / math.sqrt(0.5), 6))


def test_exact_numbers_are_decided_by_their_sign():
    exact = contrast([(1.0, Sample(10.0)), (-1.0, Sample(12.0))])
    assert classify("<", exact.value, None, *p_values("<", exact)) == HOLDS
    equal = contrast([(1.0, Sample(10.0)), (-1.0, Sample(10.0))])
    assert classify(">=", 0.0, None, *p_values(">=", equal)) == HOLDS
    assert classify(">", 0.0, None, *p_values(">", equal)) == FAILS


def test_holm_on_a_small_family_by_hand():
    # sorted 0.01, 0.03, 0.04: 3 · 0.01 = 0.03, 2 · 0.03 = 0.06, 1 · 0.04 = 0.04 → running max 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    adjusted = holm([0.2, math.nan, 0.001])
    assert (
        adjusted[0] == pytest.approx(0.2) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.002)
    )
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # 2 · 0.8 capped at 1, then the running maximum


def test_the_seeds_that_would_decide_an_undetermined_claim():
    # d = −2, s = 1 a side, n = 3: SE = 0.8165, t(4) · SE = 2.27 > 2; at n = 4: SE = 0.7071, ν = 4 · 3/2 = 6,
    # t(6) · SE = 1.730 < 2: four seeds a side decide it
    d = contrast([(1.0, Sample(10.0, 1.0, 3)), (-1.0, Sample(12.0, 1.0, 3))])
    assert seeds_to_decide(d) == 4
    assert seeds_to_decide(contrast([(1.0, Sample(10.0, 1.0, 3)), (-1.0, Sample(10.0, 1.0, 3))])) is None
