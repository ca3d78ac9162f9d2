"""Keep the tables that ``README.md`` shows in step with the published CSVs they come from.

A README block between ``<!-- published: <csv path> -->`` and ``<!-- /published -->`` is generated from
that CSV (a :func:`fairfl_core.report.tables.results_table`, as published in ``published/<profile>/``) by
:func:`compact_table`: one row per method, each metric's cell reading "reproduced (paper)". A block between
``<!-- claims -->`` and ``<!-- /claims -->`` is the main number over the published pages
(:func:`fairfl_core.report.headline.markdown`), and one between ``<!-- scales -->`` and ``<!-- /scales -->``
how the claims decided at both the paper's and a reduced scale compare
(:func:`fairfl_core.report.scale_agreement.markdown`). A block between ``<!-- readings -->`` and
``<!-- /readings -->`` (``docs/readings.md``) lists every paper folder's ``readings.md`` by its heading
(:func:`readings_index`). Run ``python -m fairfl_core.report.readme`` after publishing or adding a paper to
rewrite every block of ``README.md`` and ``docs/readings.md``; the test suite checks that both agree with
what they are generated from, so a hand edit or a stale copy fails.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pandas as pd

__all__ = ["compact_table", "readings_index", "sync_readme"]

_BLOCK = re.compile(r"(<!-- published: (?P<csv>\S+) -->\n)(?P<body>.*?)(<!-- /published -->)", re.DOTALL)
_CLAIMS = re.compile(r"(<!-- claims -->\n)(?P<body>.*?)(<!-- /claims -->)", re.DOTALL)
_SCALES = re.compile(r"(<!-- scales -->\n)(?P<body>.*?)(<!-- /scales -->)", re.DOTALL)
_READINGS = re.compile(r"(<!-- readings -->\n)(?P<body>.*?)(<!-- /readings -->)", re.DOTALL)
PAPERS_DIR = Path(__file__).resolve().parents[1] / "papers"
TARGETS = ("README.md", "docs/readings.md")  # the files ``python -m fairfl_core.report.readme`` rewrites
_REPRODUCED = " reproduced"


def _cell(value) -> str:
    return "" if pd.isna(value) else str(value).strip()


def compact_table(csv: str | Path) -> str:
    """A Markdown table of a published results CSV: method, seeds (with the diverged count in brackets),
    then per metric "reproduced (paper)"."""
    table = pd.read_csv(csv, dtype=str)
    metrics = [c[: -len(_REPRODUCED)] for c in table.columns if c.endswith(_REPRODUCED)]
    if "method" not in table.columns or not metrics:
        raise ValueError(
            f"{csv} is not a results table: it needs a 'method' column and '<metric> reproduced' columns"
        )
    lines = [
        "| " + " | ".join(["method", "seeds (diverged)", *(f"{m} (paper)" for m in metrics)]) + " |",
        "|" + "---|" * (2 + len(metrics)),
    ]
    for _, row in table.iterrows():
        seeds = _cell(row.get("seeds"))
        diverged = _cell(row.get("diverged"))
        if diverged:
            seeds += f" ({diverged.split(' of ')[0]})"
        cells = []
        for m in metrics:
            ours, paper = _cell(row[f"{m}{_REPRODUCED}"]), _cell(row.get(f"{m} paper"))
            cells.append(f"{ours} ({paper})" if paper else ours)
        lines.append("| " + " | ".join([_cell(row["method"]), seeds, *cells]) + " |")
    return "\n".join(lines) + "\n"


def readings_index(page: Path, papers: Path = PAPERS_DIR) -> str:
    """A Markdown list of every paper folder's ``readings.md`` (its heading without "Readings: "), linked
    relative to ``page``'s folder, in folder order."""
    lines = []
    for path in sorted(papers.glob("*/readings.md")):
        heading = path.read_text().split("\n", 1)[0].removeprefix("# ").removeprefix("Readings: ")
        link = Path(os.path.relpath(path.resolve(), page.resolve().parent)).as_posix()
        lines.append(f"- [{heading}]({link})")
    return "\n".join(lines) + "\n"


def sync_readme(readme: str | Path, root: str | Path | None = None) -> tuple[str, list[str]]:
    """The README text with every published block regenerated (CSV paths relative to ``root``, by default
    the README's folder), and the CSV paths it used. Raises ``FileNotFoundError`` naming a missing CSV."""
    path = Path(readme)
    base = Path(root) if root is not None else path.parent
    used: list[str] = []

    def _regenerate(match: re.Match) -> str:
        csv = base / match["csv"]
        if not csv.exists():
            raise FileNotFoundError(
                f"{path} cites {match['csv']}, which does not exist; publish it (./reproduce.sh --publish) "
                "or remove the block"
            )
        used.append(match["csv"])
        return match.group(1) + compact_table(csv) + match.group(4)

    text = _BLOCK.sub(_regenerate, path.read_text())
    if _CLAIMS.search(text):
        from fairfl_core.report.headline import markdown

        claims = markdown(base / "published")
        text = _CLAIMS.sub(lambda m: m.group(1) + claims + m.group(3), text)
        used.append("published/ (claims)")
    if _SCALES.search(text):
        from fairfl_core.report.scale_agreement import markdown as scales_markdown

        scales = scales_markdown(base / "published")
        text = _SCALES.sub(lambda m: m.group(1) + scales + m.group(3), text)
        used.append("published/ (scales)")
    if _READINGS.search(text):
        index = readings_index(path)
        text = _READINGS.sub(lambda m: m.group(1) + index + m.group(3), text)
        used.append("fairfl_core/papers/*/readings.md")
    return text, used


if __name__ == "__main__":
    repo = Path(__file__).resolve().parents[2]
    for target in [Path(a) for a in sys.argv[1:]] or [repo / t for t in TARGETS]:
        try:
            text, used = sync_readme(target, root=repo if len(sys.argv) == 1 else None)
        except (FileNotFoundError, ValueError) as e:
            sys.exit(f"readme: {e}")
        target.write_text(text)
        print(f"{target}: regenerated {len(used)} block(s) from {', '.join(used) or 'nothing'}")
