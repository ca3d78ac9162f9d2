import math

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedfv import fedfv_history_project, fedfv_kept, fedfv_project, rescale_to
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close


def _t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_kept_clients_by_hand():
    losses = np.array([0.3, 0.1, 0.5, 0.2])  # ascending order: clients 1, 3, 0, 2
    assert fedfv_kept(losses, 0.1).tolist() == [2]  # order[ceil(3 · 0.9) = 3:]
    assert fedfv_kept(losses, 0.5).tolist() == [0, 2]  # order[ceil(3 · 0.5) = 2:]
    assert fedfv_kept(losses, 0.0).tolist() == []
    assert fedfv_kept(losses, 1.0).tolist() == [1, 3, 0, 2]


def test_two_conflicting_vectors_by_hand():
    g = _t([[1.0, 0.0], [-1.0, 1.0]])  # ⟨g₁, g₂⟩ = −1 < 0; client 0 has the lower loss
    losses = np.array([0.1, 0.9])
    # a projection g − (⟨g, h⟩/‖h‖²) h: the dot products of 2 terms and the step (depth 2), of the magnitude
    # of |g| + |⟨g, h⟩| |h|/‖h‖², at most 2 here α = 0: g̃₁ = g₁ − (−1/2) g₂ = (0.5, 0.5);  g̃₂ = g₂ − (−1/1)
    # g₁ = (0, 1)
    assert_close(fedfv_project(g, losses, 0.0), _t([[0.5, 0.5], [0.0, 1.0]]), terms=2, depth=2, scale=2.0)
    # α = 0.5: the higher-loss client (order[ceil(1 · 0.5) = 1:] = [1]) keeps g₂
    assert_close(fedfv_project(g, losses, 0.5), _t([[0.5, 0.5], [-1.0, 1.0]]), terms=2, depth=2, scale=2.0)
    # mean of the projections (0.25, 0.75), rescaled to ‖mean g‖ = ‖(0, 0.5)‖ = 0.5: × 0.5/√0.625
    # (the projections, the mean, the two norms and the ratio: depth 5)
    step = rescale_to(fedfv_project(g, losses, 0.0).mean(0), g.mean(0))
    assert_close(step, _t([0.25, 0.75]) * 0.5 / math.sqrt(0.625), terms=2, depth=5, what="step")


def _reference_projection(grads, losses, alpha):
    """FedFV's loop written out client by client (FLGo ``iterate``), to check the batched version."""
    order = sorted(range(len(losses)), key=lambda k: losses[k])
    keep = set(order[math.ceil((len(order) - 1) * (1 - alpha)) :]) if alpha > 0 else set()
    out = [g.clone() for g in grads]
    for i in range(len(grads)):
        if i in keep:
            continue
        for j in order:
            if j != i and float(grads[j] @ out[i]) < 0:
                out[i] = out[i] - grads[j] * (grads[j] @ out[i]) / (grads[j] @ grads[j])
    return torch.stack(out)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5])
def test_projection_matches_the_client_by_client_loop(alpha):
    gen = torch.Generator().manual_seed(int(alpha * 10))
    grads = torch.randn(7, 5, generator=gen, dtype=torch.float64)
    losses = torch.rand(7, generator=gen, dtype=torch.float64).numpy()
    expected = _reference_projection(grads, losses, alpha)
    # up to 6 projections in sequence, each a dot product of 5 terms and a step (depth 12); a projection only
    # shrinks a vector, so every term is at most the largest ‖g_i‖
    scale = float(grads.norm(dim=1).max())
    assert_close(fedfv_project(grads, losses, alpha), expected, terms=5, depth=12, scale=scale)


def test_history_projection_by_hand():
    g = _t([1.0, 0.0])
    history = _t([[-1.0, 0.5], [0.0, -1.0], [-5.0, 0.0], [2.0, 1.0]])
    last_round = np.array([4, 5, 3, 5])  # t = 5, τ = 2 → rounds 4 then 5; client 2 (round 3) is too old
    # round 4: client 0 conflicts: g ← g − (−1/1.25)(−1, 0.5) = (0.2, 0.4)
    # round 5: client 1 conflicts (⟨(0, −1), g⟩ = −0.4), client 3 does not: g ← g − (−0.4/1)(0, −1) = (0.2, 0)
    # 2 projections, each dot products of 2 terms and the step; they only shrink g (‖g‖ = 1)
    out = fedfv_history_project(g, history, last_round, t=5, tau=2)
    assert_close(out, _t([0.2, 0.0]), terms=2, depth=4, scale=1.0)


def test_no_conflicts_gives_the_mean_update():
    sim = tiny_sim()
    algo = build_algorithm("fedfv", sim, {"alpha": 0.1, "tau": 2})
    w = algo.w
    u = torch.zeros(3, w.numel(), dtype=w.dtype)
    u[:, :3] = _t([[1.0, 0.0, 2.0], [0.5, 1.0, 0.0], [0.0, 3.0, 1.0]])  # pairwise dots ≥ 0
    params = w - u
    new = server_round(algo, np.array([0, 1, 2]), params, t=1).w  # no conflict: the loss order plays no part
    # the updates w − (w − u), their mean of 3, the rescaling's two norms over P = 256 parameters and the
    # step, of the magnitude |w| + |u|
    scale = float(w.abs().max() + u.abs().max())
    assert_close(new, w - u.mean(0), terms=256, depth=4, scale=scale, what="w")


def test_alpha_one_without_history_is_uniform_fedavg():
    fedavg = build_algorithm("fedavg", tiny_sim(), {"weighting": "uniform"})
    fedfv = build_algorithm("fedfv", tiny_sim(), {"alpha": 1.0, "tau": 0})
    run_rounds(fedavg, 3), run_rounds(fedfv, 3)
    assert "history" not in fedfv.state
    # FedAvg's average vs FedFV's mean rescaled by its own norms (over P = 256 parameters), then through the
    # next rounds' training: 7 reductions a local step, 3 steps and 2 for the server a round, 3 rounds
    assert_close(fedavg.w, fedfv.w, terms=256, depth=3 * (7 * 3 + 2), what="global model")


def test_round_uses_losses_at_the_received_model_and_stores_history():
    sim = tiny_sim()
    algo = build_algorithm("fedfv", sim, {"tau": 3})
    w0 = algo.w.clone()
    selected = algo.round(0).selected
    local = sim.engine.train(selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    assert torch.equal(algo.state["history"][selected], w0 - local)  # the same training, the same difference
    assert (algo.state["last_round"][selected] == 0).all() and (algo.state["last_round"] == 0).sum() == 3
    grads = w0 - local
    losses = sim.engine.losses(w0, selected, "train")[0].numpy()
    g = fedfv_project(grads, losses, 0.1).mean(0)  # round 0 < τ − 1: no external step yet
    # the same losses and updates; the server's mean, rescaling (norms over P = 256) and step vs by hand
    assert_close(algo.w, w0 - rescale_to(g, grads.mean(0)), terms=256, depth=4, what="w")


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="alpha \\(FedFV's kept fraction\\) must be in \\[0, 1\\]"):
        build_algorithm("fedfv", tiny_sim(), {"alpha": 1.5})
    with pytest.raises(ValueError, match="tau \\(FedFV's history length in rounds\\) must be ≥ 0"):
        build_algorithm("fedfv", tiny_sim(), {"tau": -1})
    with pytest.raises(ValueError, match="tau"):
        build_algorithm("fedfv", tiny_sim(), {"tau": 2.5})
