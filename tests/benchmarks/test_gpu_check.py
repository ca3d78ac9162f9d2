"""The GPU check's pieces run on the CPU too (CI has no GPU): the device agreement script on two CPU runs, the
paper-cost projection on one experiment, and the check itself refusing a machine without CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[2]
needs_fmnist = pytest.mark.skipif(
    not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").is_file(),
    reason="real Fashion-MNIST absent: apt-get install dataset-fashion-mnist",
)


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@needs_fmnist
def test_device_agreement_passes_for_two_cpu_runs():
    out = _run(sys.executable, "benchmarks/device_agreement.py", "--rounds", "2", "--devices", "cpu", "cpu")
    assert out.returncode == 0, out.stderr
    assert "same_selection=True max_param_diff=0.000e+00 max_client_acc_diff=0.0000" in out.stdout


@needs_fmnist
@pytest.mark.slow
def test_paper_cost_projects_an_experiment_alone_and_as_rows(tmp_path):
    path = tmp_path / "cost.json"
    args = ["--only", "^quickstart$", "--rounds", "1", "--rows", "2", "--set", "train.rounds=500"]
    args += ["--json", str(path)]
    out = _run(sys.executable, "benchmarks/paper_cost.py", *args)
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(path.read_text())["experiments"]
    assert row["experiment"] == "quickstart" and row["runs"] == 10 and row["rounds"] == 500  # --set
    assert row["s_rows"] > 0 and row["alone_s"] > row["floor_s"] > 0
    assert out.stdout.splitlines()[-1].startswith("paper_cost device=cpu experiments=1 ")


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="this machine has CUDA: the refusal is for CPU machines"
)
def test_the_gpu_check_refuses_a_machine_without_cuda(tmp_path):
    data = tmp_path / "data" / "FashionMNIST" / "raw"
    data.mkdir(parents=True)
    (data / "train-images-idx3-ubyte.gz").write_bytes(b"")
    out = _run(
        "bash",
        "scripts/gpu_check.sh",
        str(tmp_path / "out"),
        env={"FAIRFL_DATA": str(tmp_path / "data"), "PYTHON": sys.executable},
    )
    assert out.returncode == 2 and "CUDA is not available" in out.stderr
