"""Server plug-ins (server momentum, FedVARP; FedEBA+ Tables 10-11): the formulas on
hand-computed cases, degenerate cases, and that they compose with other algorithms."""

import copy

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.server_plugins import fedvarp_correction, momentum_velocity, remember_rows
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close

F64 = torch.float64
MOMENTUM = {"server_momentum": 0.9}
VARP = {"variance_reduction": "fedvarp"}


def test_fedvarp_correction_by_hand():
    # y = [[1, 0], [0, 2], [3, 3]] → ȳ = [4/3, 5/3]; S = {0, 2}, p = [½, ½]: Σ p y = [2, 1.5]
    memory = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], dtype=F64)
    # ȳ (3 terms) minus Σ p y (2 terms), each at most max|y| = 3: depth 3 with the literals' own roundings
    bound = dict(terms=3, depth=3, scale=2 * 3.0)
    c = fedvarp_correction(memory, np.array([0, 2]), torch.tensor([0.5, 0.5], dtype=F64))
    assert_close(c, torch.tensor([4 / 3 - 2, 5 / 3 - 1.5], dtype=F64), **bound)
    # non-uniform p (A21): Σ p y = 0.25·[1, 0] + 0.75·[3, 3] = [2.5, 2.25]
    c = fedvarp_correction(memory, np.array([0, 2]), torch.tensor([0.25, 0.75], dtype=F64))
    assert_close(c, torch.tensor([4 / 3 - 2.5, 5 / 3 - 2.25], dtype=F64), **bound)


def test_remember_rows_writes_the_selected_rows_in_place():
    memory = torch.zeros(3, 2, dtype=F64)
    deltas = torch.tensor([[1.0, 1.0], [2.0, 2.0], [9.0, 9.0]], dtype=F64)
    remember_rows(memory, np.array([2, 0, 2]), deltas)  # client 2 twice: its first update counts
    assert torch.equal(memory, torch.tensor([[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]], dtype=F64))
    losses = np.zeros(3)
    remember_rows(losses, np.array([1, 1]), np.array([5.0, 7.0]))
    assert losses.tolist() == [0.0, 5.0, 0.0]


def test_a_state_dict_is_a_snapshot_that_later_rounds_leave_alone():
    algo = build_algorithm("fedavg", tiny_sim(), VARP)
    run_rounds(algo, 2)
    saved = algo.state_dict()
    kept = copy.deepcopy(saved)
    resumed = build_algorithm("fedavg", tiny_sim(), VARP)
    resumed.load_state_dict(saved)
    algo.round(2)
    assert all(torch.equal(saved[k], kept[k]) for k in ("w", "varp_memory"))  # the memory moved in place
    assert not torch.equal(algo.state["varp_memory"], saved["varp_memory"])
    assert torch.equal(resumed.state["varp_memory"], kept["varp_memory"])  # it shares nothing with algo
    resumed.round(2)
    assert torch.equal(resumed.state["varp_memory"], algo.state["varp_memory"])


def _fake_round(algo, clients, params, new_w=None):
    """One server step after an aggregation of the given local models (what ``round`` does after training)."""
    server_round(algo, clients, params, new_w)


def test_fedvarp_server_step_by_hand():
    # 6 clients, memory starts at 0. Round 1: S = {0, 1}, Δ_0 = +1, Δ_1 = −3 (uniform weights): correction 0,
    # Δ_t = −1; memory y_0 = 1, y_1 = −3. Round 2: S = {1, 2}, Δ_1 = Δ_2 = +2, plain mean +2;
    # ȳ = (1 − 3)/6 = −1/3, Σ p y = ½(−3 + 0) = −1.5 → Δ_t = 2 − 1/3 + 1.5 = 19/6; y_1 = y_2 = 2.
    algo = build_algorithm("fedavg", tiny_sim(), {**VARP, "weighting": "uniform"})
    w0 = algo.w.clone()
    # each round: the local models w ± k, the updates, their mean of 2, the correction (ȳ of 6 terms, Σ p y)
    # and the step, about 4 reductions of at most 6 terms; of the magnitude |w| + 4 (updates and memory)
    scale = float(w0.abs().max()) + 4
    _fake_round(algo, np.array([0, 1]), torch.stack([algo.w + 1.0, algo.w - 3.0]))
    assert_close(algo.w, w0 - 1.0, terms=6, depth=4, scale=scale, what="round 1")
    _fake_round(algo, np.array([1, 2]), torch.stack([algo.w + 2.0, algo.w + 2.0]))
    assert_close(algo.w, w0 - 1.0 + 19 / 6, terms=6, depth=8, scale=scale, what="round 2")
    memory = algo.state["varp_memory"][:, 0]
    # y_i = (w + k) − w: two roundings at the magnitude |w| + k
    assert_close(
        memory, torch.tensor([1.0, 2.0, 2.0, 0.0, 0.0, 0.0], dtype=F64), terms=1, depth=2, scale=scale
    )


def test_fedvarp_uniform_option_ignores_the_aggregation_weights():
    # FedEBA-like weights [0.9, 0.1] from the algorithm vs FedVARP's printed 1/|S|: memory y = [4, 0, ...]
    algo = build_algorithm("fedavg", tiny_sim(), {**VARP, "varp_weights": "uniform"})
    algo.state["varp_memory"][0] = 4.0
    w0 = algo.w.clone()
    # the aggregation gives Δ_t = 0; correction ȳ − ½(4 + 0) = 4/6 − 2
    _fake_round(algo, np.array([0, 1]), torch.stack([algo.w, algo.w]), new_w=w0.clone())
    # ȳ over 6 clients, ½ Σ y over 2, the correction and the step, of the magnitude |w| + 4
    assert_close(algo.w, w0 + 4 / 6 - 2, terms=6, depth=4, scale=float(w0.abs().max()) + 4, what="w")


def test_momentum_two_rounds_by_hand():
    # Δ_1 = +1 → v = 1, w1 = w0 + 1; Δ_2 = −2 → v = 0.9 − 2 = −1.1, w2 = w1 − 1.1
    # float32: 0.9·1 − 2 (2 roundings) vs the literal −1.1 (rounded to float32 too)
    assert_close(
        momentum_velocity(torch.tensor([1.0]), torch.tensor([-2.0]), 0.9),
        torch.tensor([-1.1]),
        terms=1,
        depth=3,
    )
    algo = build_algorithm("fedavg", tiny_sim(), MOMENTUM)
    w0 = algo.w.clone()
    _fake_round(algo, np.array([0, 1]), None, new_w=w0 + 1.0)
    _fake_round(algo, np.array([0, 1]), None, new_w=algo.w - 2.0)
    # the updates new_w − w (magnitude |w| + 2), v = 0.9 v + Δ and the steps: elementwise, 2 rounds of 3
    scale = float(w0.abs().max()) + 2
    assert_close(algo.state["server_velocity"], torch.full_like(w0, -1.1), terms=1, depth=6, scale=scale)
    assert_close(algo.w, w0 + 1.0 - 1.1, terms=1, depth=8, scale=scale, what="w")


def test_momentum_lr_three_rounds_by_hand_and_its_steady_step():
    # β = 0.9, η_m = 0.1, Δ_t = +1 each round: v = 1, 1.9, 2.71; x moves 0.1, 0.19, 0.271 (x − x_0 = 0.561)
    algo = build_algorithm("fedavg", tiny_sim(), {**MOMENTUM, "server_momentum_lr": 0.1})
    w0 = algo.w.clone()
    for _ in range(3):
        _fake_round(algo, np.array([0, 1]), None, new_w=algo.w + 1.0)
    # each round: Δ = new_w − w, v = 0.9 v + Δ, 0.1 v and w + 0.1 v, of the magnitude |w| + 3
    scale = float(w0.abs().max()) + 3
    assert_close(algo.state["server_velocity"], torch.full_like(w0, 2.71), terms=1, depth=12, scale=scale)
    assert_close(algo.w, w0 + 0.561, terms=1, depth=12, scale=scale, what="w")
    # in a steady state (Δ fixed) the step is η_m / (1 − β) Δ: Δ itself at η_m = 1 − β, 10 Δ at η_m = 1
    for lr, steady in ((0.1, 1.0), (1.0, 10.0)):
        v = torch.zeros(1, dtype=F64)
        for _ in range(400):  # 0.9^400 < 1e-18
            v = momentum_velocity(v, torch.ones(1, dtype=F64), 0.9)
        assert_close(lr * v, torch.tensor([steady], dtype=F64), terms=400, depth=2, scale=10.0)


def test_momentum_lr_one_is_the_heavy_ball_runs_bit_for_bit():
    a = build_algorithm("fedeba+", tiny_sim(), {"tau": 0.5, **MOMENTUM})
    b = build_algorithm("fedeba+", tiny_sim(), {"tau": 0.5, **MOMENTUM, "server_momentum_lr": 1.0})
    run_rounds(a, 3), run_rounds(b, 3)
    assert torch.equal(a.w, b.w)
    c = build_algorithm("fedeba+", tiny_sim(), {"tau": 0.5, **MOMENTUM, "server_momentum_lr": 0.1})
    run_rounds(c, 3)
    assert not torch.allclose(a.w, c.w)  # apart by far more than rounding


def test_fedvarp_with_full_participation_is_fedavg():
    # every client sampled, uniform p: Σ_i p_i y_i = ȳ, so the correction vanishes every round
    a = build_algorithm("fedavg", tiny_sim(clients_per_round=6), {"weighting": "uniform"})
    b = build_algorithm("fedavg", tiny_sim(clients_per_round=6), {**VARP, "weighting": "uniform"})
    run_rounds(a, 3), run_rounds(b, 3)
    # the correction ȳ − Σ p y is two sums of the same 6 terms in another order: rounding only, carried
    # through the next rounds' training (a first-layer dot product over 16 features, 7 reductions a local
    # step, 3 steps and 3 for the server a round, 3 rounds)
    assert_close(a.w, b.w, terms=16, depth=3 * (7 * 3 + 3), what="global model")
    assert b.state["varp_memory"].abs().sum() > 0


def test_fedvarp_changes_partial_participation_runs():
    a = build_algorithm("fedavg", tiny_sim(), {})
    b = build_algorithm("fedavg", tiny_sim(), VARP)
    run_rounds(a, 3), run_rounds(b, 3)
    assert not torch.allclose(a.w, b.w)  # apart by far more than rounding


def test_defaults_return_the_aggregated_model_itself():
    for name in ("fedavg", "qffl", "fedeba+", "afl"):  # afl: its own model step
        algo = build_algorithm(name, tiny_sim(), {})
        new_w = algo.w + 1.0
        server_round(algo, np.array([0, 1]), None, new_w)
        assert algo.w is new_w
        assert set(algo.state) & {"server_velocity", "varp_memory"} == set()


PLUGGED = [
    ("fedavg", {**MOMENTUM, **VARP}),
    ("fedeba+", {**MOMENTUM, "tau": 0.5}),
    ("fedeba+", {**VARP, "tau": 0.5}),
    ("qffl", {**VARP, "q": 1.0, "varp_weights": "uniform"}),
    ("fedfv", {**MOMENTUM, **VARP, "tau": 2}),
    ("afl", {**MOMENTUM, "server_momentum_lr": 0.1}),
]


@pytest.mark.parametrize("name,params", PLUGGED)
def test_plugins_compose_batched_sequential_and_resume(name, params):
    runs = {}
    for kind in ("batched", "sequential"):
        algo = build_algorithm(name, tiny_sim(kind=kind), params)
        run_rounds(algo, 3)
        runs[kind] = algo
    # the stacked engine vs one client after another: the longest sum an inner product or norm of updates over
    # P = 256 parameters (FedFV), 7 reductions a local step for 3 steps, and the aggregation and plug-ins (5)
    # a round, 3 rounds
    bound = dict(terms=256, depth=3 * (7 * 3 + 5))
    assert_close(runs["batched"].w, runs["sequential"].w, **bound, what="global model")
    first = build_algorithm(name, tiny_sim(), params)
    run_rounds(first, 1)
    resumed = build_algorithm(name, tiny_sim(), params)
    resumed.load_state_dict(copy.deepcopy(first.state_dict()))
    for t in (1, 2):
        resumed.round(t)
    assert torch.equal(resumed.w, runs["batched"].w)
    for key in ("server_velocity", "varp_memory"):
        if key in runs["batched"].state:
            assert torch.equal(resumed.state[key], runs["batched"].state[key]), key


def test_plugins_differ_from_the_plain_algorithm():
    plain = build_algorithm("fedeba+", tiny_sim(), {"tau": 0.5})
    plugged = build_algorithm("fedeba+", tiny_sim(), {"tau": 0.5, **MOMENTUM})
    run_rounds(plain, 3), run_rounds(plugged, 3)
    assert not torch.allclose(plain.w, plugged.w)  # apart by far more than rounding


@pytest.mark.parametrize(
    "params,match",
    [
        ({"server_momentum": 1.0}, r"server_momentum must be in \[0, 1\)"),
        ({"server_momentum": -0.1}, r"server_momentum must be in \[0, 1\)"),
        ({**MOMENTUM, "server_momentum_lr": 0.0}, "server_momentum_lr must be positive"),
        ({"server_momentum_lr": 0.1}, "server_momentum_lr=0.1 has no effect without server momentum"),
        ({"variance_reduction": "scaffold"}, "variance_reduction must be one of"),
        ({"varp_weights": "size"}, "varp_weights must be one of"),
    ],
)
def test_bad_plugin_settings_name_the_field(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("fedavg", tiny_sim(), params)
