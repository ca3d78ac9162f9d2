"""Packages by concern, in layers: a module imports only from layers below its own, at module level, inside a
function or under ``TYPE_CHECKING`` alike, so no import circle runs between packages. From the bottom: the
helpers that name nothing of federated learning; the data and the models; the engine (``sim``); client
selection and gossip; the algorithms; the experiments (configs, runner, sweeps); the report and the Flower
apps; the papers' folders (which fill the catalogue that whoever imports ``fairfl_core.papers`` loads: the
CLI, notebooks, tests); the CLI."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "fairfl_core"
LAYERS = [
    ["dataclass_io", "provenance", "metrics"],
    ["data", "models"],
    ["numbers_version", "sim"],
    ["selection", "gossip"],
    ["algorithms"],
    ["experiments"],
    ["report", "flower"],
    ["papers"],
    ["cli"],
]
RANK = {unit: level for level, units in enumerate(LAYERS) for unit in units}


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


def unit(name: str) -> str | None:
    """The package or top-level module of ``fairfl_core`` a dotted module name belongs to (None: outside)."""
    parts = name.split(".")
    return parts[1] if parts[0] == "fairfl_core" and len(parts) > 1 else None


def upward_imports(root: Path) -> list[str]:
    """Every import in the package at ``root`` of a unit in the same or a higher layer than the importer's:
    ``file:line imports name (layer a → layer b)``."""
    offending = []
    for path in sorted(root.rglob("*.py")):
        own = path.relative_to(root).parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        for line, name in imported_modules(path):
            other = unit(name)
            if other is None or other == own or other not in RANK:
                continue
            if RANK[other] >= RANK[own]:
                offending.append(
                    f"{path.relative_to(root.parent)}:{line} imports {name} "
                    f"(layer {RANK[own]} {own} → layer {RANK[other]} {other})"
                )
    return sorted(set(offending))


def test_every_unit_of_the_package_has_a_layer():
    units = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    units -= {"__init__", "__pycache__"}
    assert units == set(RANK), (
        f"give a layer to {sorted(units - set(RANK))}; gone: {sorted(set(RANK) - units)}"
    )


def test_every_import_points_down_the_layers():
    offending = upward_imports(PACKAGE)
    assert not offending, "\n".join(offending)


def test_the_walker_sees_function_local_and_type_checking_imports_and_refuses_them(tmp_path):
    package = tmp_path / "fairfl_core"
    (package / "sim").mkdir(parents=True)
    (package / "sim" / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from fairfl_core.experiments.config import TrainConfig\n"
        "def f():\n    from fairfl_core.report.claims import Claim\n    return Claim\n"
        "from fairfl_core.data import build\n"
    )
    found = upward_imports(package)
    assert len(found) == 4 and all("sim/m.py" in line for line in found)  # module and name of lines 3 and 5
    assert any(":3 imports fairfl_core.experiments.config " in line for line in found)
    assert any(":5 imports fairfl_core.report.claims " in line for line in found)
