"""q-FFL solved by q-FedAvg (Li, Sanjabi, Beirami & Smith, ICLR 2020, Alg. 2; litian96/fair_flearn
``flearn/trainers/qffedavg.py``).

Objective min_w Σ_k p_k F_k^{q+1}(w)/(q+1). Each selected client reports F_k = its mean loss on its
WHOLE training set at the received model w (before training), trains like FedAvg to w_k, and the server
takes a step with a dynamic (Lipschitz-estimated) step size, with L = 1/η_t::

    Δw_k = L (w − w_k)
    Δ_k  = (F_k + 1e-10)^q Δw_k
    h_k  = q (F_k + 1e-10)^{q−1} ‖Δw_k‖² + L (F_k + 1e-10)^q
    w   ← w − Σ_k Δ_k / Σ_k h_k

The reference samples ∝ n_k without replacement and sums over the sample (``--sampling 2``, the paper
default): ``sampling="size", weighting="uniform"`` here. With ``weighting="size"`` (uniform sampling,
the reference's ``--sampling 1``) both sums carry p_k ∝ n_k, i.e. w ← w − Σ p_k Δ_k / Σ p_k h_k, the
q-FedAvg step for the p_k-weighted objective. q = 0 is FedAvg with the same sampling and weighting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, average_weights
from fairfl_core.algorithms.hyper import Sampling, Weighting

__all__ = ["QFFL", "QFFLHyper", "qffl_delta_and_h"]

LOSS_OFFSET = 1e-10  # added to F_k before the powers, as fair_flearn does


@dataclass
class QFFLHyper(FedAvgHyper):
    """``q`` ≥ 0: fairness strength (FedEBA+ Table 1 uses 0.5; grids {0.001 … 15} in FedEBA+ Table 6 and
    {0, 0.001, …, 10} in GIFAIR-FL §5). Sampling defaults to fair_flearn's ∝ n_k + simple average."""

    sampling: Sampling = "size"
    weighting: Weighting = "uniform"
    q: float = 0.5

    def check(self) -> None:
        if not (self.q >= 0 and np.isfinite(self.q)):
            raise ValueError(f"q must be a finite number >= 0 (q = 0 is FedAvg), got {self.q}")


def qffl_delta_and_h(
    losses: torch.Tensor, updates: torch.Tensor, lr: float, q: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """q-FedAvg's per-client Δ_k ``[K, P]`` and h_k ``[K]`` (Li et al. 2020, Alg. 2; fair_flearn qffedavg.py).

    ``losses`` F_k ``[K]`` at the received model, ``updates`` w − w_k ``[K, P]``, ``lr`` the local step
    η (L = 1/η). ‖·‖² is the squared L2 norm over all parameters (fair_flearn ``norm_grad``).
    """
    if lr <= 0:
        raise ValueError(f"lr must be positive (L = 1/lr), got {lr}")
    big_l = 1.0 / lr
    f = losses.to(updates.dtype) + LOSS_OFFSET
    grads = big_l * updates
    f_q = f.pow(q)
    delta = f_q[:, None] * grads
    h = q * f.pow(q - 1) * grads.pow(2).sum(dim=1) + big_l * f_q
    return delta, h


@register("qffl")
class QFFL(FedAvg[QFFLHyper]):
    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """w − η_g Σ p_k Δ_k / Σ p_k h_k with F_k at the received model."""
        losses = self.sim.engine.losses(self.w, uploads.clients, "train")[0]
        delta, h = qffl_delta_and_h(losses, self.w - uploads.params, self.sim.lr(t), self.hp.q)
        p = average_weights(self.sim, uploads.clients, self.hp, self.w)
        diagnostics = {"loss_at_global_mean": float(losses.mean()), "loss_at_global_max": float(losses.max())}
        return Update(self.w - self.hp.server_lr * (p @ delta) / (p @ h), p, self.hp.server_lr, diagnostics)
