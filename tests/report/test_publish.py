import json
import shutil

import pandas as pd
import pytest

from fairfl_core.report import publish as publish_module
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
        pd.DataFrame(
            {"kind": "paper", "claim": ["a", "b", "c"], "verdict": ["holds", "undetermined", "fails"]}
        ),
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
    assert "Claims of the paper: **1** holds, **0** smaller than the paper's, **0** not reproduced" in readme
    assert "**1** undetermined, **1** fails (from claims.csv)." in readme
    assert "| FedEBA+  | 25 ± 3" in readme  # the main table inline
    assert "![curves](fedeba_plus/curves.png)" in readme and "[claims](fedeba_plus/claims.md)" in readme
    assert readme.index("## afga") < readme.index("## fedeba_plus")
    assert (dest / "index.html").exists()


def test_publishing_a_paper_page_rewrites_the_quick_pages_superseded_note(tmp_path):
    quick, paper = tmp_path / "published" / "quick", tmp_path / "published" / "paper"
    _notebook(tmp_path / "reports" / "quick" / "fedeba_plus", "ok")
    publish(tmp_path / "reports" / "quick", quick)
    assert "supersedes them here" not in (quick / "README.md").read_text()
    _notebook(tmp_path / "reports" / "paper" / "fedeba_plus", "ok")  # the same claims, decided
    publish(tmp_path / "reports" / "paper", paper)
    note = "of this page's claims are decided at the paper's scale on [paper/fedeba_plus]"
    assert note in (quick / "README.md").read_text()
    assert (
        '<a href="../paper/index.html#fedeba_plus">paper/fedeba_plus</a>'
        in (quick / "index.html").read_text()
    )


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


def test_only_the_notebooks_named_are_published(tmp_path, capsys):
    """reproduce.sh --only X --publish publishes X alone: another notebook's report left from an earlier
    call stays out, and the published copy of it stays as it was."""
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "gifair_fl", "ok")
    _notebook(reports / "quickstart", "ok", commit="0ld0ld0")
    (dest / "quickstart").mkdir(parents=True)
    (dest / "quickstart" / "table1.md").write_text("the page published later than that report")
    assert publish(reports, dest, only=["gifair_fl"]) == ["gifair_fl"]
    assert (dest / "quickstart" / "table1.md").read_text() == "the page published later than that report"
    with pytest.raises(ValueError, match=r"no report of notebook\(s\) \['afga'\] under .*: run them first"):
        publish(reports, dest, only=["afga"])
    publish_module.main([str(reports), str(dest), "--only", "quickstart", "gifair_fl"])
    assert "published 2 notebook(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="publish: no report of notebook"):
        publish_module.main([str(reports), str(dest), "--only", "afga"])


def test_publish_names_a_missing_reports_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="run ./reproduce.sh first"):
        publish(tmp_path / "reports" / "paper", tmp_path / "published" / "paper")


def test_a_page_says_which_numbers_versions_computed_its_runs(tmp_path):
    """reproduce.sh's ledger (load_runs under $FAIRFL_RUN_LEDGER) reaches published.json and the page's
    header, which says when runs were computed by another numbers version than this code's, or none was
    recorded."""
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "fedeba_plus", "ok")
    _notebook(reports / "afga", "ok")
    _notebook(reports / "gifair_fl", "ok")
    current = {"algorithm": "fedavg", "model": "mlp", "numbers_version": "c1.a1.m1", "commit": "abc1234"}
    older = {**current, "numbers_version": "c0.a1.m1"}
    lines = [{"hash": "h1", **current}, {"hash": "h1", **current}, {"hash": "h2", **current}]
    (reports / "fedeba_plus" / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    later = {**current, "hash": "h4", "commit": "def5678"}
    (reports / "afga" / "runs.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in ({"hash": "h3", **older}, later))
    )
    publish(reports, dest)
    meta = json.loads((dest / "fedeba_plus" / "published.json").read_text())
    assert [r["hash"] for r in meta["runs"]] == ["h1", "h2"]  # each run once
    readme = (dest / "README.md").read_text()
    sections = {s.split("\n", 1)[0]: s for s in readme.split("## ")[1:]}
    assert (
        "2 runs, numbers version(s) c1.a1.m1, computed by commit abc1234: this code's"
        in sections["fedeba_plus"]
    )
    assert "computed by 2 commits (abc1234, def5678)" in sections["afga"]  # several: said so
    assert "**1 of them were computed by another numbers version than this code's**" in sections["afga"]
    assert "Numbers version not recorded" in sections["gifair_fl"]


def test_load_runs_writes_the_ledger(tmp_path, monkeypatch):
    from fairfl_core.experiments.runner import run_experiment
    from fairfl_core.report.results import LEDGER, load_runs
    from tests.experiments.conftest import digits_config

    cfg = digits_config(rounds=1)
    run_experiment(cfg, tmp_path / "r", progress=False)
    monkeypatch.setenv(LEDGER, str(tmp_path / "runs.jsonl"))
    load_runs(tmp_path / "r", [cfg])
    (record,) = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert record["algorithm"] == "fedavg" and record["model"] == "mlp"
    assert record["numbers_version"] == "c1.a1.m1" and "commit" in record


def test_results_of_uncommitted_code_are_not_published(tmp_path, capsys):
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "fedeba_plus", "ok", commit="abc1234 (with uncommitted changes)")
    _notebook(reports / "afga", "ok")
    run = {"hash": "h", "algorithm": "fedavg", "model": "mlp", "numbers_version": "c1.a1.m1"}
    (reports / "afga" / "runs.jsonl").write_text(json.dumps({**run, "commit": "abc1234-dirty"}) + "\n")
    _notebook(reports / "gifair_fl", "ok")
    assert publish(reports, dest) == ["gifair_fl"]
    err = capsys.readouterr().err
    assert "fedeba_plus: ran from a tree with uncommitted changes (abc1234 (with uncommitted changes))" in err
    assert "afga: runs computed by code with uncommitted changes (abc1234-dirty), not published" in err


def test_a_page_decided_by_the_former_rule_says_so(tmp_path):
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "afga", "ok")
    old = pd.DataFrame({"kind": "paper", "claim": ["a"], "result": ["holds"], "basis": ["t(4.0)·SE, 95%"]})
    save_table(old, reports / "afga", "claims_old")  # Welch on every row, no verdict after Holm
    new = pd.DataFrame({"kind": "paper", "claim": ["a"], "result": ["holds"], "verdict": ["holds"]})
    save_table(new, reports / "afga", "claims_new")
    publish(reports, dest)
    readme = (dest / "README.md").read_text()
    assert "claims_old.csv: decided by a former rule" in readme and "so not counted here" in readme
    assert "claims_new.csv: decided" not in readme
    assert "**2** holds" in readme and "(from claims.csv, claims_new.csv)" in readme  # not old
    assert "decided by a former rule" in (dest / "index.html").read_text()


def test_a_page_says_what_ran():
    from fairfl_core.report.index import what_ran

    runs = [
        {
            "rounds": 300,
            "seed": 0,
            "model": "mlp",
            "dataset": "fashion_mnist",
            "partition": "shards",
            "clients": 100,
        },
        {
            "rounds": 400,
            "seed": 1,
            "model": "mlp",
            "dataset": "fashion_mnist",
            "partition": "shards",
            "clients": 100,
        },
        {"rounds": 300, "seed": 10, "model": "mlp", "dataset": "fashion_mnist (stand-in for CIFAR-10)"},
    ]
    assert what_ran(runs) == (
        "What ran: round budgets 300, 400; seeds 0, 1, 10; models mlp; "
        "data fashion_mnist; fashion_mnist (stand-in for CIFAR-10); partitions shards; clients 100."
    )
    assert what_ran(None) == ""


def test_the_run_archives_beside_the_pages_are_not_a_page(tmp_path):
    reports, dest = tmp_path / "reports" / "quick", tmp_path / "published" / "quick"
    _notebook(reports / "afga", "ok")
    (dest / "runs").mkdir(parents=True)
    (dest / "runs" / "afga_table1_s1.tar.xz").write_bytes(b"")
    assert publish(reports, dest) == ["afga"]
    assert "## runs" not in (dest / "README.md").read_text()
    assert 'id="runs"' not in (dest / "index.html").read_text()


def test_a_published_page_archives_the_runs_its_notebook_loaded(tmp_path, monkeypatch):
    from fairfl_core.experiments.archive import read_manifest
    from fairfl_core.experiments.runner import run_experiment
    from fairfl_core.report.results import LEDGER, load_runs
    from tests.experiments.conftest import digits_config

    reports, dest, results = tmp_path / "reports" / "quick", tmp_path / "published" / "quick", tmp_path / "r"
    cfg = digits_config(rounds=1)
    run_experiment(cfg, results, progress=False)
    _notebook(reports / "afga", "ok")
    monkeypatch.setenv(LEDGER, str(reports / "afga" / "runs.jsonl"))
    load_runs(results, [cfg])
    monkeypatch.setattr(publish_module, "_uncommitted", lambda status, runs: None)  # any tree state
    assert publish(reports, dest, results) == ["afga"]
    profile, name, runs = read_manifest(dest / "runs" / "afga.tar.xz")
    assert (profile, name, [r.label for r in runs]) == ("quick", "afga", ["digits-test"])


def test_a_page_remembers_the_parameters_it_was_published_with(tmp_path):
    from fairfl_core.report.publish import page_sets

    page = tmp_path / "fedeba_plus"
    page.mkdir()
    assert page_sets(page) == []  # never published
    (page / "status.json").write_text(json.dumps({"status": "ok", "set": "columns=[FashionMNIST]"}))
    assert page_sets(page) == ["columns=[FashionMNIST]"]  # a page published before "sets"
    sets = ["columns=[FashionMNIST]", "methods=[FedAvg, FedEBA+]"]  # a value with a space
    (page / "status.json").write_text(json.dumps({"status": "ok", "set": " ".join(sets), "sets": sets}))
    assert page_sets(page) == sets


def test_a_page_archive_holds_each_run_once_and_never_drops_one_another_page_lists(tmp_path, monkeypatch):
    """Runs a (in a campaign chunk), b (afga's page archive) and c (new): equitable_fl loads all three and
    its archive holds c alone. afga republished with c and d keeps b, which equitable_fl lists and no other
    archive holds, adds d and leaves c in equitable_fl's."""
    from dataclasses import replace

    from fairfl_core.experiments.archive import read_manifest
    from fairfl_core.experiments.campaign import pack_chunk
    from fairfl_core.experiments.runner import run_experiment
    from fairfl_core.report.results import LEDGER, load_runs
    from tests.experiments.conftest import digits_config

    reports, dest, results = tmp_path / "reports" / "paper", tmp_path / "published" / "paper", tmp_path / "r"
    a, b, c, d = (replace(digits_config(rounds=1), seed=s) for s in range(4))
    for cfg in (a, b, c, d):
        run_experiment(cfg, results, progress=False)
    pack_chunk([a], "paper", results, dest.parent)  # computed by a campaign, committed in its chunk
    monkeypatch.setattr(publish_module, "_uncommitted", lambda status, runs: None)

    def publish_page(name, loaded):
        if (reports / name).exists():
            shutil.rmtree(reports / name)
        _notebook(reports / name, "ok")
        monkeypatch.setenv(LEDGER, str(reports / name / "runs.jsonl"))
        load_runs(results, loaded)
        assert publish(reports, dest, results, only=[name]) == [name]
        return sorted(r.seed for r in read_manifest(dest / "runs" / f"{name}.tar.xz")[2])

    assert publish_page("afga", [a, b]) == [1]  # a stays in its chunk
    assert publish_page("equitable_fl", [a, b, c]) == [2]  # b stays in afga's archive
    assert publish_page("afga", [c, d]) == [1, 3]  # c is equitable_fl's; b is kept for equitable_fl
