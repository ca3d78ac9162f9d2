"""Every relative link of the front page, the changelog and the guides points at a file that exists, and a
link to a Markdown heading (``page.md#anchor``) at a heading that exists (GitHub's anchors)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
    ROOT / "tests" / "README.md",
    ROOT / "fairfl_core" / "algorithms" / "README.md",
    ROOT / "fairfl_core" / "papers" / "README.md",
    *sorted((ROOT / "fairfl_core" / "papers").glob("*/readings.md")),
]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def links(text: str) -> list[str]:
    """The targets of the Markdown links and images of ``text``, outside code blocks and code spans."""
    return _LINK.findall(_CODE.sub("", _FENCE.sub("", text)))


def anchors(text: str) -> set[str]:
    """GitHub's anchors of the headings of ``text``: lower case, punctuation dropped, spaces as hyphens, and a
    repeated anchor numbered (``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def _name(file: Path) -> str:
    return str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)


def broken(doc: Path) -> list[str]:
    """The relative links of ``doc`` whose file (or heading) does not exist, each with the reason."""
    bad = []
    for target in links(doc.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            bad.append(f"{target}: no file {_name(file)}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
            bad.append(f"{target}: no heading #{anchor} in {_name(file)}")
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_an_existing_file(doc):
    assert doc.exists(), f"{doc} is gone: update DOCS in {__file__}"
    assert not broken(doc), f"{_name(doc)} has broken links: {broken(doc)}"


def test_the_front_page_links_each_paper_and_every_guide():
    targets = {t.partition("#")[0] for t in links((ROOT / "README.md").read_text())}
    guides = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert guides | {"benchmarks/README.md", "CHANGELOG.md"} <= targets
    notebooks = {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks <= targets, f"notebooks the README does not link: {sorted(notebooks - targets)}"


def test_a_broken_link_or_heading_is_found(tmp_path):
    (tmp_path / "there.md").write_text("# A heading: `with code`\n\n## Twice\n\n## Twice\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](there.md) [ok](there.md#a-heading-with-code) [ok](there.md#twice-1) [web](https://x.org/y)\n"
        "`[not a link](nowhere.md)`\n```\n[in a block](nowhere.md)\n```\n"
        "[gone](missing.md) [bad anchor](there.md#nope) ![img](missing.png)\n"
    )
    assert [b.split(":")[0] for b in broken(doc)] == ["missing.md", "there.md#nope", "missing.png"]
