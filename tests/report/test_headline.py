"""The main number (``report/headline.py``) on a synthetic published tree: counts per paper and scale, the
paper profile superseding the quick one, and the quick page's list of superseded claims."""

from __future__ import annotations

from fairfl_core.report.headline import main_number, markdown, paper_claims_of
from fairfl_core.report.index import paper_pages, superseded
from tests.report.conftest import claim_row as _claim
from tests.report.conftest import claims_page as _page


def test_the_paper_profile_supersedes_quick_and_each_scale_is_counted_apart(tmp_path):
    _page(
        tmp_path,
        "quick",
        "fedeba_plus",
        [
            _claim("variance", "holds", 0.2),
            _claim("accuracy", "fails", 0.2),
            _claim("worst 5%", "undetermined", 0.2),
            _claim("prac", "not decided", 0.2),
            _claim(
                "cifar", "not checked (no offline data)", 0.01, dataset="CIFAR-10", stand_in_result="fails"
            ),
            _claim("control", "holds", 0.2, kind="observation"),
        ],
    )
    _page(
        tmp_path,
        "paper",
        "fedeba_plus",
        [
            _claim("variance", "smaller than the paper's", 1.0),
            _claim("accuracy", "not reproduced at the paper's size", 1.0),
            _claim("prac", "not decided", 1.0),  # decided nowhere: the first profile's row stands
        ],
    )
    _page(tmp_path, "quick", "fedeba_plus_ablations", [_claim("theta", "holds", 0.2)])
    claims = paper_claims_of("FedEBA+", tmp_path).set_index("claim")
    assert len(claims) == 6  # the observation is not a claim of the paper
    assert claims.loc["variance", "profile"] == "paper" and claims.loc["worst 5%", "profile"] == "quick"
    line = next(n for n in main_number(tmp_path) if n.paper == "FedEBA+")
    assert line.claims == 6 and (line.not_decided, line.not_checked) == (1, 1)
    assert line.at_paper_scale == {"smaller than the paper's": 1, "not reproduced at the paper's size": 1}
    assert line.reduced == {"undetermined": 1, "holds": 1} and line.shares == "20 % of the paper's rounds"
    assert line.conclusive == 3  # smaller, not at size, and the quick hold; not the undetermined
    table = markdown(tmp_path)
    row = next(r for r in table.splitlines() if r.startswith("| FedEBA+"))
    assert (
        "| 6 | 2: 1 smaller, 1 not at size | 2: 1 holds, 1 undetermined (20 % of the paper's rounds) |" in row
    )
    assert line.stand_in == {"fails": 1}
    assert "| 1 | 1 | 1: 1 fails | 3 (50 %) |" in row
    assert "[paper/fedeba_plus](published/paper/README.md#fedeba_plus)" in row
    assert table.splitlines()[-1].startswith("| **all one** | 6 |")  # the papers of the published pages
    gone = superseded("fedeba_plus", tmp_path)
    assert sorted(gone["claim"]) == ["accuracy", "variance"] and set(gone["page"]) == {"fedeba_plus"}


def test_a_page_counts_for_the_paper_its_bundle_names(tmp_path):
    """The pages of a paper are those whose ``status.json`` names it (``reproduce.sh`` writes the bundle's
    ``Paper.title``); a page of the package's own names none and counts for no paper."""
    _page(tmp_path, "quick", "afga", [_claim("a", "holds", 0.2)], paper="AFGA / CAFGA")
    _page(tmp_path, "quick", "quickstart", [_claim("q", "holds", 0.2)], paper="")
    _page(tmp_path, "paper", "fedeba_plus", [_claim("v", "holds", 1.0)])
    _page(tmp_path, "quick", "fedeba_plus_appendix", [_claim("t", "holds", 0.2)])
    assert paper_pages(tmp_path) == {
        "AFGA / CAFGA": ("afga",),
        "FedEBA+": ("fedeba_plus", "fedeba_plus_appendix"),
    }
    assert [line.paper for line in main_number(tmp_path)] == ["AFGA / CAFGA", "FedEBA+"]
    assert markdown(tmp_path).splitlines()[-1].startswith("| **all two** | 3 |")
