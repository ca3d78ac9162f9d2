"""Golden runs: one tiny run per registered algorithm and one per model family, whose numbers pin the numbers
versions of ``fairfl_core/numbers_version.py``.

An algorithm's golden is a real config (scikit-learn's digits over 6 Dirichlet clients, the MLP) run end to
end by ``run_experiment`` in float64 for 2 rounds, evaluated every round; a model family's golden is FedAvg
for 2 rounds on a small in-memory dataset of that model's inputs (``family_data``). The fingerprint is the
SHA-256 of every number the run stored (evaluations, selections, diagnostics; no timings), written with all
17 digits. ``golden.json`` holds each golden's numbers version and fingerprint.

The goldens run in a subprocess whose kernels are pinned so that their bits are the same on every x86-64 CPU
(:data:`PINNED`): one thread, ATen's portable kernels (``ATEN_CPU_CAPABILITY=default``), MKL's conditional
numerical reproducibility in strict mode (``MKL_CBWR=COMPATIBLE,STRICT``: Intel's guarantee of one result on
every x86 processor), oneDNN at SSE4.1 and numpy's OpenBLAS at its Haswell kernels. A fingerprint that
changes therefore means the code changed, on machines that compute as the recording one. Not every kernel
is pinned: MKL's vector math, through which torch computes ``sqrt`` and ``log`` of float64 tensors, is not
correctly rounded and rounds otherwise on other processors even under ``MKL_CBWR`` (an Intel Xeon with
AVX-512 FP16 and an AMD EPYC differ in the last bit; AMSGrad's step η m / √(v̂ + ε) with ε = 1e-8 shows it
within two rounds). :func:`probe` tells such machines apart: a fixed computation through the same kernels
(torch's and numpy's matrix products, a convolution, log-softmax, exp/tanh/sigmoid, sqrt and log over a
wide range, a linear solve) whose fingerprint is recorded with each machine's goldens; on a machine whose
probe no record has, the goldens are compared by their last evaluations at the rounding bound of
``tests/rounding.py`` instead of bit for bit (said in the test's output).

    python -m tests.golden             # run the goldens (pinned) and print what changed
    python -m tests.golden --update    # record new fingerprints; refused for a golden whose numbers changed
                                       # while its numbers version and resolved hyperparameters did not:
                                       # bump the version first
    python -m tests.golden --rebase    # add this machine's bits beside the recorded machines' (its probe
                                       # differs from theirs); refused unless every golden keeps its version
                                       # and hyperparameters and agrees with the recorded one at the
                                       # rounding bound

``golden.json`` holds one full record (``probe``, ``goldens``: each golden's numbers version, resolved
hyperparameters, fingerprint and last evaluation) and, under ``machines``, the fingerprints of other machines
by their probe, so that each kind of machine a developer works on compares bit for bit. ``--update`` makes
this machine's goldens the full record and drops the other machines' fingerprints when numbers changed
(``--rebase`` on those machines adds them again); on a machine no record matches, it takes a golden of an
unchanged version as unchanged when its last evaluation agrees at the rounding bound (:func:`changes`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_FILE = Path(__file__).with_name("golden.json")
PINNED = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE,STRICT",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "DNNL_MAX_CPU_ISA": "SSE41",
    # numpy's OpenBLAS is built for every CPU and picks its kernels at run time (a Zen 4 takes the AVX-512
    # ones): FedMGDA+'s and GIFAIR-FL's numpy products rounded otherwise there; Haswell's kernels run on every
    # x86-64 CPU with AVX2
    "OPENBLAS_CORETYPE": "Haswell",
}
ROUNDS = 2


def _config(name: str, algorithm: str, params: dict, data: dict, model: dict, **train) -> dict[str, Any]:
    settings = dict(rounds=ROUNDS, clients_per_round=3, batch_size=16, lr=0.05, local_steps=2)
    settings.update(train)
    return {
        "name": f"golden {name}",
        "seed": 1,
        "data": data,
        "model": model,
        "algorithm": {"name": algorithm, "params": params},
        "train": settings,
        "eval": {"every": 1},
        "engine": {"dtype": "float64", "device": "cpu", "threads": 1},
        "checkpoint_every": ROUNDS,
    }


DIGITS = {"name": "digits", "partition": "dirichlet", "num_clients": 6, "partition_options": {"alpha": 0.5}}
MLP = {"name": "mlp", "options": {"in_features": 64}}
# model family -> (registered model, options, input shape): small options where the paper's would make the
# pinned float64 kernels slow; the code path is the family's all the same
FAMILIES = {
    "mlp": ("mlp", {"in_features": 64}, (1, 8, 8)),
    "cnn": ("lenet5_mnist", {}, (1, 28, 28)),
    "resnet": ("resnet18", {}, (3, 8, 8)),
    "convmixer": ("convmixer", {"dim": 16, "depth": 2}, (3, 8, 8)),
    "lstm": ("lstm_leaf", {"hidden_size": 16}, (20,)),
}


def goldens() -> dict[str, dict[str, Any]]:
    """Every algorithm golden's config by name, ``algorithm:<name>`` for each registered algorithm: MLP on
    digits (6 Dirichlet clients), with the contract tests' first parameters."""
    from fairfl_core.algorithms import ALGORITHMS
    from tests.algorithms.test_contracts import EXACT

    return {
        f"algorithm:{name}": _config(name, name, EXACT.get(name, [{}])[0], DIGITS, MLP)
        for name in sorted(ALGORITHMS)
    }


def family_data(shape: tuple[int, ...], num_classes: int = 10, vocab: int = 80):
    """6 clients of 4 training and 2 test samples of ``shape`` (uint8 images, or int64 tokens for a 1-d
    shape), drawn from a fixed seed."""
    import torch

    from fairfl_core.data.federated import FederatedDataset

    g = torch.Generator().manual_seed(0)
    n, k = 40, 6
    if len(shape) == 1:
        x = torch.randint(0, vocab, (n, *shape), generator=g)
        y = torch.randint(0, vocab, (n,), generator=g)
        num_classes, mean, std = vocab, None, None
    else:
        x = torch.randint(0, 256, (n, *shape), generator=g, dtype=torch.uint8)
        y = torch.randint(0, num_classes, (n,), generator=g)
        mean, std = (0.5,) * shape[0], (0.25,) * shape[0]
    return FederatedDataset(
        name="golden",
        x=x,
        y=y,
        num_classes=num_classes,
        client_train=[torch.arange(6 * c, 6 * c + 4) for c in range(k)],
        client_test=[torch.arange(6 * c + 4, 6 * c + 6) for c in range(k)],
        pooled_test=torch.arange(36, 40),
        groups=torch.tensor([c % 2 for c in range(k)]),
        mean=mean,
        std=std,
        source="tests/golden.py",
    )


def family_run(family: str) -> list[dict[str, Any]]:
    """The evaluation records of FedAvg on ``family``'s model: 2 rounds of 3 clients, 2 local steps of 2
    samples, float64, evaluated every round."""
    import torch

    from fairfl_core.algorithms import build_algorithm
    from fairfl_core.experiments.config import TrainConfig
    from fairfl_core.experiments.runner import evaluate
    from fairfl_core.models import build_model
    from fairfl_core.sim.context import Simulation
    from fairfl_core.sim.engine import Engine

    name, options, shape = FAMILIES[family]
    data = family_data(shape)
    if len(shape) == 1:
        options = {**options, "vocab_size": data.num_classes}
    model = build_model(name, seed=1, **options)
    train = TrainConfig(rounds=ROUNDS, clients_per_round=3, batch_size=2, lr=0.05, local_steps=2)
    sim = Simulation(Engine(model, data, dtype=torch.float64), train, 1)
    algo = build_algorithm("fedavg", sim, {})
    records = [evaluate(algo, sim, 0)]
    for t in range(ROUNDS):
        algo.round(t)
        records.append(evaluate(algo, sim, t + 1))
    return records


def fingerprint(evals: list[dict[str, Any]], rounds: list[dict[str, Any]]) -> str:
    """SHA-256 of every number of a run's records (timings left out), each written with all 17 digits."""
    evals = [{k: v for k, v in r.items() if k != "wall_time"} for r in evals]
    rounds = [{k: v for k, v in r.items() if k != "seconds"} for r in rounds]
    text = json.dumps({"evals": evals, "rounds": rounds}, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(x):
    """A stored value as JSON writes it (tensors and arrays as lists)."""
    if hasattr(x, "tolist"):
        return x.tolist()
    return x.item() if hasattr(x, "item") else x


def probe() -> str:
    """Fingerprint of a fixed float64 computation through the kernels the goldens use: whether this machine
    computes as the one that recorded them."""
    import torch

    g = torch.Generator().manual_seed(0)
    a, b = (
        torch.randn(37, 203, generator=g, dtype=torch.float64),
        torch.randn(203, 19, generator=g, dtype=torch.float64),
    )
    x = torch.randn(3, 1, 28, 28, generator=g, dtype=torch.float64)
    k = torch.randn(6, 1, 5, 5, generator=g, dtype=torch.float64)
    v = torch.randn(4096, generator=g, dtype=torch.float64).mul(15).exp()  # positive, e^±60
    parts = [
        a.numpy() @ b.numpy(),  # numpy's OpenBLAS (the algorithms' own numpy arithmetic)
        np.linalg.solve(a[:19, :19].numpy() @ a[:19, :19].numpy().T + np.eye(19), b[:19].numpy()),
        a @ b,
        torch.bmm(a[None].expand(2, -1, -1), b[None].expand(2, -1, -1)),
        torch.nn.functional.conv2d(x, k),
        torch.log_softmax(a, 1),
        a.exp().sum(0),
        a.tanh() * a.sigmoid(),
        v.sqrt(),  # MKL's vector math (torch's float64 sqrt and log): not correctly rounded
        (v + 1e-8).sqrt(),
        v.log(),
    ]
    h = hashlib.sha256()
    for t in parts:
        h.update(np.ascontiguousarray(t).tobytes())
    return h.hexdigest()


def compute(names: list[str] | None = None) -> dict[str, Any]:
    """Run the goldens ``names`` (default all) in this process (call it under :data:`PINNED`):
    ``{"probe": ..., "goldens": {name: {"numbers_version", "fingerprint", "last"}}}``."""
    import warnings

    from fairfl_core.experiments.config import ExperimentConfig
    from fairfl_core.experiments.runner import resolved_hyper, run_experiment, run_numbers_version
    from fairfl_core.experiments.store import RunStore
    from fairfl_core.numbers_version import numbers_version

    out: dict[str, Any] = {"probe": probe(), "goldens": {}}
    configs = goldens()
    everything = [*sorted(configs), *(f"model:{f}" for f in FAMILIES)]
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names or everything:
            if name.startswith("model:"):
                family = name.split(":", 1)[1]
                evals, rounds, hyper = family_run(family), [], None
                version = numbers_version("fedavg", FAMILIES[family][0])
            else:
                cfg = ExperimentConfig.from_dict(configs[name])
                store = RunStore(run_experiment(cfg, tmp, progress=False).path)
                evals, rounds = store.records("evals"), store.records("rounds")
                hyper = resolved_hyper(cfg.checked_hyper())
                version = run_numbers_version(cfg)
            out["goldens"][name] = {
                "numbers_version": version,
                "hyper": hyper,
                "fingerprint": fingerprint(evals, rounds),
                "last": {k: _plain(evals[-1][k]) for k in ("client_loss", "global_loss") if k in evals[-1]},
            }
    return out


def compute_pinned(names: list[str] | None = None, timeout: float = 900) -> dict[str, Any]:
    """:func:`compute` in a subprocess under :data:`PINNED` (the variables must be set before torch loads)."""
    env = {**os.environ, **PINNED, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tests.golden", "--json", *(names or [])]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the golden runs failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def stored() -> dict[str, Any]:
    return json.loads(GOLDEN_FILE.read_text()) if GOLDEN_FILE.exists() else {"probe": None, "goldens": {}}


def recorded_for(old: dict[str, Any], probe: str) -> dict[str, Any] | None:
    """The stored goldens as the machine that computes ``probe`` recorded them (the full record, or its
    fingerprints from ``machines`` over the full record's other fields), or None when no machine like it
    recorded them."""
    if probe == old["probe"]:
        return old
    prints = old.get("machines", {}).get(probe)
    if prints is None:
        return None
    return {
        "probe": probe,
        "goldens": {
            name: {**g, "fingerprint": prints[name]} for name, g in old["goldens"].items() if name in prints
        },
    }


LAST_EVAL_BOUND = {"terms": 1437, "depth": 35}
"""The rounding bound at which a golden's last evaluation is compared on a machine whose probe differs: the
longest sum is an evaluation over digits' 1,437 training samples, through 7 reductions a local step for 2
rounds of 2 steps and a final evaluation."""


def retuned(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Goldens of ``new`` recorded in ``old`` under another numbers version or resolved hyperparameters (a
    hyperparameter added since counts at the value it adds with, as for cached runs:
    ``runner.changed_hyper``)."""
    from fairfl_core.experiments.runner import changed_hyper

    def hyper_moved(was: dict[str, Any] | None, now: dict[str, Any] | None) -> bool:
        return (was is None) != (now is None) or bool(now is not None and changed_hyper(was, now))

    return [
        name
        for name, g in new["goldens"].items()
        if name in old["goldens"]
        and (
            g["numbers_version"] != old["goldens"][name]["numbers_version"]
            or hyper_moved(old["goldens"][name].get("hyper"), g.get("hyper"))
        )
    ]


def with_machine(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with ``new``'s machine (its probe) and fingerprints added under ``machines``."""
    prints = {name: g["fingerprint"] for name, g in new["goldens"].items()}
    return {**old, "machines": {**old.get("machines", {}), new["probe"]: prints}}


def changes(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the goldens that changed between the stored ``old`` and this machine's ``new``, those of them whose
    numbers version and hyperparameters did not). Bit for bit against this machine's record
    (:func:`recorded_for`); on a machine no record matches, a golden changed when its last evaluation moved
    beyond the rounding bound (:data:`LAST_EVAL_BOUND`). Added and removed goldens and new versions count as
    changes."""
    mine = recorded_for(old, new["probe"])
    both = sorted(set(new["goldens"]) & set(old["goldens"]))
    if mine is None:
        moved = [name for name in both if not _last_close(old["goldens"][name], new["goldens"][name], name)]
    else:
        moved = [n for n in both if new["goldens"][n]["fingerprint"] != mine["goldens"][n]["fingerprint"]]
    versions = retuned(old, new)
    changed = sorted(set(moved) | set(versions) | (set(new["goldens"]) ^ set(old["goldens"])))
    return changed, sorted(set(moved) - set(versions))


def _last_close(old: dict[str, Any], new: dict[str, Any], name: str) -> bool:
    try:
        _assert_last_close(old, new, name)
    except AssertionError:
        return False
    return True


def _assert_last_close(old: dict[str, Any], new: dict[str, Any], name: str) -> None:
    from tests.rounding import assert_close

    for key, value in new["last"].items():
        assert_close(value, old["last"][key], **LAST_EVAL_BOUND, what=f"{name} {key}")


def updated(old: dict[str, Any], new: dict[str, Any], changed: list[str]) -> tuple[dict[str, Any], int]:
    """The record ``--update`` writes: ``new`` (this machine's goldens) as the full record, with the other
    recorded machines' fingerprints (the former full record's among them) kept when nothing ``changed`` and
    dropped when something did (they no longer hold); and how many machines were dropped."""
    full = {old["probe"]: {name: g["fingerprint"] for name, g in old["goldens"].items()}}
    others = {p: f for p, f in {**old.get("machines", {}), **full}.items() if p != new["probe"]}
    if changed:
        return new, len(others)
    return ({**new, "machines": others} if others else new), 0


def assert_last_evals_close(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Every golden of ``new`` has the last evaluation of ``old``'s at :data:`LAST_EVAL_BOUND`."""
    for name, g in new["goldens"].items():
        _assert_last_close(old["goldens"][name], g, name)


def refused_rebase(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why ``new`` (this machine's goldens) may not join ``old``'s machines: none when no recorded machine
    computes its probe and no golden changed (:func:`changes`: same goldens, numbers versions and
    hyperparameters, last evaluations within the rounding bound)."""
    if recorded_for(old, new["probe"]) is not None:
        return [
            "a machine that computes this probe is recorded: its bits are the recorded ones (use --update)"
        ]
    changed, moved = changes(old, new)
    return [
        f"{name}: "
        + (
            "last evaluation beyond the rounding bound"
            if name in moved
            else "new, removed, or of another numbers version or hyperparameters"
        )
        + " (use --update)"
        for name in changed
    ]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--json"]:
        print(json.dumps(compute(argv[1:] or None)))
        return 0
    new, old = compute_pinned(), stored()
    if argv[:1] == ["--rebase"]:
        reasons = refused_rebase(old, new)
        if reasons:
            print("refused: " + "; ".join(reasons), file=sys.stderr)
            return 1
        _write(with_machine(old, new))
        print(f"added this machine's bits to {GOLDEN_FILE.relative_to(ROOT)}, each within the rounding bound")
        return 0
    mine = recorded_for(old, new["probe"])
    if mine is None:
        print(
            "no recorded machine computes this probe: the goldens are compared at the rounding bound here "
            "(`--rebase` adds this machine's bits)",
            file=sys.stderr,
        )
    changed, refused = changes(old, new)
    print(f"{len(changed)} golden(s) changed: {', '.join(changed) or 'none'}")
    if argv[:1] != ["--update"]:
        return 1 if changed else 0
    if refused:
        print(
            f"refused: the numbers of {refused} changed but their numbers versions did not; bump the entries "
            "of fairfl_core/numbers_version.py they use (CORE when every golden changed), then update",
            file=sys.stderr,
        )
        return 1
    record, dropped = updated(old, new, changed)
    if dropped:
        print(f"dropped the fingerprints of {dropped} other machine(s): `--rebase` there adds them again")
    _write(record)
    print(f"wrote {GOLDEN_FILE.relative_to(ROOT)}")
    return 0


def _write(record: dict[str, Any]) -> None:
    GOLDEN_FILE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
