"""``engine.precision`` (``sim/precision.py``): exact by default, TF32 flags set only where they apply, bf16
autocast in local training with float32 master weights and float32 evaluations."""

import numpy as np
import pytest
import torch
from torch import nn

from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from fairfl_core.sim.precision import Precision, tf32_flags
from tests.conftest import tiny_federated

CLIENTS = np.array([0, 2, 5])
SPEC = LocalSpec(lr=0.1, batch_size=8, steps=5, momentum=0.5)


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))


def _conv() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(64, 4))


def test_unknown_mode_and_fast_float64_are_refused():
    with pytest.raises(ValueError, match="engine.precision must be one of"):
        Precision("fp8")
    with pytest.raises(ValueError, match="use precision 'exact'"):
        Engine(_mlp(), tiny_federated(), dtype=torch.float64, precision="bf16")


@pytest.mark.parametrize("mode,inside", [("exact", "ieee"), ("tf32", "tf32"), ("bf16", "tf32")])
def test_cuda_kernels_set_every_tf32_flag_and_restore_them(mode, inside):
    before = tf32_flags()
    with Precision(mode, "cuda").kernels():
        assert tf32_flags() == (inside,) * 3  # cuBLAS matmul, cuDNN conv, cuDNN RNN
    assert tf32_flags() == before


def test_cpu_sets_no_flag():
    before = tf32_flags()
    with Precision("exact", "cpu").training():
        assert tf32_flags() == before


@pytest.mark.parametrize("make,axis", [(_mlp, "bmm"), (_mlp, "vmap"), (_conv, "loop")])
def test_tf32_is_exact_on_a_cpu(make, axis):
    """TF32 is a CUDA kernel setting: on a CPU the mode computes the exact bits."""
    runs = [Engine(make(), tiny_federated(), client_axis=axis, precision=p) for p in ("exact", "tf32")]
    a, b = (e.train(CLIENTS, e.init_params(), SPEC, seed=1) for e in runs)
    assert torch.equal(a.params, b.params) and torch.equal(a.train_loss, b.train_loss)


@pytest.mark.parametrize("make,axis", [(_mlp, "bmm"), (_mlp, "vmap"), (_mlp, "loop"), (_conv, "vmap")])
def test_bf16_trains_float32_master_weights_near_exact(make, axis):
    """bf16 rounds each GEMM input to 8 significant bits (unit roundoff u = 2⁻⁸); a step's gradient chains
    two GEMMs per layer, so it carries a relative error of a few u, and 5 steps of momentum SGD move the
    weights by at most 8 u of their total movement from exact. The runs must differ (autocast is active)."""
    exact, fast = (Engine(make(), tiny_federated(), client_axis=axis, precision=p) for p in ("exact", "bf16"))
    w0 = exact.init_params()
    a = exact.train(CLIENTS, w0, SPEC, seed=1)
    stack = fast.stack(CLIENTS, w0, SPEC, seed=1)
    for _ in range(SPEC.steps):
        stack.step()
    b = stack.result()
    assert b.params.dtype == torch.float32
    assert stack.bufs is None or all(buf.dtype == torch.float32 for buf in stack.bufs)
    moved = (a.params - w0).abs().max()
    assert not torch.equal(a.params, b.params)
    assert (a.params - b.params).abs().max() <= 8 * 2**-8 * moved
    assert torch.allclose(a.train_loss, b.train_loss, rtol=8 * 2**-8)


def test_bf16_evaluates_in_float32():
    """Evaluations and full-batch gradients are not autocast: the same bits as exact."""
    exact, fast = (Engine(_mlp(), tiny_federated(), precision=p) for p in ("exact", "bf16"))
    w = exact.init_params()
    for x, y in zip(exact.losses(w), fast.losses(w), strict=True):
        assert torch.equal(x, y)
    assert torch.equal(exact.gradients(w, CLIENTS), fast.gradients(w, CLIENTS))


def test_a_torch_without_the_new_flags_gets_the_legacy_ones(monkeypatch):
    """torch before 2.9 has only ``allow_tf32``: exact turns both off for the block and restores them."""
    state = {"matmul": True, "cudnn": True}

    class Legacy:
        def __init__(self, key):
            object.__setattr__(self, "key", key)

        def __getattr__(self, name):
            if name != "allow_tf32":
                raise AttributeError(name)  # no fp32_precision, no conv / rnn
            return state[self.key]

        def __setattr__(self, name, value):
            assert name == "allow_tf32"
            state[self.key] = value

    monkeypatch.setattr(torch.backends.cuda, "matmul", Legacy("matmul"))
    monkeypatch.setattr(torch.backends, "cudnn", Legacy("cudnn"))
    with Precision("exact", "cuda").kernels():
        assert state == {"matmul": False, "cudnn": False}
    assert state == {"matmul": True, "cudnn": True}
