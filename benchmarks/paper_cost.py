"""What every registered experiment's ``paper`` profile costs on this device, measured.

For each experiment, one representative run (its first config: first method, first seed) is timed for a
few rounds alone, and ``--rows`` of its runs (its first configs) are timed trained together by the rows
executor (``sim/rows/``). One evaluation (every client's test split and the pooled test set) is timed too.
The projection of the whole profile is

    runs × rounds × s_per_round  +  runs × (rounds / eval.every) × s_per_eval

once with the alone figure and once with the rows figure (per run-round). Beside it, the floor: the
training FLOPs of the whole profile (one minibatch's forward + backward counted by
``torch.utils.flop_counter``, times the minibatches of a round, times rounds × runs) at the matmul rate this
device measures for a large fp32 matmul. A projection far above its floor is time spent on launches,
Python and memory traffic rather than arithmetic.

Experiments whose workload is another's (same model, data, clients, local work and algorithm) are timed
once. A run whose round's local training, estimated from three timed steps of its stack, takes longer than
``--max-round-s`` is not timed further nor as rows: its round is that estimate (the algorithm's own server
work left out) and its evaluation the evaluation's forward FLOPs at the FLOP rate of those steps; other
experiments with the same model, data and local training reuse the estimate.
Prints one line per experiment and a total; ``--json PATH`` writes every figure.

Usage: ``python benchmarks/paper_cost.py [--device cpu] [--rounds 2] [--rows 4] [--only REGEX |
--experiments NAME ...] [--max-round-s 60] [--set engine.client_axis=vmap ...] [--json out.json [--resume]]``
(``--experiments``: these, in this order; ``--set``: a config override applied to every run, as
``fairfl run --set``; ``--resume``: keep the experiments the JSON holds, e.g. after a time limit stopped a
call). An experiment whose dataset is absent (no stand-in) is listed as not
measured.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from round_speed import matmul_flops, rows_rounds, sync
from torch.utils.flop_counter import FlopCounterMode

import fairfl_core.papers  # noqa: F401  (registers the catalogue)
from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides
from fairfl_core.experiments.profiles import EXPERIMENTS, experiment_configs
from fairfl_core.experiments.runner import build_engine, evaluate
from fairfl_core.models.lstm import LSTMLayer
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.devices import resolve_device
from fairfl_core.sim.local import masked_mean_loss
from fairfl_core.sim.rows import RowsBatcher


def build(cfg, device, rows: RowsBatcher | None = None):
    engine = build_engine(cfg, str(device), pools=rows and rows.pools)
    if rows is not None:
        rows.attach(engine)
    sim = Simulation(engine, cfg.train, cfg.seed, cfg.faults)
    return build_algorithm(cfg.algorithm.name, sim, cfg.algorithm.params)


def first_plan(algo):
    """``(clients, start, spec)`` of round 0's local training: the algorithm's plan, or for an algorithm that
    writes its own round (AFGA, DSGD) its first ``clients_per_round`` clients with the plain local spec."""
    try:
        plan = algo.configure(0)
        return plan.clients, algo.w if plan.start is None else plan.start, plan.spec
    except NotImplementedError:
        sim = algo.sim
        return np.arange(sim.train.clients_per_round), algo.w, sim.local_spec(0)


def round_flops(algo) -> float:
    """Training FLOPs of round 0: one minibatch's forward + backward, times the round's minibatches."""
    engine, (clients, _, spec) = algo.sim.engine, first_plan(algo)
    schedule = engine.schedule(clients, spec, seed=0)
    samples = float(schedule.mask.sum())
    idx = schedule.index[0, 0][schedule.mask[0, 0] > 0]
    x, y = engine.data.inputs(idx, engine.dtype), engine.data.y[idx]
    model = engine.model.train()
    with FlopCounterMode(display=False) as counter:
        loss = masked_mean_loss(model(x), y, torch.ones(len(idx), dtype=engine.dtype, device=engine.device))
        loss.backward()
    model.zero_grad(set_to_none=True)
    engine.eval_mode()
    counted = counter.get_total_flops() / len(idx)
    # the fused LSTM kernel is not counted: 6 FLOPs (forward and backward) per recurrent weight per token
    recurrent = sum(p.numel() for m in model.modules() if isinstance(m, LSTMLayer) for p in m.parameters())
    return samples * (counted + 6 * recurrent * (x.shape[1] if recurrent else 0))


def stack_seconds(stack, device, steps: int = 3) -> float | None:
    """Mean seconds of ``steps`` steps of a client stack (after one warm-up step; at most its steps but one;
    None for a one-step stack)."""
    timed = min(steps, stack.schedule.num_steps - 1)
    stack.step()
    if timed < 1:
        return None
    sync(device)
    tick = time.perf_counter()
    for _ in range(timed):
        stack.step()
    sync(device)
    return (time.perf_counter() - tick) / timed


def step_seconds(algo, device, steps: int = 3) -> tuple[float | None, float]:
    """``(seconds, count)``: :func:`stack_seconds` of round 0's local training and the round's step count, in
    steps of the whole stack. A stack that leaves idle clients out of a step (the loop client axis) computes
    only its clients' own steps: there the count is their steps over its clients (the timed first steps have
    every client active)."""
    clients, start, spec = first_plan(algo)
    stack = algo.sim.engine.stack(clients, start, spec, seed=0)
    schedule = stack.schedule
    skips = stack.skips_idle_rows
    count = float(schedule.active.sum()) / len(schedule.active) if skips else schedule.num_steps
    return stack_seconds(stack, device, steps), count


def step_estimate(algo, device, steps: int = 3) -> float | None:
    """Seconds of round 0's local training from ``steps`` timed steps of its stack times the round's step
    count (None for a one-step round)."""
    seconds, total = step_seconds(algo, device, steps)
    return None if seconds is None else seconds * total


def time_rounds(algo, rounds: int, device, first: int = 0) -> float:
    sync(device)
    tick = time.perf_counter()
    for t in range(first, first + rounds):
        algo.round(t)
    sync(device)
    return (time.perf_counter() - tick) / rounds


def time_rows(configs, rounds: int, device) -> float:
    """Wall seconds per run-round of ``configs`` trained together (stacked, on any device)."""
    batcher = RowsBatcher(stack=True)
    algos = [build(c, device, batcher) for c in configs]
    return rows_rounds(batcher, algos, rounds, device) / len(configs)


def workload_key(cfg, training_only: bool = False) -> str:
    """Configs of one key cost the same per round (``training_only``: the same local training)."""
    d = cfg.to_dict()
    for k in ("name", "seed"):
        d.pop(k, None)
    d["train"].pop("rounds", None)
    if training_only:
        d = {k: d.get(k) for k in ("data", "model", "train", "engine")}
    return json.dumps(d, sort_keys=True, default=str)


def eval_flops(algo) -> float:
    """Forward FLOPs of one evaluation: every client's test samples and the pooled test set, at a third of
    a training sample's FLOPs (forward only)."""
    engine = algo.sim.engine
    samples = float(engine.counts("test").sum()) + len(engine.data.pooled_test)
    clients, _, spec = first_plan(algo)
    per_sample = round_flops(algo) / float(engine.schedule(clients, spec, seed=0).mask.sum())
    return samples * per_sample / 3


def hours(seconds: float) -> str:
    return f"{seconds / 3600:9.2f}"


def experiment_names(only: str | None = None, names: list[str] | None = None) -> list[str]:
    """``names`` as given (checked to be registered), else every experiment matching ``only``, sorted."""
    if names:
        unknown = [n for n in names if n not in EXPERIMENTS]
        if unknown:
            raise SystemExit(f"paper_cost: unknown experiments {unknown}: `fairfl experiments` lists them")
        return list(names)
    return [e for e in sorted(EXPERIMENTS) if not only or re.search(only, e)]


def measure(
    names: list[str],
    device: torch.device,
    rounds: int = 2,
    rows: int = 4,
    max_round_s: float = 60.0,
    overrides: list[str] | None = None,
    json_path: str | None = None,
    done: dict[str, dict] | None = None,
) -> dict:
    """Every figure of the experiments ``names`` in that order (see the module docstring), one line printed
    per experiment; ``done``: experiments measured before (``--resume``); ``json_path``: written after every
    experiment, so a run stopped by a time limit keeps what it measured."""
    done = done or {}
    rate = matmul_flops(device, n=4096 if device.type == "cuda" else 1024)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device={device} ({name}) threads={torch.get_num_threads()} matmul={rate / 1e9:.1f} GFLOP/s")
    print(
        f"{'experiment':46} {'runs':>5} {'rounds':>6} {'s/round':>8} {'rows s':>8} "
        f"{'alone h':>9} {'rows h':>9} {'floor h':>9}"
    )
    measured: dict[str, dict] = {}
    estimated: set[str] = set()  # training-only keys of the workloads estimated from steps
    out: list[dict] = []
    total = {"alone_h": 0.0, "rows_h": 0.0, "floor_h": 0.0}
    result = {"device": name, "matmul_flops": rate, "experiments": out, "total": total}
    for exp in names:
        configs = [
            ExperimentConfig.from_dict(apply_overrides(c.to_dict(), overrides or [])).validate()
            for c in experiment_configs(exp, "paper")
        ]
        cfg = configs[0]
        key = workload_key(cfg)
        if key not in measured and workload_key(cfg, training_only=True) in estimated:
            key = workload_key(cfg, training_only=True)  # too slow to time: the same training's estimate
        if exp in done:  # --resume: measured by an earlier call (its floor at this call's matmul rate)
            done[exp]["floor_s"] = done[exp]["runs"] * done[exp]["rounds"] * done[exp]["flops"] / rate
            out.append(done[exp])
            for k in total:
                total[k] += (done[exp][k[:-2] + "_s"] or done[exp]["alone_s"]) / 3600
            print(f"{exp:46} (measured before: {done[exp]['alone_s'] / 3600:.2f} h alone)", flush=True)
            continue
        if key not in measured:
            try:
                algo = build(cfg, device)
            except FileNotFoundError as exc:  # a dataset without a stand-in that this machine lacks
                print(f"{exp:46} not measured: {str(exc).splitlines()[0]}", flush=True)
                continue
            flops = round_flops(algo)
            estimate = step_estimate(algo, device)
            slow = estimate is not None and estimate > max_round_s
            if slow:  # too slow to time whole rounds: training estimated from a few steps, evaluation from
                s_round = estimate  # its forward FLOPs at the training's measured FLOP rate
                s_eval = eval_flops(algo) / (flops / estimate)
                key = workload_key(cfg, training_only=True)
                estimated.add(key)
            else:
                time_rounds(algo, 1, device)  # warm-up
                s_round = time_rounds(algo, rounds, device, first=1)
                tick = time.perf_counter()
                evaluate(algo, algo.sim, 1)
                sync(device)
                s_eval = time.perf_counter() - tick
            group = [c for c in configs if c.train == cfg.train][:rows]
            s_rows = None if slow or rows < 2 or len(group) < 2 else time_rows(group, rounds, device)
            measured[key] = {
                "s_round": s_round,
                "s_eval": s_eval,
                "s_rows": s_rows,
                "flops": flops,
                "slow": slow,
            }
            del algo
        m = measured[key]
        runs, n_rounds = len(configs), cfg.train.rounds
        evals = runs * (n_rounds // cfg.eval.every + 1) * m["s_eval"]
        alone = runs * n_rounds * m["s_round"] + evals
        as_rows = None if m["s_rows"] is None else runs * n_rounds * m["s_rows"] + evals
        floor = runs * n_rounds * m["flops"] / rate
        total["alone_h"] += alone / 3600
        total["rows_h"] += (as_rows if as_rows is not None else alone) / 3600
        total["floor_h"] += floor / 3600
        rows_s = "-" if m["s_rows"] is None else f"{m['s_rows']:8.3f}"
        print(
            f"{exp:46} {runs:5d} {n_rounds:6d} {m['s_round']:8.3f} {rows_s:>8} {hours(alone)} "
            f"{'-' if as_rows is None else hours(as_rows):>9} {hours(floor)}"
            + ("  (estimated from 3 steps)" if m["slow"] else ""),
            flush=True,
        )
        out.append(
            {
                "experiment": exp,
                "runs": runs,
                "rounds": n_rounds,
                **m,
                "alone_s": alone,
                "rows_s": as_rows,
                "floor_s": floor,
                "model": cfg.model.name,
                "engine": asdict(cfg.engine),
            }
        )
        if json_path:
            with open(json_path, "w") as f:
                json.dump(result, f, indent=1)
    print(
        f"paper_cost device={name} experiments={len(out)} alone_h={total['alone_h']:.1f} "
        f"rows_h={total['rows_h']:.1f} floor_h={total['floor_h']:.2f} matmul_gflops={rate / 1e9:.1f}"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rounds", type=int, default=2, help="rounds timed after one warm-up round")
    parser.add_argument("--rows", type=int, default=4, help="runs trained together (0: skip the rows timing)")
    parser.add_argument("--only", default=None, help="regular expression on experiment names")
    parser.add_argument("--experiments", nargs="+", default=None, help="these experiments, in this order")
    parser.add_argument("--max-round-s", type=float, default=60.0, help="estimate slower rounds from steps")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    parser.add_argument("--resume", action="store_true", help="keep the experiments --json already holds")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override in every run's config"
    )
    args = parser.parse_args()
    done = {}
    if args.resume and args.json and Path(args.json).is_file():
        done = {e["experiment"]: e for e in json.loads(Path(args.json).read_text())["experiments"]}
    names = experiment_names(args.only, args.experiments)
    measure(
        names,
        resolve_device(args.device),
        args.rounds,
        args.rows,
        args.max_round_s,
        args.set,
        args.json,
        done,
    )


if __name__ == "__main__":
    main()
