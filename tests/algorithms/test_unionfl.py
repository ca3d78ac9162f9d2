"""UnionFL (arXiv 2408.13683, eq. 14): μ = 0 is DivFL, the penalty on recently selected clients, the
window kept in the state, non-monotone handling and the errors."""

import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from tests.algorithms.conftest import run_rounds, tiny_sim


def test_mu_zero_is_divfl_on_the_same_seed():
    divfl = build_algorithm(
        "divfl",
        tiny_sim(),
        {"greedy": "stochastic", "grad_mode": "fresh", "weighting": "uniform", "subsample": 0.5},
    )
    unionfl = build_algorithm("unionfl", tiny_sim(), {"mu": 0.0, "pool_size": 3})
    a, b = run_rounds(divfl, 3), run_rounds(unionfl, 3)
    assert [o.selected.tolist() for o in a] == [o.selected.tolist() for o in b]
    assert torch.equal(divfl.w, unionfl.w)


def test_the_penalty_mu_stays_out_of_the_local_step():
    """Algorithm 1 trains with plain local SGD: eq. 14's μ weighs the selection only (no proximal term)."""
    spec = build_algorithm("unionfl", tiny_sim(), {"mu": 1.0}).configure(0).spec
    assert spec.prox_mu == 0.0 and spec.prox_ref is None


def test_a_large_penalty_avoids_the_clients_of_the_last_window():
    """6 clients, 3 per round, window 1, μ ≫ G's gains (distances scaled to mean 1): each round picks the 3
    clients the last one did not."""
    algo = build_algorithm(
        "unionfl", tiny_sim(), {"mu": 1e3, "window": 1, "pool_size": 6, "distance_scale": "mean"}
    )
    outs = run_rounds(algo, 3)
    for before, after in zip(outs, outs[1:], strict=False):
        assert not set(before.selected) & set(after.selected)
    assert algo.state["history"].shape == (1, 3)
    assert set(algo.state["history"][0]) == set(outs[-1].selected)


def test_the_window_keeps_the_last_rounds_only_and_resumes():
    algo = build_algorithm("unionfl", tiny_sim(), {"window": 2})
    outs = run_rounds(algo, 3)
    assert [set(r) for r in algo.state["history"]] == [set(o.selected) for o in outs[1:]]


def test_stop_ends_the_greedy_before_a_pick_that_lowers_the_objective():
    """Every client was selected in the window and μ is huge: after the first pick each further pick costs
    more than it gains, so "stop" keeps one client and "fill" still takes three."""
    scaled = {"mu": 1e3, "distance_scale": "mean"}
    stop = build_algorithm("unionfl", tiny_sim(clients_per_round=6), {**scaled, "nonmonotone": "stop"})
    stop.round(0)
    assert len(stop.round(1).selected) == 1
    fill = build_algorithm("unionfl", tiny_sim(clients_per_round=6), scaled)
    fill.round(0)
    assert len(fill.round(1).selected) == 6


@pytest.mark.parametrize(
    "params,match",
    [({"window": 0}, "window"), ({"mu": -1.0}, "mu"), ({"nonmonotone": "skip"}, "nonmonotone")],
)
def test_bad_settings_name_the_field(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("unionfl", tiny_sim(), params)
