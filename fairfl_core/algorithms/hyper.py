"""Hyperparameter groups that algorithms compose into their ``Hyper`` dataclass.

An algorithm's ``Hyper`` is a flat dataclass listing the groups it really has, plus its own fields, e.g.
``class FedEBAHyper(FedAvgHyper)`` or ``class DivFLHyper(ProxHyper)``: a group an algorithm does not take
never appears in its config. An option field is a ``Literal``, checked against its values by
``dataclass_io``; every group checks the ranges of its own fields in ``check``. ``Hyper.__post_init__`` runs
both, the ``check`` of every class in the MRO once, so a subclass never has to call its parents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fairfl_core.dataclass_io import check_literals

__all__ = [
    "Averaging",
    "ClientSampling",
    "FedAvgHyper",
    "Hyper",
    "Sampling",
    "ServerPluginHyper",
    "Weighting",
]

Sampling = Literal["uniform", "size"]
Weighting = Literal["size", "uniform"]


class Hyper:
    """Base of every hyperparameter dataclass: checks its ``Literal`` fields' options, then runs each class's
    own ``check`` (base classes first)."""

    def __post_init__(self) -> None:
        check_literals(self)
        for cls in reversed(type(self).__mro__):
            check = cls.__dict__.get("check")
            if check is not None:
                check(self)


@dataclass
class ClientSampling(Hyper):
    """Clients drawn uniformly or ∝ n_k (``sampling``), with or without ``replacement`` (FedEBA+ samples
    uniformly without replacement; q-FFL ∝ n_k with replacement)."""

    sampling: Sampling = "uniform"
    replacement: bool = False


@dataclass
class Averaging(Hyper):
    """The server's average w ← w + η_g Σ_k p_k (w_k − w): p_k ∝ n_k or 1/m (``weighting``), η_g
    (``server_lr``)."""

    weighting: Weighting = "size"
    server_lr: float = 1.0

    def check(self) -> None:
        if self.server_lr <= 0:
            raise ValueError(f"server_lr must be positive, got {self.server_lr}")


@dataclass
class ServerPluginHyper(Hyper):
    """Server plug-ins applied after the algorithm's aggregation (``server_plugins.py``): ``server_momentum``
    β ∈ [0, 1) (0 = off; FedEBA+ Table 10: 0.9) with ``server_momentum_lr`` η_m > 0, the step along the
    buffer (x ← x + η_m v; 1 = heavy-ball, 1 − β keeps the aggregate's own step size), ``variance_reduction``
    ``"none"`` | ``"fedvarp"`` (FedEBA+ Table 11), ``varp_weights`` ``"aggregation"`` | ``"uniform"`` (the p
    of FedVARP's correction)."""

    server_momentum: float = 0.0
    server_momentum_lr: float = 1.0
    variance_reduction: Literal["none", "fedvarp"] = "none"
    varp_weights: Literal["aggregation", "uniform"] = "aggregation"

    def check(self) -> None:
        if not 0 <= self.server_momentum < 1:
            raise ValueError(
                f"server_momentum must be in [0, 1) (0 = off; FedEBA+ Table 10 uses 0.9), got "
                f"{self.server_momentum}"
            )
        if self.server_momentum_lr <= 0:
            raise ValueError(f"server_momentum_lr must be positive, got {self.server_momentum_lr}")
        if self.server_momentum_lr != 1.0 and not self.server_momentum:
            raise ValueError(
                f"server_momentum_lr={self.server_momentum_lr} has no effect without server momentum: "
                "set server_momentum (e.g. 0.9) or leave server_momentum_lr at 1"
            )


@dataclass
class FedAvgHyper(ServerPluginHyper, Averaging, ClientSampling):
    """FedAvg's groups: client sampling, the weighted average, the server plug-ins."""
