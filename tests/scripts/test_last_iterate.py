"""scripts/last_iterate.py: a finished AFL run's reported model (the average of its iterates) against its
last iterate, from its final checkpoint."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from fairfl_core.experiments.config import ExperimentConfig, apply_overrides
from fairfl_core.experiments.runner import run_experiment
from tests.experiments.conftest import digits_config

SCRIPT = Path(__file__).parents[2] / "scripts" / "last_iterate.py"
spec = importlib.util.spec_from_file_location("last_iterate", SCRIPT)
last_iterate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(last_iterate)


def afl_run(tmp_path, seed):
    cfg = digits_config()
    overrides = ["algorithm.name=afl", "algorithm.params={lr_lambda: 0.5}", f"seed={seed}", "name=AFL"]
    return run_experiment(
        ExperimentConfig.from_dict(apply_overrides(cfg.to_dict(), overrides)), tmp_path, progress=False
    )


def test_reported_model_reproduces_the_summary_and_the_last_iterate_differs(tmp_path):
    run = afl_run(tmp_path, 0).path
    out = last_iterate.reported_and_last(run)
    summary = json.loads((run / "summary.json").read_text())
    assert out["reported"]["global_acc"] == summary["global_acc"]  # the same computation
    assert out["reported"]["var"] == pytest.approx(summary["var"], rel=1e-12)
    state = torch.load(run / "checkpoint.pt", weights_only=False)["state"]
    assert not torch.equal(state["w"], state["w_avg"])  # 6 rounds: the average is not the last iterate
    assert out["last"]["loss_mean"] != out["reported"]["loss_mean"]  # a continuous metric: no tie by chance


def test_a_checkpoint_that_is_not_the_final_state_is_refused(tmp_path):
    run = afl_run(tmp_path, 0).path
    checkpoint = torch.load(run / "checkpoint.pt", weights_only=False)
    checkpoint["state"]["w_avg"] = torch.zeros_like(checkpoint["state"]["w_avg"])
    torch.save(checkpoint, run / "checkpoint.pt")
    with pytest.raises(SystemExit, match="not the run's final state"):
        last_iterate.reported_and_last(run)


def test_the_table_groups_seeds(tmp_path, capsys):
    for seed in (0, 1):
        afl_run(tmp_path, seed)
    run_experiment(digits_config(), tmp_path, progress=False)  # FedAvg: not listed
    last_iterate.main([str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| AFL | 0.0 | 1.0 | 0.0 | 2 (0) | ")
    with pytest.raises(SystemExit, match="no finished ditto run"):
        last_iterate.main([str(tmp_path), "--algorithm", "ditto"])
    with pytest.raises(SystemExit, match="no such results folder"):
        last_iterate.main([str(tmp_path / "missing")])
