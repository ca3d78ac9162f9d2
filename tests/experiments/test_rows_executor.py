"""The rows executor (``run_sweep(..., executor="rows")``): the same run directories and numbers as the
inline executor, each run with its own store, status and resume, in one process or split over a pool."""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from fairfl_core.experiments import sweep
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash
from fairfl_core.experiments.outcome import SweepOutcome
from fairfl_core.experiments.sweep import run_sweep
from fairfl_core.sim.rows import RowsTrainer
from tests.experiments.conftest import digits_config
from tests.rounding import assert_close_records


def _configs() -> list[ExperimentConfig]:
    base = digits_config().to_dict()
    runs = [("fedavg", 0, {}), ("fedavg", 1, {}), ("fedprox", 0, {"mu": 0.1}), ("qffl", 0, {"q": 1.0})]
    out = []
    for name, seed, params in runs:
        d = apply_overrides(base, ["engine.dtype=float64"])
        d["algorithm"], d["seed"], d["name"] = {"name": name, "params": params}, seed, f"{name}-{seed}"
        out.append(ExperimentConfig.from_dict(d).validate())
    out.append(
        ExperimentConfig.from_dict(
            {**out[0].to_dict(), "train": {**out[0].to_dict()["train"], "lr": 1e6}, "name": "diverges"}
        ).validate()
    )
    return out


def _records(outcome) -> list:
    return [json.loads(line) for line in (outcome.result.path / "evals.jsonl").read_text().splitlines()]


def _numbers(outcome):
    drop = {"wall_time"}
    return [{k: v for k, v in r.items() if k not in drop} for r in _records(outcome)]


# Rows stack the runs' clients into one computation, the inline executor runs each alone: compared at the
# rounding bound of tests/rounding.py. digits: the longest sum is over at most its 1,437 training samples,
# through 7 reductions a local step (3 layers forward and back, the loss) for 6 rounds of 3 steps, and an
# evaluation.
BOUND = dict(terms=1437, depth=7 * (6 * 3 + 1))


@pytest.mark.parametrize("workers,stack", [(1, True), (2, True), (2, None)])
def test_rows_gives_every_run_the_numbers_of_the_inline_executor(tmp_path, workers, stack):
    configs = _configs()
    inline = run_sweep(configs, tmp_path / "inline", progress=False)
    rows = run_sweep(
        configs, tmp_path / "rows", executor="rows", workers=workers, stack=stack, progress=False
    )
    assert [o.hash for o in rows] == [o.hash for o in inline]
    assert [o.status for o in rows] == ["complete"] * 4 + ["diverged"]
    for a, b in zip(rows, inline, strict=True):
        assert_close_records(_numbers(a), _numbers(b), **BOUND, what=a.config.name)
    again = run_sweep(
        configs, tmp_path / "rows", executor="rows", workers=workers, stack=stack, progress=False
    )
    assert [o.result.summary for o in again] == [o.result.summary for o in rows]  # cached: nothing reruns


def test_rows_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"\['num_cpus'\] do not apply to executor='rows'"):
        run_sweep(_configs(), tmp_path, executor="rows", num_cpus=2)


def test_the_cli_runs_a_sweep_as_rows_and_names_stray_rows_flags(tmp_path, capsys):
    import yaml

    from fairfl_core.cli import main

    path = tmp_path / "sweep.yaml"
    config = {**digits_config(rounds=2).to_dict(), "sweep": {"seeds": [0, 1]}}
    path.write_text(yaml.safe_dump(config))
    assert main(["sweep", str(path), "--results", str(tmp_path / "r"), "--executor", "rows", "--stack"]) == 0
    assert len(list((tmp_path / "r").glob("*/summary.json"))) == 2
    assert main(["sweep", str(path), "--results", str(tmp_path / "s"), "--memory-gb", "1"]) == 2
    assert "--memory-gb only apply with --executor rows" in capsys.readouterr().err


def test_a_run_killed_mid_sweep_fails_it_promptly_naming_it_and_keeps_the_finished_runs(
    tmp_path, monkeypatch
):
    base = digits_config(rounds=4).to_dict()
    configs = [
        ExperimentConfig.from_dict({**base, "name": "short", "train": {**base["train"], "rounds": 1}}),
        ExperimentConfig.from_dict({**base, "name": "victim", "seed": 1}),
        ExperimentConfig.from_dict({**base, "name": "other", "seed": 2}),
    ]
    victim = f"victim ({config_hash(configs[1])})"
    calls = []
    train = RowsTrainer.train

    def killed(self, *args):  # the victim's thread exits abruptly in its second round's training
        if threading.current_thread().name == victim:
            calls.append(1)
            if len(calls) == 2:
                raise SystemExit("killed")
        return train(self, *args)

    monkeypatch.setattr(RowsTrainer, "train", killed)
    tick = time.monotonic()
    out = run_sweep(configs, tmp_path, executor="rows", workers=1, stack=True, progress=False)
    assert time.monotonic() - tick < 60  # not a hang
    assert [o.status for o in out] == ["complete", "failed", "failed"]
    assert (out[0].result.path / "summary.json").exists()
    assert all(f"run {victim} raised SystemExit: killed" in o.error for o in out[1:])


def test_pool_processes_split_the_memory_and_a_dead_worker_fails_its_unfinished_runs(tmp_path, monkeypatch):
    configs = _configs()[:4]
    run_sweep(configs[:1], tmp_path, progress=False)  # fedavg-0 finished before its worker died
    shares = []

    def shard(items, stacked, results_dir, progress, device, **rows):  # one pool process's work
        shares.append(rows["share"])
        if items[0][0] == 0:
            raise BrokenProcessPool("killed")
        return [(i, SweepOutcome(cfg, None, "ran")) for i, cfg in items]

    monkeypatch.setattr(sweep, "_rows_here", shard)
    monkeypatch.setattr(sweep.cf, "ProcessPoolExecutor", lambda workers, **_: cf.ThreadPoolExecutor(workers))
    out = sweep._rows(configs, str(tmp_path), False, None, 2, stack=True)
    assert shares == [2, 2]  # each of the 2 processes gets half the device's memory
    assert [o.status for o in out] == ["complete", "failed", "failed", "failed"]
    name = f"{configs[1].name} ({config_hash(configs[1])})"
    assert out[1].error.startswith(f"run {name}: its worker process died (BrokenProcessPool: killed)")
    assert [o.error for o in out[2:]] == ["ran", "ran"]
