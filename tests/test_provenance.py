import json
import shutil
import subprocess

import numpy as np
import pytest
import torch

import fairfl_core
from fairfl_core import provenance as prov
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.runner import run_experiment
from tests.experiments.conftest import digits_config


def _git(repo, *args: str) -> str:
    cmd = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A git checkout with a committed top-level ``fairfl_core`` package."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    (repo / "fairfl_core").mkdir(parents=True)
    (repo / "fairfl_core" / "__init__.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    return repo


def test_git_commit_is_the_short_sha_and_dirty_only_after_changes_to_tracked_files(checkout):
    package, sha = checkout / "fairfl_core", _git(checkout, "rev-parse", "--short", "HEAD")
    assert prov.git_commit(package) == sha
    (package / "new.py").write_text("y = 1\n")  # untracked: still clean
    assert prov.git_commit(package) == sha
    (package / "__init__.py").write_text("x = 2\n")
    assert prov.git_commit(package) == f"{sha}-dirty"
    _git(checkout, "add", "fairfl_core/__init__.py")  # staged but not committed
    assert prov.git_commit(package) == f"{sha}-dirty"
    _git(checkout, "commit", "-q", "-m", "second")
    assert prov.git_commit(package) == _git(checkout, "rev-parse", "--short", "HEAD") != sha


def test_git_commit_is_none_outside_a_checkout_of_the_package_or_without_git(tmp_path, checkout, monkeypatch):
    plain = tmp_path / "plain" / "fairfl_core"
    plain.mkdir(parents=True)
    assert prov.git_commit(plain) is None
    copy = checkout / "venv" / "site-packages" / "fairfl_core"  # an installed copy inside another checkout
    copy.mkdir(parents=True)
    assert prov.git_commit(copy) is None
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert prov.git_commit(checkout / "fairfl_core") is None


def test_provenance_holds_the_versions_and_commit_and_is_computed_once(monkeypatch):
    calls = []
    monkeypatch.setattr(prov, "git_commit", lambda: calls.append(1) or "abc1234-dirty")
    prov._provenance.cache_clear()
    try:
        first = prov.provenance()
        first["torch"] = "changed by a caller"
        assert prov.provenance() == {
            "fairfl": fairfl_core.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "git_commit": "abc1234-dirty",
        }
        assert calls == [1]
    finally:
        prov._provenance.cache_clear()


def test_every_run_summary_records_the_provenance_and_the_config_hash_is_unchanged(tmp_path):
    cfg = digits_config(rounds=2)
    res = run_experiment(cfg, tmp_path, progress=False)
    stored = json.loads((res.path / "summary.json").read_text())
    assert stored["provenance"] == res.summary["provenance"] == prov.provenance()
    assert res.path.name == config_hash(cfg)
    assert "provenance" not in json.loads((res.path / "config.json").read_text())
