import json

import yaml

from fairfl_core.cli import main
from tests.experiments.conftest import digits_config


def _write(tmp_path, d):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(d))
    return str(path)


def test_run_prints_the_fairness_summary(tmp_path, capsys):
    cfg = _write(tmp_path, digits_config().to_dict())
    code = main(["run", cfg, "--set", "train.rounds=2", "--results", str(tmp_path / "r"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "status: complete" in out and "var:" in out and "worst5:" in out
    (summary,) = (tmp_path / "r").glob("*/summary.json")
    assert json.loads(summary.read_text())["rounds"] == 2


def test_sweep_then_summarize(tmp_path, capsys):
    d = digits_config().to_dict()
    d["train"]["rounds"] = 2
    d["sweep"] = {"algorithms": ["fedavg", "fedprox"], "seeds": [0, 1]}
    assert main(["sweep", _write(tmp_path, d), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["summarize", str(tmp_path / "r"), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("dataset,method,seeds,Global Acc. reproduced") and len(lines) == 3
    assert sorted(line.split(",")[1:3] for line in lines[1:]) == [["fedavg", "2"], ["fedprox", "2"]]


def test_bad_input_is_a_clear_error_with_exit_code_2(tmp_path, capsys):
    cfg = _write(tmp_path, digits_config().to_dict())
    assert main(["run", cfg, "--set", "train.lr=-1", "--results", str(tmp_path)]) == 2
    assert "train.lr" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2


def test_sweep_summarizes_its_own_runs_only(tmp_path, capsys):
    results = str(tmp_path / "r")
    other = digits_config().to_dict()
    other["train"]["rounds"] = 2
    assert main(["run", _write(tmp_path, other), "--results", results, "--quiet"]) == 0  # another run
    d = {**other, "sweep": {"algorithms": ["fedprox"], "seeds": [0]}}
    capsys.readouterr()
    assert main(["sweep", _write(tmp_path, d), "--results", results, "--quiet"]) == 0
    table = capsys.readouterr().out.split("\n", 1)[1]  # after the "sweep: ..." line
    assert "fedprox" in table and "digits-test" not in table
