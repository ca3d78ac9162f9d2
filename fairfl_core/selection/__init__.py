"""Client selection procedures."""

from fairfl_core.selection.activation_clustering import (
    ClusterWeights,
    activation_statistic,
    cluster_weights,
    equitable_weights,
)
from fairfl_core.selection.sampling import sample_clients
from fairfl_core.selection.submodular import maximize, subtrunc_objective, unionfl_objective

__all__ = [
    "ClusterWeights",
    "activation_statistic",
    "cluster_weights",
    "equitable_weights",
    "sample_clients",
    "maximize",
    "subtrunc_objective",
    "unionfl_objective",
]
