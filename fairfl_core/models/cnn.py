"""Plain convolutional classifiers, all built by one parameterised class, :class:`ConvNet`.

Each conv layer is ``Conv2d → ReLU`` optionally followed by ``MaxPool2d(2)``; then an optional global
average pool, flatten, optional dropout, ``(Linear → ReLU)*``, optional dropout, and the head ``Linear``.
The flatten width is computed from ``in_channels`` and ``input_size`` (square inputs), so every preset
also runs on stand-in data of another shape (e.g. ``cnn_cifar10`` on 1×28×28 Fashion-MNIST).

Presets (paper values are the defaults):

==========================  ==========================================================================
``cnn_cifar10``             FedEBA+ App. L.1 / easyFL-FedFV CIFAR-10 CNN: conv 3-64-64 (5×5) + pools,
                            1600-384-192-10; 797,962 params (= the paper's "30.4MB/round" for 10 clients)
``cnn_cifar10_narrow``      FedEBA+ Table 21: conv 3-32-32, 800-128-64-10
``cnn_cifar10_wide``        FedEBA+ Table 21: conv 3-128-128, 3200-384-192-10 (the paper prints 1600,
                            which cannot follow 128 channels of 5×5; 128·5·5 = 3200 is used)
``cnn_cifar10_shallow``     FedEBA+ Table 22: one conv 3-64 (5×5), global average pool, 64-384-192-10
``cnn_cifar10_deep``        FedEBA+ Table 22: conv 3-64-128-128 (3×3, each + pool: 32→30→15→13→6→4→2),
                            512-384-192-10
``lenet5_mnist``            SubTrunc/UnionFL "LeNet" (§V), 1×28×28, conv1 padding 2; 61,706
``lenet5_cifar10``          same on 3×32×32 without padding; 62,006. Also Equitable-FL's CIFAR-10 CNN
                            (§5.1: conv 3→6→16 5×5; the FC widths 120/84 are the classic LeNet-5 ones)
``equitable_cnn_cifar100``  Equitable-FL §5.1: 5 conv (3×3, padding 1) + ReLU, 3 max-pools,
                            8192-512-100 (the paper gives no widths: 64-128-256-256-512 are ours)
``equitable_cnn_femnist``   Equitable-FL §5.1: conv 1-32-64 (5×5, no padding) + pools, Dropout(0.2),
                            1024-512-62
``leaf_cnn_femnist``        LEAF ``models/femnist/cnn.py``: conv 1-32-64 (5×5, "same") + pools,
                            3136-2048-62; 6,603,710 params
``ditto_cnn_femnist``       Ditto ``flearn/models/femnist/cnn.py`` (GIFAIR-FL §5.1: 2 conv + 2 FC layers):
                            conv 1-16-32 (5×5, "same") + pools, Dropout(0.25), 1568-128, Dropout(0.5), 128-62
==========================  ==========================================================================

``features`` returns the input of the head: the post-ReLU output of the last hidden Linear (Equitable-FL's
activation layer h, Def. 1: d = 84 for ``lenet5_cifar10``, 512 for both Equitable CNNs), including the
dropout that the reference applies just before the last layer (Ditto; identity in eval mode).

Initialisation: PyTorch defaults (the TensorFlow references use Glorot-uniform kernels and zero biases).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from fairfl_core.models.dropout import SeededDropout
from fairfl_core.models.mlp import dense_stack


class ConvLayer(NamedTuple):
    """One ``Conv2d(k×k, padding) → ReLU [→ MaxPool2d(2)]`` block."""

    out_channels: int
    kernel_size: int
    padding: int = 0
    pool: bool = True


class ConvNet(nn.Module):
    """Conv blocks → [global avg pool] → flatten → [dropout] → (Linear → ReLU)* → [dropout] → head."""

    def __init__(
        self,
        *,
        in_channels: int,
        input_size: int,
        convs: Sequence[ConvLayer],
        hidden: Sequence[int],
        num_classes: int,
        global_pool: bool = False,
        flat_dropout: float = 0.0,
        head_dropout: float = 0.0,
    ):
        super().__init__()
        layers: list[nn.Module] = []
        channels, size = in_channels, input_size
        for layer in convs:
            layers += [nn.Conv2d(channels, layer.out_channels, layer.kernel_size, padding=layer.padding)]
            layers += [nn.ReLU()] + ([nn.MaxPool2d(2)] if layer.pool else [])
            channels = layer.out_channels
            size = (size + 2 * layer.padding - layer.kernel_size + 1) // (2 if layer.pool else 1)
            if size < 1:
                raise ValueError(
                    f"input_size={input_size} is too small for this network's {len(convs)} conv layers "
                    f"(feature map shrinks to nothing); use the dataset's real image size (e.g. 28 or 32)"
                )
        if global_pool:
            layers.append(nn.AdaptiveAvgPool2d(1))
            size = 1
        layers.append(nn.Flatten())
        layers += [SeededDropout(flat_dropout)] if flat_dropout else []
        layers += dense_stack(channels * size * size, hidden)
        layers += [SeededDropout(head_dropout)] if head_dropout else []
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(hidden[-1] if hidden else channels * size * size, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _conv_preset(in_channels: int, input_size: int, num_classes: int, **architecture):
    def build(
        *, num_classes: int = num_classes, in_channels: int = in_channels, input_size: int = input_size
    ) -> ConvNet:
        return ConvNet(
            in_channels=in_channels, input_size=input_size, num_classes=num_classes, **architecture
        )

    return build


_FEDFV_FC = (384, 192)
_L = ConvLayer
PRESETS = {
    "cnn_cifar10": _conv_preset(3, 32, 10, convs=[_L(64, 5), _L(64, 5)], hidden=_FEDFV_FC),
    "cnn_cifar10_narrow": _conv_preset(3, 32, 10, convs=[_L(32, 5), _L(32, 5)], hidden=(128, 64)),
    "cnn_cifar10_wide": _conv_preset(3, 32, 10, convs=[_L(128, 5), _L(128, 5)], hidden=_FEDFV_FC),
    "cnn_cifar10_shallow": _conv_preset(
        3, 32, 10, convs=[_L(64, 5, pool=False)], global_pool=True, hidden=_FEDFV_FC
    ),
    "cnn_cifar10_deep": _conv_preset(3, 32, 10, convs=[_L(64, 3), _L(128, 3), _L(128, 3)], hidden=_FEDFV_FC),
    "lenet5_mnist": _conv_preset(1, 28, 10, convs=[_L(6, 5, padding=2), _L(16, 5)], hidden=(120, 84)),
    "lenet5_cifar10": _conv_preset(3, 32, 10, convs=[_L(6, 5), _L(16, 5)], hidden=(120, 84)),
    "equitable_cnn_cifar100": _conv_preset(
        3,
        32,
        100,
        convs=[_L(64, 3, 1, False), _L(128, 3, 1), _L(256, 3, 1, False), _L(256, 3, 1), _L(512, 3, 1)],
        hidden=(512,),
    ),
    "equitable_cnn_femnist": _conv_preset(
        1, 28, 62, convs=[_L(32, 5), _L(64, 5)], flat_dropout=0.2, hidden=(512,)
    ),
    "leaf_cnn_femnist": _conv_preset(1, 28, 62, convs=[_L(32, 5, 2), _L(64, 5, 2)], hidden=(2048,)),
    "ditto_cnn_femnist": _conv_preset(
        1, 28, 62, convs=[_L(16, 5, 2), _L(32, 5, 2)], flat_dropout=0.25, hidden=(128,), head_dropout=0.5
    ),
}
