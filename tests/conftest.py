"""Shared fixtures: a tiny federated dataset in the real in-memory layout (uint8 images, index tensors); the
``--kernel-jitter`` option (``tests/kernel_jitter.py``).

Comparing numbers (``tests/README.md``): exactly only between identical computations; between different ones
(a batch of one and a batch of many, two engines, two executors, a Flower node and the local engine) at a
tolerance derived from rounding error with ``tests/rounding.py``, stated in the test.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch
from torch import nn

import fairfl_core.papers  # noqa: F401  (the experiment catalogue and the papers' bundles)
from fairfl_core.data.federated import FederatedDataset
from tests.kernel_jitter import _kernel_jitter  # noqa: F401 -- autouse under --kernel-jitter


def pytest_configure(config):
    """Under pytest-xdist (``-n N``), each worker, and every process its tests start, gets the cores / N
    threads: N workers share the machine instead of each taking all of it (two torch processes of all the
    threads each slow each other many times over)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        threads = max(1, (os.cpu_count() or 1) // int(workers))
        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)


def pytest_addoption(parser):
    parser.addoption(
        "--kernel-jitter",
        action="store_true",
        help="run each test as on a CPU whose kernels round otherwise per shape (tests/kernel_jitter.py)",
    )


def tiny_federated(num_clients: int = 6, sizes=None, num_classes: int = 4, seed: int = 0) -> FederatedDataset:
    """Unequal clients (some with fewer samples than a minibatch), each with a few classes."""
    g = torch.Generator().manual_seed(seed)
    sizes = sizes or [7 + 5 * k for k in range(num_clients)]
    n_train = sum(sizes)
    n_test = 8 * num_clients
    n = n_train + n_test + 20
    y = torch.randint(0, num_classes, (n,), generator=g)
    x = (torch.rand(n, 1, 4, 4, generator=g) * 80 + y[:, None, None, None] * 40).to(torch.uint8)
    offs = torch.cumsum(torch.tensor([0, *sizes]), 0)
    train = [torch.arange(int(offs[k]), int(offs[k + 1])) for k in range(num_clients)]
    test = [torch.arange(n_train + 8 * k, n_train + 8 * (k + 1)) for k in range(num_clients)]
    return FederatedDataset(
        name="tiny",
        x=x,
        y=y,
        num_classes=num_classes,
        client_train=train,
        client_test=test,
        pooled_test=torch.arange(n_train + n_test, n),
        groups=torch.tensor([k % 2 for k in range(num_clients)]),
        mean=(0.3,),
        std=(0.2,),
        source="test fixture",
    )


def tiny_sensitive(num_clients: int = 6, seed: int = 0) -> FederatedDataset:
    """:func:`tiny_federated` as a binary task whose samples carry a sensitive group (0 or 1, drawn at
    random), the layout of Adult and COMPAS (``data/tabular.py``)."""
    fed = tiny_federated(num_clients, num_classes=2, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    sensitive = torch.randint(0, 2, (len(fed.y),), generator=g)
    return replace(fed, sensitive=sensitive, sensitive_names=["g0", "g1"], sensitive_attribute="toy")


class TinyMLP(nn.Sequential):
    """A plain ``nn.Sequential`` MLP with the models' ``features`` (the input of its last layer), so that
    algorithms needing penultimate activations (Equitable-FL) run on the tiny fixtures too."""

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self[:-1](x)


def tiny_model(num_classes: int = 4, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return TinyMLP(nn.Flatten(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, num_classes))


@pytest.fixture
def fed():
    return tiny_federated()


@pytest.fixture
def unlisted_files(monkeypatch):
    """Tiny files written by a test under the real datasets' file names: the checksum table lists none of
    them (``fairfl_core/data/checksums.py``), so each is used with its own digest recorded. The runner's
    per-process datasets are dropped before and after, so that no dataset read under the empty table (its
    ``data_files`` saying "not listed") reaches a later test."""
    from fairfl_core.data import checksums
    from fairfl_core.experiments import runner

    runner._federated_cached.cache_clear()
    monkeypatch.setattr(checksums, "known", lambda: {})
    yield
    runner._federated_cached.cache_clear()
