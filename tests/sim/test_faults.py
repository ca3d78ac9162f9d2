"""Client faults (``sim/faults.py``): the seeded draw, stragglers' truncated local work, aggregation over the
survivors, rounds where every client fails, p = 0 exactly as without faults, the config section."""

import copy
import json

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import ALGORITHMS, build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash
from fairfl_core.experiments.runner import run_experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.sim.batches import draw_schedule
from fairfl_core.sim.faults import FaultConfig, completed_steps, draw_faults
from fairfl_core.sim.local import LocalSpec, masked_mean_loss
from tests.algorithms.conftest import TINY_PARAMS, tiny_sim
from tests.experiments.conftest import digits_config
from tests.rounding import assert_close

DROPOUT = FaultConfig(rate=0.5, kind="dropout")
NOBODY = FaultConfig(rate=0.95)  # round(K · 0.05) = 0 of K ≤ 9 selected clients complete the round


def _state(algo) -> dict:
    return copy.deepcopy(algo.state_dict())


def _assert_same_state(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for key, value in a.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, b[key]), key
        elif isinstance(value, np.ndarray):
            assert np.array_equal(value, b[key]), key
        else:
            assert value == b[key], key


# -- the draw ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "k,rate,failing",
    [(10, 0.2, 2), (10, 0.3, 3), (10, 0.5, 5), (3, 0.3, 1), (6, 0.3, 2), (10, 0.25, 2), (3, 0.95, 3)],
)
def test_the_number_that_fail_follows_the_fedprox_reference(k, rate, failing):
    """K − round(K (1 − p)) fail (Python's round, half to even: 7.5 → 8 complete of 10 at p = 0.25)."""
    selected = np.arange(100, 100 + k)
    drop = draw_faults(FaultConfig(rate=rate), np.random.default_rng(0), selected)
    assert drop.failed.sum() == failing and drop.kind == "dropout"
    assert np.array_equal(drop.survivors, selected[~drop.failed]) and (drop.work == 1).all()
    failed = selected[drop.failed].tolist()
    assert drop.record() == {"kind": "dropout", "failed": failed, "uploaded": k - failing}
    straggle = FaultConfig(rate=rate, kind="straggler", straggler_work=0.4)
    slow = draw_faults(straggle, np.random.default_rng(0), selected)
    assert np.array_equal(slow.failed, drop.failed)  # the same clients, only their fate differs
    assert np.array_equal(slow.survivors, selected)
    assert np.array_equal(slow.work, np.where(slow.failed, 0.4, 1.0))


def test_the_draw_is_counter_based_per_round():
    clients = np.arange(6)
    sim, again = tiny_sim(faults=DROPOUT), tiny_sim(faults=DROPOUT)
    draws = [sim.faults(t, clients).failed for t in range(8)]
    assert all(np.array_equal(d, again.faults(t, clients).failed) for t, d in enumerate(draws))
    assert len({tuple(d) for d in draws}) > 1  # rounds draw differently
    other_seed = tiny_sim(faults=DROPOUT, seed=1)
    assert any(not np.array_equal(d, other_seed.faults(t, clients).failed) for t, d in enumerate(draws))


def test_no_faults_at_p0_whatever_the_kind():
    clients = np.array([4, 1, 3])
    for cfg in (FaultConfig(), FaultConfig(rate=0.0, kind="straggler", straggler_work=0.1)):
        faults = tiny_sim(faults=cfg).faults(0, clients)
        assert faults.kind == "none" and faults.train_work is None and faults.survivors is clients
        params = torch.zeros(3, 2)
        assert faults.kept(params) is params and not faults.failed.any()


@pytest.mark.parametrize(
    "scheduled,work,done",
    [
        ([10, 10, 10, 10, 10, 7], [0.3, 0.5, 0.25, 0.01, 1.0, 0.5], [3, 5, 3, 1, 10, 4]),
        ([3, 1, 12], [0.7, 0.5, 1 / 3], [3, 1, 4]),  # 0.7·3 = 2.1 → 3; one step stays one; (1/3)·12 = 4
    ],
)
def test_a_straggler_completes_the_ceiling_of_its_fraction_of_steps(scheduled, work, done):
    assert completed_steps(np.array(scheduled), np.array(work)).tolist() == done


@pytest.mark.parametrize(
    "faults,message",
    [
        ({"rate": 1.0}, r"faults\.rate = 1\.0 .* \[0, 1\)"),
        ({"rate": -0.1}, r"faults\.rate"),
        ({"kind": "crash"}, r"'faults'\.kind must be one of \('dropout', 'straggler'\), got 'crash'"),
        ({"straggler_work": 0.0}, r"faults\.straggler_work = 0\.0 .* \(0, 1\]"),
        ({"straggler_work": 1.5}, r"faults\.straggler_work"),
        ({"ratio": 0.2}, r"config section 'faults': unknown field\(s\) \['ratio'\]"),
        ({"rate": "high"}, r"'faults'\.rate = 'high' has the wrong type: expected float"),
    ],
)
def test_bad_fault_settings_name_the_field(faults, message):
    with pytest.raises(ValueError, match=message):
        ExperimentConfig.from_dict({**digits_config().to_dict(), "faults": faults})


def test_existing_configs_keep_their_hash():
    cfg = digits_config()
    assert config_hash(cfg) == "29452d984095dc3b"  # computed before the faults section existed
    explicit = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["faults.rate=0.0"]))
    assert config_hash(explicit) == config_hash(cfg)
    faulty = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["faults.rate=0.2"]))
    assert faulty.faults == FaultConfig(rate=0.2) and config_hash(faulty) != config_hash(cfg)


# -- stragglers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["batched", "sequential"])
def test_a_straggler_equals_a_client_trained_for_its_completed_steps(kind):
    """Client k with fraction f of its K = 10 steps: plain SGD on the first ⌈f K⌉ minibatches of its
    schedule, written out here with autograd; the others train all 10 steps, as without faults."""
    sim = tiny_sim(kind=kind, local_steps=10)
    engine, clients, seed = sim.engine, np.array([5, 0, 3]), 11
    spec = LocalSpec(lr=0.2, batch_size=4, steps=10)
    w0 = engine.init_params()
    work = np.array([0.3, 1.0, 0.55])  # 3, 10 and 6 steps
    out = engine.train(clients, w0, spec, seed, work)
    index, _ = engine.data.padded("train")
    counts = engine.counts("train")[clients]
    schedule = draw_schedule(index[clients], counts, 4, steps=10, seed=seed, dtype=w0.dtype)
    for row, steps in enumerate([3, 10, 6]):
        w, losses = w0.clone(), []
        for s in range(steps):
            idx, mask = schedule.index[row, s], schedule.mask[row, s]
            w.requires_grad_(True)
            logits = engine.logits(w, engine.data.inputs(idx, w0.dtype))
            loss = masked_mean_loss(logits, engine.data.y[idx], mask)
            (g,) = torch.autograd.grad(loss, w)
            w, losses = (w - spec.lr * g).detach(), [*losses, float(loss.detach())]
        # the engine's batch of 3 against a client alone by autograd: the rounding bound of tests/rounding.py,
        # sums over at most the tiny fixture's 117 samples, 7 reductions a step for up to 10 steps (and the
        # mean of the step losses)
        assert_close(out.params[row], w, terms=117, depth=7 * 10, what=f"parameters of row {row}")
        assert_close(float(out.train_loss[row]), np.mean(losses), terms=117, depth=7 * 10 + 1, what="loss")
    full = engine.train(clients, w0, spec, seed)
    assert torch.equal(out.params[1], full.params[1]) and not torch.allclose(out.params[0], full.params[0])


# -- aggregation over the survivors ------------------------------------------------------------------------
def test_fedavg_with_dropouts_equals_fedavg_over_the_survivors():
    """The dropped clients trained, but only the survivors' models enter, with p_k ∝ n_k over them."""
    sim = tiny_sim(faults=DROPOUT, clients_per_round=4)
    algo = build_algorithm("fedavg", sim, {"weighting": "size"})
    w0 = algo.w.clone()
    out = algo.round(0)
    faults = sim.faults(0, out.selected)  # the same draw: its own counter-based stream
    assert faults.failed.sum() == 2
    assert out.diagnostics["faults"]["failed"] == out.selected[faults.failed].tolist()
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    alive = ~faults.failed
    n = sim.train_sizes[out.selected[alive]]
    expected = w0 + torch.as_tensor(n / n.sum()) @ (local[torch.as_tensor(alive)] - w0)
    assert torch.equal(algo.w, expected)  # the same local training and averaged()'s w + Σ p_k (w_k − w)


def test_stragglers_upload_their_truncated_models():
    cfg = FaultConfig(rate=0.5, kind="straggler", straggler_work=0.4)
    sim = tiny_sim(faults=cfg, clients_per_round=4, local_steps=5)
    algo = build_algorithm("fedavg", sim, {"weighting": "uniform"})
    w0 = algo.w.clone()
    out = algo.round(0)
    faults = sim.faults(0, out.selected)
    failed = out.selected[faults.failed].tolist()
    assert len(failed) == 2
    assert out.diagnostics["faults"] == {"kind": "straggler", "failed": failed, "uploaded": 4}
    seed = sim.seed_for(0, "batches")
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), seed, faults.work)
    # the same local training; w + Σ_k ¼ (w_k − w) against the mean of the 4 models: sums of 4 terms after the
    # differences, of sizes up to |w_k| + |w|
    scale = float(local.params.abs().max() + w0.abs().max())
    assert_close(algo.w, local.params.mean(0), terms=4, depth=2, scale=scale, what="global model")


# -- rounds where every client fails, and p = 0 -----------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_round_where_every_client_fails_changes_nothing_and_is_recorded(name):
    sim = tiny_sim()
    algo = build_algorithm(name, sim, TINY_PARAMS.get(name, {}))
    algo.round(0)
    before = _state(algo)
    sim.fault_config = NOBODY
    out = algo.round(1)
    _assert_same_state(before, algo.state_dict())
    assert out.diagnostics == {
        "faults": {"kind": "dropout", "failed": out.selected.tolist(), "uploaded": 0},
        "skipped": True,
    }
    sim.fault_config = FaultConfig()
    algo.round(2)
    assert torch.isfinite(algo.eval_params()).all()


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_p0_runs_exactly_as_without_faults(name):
    params = TINY_PARAMS.get(name, {})
    plain = build_algorithm(name, tiny_sim(), params)
    zero = build_algorithm(name, tiny_sim(faults=FaultConfig(rate=0.0, kind="straggler")), params)
    for t in range(2):
        a, b = plain.round(t), zero.round(t)
        assert np.array_equal(a.selected, b.selected) and a.diagnostics == b.diagnostics
    _assert_same_state(plain.state_dict(), zero.state_dict())


# -- a run records its faults -----------------------------------------------------------------------------
def test_a_run_records_the_failed_clients_of_each_round(tmp_path):
    cfg = ExperimentConfig.from_dict(apply_overrides(digits_config().to_dict(), ["faults.rate=0.5"]))
    res = run_experiment(cfg, tmp_path, progress=False)
    assert res.status == "complete"
    assert json.loads((res.path / "config.json").read_text())["faults"]["rate"] == 0.5
    for rec in RunStore(res.path).records("rounds"):
        faults = rec["diagnostics"]["faults"]
        assert faults["kind"] == "dropout" and faults["uploaded"] == 2  # round(3 · 0.5) = 2 of 3 complete
        assert len(faults["failed"]) == 1 and faults["failed"][0] in rec["selected"]
