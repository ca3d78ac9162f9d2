"""FedAvgM: FedAvg with server momentum (Hsu, Qi & Brown, 2019, Alg. "FedAvgM"; FedEBA+ Table 10).

The server treats the averaged client update as a step direction and keeps a momentum buffer::

    Δ̄ = Σ_k p_k (w_k − w)
    v ← β v + Δ̄
    w ← w + η_g v

This is FedAvg with the server-momentum plug-in (``server_momentum`` = β, ``server_plugins.py``), whose
buffer is η_g v, so the iterates are the same; ``fedavgm`` only turns it on by default with FedEBA+
Table 10's β = 0.9. β = 0 is FedAvg exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairfl_core.algorithms.base import register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper

__all__ = ["FedAvgM", "FedAvgMHyper"]


@dataclass
class FedAvgMHyper(FedAvgHyper):
    """``server_momentum``: β ∈ [0, 1) (FedEBA+ Table 10: 0.9); ``server_lr`` is η_g."""

    server_momentum: float = 0.9


@register("fedavgm")
class FedAvgM(FedAvg[FedAvgMHyper]):
    """FedAvg with the server-momentum plug-in on by default (module docstring)."""
