"""FairFed re-weighting (Ezzeldin et al., AAAI 2023) as Equitable-FL uses it (§5.2), FedProx local step.

Persistent weights ω̄_k (ω̄_k^0 = n_k / n). Each round, for the sampled clients S (uniform):

    Δ_k = |Acc_glob(w) − Acc_k(w)|,   Acc_glob = Σ_{j∈S} correct_j / Σ_{j∈S} n_j   (training data, global w)
    ω̄_k ← max(0, ω̄_k − β (Δ_k − mean_{j∈S} Δ_j))      (the clip at 0 is Equitable-FL's fix)
    w ← Σ_{k∈S} ω_k w_k,   ω_k = ω̄_k / Σ_{j∈S} ω̄_j    (n-weights if every ω̄ is 0)

FairFed's gap is |F_glob − F_k| for a group-fairness metric F when client k holds samples of both sensitive
groups and the accuracy gap above otherwise. Here the only group attribute is the client's cluster
(``sim.groups``), so no client holds two groups and the accuracy gap is always the one that applies:
the algorithm needs no group labels and runs on data without them. β = 0 is FedAvg (n-weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import averaged
from fairfl_core.algorithms.fedprox import FedProx, Proximal
from fairfl_core.algorithms.hyper import ClientSampling, ServerPluginHyper
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.sim.transfer import to_device

__all__ = ["FairFed", "FairFedHyper", "fairfed_gaps", "fairfed_update", "fairfed_weights"]


def fairfed_gaps(acc: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Δ_k = |Acc_glob − Acc_k| with Acc_glob the participants' pooled accuracy (FairFed's accuracy gap)."""
    acc, counts = np.asarray(acc, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    pooled = float((acc * counts).sum() / counts.sum())
    return np.abs(pooled - acc)


def fairfed_update(fair_weights: np.ndarray, gaps: np.ndarray, beta: float) -> np.ndarray:
    """ω̄_k ← max(0, ω̄_k − β (Δ_k − mean Δ)) for the participants (FairFed Alg. 1; clip: Equitable-FL §5.2)."""
    gaps = np.asarray(gaps, dtype=np.float64)
    return np.maximum(np.asarray(fair_weights, dtype=np.float64) - beta * (gaps - gaps.mean()), 0.0)


def fairfed_weights(fair_weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """ω_k = ω̄_k / Σ_{j∈S} ω̄_j, or n_k / Σ n_j when every ω̄ is 0."""
    w = np.asarray(fair_weights, dtype=np.float64)
    if w.sum() <= 0:
        w = np.asarray(counts, dtype=np.float64)
    return w / w.sum()


@dataclass
class FairFedHyper(Proximal, ServerPluginHyper, ClientSampling):
    """``beta``: the fairness budget β (DecLearn's default 1.0; Equitable-FL's grid {0.1, 0.5, 1});
    ``server_lr``: η_g. The aggregation weights are FairFed's own (they start at n_k / n and follow β), so
    there is no weighting field."""

    mu: float = 0.0
    beta: float = 1.0
    server_lr: float = 1.0

    def check(self):
        if self.server_lr <= 0:
            raise ValueError(f"server_lr must be positive, got {self.server_lr}")
        if self.beta < 0:
            raise ValueError(f"beta must be non-negative, got {self.beta}")


@register("fairfed")
class FairFed(FedProx):
    Hyper = FairFedHyper

    def __init__(self, sim, hp):
        super().__init__(sim, hp)
        self.state["fair_weights"] = sim.train_sizes / sim.train_sizes.sum()

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The accuracy gaps at the received model, the clipped fairness-weight update, and the average with
        the renormalised weights."""
        clients = uploads.clients
        _, acc = self.sim.engine.losses(self.w, clients, split="train")
        gaps = fairfed_gaps(acc.cpu().numpy(), self.sim.train_sizes[clients])
        fair = fairfed_update(self.state["fair_weights"][clients], gaps, self.hp.beta)
        self.state["fair_weights"] = remember_rows(self.state["fair_weights"], clients, fair)
        p = to_device(fairfed_weights(fair, self.sim.train_sizes[clients]), self.w.device, self.w.dtype)
        new_w = averaged(self.w, uploads.params, p, self.hp.server_lr)
        return Update(new_w, p, self.hp.server_lr, {"gaps": gaps.tolist(), "weights": p.tolist()})
