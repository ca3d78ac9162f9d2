"""ConvMixer-h-d (Trockman & Kolter, 2022), AFGA's CIFAR-10/100 model (ConvMixer-256-8, AFGA §6).

``Conv2d(C, h, k=patch, stride=patch) → GELU → BN``, then ``depth`` × [residual(depthwise
``Conv2d(h, h, kernel, groups=h, padding="same") → GELU → BN``) → pointwise ``Conv2d(h, h, 1) → GELU → BN``],
global average pool, ``head = Linear(h, num_classes)``. Kernel 5 and patch 2 are the ConvMixer authors'
CIFAR defaults (the paper states only "256-8"): 594,186 parameters for 10 classes, 617,316 for 100.

BatchNorm as in the original; the engine keeps its running statistics per client (``sim/engine.py``).
``features`` is the pooled h-d vector. Initialisation: PyTorch defaults.
"""

from __future__ import annotations

import torch
from torch import nn


def _conv_gelu_bn(conv: nn.Conv2d) -> nn.Sequential:
    return nn.Sequential(conv, nn.GELU(), nn.BatchNorm2d(conv.out_channels))


class Residual(nn.Module):
    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.inner(x)


class ConvMixer(nn.Module):
    def __init__(
        self, dim: int, depth: int, kernel_size: int, patch_size: int, num_classes: int, in_channels: int
    ):
        super().__init__()
        mixers = [
            nn.Sequential(
                Residual(_conv_gelu_bn(nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"))),
                _conv_gelu_bn(nn.Conv2d(dim, dim, 1)),
            )
            for _ in range(depth)
        ]
        patches = _conv_gelu_bn(nn.Conv2d(in_channels, dim, patch_size, stride=patch_size))
        self.body = nn.Sequential(patches, *mixers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(dim, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def convmixer(
    *,
    num_classes: int = 10,
    in_channels: int = 3,
    dim: int = 256,
    depth: int = 8,
    kernel_size: int = 5,
    patch_size: int = 2,
) -> ConvMixer:
    return ConvMixer(dim, depth, kernel_size, patch_size, num_classes, in_channels)


PRESETS = {"convmixer": convmixer}
