"""Runs as rows (``sim/rows/``): every registered algorithm gives, trained together with other runs, the
numbers it gives alone (float64, at the rounding bound: a stack of rows is another computation than a run's
own stack), also with faults and beside a run that diverges."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models.dropout import SeededDropout
from fairfl_core.sim.batched_trainer import BatchedTrainer
from fairfl_core.sim.batches import draw_schedule
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec, Prox
from fairfl_core.sim.rows import (
    RowsBatcher,
    RowTerms,
    RunDied,
    concat_schedules,
    memory_budget,
    merge_specs,
    spec_key,
)
from tests.algorithms.test_contracts import CASES, FAULTS, WORK
from tests.conftest import tiny_federated, tiny_model
from tests.rounding import assert_close

ROUNDS = 3
SETTINGS = [("epochs", "none"), ("steps", "dropout"), ("epochs", "straggler")]


def _sim(data, seed, work, faults, model=None, **train) -> Simulation:
    settings = dict(rounds=ROUNDS, clients_per_round=3, batch_size=4, lr=0.2, local_steps=3)
    settings.update(WORK[work], **train)
    engine = Engine(model or tiny_model(), data, dtype=torch.float64, model_key="tiny")
    return Simulation(engine, TrainConfig(**settings), seed, FAULTS[faults])


def _record(algo, rounds=ROUNDS):
    outs = [algo.round(t) for t in range(rounds)]
    return [o.selected.tolist() for o in outs], algo.eval_params().clone()


def _as_rows(algos, rounds=ROUNDS, **batcher):
    """Run the algorithms in threads that meet in one batcher; their records in order."""
    batcher = RowsBatcher(stack=True, **batcher)
    for algo in algos:
        batcher.attach(algo.sim.engine)
    records = batcher.run([(f"run {i}", lambda a=algo: _record(a, rounds)) for i, algo in enumerate(algos)])
    for record in records:
        if isinstance(record, RunDied):
            raise record
    return records, batcher


def _same(a, b) -> bool:
    """Identical records: the same selections and, bit for bit, the same parameters (NaN matching NaN)."""
    (sel_a, w_a), (sel_b, w_b) = a, b
    return (
        sel_a == sel_b
        and torch.equal(w_a.isnan(), w_b.isnan())
        and torch.equal(w_a.nan_to_num(), w_b.nan_to_num())
    )


# A run's clients stacked with other runs' (padded to the longest schedule, one larger batch) are another
# computation than its own stack. The rounding bound of tests/rounding.py: the longest sum is over a client's
# samples, at most the tiny fixture's 117 training samples, through 7 reductions a local step (2 layers and
# the loss forward and back, the update) for at most 8 steps a round (epochs of 32 samples in batches of 4).
BOUND = dict(terms=117, depth=7 * (ROUNDS * 8 + 1))


def _close(a, b) -> bool:
    """The same selections, and parameters at the rounding bound (infinities and NaN in the same places)."""
    (sel_a, w_a), (sel_b, w_b) = a, b
    assert_close(w_a, w_b, **BOUND, what="parameters")
    return sel_a == sel_b


@pytest.mark.parametrize("work,faults", SETTINGS, ids=[f"{w}-{f}" for w, f in SETTINGS])
@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(CASES)])
def test_every_algorithm_as_rows_equals_its_runs_alone(name, params, work, faults):
    data = tiny_federated()

    def runs():
        # two seeds of the case, FedProx (another step term in the same stack) and a FedAvg that diverges
        poisoned = build_algorithm("fedavg", _sim(data, 3, work, faults), {})
        poisoned.state["w"] = torch.full_like(poisoned.w, float("inf"))
        return [
            build_algorithm(name, _sim(data, 0, work, faults), params),
            build_algorithm(name, _sim(data, 1, work, faults), params),
            build_algorithm("fedprox", _sim(data, 2, work, faults), {"mu": 0.5}),
            poisoned,
        ]

    alone = [_record(algo) for algo in runs()]
    together, batcher = _as_rows(runs())
    assert [_close(a, b) for a, b in zip(alone, together, strict=True)] == [True] * 4
    assert not torch.isfinite(together[3][1]).any() and torch.isfinite(together[2][1]).all()
    assert batcher.stacks < batcher.calls  # some calls did share a stack


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.drop = SeededDropout(0.3)  # masks supplied per row: dropout models share stacks too
        self.head = nn.Linear(48, 4)

    def features(self, x):
        return self.drop(torch.relu(self.conv(x)).flatten(1))

    def forward(self, x):
        return self.head(self.features(x))


@pytest.mark.parametrize("client_axis", ["loop", "vmap"])
def test_convolutional_dropout_clients_as_rows_equal_their_runs_alone(client_axis):
    data = tiny_federated()

    def runs():
        sims = [_sim(data, s, "steps", "none", model=TinyCNN()) for s in range(3)]
        for sim in sims:
            sim.engine = Engine(
                TinyCNN(), data, dtype=torch.float64, client_axis=client_axis, model_key="cnn"
            )
        return [
            build_algorithm(n, sim, p)
            for n, sim, p in zip(["fedavg", "fedavg", "fedprox"], sims, [{}, {}, {"mu": 0.1}], strict=True)
        ]

    alone = [_record(a) for a in runs()]
    together, batcher = _as_rows(runs())
    assert all(_close(a, b) for a, b in zip(alone, together, strict=True))
    assert batcher.stacks == ROUNDS  # all three runs in one stack each round


def test_a_memory_bound_splits_the_stack_into_chunks_with_the_same_numbers(monkeypatch):
    data = tiny_federated()
    alone = [_record(build_algorithm("fedavg", _sim(data, s, "steps", "none"), {})) for s in range(3)]
    monkeypatch.setattr(
        "fairfl_core.sim.rows.memory.memory_budget", lambda device, gigabytes, share: 1
    )  # a row a chunk
    chunks = []
    real_train = BatchedTrainer.train

    def train(self, start, spec, schedule, running=None, chunk_size=None):
        chunks.append(chunk_size)
        return real_train(self, start, spec, schedule, running, chunk_size)

    monkeypatch.setattr(BatchedTrainer, "train", train)
    together, _ = _as_rows([build_algorithm("fedavg", _sim(data, s, "steps", "none"), {}) for s in range(3)])
    assert set(chunks) == {1}
    assert all(_close(a, b) for a, b in zip(alone, together, strict=True))


# -- the merge, by hand ------------------------------------------------------------------------------------
def test_schedules_concatenate_with_inactive_padding():
    index = torch.arange(12).view(2, 6)
    a = draw_schedule(index[:1], np.array([6]), 3, epochs=1, seed=0)  # 2 steps
    b = draw_schedule(index[1:], np.array([6]), 2, epochs=1, seed=1)  # batch 2: another batch size
    with pytest.raises(ValueError, match="one batch size"):
        concat_schedules([a, b])
    c = draw_schedule(index, np.array([6, 3]), 3, epochs=2, seed=1)  # 4 and 2 steps
    both = concat_schedules([a, c])
    assert both.index.shape == (3, 4, 3)
    assert both.active.tolist() == [[True, True, False, False], [True] * 4, [True, True, False, False]]
    assert torch.equal(both.index[0, :2], a.index[0]) and both.mask[0, 2:].sum() == 0


def test_row_terms_give_each_range_its_own_term_and_the_identity_elsewhere():
    """Rows 0-1 carry Prox(μ=0.5, ref 0), row 2 no term: drift μ(w − 0) on rows 0-1, exactly 0 on row 2."""
    w = [torch.tensor([[2.0], [4.0], [8.0]], dtype=torch.float64)]
    prox = Prox(0.5, torch.zeros(1, dtype=torch.float64))
    term = RowTerms([(0, 2, prox), (2, 3, None)]).bind(_Space(), w)
    assert term.scale(None) is None
    assert term.drift(w, None)[0].tolist() == [[1.0], [2.0], [0.0]]
    rows = torch.tensor([1, 2])
    assert term.drift([t[rows] for t in w], rows)[0].tolist() == [[2.0], [0.0]]
    assert term.rows(slice(1, 3)).parts[0][:2] == (0, 1)


def test_specs_merge_by_position_and_keys_ignore_the_terms():
    a = LocalSpec(lr=0.1, batch_size=4, steps=2, prox_mu=0.5)
    b = LocalSpec(lr=0.1, batch_size=4, steps=2, weight_decay=0.1)
    assert spec_key(a) == spec_key(b) != spec_key(LocalSpec(lr=0.2, batch_size=4, steps=2))
    merged = merge_specs([a, b], [2, 3])
    assert [p[:2] for p in merged.terms[0].parts] == [(0, 2), (2, 5)]
    assert merged.prox_mu == 0.0 and merged.step_terms() == list(merged.terms)


def test_objectives_rebuilt_each_round_share_a_stack_when_equal():
    def objective(q):
        return lambda value: value ** (q + 1)

    key = lambda q: spec_key(LocalSpec(lr=0.1, batch_size=4, steps=2, objective=objective(q)))  # noqa: E731
    assert key(1.0) == key(1.0) != key(2.0)


class _Space:
    def unflatten(self, flat):
        return {"w": flat.view(-1, 1) if flat.dim() == 2 else flat.view(1)}


def test_a_sequential_engine_trains_alone_in_its_turn():
    data = tiny_federated()

    def runs():
        sims = [_sim(data, s, "steps", "none") for s in range(2)]
        sims[1].engine = Engine(tiny_model(), data, kind="sequential", dtype=torch.float64, model_key="tiny")
        return [build_algorithm("fedavg", sim, {}) for sim in sims]

    alone = [_record(a) for a in runs()]
    together, batcher = _as_rows(runs())
    assert all(_same(a, b) for a, b in zip(alone, together, strict=True))
    assert batcher.stacks == batcher.calls  # nothing to stack with


def test_an_engine_without_a_model_key_trains_alone_in_its_turn():
    data = tiny_federated()

    def runs():
        sims = [_sim(data, s, "steps", "none") for s in range(2)]
        sims[1].engine = Engine(tiny_model(), data, dtype=torch.float64)  # model_key None
        return [build_algorithm("fedavg", sim, {}) for sim in sims]

    alone = [_record(a) for a in runs()]
    together, batcher = _as_rows(runs())
    assert all(_same(a, b) for a, b in zip(alone, together, strict=True))
    assert batcher.stacks == batcher.calls


# -- a run that dies ---------------------------------------------------------------------------------------
def _three_runs(data):
    return [build_algorithm("fedavg", _sim(data, s, "steps", "none"), {}) for s in range(3)]


def test_a_run_that_raises_a_base_exception_stops_the_meeting_naming_it():
    algos = _three_runs(tiny_federated())
    batcher = RowsBatcher(stack=True, poll=0.05)
    for algo in algos:
        batcher.attach(algo.sim.engine)

    def dies():
        algos[1].round(0)
        raise SystemExit("killed")

    jobs = [("run 0", lambda: _record(algos[0])), ("victim", dies), ("run 2", lambda: _record(algos[2]))]
    out = batcher.run(jobs)
    assert all(isinstance(o, RunDied) for o in out)
    assert "run victim raised SystemExit: killed" in str(out[1])
    assert all("run victim raised SystemExit" in str(o) for o in out)  # the others name it
    with pytest.raises(RunDied, match="run victim raised SystemExit"):  # and so does every later call
        algos[0].sim.engine.trainer.train(*_first_call(algos[0]))


def _first_call(algo):
    engine, spec = algo.sim.engine, algo.sim.local_spec(0)
    return algo.w, spec, engine.schedule(np.arange(2), spec, 0), engine.running


def test_a_base_exception_in_the_stacked_training_names_the_runs_of_the_stack(monkeypatch):
    algos = _three_runs(tiny_federated())
    batcher = RowsBatcher(stack=True, poll=0.05)
    for algo in algos:
        batcher.attach(algo.sim.engine)

    def train(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(BatchedTrainer, "train", train)
    out = batcher.run([(f"run {i}", lambda a=a: _record(a)) for i, a in enumerate(algos)])
    assert all(isinstance(o, RunDied) for o in out)
    assert all("KeyboardInterrupt () in the training of run(s) run 0, run 1, run 2" in str(o) for o in out)


def test_a_run_thread_that_ends_without_leaving_is_noticed_within_a_poll(monkeypatch):
    algos = _three_runs(tiny_federated())
    batcher = RowsBatcher(stack=True, poll=0.05)
    for algo in algos:
        batcher.attach(algo.sim.engine)
    leave = RowsBatcher._leave
    monkeypatch.setattr(  # the short run's thread ends as if killed: it never leaves
        RowsBatcher, "_leave", lambda self, t: None if t.name == "short" else leave(self, t)
    )
    jobs = [("short", lambda: _record(algos[0], 1))]
    jobs += [(f"run {i}", lambda a=a: _record(a)) for i, a in enumerate(algos[1:], 1)]
    out = batcher.run(jobs)  # without the poll: a hang
    assert out[0][1].isfinite().all()  # the short run's own result
    assert all("run short ended without leaving the meeting" in str(o) for o in out[1:])


def test_a_rows_engine_trains_only_inside_the_meeting():
    algo = _three_runs(tiny_federated())[0]
    RowsBatcher().attach(algo.sim.engine)
    with pytest.raises(RuntimeError, match="trains only inside RowsBatcher.run"):
        algo.round(0)


# -- memory --------------------------------------------------------------------------------------------------
def test_processes_sharing_a_device_split_its_memory_budget(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (8 * 2**30, 16 * 2**30))
    cuda = torch.device("cuda")
    assert memory_budget(cuda) == 4 * 2**30 and memory_budget(cuda, share=4) == 2**30
    assert memory_budget(cuda, 3.0, share=4) == 3 * 2**30  # given: per process
    cpu = torch.device("cpu")
    monkeypatch.setattr("os.sysconf", lambda name: {"SC_AVPHYS_PAGES": 2**20, "SC_PAGE_SIZE": 2**12}[name])
    assert memory_budget(cpu) == 2**30 and memory_budget(cpu, share=2) == 2**29
