"""Equitable-FL's activation clustering (Algorithm 1, lines 10-21): from the participants' penultimate
activations to the equitable aggregation weights. Pure functions; the server side works in float64 numpy.

1. **Activation vector** (Definition 1, Fig. 1): a = Psi(phi(z)) = log_softmax(h) over the feature dimension,
   h being the post-ReLU output of the penultimate ("activation") layer (``model.features``). The paper does
   not say how the per-sample vectors become one per client. Default reading (``reduction=
   "last_epoch_mean"``): the mean of log_softmax(h) over every sample of the client's last (E-th) local
   epoch, taken during training with the model as it evolves, each minibatch in eval mode just before its
   step (no dropout; BatchNorm with the client's running statistics: the engine's ``ActivationMean``
   statistic, ``LocalSpec.statistics``; docs/readings.md says why). ``"last_batch_mean"`` keeps only the
   last minibatch (``LastBatchActivationMean``); ``"post_train_mean"`` is the mean over the whole local
   training set re-evaluated with the final local model in eval mode
   (``Engine.features(..., transform="log_softmax")``).
   The vector is detached: it takes no part in gradients. ``activation_statistic`` maps a reduction to its
   statistic.
2. **Similarity** (line 15): S = A A^T, the Gram matrix of the r participants' vectors (rows of A in the
   round's participant order). ``similarity="cosine"`` uses cosine similarities instead.
3. **getprobs** (lines 17-18): spectral clustering as printed, i.e. the eigenvectors of S itself (no
   Laplacian) for its C largest eigenvalues, then K-Means (scikit-learn, ``n_init=10``, a fixed seed) on
   their rows. ``spectral="row_normalised"`` scales each row of that embedding to unit length
   (Ng-Jordan-Weiss); ``spectral="normalised_laplacian"`` takes the top-C eigenvectors of D^-1/2 S D^-1/2
   (D = diag of the row sums of S; they are the bottom eigenvectors of the symmetric normalised Laplacian
   I - D^-1/2 S D^-1/2 of von Luxburg, 2007) and row-normalises them.
4. **Equitable weights** (Eq. 6): p^i = 1/(C |gamma_q|) for participant i in found cluster gamma_q, so every
   cluster weighs 1/C whatever its number of clients or samples and the weights sum to 1 (objective Eq. 7).
   Degenerate cases, which the paper does not discuss (both are flagged in the result):
   - as many clusters as participants (r = C, a single participant included): clustering is skipped and
     each participant is its own cluster, i.e. uniform weights 1/r;
   - K-Means leaves a cluster empty (fewer than C distinct labels): C is replaced by the number of clusters
     found in Eq. 6, so the weights still sum to 1. The embedding has rank C, hence at least C distinct
     rows, so with exact arithmetic this happens only through ``equitable_weights`` on given labels.
   C < 1 or C > r is an error. Clusters are found afresh every round, over that round's participants only.

The round's diagnostics are in ``fairfl_core.metrics``: ``client_disagreement`` (Eq. 9, the mean of
|f_i - f_j| over unordered pairs of participants, as the text defines it; ``literal=True`` gives the printed
double sum over ordered pairs divided by C(r, 2), twice as large), ``sigma_acc`` (sqrt of the mean over all
n clients of (Acc_i - Acc)^2, a population statistic around the global accuracy, in percentage points) and
``cluster_nmi`` (NMI of the found clusters against the planted ones, per round over the participants, plus
a figure over all clients).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from fairfl_core.dataclass_io import check_option
from fairfl_core.sim.statistics import ActivationMean

__all__ = [
    "REDUCTIONS",
    "Reduction",
    "Similarity",
    "SpectralVariant",
    "ClusterWeights",
    "LastBatchActivationMean",
    "activation_statistic",
    "check_reduction",
    "cluster_weights",
    "equitable_weights",
    "kmeans_labels",
    "similarity_matrix",
    "spectral_embedding",
]

Reduction = Literal["last_epoch_mean", "last_batch_mean", "post_train_mean"]
REDUCTIONS = {
    "last_epoch_mean": "every sample of the last local epoch, with the evolving model, in eval mode",
    "last_batch_mean": "the last local minibatch only",
    "post_train_mean": "every local training sample, re-evaluated with the final local model in eval mode",
}
Similarity = Literal["gram", "cosine"]
SpectralVariant = Literal["literal", "row_normalised", "normalised_laplacian"]


# --------------------------------------------------------------------------------------------------------
# client side: which statistic the clients accumulate (sim/statistics.py)
# --------------------------------------------------------------------------------------------------------


def check_reduction(reduction: Reduction) -> Reduction:
    """Return ``reduction`` if it names an activation-vector reduction, else raise ValueError."""
    check_option(reduction, Reduction, "reduction")
    return reduction


@dataclass(frozen=True)
class LastBatchActivationMean(ActivationMean):
    """``ActivationMean`` over each client's last completed local step only (``"last_batch_mean"``)."""

    def start(self, schedule):
        acc = super().start(schedule)
        acc["first"] = np.maximum(schedule.active.sum(axis=1) - 1, 0)
        return acc


def activation_statistic(reduction: Reduction = "last_epoch_mean") -> ActivationMean | None:
    """The ``LocalSpec.statistics`` entry that yields the activation vectors of ``reduction`` (its name is
    ``"activation"``), or None for ``"post_train_mean"``, which the server computes after training with
    ``Engine.features(params, clients, transform="log_softmax")``."""
    check_reduction(reduction)
    if reduction == "post_train_mean":
        return None
    return ActivationMean() if reduction == "last_epoch_mean" else LastBatchActivationMean()


# --------------------------------------------------------------------------------------------------------
# server side: similarity, spectral clustering, equitable weights
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterWeights:
    """One round's clustering: ``labels`` (int64 ``[r]``, clusters numbered by first appearance in the
    participant order), Eq. 6 ``weights`` (float64 ``[r]``, sum 1), the requested ``num_clusters`` C, the
    ``effective_clusters`` used in Eq. 6, and whether (``fallback_used``) and why (``fallback``) a degenerate
    case replaced the plain rule."""

    labels: np.ndarray
    weights: np.ndarray
    num_clusters: int
    effective_clusters: int
    fallback_used: bool
    fallback: str  # "" | "one participant per cluster" | "empty cluster"


def _check_num_clusters(num_clusters: Any) -> int:
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)) or num_clusters < 1:
        raise ValueError(
            "num_clusters (C) must be an integer >= 1, e.g. the number of planted clusters; got "
            f"{num_clusters!r}"
        )
    return int(num_clusters)


def _as_matrix(activations: Any) -> np.ndarray:
    if isinstance(activations, torch.Tensor):
        activations = activations.detach().cpu().numpy()
    a = np.asarray(activations, dtype=np.float64)
    if a.ndim != 2 or a.size == 0:
        raise ValueError(
            "activations must be a non-empty [r, D] matrix (one activation vector per participant); got "
            f"shape {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        bad = np.flatnonzero(~np.isfinite(a).all(1))
        raise ValueError(f"activations has NaN or inf in the rows of participant(s) {bad[:5].tolist()}")
    return a


def _canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel 0, 1, ... in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def _unit_rows(u: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(u, axis=1, keepdims=True)
    return u / np.where(norms > 0, norms, 1.0)


def similarity_matrix(activations: Any, similarity: Similarity = "gram") -> np.ndarray:
    """S = A A^T (Algorithm 1, Similarity) of the ``[r, D]`` activation vectors, or cosine similarities."""
    a = _as_matrix(activations)
    check_option(similarity, Similarity, "similarity")
    if similarity == "cosine":
        zero = np.flatnonzero(np.linalg.norm(a, axis=1) == 0)
        if zero.size:
            raise ValueError(
                f"activations of participant(s) {zero[:5].tolist()} are zero: their cosine similarity is "
                "undefined; use similarity='gram'"
            )
        a = _unit_rows(a)
    return a @ a.T


def spectral_embedding(s: np.ndarray, num_clusters: int, spectral: SpectralVariant = "literal") -> np.ndarray:
    """``[r, C]``: the eigenvectors of the C largest eigenvalues (largest first) of S (``"literal"``), the
    same with unit rows (``"row_normalised"``), or those of D^-1/2 S D^-1/2 with unit rows
    (``"normalised_laplacian"``)."""
    c = _check_num_clusters(num_clusters)
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or not np.allclose(s, s.T):
        raise ValueError(f"s must be a symmetric [r, r] similarity matrix; got shape {s.shape}")
    if c > s.shape[0]:
        raise ValueError(f"num_clusters={c} exceeds the {s.shape[0]} rows of s: lower num_clusters")
    check_option(spectral, SpectralVariant, "spectral")
    if spectral == "normalised_laplacian":
        degree = s.sum(1)
        if np.any(degree <= 0):
            raise ValueError(
                "spectral='normalised_laplacian' needs positive row sums of the similarity matrix; got "
                f"{degree.min()}: use spectral='literal' or 'row_normalised'"
            )
        scale = 1.0 / np.sqrt(degree)
        s = scale[:, None] * s * scale[None, :]
    _, vectors = np.linalg.eigh(s)  # ascending eigenvalues
    u = vectors[:, ::-1][:, :c]
    return u if spectral == "literal" else _unit_rows(u)


def kmeans_labels(embedding: np.ndarray, num_clusters: int, seed: int = 0) -> np.ndarray:
    """K-Means (scikit-learn, ``n_init=10``, ``random_state=seed``) on the rows of ``embedding``; labels
    numbered by first appearance. Fewer than C labels come back when the rows have fewer distinct points."""
    c = _check_num_clusters(num_clusters)
    with warnings.catch_warnings():  # fewer distinct points than C: reported through the labels
        warnings.filterwarnings("ignore", "Number of distinct clusters", ConvergenceWarning)
        labels = KMeans(n_clusters=c, n_init=10, random_state=seed).fit_predict(embedding)
    return _canonical(labels)


def equitable_weights(labels: Any, num_clusters: int) -> ClusterWeights:
    """Eq. 6: p^i = 1/(C |gamma_q|) for each participant i of cluster q, from one label per participant (any
    labels; only the partition matters). When fewer than C clusters are present, C is replaced by the
    number present (flagged ``"empty cluster"``)."""
    c = _check_num_clusters(num_clusters)
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    raw = np.asarray(labels)
    if raw.ndim != 1 or raw.size == 0:
        raise ValueError(
            f"labels must be a non-empty 1-D vector (one per participant); got shape {raw.shape}"
        )
    canon = _canonical(raw)
    present = int(canon.max()) + 1
    if present > c:
        raise ValueError(f"labels has {present} distinct clusters but num_clusters={c}: pass C >= {present}")
    sizes = np.bincount(canon)
    weights = 1.0 / (present * sizes[canon].astype(np.float64))
    empty = present < c
    return ClusterWeights(canon, weights, c, present, empty, "empty cluster" if empty else "")


def cluster_weights(
    activations: Any,
    num_clusters: int,
    *,
    seed: int = 0,
    similarity: Similarity = "gram",
    spectral: SpectralVariant = "literal",
) -> ClusterWeights:
    """getprobs(Similarity(A), C) of Algorithm 1: the round's clusters and Eq. 6 weights from the ``[r, D]``
    activation vectors of its r participants (rows in participant order).

    r = C skips clustering (each participant its own cluster, weights 1/r; flagged
    ``"one participant per cluster"``); C > r raises ValueError.
    """
    c = _check_num_clusters(num_clusters)
    a = _as_matrix(activations)
    r = a.shape[0]
    if c > r:
        raise ValueError(
            f"num_clusters={c} exceeds the {r} participants of the round (rows of activations): lower "
            f"num_clusters or sample at least {c} clients per round"
        )
    check_option(similarity, Similarity, "similarity")
    check_option(spectral, SpectralVariant, "spectral")
    if r == c:
        return dataclasses.replace(
            equitable_weights(np.arange(r), c), fallback_used=True, fallback="one participant per cluster"
        )
    embedding = spectral_embedding(similarity_matrix(a, similarity), c, spectral)
    return equitable_weights(kmeans_labels(embedding, c, seed), c)
