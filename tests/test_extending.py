"""The worked example of ``docs/extending.md``, run from the document itself: a sixth paper is one
experiment module, one ``Paper`` bundle and one notebook, and the notebook runs at smoke."""

import re
from pathlib import Path

import nbformat
import pytest

from fairfl_core.experiments.profiles import EXPERIMENTS
from fairfl_core.report.bundle import PAPERS

GUIDE = Path(__file__).parents[1] / "docs" / "extending.md"


def _blocks() -> list[tuple[str, str]]:
    """(first line, code) of every Python block of the guide."""
    return [
        (code.splitlines()[0], code) for code in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    ]


@pytest.fixture
def toy_paper():
    for head, code in _blocks():
        if head.startswith("# file:"):
            exec(compile(code, f"{GUIDE}: {head}", "exec"), {})
    yield PAPERS["toy"]
    PAPERS.pop("toy")
    EXPERIMENTS.pop("toy_fedprox")


def test_the_guide_names_the_files_of_a_paper():
    heads = [head for head, _ in _blocks()]
    assert heads == [
        "# file: fairfl_core/experiments/papers/toy.py",
        "# file: fairfl_core/report/toy.py",
        "# notebook cell: parameters",
        "# notebook cell",
    ]


def test_a_sixth_paper_is_a_bundle_and_a_notebook_that_runs_at_smoke(toy_paper, tmp_path):
    assert toy_paper.planned("smoke") == (["toy_fedprox"], {})
    cells = [code for head, code in _blocks() if head.startswith("# notebook cell")]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.cells[0].metadata["tags"] = ["parameters"]
    nbformat.validate(notebook)
    namespace = {}
    exec(compile(cells[0], "parameters", "exec"), namespace)
    namespace.update(
        results_dir=str(tmp_path / "results"), output_dir=str(tmp_path / "reports"), device="cpu"
    )
    exec(compile(cells[1], "notebook", "exec"), namespace)
    claims = namespace["claims"]
    assert claims["claim"].tolist() == ["FedProx stays within 5 points of FedAvg"]
    assert claims["result"].iloc[0] == "not decided"  # smoke runs one seed: no verdict
    assert claims["kind"].iloc[0] == "paper" and claims["test"].iloc[0] == "not decided (1 seed)"
    assert claims["verdict"].iloc[0] == "not decided"  # the page's verdict, written by save_claims
    assert (tmp_path / "reports" / "toy_fedprox.csv").is_file() and (
        tmp_path / "reports" / "claims.csv"
    ).is_file()
