"""Gossip averaging of AFGA and CAFGA (TMLR 2024): mixing matrices and spectral gaps (``topology``), gossip
over stacked client models and its diagnostics (``mixing``), the settings' validation (``hyper``) and the
simulated communication time of Table 7 (``cost``)."""

from fairfl_core.gossip.cost import CommCostModel, transfer_seconds
from fairfl_core.gossip.hyper import COMM_ADAPTED_MODES, CommAdapted, GossipHyper
from fairfl_core.gossip.mixing import SPARSE_DENSITY, Mixer, consensus_error, gossip, peer_messages
from fairfl_core.gossip.topology import (
    TARGETED_TOPOLOGIES,
    TOPOLOGIES,
    Topology,
    check_mixing_matrix,
    cluster_gaps,
    clustered,
    complete,
    contiguous_clusters,
    disconnected,
    metropolis_hastings,
    random_graph,
    ring,
    spectral_gap,
    subset_ring,
    topology,
    unbalanced_complete,
)

__all__ = [
    "COMM_ADAPTED_MODES",
    "SPARSE_DENSITY",
    "TARGETED_TOPOLOGIES",
    "TOPOLOGIES",
    "CommAdapted",
    "CommCostModel",
    "GossipHyper",
    "Mixer",
    "Topology",
    "check_mixing_matrix",
    "cluster_gaps",
    "clustered",
    "complete",
    "consensus_error",
    "contiguous_clusters",
    "disconnected",
    "gossip",
    "metropolis_hastings",
    "peer_messages",
    "random_graph",
    "ring",
    "spectral_gap",
    "subset_ring",
    "topology",
    "transfer_seconds",
    "unbalanced_complete",
]
