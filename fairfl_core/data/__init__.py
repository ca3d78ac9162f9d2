"""Datasets in their real formats, partitioners, and federated assembly.

``load_dataset(name)`` loads one dataset (see ``DATASETS``); ``make_federated(DataSpec(...), seed)`` splits
it over clients. Where each dataset comes from offline is described in ``sources.py`` and docs/data.md.
"""

from .build import DATASETS, PARTITIONS, DataSpec, load_dataset, make_federated, select_classes
from .federated import Dataset, FederatedDataset
from .partition import GROUP_PRESETS, GroupSpec
from .sources import Source, data_root, resolve

__all__ = [
    "DATASETS",
    "GROUP_PRESETS",
    "PARTITIONS",
    "DataSpec",
    "Dataset",
    "FederatedDataset",
    "GroupSpec",
    "Source",
    "data_root",
    "load_dataset",
    "make_federated",
    "resolve",
    "select_classes",
]
