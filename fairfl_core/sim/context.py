"""What an algorithm sees of the simulation: the engine, the data, the training settings and its RNG."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from fairfl_core.sim.faults import FaultConfig, RoundFaults, draw_faults
from fairfl_core.sim.local import LocalSpec
from fairfl_core.sim.protocol import ClientEngine
from fairfl_core.sim.transfer import to_device

__all__ = ["Simulation", "TrainConfig"]


@dataclass
class TrainConfig:
    """Round protocol (a config's ``train`` section). Exactly one of ``local_steps`` / ``local_epochs`` is
    set; ``rounds`` is at most ``experiments.config.MAX_ROUNDS``."""

    rounds: int = 100
    clients_per_round: int = 10
    batch_size: int = 50
    lr: float = 0.1
    local_steps: int | None = 10
    local_epochs: int | None = None
    lr_decay: float = 1.0
    momentum: float = 0.0
    weight_decay: float = 0.0


class Simulation:
    """Shared services for one run.

    Randomness is counter-based: every draw comes from a generator seeded by ``(seed, round, stream)``,
    so a run resumed from a checkpoint at round t draws exactly what the uninterrupted run drew.
    """

    def __init__(
        self, engine: ClientEngine, train: TrainConfig, seed: int, faults: FaultConfig | None = None
    ) -> None:
        self.engine, self.train, self.seed = engine, train, int(seed)
        self.fault_config = faults or FaultConfig()
        self.data = engine.data
        self.num_clients = self.data.num_clients
        self.train_sizes = engine.counts("train").astype(np.float64)
        self.groups = self.data.groups.cpu().numpy()

    def seed_for(self, t: int, stream: str) -> int:
        return int(np.random.SeedSequence([self.seed, t, zlib.crc32(stream.encode())]).generate_state(1)[0])

    def rng(self, t: int, stream: str) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(t, stream))

    def faults(self, t: int, clients: np.ndarray) -> RoundFaults:
        """Which of round t's selected ``clients`` fail (``sim/faults.py``), from the stream "faults"."""
        return draw_faults(self.fault_config, self.rng(t, "faults"), clients)

    def lr(self, t: int) -> float:
        """Client learning rate of round t (per-round decay, FedEBA+ App. L.1: η_t = η · 0.999^t)."""
        return self.train.lr * self.train.lr_decay**t

    def tensor(
        self, values: np.ndarray | torch.Tensor | list, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        """Host ``values`` (client indices, weights, masks) as a tensor on the engine's device, of ``dtype``
        (default theirs), copied without a host wait (``sim/transfer.py``)."""
        return to_device(values, self.engine.device, dtype)

    def local_spec(self, t: int, **changes: Any) -> LocalSpec:
        base = LocalSpec(
            lr=self.lr(t),
            batch_size=self.train.batch_size,
            steps=self.train.local_steps,
            epochs=self.train.local_epochs,
            momentum=self.train.momentum,
            weight_decay=self.train.weight_decay,
        )
        return replace(base, **changes)
