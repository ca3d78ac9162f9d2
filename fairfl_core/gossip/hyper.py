"""AFGA's and CAFGA's gossip settings (TMLR 2024, Algorithms 1–2, §5), validated on construction.

N clients; M = |S_r| = |S_{r,t}| clients sampled per round and re-sampled at each of the Z local iterations
(Algorithm 1 lines 3 and 6, uniformly without replacement, so M ≤ N); K clusters for CAFGA (K = 1 is AFGA),
each of n = N/K clients with m = M/K sampled in it (Algorithm 2 lines 4 and 7: so K divides both N and M);
the gossip topology inside each cluster (``topology.TOPOLOGIES``, ring by default) and its target spectral
gap ρ for the random ones. ``comm_adapted`` selects the communication-adapted variants AFGA (a) / CAFGA (a),
where only selected clients gossip, over a ring among them. The paper says only that (footnote 4), so
there are two readings:

* ``"selected_ring"`` (the literal one): only the round's S_r (S_r^k per cluster) is online; each local
  iteration all of S_r take a step (re-sampling M of the M online clients gives S_r again), then gossip over a
  ring on S_r; the other clients are untouched;
* ``"active_ring"``: S_{r,t} is still re-sampled from all N (each cluster's n) clients, and after the step
  only S_{r,t} gossips, over a ring on S_{r,t}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from fairfl_core.gossip.topology import (
    TARGETED_TOPOLOGIES,
    TOPOLOGIES,
    Seed,
    Topology,
    _positive_int,
    cluster_gaps,
    clustered,
    contiguous_clusters,
)

__all__ = ["COMM_ADAPTED_MODES", "CommAdapted", "GossipHyper"]

CommAdapted = Literal["selected_ring", "active_ring"]
COMM_ADAPTED_MODES: tuple[CommAdapted, ...] = get_args(CommAdapted)


@dataclass
class GossipHyper:
    """Defaults: one cluster (AFGA), ring, no communication adaptation. Setting 2 of the paper is
    ``GossipHyper(50, 5, 24)`` for AFGA and ``GossipHyper(50, 5, 24, num_clusters=5)`` for CAFGA."""

    num_clients: int  # N
    clients_per_round: int  # M
    local_steps: int  # Z
    num_clusters: int = 1  # K
    topology: Topology = "ring"
    rho: float | None = None  # target spectral gap of the random / unbalanced_complete topologies
    topology_seed: int = 0
    comm_adapted: CommAdapted | None = None

    def __post_init__(self):
        _positive_int("num_clients", self.num_clients, "N, e.g. 50")
        _positive_int("clients_per_round", self.clients_per_round, "M = |S_r|, e.g. 5")
        _positive_int("local_steps", self.local_steps, "Z local iterations per round, e.g. 24")
        _positive_int("num_clusters", self.num_clusters, "K; 1 is AFGA, 5 is the paper's CAFGA")
        if self.clients_per_round > self.num_clients:
            raise ValueError(
                f"clients_per_round M={self.clients_per_round} exceeds num_clients N={self.num_clients}: "
                "AFGA samples M of the N clients without replacement; lower M"
            )
        contiguous_clusters(self.num_clients, self.num_clusters)  # K must divide N
        if self.clients_per_round % self.num_clusters:
            raise ValueError(
                f"num_clusters K={self.num_clusters} does not divide clients_per_round M="
                f"{self.clients_per_round}: CAFGA samples m = M/K clients in every cluster; choose M as a "
                "multiple of K"
            )
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology {self.topology!r}; use one of {', '.join(TOPOLOGIES)}")
        if (self.rho is None) == (self.topology in TARGETED_TOPOLOGIES):
            raise ValueError(
                f"rho (target spectral gap) must be set for the {' and '.join(TARGETED_TOPOLOGIES)} "
                f"topologies and only for them; topology={self.topology!r}, rho={self.rho!r}"
            )
        if self.comm_adapted is not None and self.comm_adapted not in COMM_ADAPTED_MODES:
            raise ValueError(
                f"comm_adapted must be None or one of {COMM_ADAPTED_MODES}, got {self.comm_adapted!r}"
            )

    @property
    def clusters(self) -> np.ndarray:
        """Cluster label of each client: blocks of N/K consecutive ids."""
        return contiguous_clusters(self.num_clients, self.num_clusters)

    @property
    def clients_per_cluster(self) -> int:
        """m = M/K, the clients sampled in each cluster (M for AFGA)."""
        return self.clients_per_round // self.num_clusters

    def mixing_matrix(self, seed: Seed | None = None) -> np.ndarray:
        """The N × N gossip matrix over all clients: block-diagonal over the clusters (one block for AFGA);
        random topologies draw from ``seed`` (default ``topology_seed``)."""
        seed = self.topology_seed if seed is None else seed
        return clustered(self.clusters, self.topology, rho=self.rho, seed=seed)

    def rho_max(self, W: np.ndarray | None = None) -> float:
        """ρ_max = the largest spectral gap over the clusters (ρ itself for AFGA) of ``W`` (default: a fresh
        ``mixing_matrix()``)."""
        W = self.mixing_matrix() if W is None else W
        return float(cluster_gaps(W, self.clusters).max())
