"""FedAvg (McMahan et al., 2017): the base every algorithm here extends through its hooks.

One round: ``select`` → ``local_spec`` (what local training does) → engine trains → ``reports`` (extra
client statistics) → ``aggregate`` → ``server_step`` → ``after_round`` → ``diagnostics``. Subclasses
override hooks only. Aggregation: w ← w + η_g Σ_k p_k (w_k − w), p_k ∝ n_k over the selected clients or
uniform.

Server plug-ins (``ServerPluginHyper``, FedEBA+ App. M Tables 10–11, spec §2.9) act in ``server_step`` on
the pseudo-gradient Δ_t = x_new − x_t of whatever the algorithm's ``aggregate`` returned, so they compose
with every algorithm whose Hyper derives from ``ServerPluginHyper`` (all that derive from ``FedAvgHyper``):

* ``variance_reduction="fedvarp"`` (FedVARP, Jhunjhunwala, Sharma, Nagarkatti & Joshi, UAI 2022, Alg. 1):
  the server keeps each client's last update y_j (``[N, P]``, zeros at start) and corrects
  Δ_t ← Δ_t + η_g (ȳ − Σ_{i∈S_t} p_i y_i), ȳ = (1/N) Σ_j y_j, then y_i ← x_i − x_t for i ∈ S_t. For
  FedAvg with p_i = 1/|S_t| this is FedVARP's v_t = (1/|S_t|) Σ_i (Δ_i − y_i) + ȳ. ``varp_weights``:
  ``"aggregation"`` (default) p = the algorithm's ``weights`` hook (FedEBA+: the EBA weights; spec A21:
  "apply EBA weights where FedAvg uses uniform weights"), ``"uniform"`` p_i = 1/|S_t| as FedVARP prints it;
* ``server_momentum`` β > 0 (Table 10: 0.9; Hsu et al. 2019): v ← β v + Δ_t, x_{t+1} = x_t + v. For
  FedAvg this is FedAvgM (``fedavgm``: v ← β v + Σ p_k Δ_k, x ← x + η_g v; the buffer here is η_g v).

FedVARP is applied first, momentum to its corrected Δ_t. With both off (the defaults) ``server_step``
returns the aggregated model itself: every algorithm runs exactly as without the plug-ins.

Faults (``faults`` config, ``sim/faults.py``): ``round`` draws which selected clients fail right after
``select``; ``local_spec`` still sees every selected client (what the server sends before training), and
every hook after training sees only the clients whose upload arrives and their results (a straggler's is
its truncated local model). FedAvg therefore renormalises p_k ∝ n_k (or 1/|S|) over the survivors, FedVARP
corrects with and remembers only the survivors' updates, and the algorithms built on these hooks update
their per-client server state for survivors only (each module's docstring says how it treats faults). A
round in which no upload arrives leaves the model and the state unchanged and is recorded
(``"skipped": true``); the diagnostics of every round with faults enabled carry ``faults``: the kind, the
failed client ids and how many uploaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from fairfl_core.algorithms.base import RoundOutput, register
from fairfl_core.selection import sample_clients
from fairfl_core.sim.faults import RoundFaults
from fairfl_core.sim.local import LocalResult, LocalSpec

__all__ = [
    "FedAvg",
    "FedAvgHyper",
    "ServerPluginHyper",
    "fedvarp_correction",
    "momentum_velocity",
    "remember_updates",
]

SAMPLING = ("uniform", "size")
WEIGHTING = ("size", "uniform")
VARIANCE_REDUCTION = ("none", "fedvarp")
VARP_WEIGHTS = ("aggregation", "uniform")


@dataclass
class ServerPluginHyper:
    """Server plug-ins applied after the algorithm's aggregation (module docstring): ``server_momentum``
    β ∈ [0, 1) (0 = off; FedEBA+ Table 10: 0.9), ``variance_reduction`` ``"none"`` | ``"fedvarp"`` (Table
    11), ``varp_weights`` ``"aggregation"`` | ``"uniform"`` (the p of FedVARP's correction; spec A21)."""

    server_momentum: float = 0.0
    variance_reduction: str = "none"
    varp_weights: str = "aggregation"

    def __post_init__(self):
        if not 0 <= self.server_momentum < 1:
            raise ValueError(
                f"server_momentum must be in [0, 1) (0 = off; FedEBA+ Table 10 uses 0.9), got "
                f"{self.server_momentum}"
            )
        if self.variance_reduction not in VARIANCE_REDUCTION:
            raise ValueError(
                f"variance_reduction must be one of {VARIANCE_REDUCTION}, got {self.variance_reduction!r}"
            )
        if self.varp_weights not in VARP_WEIGHTS:
            raise ValueError(f"varp_weights must be one of {VARP_WEIGHTS}, got {self.varp_weights!r}")


NO_PLUGINS = ServerPluginHyper()


def momentum_velocity(velocity: torch.Tensor, step: torch.Tensor, beta: float) -> torch.Tensor:
    """Server momentum buffer v ← β v + Δ_t (Hsu et al. 2019; FedEBA+ Table 10); x_{t+1} = x_t + v."""
    return beta * velocity + step


def fedvarp_correction(memory: torch.Tensor, clients: np.ndarray, p: torch.Tensor) -> torch.Tensor:
    """FedVARP's control variate ȳ − Σ_{i∈S_t} p_i y_i (Jhunjhunwala et al. 2022, Alg. 1, p_i = 1/|S_t|):
    ``memory`` ``[N, P]`` holds each client's last update y_j, ȳ its mean over all N clients."""
    rows = torch.as_tensor(clients, device=memory.device)
    return memory.mean(dim=0) - p.to(memory) @ memory[rows]


def remember_updates(memory: torch.Tensor, clients: np.ndarray, deltas: torch.Tensor) -> torch.Tensor:
    """y_i ← Δ_i for the selected clients (first occurrence when sampled with replacement), out of place
    so that saved states stay put."""
    ids, first = np.unique(clients, return_index=True)
    rows = torch.as_tensor(ids, device=memory.device)
    return memory.index_copy(0, rows, deltas[torch.as_tensor(first, device=deltas.device)].to(memory))


@dataclass
class FedAvgHyper(ServerPluginHyper):
    """``sampling``: clients drawn uniformly or ∝ n_k; ``weighting``: p_k ∝ n_k or 1/m (the papers vary:
    FedEBA+ samples uniformly without replacement and weights by size; q-FFL samples ∝ n_k and averages)."""

    sampling: str = "uniform"
    replacement: bool = False
    weighting: str = "size"
    server_lr: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if self.sampling not in SAMPLING:
            raise ValueError(f"sampling must be one of {SAMPLING}, got {self.sampling!r}")
        if self.weighting not in WEIGHTING:
            raise ValueError(f"weighting must be one of {WEIGHTING}, got {self.weighting!r}")
        if self.server_lr <= 0:
            raise ValueError(f"server_lr must be positive, got {self.server_lr}")


@register("fedavg")
class FedAvg:
    Hyper: ClassVar[type] = FedAvgHyper
    personalized: ClassVar[bool] = False
    name: ClassVar[str]

    def __init__(self, sim, hp):
        self.sim, self.hp = sim, hp
        self.faults: RoundFaults | None = None  # the fault draw of the round in progress (set by ``round``)
        self.state: dict[str, Any] = {"w": sim.engine.init_params()}
        if self.plugins.server_momentum:
            self.state["server_velocity"] = torch.zeros_like(self.w)
        if self.plugins.variance_reduction == "fedvarp":
            self.state["varp_memory"] = self.w.new_zeros(sim.num_clients, self.w.numel())

    @property
    def w(self) -> torch.Tensor:
        return self.state["w"]

    @property
    def plugins(self) -> ServerPluginHyper:
        """The server plug-in settings: the Hyper itself, or none for a Hyper without them (AFL's)."""
        return self.hp if isinstance(self.hp, ServerPluginHyper) else NO_PLUGINS

    # -- the round ----------------------------------------------------------------------------------------
    def round(self, t: int) -> RoundOutput:
        selected = self.select(t)
        faults = self.faults = self.sim.faults(t, selected)
        if not faults.uploaded.any():  # nothing reaches the server: the model and the state stay as they are
            return RoundOutput(selected, {"faults": faults.record(), "skipped": True})
        result = self.sim.engine.train(
            selected, self.w, self.local_spec(t, selected), self.sim.seed_for(t, "batches"), faults.train_work
        )
        clients, result = faults.survivors, faults.kept(result)  # what the server receives
        reports = self.reports(t, clients, result)
        self.state["w"] = self.server_step(
            t, clients, result, reports, self.aggregate(t, clients, result, reports)
        )
        self.after_round(t, clients, result, reports)
        diagnostics = self.diagnostics(t, clients, result, reports)
        if faults.kind != "none":
            diagnostics["faults"] = faults.record()
        return RoundOutput(selected, diagnostics)

    # -- hooks ---------------------------------------------------------------------------------------------
    def select(self, t: int) -> np.ndarray:
        probs = self.sim.train_sizes if self.hp.sampling == "size" else None
        return sample_clients(
            self.sim.rng(t, "select"),
            self.sim.num_clients,
            self.sim.train.clients_per_round,
            probs,
            self.hp.replacement,
        )

    def local_spec(self, t: int, clients: np.ndarray) -> LocalSpec:
        return self.sim.local_spec(t)

    def reports(self, t: int, clients: np.ndarray, result: LocalResult) -> dict[str, Any]:
        return {}

    def weights(self, t: int, clients: np.ndarray, reports: dict[str, Any]) -> torch.Tensor:
        if self.hp.weighting == "uniform":
            p = np.full(len(clients), 1.0 / len(clients))
        else:
            n = self.sim.train_sizes[clients]
            p = n / n.sum()
        return torch.as_tensor(p, dtype=self.w.dtype, device=self.w.device)

    def aggregate(
        self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any]
    ) -> torch.Tensor:
        p = self.weights(t, clients, reports)
        return self.w + self.hp.server_lr * (p @ (result.params - self.w))

    def server_step(
        self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any], new_w: torch.Tensor
    ) -> torch.Tensor:
        """The server plug-ins on Δ_t = ``new_w`` − x_t (module docstring); ``new_w`` when none is on."""
        plugins = self.plugins
        if not plugins.server_momentum and plugins.variance_reduction == "none":
            return new_w
        step = new_w - self.w
        if plugins.variance_reduction == "fedvarp":
            if plugins.varp_weights == "uniform":
                p = torch.full((len(clients),), 1.0 / len(clients), dtype=self.w.dtype, device=self.w.device)
            else:
                p = self.weights(t, clients, reports)
            memory = self.state["varp_memory"]
            server_lr = getattr(self.hp, "server_lr", 1.0)  # η_g; a Hyper without one steps with 1
            step = step + server_lr * fedvarp_correction(memory, clients, p)
            self.state["varp_memory"] = remember_updates(memory, clients, result.params - self.w)
        if plugins.server_momentum:
            step = self.state["server_velocity"] = momentum_velocity(
                self.state["server_velocity"], step, plugins.server_momentum
            )
        return self.w + step

    def after_round(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any]) -> None:
        pass

    def diagnostics(self, t: int, clients: np.ndarray, result: LocalResult, reports: dict[str, Any]) -> dict:
        return {"train_loss": float(result.train_loss.mean())}

    # -- what gets evaluated and checkpointed ---------------------------------------------------------------
    def eval_params(self) -> torch.Tensor:
        """The global model reported at evaluation time."""
        return self.w

    def personal_params(self) -> torch.Tensor | None:
        """Per-client models ``[K, P]`` for personalised methods (None otherwise)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        return dict(self.state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = dict(state)
