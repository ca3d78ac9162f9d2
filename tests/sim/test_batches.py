import numpy as np
import pytest
import torch

from fairfl_core.sim.batches import NoiseAhead, draw_schedule, dropout_noise


def _padded(counts):
    width = max(counts)
    index = torch.zeros(len(counts), width, dtype=torch.long)
    start = 0
    for k, n in enumerate(counts):
        index[k, :n] = torch.arange(start, start + n)
        start += n
    return index, np.array(counts)


def test_steps_mode_walks_permutations_without_replacement():
    index, counts = _padded([7, 20, 3])
    s = draw_schedule(index, counts, batch_size=5, steps=4, seed=1)
    assert s.index.shape == (3, 4, 5) and s.active.all()
    # client 1 (20 samples): 4 steps × 5 = one full epoch, every sample exactly once
    drawn = s.index[1][s.mask[1] > 0]
    assert sorted(drawn.tolist()) == list(range(7, 27))
    # client 0 (7 samples): 20 draws = first epoch (7) all distinct, then the next permutation
    stream = s.index[0][s.mask[0] > 0].tolist()
    assert sorted(stream[:7]) == list(range(7)) and sorted(stream[7:14]) == list(range(7))
    # client 2 (3 samples < batch): batches of 3, padded with zero mask
    assert s.mask[2].sum(1).tolist() == [3.0] * 4
    assert all(sorted(s.index[2, st, :3].tolist()) == [27, 28, 29] for st in range(4))


def test_epochs_mode_pads_clients_with_fewer_batches():
    index, counts = _padded([7, 12])
    s = draw_schedule(index, counts, batch_size=5, epochs=2, seed=0)
    # client 0: ceil(7/5)=2 batches/epoch → 4 steps; client 1: 3 batches/epoch → 6 steps
    assert s.index.shape[1] == 6
    assert s.active.sum(1).tolist() == [4, 6]
    assert s.mask[0].sum(1).tolist() == [5, 2, 5, 2, 0, 0]
    for epoch in range(2):
        rows = s.index[1, 3 * epoch : 3 * epoch + 3][s.mask[1, 3 * epoch : 3 * epoch + 3] > 0]
        assert sorted(rows.tolist()) == list(range(7, 19))


def test_same_seed_same_batches_other_seed_differs():
    index, counts = _padded([30, 40])
    a = draw_schedule(index, counts, 8, steps=3, seed=5).index
    b = draw_schedule(index, counts, 8, steps=3, seed=5).index
    c = draw_schedule(index, counts, 8, steps=3, seed=6).index
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_bad_local_work_is_rejected():
    index, counts = _padded([5])
    with pytest.raises(ValueError, match="exactly one of"):
        draw_schedule(index, counts, 2, steps=1, epochs=1, seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        draw_schedule(index, counts, 0, steps=1, seed=0)


def test_the_draw_never_reads_the_index_device(monkeypatch):
    """Every draw is made on the CPU and only the result moves: a schedule for an index on another device
    (``meta``, which holds no values) draws with a CPU generator, so CPU and CUDA runs see one stream."""
    index, counts = _padded([7, 20, 3])
    seen = []
    real_rand = torch.rand

    def spy(*args, **kwargs):
        seen.append((kwargs.get("device"), kwargs["generator"].device))
        return real_rand(*args, **kwargs)

    monkeypatch.setattr(torch, "rand", spy)
    elsewhere = draw_schedule(index.to("meta"), counts, batch_size=5, epochs=2, seed=3)
    assert seen == [(None, torch.device("cpu"))]
    assert elsewhere.index.device.type == "meta" and elsewhere.mask.device.type == "meta"
    assert elsewhere.index.shape == draw_schedule(index, counts, batch_size=5, epochs=2, seed=3).index.shape


# the whole round; windows of 2 steps (a step of 3 rows × 4 samples × 11 numbers × 4 bytes = 528 bytes); of 1
@pytest.mark.parametrize("budget", [2**26, 2 * 528, 1])
def test_noise_drawn_ahead_is_the_noise_of_each_row_and_step(budget):
    schedule = draw_schedule(*_padded([9, 5, 12]), batch_size=4, steps=7, seed=3)
    shapes = [(5,), (2, 3)]
    ahead = NoiseAhead(schedule, shapes, torch.device("cpu"), budget)
    asked = [(None, np.full(3, s)) for s in range(7)]  # in lockstep
    asked += [
        (np.array([2, 0]), np.array([4, 1])),
        (np.array([1]), np.array([6])),
        (None, np.array([0, 6, 3])),
    ]
    for rows, steps in asked:
        every = np.arange(3) if rows is None else rows
        expected = dropout_noise(schedule, every, steps, shapes, torch.device("cpu"))
        got = ahead(rows, steps)
        assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True))
