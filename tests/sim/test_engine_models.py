"""Every kind of model the papers use trains in the batched engine: BatchNorm, dropout, token inputs."""

import numpy as np
import pytest
import torch

from fairfl_core.data.federated import FederatedDataset
from fairfl_core.models import build_model
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec
from tests.rounding import assert_close


def _data(x: torch.Tensor, num_classes: int) -> FederatedDataset:
    n = len(x)
    y = torch.arange(n) % num_classes
    half = n // 2
    return FederatedDataset(
        name="shapes",
        x=x,
        y=y,
        num_classes=num_classes,
        client_train=[torch.arange(0, half - 2), torch.arange(half - 2, n - 4)],
        client_test=[torch.arange(n - 4, n - 2), torch.arange(n - 2, n)],
        pooled_test=torch.arange(n - 4, n),
        groups=torch.tensor([-1, -1]),
    )


CASES = {
    "convmixer": (lambda g: (torch.rand(16, 3, 32, 32, generator=g) * 255).to(torch.uint8), 10, {}),
    "ditto_cnn_femnist": (lambda g: (torch.rand(16, 1, 28, 28, generator=g) * 255).to(torch.uint8), 62, {}),
    "lstm_leaf": (lambda g: torch.randint(0, 80, (16, 80), generator=g), 80, {"hidden_size": 16}),
}


@pytest.mark.parametrize("client_axis", ["vmap", "loop"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_model_trains_and_evaluates_in_the_batched_engine(name, client_axis):
    make_x, classes, options = CASES[name]
    data = _data(make_x(torch.Generator().manual_seed(0)), classes)
    engine = Engine(build_model(name, **options), data, client_axis=client_axis)
    w = engine.init_params()
    res = engine.train(np.array([0, 1]), w, LocalSpec(lr=0.05, batch_size=4, steps=2), seed=0)
    assert torch.isfinite(res.params).all() and not torch.equal(res.params[0], w)
    loss, acc = engine.losses(res.params, np.array([0, 1]), split="test")
    assert torch.isfinite(loss).all() and ((acc >= 0) & (acc <= 1)).all()
    assert engine.features(w, np.array([0])).shape[0] == 1
    assert engine.features(res.params, np.array([0, 1])).shape[0] == 2


def test_recurrent_model_under_vmap_trains_as_the_loop_does():
    """``client_axis="vmap"`` runs the LSTM on the written-out gate equations (one batched matmul per position
    for all clients), ``"loop"`` on torch's fused kernel client by client: the same local training, to float64
    rounding (``tests/models/test_char_lstm.py``)."""
    make_x, classes, options = CASES["lstm_leaf"]
    data = _data(make_x(torch.Generator().manual_seed(0)), classes)
    model = build_model("lstm_leaf", **options)
    spec = LocalSpec(lr=0.5, batch_size=4, steps=3)
    results = {}
    for axis in ("vmap", "loop"):
        engine = Engine(model, data, client_axis=axis, dtype=torch.float64)
        results[axis] = engine.train(np.array([0, 1]), engine.init_params(), spec, seed=3).params
    assert {layer.kernel for layer in model.layers} == {"fused"}  # the caller's model is left as it was
    # the rounding bound of tests/rounding.py: the longest sums are the weight gradients' over 80 positions
    # × 4 samples (the gate products have 8 + 16 or 16 + 16 terms); a step passes through the recurrence's
    # chain of 80 positions and the second layer, the head, log-softmax and the mean forward (84 reductions)
    # and as many back, for 3 steps
    assert_close(results["vmap"], results["loop"], terms=80 * 4, depth=3 * 2 * 84, what="LSTM parameters")
