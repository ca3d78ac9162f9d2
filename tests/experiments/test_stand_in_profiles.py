"""A missing data set is resolved when configs are built: the catalogue is the same on every machine, and a
profile runs its labelled stand-in where the real files are absent."""

import os
import subprocess
import sys
from pathlib import Path

from fairfl_core.data.stand_ins import FILES
from fairfl_core.experiments.profiles import experiment_configs, get_profile

ROOT = Path(__file__).parents[2]


def _with_every_data_set(root: Path) -> Path:
    """Empty stand-ins of every data set's files under ``root``."""
    for groups in FILES.values():
        for pattern, *_ in groups:
            path = root / pattern.replace("*", "x")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
    return root


def _catalogue(data_root: Path) -> str:
    code = "from fairfl_core.experiments.profiles import EXPERIMENTS as E; print(repr(sorted(E.items())))"
    env = {**os.environ, "FAIRFL_DATA": str(data_root), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout


def test_the_catalogue_is_the_same_whatever_data_is_here(tmp_path):
    assert _catalogue(tmp_path / "none") == _catalogue(_with_every_data_set(tmp_path / "all"))


def test_a_profile_runs_the_stand_in_only_where_the_data_set_is_absent(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRFL_DATA", str(tmp_path / "none"))
    (absent,) = {c.data.stand_in for c in experiment_configs("fedeba_table1_cifar10", "smoke")}
    assert absent == "CIFAR-10" and "stand-in" in get_profile("fedeba_table1_cifar10", "quick").description
    monkeypatch.setenv("FAIRFL_DATA", str(_with_every_data_set(tmp_path / "all")))
    present = experiment_configs("fedeba_table1_cifar10", "smoke")
    assert {c.data.name for c in present} == {"cifar10"} and not any(c.data.stand_in for c in present)
