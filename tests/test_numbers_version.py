"""Numbers versions (``fairfl_core/numbers_version.py``): the golden runs pin them, and a cached run of
another version is recomputed, never reused."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from fairfl_core import numbers_version as nv
from fairfl_core.algorithms import ALGORITHMS, fedavg
from fairfl_core.algorithms.fedavg import FedAvg
from fairfl_core.experiments.config import ExperimentConfig
from fairfl_core.experiments.runner import run_experiment
from fairfl_core.experiments.store import RecoveryWarning, RunStore
from fairfl_core.models import MODELS
from tests import golden
from tests.rounding import unit_roundoff


def test_every_algorithm_and_model_family_has_a_golden_of_its_current_version():
    recorded = golden.stored()["goldens"]
    families = {nv.model_family(m) for m in MODELS}
    assert set(golden.FAMILIES) == families
    assert set(recorded) == {f"algorithm:{a}" for a in ALGORITHMS} | {f"model:{f}" for f in families}
    for name, g in recorded.items():
        kind, what = name.split(":")
        algorithm, model = (what, "mlp") if kind == "algorithm" else ("fedavg", golden.FAMILIES[what][0])
        assert g["numbers_version"] == nv.numbers_version(algorithm, model), (
            f"{name} was recorded under numbers version {g['numbers_version']}; this code has "
            f"{nv.numbers_version(algorithm, model)}: run `python -m tests.golden --update`"
        )


def test_the_goldens_compute_the_numbers_recorded_with_their_versions():
    """Bit for bit under the pinned kernels (tests/golden.py) against this kind of machine's record. On a
    machine whose pinned kernels round otherwise than every recorded one's (no record has its probe), each
    golden's last evaluation at the rounding bound instead (``golden.LAST_EVAL_BOUND``)."""
    old, new = golden.stored(), golden.compute_pinned()
    if golden.recorded_for(old, new["probe"]) is None:
        warnings.warn(
            "no recorded machine computes the golden probe as this CPU does: goldens compared at the "
            "rounding bound (`python -m tests.golden --rebase` records this machine's bits)",
            stacklevel=1,
        )
        golden.assert_last_evals_close(old, new)
        return
    changed, _ = golden.changes(old, new)
    assert not changed, (
        f"the numbers of {changed} changed: bump the numbers version of what changed in "
        "fairfl_core/numbers_version.py (ALGORITHMS[name] for one algorithm, MODEL_FAMILIES[family] for one "
        "model family, CORE when every golden changed), then run `python -m tests.golden --update`"
    )


def test_new_numbers_are_recorded_only_under_a_new_version():
    """``changes``: (changed, refused); bit for bit on a recorded machine, at the rounding bound elsewhere."""

    def record(probe="m", fp="x", version="c1.a1.m1", q=1, loss=2.0, name="a"):
        g = {"fingerprint": fp, "numbers_version": version, "hyper": {"q": q}, "last": {"global_loss": loss}}
        return {"probe": probe, "goldens": {name: g}}

    old = record()
    assert golden.changes(old, old) == ([], [])
    assert golden.changes(old, record(fp="y")) == (["a"], ["a"])  # new numbers, same version: refused
    assert golden.changes(old, record(fp="y", version="c1.a2.m1")) == (["a"], [])
    # a changed default: the run cache catches it
    assert golden.changes(old, record(fp="y", q=2)) == (["a"], [])
    added = {**old, "goldens": {**old["goldens"], **record(name="b")["goldens"]}}
    assert golden.changes(old, added) == (["b"], [])
    # a machine no record matches: the last evaluation at the rounding bound decides
    last_bit = 2.0 + 2 * unit_roundoff() * 2.0
    assert golden.changes(old, record("n", fp="y", loss=last_bit)) == ([], [])
    assert golden.changes(old, record("n", fp="y", loss=2.001)) == (["a"], ["a"])
    assert golden.changes(old, record("n", fp="y", loss=2.001, version="c1.a2.m1")) == (["a"], [])


def test_a_rebase_records_another_machines_bits_only_for_the_same_code():
    """``--rebase``: refused on a machine that computes a recorded probe, for a golden whose version or
    hyperparameters changed, and for one whose last evaluation moved beyond the rounding bound; accepted
    where only the last bits moved, after which each machine is compared with its own fingerprints."""

    def goldens(probe, version="c1.a1.m1", loss=2.0):
        g = {"fingerprint": f"{probe}{loss}", "numbers_version": version, "hyper": {"q": 1}}
        return {"probe": probe, "goldens": {"a": {**g, "last": {"global_loss": loss}}}}

    old = goldens("amd")
    last_bit = 2.0 + 2 * unit_roundoff() * 2.0  # one unit in the last place
    intel = goldens("intel", loss=last_bit)
    assert golden.refused_rebase(old, intel) == []
    assert "is recorded" in golden.refused_rebase(old, goldens("amd", loss=last_bit))[0]
    assert "numbers version" in golden.refused_rebase(old, goldens("intel", "c1.a2.m1"))[0]
    assert "beyond the rounding bound" in golden.refused_rebase(old, goldens("intel", loss=2.001))[0]
    both = golden.with_machine(old, intel)
    # each machine compares against its own bits; a third is not recorded, and the second may not rebase again
    assert golden.recorded_for(both, "amd")["goldens"] == old["goldens"]
    assert (
        golden.recorded_for(both, "intel")["goldens"]["a"]["fingerprint"]
        == intel["goldens"]["a"]["fingerprint"]
    )
    assert golden.recorded_for(both, "arm") is None
    assert "is recorded" in golden.refused_rebase(both, intel)[0]


def test_an_update_keeps_the_other_machines_only_when_no_numbers_changed():
    def record(probe, fp):
        return {"probe": probe, "goldens": {"a": {"fingerprint": fp, "numbers_version": "c1.a1.m1"}}}

    old = golden.with_machine(record("amd", "x"), record("intel", "y"))
    same, dropped = golden.updated(old, record("intel", "y"), changed=[])
    assert dropped == 0 and same["probe"] == "intel" and same["machines"] == {"amd": {"a": "x"}}
    assert golden.recorded_for(same, "amd")["goldens"]["a"]["fingerprint"] == "x"
    bumped, dropped = golden.updated(old, record("intel", "z"), changed=["a"])
    assert dropped == 1 and "machines" not in bumped and golden.recorded_for(bumped, "amd") is None


def test_the_probe_covers_the_vector_math_that_rounds_otherwise_by_processor(monkeypatch):
    """The probe passes through torch's float64 sqrt and log (MKL's vector math, which differs between
    processors under MKL_CBWR): a machine whose sqrt rounds otherwise computes another probe."""
    import numpy as np

    real_sqrt = torch.Tensor.sqrt
    recorded = golden.probe()
    monkeypatch.setattr(
        torch.Tensor, "sqrt", lambda t: torch.from_numpy(np.nextafter(real_sqrt(t).numpy(), np.inf))
    )
    assert golden.probe() != recorded


def test_versions_name_the_algorithm_and_the_model_family(monkeypatch):
    assert (
        nv.numbers_version("fedavg", "lenet5_mnist") == "c1.a1.m1" and nv.model_family("lstm_leaf") == "lstm"
    )
    monkeypatch.setitem(nv.ALGORITHMS, "qffl", 3)
    monkeypatch.setitem(nv.MODEL_FAMILIES, "cnn", 2)
    assert nv.numbers_version("qffl", "lenet5_mnist") == "c1.a3.m2"
    assert nv.numbers_version("fedavg", "mlp") == "c1.a1.m1"
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        nv.model_family("nope")


def _reversed_sum(w, params, p, server_lr=1.0):
    """fedavg.averaged with the clients summed in the other order: the same sum, other rounding."""
    return w + server_lr * (p.flip(0) @ (params - w).flip(0))


def test_a_changed_summation_order_fails_the_golden_and_once_bumped_recomputes_the_cache(
    tmp_path, monkeypatch
):
    """The issue's scratch-branch check, in one process: the FedAvg golden's fingerprint changes when the
    server average sums in another order; the cache does not notice that on its own; bumping the version
    makes the next run recompute, saying why, and record the new version."""
    name = "algorithm:fedavg"
    cfg = ExperimentConfig.from_dict(golden.goldens()[name])
    before = golden.compute([name])
    monkeypatch.setattr(fedavg, "averaged", _reversed_sum)
    after = golden.compute([name])
    assert golden.changes(before, after) == ([name], [name])

    monkeypatch.undo()
    cached = run_experiment(cfg, tmp_path, progress=False)
    numbers = golden.fingerprint(
        RunStore(cached.path).records("evals"), RunStore(cached.path).records("rounds")
    )
    monkeypatch.setattr(fedavg, "averaged", _reversed_sum)
    rounds = []
    real_round = FedAvg.round
    monkeypatch.setattr(FedAvg, "round", lambda self, t: rounds.append(t) or real_round(self, t))
    assert run_experiment(cfg, tmp_path, progress=False).summary == cached.summary and rounds == []

    monkeypatch.setattr(nv, "CORE", nv.CORE + 1)
    with pytest.warns(
        RecoveryWarning, match=r"computed by numbers version c1\.a1\.m1, this code computes c2"
    ):
        again = run_experiment(cfg, tmp_path, progress=False)
    assert rounds == list(range(cfg.train.rounds)) and again.summary["numbers_version"] == "c2.a1.m1"
    store = RunStore(again.path)
    assert golden.fingerprint(store.records("evals"), store.records("rounds")) != numbers
    assert (again.path / "summary.json.stale-1").exists()


def test_a_run_without_a_recorded_version_is_recomputed_and_a_checkpoint_of_another_is_not_resumed(tmp_path):
    cfg = ExperimentConfig.from_dict(golden.goldens()["algorithm:fedavg"])
    first = run_experiment(cfg, tmp_path, progress=False)
    assert first.summary["numbers_version"] == "c1.a1.m1"
    summary_file = first.path / "summary.json"
    older = {k: v for k, v in json.loads(summary_file.read_text()).items() if k != "numbers_version"}
    summary_file.write_text(json.dumps(older))
    with pytest.warns(RecoveryWarning, match="numbers version not recorded"):
        again = run_experiment(cfg, tmp_path, progress=False)
    assert again.summary["numbers_version"] == "c1.a1.m1"

    store = RunStore(tmp_path / "older")
    store.open(cfg.to_dict())
    store.save_checkpoint(1, {"w": torch.zeros(1)}, "c0.a1.m1")
    with pytest.warns(RecoveryWarning, match="computed by numbers version c0.a1.m1.*not resumed"):
        assert store.load_checkpoint(torch.device("cpu"), "c1.a1.m1") is None
