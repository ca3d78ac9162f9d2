"""Clustered sampling, Algorithm 2 (Fraboni et al., ICML 2021), FedProx local training (μ = 0: FedAvg).

Server state: one representative gradient G_i = w_i − w per client (its last local update, stale for
clients not sampled since; all zero at the start). Each round the clients are clustered from their
representative gradients into m sample-size-aware distributions (``selection/clustered.py``), one client
is drawn from each, and the m local models are averaged with weights 1/m (a client drawn twice counts
twice), which is unbiased because Σ_l W_l(i) = m·p_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import average_step
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import Averaging, ServerPluginHyper, Weighting
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.selection.clustered import (
    Measure,
    cluster_distributions,
    importance_clusters,
    representative_distances,
    sample_one_per_row,
)
from fairfl_core.sim.context import Simulation

__all__ = ["ClusteredSampling", "ClusteredSamplingHyper"]


@dataclass
class ClusteredSamplingHyper(Proximal, ServerPluginHyper, Averaging):
    """``similarity`` between representative gradients: arccos (default, as Equitable-FL's baseline uses
    it), L2 (squared) or L1. One client is drawn per cluster distribution, so there is no sampling field."""

    weighting: Weighting = "uniform"
    mu: float = 0.0
    similarity: Measure = "arccos"


@register("clustered_sampling")
class ClusteredSampling(FederatedAlgorithm[ClusteredSamplingHyper]):
    def __init__(self, sim: Simulation, hp: ClusteredSamplingHyper) -> None:
        super().__init__(sim, hp)
        self.state["rep_grads"] = torch.zeros(
            sim.num_clients, self.w.numel(), dtype=self.w.dtype, device=self.w.device
        )

    def distributions(self, t: int) -> np.ndarray:
        """This round's m sampling distributions ``[m, N]`` over the clients."""
        p = self.sim.train_sizes / self.sim.train_sizes.sum()
        m = self.sim.train.clients_per_round
        labels = importance_clusters(
            representative_distances(self.state["rep_grads"], self.hp.similarity), p, m
        )
        return cluster_distributions(labels, p, m, self.sim.rng(t, "clusters"))

    def configure(self, t: int) -> Plan:
        return Plan(self.choose(t), proximal_spec(self.sim, t, self.hp.mu, self.w))

    def choose(self, t: int) -> np.ndarray:
        """One client from each of this round's m distributions."""
        return np.sort(sample_one_per_row(self.distributions(t), self.sim.rng(t, "select")))

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step; the uploaded updates (from the model the clients received) become the clients'
        representative gradients (one per client drawn twice)."""
        updates = uploads.params - self.w
        remember_rows(self.state["rep_grads"], uploads.clients, updates)
        return average_step(self.sim, self.w, uploads, self.hp)
