"""Client selection procedures."""

from fairfl_core.selection.activation_clustering import (
    ClusterWeights,
    activation_vector,
    cluster_weights,
    equitable_weights,
)
from fairfl_core.selection.sampling import sample_clients

__all__ = ["ClusterWeights", "activation_vector", "cluster_weights", "equitable_weights", "sample_clients"]
