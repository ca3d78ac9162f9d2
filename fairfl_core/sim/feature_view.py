"""The penultimate activation of a model as a module of its own, for ``functional_call``."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
from torch import nn

__all__ = ["FeatureView"]


class FeatureView(nn.Module):
    """A model whose ``forward`` is ``model.features(x)`` (parameter names prefixed ``inner.``)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.inner = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cast(Callable[[torch.Tensor], torch.Tensor], self.inner.features)(x)
