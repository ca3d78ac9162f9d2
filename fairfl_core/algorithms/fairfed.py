"""FairFed re-weighting (Ezzeldin et al., AAAI 2023) as Equitable-FL uses it (§5.2), FedProx local step.

Persistent weights ω̄_k (ω̄_k^0 = n_k / n). Each round, for the sampled clients S (uniform):

    Δ_k = |Acc_glob(w) − Acc_k(w)|,   Acc_glob = Σ_{j∈S} correct_j / Σ_{j∈S} n_j   (training data, global w)
    ω̄_k ← max(0, ω̄_k − β (Δ_k − mean_{j∈S} Δ_j))      (the clip at 0 is Equitable-FL's fix)
    w ← Σ_{k∈S} ω_k w_k,   ω_k = ω̄_k / Σ_{j∈S} ω̄_j    (n-weights if every ω̄ is 0)

FairFed's gap (Ezzeldin et al., AAAI 2023, Eq. 6) is |F_glob − F_k| for a group-fairness metric F when client
k holds samples of both sensitive groups, and the accuracy gap above otherwise. On data whose samples carry a
sensitive attribute A (Adult, COMPAS: ``data/tabular.py``), F is the metric of FairFed's Algorithm 1, the
equal opportunity difference EOD = TPR(A=0) − TPR(A=1) (a fraction, like the accuracies it mixes with):
F_k on client k's training data at the received model, F_glob on the union of the participants' training
data, from the summed ``[A, y, ŷ]`` counts (Eq. 7's secure aggregation of the clients' statistics gives
exactly this; with every client participating, FairFed's setting, it is the federation's EOD). A client
without a positive sample of each group (F_k undefined) takes the accuracy gap, as Eq. 6 says; so does
every client when the participants lack a group. On data without a sensitive attribute (the only group
attribute is then the client's cluster, ``sim.groups``, and no client holds two) the accuracy gap is the
one that applies and the algorithm needs no group labels. β = 0 is FedAvg (n-weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import averaged, select_clients
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import ClientSampling, ServerPluginHyper
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.metrics.parity import true_positive_rates
from fairfl_core.sim.context import Simulation

__all__ = [
    "FairFed",
    "FairFedHyper",
    "fairfed_eod",
    "fairfed_gaps",
    "fairfed_group_gaps",
    "fairfed_update",
    "fairfed_weights",
]


def fairfed_gaps(acc: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Δ_k = |Acc_glob − Acc_k| with Acc_glob the participants' pooled accuracy (FairFed's accuracy gap)."""
    acc, counts = np.asarray(acc, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    pooled = float((acc * counts).sum() / counts.sum())
    return np.abs(pooled - acc)


def fairfed_eod(counts: np.ndarray) -> float:
    """EOD = TPR(A=0) − TPR(A=1) as a fraction from ``[A, y, ŷ]`` counts (FairFed §3; NaN when a group has
    no positive sample)."""
    return float(np.subtract(*true_positive_rates(counts)))


def fairfed_group_gaps(
    acc: np.ndarray, sizes: np.ndarray, group_counts: np.ndarray
) -> tuple[np.ndarray, dict]:
    """FairFed's Δ_k (Eq. 6) on data with a sensitive attribute: |EOD_glob − EOD_k| for the clients whose
    EOD is defined, |Acc_glob − Acc_k| for the others. ``acc`` and ``sizes`` as in :func:`fairfed_gaps`
    (accuracies and training-sample counts), ``group_counts`` ``[K, A, y, ŷ]`` each participant's counts on
    its training data. Returns the gaps and the diagnostics (``eod_global``, ``eod_clients``: the clients'
    EODs, None where undefined)."""
    group_counts = np.asarray(group_counts, dtype=np.float64)
    local = np.array([fairfed_eod(c) for c in group_counts])
    total = fairfed_eod(group_counts.sum(axis=0))
    gaps = fairfed_gaps(acc, sizes)
    if np.isfinite(total):
        gaps = np.where(np.isfinite(local), np.abs(total - local), gaps)
    info = {
        "eod_global": total if np.isfinite(total) else None,
        "eod_clients": [float(v) if np.isfinite(v) else None for v in local],
    }
    return gaps, info


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

    def check(self) -> None:
        if self.server_lr <= 0:
            raise ValueError(f"server_lr must be positive, got {self.server_lr}")
        if self.beta < 0:
            raise ValueError(f"beta must be non-negative, got {self.beta}")


@register("fairfed")
class FairFed(FederatedAlgorithm[FairFedHyper]):
    def __init__(self, sim: Simulation, hp: FairFedHyper) -> None:
        super().__init__(sim, hp)
        self.state["fair_weights"] = sim.train_sizes / sim.train_sizes.sum()

    def configure(self, t: int) -> Plan:
        return Plan(select_clients(self.sim, t, self.hp), proximal_spec(self.sim, t, self.hp.mu, self.w))

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The gaps at the received model (EOD gaps on data with a sensitive attribute, accuracy gaps
        otherwise), the clipped fairness-weight update, and the average with the renormalised weights."""
        clients = uploads.clients
        _, acc = self.sim.engine.losses(self.w, clients, split="train")
        sizes = self.sim.train_sizes[clients]
        extra: dict = {}
        if self.sim.data.sensitive is None:
            gaps = fairfed_gaps(acc.cpu().numpy(), sizes)
        else:
            group_counts = self.sim.engine.group_counts(self.w, clients, split="train").cpu().numpy()
            gaps, extra = fairfed_group_gaps(acc.cpu().numpy(), sizes, group_counts)
        fair = fairfed_update(self.state["fair_weights"][clients], gaps, self.hp.beta)
        remember_rows(self.state["fair_weights"], clients, fair)
        p = self.sim.tensor(fairfed_weights(fair, sizes), self.w.dtype)
        new_w = averaged(self.w, uploads.params, p, self.hp.server_lr)
        return Update(new_w, p, self.hp.server_lr, {"gaps": gaps.tolist(), "weights": p.tolist(), **extra})
