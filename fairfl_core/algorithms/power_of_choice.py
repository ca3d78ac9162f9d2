"""Power-of-Choice (Cho, Wang, Joshi, 2020, π_pow-d), FedProx local training (μ = 0: FedAvg).

Each round: d candidates drawn without replacement ∝ p_k = n_k / n (``sampling="size"``); each reports
F_k(w) on its whole training set at the global model; the m candidates with the highest loss train;
aggregation is the plain mean 1/m (importance is already in the sampling). d defaults to min(N, 2m), the
setting Equitable-FL's baseline section reads as "pow-d". The SubTrunc paper gives no d; its experiments here
use d = N (the DivFL reference's loss-based mode, docs/readings.md).

Faults, beyond the rule of ``base.py``: the candidates report their losses before training; of the m that
train, the survivors are averaged (1/|survivors|).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import average_step
from fairfl_core.algorithms.fedprox import Proximal, proximal_spec
from fairfl_core.algorithms.hyper import Averaging, Sampling, ServerPluginHyper, Weighting
from fairfl_core.selection import sample_clients
from fairfl_core.selection.power_of_choice import default_candidates, highest_loss_clients
from fairfl_core.sim.context import Simulation

__all__ = ["PowerOfChoice", "PowerOfChoiceHyper"]


@dataclass
class PowerOfChoiceHyper(Proximal, ServerPluginHyper, Averaging):
    """``d``: candidate-set size (None → min(N, 2m)), drawn without replacement; ``sampling``: candidates
    ∝ n_k or uniform."""

    sampling: Sampling = "size"
    weighting: Weighting = "uniform"
    mu: float = 0.0
    d: int | None = None

    def check(self) -> None:
        if self.d is not None and self.d < 1:
            raise ValueError(
                f"d must be a positive number of candidates (or null for min(N, 2m)), got {self.d}"
            )


@register("power_of_choice")
class PowerOfChoice(FederatedAlgorithm[PowerOfChoiceHyper]):
    def __init__(self, sim: Simulation, hp: PowerOfChoiceHyper) -> None:
        super().__init__(sim, hp)
        m, n, d = sim.train.clients_per_round, sim.num_clients, self.num_candidates
        if not m <= d <= n:
            raise ValueError(
                f"d = {d} must lie between clients_per_round ({m}) and the number of clients ({n})"
            )

    @property
    def num_candidates(self) -> int:
        if self.hp.d is not None:
            return self.hp.d
        return default_candidates(self.sim.num_clients, self.sim.train.clients_per_round)

    def configure(self, t: int) -> Plan:
        return Plan(self.choose(t), proximal_spec(self.sim, t, self.hp.mu, self.w))

    def choose(self, t: int) -> np.ndarray:
        """The m highest-loss clients of d candidates."""
        probs = self.sim.train_sizes if self.hp.sampling == "size" else None
        candidates = sample_clients(
            self.sim.rng(t, "candidates"), self.sim.num_clients, self.num_candidates, probs, replace=False
        )
        losses, _ = self.sim.engine.losses(self.w, candidates)
        return highest_loss_clients(candidates, losses.cpu().numpy(), self.sim.train.clients_per_round)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step over the survivors."""
        return average_step(self.sim, self.w, uploads, self.hp)
