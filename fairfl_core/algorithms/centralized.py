"""Centralized reference (Equitable-FL §5, the first row of Tables 2–3): the same model trained by minibatch
SGD on the pooled training data of all clients, evaluated like every federated method (per-client test
accuracies, σ_Acc, the pooled test set).

It runs through the runner like any algorithm: one "client" holds the union of the n clients' training
samples, and every round is the config's local work on it (``train.local_epochs`` epochs or
``train.local_steps`` steps of the same learning rate, batch size, momentum and weight decay), from the
current model, with no proximal term. The paper does not say how long Centralized trains (a reading, stated
in docs/readings.md): Equitable-FL's experiments run it with ``train.local_epochs=1``, i.e. K epochs over K
rounds. With BatchNorm the pooled run's running statistics become the global ones.

Faults, beyond the rule of ``base.py``: drawn over the n clients as for any round; a client whose round fails
(dropout) holds its data back, so the round trains on the pooled data of the clients that upload (a
straggler's data is there in full: the pooled run has no per-client work to cut).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairfl_core.algorithms.base import FederatedAlgorithm, RoundOutput, register
from fairfl_core.algorithms.hyper import Hyper

__all__ = ["Centralized", "CentralizedHyper"]


@dataclass
class CentralizedHyper(Hyper):
    """No hyperparameters of its own: the SGD settings are the config's ``train`` section."""


@register("centralized")
class Centralized(FederatedAlgorithm[CentralizedHyper]):
    def round(self, t: int) -> RoundOutput:
        sim, engine = self.sim, self.sim.engine
        everyone = np.arange(sim.num_clients)
        faults = sim.faults(t, everyone)
        if not faults.uploaded.any():
            return self.skipped(everyone, faults)
        spec = sim.local_spec(t)
        result = engine.train_pooled(faults.survivors, self.w, spec, sim.seed_for(t, "batches"))
        self.state["w"] = result.params[0]
        if result.running is not None:
            self.adopt_running(result.running[0])
        samples = int(engine.counts("train")[faults.survivors].sum())
        return self.report(everyone, faults, {"train_loss": result.train_loss[0], "samples": samples})
