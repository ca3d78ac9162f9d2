"""Every model under ``torch.func``: ``vmap(functional_call)`` over stacked client copies equals looping over
the copies, forward and ``grad`` (the simulation engine's hot path).

The two paths sum in different orders, and that order depends on the CPU's kernels (SIMD width, oneDNN
dispatch): two computations, compared at the rounding bound of ``tests/rounding.py`` derived per model from
its layers on the test's input (``rounding_bounds``): the longest sum of any layer (a dense or convolutional
dot product, a normalisation's or pooling's statistics, a weight gradient's sum over samples and positions)
and the number of reductions a value passes through (forward, the loss, backward). Any real error (a wrong
client slice, a missing term) is O(1). Float64 throughout, and the forward pass in float32 too, where the
worst-case bound is loose for the deepest, widest models (ResNet-18) but still far below such errors. Float32
*gradients* are not compared: a ReLU input within rounding of 0 flips its kink between the paths, and
train-mode BatchNorm on two samples divides by a tiny batch deviation (ResNet-18: 1.5e-3 relative on an AMD
EPYC, against 9e-18 in float64)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap

from fairfl_core.models import MODELS, build_model
from tests.rounding import assert_close

CLIENTS, BATCH = 3, 2
# torch's fused LSTM kernel has no vmap batching rule: the engine loops over clients for the recurrent models
VMAPPED = sorted(n for n in MODELS if not n.startswith("lstm"))
HAS_DROPOUT = sorted({"ditto_cnn_femnist", "equitable_cnn_femnist"})


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


def rounding_bounds(model, x) -> tuple[dict, dict]:
    """The rounding bounds (tests/rounding.py) of ``model``'s logits and of its parameter gradients on one
    client's batch ``x``, from its layers as a forward pass meets them: ``terms`` the longest sum (dense and
    convolutional dot products forward and back, normalisation and pooling statistics, weight gradients'
    sums over samples and positions, the loss's log-softmax and mean), ``depth`` the reductions in sequence
    (1 a dense or convolutional layer or a pooling, 2 a normalisation's mean and variance; as many back, where
    BatchNorm in eval mode still sums its weight gradient; the loss's 2 between them)."""
    terms, forward, backward = [], 0, 0

    def hook(module, inputs, output):
        nonlocal forward, backward
        i = inputs[0]
        if isinstance(module, nn.Linear):
            terms.extend([module.in_features, module.out_features, i.numel() // module.in_features])
            forward, backward = forward + 1, backward + 1
        elif isinstance(module, nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1]
            per_channel = output.numel() // output.shape[-3]  # samples × output positions
            terms.extend([module.in_channels // module.groups * k, module.out_channels // module.groups * k])
            terms.append(per_channel)
            forward, backward = forward + 1, backward + 1
        elif isinstance(module, nn.BatchNorm2d):
            terms.append(i.numel() // i.shape[-3])  # samples × positions of a channel
            statistics = 2 if module.training else 0
            forward, backward = forward + statistics, backward + max(statistics, 1)
        elif isinstance(module, nn.GroupNorm):
            terms.extend([i[0].numel() // module.num_groups, i.numel() // i.shape[-3]])
            forward, backward = forward + 2, backward + 2
        elif isinstance(module, nn.AdaptiveAvgPool2d):
            terms.append(i.shape[-1] * i.shape[-2] // (output.shape[-1] * output.shape[-2]))
            forward += 1

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            logits = model(x)
    finally:
        for h in handles:
            h.remove()
    terms.extend(logits.shape)  # the loss: log-softmax over the classes, the mean over the samples
    longest = max(terms)
    return dict(terms=longest, depth=forward), dict(terms=longest, depth=forward + 2 + backward)


def check_forward_and_grad(models, x, randomness="error"):
    """Forward and gradients, elementwise at the rounding bounds of ``rounding_bounds`` (float64 only,
    module docstring)."""
    base, params, buffers = stacked(models)
    y = labels(models[0])
    out = vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)), randomness=randomness)(
        params, buffers, x
    )
    grads = vmap(grad(loss_fn(base)), randomness=randomness)(params, buffers, x, y)
    for k, model in enumerate(models):
        forward, gradient = rounding_bounds(copy.deepcopy(model), x[k])  # a copy: its buffers stay
        assert_close(out[k], model(x[k]), **forward, what=f"logits of client {k}")
        model.zero_grad()
        F.cross_entropy(model(x[k]), y[k]).backward()
        looped = torch.cat([p.grad.flatten() for p in model.parameters()])
        batched = torch.cat([grads[name][k].flatten() for name, _ in model.named_parameters()])
        assert_close(batched, looped, **gradient, what=f"gradient of client {k}")
    return buffers


@pytest.mark.parametrize("name", VMAPPED)
def test_vmap_matches_loop(name, make_input):
    models = [m.eval() for m in copies(name, torch.float64)]
    x = crop(name, make_input(name, (CLIENTS, BATCH), dtype=torch.float64))
    check_forward_and_grad(models, x)


@pytest.mark.parametrize("name", VMAPPED)
def test_vmap_forward_matches_loop_in_float32(name, make_input):
    """The engine's default dtype: vmapped forward passes agree with looped ones within rounding, and
    the vmapped gradients exist and are finite."""
    models = [m.eval() for m in copies(name)]
    x = crop(name, make_input(name, (CLIENTS, BATCH)))
    base, params, buffers = stacked(models)
    out = vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)))(params, buffers, x)
    for k, model in enumerate(models):
        forward, _ = rounding_bounds(model, x[k])
        assert_close(out[k], model(x[k]), **forward, what=f"float32 logits of client {k}")
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
    buffers = check_forward_and_grad(models, x)
    for k, model in enumerate(models):
        forward, _ = rounding_bounds(copy.deepcopy(model), x[k])  # the statistics pass through at most these
        for buffer_name, b in model.named_buffers():
            if b.is_floating_point():
                assert_close(buffers[buffer_name][k], b, **forward, what=buffer_name)
            else:
                assert torch.equal(buffers[buffer_name][k], b), buffer_name  # num_batches_tracked


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
