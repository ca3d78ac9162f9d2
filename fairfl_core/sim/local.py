"""The local step every algorithm shares, defined once for every trainer.

One local SGD step of client k, with ``g`` the gradient of its minibatch objective f(ℓ(w_k; batch)) (``ℓ`` the
masked mean of a per-sample loss: :func:`cross_entropy`, or ``LocalSpec.loss``; ``f`` the identity, or
``LocalSpec.objective``)::

    d ← (Π_j s_kj) g + Σ_j δ_kj(w_k)     the step terms (StepTerm): gradient scales s and additive drifts δ
    b ← β b + d;  d ← b                  momentum (torch.optim.SGD semantics, dampening 0)
    w_k ← w_k − η d

The terms an algorithm asks for through ``LocalSpec``'s fields, in the order they are summed:

    GradScale  s_k                       per-client gradient scale (GIFAIR-FL: 1 + λ r_k / (p_k |A_{s_k}|))
    Mix        s = 1 − α, δ = α g̃        mixing with a server-sent direction (FedEBA+ alignment, Eq. 7)
    Shift      δ = c_k                   additive correction (SCAFFOLD's c − c_i)
    Prox       δ = μ (w_k − w_ref)       proximal term (FedProx Eq. 4, Ditto's personal objective)
    WeightDecay δ = λ_wd w_k             weight decay

An algorithm adds a term of its own by subclassing :class:`StepTerm` and passing it in ``LocalSpec.terms``,
and a loss of its own through ``LocalSpec.loss``; every trainer (``batched_trainer.py`` on any client axis,
``sequential.py``: the reference) applies the same term objects, so no term is written twice. The
closed-form MLP gradient (``mlp_step.py``) covers ``objective`` but not a custom ``loss``: with one, the
batched trainer takes that round's gradients by ``vmap`` instead (same numbers, slower). The engine's
full-split ``losses`` / ``gradients`` take the same per-sample loss (their ``loss`` argument), so a custom
loss defines both the training and what the algorithm measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import torch
from torch.nn import functional as F

from fairfl_core.sim.params import ParamSpace
from fairfl_core.sim.statistics import ClientStatistic

__all__ = [
    "GradScale",
    "LocalResult",
    "LocalSpec",
    "Mix",
    "Prox",
    "Shift",
    "StepTerm",
    "WeightDecay",
    "cross_entropy",
    "masked_mean_loss",
]

Tensors = list[torch.Tensor] | tuple[torch.Tensor, ...]  # per parameter (torch's ``_foreach`` ops: either)
T = TypeVar("T")
SampleLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (logits [B, C], labels [B]) → [B]


def cross_entropy(logits: torch.Tensor, y: torch.Tensor, reduction: str = "none") -> torch.Tensor:
    """The loss of every paper here: −log softmax(z)_y per sample (``reduction="none"``) or summed
    (``"sum"``). The one definition: training, ``Engine.losses`` / ``gradients`` / ``pooled`` and the
    closed-form MLP gradient's value (``mlp_step.py``, checked against it) all compute this."""
    return F.cross_entropy(logits, y, reduction=reduction)


def masked_mean_loss(
    logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, loss: SampleLoss | None = None
) -> torch.Tensor:
    """Mean per-sample ``loss`` (default :func:`cross_entropy`) over the unmasked samples (0 if none)."""
    losses = (loss or cross_entropy)(logits, y)
    return (losses * mask).sum() / mask.sum().clamp_min(1.0)


class StepTerm:
    """One term of the local step direction d_k = (Π s_k) g_k + Σ δ_k(w_k) (module docstring).

    ``bind`` is called once per local-training run with the stacked clients' starting parameters (one tensor
    ``[K, ...]`` per parameter) and returns the term ready for that run; ``scale`` and ``drift`` are then
    called at every step for the stepping rows ``rows`` (a LongTensor into the K rows, None for all of
    them) with their current parameters ``ws`` (``[R, ...]`` per parameter). Either may return None.
    """

    def bind(self, space: ParamSpace, start: Tensors) -> StepTerm:
        return self

    def rows(self, rows: slice) -> StepTerm:
        """The term for the clients in ``rows`` only (training in chunks of clients); per-client data is
        sliced here."""
        return self

    def scale(self, rows: torch.Tensor | None) -> torch.Tensor | None:
        return None

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors | None:
        return None


def bound(value: T | None) -> T:
    """A step term's per-stack state, which ``bind`` sets before any step reads it."""
    if value is None:
        raise RuntimeError("a step term was used before bind(space, start) gave it its stack")
    return value


def take(values: list[torch.Tensor], rows: torch.Tensor | None) -> list[torch.Tensor]:
    """The stepping rows of stacked per-parameter tensors ``[K, ...]`` (all of them for ``rows=None``)."""
    return values if rows is None else [v[rows] for v in values]


def stacked_views(space: ParamSpace, flat: torch.Tensor, like: Tensors) -> list[torch.Tensor]:
    """A ``[P]`` (shared) or ``[K, P]`` (per-client) vector as per-parameter tensors shaped like ``like``."""
    return [v.expand_as(t) for v, t in zip(space.unflatten(flat.to(like[0])).values(), like, strict=True)]


@dataclass
class GradScale(StepTerm):
    """s_k g: a per-client ``[K]`` scale of the minibatch gradient."""

    values: torch.Tensor

    def scale(self, rows: torch.Tensor | None) -> torch.Tensor:
        return self.values if rows is None else self.values[rows]


@dataclass
class Mix(StepTerm):
    """(1 − α) g + α g̃ with a server-sent direction g̃ (``[P]`` or ``[K, P]``)."""

    alpha: float
    vector: torch.Tensor
    _fixed: list[torch.Tensor] | None = field(default=None, repr=False)
    _share: torch.Tensor | None = field(default=None, repr=False)

    def bind(self, space: ParamSpace, start: Tensors) -> Mix:
        fixed = list(torch._foreach_mul(stacked_views(space, self.vector, start), self.alpha))
        share = start[0].new_full((start[0].shape[0],), 1 - self.alpha)
        return Mix(self.alpha, self.vector, fixed, share)

    def scale(self, rows: torch.Tensor | None) -> torch.Tensor:
        share = bound(self._share)
        return share if rows is None else share[rows]

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors:
        return take(bound(self._fixed), rows)


@dataclass
class Shift(StepTerm):
    """g + c_k with a fixed correction c (``[P]`` or ``[K, P]``)."""

    vector: torch.Tensor
    _views: list[torch.Tensor] | None = field(default=None, repr=False)

    def bind(self, space: ParamSpace, start: Tensors) -> Shift:
        return Shift(self.vector, stacked_views(space, self.vector, start))

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors:
        return take(bound(self._views), rows)


@dataclass
class Prox(StepTerm):
    """g + μ (w_k − w_ref); ``ref`` ``[P]`` or ``[K, P]``, None = each client's starting point."""

    mu: float
    ref: torch.Tensor | None = None
    _ref: list[torch.Tensor] | None = field(default=None, repr=False)

    def bind(self, space: ParamSpace, start: Tensors) -> Prox:
        ref = [t.clone() for t in start] if self.ref is None else stacked_views(space, self.ref, start)
        return Prox(self.mu, self.ref, ref)

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors:
        return torch._foreach_mul(torch._foreach_sub(ws, take(bound(self._ref), rows)), self.mu)


@dataclass
class WeightDecay(StepTerm):
    """g + λ w_k."""

    decay: float

    def drift(self, ws: Tensors, rows: torch.Tensor | None) -> Tensors:
        return torch._foreach_mul(ws, self.decay)


@dataclass
class LocalSpec:
    """What local training does this round (the engine applies it identically to every client).

    ``steps`` or ``epochs`` (exactly one) set the local work; ``terms`` adds :class:`StepTerm` s of an
    algorithm's own after the built-in ones; ``loss(logits, y)`` (per sample, ``[B]``) replaces
    :func:`cross_entropy` (pass it to ``Engine.losses`` / ``gradients`` too);
    ``statistics`` are accumulated during training (``statistics.py``) and returned in ``LocalResult.stats``.
    """

    lr: float
    batch_size: int
    steps: int | None = None
    epochs: int | None = None
    momentum: float = 0.0
    weight_decay: float = 0.0
    prox_mu: float = 0.0
    prox_ref: torch.Tensor | None = None  # [P] or [K, P]; None → the client's starting point
    grad_scale: torch.Tensor | None = None  # [K]
    mix_alpha: float = 0.0
    mix_vector: torch.Tensor | None = None  # [P] or [K, P]
    grad_shift: torch.Tensor | None = None  # [P] or [K, P]
    objective: Callable[[torch.Tensor], torch.Tensor] | None = None  # maps the mean minibatch loss
    loss: SampleLoss | None = None
    terms: Sequence[StepTerm] = ()
    statistics: Sequence[ClientStatistic[Any]] = ()

    def rows(self, rows: slice) -> LocalSpec:
        """The spec for the clients in ``rows`` only: per-client ``[K, ...]`` tensors sliced."""

        def part(value: torch.Tensor | None) -> torch.Tensor | None:
            return value[rows] if value is not None and value.dim() == 2 else value

        return replace(
            self,
            prox_ref=part(self.prox_ref),
            grad_scale=None if self.grad_scale is None else self.grad_scale[rows],
            mix_vector=part(self.mix_vector),
            grad_shift=part(self.grad_shift),
            terms=[term.rows(rows) for term in self.terms],
        )

    def step_terms(self) -> list[StepTerm]:
        """The step's terms, built-in ones first (module docstring)."""
        built_in = [
            GradScale(self.grad_scale) if self.grad_scale is not None else None,
            Mix(self.mix_alpha, self.mix_vector) if self.mix_alpha and self.mix_vector is not None else None,
            Shift(self.grad_shift) if self.grad_shift is not None else None,
            Prox(self.prox_mu, self.prox_ref) if self.prox_mu else None,
            WeightDecay(self.weight_decay) if self.weight_decay else None,
        ]
        return [term for term in built_in if term is not None] + list(self.terms)


def combine(
    terms: Sequence[StepTerm], ws: Tensors, rows: torch.Tensor | None
) -> tuple[torch.Tensor | None, Tensors | None]:
    """``(Π scale, Σ drift)`` of bound terms for the stepping rows; each None when no term contributes."""
    scale: torch.Tensor | None = None
    drift: Tensors | None = None
    for term in terms:
        s = term.scale(rows)
        if s is not None:
            scale = s if scale is None else scale * s
        d = term.drift(ws, rows)
        if d is not None:
            drift = d if drift is None else list(torch._foreach_add(drift, d))
    return scale, drift


@dataclass
class LocalResult:
    params: torch.Tensor  # [K, P] parameters after local training
    train_loss: torch.Tensor  # [K] mean minibatch objective over the client's local steps
    stats: dict[str, torch.Tensor] = field(default_factory=dict)  # LocalSpec.statistics, [K, ...] each
    running: torch.Tensor | None = None  # [K, Q] BatchNorm running statistics after training (None without)

    @staticmethod
    def concat(parts: Sequence[LocalResult]) -> LocalResult:
        """The results of consecutive groups of clients as one."""
        if len(parts) == 1:
            return parts[0]
        stats = {k: torch.cat([p.stats[k] for p in parts]) for k in parts[0].stats}
        running = (
            None
            if parts[0].running is None
            else torch.cat([p.running for p in parts if p.running is not None])
        )
        return LocalResult(
            torch.cat([p.params for p in parts]), torch.cat([p.train_loss for p in parts]), stats, running
        )

    def rows(self, index: torch.Tensor) -> LocalResult:
        """The result of the clients at ``index`` (a LongTensor into the K rows)."""
        running = None if self.running is None else self.running[index]
        return LocalResult(
            self.params[index], self.train_loss[index], {k: v[index] for k, v in self.stats.items()}, running
        )
