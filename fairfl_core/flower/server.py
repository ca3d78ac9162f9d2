"""The ServerApp's side of a fairfl Flower run: the config's algorithm, unchanged, over a ``FlowerEngine``,
its rounds and evaluations as ``run_experiment`` runs them (without the results store and checkpoints).

Evaluation is ``runner.evaluate``: each client's test loss and accuracy come from an evaluate message to every
node, the pooled-test accuracy from the server's own copy of the official test set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fairfl_core.algorithms.base import build_algorithm
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.runner import build_engine, eval_summary, evaluate
from fairfl_core.flower.engines import Exchange, FlowerEngine
from fairfl_core.flower.support import check_flower_config
from fairfl_core.sim.context import Simulation

__all__ = ["FederationResult", "run_federation"]


@dataclass
class FederationResult:
    """``summary``: as ``fairfl run``'s (status, rounds, fairness metrics of the last evaluation, ...);
    ``params``: the final global model; ``rounds`` and ``evals``: the records ``run_experiment`` stores."""

    summary: dict[str, Any]
    params: torch.Tensor
    rounds: list[dict[str, Any]]
    evals: list[dict[str, Any]]


def run_federation(
    cfg: ExperimentConfig, link: Callable[[int], Exchange], report: Callable[[str], None] = print
) -> FederationResult:
    """Run ``cfg`` with its clients on Flower nodes: ``link(N)`` connects to the N clients' nodes and returns
    the exchange of requests; ``report`` gets one line per round."""
    cfg.validate()
    check_flower_config(cfg)
    local = build_engine(cfg)
    engine = FlowerEngine(local, link(local.data.num_clients), json.dumps(cfg.to_dict()))
    sim = Simulation(engine, cfg.train, cfg.seed, cfg.faults)
    algo = build_algorithm(cfg.algorithm.name, sim, cfg.algorithm.params)
    report(f"{cfg.name or cfg.algorithm.name} (seed {cfg.seed}): {sim.num_clients} clients on Flower nodes")
    rounds, every, status = cfg.train.rounds, cfg.eval.every, "complete"
    history, evals = [], [evaluate(algo, sim, 0)]
    for t in range(rounds):
        tick = time.perf_counter()
        out = algo.round(t)
        seconds = time.perf_counter() - tick
        history.append(
            {
                "round": t + 1,
                "selected": out.selected.tolist(),
                "diagnostics": out.diagnostics,
                "seconds": seconds,
            }
        )
        line = f"round {t + 1}/{rounds}: {len(out.selected)} clients, {seconds:.2f} s"
        if "train_loss" in out.diagnostics:
            line += f", train loss {out.diagnostics['train_loss']:.4f}"
        if not bool(torch.isfinite(algo.eval_params()).all()):
            status = "diverged"
            report(line + ": the global model is not finite, stopping")
            break
        if (t + 1) % every == 0 or t + 1 == rounds:
            evals.append(evaluate(algo, sim, t + 1))
            acc = np.asarray(evals[-1].get("personal_acc", evals[-1]["client_acc"]))
            line += f"; client test accuracy mean {acc.mean():.2f} %, global {evals[-1]['global_acc']:.2f} %"
        report(line)
    summary = {
        "status": status,
        "algorithm": cfg.algorithm.name,
        "dataset": local.data.label(),
        "seed": cfg.seed,
        "rounds": evals[-1]["round"],
        "seconds_per_round": float(np.mean([r["seconds"] for r in history])),
        **eval_summary(evals[-1], sim.groups),
    }
    return FederationResult(summary, algo.eval_params().clone(), history, evals)
