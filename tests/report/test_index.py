import json
import struct

import pandas as pd
import pytest

from fairfl_core.report.index import (
    OPEN_ROWS,
    OUTCOMES,
    claim_counts,
    claim_outcome,
    inline_html,
    write_index,
)


def _png(path, width, height=400):
    """The first bytes of a PNG of ``width`` x ``height`` pixels (signature and IHDR): all the index reads."""
    ihdr = b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + b"\x08\x06"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + ihdr)


def _results_table(n_rows, stand_in=False):
    table = pd.DataFrame(
        {
            "dataset": "fashion_mnist",
            "method": [f"method {i}" for i in range(n_rows)],
            "seeds": 5,
            "Var. reproduced": [f"{40 + i}.00 ± 1.00" for i in range(n_rows)],
            "Var. paper": "62.44 ± 4.55",
        }
    )
    return table.assign(**{"stand-in": "stand-in for CIFAR-10"}) if stand_in else table


def test_index_links_notebooks_tables_and_figures_with_status(tmp_path):
    ok, bad = tmp_path / "quickstart", tmp_path / "fedeba"
    for d in (ok, bad):
        d.mkdir()
    (ok / "00_quickstart.ipynb").write_text("{}")
    (ok / "00_quickstart.html").write_text("<html></html>")
    (ok / "status.json").write_text(json.dumps({"status": "ok", "seconds": 12}))
    pd.DataFrame({"method": ["FedAvg"], "Var. reproduced": ["62.44 ± 4.55"]}).to_csv(
        ok / "summary.csv", index=False
    )
    (ok / "summary.md").write_text("| x |")
    (ok / "curves.png").write_bytes(b"\x89PNG")
    (ok / "curves.pdf").write_bytes(b"%PDF")
    (bad / "01_fedeba.ipynb").write_text("{}")
    (bad / "status.json").write_text(json.dumps({"status": "failed", "seconds": 3}))

    page = write_index(tmp_path).read_text()
    assert (tmp_path / "index.html").exists()
    assert '<a href="quickstart/00_quickstart.html">00_quickstart (HTML)</a>' in page
    assert '<a href="quickstart/summary.md">md</a>' in page and "summary.tex" not in page
    assert "62.44 ±&nbsp;4.55" in page  # table shown (mean ± std wraps before the ± only)
    assert '<img src="quickstart/curves.png"' in page and '<a href="quickstart/curves.pdf">PDF</a>' in page
    assert '<span class="failed">[failed in 3 s]</span>' in page
    assert '<span class="ok">[ok in 12 s]</span>' in page
    assert page.index('id="fedeba"') < page.index('id="quickstart"')
    assert "<script" not in page and "<link" not in page and "http" not in page  # self-contained, no JS


@pytest.mark.parametrize(
    ("value", "outcome"),
    [
        ("pass", "holds"),
        ("holds", "holds"),
        (" Holds ", "holds"),
        ("True", "holds"),
        (True, "holds"),
        ("undetermined", "undetermined"),
        ("within_noise", "undetermined"),  # the former class
        ("smaller than the paper's", "smaller than the paper's"),
        ("Not reproduced at the paper's size", "not reproduced at the paper's size"),
        ("not decided (censored: 2 runs only bound the value)", "not decided"),
        ("not checked (no offline data)", "not checked"),
        ("fail", "fails"),
        ("fails", "fails"),
        ("False", "fails"),
        ("missing", "not checked"),
        ("n/a", "not checked"),
        ("", "not checked"),
    ],
)
def test_claim_outcome_reads_the_two_and_the_three_outcome_forms(value, outcome):
    assert claim_outcome(value) == outcome


ZERO = {o: 0 for o in OUTCOMES}


def test_claim_counts_key_on_the_outcome_column():
    outcomes = [*["holds"] * 3, *["undetermined"] * 2, "fails", "", "not decided", "smaller than the paper's"]
    three = pd.DataFrame({"claim": list("abcdefghi"), "result": outcomes})
    assert claim_counts(three) == {
        **ZERO,
        "holds": 3,
        "undetermined": 2,
        "fails": 1,
        "not decided": 1,
        "not checked": 1,
        "smaller than the paper's": 1,
    }
    two = pd.DataFrame({"claim": ["a", "b"], "result": ["pass", "fail"], "holds_in_paper": ["fail", "fail"]})
    assert claim_counts(two) == {**ZERO, "holds": 1, "fails": 1}
    # "verdict" (after the page's Holm adjustment) is read before "result"; no outcome column: no counts
    both = two.assign(verdict=["undetermined", "undetermined"])
    assert claim_counts(both)["undetermined"] == 2
    assert claim_counts(pd.DataFrame({"claim": ["a"], "value": [1.0]})) is None


def _decided(n, **columns):
    """A claims table of today's rule: paper claims with a verdict, at the paper's scale unless told."""
    base = {
        "kind": "paper",
        "claim": [f"claim {i}" for i in range(n)],
        "rounds_share": 1.0,
        "model": "the paper's (mlp)",
        "data": "real",
    }
    return pd.DataFrame({**base, **columns})


def test_headline_counts_every_claims_table_of_a_notebook(tmp_path):
    nb = tmp_path / "paper"
    nb.mkdir()
    outcomes = ["holds", "holds", "undetermined", "undetermined", "fails", "missing"]
    _decided(6, result=outcomes, verdict=outcomes).to_csv(nb / "claims.csv", index=False)
    _decided(2, value=[-0.5, 2.0], result=["holds", "fails"], verdict=["holds", "fails"]).assign(
        rounds_share=0.2
    ).to_csv(nb / "lambda_claims.csv", index=False)
    pd.DataFrame({"kind": "paper", "claim": ["toy"], "value": [1.0], "verdict": ["x"]}).drop(
        columns="verdict"
    ).to_csv(nb / "toy_claims.csv", index=False)

    page = write_index(tmp_path).read_text()
    headline = page[page.index('<p class="headline">') :]
    headline = headline[: headline.index("</p>")]
    assert '<span class="badge o-holds">3 hold</span>' in headline
    assert '<span class="badge o-na">2 undetermined</span>' in headline
    assert '<span class="badge o-fails">2 fail</span>' in headline
    assert '<span class="badge o-na">1 not checked</span>' in headline
    assert "at the paper&#x27;s scale: 2 holds, 2 undetermined, 1 fails" in headline
    assert "indicative (20 % of the paper&#x27;s rounds): 1 holds, 1 fails" in headline
    assert "toy_claims.csv: decided by a former rule" in headline  # no verdict column: not counted
    # the summary table at the top carries the same counts, in OUTCOMES order
    assert '<a href="#paper">paper</a>' in page
    counts = [3, 0, 0, 2, 2, 0, 1]
    assert "".join(f'<td class="num">{n}</td>' for n in counts) in page
    # outcome cells are coloured; the claims tables are folded, their counts in the summary line
    assert '<td class="o-holds">holds</td>' in page and '<td class="o-fails">fails</td>' in page
    assert "<details><summary>Claims: claims " in page and "<details><summary>Claims: lambda_claims " in page


def test_long_tables_fold_and_main_tables_show_the_paper_beside_reproduced(tmp_path):
    nb = tmp_path / "paper"
    nb.mkdir()
    _results_table(3).to_csv(nb / "table1_fmnist.csv", index=False)
    _results_table(3, stand_in=True).to_csv(nb / "table1_cifar10.csv", index=False)
    _results_table(OPEN_ROWS + 1).to_csv(nb / "table9.csv", index=False)
    pd.DataFrame({"method": ["FedAvg"], "x": [0.5]}).to_csv(nb / "toy.csv", index=False)
    note = "not implemented: " + "the algorithm is not specified in the paper; its code is unavailable " * 2
    _results_table(2).assign(note=["", note]).to_csv(nb / "table13.csv", index=False)

    page = write_index(tmp_path).read_text()
    # short main tables are open, real data before the stand-in; a long one and any other table are folded
    assert "<h3>table1_fmnist</h3>" in page and "<h3>table1_cifar10</h3>" in page
    assert page.index("<h3>table1_fmnist</h3>") < page.index("<h3>table1_cifar10</h3>")
    assert "<summary>Table: table1_fmnist" not in page
    assert f"<details><summary>Table: table9 <span class='links'>({OPEN_ROWS + 1} rows × 5 columns)" in page
    assert "<details><summary>Table: toy " in page
    # a column with one value is stated once; the reproduced and paper columns always stay
    assert "Every row: dataset: fashion_mnist; seeds: 5</p>" in page
    assert "<th>Var. paper</th>" in page and "<th>seeds</th>" not in page
    # a long note is folded behind its head
    assert "<details class='cell'><summary>not implemented</summary>not implemented: the algorithm" in page


def test_figures_are_inline_and_sized_to_the_page(tmp_path):
    nb = tmp_path / "paper"
    nb.mkdir()
    _png(nb / "learning_curves.png", 1900)
    _png(nb / "accuracy_vs_fairness.png", 800)
    page = write_index(tmp_path).read_text()
    assert '<figure class="wide"><img src="paper/learning_curves.png"' in page
    assert '<figure class="narrow"><img src="paper/accuracy_vs_fairness.png"' in page
    assert "img{width:100%;height:auto" in page


def test_index_of_a_missing_directory_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="run ./reproduce.sh first"):
        write_index(tmp_path / "reports" / "smoke")


def test_the_packages_observations_are_never_counted():
    table = pd.DataFrame(
        {
            "claim": list("abcd"),
            "result": ["holds", "holds", "fails", "holds"],
            "source": ['§5: "x"', "the package's observation", "Table 1", "the package's observation: why"],
        }
    )
    assert claim_counts(table)["holds"] == 1 and claim_counts(table)["fails"] == 1
    kinds = table.assign(kind=["paper", "observation", "paper", "paper"])  # kind, when present, decides
    assert claim_counts(kinds)["holds"] == 2


def _claims_page(folder, profile, former=False):
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({"status": "ok", "seconds": 1, "profile": profile}))
    table = _decided(2, result=["holds", "fails"], verdict=["holds", "fails"], source="Table 1")
    (table.drop(columns="verdict") if former else table).to_csv(folder / "claims.csv", index=False)


def test_a_smoke_page_decides_no_claim(tmp_path):
    """Issue "Verdicts a reader can trust" item 8: smoke checks the pipeline, its pages decide nothing."""
    from fairfl_core.report.index import SMOKE_OUTCOME, NotebookFolder

    _claims_page(tmp_path / "smoke" / "afga", "smoke")
    _claims_page(tmp_path / "quick" / "afga", "quick")
    smoke, quick = NotebookFolder(tmp_path / "smoke" / "afga"), NotebookFolder(tmp_path / "quick" / "afga")
    assert smoke.counts == {**ZERO, "not decided": 2}
    assert quick.counts["holds"] == 1 and quick.counts["fails"] == 1
    page = write_index(tmp_path / "smoke").read_text()
    assert page.count(SMOKE_OUTCOME) == 2 and 'class="o-holds"' not in page and 'class="o-fails"' not in page


def test_claims_decided_by_the_former_rule_are_shown_and_never_counted(tmp_path):
    from fairfl_core.report.index import NotebookFolder

    _claims_page(tmp_path / "quick" / "gifair_fl", "quick", former=True)
    page = NotebookFolder(tmp_path / "quick" / "gifair_fl")
    assert page.counts is None and page.former_rule == ["claims.csv"]
    assert "so not counted here" in page.headline()
    assert "no claims counted (former rule)" in page.summary_row()


def test_a_page_digests_its_decided_primary_claims(tmp_path):
    from fairfl_core.report.index import primary_digest

    nb = tmp_path / "paper"
    nb.mkdir()
    verdicts = ["holds", "smaller than the paper's", "holds", "not decided"]
    _decided(
        4,
        primary=[True, True, False, True],
        dataset="fmnist",
        result=verdicts,
        verdict=verdicts,
        difference=[-42.7, 0.5, 1.0, 2.0],
        interval_low=[-83.1, 0.1, 0.2, float("nan")],
        interval_high=[-2.3, 0.9, 1.8, float("nan")],
        paper_effect=[-19.03, 1.01, float("nan"), float("nan")],
        test=["paired t(4): each seed's runs share …", "Welch t(6.1): seed summaries only", "x", ""],
    ).to_csv(nb / "claims.csv", index=False)
    assert primary_digest(nb) == [
        "- claim 0 (fmnist): **holds**; d = -42.70 (95 % interval -83.10 to -2.30); the paper's size -19.03; "
        "paired t(4)",
        "- claim 1 (fmnist): **smaller than the paper's**; d = +0.50 (95 % interval +0.10 to +0.90); the "
        "paper's size +1.01; Welch t(6.1)",
    ]  # the non-primary and the undecided claims are not digested


def test_a_pages_notes_reach_the_html_page_as_html_not_as_markdown():
    meta = "_ran 09:24 UTC, parameters set: `columns=[FashionMNIST] tables=[17, 18, 19]`._ 95 runs of fedeba"
    assert inline_html(meta) == (
        "<em>ran 09:24 UTC, parameters set: <code>columns=[FashionMNIST] tables=[17, 18, 19]</code>.</em> "
        "95 runs of fedeba"
    )
    note = "**12 claims are decided on [paper/x](../paper/index.html#x), which supersedes them** (<rows>)"
    assert inline_html(note) == (
        '<strong>12 claims are decided on <a href="../paper/index.html#x">paper/x</a>, which supersedes '
        "them</strong> (&lt;rows&gt;)"
    )
    inside_a_word = "fedeba_plus_page"  # underscores inside a word are no emphasis
    assert (
        inline_html(f"`a<b` & `c` {inside_a_word}")
        == f"<code>a&lt;b</code> &amp; <code>c</code> {inside_a_word}"
    )
