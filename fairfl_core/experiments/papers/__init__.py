"""Registered experiments, one module per paper (plus the quickstart); imported by ``profiles``."""

import fairfl_core.experiments.profiles  # noqa: F401  (the catalogue loads these modules in order)
