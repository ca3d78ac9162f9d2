"""Registered experiments and their three scales: ``smoke`` (seconds, CI), ``quick`` (a faithful but shorter
run on a 2-core CPU), ``paper`` (the paper's rounds and seeds).

An experiment is a base config (a YAML file in ``configs/``), the methods it compares (the YAML's
``sweep.algorithms`` unless the entry lists them, with the paper row each one reproduces) and one
:class:`Profile` per scale. Notebooks and ``reproduce.sh`` only name an experiment and a profile::

    configs = experiment_configs("quickstart", "smoke")
    run_sweep(configs, "results/smoke")

A paper's tables are :func:`register_experiment` calls in its folder's ``experiments.py``
(``fairfl_core/papers/<paper>/``); ``import fairfl_core.papers`` loads the whole catalogue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from fairfl_core.data import stand_ins
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides, config_hash, load_config

__all__ = [
    "CONFIG_DIR",
    "EXPERIMENTS",
    "PROFILES",
    "Experiment",
    "Method",
    "PaperTable",
    "Profile",
    "each_variant",
    "experiment_configs",
    "distinct_configs",
    "get_experiment",
    "get_profile",
    "profile_table",
    "register_experiment",
    "resolved",
    "stand_in_profiles",
]

CONFIG_DIR = Path(__file__).parent / "configs"
PROFILES = ("smoke", "quick", "paper")


@dataclass(frozen=True)
class Profile:
    """One scale of an experiment. ``overrides`` are further ``section.field=value`` settings (as the CLI's
    ``--set``), e.g. a smaller ``data.num_clients`` for smoke runs; the description must say so.
    ``methods`` replaces the experiment's methods at this scale (e.g. every value of a hyperparameter grid
    at ``paper`` where the short profiles run one fixed value)."""

    description: str
    rounds: int
    seeds: tuple[int, ...]
    eval_every: int
    overrides: tuple[str, ...] = ()
    methods: tuple[Method, ...] | None = None
    stand_in: tuple[str, Profile] | None = None  # (data set, the profile run where its files are absent)

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.eval_every < 1:
            raise ValueError(f"profile rounds={self.rounds}, eval_every={self.eval_every}: both must be >= 1")
        if not self.seeds:
            raise ValueError("profile seeds must list at least one seed, e.g. (0, 1, 2)")


@dataclass(frozen=True)
class Method:
    """A compared method: the display ``label`` (the run's name in tables and figures), the registered
    ``algorithm`` with its ``params``, ``paper_row``: the row of the paper table it reproduces, if any, and
    ``overrides``: ``section.field=value`` settings of this method's runs only (e.g. a control at another
    learning rate), applied after the profile's."""

    label: str
    algorithm: str
    params: Mapping[str, Any] = field(default_factory=dict)
    paper_row: str | None = None
    overrides: tuple[str, ...] = ()

    def as_sweep_entry(self) -> dict[str, Any]:
        entry = {"name": self.algorithm, "params": dict(self.params), "label": self.label}
        return {**entry, "overrides": list(self.overrides)} if self.overrides else entry


@dataclass(frozen=True)
class PaperTable:
    """Where an experiment's paper numbers are: ``fairfl_core/papers/<paper>/results.csv``, rows of ``table``.
    ``datasets`` maps our dataset name (``data.name``) to the paper's dataset column; a stand-in run is
    compared with the column of the dataset it stands in for (``data.stand_in``). ``column``: the paper's
    dataset column of the whole experiment, where its base config's dataset is not it (an experiment of
    one column built on another column's config)."""

    paper: str
    table: str
    datasets: Mapping[str, str] = field(default_factory=dict)
    column: str | None = None


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    config: str  # file name in configs/
    profiles: Mapping[str, Profile]
    methods: tuple[Method, ...] | None = None  # None: the config's sweep.algorithms, labelled automatically
    paper: PaperTable | None = None

    def base_config(self) -> dict[str, Any]:
        return load_config(CONFIG_DIR / self.config)

    def method_list(self) -> tuple[Method, ...]:
        if self.methods is not None:
            return self.methods
        entries = (self.base_config().get("sweep") or {}).get("algorithms") or []
        if not entries:
            raise ValueError(f"experiment {self.name!r}: {self.config} has no sweep.algorithms; list methods")
        return tuple(_method_from_entry(e) for e in entries)


def _method_from_entry(entry: str | dict[str, Any]) -> Method:
    entry = {"name": entry} if isinstance(entry, str) else entry
    params = entry.get("params", {})
    label = entry.get("label") or (
        f"{entry['name']} ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else entry["name"]
    )
    return Method(label, entry["name"], params, overrides=tuple(entry.get("overrides", ())))


EXPERIMENTS: dict[str, Experiment] = {}


def register_experiment(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to the registry; it must define every profile in ``PROFILES``."""
    if experiment.name in EXPERIMENTS:
        raise ValueError(f"experiment {experiment.name!r} registered twice")
    missing = sorted(set(PROFILES) - set(experiment.profiles))
    extra = sorted(set(experiment.profiles) - set(PROFILES))
    if missing or extra:
        raise ValueError(
            f"experiment {experiment.name!r}: profiles must be exactly {list(PROFILES)} "
            f"(missing {missing}, unknown {extra})"
        )
    if not (CONFIG_DIR / experiment.config).exists():
        raise FileNotFoundError(
            f"experiment {experiment.name!r}: no config {experiment.config} in {CONFIG_DIR}"
        )
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        hint = "" if EXPERIMENTS else " (none: `import fairfl_core.papers` loads the catalogue)"
        raise ValueError(f"unknown experiment {name!r}; registered experiments: {sorted(EXPERIMENTS)}{hint}")
    return EXPERIMENTS[name]


def resolved(profile: Profile) -> Profile:
    """``profile`` as it runs on this machine: its stand-in's profile where the data set it needs is absent
    (``data/stand_ins.py``)."""
    while profile.stand_in is not None and not stand_ins.present(profile.stand_in[0]):
        profile = profile.stand_in[1]
    return profile


def stand_in_profiles(dataset: str, build: Callable[[], Mapping[str, Profile]]) -> dict[str, Profile]:
    """The profiles ``build()`` gives with ``dataset`` present, each carrying the one it gives with
    ``dataset`` absent (its labelled stand-in): the catalogue is the same on every machine, and
    :func:`get_profile` picks the variant when configs are built."""
    with stand_ins.assume(dataset, True):
        real = build()
    with stand_ins.assume(dataset, False):
        absent = build()
    return {name: replace(p, stand_in=(dataset, absent[name])) for name, p in real.items()}


def each_variant(profile: Profile, change: Callable[[Profile], Profile]) -> Profile:
    """``change`` applied to ``profile`` and to the stand-in's profile it carries."""
    changed = change(profile)
    if profile.stand_in is None:
        return changed
    dataset, absent = profile.stand_in
    return replace(changed, stand_in=(dataset, each_variant(absent, change)))


def get_profile(experiment: str, profile: str) -> Profile:
    """Profile ``profile`` of ``experiment`` as it runs on this machine (:func:`resolved`)."""
    exp = get_experiment(experiment)
    if profile not in exp.profiles:
        raise ValueError(
            f"unknown profile {profile!r} for experiment {experiment!r}; valid: {list(PROFILES)}"
        )
    return resolved(exp.profiles[profile])


def experiment_configs(
    experiment: str,
    profile: str,
    seeds: Iterable[int] | None = None,
    *,
    overrides: Sequence[str] = (),
    device: str | None = None,
) -> list[ExperimentConfig]:
    """The validated run configs of ``experiment`` at ``profile``: one per method × seed.

    ``seeds`` replaces the profile's seeds; ``overrides`` (``section.field=value``) are applied after the
    profile's; ``device`` sets ``engine.device`` (not part of a run's identity, so cached runs are reused).
    """
    from fairfl_core.experiments.sweep import expand_sweep

    exp = get_experiment(experiment)
    prof = get_profile(experiment, profile)
    seeds = list(prof.seeds if seeds is None else seeds)
    if not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise ValueError(f"seeds={seeds!r} must be a non-empty list of non-negative integers (or None)")
    settings = [f"train.rounds={prof.rounds}", f"eval.every={prof.eval_every}", *prof.overrides, *overrides]
    if device is not None:
        settings.append(f"engine.device={device}")
    d = apply_overrides(exp.base_config(), settings)
    d["sweep"] = {
        "algorithms": [m.as_sweep_entry() for m in (prof.methods or exp.method_list())],
        "seeds": seeds,
        "grid": (d.get("sweep") or {}).get("grid") or {},
    }
    return expand_sweep(d)


def distinct_configs(configs: Mapping[str, Sequence[ExperimentConfig]]) -> list[ExperimentConfig]:
    """The run configs of several experiments (name → configs), each run once: a run that two tables share
    (the same config hash) is listed at its first appearance only."""
    return list({config_hash(c): c for cs in configs.values() for c in cs}.values())


def profile_table(experiment: str) -> pd.DataFrame:
    """One row per profile of ``experiment``: rounds, seeds, evaluation interval, overrides, description."""
    exp = get_experiment(experiment)
    return pd.DataFrame(
        [
            {
                "profile": name,
                "rounds": p.rounds,
                "seeds": list(p.seeds),
                "eval_every": p.eval_every,
                "overrides": ", ".join(p.overrides) or "-",
                "description": p.description,
            }
            for name, p in ((n, resolved(q)) for n, q in exp.profiles.items())
        ]
    )
