"""The numbers version: which version of the arithmetic computed a run's numbers.

A finished run is reused only when its config hash *and* its numbers version match this code's: a change
that alters numbers (another summation order, a closed-form step, a fixed data split) bumps the version of
what it changes, and every cached run that change affects is recomputed, with one line saying why
(``experiments/runner.py``). ``summary.json`` and each checkpoint record the version; a checkpoint of
another version is not resumed.

A run's version is ``c<CORE>.a<its algorithm's>.m<its model family's>``:

* :data:`CORE`: the code every run shares (data, partitions, minibatch schedules, the engine, evaluation);
* :data:`ALGORITHMS`: an algorithm's own arithmetic (its server step, weights, selection), by registered name;
* :data:`MODEL_FAMILIES`: a model module's layers and the engine's path for them (``mlp``, ``cnn``,
  ``resnet``, ``convmixer``, ``lstm``).

A name absent from a table is at version 1. The golden runs (``tests/golden.json``, one tiny run per
registered algorithm and one per model family, computed in float64 under pinned kernels) hold each run's
version beside a fingerprint of its numbers; ``tests/test_numbers_version.py`` fails when a fingerprint
changes and names the entry to bump here, and ``python -m tests.golden --update`` then records the new numbers
under the new version (it refuses new numbers under an unchanged version).
"""

from __future__ import annotations

__all__ = ["ALGORITHMS", "CORE", "MODEL_FAMILIES", "model_family", "numbers_version"]

CORE = 1
ALGORITHMS: dict[str, int] = {
    # 2: gradient distances from one float64 Gram product (selection/facility_location.py), not elementwise
    "divfl": 2,
    # 3: a round's record drops differs_from_divfl (DivFL's greedy run again); steered_steps = 0 says the same
    "subtrunc": 3,
    # 3: UnionFL's local step is plain local SGD (its mu, eq. 14's μ, had also set a proximal term)
    "unionfl": 3,
}
MODEL_FAMILIES: dict[str, int] = {}


def model_family(model: str) -> str:
    """The model module that defines registered model ``model`` (``mlp``, ``cnn``, ``resnet``, ...)."""
    from fairfl_core.models import MODELS  # the models import torch; this module stays light

    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; registered: {sorted(MODELS)}")
    return MODELS[model].__module__.rsplit(".", 1)[-1]


def numbers_version(algorithm: str, model: str) -> str:
    """The numbers version of a run of registered ``algorithm`` on registered ``model``."""
    family = model_family(model)
    return f"c{CORE}.a{ALGORITHMS.get(algorithm, 1)}.m{MODEL_FAMILIES.get(family, 1)}"
