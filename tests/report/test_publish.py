import json

import pandas as pd
import pytest

from fairfl_core.report.publish import markdown_index, publish
from fairfl_core.report.tables import save_table


def _notebook(folder, status, commit="abc1234", set=""):
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(
        json.dumps({"status": status, "seconds": 7, "commit": commit, "set": set})
    )
    (folder / f"{folder.name}.ipynb").write_text("{}")
    (folder / "papermill.log").write_text("log")
    main = pd.DataFrame(
        {
            "method": ["FedAvg", "FedEBA+"],
            "Var. reproduced": ["48 ± 9", "25 ± 3"],
            "Var. paper": ["62.44", "43.41"],
        }
    )
    save_table(main, folder, "table1", caption="Table 1")
    save_table(
        pd.DataFrame({"claim": ["a", "b", "c"], "outcome": ["holds", "within noise", "fails"]}),
        folder,
        "claims",
    )
    (folder / "curves.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / "curves.pdf").write_bytes(b"%PDF")


def test_publish_copies_tables_and_figures_of_successful_notebooks(tmp_path):
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "fedeba_plus", "ok")
    _notebook(reports / "afga", "failed")
    (dest / "afga").mkdir(parents=True)
    (dest / "afga" / "table.md").write_text("earlier published result")

    assert publish(reports, dest) == ["fedeba_plus"]
    out = dest / "fedeba_plus"
    assert sorted(p.name for p in out.iterdir()) == [
        "claims.csv",
        "claims.md",
        "curves.png",
        "published.json",
        "status.json",
        "table1.csv",
        "table1.md",
    ]  # no LaTeX, PDF, executed notebook or log
    meta = json.loads((out / "published.json").read_text())
    assert meta["commit"] == "abc1234" and meta["seconds"] == 7 and meta["ran"].endswith("UTC")
    assert (dest / "afga" / "table.md").read_text() == "earlier published result"  # a failed run keeps it

    readme = (dest / "README.md").read_text()
    assert "# Published results: profile `quick`" in readme
    assert "Claims: **1** holds, **1** within noise, **1** fails (from claims.csv)" in readme
    assert "| FedEBA+  | 25 ± 3" in readme  # the main table inline
    assert "![curves](fedeba_plus/curves.png)" in readme and "[claims](fedeba_plus/claims.md)" in readme
    assert readme.index("## afga") < readme.index("## fedeba_plus")
    assert (dest / "index.html").exists()


def test_republishing_replaces_a_notebooks_files(tmp_path):
    reports, dest = tmp_path / "reports" / "paper", tmp_path / "published" / "paper"
    _notebook(reports / "gifair_fl", "ok")
    publish(reports, dest)
    (reports / "gifair_fl" / "curves.png").unlink()
    publish(reports, dest)
    assert not (dest / "gifair_fl" / "curves.png").exists()
    assert "curves" not in markdown_index(dest)


def test_the_readme_names_the_parameters_a_notebook_ran_with(tmp_path):
    reports, dest = tmp_path / "reports" / "paper", tmp_path / "published" / "paper"
    _notebook(reports / "fedeba_plus", "ok", set="columns=[FashionMNIST]")
    _notebook(reports / "afga", "ok")
    publish(reports, dest)
    readme = (dest / "README.md").read_text()
    assert "commit abc1234, parameters set: `columns=[FashionMNIST]`._" in readme
    assert readme.count("parameters set") == 1  # afga ran with the notebook's own parameters


def test_publish_names_a_missing_reports_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="run ./reproduce.sh first"):
        publish(tmp_path / "reports" / "paper", tmp_path / "published" / "paper")
