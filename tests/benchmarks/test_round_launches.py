"""``benchmarks/round_launches.py`` on the CPU: a FedAvg round reads nothing from the device on the host
(its training loss and the model's finiteness wait for the next evaluation), and the count sees a read."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fairfl_core.algorithms.fedavg import FedAvg
from tests.experiments.conftest import digits_config

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def launches():
    spec = importlib.util.spec_from_file_location("round_launches", ROOT / "benchmarks" / "round_launches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_fedavg_round_makes_no_host_read(launches):
    counts = launches.count_rounds(digits_config(), "cpu", rounds=2, warmup=1)
    assert counts["ops_per_round"] > 0
    assert counts["reads_per_round"] == 0


def test_a_host_read_in_the_round_is_counted(launches, monkeypatch):
    real_round = FedAvg.round

    def reads_its_loss(self, t):
        out = real_round(self, t)
        float(out.diagnostics["train_loss"])
        return out

    monkeypatch.setattr(FedAvg, "round", reads_its_loss)
    assert launches.count_rounds(digits_config(), "cpu", rounds=2, warmup=1)["reads_per_round"] == 1
