"""The algorithm contract, and the registry that makes algorithms available by name.

The runner calls only ``round(t) -> RoundOutput`` plus ``eval_params`` / ``personal_params`` /
``state_dict`` / ``load_state_dict``. :class:`FederatedAlgorithm` implements ``round`` for the usual shape of
a round, from three methods an algorithm writes (after Flower's ``configure_train`` / ``aggregate_train`` and
FedJAX's client/server split):

    configure(t)                    → Plan         server → clients: who trains, from where, which local step
    client_update(t, plan, faults)  → LocalResult  the clients' work (default: the engine trains plan.clients)
    aggregate(t, plan, uploads)     → Update       clients → server: the new model, the weights, diagnostics

Between them the round draws the simulated faults (``sim/faults.py``): ``configure`` sees every selected
client, ``aggregate`` sees only the uploads that arrived (``Uploads.clients``; ``Uploads.kept`` takes the
survivors' rows of anything computed per selected client at configure time, such as ``Plan.notes``). A round
in which nothing arrives leaves the model and the state unchanged and is recorded ``"skipped": true``. The
rule every algorithm follows under faults, so that an algorithm's docstring states only its exceptions: what
is exchanged before local training involves every selected client; every average, weight and per-client
state after it runs over the survivors (the clients whose upload arrives), with weights renormalised over
them; a dropped client keeps its stale state; a straggler's update is the ⌈f K⌉ steps it completed,
aggregated like the others. After
``aggregate`` the server plug-ins (``server_plugins.py``) act on the new model. An algorithm whose round has
another shape (AFGA's gossip between local steps) overrides ``round`` itself and drives a ``ClientStack``,
with the same bookkeeping: ``skipped`` (no upload arrived), ``adopt_running`` (BatchNorm statistics),
``report`` (the round's diagnostics and faults).

Everything an algorithm keeps across rounds lives in ``self.state`` (checkpointed as is; ``state_dict`` is a
snapshot, so a memory may be updated in place); anything passed
within a round travels in the ``Plan`` and ``Uploads``, never in attributes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, get_args

import numpy as np
import torch

from fairfl_core.algorithms import hyper
from fairfl_core.algorithms.server_plugins import ServerPlugins
from fairfl_core.dataclass_io import build_dataclass
from fairfl_core.sim.batches import steps_per_client
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.faults import RoundFaults
from fairfl_core.sim.local import LocalResult, LocalSpec

__all__ = [
    "ALGORITHMS",
    "FederatedAlgorithm",
    "Plan",
    "RoundOutput",
    "Update",
    "Uploads",
    "algorithm_class",
    "build_algorithm",
    "make_hyper",
    "register",
]

H = TypeVar("H", bound=hyper.Hyper, covariant=True)
HP = TypeVar("HP", bound=hyper.Hyper)

ALGORITHMS: dict[str, type[FederatedAlgorithm[hyper.Hyper]]] = {}


@dataclass
class RoundOutput:
    """What one round reports: the clients selected and per-algorithm diagnostics (JSON-able; a tensor is
    written as its value when the runner next reads the device: ``runner.PendingRounds``)."""

    selected: np.ndarray
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """What the server sends in round t: ``clients`` train ``spec`` from ``start`` (``[P]`` or ``[K, P]``;
    None = the global model). ``notes``: the algorithm's own data for its ``aggregate`` (any type)."""

    clients: np.ndarray
    spec: LocalSpec
    start: torch.Tensor | None = None
    notes: Any = None


@dataclass
class Uploads:
    """What reaches the server: the surviving ``clients``' local results, and the local steps each
    completed (a straggler's truncated count)."""

    clients: np.ndarray
    result: LocalResult
    steps: np.ndarray
    faults: RoundFaults

    @property
    def params(self) -> torch.Tensor:
        return self.result.params

    def kept(self, rows: Any) -> Any:
        """The survivors' rows of a per-selected-client tensor ``[K, ...]`` (as is when all uploaded)."""
        return self.faults.kept(rows)


@dataclass
class Update:
    """The server's step: the new global model ``w`` (before the server plug-ins), the weights p over the
    uploads it averaged with (FedVARP corrects with them; None = uniform), its η_g, and diagnostics."""

    w: torch.Tensor
    weights: torch.Tensor | None = None
    server_lr: float = 1.0
    diagnostics: dict[str, Any] = field(default_factory=dict)


class FederatedAlgorithm(Generic[H]):
    """Base of every algorithm: the state, the round template and what the runner reads (module docstring).

    Generic in its hyperparameters: ``class FedDyn(FederatedAlgorithm[FedDynHyper])`` makes ``self.hp`` a
    ``FedDynHyper`` for the type checker and ``FedDyn.Hyper``, the class the registry builds them from,
    ``FedDynHyper`` (:meth:`__init_subclass__`). A class generic in its own Hyper (FedAvg) or without a type
    argument (CAFGA) names its ``Hyper`` in its body."""

    Hyper: ClassVar[type[hyper.Hyper]]
    personalized: ClassVar[bool] = False
    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``Hyper`` from the class's own type argument (``FedAvg[FedEBAHyper]`` → ``FedEBAHyper``); one its
        body names must be that argument."""
        super().__init_subclass__(**kwargs)
        named = [
            arg
            for base in cls.__dict__.get("__orig_bases__", ())
            for arg in get_args(base)
            if isinstance(arg, type) and issubclass(arg, hyper.Hyper)
        ]
        if "Hyper" not in cls.__dict__ and named:
            cls.Hyper = named[0]
        elif "Hyper" in cls.__dict__ and named and cls.__dict__["Hyper"] is not named[0]:
            raise TypeError(
                f"{cls.__name__}: Hyper = {cls.__dict__['Hyper'].__name__} but the class is generic in "
                f"{named[0].__name__}; drop the Hyper line (it follows the type argument)"
            )

    def __init__(self, sim: Simulation, hp: H) -> None:
        self.sim, self.hp = sim, hp
        self.plugins = ServerPlugins(hp)
        w = sim.engine.init_params()
        self.state: dict[str, Any] = {"w": w, **self.plugins.init_state(w, sim.num_clients)}
        if sim.engine.running is not None:
            if self.personalized:
                raise ValueError(
                    f"{type(self).__name__} evaluates per-client models, and fairfl keeps BatchNorm running "
                    "statistics for the global model only: use a model with GroupNorm (norm='group')"
                )
            self.state["running"] = sim.engine.running.clone()

    @property
    def w(self) -> torch.Tensor:
        return self.state["w"]

    # -- what an algorithm writes ----------------------------------------------------------------------------
    def configure(self, t: int) -> Plan:
        raise NotImplementedError

    def client_update(self, t: int, plan: Plan, faults: RoundFaults) -> LocalResult:
        """Local training of ``plan.clients`` on round t's minibatch streams (a straggler's truncated)."""
        start = self.w if plan.start is None else plan.start
        return self.sim.engine.train(
            plan.clients, start, plan.spec, self.sim.seed_for(t, "batches"), faults.train_work
        )

    def aggregate(self, t: int, plan: Plan, uploads: Uploads) -> Update:
        raise NotImplementedError

    # -- the round -------------------------------------------------------------------------------------------
    def round(self, t: int) -> RoundOutput:
        plan = self.configure(t)
        faults = self.sim.faults(t, plan.clients)
        if not faults.uploaded.any():
            return self.skipped(plan.clients, faults)
        result = faults.kept(self.client_update(t, plan, faults))
        spec, counts = plan.spec, self.sim.engine.counts("train")[faults.survivors]
        scheduled = steps_per_client(counts, spec.batch_size, spec.steps, spec.epochs)
        uploads = Uploads(faults.survivors, result, faults.steps_done(scheduled), faults)
        update = self.aggregate(t, plan, uploads)
        self.apply(update, uploads)
        return self.report(
            plan.clients, faults, {"train_loss": result.train_loss.mean(), **update.diagnostics}
        )

    def apply(self, update: Update, uploads: Uploads) -> None:
        """x_{t+1}: ``update.w`` after the server plug-ins (``server_plugins.py``); with BatchNorm, the global
        running statistics become the plain average of the uploaded ones."""
        self.state["w"] = self.plugins.apply(
            self.state, update.w, uploads.clients, uploads.params, update.weights, update.server_lr
        )
        if uploads.result.running is not None:
            self.adopt_running(uploads.result.running.mean(0))

    # -- the round's bookkeeping, shared by every round (this template's and the overrides') --------------
    @staticmethod
    def skipped(selected: np.ndarray, faults: RoundFaults) -> RoundOutput:
        """The record of a round in which no upload reaches the server: the model and the state stay as
        they are."""
        return RoundOutput(selected, {"faults": faults.record(), "skipped": True})

    @staticmethod
    def report(selected: np.ndarray, faults: RoundFaults, diagnostics: dict[str, Any]) -> RoundOutput:
        """The round's record: ``diagnostics`` plus the faults drawn (when the config simulates any)."""
        if faults.kind != "none":
            diagnostics["faults"] = faults.record()
        return RoundOutput(selected, diagnostics)

    def adopt_running(self, running: torch.Tensor) -> None:
        """BatchNorm: ``running`` ``[Q]`` becomes the global running statistics (state, evaluations)."""
        self.state["running"] = running
        self.sim.engine.set_running_stats(running)

    # -- what the runner evaluates and checkpoints ------------------------------------------------------
    def eval_params(self) -> torch.Tensor:
        """The global model reported at evaluation time."""
        return self.w

    def personal_params(self) -> torch.Tensor | None:
        """Per-client models ``[N, P]`` for personalised methods (None otherwise)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """A snapshot of ``self.state``: later rounds, which update per-client memories in place
        (``server_plugins.remember_rows``), leave it as it was."""
        return copy.deepcopy(self.state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (a :meth:`state_dict`), sharing no memory with it."""
        self.state = copy.deepcopy(state)
        if "running" in self.state:
            self.adopt_running(self.state["running"])


A = TypeVar("A", bound=type[FederatedAlgorithm[hyper.Hyper]])


def register(name: str) -> Callable[[A], A]:
    """Class decorator adding an algorithm to the registry under ``name``."""

    def wrap(cls: A) -> A:
        if name in ALGORITHMS:
            raise ValueError(f"algorithm {name!r} registered twice")
        cls.name = name
        ALGORITHMS[name] = cls
        return cls

    return wrap


def algorithm_class(name: str) -> type[FederatedAlgorithm[hyper.Hyper]]:
    import fairfl_core.algorithms  # noqa: F401  (populates the registry)

    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")
    return ALGORITHMS[name]


def make_hyper(hyper_cls: type[HP], params: dict[str, Any] | None, owner: str = "algorithm") -> HP:
    """Build a hyperparameter dataclass, naming any unknown field and the valid ones."""
    return build_dataclass(hyper_cls, params, owner)


def build_algorithm(
    name: str, sim: Simulation, params: dict[str, Any] | None = None
) -> FederatedAlgorithm[hyper.Hyper]:
    cls = algorithm_class(name)
    return cls(sim, make_hyper(cls.Hyper, params, owner=f"algorithm {name!r}"))
