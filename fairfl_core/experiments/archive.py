"""Run archives: finished runs packed into one small file that git can keep, so that runs outlive the machine
that computed them: the runs of a published page (the runs its notebook loaded, as its ledger lists them:
``published/<profile>/runs/<notebook>.tar.xz``, which rebuilds the page), or an experiment's runs at a
profile while its sweep is under way (``.../<experiment>.tar.xz``).

An archive holds, per run, the files a page is built from: ``config.json``, ``summary.json`` (with the run's
numbers version and provenance), ``evals.jsonl`` and ``rounds.jsonl`` under ``<config hash>/``, never the
checkpoints; and ``MANIFEST.json``: the profile, the archive's name, and per run its label, seed, numbers
version and the SHA-256 of each file. Packing is deterministic (sorted members, no times or owners), so an
archive whose runs did not change is byte-identical and a commit of it is empty.

:func:`unpack` copies the runs into a results directory, where ``run_sweep`` reuses them as if computed
there: a sweep interrupted on one machine resumes on another from the archive. A run is never unpacked when
it does not stand for its config under this code (:func:`~fairfl_core.experiments.runner.stale`: another
numbers version or other resolved hyperparameters); one line says why, and the sweep recomputes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairfl_core.experiments.config import ExperimentConfig, config_hash
from fairfl_core.experiments.runner import cached_run, stale
from fairfl_core.experiments.store import RunStore, atomic_write_text

__all__ = [
    "ARCHIVES",
    "FILES",
    "FORMAT",
    "archived_configs",
    "ArchiveError",
    "ArchivedRun",
    "archive_path",
    "ledger_runs",
    "pack",
    "read_manifest",
    "run_files",
    "unpack",
]

ARCHIVES = "runs"  # published/<profile>/runs/: the archives, beside the pages (no page of its own)
FORMAT = "fairfl-run-archive/1"
FILES = ("config.json", "summary.json", "evals.jsonl", "rounds.jsonl")  # per run; no checkpoints
MANIFEST = "MANIFEST.json"


class ArchiveError(ValueError):
    """An archive that cannot be used: missing, truncated or corrupt, or of another profile."""


@dataclass(frozen=True)
class ArchivedRun:
    """One run of an archive as its manifest lists it."""

    hash: str
    label: str
    seed: int
    numbers_version: str
    files: dict[str, str]  # file name -> SHA-256


def archive_path(profile: str, name: str, root: str | Path = "published") -> Path:
    """Where the archive ``name`` (a notebook's page, an experiment) of ``profile`` is in the repository."""
    return Path(root) / profile / ARCHIVES / f"{name}.tar.xz"


def ledger_runs(ledger: str | Path, results_dir: str | Path) -> list[ExperimentConfig]:
    """The configs of the runs a notebook loaded (its ledger, ``$FAIRFL_RUN_LEDGER``: one JSON line per run
    with its ``hash``), read from their ``config.json`` under ``results_dir``: a page's runs, with the
    settings its notebook chose (a calibrated learning rate, a tuned λ) that no registered profile names."""
    hashes = dict.fromkeys(json.loads(line)["hash"] for line in Path(ledger).read_text().splitlines() if line)
    return [ExperimentConfig.from_dict(RunStore(Path(results_dir) / h).config()) for h in hashes]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _finished(results_dir: Path, cfg: ExperimentConfig) -> dict[str, bytes] | None:
    """The files of ``cfg``'s finished, current run in ``results_dir`` (None: absent, unfinished, stale)."""
    run = cached_run(cfg, results_dir)
    if run is None or not all((run.path / f).is_file() for f in FILES):
        return None
    return {f: (run.path / f).read_bytes() for f in FILES}


def _content(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    data = tar.extractfile(member)
    if data is None:
        raise tarfile.TarError(f"{member.name} has no content")
    return data.read()


def _read(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and every member (``<hash>/<file>`` -> bytes) of the archive at ``path``, checked against
    the manifest's SHA-256s; :class:`ArchiveError` naming the file and the fix when it cannot be used."""
    fix = f"restore it (git checkout -- {path}) or delete it, and the runs it held are recomputed"
    if not path.is_file():
        raise ArchiveError(f"run archive {path} does not exist: pack one with `fairfl archive pack`")
    try:
        with tarfile.open(path, "r:xz") as tar:
            members = {m.name: _content(tar, m) for m in tar.getmembers() if m.isfile()}
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as exc:
        raise ArchiveError(f"run archive {path} is truncated or corrupt ({exc}): {fix}") from None
    try:
        manifest = json.loads(members.pop(MANIFEST))
        if manifest.get("format") != FORMAT:
            raise ValueError(f"format {manifest.get('format')!r}, expected {FORMAT!r}")
        for h, run in manifest["runs"].items():
            for name, digest in run["files"].items():
                if _sha256(members[f"{h}/{name}"]) != digest:
                    raise ValueError(f"{h}/{name} does not match its SHA-256 in {MANIFEST}")
    except (KeyError, ValueError, TypeError) as exc:
        raise ArchiveError(f"run archive {path} is corrupt ({exc}): {fix}") from None
    return manifest, members


def read_manifest(path: str | Path) -> tuple[str, str, list[ArchivedRun]]:
    """(profile, name, runs) of the archive at ``path``, checked as :func:`unpack` checks it."""
    manifest, _ = _read(Path(path))
    runs = [ArchivedRun(h, **r) for h, r in sorted(manifest["runs"].items())]
    return manifest["profile"], manifest["name"], runs


def archived_configs(path: str | Path, hashes: Iterable[str]) -> list[ExperimentConfig]:
    """The configs of the runs ``hashes`` that the archive at ``path`` holds, read from it."""
    _, members = _read(Path(path))
    return [ExperimentConfig.from_dict(json.loads(members[f"{h}/config.json"])) for h in hashes]


def run_files(path: str | Path, file: str) -> dict[str, bytes]:
    """``file`` (one of :data:`FILES`) of each run the archive at ``path`` holds, by config hash."""
    if file not in FILES:
        raise ValueError(f"{file!r} is not a file an archive holds; one of {', '.join(FILES)}")
    manifest, members = _read(Path(path))
    return {h: members[f"{h}/{file}"] for h in sorted(manifest["runs"])}


def _write(path: Path, manifest: dict[str, Any], members: dict[str, bytes]) -> None:
    """Write the archive deterministically (sorted members, zero times and owners) and atomically."""
    buffer = io.BytesIO()
    blobs = {MANIFEST: (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode(), **members}
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9, format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(blobs):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(blobs[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(blobs[name]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)


def pack(
    name: str,
    profile: str,
    configs: Iterable[ExperimentConfig],
    results_dir: str | Path,
    root: str | Path = "published",
) -> tuple[Path, int, int] | None:
    """Pack the finished runs of ``configs`` (an experiment's ``experiment_configs``, :func:`ledger_runs`) in
    ``results_dir``, with the runs already archived that still stand for one of them, into the archive
    ``name`` of ``profile`` (:func:`archive_path`); returns (path, runs archived, runs of ``configs``), or
    None when there is no finished run to archive (an existing archive is then left as it is)."""
    path, results_dir = archive_path(profile, name, root), Path(results_dir)
    by_hash = {config_hash(c): c for c in configs}
    manifest: dict[str, Any] = {"format": FORMAT, "profile": profile, "name": name, "runs": {}}
    members: dict[str, bytes] = {}
    old_runs: dict[str, Any] = {}
    old_members: dict[str, bytes] = {}
    if path.exists():
        old, old_members = _read(path)
        old_runs = old["runs"] if old.get("profile") == profile else {}
    for h, cfg in sorted(by_hash.items()):
        files = _finished(results_dir, cfg)
        if h in old_runs and _stale(old_members, h, cfg) is None:
            files = {f: old_members[f"{h}/{f}"] for f in FILES}  # keep the archived bytes
        if files is None:
            continue
        summary = json.loads(files["summary.json"])
        manifest["runs"][h] = {
            "label": cfg.name,
            "seed": cfg.seed,
            "numbers_version": summary.get("numbers_version"),
            "files": {f: _sha256(b) for f, b in files.items()},
        }
        members |= {f"{h}/{f}": b for f, b in files.items()}
    if not manifest["runs"]:
        return None
    _write(path, manifest, members)
    return path, len(manifest["runs"]), len(by_hash)


def _stale(members: dict[str, bytes], h: str, cfg: ExperimentConfig) -> str | None:
    """Why archived run ``h`` does not stand for ``cfg`` under this code, or None when it does."""
    return stale(json.loads(members[f"{h}/summary.json"]), cfg)


def unpack(
    paths: Iterable[str | Path], results_dir: str | Path, profile: str | None = None
) -> tuple[int, list[str]]:
    """Copy the runs of the archives at ``paths`` into ``results_dir`` (``<hash>/`` per run) where the cache
    reuses them; returns (runs unpacked, one line per run not unpacked and why). A finished run already there
    is kept; an unfinished one (its checkpoint included) is replaced by the archived finished run. A run that
    does not stand for its config under this code is never unpacked. ``profile``: the profile the results
    directory is for (:class:`ArchiveError` for an archive of another)."""
    results_dir = Path(results_dir)
    done, notes = 0, []
    for path in map(Path, paths):
        manifest, members = _read(path)
        if profile is not None and manifest["profile"] != profile:
            raise ArchiveError(
                f"run archive {path} holds {manifest['profile']!r} runs, not {profile!r}: unpack it into "
                f"results/{manifest['profile']}, or use the archives of published/{profile}/runs/"
            )
        for h, run in sorted(manifest["runs"].items()):
            config = json.loads(members[f"{h}/config.json"])
            cfg = ExperimentConfig.from_dict(config)
            what = f"{path.name}: {run['label']} seed {run['seed']} ({h})"
            why = _stale(members, h, cfg) or (
                None if config_hash(cfg) == h else f"its config hashes to {config_hash(cfg)}, not {h}"
            )
            if why:
                notes.append(f"{what} not reused: {why}; it is recomputed")
                continue
            store = RunStore(results_dir / h)
            with store.computing():  # not while another process computes or unpacks it
                if store.is_done():
                    continue
                (store.path / "checkpoint.pt").unlink(missing_ok=True)  # of an unfinished run
                for f in (*FILES[2:], FILES[0], FILES[1]):  # the summary last: a run is finished then
                    atomic_write_text(store.path / f, members[f"{h}/{f}"].decode())
            done += 1
    return done, notes
