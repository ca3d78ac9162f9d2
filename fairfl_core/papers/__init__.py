"""The papers: one folder each, holding everything that names the paper.

``papers/<name>/`` has its experiments (``experiments.py``: ``register_experiment`` calls on base configs of
``experiments/configs/``), its claims and tables (``claims.py``: the registered ``Paper`` bundle and the
claim builders), the numbers it prints (``results.csv``, format in ``README.md`` here) and how the package
reads what it leaves open (``readings.md``); its ``__init__`` says which paper it is and names the
algorithms it brings (``METHODS``, registered in ``fairfl_core.algorithms``). Importing this package imports
every folder in name order, and in each its ``experiments`` module first, then its other modules: that fills
the experiment catalogue (``experiments.profiles.EXPERIMENTS``) and the bundles (``report.bundle.PAPERS``).
``docs/extending.md`` shows how to add one.
"""

import importlib
import pkgutil

from fairfl_core.experiments.profiles import EXPERIMENTS, get_experiment
from fairfl_core.report.bundle import PAPERS, check_bundle, get_paper

__all__ = ["EXPERIMENTS", "PAPERS", "check_bundle", "get_experiment", "get_paper"]

for _folder in pkgutil.iter_modules(__path__):
    if _folder.ispkg:
        _package = importlib.import_module(f"{__name__}.{_folder.name}")
        _modules = sorted(m.name for m in pkgutil.iter_modules(_package.__path__))
        for _module in sorted(_modules, key=lambda name: name != "experiments"):
            importlib.import_module(f"{_package.__name__}.{_module}")
