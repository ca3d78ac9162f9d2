"""The closed-form stacked MLP step (``client_axis="bmm"``): by hand, against ``vmap(grad)``, its scope."""

import functools
import math

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from fairfl_core.algorithms.propfair import propfair_objective
from fairfl_core.models import build_model
from fairfl_core.sim.local import masked_mean_loss
from fairfl_core.sim.mlp_step import dense_relu_layers, mlp_gradient
from fairfl_core.sim.params import ParamSpace
from tests.rounding import assert_close


@pytest.mark.exact_arithmetic("softmax of (0, 0) is (½, ½): the gradients and the step are ±½, ±1, ±0.05")
def test_one_sample_logistic_regression_by_hand():
    # W = 0, b = 0, x = (1, 2), y = 0: softmax = (½, ½), δ = (−½, ½), loss = log 2
    w = torch.zeros(1, 2, 2, dtype=torch.float64)
    b = torch.zeros(1, 2, dtype=torch.float64)
    x = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    grad, loss = mlp_gradient(False, [w, b], x, torch.tensor([[0]]), torch.ones(1, 1, dtype=torch.float64))
    g_w, g_b = grad.tensors()
    # log(1 + 1) by torch's log against math.log: the log-sum-exp of 2 terms, then the mean
    assert_close(loss, torch.tensor([math.log(2)], dtype=torch.float64), terms=2, depth=2)
    # products of 0, ±½, 1 and 2 and sums with 0: exact in any order
    assert torch.equal(g_w[0], torch.tensor([[-0.5, -1.0], [0.5, 1.0]], dtype=torch.float64))
    assert torch.equal(g_b[0], torch.tensor([-0.5, 0.5], dtype=torch.float64))
    grad.add_to([w, b], -0.1)  # one SGD step of lr 0.1, in place
    # 0 − 0.1 × (±½ or ±1): fl(0.1) halved is fl(0.05), so exact too
    assert torch.equal(w[0], torch.tensor([[0.05, 0.1], [-0.05, -0.1]], dtype=torch.float64))
    assert torch.equal(b[0], torch.tensor([0.05, -0.05], dtype=torch.float64))


@pytest.mark.parametrize(
    "objective", [None, functools.partial(propfair_objective, M=5.0, eps=0.2, huber=False)]
)
def test_stacked_gradient_equals_vmap_grad_with_mask_scale_and_objective(objective):
    torch.manual_seed(0)
    model = build_model("mlp", in_features=12, num_classes=5).double()
    space = ParamSpace.of(model)
    k, b = 3, 6
    flat = torch.randn(k, space.size, dtype=torch.float64) * 0.3
    params = space.unflatten(flat)
    x = torch.randn(k, b, 1, 3, 4, dtype=torch.float64)
    y = torch.randint(0, 5, (k, b))
    mask = torch.ones(k, b, dtype=torch.float64)
    mask[1, 4:] = 0  # a short last minibatch
    mask[2] = 0  # a padded step
    scale = torch.tensor([1.0, 2.5, 0.7], dtype=torch.float64)

    def loss(p, xk, yk, mk):
        value = masked_mean_loss(functional_call(model, p, (xk,)), yk, mk)
        return objective(value) if objective is not None else value

    ref_grads, ref_loss = vmap(grad_and_value(loss))(params, x, y, mask)
    grad, value = mlp_gradient(True, list(params.values()), x, y, mask, scale, objective)
    # the closed form against autograd: the rounding bound of tests/rounding.py, sums of at most 200 terms
    # (the hidden width; the minibatch has 6 samples), 5 reductions for the loss (3 layers, log-softmax, the
    # masked mean) and 3 more back for the gradient
    assert_close(value, ref_loss, terms=200, depth=5, what="loss")
    for ours, ref in zip(grad.tensors(), ref_grads.values(), strict=True):
        expected = ref * scale.view(-1, *[1] * (ref.dim() - 1))
        assert_close(ours, expected, terms=200, depth=8, what="gradient")
    assert all(float(t[2].abs().max()) == 0.0 for t in grad.tensors())  # nothing from an all-masked step

    before = [t.clone() for t in params.values()]
    grad.add_to(list(params.values()), -0.1)  # writes into the views of the flat [K, P] state
    for after, start, g in zip(space.unflatten(flat).values(), before, grad.tensors(), strict=True):
        # in place with alpha against start − 0.1 g: two roundings (product and sum) of |start| + 0.1 |g|
        size = float((start.abs() + 0.1 * g.abs()).max())
        assert_close(after, start - 0.1 * g, terms=2, scale=size, what="parameters after the step")


def test_which_models_have_the_closed_form():
    relu_mlp = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert dense_relu_layers(relu_mlp)[0] is True
    assert dense_relu_layers(build_model("mlp")) is not None
    assert dense_relu_layers(build_model("logreg")) is not None  # no hidden layer
    single = nn.Linear(4, 2)
    assert dense_relu_layers(nn.Sequential(single)) == (False, [single])
    for other in [
        nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)),
        nn.Sequential(nn.Flatten(), nn.Linear(4, 3, bias=False), nn.ReLU(), nn.Linear(3, 2)),
        nn.Sequential(nn.Flatten(2), nn.Linear(4, 2)),
        nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU()),
        build_model("cnn_cifar10"),
        build_model("lstm_leaf", hidden_size=8),
    ]:
        assert dense_relu_layers(other) is None
