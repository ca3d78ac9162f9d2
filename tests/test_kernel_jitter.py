"""``--kernel-jitter`` (``tests/kernel_jitter.py``) catches, on this machine, an exact comparison of a client
alone with the same client in a batch, and lets the same comparison at the rounding bound pass."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch

from fairfl_core.sim.engine import Engine
from tests.conftest import tiny_federated, tiny_model
from tests.kernel_jitter import KernelJitter

pytest_plugins = ["pytester"]

BATCH_DEPENDENT = textwrap.dedent(
    """
    import numpy as np
    import torch

    from fairfl_core.sim.engine import Engine
    from tests.conftest import tiny_federated, tiny_model
    from tests.rounding import assert_close


    def gradients():
        engine = Engine(tiny_model(), tiny_federated(), dtype=torch.float64)
        w = engine.init_params()
        return engine.gradients(w, np.array([3]))[0], engine.gradients(w, np.array([1, 3]))[1]


    def test_exact():  # a batch of one against a batch of two, bit for bit: the bug
        alone, in_batch = gradients()
        assert torch.equal(alone, in_batch)


    def test_at_the_bound():  # the same comparison as the rule asks (117 samples, 4 reductions)
        alone, in_batch = gradients()
        assert_close(alone, in_batch, terms=117, depth=4)


    def test_identical():  # the same computation twice, bit for bit: right on every CPU
        assert torch.equal(gradients()[0], gradients()[0])
    """
)


@pytest.fixture
def suite(pytester):
    pytester.syspathinsert(str(pytester.path))
    pytester.makepyfile(test_batch=BATCH_DEPENDENT)
    pytester.makeconftest("from tests.conftest import _kernel_jitter, pytest_addoption  # noqa: F401\n")
    return pytester


def test_the_jitter_fails_an_exact_batch_comparison_and_passes_the_bounded_one(suite, monkeypatch):
    monkeypatch.chdir(suite.path)
    jittered = suite.runpytest_inprocess("-p", "no:cacheprovider", "--kernel-jitter", "test_batch.py")
    jittered.assert_outcomes(passed=2, failed=1)
    assert "test_batch.py::test_exact" in "\n".join(jittered.outlines)


def test_identical_computations_stay_bit_for_bit_equal_and_batches_do_not():
    with KernelJitter():
        engine = Engine(tiny_model(), tiny_federated(), dtype=torch.float64)
        w = engine.init_params()
        first, again = (engine.gradients(w, np.array([3]))[0] for _ in range(2))
        in_batch = engine.gradients(w, np.array([1, 3]))[1]
    assert torch.equal(first, again) and not torch.equal(first, in_batch)


def test_integer_results_stay_exact():
    with KernelJitter():
        counts = torch.ones(4, 7, dtype=torch.float64).sum(1)
        fractions = torch.full((4, 7), 0.1, dtype=torch.float64).sum(1)
    assert torch.equal(counts, torch.full((4,), 7.0, dtype=torch.float64))
    assert not torch.equal(fractions, torch.full((4, 7), 0.1, dtype=torch.float64).sum(1))


def test_out_and_in_place_overloads_perturb_what_they_write_not_their_inputs():
    a = torch.full((3, 3), 0.1, dtype=torch.float64)
    with KernelJitter():
        out = torch.empty(3, 3, dtype=torch.float64)
        torch.mm(a, a, out=out)
        plain = torch.mm(a, a)
    assert torch.equal(a, torch.full((3, 3), 0.1, dtype=torch.float64))  # the input is untouched
    assert torch.equal(out, plain)  # the same operation on the same shapes: the same perturbation
