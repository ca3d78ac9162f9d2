"""Every model the five papers use, by name: ``build_model(name, **options)``.

Contract shared by all models:

* ``features(x) -> [B, D]``: the penultimate activations (the input of the last layer), and ``head``: the
  last ``nn.Linear``, with ``forward(x) == head(features(x))``. For the models of Equitable-FL, ``features``
  is exactly its "activation layer" h = φ(z) (Def. 1, Fig. 1: post-ReLU output of the pre-final layer; the
  activation vector is ``log_softmax(features(x), dim=1)``): d = 200 (``mlp``), 84 (``lenet5_cifar10``),
  512 (``equitable_cnn_cifar100``, ``equitable_cnn_femnist``, ``resnet18``).
* Inputs: images as float ``[B, C, H, W]`` (MLPs flatten internally; ``logreg`` takes ``[B, 60]``); the LSTMs
  take int64 token ids ``[B, T]``.
* ``torch.func`` ready: ``vmap(functional_call)`` over parameters stacked by ``stack_module_state`` works,
  forward and ``grad``, in float32 and float64 (no ``nn.LSTM``, no in-place ops, no data-dependent control
  flow). Models with dropout (``ditto_cnn_femnist``, ``equitable_cnn_femnist``, ``lstm_afga``) use
  :class:`~fairfl_core.models.dropout.SeededDropout`: the engine supplies each client's masks, drawn on the
  CPU from the run's seeds; called directly in train mode it is ``nn.Dropout`` (under ``vmap``:
  ``randomness="different"``). BatchNorm models (``convmixer``,
  ``resnet18(norm="batch")``): the engine stacks their running statistics per client (train mode updates
  each client's in its own slice) and evaluates in eval mode (``sim/engine.py``); ``resnet18`` defaults to
  GroupNorm, which has none.

Registered names (paper defaults; see each module for sources): ``mlp``, ``mlp_cifar10``, ``logreg``
(:mod:`.mlp`); ``cnn_cifar10`` and its ``_narrow``/``_wide``/``_shallow``/``_deep`` variants,
``lenet5_mnist``, ``lenet5_cifar10``, ``equitable_cnn_cifar100``, ``equitable_cnn_femnist``,
``leaf_cnn_femnist``, ``ditto_cnn_femnist`` (:mod:`.cnn`); ``resnet18`` (:mod:`.resnet`);
``convmixer`` (:mod:`.convmixer`); ``lstm_leaf``, ``lstm_afga`` (:mod:`.lstm`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import nn

from fairfl_core.models import cnn, convmixer, lstm, mlp, resnet

MODELS: dict[str, Callable[..., nn.Module]] = {
    **mlp.PRESETS,
    **cnn.PRESETS,
    **resnet.PRESETS,
    **convmixer.PRESETS,
    **lstm.PRESETS,
}


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"option {name}={value!r} must be a positive int; pass e.g. {name}=10")


def _norm_kind(name: str, value: object) -> None:
    if value not in resnet.NORMS:
        raise ValueError(f"option {name}={value!r} is not supported; use one of {resnet.NORMS}")


OPTION_CHECKS: dict[str, Callable[[str, object], None]] = {
    "num_classes": _positive_int,
    "in_channels": _positive_int,
    "input_size": _positive_int,
    "in_features": _positive_int,
    "groups": _positive_int,
    "dim": _positive_int,
    "depth": _positive_int,
    "kernel_size": _positive_int,
    "patch_size": _positive_int,
    "vocab_size": _positive_int,
    "embed_dim": _positive_int,
    "hidden_size": _positive_int,
    "num_layers": _positive_int,
    "norm": _norm_kind,
}


def model_options(name: str) -> dict[str, object]:
    """The options ``name`` accepts, with their (paper) defaults."""
    return {p.name: p.default for p in inspect.signature(_factory(name)).parameters.values()}


def build_model(name: str, *, seed: int = 0, **options) -> nn.Module:
    """Build model ``name`` (a key of :data:`MODELS`) with validated ``options`` (see :func:`model_options`).

    The initial weights (PyTorch default initialisation) are a function of ``seed`` alone: they are drawn
    inside ``torch.random.fork_rng`` so the caller's global RNG state is left untouched.
    """
    allowed = model_options(name)
    for key, value in options.items():
        if key not in allowed:
            raise ValueError(f"model {name!r} has no option {key!r}; its options are {sorted(allowed)}")
        OPTION_CHECKS[key](key, value)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative int; pass e.g. seed=0")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _factory(name)(**options)


def _factory(name: str) -> Callable[..., nn.Module]:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name]


__all__ = ["MODELS", "OPTION_CHECKS", "build_model", "model_options"]
