"""The GPU check: what a GPU machine does with this package, in under 5 minutes (``scripts/gpu_check.md``).

Seven sections, each a function ``section(size, device) -> dict`` of figures (``size``: ``"full"`` on a GPU,
``"tiny"`` for the CPU tests; a CUDA-only figure on a CPU reads ``"not applicable on cpu"``):

==========  ==============================================================================================
matmul      ``torch.mm`` TFLOP/s in fp32 (TF32 off), TF32 and bf16; host→device copy GB/s, pinned and pageable
agreement   W1 (FedAvg, MLP, Fashion-MNIST) on the CPU and on the device from one config and seed: float64
            (same selections and client accuracies, parameters within 1e-9) and float32 with
            ``engine.precision=exact`` (same selections, parameters within 1e-4), beside ``tf32``'s gap
rows        W1 runs trained together as rows against each run alone: largest difference, bit-equal or not
w1          W1 alone and as 8 rows; as runs of a sweep in processes sharing the device against the rows
            executor (``sweep_executors.py``); the closed-form MLP step (``mlp_step.mlp_gradient`` and its
            update, on static tensors: the engine's own step is not captured) eager against a CUDA graph
lstm        the Shakespeare LSTM step (``lstm_step.py``: gates kernel under vmap) at 10 to 2,000 rows in fp32
            and in bf16 (``engine.precision=bf16``, autocast), the fused kernel's loop at 10 rows; GIFAIR
            Table 5's paper profile (training only) projected from them alone and as rows
conv        one local step of the CNN, ConvMixer and ResNet-18 paper experiments, ``engine.precision`` exact
            against tf32
paper_cost  ``paper_cost.measure`` on the MLP, Shakespeare, CNN, ConvMixer and ResNet-18 experiments
==========  ==============================================================================================

The driver runs each section in its own process under its time limit (``LIMITS``, 270 s in all), and writes
two files into OUT_DIR: ``gpu_check.tar.gz`` (every section's log and figures as JSON, and the summary) and
``summary.txt`` (each section's status, seconds and figures). Exit status: 1 when the agreement check failed
or did not finish, 2 when the device is absent, else 0.

Usage: ``python benchmarks/gpu_check.py OUT_DIR [--size full] [--device cuda]``, or one section:
``python benchmarks/gpu_check.py --section NAME [--size tiny] [--device cpu] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from device_agreement import compare, run, w1_config
from lstm_step import step_flops, token_data
from paper_cost import build, first_plan, measure, round_flops, stack_seconds, step_seconds
from round_launches import count_rounds
from round_speed import Workload, rows_round, rows_rounds, train_flops_per_round
from sweep_executors import EXECUTORS, sweep

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.models import build_model
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from fairfl_core.sim.mlp_step import dense_relu_layers, mlp_gradient
from fairfl_core.sim.precision import Precision
from fairfl_core.sim.rows import RowsBatcher

ROOT = Path(__file__).resolve().parents[1]
NA = "not applicable on cpu"
SIZES = ("tiny", "full")
TOL_FP32 = 1e-4  # float32 exact on two devices: rounding only (TF32 would leave about 1e-3)
CONV = {"cnn": "fedeba_table1_cifar10", "convmixer": "afga_table1_s2", "resnet18": "afga_table6_resnet18"}
PAPER = [
    "fedeba_table1_fmnist",
    "gifair_table5_shakespeare",
    "fedeba_table1_cifar10",
    "afga_table1_s2",
    "afga_table6_resnet18",
]
SHAKESPEARE = "gifair_table5_shakespeare"


def seconds_per_call(fn: Callable[[], object], device: torch.device, reps: int, warmup: int = 1) -> float:
    """Mean seconds of ``fn()`` over ``reps`` calls after ``warmup`` (CUDA events on a GPU)."""
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        tick = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - tick) / reps
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


# -- 1. the card's rates ----------------------------------------------------------------------------------
def matmul(size: str, device: torch.device) -> dict:
    """``torch.mm`` TFLOP/s of n×n matrices in fp32 (TF32 off), TF32 and bf16; host→device copy GB/s."""
    n, reps, megabytes = {"tiny": (64, 2, 1), "full": (8192, 30, 256)}[size]
    cuda = device.type == "cuda"
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)

    def tflops(x: torch.Tensor, y: torch.Tensor, precision: str) -> float:
        with Precision(precision, device.type).kernels():
            return 2 * n**3 / seconds_per_call(lambda: torch.mm(x, y), device, reps) / 1e12

    out: dict = {"n": n, "fp32_tflops": tflops(a, b, "exact")}
    out["tf32_tflops"] = tflops(a, b, "tf32") if cuda else NA
    out["bf16_tflops"] = tflops(a.bfloat16(), b.bfloat16(), "exact")
    out["copy_mb"] = megabytes
    if cuda:
        pageable = torch.empty(megabytes * 2**20 // 4)
        target = torch.empty_like(pageable, device=device)
        for name, host in (("pinned", pageable.pin_memory()), ("pageable", pageable)):
            s = seconds_per_call(lambda h=host: target.copy_(h, non_blocking=True), device, 5)
            out[f"h2d_{name}_gbps"] = megabytes * 2**20 / s / 1e9
    else:
        out["h2d_pinned_gbps"] = out["h2d_pageable_gbps"] = NA
    return out


# -- 2. CPU vs device -------------------------------------------------------------------------------------
def agreement(size: str, device: torch.device) -> dict:
    """W1 on the CPU and on ``device``, float64 and float32 exact (``device_agreement.py``)."""
    rounds64, rounds32 = {"tiny": (2, 1), "full": (20, 5)}[size]
    f64 = w1_config("engine.dtype=float64")
    d64 = compare(run(f64, "cpu", rounds64), run(f64, str(device), rounds64))
    exact = w1_config("engine.dtype=float32", "engine.precision=exact")
    reference = run(exact, "cpu", rounds32)
    d32 = compare(reference, run(exact, str(device), rounds32))
    ok64 = d64["same_selection"] and d64["max_client_acc_diff"] == 0.0 and d64["max_param_diff"] <= 1e-9
    ok32 = d32["same_selection"] and d32["max_param_diff"] <= TOL_FP32
    out: dict = {"float64_rounds": rounds64, **{f"float64_{k}": v for k, v in d64.items()}}
    out |= {"fp32_rounds": rounds32, **{f"fp32_exact_{k}": v for k, v in d32.items()}}
    if device.type == "cuda":
        tf32 = w1_config("engine.dtype=float32", "engine.precision=tf32")
        out["fp32_tf32_max_param_diff"] = compare(reference, run(tf32, str(device), rounds32))[
            "max_param_diff"
        ]
    else:
        out["fp32_tf32_max_param_diff"] = NA
    return out | {"float64_ok": ok64, "fp32_exact_ok": ok32, "ok": ok64 and ok32}


# -- 3. rows against alone --------------------------------------------------------------------------------
def rows(size: str, device: torch.device) -> dict:
    """W1 runs (seeds 0, 1, …) trained together as rows against each alone on ``device``, bit for bit."""
    runs, rounds = {"tiny": (2, 1), "full": (3, 5)}[size]
    configs = [w1_config(f"seed={seed}") for seed in range(runs)]
    batcher = RowsBatcher(stack=True)
    algos = [build(cfg, device, batcher) for cfg in configs]
    rows_rounds(batcher, algos, rounds, device)  # round 0 and ``rounds`` more
    together = [algo.eval_params().cpu() for algo in algos]
    alone = []
    for cfg in configs:
        algo = build(cfg, device)
        for t in range(rounds + 1):
            algo.round(t)
        alone.append(algo.eval_params().cpu())
    return {
        "runs": runs,
        "rounds": rounds + 1,
        "max_abs_diff": max(float((a - b).abs().max()) for a, b in zip(together, alone, strict=True)),
        "bit_equal": all(torch.equal(a, b) for a, b in zip(together, alone, strict=True)),
        "stacks": batcher.stacks,
        "calls": batcher.calls,
    }


# -- 4. W1 alone, as rows, as processes, graphed ----------------------------------------------------------
def mlp_step_seconds(clients: int, device: torch.device, reps: int) -> tuple[float, float | str]:
    """Seconds of W1's closed-form local step (``mlp_gradient`` and its SGD update on ``clients`` stacked
    MLPs, batch 50, static tensors): eager, and replayed from a CUDA graph (CUDA only)."""
    model = build_model("mlp")
    layers = dense_relu_layers(model)
    assert layers is not None, "W1's MLP has the closed-form step"
    flattens, linears = layers
    params = [
        p.detach().to(device).expand(clients, *p.shape).clone() for m in linears for p in (m.weight, m.bias)
    ]
    x = torch.randn(clients, 50, 784, device=device)
    y = torch.randint(0, 10, (clients, 50), device=device)
    mask = torch.ones(clients, 50, device=device)

    def step() -> None:
        gradient, _ = mlp_gradient(flattens, params, x, y, mask)
        gradient.add_to(params, -1e-3)

    with Precision("exact", device.type).kernels():
        eager = seconds_per_call(step, device, reps, warmup=3)
        if device.type != "cuda":
            return eager, NA
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                step()
        except RuntimeError as exc:
            return eager, f"capture failed: {str(exc).splitlines()[0]}"
        return eager, seconds_per_call(graph.replay, device, reps)


def w1(size: str, device: torch.device) -> dict:
    """W1 alone and as rows (``round_speed.py``), its aten ops, host reads, kernels and syncs per round
    (``round_launches.py``), a sweep's processes against the rows executor (``sweep_executors.py``), and
    W1's local step eager against a CUDA graph."""
    p = {
        "tiny": dict(rows=2, rounds=1, runs=2, sweep_rounds=1, workers=1, clients=(2,), reps=2),
        "full": dict(rows=8, rounds=10, runs=8, sweep_rounds=20, workers=4, clients=(10, 80), reps=100),
    }[size]
    cfg = w1_config()
    flops = train_flops_per_round(cfg, build_model(cfg.model.name))
    alone = Workload(cfg, "batched", device, warmup=1).time(p["rounds"])
    s_rows = rows_round(cfg, device, p["rows"], p["rounds"])
    out: dict = {
        "alone_s_per_round": alone,
        "alone_tflops": flops / alone / 1e12,
        "rows": p["rows"],
        "rows_s_per_run_round": s_rows / p["rows"],
        "rows_tflops": p["rows"] * flops / s_rows / 1e12,
        "rows_speedup": alone * p["rows"] / s_rows,
    }
    launches = count_rounds(cfg, str(device), rounds=p["rounds"], warmup=1)  # round_launches.py
    out |= {f"round_{k}": v for k, v in launches.items() if k != "device"}
    overrides = [f"train.rounds={p['sweep_rounds']}"]
    configs = experiment_configs("fedeba_table1_fmnist", "quick", overrides=overrides)[: p["runs"]]
    executors = {"processes": EXECUTORS["process"], "rows": ("rows", {"stack": True, "workers": 1})}
    with tempfile.TemporaryDirectory() as tmp:
        seconds, differ = sweep(configs, Path(tmp), p["workers"], 1, executors, device=str(device))
    out |= {
        "sweep_runs": len(configs),
        "sweep_rounds": p["sweep_rounds"],
        "sweep_workers": p["workers"],
        "sweep_processes_s": seconds["processes"],
        "sweep_rows_s": seconds["rows"],
        "sweep_rows_speedup": seconds["processes"] / seconds["rows"],
        "sweep_runs_differing": differ["rows"],
    }
    for k in p["clients"]:
        eager, graphed = mlp_step_seconds(k, device, p["reps"])
        out[f"step_k{k}_eager_s"] = eager
        out[f"step_k{k}_graph_s"] = graphed
        out[f"step_k{k}_graph_speedup"] = graphed if isinstance(graphed, str) else eager / graphed
    out["step_note"] = "closed-form MLP step on static tensors; the engine's own step is not captured"
    return out


# -- 5. the Shakespeare step ------------------------------------------------------------------------------
def lstm(size: str, device: torch.device) -> dict:
    """The LSTM-256 step at several row counts, fp32 and bf16, and GIFAIR Table 5's projected cost."""
    counts, batch, steps = {"tiny": ((2, 4), 2, 1), "full": ((10, 200, 2000), 10, 3)}[size]
    model = build_model("lstm_leaf")
    out: dict = {"batch": batch}

    def timed(engine: Engine, clients: int) -> float | str:
        spec = LocalSpec(lr=0.8, batch_size=batch, steps=steps + 1)
        try:
            stack = engine.stack(np.arange(clients), engine.init_params(), spec, seed=0)
            return stack_seconds(stack, device, steps) or math.nan
        except RuntimeError as exc:  # out of memory at the largest row counts, say
            return f"failed: {str(exc).splitlines()[0]}"
        finally:
            if device.type == "cuda":
                torch.cuda.empty_cache()

    for clients in counts:
        data = token_data(clients, batch).to(device)
        for mode, precision in (("fp32", "exact"), ("bf16", "bf16")):
            s = timed(Engine(model, data, client_axis="vmap", precision=precision), clients)
            out[f"rows{clients}_{mode}_s"] = s
            flops = step_flops(model, clients, batch)
            out[f"rows{clients}_{mode}_tflops"] = s if isinstance(s, str) else flops / s / 1e12
        if clients == counts[0]:
            out[f"rows{clients}_fused_loop_fp32_s"] = timed(Engine(model, data), clients)
    configs = experiment_configs(SHAKESPEARE, "paper")
    try:
        algo = build(configs[0], "cpu")  # the paper profile's step count only
    except FileNotFoundError:
        return out | {"table5": "not projected: no Shakespeare data (scripts/gpu_data.sh)"}
    clients, _, spec = first_plan(algo)
    per_round = algo.sim.engine.schedule(clients, spec, seed=0).num_steps
    runs, rounds = len(configs), configs[0].train.rounds
    out |= {"table5_runs": runs, "table5_rounds": rounds, "table5_steps_per_round": per_round}
    small, large = counts[0], counts[-1]
    for mode in ("fp32", "bf16"):
        s_small, s_large = out[f"rows{small}_{mode}_s"], out[f"rows{large}_{mode}_s"]
        stacks = math.ceil(len(clients) / small)  # one run's clients in stacks of ``small`` rows
        out[f"table5_alone_{mode}_h"] = (
            s_small if isinstance(s_small, str) else runs * rounds * per_round * stacks * s_small / 3600
        )
        stacks = math.ceil(runs * len(clients) / large)  # every run's clients in stacks of ``large`` rows
        out[f"table5_rows_{mode}_h"] = (
            s_large if isinstance(s_large, str) else rounds * per_round * stacks * s_large / 3600
        )
    return out


# -- 6. convolutions, TF32 off and on ---------------------------------------------------------------------
def conv(size: str, device: torch.device) -> dict:
    """One local step of each convolutional paper experiment (``CONV``), engine.precision exact and tf32."""
    overrides, steps = {
        "tiny": (["train.clients_per_round=2", "train.batch_size=2"], 1),
        "full": ([], 3),
    }[size]
    out: dict = {}
    for name, experiment in CONV.items():
        flops = None
        for precision in ("exact", "tf32"):
            key = f"{name}_{precision}"
            if precision == "tf32" and device.type != "cuda":
                out[f"{key}_s"] = out[f"{key}_tflops"] = NA
                continue
            cfg = experiment_configs(
                experiment, "paper", overrides=[*overrides, f"engine.precision={precision}"]
            )
            algo = build(cfg[0], device)
            s, count = step_seconds(algo, device, steps)
            flops = flops or round_flops(algo) / count
            out[f"{key}_s"] = s
            out[f"{key}_tflops"] = flops / s / 1e12 if s else math.nan
            out[f"{name}_clients"], out[f"{name}_batch"] = (
                cfg[0].train.clients_per_round,
                cfg[0].train.batch_size,
            )
            del algo
        tf32 = out[f"{name}_tf32_s"]
        out[f"{name}_tf32_speedup"] = tf32 if isinstance(tf32, str) else out[f"{name}_exact_s"] / tf32
    return out


# -- 7. paper profiles ------------------------------------------------------------------------------------
def paper_cost(size: str, device: torch.device, raw_json: str | None = None) -> dict:
    """``paper_cost.measure`` on ``PAPER`` (tiny: the MLP experiment), every experiment's projected hours."""
    names, rows_n, max_round_s = {"tiny": (PAPER[:1], 2, 60.0), "full": (PAPER, 4, 2.0)}[size]
    result = measure(names, device, rounds=1, rows=rows_n, max_round_s=max_round_s, json_path=raw_json)
    out: dict = {"matmul_tflops": result["matmul_flops"] / 1e12}
    for e in result["experiments"]:
        name = e["experiment"]
        out[f"{name}_alone_h"] = e["alone_s"] / 3600
        out[f"{name}_rows_h"] = "not timed as rows" if e["rows_s"] is None else e["rows_s"] / 3600
        out[f"{name}_floor_h"] = e["floor_s"] / 3600
        out[f"{name}_estimated"] = e["slow"]
    return out | {f"total_{k}": v for k, v in result["total"].items()}


SECTIONS: dict[str, Callable[..., dict]] = {
    "matmul": matmul,
    "agreement": agreement,
    "rows": rows,
    "w1": w1,
    "lstm": lstm,
    "conv": conv,
    "paper_cost": paper_cost,
}
LIMITS = {"matmul": 20, "agreement": 35, "rows": 25, "w1": 55, "lstm": 45, "conv": 35, "paper_cost": 55}
LOG_BYTES = 2 * 2**20  # a longer log keeps its last 2 MB


# -- the driver -------------------------------------------------------------------------------------------
def run_section(name: str, size: str, device: torch.device, json_path: Path | None) -> dict:
    """One section in this process: its figures printed and written to ``json_path``."""
    extra = (
        {"raw_json": str(json_path.with_name("paper_cost_raw.json"))}
        if json_path and name == "paper_cost"
        else {}
    )
    figures = SECTIONS[name](size, device, **extra)
    text = json.dumps(figures, indent=1)
    print(text)
    if json_path:
        json_path.write_text(text)
    return figures


def run_step(name: str, size: str, device: str, work: Path) -> tuple[str, float]:
    """``(status, seconds)`` of one section in its own process under ``LIMITS[name]``, its output in
    ``work/NAME.log``."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--section",
        name,
        "--size",
        size,
        "--device",
        device,
    ]
    cmd += ["--json", str(work / f"{name}.json")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    log_path = work / f"{name}.log"
    tick = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc = proc.wait(timeout=LIMITS[name])
            status = "ok" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the section and the processes it started
            proc.wait()
            status = f"timed out at {LIMITS[name]} s"
    seconds = time.perf_counter() - tick
    if log_path.stat().st_size > LOG_BYTES:
        with open(log_path, "rb") as f:
            f.seek(-LOG_BYTES, os.SEEK_END)
            tail = f.read()
        log_path.write_bytes(b"[log cut to its last 2 MB]\n" + tail)
    return status, seconds


def figure(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def summarize(header: str, steps: dict[str, tuple[str, float]], figures: dict[str, dict | None]) -> str:
    lines = [f"== GPU check: {header} ==", f"{'section':12} {'status':24} {'seconds':>8} {'limit':>6}"]
    for name, (status, seconds) in steps.items():
        lines.append(f"{name:12} {status:24} {seconds:8.1f} {LIMITS[name]:6d}")
    total = sum(s for _, s in steps.values())
    lines.append(f"{'total':12} {'':24} {total:8.1f} {sum(LIMITS[n] for n in steps):6d}")
    for name, figs in figures.items():
        lines.append(f"-- {name} --")
        lines += ["  no figures (see its log in gpu_check.tar.gz)"] if figs is None else []
        lines += [f"  {k} = {figure(v)}" for k, v in (figs or {}).items()]
    return "\n".join(lines) + "\n"


def drive(out_dir: Path, size: str, device: torch.device) -> int:
    """Every section under its limit; ``out_dir`` gets ``gpu_check.tar.gz`` and ``summary.txt``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    header = f"size {size}, {name}, torch {torch.__version__}, CUDA {torch.version.cuda}"
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "gpu_check"
        work.mkdir()
        steps, figures = {}, {}
        for section in SECTIONS:
            steps[section] = run_step(section, size, str(device), work)
            path = work / f"{section}.json"
            figures[section] = json.loads(path.read_text()) if path.is_file() else None
            print(f"{section}: {steps[section][0]}, {steps[section][1]:.1f} s", flush=True)
        summary = summarize(header, steps, figures)
        (work / "summary.txt").write_text(summary)
        (out_dir / "summary.txt").write_text(summary)
        with tarfile.open(out_dir / "gpu_check.tar.gz", "w:gz") as tar:
            tar.add(work, arcname="gpu_check")
    print(summary)
    return 0 if (figures["agreement"] or {}).get("ok") is True else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", help="where the archive and the summary go (the driver)")
    parser.add_argument("--section", choices=list(SECTIONS), help="run this section only, in this process")
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", default=None, help="--section: write its figures to this file")
    args = parser.parse_args()
    if (args.out_dir is None) == (args.section is None):
        parser.error("give OUT_DIR (every section) or --section NAME (one)")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            "gpu_check: CUDA is not available: run it on a GPU machine or pass --device cpu", file=sys.stderr
        )
        return 2
    device = resolve_device(args.device)
    if args.section:
        run_section(args.section, args.size, device, Path(args.json) if args.json else None)
        return 0
    return drive(Path(args.out_dir), args.size, device)


if __name__ == "__main__":
    sys.exit(main())
