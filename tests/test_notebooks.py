"""Notebooks are committed clean (no outputs) and parameterised for papermill; reproduce.sh arguments."""

import ast
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PARAMETERS = {"profile", "results_dir", "device", "seeds", "output_dir"}


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"


def test_every_notebook_is_a_registered_page_and_every_page_has_its_notebook():
    """``notebooks/[NN_]<name>.ipynb`` runs the bundle ``<name>`` (``python -m fairfl_core.papers`` lists
    them, ``reproduce.sh`` runs only those) and reaches its runs, tables and claims through ``Paper.run``."""
    from fairfl_core.papers import PAPERS

    names = {re.sub(r"^\d\d_", "", path.stem): path for path in NOTEBOOKS}
    assert sorted(names) == sorted(PAPERS)
    for name, path in names.items():
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert f'get_paper("{name}")' in code and ".run(" in code, f"{path.name} does not run its bundle"
    listed = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-m", "fairfl_core.papers"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert [line.split("\t") for line in listed.splitlines()] == [[n, p.title] for n, p in PAPERS.items()]


def test_reproduce_sh_runs_a_notebook_only_as_a_registered_page(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(
        ROOT, root, ignore=shutil.ignore_patterns(".venv", "results", "reports", "published", ".git")
    )
    (root / ".venv").symlink_to(ROOT / ".venv")
    shutil.copy(ROOT / "notebooks" / "client_dropout.ipynb", root / "notebooks" / "sixth.ipynb")
    out = subprocess.run(
        ["bash", "reproduce.sh", "--only", "sixth", "--no-setup"], cwd=root, capture_output=True, text=True
    )
    assert out.returncode == 1
    assert (
        "notebook sixth is no registered page: register a bundle named 'sixth' in fairfl_core/papers/"
        in out.stderr
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, (
        f"{path.name}: cells {dirty} carry outputs; clear them (jupyter nbconvert --clear-output)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_is_the_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    assert tagged == [0], f"{path.name}: the first code cell (and only it) must be tagged 'parameters'"
    assigned = {
        t.id: ast.literal_eval(node.value)
        for node in ast.parse(code[0].source).body
        if isinstance(node, ast.Assign)
        for t in node.targets
    }
    assert PARAMETERS <= set(assigned), (
        f"{path.name}: parameters cell lacks {sorted(PARAMETERS - set(assigned))}"
    )
    assert assigned["profile"] == "smoke", (
        "the default profile must be smoke (CI runs notebooks as committed)"
    )
    for key in ("results_dir", "output_dir"):
        target = (path.parent / assigned[key]).resolve()
        top = target.relative_to(ROOT).parts[0]
        assert top in ("results", "reports"), f"{path.name}: {key} must point under results/ or reports/"


def _reproduce(*args):
    return subprocess.run(
        ["bash", str(ROOT / "reproduce.sh"), *args], capture_output=True, text=True, timeout=30
    )


def test_reproduce_sh_rejects_bad_arguments_before_doing_anything():
    bad = _reproduce("--profile", "huge")
    assert bad.returncode == 2 and "--profile must be smoke, quick or paper" in bad.stderr
    unknown = _reproduce("--fast")
    assert unknown.returncode == 2 and "unknown argument '--fast'" in unknown.stderr
    bad_set = _reproduce("--set", "columns")
    assert bad_set.returncode == 2 and "--set needs NAME=VALUE" in bad_set.stderr
    usage = _reproduce("--help")
    assert usage.returncode == 0 and "--profile" in usage.stdout


def test_reproduce_sh_refuses_to_publish_from_a_tree_with_uncommitted_changes(tmp_path):
    shutil.copy(ROOT / "reproduce.sh", tmp_path / "reproduce.sh")
    (tmp_path / "tracked.txt").write_text("a")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    (tmp_path / "tracked.txt").write_text("b")
    done = subprocess.run(
        ["bash", str(tmp_path / "reproduce.sh"), "--publish"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2 and "--publish needs a tree without uncommitted changes" in done.stderr
    assert not (tmp_path / "reports").exists()  # refused before anything ran


def test_no_notebook_types_a_number_the_paper_results_hold():
    """A paper's printed numbers are read from ``paper_results/*.csv`` (``report.Paper``), never typed: not in
    a code line that names the paper, and not anywhere in a markdown cell."""
    import csv

    printed = set()
    for path in (ROOT / "fairfl_core" / "paper_results").glob("*.csv"):
        with path.open() as f:
            printed |= {
                f"{float(row['value']):.2f}" for row in csv.DictReader(f) if abs(float(row["value"])) >= 1
            }
    typed = [
        (path.name, number)
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        for line in cell.source.splitlines()
        if cell.cell_type == "markdown" or "paper" in line
        for number in re.findall(r"(?<![\w.])\d+\.\d\d(?!\d)", line)
        if number in printed
    ]
    assert not typed, f"paper numbers typed in notebooks: {typed}; read them from the paper's bundle"
