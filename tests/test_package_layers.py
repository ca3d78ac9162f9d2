"""Packages by concern: the layers below ``report`` (experiments, the engine, algorithms, data, models,
selection, metrics) never import it, and no layer below ``papers`` (``report`` and ``flower`` included)
imports ``papers``, at module level or inside a function: the papers' folders import the generic layers,
and the catalogue they fill is loaded by whoever imports ``fairfl_core.papers``
(the CLI, notebooks, tests)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "fairfl_core"
BELOW_REPORT = ["experiments", "sim", "algorithms", "data", "models", "selection", "gossip", "metrics"]
BELOW_PAPERS = [*BELOW_REPORT, "report", "flower", "dataclass_io.py", "numbers_version.py", "provenance.py"]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (absolute names), with the line, wherever the import statement is."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _files(part: str) -> list[Path]:
    root = PACKAGE / part
    return [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))


def importers(part: str, layer: str) -> list[str]:
    """Every import of ``fairfl_core.<layer>`` or a module of it in ``part``: ``file:line imports name``."""
    package = f"fairfl_core.{layer}"
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in _files(part)
        for line, name in imported_modules(path)
        if name == package or name.startswith(f"{package}.")
    ]


@pytest.mark.parametrize("part", BELOW_REPORT)
def test_no_layer_below_report_imports_it(part):
    offending = importers(part, "report")
    assert not offending, "\n".join(offending)


@pytest.mark.parametrize("part", BELOW_PAPERS)
def test_no_layer_below_papers_imports_them(part):
    offending = importers(part, "papers")
    assert not offending, "\n".join(offending)


def test_the_walker_sees_function_local_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from fairfl_core.report.claims import Claim\n    return Claim\n")
    assert (2, "fairfl_core.report.claims") in imported_modules(module)
