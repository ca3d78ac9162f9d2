"""The rows executor (``run_sweep(..., executor="rows")``): the same run directories and numbers as the
inline executor, each run with its own store, status and resume, in one process or split over a pool."""

from __future__ import annotations

import json

import pytest

from fairfl_core.experiments.config import ExperimentConfig, apply_overrides
from fairfl_core.experiments.sweep import run_sweep
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
