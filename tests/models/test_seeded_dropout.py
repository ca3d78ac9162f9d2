"""SeededDropout (``models/dropout.py``): masks from noise the engine draws on the CPU per (row seed, step),
so a dropout model's numbers depend on its config and seed alone: not on the device, the trainer, the other
clients or runs of its stack, or what the process drew before."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fairfl_core.algorithms import build_algorithm
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models.dropout import SeededDropout, draws_from_torch, dropout_shapes, supplied_noise
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from tests.conftest import tiny_federated
from tests.rounding import assert_close


class DropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.drop = SeededDropout(0.5)
        self.head = nn.Linear(32, 4)

    def features(self, x):
        return self.drop(torch.relu(self.conv(x)).flatten(1))

    def forward(self, x):
        return self.head(self.features(x))


def test_the_mask_keeps_noise_at_or_above_p_and_scales_by_one_over_one_minus_p():
    layer = SeededDropout(0.25).train()
    x = torch.tensor([[4.0, 4.0, 4.0]], dtype=torch.float64)
    with supplied_noise({layer: torch.tensor([[0.1, 0.25, 0.9]], dtype=torch.float64)}):
        assert layer(x).tolist() == [[0.0, 4.0 / 0.75, 4.0 / 0.75]]
    assert torch.equal(layer.eval()(x), x)


def test_outside_the_engine_it_is_torch_dropout():
    layer = SeededDropout(0.5).train()
    out = layer(torch.ones(1000))
    assert set(out.unique().tolist()) == {0.0, 2.0} and 400 < int((out == 0).sum()) < 600
    assert not draws_from_torch(DropoutNet()) and draws_from_torch(nn.Sequential(nn.Dropout(0.5)))


def test_shapes_are_probed_per_sample_without_changing_the_model():
    model = DropoutNet().train()
    found = dropout_shapes(model, torch.zeros(1, 1, 4, 4))
    assert found == [(model.drop, (32,))] and model.training


def _train(kind, client_axis="auto", clients=(0, 1, 2), seed=5):
    engine = Engine(DropoutNet(), tiny_federated(), kind=kind, dtype=torch.float64, client_axis=client_axis)
    spec = LocalSpec(lr=0.3, batch_size=4, steps=3)
    return engine.train(np.array(clients), engine.init_params(), spec, seed).params


def test_every_trainer_and_client_axis_applies_the_same_masks():
    reference = _train("sequential")
    for axis in ("loop", "vmap"):
        # another trainer: the rounding bound of tests/rounding.py (sums over the tiny fixture's at most 117
        # samples, 7 reductions a step for 3 steps); other masks would move the parameters far beyond it
        assert_close(_train("batched", axis), reference, terms=117, depth=7 * 3, what=axis)


def test_a_clients_masks_do_not_depend_on_the_other_rows_or_the_global_generator():
    torch.manual_seed(123)
    together = _train("batched", "vmap")
    torch.manual_seed(456)
    first_alone = _train("batched", "vmap", clients=(0,))
    # a client alone and in a batch of three: another computation, at the rounding bound of tests/rounding.py
    # (sums over the tiny fixture's at most 117 samples, 7 reductions a step for 3 steps); other masks would
    # move the parameters by about lr × gradient, far beyond it
    assert_close(together[0], first_alone[0], terms=117, depth=7 * 3, what="client 0")
    assert not torch.equal(_train("batched", "vmap", seed=6)[0], together[0])  # the seed does matter


@pytest.mark.parametrize("axis", ["loop", "vmap"])
def test_a_dropout_run_is_the_same_after_any_other_draws(axis):
    def run():
        engine = Engine(DropoutNet(), tiny_federated(), dtype=torch.float64, client_axis=axis)
        algo = build_algorithm(
            "fedavg",
            Simulation(
                engine, TrainConfig(rounds=2, clients_per_round=3, batch_size=4, lr=0.3, local_steps=3), 0
            ),
            {},
        )
        for t in range(2):
            algo.round(t)
        return algo.eval_params()

    first = run()
    torch.rand(1000)  # the process drew more since
    assert torch.equal(run(), first)
