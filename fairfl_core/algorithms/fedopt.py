"""Adaptive server optimizers: FedAdagrad, FedAdam, FedYogi (Reddi et al., ICLR 2021, Algorithm 2) and
FedAMSGrad (Wang, Lin & Chen, ICML 2022 "FedAMS"; AFGA's server step, TMLR 2024, Eq. 2 / Alg. 1 l. 18-22).

Clients run FedAvg's local SGD; the server treats the weighted model change as a pseudo-gradient::

    Δ_t = Σ_k p_k (w_k − w_t)                                  (Alg. 2 line 10 with p_k = 1/|S|)
    m_t = β1 m_{t−1} + (1 − β1) Δ_t                            (line 11)
    v_t = v_{t−1} + Δ_t²                                       (line 12, FedAdagrad)
    v_t = v_{t−1} − (1 − β2) Δ_t² sign(v_{t−1} − Δ_t²)         (line 13, FedYogi)
    v_t = β2 v_{t−1} + (1 − β2) Δ_t²                           (line 14, FedAdam)
    w_{t+1} = w_t + η m_t / (√v_t + τ)                          (line 15)

with m_{−1} = 0 and v_{−1} = τ² (Alg. 2 requires v_{−1} ≥ τ²; ``initial_accumulator`` overrides it, e.g. 0
as in the authors' TFF runs). FedAMSGrad keeps FedAdam's m, v and the running maximum v̂_t = max(v̂_{t−1}, v_t)
and steps w + η m_t / √(v̂_t + ε) (AFGA Eq. 2, m_0 = v_0 = v̂_0 = 0); FedAMS's "max stabilization" option
instead uses v̂_t = max(v̂_{t−1}, v_t, ε) and w + η m_t / √v̂_t. All operations are elementwise.

**No bias correction** anywhere: Algorithm 2 and AFGA Eq. 2 have none (Flower's FedAdam and the FedCAMS
code divide by 1 − β^t, which is not the papers' rule). ``tau`` is Reddi's τ and AFGA's ε.

Each algorithm is FedAvg whose ``server_optimizer`` is a :class:`ServerOptimizer` holding its pure rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from fairfl_core.algorithms.base import register
from fairfl_core.algorithms.fedavg import FedAvg, FedAvgHyper
from fairfl_core.algorithms.hyper import Weighting
from fairfl_core.dataclass_io import check_option

__all__ = [
    "ServerOptimizer",
    "FedAdagrad",
    "FedAdam",
    "FedYogi",
    "FedAMSGrad",
    "FedAdagradHyper",
    "FedAdamHyper",
    "FedYogiHyper",
    "FedAMSGradHyper",
    "AmsgradVariant",
    "first_moment",
    "adaptive_step",
    "adagrad_server_step",
    "adam_server_step",
    "yogi_server_step",
    "amsgrad_server_step",
]

AmsgradVariant = Literal["amsgrad", "max_stabilization"]

Tensor = torch.Tensor


# -- the server rules (pure) ----------------------------------------------------------------------------
def first_moment(m: Tensor, delta: Tensor, beta1: float) -> Tensor:
    """m_t = β1 m_{t−1} + (1 − β1) Δ_t (Reddi et al. Alg. 2 line 11; AFGA Alg. 1 line 19)."""
    return beta1 * m + (1 - beta1) * delta


def adaptive_step(w: Tensor, m: Tensor, v: Tensor, lr: float, tau: float) -> Tensor:
    """w_{t+1} = w_t + η m_t / (√v_t + τ) (Reddi et al. Alg. 2 line 15)."""
    return w + lr * m / (v.sqrt() + tau)


def adagrad_server_step(
    w: Tensor, delta: Tensor, m: Tensor, v: Tensor, *, lr: float, beta1: float, tau: float
) -> tuple[Tensor, Tensor, Tensor]:
    """FedAdagrad (Reddi et al. Alg. 2 lines 11, 12, 15): v_t = v_{t−1} + Δ_t². Returns (w, m, v)."""
    m, v = first_moment(m, delta, beta1), v + delta.square()
    return adaptive_step(w, m, v, lr, tau), m, v


def adam_server_step(
    w: Tensor, delta: Tensor, m: Tensor, v: Tensor, *, lr: float, beta1: float, beta2: float, tau: float
) -> tuple[Tensor, Tensor, Tensor]:
    """FedAdam (Reddi et al. Alg. 2 lines 11, 14, 15): v_t = β2 v_{t−1} + (1 − β2) Δ_t².

    No bias correction: m_t and v_t enter the step as they are (unlike torch.optim.Adam / Flower's FedAdam).
    """
    m, v = first_moment(m, delta, beta1), beta2 * v + (1 - beta2) * delta.square()
    return adaptive_step(w, m, v, lr, tau), m, v


def yogi_server_step(
    w: Tensor, delta: Tensor, m: Tensor, v: Tensor, *, lr: float, beta1: float, beta2: float, tau: float
) -> tuple[Tensor, Tensor, Tensor]:
    """FedYogi (Reddi et al. Alg. 2 lines 11, 13, 15): v_t = v_{t−1} − (1 − β2) Δ_t² sign(v_{t−1} − Δ_t²)."""
    d2 = delta.square()
    m, v = first_moment(m, delta, beta1), v - (1 - beta2) * d2 * torch.sign(v - d2)
    return adaptive_step(w, m, v, lr, tau), m, v


def amsgrad_server_step(
    w: Tensor,
    delta: Tensor,
    m: Tensor,
    v: Tensor,
    v_hat: Tensor,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    tau: float,
    variant: AmsgradVariant = "amsgrad",
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """FedAMSGrad. Returns (w, m, v, v̂).

    ``"amsgrad"`` (AFGA Eq. 2 / Alg. 1 lines 19-22): v̂_t = max(v̂_{t−1}, v_t), w + η m_t / √(v̂_t + ε).
    ``"max_stabilization"`` (FedAMS, Wang et al. 2022): v̂_t = max(v̂_{t−1}, v_t, ε), w + η m_t / √v̂_t.
    """
    check_option(variant, AmsgradVariant, "variant")
    m, v = first_moment(m, delta, beta1), beta2 * v + (1 - beta2) * delta.square()
    v_hat = torch.maximum(v_hat, v)
    if variant == "max_stabilization":
        v_hat = v_hat.clamp_min(tau)
        return w + lr * m / v_hat.sqrt(), m, v, v_hat
    return w + lr * m / (v_hat + tau).sqrt(), m, v, v_hat


# -- hyperparameters ------------------------------------------------------------------------------------
def _check_unit(name: str, value: float, closed: bool) -> None:
    ok = 0 <= value <= 1 if closed else 0 <= value < 1
    if not ok:
        interval = "[0, 1]" if closed else "[0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value}; set it to e.g. 0.9")


@dataclass
class FedAdagradHyper(FedAvgHyper):
    """FedAdagrad defaults: η = 0.1 and τ = 1e-3 (the authors' tuned/recommended values,
    google-research/federated ``optimization/docs/hyperparameters.md``); β1 = 0 because those runs used Keras
    Adagrad, which has no momentum (Alg. 2 allows β1 > 0). Uniform averaging as in Alg. 2 line 10
    (Δ_t = (1/|S|) Σ Δ_t^i)."""

    weighting: Weighting = "uniform"
    server_lr: float = 0.1
    beta1: float = 0.0
    tau: float = 1e-3
    initial_accumulator: float | None = None  # v_{−1}; None → τ² (Alg. 2: v_{−1} ≥ τ²)

    def check(self) -> None:
        _check_unit("beta1", self.beta1, closed=False)
        if self.tau <= 0:
            raise ValueError(
                f"tau must be positive (it keeps the denominator away from 0), got {self.tau}; use e.g. 1e-3"
            )
        if self.initial_accumulator is not None and self.initial_accumulator < 0:
            raise ValueError(
                f"initial_accumulator must be non-negative or None (= tau²), got {self.initial_accumulator}"
            )

    @property
    def v_init(self) -> float:
        return self.tau**2 if self.initial_accumulator is None else float(self.initial_accumulator)


@dataclass
class FedAdamHyper(FedAdagradHyper):
    """FedAdam: τ = 1e-3, Reddi et al.'s recommended adaptivity (their grid {1e-5, …, 1e-1}, 1e-3 best in
    most tasks; google-research/federated ``optimization/docs/hyperparameters.md``); η = 0.01, β1 = 0.9,
    β2 = 0.99 as AFGA's FedAdam baseline (App. B.2, Table 9), whose ε = τ = 1e-8 (searched over {1e-10,
    1e-8, 1e-6, 1e-4}) an AFGA experiment sets. β2 = 1 is allowed: v then stays at v_{−1} (a fixed
    preconditioner)."""

    server_lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-3

    def check(self) -> None:
        _check_unit("beta2", self.beta2, closed=True)


@dataclass
class FedYogiHyper(FedAdamHyper):
    """FedYogi: η = 0.01 and τ = 1e-3 (google-research/federated hyperparameters.md: best server lr 10^−2
    on Shakespeare, recommended ε 1e-3); β1 = 0.9, β2 = 0.99 (as FedAdam and Flower; the TFF runs kept
    Keras' β2 = 0.999)."""

    tau: float = 1e-3


@dataclass
class FedAMSGradHyper(FedAdamHyper):
    """FedAMSGrad as in AFGA (App. B.2, Eq. 2): η = 0.01, β1 = 0.9, β2 = 0.99, ε = 1e-8,
    m_0 = v_0 = v̂_0 = 0; ``variant`` picks the AMSGrad max (default) or FedAMS max stabilization."""

    tau: float = 1e-8
    initial_accumulator: float | None = 0.0
    variant: AmsgradVariant = "amsgrad"


# -- the part: a server optimiser on the pseudo-gradient -------------------------------------------------
@dataclass(frozen=True)
class ServerOptimizer:
    """A server step ``rule`` on the pseudo-gradient Δ_t (Reddi et al. Alg. 2 lines 11-15), for
    ``FedAvg.server_optimizer``.

    ``fields``: the Hyper fields the rule reads besides η = ``server_lr``; ``moments``: its state tensors,
    kept in the algorithm's ``state`` under these names so checkpoints resume exactly (m starts at 0, the
    others at ``hp.v_init``).
    """

    rule: Callable[..., tuple[Tensor, ...]]
    fields: tuple[str, ...] = ("beta1", "beta2", "tau")
    moments: tuple[str, ...] = ("m", "v")

    def init_state(self, w: Tensor, hp: FedAvgHyper) -> dict[str, Tensor]:
        """m_{−1} = 0 and v_{−1} (and v̂) = ``hp.v_init``. ``hp`` must be a ``FedAdagradHyper``: ``FedAvg``
        holds any FedAvgHyper, so an optimiser's pairing with its Hyper is checked here, once a run."""
        if not isinstance(hp, FedAdagradHyper):
            raise TypeError(
                f"a server optimizer reads the fields of FedAdagradHyper (v_init, {', '.join(self.fields)}); "
                f"{type(hp).__name__} is not one: derive the algorithm's Hyper from FedAdagradHyper"
            )
        return {k: torch.zeros_like(w) if k == "m" else torch.full_like(w, hp.v_init) for k in self.moments}

    def step(self, state: dict[str, Any], w: Tensor, delta: Tensor, hp: FedAvgHyper) -> Tensor:
        """One step from ``w`` on the pseudo-gradient ``delta`` [P]: updates the moments in ``state`` and
        returns the new w (η = ``server_lr``, the rule's ``fields`` read from ``hp`` by name)."""
        args = {name: getattr(hp, name) for name in self.fields}
        new_w, *moments = self.rule(w, delta, *(state[k] for k in self.moments), lr=hp.server_lr, **args)
        state.update(zip(self.moments, moments, strict=True))
        return new_w


# -- algorithms: FedAvg with a server optimiser ---------------------------------------------------------
@register("fedadagrad")
class FedAdagrad(FedAvg[FedAdagradHyper]):
    server_optimizer = ServerOptimizer(adagrad_server_step, fields=("beta1", "tau"))


@register("fedadam")
class FedAdam(FedAvg[FedAdamHyper]):
    server_optimizer = ServerOptimizer(adam_server_step)


@register("fedyogi")
class FedYogi(FedAvg[FedYogiHyper]):
    server_optimizer = ServerOptimizer(yogi_server_step)


@register("fedamsgrad")
class FedAMSGrad(FedAvg[FedAMSGradHyper]):
    server_optimizer = ServerOptimizer(
        amsgrad_server_step, fields=("beta1", "beta2", "tau", "variant"), moments=("m", "v", "v_hat")
    )
