"""The arithmetic of an engine's float32 kernels: exact by default, TF32 or bf16 by choice
(``engine.precision``, part of a run's identity).

======  ==========================================================================================
exact   IEEE float32 (or float64) in every kernel: TF32 off in cuBLAS matmuls and in cuDNN convolutions
        and RNNs (torch leaves cuDNN's TF32 on by default, about 1e-3 relative per operation), so a
        config and seed give a CPU's numbers on a GPU up to float32 rounding
tf32    TF32 tensor cores for float32 matmuls, convolutions and RNNs on CUDA (10-bit mantissa products,
        float32 accumulation); the same as exact on a CPU
bf16    local training's forward and backward passes under ``torch.autocast(bfloat16)``: matmuls and
        convolutions in bf16 with float32 accumulation, losses and softmax in float32; the weights (the
        master copy), momentum, step terms and the update stay float32. Evaluations, full-batch gradients
        and features run in float32 with TF32, so every reported metric is measured at float32
======  ==========================================================================================

A fast mode changes a run's numbers, not its protocol; ``benchmarks/precision_fidelity.py`` runs one paper
table both ways and records whether its metrics stay within half the seed-to-seed spread
(``benchmarks/README.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Literal

import torch

from fairfl_core.dataclass_io import check_option

__all__ = ["Precision", "PrecisionMode", "tf32_flags"]

PrecisionMode = Literal["exact", "tf32", "bf16"]


def _flag_holders() -> list:
    """The backend objects whose ``fp32_precision`` decides TF32: cuBLAS matmuls, cuDNN convolutions, RNNs."""
    b = torch.backends
    return [b.cuda.matmul, b.cudnn.conv, b.cudnn.rnn]  # type: ignore[attr-defined]


def tf32_flags() -> tuple[str, ...]:
    """The current ``fp32_precision`` of cuBLAS matmuls, cuDNN convolutions and cuDNN RNNs."""
    return tuple(h.fp32_precision for h in _flag_holders())


@contextmanager
def _tf32(allowed: bool) -> Iterator[None]:
    """TF32 on or off in cuBLAS and cuDNN for the block (torch's ``fp32_precision`` flags, restored after;
    only these are set: torch refuses a mix of them with the legacy ``allow_tf32``, which a torch older than
    2.9, without them, gets instead)."""
    if not hasattr(torch.backends.cudnn, "conv"):
        before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
        return
    holders = _flag_holders()
    previous = [h.fp32_precision for h in holders]
    for h in holders:
        h.fp32_precision = "tf32" if allowed else "ieee"
    try:
        yield
    finally:
        for h, value in zip(holders, previous, strict=True):
            h.fp32_precision = value


@dataclass(frozen=True)
class Precision:
    """One engine's precision mode on its device type (``"cpu"``, ``"cuda"``); see the module docstring."""

    mode: PrecisionMode = "exact"
    device_type: str = "cpu"

    def __post_init__(self) -> None:
        check_option(self.mode, PrecisionMode, "engine.precision")

    def check_dtype(self, dtype: torch.dtype) -> None:
        """A fast mode is a float32 mode."""
        if self.mode != "exact" and dtype != torch.float32:
            raise ValueError(
                f"engine.precision={self.mode!r} speeds up float32 kernels; with engine.dtype {dtype} use "
                "precision 'exact' (or dtype float32)"
            )

    def kernels(self) -> AbstractContextManager[None]:
        """The block's float32 kernels in this mode (evaluations): TF32 off for exact, on otherwise; nothing
        to set on a CPU."""
        if self.device_type != "cuda":
            return nullcontext()
        return _tf32(self.mode != "exact")

    @contextmanager
    def training(self) -> Iterator[None]:
        """The block's kernels as local training runs them: :meth:`kernels`, under bf16 autocast in bf16."""
        with self.kernels():
            if self.mode != "bf16":
                yield
                return
            with torch.autocast(self.device_type, dtype=torch.bfloat16):
                yield
