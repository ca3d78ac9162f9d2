"""Server plug-ins that compose with any algorithm (FedEBA+ App. M, Tables 10–11).

They act on the pseudo-gradient Δ_t = x_new − x_t of whatever the algorithm's ``aggregate`` returned, for
every algorithm whose Hyper includes ``ServerPluginHyper``:

* ``variance_reduction="fedvarp"`` (FedVARP, Jhunjhunwala, Sharma, Nagarkatti & Joshi, UAI 2022, Alg. 1): the
  server keeps each client's last update y_j (``[N, P]``, zeros at start) and corrects
  Δ_t ← Δ_t + η_g (ȳ − Σ_{i∈S_t} p_i y_i), ȳ = (1/N) Σ_j y_j, then y_i ← x_i − x_t for i ∈ S_t. For FedAvg
  with p_i = 1/|S_t| this is FedVARP's v_t = (1/|S_t|) Σ_i (Δ_i − y_i) + ȳ. ``varp_weights``:
  ``"aggregation"`` (default) p = the weights the algorithm aggregated with (FedEBA+: the EBA weights, the
  paper's "apply EBA weights where FedAvg uses uniform weights", ``docs/readings.md``), ``"uniform"``
  p_i = 1/|S_t| as FedVARP prints it;
* ``server_momentum`` β > 0 (Table 10: 0.9; Hsu et al. 2019): v ← β v + Δ_t, x_{t+1} = x_t + η_m v, η_m =
  ``server_momentum_lr``. In a steady state the server moves η_m / (1 − β) times each round's Δ_t (Hsu et
  al.'s effective learning rate): η_m = 1 (the default, heavy-ball) moves it 10 times at β = 0.9, η_m = 1 − β
  once, i.e. v is then an exponential average of the Δ_t. Table 10 reads "global momentum = 0.9 and learning
  rate η = 0.1" with η_m = 0.1 (``papers/fedeba_plus/readings.md``). For FedAvg with η_m = 1 this is FedAvgM
  (``fedavgm``: v ← β v + Σ p_k Δ_k, x ← x + η_g v; the buffer here is η_g v).

FedVARP is applied first, momentum to its corrected Δ_t. With both off (the defaults) the aggregated model
is the next model: every algorithm runs exactly as without the plug-ins. Under faults, FedVARP corrects with
and remembers only the uploads that arrived.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import torch

from fairfl_core.algorithms.hyper import Hyper, ServerPluginHyper
from fairfl_core.sim.transfer import to_device

__all__ = ["ServerPlugins", "fedvarp_correction", "momentum_velocity", "remember_rows"]

Memory = TypeVar("Memory", torch.Tensor, np.ndarray)


def momentum_velocity(velocity: torch.Tensor, step: torch.Tensor, beta: float) -> torch.Tensor:
    """Server momentum buffer v ← β v + Δ_t (Hsu et al. 2019; FedEBA+ Table 10); x_{t+1} = x_t + η_m v."""
    return beta * velocity + step


def fedvarp_correction(memory: torch.Tensor, clients: np.ndarray, p: torch.Tensor) -> torch.Tensor:
    """FedVARP's control variate ȳ − Σ_{i∈S_t} p_i y_i (Jhunjhunwala et al. 2022, Alg. 1, p_i = 1/|S_t|):
    ``memory`` ``[N, P]`` holds each client's last update y_j, ȳ its mean over all N clients."""
    rows = to_device(clients, memory.device)
    return memory.mean(dim=0) - p.to(memory) @ memory[rows]


def remember_rows(memory: Memory, clients: np.ndarray, values: Memory) -> None:
    """``memory[i] ← values[row of i]`` for the clients of a round (the first row of a client drawn twice
    with replacement), in place (a copy of an ``[N, P]`` memory each round would cost more than the round's
    aggregation; ``state_dict`` snapshots). Every per-client server memory uses it (FedVARP's y_i, Ditto's
    v_k, FedFV's gradient history, GIFAIR-FL's loss cache, ...); a tensor or a numpy array."""
    ids, first = np.unique(clients, return_index=True)
    if isinstance(memory, np.ndarray):
        memory[ids] = np.asarray(values)[first]
        return
    rows = to_device(ids, memory.device)
    memory.index_copy_(0, rows, values[to_device(first, values.device)].to(memory))


class ServerPlugins:
    """The plug-ins chosen by a Hyper (none for a Hyper without ``ServerPluginHyper``) and their state keys
    in the algorithm's checkpointed ``state``: ``server_velocity`` ``[P]``, ``varp_memory`` ``[N, P]``."""

    def __init__(self, hp: Hyper) -> None:
        self.momentum, self.momentum_lr, self.fedvarp, self.uniform_varp = 0.0, 1.0, False, False
        if isinstance(hp, ServerPluginHyper):
            self.momentum, self.momentum_lr = hp.server_momentum, hp.server_momentum_lr
            self.fedvarp = hp.variance_reduction == "fedvarp"
            self.uniform_varp = hp.varp_weights == "uniform"

    def init_state(self, w: torch.Tensor, num_clients: int) -> dict[str, torch.Tensor]:
        state = {}
        if self.momentum:
            state["server_velocity"] = torch.zeros_like(w)
        if self.fedvarp:
            state["varp_memory"] = w.new_zeros(num_clients, w.numel())
        return state

    def apply(
        self,
        state: dict[str, Any],
        new_w: torch.Tensor,
        clients: np.ndarray,
        params: torch.Tensor,
        weights: torch.Tensor | None,
        server_lr: float,
    ) -> torch.Tensor:
        """x_{t+1} from the algorithm's ``new_w`` (``state["w"]`` is still x_t); updates the plug-ins' state.

        ``params``: the uploaded models ``[K, P]`` of ``clients``; ``weights``: the p the algorithm averaged
        them with (None: uniform); ``server_lr``: its η_g."""
        if not self.momentum and not self.fedvarp:
            return new_w
        w = state["w"]
        step = new_w - w
        if self.fedvarp:
            uniform = torch.full((len(clients),), 1.0 / len(clients), dtype=w.dtype, device=w.device)
            p = uniform if self.uniform_varp or weights is None else weights
            memory = state["varp_memory"]
            step = step + server_lr * fedvarp_correction(memory, clients, p)
            remember_rows(memory, clients, params - w)
        if self.momentum:
            state["server_velocity"] = momentum_velocity(state["server_velocity"], step, self.momentum)
            step = self.momentum_lr * state["server_velocity"]
        return w + step
