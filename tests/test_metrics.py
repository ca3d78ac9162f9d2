"""Tests for fairfl_core.metrics: hand-computed cases, the papers' own numbers, degenerate and bad inputs."""

import math

import numpy as np
import pytest
import torch

from fairfl_core import metrics as M
from tests.rounding import assert_close

A4 = [60.0, 70.0, 80.0, 90.0]  # mean 75; deviations -15,-5,5,15; squares 225,25,25,225 -> var 500/4 = 125

# The metrics against hand values. Sums of small integers and dyadic fractions, and one correctly rounded
# operation (a division, a square root) on them, are exact in any order: compared with ==. Other hand values
# are compared at the rounding bound of tests/rounding.py: terms is the longest sum (or, for a chain of a few
# scalar operations, the number of roundings in it, decimal literals included: γ_n bounds n roundings, Higham
# 2002, Lemma 3.1), scale the size of the terms where they cancel. Comparisons with the papers' printed
# numbers keep the printing precision, which is no rounding bound.


def nmi_bound(groups) -> dict:
    """The rounding bound of sklearn's NMI against a value it equals in real arithmetic: the mutual
    information sums over at most r contingency cells terms p_ij (log n_ij − log r − log n_i n_j + 2 log r),
    of sizes up to 6 p_ij log r, and the entropies over at most r clusters; a cell's term, the sums and the
    division by the mean entropy (at least H, that of ``groups``, the smaller of the two) are 3 reductions."""
    groups = np.asarray(groups)
    r = groups.size
    p = np.bincount(np.unique(groups, return_inverse=True)[1]) / r
    return dict(terms=r, depth=3, scale=6 * math.log(r) / float(-(p * np.log(p)).sum()))


def variance_scale(a, deviation: float) -> float:
    """The size of a variance's rounding errors: its entries carry rounding at their own size max|a|, which
    the deviations of size ``deviation`` inherit, so their squares at 2 max|a| · deviation."""
    return 2 * float(np.max(np.abs(a))) * deviation


def two_point(mean: float, var: float, m: int = 100) -> np.ndarray:
    """m/2 clients at mean - std and m/2 at mean + std: mean and population variance exactly (mean, var)."""
    s = math.sqrt(var)
    return np.repeat([mean - s, mean + s], m // 2)


# ------------------------------------------------------------------------------------------------ basics


def test_mean_variance_std_hand_case():
    assert M.mean(A4) == 75.0  # integers: exact
    assert M.variance(A4) == 125.0  # population (1/m), not 500/3
    assert M.std(A4) == math.sqrt(125.0)


def test_accepts_torch_tensors():
    t = torch.tensor(A4, dtype=torch.float32, requires_grad=True)
    assert M.variance(t) == 125.0
    assert M.angle(t) == M.angle(A4)  # the same float64 values: the same computation


def test_two_point_helper_has_requested_moments():
    a = two_point(86.49, 62.44)
    assert_close(M.mean(a), 86.49, terms=100, what="mean")  # a sum of 100 entries mean ± s, each rounded
    # the deviations ±s and their mean of squares: 2 sums of 100 terms, errors at the entries' size
    assert_close(M.variance(a), 62.44, terms=100, depth=2, scale=variance_scale(a, math.sqrt(62.44)))


def test_worst_and_best_fraction_hand_case():
    a = np.arange(1.0, 21.0)  # 1..20, m = 20
    # ceil(0.05 * 20) = 1 -> worst = 1, best = 20; ceil(0.10 * 20) = 2 -> (1+2)/2, (19+20)/2
    assert M.worst_fraction(a, 0.05) == 1.0
    assert M.best_fraction(a, 0.05) == 20.0
    assert M.worst_fraction(a, 0.10) == 1.5
    assert M.best_fraction(a, 0.10) == 19.5
    # ceil(0.12 * 20) = ceil(2.4) = 3 -> (1+2+3)/3 = 2
    assert M.worst_fraction(a, 0.12) == 2.0
    assert M.worst_fraction(a, 1.0) == 10.5  # all clients: 210 / 20, exact


def test_worst_fraction_count_is_robust_to_float_noise():
    # 0.07 * 100 = 7.000000000000001 in floating point; the count must be 7, not 8 -> mean(0..6) = 3
    a = np.arange(100.0)
    assert M.worst_fraction(a, 0.07) == 3.0
    # m = 100, frac 0.05 -> the 5 smallest (FedEBA+ Table 1 convention): mean(0..4) = 2
    assert M.worst_fraction(a, 0.05) == 2.0
    assert M.best_fraction(a, 0.05) == 97.0  # mean(95..99)


def test_percentile_matches_divfl_linear_quantile():
    # np.quantile default (linear): position q/100 * (m-1); for A4 and q=10: 0.3 -> 60 + 0.3*10 = 63
    # roundings: q / 100, × (m − 1), the interpolation's product and sum
    assert_close(M.percentile(A4, 10), 63.0, terms=4)
    # q=20: position 0.6 -> 66
    assert_close(M.percentile(A4, 20), 66.0, terms=4)
    assert M.percentile(A4, 0) == 60.0 and M.percentile(A4, 100) == 90.0


# ------------------------------------------------------------------------------------ FedEBA+ C_v, Table 18

# (Var, Acc) rows of Tables 1/7 named by the spec's Table 18 provenance note, and Table 18's printed C_v.
TABLE18_FMNIST = {
    "FedAvg": (62.44, 86.49, 0.09136199),
    "FedMGDA+ eps=0.03": (57.89, 84.64, 0.089893051),
    "AFL lambda=0.7": (57.39, 85.14, 0.088978374),
    "PropFair M=0.2": (75.27, 85.51, 0.101459812),
    "TERM t=0.1": (73.46, 84.31, 0.101659126),
    "FedFV a=0.1 tau=10": (56.63, 86.98, 0.086517483),
    "FedEBA+ a=0.5 tau=0.1": (40.02, 87.21, 0.072539115),
}
TABLE18_CIFAR10 = {
    "FedAvg": (103.83, 67.79, 0.150312741),
    "q-FFL q=0.001": (97.42, 68.53, 0.144026806),
    "FedMGDA+ eps=0": (97.33, 67.16, 0.146896915),
    "AFL lambda=0.7": (79.75, 66.21, 0.134878199),
    "PropFair M=0.2": (79.67, 65.79, 0.135671155),
    "TERM t=0.1": (91.99, 65.41, 0.146631123),
    "FedFV a=0.1 tau=10": (86.50, 71.10, 0.130809249),
    "FedEBA+ a=0.9 tau=0.1": (68.71, 72.75, 0.1139402),
}


@pytest.mark.parametrize(
    ("var", "acc", "printed"), list(TABLE18_FMNIST.values()) + list(TABLE18_CIFAR10.values())
)
def test_cv_reproduces_fedeba_table18_from_table1_var_and_acc(var, acc, printed):
    # per-client vector with Table 1's variance -> std(a) -> C_v = std / global acc
    cv = M.coefficient_of_variation(M.std(two_point(acc, var)), acc)
    assert cv == pytest.approx(printed, abs=5e-9)  # the paper's printing precision, not a rounding bound


def test_cv_fedavg_fmnist_by_hand():
    # sqrt(62.44) = 7.901899, / 86.49 = 0.0913620
    cv = M.coefficient_of_variation(math.sqrt(62.44), 86.49)
    assert cv == pytest.approx(0.09136199, abs=1e-8)  # printed to 8 decimals, not a rounding bound


def test_cv_improvement_matches_table18_where_consistent():
    fedavg_fm, fedavg_c10 = 0.09136199, 0.150312741
    # q-FFL FMNIST: printed C_v 0.112432356 (matches no Table-7 row) -> (0.09136 - 0.11243)/0.09136 = -23%
    assert round(100 * M.cv_improvement(0.112432356, fedavg_fm)) == -23
    # AFL FMNIST 2.6%, q-FFL CIFAR-10 4.2%
    assert round(100 * M.cv_improvement(0.088978374, fedavg_fm), 1) == 2.6
    assert round(100 * M.cv_improvement(0.144026806, fedavg_c10), 1) == 4.2
    assert M.cv_improvement(fedavg_fm, fedavg_fm) == 0.0


def test_cv_improvement_formula_where_table18_disagrees():
    # Spec flags FedEBA+ (printed 21.8% / 27.8%); the formula on the printed C_v gives 20.6% / 24.2%.
    # Other printed improvements also differ from the formula on their own C_v (not flagged in the spec):
    # FMNIST FedMGDA+ 1.3 (formula 1.6), PropFair -11.3 (-11.1), TERM -10.1 (-11.3), FedFV 4.8 (5.3);
    # CIFAR-10 FedMGDA+ 2.4 (2.3), AFL 10.1 (10.3), PropFair 10.9 (9.7), TERM 2.7 (2.4), FedFV 13.3 (13.0).
    # We test the formula, not the printed cells.
    assert round(100 * M.cv_improvement(0.072539115, 0.09136199), 1) == 20.6
    assert round(100 * M.cv_improvement(0.1139402, 0.150312741), 1) == 24.2


# ------------------------------------------------------------------------------- FedEBA+ angle and KL, T19


def test_angle_hand_case_and_arccos_definition():
    # a = (1, 0): sum 1, ||a|| = 1, sqrt(m) = sqrt(2) -> arccos(1/sqrt 2) = 45 degrees
    # mean and std ½ exactly; arctan2 and the conversion to degrees: 3 roundings
    assert_close(M.angle([1.0, 0.0]), 45.0, terms=3)
    # a = (3, 1): mean 2, std 1 -> arctan(1/2) = 26.565 degrees; arccos(4 / (sqrt(10) sqrt(2))) is the same.
    # 3 roundings a side (√, the division, arccos; arctan2, degrees), the argument's magnified by arccos's
    # slope 1/sin φ: the scale is 1/sin φ in degrees
    slope = math.degrees(1 / math.sin(math.atan(0.5)))
    assert_close(M.angle([3.0, 1.0]), math.degrees(math.acos(4 / math.sqrt(20))), terms=3, scale=slope)
    assert_close(M.angle([3.0, 1.0]), math.degrees(math.atan(0.5)), terms=3)  # arctan(y/x) and degrees


def test_angle_equals_arccos_formula_on_random_vector():
    a = np.random.default_rng(0).uniform(20, 100, size=37)
    cos = a.sum() / (np.linalg.norm(a) * math.sqrt(a.size))
    # sums of 37 terms (mean and deviations; the sum and the norm), then a few scalar roundings: 2 reductions
    # a side; cos's error reaches the angle through arccos's slope 1/sin φ (the scale, in degrees)
    slope = math.degrees(1 / math.sin(math.acos(cos)))
    assert_close(M.angle(a), math.degrees(math.acos(cos)), terms=37, depth=2, scale=slope)


def test_angle_identity_tan_equals_std_over_mean():
    a = np.random.default_rng(1).uniform(40, 95, size=100)
    # the mean and the variance's sum over 100 clients, then arctan2, degrees, radians and tan (fewer
    # roundings than a third reduction of 100 terms)
    assert_close(math.tan(math.radians(M.angle(a))), M.std(a) / M.mean(a), terms=100, depth=3)


def test_table19_angle_and_kl_from_table1_moments():
    # From Table 1 FedAvg FMNIST (Acc 86.49, Var 62.44): tan(phi) = 7.902/86.49 -> phi = 5.22 degrees, and
    # KL ~ C_v^2 / 2 = 0.00417 for a small spread. Table 19 prints 8.70 and 0.0145 for FedAvg: those cells
    # were computed on another vector (spec A24), so we check the formulas, not the printed values.
    a = two_point(86.49, 62.44)
    assert M.angle(a) == pytest.approx(5.2202, abs=1e-4)  # to the 4 decimals written here, not rounding
    cv = math.sqrt(62.44) / 86.49
    # exact for the two-point vector: 0.5[(1+c)ln(1+c) + (1-c)ln(1-c)] = 0.0041793
    exact = 0.5 * ((1 + cv) * math.log(1 + cv) + (1 - cv) * math.log(1 - cv))
    # KL = Σ p_i ln(m p_i) cancels: m p_i ≈ 1 ± c carries the absolute rounding of Σa (100 terms) and the
    # division, which the logs pass on with the weights p_i: scale Σ p_i (1 + |ln m p_i|) ≤ 1 + |ln(1 − c)|
    assert_close(M.kl_to_uniform(a), exact, terms=100, depth=2, scale=1 + abs(math.log(1 - cv)))
    # a series approximation (the next term is O(c⁴)), not a rounding bound
    assert M.kl_to_uniform(a) == pytest.approx(cv**2 / 2, abs=1e-5)


def test_kl_hand_case():
    # a = (3, 1): a-hat = (0.75, 0.25), m = 2 -> 0.75 ln 1.5 + 0.25 ln 0.5 = 0.304099 - 0.173287 = 0.130812
    # p = (¾, ¼) exactly; a log, a product and the sum a side (numpy's log against math's), terms that cancel
    kl = M.kl_to_uniform([3.0, 1.0])
    size = 0.75 * math.log(1.5) + 0.25 * math.log(2)
    assert_close(kl, 0.75 * math.log(1.5) + 0.25 * math.log(0.5), terms=3, scale=size)
    # equals ln m - entropy (nats): the entropy's logs, products, sum and negation and the difference, 4
    # roundings of terms of size at most 2 ln 2
    nats = M.entropy_of_normalised([3.0, 1.0], base=math.e)
    assert_close(kl, math.log(2) - nats, terms=4, scale=2 * math.log(2))
    # a zero entry contributes 0: (1, 0) -> 1 * ln(2 * 1) = ln 2
    assert_close(M.kl_to_uniform([1.0, 0.0]), math.log(2), terms=1)  # numpy's log against math's


# ------------------------------------------------------------------------ FedEBA+ App. I.1 toy entropies


@pytest.mark.parametrize(
    ("x_next", "paper_entropy"),
    [(-0.1, 0.996), (-0.4, 0.943), (0.5, 0.890)],  # EBA, q-FFL (paper's x), FedAvg
)
def test_entropy_of_normalised_losses_toy(x_next, paper_entropy):
    # F_1(x) = 2 (x - 2)^2, F_2(x) = 0.5 (x + 4)^2; e.g. FedAvg x = 0.5 -> (4.5, 10.125), p = (0.3077, 0.6923)
    losses = [2 * (x_next - 2) ** 2, 0.5 * (x_next + 4) ** 2]
    assert round(M.entropy_of_normalised(losses, base=2), 3) == paper_entropy


def test_toy_variance_fedavg_and_eba():
    # FedAvg: (4.5, 10.125), gap 5.625 -> var (gap/2)^2 = 7.91 = 2.81^2; EBA (x=-0.1): (8.82, 7.605) -> 0.369
    assert M.variance([4.5, 10.125]) == (5.625 / 2) ** 2  # dyadic fractions: exact
    assert M.std([4.5, 10.125]) == 2.8125
    # decimal literals: the mean and the squares' mean of 2 terms, errors at the entries' size
    assert_close(M.variance([8.82, 7.605]), 0.6075**2, terms=2, depth=2, scale=variance_scale([8.82], 0.6075))


def test_entropy_bases():
    # uniform over 4 -> 2 bits = ln 4 nats; (1, 1, 2): p = (1/4, 1/4, 1/2) -> 1.5 bits
    # −Σ p log p over 4 or 3 terms, then the logs and the division by log(base): 2 reductions
    assert_close(M.entropy_of_normalised([5, 5, 5, 5]), 2.0, terms=4, depth=2)
    assert_close(M.entropy_of_normalised([5, 5, 5, 5], base=math.e), math.log(4), terms=4, depth=2)
    assert_close(M.entropy_of_normalised([1, 1, 2]), 1.5, terms=3, depth=2)


# ------------------------------------------------------------------------------------------ FedEBA+ FAA


def test_faa_hand_case():
    # excess = (0.9-0.5, 1.2-0.2, 0.7-0.6) = (0.4, 1.0, 0.1) -> max pair gap 1.0 - 0.1 = 0.9
    # decimal literals, the excesses and max − min: 4 roundings of terms of sizes 1.2 + 0.2 + 0.7 + 0.6 + 0.9
    assert_close(M.faa([0.9, 1.2, 0.7], [0.5, 0.2, 0.6]), 0.9, terms=4, scale=3.6)
    # shortcut F_i(x_i*) = 0: max - min loss
    assert_close(M.faa([0.9, 1.2, 0.7], np.zeros(3)), 0.5, terms=3, scale=2.4)


def test_faa_equals_bruteforce_max_over_pairs():
    rng = np.random.default_rng(2)
    f, f_star = rng.uniform(0, 3, 9), rng.uniform(0, 1, 9)
    e = f - f_star
    brute = max(abs(e[i] - e[j]) for i in range(9) for j in range(9))
    assert M.faa(f, f_star) == brute  # the same subtraction e_max − e_min; rounding is monotone


# --------------------------------------------------------------------------------------- Equitable-FL


def test_sigma_acc_is_spread_around_global_accuracy():
    # A4 around 70 (not its mean 75): deviations -10, 0, 10, 20 -> (100+0+100+400)/4 = 150
    assert M.sigma_acc(A4, 70.0) == math.sqrt(150.0)  # integers, then one square root: exact
    # around the mean it is the population std
    assert M.sigma_acc(A4, 75.0) == M.std(A4)


def test_client_disagreement_hand_case():
    # losses (1, 2, 4): pairs |1-2| = 1, |1-4| = 3, |2-4| = 2 -> sum 6 over C(3,2) = 3 pairs -> 2
    assert M.client_disagreement([1.0, 2.0, 4.0]) == 2.0  # integers: exact
    # literal Eq. 9: ordered double sum 12 / C(3,2) = 4
    assert M.client_disagreement([1.0, 2.0, 4.0], literal=True) == 4.0
    assert M.client_disagreement([0.3, 0.3]) == 0.0


def test_nmi_wraps_sklearn_arithmetic():
    # identical partitions up to renaming -> 1; independent 2x2 balanced -> 0
    assert_close(M.nmi([1, 1, 0, 0], [0, 0, 1, 1]), 1.0, **nmi_bound([0, 0, 1, 1]))
    assert_close(M.nmi([0, 1, 0, 1], [0, 0, 1, 1]), 0.0, **nmi_bound([0, 0, 1, 1]))
    # hand case pred (0,0,1,1), true (0,0,0,1): H(true) = H(1/4,3/4) = 0.562335 nats, H(pred) = ln 2,
    # I = H(true) - H(true|pred) = 0.562335 - 0.5 ln 2 = 0.215762;
    # arithmetic NMI = I / ((H(true) + H(pred)) / 2) = 0.215762 / 0.627741 = 0.343712
    h_true = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    mi = h_true - 0.5 * math.log(2)
    expected = mi / ((h_true + math.log(2)) / 2)
    assert_close(M.nmi([0, 0, 1, 1], [0, 0, 0, 1]), expected, **nmi_bound([0, 0, 0, 1]))
    assert_close(M.nmi(["a", "a", "b"], ["x", "x", "y"]), 1.0, **nmi_bound(["x", "x", "y"]))


def test_nmi_single_true_cluster():
    assert M.nmi([0, 1, 1], [5, 5, 5]) == 0.0  # sklearn's convention
    assert math.isnan(M.nmi([0, 1, 1], [5, 5, 5], nan_if_one_true_cluster=True))


def test_cumulative_moving_average():
    # (2, 4, 9) -> (2, 3, 5)
    # integer sums and counts, one exact division each
    np.testing.assert_array_equal(M.cumulative_moving_average([2.0, 4.0, 9.0]), [2.0, 3.0, 5.0])
    # a round without the metric is skipped: (NaN, 2, NaN, 4) -> (NaN, 2, 2, 3)
    cma = M.cumulative_moving_average([np.nan, 2.0, np.nan, 4.0])
    np.testing.assert_array_equal(cma, [np.nan, 2.0, 2.0, 3.0])


# ------------------------------------------------------------------------------------- AFGA / FedEBA+ cost


def test_rounds_to_target_and_last_k_mean():
    curve = [50.0, 70.0, 78.0, 77.0, 80.0]
    assert M.rounds_to_target(curve, 78.0) == 3  # first round (1-based) with acc >= 78
    assert M.rounds_to_target(curve, 78.0, rounds=[10, 20, 30, 40, 50]) == 30
    assert M.rounds_to_target(curve, 90.0) is None  # printed "R+"
    assert M.last_k_mean(curve, 2) == 78.5  # integer sums, exact divisions
    assert M.last_k_mean(curve) == 71.0  # (50+70+78+77+80)/5 = 355/5
    assert M.last_k_mean(curve[:2]) == 60.0  # a shorter curve: all of it


def test_mean_over_rounds_is_the_trapezoidal_area_over_the_span():
    # rounds 1, 2, 3 at 0, 10, 20: area 5 + 15 = 20 over a span of 2 -> 10
    assert M.mean_over_rounds([0.0, 10.0, 20.0]) == 10.0  # integer areas, one division: exact
    # rounds 5, 10, 20 at 40, 60, 60: 5 * 50 + 10 * 60 = 850 over 15
    assert M.mean_over_rounds([40.0, 60.0, 60.0], rounds=[5, 10, 20]) == 850 / 15
    # same final accuracy, the curve that rises sooner has the larger mean: 60 vs 50
    assert M.mean_over_rounds([40.0, 80.0, 80.0]) > M.mean_over_rounds([40.0, 40.0, 80.0])
    assert M.mean_over_rounds([73.0]) == 73.0


def test_extra_communication_fraction():
    # theta = 0: alignment every round, f = 1 -> 1/2 (Table 3: 50.0%); never -> 0; half -> 0.5/1.5 = 1/3
    assert M.extra_communication_fraction(2000, 2000) == 0.5
    assert M.extra_communication_fraction(0, 2000) == 0.0
    assert M.extra_communication_fraction(1000, 2000) == 1 / 3  # 0.5 / 1.5: 1/3 with one rounding


# ------------------------------------------------------------------------------------------ GIFAIR groups


def test_group_accuracies_client_mean_default_and_weighted():
    a = [80.0, 90.0, 40.0, 60.0]
    labels = ["m", "m", "f", "f"]
    # unweighted: m = (80+90)/2 = 85, f = (40+60)/2 = 50
    assert M.group_accuracies(a, labels) == {"f": 50.0, "m": 85.0}
    # weights = test counts (1, 3, 1, 1): m = (80 + 270)/4 = 87.5 (pooled accuracy), f = 50
    assert M.group_accuracies(a, labels, weights=[1, 3, 1, 1]) == {"f": 50.0, "m": 87.5}
    # mapping form gives the same
    assert M.group_accuracies(a, {"m": [0, 1], "f": [2, 3]}) == {"m": 85.0, "f": 50.0}
    # integer / torch labels
    assert M.group_accuracies(a, torch.tensor([1, 1, 0, 0])) == {0: 50.0, 1: 85.0}


def test_group_gap_and_variance_hand_case():
    ga = {"m": 85.0, "f": 50.0, "x": 60.0}
    assert M.largest_group_gap(ga) == 35.0
    # mean 65; deviations 20, -15, -5 -> (400+225+25)/3 = 216.667
    assert M.group_variance(ga) == 650 / 3  # integer sums, one division


# GIFAIR Table 6 (Shakespeare by gender): male, female, printed discrepancy (all consistent).
GIFAIR_TABLE6 = {
    "FedAvg": (72.95, 40.39, 32.56),
    "q-FFL": (67.14, 43.26, 23.88),
    "FedMGDA+": (67.07, 43.85, 23.22),
    "Ditto": (74.19, 45.73, 28.46),
    "GIFAIR-FL-Global": (67.42, 52.04, 15.38),
    "GIFAIR-FL-Per": (73.95, 54.88, 19.07),
}


@pytest.mark.parametrize(("male", "female", "printed"), GIFAIR_TABLE6.values(), ids=GIFAIR_TABLE6.keys())
def test_gifair_table6_discrepancy_and_def1_variance(male, female, printed):
    ga = {"male": male, "female": female}
    # the paper's printing precision (2 decimals), not a rounding bound
    assert M.largest_group_gap(ga) == pytest.approx(printed, abs=5e-3)
    assert M.group_variance(ga) == pytest.approx((printed / 2) ** 2, rel=1e-3)  # d = 2: Var = (gap/2)^2


# GIFAIR Table 4 (FEMNIST 3 groups): groups 1-3, printed discrepancy.
GIFAIR_TABLE4 = {
    "FedAvg": ((79.72, 90.93, 80.21), 11.21),
    "q-FFL": ((81.15, 88.24, 80.93), 7.31),
    "TERM": ((81.29, 88.08, 81.84), 6.79),
    "FedMGDA+": ((81.03, 89.12, 81.33), 8.09),
    "GIFAIR-FL-Per": ((83.96, 91.05, 84.98), 7.09),
}


@pytest.mark.parametrize(("groups", "printed"), GIFAIR_TABLE4.values(), ids=GIFAIR_TABLE4.keys())
def test_gifair_table4_discrepancy(groups, printed):
    assert M.largest_group_gap(list(groups)) == pytest.approx(printed, abs=5e-3)  # printed to 2 decimals


def test_gifair_table4_cells_that_disagree_with_max_minus_min():
    # Paper prints Ditto 9.02 and GIFAIR-FL-Global 6.0 (spec flags both); max - min of the printed rows gives
    # 92.05 - 82.37 = 9.68 and 88.29 - 83.41 = 4.88. We test the formula.
    # decimal literals and one subtraction: 3 roundings of terms of size max + min
    assert_close(M.largest_group_gap([82.37, 92.05, 83.03]), 9.68, terms=3, scale=92.05 + 82.37)
    assert_close(M.largest_group_gap([83.41, 88.29, 84.37]), 4.88, terms=3, scale=88.29 + 83.41)


# ---------------------------------------------------------------------------------------- summary


def test_fairness_summary_values_and_keys():
    rng = np.random.default_rng(3)
    acc = rng.uniform(50, 100, size=40)
    loss = rng.uniform(0.1, 2.0, size=40)
    groups = np.repeat([0, 1], 20)
    s = M.fairness_summary(acc, loss=loss, global_acc=77.0, groups=groups)
    assert s["n"] == 40
    # the same numpy operations on the same values as the summary's: exact
    assert s["mean"] == acc.mean()
    assert s["var"] == acc.var()
    assert s["worst5"] == np.sort(acc)[:2].mean()  # ceil(0.05 * 40) = 2
    assert s["worst10"] == np.sort(acc)[:4].mean()
    assert s["best5"] == np.sort(acc)[-2:].mean()
    assert s["p10"] == np.quantile(acc, 0.1)
    assert s["cv"] == acc.std() / 77.0
    assert s["sigma_acc"] == np.sqrt(np.mean((acc - 77.0) ** 2))
    assert s["loss_var"] == loss.var()
    assert s["group_acc_0"] == acc[:20].mean()
    assert s["group_gap"] == abs(acc[:20].mean() - acc[20:].mean())
    assert all(isinstance(v, float) for v in s.values())


def test_fairness_summary_stable_keys_without_optional_inputs():
    full = M.fairness_summary(A4, loss=A4, global_acc=70.0, groups=[0, 0, 1, 1])
    bare = M.fairness_summary(A4)
    assert set(full) - set(bare) == {"group_acc_0", "group_acc_1"}
    for key in ("cv", "sigma_acc", "global_acc", "loss_mean", "loss_var", "group_gap", "group_var"):
        assert math.isnan(bare[key])


# ------------------------------------------------------------------------------------------- degenerate


def test_uniform_accuracies_are_perfectly_fair():
    a = np.full(17, 83.3)
    assert M.variance(a) == 0.0
    assert M.angle(a) == 0.0
    # m p_i = 1 up to the rounding of Σa (17 terms) and the division, which the logs pass on: scale Σ p_i = 1
    assert_close(M.kl_to_uniform(a), 0.0, terms=17, depth=2, scale=1.0)
    assert_close(M.entropy_of_normalised(a), math.log2(17), terms=17, depth=2)  # the same two sums
    assert M.worst_fraction(a) == M.best_fraction(a) == 83.3  # the mean of one entry


def test_single_client():
    s = M.fairness_summary([72.0], global_acc=72.0, groups=["g"])
    assert s["var"] == 0.0 and s["angle"] == 0.0 and s["kl"] == 0.0 and s["sigma_acc"] == 0.0
    assert s["worst5"] == s["best5"] == s["p10"] == 72.0
    assert s["group_gap"] == 0.0 and s["group_acc_g"] == 72.0


def test_all_zero_accuracies_give_nan_angle_and_kl_in_summary():
    s = M.fairness_summary([0.0, 0.0, 0.0])
    assert math.isnan(s["angle"]) and math.isnan(s["kl"]) and s["var"] == 0.0


# -------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: M.mean([]), "empty"),
        (lambda: M.variance(np.ones((2, 2))), "1-D"),
        (lambda: M.std([1.0, float("nan")]), "NaN"),
        (lambda: M.worst_fraction(A4, 0.0), "frac"),
        (lambda: M.worst_fraction(A4, 1.5), "frac"),
        (lambda: M.best_fraction(A4, -0.1), "frac"),
        (lambda: M.percentile(A4, 101), "q"),
        (lambda: M.coefficient_of_variation(1.0, 0.0), "acc"),
        (lambda: M.cv_improvement(0.1, 0.0), "cv_reference"),
        (lambda: M.angle([0.0, 0.0]), "zero vector"),
        (lambda: M.kl_to_uniform([1.0, -1.0]), "non-negative"),
        (lambda: M.entropy_of_normalised([0.0, 0.0]), "sums to 0"),
        (lambda: M.entropy_of_normalised(A4, base=1), "base"),
        (lambda: M.faa([1.0, 2.0], [0.0]), "losses has 2 entries but optimal_losses has 1"),
        (lambda: M.sigma_acc(A4, float("nan")), "global_acc"),
        (lambda: M.client_disagreement([1.0]), "at least 2"),
        (lambda: M.nmi([0, 1], [0, 1, 1]), "labels_pred has 2"),
        (lambda: M.last_k_mean([1.0, 2.0], 0), "k must"),
        (lambda: M.rounds_to_target([1.0, 2.0], 1.0, rounds=[1]), "curve has 2"),
        (lambda: M.mean_over_rounds([1.0, 2.0], rounds=[2, 2]), "increase strictly"),
        (lambda: M.extra_communication_fraction(5, 4), "alignment_rounds"),
        (lambda: M.group_accuracies(A4, [0, 1]), "groups has 2 labels but there are 4 clients"),
        (lambda: M.group_accuracies(A4, {"a": [0, 1], "b": []}), "group 'b' has no clients"),
        (lambda: M.group_accuracies(A4, {"a": [0, 9]}), "outside"),
        (lambda: M.group_accuracies(A4, [0, 0, 1, 1], weights=[1, 1, 0, 0]), "zero total weight"),
        (lambda: M.group_accuracies(A4, [0, 0, 1, 1], weights=[1, 1]), "weights has 2"),
        (lambda: M.fairness_summary(A4, loss=[1.0]), "loss has 1"),
        (lambda: M.fairness_summary(A4, group_weights=[1, 1, 1, 1]), "without groups"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------------ Equitable-FL clusters
PLANTED = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]  # MNIST / CIFAR-10 clusters {0-3} and {4-9}: 4 + 6 clients


def test_cluster_nmi_per_round_over_participants():
    # participants 1, 7, 3, 5 belong to planted clusters 0, 1, 0, 1
    bound = nmi_bound([0, 1, 0, 1])  # the planted clusters of the participants
    assert_close(M.cluster_nmi([0, 1, 0, 1], PLANTED, [1, 7, 3, 5]), 1.0, **bound)
    assert_close(M.cluster_nmi([1, 0, 1, 0], PLANTED, [1, 7, 3, 5]), 1.0, **bound)
    # found (0, 0, 1, 1) against planted (0, 1, 0, 1): independent balanced partitions -> 0
    assert_close(M.cluster_nmi([0, 0, 1, 1], PLANTED, [1, 7, 3, 5]), 0.0, **bound)
    assert M.cluster_nmi([0, 0, 1], PLANTED, [4, 0, 9]) == M.nmi([0, 0, 1], [1, 0, 1])


def test_cluster_nmi_all_clients_and_single_planted_cluster_rounds():
    assert_close(M.cluster_nmi([5] * 4 + [2] * 6, PLANTED), 1.0, **nmi_bound(PLANTED))
    assert M.cluster_nmi([0, 1], PLANTED, [0, 2]) == 0.0  # one planted cluster present
    assert math.isnan(M.cluster_nmi([0, 1], PLANTED, [0, 2], nan_if_one_true_cluster=True))


def test_sigma_acc_adds_the_bias_of_the_mean_to_the_std():
    # sigma_Acc^2 = Var(a) + (mean(a) - Acc)^2
    a = np.array([91.0, 62.5, 77.0, 88.25, 70.0])
    # sums over 5 clients, the means and a square root: 2 reductions of 5 terms of positive sizes
    assert_close(M.sigma_acc(a, 80.0) ** 2, M.variance(a) + (a.mean() - 80.0) ** 2, terms=5, depth=2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: M.cluster_nmi([0, 1], PLANTED), "labels has 2 entries but planted_groups has 10"),
        (lambda: M.cluster_nmi([0, 1], PLANTED, [0, 1, 2]), "labels has 2 entries but participants has 3"),
        (lambda: M.cluster_nmi([0, 1], PLANTED, [0, 10]), r"client indices in \[0, 10\)"),
        (lambda: M.cluster_nmi([0, 1], PLANTED, [0.0, 1.0]), "participants must be client indices"),
        (lambda: M.cluster_nmi([0, 1], PLANTED, [3, 3]), "repeated client indices"),
        (lambda: M.cluster_nmi([0], [], [0]), "planted_groups must be a non-empty 1-D vector"),
    ],
)
def test_cluster_nmi_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
