"""One run of a sweep and what came of it: :func:`run_one` runs a config, and a failure becomes a
:class:`SweepOutcome` with its error instead of an exception, so that a sweep (every executor of
``experiments/sweep.py`` and ``ray_executor.py``) and a campaign go on."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.runner import RunResult, run_experiment
from fairfl_core.sim.rows import RowsBatcher

__all__ = ["SweepOutcome", "run_one"]


@dataclass
class SweepOutcome:
    config: ExperimentConfig
    result: RunResult | None
    error: str | None = None

    @property
    def status(self) -> str:
        return self.result.status if self.result else "failed"

    @property
    def hash(self) -> str:
        """The run's config hash: its directory under the results directory."""
        return config_hash(self.config)


def run_one(
    cfg: ExperimentConfig,
    results_dir: str,
    progress: bool,
    device: str | None,
    rows: RowsBatcher | None = None,
) -> SweepOutcome:
    """Run ``cfg`` (:func:`~fairfl_core.experiments.runner.run_experiment`); an exception is reported in the
    outcome."""
    try:
        return SweepOutcome(
            cfg, run_experiment(cfg, results_dir, progress=progress, device=device, rows=rows)
        )
    except Exception as exc:  # a failing run is reported, the sweep goes on
        return SweepOutcome(cfg, None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
