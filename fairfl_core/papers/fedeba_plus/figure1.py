"""The two-client quadratic toy of FedEBA+'s Fig. 1 (App. I.1): F_k(x) = a_k (x − c_k)², k = 1, 2, and one
local gradient step of size 1/4 from x_t = 0, aggregated by FedAvg, EBA (Eq. 4) and q-FedAvg."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from fairfl_core.algorithms.fedeba import eba_weights
from fairfl_core.algorithms.qffl import qffl_delta_and_h

__all__ = ["TOY_CENTRE", "TOY_CURVATURE", "figure1_toy", "toy_losses"]

TOY_CURVATURE = np.array([2.0, 0.5])
TOY_CENTRE = np.array([2.0, -4.0])


def toy_losses(x: npt.ArrayLike) -> np.ndarray:
    """(F_1(x), F_2(x)) = (2(x − 2)², ½(x + 4)²) of the Fig. 1 toy."""
    return TOY_CURVATURE * (np.asarray(x, dtype=np.float64) - TOY_CENTRE) ** 2


def figure1_toy(tau: float, q: float = 1.0, x_t: float = 0.0, step: float = 0.25) -> dict[str, float]:
    """The aggregated x_{t+1} of FedAvg, EBA and q-FedAvg on the Fig. 1 toy (App. I.1).

    Each client takes one gradient step of size ``step`` from ``x_t`` (x_1 = 2, x_2 = −1). FedAvg averages;
    EBA weights by softmax of the post-step losses / τ (the paper prints τ = 1 but its x ≈ −0.1 needs
    τ ≈ 5.311); q-FedAvg uses losses at x_t and L = 1 (the computation App. I.1 describes).
    """
    local = x_t - step * 2 * TOY_CURVATURE * (x_t - TOY_CENTRE)
    fedavg = float(local.mean())
    p = eba_weights(torch.as_tensor(toy_losses(local)), tau).numpy()
    delta, h = qffl_delta_and_h(
        torch.as_tensor(toy_losses(x_t)), torch.as_tensor(x_t - local)[:, None], lr=1.0, q=q
    )
    qffl = float(x_t - delta.sum() / h.sum())
    return {"fedavg": fedavg, "eba": float(p @ local), "qffl": qffl}
