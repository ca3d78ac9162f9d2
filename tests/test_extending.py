"""The worked example of ``docs/extending.md``, run from the document itself: its blocks are written into a
copy of the repository, where normal discovery finds the sixth paper; the bundle contract holds, the
notebook runs through ``reproduce.sh --only toy`` on 3 seeds so that a verdict is computed, and the paper's
own tests pass. Leaving out any one of the guide's files makes one of these steps fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "extending.md"
_BLOCK = re.compile(r"^```(\w+) file=(\S+)( tags=\S+)?\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str, str]]:
    """(path, tags, text) of every block of the guide that names a file, in order."""
    return [
        (path, (tags or "").removeprefix(" tags="), text)
        for _, path, tags, text in _BLOCK.findall(GUIDE.read_text())
    ]


def files() -> list[str]:
    """The files the guide writes, in order (a notebook's cells are one file)."""
    return list(dict.fromkeys(path for path, _, _ in blocks()))


def write_guide(root: Path, leave_out: str | None = None) -> None:
    """Write the guide's files under ``root``, all but ``leave_out``."""
    cells: dict[str, list] = {}
    for path, tags, text in blocks():
        if path == leave_out:
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".ipynb"):
            cell = nbformat.v4.new_code_cell(text.rstrip("\n"))
            if tags:
                cell.metadata["tags"] = tags.split(",")
            cells.setdefault(path, []).append(cell)
        else:
            target.write_text(text)
    for path, notebook_cells in cells.items():
        notebook = nbformat.v4.new_notebook(cells=notebook_cells)
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.validate(notebook)
        nbformat.write(notebook, root / path)


def scratch_repository(root: Path) -> Path:
    """A copy of what runs a paper (the package, the scripts, ``reproduce.sh``), with no notebook of its own
    and this checkout's environment; its package is the one imported there (``PYTHONPATH``)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "fairfl_core", root / "fairfl_core", ignore=ignore)
    shutil.copytree(ROOT / "scripts", root / "scripts", ignore=ignore)
    shutil.copy2(ROOT / "reproduce.sh", root / "reproduce.sh")
    (root / "notebooks").mkdir()
    (root / ".venv").symlink_to(ROOT / ".venv")
    return root


def run(root: Path, *command: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


CHECK = "import fairfl_core.papers as p; p.check_bundle(p.get_paper('toy'))"


def test_the_guide_writes_a_paper_folder_its_notebook_and_its_tests():
    assert files() == [
        "fairfl_core/papers/toy/__init__.py",
        "fairfl_core/papers/toy/experiments.py",
        "fairfl_core/papers/toy/results.csv",
        "fairfl_core/papers/toy/claims.py",
        "fairfl_core/papers/toy/readings.md",
        "notebooks/toy.ipynb",
        "tests/papers/toy/test_claims.py",
    ]


@pytest.mark.slow
def test_a_sixth_paper_from_the_guide_runs_end_to_end_and_computes_a_verdict(tmp_path):
    root = scratch_repository(tmp_path / "repo")
    write_guide(root)
    checked = run(root, sys.executable, "-c", CHECK)
    assert checked.returncode == 0, checked.stderr
    reproduced = run(root, "./reproduce.sh", "--only", "toy", "--no-setup", "--set", "seeds=[0, 1, 2]")
    assert reproduced.returncode == 0, reproduced.stdout + reproduced.stderr
    out = root / "reports" / "smoke" / "toy"
    claims = pd.read_csv(out / "claims.csv")
    assert claims["claim"].tolist() == ["FedProx stays within 5 points of FedAvg"]
    assert claims["test"].iloc[0].startswith("paired t")  # a seed's runs share partition and streams
    assert claims["verdict"].iloc[0] != "not decided"  # 3 seeds a side: a verdict
    table = pd.read_csv(out / "toy_fedprox.csv")
    assert table.loc[table["method"] == "FedAvg", "Global Acc. paper"].tolist() == ["86.49 ± 0.09"]
    tested = run(root, sys.executable, "-m", "pytest", "tests/papers/toy", "-q", "-p", "no:cacheprovider")
    assert tested.returncode == 0, tested.stdout


@pytest.mark.parametrize("left_out", files())
def test_leaving_out_any_file_of_the_guide_fails(left_out, tmp_path):
    root = scratch_repository(tmp_path / "repo")
    write_guide(root, leave_out=left_out)
    if left_out.startswith("notebooks/"):
        failed = run(root, "./reproduce.sh", "--only", "toy", "--no-setup")
        assert failed.returncode != 0 and "no notebook matched --only 'toy'" in failed.stderr
    elif left_out.startswith("tests/"):
        failed = run(root, sys.executable, "-m", "pytest", "tests/papers/toy", "-q", "-p", "no:cacheprovider")
        assert failed.returncode != 0  # no tests: the paper's formulas and claims are untested
    else:
        failed = run(root, sys.executable, "-c", CHECK)
        assert failed.returncode != 0, left_out
        assert re.search(
            r"readings\.md|results\.csv|unknown experiment 'toy_fedprox'|no paper 'toy'", failed.stderr
        ), failed.stderr
