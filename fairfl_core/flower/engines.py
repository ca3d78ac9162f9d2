"""The two engines of a fairfl Flower run.

* On a node: fairfl's own :class:`~fairfl_core.sim.engine.Engine`, built from the experiment config as
  ``run_experiment`` builds it (``runner.build_engine``), once per process (:func:`node_engine`).
* In the ServerApp: :class:`FlowerEngine`, the ``sim.engine`` the algorithm sees. The model, the partition's
  metadata (client count, sample counts, groups), the BatchNorm running statistics and the official (pooled)
  test set are the server's, from a local Engine; every computation on a client's data (``train``,
  ``losses``, ``gradients``, ``features``) is one request per client to that client's node, which answers it
  with the same Engine method for that client alone (``node.py``). Anything else that would read client data
  inside the server raises :class:`~fairfl_core.flower.support.FlowerUnsupported`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import torch

from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.runner import build_engine
from fairfl_core.flower.support import FlowerUnsupported
from fairfl_core.flower.wire import Payload, array, dump_objects, spec_payload, tensor
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalResult, LocalSpec, SampleLoss

if TYPE_CHECKING:
    from fairfl_core.sim.protocol import ClientEngine

__all__ = ["LOSS", "STAT", "Exchange", "FlowerEngine", "node_engine"]

# (message type, the fairfl client of each request, the requests) → the replies, in the same order
Exchange = Callable[[str, np.ndarray, list[Payload]], list[Payload]]

STAT = "stat."  # prefix of a training statistic in a train reply
LOSS = "loss"  # a custom per-sample loss of an evaluate or query.gradients request (restricted pickle)
SERVER_SIDE = frozenset(
    "model space stats_space dtype device data running set_running_stats init_params counts pooled "
    "pooled_group_counts".split()
)


@lru_cache(maxsize=2)
def node_engine(experiment: str) -> Engine:
    """The engine of the experiment config ``experiment`` (JSON), built once per process."""
    return build_engine(ExperimentConfig.from_dict(json.loads(experiment)).validate())


class FlowerEngine:
    """``sim.engine`` of a ServerApp's algorithm (module docstring): ``local`` holds what the server owns,
    ``exchange`` sends requests to the clients' nodes, ``experiment`` (the config as JSON) tells a node
    which engine answers them."""

    def __init__(self, local: Engine, exchange: Exchange, experiment: str):
        self.local, self.exchange, self.experiment = local, exchange, experiment
        self.calls = 0  # numbers the requests: two identical ones still are two messages

    def __getattr__(self, name: str):
        if name in SERVER_SIDE:
            return getattr(self.local, name)
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "stack":
            raise FlowerUnsupported(
                "engine.stack steps clients side by side and mixes their models between local steps "
                "(gossip); Flower routes messages only between the ServerApp and each ClientApp"
            )
        raise FlowerUnsupported(
            f"engine.{name} would compute on the clients' data inside the ServerApp; a Flower run sends a "
            "client's computations to its node: train, losses, gradients and features"
        )

    # -- on the clients' nodes --------------------------------------------------------------------------
    def train(
        self,
        clients: np.ndarray,
        start: torch.Tensor,
        spec: LocalSpec,
        seed: int,
        work: np.ndarray | None = None,
    ) -> LocalResult:
        """``Engine.train``: client i trains row i of the round's minibatch schedule on its node."""
        if work is not None:
            raise FlowerUnsupported("stragglers are simulated by fairfl's engine only: set faults.rate: 0")
        clients = np.asarray(clients)
        requests = []
        for i in range(len(clients)):
            request = spec_payload(spec.rows(slice(i, i + 1)))
            request.arrays["start"] = array(start if start.dim() == 1 else start[i])
            request.config.update(clients=clients.tolist(), seed=int(seed))
            requests.append(request)
        replies = self._ask("train", clients, requests)
        names = [k[len(STAT) :] for k in replies[0].arrays if k.startswith(STAT)]
        return LocalResult(
            self._stack(r.arrays["params"] for r in replies),
            self._tensor(np.array([r.config["train_loss"] for r in replies])),
            {name: self._stack(r.arrays[STAT + name] for r in replies) for name in names},
            None if self.local.running is None else self._stack(r.arrays["running"] for r in replies),
        )

    def train_pooled(
        self, clients: np.ndarray, start: torch.Tensor, spec: LocalSpec, seed: int
    ) -> LocalResult:
        """``Engine.train_pooled`` would gather the clients' data in one place: refused."""
        raise FlowerUnsupported(
            "engine.train_pooled trains one model on the pooled training data of every client: there is no "
            "federation to run as Flower messages"
        )

    def losses(
        self,
        w: torch.Tensor,
        clients: np.ndarray | None = None,
        split: str = "train",
        loss: SampleLoss | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``Engine.losses``: each client's mean loss and accuracy on its ``split`` (an evaluate message)."""
        clients = np.arange(self.local.data.num_clients) if clients is None else np.asarray(clients)
        replies = self._ask("evaluate", clients, self._models(w, clients, loss, split=split))
        means, acc = (np.array([r.config[key] for r in replies]) for key in ("loss", "acc"))
        return self._tensor(means), self._tensor(acc)

    def gradients(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> torch.Tensor:
        """``Engine.gradients``: each client's full-batch gradient ``[K, P]``."""
        return self.gradients_and_losses(w, clients, split, loss)[0]

    def gradients_and_losses(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``Engine.gradients_and_losses``: each client's gradient ``[K, P]`` and mean loss ``[K]`` (one
        query message)."""
        clients = np.asarray(clients)
        replies = self._ask("query.gradients", clients, self._models(w, clients, loss, split=split))
        losses = self._tensor(np.array([r.config["loss"] for r in replies]))
        return self._stack(r.arrays["gradient"] for r in replies), losses

    def features(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", transform: str = "none"
    ) -> torch.Tensor:
        """``Engine.features``: each client's mean transformed penultimate activation ``[K, D]``."""
        clients = np.asarray(clients)
        requests = self._models(w, clients, split=split, transform=transform)
        return self._stack(r.arrays["features"] for r in self._ask("query.features", clients, requests))

    def group_counts(
        self, w: torch.Tensor, clients: np.ndarray | None = None, split: str = "train"
    ) -> torch.Tensor:
        """``Engine.group_counts``: each client's ``[2, 2, 2]`` counts by (group, label, prediction), computed
        on its node (a ``query.group_counts`` message)."""
        clients = np.arange(self.local.data.num_clients) if clients is None else np.asarray(clients)
        replies = self._ask("query.group_counts", clients, self._models(w, clients, split=split))
        counts = np.stack([np.asarray(r.config["counts"], dtype=np.int64) for r in replies])
        return tensor(counts.reshape(len(clients), 2, 2, 2), self.local.device)

    # -- helpers ------------------------------------------------------------------------------------------
    def _models(
        self, w: torch.Tensor, clients: np.ndarray, loss: SampleLoss | None = None, **config
    ) -> list[Payload]:
        """One request per client holding its model: ``w`` ``[P]``, or row i of ``w`` ``[K, P]``; a custom
        per-sample ``loss`` travels as the local spec's objects do (``wire.dump_objects``)."""
        if loss is not None:
            config[LOSS] = dump_objects({"loss": loss})
        return [Payload({"w": array(w if w.dim() == 1 else w[i])}, dict(config)) for i in range(len(clients))]

    def _ask(self, kind: str, clients: np.ndarray, requests: list[Payload]) -> list[Payload]:
        """Send ``requests`` (row i to client i) with what every node needs: the experiment, the row, the
        global BatchNorm statistics."""
        running = self.local.running
        for row, request in enumerate(requests):
            request.config.update(experiment=self.experiment, row=row, call=self.calls)
            if running is not None:
                request.arrays["running"] = array(running)
        self.calls += 1
        return self.exchange(kind, clients, requests)

    def _tensor(self, values: np.ndarray) -> torch.Tensor:
        return tensor(values, self.local.device).to(self.local.dtype)

    def _stack(self, rows) -> torch.Tensor:
        return self._tensor(np.stack(list(rows)))


if TYPE_CHECKING:  # the interface an algorithm sees (``sim/protocol.py``), checked by mypy
    _SERVES: type[ClientEngine] = FlowerEngine
