"""Client-level TERM, tilted empirical risk minimisation (Li, Beirami, Sanjabi & Smith, ICLR 2021, Eq. 2).

Objective min_w (1/t) log Σ_k p_k exp(t F_k(w)); its gradient weights client k by p_k exp(t F_k).
Each selected client reports F_k, its mean loss on its whole training set at the received model
(before training), and trains like FedAvg; the server aggregates w ← w + η_g Σ_k ω_k (w_k − w) with

* ``normalizer="softmax"`` (default; as GIFAIR-FL's baseline and AAggFF ``termserver.py`` used by FedEBA+):
  ω_k = p_k e_k / Σ_j p_j e_j,  e_k = exp(t (F_k − max_j F_j));
* ``normalizer="running"`` (litian96/TERM ``fair_flearn/flearn/trainers/tilting.py``): a running
  normaliser Z ← ½ Z + ½ Σ_j p_j e_j (Z₀ = 0, kept in ``state["tilt_norm"]``), ω_k = p_k e_k / Z; with
  uniform p_k this is the reference's e_k / (Z·m). The reference then averages the m client solutions
  w − ω_k Δ_k, which shrinks the step by a further 1/m: set ``server_lr = 1/clients_per_round`` to
  reproduce that too.

p_k is the FedAvg weighting (``weighting="uniform"``: 1/m, as both references; ``"size"``: ∝ n_k).
t = 0 gives ω = p, i.e. FedAvg (softmax normaliser).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, average_weights, averaged
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.sim.context import Simulation

__all__ = ["TERM", "TERMHyper", "running_tilt_weights", "tilt_factors", "tilt_weights"]


@dataclass
class TERMHyper(FedAvgHyper):
    """``t`` ≥ 0: tilt (FedEBA+ Table 1: 0.1; grids {0.1, 0.5, 0.8, 1, 5} FedEBA+, {1, 2, 5} GIFAIR-FL);
    ``normalizer``: per-round softmax or TERM's running estimate (see the module docstring)."""

    weighting: Weighting = "uniform"
    t: float = 0.1
    normalizer: Literal["softmax", "running"] = "softmax"

    def check(self) -> None:
        if not (self.t >= 0 and np.isfinite(self.t)):
            raise ValueError(f"t (tilt) must be a finite number >= 0 (t = 0 is FedAvg), got {self.t}")


def tilt_factors(losses: torch.Tensor, t: float) -> torch.Tensor:
    """e_k = exp(t (F_k − max_j F_j)) ∈ (0, 1] (TERM tilting.py; the shift avoids overflow)."""
    return torch.exp(t * (losses - losses.max()))


def tilt_weights(losses: torch.Tensor, t: float, prior: torch.Tensor) -> torch.Tensor:
    """Per-round tilted weights ω_k = p_k e_k / Σ_j p_j e_j (gradient weights of TERM Eq. 2)."""
    scaled = prior * tilt_factors(losses, t)
    return scaled / scaled.sum()


def running_tilt_weights(
    losses: torch.Tensor, t: float, prior: torch.Tensor, norm: float
) -> tuple[torch.Tensor, float]:
    """TERM tilting.py's weights with a running normaliser: Z' = ½ Z + ½ Σ_j p_j e_j, ω_k = p_k e_k / Z'.

    Returns (ω, Z'). With uniform p_k = 1/m: Z' = ½ Z + ½ mean(e), ω_k = e_k / (Z'·m) as in the reference.
    """
    scaled = prior * tilt_factors(losses, t)
    norm = 0.5 * norm + 0.5 * float(scaled.sum())
    return scaled / norm, norm


@register("term")
class TERM(FedAvg[TERMHyper]):
    def __init__(self, sim: Simulation, hp: TERMHyper) -> None:
        super().__init__(sim, hp)
        if hp.normalizer == "running":
            self.state["tilt_norm"] = 0.0

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The average with the tilted weights of the losses at the received model."""
        losses = self.sim.engine.losses(self.w, uploads.clients, "train")[0]
        prior = average_weights(self.sim, uploads.clients, self.hp, self.w)
        if self.hp.normalizer == "softmax":
            p = tilt_weights(losses, self.hp.t, prior)
        else:
            p, self.state["tilt_norm"] = running_tilt_weights(
                losses, self.hp.t, prior, self.state["tilt_norm"]
            )
        diagnostics = {
            "tilt_weight_max": float(p.max()),
            "tilt_weight_sum": float(p.sum()),
            "loss_at_global_max": float(losses.max()),
        }
        return Update(
            averaged(self.w, uploads.params, p, self.hp.server_lr), p, self.hp.server_lr, diagnostics
        )
