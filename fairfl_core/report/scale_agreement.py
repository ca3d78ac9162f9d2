"""How far a reduced-scale verdict carries: the claims decided at the paper's scale (a ``paper`` page) that a
``quick`` page decides too, their verdicts and effects at both scales side by side.

Most claims are decided only at a reduced scale (a share of the paper's rounds), and those verdicts are
indicative. The claims decided at both scales measure what "indicative" is worth: how often the effect (the
claims table's ``difference``: the method's value minus the reference's, or the claim's own statistic) has
the same sign at both scales, how often the verdict is the same, how often a conclusive reduced-scale
verdict is the paper-scale one, and the reduced-scale effect's size over the paper-scale one. The evidence
is that of the papers decided at both scales, named with it, and says nothing certain of the others.

    python -m fairfl_core.report.scale_agreement     # the Markdown, as README.md's generated block shows it
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairfl_core.report.index import CONCLUSIVE, DECIDED, KEY, PUBLISHED, page_claims, paper_pages

__all__ = ["ScaleAgreement", "agreement", "both_scales", "markdown"]

_COLUMNS = ["outcome", "scale", "difference", "rounds_share"]
_PAIRS = [*KEY, *(f"{c}_{s}" for c in _COLUMNS for s in ("paper", "quick")), "paper"]
SHORT = {"smaller than the paper's": "smaller", "not reproduced at the paper's size": "not at size"}
REVERSED = {("holds", "fails"), ("fails", "holds")}


def both_scales(root: str | Path = PUBLISHED) -> pd.DataFrame:
    """Each claim decided at the paper's scale that a ``quick`` page of the same paper lists, once: its key,
    per scale (suffix ``_paper``, ``_quick``) its outcome, scale, ``difference`` and ``rounds_share``, and
    its ``paper``."""
    root, parts = Path(root), [pd.DataFrame(columns=_PAIRS)]
    for paper, pages in paper_pages(root).items():
        at = {p: _claims(p, pages, root) for p in ("paper", "quick")}
        decided = at["paper"][at["paper"]["outcome"].isin(DECIDED) & (at["paper"]["scale"] == "paper")]
        both = decided.merge(at["quick"], on=KEY, suffixes=("_paper", "_quick"))
        parts.append(both.assign(paper=paper))
    return pd.concat(parts, ignore_index=True).drop_duplicates(KEY, ignore_index=True)


def _claims(profile: str, pages: tuple[str, ...], root: Path) -> pd.DataFrame:
    """The paper's claims of ``pages`` at ``profile``, once each."""
    tables = [page_claims(profile, page, root).reindex(columns=[*KEY, *_COLUMNS]) for page in pages]
    return pd.concat(tables, ignore_index=True).drop_duplicates(KEY)


@dataclass(frozen=True)
class ScaleAgreement:
    """The claims of :func:`both_scales`, counted."""

    claims: int  # decided at the paper's scale, listed by a quick page
    decided: int  # of these, decided at the quick scale too
    signed: int  # of those, with a non-zero difference at both scales
    same_sign: int
    same_verdict: int
    conclusive: int  # decided ones whose quick verdict is conclusive (holds, smaller, not at size, fails)
    conclusive_same: int  # of these, the verdict at the paper's scale is the same
    reversed: int  # decided ones that hold at one scale and fail at the other (:data:`REVERSED`)
    ratio: float  # median quick difference ÷ paper difference, over the same-sign pairs (NaN: none)
    shares: str  # the quick scale's share of the paper's rounds
    papers: tuple[str, ...]
    table: pd.DataFrame  # outcome at the quick scale (rows) × at the paper's (columns), decided ones


def agreement(pairs: pd.DataFrame) -> ScaleAgreement:
    """Count :func:`both_scales`' claims (``pairs``)."""
    decided = pairs[pairs["outcome_quick"].isin(DECIDED)]
    quick, paper = (pd.to_numeric(decided[f"difference_{s}"], errors="coerce") for s in ("quick", "paper"))
    signed = np.isfinite(quick) & np.isfinite(paper) & (quick != 0) & (paper != 0)
    same = signed & (np.sign(quick) == np.sign(paper))
    outcomes = list(zip(decided["outcome_quick"], decided["outcome_paper"], strict=True))
    conclusive = [(q, p) for q, p in outcomes if q in CONCLUSIVE]
    order = [o for o in DECIDED if any(o in pair for pair in outcomes)]
    table = (
        pd.crosstab(decided["outcome_quick"], decided["outcome_paper"])
        .reindex(index=order, columns=order, fill_value=0)
        .rename_axis(index="quick", columns="paper")
    )
    return ScaleAgreement(
        claims=len(pairs),
        decided=len(decided),
        signed=int(signed.sum()),
        same_sign=int(same.sum()),
        same_verdict=sum(q == p for q, p in outcomes),
        conclusive=len(conclusive),
        conclusive_same=sum(q == p for q, p in conclusive),
        reversed=sum(pair in REVERSED for pair in outcomes),
        ratio=float(np.median(quick[same] / paper[same])) if same.any() else float("nan"),
        shares=_shares(decided["rounds_share_quick"]),
        papers=tuple(dict.fromkeys(pairs["paper"])),
        table=table,
    )


def _shares(rounds_share: pd.Series) -> str:
    """``20 % of the paper's rounds``, or ``8–30 % …``."""
    shares = pd.to_numeric(rounds_share, errors="coerce").dropna() * 100
    if shares.empty:
        return "scale not recorded"
    low, high = round(shares.min()), round(shares.max())
    return f"{low} % of the paper's rounds" if low == high else f"{low}–{high} % of the paper's rounds"


def markdown(root: str | Path = PUBLISHED) -> str:
    """The agreement of the two scales in words, then as a table (quick verdict × paper-scale verdict)."""
    a = agreement(both_scales(root))
    if not a.decided:
        return "No claim is decided at both the paper's scale and a reduced one yet.\n"

    def share(k: int, n: int) -> str:
        return f"{k} of {n} ({100 * k / n:.0f} %)"

    reversed_ = {0: "no claim holds", 1: "one claim holds"}.get(a.reversed, f"{a.reversed} claims hold")
    text = (
        f"Of the {a.claims} claims decided at the paper's scale, {a.decided} are decided at the quick "
        f"scale too ({a.shares}; {', '.join(a.papers)}). Their effect has the same sign at both scales in "
        f"{share(a.same_sign, a.signed)}, and the quick effect is a median {a.ratio:.2f}× the paper-scale "
        f"one; the verdict is the same in {share(a.same_verdict, a.decided)}; of the {a.conclusive} "
        f"conclusive quick verdicts, {share(a.conclusive_same, a.conclusive)} are the paper-scale verdict, "
        f"and {reversed_} at one scale and fails at the other. This is the evidence of these claims "
        "only: a reduced-scale verdict elsewhere is indicative, no more.\n\n"
    )
    names = [SHORT.get(str(o), str(o)) for o in a.table.columns]
    lines = ["| quick ↓ · paper's scale → | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for outcome, row in a.table.iterrows():
        counts = " | ".join(str(int(n)) for n in row)
        lines.append(f"| {SHORT.get(str(outcome), str(outcome))} | {counts} |")
    return text + "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown(sys.argv[1] if len(sys.argv) > 1 else PUBLISHED))
