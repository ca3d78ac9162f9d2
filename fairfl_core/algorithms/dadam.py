"""DAdam (Nazari, Tarzanagh & Michailidis, "DADAM: A consensus-based distributed adaptive gradient method
for online optimization", 2019; analysed by Chen et al., 2021), the decentralised Adam baseline of AFGA's
Table 8 (TMLR 2024, §6).

Every client i keeps its own model x_i and its own AMSGrad moments across rounds. At every iteration each
client takes its minibatch gradient g_i at x_i, then combines and adapts::

    m_i ← β1 m_i + (1 − β1) g_i,   v_i ← β2 v_i + (1 − β2) g_i²,   v̂_i ← max(v̂_i, v_i)
    x_i ← Σ_j W_ij x_j − α m_i / (√v̂_i + ε)

with α the config's ``lr`` (AFGA's paper gives no value; 1e-3 in its Table 8 experiment), Adam's β1 = 0.9,
β2 = 0.999, ε = 1e-8 and no bias correction. Everything else is DSGD's (``dsgd.py``): all N clients active
at every iteration, Z = ``local_steps`` iterations a round, the ring by default, the average model
evaluated, BatchNorm running statistics gossiped with W.

Faults, beyond the rule of ``base.py``: a failed client takes no gradient that iteration, so its moments and
its adaptive step stay as they are; it still gossips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from fairfl_core.algorithms.base import register
from fairfl_core.algorithms.dsgd import DSGD, DSGDHyper
from fairfl_core.gossip import Mixer
from fairfl_core.sim.context import Simulation

if TYPE_CHECKING:
    from fairfl_core.sim.client_stack import ClientStack

__all__ = ["DAdam", "DAdamHyper", "dadam_moments"]


@dataclass
class DAdamHyper(DSGDHyper):
    """Each client's AMSGrad moments (the module docstring's update)."""

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def check(self) -> None:
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must lie in [0, 1), got {getattr(self, name)}")
        if not self.eps > 0:
            raise ValueError(f"eps (ε) must be positive, got {self.eps}; DAdam's default is 1e-8")


def dadam_moments(
    g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, v_hat: torch.Tensor, beta1: float, beta2: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One update of the moments ``(m, v, v̂)`` with the gradients ``g`` (every tensor ``[N, P]``)."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g.square()
    return m, v, torch.maximum(v_hat, v)


@register("dadam")
class DAdam(DSGD[DAdamHyper]):
    def __init__(self, sim: Simulation, hp: DAdamHyper) -> None:
        super().__init__(sim, hp)
        models = self.state["models"]
        self.state.update(
            m=torch.zeros_like(models), v=torch.zeros_like(models), v_hat=torch.zeros_like(models)
        )

    def iteration(self, stack: ClientStack, mixer: Mixer, last: bool) -> None:
        """Gradients at x_i, the moments of the clients that stepped, X ← W X, then the adaptive step."""
        hp, state = self.hp, self.state
        before = stack.steps_taken()
        g = stack.gradients()
        stepped = self.sim.tensor(stack.steps_taken() > before)[:, None]
        moments = dadam_moments(g, state["m"], state["v"], state["v_hat"], hp.beta1, hp.beta2)
        m, v, v_hat = (
            torch.where(stepped, new, old)
            for new, old in zip(moments, (state["m"], state["v"], state["v_hat"]), strict=True)
        )
        state.update(m=m, v=v, v_hat=v_hat)
        stack.mix(mixer)
        step = stack.spec.lr * m / (v_hat.sqrt() + hp.eps)
        stack.add(-step * stepped)
