import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.qffl import qffl_delta_and_h
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, tiny_sim

D = torch.float64


@pytest.mark.parametrize(
    "q,h_expected",
    [
        # L = 1/0.5 = 2; Δw_1 = 2·[1, 0] = [2, 0], Δw_2 = 2·[0, 0.5] = [0, 1]; F = [1, 4]
        # q=1: h_1 = 1·1⁰·‖[2,0]‖² + 2·1 = 4 + 2 = 6;   h_2 = 1·4⁰·1 + 2·4 = 9
        (1.0, [6.0, 9.0]),
        # q=2: h_1 = 2·1¹·4 + 2·1² = 10;                 h_2 = 2·4¹·1 + 2·4² = 40
        (2.0, [10.0, 40.0]),
    ],
)
def test_delta_and_h_by_hand(q, h_expected):
    losses = torch.tensor([1.0, 4.0], dtype=D)
    updates = torch.tensor([[1.0, 0.0], [0.0, 0.5]], dtype=D)  # w − w_k
    delta, h = qffl_delta_and_h(losses, updates, lr=0.5, q=q)
    # Δ_k = F_k^q Δw_k: q=1 → [2, 0], [0, 4];  q=2 → [2, 0], [0, 16]
    expected_delta = torch.tensor([[2.0, 0.0], [0.0, 4.0**q]], dtype=D)
    assert torch.allclose(delta, expected_delta, rtol=1e-9)
    assert torch.allclose(h, torch.tensor(h_expected, dtype=D), rtol=1e-9)
    # server step for q=1: (Δ_1 + Δ_2)/(h_1 + h_2) = [2, 4]/15
    if q == 1.0:
        assert torch.allclose(delta.sum(0) / h.sum(), torch.tensor([2 / 15, 4 / 15], dtype=D), rtol=1e-9)


def test_zero_loss_is_guarded_like_the_reference():
    # F = 0 → (0 + 1e-10)^q keeps h finite and positive for q = 0.5 (fair_flearn adds 1e-10)
    delta, h = qffl_delta_and_h(torch.zeros(1, dtype=D), torch.ones(1, 3, dtype=D), lr=0.1, q=0.5)
    assert torch.isfinite(h).all() and (h > 0).all() and torch.isfinite(delta).all()


@pytest.mark.parametrize("sampling,weighting", [("size", "uniform"), ("uniform", "size")])
def test_q_zero_is_fedavg_with_the_same_sampling_and_weighting(sampling, weighting):
    hp = {"sampling": sampling, "weighting": weighting}
    a = build_algorithm("fedavg", tiny_sim(), hp)
    b = build_algorithm("qffl", tiny_sim(), {**hp, "q": 0.0})
    run_rounds(a, 3), run_rounds(b, 3)
    assert (a.w - b.w).abs().max() < 1e-10


def test_round_uses_losses_at_the_received_model_and_the_decayed_lr():
    # round 1 with lr_t = 0.2·0.5: recompute the clients' training and the q-FedAvg step from scratch
    sim = tiny_sim(lr_decay=0.5)
    algo = build_algorithm("qffl", sim, {"q": 2.0})
    algo.round(0)
    w1 = algo.w.clone()
    clients = algo.round(1).selected
    local = sim.engine.train(clients, w1, sim.local_spec(1), sim.seed_for(1, "batches")).params
    losses = sim.engine.losses(w1, clients, "train")[0]
    delta, h = qffl_delta_and_h(losses, w1 - local, lr=0.1, q=2.0)
    assert (algo.w - (w1 - delta.sum(0) / h.sum())).abs().max() < 1e-12


@pytest.mark.parametrize("q", [-0.1, float("inf"), float("nan")])
def test_bad_q_names_the_field(q):
    # nan and inf are refused for every float field as the config is read (dataclass_io), -0.1 by QFFLHyper
    with pytest.raises(ValueError, match=r"q must be a finite number >= 0|'qffl'\.q = \S+ is not finite"):
        build_algorithm("qffl", tiny_sim(), {"q": q})


def test_with_dropouts_both_sums_run_over_the_survivors():
    # 2 of 4 clients drop out: w ← w − Σ_{k∈R} Δ_k / Σ_{k∈R} h_k with F_k of the survivors only
    sim = tiny_sim(clients_per_round=4, faults=FaultConfig(rate=0.5))
    algo = build_algorithm("qffl", sim, {"q": 2.0})
    w0 = algo.w.clone()
    out = algo.round(0)
    survivors = out.selected[~sim.faults(0, out.selected).failed]
    assert len(survivors) == 2
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    local = local[torch.as_tensor(~sim.faults(0, out.selected).failed)]
    delta, h = qffl_delta_and_h(sim.engine.losses(w0, survivors, "train")[0], w0 - local, lr=0.2, q=2.0)
    assert (algo.w - (w0 - delta.sum(0) / h.sum())).abs().max() < 1e-12
