"""SubTrunc (arXiv 2408.13683, eqs. 11–13): λ = 0 is DivFL, the truncated loss reward, the losses it reads,
and the errors."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.selection.facility_location import FacilityLocation, greedy, pairwise_distances
from tests.algorithms.conftest import run_rounds, tiny_sim

SAME = {"greedy": "stochastic", "grad_mode": "fresh", "weighting": "uniform"}


def test_lambda_zero_is_divfl_on_the_same_seed():
    divfl = build_algorithm("divfl", tiny_sim(), {**SAME, "subsample": 0.5})
    subtrunc = build_algorithm("subtrunc", tiny_sim(), {"lam": 0.0, "pool_size": 3})
    a, b = run_rounds(divfl, 3), run_rounds(subtrunc, 3)
    assert [o.selected.tolist() for o in a] == [o.selected.tolist() for o in b]
    assert torch.equal(divfl.w, subtrunc.w)


def test_the_objective_adds_the_truncated_loss_reward_to_g():
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"lam": 0.5, "budget": 1.1, "phi": "log1p"})
    dist = pairwise_distances(sim.engine.gradients(algo.w, np.arange(6)))
    objective = algo.objective(0, dist)
    losses = sim.engine.losses(algo.w, None, "train")[0].double().numpy()
    by_hand = FacilityLocation(dist, phi=np.log1p(losses), lam=0.5, budget=1.1)
    S = [1, 4]
    assert objective.value(S) == pytest.approx(by_hand.value(S))
    g = FacilityLocation(dist)
    assert objective.value(S) == pytest.approx(g.value(S) + 0.5 * min(1.1, np.log1p(losses[S]).sum()))


def test_a_dominant_untruncated_reward_picks_the_highest_loss_client_first():
    """λ ≫ G's gains and b beyond every sum: the first greedy pick over all N candidates is the client
    with the largest loss (arXiv 2408.13683 §III: H rewards high-loss clients)."""
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"lam": 1e6, "budget": 1e9, "phi": "identity", "pool_size": 6})
    losses = sim.engine.losses(algo.w, None, "train")[0].numpy()
    assert algo.choose(0)[0] == int(np.argmax(losses))


def test_stale_losses_are_refreshed_for_the_uploading_clients_only():
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"loss_mode": "stale"})
    initial = algo.state["losses"].copy()
    w0 = algo.w.clone()
    picked = algo.round(0).selected
    others = np.setdiff1d(np.arange(6), picked)
    np.testing.assert_allclose(algo.state["losses"][others], initial[others])
    received = sim.engine.losses(w0, picked, "train")[0].double().numpy()
    np.testing.assert_allclose(algo.state["losses"][picked], received, rtol=1e-12)


def test_stochastic_greedy_over_every_candidate_is_exact_greedy():
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"pool_size": 6})
    dist = pairwise_distances(sim.engine.gradients(algo.w, np.arange(6)))
    assert np.array_equal(algo.choose(0), greedy(algo.objective(0, dist), 3))


@pytest.mark.parametrize(
    "params,match",
    [
        ({"budget": 0.0}, "budget"),
        ({"lam": -0.1}, "lam"),
        ({"pool_size": 0}, "pool_size"),
        ({"pool_size": 7}, "exceeds the 6 clients"),
        ({"phi": "sqrt"}, "phi"),
        ({"loss_mode": "cached"}, "loss_mode"),
        ({"distance_scale": "max"}, "distance_scale"),
    ],
)
def test_bad_settings_name_the_field(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("subtrunc", tiny_sim(), params)


def test_more_clients_per_round_than_clients_is_refused():
    with pytest.raises(ValueError, match="clients|k"):
        build_algorithm("subtrunc", tiny_sim(clients_per_round=7), {}).round(0)
