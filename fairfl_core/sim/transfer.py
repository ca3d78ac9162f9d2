"""Host → device copies that do not make the host wait.

Every random draw and every bit of bookkeeping (client selection, minibatch schedules, step masks, dropout
noise) is made on the CPU and then moved to the engine's device (``docs/scaling.md``). On a CUDA device a
plain ``.to(device)`` of pageable memory blocks the host until the copy is done, so each of a step's few small
copies stalls the launch queue; :func:`to_device` stages the values in pinned memory and copies them
asynchronously on the current stream instead (the staging buffer is kept alive by torch's pinned-memory
allocator until the copy completes). On a CPU it is ``torch.as_tensor``: the same tensor as before.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["to_device"]


def to_device(
    values: np.ndarray | torch.Tensor | list, device: torch.device | str, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``values`` as a tensor on ``device`` (of ``dtype``, default theirs), copied without a host wait."""
    t = torch.as_tensor(values, dtype=dtype)
    if torch.device(device).type != "cuda" or t.device.type != "cpu":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)
