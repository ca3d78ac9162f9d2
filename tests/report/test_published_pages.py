"""The published pages (``published/<profile>/<notebook>/``) under the claim rule of ``report.claims``: what a
headline counts is the paper's claims, each decided on at least ``MIN_SEEDS`` seeds a side, each with its
source, each on its own evidence, each with its scale, and each verdict the page's Holm adjustment of the
p-values it prints. Tables decided by a former rule are shown and never counted (``report.index``)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from fairfl_core.report.claims import MIN_SEEDS, OBSERVATION, page_verdicts
from fairfl_core.report.index import DECIDED, NotebookFolder, claim_outcome, notebook_folders, paper_claims

PUBLISHED = Path(__file__).resolve().parents[2] / "published"
PAGES = [page for profile in sorted(PUBLISHED.iterdir()) for page in notebook_folders(profile)]
PLACE = re.compile(r"§|Table|Fig|App\.|Appendix|Section|Abstract|Algorithm|Theorem|Eq\.|Remark|Introduction")
KINDS = {"paper", "observation", "analytic"}
SCALE = ("rounds_share", "model", "data")


def _counted(page: Path) -> dict[str, pd.DataFrame]:
    folder = NotebookFolder(page)
    return {c.name: pd.read_csv(c) for c in folder.claims if c.name in folder.counted}


def _decided(table: pd.DataFrame) -> pd.DataFrame:
    """The counted paper claims of ``table`` with a verdict class."""
    claims = paper_claims(table)
    return claims[claims["verdict"].map(claim_outcome).isin(DECIDED)]


def too_few_seeds(page: Path) -> list[str]:
    """Counted paper claims of ``page`` decided on fewer than ``MIN_SEEDS`` seeds a side."""
    found = []
    for name, table in _counted(page).items():
        decided = _decided(table)
        for side in ("seeds", "reference_seeds"):
            seeds = pd.to_numeric(decided[side], errors="coerce")
            few = seeds.notna() & (seeds < MIN_SEEDS) if side == "reference_seeds" else ~(seeds >= MIN_SEEDS)
            found += [f"{name}: {c} ({side})" for c in decided.loc[few, "claim"]]
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
    """Decided paper claims of ``page`` that rest on the same evidence (the runs and metric compared)."""
    rows = [_decided(t).assign(table=name) for name, t in _counted(page).items()]
    if not rows:
        return []
    claims = pd.concat(rows, ignore_index=True)
    twice = claims[claims.duplicated("evidence", keep=False)].sort_values("evidence")
    return [f"{r.table}: {r.claim} / {r.dataset}" for r in twice.itertuples()]


def wrong_kinds(page: Path) -> list[str]:
    """Rows of an unknown kind, and paper claims decided on exact numbers (those are analytic checks)."""
    found = []
    for name, table in _counted(page).items():
        odd = ~table["kind"].isin(KINDS)
        found += [f"{name}: {c} (kind {k})" for c, k in table.loc[odd, ["claim", "kind"]].values]
        exact = _decided(table)["test"].astype(str).str.startswith("exact numbers")
        found += [f"{name}: {c} (exact numbers, not analytic)" for c in _decided(table).loc[exact, "claim"]]
    return found


def without_scale(page: Path) -> list[str]:
    """Decided paper claims without their share of the paper's rounds, model or data."""
    found = []
    for name, table in _counted(page).items():
        decided = _decided(table)
        missing = pd.Series(False, index=decided.index)
        for column in SCALE:
            values = decided[column] if column in decided.columns else pd.Series(math.nan, decided.index)
            missing |= values.isna() | values.astype(str).isin(("", "n/a", "nan"))
        found += [f"{name}: {c}" for c in decided.loc[missing, "claim"]]
    return found


def verdicts_not_rederived(page: Path) -> list[str]:
    """Rows whose ``verdict`` is not what the page's Holm adjustment of their printed p-values gives."""
    tables = _counted(page)
    again = page_verdicts(
        {n: t.drop(columns=["p_holm", "p_size_holm", "verdict"]) for n, t in tables.items()}
    )
    found = []
    for name, table in tables.items():
        differ = table["verdict"].astype(str) != again[name]["verdict"].astype(str)
        found += [f"{name}: {c}" for c in table.loc[differ, "claim"]]
    return found


CHECKS = (too_few_seeds, unsourced, decided_twice, wrong_kinds, without_scale, verdicts_not_rederived)


def test_there_are_published_pages():
    assert PAGES, f"no published pages under {PUBLISHED}"


@pytest.mark.parametrize("page", PAGES, ids=[f"{p.parent.name}/{p.name}" for p in PAGES])
@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_a_published_headline_counts_each_paper_claim_once_on_its_own_evidence(page, check):
    assert not check(page), f"{check.__name__}: {check(page)[:3]}"


def _row(claim, **changes):
    quote = '§5: "FedEBA+ reduces the variance"'
    row = {
        "kind": "paper",
        "primary": False,
        "claim": claim,
        "dataset": "fashion_mnist",
        "op": "<",
        "seeds": 3,
        "reference_seeds": 3,
        "difference": -2.0,
        "test": "paired t(2): each seed's runs share partition, initial model, client sampling and minibatch",
        "p": 0.01,
        "paper_effect": math.nan,
        "size_source": "",
        "p_size": math.nan,
        "result": "holds",
        "p_holm": 0.01,
        "p_size_holm": math.nan,
        "verdict": "holds",
        "rounds_share": 1.0,
        "model": "the paper's (mlp)",
        "data": "real",
        "evidence": claim,
        "source": quote,
    }
    return {**row, **changes}


def test_the_checks_find_what_they_look_for(tmp_path):
    """Every check above on a page that breaks each rule once (so each can fail)."""
    page = tmp_path / "quick" / "toy"
    page.mkdir(parents=True)
    rows = [
        _row("two seeds", seeds=2),
        _row("sourced"),
        _row("same evidence", evidence="sourced"),
        _row("an observation", kind="observation", seeds=1, source=f"{OBSERVATION}: a check"),
        _row("no source", source="Table 1"),
        _row("odd kind", kind="claim"),
        _row("exact", test="exact numbers"),
        _row("no scale", rounds_share=math.nan),
        _row("wrong verdict", p=0.9, p_holm=0.9),  # p 0.9 cannot establish the direction
    ]
    holm = pd.DataFrame(rows)
    # make the p_holm column the page's own adjustment so that only "wrong verdict" is off
    decided = page_verdicts({"claims": holm.drop(columns=["p_holm", "p_size_holm", "verdict"])})["claims"]
    holm["p_holm"] = decided["p_holm"]
    holm.loc[holm["claim"] != "wrong verdict", "verdict"] = decided["verdict"]
    holm.to_csv(page / "claims.csv", index=False)
    assert too_few_seeds(page) == ["claims.csv: two seeds (seeds)"]  # the observation is not counted
    assert unsourced(page) == ["claims.csv: no source"]
    assert decided_twice(page) == [
        "claims.csv: sourced / fashion_mnist",
        "claims.csv: same evidence / fashion_mnist",
    ]
    assert wrong_kinds(page) == [
        "claims.csv: odd kind (kind claim)",
        "claims.csv: exact (exact numbers, not analytic)",
    ]
    assert without_scale(page) == ["claims.csv: no scale"]
    assert verdicts_not_rederived(page) == ["claims.csv: wrong verdict"]
