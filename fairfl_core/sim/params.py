"""Model parameters as flat vectors.

The server and every algorithm see a model as one flat vector of its **trainable floating-point
parameters** (``[P]``, or ``[K, P]`` for K clients). Normalisation statistics and other buffers are never
part of it, so norms, dot products, projections and averages (q-FFL's ‖Δ‖², FedFV's projections,
FedMGDA+'s normalisation) only ever touch parameters. BatchNorm's running statistics have a flat vector of
their own (``ParamSpace.of_buffers``, ``[Q]``), kept beside the parameters (``engine.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["ParamSpace"]


@dataclass(frozen=True)
class ParamSpace:
    """Names, shapes and offsets of a model's trainable parameters inside the flat vector."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, model: nn.Module) -> ParamSpace:
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.is_floating_point()]
        return cls(tuple(n for n, _ in named), tuple(tuple(p.shape) for _, p in named))

    @classmethod
    def of_buffers(cls, model: nn.Module) -> ParamSpace | None:
        """The space of a model's floating-point buffers (BatchNorm running statistics); None without any."""
        named = [(n, b) for n, b in model.named_buffers() if b.is_floating_point()]
        return cls(tuple(n for n, _ in named), tuple(tuple(b.shape) for _, b in named)) if named else None

    @property
    def numels(self) -> tuple[int, ...]:
        return tuple(math.prod(s) for s in self.shapes)

    @property
    def size(self) -> int:
        return sum(self.numels)

    def flatten(self, params: dict[str, torch.Tensor], batch_dims: int = 0) -> torch.Tensor:
        """``{name: [*batch, *shape]}`` → ``[*batch, P]`` (a copy)."""
        first = params[self.names[0]]
        lead = first.shape[:batch_dims]
        return torch.cat([params[n].reshape(*lead, -1) for n in self.names], dim=-1)

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """``[*batch, P]`` → ``{name: [*batch, *shape]}`` as views of ``flat`` (no copy)."""
        if flat.shape[-1] != self.size:
            raise ValueError(
                f"flat vector has {flat.shape[-1]} entries, the model has {self.size} parameters"
            )
        lead = flat.shape[:-1]
        out, offset = {}, 0
        for name, shape, numel in zip(self.names, self.shapes, self.numels, strict=True):
            out[name] = flat[..., offset : offset + numel].view(*lead, *shape)
            offset += numel
        return out

    def from_module(self, model: nn.Module) -> torch.Tensor:
        tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        return torch.cat([tensors[n].detach().reshape(-1) for n in self.names])

    def load_into(self, model: nn.Module, flat: torch.Tensor) -> None:
        """Copy the flat vector into the module's parameters (in place)."""
        params = dict(model.named_parameters())
        with torch.no_grad():
            for name, view in self.unflatten(flat).items():
                params[name].copy_(view)
