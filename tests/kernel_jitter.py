"""``--kernel-jitter``: run tests as on a CPU whose kernels round differently for every shape.

A batched float computation's bits depend on the kernels the BLAS library picks for the CPU and the shapes:
a client alone and the same client in a batch of two can differ in the last place on one CPU and agree on
another. A test that compares two such computations exactly passes on its author's machine and fails on
someone else's. This plugin makes that failure happen on every machine.

Under ``pytest --kernel-jitter`` each test runs inside :class:`KernelJitter`, a ``TorchDispatchMode`` that
sees every aten operation after autograd and ``vmap`` have lowered it (so with its physical, batched shapes,
in forward and backward), also in the threads a test starts. It multiplies the floating-point outputs of the
reductions (matrix products, sums, convolutions, softmax, norms, ...) by ``1 + s·eps`` with
``s ∈ {-2, -1, 1, 2}`` chosen by a hash of the operation and of its inputs' shapes: a change of a few units in
the last place, as a different kernel's summation order gives. Integer values are left as they are (any
order sums counts and masks exactly). Identical computations (same operations,
same shapes) are perturbed identically and still agree bit for bit; a batch of one and a batch of many are
perturbed differently, so an exact comparison between them fails, while a comparison at a tolerance derived
from rounding error (``tests/rounding.py``) passes. ``tests/test_kernel_jitter.py`` shows both.

``scripts/test.sh`` runs the tests that compare computations (``tests/sim``, ``tests/flower``, the
algorithms' and the executors' tests) a second time under it. A test whose exact comparison is right on
every CPU (small integers, exactly representable sums, values that never pass through a reduction) and
that the jitter would break is marked ``@pytest.mark.exact_arithmetic`` with the reason, and runs unjittered.
"""

from __future__ import annotations

import threading
import zlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["KernelJitter", "REDUCTIONS"]

_aten = torch.ops.aten
REDUCTIONS = frozenset(
    getattr(_aten, name)
    for name in (
        "mm", "bmm", "addmm", "addbmm", "baddbmm", "mv", "addmv", "dot", "vdot", "_addmm_activation",
        "convolution", "convolution_backward", "mkldnn_convolution",
        "sum", "mean", "nansum", "cumsum", "prod", "logsumexp", "trace",
        "_log_softmax", "_softmax", "_log_softmax_backward_data", "_softmax_backward_data",
        "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
        "index_add", "index_add_", "scatter_add", "scatter_add_", "scatter_reduce",
        "embedding_dense_backward",
        "native_group_norm", "native_group_norm_backward", "native_batch_norm", "native_batch_norm_backward",
        "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
        "native_layer_norm", "native_layer_norm_backward",
        "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm",
        "_cdist_forward", "_cdist_backward", "_euclidean_dist",
        "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward",
    )
)  # fmt: skip
_STEPS = (-2, -1, 1, 2)


def _shapes(args) -> str:
    return repr([tuple(a.shape) if isinstance(a, torch.Tensor) else None for a in args])


class KernelJitter(TorchDispatchMode):
    """Perturb each reduction's floating outputs by a few ulps chosen by the operation and input shapes."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket not in REDUCTIONS:
            return out
        # keyed on the operation (not its overload: ``mm.out`` computes what ``mm`` does) and the positional
        # inputs' shapes
        s = _STEPS[zlib.crc32(f"{func.overloadpacket}{_shapes(args)}".encode()) % len(_STEPS)]
        if func._schema.is_mutable:  # in place or out=: the arguments it writes are the result
            for tensor in _written(func, args, kwargs or {}):
                _scale_(tensor, s)
            return out
        if isinstance(out, torch.Tensor):
            return _scaled(out, s)
        if isinstance(out, tuple):
            return tuple(_scaled(t, s) if isinstance(t, torch.Tensor) else t for t in out)
        return out


def _written(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors an in-place (``self``) or ``out=`` overload writes, from its schema."""
    written = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else args[i]
            if isinstance(value, torch.Tensor):
                written.append(value)
    return written


def _scaled(t: torch.Tensor, s: int) -> torch.Tensor:
    """``t`` with its non-integer values moved by ``s`` ulps (relative); integers (sums of counts, masks,
    zeros) stay: any summation order gives them exactly."""
    if not t.is_floating_point() or t.layout != torch.strided:  # sparse results: left as they are
        return t
    return torch.where(t == t.round(), t, t * (1 + s * torch.finfo(t.dtype).eps))


def _scale_(t: torch.Tensor, s: int) -> None:
    if t.is_floating_point():
        t.copy_(_scaled(t, s))


@pytest.fixture(autouse=True)
def _kernel_jitter(request, monkeypatch):
    """Every test under :class:`KernelJitter` with ``--kernel-jitter`` (in its threads too), except those
    marked ``exact_arithmetic``."""
    if not request.config.getoption("--kernel-jitter") or request.node.get_closest_marker("exact_arithmetic"):
        yield
        return
    run = threading.Thread.run

    def jittered_run(self):
        with KernelJitter():
            run(self)

    monkeypatch.setattr(threading.Thread, "run", jittered_run)
    with KernelJitter():
        yield
