"""Fully connected models: the 2-hidden-layer MLP and multinomial logistic regression.

* ``mlp`` — FedEBA+ (App. L.1: "MLP with 2 hidden layers" on MNIST/FMNIST; easyFL/FedFV MLP) and
  Equitable-FL's MNIST "simple neural network" (§5.1): ``784 → 200 → ReLU → 200 → ReLU → 10``, 199,210
  parameters.
* ``mlp_cifar10`` — FedEBA+ Table 9 (CIFAR-10 with the MLP): ``3072 → 200 → 200 → 10``.
* ``logreg`` — multinomial logistic regression for LEAF/FedProx Synthetic(α, β): ``60 → 10`` (q-FFL
  reference ``flearn/models/synthetic/mclr.py``; its L2 penalty 0.001 on the kernel belongs to the loss,
  not to the model).

Initialisation: PyTorch defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def dense_stack(in_features: int, hidden: Sequence[int]) -> list[nn.Module]:
    """``Linear → ReLU`` for every width in ``hidden`` (shared by the MLPs and the CNN classifiers)."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_features, width), nn.ReLU()]
        in_features = width
    return layers


class MLP(nn.Module):
    """Flatten → (Linear → ReLU)* → head Linear.

    ``features`` is the post-ReLU output of the last hidden layer (Equitable-FL's "activation layer"
    h = φ(z), Def. 1), or the flattened input when ``hidden`` is empty (logistic regression).
    """

    def __init__(self, in_features: int, hidden: Sequence[int], num_classes: int):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), *dense_stack(in_features, hidden))
        self.head = nn.Linear(hidden[-1] if hidden else in_features, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _mlp_preset(in_features: int, hidden: tuple[int, ...], num_classes: int):
    def build(*, in_features: int = in_features, num_classes: int = num_classes) -> MLP:
        return MLP(in_features, hidden, num_classes)

    return build


PRESETS = {
    "mlp": _mlp_preset(784, (200, 200), 10),
    "mlp_cifar10": _mlp_preset(3 * 32 * 32, (200, 200), 10),
    "logreg": _mlp_preset(60, (), 10),
}
