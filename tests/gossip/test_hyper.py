"""AFGA/CAFGA gossip settings (TMLR 2024, Algorithms 1–2, §5, Fig. 1): validation, the matrices built."""

from __future__ import annotations

import numpy as np
import pytest

from fairfl_core.gossip import GossipHyper, cluster_gaps, ring


def test_setting_2_afga_and_cafga():
    afga = GossipHyper(50, 5, 24)
    assert np.array_equal(afga.mixing_matrix(), ring(50))
    assert round(afga.rho_max(), 3) == 0.995
    cafga = GossipHyper(50, 5, 24, num_clusters=5)
    assert cafga.clients_per_cluster == 1
    assert np.array_equal(cafga.clusters, np.repeat(np.arange(5), 10))
    assert round(cafga.rho_max(), 3) == 0.873


def test_cafga_with_one_cluster_is_afga():
    for topology, rho in (("ring", None), ("random", 0.455), ("complete", None)):
        one = GossipHyper(50, 5, 24, num_clusters=1, topology=topology, rho=rho, topology_seed=3)
        assert np.array_equal(
            one.mixing_matrix(),
            GossipHyper(50, 5, 24, topology=topology, rho=rho, topology_seed=3).mixing_matrix(),
        )


@pytest.mark.parametrize(
    ("clusters", "topology", "rho"),
    [
        (1, "complete", None),
        (1, "random", 0.455),
        (1, "ring", None),
        (5, "complete", None),
        (5, "unbalanced_complete", 0.335),
        (5, "random", 0.766),
        (5, "ring", None),
    ],
)
def test_figure_1_topologies(clusters, topology, rho):
    hp = GossipHyper(50, 5, 24, num_clusters=clusters, topology=topology, rho=rho)
    W = hp.mixing_matrix()
    gaps = cluster_gaps(W, hp.clusters)
    target = {"complete": 0.0, "ring": 0.995 if clusters == 1 else 0.873}.get(topology, rho)
    assert abs(hp.rho_max(W) - target) <= (0.01 if topology == "random" else 0.0005)
    assert gaps.max() == hp.rho_max(W)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clients_per_round": 60}, "clients_per_round M=60 exceeds num_clients N=50"),
        ({"local_steps": 0}, "local_steps must be an integer ≥ 1 .* got 0"),
        ({"local_steps": -3}, "local_steps must be an integer ≥ 1"),
        ({"local_steps": 2.5}, "local_steps must be an integer ≥ 1"),
        ({"local_steps": True}, "local_steps must be an integer ≥ 1"),
        ({"num_clients": 0}, "num_clients must be an integer ≥ 1"),
        ({"clients_per_round": 0}, "clients_per_round must be an integer ≥ 1"),
        ({"num_clusters": 0}, "num_clusters must be an integer ≥ 1"),
        ({"num_clusters": 3}, "num_clusters K=3 does not divide num_clients N=50"),
        ({"num_clusters": 10}, "num_clusters K=10 does not divide clients_per_round M=5"),
        ({"topology": "star"}, "unknown topology 'star'"),
        ({"topology": "random"}, "rho .* must be set for the random and unbalanced_complete topologies"),
        ({"rho": 0.5}, "only for them; topology='ring', rho=0.5"),
        (
            {"comm_adapted": "ring"},
            "comm_adapted must be None or one of \\('selected_ring', 'active_ring'\\)",
        ),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    args = {"num_clients": 50, "clients_per_round": 5, "local_steps": 24, **kwargs}
    with pytest.raises(ValueError, match=match):
        GossipHyper(**args)


def test_comm_adapted_modes_are_accepted():
    for mode in (None, "selected_ring", "active_ring"):
        assert GossipHyper(100, 10, 24, num_clusters=5, comm_adapted=mode).clients_per_cluster == 2
