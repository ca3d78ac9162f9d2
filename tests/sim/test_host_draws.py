"""One set of numbers per config and seed on every device (#29): every random draw of the package is made by
a seeded CPU generator (numpy's counter-based streams, or ``torch.Generator()`` on the CPU) and only its
result is moved to the engine's device. CUDA's generators draw other numbers than the CPU's, so a draw on the
engine's device would make the numbers depend on the hardware. CI has no GPU, so this scans the source."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "fairfl_core"
TORCH_DRAWS = {"rand", "randn", "randint", "randperm", "bernoulli", "multinomial", "normal", "rand_like"}


def _torch_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "torch"
        ):
            yield node.func.attr, node


def offences(source: str, where: str) -> list[str]:
    found = []
    for name, call in _torch_calls(ast.parse(source)):
        keywords = {k.arg for k in call.keywords}
        at = f"{where}:{call.lineno} torch.{name}"
        if name == "Generator" and (call.args or "device" in keywords):
            found.append(f"{at}: a generator on a device other than the CPU")
        if name in TORCH_DRAWS and ("generator" not in keywords or "device" in keywords):
            found.append(f"{at}: a draw without a seeded CPU generator, or on a device")
    return found


def test_every_torch_draw_uses_a_cpu_generator():
    found = [
        o for p in sorted(PACKAGE.rglob("*.py")) for o in offences(p.read_text(), str(p.relative_to(PACKAGE)))
    ]
    assert not found, found


def test_the_scan_flags_a_draw_on_the_device():
    """The draw that made CPU and CUDA runs differ (``sim/batches.py`` before #29) is flagged twice."""
    bad = "gen = torch.Generator(device=device)\nkeys = torch.rand((3, 4), generator=gen, device=device)\n"
    assert len(offences(bad, "old")) == 2
    assert offences("keys = torch.rand((3, 4), generator=torch.Generator().manual_seed(0))\n", "new") == []
