"""Equitable-FL (Algorithm 1): the activation vector the engine collects, the equitable aggregation (Eq. 5–6),
the per-round diagnostics, and bad input. The clustering math itself is tested in
``tests/selection/test_activation_clustering.py`` (M1, M2, perfect clusters, C = 1, fallbacks)."""

import json

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import Plan
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.metrics import sigma_acc
from fairfl_core.models.mlp import MLP
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.faults import RoundFaults
from fairfl_core.sim.local import masked_mean_loss
from tests.algorithms.conftest import tiny_sim, uploads_of
from tests.conftest import tiny_federated
from tests.rounding import assert_close

F64 = torch.float64


def mlp_sim(clients_per_round=3, **train) -> Simulation:
    """tiny_federated (6 clients, planted groups k % 2) with the repository's MLP 16-12-4 (``features``)."""
    torch.manual_seed(0)
    settings = dict(rounds=3, clients_per_round=clients_per_round, batch_size=4, lr=0.2)
    settings.update(local_steps=None, local_epochs=2)
    settings.update(train)
    engine = Engine(MLP(16, [12], 4), tiny_federated(), dtype=F64)
    return Simulation(engine, TrainConfig(**settings), 0)


def by_hand(sim, clients, spec, seed, mu):
    """Each client's FedProx epochs written out (W1, b1, W2, b2 of the MLP; h = relu(x W1ᵀ + b1)), with the
    mean of log_softmax(h) over the last epoch's samples, the last batch's, and at the final model."""
    engine = sim.engine
    schedule = engine.schedule(clients, spec, seed)
    w0 = engine.init_params()
    out = {"last_epoch_mean": [], "last_batch_mean": [], "post_train_mean": []}
    for k, client in enumerate(clients):
        w = w0.clone().requires_grad_()
        done, per_epoch = int(schedule.active[k].sum()), int(schedule.epoch_steps[k])
        total, count = torch.zeros(12, dtype=F64), 0.0
        for s in range(done):
            idx, m = schedule.index[k, s], schedule.mask[k, s]
            x, y = engine.data.inputs(idx, F64).flatten(1), engine.data.y[idx]
            p = engine.space.unflatten(w)
            w1, b1, w2, b2 = p.values()
            h = torch.relu(x @ w1.T + b1)
            log_h = torch.log_softmax(h.detach(), -1) * m[:, None]
            if s >= done - per_epoch:
                total, count = total + log_h.sum(0), count + float(m.sum())
            if s == done - 1:
                out["last_batch_mean"].append(log_h.sum(0) / m.sum())
            (g,) = torch.autograd.grad(masked_mean_loss(h @ w2.T + b2, y, m), w)
            with torch.no_grad():
                w -= spec.lr * (g + mu * (w - w0))
        out["last_epoch_mean"].append(total / count)
        train = engine.data.client_indices("train")[client]
        x = engine.data.inputs(train, F64).flatten(1)
        w1, b1, _, _ = engine.space.unflatten(w.detach()).values()
        out["post_train_mean"].append(torch.log_softmax(torch.relu(x @ w1.T + b1), -1).mean(0))
    return {key: torch.stack(v) for key, v in out.items()}


@pytest.mark.parametrize("kind", ["batched", "sequential"])
@pytest.mark.parametrize("reduction", ["last_epoch_mean", "last_batch_mean", "post_train_mean"])
def test_activation_vector_from_the_engine_equals_a_hand_computation(reduction, kind):
    sim = mlp_sim()
    if kind == "sequential":
        sim.engine = Engine(sim.engine.model, sim.data, kind="sequential", dtype=F64)
    algo = build_algorithm("equitable_fl", sim, {"reduction": reduction, "mu": 0.3})
    plan = algo.configure(0)
    result = algo.client_update(0, plan, RoundFaults.none(plan.clients))
    uploads = uploads_of(plan.clients, result.params)
    uploads.result.stats = result.stats
    expected = by_hand(sim, plan.clients, plan.spec, sim.seed_for(0, "batches"), 0.3)[reduction]
    got = algo.activations(uploads)
    assert got.shape == (3, 12)
    # the engine's training and activation means vs the loop by hand: the longest sum is a mean over a
    # client's samples (at most 32); 7 reductions a local step for 2 epochs of at most 8 steps (32 samples in
    # batches of 4), then the features layer, the log-softmax and the mean
    assert_close(got, expected, terms=32, depth=7 * 16 + 3, what=reduction)


def planted_uploads(algo, sizes=(1, 3)):
    """Uploads of len(sizes) planted clusters whose activation vectors are exactly separated, with random
    local models; returns the uploads and the planted label of each participant."""
    gen = torch.Generator().manual_seed(0)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    acts = torch.full((len(groups), 12), -5.0, dtype=F64)
    for i, q in enumerate(groups):
        acts[i, 4 * q : 4 * q + 4] = -1.0
    params = algo.w + 0.1 * torch.randn(len(groups), algo.w.numel(), generator=gen, dtype=F64)
    uploads = uploads_of(np.arange(len(groups)), params)
    uploads.result.stats = {"activation": acts}
    return uploads, groups


def test_m2_aggregation_gives_each_cluster_half_whatever_its_size():
    algo = build_algorithm("equitable_fl", mlp_sim(clients_per_round=4), {"round_metrics": False})
    uploads, groups = planted_uploads(algo, (1, 3))
    update = algo.aggregate(0, Plan(uploads.clients, algo.sim.local_spec(0)), uploads)
    p = np.array([1 / 2, 1 / 6, 1 / 6, 1 / 6])  # Eq. 6: 1/(C |γ_q|)
    assert torch.equal(
        update.weights, torch.as_tensor(p)
    )  # 1/(C |γ_q|): one division, rounded as the literals
    # Eq. 5: the server's w + Σ p_i (w_i − w) vs Σ p_i w_i by hand: 4 terms, the differences, the sum, the
    # step; of the parameters' magnitude (positive weights)
    scale = float(uploads.params.abs().max())
    assert_close(update.w, torch.as_tensor(p) @ uploads.params, terms=4, depth=3, scale=scale, what="Eq. 5")
    d = update.diagnostics
    assert d["clusters"] == [0, 1, 1, 1] and not d["fallback_used"] and d["fallback"] == ""


def test_c_equal_one_is_the_plain_mean_of_the_participants():
    algo = build_algorithm("equitable_fl", mlp_sim(clients_per_round=4), {"num_clusters": 1})
    uploads, _ = planted_uploads(algo, (1, 3))
    update = algo.aggregate(0, Plan(uploads.clients, algo.sim.local_spec(0)), uploads)
    # the server's w + Σ (w_i − w)/4 vs the mean: 4 terms, the differences, the sum, the step
    scale = float(uploads.params.abs().max())
    assert_close(update.w, uploads.params.mean(0), terms=4, depth=3, scale=scale, what="mean")


def test_fewer_uploads_than_clusters_fall_back_to_uniform_and_say_so():
    algo = build_algorithm("equitable_fl", mlp_sim(clients_per_round=3), {"num_clusters": 3})
    uploads, _ = planted_uploads(algo, (1, 1))  # a dropout left 2 of the 3 participants
    update = algo.aggregate(0, Plan(uploads.clients, algo.sim.local_spec(0)), uploads)
    assert update.weights.tolist() == [0.5, 0.5]
    assert update.diagnostics["fallback_used"] and update.diagnostics["fallback"] == (
        "fewer participants than clusters"
    )


def test_round_diagnostics_are_json_and_equal_the_metrics_at_the_new_model():
    sim = mlp_sim(clients_per_round=4)
    algo = build_algorithm("equitable_fl", sim, {"mu": 0.1, "round_metrics": True})
    out = algo.round(0)
    d = json.loads(json.dumps(out.diagnostics, allow_nan=False, default=torch.Tensor.tolist))  # as stored
    participants = np.asarray(d["participants"])
    assert sorted(participants) == sorted(out.selected) and len(d["clusters"]) == 4
    # 4 weights 1/(C |γ_q|), each rounded, and their sum
    assert_close(sum(d["weights"]), 1.0, terms=4, depth=2, what="Σ weights")
    assert d["effective_clusters"] == 2
    loss, acc = sim.engine.losses(algo.w, None, "test")
    pooled = 100 * sim.engine.pooled(algo.w)[0]
    assert d["sigma_acc"] == sigma_acc(100 * acc.numpy(), pooled)  # the same calls on the same model
    f = loss.numpy()[participants]
    pairs = [abs(f[i] - f[j]) for i in range(4) for j in range(i + 1, 4)]
    # Eq. 9, the text's mean over pairs: the metric's sum over the 4 × 4 differences vs the mean of 6 by hand
    # (16 terms; the differences and the sums), of the magnitude of the losses differenced
    assert_close(d["cd"], np.mean(pairs), terms=16, depth=2, scale=2 * float(np.abs(f).max()), what="CD")
    truth = sim.groups[participants]
    assert (d["nmi"] is None) == (len(set(truth)) < 2)
    assert 0 <= d["nmi_raw"] <= 1 and 0 <= d["nmi_all"] <= 1
    literal = build_algorithm(
        "equitable_fl", mlp_sim(clients_per_round=4), {"mu": 0.1, "cd_literal": True, "round_metrics": True}
    )
    assert literal.round(0).diagnostics["cd"] == 2 * d["cd"]  # the same run and pair sum, doubled exactly


def test_round_metrics_leave_selections_clusters_and_parameters_unchanged():
    """The diagnostics of ``round_metrics`` are read-only: with them off (the default) the run makes the same
    selections, finds the same clusters and reaches the same parameters, and logs none of them."""
    runs = {}
    for on in (False, True):
        algo = build_algorithm("equitable_fl", mlp_sim(clients_per_round=4), {"round_metrics": on})
        runs[on] = ([algo.round(t) for t in range(3)], algo.w.clone())
    (off, w_off), (on, w_on) = runs[False], runs[True]
    assert torch.equal(w_off, w_on)
    for a, b in zip(off, on, strict=True):
        assert list(a.selected) == list(b.selected)
        assert {k: v for k, v in b.diagnostics.items() if k in a.diagnostics} == a.diagnostics
        assert {"cd", "sigma_acc", "global_acc", "nmi_all"} <= set(b.diagnostics)
        assert not {"cd", "sigma_acc", "global_acc", "nmi_all"} & set(a.diagnostics)


def test_planted_clusters_are_recovered_on_label_disjoint_clients():
    """Two label-disjoint groups of clients: after a few rounds the activation vectors separate them
    (NMI over the participants and over all clients is 1) and each group weighs 1/2."""
    sim = tiny_sim(clients_per_round=4, local_steps=None, local_epochs=2)
    # the tiny fixture's classes are not tied to groups: tie them (group g holds classes {2g, 2g+1}), and
    # draw each image from its new class as the fixture does
    data, gen = sim.data, torch.Generator().manual_seed(0)
    for k, idx in enumerate(data.client_indices("train") + data.client_indices("test")):
        data.y[idx] = 2 * (k % 2) + (data.y[idx] % 2)
        noise = torch.rand(len(idx), 1, 4, 4, generator=gen) * 80
        data.x[idx] = (noise + data.y[idx, None, None, None] * 40).to(torch.uint8)
    algo = build_algorithm("equitable_fl", sim, {"round_metrics": True})
    outs = [algo.round(t).diagnostics for t in range(4)]
    last = outs[-1]
    # sklearn's mutual information over the contingency table of at most 6 clients, divided by the mean of
    # the two entropies: sums of at most 6 terms (of logs) then the ratio, depth 3
    assert_close(last["nmi_all"], 1.0, terms=6, depth=3, what="NMI, all clients")
    if last["nmi"] is not None:
        assert_close(last["nmi"], 1.0, terms=6, depth=3, what="NMI")  # as above
    totals = np.bincount(last["clusters"], weights=last["weights"])
    # each cluster's weights 1/(C |γ_q|), rounded, summed over at most 4 participants
    assert_close(totals, np.full(len(totals), 0.5), terms=4, depth=2, what="cluster totals")


class NoFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x.flatten(1))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"num_clusters": 0}, r"num_clusters \(C\) must be an integer >= 1"),
        ({"num_clusters": 1.5}, r"num_clusters = 1.5 has the wrong type: expected int"),
        ({"num_clusters": 4}, r"num_clusters \(C\) = 4 exceeds train.clients_per_round = 3"),
        ({"reduction": "mean"}, r"reduction must be one of \('last_epoch_mean', 'last_batch_mean'"),
        ({"spectral": "njw"}, "spectral must be one of"),
        ({"similarity": "l2"}, "similarity must be one of"),
        ({"replacement": True}, "replacement must be False"),
    ],
)
def test_bad_hyperparameters_name_the_field(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("equitable_fl", mlp_sim(), params)


def test_a_model_without_features_is_refused_with_the_fix():
    engine = Engine(NoFeatures(), tiny_federated(), dtype=F64)
    sim = Simulation(
        engine, TrainConfig(rounds=1, clients_per_round=3, batch_size=4, lr=0.1, local_steps=2), 0
    )
    with pytest.raises(ValueError, match=r"\(NoFeatures\) has no features\(x\) method: use a model"):
        build_algorithm("equitable_fl", sim, {})


def test_engine_features_transform_is_the_mean_of_log_softmax():
    sim = mlp_sim()
    w = sim.engine.init_params()
    idx = sim.data.client_indices("train")[1]
    h = sim.engine.model.features(sim.data.inputs(idx, F64))
    got = sim.engine.features(w, np.array([1]), transform="log_softmax")[0]
    # the engine's features of a stack vs the model's own on one client: a first-layer dot product over 16
    # features, the log-softmax and the mean over the client's 12 samples
    assert_close(got, F.log_softmax(h, -1).mean(0), terms=16, depth=3, what="features")
    with pytest.raises(ValueError, match="transform must be one of"):
        sim.engine.features(w, np.array([1]), transform="softplus")


class BNNet(nn.Module):
    """conv → BatchNorm → ReLU → Linear(64, 8) → ReLU (``features``) → Linear(8, 4)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64, 8),
            nn.ReLU(),
        )
        self.head = nn.Linear(8, 4)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("bn_weights", ["equitable", "uniform"])
def test_batchnorm_statistics_are_averaged_with_the_equitable_weights(bn_weights):
    """The global running statistics after a round are Σ_i p^i running_i with Eq. 6's p (C = 2 of r = 3
    participants: one cluster of one, one of two, p = 1/2, 1/4, 1/4 in some order), or their plain mean
    with ``bn_weights="uniform"``; each client's running statistics are recomputed by a separate engine."""
    train = TrainConfig(rounds=1, clients_per_round=3, batch_size=4, lr=0.1, local_steps=2)

    def sim():
        return Simulation(Engine(BNNet(), tiny_federated(), dtype=F64), train, 0)

    algo = build_algorithm("equitable_fl", sim(), {"bn_weights": bn_weights})
    start, running = algo.w.clone(), algo.state["running"].clone()
    plan = algo.configure(0)
    out = algo.round(0)
    local = sim().engine
    local.set_running_stats(running)
    uploaded = local.train(plan.clients, start, plan.spec, algo.sim.seed_for(0, "batches")).running
    p = torch.as_tensor(out.diagnostics["weights"], dtype=F64)
    assert sorted(p.tolist()) == [0.25, 0.25, 0.5]
    expected = p @ uploaded if bn_weights == "equitable" else uploaded.mean(0)
    # the same training in a separate engine (same operations and shapes), and the same product (or mean)
    assert torch.equal(algo.state["running"], expected)
    assert torch.equal(algo.sim.engine.running, algo.state["running"])
    assert (
        p @ uploaded - uploaded.mean(0)
    ).abs().max() > 1e-6  # the two rules differ here (far beyond rounding)
