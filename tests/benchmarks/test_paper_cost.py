"""``benchmarks/paper_cost.py`` counts the steps a round's stack really computes: on the loop client axis,
where idle clients are left out of a step, the clients' own steps over the stack's clients; on a batched
axis, which computes every row of every step, the longest client's steps."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.experiments.conftest import digits_config

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import paper_cost  # noqa: E402


def _algo(client_axis: str):
    """FedAvg on the digits config with one local epoch, so that the clients' step counts differ."""
    cfg = digits_config(rounds=1, clients_per_round=4, batch_size=32, local_steps=None, local_epochs=1)
    cfg = replace(cfg, engine=replace(cfg.engine, device="cpu", client_axis=client_axis))
    cfg.validate()
    return paper_cost.build(cfg, torch.device("cpu"))


@pytest.mark.parametrize("client_axis", ["loop", "vmap"])
def test_a_round_counts_the_steps_its_stack_computes(client_axis):
    algo = _algo(client_axis)
    clients, start, spec = paper_cost.first_plan(algo)
    schedule = algo.sim.engine.stack(clients, start, spec, seed=0).schedule
    own = schedule.active.sum(axis=1)  # each client's steps: one epoch of its own data
    assert len(set(own.tolist())) > 1, "the partition must give the clients unequal step counts"
    _, count = paper_cost.step_seconds(algo, torch.device("cpu"), steps=1)
    if client_axis == "loop":
        assert count == pytest.approx(own.sum() / len(own), rel=1e-12) and count < schedule.num_steps
    else:
        assert count == schedule.num_steps == np.max(own)
