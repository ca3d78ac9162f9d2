"""Which real data sets are under the data root, and the labelled stand-in that takes the place of an absent
one: one registry for every paper's experiments.

``present(name)`` checks the files of data set ``name`` under :func:`~fairfl_core.data.sources.data_root`;
``stand_in(name)`` is the overrides that replace it by its stand-in where it is absent (``()`` where it is
present), and they say so with ``data.stand_in``, which every table prints beside the dataset. A data set with
no stand-in here (CIFAR-100, LEAF FEMNIST, EMNIST: a paper module gives the partition its stand-in needs, or
leaves the experiment out with a message) has only its files listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fairfl_core.data.sources import data_root

__all__ = ["FILES", "STAND_INS", "assume", "present", "stand_in"]

# data set -> the files that hold it: every group must match, any pattern of a group will do
FILES: dict[str, tuple[tuple[str, ...], ...]] = {
    "mnist": (("MNIST/raw/train-images-idx3-ubyte*",), ("MNIST/raw/t10k-images-idx3-ubyte*",)),
    "cifar10": tuple(
        (f"cifar-10-batches-py/{f}",) for f in (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")
    ),
    "cifar100": (("cifar-100-python/train",), ("cifar-100-python/test",)),
    "femnist": (("femnist/data/train/*.json",), ("femnist/data/test/*.json",)),
    "adult": (("adult/adult.data",), ("adult/adult.test",)),
    "compas": (("compas/compas-scores-two-years.csv",),),
    "emnist": (
        tuple(
            f"{folder}emnist-byclass-train-images-idx3-ubyte{ext}"
            for folder in ("EMNIST/raw/", "")
            for ext in ("", ".gz")
        ),
    ),
}

# data set -> the overrides of its labelled stand-in (the real Fashion-MNIST, with the model's input options)
STAND_INS: dict[str, tuple[str, ...]] = {
    "mnist": ("data.name=fashion_mnist", "data.stand_in=MNIST"),
    "cifar10": (
        "data.name=fashion_mnist",
        "data.stand_in=CIFAR-10",
        "model.options={in_channels: 1, input_size: 28}",
    ),
}


_ASSUMED: dict[str, bool] = {}


@contextmanager
def assume(name: str, is_present: bool) -> Iterator[None]:
    """Within the block, :func:`present` answers ``is_present`` for ``name`` whatever is on this machine: how
    the experiment catalogue builds a profile for the real data set and one for its stand-in
    (``experiments.profiles.stand_in_profiles``), so that it is the same on every machine."""
    before = _ASSUMED.get(name)
    _ASSUMED[name] = is_present
    try:
        yield
    finally:
        if before is None:
            del _ASSUMED[name]
        else:
            _ASSUMED[name] = before


def present(name: str, root: str | Path | None = None) -> bool:
    """Whether the files of data set ``name`` (a key of :data:`FILES`) are under the data root."""
    if name not in FILES:
        raise KeyError(f"no data set {name!r} in the stand-in registry; known: {sorted(FILES)}")
    if name in _ASSUMED and root is None:
        return _ASSUMED[name]
    folder = data_root(root)
    return all(any(any(folder.glob(p)) for p in group) for group in FILES[name])


def stand_in(name: str, root: str | Path | None = None) -> tuple[str, ...]:
    """The overrides that put the labelled stand-in in place of data set ``name`` where its files are absent;
    ``()`` where they are present."""
    if name not in STAND_INS:
        raise KeyError(f"data set {name!r} has no stand-in; those with one: {sorted(STAND_INS)}")
    return () if present(name, root) else STAND_INS[name]
