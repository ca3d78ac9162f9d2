"""LEAF JSON datasets (Caldas et al. 2018, "LEAF: A Benchmark for Federated Settings"): FEMNIST.

LEAF writes every dataset as JSON files ``{"users": [...], "num_samples": [...], "user_data": {user:
{"x": [...], "y": [...]}}}`` (optionally ``"hierarchies"``), one set under ``data/train`` and one under
``data/test`` (``-t sample``: the same users in both; ``-t user``: disjoint users). FEMNIST
(``leaf/data/femnist/preprocess/data_to_json.py``) stores each 28x28 image as 784 floats ``gray / 255``:
the NIST scans are dark ink on a **white background, so 1.0 is background**. We keep that convention
(uint8 255 = background; no inversion to MNIST's black background). Labels: 0-9 digits, 10-35 'A'-'Z',
36-61 'a'-'z' (``relabel_class``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from .federated import Dataset

__all__ = ["FEMNIST_CLASSES", "FEMNIST_PREPROCESS", "load_femnist", "read_leaf_json"]

FEMNIST_CLASSES = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
FEMNIST_PREPROCESS = "./preprocess.sh -s niid --sf 0.05 -k 100 -t sample"  # LEAF paper_experiments/femnist.sh
_IMAGE_SIDE = 28
_REGENERATE = "regenerate it with LEAF's preprocess.sh (https://github.com/TalwalkarLab/leaf, data/<dataset>)"


def _default_root(root: str | os.PathLike | None = None) -> Path:
    """Data root: ``root``, else ``$FAIRFL_DATA``, else ``$XDG_CACHE_HOME/fairfl``, else ``~/.cache/fairfl``.

    Same rule as ``sources.data_root``; kept private here so the LEAF loaders stand alone.
    """
    if root is not None:
        return Path(root).expanduser()
    if os.environ.get("FAIRFL_DATA"):
        return Path(os.environ["FAIRFL_DATA"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "fairfl"


def _json_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(
            f"LEAF JSON file(s) not found: {missing}; pass existing .json files or folders"
        )
    if not files:
        raise FileNotFoundError("no LEAF JSON files given: pass .json files or a folder that holds them")
    return files


def read_leaf_json(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> dict:
    """Merge LEAF JSON files (or every ``*.json`` of given folders, by name) into one LEAF dict.

    Returns ``{"users", "num_samples", "user_data"}`` (+ ``"hierarchies"`` when every file has it), users in
    file order. ``num_samples`` is recomputed from ``len(y)``: LEAF's Shakespeare files overcount test
    samples by seq_len - 1, so the stored counts are not trusted.
    """
    users: list[str] = []
    user_data: dict[str, dict] = {}
    hierarchies: list | None = []
    for f in _json_files(paths):
        try:
            with open(f, encoding="utf-8") as fh:
                data = json.load(fh)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(
                f"{f}: not valid JSON ({exc}); the file is cut short or corrupt: {_REGENERATE}"
            ) from None
        if not isinstance(data, dict):
            raise ValueError(f"{f}: holds a {type(data).__name__}, not a LEAF JSON object; {_REGENERATE}")
        for key in ("users", "user_data"):
            if key not in data:
                raise ValueError(
                    f"{f}: missing key {key!r}; a LEAF JSON file has 'users', 'num_samples', 'user_data': "
                    f"{_REGENERATE}"
                )
        if not isinstance(data["users"], list) or not isinstance(data["user_data"], dict):
            raise ValueError(f"{f}: 'users' must be a list and 'user_data' an object; {_REGENERATE}")
        for u in data["users"]:
            if not isinstance(u, str):
                raise ValueError(f"{f}: user name {u!r} is not a string; {_REGENERATE}")
            if u in user_data:
                raise ValueError(
                    f"{f}: user {u!r} already read from an earlier file; pass each split's files once"
                )
            d = data["user_data"].get(u)
            if not (isinstance(d, dict) and isinstance(d.get("x"), list) and isinstance(d.get("y"), list)):
                raise ValueError(
                    f"{f}: user {u!r} has no user_data entry with 'x' and 'y' lists; the file is incomplete: "
                    f"{_REGENERATE}"
                )
            if len(d["x"]) != len(d["y"]):
                raise ValueError(
                    f"{f}: user {u!r} has {len(d['x'])} x but {len(d['y'])} y; the file is corrupt: "
                    f"{_REGENERATE}"
                )
            users.append(u)
            user_data[u] = d
        if hierarchies is not None and "hierarchies" in data:
            hierarchies.extend(data["hierarchies"])
        else:
            hierarchies = None
    out = {"users": users, "num_samples": [len(user_data[u]["y"]) for u in users], "user_data": user_data}
    if hierarchies is not None:
        out["hierarchies"] = hierarchies
    return out


def _femnist_missing(where: Path) -> FileNotFoundError:
    return FileNotFoundError(
        f"LEAF FEMNIST not found: no {where}/train/*.json and {where}/test/*.json. FEMNIST is not available "
        f"offline. With internet: git clone https://github.com/TalwalkarLab/leaf && cd leaf/data/femnist && "
        f"{FEMNIST_PREPROCESS}; then copy leaf/data/femnist/data/train and .../test to {where}/ "
        f"(or pass split_dir= the folder holding train/ and test/)."
    )


def _user_images(x: list, owner: str) -> tuple[np.ndarray, bool]:
    """One writer's images as uint8 ``[n, 1, 28, 28]``, and whether they were stored as 0..1 floats."""
    arr = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    if arr.shape[1] != _IMAGE_SIDE * _IMAGE_SIDE:
        raise ValueError(
            f"FEMNIST user {owner!r}: images have {arr.shape[1]} values, expected 784 (28x28 flattened)"
        )
    peak = float(arr.max(initial=0.0))
    if peak > 255.0 or float(arr.min(initial=0.0)) < 0.0:
        raise ValueError(
            f"FEMNIST user {owner!r}: pixel values outside 0..1 (LEAF) or 0..255; the file is corrupt"
        )
    unit = peak <= 1.0
    img = np.rint(arr * 255.0) if unit else np.rint(arr)
    return img.astype(np.uint8).reshape(-1, 1, _IMAGE_SIDE, _IMAGE_SIDE), unit


def _stack_split(data: dict, writers: list[str], index: dict[str, int]) -> tuple[np.ndarray, ...]:
    """Images, labels, owner ids and per-writer "stored as 0..1" flags of one LEAF split, writers in order."""
    xs, ys, owners, units = [np.zeros((0, 1, _IMAGE_SIDE, _IMAGE_SIDE), np.uint8)], [], [], []
    for u in writers:
        d = data["user_data"].get(u)
        if d is None or not len(d["y"]):
            continue
        img, unit = _user_images(d["x"], u)
        xs.append(img)
        ys.append(np.asarray(d["y"], dtype=np.int64))
        owners.append(np.full(len(d["y"]), index[u], dtype=np.int64))
        units.append(unit)
    empty = np.zeros(0, np.int64)
    return np.concatenate(xs), np.concatenate([empty, *ys]), np.concatenate([empty, *owners]), np.array(units)


def load_femnist(
    root: str | os.PathLike | None = None,
    *,
    split_dir: str | os.PathLike | None = None,
    max_writers: int | None = None,
) -> Dataset:
    """LEAF FEMNIST (62 classes, 28x28), one client per writer, LEAF's own train/test files.

    Files: ``split_dir/{train,test}/*.json`` (default ``<root>/femnist/data``). ``max_writers`` keeps the
    first writers in LEAF's file order (random writer sampling, e.g. GIFAIR's 500 writers, belongs to the
    experiment). Images: uint8 ``[N, 1, 28, 28]``, ``round(255 * x)`` of LEAF's 0..1 floats (255 = white
    background); files that already hold 0..255 values are taken as they are (``meta['pixel_scale']``).
    """
    where = (
        Path(split_dir).expanduser() if split_dir is not None else _default_root(root) / "femnist" / "data"
    )
    if not (any((where / "train").glob("*.json")) and any((where / "test").glob("*.json"))):
        raise _femnist_missing(where)
    if max_writers is not None and max_writers < 1:
        raise ValueError(f"max_writers={max_writers}: must be a positive number of writers (or None for all)")
    train, test = read_leaf_json(where / "train"), read_leaf_json(where / "test")
    writers = train["users"] + [u for u in test["users"] if u not in train["user_data"]]
    writers = writers[:max_writers]
    index = {u: k for k, u in enumerate(writers)}
    x_tr, y_tr, o_tr, u_tr = _stack_split(train, writers, index)
    x_te, y_te, o_te, u_te = _stack_split(test, writers, index)
    y_all = np.concatenate([y_tr, y_te])
    if y_all.size and (y_all.min() < 0 or y_all.max() >= len(FEMNIST_CLASSES)):
        raise ValueError(f"FEMNIST labels span {y_all.min()}..{y_all.max()}; LEAF FEMNIST labels are 0..61")
    units = np.concatenate([u_tr, u_te])
    if units.any() and not units.all():
        raise ValueError(
            f"{where}: some writers' pixels are 0..1 floats (LEAF) and others 0..255; re-export the files"
        )
    scale = "0..1 floats x 255 (LEAF)" if units.all() else "0..255 as stored"
    return Dataset(
        name="femnist",
        x_train=torch.from_numpy(x_tr),
        y_train=torch.from_numpy(y_tr),
        x_test=torch.from_numpy(x_te),
        y_test=torch.from_numpy(y_te),
        num_classes=len(FEMNIST_CLASSES),
        source=f"LEAF FEMNIST JSON ({where})",
        owner_train=torch.from_numpy(o_tr),
        owner_test=torch.from_numpy(o_te),
        owner_names=writers,
        meta={
            "num_writers": len(writers),
            "classes": FEMNIST_CLASSES,
            "background": "white (uint8 255; LEAF float 1.0), dark ink, as LEAF stores it",
            "pixel_scale": scale,
            "split": "LEAF train/test files",
        },
    )
