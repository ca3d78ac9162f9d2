"""Provenance of a run: the versions of torch, numpy and fairfl and the git commit of the code that ran it.

Every run's ``summary.json`` records :func:`provenance` under ``"provenance"``, so a result can be traced to
the code and libraries that produced it. It is not part of the config, so it never changes a run's hash.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

import fairfl_core

__all__ = ["git_commit", "provenance"]

PACKAGE_DIR = Path(__file__).resolve().parent


def git_commit(package_dir: Path = PACKAGE_DIR) -> str | None:
    """Short SHA of the git checkout that holds ``package_dir`` as its top-level ``fairfl_core`` folder, with
    ``-dirty`` when tracked files have uncommitted changes (untracked files do not count). ``None`` when the
    package is not in a git checkout (e.g. installed from a wheel) or git is absent."""

    def git(*args: str) -> str:
        # GIT_OPTIONAL_LOCKS=0: `git status` must not take the index lock a concurrent commit needs.
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        done = subprocess.run(
            ["git", *args], cwd=package_dir, env=env, capture_output=True, text=True, timeout=30, check=True
        )
        return done.stdout.strip()

    try:
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        if top / package_dir.name != package_dir.resolve():
            return None  # e.g. a site-packages copy inside some other repository's tree
        sha = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha


@lru_cache(maxsize=1)
def _provenance() -> dict[str, Any]:
    return {
        "fairfl": fairfl_core.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "git_commit": git_commit(),
    }


def provenance() -> dict[str, Any]:
    """``{"fairfl", "torch", "numpy": versions, "git_commit": git_commit()}``, computed once per process."""
    return dict(_provenance())
