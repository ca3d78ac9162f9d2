"""Run archives (``experiments/archive.py``): pack, unpack, and every way an archive cannot be used."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fairfl_core.experiments import archive
from fairfl_core.experiments.archive import ArchiveError, pack, read_manifest, unpack
from fairfl_core.experiments.config import config_hash
from fairfl_core.experiments.sweep import FROM_ARCHIVE, RunsMissing, run_sweep
from fairfl_core.report.results import load_runs
from fairfl_core.report.tables import results_table
from tests.experiments.conftest import digits_config


@pytest.fixture
def configs():
    """Two seeds of a small digits run: the runs of archive "toy"."""
    return [digits_config(rounds=2), replace(digits_config(rounds=2), seed=1)]


def _rewrite(path, edit):
    """The archive at ``path`` rewritten after ``edit(manifest, members)`` (digests left as ``edit`` sets)."""
    manifest, members = archive._read(path)
    edit(manifest, members)
    archive._write(path, manifest, members)


def test_an_unpacked_run_rebuilds_its_table_without_computing(configs, tmp_path, monkeypatch):
    here, there = tmp_path / "here", tmp_path / "there"
    run_sweep(configs[:1], here, progress=False)
    path, n, of = pack("toy", "quick", configs, here, tmp_path / "published")
    assert (n, of) == (1, 2) and path == tmp_path / "published" / "quick" / "runs" / "toy.tar.xz"
    assert not any(name.endswith("checkpoint.pt") for name in archive._read(path)[1])
    assert unpack([path], there, "quick") == (1, [])
    monkeypatch.setenv(FROM_ARCHIVE, "1")
    run_sweep(configs[:1], there, progress=False)  # finished: nothing to compute
    table = results_table(load_runs(there, configs[:1]), metrics=("global_acc", "var"))
    assert table.equals(results_table(load_runs(here, configs[:1]), metrics=("global_acc", "var")))
    with pytest.raises(RunsMissing, match=r"1 of 2 runs are not in .*: digits-test seed 1 \(.*without --"):
        run_sweep(configs, there, progress=False)


def test_packing_is_deterministic_and_keeps_archived_runs(configs, tmp_path):
    results = tmp_path / "results"
    run_sweep(configs[:1], results, progress=False)
    path, _, _ = pack("toy", "quick", configs, results, tmp_path)
    first = path.read_bytes()
    again, _, _ = pack("toy", "quick", configs, results, tmp_path)
    assert again.read_bytes() == first  # a commit of it is empty
    (results / config_hash(configs[0]) / "summary.json").unlink()  # this machine lost the run
    run_sweep(configs[1:], results, progress=False)
    _, n, _ = pack("toy", "quick", configs, results, tmp_path)
    assert n == 2 and sorted(r.seed for r in read_manifest(path)[2]) == [0, 1]  # seed 0 from the archive


def test_run_files_reads_one_file_of_each_archived_run(configs, tmp_path):
    results = tmp_path / "results"
    run_sweep(configs, results, progress=False)
    path, _, _ = pack("toy", "quick", configs, results, tmp_path)
    rounds = archive.run_files(path, "rounds.jsonl")
    assert rounds == {
        config_hash(c): (results / config_hash(c) / "rounds.jsonl").read_bytes()
        for c in sorted(configs, key=config_hash)
    }
    with pytest.raises(
        ValueError, match=r"'checkpoint.pt' is not a file an archive holds; one of config.json"
    ):
        archive.run_files(path, "checkpoint.pt")


def test_a_sweep_interrupted_on_one_machine_resumes_on_another(configs, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    run_sweep(configs[:1], one, progress=False)
    path, _, _ = pack("toy", "quick", configs, one, tmp_path)
    unpack([path], two, "quick")
    outcomes = run_sweep(configs, two, progress=False)
    assert [o.result.summary["seed"] for o in outcomes] == [0, 1]
    assert json.loads((two / config_hash(configs[0]) / "summary.json").read_text()) == json.loads(
        (one / config_hash(configs[0]) / "summary.json").read_text()
    )  # seed 0 was reused, not recomputed


def test_a_truncated_or_corrupt_archive_names_the_file_and_the_fix(configs, tmp_path):
    run_sweep(configs[:1], tmp_path / "r", progress=False)
    path, _, _ = pack("toy", "quick", configs, tmp_path / "r", tmp_path)
    truncated = tmp_path / "truncated.tar.xz"
    truncated.write_bytes(path.read_bytes()[:500])
    fix = rf"{truncated} is truncated or corrupt .*git checkout -- {truncated}"
    with pytest.raises(ArchiveError, match=fix):
        unpack([truncated], tmp_path / "x", "quick")
    h = config_hash(configs[0])
    _rewrite(path, lambda m, members: members.update({f"{h}/evals.jsonl": b"{}\n"}))
    with pytest.raises(ArchiveError, match=rf"{path} is corrupt \({h}/evals.jsonl does not match its SHA"):
        unpack([path], tmp_path / "x", "quick")
    with pytest.raises(ArchiveError, match="does not exist: pack one with `fairfl archive pack`"):
        unpack([tmp_path / "absent.tar.xz"], tmp_path / "x", "quick")


def test_an_archive_of_another_profile_is_refused(configs, tmp_path):
    run_sweep(configs[:1], tmp_path / "r", progress=False)
    path, _, _ = pack("toy", "quick", configs, tmp_path / "r", tmp_path)
    with pytest.raises(ArchiveError, match=r"holds 'quick' runs, not 'paper': unpack it into results/quick"):
        unpack([path], tmp_path / "x", "paper")


def test_a_run_of_another_numbers_version_is_never_reused(configs, tmp_path):
    run_sweep(configs[:1], tmp_path / "r", progress=False)
    path, _, _ = pack("toy", "quick", configs, tmp_path / "r", tmp_path)
    h = config_hash(configs[0])

    def older(manifest, members):
        summary = json.loads(members[f"{h}/summary.json"]) | {"numbers_version": "c0.a1.m1"}
        members[f"{h}/summary.json"] = json.dumps(summary).encode()
        manifest["runs"][h]["files"]["summary.json"] = archive._sha256(members[f"{h}/summary.json"])

    _rewrite(path, older)
    done, notes = unpack([path], tmp_path / "x", "quick")
    assert done == 0 and not (tmp_path / "x" / h).exists()
    assert notes == [
        f"toy.tar.xz: digits-test seed 0 ({h}) not reused: computed by numbers version c0.a1.m1, this code "
        "computes c1.a1.m1; it is recomputed"
    ]
    assert pack("toy", "quick", configs, tmp_path / "empty", tmp_path) is None  # the stale run is not packed


def test_the_command_line_lists_unpacks_and_reports_bad_input_in_one_line(configs, tmp_path, capsys):
    from fairfl_core.cli import main

    run_sweep(configs[:1], tmp_path / "r", progress=False)
    path, _, _ = pack("toy", "quick", configs, tmp_path / "r", tmp_path)
    assert main(["archive", "list", str(path)]) == 0
    assert f"{path}: toy at quick, 1 runs" in capsys.readouterr().out
    assert main(["archive", "unpack", "--profile", "quick", "--results", str(tmp_path / "x"), str(path)]) == 0
    assert "unpacked 1 run(s)" in capsys.readouterr().out
    assert main(["archive", "unpack", "--profile", "paper", str(path)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith("fairfl: error: run archive") and "not 'paper'" in err


def test_a_pages_archive_holds_the_runs_its_notebook_loaded(configs, tmp_path, monkeypatch):
    """A notebook's own settings (a calibrated learning rate) are in no profile: the ledger names the runs."""
    from fairfl_core.experiments.archive import ledger_runs
    from fairfl_core.report.results import LEDGER

    calibrated = [replace(configs[0], train=replace(configs[0].train, lr=0.01))]
    results, ledger = tmp_path / "results", tmp_path / "reports" / "quick" / "toy_page" / "runs.jsonl"
    run_sweep(calibrated, results, progress=False)
    ledger.parent.mkdir(parents=True)
    monkeypatch.setenv(LEDGER, str(ledger))
    load_runs(results, calibrated)
    load_runs(results, calibrated)  # loaded twice, archived once
    assert [config_hash(c) for c in ledger_runs(ledger, results)] == [config_hash(calibrated[0])]
    path, n, _ = pack("toy_page", "quick", ledger_runs(ledger, results), results, tmp_path)
    assert n == 1 and path.name == "toy_page.tar.xz" and read_manifest(path)[1] == "toy_page"


def test_the_committed_quickstart_archive_rebuilds_its_published_table(tmp_path):
    """The run archive in the repository, unpacked on this machine, gives the published table again: the same
    runs through the same code, so the same text (the notebook's cell: experiment_paper_values, then
    results_table). Exact: means and stds of 3 seeds' stored numbers are sums of fewer than 8 terms, which
    numpy adds in order on any CPU, and the cells are rounded to 2 decimals."""
    from pathlib import Path

    from fairfl_core.experiments.profiles import experiment_configs, get_experiment
    from fairfl_core.report.paper import experiment_paper_values

    published = Path(__file__).resolve().parents[2] / "published" / "quick"
    assert unpack([published / "runs" / "quickstart.tar.xz"], tmp_path, "quick") == (6, [])
    runs = load_runs(tmp_path, experiment_configs("quickstart", "quick"))
    paper = experiment_paper_values(get_experiment("quickstart"), runs)
    table = results_table(runs, metrics=("global_acc", "var", "worst5", "best5"), paper=paper)
    table.to_csv(tmp_path / "fairness_summary.csv", index=False)
    assert (tmp_path / "fairness_summary.csv").read_text() == (
        published / "quickstart" / "fairness_summary.csv"
    ).read_text()
