"""Long sweeps survive, on the process executor: a sweep SIGKILLed mid-run and started again loses and
recomputes no finished run and ends with an uninterrupted sweep's numbers; its workers die with it; a run
that raises is reported with its config hash while the others finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from fairfl_core.cli import main
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.store import RunStore
from fairfl_core.experiments.sweep import expand_sweep, run_sweep
from tests.experiments.conftest import digits_config

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc"),
]


def _sweep(tmp_path: Path, rounds: int) -> tuple[str, dict]:
    """FedAvg and FedProx × seeds 0, 1 on digits: float64, one thread per run, a checkpoint every round."""
    d = digits_config(rounds=rounds).to_dict()
    d["engine"].update(dtype="float64", threads=1)
    d["eval"]["every"] = 5
    d["checkpoint_every"] = 1
    d["sweep"] = {"algorithms": ["fedavg", {"name": "fedprox", "params": {"mu": 0.1}}], "seeds": [0, 1]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(d))
    return str(path), d


def _start(config: str, results: Path) -> subprocess.Popen:
    """`fairfl sweep --executor process` in a session of its own (its process group is the session)."""
    cmd = [sys.executable, "-m", "fairfl_core.cli", "sweep", config, "--results", str(results), "--quiet"]
    cmd += ["--executor", "process", "--workers", "2"]
    return subprocess.Popen(
        cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _alive_in_session(sid: int) -> list[int]:
    """Processes of session ``sid`` that are not zombies (/proc/<pid>/stat: state, ppid, pgrp, session)."""
    alive = []
    for d in Path("/proc").iterdir():
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(int(d.name))
    return alive


def _wait_until(condition, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended (rc {proc.returncode}) first: {proc.stderr.read()[-2000:]}")
        if time.monotonic() > end:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"no such moment within {timeout:.0f} s")
        time.sleep(0.01)


def _finished(results: Path) -> list[Path]:
    return [p for p in results.glob("*") if RunStore(p).is_done()]


def _mid_run(results: Path) -> list[Path]:
    return [p for p in results.glob("*") if (p / "checkpoint.pt").exists() and not RunStore(p).is_done()]


def _numbers(path: Path) -> tuple[list[dict], dict]:
    """A run's evaluations and summary without the timings and the code version (a commit made while the
    test runs changes it)."""
    evals = [{k: v for k, v in r.items() if k != "wall_time"} for r in RunStore(path).records("evals")]
    summary = {
        k: v for k, v in RunStore(path).summary().items() if k not in ("seconds_per_round", "provenance")
    }
    return evals, summary


def test_a_sweep_killed_mid_run_and_restarted_recomputes_nothing_finished_and_ends_alike(tmp_path):
    config, d = _sweep(tmp_path, rounds=30)
    results = tmp_path / "killed"
    proc = _start(config, results)
    _wait_until(lambda: _finished(results) and _mid_run(results), proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    proc.wait()
    finished, interrupted = _finished(results), _mid_run(results)
    assert finished and interrupted
    before = {p.name: (p / "summary.json").stat().st_mtime_ns for p in finished}
    data = {p.name: (p / "summary.json").read_bytes() for p in finished}

    again = _start(config, results)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    configs = expand_sweep(d)
    assert sorted(p.name for p in _finished(results)) == sorted(config_hash(c) for c in configs)
    for name, mtime in before.items():  # not recomputed, not rewritten
        summary = results / name / "summary.json"
        assert summary.stat().st_mtime_ns == mtime and summary.read_bytes() == data[name]

    threads = torch.get_num_threads()
    try:  # the uninterrupted sweep (engine.threads=1 sets this process's threads)
        straight = run_sweep(configs, tmp_path / "straight", progress=False)
    finally:
        torch.set_num_threads(threads)
    for o in straight:
        assert _numbers(results / o.hash) == _numbers(o.result.path)


def test_pool_workers_exit_when_the_sweep_process_is_killed(tmp_path):
    config, _ = _sweep(tmp_path, rounds=200)
    results = tmp_path / "r"
    proc = _start(config, results)
    _wait_until(lambda: _mid_run(results), proc)
    assert len(_alive_in_session(proc.pid)) > 1  # the sweep, its workers (and multiprocessing's tracker)
    os.kill(proc.pid, signal.SIGKILL)  # the sweep process alone: its workers are mid-run
    proc.wait()
    end = time.monotonic() + 60
    while (alive := _alive_in_session(proc.pid)) and time.monotonic() < end:
        time.sleep(0.1)
    if alive:
        os.killpg(proc.pid, signal.SIGKILL)
    assert alive == [], "pool workers outlived the sweep"
    assert not _finished(results)  # 200 rounds: the workers stopped mid-run instead of finishing


def test_a_run_that_raises_is_reported_with_its_hash_and_the_others_finish(tmp_path, capsys):
    d = digits_config(rounds=2).to_dict()
    d["sweep"] = {
        "algorithms": [
            {"name": "fedprox", "params": {"mu": 0.01}},
            {"name": "fedprox", "params": {"mu": 0.1}},  # no labels: two settings under one name
            {"name": "fedavg", "label": "too many", "overrides": ["train.clients_per_round=100"]},
        ],
        "seeds": [0, 1],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(d))
    results = tmp_path / "r"
    argv = ["sweep", str(path), "--results", str(results), "--quiet", "--executor", "process"]
    assert main([*argv, "--workers", "2"]) == 1
    out, err = capsys.readouterr()
    bad = [c for c in expand_sweep(d) if c.name == "too many"]
    failed = [line for line in err.splitlines() if line.startswith("FAILED")]
    assert failed == [
        f"FAILED too many seed {c.seed} [{config_hash(c)}]: ValueError: config field train.clients_per_round "
        f"= 100 exceeds the 8 clients of digits; lower it or raise data.num_clients"
        for c in bad
    ]
    assert len(_finished(results)) == 4 and not any(RunStore(results / config_hash(c)).is_done() for c in bad)
    rows = [line.split()[1:4] for line in out.splitlines() if line.lstrip().startswith("digits")]
    assert rows == [["fedprox", "(mu=0.01)", "2"], ["fedprox", "(mu=0.1)", "2"]]  # one row per setting


def test_a_pool_is_sized_by_the_cores_this_process_may_use(monkeypatch):
    """``taskset -c 0`` on a 2-core machine: one core, so one thread per worker, not two on one core."""
    from fairfl_core.experiments import sweep

    monkeypatch.setattr(sweep.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 2)
    assert sweep.usable_cores() == 1
    monkeypatch.delattr(sweep.os, "sched_getaffinity")
    assert sweep.usable_cores() == 2  # no affinity on this platform: the machine's count
