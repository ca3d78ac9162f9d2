"""GIFAIR-FL-Global (Yue, Nouiehed & Al Kontar, "GIFAIR-FL: A Framework for Group and Individual Fairness in
Federated Learning", Algorithm 2), and its group penalty as a part (``GroupPenalty``: the math, the groups and
the server's loss cache) that GIFAIR-FL-Per (``gifair_per.py``) and GIFAIR-FL-Global-Prox
(``gifair_global_prox.py``) compose as well.

Objective (Eq. 1): H(θ) = Σ_k p_k F_k(θ) + λ Σ_{i<j} |L_i(θ) − L_j(θ)|, with L_i the *unweighted* mean loss of
the clients A_i of group i. Lemma 1 (Eq. 2–3) rewrites it as a loss-dependent re-weighting of FedAvg::

    H(θ) = Σ_k p_k (1 + λ r_k / (p_k |A_{s_k}|)) F_k(θ),      r_k = Σ_{j ≠ s_k} sign(L_{s_k} − L_j)

Each round the server ranks the groups by their cached losses, sends every selected client its scale
s_k = 1 + λ r_k / (p_k |A_{s_k}|) (fixed during local training, Remark 4), the client runs plain local SGD
with its gradient multiplied by s_k (``LocalSpec.grad_scale``), the server averages the models and refreshes
its loss cache with what the selected clients report. λ = ``lam_frac`` · λ_max with λ_max = min_k p_k
|A_{s_k}| / (d − 1), so that every s_k > 0 (0 ≤ ``lam_frac`` < 1; the paper tunes over {0, 0.1, …, 0.9}).
λ = 0 is FedAvg. ``groups="individual"`` makes every client its own group (d = K, individual fairness,
Tables 2, 3, 5); ``"partition"`` uses the data's groups (Tables 4, 6); ``"auto"`` picks the partition's
groups when it has them; ``"sensitive"`` groups the clients by the sensitive attribute of their samples
(Adult, COMPAS: GIFAIR-FL §3 divides the clients into groups "based on some sensitive attribute"): client
k joins the group a it over-represents, argmax_a n_{k,a} / N_a (its share of group a's training samples;
ties to group 0), so that with two groups each one holds a client unless every client holds the
population's mix (`sensitive_group_ids`).

Readings of the paper's ambiguities; the alternatives sit behind options:

* p_k = n_k / Σ_j n_j over the *training* samples.
* Sampling: ``sampling="size"`` (∝ p_k, without replacement) + ``weighting="uniform"`` (simple average),
  as in the q-FFL and Ditto reference code. Remark 2's uniform sampling: ``sampling="uniform"`` with
  ``weighting="size"`` (normalised, Σ_S p_k θ_k / Σ_S p_k) or ``unbiased=True`` (θ ← (K/m) Σ_S p_k θ_k as
  printed; these weights need not sum to 1).
* Initial losses: ``init_losses="evaluate"`` (F_k(θ⁰) on every client's training set) or ``"zero"``
  (all r_k = 0, so round 0 is FedAvg).
* Reported losses: the server caches each client's last report; clients not selected keep theirs.
  ``loss_source="local"``: F_k(θ_k), the mean loss on the client's whole training set at its post-training
  model (Algorithm 2 as written); ``"minibatch"``: the mean minibatch loss over the round's local steps (no
  extra pass); ``"global"``: F_k(θ̄) at the new global model (Sec. 3.3, the exact r of the theory).

Faults, beyond the rule of ``base.py``: the scales s_k go to every selected client before training; the
average and the loss cache use the survivors only (a dropped client keeps its cached loss); ``unbiased=True``
scales by K/|survivors|.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients
from fairfl_core.algorithms.hyper import Sampling, Weighting
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.local import LocalResult

__all__ = [
    "GIFAIRGlobal",
    "GIFAIRHyper",
    "GroupPenalty",
    "Grouping",
    "InitLosses",
    "LossSource",
    "fairness_objective",
    "gradient_scale",
    "group_ids",
    "group_losses",
    "lambda_max",
    "rank_signs",
    "sensitive_group_ids",
]

Grouping = Literal["auto", "partition", "individual", "sensitive"]
LISTED_GROUPS = 10  # diagnostics list the group losses when d is at most this (group fairness settings)


# -- the math (pure functions) ----------------------------------------------------------------------------
def group_ids(partition_groups: np.ndarray, grouping: Grouping = "auto") -> np.ndarray:
    """Group s_k ∈ {0, …, d−1} of each client: the partition's groups renumbered in order (``"partition"``),
    one group per client (``"individual"``, d = K), or the partition's groups when every client has one and
    one group per client when none has (``"auto"``). Needs d ≥ 2 (λ_max divides by d − 1)."""
    partition_groups = np.asarray(partition_groups)
    if grouping == "sensitive":
        raise ValueError("groups='sensitive' is sensitive_group_ids, from the samples' sensitive attribute")
    check_option(grouping, Grouping, "groups")
    has_group = partition_groups >= 0
    if grouping == "auto":
        if has_group.any() and not has_group.all():
            raise ValueError(
                "groups='auto': some clients have a group and some do not (-1); give every client a group "
                "or set groups='individual'"
            )
        grouping = "partition" if has_group.all() else "individual"
    if grouping == "individual":
        ids = np.arange(len(partition_groups))
    elif not has_group.all():
        raise ValueError(
            "groups='partition' but the data partition gives clients no group (-1): use a grouped "
            "partition (e.g. partition='groups') or groups='individual'"
        )
    else:
        ids = np.unique(partition_groups, return_inverse=True)[1].reshape(-1)
    if ids.max(initial=0) < 1:
        raise ValueError(
            f"GIFAIR-FL needs at least 2 groups (d >= 2), got d = {ids.max(initial=-1) + 1}: use a partition "
            "with several groups or groups='individual'"
        )
    return ids.astype(np.int64)


def sensitive_group_ids(counts: np.ndarray, names: list[str] | None = None) -> np.ndarray:
    """Group of each client by the sensitive attribute of its samples: s_k = argmax_a n_{k,a} / N_a, the
    group whose training samples it holds the largest share of (``counts`` ``[K, A]``: n_{k,a}; ties to the
    lower a). Needs d ≥ 2 groups of clients."""
    counts = np.asarray(counts, dtype=np.float64)
    totals = counts.sum(axis=0)
    if (totals <= 0).any():
        missing = [names[a] if names else a for a in np.flatnonzero(totals <= 0)]
        raise ValueError(
            f"groups='sensitive': no client holds samples of group(s) {missing}; GIFAIR-FL needs both groups "
            "in the federation"
        )
    ids = np.argmax(counts / totals, axis=1).astype(np.int64)
    if len(np.unique(ids)) < 2:
        raise ValueError(
            "groups='sensitive': every client holds the same share of each group, so all fall in one group "
            "(d = 1); GIFAIR-FL needs 2: use a partition that spreads the attribute unevenly "
            "(partition='sensitive_dirichlet') or groups='individual'"
        )
    return np.unique(ids, return_inverse=True)[1].reshape(-1).astype(np.int64)


def group_losses(client_losses: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """L_i = (1/|A_i|) Σ_{k∈A_i} F_k, the unweighted mean over the group's clients (GIFAIR-FL Eq. 1, §3)."""
    d = int(groups.max()) + 1
    return np.bincount(groups, weights=client_losses, minlength=d) / np.bincount(groups, minlength=d)


def rank_signs(losses: np.ndarray) -> np.ndarray:
    """r_i = Σ_{j≠i} sign(L_i − L_j) (Lemma 1, Eq. 3): (#groups with a lower loss) − (#with a higher one).

    Strictly ordered losses give d−1, d−3, …, −(d−1) from the worst group to the best; tied groups get
    the same, intermediate value (sign(0) = 0).
    """
    ordered = np.sort(losses)
    lower = np.searchsorted(ordered, losses, side="left")
    higher = len(losses) - np.searchsorted(ordered, losses, side="right")
    return (lower - higher).astype(np.int64)


def lambda_max(p: np.ndarray, groups: np.ndarray) -> float:
    """λ_max = min_k p_k |A_{s_k}| / (d − 1) (GIFAIR-FL §3): every scale 1 + λ r_k/(p_k|A_{s_k}|) > 0 for
    0 ≤ λ < λ_max. Individual fairness (d = K): min_k p_k / (K − 1)."""
    sizes = np.bincount(groups)
    return float((p * sizes[groups]).min() / (len(sizes) - 1))


def gradient_scale(p: np.ndarray, groups: np.ndarray, client_losses: np.ndarray, lam: float) -> np.ndarray:
    """Client k's multiplier 1 + λ r_k / (p_k |A_{s_k}|) of Lemma 1 (Eq. 2), r_k from the ranking of the
    group losses computed from ``client_losses`` (one per client, e.g. the server's cache)."""
    r = rank_signs(group_losses(client_losses, groups))[groups]
    return 1.0 + lam * r / (p * np.bincount(groups)[groups])


def fairness_objective(p: np.ndarray, groups: np.ndarray, client_losses: np.ndarray, lam: float) -> float:
    """H = Σ_k p_k F_k + λ Σ_{i<j} |L_i − L_j| (Eq. 1); the pairwise sum is Σ_i r_i L_i (proof of Lemma 1)."""
    losses = group_losses(client_losses, groups)
    return float(p @ client_losses + lam * rank_signs(losses) @ losses)


# -- the group penalty (a part the GIFAIR algorithms compose) ----------------------------------------------
def _losses_at_local_models(
    sim: Simulation, w: torch.Tensor, clients: np.ndarray, result: LocalResult
) -> torch.Tensor:
    return sim.engine.losses(result.params, clients, "train")[0]


def _minibatch_losses(
    sim: Simulation, w: torch.Tensor, clients: np.ndarray, result: LocalResult
) -> torch.Tensor:
    return result.train_loss


def _losses_at_new_global(
    sim: Simulation, w: torch.Tensor, clients: np.ndarray, result: LocalResult
) -> torch.Tensor:
    return sim.engine.losses(w, clients, "train")[0]


LossSource = Literal["local", "minibatch", "global"]
LOSS_SOURCES = {
    "local": _losses_at_local_models,
    "minibatch": _minibatch_losses,
    "global": _losses_at_new_global,
}
InitLosses = Literal["evaluate", "zero"]
INIT_LOSSES: dict[str, Callable[[Simulation, torch.Tensor], np.ndarray]] = {
    "evaluate": lambda sim, w: sim.engine.losses(w, None, "train")[0].double().cpu().numpy(),
    "zero": lambda sim, w: np.zeros(sim.num_clients),
}


@dataclass
class GIFAIRHyper(FedAvgHyper):
    """``lam_frac``: λ/λ_max ∈ [0, 1); ``groups``, ``loss_source``, ``init_losses``, ``unbiased``: see the
    module docstring. Sampling defaults to ∝ p_k with a simple average."""

    sampling: Sampling = "size"
    weighting: Weighting = "uniform"
    lam_frac: float = 0.5
    groups: Grouping = "auto"
    loss_source: LossSource = "local"
    init_losses: InitLosses = "evaluate"
    unbiased: bool = False

    def check(self) -> None:
        if not 0 <= self.lam_frac < 1:
            raise ValueError(
                f"lam_frac (λ/λ_max) must be in [0, 1) so that every client's scale stays positive, got "
                f"{self.lam_frac}; the paper's grid is 0, 0.1, ..., 0.9"
            )
        if self.unbiased and self.sampling != "uniform":
            raise ValueError(
                "unbiased=True is Remark 2's aggregate for uniform sampling: set sampling='uniform' "
                "(or unbiased=False for the default ∝ p_k sampling with a simple average)"
            )


class GroupPenalty:
    """The group penalty λ Σ_{i<j} |L_i − L_j| as Lemma 1's re-weighting of the local objective, for an
    algorithm to compose: the clients' groups s_k (``hp.groups``), p_k, λ_max and λ, and the server's loss
    cache in the algorithm's checkpointed ``state`` under ``"losses"`` (``[N]`` float64, one F_k per client).

    ``grad_scale`` gives the scales s_k sent before local training (from the cache, Remark 4), ``refresh``
    the cache after the server step from what the uploading clients report (``hp.loss_source``), and
    ``unbiased_update`` Remark 2's aggregate (module docstring)."""

    def __init__(self, sim: Simulation, hp: GIFAIRHyper) -> None:
        self.sim = sim
        if hp.groups == "sensitive":
            if sim.data.sensitive is None:
                raise ValueError(
                    "GIFAIR-FL groups='sensitive' needs data whose samples carry a sensitive attribute "
                    f"(adult, compas); {sim.data.label()} has none: use groups='auto', 'partition' or "
                    "'individual'"
                )
            self.groups = sensitive_group_ids(sim.data.sensitive_counts("train"), sim.data.sensitive_names)
        else:
            self.groups = group_ids(sim.groups, hp.groups)
        self.p = sim.train_sizes / sim.train_sizes.sum()
        self.lam_max = lambda_max(self.p, self.groups)
        self.lam = hp.lam_frac * self.lam_max
        self.init_losses, self.loss_source = hp.init_losses, hp.loss_source

    def init_state(self, w: torch.Tensor) -> dict[str, np.ndarray]:
        """The initial cache: F_k(θ⁰) on every client's training set, or zeros (``init_losses``)."""
        return {"losses": INIT_LOSSES[self.init_losses](self.sim, w)}

    def scales(self, state: dict[str, Any], clients: np.ndarray) -> np.ndarray:
        """The scales 1 + λ r_k / (p_k |A_{s_k}|) of ``clients`` from the current loss cache."""
        return gradient_scale(self.p, self.groups, state["losses"], self.lam)[clients]

    def grad_scale(self, state: dict[str, Any], clients: np.ndarray, like: torch.Tensor) -> torch.Tensor:
        """``scales`` as the local step's ``grad_scale``, in ``like``'s dtype and device."""
        return self.sim.tensor(self.scales(state, clients), like.dtype)

    def plan(self, t: int, state: dict[str, Any], w: torch.Tensor, hp: GIFAIRHyper) -> Plan:
        """Round t's clients (FedAvg's sampling) and their local step with the scales s_k as its gradient
        scale (Alg. 1)."""
        clients = select_clients(self.sim, t, hp)
        return Plan(clients, self.sim.local_spec(t, grad_scale=self.grad_scale(state, clients, w)))

    def unbiased_update(
        self, w: torch.Tensor, uploads: Uploads, num_clients: int, server_lr: float
    ) -> Update:
        """Remark 2's θ ← (K/m) Σ_S p_k θ_k for uniform sampling (m: the survivors; weights need not sum
        to 1), with the server step η_g."""
        a = self.p[uploads.clients] * num_clients / len(uploads.clients)
        a = self.sim.tensor(a, w.dtype)
        target = a @ uploads.params  # (K/m) Σ_S p_k θ_k (Remark 2)
        return Update(w + server_lr * (target - w), a, server_lr)

    def refresh(self, state: dict[str, Any], uploads: Uploads) -> dict[str, Any]:
        """After the server step (``state["w"]`` is the new model): the uploading clients' losses refresh the
        cache (``loss_source="global"``: at that model). Returns the round's diagnostics, read from the
        refreshed cache, with the scales the clients were sent."""
        sent = self.scales(state, uploads.clients)  # the cache before the refresh
        fresh = LOSS_SOURCES[self.loss_source](self.sim, state["w"], uploads.clients, uploads.result)
        remember_rows(state["losses"], uploads.clients, fresh.double().cpu().numpy())
        cached = state["losses"]
        per_group = group_losses(cached, self.groups)
        diagnostics: dict[str, Any] = {
            "lambda": self.lam,
            "lambda_max": self.lam_max,
            "objective": fairness_objective(self.p, self.groups, cached, self.lam),
            "group_loss_spread": float(per_group.max() - per_group.min()),
            "scale_min": float(sent.min()),
            "scale_max": float(sent.max()),
        }
        if len(per_group) <= LISTED_GROUPS:
            diagnostics["group_losses"] = per_group.tolist()
        return diagnostics


# -- the algorithm ----------------------------------------------------------------------------------------
@register("gifair_global")
class GIFAIRGlobal(FedAvg[GIFAIRHyper]):
    """Algorithm 2: FedAvg whose selected clients scale their gradients by the ``GroupPenalty``'s s_k."""

    def __init__(self, sim: Simulation, hp: GIFAIRHyper) -> None:
        super().__init__(sim, hp)
        self.penalty = GroupPenalty(sim, hp)
        self.groups, self.lam_max, self.lam = self.penalty.groups, self.penalty.lam_max, self.penalty.lam
        self.state.update(self.penalty.init_state(self.w))

    def scales(self, clients: np.ndarray) -> np.ndarray:
        """The scales s_k of ``clients`` from the current loss cache."""
        return self.penalty.scales(self.state, clients)

    def configure(self, t: int) -> Plan:
        return self.penalty.plan(t, self.state, self.w, self.hp)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        if self.hp.unbiased:
            return self.penalty.unbiased_update(self.w, uploads, self.sim.num_clients, self.hp.server_lr)
        return super().aggregate(t, plan, uploads)

    def apply(self, update: Update, uploads: Uploads) -> None:
        """The new model, then the group penalty's loss cache refreshed (its diagnostics reported)."""
        super().apply(update, uploads)
        update.diagnostics.update(self.penalty.refresh(self.state, uploads))
