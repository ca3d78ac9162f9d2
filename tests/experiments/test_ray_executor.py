"""The ``ray`` sweep executor: the same runs and numbers as the process executor, cached runs never
scheduled, per-run resources, and clear errors for a missing Ray, an unreachable cluster or stray options."""

from __future__ import annotations

import sys

import pytest
import yaml

from fairfl_core.cli import main
from fairfl_core.experiments import ray_executor as R
from fairfl_core.experiments.store import RunStore
from fairfl_core.experiments.sweep import EXECUTORS, expand_sweep, run_sweep
from tests.experiments.conftest import digits_config


def _configs(rounds: int = 2):
    """FedAvg and FedProx × seeds 0, 1 on digits: float64, one thread per run."""
    d = digits_config(rounds=rounds).to_dict()
    d["engine"].update(dtype="float64", threads=1)
    d["sweep"] = {"algorithms": ["fedavg", {"name": "fedprox", "params": {"mu": 0.1}}], "seeds": [0, 1]}
    return expand_sweep(d)


def test_task_resources_come_from_the_flags_else_the_config():
    cfg = digits_config()
    assert R.task_resources(cfg, None, None, None) == {"num_cpus": 1, "num_gpus": 0.0}
    cfg.engine.threads = 4
    assert R.task_resources(cfg, "cuda:1", None, None) == {"num_cpus": 4, "num_gpus": 1.0}
    assert R.task_resources(cfg, "cuda", 2, 0.5) == {"num_cpus": 2, "num_gpus": 0.5}
    with pytest.raises(ValueError, match="num_cpus=0 must be >= 1"):
        R.task_resources(cfg, None, 0, None)


def test_ray_options_need_the_ray_executor(tmp_path):
    with pytest.raises(ValueError, match=r"\['ray_address'\] do not apply to executor='process'"):
        run_sweep(_configs(), tmp_path, executor="process", ray_address="auto")
    with pytest.raises(ValueError, match=r"\['num_cpu'\] do not apply to executor='ray'; ray takes"):
        run_sweep(_configs(), tmp_path, executor="ray", num_cpu=1)


def test_stray_ray_flags_are_a_clear_cli_error(tmp_path, capsys):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(digits_config().to_dict()))
    code = main(["sweep", str(path), "--results", str(tmp_path), "--ray-cpus", "2"])
    assert code == 2
    assert "--ray-cpus only apply with --executor ray" in capsys.readouterr().err


def test_missing_ray_names_the_extra_and_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ImportError, match=r'pip install "fairfl\[ray\]"'):
        run_sweep(_configs(), tmp_path, executor="ray", progress=False)
    assert not any(RunStore(p).is_done() for p in tmp_path.iterdir())


def test_an_unreachable_cluster_is_named_and_nothing_starts(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")

    def refuse(address=None, **kwargs):
        raise ConnectionError(f"Could not find any running Ray instance at {address}")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(
        ConnectionError, match=r"Ray cluster at '10\.0\.0\.9:6379'.*RAY_ADDRESS.*No run was started"
    ):
        run_sweep(_configs(), tmp_path, executor="ray", ray_address="10.0.0.9:6379", progress=False)
    assert not any(RunStore(p).is_done() for p in tmp_path.iterdir())


@pytest.mark.slow
def test_a_ray_sweep_equals_the_process_sweep_and_a_second_call_computes_nothing(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    configs = _configs()
    process = run_sweep(configs, tmp_path / "process", executor="process", workers=2, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(configs, tmp_path / "ray", executor="ray", progress=False)
        assert [o.status for o in on_ray] == ["complete"] * 4
        assert [o.hash for o in on_ray] == [o.hash for o in process]
        # an identical computation: the same code, shapes and kernels on this machine, one thread per run in
        # both executors (engine.threads = 1), so compared exactly
        for a, b in zip(process, on_ray, strict=True):
            last_a = RunStore(a.result.path).records("evals")[-1]
            last_b = RunStore(b.result.path).records("evals")[-1]
            assert (
                last_a["client_acc"] == last_b["client_acc"]
                and last_a["client_loss"] == last_b["client_loss"]
            )
            assert a.result.summary["var"] == b.result.summary["var"]
        monkeypatch.setitem(EXECUTORS, "ray", lambda *a, **k: pytest.fail("a finished run was scheduled"))
        again = run_sweep(configs, tmp_path / "ray", executor="ray", progress=False)
        assert [o.result.summary for o in again] == [o.result.summary for o in on_ray]
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_run_that_fails_on_a_worker_is_reported_with_its_hash_and_the_others_finish(tmp_path):
    ray = pytest.importorskip("ray")
    good = _configs()[:1]
    bad = _configs()[1:2]
    bad[0].model.name = "no-such-model"  # fails inside the task, after scheduling
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = run_sweep(good + bad, tmp_path, executor="ray", progress=False)
    finally:
        ray.shutdown()
    assert out[0].status == "complete"
    assert out[1].status == "failed" and "no-such-model" in out[1].error
