"""Tolerances derived from rounding error, for tests that compare two different computations of one quantity.

The rule (``tests/README.md``): compare exactly only identical computations; a batch of one against a batch of
many, two engines, two executors, or a Flower node against the local engine are different computations, whose
bits depend on the kernels the BLAS library picks for the CPU and the shapes, and are compared with
:func:`assert_close` at a tolerance derived here and stated in the test.

The bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, §3.1, Lemma 3.1 and
Eq. 3.5): a sum of ``n`` terms, or a dot product of length ``n``, evaluated in any order satisfies

    |fl(s) − s| ≤ γ_n · Σ|x_i|,    γ_n = n·u / (1 − n·u),    u = eps / 2 (the unit roundoff),

so two evaluations in different orders differ by at most 2·γ_n·Σ|x_i|. A value that passes through ``depth``
such reductions one after another (forward layers, loss, backward layers, local steps), each adding this
error and propagating its inputs' errors to first order, differs by at most ``depth · 2 · γ_n`` times the
magnitude of the terms. This ignores the growth of errors by the dynamics of training (a factor
(1 + lr·‖H‖) a step), which the tests keep small with few steps.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["assert_close", "assert_close_records", "gamma", "reduction_tolerance", "unit_roundoff"]


def unit_roundoff(dtype: torch.dtype = torch.float64) -> float:
    """u = eps / 2: 2⁻⁵³ for float64, 2⁻²⁴ for float32."""
    return torch.finfo(dtype).eps / 2


def gamma(n: int, dtype: torch.dtype = torch.float64) -> float:
    """γ_n = n·u / (1 − n·u) (Higham 2002, Lemma 3.1); n·u must be below 1."""
    nu = n * unit_roundoff(dtype)
    if not 0 <= nu < 1:
        raise ValueError(f"gamma: n·u = {nu} is not below 1 (n = {n}, {dtype})")
    return nu / (1 - nu)


def reduction_tolerance(dtype: torch.dtype = torch.float64, *, terms: int, depth: int = 1) -> float:
    """Relative bound ``depth · 2 · γ_terms`` on the difference of two evaluations of a value that passes
    through ``depth`` reductions of at most ``terms`` terms each, in whatever order each evaluation sums."""
    return depth * 2 * gamma(terms, dtype)


def assert_close(
    actual,
    expected,
    *,
    terms: int,
    depth: int = 1,
    scale: float | None = None,
    dtype: torch.dtype | None = None,
    what: str = "",
):
    """``|actual − expected| ≤ reduction_tolerance(terms, depth) · scale`` everywhere (NaN matching NaN).

    ``scale``: the magnitude of the summed terms, Σ|x_i| in the bound; default the largest ``|expected|``
    (at least 1e-300), which is right when the terms do not cancel; pass it where they do. ``dtype``: the
    precision the values were computed in (default: the coarser of the two inputs').
    """
    a, b = _tensor(actual), _tensor(expected)
    if a.shape != b.shape:
        raise AssertionError(f"{what or 'values'}: shapes differ, {tuple(a.shape)} and {tuple(b.shape)}")
    floats = [t.dtype for t in (a, b) if t.is_floating_point()] or [torch.float64]
    dtype = dtype or max(floats, key=lambda d: torch.finfo(d).eps)
    a, b = a.double(), b.double()
    nan_a, nan_b = a.isnan(), b.isnan()
    if not torch.equal(nan_a, nan_b):
        raise AssertionError(f"{what or 'values'}: NaN in different places")
    a, b = a.nan_to_num(nan=0.0), b.nan_to_num(nan=0.0)
    if scale is None:
        finite = b[b.isfinite()]
        scale = max(float(finite.abs().max()) if finite.numel() else 0.0, 1e-300)
    tol = reduction_tolerance(dtype, terms=terms, depth=depth) * scale
    inf_a, inf_b = a.isinf(), b.isinf()
    if not (torch.equal(inf_a, inf_b) and torch.equal(a[inf_a], b[inf_b])):
        raise AssertionError(f"{what or 'values'}: infinities differ")
    diff = (a - b).abs()[~inf_a]
    worst = float(diff.max()) if diff.numel() else 0.0
    if worst > tol:
        raise AssertionError(
            f"{what or 'values'} differ by {worst:.3e}, beyond the rounding bound {tol:.3e} "
            f"({depth} reduction(s) of {terms} terms in {dtype}, scale {scale:.3e})"
        )


def assert_close_records(a, b, *, terms: int, depth: int = 1, what: str = "records") -> None:
    """Two nests of dicts and lists (run records, summaries) with the same keys and structure: every float or
    list of numbers compared by :func:`assert_close`, everything else (ints, strings, None) exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{what}: keys differ, {sorted(a)} and {sorted(b)}"
        for k in a:
            assert_close_records(a[k], b[k], terms=terms, depth=depth, what=f"{what}[{k!r}]")
    elif _numeric(a) and _numeric(b) and (isinstance(a, float) or isinstance(b, float) or _has_float(a)):
        assert_close(a, b, terms=terms, depth=depth, what=what)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{what}: lengths differ, {len(a)} and {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close_records(x, y, terms=terms, depth=depth, what=f"{what}[{i}]")
    else:
        assert a == b, f"{what}: {a!r} != {b!r}"


def _numeric(x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(_numeric(v) for v in x)


def _has_float(x) -> bool:
    return isinstance(x, float) or (isinstance(x, (list, tuple)) and any(_has_float(v) for v in x))


def _tensor(x) -> torch.Tensor:
    return x.detach().cpu() if torch.is_tensor(x) else torch.as_tensor(np.asarray(x))
