"""The GPU check runs on the CPU too (CI has no GPU): the whole driver at its tiny size gives one archive and
one summary, every section's figures (finite numbers, CUDA-only ones marked as such) and a passing agreement;
the device agreement script passes for two CPU runs, and the check refuses a machine without CUDA."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check  # noqa: E402

needs_fmnist = pytest.mark.skipif(
    not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").is_file(),
    reason="real Fashion-MNIST absent: apt-get install dataset-fashion-mnist",
)
NA = "not applicable on cpu"
# the figures each section must give on the CPU at the tiny size (the summary prints every one)
KEYS = {
    "matmul": {
        "n",
        "fp32_tflops",
        "tf32_tflops",
        "bf16_tflops",
        "copy_mb",
        "h2d_pinned_gbps",
        "h2d_pageable_gbps",
    },
    "agreement": {
        "float64_same_selection",
        "float64_max_param_diff",
        "float64_max_client_acc_diff",
        "fp32_exact_same_selection",
        "fp32_exact_max_param_diff",
        "fp32_tf32_max_param_diff",
        "float64_ok",
        "fp32_exact_ok",
        "ok",
    },
    "rows": {"runs", "rounds", "max_abs_diff", "bit_equal"},
    "w1": {
        "alone_s_per_round",
        "round_ops_per_round",
        "round_reads_per_round",
        "rows_s_per_run_round",
        "rows_speedup",
        "sweep_processes_s",
        "sweep_rows_s",
        "sweep_runs_differing",
        "step_k2_eager_s",
        "step_k2_graph_s",
        "step_k2_graph_speedup",
        "step_note",
    },
    "lstm": {
        "rows2_fp32_s",
        "rows2_bf16_s",
        "rows4_fp32_s",
        "rows4_bf16_s",
        "rows2_fused_loop_fp32_s",
        "table5_steps_per_round",
        "table5_alone_fp32_h",
        "table5_rows_fp32_h",
        "table5_alone_bf16_h",
        "table5_rows_bf16_h",
    },
    "conv": {
        f"{m}_{k}" for m in ("cnn", "convmixer", "resnet18") for k in ("exact_s", "tf32_s", "tf32_speedup")
    },
    "paper_cost": {
        "fedeba_table1_fmnist_alone_h",
        "fedeba_table1_fmnist_rows_h",
        "fedeba_table1_fmnist_floor_h",
        "total_alone_h",
    },
}
# the CUDA-only figures, which a CPU marks as such
CUDA_ONLY = {
    "matmul": {"tf32_tflops", "h2d_pinned_gbps", "h2d_pageable_gbps"},
    "agreement": {"fp32_tf32_max_param_diff"},
    "w1": {"step_k2_graph_s", "step_k2_graph_speedup"},
    "conv": {f"{m}_tf32_{k}" for m in ("cnn", "convmixer", "resnet18") for k in ("s", "tflops", "speedup")},
}


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def tiny_check(tmp_path_factory):
    """The driver on the CPU at the tiny size: its exit, its output folder, and each section's figures."""
    out = tmp_path_factory.mktemp("gpu_check")
    done = _run(sys.executable, "benchmarks/gpu_check.py", str(out), "--size", "tiny", "--device", "cpu")
    with tarfile.open(out / "gpu_check.tar.gz") as tar:
        names = tar.getnames()
        figures = {
            name: json.loads(tar.extractfile(f"gpu_check/{name}.json").read())
            if f"gpu_check/{name}.json" in names
            else None
            for name in gpu_check.SECTIONS
        }
        logs = {name: tar.extractfile(f"gpu_check/{name}.log").read().decode() for name in gpu_check.SECTIONS}
    return done, out, figures, logs


def test_the_limits_leave_time_for_a_rerun():
    assert set(gpu_check.LIMITS) == set(gpu_check.SECTIONS) and sum(gpu_check.LIMITS.values()) <= 270


@needs_fmnist
def test_the_check_writes_one_archive_and_one_summary(tiny_check):
    done, out, _, _ = tiny_check
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    files = sorted(p.name for p in out.iterdir())
    assert files == ["gpu_check.tar.gz", "summary.txt"]
    assert all((out / f).stat().st_size < 16 * 2**20 for f in files)
    summary = (out / "summary.txt").read_text()
    for name in gpu_check.SECTIONS:
        assert f"\n{name:12} ok " in summary
    assert "  fp32_exact_ok = True" in summary and f"  tf32_tflops = {NA}" in summary


@needs_fmnist
@pytest.mark.parametrize("section", list(gpu_check.SECTIONS))
def test_every_section_gives_its_figures_on_the_cpu(tiny_check, section):
    _, _, figures, logs = tiny_check
    figs = figures[section]
    assert figs is not None, logs[section][-3000:]
    assert KEYS[section] <= set(figs)
    cuda_only = CUDA_ONLY.get(section, set())
    assert {k: figs[k] for k in cuda_only} == dict.fromkeys(cuda_only, NA)
    for key, value in figs.items():
        if key not in cuda_only and key != "step_note":
            assert isinstance(value, (int, float)) and math.isfinite(value), (key, value)
    if section == "agreement":
        assert figs["ok"] and figs["float64_max_param_diff"] == 0.0
    if section == "rows":
        assert figs["bit_equal"] and figs["max_abs_diff"] == 0.0
    if section == "w1":
        assert figs["sweep_runs_differing"] == 0 and figs["round_reads_per_round"] == 0


def test_the_check_fails_a_step_that_runs_past_its_limit(tmp_path, monkeypatch):
    monkeypatch.setitem(gpu_check.LIMITS, "matmul", 0.01)
    status, seconds = gpu_check.run_step("matmul", "tiny", "cpu", tmp_path)
    assert status == "timed out at 0.01 s" and seconds < 5


@needs_fmnist
def test_device_agreement_passes_for_two_cpu_runs():
    out = _run(sys.executable, "benchmarks/device_agreement.py", "--rounds", "1", "--devices", "cpu", "cpu")
    assert out.returncode == 0, out.stderr
    assert "same_selection=True max_param_diff=0.000e+00 max_client_acc_diff=0.0000" in out.stdout


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
