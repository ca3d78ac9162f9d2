"""The published pages (``published/<profile>/<notebook>/``) under the claim rule of ``report.claims``: what a
headline counts is the paper's claims, each once, each decided on at least ``MIN_SEEDS`` seeds a side, each
with its source. Tables decided by the former rule are shown and never counted (``report.index``)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from fairfl_core.report.claims import MIN_SEEDS, OBSERVATION
from fairfl_core.report.index import NotebookFolder, claim_outcome, notebook_folders, paper_claims

PUBLISHED = Path(__file__).resolve().parents[2] / "published"
PAGES = [page for profile in sorted(PUBLISHED.iterdir()) for page in notebook_folders(profile)]
DECIDED = ("holds", "within noise", "fails")
PLACE = re.compile(r"§|Table|Fig|App\.|Appendix|Section|Abstract|Algorithm|Theorem|Eq\.|Remark|Introduction")


def _counted(page: Path) -> dict[str, pd.DataFrame]:
    folder = NotebookFolder(page)
    return {c.name: t for c, t in folder.claims.items() if c.name in folder.counted}


def _outcomes(table: pd.DataFrame) -> pd.Series:
    return table["result"].map(claim_outcome)


def _seed_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Seeds of each side of a decided row: ``seeds`` and ``reference_seeds`` where written, else the
    ``n seeds`` its basis names (a trend over a grid)."""
    if "seeds" in table.columns:
        ref = table["reference_seeds"] if "reference_seeds" in table.columns else ""
        return pd.DataFrame({"seeds": table["seeds"], "reference_seeds": ref})
    named = table["basis"].str.extract(r"(\d+) seeds?")[0].fillna("")
    return pd.DataFrame({"seeds": named, "reference_seeds": ""})


def too_few_seeds(page: Path) -> list[str]:
    """Counted paper claims of ``page`` decided on fewer than ``MIN_SEEDS`` seeds a side."""
    found = []
    for name, table in _counted(page).items():
        claims = paper_claims(table)
        decided = claims[_outcomes(claims).isin(DECIDED)]
        seeds = _seed_counts(decided)
        for side in ("seeds", "reference_seeds"):
            few = seeds[side].astype(str).str.strip().replace("", "nan").astype(float) < MIN_SEEDS
            found += [f"{name}: {c} ({side})" for c in decided.loc[few.values, "claim"]]
    return found


def unsourced(page: Path) -> list[str]:
    """Counted claims of ``page`` with neither a quoted sentence and its place nor OBSERVATION."""
    found = []
    for name, table in _counted(page).items():
        source = table["source"].astype(str) if "source" in table.columns else pd.Series("", table.index)
        observation = source.str.startswith(OBSERVATION)
        quoted = source.str.contains('"') & source.str.contains(PLACE)
        found += [f"{name}: {c}" for c in table.loc[~(observation | quoted), "claim"]]
    return found


def decided_twice(page: Path) -> list[str]:
    """Paper claims of ``page`` that its headline would count more than once."""
    rows = [paper_claims(t) for t in _counted(page).values()]
    if not rows:
        return []
    claims = pd.concat(rows, ignore_index=True)
    claims = claims[_outcomes(claims).isin(DECIDED)]
    key = [c for c in ("claim", "dataset") if c in claims.columns]
    return [" / ".join(map(str, k)) for k in claims[claims.duplicated(key)][key].values]


def test_there_are_published_pages():
    assert PAGES, f"no published pages under {PUBLISHED}"


@pytest.mark.parametrize("page", PAGES, ids=[f"{p.parent.name}/{p.name}" for p in PAGES])
def test_a_published_headline_counts_each_sourced_paper_claim_once_on_enough_seeds(page):
    assert not too_few_seeds(page), f"decided on fewer than {MIN_SEEDS} seeds: {too_few_seeds(page)[:3]}"
    assert not unsourced(page), f"without a quoted sentence and its place: {unsourced(page)[:3]}"
    assert not decided_twice(page), f"decided twice: {decided_twice(page)[:3]}"


def test_the_checks_find_what_they_look_for(tmp_path):
    """The three checks above on a page that breaks each rule once (so they can fail)."""
    page = tmp_path / "quick" / "toy"
    page.mkdir(parents=True)
    quote = '§5: "FedEBA+ reduces the variance"'
    pd.DataFrame(
        {
            "kind": ["paper", "paper", "paper", "observation", "paper"],
            "claim": ["two seeds", "sourced", "sourced", "an observation", "no source"],
            "dataset": "fashion_mnist",
            "seeds": [2, 3, 3, 1, 3],
            "reference_seeds": [3, 3, 3, 1, ""],
            "basis": "t(4.0)·SE, 95%",
            "result": ["holds", "fails", "holds", "holds", "not decided (1 seed)"],
            "source": [quote, quote, quote, f"{OBSERVATION}: a check", "Table 1"],
        }
    ).to_csv(page / "claims.csv", index=False)
    assert too_few_seeds(page) == ["claims.csv: two seeds (seeds)"]  # the observation is not counted
    assert unsourced(page) == ["claims.csv: no source"]
    assert decided_twice(page) == ["sourced / fashion_mnist"]
