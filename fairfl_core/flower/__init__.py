"""Every fairfl method as a Flower app (``docs/flower.md``): a ServerApp that runs the algorithm's server side
and a ClientApp that answers one client's computations, over Flower's Message API.

The algorithm runs unchanged in the ServerApp (selection, ``configure``, ``aggregate``, server plug-ins, its
state); its engine there is a :class:`~fairfl_core.flower.engines.FlowerEngine`, whose computations on a
client's data (local training, losses, gradients, features) are Flower messages answered by that client's
node with fairfl's own engine (``node.py``). ``support.py`` says which algorithms map onto Flower and why the
others do not.

Flower is the optional extra ``fairfl[flower]``: no module of this package imports it at module level, and a
missing Flower is reported by :func:`flower_module` with the command that installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["INSTALL", "flower_module"]

INSTALL = 'Flower is not installed: pip install "fairfl[flower]" (or pip install "flwr[simulation]")'


def flower_module(name: str) -> ModuleType:
    """``import flwr.<name>`` (``flwr`` for an empty name), or ImportError with :data:`INSTALL`."""
    try:
        return importlib.import_module(f"flwr.{name}" if name else "flwr")
    except ImportError as exc:
        raise ImportError(f"{INSTALL} to run fairfl methods as Flower apps") from exc
