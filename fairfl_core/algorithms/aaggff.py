"""AAggFF-D (Hahn, Lee & Yoon, "Pursuing Overall Welfare in Federated Learning through Sequential Decision
Making", ICML 2024; cross-device variant, Alg. 3 of its appendix), after the official code vaseline555/AAggFF
``src/server/aaggffserver.py`` (its two departures from the paper are options, ``"*as_coded"``); FedEBA+
Tables 1, 2 and 23 baseline ("CDF = normal").

The server keeps mixing coefficients p ∈ R^m (initialised to C·1, C = n/m the participation fraction, as the
code does) and a cumulative linearised gradient G (init 0). Each round, with r_i = F_i(x_t) the loss of the
received model on client i's training data (before local training) for i ∈ S_t::

    u_i = r_i / mean_{S_t} r ;  r_i ← C · CDF(u_i)                     (bounded responses, its Eq. 8, §B.2)
    r̄ = mean_{S_t} r ;  r̃ = r̄ 1_m,  r̃_i = r̄ + (r_i − r̄)/C for i ∈ S_t  (doubly-robust estimate)
    d = 1 + (Σ_j p_j) r̄
    ∇ = −r̃/d + 1_m · r̄ ⟨p, r̃ − r̄ 1_m⟩ / d²                         (linearised gradient of −log(1 + ⟨p, r⟩))
    G ← G + ∇ ;  p ← softmax(−G √(log m) / (√(τ + 1) (2 + C)))          (linearised FTRL; τ = t + 1, the
                                                                        code's 1-based round)
    x_{t+1} = x_t + η Σ_{i∈S_t} (p_i / Σ_{j∈S_t} p_j) Δ_i               (its Eq. 95)

``cdf``: ``"normal"`` (default) is Φ(u − 1), increasing in the loss as every other CDF of the code; the
code's normal branch computes ½(erfc((u − 1)/√2) + 1) = 1.5 − Φ(u − 1), which DEcreases with the loss
(a sign slip): ``"normal_as_coded"`` reproduces it. The other CDFs of the code: ``weibull``
1 − e^{−u²}, ``exponential`` 1 − e^{−u}, ``frechet`` e^{−1/u}, ``gumbel`` e^{−e^{−(u−1)}}, ``logistic``
1/(1 + e^{−(u−1)}).

``dr_estimate``: ``"standard"`` (default) is the doubly-robust estimate the paper names, baseline plus
inverse-probability-weighted residual, r̃_i = r̄ + 𝟙{i ∈ S_t}(r_i − r̄)/C, whose mean over the draw of S_t
is r_i for a fixed baseline. The code drops the baseline of the observed clients, r̃_i = (r_i − r̄)/C
(mean r_i − C r̄): ``"as_coded"`` reproduces it. The cross-silo variant AAggFF-S (Online Newton Step, used by
the code when C = 1) is not implemented: this update runs for every C.

Faults, beyond the rule of ``base.py``: S_t is the set of clients that report (a dropped client's loss never
arrives); the doubly-robust estimate divides by the observed participation fraction |S_t|/m instead of C (the
probability of observing a response, lowered by the faults); the responses and the FTRL step keep C.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, averaged
from fairfl_core.algorithms.fedeba import weights_entropy
from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.context import Simulation

__all__ = [
    "AAggFF",
    "AAggFFHyper",
    "CDFS",
    "Cdf",
    "DrEstimate",
    "aaggff_decision",
    "aaggff_gradient",
    "aaggff_responses",
]

Cdf = Literal["normal", "normal_as_coded", "weibull", "exponential", "frechet", "gumbel", "logistic"]
DrEstimate = Literal["standard", "as_coded"]


def _normal_cdf(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * (1 + torch.erf(x / math.sqrt(2)))


CDFS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "normal": lambda u: _normal_cdf(u - 1),
    "normal_as_coded": lambda u: 0.5 * (torch.erfc((u - 1) / math.sqrt(2)) + 1),
    "weibull": lambda u: 1 - torch.exp(-(u**2)),
    "exponential": lambda u: 1 - torch.exp(-u),
    "frechet": lambda u: torch.exp(-1 / u),
    "gumbel": lambda u: torch.exp(-torch.exp(-(u - 1))),
    "logistic": lambda u: torch.sigmoid(u - 1),
}


@dataclass
class AAggFFHyper(FedAvgHyper):
    """``cdf``: the response transform (FedEBA+ Table 6: normal); ``dr_estimate``: ``"standard"`` or the
    code's ``"as_coded"`` doubly-robust estimate; see the module docstring."""

    cdf: Cdf = "normal"
    dr_estimate: DrEstimate = "standard"


def aaggff_responses(losses: torch.Tensor, frac: float, cdf: str = "normal") -> torch.Tensor:
    """r_i = C · CDF(F_i / mean_j F_j) over the selected clients (AAggFF Eq. 8 and §B.2)."""
    return frac * CDFS[cdf](losses / losses.mean())


def aaggff_gradient(
    mix: torch.Tensor,
    responses: torch.Tensor,
    selected: torch.Tensor | np.ndarray,
    frac: float,
    dr_estimate: DrEstimate = "standard",
) -> torch.Tensor:
    """Linearised gradient ``[m]`` of −log(1 + ⟨p, r⟩) with the doubly-robust response estimate (AAggFF-D):
    r̃_i = r̄ + (r_i − r̄)/C on the ``selected`` clients (``"standard"``) or (r_i − r̄)/C (``"as_coded"``);
    ``selected``: their indices, on ``mix``'s device (``Simulation.tensor``) or the host (a blocking copy on a
    GPU)."""
    check_option(dr_estimate, DrEstimate, "dr_estimate")
    mean = responses.mean()
    robust = torch.full_like(mix, float(mean))
    baseline = mean if dr_estimate == "standard" else 0.0
    robust[selected] = baseline + (responses - mean) / frac
    denom = 1 + mix.sum() * mean
    return -robust / denom + mean * (mix @ (robust - mean)) / denom**2


def aaggff_decision(cum_grad: torch.Tensor, t: int, frac: float) -> torch.Tensor:
    """Linearised FTRL: p = softmax(−G √(log m) / (√(t + 2) (2 + C))); t is the 0-based round."""
    m = cum_grad.numel()
    return torch.softmax(-cum_grad * math.sqrt(math.log(m)) / (math.sqrt(t + 2) * (2 + frac)), dim=0)


@register("aaggff")
class AAggFF(FedAvg[AAggFFHyper]):
    def __init__(self, sim: Simulation, hp: AAggFFHyper) -> None:
        super().__init__(sim, hp)
        self.frac = sim.train.clients_per_round / sim.num_clients
        m = sim.num_clients
        self.state.update(
            mix=torch.full((m,), self.frac, dtype=self.w.dtype, device=self.w.device),
            cum_grad=torch.zeros(m, dtype=self.w.dtype, device=self.w.device),
        )

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The next decision (mixing weights over all clients) from the losses of the received model, and
        the average with it renormalised over the uploading clients."""
        clients, rows = uploads.clients, self.sim.tensor(uploads.clients)
        losses = self.sim.engine.losses(self.w, clients, "train")[0]
        responses = aaggff_responses(losses, self.frac, self.hp.cdf)
        observed = len(clients) / self.sim.num_clients  # = C without faults
        grad = aaggff_gradient(self.state["mix"], responses, rows, observed, self.hp.dr_estimate)
        self.state["cum_grad"] = self.state["cum_grad"] + grad
        self.state["mix"] = aaggff_decision(self.state["cum_grad"], t, self.frac)
        p = self.state["mix"][rows]
        p = p / p.sum()
        diagnostics = {
            "mix_max": float(self.state["mix"].max()),
            "weights_entropy": weights_entropy(p),
            "loss_at_global_max": float(losses.max()),
        }
        return Update(
            averaged(self.w, uploads.params, p, self.hp.server_lr), p, self.hp.server_lr, diagnostics
        )
