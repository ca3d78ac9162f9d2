"""The statistics behind a verdict: a contrast of method means estimated on seeds, its tests, the verdict
classes and Holm's adjustment. Pure functions of numbers; :mod:`fairfl_core.report.claims` applies them to a
paper's claims.

**Estimate.** A claim compares a contrast of means, usually d = μ_value − μ_reference; a size stated relative
to other methods (FedEBA+'s "3×") is another contrast. Each side is a :class:`Sample`: values over seeds, or
an exact number (a printed value, a constant, a deterministic computation) that adds no variance.

- **Paired t** when every side with seeds has the same seeds and, seed by seed, runs that share what the seed
  draws (the pairing key: partition, initial model, client sampling and minibatch streams, all counter-based
  on the seed): the contrast is taken seed by seed, c_s = Σ_i w_i x_{i,s}, and SE = sd(c)/√n with n − 1
  degrees of freedom.
- **Welch's t** otherwise: SE² = Σ w_i² s_i²/n_i, ν = SE⁴ / Σ (w_i² s_i²/n_i)²/(n_i − 1)
  (Welch–Satterthwaite); against exact numbers only, this is the one-sample t with n − 1 degrees of freedom.

**Tests** (two-sided, at :data:`CONFIDENCE`): a directional claim (``<``, ``<=``, ``>``, ``>=``) tests d = 0
(``p``) and, where the paper gives a size δ, d = δ (``p_size``); an equivalence claim (``≈`` within a margin
m) tests that the interval lies inside ±m (``p`` = twice the larger one-sided p of TOST) and that it lies
outside (``p_size``). With SE = 0 (exact numbers, or seeds without spread) the sign decides: p is 0.

**Classes** (:func:`classify`, from the p-values and signs; α = 1 − :data:`CONFIDENCE`, or Holm-adjusted p):

- *holds*: the claimed direction is established and the paper's size is not excluded (or exceeded, or the
  paper states none);
- *smaller than the paper's*: the direction is established, the size is excluded and not reached;
- *not reproduced at the paper's size*: no direction is established, but the paper's size is excluded;
- *undetermined*: neither 0 nor the paper's size is excluded (:func:`seeds_to_decide` says how many seeds
  would decide it at the observed spread);
- *fails*: the opposite direction is established.

An equivalence claim holds when its interval lies inside the margin, fails when it lies outside, and is
undetermined otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scipy.stats import t as student_t

__all__ = [
    "CONFIDENCE",
    "FAILS",
    "HOLDS",
    "MIN_SEEDS",
    "NOT_AT_SIZE",
    "SMALLER",
    "UNDETERMINED",
    "VERDICTS",
    "Estimate",
    "Sample",
    "classify",
    "contrast",
    "holm",
    "seeds_to_decide",
    "p_values",
]

CONFIDENCE = 0.95  # two-sided confidence of every interval and test
MIN_SEEDS = 3  # seeds a side needs for a verdict
HOLDS = "holds"
SMALLER = "smaller than the paper's"
NOT_AT_SIZE = "not reproduced at the paper's size"
UNDETERMINED = "undetermined"
FAILS = "fails"
VERDICTS = (HOLDS, SMALLER, NOT_AT_SIZE, UNDETERMINED, FAILS)
DIRECTION = {"<": -1, "<=": -1, ">": 1, ">=": 1}
INCLUSIVE = ("<=", ">=")  # hold at a difference of exactly 0 when it is exact


@dataclass(frozen=True)
class Sample:
    """One side of a comparison: a metric's ``values`` over seeds (seed → value) with each seed's pairing
    ``keys`` (seed → what that run shares with other methods' runs of the seed), or a summary only (``mean``,
    ``std``, ``n`` without values), or one exact number (``n`` = ∞). ``censored``: runs whose value is only a
    bound (a target never reached); such a side never enters a t-test."""

    mean: float
    std: float = 0.0
    n: float = math.inf
    values: Mapping[int, float] = field(default_factory=dict)
    keys: Mapping[int, str] = field(default_factory=dict)
    censored: int = 0

    @classmethod
    def of(cls, values: Mapping[int, float], keys: Mapping[int, str] | None = None, censored: int = 0):
        """The sample of per-seed ``values`` (mean, sample std with ddof 1, n)."""
        xs = list(values.values())
        n = len(xs)
        mean = math.fsum(xs) / n if n else math.nan
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else math.nan
        return cls(mean, std, n, dict(values), dict(keys or {}), censored)

    @property
    def exact(self) -> bool:
        return not math.isfinite(self.n)


@dataclass(frozen=True)
class Estimate:
    """A contrast's estimate: ``value``, standard error ``se`` (0: exact or without spread), degrees of
    freedom ``df`` (NaN when SE = 0), the ``test`` used and why (e.g. ``paired t(4)``), seeds ``n`` a side
    (∞: exact)."""

    value: float
    se: float
    df: float
    test: str
    n: float
    paired: bool = False

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """value ± t_df·SE; the point itself when SE = 0."""
        half = _t(self.df, confidence) * self.se if self.se > 0 else 0.0
        return self.value - half, self.value + half

    def p(self, null: float = 0.0) -> float:
        """Two-sided p of H0: contrast = ``null``; 0 when SE = 0 (exact numbers: the sign decides)."""
        if self.se == 0:
            return 0.0
        return float(2 * student_t.sf(abs(self.value - null) / self.se, self.df))


def _t(df: float, confidence: float) -> float:
    return float(student_t.ppf(1 - (1 - confidence) / 2, df))


PAIRED_WHY = "each seed's runs share partition, initial model, client sampling and minibatch streams"


def contrast(terms: Sequence[tuple[float, Sample]]) -> Estimate:
    """Σ w·μ over ``terms`` ((w, sample) pairs), paired where the design is (module docstring), else Welch."""
    value = math.fsum(w * s.mean for w, s in terms)
    random = [(w, s) for w, s in terms if not s.exact and w != 0]
    if not random:
        return Estimate(value, 0.0, math.nan, "exact numbers", math.inf)
    n = min(s.n for _, s in random)
    why = _unpaired(random)
    if why is None:
        seeds = sorted(random[0][1].values)
        offset = math.fsum(w * s.mean for w, s in terms if s.exact)
        per_seed = [offset + math.fsum(w * s.values[seed] for w, s in random) for seed in seeds]
        spread = Sample.of(dict(enumerate(per_seed))).std
        se = spread / math.sqrt(len(seeds))
        if se == 0:
            return Estimate(value, 0.0, math.nan, f"paired, equal per-seed contrasts: {PAIRED_WHY}", n, True)
        return Estimate(value, se, len(seeds) - 1.0, f"paired t({len(seeds) - 1}): {PAIRED_WHY}", n, True)
    parts = [(w * w * s.std**2 / s.n, s.n) for w, s in random]
    var = math.fsum(v for v, _ in parts)
    if var == 0:
        return Estimate(value, 0.0, math.nan, "seeds without spread", n)
    df = var**2 / math.fsum(v**2 / (k - 1) for v, k in parts)
    kind = "one-sample t" if len(random) == 1 else "Welch t"
    return Estimate(value, math.sqrt(var), df, f"{kind}({df:.1f}){'' if len(random) == 1 else ': ' + why}", n)


def _unpaired(random: Sequence[tuple[float, Sample]]) -> str | None:
    """Why the sides with seeds cannot be paired (None: they can)."""
    if len(random) < 2:
        return "one side with seeds"
    if any(not s.values for _, s in random):
        return "seed summaries only"
    seeds = [set(s.values) for _, s in random]
    if any(x != seeds[0] for x in seeds):
        return "the sides ran different seeds"
    if any(not s.keys for _, s in random):
        return "no pairing keys recorded"
    for seed in seeds[0]:
        keys = {s.keys.get(seed) for _, s in random}
        if len(keys) != 1 or None in keys:
            return "a seed's runs differ in data or model (partition, initial model or streams not shared)"
    return None


def p_values(
    op: str, d: Estimate, size: Estimate | None = None, tolerance: float = 0.0
) -> tuple[float, float]:
    """(p, p_size) of a claim ``op`` on the difference ``d``: directional claims test d = 0 and, with ``size``
    (the contrast d − δ), d = δ; equivalence (``≈``) tests that the interval lies inside ±``tolerance``
    (TOST, twice the larger one-sided p) and outside it. NaN where a test does not apply."""
    if op == "≈":
        if d.se == 0:
            inside = abs(d.value) <= tolerance
            return (0.0, 1.0) if inside else (1.0, 0.0)
        low = student_t.sf((d.value + tolerance) / d.se, d.df)  # H0: d <= -m
        high = student_t.cdf((d.value - tolerance) / d.se, d.df)  # H0: d >= m
        above = student_t.sf((d.value - tolerance) / d.se, d.df)  # H0: d <= m (outside: d > m)
        below = student_t.cdf((d.value + tolerance) / d.se, d.df)  # H0: d >= -m (outside: d < -m)
        return min(1.0, 2 * float(max(low, high))), min(1.0, 2 * float(min(above, below)))
    return d.p(), size.p() if size is not None else math.nan


def classify(
    op: str, difference: float, size: float | None, p: float, p_size: float, alpha: float = 1 - CONFIDENCE
) -> str:
    """The verdict class (module docstring) of a claim from its ``difference`` d, the paper's ``size`` δ of
    d (None: the paper states none) and its two p-values (raw, or Holm-adjusted)."""
    if op == "≈":
        return HOLDS if p < alpha else FAILS if p_size < alpha else UNDETERMINED
    sign = DIRECTION[op]
    decided = p < alpha
    established = decided and (sign * difference > 0 or (difference == 0 and op in INCLUSIVE))
    opposite = decided and not established
    has_size = size is not None and math.isfinite(size) and math.isfinite(p_size)
    excluded = has_size and p_size < alpha
    reached = has_size and sign * (difference - size) >= 0  # type: ignore[operator]
    if opposite:
        return FAILS
    if established:
        return SMALLER if excluded and not reached else HOLDS
    if excluded and sign * size > 0 and not reached:  # type: ignore[operator]
        return NOT_AT_SIZE
    return UNDETERMINED


def seeds_to_decide(
    d: Estimate, size: Estimate | None = None, tolerance: float | None = None, limit: int = 1000
) -> int | None:
    """The seeds a side at which, with the observed difference and spread, the claim would be decided: the
    interval would exclude 0 or the paper's size (the first of the two), or, for an equivalence within
    ``tolerance``, lie inside or outside ±tolerance. None when it would take more than ``limit`` or cannot
    (a difference exactly on the boundary). SE scales as √(n/n'); the degrees of freedom as n' − 1 (paired)
    or ν·(n' − 1)/(n − 1)."""
    if tolerance is not None:  # the interval must clear the margin: |d| + t·SE < m, or |d| − t·SE > m
        gaps = [(d, abs(tolerance - abs(d.value)))]
    else:
        gaps = [(e, abs(e.value)) for e in (d, size) if e is not None]
    best: int | None = None
    for e, gap in gaps:
        if e.se == 0 or gap == 0 or not math.isfinite(e.n):
            continue
        for k in range(2, limit + 1):
            df = k - 1.0 if e.paired else e.df * (k - 1) / (e.n - 1)
            if gap > _t(df, CONFIDENCE) * e.se * math.sqrt(e.n / k):
                best = k if best is None else min(best, k)
                break
    return best


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``pvalues`` (NaN entries stay NaN and do not count): with the m finite
    p sorted ascending, p_(i) ↦ max_{j ≤ i} min(1, (m − j + 1)·p_(j))."""
    finite = sorted((p, i) for i, p in enumerate(pvalues) if math.isfinite(p))
    m = len(finite)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
