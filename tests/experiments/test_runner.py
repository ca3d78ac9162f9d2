import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedavg import FedAvg
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides
from fairfl_core.experiments.runner import eval_summary, run_experiment, stale
from fairfl_core.experiments.store import RecoveryWarning, RunStore
from fairfl_core.experiments.sweep import expand_sweep, run_sweep
from fairfl_core.report.results import load_runs
from tests.algorithms.conftest import run_rounds, tiny_sim
from tests.algorithms.test_contracts import CASES
from tests.experiments.conftest import digits_config
from tests.rounding import assert_close


def test_run_writes_records_and_summary(cfg, tmp_path):
    res = run_experiment(cfg, tmp_path, progress=False)
    store = RunStore(res.path)
    evals, rounds = store.records("evals"), store.records("rounds")
    assert [e["round"] for e in evals] == [0, 2, 4, 6]
    assert len(rounds) == 6 and all(len(r["selected"]) == 3 for r in rounds)
    assert len(evals[-1]["client_acc"]) == 8
    assert res.summary["status"] == "complete" and res.summary["rounds"] == 6
    assert evals[-1]["global_acc"] > evals[0]["global_acc"]
    # the data file the run read, with its digest, beside the code provenance (issue #33)
    saved = json.loads((res.path / "summary.json").read_text())
    (digits,) = saved["data_files"]
    assert digits["file"].endswith("sklearn/datasets/data/digits.csv.gz") and digits["algorithm"] == "sha256"
    assert digits["digest"].startswith("09f66e6d") and digits["check"].startswith("fairfl's own record")
    assert "provenance" in saved


def test_validation_metrics_only_with_a_validation_split(cfg, tmp_path):
    plain = run_experiment(cfg, tmp_path, progress=False)
    assert not any(k.startswith("val_") for k in RunStore(plain.path).records("evals")[-1])
    assert not any(k.startswith("val_") for k in plain.summary)
    held = ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), ["data.val_frac=0.1"]))
    res = run_experiment(held, tmp_path, progress=False)
    last = RunStore(res.path).records("evals")[-1]
    assert len(last["val_client_acc"]) == len(last["val_client_loss"]) == 8
    assert res.summary["val_mean"] == pytest.approx(sum(last["val_client_acc"]) / 8)
    assert res.summary["val_n"] == 8 and res.summary["val_group_gap"] is None  # no groups here
    assert "val_global_acc" not in res.summary and res.summary["mean"] != res.summary["val_mean"]


def test_summary_of_validation_leaves_out_clients_without_validation_data():
    groups = np.array([0, 0, 1, 1])
    rec = {
        "global_acc": 50.0,
        "client_acc": [10.0, 20.0, 30.0, 40.0],
        "client_loss": [1.0, 1.0, 1.0, 1.0],
        "personal_acc": [50.0, 60.0, 70.0, 80.0],
        "personal_loss": [0.5, 0.5, 0.5, 0.5],
        "val_client_acc": [0.0, 0.0, 0.0, 0.0],
        "val_client_loss": [9.0, 9.0, 9.0, 9.0],
        "val_personal_acc": [40.0, None, 70.0, 100.0],  # client 1 holds no validation sample
        "val_personal_loss": [2.0, None, 1.0, 0.0],
    }
    out = eval_summary(rec, groups)
    assert out["evaluated"] == "personal" and out["mean"] == 65.0 and out["group_gap"] == 20.0
    assert out["val_n"] == 3 and out["val_mean"] == 70.0 and out["val_var"] == 600.0
    assert out["val_loss_mean"] == 1.0
    assert out["val_group_acc_0"] == 40.0 and out["val_group_acc_1"] == 85.0 and out["val_group_gap"] == 45.0
    only_one_group = {
        **rec,
        "val_personal_acc": [40.0, 50.0, None, None],
        "val_personal_loss": [1, 1, None, None],
    }
    assert eval_summary(only_one_group, groups)["val_group_gap"] is None  # one group left: no discrepancy


def test_summary_of_a_personalised_method_also_holds_its_global_model():
    groups = np.array([0, 0, 1, 1])
    rec = {
        "global_acc": 50.0,
        "client_acc": [10.0, 20.0, 30.0, 40.0],
        "client_loss": [1.0, 1.0, 1.0, 1.0],
        "personal_acc": [50.0, 60.0, 70.0, 90.0],
        "personal_loss": [0.5, 0.5, 0.5, 0.5],
    }
    out = eval_summary(rec, groups)
    assert out["mean"] == 67.5 and out["group_gap"] == 25.0
    glob = out["global_model"]
    assert glob["evaluated"] == "global" and glob["mean"] == 25.0 and glob["var"] == 125.0
    assert glob["group_gap"] == 20.0 and glob["global_acc"] == 50.0 and "global_model" not in glob
    assert "global_model" not in eval_summary({k: v for k, v in rec.items() if "personal" not in k}, groups)


def test_configs_of_one_run_under_two_labels_run_once(tmp_path, monkeypatch):
    base = digits_config().to_dict()
    base["train"]["rounds"] = 2
    own = ExperimentConfig.from_dict({**base, "name": "Ditto"})
    glob = apply_overrides({**base, "name": "Ditto (global)"}, ["eval.models=global"])
    glob = ExperimentConfig.from_dict(glob)
    calls = []
    real = FedAvg.round
    monkeypatch.setattr(FedAvg, "round", lambda self, t: calls.append(t) or real(self, t))
    outcomes = run_sweep([own, glob], tmp_path, progress=False)
    assert calls == [0, 1]  # one run of 2 rounds, not two
    assert [o.config.name for o in outcomes] == ["Ditto", "Ditto (global)"]
    assert outcomes[0].hash == outcomes[1].hash and all(o.status == "complete" for o in outcomes)


def test_complete_run_is_not_recomputed(cfg, tmp_path, monkeypatch):
    first = run_experiment(cfg, tmp_path, progress=False)
    monkeypatch.setattr(FedAvg, "round", lambda self, t: pytest.fail("a finished run was recomputed"))
    again = run_experiment(cfg, tmp_path, progress=False)
    assert again.summary == first.summary


def test_a_cached_run_whose_algorithm_defaults_changed_is_recomputed(cfg, tmp_path, monkeypatch):
    """The config hash covers only the fields a config sets; the resolved hyperparameters in summary.json
    catch a changed default (a summary written before they were recorded is kept)."""
    first = run_experiment(cfg, tmp_path, progress=False)
    assert first.summary["algorithm_hyper"]["weighting"] == "size"
    summary_file = first.path / "summary.json"
    stored = json.loads(summary_file.read_text())
    summary_file.write_text(
        json.dumps({**stored, "algorithm_hyper": {**stored["algorithm_hyper"], "weighting": "x"}})
    )
    rounds = []
    real_round = FedAvg.round
    monkeypatch.setattr(FedAvg, "round", lambda self, t: rounds.append(t) or real_round(self, t))
    with pytest.warns(RecoveryWarning, match=r"other values of \['weighting'\].*recomputing"):
        again = run_experiment(cfg, tmp_path, progress=False)
    assert rounds == list(range(cfg.train.rounds)) and again.summary["mean"] == first.summary["mean"]
    del stored["algorithm_hyper"]
    summary_file.write_text(json.dumps(stored))
    monkeypatch.setattr(FedAvg, "round", lambda self, t: pytest.fail("a finished run was recomputed"))
    assert run_experiment(cfg, tmp_path, progress=False).summary == stored


def test_a_hyperparameter_added_since_counts_at_its_old_value(cfg, tmp_path, monkeypatch):
    """A run cached before ``server_momentum_lr`` existed ran at η_m = 1: reused while the config resolves to
    1, recomputed when it sets another value (``runner.HYPER_ADDED_WITH_DEFAULT``)."""
    first = run_experiment(cfg, tmp_path, progress=False)
    assert first.summary["algorithm_hyper"]["server_momentum_lr"] == 1.0
    summary_file = first.path / "summary.json"
    stored = json.loads(summary_file.read_text())
    del stored["algorithm_hyper"]["server_momentum_lr"]
    summary_file.write_text(json.dumps(stored))
    assert stale(stored, cfg) is None
    monkeypatch.setattr(FedAvg, "round", lambda self, t: pytest.fail("a finished run was recomputed"))
    assert run_experiment(cfg, tmp_path, progress=False).summary == stored
    other = replace(cfg, algorithm=replace(cfg.algorithm, params={"server_momentum": 0.9}))
    hyper = {**stored["algorithm_hyper"], "server_momentum": 0.9}
    assert stale({**stored, "algorithm_hyper": hyper}, other) is None
    lr = replace(
        other, algorithm=replace(cfg.algorithm, params={"server_momentum": 0.9, "server_momentum_lr": 0.1})
    )
    assert "['server_momentum_lr']" in stale({**stored, "algorithm_hyper": hyper}, lr)


def test_killed_run_resumes_to_identical_numbers(cfg, tmp_path, monkeypatch):
    straight = run_experiment(cfg, tmp_path / "a", progress=False)
    real_round = FedAvg.round

    def dies_at_round_5(self, t):
        if t == 4:
            raise KeyboardInterrupt
        return real_round(self, t)

    monkeypatch.setattr(FedAvg, "round", dies_at_round_5)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "b", progress=False)
    monkeypatch.setattr(FedAvg, "round", real_round)
    resumed = run_experiment(cfg, tmp_path / "b", progress=False)
    a, b = RunStore(straight.path), RunStore(resumed.path)
    assert a.records("evals") != [] and [
        {k: v for k, v in r.items() if k != "wall_time"} for r in a.records("evals")
    ] == [{k: v for k, v in r.items() if k != "wall_time"} for r in b.records("evals")]
    assert [r["selected"] for r in a.records("rounds")] == [r["selected"] for r in b.records("rounds")]
    for key in ("mean", "var", "global_acc"):
        assert straight.summary[key] == resumed.summary[key]


def test_divergence_is_marked_and_a_sweep_carries_on(tmp_path):
    base = digits_config().to_dict()
    bad = ExperimentConfig.from_dict(apply_overrides(base, ["train.lr=1e12"]))
    good = ExperimentConfig.from_dict(base)
    outcomes = run_sweep([bad, good], tmp_path, progress=False)
    assert outcomes[0].status == "diverged" and outcomes[0].result.summary["diverged_round"] >= 1
    assert outcomes[1].status == "complete"


def _nan_from_round(monkeypatch, bad: int, fails: int | None = None):
    """FedAvg whose global model turns NaN after round ``bad`` ; from round ``fails`` on it raises."""
    real_round = FedAvg.round

    def round_(self, t):
        if fails is not None and t + 1 >= fails:
            raise ValueError("a NaN probability")
        out = real_round(self, t)
        if t + 1 >= bad:
            self.state["w"] = torch.full_like(self.w, float("nan"))
        return out

    monkeypatch.setattr(FedAvg, "round", round_)


@pytest.mark.parametrize("fails", [None, 5])
def test_divergence_read_at_the_next_evaluation_is_dated_to_its_round(tmp_path, monkeypatch, fails):
    """The finiteness of each round's model is read at evaluations only (runner.PendingRounds): a run whose
    model turns NaN in round 3 of 8 (evaluated every 4) stops as diverged at round 3, with the records of
    rounds 1-3 and the evaluation of round 0 only, also when a later round fails on the NaN."""
    cfg = ExperimentConfig.from_dict(
        apply_overrides(digits_config().to_dict(), ["train.rounds=8", "eval.every=4", "checkpoint_every=8"])
    )
    _nan_from_round(monkeypatch, bad=3, fails=fails)
    run = run_experiment(cfg, tmp_path, progress=False)
    assert run.summary["status"] == "diverged" and run.summary["diverged_round"] == 3
    store = RunStore(run.path)
    assert [r["round"] for r in store.records("rounds")] == [1, 2, 3]
    assert [r["round"] for r in store.records("evals")] == [0]


def test_a_failing_round_without_divergence_raises_and_keeps_the_rounds_before(tmp_path, monkeypatch):
    cfg = ExperimentConfig.from_dict(apply_overrides(digits_config().to_dict(), ["eval.every=4"]))
    _nan_from_round(monkeypatch, bad=99, fails=4)
    with pytest.raises(ValueError, match="a NaN probability"):
        run_experiment(cfg, tmp_path, progress=False)
    (path,) = tmp_path.iterdir()
    assert [r["round"] for r in RunStore(path).records("rounds")] == [1, 2, 3]


def test_a_fast_precision_run_says_its_numbers_are_not_exact(tmp_path):
    cfg = ExperimentConfig.from_dict(
        apply_overrides(digits_config().to_dict(), ["train.rounds=1", "engine.precision=bf16"])
    )
    with pytest.warns(UserWarning, match="engine.precision='bf16' computes other numbers than 'exact'"):
        run = run_experiment(cfg, tmp_path, progress=False)
    assert run.summary["status"] == "complete"


def test_sweep_expansion_labels_runs_by_method(tmp_path):
    d = digits_config().to_dict()
    d["sweep"] = {
        "algorithms": ["fedavg", {"name": "fedprox", "params": {"mu": 0.1}}],
        "seeds": [0, 1],
        "grid": {"train.lr": [0.05]},
    }
    configs = expand_sweep(d)
    assert [(c.algorithm.name, c.seed) for c in configs] == [
        ("fedavg", 0),
        ("fedavg", 1),
        ("fedprox", 0),
        ("fedprox", 1),
    ]
    for c in configs:
        c.train.rounds = 2
    run_sweep(configs, tmp_path, progress=False)
    runs = load_runs(tmp_path)
    assert sorted(runs["method"].unique()) == ["fedavg", "fedprox"]
    assert runs.groupby("method").size().tolist() == [2, 2]


def test_stored_config_is_the_run_config(cfg, tmp_path):
    res = run_experiment(cfg, tmp_path, progress=False)
    assert ExperimentConfig.from_dict(json.loads((res.path / "config.json").read_text())) == cfg


def test_process_pool_executor_gives_the_inline_numbers(tmp_path):
    configs = [
        digits_config(rounds=2),
        ExperimentConfig.from_dict({**digits_config(rounds=2).to_dict(), "seed": 1}),
    ]
    pooled = run_sweep(configs, tmp_path / "pool", executor="process", workers=2, progress=False)
    inline = run_sweep(configs, tmp_path / "inline", progress=False)
    assert [o.status for o in pooled] == ["complete", "complete"]
    # a pool worker runs with its own thread count, whose kernels may sum in another order: the rounding
    # bound of tests/rounding.py (float32; digits: sums of at most 1,437 samples, 7 reductions a local step
    # for 2 rounds of 3 steps, and an evaluation)
    for a, b in zip(pooled, inline, strict=True):
        assert a.result.path.name == b.result.path.name
        mean_a, mean_b = a.result.summary["mean"], b.result.summary["mean"]
        assert_close(mean_a, mean_b, terms=1437, depth=7 * 7, dtype=torch.float32)


def _same(a, b) -> bool:
    """Equal values of the same types (tensor / numpy dtypes included), recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(CASES)])
def test_checkpoint_round_trip_is_exact_and_resumes_bit_for_bit(name, params, tmp_path):
    """Every algorithm's state (numpy arrays and scalars included) comes back from a weights_only checkpoint
    as it was saved, and the resumed run continues exactly."""
    full = build_algorithm(name, tiny_sim(), params)
    run_rounds(full, 3)
    first = build_algorithm(name, tiny_sim(), params)
    run_rounds(first, 1)
    store = RunStore(tmp_path)
    store.save_checkpoint(1, first.state_dict(), "v")
    round_, state = store.load_checkpoint(torch.device("cpu"), "v")
    assert round_ == 1 and _same(state, first.state_dict())
    resumed = build_algorithm(name, tiny_sim(), params)
    resumed.load_state_dict(state)
    for t in (1, 2):
        resumed.round(t)
    assert torch.equal(resumed.eval_params(), full.eval_params())


def test_numpy_state_is_stored_as_tensors_only(tmp_path):
    state = {
        "a": np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::2],  # a non-contiguous view
        "b": np.array([True, False]),
        "c": np.float64(0.1),
        "d": [np.int32(3), (np.zeros(0, np.float32), None)],
        "e": torch.ones(2, dtype=torch.float64),
        "f": {"g": 2.5, "h": "text"},
    }
    store = RunStore(tmp_path)
    store.save_checkpoint(4, state, "v")
    raw = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # refuses anything but tensors/plain data
    assert isinstance(raw["state"]["a"]["__ndarray__"], torch.Tensor)
    assert _same(store.load_checkpoint(torch.device("cpu"), "v"), (4, state))
    with pytest.raises(TypeError, match=r"checkpoint state\['x'\] is a set"):
        store.save_checkpoint(5, {"x": {1}}, "v")


def test_checkpoints_rotate_and_a_finished_run_keeps_one(cfg, tmp_path):
    store = RunStore(tmp_path)
    store.save_checkpoint(1, {"w": torch.zeros(1)}, "v")
    store.save_checkpoint(2, {"w": torch.ones(1)}, "v")
    assert torch.load(tmp_path / "checkpoint.prev.pt", weights_only=True)["round"] == 1
    res = run_experiment(cfg, tmp_path / "r", progress=False)
    assert (res.path / "checkpoint.pt").exists() and not (res.path / "checkpoint.prev.pt").exists()
