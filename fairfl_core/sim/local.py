"""The local step every algorithm shares, and the batched trainer that runs it for many clients at once.

One local SGD step for client k, with ``g`` the minibatch gradient of its (possibly surrogate) objective::

    g ← s_k · g                       per-client gradient scale (GIFAIR-FL: 1 + λ r_k / (p_k |A_{s_k}|))
    g ← (1 − α) g + α g̃               mixing with a server-sent direction (FedEBA+ gradient alignment, Eq. 7)
    g ← g + c_k                       additive correction (SCAFFOLD's c − c_i)
    g ← g + μ (w_k − w_ref)           proximal term (FedProx Eq. 4, Ditto's personal objective)
    g ← g + λ_wd w_k                  weight decay
    b ← β b + g;  g ← b               momentum (torch.optim.SGD semantics, dampening 0)
    w_k ← w_k − η g

The batched trainer stacks the selected clients' flat parameter vectors into ``[K, P]`` and computes all
clients' minibatch gradients in one ``vmap(grad(...))`` call per step (a loop of ``grad`` calls over the
stacked clients for convolutional models on CPU, see ``client_map.py``); the sequential reference engine
(``sequential.py``) performs the same step with ``torch.optim.SGD``, client after client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, grad_and_value
from torch.nn import functional as F

from fairfl_core.sim.batches import BatchSchedule
from fairfl_core.sim.client_map import client_map
from fairfl_core.sim.params import ParamSpace

__all__ = ["LocalSpec", "LocalResult", "BatchedTrainer", "masked_mean_loss", "per_client"]


@dataclass
class LocalSpec:
    """What local training does this round (the engine applies it identically to every client)."""

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


@dataclass
class LocalResult:
    params: torch.Tensor  # [K, P] parameters after local training
    train_loss: torch.Tensor  # [K] mean minibatch objective over the client's local steps


def per_client(value: torch.Tensor | None, rows: slice) -> torch.Tensor | None:
    """Rows of a ``[K, P]`` per-client tensor, or a shared ``[P]`` tensor as it is."""
    if value is None or value.dim() == 1:
        return value
    return value[rows]


def masked_mean_loss(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the unmasked samples (0 when none are)."""
    losses = F.cross_entropy(logits, y, reduction="none")
    return (losses * mask).sum() / mask.sum().clamp_min(1.0)


class BatchedTrainer:
    """Local training of all selected clients as one stacked computation (``torch.func``)."""

    def __init__(
        self,
        model: nn.Module,
        space: ParamSpace,
        inputs: Callable,
        labels: torch.Tensor,
        chunk_size: int | None = None,
        client_axis: str = "vmap",
    ):
        self.model, self.space = model, space
        self.inputs, self.labels = inputs, labels
        self.buffers = dict(model.named_buffers())
        self.chunk_size = chunk_size
        self.client_axis = client_axis

    def _grad_fn(self, objective):
        """``(params {name: [K, ...]}, x, y, mask) → ({name: grad [K, ...]}, loss [K])``.

        Gradients are taken with respect to per-tensor views of the flat ``[K, P]`` state and the SGD
        update runs on those views with ``torch._foreach_*`` ops, so no step copies the whole ``[K, P]``
        (differentiating the flat vector itself makes autograd materialise a zero-padded ``[K, P]`` per
        parameter tensor: about 2× slower on the W1 MLP).
        """
        model, buffers = self.model, self.buffers

        def loss(params, x, y, m):
            value = masked_mean_loss(functional_call(model, (params, buffers), (x,)), y, m)
            return objective(value) if objective is not None else value

        # dropout: each client draws its own masks
        return client_map(grad_and_value(loss), self.client_axis, randomness="different")

    def train(self, start: torch.Tensor, spec: LocalSpec, schedule: BatchSchedule) -> LocalResult:
        k_clients = schedule.index.shape[0]
        chunk = self.chunk_size or k_clients
        grad_fn = self._grad_fn(spec.objective)
        params, losses = [], []
        self.model.train()
        for lo in range(0, k_clients, chunk):
            rows = slice(lo, min(lo + chunk, k_clients))
            w, loss = self._train_rows(rows, start, spec, schedule, grad_fn)
            params.append(w)
            losses.append(loss)
        self.model.eval()
        return LocalResult(torch.cat(params), torch.cat(losses))

    def _views(self, flat: torch.Tensor | None, like: list[torch.Tensor]) -> list[torch.Tensor] | None:
        """Per-tensor views of a ``[P]`` or ``[K, P]`` vector, broadcast to the stacked parameters."""
        if flat is None:
            return None
        return [v.expand_as(t) for v, t in zip(self.space.unflatten(flat).values(), like, strict=True)]

    @staticmethod
    def _per_row(values: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
        """A per-client ``[K]`` vector shaped to multiply each stacked parameter tensor."""
        return [values.view(-1, *([1] * (t.dim() - 1))) for t in like]

    def _train_rows(self, rows, start, spec, schedule, grad_fn):
        kc = rows.stop - rows.start
        w = (start[rows] if start.dim() == 2 else start.expand(kc, -1)).clone()
        params = self.space.unflatten(w)  # views: updating them updates w
        ws = list(params.values())
        ref = None
        if spec.prox_mu:  # the reference point defaults to where the client started
            ref = self._views(per_client(spec.prox_ref, rows), ws) if spec.prox_ref is not None else None
            ref = ref or [t.clone() for t in ws]
        mix = self._views(per_client(spec.mix_vector, rows), ws) if spec.mix_alpha else None
        shift = self._views(per_client(spec.grad_shift, rows), ws)
        scale = self._per_row(spec.grad_scale[rows].to(w), ws) if spec.grad_scale is not None else None
        bufs = [torch.zeros_like(t) for t in ws] if spec.momentum else None
        active_np = schedule.active[rows]
        loss_sum = torch.zeros(kc, dtype=w.dtype, device=w.device)
        for s in range(schedule.num_steps):
            idx = schedule.index[rows, s]
            x, y, m = self.inputs(idx, w.dtype), self.labels[idx], schedule.mask[rows, s].to(w.dtype)
            grads, loss = grad_fn(params, x, y, m)
            g = list(grads.values())
            if scale is not None:
                torch._foreach_mul_(g, scale)
            if mix is not None:
                torch._foreach_lerp_(g, mix, spec.mix_alpha)
            if shift is not None:
                torch._foreach_add_(g, shift)
            if spec.prox_mu:
                torch._foreach_add_(g, torch._foreach_sub(ws, ref), alpha=spec.prox_mu)
            if spec.weight_decay:
                torch._foreach_add_(g, ws, alpha=spec.weight_decay)
            step_active = active_np[:, s]
            if step_active.all():
                if bufs is not None:
                    torch._foreach_mul_(bufs, spec.momentum)
                    torch._foreach_add_(bufs, g)
                    g = bufs
                loss_sum += loss
            else:  # padded step for some clients: their parameters and momentum stay as they are
                on = self._per_row(torch.as_tensor(step_active, device=w.device), ws)
                if bufs is not None:
                    moved = torch._foreach_add(torch._foreach_mul(bufs, spec.momentum), g)
                    bufs = [torch.where(o, n, b) for o, n, b in zip(on, moved, bufs, strict=True)]
                    g = bufs
                g = torch._foreach_mul(g, on)
                loss_sum += torch.where(on[0].view(-1), loss, torch.zeros_like(loss))
            torch._foreach_add_(ws, g, alpha=-spec.lr)
        n_active = torch.as_tensor(active_np.sum(axis=1), dtype=w.dtype, device=w.device)
        return w, loss_sum / n_active.clamp_min(1)
