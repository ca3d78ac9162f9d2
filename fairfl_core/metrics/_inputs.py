"""Input checks shared by the metrics: vectors of one value per client, labels, distributions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def as_vector(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty, finite, 1-D float64 array, or raise ValueError naming ``name``."""
    if hasattr(x, "detach"):  # torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector (one value per client); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass at least one client's value")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} contains NaN or inf at positions {np.flatnonzero(~np.isfinite(arr))[:5]}; "
            "evaluate those clients again or leave them out"
        )
    return arr


def as_labels(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty 1-D array of labels (any hashable dtype), or raise ValueError."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D vector of labels (one per client); got shape {arr.shape}"
        )
    return arr


def same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.size != b.size:
        raise ValueError(
            f"{name_a} has {a.size} entries but {name_b} has {b.size}; pass one value per client"
        )


def as_distribution(v: Any, name: str) -> np.ndarray:
    """Normalise a non-negative vector with positive sum to a probability vector."""
    arr = as_vector(v, name)
    if np.any(arr < 0):
        raise ValueError(
            f"{name} must be non-negative to be normalised to a distribution; min is {arr.min()}"
        )
    total = arr.sum()
    if total <= 0:
        raise ValueError(f"{name} sums to 0; it cannot be normalised to a distribution")
    return arr / total


def check_fraction(frac: float) -> None:
    if not 0 < frac <= 1:
        raise ValueError(f"frac must be in (0, 1] (e.g. 0.05 for the worst 5%); got {frac}")


def fraction_count(m: int, frac: float) -> int:
    """ceil(frac * m), robust to float noise (0.07 * 100 = 7.000000000000001 must give 7)."""
    return max(1, math.ceil(round(frac * m, 9)))
