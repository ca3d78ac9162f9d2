"""Experiment configuration: dataclasses ↔ YAML/JSON, dotted overrides, validation, identity hash."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from fairfl_core.data.build import DataSpec
from fairfl_core.dataclass_io import build_dataclass, check_literals
from fairfl_core.sim.client_map import ClientAxisName
from fairfl_core.sim.context import TrainConfig
from fairfl_core.sim.engine import TrainerKind
from fairfl_core.sim.faults import FaultConfig
from fairfl_core.sim.precision import PrecisionMode

__all__ = [
    "AlgorithmSpec",
    "EngineConfig",
    "EvalConfig",
    "ExperimentConfig",
    "FaultConfig",
    "ModelSpec",
    "TrainConfig",
    "apply_overrides",
    "config_hash",
    "load_config",
]


@dataclass
class ModelSpec:
    name: str = "mlp"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class AlgorithmSpec:
    name: str = "fedavg"
    params: dict[str, Any] = field(default_factory=dict)


# The most rounds a run may ask for: 5,000x the longest schedule of the shipped configs (2,000 rounds), over
# a day of rounds at fairfl's fastest (~10 ms per round). A larger value is a typo (1e10 for 1e4) that would
# run, and append round records, for ever.
MAX_ROUNDS = 10**7


@dataclass
class EvalConfig:
    every: int = 20
    batch: int = 8192
    # which models a report row judges a personalised method by: "own" = each client's personal model,
    # "global" = the global model (both are evaluated every time; not part of the run's identity)
    models: Literal["own", "global"] = "own"


@dataclass
class EngineConfig:
    kind: TrainerKind = "batched"
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: Literal["float32", "float64"] = "float32"
    chunk_size: int | None = None  # clients per vmap chunk (bounds memory); None = all selected
    threads: int | None = None  # torch CPU threads; None = leave as is
    client_axis: ClientAxisName = "auto"  # how clients train side by side (sim/client_map.py)
    precision: PrecisionMode = "exact"  # the float32 kernels' arithmetic (sim/precision.py)


@dataclass
class ExperimentConfig:
    name: str = ""
    seed: int = 0
    data: DataSpec = field(default_factory=lambda: DataSpec(name="fashion_mnist"))
    model: ModelSpec = field(default_factory=ModelSpec)
    algorithm: AlgorithmSpec = field(default_factory=AlgorithmSpec)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)  # client failures (sim/faults.py)
    checkpoint_every: int = 100

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        return _from_dict(cls, d, "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> ExperimentConfig:
        """Check ranges and names and the algorithm's hyperparameters (:meth:`checked_hyper`); ``self``."""
        self.checked_hyper()
        return self

    def checked_hyper(self) -> Any:
        """Check ranges and names, and build the algorithm's ``Hyper`` (its fields' checks), before any work
        starts; raise ``ValueError`` naming the field and the allowed values; the ``Hyper`` the run uses.
        Every number was checked to be finite when the config was read (`dataclass_io`)."""
        from fairfl_core.algorithms.base import algorithm_class, make_hyper
        from fairfl_core.models import MODELS
        from fairfl_core.sim.devices import parse_device

        _require(self.seed >= 0, "seed", self.seed, "a non-negative integer")
        t = self.train
        _require(
            0 < t.rounds <= MAX_ROUNDS, "train.rounds", t.rounds, f"a positive integer <= {MAX_ROUNDS:,}"
        )
        _require(
            t.clients_per_round > 0, "train.clients_per_round", t.clients_per_round, "a positive integer"
        )
        _require(t.batch_size > 0, "train.batch_size", t.batch_size, "a positive integer")
        _require(t.lr > 0, "train.lr", t.lr, "a positive number")
        _require(0 < t.lr_decay <= 1, "train.lr_decay", t.lr_decay, "in (0, 1]")
        _require(0 <= t.momentum < 1, "train.momentum", t.momentum, "in [0, 1)")
        _require(t.weight_decay >= 0, "train.weight_decay", t.weight_decay, "non-negative")
        _require(
            (t.local_steps is None) != (t.local_epochs is None),
            "train.local_steps/local_epochs",
            (t.local_steps, t.local_epochs),
            "exactly one of them set (the other null)",
        )
        for key in ("local_steps", "local_epochs"):
            v = getattr(t, key)
            _require(v is None or v > 0, f"train.{key}", v, "a positive integer or null")
        _require(self.eval.every > 0, "eval.every", self.eval.every, "a positive integer")
        _require(self.eval.batch > 0, "eval.batch", self.eval.batch, "a positive integer")
        _require(self.checkpoint_every > 0, "checkpoint_every", self.checkpoint_every, "a positive integer")
        for section in (self.eval, self.engine):  # read from a file, build_dataclass checked them already
            check_literals(section)
        _require(
            self.engine.precision == "exact" or self.engine.dtype == "float32",
            "engine.precision",
            self.engine.precision,
            "'exact' with engine.dtype float64 (TF32 and bf16 speed up float32 kernels)",
        )
        for key in ("chunk_size", "threads"):
            v = getattr(self.engine, key)
            _require(v is None or v > 0, f"engine.{key}", v, "a positive integer or null")
        try:
            parse_device(self.engine.device)
        except ValueError:
            _require(False, "engine.device", self.engine.device, "'auto', 'cpu', 'cuda' or 'cuda:N'")
        _require(self.model.name in MODELS, "model.name", self.model.name, f"one of {sorted(MODELS)}")
        return make_hyper(
            algorithm_class(self.algorithm.name).Hyper, self.algorithm.params, "algorithm.params"
        )


def _require(ok: bool, name: str, value: Any, allowed: str) -> None:
    if not ok:
        raise ValueError(f"config field {name} = {value!r} is invalid: must be {allowed}")


def _from_dict(cls, d: dict[str, Any], path: str):
    if not isinstance(d, dict):
        raise ValueError(f"config section {path or '<root>'} must be a mapping, got {type(d).__name__}")
    if cls is DataSpec:
        if "name" not in d:
            return DataSpec.from_dict(d)  # names the missing key
        # names and types checked as in the other sections; strings such as "1e-2" become numbers, other
        # values are kept as given (an int in a float field keeps the config hash of existing runs)
        typed = build_dataclass(DataSpec, d, "config section 'data'")
        return DataSpec.from_dict({k: getattr(typed, k) if isinstance(v, str) else v for k, v in d.items()})
    nested = {
        name: _from_dict(_SECTIONS[(cls, name)], value, f"{path}.{name}" if path else name)
        for name, value in d.items()
        if (cls, name) in _SECTIONS
    }
    scalars = {name: value for name, value in d.items() if (cls, name) not in _SECTIONS}
    config = build_dataclass(cls, scalars, f"config section {path!r}" if path else "config")
    return dataclasses.replace(config, **nested) if nested else config


_SECTIONS = {
    (ExperimentConfig, "data"): DataSpec,
    (ExperimentConfig, "model"): ModelSpec,
    (ExperimentConfig, "algorithm"): AlgorithmSpec,
    (ExperimentConfig, "train"): TrainConfig,
    (ExperimentConfig, "eval"): EvalConfig,
    (ExperimentConfig, "engine"): EngineConfig,
    (ExperimentConfig, "faults"): FaultConfig,
}


def apply_overrides(d: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.sub=value`` overrides (values parsed as YAML) to a nested dict, returning a copy."""
    out = json.loads(json.dumps(d))
    for item in overrides:
        key, eq, raw = item.partition("=")
        parts = key.strip().split(".")
        if not eq or not all(parts):
            raise ValueError(
                f"override {item!r} must look like section.field=value (e.g. algorithm.params.q=0.5)"
            )
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
        try:
            node[parts[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(
                f"override {item!r}: the value is not valid YAML ({_yaml_problem(exc)}); quote a string "
                f"value, e.g. {key}='{raw}'"
            ) from None
    return out


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: what the YAML parser found and where (line and column, counted from 1)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + (getattr(exc, "problem", None) or str(exc).splitlines()[0])


def load_config(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a YAML/JSON config file into a dict (a run config, or a sweep config with a ``sweep`` key)."""
    path = Path(path)
    examples = "examples: fairfl_core/experiments/configs/"
    if not path.exists():
        raise FileNotFoundError(f"config file {path} does not exist ({examples})")
    if not path.is_file():
        raise ValueError(f"config {path} is not a file: pass a YAML or JSON config file ({examples})")
    try:
        d = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(
            f"config file {path} is not UTF-8 text: pass a YAML or JSON file ({examples})"
        ) from None
    except yaml.YAMLError as exc:
        raise ValueError(
            f"config file {path} is not valid YAML/JSON ({_yaml_problem(exc)}): fix it there ({examples})"
        ) from None
    if d is None:
        raise ValueError(f"config file {path} is empty: write the config's sections into it ({examples})")
    if not isinstance(d, dict):
        raise ValueError(
            f"config file {path} is a YAML {type(d).__name__}, not a mapping of sections (data:, model:, "
            f"algorithm:, train:, ...) ({examples})"
        )
    return apply_overrides(d, overrides or [])


# Fields that change how a run executes but not its numbers (on a given device): not part of its identity.
_NOT_IDENTITY = {
    ("name",),
    ("checkpoint_every",),
    ("engine", "device"),
    ("engine", "chunk_size"),
    ("engine", "threads"),
    ("engine", "client_axis"),
    ("eval", "batch"),
    ("eval", "models"),
}


# Fields added after runs were cached, with the default that gives those runs' numbers: left out of the
# identity while at that default, so every existing run directory keeps its hash.
_ADDED_WITH_DEFAULT = {
    ("data", "val_frac"): 0.0,
    ("data", "label_noise"): 0.0,
    ("faults",): asdict(FaultConfig()),
    ("engine", "precision"): "exact",
}


def config_hash(cfg: ExperimentConfig) -> str:
    d = cfg.to_dict()
    for path in _NOT_IDENTITY:
        _node(d, path).pop(path[-1], None)
    for path, default in _ADDED_WITH_DEFAULT.items():
        if _node(d, path).get(path[-1]) == default:
            _node(d, path).pop(path[-1])
    blob = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _node(d: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The dict holding the last key of ``path``."""
    for part in path[:-1]:
        d = d[part]
    return d
