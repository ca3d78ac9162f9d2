"""SubTrunc (Castillo J., Kaya, Ye, Hashemi, "Submodular Maximization Approaches for Equitable Client
Selection in Federated Learning", arXiv 2408.13683, eqs. 11–13, Algorithm 1): DivFL's selection with a
truncated reward for high-loss clients,

    W(S) = G(S) + λ · min(b, Σ_{i∈S} φ(f_i(w)))          (``selection/submodular.py``)

maximised by stochastic greedy with r candidates per step (eq. 17), then FedAvg's local SGD and an unweighted
average (Algorithm 1). λ = 0 is DivFL with the same settings. The distances and the greedy are DivFL's
selector (``divfl.ClientSelector``); W is the objective this file gives it.

Readings (the paper is silent; ``docs/readings.md``): the gradients in G are every client's full-batch
gradient at the current model, recomputed each round (``grad_mode="fresh"``; ``"stale"`` is the DivFL
reference's cache); f_i(w) is the current model's mean cross-entropy on client i's training set, recomputed
each round (``loss_mode="fresh"``; ``"stale"``: the loss each client last reported, at the model it
received); G's scale against H (``objective_scale``): ``"literal"``, eq. 9's sum over the N clients,
``"averaged"``, Ḡ/N, or ``"normalised"``, G/Ḡ(∅) (``selection/submodular.py``); ``distance_scale="mean"``
divides the distances by their mean first. Per round the server computes N gradients and, from the same
pass, N losses (``Engine.gradients_and_losses``; a separate pass where one of them is stale) and the N × N
distances.

Each round's record (diagnostics) tells, from the round's one greedy run (:func:`selection_trace`), whether H
moved the choice: G's gain gap between its best and second-best candidate (``g_gap_min``, ``g_gap_median``
over the greedy steps), H's largest spread over a step's candidates (``h_range_max``), the steps before H
saturates (``unsaturated_steps``) and those whose pick differs from G's best (``steered_steps``). A round
with no steered step is DivFL's round on the same gradients and draws: each pick is G's best of the same
pool, and the pools are drawn from the same stream over the same unselected clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, Plan, Update, Uploads, register
from fairfl_core.algorithms.divfl import ClientSelector, DivFLHyper, GradMode
from fairfl_core.algorithms.fedavg import average_step
from fairfl_core.algorithms.fedprox import proximal_spec
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.algorithms.server_plugins import remember_rows
from fairfl_core.selection.facility_location import DistanceScale, FacilityLocation, pairwise_distances
from fairfl_core.selection.submodular import (
    GreedyMethod,
    ObjectiveScale,
    Phi,
    selection_trace,
    subtrunc_objective,
    trace_summary,
)
from fairfl_core.sim.context import Simulation

__all__ = ["SelectionHyper", "SubTrunc", "SubTruncHyper"]


@dataclass
class SelectionHyper(DivFLHyper):
    """The SubTrunc paper's defaults for DivFL's fields (stochastic greedy, fresh gradients, an unweighted
    average; ``pool_size`` r None: DivFL's max(κ, ⌊subsample · N⌋), 10 for N = 100) and the scale of G."""

    greedy: GreedyMethod = "stochastic"
    grad_mode: GradMode = "fresh"
    weighting: Weighting = "uniform"
    distance_scale: DistanceScale = "none"


@dataclass
class SubTruncHyper(SelectionHyper):
    """``lam`` λ ≥ 0 (Table I: 0.95 MNIST, 0.50 CIFAR-10), ``budget`` b > 0 (1.10), ``phi`` φ
    (``"log1p"`` = ln(1 + x) or ``"identity"``), ``loss_mode``, ``objective_scale`` (module docstring)."""

    lam: float = 0.95
    budget: float = 1.10
    phi: Phi = "log1p"
    loss_mode: Literal["fresh", "stale"] = "fresh"
    objective_scale: ObjectiveScale = "averaged"

    def check(self) -> None:
        if not self.lam >= 0:
            raise ValueError(f"lam (λ) must be ≥ 0 (0 is DivFL), got {self.lam}")
        if not self.budget > 0:
            raise ValueError(f"budget (b) must be > 0 (the paper uses 1.10), got {self.budget}")


@register("subtrunc")
class SubTrunc(FederatedAlgorithm[SubTruncHyper]):
    def __init__(self, sim: Simulation, hp: SubTruncHyper) -> None:
        super().__init__(sim, hp)
        self.selector = ClientSelector(sim, hp)
        if hp.loss_mode == "stale":
            self.state["losses"] = self.client_losses()

    def configure(self, t: int) -> Plan:
        """Round t's maximiser of W, with the :func:`trace_summary` of its greedy run as the round's notes."""
        objective = self.round_objective(t)
        selection = self.selector.select(t, objective)
        notes = trace_summary(selection_trace(objective, selection.clients, selection.pools or None))
        return Plan(selection.clients, proximal_spec(self.sim, t, self.hp.mu, self.w), notes=notes)

    def choose(self, t: int) -> np.ndarray:
        """The m clients maximising W (eq. 13)."""
        return self.selector.select(t, self.round_objective(t)).clients

    def client_losses(self, clients: np.ndarray | None = None) -> np.ndarray:
        """f_i(w): the current model's mean training loss of each client (all of them by default)."""
        return self.sim.engine.losses(self.w, clients, "train")[0].cpu().double().numpy()

    def round_objective(self, t: int) -> FacilityLocation:
        """Round t's W over the selector's distances; with fresh gradients and fresh losses, both from one
        pass over every client's data."""
        if self.hp.grad_mode == "fresh" and self.hp.loss_mode == "fresh":
            grads, losses = self.sim.engine.gradients_and_losses(self.w, np.arange(self.sim.num_clients))
            return self.objective(t, pairwise_distances(grads), losses.cpu().double().numpy())
        return self.objective(t, self.selector.distances(self.state, self.w))

    def objective(self, t: int, dist: np.ndarray, losses: np.ndarray | None = None) -> FacilityLocation:
        """W(S) over ``dist`` and the clients' ``losses`` f_i(w) (None: per ``loss_mode``)."""
        if losses is None:
            losses = self.state["losses"] if self.hp.loss_mode == "stale" else self.client_losses()
        hp = self.hp
        return subtrunc_objective(
            dist,
            losses,
            lam=hp.lam,
            budget=hp.budget,
            phi=hp.phi,
            distance_scale=hp.distance_scale,
            objective_scale=hp.objective_scale,
        )

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """FedAvg's step, with the choice's diagnostics; with stale losses, the uploading clients report their
        loss at the model received, and with stale gradients, their gradient (the selector's refresh)."""
        if self.hp.loss_mode == "stale":
            fresh = self.client_losses(uploads.clients)
            remember_rows(self.state["losses"], uploads.clients, fresh)
        self.selector.refresh(self.state, self.w, uploads.clients)
        update = average_step(self.sim, self.w, uploads, self.hp)
        update.diagnostics.update(plan.notes)
        return update
