"""AFGA and CAFGA ("On the Data Heterogeneity in Adaptive Federated Learning", TMLR 2024,
Algorithms 1 and 2): FedAMSGrad whose local iterations re-sample the training clients and gossip among all
of them.

Round r (Algorithm 1)::

    S_r ← M of the N clients (uniformly, without replacement)                       line 3
    x^i_{r,0} ← x_r for every client i                                               line 4
    for t = 0..Z−1:
        S_{r,t} ← a fresh M of the N clients; each takes one SGD step on its own stream     lines 6-10
        X ← W X over all N clients (W doubly stochastic; ring by default)                  line 14
    Δ_r = (1/M) Σ_{i∈S_r} (x^i_{r,Z} − x_r); one AMSGrad server step (fedopt.amsgrad_server_step)  lines 17-22

CAFGA (Algorithm 2, ``cafga``) splits the clients into K contiguous clusters of n = N/K (cluster(i) = i // n),
draws m = M/K clients per cluster for S_r and for every S_{r,t}, and gossips inside each cluster only
(W = diag(W_1, …, W_K)); Δ_r averages all M uploads (line 20 read as 1/(Km)). K = 1 is AFGA.

Each client keeps one minibatch stream per round (``sim/batches.py``) and advances it only when it steps;
Z is the config's ``local_steps``. The gossip is one matrix product over the stacked client tensors
(``gossip.Mixer``, sparse for rings).

Options (every reading is documented in ``docs/readings.md``):

* ``resample=False``: S_{r,t} = S_r (Table 4's "+Gossip": non-selected clients hold x_r and gossip with
  the others); ``gossip=False``: W = I (Table 4's "+Re-sampling"). Both off is FedAMSGrad.
* ``comm_adapted`` (Table 5's AFGA (a) / CAFGA (a)): ``"selected_ring"`` — only S_r is online, all of S_r
  step at every iteration and gossip over a ring on S_r (per cluster); ``"active_ring"`` — S_{r,t} is
  re-sampled as usual and only S_{r,t} gossips, over a ring on S_{r,t} (per cluster).
* ``topology`` / ``rho`` / ``topology_seed``: the gossip graph inside each cluster (``gossip.topology``).
* Server: η = ``server_lr`` = 0.01, β1 = 0.9, β2 = 0.99, ε = ``tau`` = 1e-8, m_0 = v_0 = v̂_0 = 0, no bias
  correction (Eq. 2); ``variant="max_stabilization"`` is FedAMS's other option.

BatchNorm: running statistics are gossiped with the same W as the parameters; the server sets the global
ones to the plain average over S_r. Faults (``sim/faults.py``): a dropped client of S_r trains and gossips
but its upload is lost (Δ_r averages the others); a straggler of S_r stops after its fraction of the steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fairfl_core.algorithms.base import FederatedAlgorithm, RoundOutput, register
from fairfl_core.algorithms.fedopt import AmsgradVariant, amsgrad_server_step
from fairfl_core.algorithms.hyper import Hyper
from fairfl_core.gossip import CommAdapted, GossipHyper, Mixer, Topology, consensus_error, ring
from fairfl_core.selection import sample_clients
from fairfl_core.sim.context import Simulation

__all__ = ["AFGA", "AFGAHyper", "CAFGA", "CAFGAHyper", "stratified_sample"]


@dataclass
class AFGAHyper(Hyper):
    """The AMSGrad server step (AFGA Eq. 2) and the gossip settings (module docstring)."""

    server_lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-8
    variant: AmsgradVariant = "amsgrad"
    num_clusters: int = 1
    topology: Topology = "ring"
    rho: float | None = None
    topology_seed: int = 0
    resample: bool = True
    gossip: bool = True
    comm_adapted: CommAdapted | None = None

    def check(self) -> None:
        if not self.server_lr > 0:
            raise ValueError(f"server_lr (η) must be positive, got {self.server_lr}; AFGA uses 0.01")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must lie in [0, 1), got {getattr(self, name)}")
        if not self.tau > 0:
            raise ValueError(f"tau (ε) must be positive, got {self.tau}; AFGA's default is 1e-8")
        if self.comm_adapted is not None and not (self.resample and self.gossip):
            raise ValueError("comm_adapted replaces the gossip of AFGA: leave resample and gossip at True")


@dataclass
class CAFGAHyper(AFGAHyper):
    """CAFGA: AFGA with K = 5 clusters (the paper's experiments)."""

    num_clusters: int = 5


def stratified_sample(rng: np.random.Generator, clusters: np.ndarray, per_cluster: int) -> np.ndarray:
    """``per_cluster`` clients drawn uniformly without replacement inside every cluster (label order)."""
    return np.concatenate(
        [rng.choice(np.flatnonzero(clusters == k), per_cluster, replace=False) for k in np.unique(clusters)]
    )


@register("afga")
class AFGA(FederatedAlgorithm[AFGAHyper]):
    def __init__(self, sim: Simulation, hp: AFGAHyper) -> None:
        super().__init__(sim, hp)
        train = sim.train
        steps = train.local_steps if train.local_steps is not None else 1
        self.gossip = GossipHyper(
            sim.num_clients,
            train.clients_per_round,
            steps,
            num_clusters=hp.num_clusters,
            topology=hp.topology,
            rho=hp.rho,
            topology_seed=hp.topology_seed,
            comm_adapted=hp.comm_adapted,
        )
        self.W = self.gossip.mixing_matrix() if hp.gossip else None  # None: W = I, no gossip
        self.state.update(
            m=torch.zeros_like(self.w), v=torch.zeros_like(self.w), v_hat=torch.zeros_like(self.w)
        )

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """M clients: uniform over all N for AFGA, m = M/K per cluster for CAFGA."""
        g = self.gossip
        if g.num_clusters == 1:
            return sample_clients(rng, g.num_clients, g.clients_per_round)
        return stratified_sample(rng, g.clusters, g.clients_per_cluster)

    def round(self, t: int) -> RoundOutput:
        sim, hp, n = self.sim, self.hp, self.sim.num_clients
        selected = self.sample(sim.rng(t, "select"))
        faults = sim.faults(t, selected)
        if not faults.uploaded.any():
            return self.skipped(selected, faults)
        online = hp.comm_adapted == "selected_ring"
        rows = selected if online else np.concatenate([selected, np.setdiff1d(np.arange(n), selected)])
        row_of = np.empty(n, dtype=np.int64)
        row_of[rows] = np.arange(len(rows))
        work = (
            None
            if faults.train_work is None
            else np.concatenate([faults.work, np.ones(len(rows) - len(selected))])
        )
        spec = sim.local_spec(t)
        stack = sim.engine.stack(rows, self.w, spec, sim.seed_for(t, "batches"), work)
        draws, messages = sim.rng(t, "resample"), 0
        mixer = self._round_mixer(rows)
        for _ in range(stack.schedule.num_steps):
            if online or not hp.resample:
                active = selected
            else:
                active = self.sample(draws)
            stack.step(row_of[np.sort(active)])
            if hp.comm_adapted == "active_ring":
                mixer = Mixer(self._rings(rows, active))
            if mixer is not None:
                stack.mix(mixer)
                messages += mixer.peer_messages
        result = stack.result()
        up = np.flatnonzero(faults.uploaded)
        delta = (result.params[torch.as_tensor(up)] - self.w).mean(0)
        consensus = consensus_error(result.params)
        w, m, v, v_hat = amsgrad_server_step(
            self.w,
            delta,
            self.state["m"],
            self.state["v"],
            self.state["v_hat"],
            lr=hp.server_lr,
            beta1=hp.beta1,
            beta2=hp.beta2,
            tau=hp.tau,
            variant=hp.variant,
        )
        self.state.update(w=w, m=m, v=v, v_hat=v_hat)
        if result.running is not None:
            self.adopt_running(result.running[torch.as_tensor(up)].mean(0))
        diagnostics = {
            "train_loss": result.train_loss[torch.as_tensor(up)].mean(),
            "consensus_error": consensus,
            "peer_messages": messages,
        }
        return self.report(selected, faults, diagnostics)

    def _round_mixer(self, rows: np.ndarray) -> Mixer | None:
        """The round's gossip over the stack's rows: W with rows and columns in stack order, a ring per
        cluster on S_r (``selected_ring``), or None (no gossip; ``active_ring`` builds one per iteration)."""
        if self.hp.comm_adapted == "selected_ring":
            return Mixer(self._rings(rows, rows))
        if self.W is None or self.hp.comm_adapted == "active_ring":
            return None
        return Mixer(self.W[np.ix_(rows, rows)])

    def _rings(self, rows: np.ndarray, members: np.ndarray) -> np.ndarray:
        """W over the stack's rows in which ``members`` gossip over a ring per cluster (ascending ids) and the
        other rows keep their models."""
        W = np.eye(len(rows))
        row_of = {c: r for r, c in enumerate(rows)}
        clusters = self.gossip.clusters[members]
        for k in np.unique(clusters):
            ids = np.sort(members[clusters == k])
            idx = np.array([row_of[c] for c in ids])
            W[np.ix_(idx, idx)] = ring(len(ids))
        return W


@register("cafga")
class CAFGA(AFGA):
    Hyper = CAFGAHyper
