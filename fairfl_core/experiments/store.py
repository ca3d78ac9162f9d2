"""One run's directory: config, append-only records, checkpoint, summary; every write atomic.

Layout of ``<results_dir>/<config hash>/``::

    config.json     the full config (written once)
    rounds.jsonl    one line per round: round, selected clients, diagnostics, training seconds
    evals.jsonl     one line per evaluation: round, global (pooled-test) accuracy/loss, per-client accuracy
                    and loss vectors (and personalised ones), wall time
    checkpoint.pt   algorithm state after the last checkpointed round
    checkpoint.prev.pt  the checkpoint before it, while the run is under way (removed when it finishes)
    summary.json    written last: status (complete | diverged), final fairness metrics, timings, the
                    numbers version (``fairfl_core/numbers_version.py``)
    .lock           held (``flock``) by the one process computing the run, with its pid: two notebooks,
                    sweeps or a sweep and an archive's unpacking never write one run at once

JSON Lines are append-friendly; :func:`load_evals` turns them into columns (a DataFrame).

Checkpoints hold tensors and plain data only and load with ``torch.load(..., weights_only=True)``, so a file
placed in a results directory cannot run code. Numpy arrays and scalars in an algorithm's state are stored as
tagged tensors (``{"__ndarray__": t}``, ``{"__npscalar__": t}``) and restored to the same dtype, shape and
values, so a resumed run continues bit for bit.

A file that cannot be read (a truncated or foreign checkpoint, a corrupt ``summary.json``, ``config.json`` or
a JSON Lines file with a corrupt line before its last) is moved aside to ``<name>.corrupt-<n>``, never
deleted, with a :class:`RecoveryWarning`; the run then resumes from the previous checkpoint, or recomputes.
A summary that no longer stands for the config under this code (another numbers version, another resolved
hyperparameter) is moved aside to ``summary.json.stale-<n>`` by :meth:`RunStore.retire_summary`, and a
checkpoint of another numbers version is not resumed.
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

__all__ = [
    "RecoveryWarning",
    "RunBusy",
    "RunStore",
    "atomic_write_text",
    "client_accuracy_key",
    "load_evals",
    "writable_results_dir",
]

DONE = ("complete", "diverged")
CHECKPOINTS = ("checkpoint.pt", "checkpoint.prev.pt")  # newest first
_ARRAY, _SCALAR = "__ndarray__", "__npscalar__"


class RecoveryWarning(UserWarning):
    """A file of a run directory could not be read: it was moved aside and the run recovers without it."""


class RunBusy(RuntimeError):
    """Another process is computing this run (:meth:`RunStore.computing` without waiting)."""


def writable_results_dir(path: str | Path) -> Path:
    """``path``, created if missing; ``ValueError`` naming it and the fix when it is not a directory this
    process can write to (a file, a path under a file, a read-only place)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"results directory {path} is a file: pass a directory (--results, results_dir=)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"results directory {path} cannot be created ({exc.strerror}): pass a directory you can write "
            "to (--results, results_dir=)"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(
            f"results directory {path} is not writable: pass a directory you can write to (--results, "
            "results_dir=)"
        )
    return path


def atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class RunStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    # -- state --------------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any] | None:
        """The summary of a finished run; None when there is none, or (with a warning) when it is corrupt."""
        summary, problem = self._read_summary()
        if problem:
            warnings.warn(f"{problem}; run the experiment again to recompute it", RecoveryWarning, 2)
        return summary

    def is_done(self) -> bool:
        s, _ = self._read_summary()
        return s is not None and s.get("status") in DONE

    def _read_summary(self) -> tuple[dict[str, Any] | None, str | None]:
        """(summary, None), (None, None) without a summary, or (None, what is wrong with the file)."""
        return _read_json(self.path / "summary.json", lambda d: isinstance(d.get("status"), str))

    def config(self) -> dict[str, Any]:
        config, problem = _read_json(self.path / "config.json")
        if config is None:
            raise ValueError(
                f"{problem or f'{self.path}/config.json is missing'}: run the experiment again to rewrite it"
            )
        return config

    # -- writing ------------------------------------------------------------------------------------------
    @contextmanager
    def computing(self, wait: bool = True) -> Iterator[None]:
        """Hold the run's lock (``.lock``, an ``flock`` the system drops when the process ends, however it
        ends) while this process writes the run. When another process holds it: wait for it, saying so on
        stderr (the run is then finished, or resumes from that process's checkpoint), or with ``wait=False``
        raise :class:`RunBusy`. On a file system without locks (an NFS mount without lockd) the run is written
        unlocked, with a :class:`RecoveryWarning` saying so."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = f"process {lock.read().strip() or '(pid not written yet)'}"
                if not wait:
                    raise RunBusy(
                        f"{self.path}: {holder} is computing this run; run again when it has finished "
                        "(its run is then reused)"
                    ) from None
                print(f"{self.path}: waiting for {holder}, which is computing this run", file=sys.stderr)
                fcntl.flock(lock, fcntl.LOCK_EX)
            except OSError as exc:  # ENOLCK and the like: this file system cannot lock
                warnings.warn(
                    f"{self.path}: cannot lock the run ({exc.strerror}); it is written unlocked, so no other "
                    "process may compute it at the same time (mount the results directory with locking)",
                    RecoveryWarning,
                    stacklevel=3,
                )
            lock.seek(0)
            lock.truncate()
            lock.write(str(os.getpid()))
            lock.flush()
            try:
                yield
            finally:
                lock.seek(0)
                lock.truncate()
                with suppress(OSError):  # a file system without locks (warned above)
                    fcntl.flock(lock, fcntl.LOCK_UN)  # not only by closing: a forked process shares the file

    def open(self, config: dict[str, Any]) -> None:
        """Create the run directory and its ``config.json``; a corrupt ``config.json`` or ``summary.json``
        is moved aside (the summary is then recomputed by the run)."""
        self.path.mkdir(parents=True, exist_ok=True)
        f = self.path / "config.json"
        stored, problem = _read_json(f)
        if problem:
            self._set_aside(f, problem, "rewritten from the run's config")
        if stored is None:
            atomic_write_text(f, json.dumps(config, indent=2, sort_keys=True, default=str))
        _, problem = self._read_summary()
        if problem:
            self._set_aside(self.path / "summary.json", problem, "recomputing it from the last checkpoint")

    def retire_summary(self, why: str) -> None:
        """Move a finished run's summary aside (``summary.json.stale-<n>``), warning with ``why``: the run is
        recomputed, and resumes from its own checkpoints if interrupted."""
        self._set_aside(self.path / "summary.json", why, "recomputing the run", tag="stale")

    def _set_aside(self, f: Path, problem: str, then: str, tag: str = "corrupt") -> Path:
        """Rename ``f`` to ``<name>.<tag>-<n>`` (the first free n); warn with ``problem`` and ``then``."""
        n = 1
        while (aside := f.with_name(f"{f.name}.{tag}-{n}")).exists():
            n += 1
        os.replace(f, aside)
        warnings.warn(f"{problem}; moved to {aside.name}, {then}", RecoveryWarning, stacklevel=3)
        return aside

    def append(self, kind: str, record: dict[str, Any]) -> None:
        self.extend(kind, [record])

    def extend(self, kind: str, records: list[dict[str, Any]]) -> None:
        """Append ``records`` (tensors as their values) to ``kind``'s file, durably, in one write."""
        lines = "".join(json.dumps(r, default=_jsonable) + "\n" for r in records)
        with open(self.path / f"{kind}.jsonl", "a") as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())

    def truncate(self, last_round: int) -> None:
        """Drop records after ``last_round`` (those written after the checkpoint a resume starts from). A
        file with a corrupt line before its last is first moved aside (the records before that line stay)."""
        for kind in ("rounds", "evals"):
            f = self.path / f"{kind}.jsonl"
            records, problem = _read_jsonl(f)
            if problem:
                self._set_aside(f, problem, f"keeping the {len(records)} records before that line")
            keep = [r for r in records if r["round"] <= last_round]
            atomic_write_text(f, "".join(json.dumps(r) + "\n" for r in keep))

    def save_checkpoint(self, round_: int, state: dict[str, Any], numbers_version: str) -> None:
        """Write the checkpoint of ``round_``, computed by ``numbers_version``, atomically; the one it
        replaces becomes ``checkpoint.prev.pt`` (a crash between the two renames leaves that one to resume
        from)."""
        payload = {"round": round_, "state": _encode(state, "state"), "numbers_version": numbers_version}
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".checkpoint.")
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        current, previous = (self.path / name for name in CHECKPOINTS)
        if current.exists():
            os.replace(current, previous)
        os.replace(tmp, current)

    def load_checkpoint(
        self,
        device: torch.device,
        numbers_version: str,
        usable: Callable[[int, dict[str, Any]], bool] | None = None,
    ) -> tuple[int, dict[str, Any]] | None:
        """(round, state) of the newest readable checkpoint of ``numbers_version`` that ``usable`` accepts,
        or None. An unreadable one (truncated, not a checkpoint, or holding objects other than tensors and
        plain data) is moved aside with a warning; one of another numbers version is skipped with a warning,
        and one ``usable`` refuses is left as it is."""
        for name in CHECKPOINTS:
            f = self.path / name
            if not f.exists():
                continue
            ck, problem = _load_checkpoint(f, device)
            if ck is None:
                self._set_aside(f, problem, "resuming from an older checkpoint, or from round 0")
                continue
            round_, state, version = ck
            if version != numbers_version:
                warnings.warn(
                    f"{f}: the checkpoint of round {round_} was computed by numbers version "
                    f"{version or 'not recorded'}, this code computes {numbers_version}; not resumed",
                    RecoveryWarning,
                    stacklevel=2,
                )
            elif usable is None or usable(round_, state):
                return round_, state
        return None

    def finish(self, summary: dict[str, Any]) -> None:
        atomic_write_text(self.path / "summary.json", json.dumps(summary, indent=2, default=_jsonable))
        (self.path / CHECKPOINTS[1]).unlink(missing_ok=True)  # only a run under way needs the older one

    # -- reading ------------------------------------------------------------------------------------------
    def records(self, kind: str) -> list[dict[str, Any]]:
        """The records of ``kind`` up to the first unreadable line (the last line may be one cut by a crash
        mid-write; a corrupt line before it is reported with a warning)."""
        records, problem = _read_jsonl(self.path / f"{kind}.jsonl")
        if problem:
            warnings.warn(f"{problem}; the records after it are ignored", RecoveryWarning, stacklevel=2)
        return records


def _read_json(f: Path, valid=lambda d: True) -> tuple[dict[str, Any] | None, str | None]:
    """(content, None), (None, None) when ``f`` is absent, or (None, why it is unusable)."""
    if not f.exists():
        return None, None
    try:
        d = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        return None, f"{f} is corrupt ({exc})"
    if not isinstance(d, dict) or not valid(d):
        return None, f"{f} is corrupt (not the JSON object a run writes)"
    return d, None


def _read_jsonl(f: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The records of a JSON Lines file up to the first unreadable line, and what is wrong when that line is
    not the last (a crash mid-write can only cut the last line)."""
    if not f.exists():
        return [], None
    lines = f.read_bytes().splitlines()
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("round"), int):
            return out, None if i == len(lines) - 1 else f"{f} is corrupt at line {i + 1} of {len(lines)}"
        out.append(record)
    return out, None


def _load_checkpoint(
    f: Path, device: torch.device
) -> tuple[tuple[int, dict[str, Any], str | None] | None, str]:
    """((round, state, numbers version or None), "") or (None, why ``f`` cannot be used). Only tensors and
    plain data are loaded."""
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of files it did not write
            warnings.simplefilter("ignore", UserWarning)
            ck = torch.load(f, map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        if "Weights only load failed" in str(exc):
            return None, f"{f} holds objects other than tensors and plain data (refused: they could run code)"
        return None, f"{f} is not a readable checkpoint ({_first_line(exc)})"
    except OSError:  # the file system's fault (permissions, I/O), not the file's: not set aside
        raise
    except Exception as exc:  # noqa: BLE001 -- any other failure to decode this one file makes it unusable
        return None, f"{f} is not a readable checkpoint ({_first_line(exc)})"
    if not (isinstance(ck, dict) and isinstance(ck.get("round"), int) and isinstance(ck.get("state"), dict)):
        return None, f"{f} is not a fairfl checkpoint (expected {{'round': int, 'state': dict}})"
    return (ck["round"], _decode(ck["state"]), ck.get("numbers_version")), ""


def _encode(x: Any, where: str) -> Any:
    """``x`` with every numpy array / scalar replaced by a tagged tensor; ``TypeError`` naming the entry for
    anything ``torch.load(weights_only=True)`` would refuse."""
    if isinstance(x, np.generic):  # before the plain types: np.float64 is a float
        return {_SCALAR: _tensor(np.asarray(x), where)}
    if isinstance(x, np.ndarray):
        return {_ARRAY: _tensor(x, where)}
    if x is None or isinstance(x, (bool, int, float, str, torch.Tensor)):
        return x
    if isinstance(x, dict):
        return type(x)((k, _encode(v, f"{where}[{k!r}]")) for k, v in x.items())
    if type(x) in (list, tuple):
        return type(x)(_encode(v, f"{where}[{i}]") for i, v in enumerate(x))
    raise TypeError(
        f"checkpoint {where} is a {type(x).__name__}: an algorithm state holds tensors, numpy arrays and "
        "plain data only"
    )


def _tensor(a: np.ndarray, where: str) -> torch.Tensor:
    try:
        return torch.from_numpy(np.array(a, order="C"))  # a C-ordered copy; 0-d stays 0-d
    except TypeError:
        raise TypeError(f"checkpoint {where}: a tensor cannot hold numpy dtype {a.dtype}") from None


def _first_line(exc: BaseException, limit: int = 100) -> str:
    """``Type: message`` of ``exc``, its first line cut at ``limit`` characters."""
    text = str(exc).strip().split("\n")[0] or "no message: the file ends early"
    return f"{type(exc).__name__}: {text if len(text) <= limit else text[:limit] + '...'}"


def _decode(x: Any) -> Any:
    """Inverse of :func:`_encode`: tagged tensors back to numpy arrays / scalars of the same dtype."""
    if isinstance(x, dict):
        if x.keys() == {_ARRAY}:
            return x[_ARRAY].cpu().numpy()
        if x.keys() == {_SCALAR}:
            return x[_SCALAR].cpu().numpy()[()]
        return type(x)((k, _decode(v)) for k, v in x.items())
    if type(x) in (list, tuple):
        return type(x)(_decode(v) for v in x)
    return x


def client_accuracy_key(record: dict[str, Any]) -> str:
    """The per-client accuracies an evaluation record is judged by: each client's personalised model where
    the method has them, else the global model."""
    return "personal_acc" if "personal_acc" in record else "client_acc"


def load_evals(path: str | Path) -> pd.DataFrame:
    """The evaluation records of one run as a DataFrame (one row per evaluation)."""
    return pd.DataFrame(RunStore(path).records("evals"))


def _jsonable(x):
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"cannot store {type(x).__name__} in a record")
