import itertools
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import Uploads
from fairfl_core.algorithms.gifair_global import (
    GIFAIRHyper,
    GroupPenalty,
    fairness_objective,
    gradient_scale,
    group_ids,
    group_losses,
    lambda_max,
    rank_signs,
    sensitive_group_ids,
)
from tests.algorithms.conftest import run_rounds, server_round, tiny_sim
from tests.rounding import assert_close

# tiny_sim: 6 clients with 7, 12, 17, 22, 27, 32 training samples, groups k % 2
TINY_SIZES = np.array([7.0, 12.0, 17.0, 22.0, 27.0, 32.0])
# λ_max and the scales 1 + λ r_k/(p_k |A_{s_k}|) vs values by hand: elementwise products and quotients of p,
# the group sizes and λ (the ranks r are integers, exact), each rounding once, against literals that round
# too: terms 1, depth 3 for λ_max, 4 for a scale.
LAMBDA_MAX, SCALE = dict(terms=1, depth=3), dict(terms=1, depth=4)


def test_rank_signs_for_strict_order_and_ties():
    # worst group d-1, then d-3, ..., best -(d-1); they sum to 0 (spec C0c)
    r = rank_signs(np.array([0.3, 0.9, 0.1, 0.5]))
    assert r.tolist() == [-1, 3, -3, 1] and r.sum() == 0
    # sign(0) = 0: the tied pair sits between the strict values
    assert rank_signs(np.array([0.5, 0.5, 0.1])).tolist() == [1, 1, -2]


def test_paper_example_1_coefficients_and_lambda_max():
    # 4 groups of 10 clients, p_k = 1/40, L_1 > L_2 > L_3 > L_4 (GIFAIR-FL Example 1)
    groups = np.repeat(np.arange(4), 10)
    p = np.full(40, 1 / 40)
    losses = np.array([4.0, 3.0, 2.0, 1.0])[groups] + np.tile(np.linspace(0, 0.1, 10), 4)
    assert_close(lambda_max(p, groups), 1 / 12, **LAMBDA_MAX, what="λ_max")
    lam = 0.05
    expected = np.array([1 + 12 * lam, 1 + 4 * lam, 1 - 4 * lam, 1 - 12 * lam])[groups]
    assert_close(gradient_scale(p, groups, losses, lam), expected, **SCALE, what="scales")
    at_max = gradient_scale(p, groups, losses, 1 / 12)
    assert_close(at_max, np.array([2, 4 / 3, 2 / 3, 0])[groups], **SCALE, what="scales at λ_max")


def test_lambda_max_and_scales_on_a_hand_computed_unequal_grouping():
    # n = 10, 20, 30, 15, 25 -> p = .1 .2 .3 .15 .25; groups {0,1} {2,3} {4}: p_k |A_{s_k}| = .2 .4 .6 .3 .25
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    groups = np.array([0, 0, 1, 1, 2])
    assert_close(lambda_max(p, groups), 0.2 / 2, **LAMBDA_MAX, what="λ_max")
    # losses 1, 2 | .5, .5 | 3 -> L = 1.5, 0.5, 3 -> r = 0, -2, 2
    losses = np.array([1.0, 2.0, 0.5, 0.5, 3.0])
    assert np.array_equal(group_losses(losses, groups), [1.5, 0.5, 3.0])  # sums of halves, halved: exact
    scale = gradient_scale(p, groups, losses, 0.05)
    assert_close(scale, [1.0, 1.0, 1 - 0.1 / 0.6, 1 - 0.1 / 0.3, 1 + 0.1 / 0.25], **SCALE, what="scales")


def test_positivity_below_lambda_max_and_the_zero_coefficient_at_it():
    # the client with the smallest p_k |A_{s_k}| (client 0) is in the best group (spec C0d)
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    groups = np.array([0, 0, 1, 1, 2])
    losses = np.array([0.1, 0.2, 1.0, 1.0, 3.0])  # L = 0.15, 1.0, 3.0 -> r = -2, 0, 2
    lam_max = lambda_max(p, groups)
    # 1 − 1 = 0 for client 0: terms of magnitude 1 cancel, within the default scale (1.8)
    assert_close(
        gradient_scale(p, groups, losses, lam_max), [0.0, 0.5, 1.0, 1.0, 1.8], **SCALE, what="scales"
    )
    assert (gradient_scale(p, groups, losses, 0.999 * lam_max) > 0).all()


def test_lemma_1_on_random_instances_with_ties():
    # Σ p_k F_k + λ Σ_{i<j} |L_i − L_j| = Σ_k p_k (1 + λ r_k / (p_k |A_{s_k}|)) F_k (spec C0b)
    rng = np.random.default_rng(0)
    for _ in range(20):
        k, d = rng.integers(4, 12), rng.integers(2, 5)
        groups = np.concatenate([np.arange(d), rng.integers(0, d, k - d)])
        p = rng.dirichlet(np.ones(k))
        losses = rng.integers(0, 3, k) / 2.0  # few distinct values: ties between groups are common
        L = group_losses(losses, groups)
        pairwise = sum(abs(a - b) for a, b in itertools.combinations(L, 2))
        lam = rng.uniform(0, 1) * lambda_max(p, groups)
        direct = p @ losses + lam * pairwise
        # Σ_k p_k F_k (at most 11 terms) plus λ times Σ_i r_i L_i (its terms cancel: magnitude (d − 1) Σ L_i)
        # vs the pairwise sum by hand: the group means, the sums, the combination (depth 3)
        scale = float(p @ losses + lam * (d - 1) * np.abs(L).sum())
        assert_close(fairness_objective(p, groups, losses, lam), direct, terms=11, depth=3, scale=scale)
        # Lemma 1's form: the scales (4 more roundings each) and Σ_k p_k s_k F_k
        scaled = p @ (gradient_scale(p, groups, losses, lam) * losses)
        assert_close(scaled, direct, terms=11, depth=3 + 4, scale=scale, what="Lemma 1")


def test_group_ids_renumber_partition_groups_or_make_one_per_client():
    assert group_ids(np.array([3, 7, 3, 9])).tolist() == [0, 1, 0, 2]
    assert group_ids(np.array([3, 7, 3, 9]), "individual").tolist() == [0, 1, 2, 3]
    assert group_ids(np.full(4, -1)).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="some clients have a group and some do not"):
        group_ids(np.array([0, -1, 1]))
    with pytest.raises(ValueError, match="gives clients no group"):
        group_ids(np.full(3, -1), "partition")
    with pytest.raises(ValueError, match="at least 2 groups"):
        group_ids(np.zeros(3, dtype=int))


@pytest.mark.parametrize("groups", ["partition", "individual"])
def test_lambda_zero_is_fedavg_with_the_same_sampling(groups):
    fedavg = build_algorithm("fedavg", tiny_sim(), {"sampling": "size", "weighting": "uniform"})
    gifair = build_algorithm("gifair_global", tiny_sim(), {"lam_frac": 0.0, "groups": groups})
    sel_f = [o.selected.tolist() for o in run_rounds(fedavg, 3)]
    sel_g = [o.selected.tolist() for o in run_rounds(gifair, 3)]
    assert sel_f == sel_g
    assert torch.equal(fedavg.w, gifair.w)


def test_the_scale_reaches_the_local_step():
    # one local step: θ_k − θ = −η s_k g_k, i.e. s_k times the unscaled update on the same minibatch
    sim = tiny_sim(local_steps=1, clients_per_round=4)
    algo = build_algorithm("gifair_global", sim, {"lam_frac": 0.9})
    plan = algo.configure(0)
    w0, clients = algo.w.clone(), plan.clients
    scale = algo.scales(clients)
    assert not np.allclose(scale, 1.0)  # far from 1, not a rounding question
    seed = sim.seed_for(0, "batches")
    plain = sim.engine.train(clients, w0, sim.local_spec(0), seed).params - w0
    scaled = sim.engine.train(clients, w0, plan.spec, seed).params - w0
    # the same minibatch gradient, scaled before the step or after it: the step's and the read-back's
    # differences with w0 round (terms 1, depth 2) on the magnitude of w0 times (1 + s)
    s = torch.as_tensor(scale)[:, None]
    magnitude = float(w0.abs().max()) * (1 + float(s.max()))
    assert_close(scaled, s * plain, terms=1, depth=2, scale=magnitude, what="scaled update")
    algo.round(0)  # simple average of the scaled local models: one more reduction, of 4 clients
    assert_close(algo.w, w0 + (s * plain).mean(0), terms=4, depth=3, scale=magnitude, what="global model")


def test_individual_fairness_when_d_equals_k():
    sim = tiny_sim()
    algo = build_algorithm("gifair_global", sim, {"groups": "individual", "lam_frac": 0.5})
    p = TINY_SIZES / TINY_SIZES.sum()
    assert_close(algo.lam_max, p.min() / 5, **LAMBDA_MAX, what="λ_max")  # min_k p_k / (K − 1)
    losses = sim.engine.losses(algo.w, split="train")[0].numpy()
    rank = np.argsort(np.argsort(losses))  # 0 = lowest loss
    r = 2 * rank - 5  # d − 2m + 1 with m the rank from the top
    expected = 1 + algo.lam * r / p
    assert_close(algo.scales(np.arange(6)), expected, **SCALE, what="scales")
    assert np.argmax(algo.scales(np.arange(6))) == np.argmax(losses)  # the worst client steps hardest


def test_group_scales_follow_the_group_ranking_on_the_partition_groups():
    sim = tiny_sim()
    algo = build_algorithm("gifair_global", sim, {"groups": "partition", "lam_frac": 0.8})
    p = TINY_SIZES / TINY_SIZES.sum()
    assert_close(algo.lam_max, (3 * p).min(), **LAMBDA_MAX, what="λ_max")  # |A| = 3, d − 1 = 1
    losses = sim.engine.losses(algo.w, split="train")[0].numpy()
    worse = int(losses[1::2].mean() > losses[0::2].mean())  # the group (0 = even, 1 = odd) with higher L
    r = np.where(np.arange(6) % 2 == worse, 1, -1)
    assert_close(algo.scales(np.arange(6)), 1 + algo.lam * r / (3 * p), **SCALE, what="scales")


@pytest.mark.parametrize("source", ["local", "minibatch", "global"])
def test_the_loss_cache_holds_the_reported_losses(source):
    sim = tiny_sim()
    algo = build_algorithm("gifair_global", sim, {"loss_source": source})
    w0, init = algo.w.clone(), algo.state["losses"].copy()
    assert np.array_equal(init, sim.engine.losses(w0, split="train")[0].numpy())  # A2: F_k(θ⁰), the same call
    plan = algo.configure(0)
    clients = plan.clients
    local = sim.engine.train(clients, w0, plan.spec, sim.seed_for(0, "batches"))
    algo.round(0)
    reported = {
        "local": sim.engine.losses(local.params, clients)[0],
        "minibatch": local.train_loss,
        "global": sim.engine.losses(algo.w, clients)[0],
    }[source]
    # the same evaluation (or training) of the same models on the same clients: identical
    assert np.array_equal(algo.state["losses"][clients], reported.numpy())
    others = np.setdiff1d(np.arange(6), clients)
    assert np.array_equal(algo.state["losses"][others], init[others])


def test_zero_initial_losses_make_round_zero_fedavg():
    fedavg = build_algorithm("fedavg", tiny_sim(), {"sampling": "size", "weighting": "uniform"})
    gifair = build_algorithm("gifair_global", tiny_sim(), {"lam_frac": 0.9, "init_losses": "zero"})
    fedavg.round(0), gifair.round(0)
    assert torch.equal(fedavg.w, gifair.w)
    fedavg.round(1), gifair.round(1)  # the reports of round 0 now rank the groups
    assert not torch.equal(fedavg.w, gifair.w)


def test_remark_2_uniform_sampling_aggregates():
    sim = tiny_sim(clients_per_round=2)
    algo = build_algorithm("gifair_global", sim, {"sampling": "uniform", "unbiased": True})
    clients = np.array([0, 1])
    w0 = algo.w.clone()
    params = torch.stack([algo.w + 1.0, algo.w - 2.0])
    new = server_round(algo, clients, params).w
    a = TINY_SIZES[:2] / TINY_SIZES.sum() * 6 / 2  # (K/m) p_k, need not sum to 1
    # w + 1·(Σ a_k θ_k − w) vs Σ a_k θ_k: the weights' own roundings (3), the sum of 2 and the step, of the
    # magnitude |w| + |θ|
    scale = float(w0.abs().max() + params.abs().max())
    assert_close(new, a[0] * params[0] + a[1] * params[1], terms=2, depth=5, scale=scale, what="w")
    normalised = build_algorithm("gifair_global", sim, {"sampling": "uniform", "weighting": "size"})
    p = server_round(normalised, clients, params).weights
    assert torch.equal(p, torch.as_tensor(TINY_SIZES[:2] / TINY_SIZES[:2].sum()))  # 7 + 12, divided


def test_bad_settings_name_the_field_and_the_fix():
    with pytest.raises(ValueError, match=r"lam_frac \(λ/λ_max\) must be in \[0, 1\)"):
        build_algorithm("gifair_global", tiny_sim(), {"lam_frac": 1.0})
    with pytest.raises(ValueError, match="loss_source must be one of"):
        build_algorithm("gifair_global", tiny_sim(), {"loss_source": "server"})
    with pytest.raises(ValueError, match="set sampling='uniform'"):
        build_algorithm("gifair_global", tiny_sim(), {"unbiased": True})
    sim = tiny_sim()
    sim.groups = np.full(6, -1)
    with pytest.raises(ValueError, match="groups='individual'"):
        build_algorithm("gifair_global", sim, {"groups": "partition"})


# -- groups of clients by the sensitive attribute of their samples ------------------------------------------
def test_sensitive_groups_by_hand():
    counts = np.array([[10, 0], [5, 5], [0, 10], [30, 2]])
    # shares of group 0: 10/45, 5/45, 0, 30/45; of group 1: 0, 5/17, 10/17, 2/17
    assert sensitive_group_ids(counts).tolist() == [0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"all fall in one group \(d = 1\); GIFAIR-FL needs 2"):
        sensitive_group_ids(np.array([[2, 1], [4, 2]]))  # equal shares: ties to group 0 for both
    with pytest.raises(ValueError, match=r"no client holds samples of group\(s\) \['m'\]"):
        sensitive_group_ids(np.array([[3, 0], [4, 0]]), ["f", "m"])


def test_groups_sensitive_takes_the_clients_groups_from_the_data():
    from fairfl_core.experiments.config import TrainConfig
    from fairfl_core.sim.context import Simulation
    from fairfl_core.sim.engine import Engine
    from tests.conftest import tiny_model, tiny_sensitive

    fed = tiny_sensitive()
    train = TrainConfig(rounds=2, clients_per_round=3, batch_size=4, lr=0.2, local_steps=3)
    sim = Simulation(Engine(tiny_model(num_classes=2), fed, dtype=torch.float64), train, 0)
    for name in ("gifair_global", "gifair_per"):
        algo = build_algorithm(name, sim, {"groups": "sensitive"})
        assert np.array_equal(algo.groups, sensitive_group_ids(fed.sensitive_counts("train")))
        run_rounds(algo, 2)
    with pytest.raises(ValueError, match="groups='sensitive' needs data whose samples carry a sensitive"):
        build_algorithm("gifair_global", tiny_sim(), {"groups": "sensitive"})
    with pytest.raises(ValueError, match="groups='sensitive' is sensitive_group_ids"):
        group_ids(np.zeros(3), "sensitive")


# -- the part ------------------------------------------------------------------------------------------------
def test_group_penalty_by_hand():
    # n = 10, 20, 30, 15, 25 -> p = .1 .2 .3 .15 .25; partition groups 3 3 7 7 9 -> {0,1} {2,3} {4}:
    # λ_max = min p_k |A_{s_k}| / (d − 1) = 0.2 / 2, λ = λ_max / 2
    sim = SimpleNamespace(
        train_sizes=np.array([10.0, 20.0, 30.0, 15.0, 25.0]),
        groups=np.array([3, 3, 7, 7, 9]),
        num_clients=5,
        tensor=lambda values, dtype=None: torch.as_tensor(values, dtype=dtype),  # Simulation.tensor on a CPU
    )
    hp = GIFAIRHyper(groups="partition", lam_frac=0.5, init_losses="zero", loss_source="minibatch")
    penalty = GroupPenalty(sim, hp)
    assert penalty.groups.tolist() == [0, 0, 1, 1, 2]
    assert_close(penalty.lam_max, 0.1, terms=1, depth=3, what="λ_max")
    assert penalty.lam == 0.5 * penalty.lam_max
    w = torch.zeros(2, dtype=torch.float64)
    state: dict[str, Any] = {"w": w, **penalty.init_state(w)}
    assert set(state) == {"w", "losses"} and state["losses"].tolist() == [0.0] * 5
    assert penalty.scales(state, np.arange(5)).tolist() == [1.0] * 5  # all groups tied: r = 0

    # clients 1, 2, 4 report minibatch losses 2, .5, 3: cache 0 2 .5 0 3 -> L = 1, .25, 3 -> r = 0, −2, 2
    result = SimpleNamespace(train_loss=torch.tensor([2.0, 0.5, 3.0]))
    uploads = cast(Uploads, SimpleNamespace(clients=np.array([1, 2, 4]), result=result))
    diag = penalty.refresh(state, uploads)
    assert state["losses"].tolist() == [0.0, 2.0, 0.5, 0.0, 3.0]
    assert diag["group_losses"] == [1.0, 0.25, 3.0] and diag["group_loss_spread"] == 2.75  # exact halves
    assert diag["scale_min"] == diag["scale_max"] == 1.0  # what they were sent: the cache before the refresh
    assert (diag["lambda"], diag["lambda_max"]) == (penalty.lam, penalty.lam_max)
    # H = Σ p_k F_k + λ Σ_{i<j} |L_i − L_j| = (.4 + .15 + .75) + .05 (.75 + 2 + 2.75) = 1.575: p (1 rounding),
    # the products and the sum of 5, λ (3) and its product (depth 5)
    assert_close(diag["objective"], 1.575, terms=5, depth=5, what="objective")
    expected = [1.0, 1.0, 1 - 0.1 / 0.6, 1 - 0.1 / 0.3, 1 + 0.1 / 0.25]
    assert_close(penalty.scales(state, np.arange(5)), expected, terms=1, depth=4, what="scales")

    # Remark 2: a = (K/m) p_k = 5/2 (.1, .3) over clients 0, 2; θ ← Σ a_k θ_k = .25 · 1 + .75 · 2
    params = torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=torch.float64)
    two = cast(Uploads, SimpleNamespace(clients=np.array([0, 2]), params=params))
    update = penalty.unbiased_update(w, two, 5, 1.0)
    # a: p, × K, ÷ m (one rounding each), then a sum of 2 and the step (depth 5)
    assert_close(update.weights, [0.25, 0.75], terms=1, depth=3, what="a")
    assert_close(update.w, [1.75, 1.75], terms=2, depth=5, what="w")
