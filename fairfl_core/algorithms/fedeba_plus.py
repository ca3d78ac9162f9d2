"""FedEBA+ (Alg. 1) and Prac-FedEBA+ (Alg. 3) of Wang, Wang, Shi, Karimireddy & Tang, "Entropy-driven Fair
and Effective Federated Learning": EBA aggregation (``fedeba.py``) plus an alignment update chosen each
round by the fair-angle test on the losses L_i = F_i(x_t) of the received model (on the training split)::

    φ_t = arccos(⟨L, 1⟩ / (‖L‖ √n))          (Alg. 1 line 7; tan φ_t = std(L)/mean(L), population std)

**FedEBA+** (``"fedeba+"``), α ∈ [0, 1], θ in degrees:

* φ_t > θ, gradient alignment (Eqs. 10–11; one extra communication exchange): the server forms
  g̃ = Σ_i p̃_i ∇F_i(x_t), p̃ = softmax(L/τ), and every local step uses h = (1 − α)∇F_i(x; ξ) + α g̃;
  Δ_t = Σ_i p_i Δ_i with the EBA weights p of the post-training losses (line 15);
* otherwise, model alignment (Eqs. 8–9): plain local SGD and Δ_t = (1 − α) Σ_i p_i Δ_i + α Σ_i q_i Δ̃^a_i,
  Δ̃^a_i = x^i_{t,1} − x^i_{t,0} = −η_t ∇F_i(x_t; ξ) a one-step update (q = the ``weighting``: Eq. 9's mean,
  size-weighted with ``"size"``);
* x_{t+1} = x_t + η Δ_t; the local lr decays through ``train.lr_decay`` (App. L.1's decay rate 0.999, per
  round).

∇F_i(x_t) is "one local update" (the paper's wording): ``fair_grad="minibatch"`` (default) one minibatch of
size B, drawn from its own random stream (the engine returns only the final local model, so it is not
literally the first minibatch of the local run; same distribution), or ``"full"`` the client's whole training
set; the same gradient gives Δ̃^a. ``model_align_scale="local_steps"`` multiplies Δ̃^a_i by K_i (a reading
that puts Δ̃^a on the scale of Δ_i; default ``"one_step"`` is Eq. 8 literally). α = 0 is FedEBA: no alignment,
no extra exchange.
``entropy_weights=False`` replaces p and p̃ by q: the ablation "FedAvg+②" of Table 15.

``fair_grad_units``: ``"update"`` (default; g̃ = Σ p̃_i (x_t − x^i_{t,1}) = η_t Σ p̃_i ∇F_i(x_t), the one-step
model update that the paper's wording "(i.e., one local update)" may mean) or ``"gradient"`` (Eqs. 10–11
literally, g̃ = Σ p̃_i ∇F_i(x_t)). They differ by the factor η_t inside every local step. With the paper's
η_L = 0.1, K = 10, α = 0.9 the literal g̃ moves every local model by K η_L α g̃ = 0.9 g̃ along one fixed
direction per round, and FedEBA+ diverges on Table 1's own workload in rounds 6–13; the update units train,
at an effective local rate of about 0.02 (``docs/readings.md``). The default is therefore the reading that
can produce the paper's tables, and the one every experiment runs.

**Prac-FedEBA+** (``"prac_fedeba+"``, default θ = 15°): plain local SGD and no extra exchange. If φ_t > θ,
g̃ = Σ_i p̃_i (1/K_i) Σ_k ∇F_i(x^i_{t,k}; ξ) = −Σ_i p̃_i Δ_i/(η_t K_i) (Eq. 12, exact for plain SGD),
Δ̂_i = (1 − α)Δ_i − α η_t K_i g̃ and Δ_t = Σ_i p_i Δ̂_i, i.e. with equal K
Δ_t = (1 − α) Σ_i p_i Δ_i + α Σ_j p̃_j Δ_j; otherwise Eq. 8 with Δ̃_i = Δ_i/K_i (with x^i_{t,K}; the box's
x^i_{t,K−1} would need the model before the last local step, which the engine does not return).
The current round's updates are used (Alg. 3 box).

Per-round diagnostics: ``fair_angle`` (degrees), ``branch`` ("gradient", "model" or "none" when α = 0),
``extra_comms`` (cumulative extra exchanges), ``extra_cost`` = extra / (rounds + extra) (Table 3), and
FedEBA's weight entropy.

Faults, beyond the rule of ``base.py``: FedEBA+'s exchanges before local training (the losses L_i for the
fair-angle test, ∇F_i(x_t) for g̃ and Δ̃^a) involve every selected client, since a client drops out only
before its upload; the EBA weights p (over the post-training losses), Δ_t and Eq. 9's mean of Δ̃^a use the
survivors only, renormalised over them (``model_align_scale``'s K_i is the scheduled count, fixed before
training). Prac-FedEBA+ sends its losses with the update, so its fair-angle test, p̃ and p all run over the
survivors, and K_i is the number of local steps client i completed (a straggler's ⌈f K_i⌉: Eq. 12's mean
gradient is over the steps taken).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from fairfl_core.algorithms.base import Plan, Update, Uploads, register
from fairfl_core.algorithms.fedavg import FedAvg, select_clients
from fairfl_core.algorithms.fedeba import EBAWeighting, FedEBAHyper
from fairfl_core.algorithms.hyper import Hyper
from fairfl_core.metrics import extra_communication_fraction
from fairfl_core.sim.batches import steps_per_client
from fairfl_core.sim.context import Simulation

__all__ = [
    "Alignment",
    "AlignmentPlan",
    "FedEBAPlus",
    "FedEBAPlusHyper",
    "PracFedEBAPlus",
    "PracFedEBAPlusHyper",
    "alignment_diagnostics",
    "fair_angle",
    "fair_angle_test",
    "local_steps",
    "model_alignment_update",
    "prac_fair_update",
]


@dataclass
class Alignment(Hyper):
    """``alpha``: alignment weight α ∈ [0, 1] (α = β/τ of Eq. 7; paper 0.9); ``theta``: fair angle θ in
    degrees, gradient alignment iff φ_t > θ."""

    alpha: float = 0.9
    theta: float = 0.0

    def check(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha (alignment weight) must be in [0, 1] (0 = FedEBA), got {self.alpha}")
        if not 0 <= self.theta <= 180:
            raise ValueError(f"theta (fair angle) must be in degrees within [0, 180], got {self.theta}")


@dataclass
class FedEBAPlusHyper(Alignment, FedEBAHyper):
    """Alg. 1 defaults (Table 1: α = 0.9, τ = 0.1, θ = 0°); ``fair_grad``, ``fair_grad_units`` and
    ``model_align_scale``: see the module docstring."""

    fair_grad: Literal["minibatch", "full"] = "minibatch"
    fair_grad_units: Literal["gradient", "update"] = "update"
    model_align_scale: Literal["one_step", "local_steps"] = "one_step"


@dataclass
class PracFedEBAPlusHyper(Alignment, FedEBAHyper):
    """Alg. 3 with the paper's recommended θ = 15° (α, τ not stated: FedEBA+'s 0.9 and 0.1)."""

    theta: float = 15.0


def fair_angle(losses: torch.Tensor | np.ndarray | Sequence[float]) -> float:
    """φ = arccos(⟨L, 1⟩ / (‖L‖ √n)) in degrees (FedEBA+ Alg. 1 line 7).

    Evaluated as atan2(std(L), mean(L)) (population std): ‖L‖² = n (mean² + var), so both are the same
    angle, but this form is exact for equal losses (φ = 0) and accurate for small angles. 0 for L = 0.
    """
    values = torch.as_tensor(losses, dtype=torch.float64)
    return math.degrees(math.atan2(float(values.std(correction=0)), float(values.mean())))


def model_alignment_update(
    deltas: torch.Tensor, p: torch.Tensor, one_step: torch.Tensor, q: torch.Tensor, alpha: float
) -> torch.Tensor:
    """Δ_t = (1 − α) Σ_i p_i Δ_i + α Σ_i q_i Δ̃_i (FedEBA+ Eqs. 8–9): ``deltas``/``one_step`` ``[K, P]``."""
    return (1 - alpha) * (p @ deltas) + alpha * (q @ one_step)


def prac_fair_update(
    deltas: torch.Tensor, p: torch.Tensor, p_tilde: torch.Tensor, alpha: float, steps: torch.Tensor
) -> torch.Tensor:
    """Prac-FedEBA+'s fairness branch (Alg. 3 lines 14–16) with η_t g̃ = −Σ_j p̃_j Δ_j / K_j (Eq. 12):

    Δ_t = Σ_i p_i [(1 − α) Δ_i − α η_t K_i g̃] = (1 − α) Σ_i p_i Δ_i + α (Σ_i p_i K_i) Σ_j p̃_j Δ_j / K_j.
    """
    steps = torch.as_tensor(steps).to(deltas)
    return (1 - alpha) * (p @ deltas) + alpha * (p @ steps) * (p_tilde @ (deltas / steps[:, None]))


@dataclass
class AlignmentPlan:
    """FedEBA+'s exchanges before local training, per selected client: the losses L_i = F_i(x_t), the fair
    angle, the branch it selects, and for model alignment the one-step updates Δ̃^a ``[K, P]``."""

    pre_losses: torch.Tensor
    fair_angle: float
    branch: str
    one_step: torch.Tensor | None = None


def fair_angle_test(losses: torch.Tensor, hp: Alignment) -> AlignmentPlan:
    """φ_t of the losses and the branch it selects (Alg. 1 line 7): gradient alignment iff φ_t > θ; α = 0
    aligns nothing (FedEBA)."""
    angle = fair_angle(losses)
    branch = "none" if hp.alpha == 0 else ("gradient" if angle > hp.theta else "model")
    return AlignmentPlan(losses, angle, branch)


def local_steps(sim: Simulation, t: int, clients: np.ndarray) -> torch.Tensor:
    """K_i: the local steps scheduled for each client in round t (equal in steps mode)."""
    spec = sim.local_spec(t)
    counts = sim.engine.counts("train")[clients]
    return torch.as_tensor(steps_per_client(counts, spec.batch_size, spec.steps, spec.epochs))


def alignment_diagnostics(t: int, plan: AlignmentPlan, extra_comms: int) -> dict[str, Any]:
    """The round's ``fair_angle``, ``branch``, ``extra_comms`` (the state's count of extra exchanges) and
    ``extra_cost`` = extra / (rounds + extra) (Table 3)."""
    extra = int(extra_comms)
    return {
        "fair_angle": plan.fair_angle,
        "branch": plan.branch,
        "extra_comms": extra,
        "extra_cost": extra_communication_fraction(extra, t + 1),
    }


@register("fedeba+")
class FedEBAPlus(FedAvg[FedEBAPlusHyper]):
    """Alg. 1: the EBA weighting (``fedeba.py``) with the alignment chosen by the fair-angle test. State:
    ``extra_comms``, the count of gradient-alignment rounds (each one extra exchange, Eqs. 10–11)."""

    def __init__(self, sim: Simulation, hp: FedEBAPlusHyper) -> None:
        super().__init__(sim, hp)
        self.eba = EBAWeighting(sim, hp)
        self.state["extra_comms"] = 0

    def one_step_gradients(self, t: int, clients: np.ndarray) -> torch.Tensor:
        """∇F_i(x_t) ``[K, P]``: one minibatch step at lr 1 (``fair_grad="minibatch"``) or the full split."""
        if self.hp.fair_grad == "full":
            return self.sim.engine.gradients(self.w, clients, "train")
        spec = self.sim.local_spec(t, lr=1.0, steps=1, epochs=None, momentum=0.0, weight_decay=0.0)
        moved = self.sim.engine.train(clients, self.w, spec, self.sim.seed_for(t, "one_step")).params
        return self.w - moved

    def configure(self, t: int) -> Plan:
        """Alg. 1 lines 6–11: the test on the received model's losses, then g̃ mixed into every local step
        (gradient alignment) or the one-step updates Δ̃^a kept for the server (model alignment)."""
        clients = select_clients(self.sim, t, self.hp)
        notes = fair_angle_test(self.sim.engine.losses(self.w, clients, "train")[0], self.hp)
        spec = self.sim.local_spec(t)
        if notes.branch == "gradient":
            fair = self.eba.weights(t, clients, notes.pre_losses, self.w) @ self.one_step_gradients(
                t, clients
            )
            if self.hp.fair_grad_units == "update":
                fair = self.sim.lr(t) * fair  # Σ p̃_i (x_t − x^i_{t,1})
            spec = self.sim.local_spec(t, mix_alpha=self.hp.alpha, mix_vector=fair)
        elif notes.branch == "model":
            one_step = -self.sim.lr(t) * self.one_step_gradients(t, clients)
            if self.hp.model_align_scale == "local_steps":
                one_step = one_step * local_steps(self.sim, t, clients).to(one_step)[:, None]
            notes.one_step = one_step
        return Plan(clients, spec, notes=notes)

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """Alg. 1 line 15 (Δ_t = Σ_i p_i Δ_i after gradient alignment) or line 23 (Eqs. 8–9), then line 25."""
        notes, deltas = plan.notes, uploads.params - self.w
        if notes.branch == "gradient":
            self.state["extra_comms"] = self.state["extra_comms"] + 1
        p, diagnostics = self.eba.round_weights(t, uploads, self.w)
        if notes.branch == "model":
            one_step, q = uploads.kept(notes.one_step), self.eba.prior(uploads.clients, self.w)
            delta = model_alignment_update(deltas, p, one_step, q, self.hp.alpha)
        else:
            delta = p @ deltas
        diagnostics.update(alignment_diagnostics(t, notes, self.state["extra_comms"]))
        return self.eba.update(self.w, delta, p, diagnostics)


@register("prac_fedeba+")
class PracFedEBAPlus(FedAvg[PracFedEBAPlusHyper]):
    """Alg. 3: FedAvg's local training, the EBA weighting (``fedeba.py``) and the alignment of the current
    round's updates. State: ``extra_comms``, always 0 (no extra exchange), as FedEBA+ reports it."""

    def __init__(self, sim: Simulation, hp: PracFedEBAPlusHyper) -> None:
        super().__init__(sim, hp)
        self.eba = EBAWeighting(sim, hp)
        self.state["extra_comms"] = 0

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        """The losses of the received model are uploaded with the update, so the fair-angle test, p̃ and p
        run over the clients whose upload arrives, with the local steps each completed."""
        clients, deltas = uploads.clients, uploads.params - self.w
        notes = fair_angle_test(self.sim.engine.losses(self.w, clients, "train")[0], self.hp)
        steps = torch.as_tensor(uploads.steps).to(deltas)
        p, diagnostics = self.eba.round_weights(t, uploads, self.w)
        if notes.branch == "gradient":
            p_tilde = self.eba.weights(t, clients, notes.pre_losses, self.w)
            delta = prac_fair_update(deltas, p, p_tilde, self.hp.alpha, steps)
        elif notes.branch == "model":
            q = self.eba.prior(clients, self.w)
            delta = model_alignment_update(deltas, p, deltas / steps[:, None], q, self.hp.alpha)
        else:
            delta = p @ deltas
        diagnostics.update(alignment_diagnostics(t, notes, self.state["extra_comms"]))
        return self.eba.update(self.w, delta, p, diagnostics)
