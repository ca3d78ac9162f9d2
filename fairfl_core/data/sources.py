"""Where datasets come from: the data root and an ordered list of sources per dataset.

A dataset is looked for in each of its sources in turn (an explicit directory, a system package, a
download, a bundled subset). The first source that has it wins; when none has it, `resolve` raises a
`FileNotFoundError` that lists every place tried and how to obtain the data (see docs/data.md).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .federated import Dataset

__all__ = ["Source", "data_root", "resolve"]


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The directory datasets live in: ``root`` if given, else ``$FAIRFL_DATA``, else
    ``$XDG_CACHE_HOME/fairfl`` (``~/.cache/fairfl`` when ``XDG_CACHE_HOME`` is unset)."""
    if root is not None:
        return Path(root).expanduser()
    if os.environ.get("FAIRFL_DATA"):
        return Path(os.environ["FAIRFL_DATA"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "fairfl"


@dataclass(frozen=True)
class Source:
    """One place a dataset may be found.

    ``load()`` returns the dataset, or ``None`` when this source does not have it (files absent, download
    not allowed, optional package missing). ``where`` says what was looked at; ``fix`` how to make this
    source work. An exception raised by ``load`` counts as "not found here" only when it is one of
    ``soft_errors`` (e.g. a failed download); anything else (a corrupt file) propagates. A ``fallback``
    source (a subset standing in for the full data) warns when it is used.
    """

    where: str
    fix: str
    load: Callable[[], Dataset | None]
    soft_errors: tuple[type[BaseException], ...] = ()
    fallback: bool = False


def resolve(name: str, sources: list[Source]) -> Dataset:
    """Load ``name`` from the first source that has it; ``meta['sources_tried']`` records those passed. Warns
    when a source failed on the way or a fallback source is used."""
    tried: list[str] = []
    failed = False
    for source in sources:
        try:
            found = source.load()
        except source.soft_errors as err:
            tried.append(f"{source.where}: failed ({type(err).__name__}: {err})")
            failed = True
            continue
        if found is not None:
            found.meta["sources_tried"] = tried
            if failed or source.fallback:
                warnings.warn(f"{name}: using {source.where}; passed: {'; '.join(tried)}", stacklevel=3)
            return found
        tried.append(f"{source.where}: not found")
    lines = "\n".join(f"  - {t}\n    fix: {s.fix}" for t, s in zip(tried, sources, strict=True))
    raise FileNotFoundError(
        f"dataset {name!r} not found. Places tried, in order:\n{lines}\n"
        "Set FAIRFL_DATA (or pass root=...) to the directory that holds the files."
    )
