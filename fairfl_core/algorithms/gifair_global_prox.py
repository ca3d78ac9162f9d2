"""GIFAIR-FL-Global with FedProx local training: the GIFAIR-FL baseline of Equitable-FL (§5, "all baselines
use FedProx local updates"), with the planted clusters as oracle groups.

The local step is GIFAIR-FL-Global's (``gifair_global.py``: the client's gradient scaled by
α_k = 1 + λ r_k / (p_k |A_{s_k}|)) plus FedProx's proximal drift μ (w − w_k), which is not scaled. Sampling is
uniform and the average ∝ n_k over the participants, as for Equitable-FL's FedProx baseline; λ = 0 is
FedProx.

What the scale counts (``counting``):

* ``"round"`` (default; Equitable-FL §5.2: GIFAIR "requires an actual number of clients participating from
  each cluster"): only the round's participants S_k. Each reports F_k(w_k), its training loss at
  the global model before local training; L_q is the mean over the participants of cluster q, |A_q| their
  number, r_k ranks only the clusters present, p_k = n_k / Σ_{j∈S_k} n_j, and λ = ``lam_frac`` · λ_max with
  λ_max = min_{k∈S_k} p_k |A_{s_k}| / (d_k − 1) over the d_k clusters present (every α_k > 0). A round with
  one cluster present scales nothing (α = 1).
* ``"all"``: GIFAIR-FL's own reading (``gifair_global.py``): every cluster's full size, p_k over all
  clients, the server's cache of the last reported losses of every client, one λ for the run.

Faults as in ``gifair_global.py``: the scales go to every selected client before training.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

import numpy as np

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, select_clients
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.gifair_global import GIFAIRHyper, GroupPenalty, gradient_scale, lambda_max
from fairfl_core.algorithms.hyper import Sampling, Weighting
from fairfl_core.sim.context import Simulation

__all__ = ["COUNTINGS", "Counting", "GIFAIRGlobalProx", "GIFAIRProxHyper", "round_scales"]

Counting = Literal["round", "all"]
COUNTINGS: tuple[Counting, ...] = get_args(Counting)


def round_scales(
    sizes: np.ndarray, groups: np.ndarray, losses: np.ndarray, lam_frac: float
) -> tuple[np.ndarray, float]:
    """(α [r], λ) of one round from its participants' training sizes n_k, clusters and losses F_k(w_k):
    Lemma 1's α_k = 1 + λ r_k / (p_k |A_{s_k}|) with p, |A| and r over the participants only and
    λ = ``lam_frac`` · λ_max of the round (module docstring, ``counting="round"``)."""
    _, g = np.unique(groups, return_inverse=True)
    if g.max() == 0:  # one cluster present: no pair of groups to balance
        return np.ones(len(g)), 0.0
    p = np.asarray(sizes, dtype=np.float64) / np.sum(sizes)
    lam = lam_frac * lambda_max(p, g)
    return gradient_scale(p, g, np.asarray(losses, dtype=np.float64), lam), lam


@dataclass
class GIFAIRProxHyper(Proximal, GIFAIRHyper):
    """GIFAIR-FL-Global's fields, FedProx's ``mu`` and ``counting`` (module docstring); uniform sampling with
    the n_k-weighted average."""

    sampling: Sampling = "uniform"
    weighting: Weighting = "size"
    counting: Counting = "round"


@register("gifair_global_prox")
class GIFAIRGlobalProx(FedAvg[GIFAIRProxHyper]):
    """FedProx's local step (``proximal_spec``) with the ``GroupPenalty``'s scales: each round's own from its
    participants (``counting="round"``, their λ and range carried to the diagnostics in ``Plan.notes``) or
    GIFAIR-FL-Global's from the loss cache (``"all"``)."""

    def __init__(self, sim: Simulation, hp: GIFAIRProxHyper) -> None:
        super().__init__(sim, hp)
        self.penalty = GroupPenalty(sim, hp)
        self.groups = self.penalty.groups
        self.state.update(self.penalty.init_state(self.w))

    def scales(self, clients: np.ndarray) -> np.ndarray:
        """``counting="all"``: the scales s_k of ``clients`` from the current loss cache."""
        return self.penalty.scales(self.state, clients)

    def configure(self, t: int) -> Plan:
        clients = select_clients(self.sim, t, self.hp)
        sent: dict[str, float] = {}
        if self.hp.counting == "all":
            scale = self.penalty.grad_scale(self.state, clients, self.w)
        else:
            losses = self.sim.engine.losses(self.w, clients, "train")[0].double().cpu().numpy()
            alpha, lam = round_scales(
                self.sim.train_sizes[clients], self.groups[clients], losses, self.hp.lam_frac
            )
            sent = {"lambda": lam, "scale_min": float(alpha.min()), "scale_max": float(alpha.max())}
            scale = self.sim.tensor(alpha, self.w.dtype)
        spec = replace(proximal_spec(self.sim, t, self.hp.mu, self.w), grad_scale=scale)
        return Plan(clients, spec, notes=sent)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's average (Remark 2's with ``unbiased``); ``counting="round"``: the round's λ and scales in
        the diagnostics."""
        if self.hp.unbiased:
            update = self.penalty.unbiased_update(self.w, uploads, self.sim.num_clients, self.hp.server_lr)
        else:
            update = super().aggregate(t, plan, uploads)
        update.diagnostics.update(plan.notes)
        return update

    def apply(self, update: Update, uploads: Uploads) -> None:
        """The new model; ``counting="all"``: then the loss cache refreshed, as GIFAIR-FL-Global's."""
        super().apply(update, uploads)
        if self.hp.counting == "all":
            update.diagnostics.update(self.penalty.refresh(self.state, uploads))
