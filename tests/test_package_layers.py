"""Packages by concern, in layers: a module imports only from layers below its own, at module level, inside a
function or under ``TYPE_CHECKING`` alike, so no import circle runs between packages. From the bottom: the
helpers that name nothing of federated learning; the data and the models; the engine (``sim``); client
selection and gossip; the algorithms; the experiments (configs, runner, sweeps); the report and the Flower
apps; the papers' folders (which fill the catalogue that whoever imports ``fairfl_core.papers`` loads: the
CLI, notebooks, tests); the CLI. Within a layer, no two modules import each other, directly or around a
circle (a package's ``__init__`` is its modules' parent, not a circle)."""

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


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` in the package at ``root`` (a package: its ``__init__``)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package at ``root`` → the package's modules it imports, wherever the import is;
    ``from package import module`` imports that module."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = {m for _, m in imported_modules(path) if m in modules}
        graph[name] = {m for m in found if not any(o.startswith(f"{m}.") for o in found)} - {name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                circles.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


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


def test_no_two_modules_import_each_other_around_a_circle():
    circles = import_circles(import_graph(PACKAGE))
    assert not circles, "\n".join(" → ".join(c) for c in circles)


def test_the_circle_finder_finds_a_circle_through_a_function_local_import(tmp_path):
    package = tmp_path / "fairfl_core"
    (package / "report").mkdir(parents=True)
    (package / "report" / "__init__.py").write_text("from fairfl_core.report import a\n")
    (package / "report" / "a.py").write_text("from fairfl_core.report.b import f\n")
    (package / "report" / "b.py").write_text("def f():\n    from fairfl_core.report.c import g\n")
    (package / "report" / "c.py").write_text("from fairfl_core.report import a, stats\n")
    (package / "report" / "stats.py").write_text("")
    graph = import_graph(package)
    assert graph["fairfl_core.report.c"] == {"fairfl_core.report.a", "fairfl_core.report.stats"}
    assert import_circles(graph) == [["fairfl_core.report.a", "fairfl_core.report.b", "fairfl_core.report.c"]]
