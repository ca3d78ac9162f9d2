"""PropFair (Zhang, Malekmohammadi, Chen, Yu, TMLR 2023, "Proportional Fairness in Federated Learning").

Proportional fairness maximises Σ_k log(M − f_k(θ)) (the Nash bargaining solution with disagreement
point M); each client runs plain local SGD on a surrogate of its mean minibatch loss f. We follow the
official code (huawei-noah/Federated-Learning ``FairFL/algs/algorithms.py``, class ``PropFair``; the same
rule in vaseline555/AAggFF ``src/client/propfairclient.py``)::

    L(f) = −log(1 − f/M)     if M − f ≥ ε       (log barrier: ∇L = ∇f / (M − f))
    L(f) = f / M             if M − f < ε       (default, ``huber=False``: ∇L = ∇f / M)
    L(f) = f / ε             if M − f < ε       (``huber=True``: ∇L = ∇f / ε)

The paper's Alg. 1 writes the barrier as −log(M − f) and its Huber-style continuation as
−log ε + (f − (M − ε))/ε; both differ from the code's forms by constants only, so ``huber=True`` trains
exactly as the paper's formula (only the reported surrogate value differs). The code's default
continuation f/M cuts the slope from ≈ 1/ε to 1/M past the threshold ("to avoid divergence" for badly
fitted batches). Both references fix ε = 0.2 and use plain SGD at the FedAvg learning rate, no clipping.
With FedEBA+'s Table 1 setting M = ε = 0.2 every positive loss is past the threshold under either
continuation, so PropFair is FedAvg on 5·f (5× the learning rate; what that does at FedEBA+'s η = 0.1:
``docs/readings.md``). Aggregation is FedAvg's.
Defaults: FedEBA+ Table 1/6 (M = 0.2, ε = "thres" = 0.2), continuation as in the official code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from fairfl_core.algorithms.base import Plan, register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper, select_clients

__all__ = ["PropFair", "PropFairHyper", "propfair_objective"]


@dataclass
class PropFairHyper(FedAvgHyper):
    """``M``: the baseline (disagreement point) of the bargaining game; ``eps``: the margin below M where
    the log barrier stops (FedEBA+'s "thres"); ``huber``: continue past it with f/ε (paper Alg. 1, the
    official code's ``huber=True``) instead of f/M (the official default)."""

    M: float = 0.2
    eps: float = 0.2
    huber: bool = False

    def check(self) -> None:
        if not self.M > 0:
            raise ValueError(f"M (the PropFair baseline) must be positive, got {self.M}")
        if not self.eps > 0:
            raise ValueError(f"eps (the PropFair threshold) must be positive, got {self.eps}")


def propfair_objective(loss: torch.Tensor, M: float, eps: float, huber: bool = False) -> torch.Tensor:
    """PropFair's surrogate of a mean minibatch loss f (official code; see the module docstring).

    The branch test is the code's ``M − f < ε``. Branch-free (``torch.where``) so it runs under ``vmap``;
    the log only sees losses of its own branch (others are replaced by 0 first), so the unused branch never
    produces NaN gradients, also for f ≥ M.
    """
    beyond = M - loss < eps
    barrier = -torch.log1p(-torch.where(beyond, torch.zeros_like(loss), loss) / M)
    return torch.where(beyond, loss / (eps if huber else M), barrier)


@register("propfair")
class PropFair(FedAvg[PropFairHyper]):
    def configure(self, t: int) -> Plan:
        objective = functools.partial(propfair_objective, M=self.hp.M, eps=self.hp.eps, huber=self.hp.huber)
        return Plan(select_clients(self.sim, t, self.hp), self.sim.local_spec(t, objective=objective))
