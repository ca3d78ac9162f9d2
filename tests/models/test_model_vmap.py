"""Every model under ``torch.func``: ``vmap(functional_call)`` over stacked client copies equals looping
over the copies, forward and ``grad`` (the simulation engine's hot path).

The two paths sum in different orders, and that order depends on the CPU's kernels (SIMD width, oneDNN
dispatch), so equality is checked in float64, where rounding is ~1e-16 and the largest relative gradient
difference measured over every model here is below 3e-15: ``GRAD_TOL_F64 = 1e-10`` leaves four orders of
margin while any real error (a wrong client slice, a missing term) is O(1). In float32 only the forward
pass is compared: it is a continuous function of the inputs, so each path's error is bounded by the
probabilistic rounding bound ≈ L·√n·u (Higham & Mary, 2019) for L layers with dot products of length n and
unit roundoff u = 6e-8; the deepest, widest model (ResNet-18: L = 18, n = 3·3·512) gives 7e-5, hence
``FORWARD_TOL_F32 = 1e-4``. Float32 *gradients* have no such bound: a ReLU input within rounding of 0 flips
its kink between the paths, and train-mode BatchNorm on two samples divides by a tiny batch deviation
(ResNet-18: 1.5e-3 relative on an AMD EPYC, against 9e-18 in float64)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, stack_module_state, vmap

from fairfl_core.models import MODELS, build_model

CLIENTS, BATCH = 3, 2
# torch's fused LSTM kernel has no vmap batching rule: the engine loops over clients for the recurrent models
VMAPPED = sorted(n for n in MODELS if not n.startswith("lstm"))
HAS_DROPOUT = sorted({"ditto_cnn_femnist", "equitable_cnn_femnist"})
GRAD_TOL_F64 = 1e-10  # relative; module docstring
FORWARD_TOL_F32 = 1e-4  # relative and absolute; module docstring


def copies(name, dtype=torch.float32, **options):
    """``CLIENTS`` independently initialised copies (seeds 0, 1, 2)."""
    return [build_model(name, seed=k, **options).to(dtype) for k in range(CLIENTS)]


def stacked(models):
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    return base, params, buffers


def loss_fn(base):
    def loss(params, buffers, x, y):
        return F.cross_entropy(functional_call(base, (params, buffers), (x,)), y)

    return loss


def labels(model, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.head.out_features, (CLIENTS, BATCH), generator=gen)


def crop(name, x):
    """16×16 crops keep ResNet-18 fast (its CIFAR stem takes any size)."""
    return x[..., :16, :16] if name == "resnet18" else x


def check_forward_and_grad(models, x, atol, grad_tol, randomness="error"):
    """Forward: elementwise within ``atol``. Gradients: ``‖g_vmap − g_loop‖ ≤ grad_tol·‖g_loop‖`` per client
    over all parameters (float64 only, module docstring)."""
    base, params, buffers = stacked(models)
    y = labels(models[0])
    out = vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)), randomness=randomness)(
        params, buffers, x
    )
    grads = vmap(grad(loss_fn(base)), randomness=randomness)(params, buffers, x, y)
    for k, model in enumerate(models):
        torch.testing.assert_close(out[k], model(x[k]), atol=atol, rtol=atol)
        model.zero_grad()
        F.cross_entropy(model(x[k]), y[k]).backward()
        looped = torch.cat([p.grad.flatten() for p in model.parameters()])
        batched = torch.cat([grads[name][k].flatten() for name, _ in model.named_parameters()])
        assert (batched - looped).norm() <= grad_tol * looped.norm()
    return buffers


@pytest.mark.parametrize("name", VMAPPED)
def test_vmap_matches_loop(name, make_input):
    models = [m.eval() for m in copies(name, torch.float64)]
    x = crop(name, make_input(name, (CLIENTS, BATCH), dtype=torch.float64))
    check_forward_and_grad(models, x, atol=1e-10, grad_tol=GRAD_TOL_F64)


@pytest.mark.parametrize("name", VMAPPED)
def test_vmap_forward_matches_loop_in_float32(name, make_input):
    """The engine's default dtype: vmapped forward passes agree with looped ones within rounding, and
    the vmapped gradients exist and are finite."""
    models = [m.eval() for m in copies(name)]
    x = crop(name, make_input(name, (CLIENTS, BATCH)))
    base, params, buffers = stacked(models)
    out = vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)))(params, buffers, x)
    for k, model in enumerate(models):
        torch.testing.assert_close(out[k], model(x[k]), atol=FORWARD_TOL_F32, rtol=FORWARD_TOL_F32)
    grads = vmap(grad(loss_fn(base)))(params, buffers, x, labels(models[0]))
    assert all(torch.isfinite(g).all() for g in grads.values())


@pytest.mark.parametrize(
    "name, options", [("convmixer", {"dim": 16, "depth": 2}), ("resnet18", {"norm": "batch"})]
)
def test_vmap_batchnorm_train_mode_with_stacked_buffers(name, options, make_input):
    """In train mode BatchNorm uses each client's batch statistics and updates its own slice of the
    stacked running statistics, exactly as the looped models update theirs (two updates each: the
    forward pass and the grad pass). Float64: batch statistics of two samples amplify float32 rounding
    (module docstring). A small ConvMixer and 16×16 images keep this fast."""
    models = copies(name, torch.float64, **options)
    x = make_input(name, (CLIENTS, BATCH), dtype=torch.float64)[..., :16, :16]
    buffers = check_forward_and_grad(models, x, atol=1e-10, grad_tol=GRAD_TOL_F64)
    for k, model in enumerate(models):
        for buffer_name, b in model.named_buffers():
            torch.testing.assert_close(buffers[buffer_name][k], b, msg=buffer_name)


@pytest.mark.parametrize("name", HAS_DROPOUT)
def test_vmap_train_mode_dropout_needs_randomness(name, make_input):
    """Dropout under vmap needs ``randomness="different"`` (one mask per client); the default raises."""
    models = copies(name)
    base, params, buffers = stacked(models)
    x = make_input(name, (CLIENTS, BATCH))
    y = labels(models[0])
    grads = vmap(grad(loss_fn(base)), randomness="different")(params, buffers, x, y)
    assert all(torch.isfinite(g).all() for g in grads.values())
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(grad(loss_fn(base)))(params, buffers, x, y)
