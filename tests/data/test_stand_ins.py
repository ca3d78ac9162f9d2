"""The stand-in registry: which data sets are under the data root, and what replaces an absent one."""

import pytest

from fairfl_core.data.stand_ins import FILES, STAND_INS, present, stand_in


def test_nothing_is_present_in_an_empty_root_and_the_stand_ins_say_what_they_replace(tmp_path):
    assert not any(present(name, tmp_path) for name in FILES)
    assert stand_in("cifar10", tmp_path) == STAND_INS["cifar10"]
    assert "data.stand_in=MNIST" in stand_in("mnist", tmp_path)


def test_a_data_set_is_present_only_with_all_its_files(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for f in ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"):
        (folder / f).write_bytes(b"")
    assert not present("cifar10", tmp_path)  # no test_batch
    (folder / "test_batch").write_bytes(b"")
    assert present("cifar10", tmp_path) and stand_in("cifar10", tmp_path) == ()
    (tmp_path / "emnist-byclass-train-images-idx3-ubyte.gz").write_bytes(b"")
    assert present("emnist", tmp_path)  # any one of its places will do


def test_unknown_names_are_named_with_the_known_ones(tmp_path):
    with pytest.raises(KeyError, match="no data set 'imagenet'"):
        present("imagenet", tmp_path)
    with pytest.raises(KeyError, match="has no stand-in"):
        stand_in("cifar100", tmp_path)
