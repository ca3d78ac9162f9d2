"""One process writes a run at a time (``RunStore.computing``): two processes started on the same run
while a third holds it both wait, then one computes it and the other reuses it, its records written once;
a lock dies with its process; a rows run does not wait (its thread holds the meeting's baton) but fails,
naming the process; a file system without locks writes the run unlocked, with a warning."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.runner import run_experiment
from fairfl_core.experiments.store import RecoveryWarning, RunBusy, RunStore
from fairfl_core.sim.rows import RowsBatcher
from tests.experiments.conftest import digits_config

ROOT = Path(__file__).parents[2]
HOLD = (
    "import sys, time\n"
    "from fairfl_core.experiments.store import RunStore\n"
    "with RunStore(sys.argv[1]).computing():\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.readline()\n"
)


def _hold(run_dir: Path) -> subprocess.Popen:
    """A process that holds ``run_dir``'s lock until a line reaches its stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)


def test_two_processes_on_one_run_wait_then_one_computes_it_and_the_other_reuses_it(tmp_path):
    cfg = digits_config()
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg.to_dict()))
    results = tmp_path / "results"
    run_dir = results / config_hash(cfg)
    holder = _hold(run_dir)
    logs = [tmp_path / f"err{i}.txt" for i in range(2)]
    cmd = [sys.executable, "-m", "fairfl_core.cli", "run", str(config), "--results", str(results), "--quiet"]
    runs = [
        subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
        )
        for log in logs
    ]
    waiting = f"{run_dir}: waiting for process {holder.pid}, which is computing this run"
    _wait_for(lambda: all(waiting in log.read_text() for log in logs), "both runs say they wait")
    assert not (run_dir / "rounds.jsonl").exists()  # nothing written while the holder has the run
    holder.communicate("\n", timeout=60)
    outs = [p.communicate(timeout=300)[0] for p in runs]
    assert [p.returncode for p in runs] == [0, 0], [log.read_text()[-2000:] for log in logs]
    assert outs[0] == outs[1]  # the same summary: the one computed, the other read back
    rounds = [r["round"] for r in RunStore(run_dir).records("rounds")]
    assert rounds == list(range(1, cfg.train.rounds + 1))  # each round written once
    assert not (run_dir / ".lock").read_text()  # no holder left


def test_a_lock_is_released_when_its_process_dies(tmp_path):
    holder = _hold(tmp_path / "run")
    with pytest.raises(RunBusy, match=f"process {holder.pid} is computing this run"):
        with RunStore(tmp_path / "run").computing(wait=False):
            pass
    holder.kill()
    holder.wait(timeout=60)
    with RunStore(tmp_path / "run").computing(wait=False):
        assert (tmp_path / "run" / ".lock").read_text() == str(os.getpid())


def test_a_rows_run_fails_naming_the_process_instead_of_waiting(tmp_path):
    cfg = digits_config()
    holder = _hold(tmp_path / config_hash(cfg))
    try:
        with pytest.raises(RunBusy, match=f"process {holder.pid} is computing this run; run again"):
            run_experiment(cfg, tmp_path, progress=False, rows=RowsBatcher())
    finally:
        holder.communicate("\n", timeout=60)
    assert run_experiment(cfg, tmp_path, progress=False).status == "complete"  # free again: computed


def test_a_file_system_without_locks_writes_the_run_unlocked_and_says_so(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    why = re.escape(f"cannot lock the run ({os.strerror(errno.ENOLCK)}); it is written unlocked")
    with pytest.warns(RecoveryWarning, match=why):
        result = run_experiment(digits_config(), tmp_path, progress=False)
    assert result.status == "complete"
