"""GIFAIR-FL-Global with FedProx local training: the GIFAIR-FL baseline of Equitable-FL (§5, "all baselines
use FedProx local updates"), with the planted clusters as oracle groups.

The local step is GIFAIR-FL-Global's (``gifair_global.py``: the client's gradient scaled by
1 + λ r_k / (p_k |A_{s_k}|)) plus FedProx's proximal drift μ (w − w_k), which is not scaled. Sampling is
uniform and the average ∝ n_k over the participants, as for Equitable-FL's FedProx baseline; λ = 0 is
FedProx. Faults as in ``gifair_global.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fairfl_core.algorithms.base import Plan, register
from fairfl_core.algorithms.fedprox import Proximal
from fairfl_core.algorithms.gifair_global import GIFAIRGlobal, GIFAIRHyper

__all__ = ["GIFAIRGlobalProx", "GIFAIRProxHyper"]


@dataclass
class GIFAIRProxHyper(Proximal, GIFAIRHyper):
    """GIFAIR-FL-Global's fields and FedProx's ``mu``; uniform sampling with the n_k-weighted average."""

    sampling: str = "uniform"
    weighting: str = "size"


@register("gifair_global_prox")
class GIFAIRGlobalProx(GIFAIRGlobal):
    Hyper = GIFAIRProxHyper

    def configure(self, t: int) -> Plan:
        plan = super().configure(t)
        return replace(plan, spec=replace(plan.spec, prox_mu=self.hp.mu, prox_ref=self.w))
