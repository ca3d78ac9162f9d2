from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.divfl import ClientSelector, DivFLHyper
from fairfl_core.selection.facility_location import FacilityLocation, greedy, pairwise_distances
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close

EVERYONE = np.arange(6)


def test_round_zero_uses_every_clients_gradient_and_picks_the_greedy_set():
    sim = tiny_sim()
    algo = build_algorithm("divfl", sim, {})
    w0 = algo.w.clone()
    picked = algo.choose(0)
    grads = sim.engine.gradients(w0, EVERYONE)
    dist = np.linalg.norm((grads[:, None] - grads[None]).numpy(), axis=-1)  # ‖g_i − g_j‖ by hand
    assert torch.equal(algo.state["grads"], grads)  # the same call on the same model and clients
    # cdist vs numpy's norm of the differences: a sum of squares over the P = 256 parameters, and the
    # differences and square root (depth 2)
    assert_close(algo.state["dist"], dist, terms=256, depth=2, what="distances")
    assert np.array_equal(picked, greedy(FacilityLocation(dist), 3))


def test_only_the_selected_clients_gradients_are_refreshed():
    sim = tiny_sim()
    algo = build_algorithm("divfl", sim, {})
    run_rounds(algo, 1)
    before = algo.state["grads"].clone()
    w1 = algo.w.clone()
    out = algo.round(1)
    picked, others = out.selected, np.setdiff1d(EVERYONE, out.selected)
    # at the model received: the same call on the same model and clients
    assert torch.equal(algo.state["grads"][picked], sim.engine.gradients(w1, picked))
    assert torch.equal(algo.state["grads"][others], before[others])  # stale
    # rows/columns kept in sync: the refreshed rows' [3, 6] cdist vs the whole [6, 6] one (other shapes),
    # a sum of squares over P = 256 parameters, and the differences and square root
    assert_close(algo.state["dist"], pairwise_distances(algo.state["grads"]), terms=256, depth=2)


def test_fresh_mode_recomputes_every_gradient():
    sim = tiny_sim()
    algo = build_algorithm("divfl", sim, {"grad_mode": "fresh"})
    run_rounds(algo, 2)
    dist = pairwise_distances(sim.engine.gradients(algo.w, EVERYONE))
    assert np.array_equal(algo.choose(2), greedy(FacilityLocation(dist), 3))
    assert "grads" not in algo.state


@pytest.mark.parametrize("params", [{"greedy": "naive"}, {"greedy": "stochastic", "subsample": 1.0}])
def test_greedy_variants_agree_with_lazy_when_they_must(params):
    lazy = build_algorithm("divfl", tiny_sim(), {})
    other = build_algorithm("divfl", tiny_sim(), params)
    assert np.array_equal(lazy.choose(0), other.choose(0))


def test_stochastic_greedy_is_reproducible_and_distinct():
    a, b = (
        build_algorithm("divfl", tiny_sim(), {"greedy": "stochastic", "subsample": 0.3}) for _ in range(2)
    )
    picked = a.choose(4)
    assert np.array_equal(picked, b.choose(4)) and len(set(picked.tolist())) == 3


def test_sample_weighted_aggregation_by_default():
    algo = build_algorithm("divfl", tiny_sim(), {"grad_mode": "fresh"})
    p = server_round(algo, np.array([0, 1]), algo.w.expand(2, -1) + 1.0).weights
    assert torch.equal(p, torch.tensor([7 / 19, 12 / 19], dtype=torch.float64))  # 7 + 12 exact, one division


@pytest.mark.parametrize(
    "params, field",
    [
        ({"greedy": "fast"}, "greedy must be one of"),
        ({"subsample": 0.0}, "subsample must be in"),
        ({"grad_mode": "old"}, "grad_mode must be one of"),
        ({"sampling": "size"}, r"unknown field\(s\) \[.sampling.\]"),
        ({"mu": -1.0}, "mu must be non-negative"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("divfl", tiny_sim(), params)


class _LineEngine:
    """Clients whose gradients are the rows of ``grads`` ``[N, 1]``, whatever the model."""

    def __init__(self, points: list[float]):
        self.grads = torch.tensor(points, dtype=torch.float64)[:, None]

    def gradients(self, w: torch.Tensor, clients: np.ndarray) -> torch.Tensor:
        return self.grads[clients].clone()


def _line_sim(points: list[float]) -> SimpleNamespace:
    """A stand-in simulation (2 clients a round) whose gradients are the 1-D ``points``: d = |x_i − x_j|."""
    return SimpleNamespace(
        engine=_LineEngine(points),
        num_clients=len(points),
        train=SimpleNamespace(clients_per_round=2),
        rng=lambda t, stream: np.random.default_rng(t),
        tensor=lambda values, dtype=None: torch.as_tensor(values, dtype=dtype),
    )


def test_the_selector_maximises_g_by_hand():
    """Gradients 0, 1, 5, 6: D0 = 6, the first gains Σ_i (6 − min(6, d_ie)) are 12, 14, 14, 12 (tie: the
    lowest index, 1); from m = (1, 0, 4, 5) the second gains are 1, 8, 8 for clients 0, 2, 3: S = (1, 2)."""
    sim = _line_sim([0.0, 1.0, 5.0, 6.0])
    selector = ClientSelector(sim, DivFLHyper(grad_mode="fresh", greedy="naive"))
    dist = selector.distances({}, torch.zeros(1))
    assert np.array_equal(dist, [[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 1], [6, 5, 1, 0]])
    selection = selector.select(0, FacilityLocation(dist))
    assert selection.clients.tolist() == [1, 2] and selection.pools == []
    # a pool of every candidate is taken in index order, without a draw: each step's unselected clients
    every = ClientSelector(sim, DivFLHyper(greedy="stochastic", pool_size=4))
    whole = every.select(0, FacilityLocation(dist))
    assert whole.clients.tolist() == [1, 2]
    assert [p.tolist() for p in whole.pools] == [[0, 1, 2, 3], [0, 2, 3]]


def test_the_selector_caches_stale_gradients_and_refreshes_the_uploaders():
    sim = _line_sim([0.0, 1.0, 5.0, 6.0])
    selector, state = ClientSelector(sim, DivFLHyper()), dict[str, Any]()
    first = selector.distances(state, torch.zeros(1)).copy()
    sim.engine.grads = torch.tensor([[2.0], [1.0], [5.0], [3.0]], dtype=torch.float64)
    assert np.array_equal(selector.distances(state, torch.zeros(1)), first)  # the cache, not new gradients
    selector.refresh(state, torch.zeros(1), np.array([3]))  # client 3's gradient is now 3, the others stale
    assert state["grads"].flatten().tolist() == [0.0, 1.0, 5.0, 3.0]
    assert np.array_equal(state["dist"], [[0, 1, 5, 3], [1, 0, 4, 2], [5, 4, 0, 2], [3, 2, 2, 0]])
