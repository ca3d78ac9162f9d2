import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fairfed import fairfed_gaps, fairfed_update, fairfed_weights
from tests.algorithms.conftest import run_rounds, tiny_sim


def test_formulas_by_hand():
    # pooled accuracy (5 + 16 + 9) / 40 = 0.75 → Δ = (.25, .05, .15), mean .15
    gaps = fairfed_gaps(np.array([0.5, 0.8, 0.9]), np.array([10, 20, 10]))
    assert np.allclose(gaps, [0.25, 0.05, 0.15])
    bar = np.array([0.1, 0.2, 0.1])
    assert np.allclose(fairfed_update(bar, gaps, beta=1.0), [0.0, 0.3, 0.1])  # 0.1 − 0.1, 0.2 + 0.1, 0.1 − 0
    assert np.allclose(fairfed_update(bar, gaps, beta=2.0), [0.0, 0.4, 0.1])  # 0.1 − 0.2 clipped to 0
    assert np.allclose(fairfed_weights(np.array([0.0, 0.3, 0.1]), np.array([10, 20, 10])), [0, 0.75, 0.25])


def test_degenerate_cases():
    bar = np.array([0.1, 0.2, 0.3])
    assert np.allclose(fairfed_update(bar, np.full(3, 0.4), beta=5.0), bar)  # equal gaps: weights kept
    assert np.array_equal(fairfed_update(bar, np.array([0.1, 0.5, 0.2]), beta=0.0), bar)  # β = 0
    assert np.allclose(
        fairfed_weights(np.zeros(2), np.array([10, 30])), [0.25, 0.75]
    )  # all clipped → n-weights


def test_one_round_matches_the_formulas_at_the_global_model():
    sim = tiny_sim()
    algo = build_algorithm("fairfed", sim, {"beta": 0.5})
    w0 = algo.w.clone()
    clients = algo.configure(0).clients
    acc = sim.engine.losses(w0, clients)[1].numpy()
    n = sim.train_sizes[clients]
    delta = np.abs((acc * n).sum() / n.sum() - acc)
    bar = np.maximum(n / 117 - 0.5 * (delta - delta.mean()), 0)
    out = algo.round(0)
    assert np.array_equal(out.selected, clients)
    assert np.allclose(algo.state["fair_weights"][clients], bar)
    assert np.allclose(out.diagnostics["weights"], bar / bar.sum())
    others = np.setdiff1d(np.arange(6), clients)
    assert np.allclose(algo.state["fair_weights"][others], sim.train_sizes[others] / 117)  # untouched


def test_beta_zero_is_fedavg():
    fedavg, fairfed = (
        build_algorithm("fedavg", tiny_sim(), {}),
        build_algorithm("fairfed", tiny_sim(), {"beta": 0.0}),
    )
    assert [o.selected.tolist() for o in run_rounds(fedavg, 3)] == [
        o.selected.tolist() for o in run_rounds(fairfed, 3)
    ]
    assert torch.allclose(fedavg.w, fairfed.w, atol=1e-12)


def test_equal_gaps_keep_the_sample_size_weights():
    sim = tiny_sim()
    algo = build_algorithm("fairfed", sim, {"beta": 3.0})
    sim.engine.losses = lambda w, clients=None, split="train": (
        torch.zeros(len(clients)),
        torch.full((len(clients),), 0.6),
    )
    run_rounds(algo, 3)
    assert np.allclose(algo.state["fair_weights"], sim.train_sizes / 117)


def test_runs_on_clients_without_group_labels():
    sim = tiny_sim()
    sim.groups = np.full(6, -1)  # FairFed's gap here is the accuracy gap: group labels are not used
    with_groups = build_algorithm("fairfed", tiny_sim(), {})
    without = build_algorithm("fairfed", sim, {})
    run_rounds(with_groups, 2), run_rounds(without, 2)
    assert torch.equal(with_groups.w, without.w)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"beta": -0.1}, "beta must be non-negative"),
        ({"weighting": "uniform"}, r"unknown field\(s\) \[.weighting.\]"),
        ({"mu": -1.0}, "mu must be non-negative"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        build_algorithm("fairfed", tiny_sim(), params)
