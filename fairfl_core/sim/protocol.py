"""What an algorithm may call on ``sim.engine``: one interface, three servers.

* :class:`~fairfl_core.sim.engine.Engine` computes everything in this process (the local engine);
* the rows executor (:mod:`fairfl_core.sim.rows`) gives an ``Engine`` a :class:`Trainer` whose ``train`` runs
  together with the other runs' (runs as rows), the rest as the engine does;
* :class:`~fairfl_core.flower.engines.FlowerEngine` sends ``train``, ``losses``, ``gradients`` and
  ``features`` to the clients' nodes as Flower messages and keeps the server-side members of its local
  engine; ``stack`` (clients stepped side by side, gossip) and ``train_pooled`` (Centralized) it refuses.

Each engine module states that it serves this interface (``_SERVES: type[ClientEngine]``, checked by mypy).

An algorithm uses nothing else of the engine: the members below, and the ``ClientStack`` that ``stack``
returns (``sim/client_stack.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from fairfl_core.data.federated import FederatedDataset
    from fairfl_core.sim.batches import BatchSchedule
    from fairfl_core.sim.client_stack import ClientStack
    from fairfl_core.sim.local import LocalResult, LocalSpec, SampleLoss
    from fairfl_core.sim.params import ParamSpace
    from fairfl_core.sim.statistics import Transform

__all__ = ["ClientEngine", "Trainer"]


class ClientEngine(Protocol):
    """The engine an algorithm sees (``Simulation.engine``)."""

    data: FederatedDataset
    device: torch.device
    dtype: torch.dtype
    model: nn.Module  # the architecture; its own parameters are never trained
    space: ParamSpace  # the flat parameter vector's layout
    running: torch.Tensor | None  # the global BatchNorm running statistics (None without BatchNorm)

    def init_params(self) -> torch.Tensor:
        """The initial global model ``[P]``."""
        ...

    def counts(self, split: str = "train") -> np.ndarray:
        """Each client's number of samples in ``split``."""
        ...

    def set_running_stats(self, running: torch.Tensor | None) -> None:
        """Make ``running`` the global running statistics of every evaluation."""
        ...

    def train(
        self,
        clients: np.ndarray,
        start: torch.Tensor,
        spec: LocalSpec,
        seed: int,
        work: np.ndarray | None = None,
    ) -> LocalResult:
        """Local training of ``clients`` from ``start`` (``[P]`` or ``[K, P]``) on their minibatch streams."""
        ...

    def train_pooled(
        self, clients: np.ndarray, start: torch.Tensor, spec: LocalSpec, seed: int
    ) -> LocalResult:
        """One model trained from ``start`` ``[P]`` on the union of ``clients``' training samples."""
        ...

    def stack(
        self,
        clients: np.ndarray,
        start: torch.Tensor,
        spec: LocalSpec,
        seed: int,
        work: np.ndarray | None = None,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        """The same clients' local training state, to be stepped by the algorithm."""
        ...

    def losses(
        self,
        w: torch.Tensor,
        clients: np.ndarray | None = None,
        split: str = "train",
        loss: SampleLoss | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each client's mean loss (per-sample ``loss``, None = cross-entropy) and accuracy on its ``split``
        at ``w`` (``[P]`` or ``[K, P]``)."""
        ...

    def gradients(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> torch.Tensor:
        """Each client's full-batch gradient ``[K, P]`` of its mean per-sample ``loss`` (None =
        cross-entropy)."""
        ...

    def gradients_and_losses(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", loss: SampleLoss | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`gradients` and each client's mean ``loss`` ``[K]``, from one pass over the data."""
        ...

    def features(
        self, w: torch.Tensor, clients: np.ndarray, split: str = "train", transform: Transform = "none"
    ) -> torch.Tensor:
        """Each client's mean (transformed) penultimate activation ``[K, D]``."""
        ...

    def pooled(self, w: torch.Tensor) -> tuple[float, float]:
        """Accuracy and mean loss of one model on the pooled test set."""
        ...

    def group_counts(
        self, w: torch.Tensor, clients: np.ndarray | None = None, split: str = "train"
    ) -> torch.Tensor:
        """Each client's ``[K, 2, 2, 2]`` counts of its ``split`` by (sensitive group, label, prediction) at
        ``w`` (``[P]`` or ``[K, P]``), on data with a sensitive attribute."""
        ...

    def pooled_group_counts(self, w: torch.Tensor) -> torch.Tensor:
        """The ``[2, 2, 2]`` counts of one model on the pooled test set."""
        ...


class Trainer(Protocol):
    """What an ``Engine`` trains with (``engine.trainer``): the batched or sequential trainer, or a wrapper of
    one (``Engine.use_trainer``)."""

    def train(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> LocalResult:
        """Every row's whole ``schedule`` from ``start`` (``[P]`` or ``[K, P]``)."""
        ...

    def stack(
        self,
        start: torch.Tensor,
        spec: LocalSpec,
        schedule: BatchSchedule,
        running: torch.Tensor | None = None,
    ) -> ClientStack:
        """The rows' state at ``start``, to be stepped."""
        ...
