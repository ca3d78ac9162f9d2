"""Decentralised baselines of AFGA's Table 8 (TMLR 2024, §6): DSGD (Lian et al., NeurIPS 2017, "Can
decentralized algorithms outperform centralized algorithms?") and Gossip-PGA (Chen et al., ICML 2021,
"Accelerating gossip SGD with periodic global averaging").

There is no server: every client i keeps its own model x_i across rounds. A round is Z = ``local_steps``
iterations; in each, every client takes one SGD step on its own minibatch stream and then all gossip,
adapt-then-combine (Lian et al.'s ATC form, the order AFGA uses)::

    x_i ← Σ_j W_ij (x_j − γ ∇F_j(x_j; ξ_j))

PGA replaces the gossip of the round's last iteration by the exact average x_i ← (1/N) Σ_j x_j, i.e. the
global average every H = Z iterations. The paper gives none of their settings; fairfl follows its "same
training settings": all N clients active at every iteration, the ring, γ = the config's lr, and the
average model x̄ = (1/N) Σ_i x_i is the one evaluated. BatchNorm: each client keeps its running statistics
across rounds, gossiped with W (averaged by PGA); the evaluated ones are their average. DAdam, the third
baseline of Table 8, is ``dadam.py``.

Faults, beyond the rule of ``base.py``: a failed client takes no local step that round (a straggler its
fraction of them); every client still gossips. A round in which every client fails changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, RoundOutput, register
from fairfl_core.algorithms.hyper import Hyper
from fairfl_core.gossip import Mixer, Topology, consensus_error, topology
from fairfl_core.sim.context import Simulation

if TYPE_CHECKING:
    from fairfl_core.sim.client_stack import ClientStack

__all__ = ["DSGD", "DSGDHyper", "PGA"]


@dataclass
class DSGDHyper(Hyper):
    """The gossip graph over all N clients (``gossip.topology``): ring by default."""

    topology: Topology = "ring"
    rho: float | None = None
    topology_seed: int = 0


D = TypeVar("D", bound=DSGDHyper, covariant=True)


@register("dsgd")
class DSGD(FederatedAlgorithm[D]):
    Hyper = DSGDHyper
    average_each_round: ClassVar[bool] = False

    def __init__(self, sim: Simulation, hp: D) -> None:
        super().__init__(sim, hp)
        n = sim.num_clients
        self.W = topology(hp.topology, n, rho=hp.rho, seed=hp.topology_seed)
        self.state["models"] = self.w.expand(n, -1).clone()
        if "running" in self.state:
            self.state["client_running"] = self.state["running"].expand(n, -1).clone()

    def round(self, t: int) -> RoundOutput:
        sim, n = self.sim, self.sim.num_clients
        everyone = np.arange(n)
        faults = sim.faults(t, everyone)
        if not faults.uploaded.any():
            return self.skipped(everyone, faults)
        work = faults.work * faults.uploaded  # a dropped client takes no step, a straggler its share
        stack = sim.engine.stack(
            everyone,
            self.state["models"],
            sim.local_spec(t),
            sim.seed_for(t, "batches"),
            None if (work == 1).all() else work,
            self.state.get("client_running"),
        )
        mixer = Mixer(self.W)
        steps = stack.schedule.num_steps
        for z in range(steps):
            self.iteration(stack, mixer, last=z == steps - 1)
        result = stack.result()
        diagnostics = {
            "train_loss": result.train_loss.mean(),
            "consensus_error": consensus_error(result.params),
            "peer_messages": (steps - int(self.average_each_round)) * mixer.peer_messages,
        }
        models, running = result.params, result.running
        if self.average_each_round:
            models = models.mean(0).expand(n, -1).clone()
            running = None if running is None else running.mean(0).expand(n, -1).clone()
        self.state.update(models=models, w=models.mean(0))
        if running is not None:
            self.state["client_running"] = running
            self.adopt_running(running.mean(0))
        return self.report(everyone, faults, diagnostics)

    def iteration(self, stack: ClientStack, mixer: Mixer, last: bool) -> None:
        """One iteration, adapt then combine: every client steps on its own minibatch, then all gossip (PGA:
        the round's last gossip is replaced by the exact average, taken after the loop)."""
        stack.step()
        if not (self.average_each_round and last):
            stack.mix(mixer)


@register("pga")
class PGA(DSGD[DSGDHyper]):
    """Gossip-PGA: DSGD with the exact global average in place of the gossip every Z iterations."""

    average_each_round = True
