"""Gossip averaging over stacked client models (AFGA, TMLR 2024, Algorithm 1 line 14; CAFGA, Algorithm 2
line 15) and its diagnostics.

The N client models are one tensor X ∈ R^{N×P} (row i = client i's flattened parameters), so a gossip step
x_i ← Σ_j W_ij x_j for all clients at once is the single matrix product X ← W X. A doubly stochastic W keeps
the average model: 1ᵀ(W X)/N = 1ᵀX/N. ``Mixer`` keeps W as a sparse matrix when at most
``SPARSE_DENSITY`` of its entries are non-zero (a ring has 3N of N², CAFGA's block-diagonal rings 3N too):
the product then costs O(nnz · P) instead of O(N² · P) (``benchmarks/gossip_cost.py`` measures both).

BatchNorm: the paper does not say what happens to running statistics under gossip. We gossip them with the
same W as the parameters (the FedAMS authors' code averages whole state dicts, buffers included):
``Mixer.state`` mixes every floating tensor of a stacked state ``{name: [N, ...]}`` and leaves integer
counters (``num_batches_tracked``) as they are.

Diagnostics (not in the paper): the consensus error (1/N) Σ_i ‖x_i − x̄‖², which t gossip steps alone
shrink to at most ρ^{2t} times its value (X_t − 1x̄ᵀ = (W − 11ᵀ/N)^t (X_0 − 1x̄ᵀ) for doubly stochastic W,
and ‖(W − 11ᵀ/N)^t‖₂ ≤ ρ^t), and the peer
messages of one gossip step: one per non-zero off-diagonal W_ij (client j sends its model to client i), 2N for
a ring of N ≥ 3 clients, Z times that per round.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from numpy.typing import ArrayLike

from fairfl_core.gossip.topology import DOUBLY_STOCHASTIC_ATOL, check_mixing_matrix

__all__ = ["SPARSE_DENSITY", "Mixer", "gossip", "consensus_error", "peer_messages"]

SPARSE_DENSITY = 0.1  # W is stored sparse when nnz / N² is at most this


class Mixer:
    """A validated mixing matrix W applied to stacked client tensors ``[N, ...]`` as X ← W X.

    ``sparse``: None picks sparse storage when nnz(W)/N² ≤ ``SPARSE_DENSITY``; True/False force it. W is
    converted once per dtype and device of the tensors it mixes. Repeated gossip is cheapest with two
    buffers swapped at every step (``Y = mixer(X, out=Y); X, Y = Y, X``)."""

    def __init__(self, W: ArrayLike, *, sparse: bool | None = None, atol: float = DOUBLY_STOCHASTIC_ATOL):
        self.W = check_mixing_matrix(W, atol=atol)
        self.num_clients = self.W.shape[0]
        density = np.count_nonzero(self.W) / self.W.size
        self.sparse = density <= SPARSE_DENSITY if sparse is None else bool(sparse)
        self._cache: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def _matrix(self, like: torch.Tensor) -> torch.Tensor:
        key = (like.dtype, like.device)
        if key not in self._cache:
            W = torch.as_tensor(self.W, dtype=like.dtype).to(like.device)  # once per run: no host wait
            self._cache[key] = W.to_sparse().coalesce() if self.sparse else W
        return self._cache[key]

    def __call__(self, X: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """W X for X of shape ``[N, ...]`` (trailing dimensions flattened for the product). ``out``: a
        contiguous tensor like X, not X itself, to write W X into; reusing one saves the allocation of a
        fresh [N, P] result at every step."""
        if X.ndim == 0 or X.shape[0] != self.num_clients:
            raise ValueError(
                f"gossip needs one row per client: W is {self.num_clients} × {self.num_clients}, the tensor "
                f"has shape {tuple(X.shape)}; stack the client tensors along dimension 0"
            )
        if not X.is_floating_point():
            raise ValueError(f"gossip mixes floating tensors, got dtype {X.dtype}")
        flat = X.reshape(self.num_clients, -1)
        W = self._matrix(X)
        if out is None:
            return torch.mm(W, flat).reshape(X.shape)
        same = (out.shape, out.dtype, out.device) == (X.shape, X.dtype, X.device)
        if not same or not out.is_contiguous() or out.data_ptr() == X.data_ptr():
            raise ValueError(
                "out must be a contiguous tensor of the shape, dtype and device of X, and must not be X "
                f"itself (got {tuple(out.shape)} {out.dtype} for X {tuple(X.shape)} {X.dtype})"
            )
        torch.mm(W, flat, out=out.view(self.num_clients, -1))
        return out

    def state(self, stacked: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Gossip of a stacked state ``{name: [N, ...]}``: floating tensors (parameters, BatchNorm running
        mean and variance) are mixed with W, integer ones (``num_batches_tracked``) returned unchanged."""
        return {k: self(v) if v.is_floating_point() else v for k, v in stacked.items()}

    @property
    def peer_messages(self) -> int:
        """Peer-to-peer model transfers of one gossip step with this W."""
        return peer_messages(self.W)


def gossip(X: torch.Tensor, W: ArrayLike) -> torch.Tensor:
    """One gossip step X ← W X over stacked client tensors ``[N, ...]`` (see ``Mixer`` to reuse W)."""
    return Mixer(W)(X)


def consensus_error(X: torch.Tensor) -> float:
    """(1/N) Σ_i ‖x_i − x̄‖² over the rows of X ``[N, ...]`` (x̄ = the row mean)."""
    if X.ndim == 0 or X.shape[0] == 0:
        raise ValueError(f"consensus error needs one row per client, got shape {tuple(X.shape)}")
    flat = X.reshape(X.shape[0], -1)
    return float((flat - flat.mean(dim=0)).square().sum() / X.shape[0])


def peer_messages(W: ArrayLike) -> int:
    """Model transfers of one gossip step: the non-zero off-diagonal entries of W (W_ij > 0, i ≠ j: client j
    sends x_j to client i). A round of AFGA or CAFGA has Z gossip steps."""
    W = check_mixing_matrix(W)
    return int(np.count_nonzero(W) - np.count_nonzero(np.diag(W)))
