"""``sim/transfer.py``: host values reach the device as the same numbers; on a CPU nothing is copied."""

import numpy as np
import pytest
import torch

from fairfl_core.experiments.config import TrainConfig
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.transfer import to_device
from tests.conftest import tiny_federated, tiny_model


def test_cpu_values_are_the_tensor_itself():
    rows = np.array([3, 1, 2])
    t = to_device(rows, torch.device("cpu"))
    assert t.dtype == torch.int64 and t.tolist() == [3, 1, 2]
    assert to_device(rows, "cpu", torch.float32).dtype == torch.float32
    kept = torch.arange(4)
    assert to_device(kept, torch.device("cpu")) is kept


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_copy_is_asynchronous_and_exact():
    host = np.random.default_rng(0).random(1000)
    t = to_device(host, torch.device("cuda"))
    assert t.is_cuda and np.array_equal(t.cpu().numpy(), host)


def _sim(device: str) -> Simulation:
    engine = Engine(tiny_model(), tiny_federated().to(device), dtype=torch.float64)
    return Simulation(engine, TrainConfig(), seed=0)


def test_simulation_tensor_puts_host_values_on_the_engines_device():
    sim = _sim("cpu")
    rows = sim.tensor(np.array([3, 1, 2]))
    assert rows.device == sim.engine.device and rows.dtype == torch.int64 and rows.tolist() == [3, 1, 2]
    p = sim.tensor(np.array([0.25, 0.75]), torch.float32)
    assert p.dtype == torch.float32 and p.tolist() == [0.25, 0.75]  # exact in float32
    assert sim.tensor(np.array([True, False])).tolist() == [True, False]
    assert sim.tensor(np.array([2, 0])).device == sim.engine.init_params().device  # the global model's


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_simulation_tensor_on_a_cuda_engine():
    sim = _sim("cuda")
    host = np.random.default_rng(0).random(100)
    t = sim.tensor(host, torch.float64)
    assert t.is_cuda and t.device == sim.engine.init_params().device and np.array_equal(t.cpu().numpy(), host)
