"""``sim/transfer.py``: host values reach the device as the same numbers; on a CPU nothing is copied."""

import numpy as np
import pytest
import torch

from fairfl_core.sim.transfer import to_device


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
