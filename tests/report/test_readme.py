from pathlib import Path

import pandas as pd
import pytest

from fairfl_core.report.readme import compact_table, readings_index, sync_readme

REPO = Path(__file__).resolve().parents[2]


def _results_csv(path):
    pd.DataFrame(
        {
            "dataset": ["fmnist"] * 3,
            "method": ["FedAvg", "PropFair", "FedEBA (control)"],
            "seeds": [5, 5, 5],
            "diverged": [None, "5 of 5 seeds", "1 of 5 seeds"],
            "Var. reproduced": ["88.73 ± 33.11", "diverged", "104.65 ± 42.62"],
            "Var. paper": ["62.44 ± 4.55", "75.27 ± 5.38", None],
            "note": [None, "lr 0.5", None],
        }
    ).to_csv(path, index=False)


def test_compact_table_puts_the_paper_in_brackets_and_counts_diverged_seeds(tmp_path):
    _results_csv(tmp_path / "t.csv")
    assert compact_table(tmp_path / "t.csv") == (
        "| method | seeds (diverged) | Var. (paper) |\n"
        "|---|---|---|\n"
        "| FedAvg | 5 | 88.73 ± 33.11 (62.44 ± 4.55) |\n"
        "| PropFair | 5 (5) | diverged (75.27 ± 5.38) |\n"
        "| FedEBA (control) | 5 (1) | 104.65 ± 42.62 |\n"
    )


def test_sync_readme_rewrites_only_the_marked_block(tmp_path):
    _results_csv(tmp_path / "t.csv")
    (tmp_path / "README.md").write_text(
        "intro\n<!-- published: t.csv -->\n| stale | row |\n<!-- /published -->\nafter\n"
    )
    text, used = sync_readme(tmp_path / "README.md")
    assert used == ["t.csv"]
    assert text == "intro\n<!-- published: t.csv -->\n" + compact_table(tmp_path / "t.csv") + (
        "<!-- /published -->\nafter\n"
    )


def test_sync_readme_names_a_missing_csv(tmp_path):
    (tmp_path / "README.md").write_text("<!-- published: gone.csv -->\n<!-- /published -->\n")
    with pytest.raises(FileNotFoundError, match="gone.csv.*reproduce.sh --publish"):
        sync_readme(tmp_path / "README.md")


def test_compact_table_rejects_a_csv_without_reproduced_columns(tmp_path):
    pd.DataFrame({"method": ["FedAvg"], "acc": [1.0]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match="'<metric> reproduced' columns"):
        compact_table(tmp_path / "t.csv")


def test_the_readme_agrees_with_the_published_csvs_it_cites():
    text, used = sync_readme(REPO / "README.md")
    assert used, "README.md cites no published table"
    assert text == (REPO / "README.md").read_text(), (
        "README.md is out of step with its published CSVs: run python -m fairfl_core.report.readme"
    )


def test_the_readings_index_lists_every_paper_folder_by_its_heading(tmp_path):
    for name, heading in (("toy", "# Readings: Toy (a worked example)\n\ntext"), ("alpha", "# Alpha\n")):
        (tmp_path / "papers" / name).mkdir(parents=True)
        (tmp_path / "papers" / name / "readings.md").write_text(heading)
    (tmp_path / "papers" / "bare").mkdir()  # a folder without readings is not listed
    (tmp_path / "docs").mkdir()
    assert readings_index(tmp_path / "docs" / "readings.md", tmp_path / "papers") == (
        "- [Alpha](../papers/alpha/readings.md)\n- [Toy (a worked example)](../papers/toy/readings.md)\n"
    )


def test_docs_readings_indexes_every_paper_folder():
    text, used = sync_readme(REPO / "docs" / "readings.md")
    assert used == ["fairfl_core/papers/*/readings.md"]
    assert text == (REPO / "docs" / "readings.md").read_text(), (
        "docs/readings.md is out of step with the paper folders: run python -m fairfl_core.report.readme"
    )
