"""How far a reduced-scale verdict carries (``report/scale_agreement.py``), counted by hand on a synthetic
published tree."""

from __future__ import annotations

import math

from fairfl_core.report.scale_agreement import agreement, both_scales, markdown
from tests.report.conftest import claim_row, claims_page


def _tree(root):
    claims_page(
        root,
        "quick",
        "fedeba_plus",
        [
            claim_row("a", "holds", 0.2, difference=-10.0),
            claim_row("b", "undetermined", 0.2, difference=2.0),
            claim_row("c", "fails", 0.2, difference=1.0),
            claim_row("d", "not decided", 0.2, difference=-1.0),
            claim_row("e", "holds", 0.2, difference=-4.0),
            claim_row("f", "holds", 0.2, difference=-1.0),
            claim_row("obs", "holds", 0.2, difference=-1.0, kind="observation"),
        ],
    )
    claims_page(
        root,
        "paper",
        "fedeba_plus",
        [
            claim_row("a", "holds", 1.0, difference=-5.0),  # same sign and verdict, quick effect 2×
            claim_row("b", "undetermined", 1.0, difference=-1.0),  # same verdict, other sign
            claim_row("c", "holds", 1.0, difference=3.0),  # fails at quick: reversed
            claim_row("d", "holds", 1.0, difference=-2.0),  # not decided at quick
            claim_row("e", "smaller than the paper's", 1.0, difference=-2.0),
            claim_row("f", "holds", 0.5, difference=-1.0),  # not at the paper's scale
            claim_row("g", "holds", 1.0, difference=-1.0),  # no quick row
            claim_row("obs", "holds", 1.0, difference=-1.0, kind="observation"),  # not a claim
        ],
    )
    claims_page(root, "quick", "gifair_fl", [claim_row("a", "holds", 0.1)], paper="GIFAIR-FL")  # quick only


def test_the_claims_decided_at_both_scales_are_counted_by_hand(tmp_path):
    _tree(tmp_path)
    pairs = both_scales(tmp_path)
    assert sorted(pairs["claim"]) == ["a", "b", "c", "d", "e"] and set(pairs["paper"]) == {"FedEBA+"}
    a = agreement(pairs)
    assert (a.claims, a.decided, a.signed, a.same_sign) == (5, 4, 4, 3)
    assert (a.same_verdict, a.conclusive, a.conclusive_same, a.reversed) == (2, 3, 1, 1)
    assert a.ratio == 2.0  # median of 10/5, 1/3, 4/2
    assert a.shares == "20 % of the paper's rounds" and a.papers == ("FedEBA+",)
    assert list(a.table.index) == ["holds", "smaller than the paper's", "undetermined", "fails"]
    assert a.table.loc["holds"].tolist() == [1, 1, 0, 0]
    assert a.table.loc["fails"].tolist() == [1, 0, 0, 0]
    assert int(a.table.to_numpy().sum()) == 4
    text = markdown(tmp_path)
    assert "Of the 5 claims decided at the paper's scale, 4 are decided at the quick scale too" in text
    assert "same sign at both scales in 3 of 4 (75 %)" in text and "a median 2.00×" in text
    assert "of the 3 conclusive quick verdicts, 1 of 3 (33 %)" in text and "and one claim holds" in text
    assert "| fails | 1 | 0 | 0 | 0 |" in text


def test_no_claim_at_both_scales_says_so(tmp_path):
    claims_page(tmp_path, "quick", "fedeba_plus", [claim_row("a", "holds", 0.2, difference=1.0)])
    a = agreement(both_scales(tmp_path))
    assert (a.claims, a.decided) == (0, 0) and math.isnan(a.ratio)
    assert markdown(tmp_path).startswith("No claim is decided at both")
