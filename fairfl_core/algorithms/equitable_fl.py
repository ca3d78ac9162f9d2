"""Equitable-FL (Equitable Federated Learning with Activation Clustering, Algorithm 1): FedProx local
training, then an aggregation that gives every cluster of clients, found afresh each round from the clients'
activation vectors, the same total weight 1/C.

Round k (r = ``clients_per_round`` clients S_k drawn uniformly without replacement):

1. each i ∈ S_k runs E local epochs of FedProx (Eq. 4: SGD on f_i(w) + (μ/2)‖w − w_k‖², ``mu``) and, on the
   way, accumulates its activation vector a^i (Definition 1): the mean of log_softmax(h) over the samples of
   its last local epoch, h the post-ReLU penultimate activations (``model.features``). The engine collects it
   (``LocalSpec.statistics``, ``sim/statistics.py``'s ``ActivationMean``);
2. the server stacks A = [a^i] (rows in participant order), forms S = A Aᵀ, takes the eigenvectors of its C
   largest eigenvalues and runs scikit-learn's K-Means (fixed seed per round) on their rows (lines 15–18);
3. p^i = 1/(C |γ_q|) for i in found cluster γ_q (Eq. 6), w_{k+1} = Σ_i p^i w^i (Eq. 5).

The clustering, its degenerate cases and the options are ``selection/activation_clustering.py``'s.
Readings of what the paper leaves open, each default first (alternatives behind the named option):

* activation vector (Definition 1 gives no reduction over samples): ``reduction="last_epoch_mean"``;
  ``"last_batch_mean"`` (last minibatch only), ``"post_train_mean"`` (final local model, whole local
  training set, eval mode);
* spectral clustering (lines 17–18, von Luxburg 2007 cited): the literal top-C eigenvectors of S;
  ``spectral="row_normalised"`` | ``"normalised_laplacian"``, ``similarity="cosine"``;
* degenerate rounds (not discussed): r = C (or fewer uploads than C after faults) gives every participant
  weight 1/r; a cluster left empty by K-Means replaces C by the number found (Eq. 6 still sums to 1). Each
  is recorded in the round's diagnostics (``fallback_used``, ``fallback``);
* BatchNorm (ResNet-18; not discussed): the engine keeps each client's running statistics during local
  training; the server averages the uploaded ones with the Eq. 6 weights p^i, as it averages the parameters
  (``bn_weights="equitable"``). ``"uniform"``: the engine's plain mean over the uploads (every other
  algorithm's rule).

Per-round diagnostics (JSON): the ``participants``, their found ``clusters`` and ``weights``; ``nmi``: NMI of
the found clusters against the planted ones over the participants (scikit-learn's
``normalized_mutual_info_score``; None in a round whose participants all come from one planted cluster) and
``nmi_raw`` (scikit-learn's value there). These cost nothing beyond the aggregation. With ``round_metrics``
(off by default: no table or figure reads them, the runner's evaluations give CD, σ_Acc and the accuracy),
also at the new model w_{k+1}: ``cd``, the client disagreement of Eq. 9 over the participants' test losses
(the text's mean over unordered pairs; ``cd_literal=True``: the printed double sum over C(r, 2), twice as
large), ``sigma_acc`` (σ_Acc over all n clients around the pooled test accuracy, in points), ``global_acc``
and ``nmi_all`` (every client's activation vector at w_{k+1} over its training set in eval mode, clustered
into C, against the planted clusters): one test pass and one training-set feature pass over all n clients,
about a quarter of an MNIST-column round on a CPU (``benchmarks/equitable_round.py``). They never change
the training: the selections, clusters and parameters are the same either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, RoundOutput, Update, Uploads, register
from fairfl_core.algorithms.fedavg import averaged, select_clients
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import ClientSampling, ServerPluginHyper
from fairfl_core.metrics import client_disagreement, cluster_nmi, sigma_acc
from fairfl_core.selection.activation_clustering import (
    ClusterWeights,
    Reduction,
    Similarity,
    SpectralVariant,
    activation_statistic,
    cluster_weights,
)
from fairfl_core.sim.context import Simulation

__all__ = ["EquitableFL", "EquitableFLHyper"]

FEATURE_MODELS = "mlp, lenet5_cifar10, equitable_cnn_cifar100, equitable_cnn_femnist, resnet18"


@dataclass
class EquitableFLHyper(Proximal, ServerPluginHyper, ClientSampling):
    """``num_clusters`` C (the planted number in the paper's runs), FedProx's ``mu``, the readings
    ``reduction``, ``similarity``, ``spectral``, ``cd_literal``, ``bn_weights`` (module docstring),
    ``round_metrics``: CD, σ_Acc and the all-clients NMI at every round's new model (off by default; an
    evaluation pass over every client each round), ``server_lr`` η_g."""

    num_clusters: int = 2
    reduction: Reduction = "last_epoch_mean"
    similarity: Similarity = "gram"
    spectral: SpectralVariant = "literal"
    cd_literal: bool = False
    bn_weights: Literal["equitable", "uniform"] = "equitable"
    round_metrics: bool = False
    server_lr: float = 1.0

    def check(self) -> None:
        c = self.num_clusters
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ValueError(
                f"num_clusters (C) must be an integer >= 1, e.g. the number of planted clusters; got {c!r}"
            )
        if self.replacement:
            raise ValueError(
                "replacement must be False: Algorithm 1 samples its r clients without replacement"
            )
        if self.server_lr <= 0:
            raise ValueError(f"server_lr must be positive, got {self.server_lr}")


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


@register("equitable_fl")
class EquitableFL(FederatedAlgorithm[EquitableFLHyper]):
    def __init__(self, sim: Simulation, hp: EquitableFLHyper) -> None:
        super().__init__(sim, hp)
        model = sim.engine.model
        if not callable(getattr(model, "features", None)):
            raise ValueError(
                f"Equitable-FL clusters penultimate activations, but the model ({type(model).__name__}) has "
                f"no features(x) method: use a model that has one ({FEATURE_MODELS})"
            )
        if hp.num_clusters > sim.train.clients_per_round:
            raise ValueError(
                f"num_clusters (C) = {hp.num_clusters} exceeds train.clients_per_round = "
                f"{sim.train.clients_per_round} (the r participants clustered each round): lower "
                "num_clusters or raise clients_per_round"
            )
        self.statistic = activation_statistic(hp.reduction)
        groups = sim.groups
        self.planted = groups if len(groups) and (groups >= 0).all() else None

    def configure(self, t: int) -> Plan:
        stats = () if self.statistic is None else (self.statistic,)
        spec = proximal_spec(self.sim, t, self.hp.mu, self.w)
        return Plan(select_clients(self.sim, t, self.hp), replace(spec, statistics=stats))

    def activations(self, uploads: Uploads) -> torch.Tensor:
        """The uploading clients' activation vectors ``[r, D]`` (module docstring, ``reduction``)."""
        if self.statistic is not None:
            return uploads.result.stats[self.statistic.name]
        return self.sim.engine.features(uploads.params, uploads.clients, "train", transform="log_softmax")

    def clusters(self, t: int, acts: torch.Tensor, stream: str = "kmeans") -> ClusterWeights:
        """getprobs of Algorithm 1 with C capped at the number of rows (the r = C fallback below it)."""
        hp = self.hp
        c = min(hp.num_clusters, acts.shape[0])
        seed = self.sim.seed_for(t, stream)
        return cluster_weights(acts, c, seed=seed, similarity=hp.similarity, spectral=hp.spectral)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        found = self.clusters(t, self.activations(uploads))
        short = len(uploads.clients) < self.hp.num_clusters
        p = self.sim.tensor(found.weights, self.w.dtype)
        diagnostics = {
            "participants": uploads.clients.tolist(),
            "clusters": found.labels.tolist(),
            "weights": found.weights.tolist(),
            "effective_clusters": found.effective_clusters,
            "fallback_used": found.fallback_used,
            "fallback": "fewer participants than clusters" if short else found.fallback,
        }
        if self.planted is not None:
            nmi = cluster_nmi(found.labels, self.planted, uploads.clients, nan_if_one_true_cluster=True)
            diagnostics.update(
                nmi=_finite(nmi), nmi_raw=cluster_nmi(found.labels, self.planted, uploads.clients)
            )
        return Update(
            averaged(self.w, uploads.params, p, self.hp.server_lr), p, self.hp.server_lr, diagnostics
        )

    def apply(self, update: Update, uploads: Uploads) -> None:
        """The new model (Eq. 5); with BatchNorm and ``bn_weights="equitable"``, the global running statistics
        become Σ_i p^i of the uploaded ones (Eq. 6 weights) instead of their plain mean."""
        super().apply(update, uploads)
        running, p = uploads.result.running, update.weights
        if running is not None and p is not None and self.hp.bn_weights == "equitable":
            self.state["running"] = p.to(running) @ running
            self.sim.engine.set_running_stats(self.state["running"])

    def round(self, t: int) -> RoundOutput:
        """The round of ``FederatedAlgorithm``, then (``round_metrics``) CD, σ_Acc and the all-clients NMI at
        the new model."""
        out = super().round(t)
        if self.hp.round_metrics and not out.diagnostics.get("skipped"):
            out.diagnostics.update(self.round_metrics(t, np.asarray(out.diagnostics["participants"])))
        return out

    def round_metrics(self, t: int, participants: np.ndarray) -> dict:
        """CD over ``participants``, σ_Acc, the pooled test accuracy and the all-clients NMI at the model."""
        engine, n = self.sim.engine, self.sim.num_clients
        loss, acc = engine.losses(self.w, None, "test")
        global_acc = 100 * engine.pooled(self.w)[0]
        losses = loss.double().cpu().numpy()
        out = {
            "global_acc": global_acc,
            "sigma_acc": sigma_acc(100 * acc.double().cpu().numpy(), global_acc),
            "cd": client_disagreement(losses[participants], self.hp.cd_literal)
            if len(participants) > 1
            else None,
        }
        if self.planted is not None and n >= self.hp.num_clusters:
            everyone = engine.features(self.w, np.arange(n), "train", transform="log_softmax")
            out["nmi_all"] = cluster_nmi(self.clusters(t, everyone, "kmeans_all").labels, self.planted)
        return out
