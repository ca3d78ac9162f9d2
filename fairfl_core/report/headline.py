"""The package's main number: per paper, how many of its claims are decided, at which scale, and how they came
out, from the published pages (``published/<profile>/<page>/``).

A paper's claims are the paper rows (``kind`` paper) of the counted claims tables of its pages
(:func:`~fairfl_core.report.index.paper_pages`), one per claim and experiment (per dataset in a table
without an experiment column: a claim not run at a profile names the paper's column, one that ran its data's
label). A claim decided on a page of the ``paper`` profile supersedes its row on the ``quick`` page (the
quick page says so, :func:`~fairfl_core.report.index.superseded`). Each claim counts under its ``verdict``:
decided at the paper's scale (all its rounds, its model, real data:
:func:`~fairfl_core.report.index.at_paper_scale`), decided at a reduced scale
(indicative only), not decided, or not checked (not run at this profile, no offline data, missing).

    python -m fairfl_core.report.headline            # the table, in Markdown
    python -m fairfl_core.report.readme              # and into README.md's generated block
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fairfl_core.report.index import (
    DECIDED,
    KEY,
    PROFILES,
    PUBLISHED,
    claim_outcome,
    page_claims,
    paper_pages,
    scale_range,
)

__all__ = ["PaperClaims", "main_number", "markdown", "paper_claims_of"]

SHORT = {"smaller than the paper's": "smaller", "not reproduced at the paper's size": "not at size"}


def paper_claims_of(paper: str, root: str | Path = PUBLISHED) -> pd.DataFrame:
    """Every claim of ``paper`` once: its row on the first profile of :data:`PROFILES` that decides it (or,
    when none does, on the first that lists it)."""
    root = Path(root)
    rows = [page_claims(p, page, root) for p in PROFILES for page in paper_pages(root).get(paper, ())]
    rows = [r for r in rows if not r.empty]
    if not rows:
        return pd.DataFrame(columns=[*KEY, "outcome", "scale", "profile", "page"])
    claims = pd.concat(rows, ignore_index=True)
    rank = claims["outcome"].isin(DECIDED).map({True: 0, False: 1}) * 10 + claims["profile"].map(
        {p: i for i, p in enumerate(PROFILES)}
    )
    return (
        claims.assign(rank=rank).sort_values("rank", kind="stable").drop_duplicates(KEY).drop(columns="rank")
    )


@dataclass(frozen=True)
class PaperClaims:
    """One paper's line of the main number."""

    paper: str
    claims: int
    at_paper_scale: Counter
    reduced: Counter
    shares: str
    not_decided: int
    not_checked: int
    pages: tuple[str, ...]
    stand_in: Counter  # the not-checked claims' direction on their labelled stand-in (never counted)

    @property
    def conclusive(self) -> int:
        return sum(
            n for c in (self.at_paper_scale, self.reduced) for o, n in c.items() if o != "undetermined"
        )


def main_number(root: str | Path = PUBLISHED) -> list[PaperClaims]:
    """Every paper's line (:class:`PaperClaims`)."""
    root = Path(root)
    lines = []
    for paper in paper_pages(root):
        claims = paper_claims_of(paper, root)
        decided = claims[claims["outcome"].isin(DECIDED)]
        where = sorted({f"{p}/{g}" for p, g in claims[["profile", "page"]].drop_duplicates().values})
        reduced = decided[decided["scale"] == "reduced"]
        lines.append(
            PaperClaims(
                paper,
                len(claims),
                Counter(decided.loc[decided["scale"] == "paper", "outcome"]),
                Counter(reduced["outcome"]),
                scale_range([reduced.assign(verdict=reduced["outcome"])]) if len(reduced) else "",
                int((claims["outcome"] == "not decided").sum()),
                int((claims["outcome"] == "not checked").sum()),
                tuple(where),
                _stand_in(claims),
            )
        )
    return lines


def _stand_in(claims: pd.DataFrame) -> Counter:
    """How the claims not checked for want of their data came out on their stand-in (direction only)."""
    if "stand_in_result" not in claims.columns:
        return Counter()
    on = claims["stand_in_result"].astype(object).fillna("").astype(str)
    return Counter(on[(claims["outcome"] == "not checked") & (on != "")].map(claim_outcome))


def _split(counts: Counter) -> str:
    total = sum(counts[o] for o in DECIDED)
    if not total:
        return "0"
    parts = ", ".join(f"{counts[o]} {SHORT.get(o, o)}" for o in DECIDED if counts[o])
    return f"{total}: {parts}"


def _in_words(n: int) -> str:
    words = ("none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[n] if n < len(words) else str(n)


def markdown(root: str | Path = PUBLISHED, link_prefix: str = "published/") -> str:
    """The main number as a Markdown table, one row per paper and a total."""
    lines = main_number(root)
    head = (
        "| paper | paper claims | decided at the paper's scale | decided at a reduced scale (indicative) | "
        "not decided (< 3 seeds) | not checked | of these, on a stand-in (direction only) | conclusive | "
        "pages |"
    )
    out = [head, "|---|---|---|---|---|---|---|---|---|"]
    for line in lines:
        pages = ", ".join(
            f"[{p}]({link_prefix}{p.split('/')[0]}/README.md#{p.split('/')[1]})" for p in line.pages
        )
        indicative = _split(line.reduced) + (f" ({line.shares})" if line.shares else "")
        share = 100 * line.conclusive / max(line.claims, 1)
        out.append(
            f"| {line.paper} | {line.claims} | {_split(line.at_paper_scale)} | {indicative} | "
            f"{line.not_decided} | {line.not_checked} | {_split(line.stand_in)} | {line.conclusive} "
            f"({share:.0f} %) | {pages} |"
        )
    total = sum(line.claims for line in lines)
    paper_scale = sum((line.at_paper_scale for line in lines), Counter())
    reduced = sum((line.reduced for line in lines), Counter())
    conclusive = sum(line.conclusive for line in lines)
    stand_in = sum((line.stand_in for line in lines), Counter())
    out.append(
        f"| **all {_in_words(len(lines))}** | {total} | {_split(paper_scale)} | {_split(reduced)} | "
        f"{sum(line.not_decided for line in lines)} | {sum(line.not_checked for line in lines)} | "
        f"{_split(stand_in)} | {conclusive} ({100 * conclusive / max(total, 1):.0f} %) | |"
    )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown(sys.argv[1] if len(sys.argv) > 1 else PUBLISHED))
