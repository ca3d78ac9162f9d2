"""FairFed re-weighting (Ezzeldin et al., AAAI 2023) as Equitable-FL uses it (spec §3.6), FedProx local step.

Persistent weights ω̄_k (ω̄_k^0 = n_k / n). Each round, for the sampled clients S (uniform):

    Δ_k = |Acc_glob(w) − Acc_k(w)|,   Acc_glob = Σ_{j∈S} correct_j / Σ_{j∈S} n_j   (training data, global w)
    ω̄_k ← max(0, ω̄_k − β (Δ_k − mean_{j∈S} Δ_j))      (the clip at 0 is Equitable-FL's fix)
    w ← Σ_{k∈S} ω_k w_k,   ω_k = ω̄_k / Σ_{j∈S} ω̄_j    (n-weights if every ω̄ is 0)

FairFed's gap is |F_glob − F_k| for a group-fairness metric F when client k holds samples of both sensitive
groups and the accuracy gap above otherwise. Here the only group attribute is the client's cluster
(``sim.groups``), so no client holds two groups and the accuracy gap is always the one that applies:
the algorithm needs no group labels and runs on data without them. β = 0 is FedAvg (n-weights).

Faults (``sim/faults.py``): Acc_glob, the gaps Δ_k, their mean and the weights ω run over the clients that
report; only their ω̄_k change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fairfl_core.algorithms.base import register
from fairfl_core.algorithms.fedprox import FedProx, FedProxHyper
from fairfl_core.sim.local import LocalResult

__all__ = ["FairFed", "FairFedHyper", "fairfed_gaps", "fairfed_update", "fairfed_weights"]


def fairfed_gaps(acc: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Δ_k = |Acc_glob − Acc_k| with Acc_glob the participants' pooled accuracy (FairFed's accuracy gap)."""
    acc, counts = np.asarray(acc, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    pooled = float((acc * counts).sum() / counts.sum())
    return np.abs(pooled - acc)


def fairfed_update(fair_weights: np.ndarray, gaps: np.ndarray, beta: float) -> np.ndarray:
    """ω̄_k ← max(0, ω̄_k − β (Δ_k − mean Δ)) for the participants (FairFed Alg. 1; clip: Equitable-FL §3.6)."""
    gaps = np.asarray(gaps, dtype=np.float64)
    return np.maximum(np.asarray(fair_weights, dtype=np.float64) - beta * (gaps - gaps.mean()), 0.0)


def fairfed_weights(fair_weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """ω_k = ω̄_k / Σ_{j∈S} ω̄_j, or n_k / Σ n_j when every ω̄ is 0."""
    w = np.asarray(fair_weights, dtype=np.float64)
    if w.sum() <= 0:
        w = np.asarray(counts, dtype=np.float64)
    return w / w.sum()


@dataclass
class FairFedHyper(FedProxHyper):
    """``beta``: the fairness budget β (DecLearn's default 1.0; Equitable-FL spec grid {0.1, 0.5, 1})."""

    mu: float = 0.0
    beta: float = 1.0

    def check(self):
        if self.weighting != "size":
            raise ValueError(
                "weighting does not apply to fairfed (its weights start at n_k / n and follow β); "
                "leave it at 'size'"
            )
        if self.beta < 0:
            raise ValueError(f"beta must be non-negative, got {self.beta}")


@register("fairfed")
class FairFed(FedProx):
    Hyper = FairFedHyper

    def __init__(self, sim, hp):
        super().__init__(sim, hp)
        self.state["fair_weights"] = sim.train_sizes / sim.train_sizes.sum()

    def reports(self, t: int, clients: np.ndarray, result: LocalResult) -> dict[str, Any]:
        _, acc = self.sim.engine.losses(self.w, clients, split="train")
        gaps = fairfed_gaps(acc.cpu().numpy(), self.sim.train_sizes[clients])
        return {
            "gaps": gaps,
            "fair_weights": fairfed_update(self.state["fair_weights"][clients], gaps, self.hp.beta),
        }

    def weights(self, t: int, clients: np.ndarray, reports: dict[str, Any]) -> torch.Tensor:
        p = fairfed_weights(reports["fair_weights"], self.sim.train_sizes[clients])
        return torch.as_tensor(p, dtype=self.w.dtype, device=self.w.device)

    def after_round(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any]) -> None:
        self.state["fair_weights"][clients] = reports["fair_weights"]

    def diagnostics(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any]) -> dict:
        return {
            **super().diagnostics(t, clients, result, reports),
            "gaps": reports["gaps"].tolist(),
            "weights": self.weights(t, clients, reports).tolist(),
        }
