"""The penultimate activation of a model as a module of its own, for ``functional_call``."""

from __future__ import annotations

from torch import nn

__all__ = ["FeatureView"]


class FeatureView(nn.Module):
    """A model whose ``forward`` is ``model.features(x)`` (parameter names prefixed ``inner.``)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.inner = model

    def forward(self, x):
        return self.inner.features(x)
