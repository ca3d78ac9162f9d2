import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fairfed import (
    fairfed_eod,
    fairfed_gaps,
    fairfed_group_gaps,
    fairfed_update,
    fairfed_weights,
)
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.conftest import tiny_model, tiny_sensitive
from tests.rounding import assert_close

# The formulas vs values by hand, of 3 clients: the gaps pass through the pooled accuracy's sum and the
# difference (depth 2), the fairness weights through their mean and the shift too (depth 4); terms cancel, so
# the scale is that of what they subtract: accuracies and weights at most 1, β times the gaps.


def test_formulas_by_hand():
    # pooled accuracy (5 + 16 + 9) / 40 = 0.75 → Δ = (.25, .05, .15), mean .15
    gaps = fairfed_gaps(np.array([0.5, 0.8, 0.9]), np.array([10, 20, 10]))
    assert_close(gaps, [0.25, 0.05, 0.15], terms=3, depth=2, scale=1.0, what="gaps")
    bar = np.array([0.1, 0.2, 0.1])
    # 0.1 − 0.1, 0.2 + 0.1, 0.1 − 0
    assert_close(fairfed_update(bar, gaps, beta=1.0), [0.0, 0.3, 0.1], terms=3, depth=4, scale=2.0)
    # 0.1 − 0.2 clipped to 0
    assert_close(fairfed_update(bar, gaps, beta=2.0), [0.0, 0.4, 0.1], terms=3, depth=4, scale=3.0)
    # the normalising sum of 3 terms and the division
    weights = fairfed_weights(np.array([0.0, 0.3, 0.1]), np.array([10, 20, 10]))
    assert_close(weights, [0, 0.75, 0.25], terms=3, depth=2, what="weights")


def test_degenerate_cases():
    bar = np.array([0.1, 0.2, 0.3])
    # equal gaps: weights kept, up to the mean of 3 gaps and the shift (scale: 0.3 + 5 · 0.4)
    assert_close(fairfed_update(bar, np.full(3, 0.4), beta=5.0), bar, terms=3, depth=2, scale=2.3)
    assert np.array_equal(fairfed_update(bar, np.array([0.1, 0.5, 0.2]), beta=0.0), bar)  # β = 0
    # all clipped → n-weights: 10/40 and 30/40, exact
    assert np.array_equal(fairfed_weights(np.zeros(2), np.array([10, 30])), [0.25, 0.75])


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
    # the algorithm's update vs the formula by hand on the same accuracies (as in test_formulas_by_hand; β =
    # 0.5)
    assert_close(algo.state["fair_weights"][clients], bar, terms=3, depth=4, scale=1.5, what="fair weights")
    # and their normalisation, which divides the weights' error by Σ ω̄
    weights = out.diagnostics["weights"]
    assert_close(weights, bar / bar.sum(), terms=3, depth=5, scale=1.5 / bar.sum(), what="weights")
    others = np.setdiff1d(np.arange(6), clients)
    assert np.array_equal(
        algo.state["fair_weights"][others], sim.train_sizes[others] / 117
    )  # untouched n_k/117


def test_beta_zero_is_fedavg():
    fedavg, fairfed = (
        build_algorithm("fedavg", tiny_sim(), {}),
        build_algorithm("fairfed", tiny_sim(), {"beta": 0.0}),
    )
    assert [o.selected.tolist() for o in run_rounds(fedavg, 3)] == [
        o.selected.tolist() for o in run_rounds(fairfed, 3)
    ]
    # FedAvg's n_k / Σ n vs FairFed's renormalised n_k / 117: weights a few ulps apart, averaged over 3
    # clients, then through the next rounds' training: the longest sum a first-layer dot product over 16
    # features (batches of 4), 7 reductions a local step, 3 steps and the average a round, 3 rounds
    assert_close(fedavg.w, fairfed.w, terms=16, depth=3 * (7 * 3 + 1), what="global model")


def test_equal_gaps_keep_the_sample_size_weights():
    sim = tiny_sim()
    algo = build_algorithm("fairfed", sim, {"beta": 3.0})
    sim.engine.losses = lambda w, clients=None, split="train": (
        torch.zeros(len(clients)),
        torch.full((len(clients),), 0.6),
    )
    run_rounds(algo, 3)
    # equal accuracies: gaps of rounding size only (the pooled accuracy's sum of 3 terms), then the mean and
    # the shift, in each of 3 rounds; scale 1 + β
    assert_close(algo.state["fair_weights"], sim.train_sizes / 117, terms=3, depth=3 * 4, scale=4.0)


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


# -- on a sensitive attribute: FairFed's EOD gap (Eq. 6) --------------------------------------------------
def _counts(group0_positive: tuple[int, int], group1_positive: tuple[int, int]) -> np.ndarray:
    """[group, label, prediction] counts with the given (ŷ = 0, ŷ = 1) counts of each group's y = 1 samples
    and one negative sample each."""
    counts = np.zeros((2, 2, 2), dtype=np.int64)
    counts[0, 1] = group0_positive
    counts[1, 1] = group1_positive
    counts[:, 0, 0] = 1
    return counts


def test_eod_gaps_by_hand():
    clients = np.stack([_counts((1, 1), (0, 2)), _counts((0, 3), (1, 1)), _counts((0, 1), (0, 0))])
    # EOD_k: 1/2 − 1, 1 − 1/2, undefined (no positive sample of group 1)
    assert fairfed_eod(clients[0]) == -0.5 and fairfed_eod(clients[1]) == 0.5
    assert np.isnan(fairfed_eod(clients[2]))
    acc, sizes = np.array([0.5, 0.8, 0.9]), np.array([10, 20, 10])
    gaps, info = fairfed_group_gaps(acc, sizes, clients)
    # the union: TPR(A=0) = (1 + 3 + 1) / 6, TPR(A=1) = 3/4: EOD_glob = 5/6 − 3/4 = 1/12
    assert info["eod_global"] == pytest.approx(1 / 12, abs=1e-15)
    assert info["eod_clients"] == [-0.5, 0.5, None]
    # |1/12 + 1/2|, |1/12 − 1/2|, and client 2's accuracy gap |0.75 − 0.9| (pooled accuracy 30/40)
    assert_close(gaps, [7 / 12, 5 / 12, 0.15], terms=3, depth=3, scale=1.0, what="gaps")
    # no positive sample of group 1 among the participants: every client takes the accuracy gap
    lonely = np.stack([_counts((1, 1), (0, 0))] * 3)
    only_accuracy, info = fairfed_group_gaps(acc, sizes, lonely)
    assert np.array_equal(only_accuracy, fairfed_gaps(acc, sizes)) and info["eod_global"] is None


def _sensitive_sim() -> Simulation:
    engine = Engine(tiny_model(num_classes=2), tiny_sensitive(), dtype=torch.float64)
    train = TrainConfig(rounds=3, clients_per_round=3, batch_size=4, lr=0.2, local_steps=3)
    return Simulation(engine, train, 0)


def test_a_round_on_a_sensitive_attribute_uses_the_eod_gaps_at_the_received_model():
    sim = _sensitive_sim()
    algo = build_algorithm("fairfed", sim, {"beta": 0.5})
    w0 = algo.w.clone()
    clients = algo.configure(0).clients
    acc = sim.engine.losses(w0, clients)[1].numpy()
    counts = sim.engine.group_counts(w0, clients, "train").numpy()
    expected, info = fairfed_group_gaps(acc, sim.train_sizes[clients], counts)
    out = algo.round(0)
    assert (
        out.diagnostics["gaps"] == expected.tolist() and out.diagnostics["eod_global"] == info["eod_global"]
    )
    assert out.diagnostics["eod_clients"] == info["eod_clients"]
    n = sim.train_sizes[clients]
    bar = np.maximum(n / sim.train_sizes.sum() - 0.5 * (expected - expected.mean()), 0)
    assert_close(algo.state["fair_weights"][clients], bar, terms=3, depth=4, scale=1.5, what="fair weights")
    plain = build_algorithm("fairfed", tiny_sim(), {}).round(0)
    assert "eod_global" not in plain.diagnostics  # data without the attribute: the accuracy gap
