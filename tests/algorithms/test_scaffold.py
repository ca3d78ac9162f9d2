import copy
import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedavg import select_clients
from fairfl_core.algorithms.scaffold import scaffold_client_controls, scaffold_server_control
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.rounding import assert_close


def t(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_client_controls_option_ii_by_hand():
    # c = [0.5, 0.5], w = [2, 0], η_l = 0.25
    # client A: c_A = [1, −1], y_A = [1, 1], K = 4: (w − y)/(Kη) = [1, −1]/1
    #   c_A⁺ = [1, −1] − c + [1, −1] = [1.5, −2.5]
    # client B: c_B = [0, 0], y_B = [3, 0], K = 2: (w − y)/(Kη) = [−1, 0]/0.5 = [−2, 0] → c_B⁺ = [−2.5, −0.5]
    c_plus = scaffold_client_controls(
        t([1, -1], [0, 0]), t(0.5, 0.5), t(2, 0), t([1, 1], [3, 0]), torch.tensor([4, 2]), lr=0.25
    )
    assert torch.equal(c_plus, t([1.5, -2.5], [-2.5, -0.5]))  # elementwise on dyadic values: exact


def test_server_control_by_hand():
    # N = 4, c = [0, 1], Δc = [[1, 2], [3, −4]]: c + (1/N) Σ Δc_i = [0, 1] + [4, −2]/4 = [1, 0.5]
    # sums of small integers, then a quarter of them: exact in any order
    assert torch.equal(scaffold_server_control(t(0, 1), t([1, 2], [3, -4]), 4), t(1, 0.5))


def test_first_round_with_zero_controls_is_fedavg():
    a = build_algorithm("scaffold", tiny_sim(), {})
    b = build_algorithm("fedavg", tiny_sim(), {"weighting": "uniform"})
    a.round(0), b.round(0)
    assert torch.equal(a.w, b.w)
    a.round(1), b.round(1)
    assert not torch.allclose(a.w, b.w)  # from round 2 on the corrections act (far beyond rounding)


@pytest.mark.parametrize("work", [{"local_steps": 3}, {"local_steps": None, "local_epochs": 1}])
def test_control_identities_hold_after_each_round(work):
    sim = tiny_sim(lr=0.2, lr_decay=0.5, **work)
    algo = build_algorithm("scaffold", sim, {"server_lr": 0.7})
    sizes = sim.train_sizes  # 7, 12, ..., 32 samples; batch size 4
    peak = 0.0  # the largest |c_i| so far: the magnitude of the controls' updates that c sums
    for r in range(3):
        clients = select_clients(sim, r, algo.hp)
        spec = algo.configure(r).spec
        local = sim.engine.train(clients, algo.w, spec, sim.seed_for(r, "batches")).params
        before = algo.state_dict()  # a snapshot: the round updates c_i in place
        w, c, c_i = before["w"], before["c"], before["c_i"]
        algo.round(r)
        # K_i: 3 steps, or one epoch of ⌈n_i / 4⌉ minibatches (2, 3, 5, 6, 7, 8 for the six clients);
        # η_l: the round's decayed client learning rate 0.2 · 0.5^r, the one the local steps used
        k = [3] * len(clients) if work.get("local_steps") else [math.ceil(sizes[i] / 4) for i in clients]
        lr = 0.2 * 0.5**r
        expected = c_i[clients] - c + (w - local) / (torch.tensor(k, dtype=w.dtype)[:, None] * lr)
        # the same training; the controls' formula vs by hand, elementwise (terms 1): the difference w − y,
        # K η, the quotient and the two sums (depth 4), of the magnitude |c_i| + |c| + |w|/(K η)
        scale = float(c_i.abs().max() + c.abs().max() + w.abs().max() / (min(k) * lr))
        assert_close(algo.state["c_i"][clients], expected, terms=1, depth=4, scale=scale, what="c_i")
        others = np.setdiff1d(np.arange(sim.num_clients), clients)
        assert torch.equal(algo.state["c_i"][others], c_i[others])
        # c = (1/N) Σ_i c_i: the server adds (1/N) Σ Δc_i each round (2 reductions of 6 terms a round so far)
        # vs the mean of all 6; the updates Δc_i = c_i⁺ − c_i are at most twice the largest |c_i|
        peak = max(peak, float(algo.state["c_i"].abs().max()), float(c_i.abs().max()))
        assert_close(algo.state["c"], algo.state["c_i"].mean(0), terms=6, depth=2 * (r + 1), scale=2 * peak)
        # the server's step vs by hand: the differences, the mean of the clients' updates and the step
        assert_close(algo.w, w + 0.7 * (local - w).mean(0), terms=len(clients), depth=3, what="w")


def test_one_full_batch_step_makes_the_control_the_client_gradient():
    # K = 1 and a minibatch holding all the client's data: (w − y)/η = ∇f_i(w) + c − c_i, so c_i⁺ = ∇f_i(w)
    sim = tiny_sim(local_steps=1, batch_size=64)
    algo = build_algorithm("scaffold", sim, {})
    for r in range(2):
        clients, w = select_clients(sim, r, algo.hp), algo.w
        c, c_i = algo.state["c"], algo.state["c_i"][clients]
        algo.round(r)
        grads = sim.engine.gradients(w, clients)
        # the trainer's full-batch step vs the engine's gradient (a sum over at most 32 samples, 7
        # reductions), read back as (w − y)/η: that difference carries the rounding of w, divided by η = 0.2;
        # and c − c_i added in the step and taken out again (3 more roundings)
        scale = float(grads.abs().max() + w.abs().max() / 0.2 + c.abs().max() + c_i.abs().max())
        assert_close(algo.state["c_i"][clients], grads, terms=32, depth=7 + 3, scale=scale, what="c_i")
    assert float(algo.state["c"].norm()) > 0


def test_a_straggler_computes_its_control_from_the_steps_it_completed():
    # round 0 (c = c_i = 0): c_i⁺ = (w − y_i)/(K_i η), K_i = ⌈0.5 · 3⌉ = 2 for the 2 stragglers, 3 otherwise
    faults = FaultConfig(rate=0.5, kind="straggler", straggler_work=0.5)
    sim = tiny_sim(clients_per_round=4, faults=faults)
    algo = build_algorithm("scaffold", sim, {})
    w0 = algo.w.clone()
    out = algo.round(0)
    slow = sim.faults(0, out.selected).failed
    assert slow.sum() == 2
    seed = sim.seed_for(0, "batches")
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), seed, sim.faults(0, out.selected).work)
    steps = torch.as_tensor(np.where(slow, 2.0, 3.0), dtype=w0.dtype)
    expected = (w0 - local.params) / (steps[:, None] * 0.2)
    # the same training: elementwise, the difference (of |w0|'s magnitude), K η and the quotient
    scale = float(w0.abs().max()) / (2 * 0.2)
    assert_close(algo.state["c_i"][out.selected], expected, terms=1, depth=3, scale=scale, what="c_i")
    # the server's w + mean(w_i − w) vs the mean of the 4 local models: differences, the sum, the step
    assert_close(algo.w, local.params.mean(0), terms=4, depth=3, what="w")


def test_resume_from_state_dict_is_exact():
    algo = build_algorithm("scaffold", tiny_sim())
    run_rounds(algo, 2)
    saved = algo.state_dict()
    kept = copy.deepcopy(saved)
    resumed = build_algorithm("scaffold", tiny_sim())
    resumed.load_state_dict(kept)
    for r in (2, 3):
        algo.round(r), resumed.round(r)
    assert all(torch.equal(algo.state[k], resumed.state[k]) for k in ("w", "c", "c_i"))
    assert all(torch.equal(saved[k], kept[k]) for k in saved)  # later rounds left the saved state alone


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="replacement"):
        build_algorithm("scaffold", tiny_sim(), {"replacement": True})
    with pytest.raises(ValueError, match="weighting"):
        build_algorithm("scaffold", tiny_sim(), {"weighting": "loss"})
    with pytest.raises(ValueError, match="mu"):
        build_algorithm("scaffold", tiny_sim(), {"mu": 0.1})
