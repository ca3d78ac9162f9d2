"""Every figure a notebook saves states what ran: each ``save_figure(`` call passes ``caption=``."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def _uncaptioned(source: str) -> list[str]:
    """The ``save_figure(...)`` calls of ``source`` without a ``caption=`` argument of their own (one inside
    a nested call does not count)."""
    missing = []
    start = source.find("save_figure(")
    while start >= 0:
        i, depth, own = start + len("save_figure("), 1, False
        while depth and i < len(source):
            if source[i] in "([{":
                depth += 1
            elif source[i] in ")]}":
                depth -= 1
            elif depth == 1 and source.startswith("caption=", i) and not source[i - 1].isidentifier():
                own = True
            i += 1
        if not own:
            missing.append(source[start:i])
        start = source.find("save_figure(", i)
    return missing


def test_the_check_finds_a_call_without_its_own_caption():
    assert _uncaptioned('report.save_figure(fig, out, "a", caption=report.caption("t", n, p, s))') == []
    assert _uncaptioned('save_figure(fig,\n    out, "a")\nsave_figure(g, out, "b", caption="c")') == [
        'save_figure(fig,\n    out, "a")'
    ]
    nested = 'save_figure(plot(r, title=f(caption="x")), out, "a", my_caption="y")'
    assert _uncaptioned(nested) == [nested]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_a_notebook_saves_has_a_caption(path):
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    missing = [call for source in cells for call in _uncaptioned(source)]
    assert not missing, f"{path.name}: save_figure without caption=: {missing}"
