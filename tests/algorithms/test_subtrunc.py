"""SubTrunc (arXiv 2408.13683, eqs. 11–13): λ = 0 is DivFL, the truncated loss reward, the losses it reads,
G's scale against H in the paper's regime, the round's diagnostics, and the errors."""

import functools

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.data import DataSpec, make_federated
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models import build_model
from fairfl_core.selection.facility_location import (
    FacilityLocation,
    greedy,
    pairwise_distances,
    stochastic_greedy,
)
from fairfl_core.selection.submodular import subtrunc_objective
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close

SAME = {"greedy": "stochastic", "grad_mode": "fresh", "weighting": "uniform"}


def test_lambda_zero_is_divfl_on_the_same_seed():
    divfl = build_algorithm("divfl", tiny_sim(), {**SAME, "subsample": 0.5})
    subtrunc = build_algorithm("subtrunc", tiny_sim(), {"lam": 0.0, "pool_size": 3})
    a, b = run_rounds(divfl, 3), run_rounds(subtrunc, 3)
    assert [o.selected.tolist() for o in a] == [o.selected.tolist() for o in b]
    assert torch.equal(divfl.w, subtrunc.w)


def test_the_objective_adds_the_truncated_loss_reward_to_g():
    sim = tiny_sim()
    params = {"lam": 0.5, "budget": 1.1, "phi": "log1p", "objective_scale": "literal"}
    algo = build_algorithm("subtrunc", sim, params)
    dist = pairwise_distances(sim.engine.gradients(algo.w, np.arange(6)))
    objective = algo.objective(0, dist)
    losses = sim.engine.losses(algo.w, None, "train")[0].double().numpy()
    by_hand = FacilityLocation(dist, phi=np.log1p(losses), lam=0.5, budget=1.1)
    S = [1, 4]
    assert objective.value(S) == by_hand.value(S)  # the same objective of the same distances and losses
    g = FacilityLocation(dist)
    # G's sum over 6 clients plus the truncated reward (a sum of 2) vs the objective's own evaluation: depth 2
    h = 0.5 * min(1.1, np.log1p(losses[S]).sum())
    assert_close(objective.value(S), g.value(S) + h, terms=6, depth=2, what="objective")


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
    assert np.array_equal(algo.state["losses"][others], initial[others])
    received = sim.engine.losses(w0, picked, "train")[0].double().numpy()
    assert np.array_equal(algo.state["losses"][picked], received)  # the same evaluation of the same clients


def test_stochastic_greedy_over_every_candidate_is_exact_greedy():
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"pool_size": 6})
    grads, losses = sim.engine.gradients_and_losses(algo.w, np.arange(6))
    objective = algo.objective(0, pairwise_distances(grads), losses.double().numpy())
    assert np.array_equal(algo.choose(0), greedy(objective, 3))


def test_fresh_losses_come_from_the_gradients_pass():
    """With fresh gradients and losses, the round's φ inputs are the gradients' pass's losses: the mean
    cross-entropy ``Engine.losses`` gives, summed in another order (a client's ≤ 117 tiny samples through the
    MLP's 4 reductions)."""
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"objective_scale": "literal"})
    grads, losses = sim.engine.gradients_and_losses(algo.w, np.arange(6))
    assert algo.round_objective(0).value([1, 4]) == algo.objective(
        0, pairwise_distances(grads), losses.double().numpy()
    ).value([1, 4])  # one computation
    assert_close(losses, sim.engine.losses(algo.w, None, "train")[0], terms=117, depth=4, what="losses")


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
        ({"objective_scale": "sum"}, "objective_scale"),
    ],
)
def test_bad_settings_name_the_field(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("subtrunc", tiny_sim(), params)


def test_more_clients_per_round_than_clients_is_refused():
    with pytest.raises(ValueError, match="clients|k"):
        build_algorithm("subtrunc", tiny_sim(clients_per_round=7), {}).round(0)


@functools.lru_cache(maxsize=1)
def _paper_regime_states():
    """Per-client gradient distances and losses of a real model in the paper's setting: 100 clients holding 3
    digit classes each (scikit-learn digits), an MLP of 55k parameters (the paper's LeNet-5 has 62k) trained
    by FedAvg (κ = 10) to about 85 % and 90 % mean accuracy (rounds 20 and 30)."""
    spec = DataSpec(
        name="digits", partition="pathological", num_clients=100, partition_options={"classes_per_client": 3}
    )
    train = TrainConfig(rounds=30, clients_per_round=10, batch_size=8, lr=0.05, local_steps=5)
    sim = Simulation(
        Engine(build_model("mlp", in_features=64, seed=0), make_federated(spec, seed=0)), train, 0
    )
    algo, states = build_algorithm("fedavg", sim, {"weighting": "uniform"}), []
    for t in range(31):
        if t in (20, 30):
            losses = sim.engine.losses(algo.w, None, "train")[0].double().numpy()
            states.append((pairwise_distances(sim.engine.gradients(algo.w, np.arange(100))), losses))
        algo.round(t)
    return states


def _share_differing_from_divfl(objective_scale: str, draws: int = 30) -> float:
    """Share of stochastic-greedy rounds (κ = r = 10) whose SubTrunc set (λ = 0.95, b = 1.10, ln(1 + x))
    differs from DivFL's on the same gradients and the same random pools."""
    differ = []
    for dist, losses in _paper_regime_states():
        objective = subtrunc_objective(
            dist, losses, lam=0.95, budget=1.10, phi="log1p", objective_scale=objective_scale
        )
        for seed in range(draws):
            picks = stochastic_greedy(objective, 10, np.random.default_rng(seed), 10)
            divfl = stochastic_greedy(FacilityLocation(objective.dist), 10, np.random.default_rng(seed), 10)
            differ.append(set(picks.tolist()) != set(divfl.tolist()))
    return float(np.mean(differ))


def test_in_the_paper_regime_h_changes_the_picks_only_when_g_is_on_its_scale():
    """The analysis of docs/readings.md: with G a sum over 100 clients (literal) its best-vs-second gaps are
    sums of distance reductions, far above H's at most λ·b ≈ 1.05, so H almost never changes DivFL's set;
    with G averaged (Ḡ/N) or normalised (G/Ḡ(∅)) the gaps fall below H's range and H changes most sets."""
    shares = {
        reading: _share_differing_from_divfl(reading) for reading in ("literal", "averaged", "normalised")
    }
    assert shares["literal"] <= 0.1, shares
    assert shares["averaged"] >= 0.5 and shares["normalised"] >= 0.5, shares


def test_the_round_record_says_whether_h_moved_the_choice():
    sim = tiny_sim()
    divfl_like = build_algorithm("subtrunc", sim, {"lam": 0.0, "pool_size": 3})
    record = divfl_like.round(0).diagnostics
    assert record["steered_steps"] == 0 and "differs_from_divfl" not in record
    assert record["h_range_max"] == 0.0 and record["g_gap_min"] >= 0.0
    sim = tiny_sim()
    steered = build_algorithm("subtrunc", sim, {"lam": 1e6, "budget": 1e9, "phi": "identity", "pool_size": 6})
    divfl = greedy(FacilityLocation(pairwise_distances(sim.engine.gradients(steered.w, np.arange(6)))), 3)
    out = steered.round(0)
    assert out.diagnostics["unsaturated_steps"] == 3 and out.diagnostics["steered_steps"] >= 1
    assert set(out.selected.tolist()) != set(divfl.tolist())


def test_rounds_h_did_not_steer_are_divfls_rounds():
    """What ``is_divfl`` reads (papers/submodular_selection/claims.py): a round whose record counts no steered
    step picked DivFL's clients on the same gradients and draws. λ = 10⁻⁹ gives H a reward too small to move
    any pick; every round is then DivFL's, model included."""
    divfl = build_algorithm("divfl", tiny_sim(), {**SAME, "pool_size": 3})
    params = {"lam": 1e-9, "pool_size": 3, "objective_scale": "literal"}
    tiny = build_algorithm("subtrunc", tiny_sim(), params)
    a, b = run_rounds(divfl, 3), run_rounds(tiny, 3)
    assert all(o.diagnostics["steered_steps"] == 0 for o in b)
    assert [o.selected.tolist() for o in a] == [o.selected.tolist() for o in b]
    assert torch.equal(divfl.w, tiny.w)


def test_the_averaged_reading_divides_g_by_the_number_of_clients():
    sim = tiny_sim()
    algo = build_algorithm("subtrunc", sim, {"lam": 0.5, "objective_scale": "averaged"})
    dist = pairwise_distances(sim.engine.gradients(algo.w, np.arange(6)))
    losses = sim.engine.losses(algo.w, None, "train")[0].double().numpy()
    S = [0, 3]
    h = 0.5 * min(1.1, np.log1p(losses[S]).sum())
    # G's sum over 6 clients divided by 6, plus the reward (a sum of 2): depth 3
    expected = FacilityLocation(dist).value(S) / 6 + h
    assert_close(algo.objective(0, dist).value(S), expected, terms=6, depth=3, what="objective")


def _counting_selects(algo) -> list:
    """The objectives of every greedy run of ``algo``'s selector, in order."""
    runs, select = [], algo.selector.select

    def counted(t, objective, *args):
        runs.append(objective)
        return select(t, objective, *args)

    algo.selector.select = counted
    return runs


def test_a_round_runs_the_greedy_once_whether_or_not_h_steers():
    """The round's notes are read from its own greedy run: DivFL's greedy is not run again."""
    for params in ({"lam": 0.0, "pool_size": 3}, {"lam": 1e6, "budget": 1e9, "phi": "identity"}):
        algo = build_algorithm("subtrunc", tiny_sim(), params)
        runs = _counting_selects(algo)
        record = algo.round(0).diagnostics
        assert len(runs) == 1 and (record["steered_steps"] >= 1) is (params["lam"] > 0)
