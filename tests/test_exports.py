"""Every name a module exports in ``__all__`` exists, so ``from module import *`` works."""

import importlib
import pkgutil

import pytest

import fairfl_core

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(fairfl_core.__path__, "fairfl_core.")
    if not m.name.startswith(("fairfl_core.flower", "fairfl_core.experiments.ray_executor"))
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists {missing}, which it does not define or import"
