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

import numpy as np

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import select_clients
from fairfl_core.algorithms.fedprox import Proximal
from fairfl_core.algorithms.gifair_global import GIFAIRGlobal, GIFAIRHyper, gradient_scale, lambda_max
from fairfl_core.sim.transfer import to_device

__all__ = ["COUNTINGS", "GIFAIRGlobalProx", "GIFAIRProxHyper", "round_scales"]

COUNTINGS = ("round", "all")


def round_scales(sizes: np.ndarray, groups: np.ndarray, losses: np.ndarray, lam_frac: float):
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

    sampling: str = "uniform"
    weighting: str = "size"
    counting: str = "round"

    def check(self):
        super().check()
        if self.counting not in COUNTINGS:
            raise ValueError(
                f"counting must be one of {COUNTINGS} ('round': each round's participants, Equitable-FL "
                f"§5.2; 'all': GIFAIR-FL's full clusters and loss cache); got {self.counting!r}"
            )


@register("gifair_global_prox")
class GIFAIRGlobalProx(GIFAIRGlobal):
    Hyper = GIFAIRProxHyper

    def configure(self, t: int) -> Plan:
        if self.hp.counting == "all":
            plan = super().configure(t)
        else:
            clients = select_clients(self.sim, t, self.hp)
            losses = self.sim.engine.losses(self.w, clients, "train")[0].double().cpu().numpy()
            scale, lam = round_scales(
                self.sim.train_sizes[clients], self.groups[clients], losses, self.hp.lam_frac
            )
            self.sent = {"lambda": lam, "scale_min": float(scale.min()), "scale_max": float(scale.max())}
            tensor = to_device(scale, self.w.device, self.w.dtype)
            plan = Plan(clients, self.sim.local_spec(t, grad_scale=tensor))
        return replace(plan, spec=replace(plan.spec, prox_mu=self.hp.mu, prox_ref=self.w))

    def apply(self, update: Update, uploads: Uploads) -> None:
        """``counting="all"``: GIFAIR-FL-Global's (the loss cache refreshed); ``"round"``: the new model, with
        the round's λ and scales in the diagnostics."""
        if self.hp.counting == "all":
            return super().apply(update, uploads)
        super(GIFAIRGlobal, self).apply(update, uploads)
        update.diagnostics.update(self.sent)
