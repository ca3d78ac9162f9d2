"""CIFAR ResNet-18 (He et al., 2016), as used by FedEBA+ (CIFAR-100, App. L.1), Equitable-FL (all four
datasets, §5) and AFGA (CIFAR-10, Table 6).

CIFAR variant: 3×3 stem conv with 64 channels, stride 1, no max-pool; BasicBlocks [2, 2, 2, 2] with widths
64/128/256/512 and strides 1/2/2/2 (1×1 conv + norm shortcut where the shape changes); global average pool;
``head = Linear(512, num_classes)``. 11,173,962 parameters for 10 classes, 11,220,132 for
100; for 1-channel inputs (MNIST/FEMNIST in Equitable-FL) set ``in_channels=1``.

Normalisation (no paper states how it is handled in FL):

* ``norm="group"`` (default): ``GroupNorm(groups, C)`` with ``groups=2`` by default, the usual
  replacement of BatchNorm in FL (Hsieh et al., 2020; Reddi et al., 2021). No running statistics, so the
  model is a pure function of its parameters: the natural choice for the stacked ``torch.func`` engine.
* ``norm="batch"``: ``BatchNorm2d`` as in the papers' code bases. The engine stacks its running statistics
  per client like the parameters; in train mode each client's are updated in its own slice, and evaluation
  runs in eval mode with the server's average (``sim/engine.py``).

Both normalisations have the same parameter count (a weight and a bias per channel).
``features`` is the 512-d global-average-pooled vector (Equitable-FL's activation layer, d = 512).
Initialisation: PyTorch defaults.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

NORMS = ("group", "batch")
WIDTHS = (64, 128, 256, 512)


def norm2d(kind: str, channels: int, groups: int) -> nn.Module:
    return nn.GroupNorm(groups, channels) if kind == "group" else nn.BatchNorm2d(channels)


class BasicBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int, norm: str, groups: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.norm1 = norm2d(norm, out_channels, groups)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.norm2 = norm2d(norm, out_channels, groups)
        reshape = stride != 1 or in_channels != out_channels
        self.shortcut = (
            nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                norm2d(norm, out_channels, groups),
            )
            if reshape
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 3, norm: str = "group", groups: int = 2):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"norm={norm!r} is not supported; use one of {NORMS}")
        if norm == "group" and WIDTHS[0] % groups:
            raise ValueError(
                f"groups={groups} must divide every width {WIDTHS}; use a divisor of 64 (e.g. 2)"
            )
        stem = [nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False), norm2d(norm, 64, groups), nn.ReLU()]
        blocks, channels = [], 64
        for width, stride in zip(WIDTHS, (1, 2, 2, 2), strict=True):
            blocks += [
                BasicBlock(channels, width, stride, norm, groups),
                BasicBlock(width, width, 1, norm, groups),
            ]
            channels = width
        self.body = nn.Sequential(*stem, *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(WIDTHS[-1], num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def resnet18(
    *, num_classes: int = 10, in_channels: int = 3, norm: str = "group", groups: int = 2
) -> ResNet18:
    return ResNet18(num_classes, in_channels, norm, groups)


PRESETS = {"resnet18": resnet18}
