"""FedFV (Wang et al., IJCAI 2021, "Federated Learning with Fair Averaging"), as the authors' official
implementation in FLGo (WwZzz/easyFL ``flgo/algorithm/fedfv.py``) computes it.

With g_k = w − w_k and F_k the loss of the received model on client k's training data (paper Alg. 1):

1. internal conflicts: clients sorted by F_k ascending; the ⌈α m⌉ highest-loss ones
   (FLGo: ``order[ceil((m − 1)(1 − α)):]``) keep their gradient; every other g̃_i is projected, for j in
   ascending-loss order, j ≠ i, whenever ⟨g_j, g̃_i⟩ < 0:  g̃_i ← g̃_i − ⟨g_j, g̃_i⟩/‖g_j‖² g_j
   (the ORIGINAL g_j);
2. g = mean_k g̃_k;
3. external conflicts, once τ rounds exist: for k = τ−1, …, 0, the stored gradients of the
   clients last selected at round t − k that conflict with g are summed into g_con and, if ⟨g, g_con⟩ < 0,
   g ← g − ⟨g, g_con⟩/‖g_con‖² g_con (the current round's clients, k = 0, included);
4. g ← g ‖mean_k g_k‖ / ‖g‖;  w ← w − g.

Defaults: FedEBA+ Tables 7–8/18 (α = 0.1, τ = 10). ``weighting="uniform"`` (FLGo's plain mean) by default;
``size`` uses p_k ∝ n_k for both means; ``server_lr`` scales the final step (1 = FLGo).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, average_weights
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.context import Simulation

__all__ = ["FedFV", "FedFVHyper", "fedfv_kept", "fedfv_project", "fedfv_history_project", "rescale_to"]

ToDevice = Callable[[np.ndarray], torch.Tensor]  # host indices → a tensor (``Simulation.tensor``)


@dataclass
class FedFVHyper(FedAvgHyper):
    """``alpha``: fraction of highest-loss clients kept unprojected; ``tau``: rounds of gradient history
    checked for external conflicts (0 = none)."""

    weighting: Weighting = "uniform"
    alpha: float = 0.1
    tau: int = 10

    def check(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha (FedFV's kept fraction) must be in [0, 1], got {self.alpha}")
        if self.tau < 0:
            raise ValueError(
                f"tau (FedFV's history length in rounds) must be ≥ 0 (0 = no history), got {self.tau}"
            )


def fedfv_kept(losses: np.ndarray, alpha: float) -> np.ndarray:
    """Indices of the clients whose gradient keeps its direction: the last ⌈(m − 1)(1 − α)⌉-onward entries
    of the ascending-loss order (FLGo ``keep_original``; none when α = 0)."""
    order = np.argsort(np.asarray(losses), kind="stable")
    return order[math.ceil((len(order) - 1) * (1 - alpha)) :] if alpha > 0 else order[:0]


def fedfv_project(
    grads: torch.Tensor, losses: np.ndarray, alpha: float, tensor: ToDevice = torch.as_tensor
) -> torch.Tensor:
    """FedFV's internal-conflict projection (paper Alg. 1; FLGo ``iterate``): ``[K, P]`` → same.

    All projected clients advance together: for each j in ascending-loss order, every g̃_i (i ≠ j, i not
    kept) that conflicts with g_j loses its component along g_j. ``tensor`` takes the kept clients' indices
    to ``grads``' device (``Simulation.tensor``; the default leaves them on the host, a blocking copy on a
    GPU).
    """
    order = np.argsort(np.asarray(losses), kind="stable")
    movable = torch.ones(len(order), dtype=torch.bool, device=grads.device)
    movable[tensor(fedfv_kept(losses, alpha))] = False
    out = grads.clone()
    sq_norms = (grads * grads).sum(1)
    for j in order:
        dots = out @ grads[j]
        hit = movable & (dots < 0)
        hit[j] = False
        coef = torch.where(hit, dots / sq_norms[j].clamp_min(torch.finfo(grads.dtype).tiny), 0.0)
        out -= coef[:, None] * grads[j]
    return out


def fedfv_history_project(
    g: torch.Tensor,
    history: torch.Tensor,
    last_round: np.ndarray,
    t: int,
    tau: int,
    tensor: ToDevice = torch.as_tensor,
) -> torch.Tensor:
    """FedFV's external-conflict step (paper Alg. 1; FLGo ``iterate``): oldest round first, project ``g`` off
    the sum of the stored gradients of the clients last selected at round t − k that conflict with it
    (``tensor``: as :func:`fedfv_project`'s, for their rows of ``history``)."""
    for k in range(tau - 1, -1, -1):
        rows = tensor(np.flatnonzero(last_round == t - k))
        stored = history[rows]
        conflicting = stored[stored @ g < 0]
        if len(conflicting):
            g_con = conflicting.sum(0)
            dot = g @ g_con
            if dot < 0:
                g = g - dot / (g_con @ g_con) * g_con
    return g


def rescale_to(g: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """g ‖reference‖ / ‖g‖ (FedFV Alg. 1; FLGo ``iterate``); a zero g stays zero."""
    norm = g.norm()
    return g * (reference.norm() / norm) if norm > 0 else g


@register("fedfv")
class FedFV(FedAvg[FedFVHyper]):
    def __init__(self, sim: Simulation, hp: FedFVHyper) -> None:
        super().__init__(sim, hp)
        if hp.tau > 0:
            self.state["history"] = torch.zeros(
                sim.num_clients, self.w.numel(), dtype=self.w.dtype, device=self.w.device
            )
            self.state["last_round"] = np.full(sim.num_clients, -1, dtype=np.int64)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """Projected gradients (ordered by each client's training loss at the received model, FLGo's
        ``test(model, 'train')``), their p-weighted sum, the history projection, rescaled to ‖Σ p_k g_k‖."""
        clients, grads = uploads.clients, self.w - uploads.params
        loss = self.sim.engine.losses(self.w, clients, "train")[0].cpu().numpy()
        p = average_weights(self.sim, clients, self.hp, self.w)
        g = p @ fedfv_project(grads, loss, self.hp.alpha, self.sim.tensor)
        if self.hp.tau > 0:  # remember g_k before the history step, which includes this round (k = 0)
            remember_rows(self.state["history"], clients, grads)
            remember_rows(self.state["last_round"], clients, np.full(len(clients), t))
            if t + 1 >= self.hp.tau:  # FLGo counts rounds from 1: ``current_round >= tau``
                history, last_round = self.state["history"], self.state["last_round"]
                g = fedfv_history_project(g, history, last_round, t, self.hp.tau, self.sim.tensor)
        return Update(self.w - self.hp.server_lr * rescale_to(g, p @ grads), p, self.hp.server_lr)
