"""FedEBA: FedAvg with entropy-based aggregation (Wang, Wang, Shi, Karimireddy & Tang, "Entropy-driven Fair
and Effective Federated Learning", §4.1, Prop. 4.1, Eq. 4; = FedEBA+ with α = 0 = "FedAvg+①" of Table 15).

The aggregation weights solve max_p H(p) s.t. Σ p_i = 1, Σ p_i F_i = f̃ (Eq. 3); the Gibbs solution is

    p_i = q_i exp(F_i(x^i_{t,K}) / τ) / Σ_{j∈S_t} q_j exp(F_j(x^j_{t,K}) / τ)        (Eq. 4; prior q: Eq. 22)

over the sampled clients S_t, where F_i(x^i_{t,K}) is client i's loss after its local training (Alg. 1
line 15). The prior q is FedAvg's ``weighting``: ``"uniform"`` (default) is the paper's Eq. 4 without prior,
``"size"`` the data-ratio prior q_i = n_i / Σ_{j∈S_t} n_j. τ → ∞ gives q, i.e. FedAvg with the same
weighting; τ → 0 puts all weight on the highest-loss client (Remark 4.2). x_{t+1} = x_t + η Σ_i p_i Δ_i.

Readings of the paper's options: ``loss_eval``, the loss F_i(x^i_{t,K}) of Eq. 4: ``"full"`` (default: a
forward pass over the client's whole training set at its trained model) or ``"last_epoch_avg"`` (the mean
minibatch loss of its local steps);
``tau_schedule``/``tau_kappa`` (Remark M.1, Fig. 9) anneal τ_t = τ / (1 + κ t)^a with a = 1 (linear),
½ (concave), 3 (convex); t is the 0-based round (the paper's t − 1), ``"constant"`` (default) keeps τ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, average_weights
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.context import Simulation

__all__ = [
    "EBAWeighting",
    "FedEBA",
    "FedEBAHyper",
    "TAU_SCHEDULES",
    "TauSchedule",
    "annealed_tau",
    "eba_weights",
    "weights_entropy",
]

TauSchedule = Literal["constant", "linear", "concave", "convex"]
TAU_SCHEDULES = {"constant": 0.0, "linear": 1.0, "concave": 0.5, "convex": 3.0}  # exponent a of (1 + κt)


@dataclass
class FedEBAHyper(FedAvgHyper):
    """``tau``: temperature τ > 0, finite (τ → ∞ gives the prior's weights, e.g. 1e15 to float precision;
    paper default 0.1, grid {0.05 … 20});
    ``weighting``: the prior q (``"uniform"`` = no prior, Eq. 4; ``"size"``: Eq. 22); ``loss_eval``,
    ``tau_schedule``, ``tau_kappa``: see the module docstring; ``entropy_weights``: False puts q in place of
    the EBA weights (FedEBA+'s "FedAvg+②" ablation, Table 15)."""

    weighting: Weighting = "uniform"
    tau: float = 0.1
    loss_eval: Literal["full", "last_epoch_avg"] = "full"
    tau_schedule: TauSchedule = "constant"
    tau_kappa: float = 0.0
    entropy_weights: bool = True

    def check(self) -> None:
        if not self.tau > 0:
            raise ValueError(f"tau (EBA temperature) must be > 0 (τ → ∞: prior weights), got {self.tau}")
        if not (self.tau_kappa >= 0 and np.isfinite(self.tau_kappa)):
            raise ValueError(
                f"tau_kappa (annealing rate κ) must be a finite number >= 0, got {self.tau_kappa}"
            )


def eba_weights(losses: torch.Tensor, tau: float, prior: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy-based aggregation weights p = softmax(F/τ + log q) (FedEBA+ Eq. 4; with prior q, Eq. 22).

    Computed as a softmax (the maximum is subtracted first), so τ = 0.05 with losses of order 1–10 cannot
    overflow. ``tau = inf`` returns q (uniform when ``prior`` is None).
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    logits = losses / tau
    if prior is not None:
        logits = logits + torch.log(prior.to(logits))
    return torch.softmax(logits, dim=0)


def annealed_tau(tau0: float, t: int, schedule: TauSchedule = "constant", kappa: float = 0.0) -> float:
    """τ_t = τ_0 / (1 + κ t)^a, a = 0, 1, ½, 3 for constant, linear, concave, convex (FedEBA+ Remark M.1;
    t is the 0-based round)."""
    check_option(schedule, TauSchedule, "tau schedule")
    return tau0 / (1.0 + kappa * t) ** TAU_SCHEDULES[schedule]


def weights_entropy(p: torch.Tensor) -> float:
    """Shannon entropy −Σ p_i log p_i (nats) of aggregation weights; log n for uniform weights."""
    return float(torch.special.entr(p).sum())


class EBAWeighting:
    """The EBA weighting that FedEBA, FedEBA+ and Prac-FedEBA+ compose (§4.1): τ_t (Remark M.1), the prior q
    (Eq. 22), the weights p of given losses (Eq. 4), and the round's weights of the post-training losses
    (Alg. 1 line 15) with their diagnostics. Stateless: it reads ``sim`` and the ``FedEBAHyper`` fields."""

    def __init__(self, sim: Simulation, hp: FedEBAHyper) -> None:
        self.sim, self.hp = sim, hp

    def tau(self, t: int) -> float:
        return annealed_tau(self.hp.tau, t, self.hp.tau_schedule, self.hp.tau_kappa)

    def prior(self, clients: np.ndarray, w: torch.Tensor) -> torch.Tensor:
        """q over the clients: FedAvg's weights (uniform, or ∝ n_i with ``weighting="size"``), in ``w``'s
        dtype and device."""
        return average_weights(self.sim, clients, self.hp, w)

    def weights(self, t: int, clients: np.ndarray, losses: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Aggregation weights of round t from the clients' losses (Eq. 4); q without ``entropy_weights``."""
        if not self.hp.entropy_weights:
            return self.prior(clients, w)
        return eba_weights(losses, self.tau(t), self.prior(clients, w))

    def post_losses(self, uploads: Uploads) -> torch.Tensor:
        """F_i(x^i_{t,K}): each client's loss at its trained model (``loss_eval``)."""
        if self.hp.loss_eval == "full":
            return self.sim.engine.losses(uploads.params, uploads.clients, "train")[0]
        return uploads.result.train_loss

    def round_weights(self, t: int, uploads: Uploads, w: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any]]:
        """p of the post-training losses over the uploads (Alg. 1 line 15), and its diagnostics."""
        post = self.post_losses(uploads)
        p = self.weights(t, uploads.clients, post, w)
        diagnostics = {
            "tau": self.tau(t),
            "weights_entropy": weights_entropy(p),
            "weight_max": float(p.max()),
            "post_loss_max": float(post.max()),
        }
        return p, diagnostics

    def update(self, w: torch.Tensor, delta: torch.Tensor, p: torch.Tensor, diagnostics: dict) -> Update:
        """x_{t+1} = x_t + η Δ_t (Alg. 1 line 25), recording the weights p it aggregated with."""
        return Update(w + self.hp.server_lr * delta, p, self.hp.server_lr, diagnostics)


@register("fedeba")
class FedEBA(FedAvg[FedEBAHyper]):
    """FedAvg's round with the EBA weights p of the post-training losses: Δ_t = Σ_i p_i Δ_i."""

    def __init__(self, sim: Simulation, hp: FedEBAHyper) -> None:
        super().__init__(sim, hp)
        self.eba = EBAWeighting(sim, hp)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        p, diagnostics = self.eba.round_weights(t, uploads, self.w)
        return self.eba.update(self.w, p @ (uploads.params - self.w), p, diagnostics)
