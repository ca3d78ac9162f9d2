"""Synthetic(alpha, beta): federated logistic-regression data of FedProx (Li et al. 2020, MLSys, Sec. 5.1).

Client k (reference generator ``litian96/FedProx data/synthetic_1_1/generate_synthetic.py``):

    u_k ~ N(0, alpha^2),  B_k ~ N(0, beta^2)            (alpha, beta are standard deviations in the code)
    W_k ~ N(u_k, 1) in R^{dim x C},  b_k ~ N(u_k, 1) in R^C,  v_k ~ N(B_k, 1) in R^dim
    x ~ N(v_k, Sigma),  Sigma = diag(j^-1.2), j = 1..dim
    y = argmax softmax(W_k^T x + b_k) = argmax (W_k^T x + b_k)

alpha sets how much the local models differ, beta how much the local inputs differ. Client sizes are
``int(lognormal(4, 2)) + 50``. The iid variant (``synthetic_iid/generate_iid.py``) shares one W, b ~ N(0, 1)
and draws every x from N(0, Sigma) (alpha and beta unused). The reference shuffles each client's samples
and keeps 90% for training (``train_frac=0.9``); FedProx uses dim 60 and 10 classes over 30 clients.
Note: u_k shifts every class score by the same ``u_k (sum(x) + 1)``, so it cannot change the argmax; in
the reference recipe alpha leaves the labels' distribution unchanged and the heterogeneity comes from the
per-client draw of W_k and from beta.
"""

from __future__ import annotations

import numpy as np
import torch

from .federated import Dataset

__all__ = ["client_sizes", "load_synthetic", "sigma_diagonal"]


def sigma_diagonal(dim: int) -> np.ndarray:
    """The input covariance diagonal ``Sigma_jj = j^-1.2``, j = 1..dim (FedProx Sec. 5.1)."""
    return np.arange(1, dim + 1, dtype=np.float64) ** -1.2


def client_sizes(sizes: str | int, num_clients: int, rng: np.random.Generator) -> np.ndarray:
    """Samples per client: ``"lognormal"`` = ``int(lognormal(4, 2)) + 50`` (FedProx), or a fixed int."""
    if sizes == "lognormal":
        return rng.lognormal(4.0, 2.0, num_clients).astype(np.int64) + 50
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool) and sizes >= 2:
        return np.full(num_clients, int(sizes), dtype=np.int64)
    raise ValueError(f"sizes={sizes!r}: use 'lognormal' (FedProx) or an int >= 2 samples per client")


def load_synthetic(
    alpha: float = 1.0,
    beta: float = 1.0,
    num_clients: int = 30,
    dim: int = 60,
    num_classes: int = 10,
    seed: int = 0,
    iid: bool = False,
    train_frac: float = 0.9,
    sizes: str | int = "lognormal",
) -> Dataset:
    """Synthetic(alpha, beta) with ``num_clients`` clients; x float32 ``[N, dim]``, y int64 in ``[0, C)``.

    Same inputs and seed give the same data. ``meta`` keeps the drawn parameters (u, B, v, W, b, sizes) so
    the generator can be checked. Each client's samples are shuffled, the first ``int(train_frac * n)``
    train, the rest test.
    """
    if alpha < 0 or beta < 0:
        raise ValueError(f"alpha={alpha}, beta={beta}: they are standard deviations, must be >= 0")
    if num_clients < 1 or dim < 1 or num_classes < 2:
        raise ValueError(
            f"num_clients={num_clients}, dim={dim}, num_classes={num_classes}: need >= 1, >= 1, >= 2"
        )
    if not 0.0 < train_frac < 1.0:
        raise ValueError(f"train_frac={train_frac}: must be in (0, 1)")
    rng = np.random.default_rng(seed)
    n = client_sizes(sizes, num_clients, rng)
    sigma = sigma_diagonal(dim)
    if iid:
        u, big_b, v = np.zeros(num_clients), np.zeros(num_clients), np.zeros((num_clients, dim))
        shared_w, shared_b = rng.normal(0.0, 1.0, (dim, num_classes)), rng.normal(0.0, 1.0, num_classes)
        w = np.broadcast_to(shared_w, (num_clients, dim, num_classes))
        b = np.broadcast_to(shared_b, (num_clients, num_classes))
    else:
        u = rng.normal(0.0, alpha, num_clients)
        big_b = rng.normal(0.0, beta, num_clients)
        v = rng.normal(big_b[:, None], 1.0, (num_clients, dim))
        w = rng.normal(u[:, None, None], 1.0, (num_clients, dim, num_classes))
        b = rng.normal(u[:, None], 1.0, (num_clients, num_classes))

    parts: dict[str, list[np.ndarray]] = {
        "x_train": [],
        "y_train": [],
        "owner_train": [],
        "x_test": [],
        "y_test": [],
        "owner_test": [],
    }
    for k in range(num_clients):
        x = v[k] + np.sqrt(sigma) * rng.standard_normal((n[k], dim))
        y = np.argmax(x @ w[k] + b[k], axis=1)
        order = rng.permutation(n[k])
        cut = int(train_frac * n[k])
        for split, idx in (("train", order[:cut]), ("test", order[cut:])):
            parts[f"x_{split}"].append(x[idx].astype(np.float32))
            parts[f"y_{split}"].append(y[idx].astype(np.int64))
            parts[f"owner_{split}"].append(np.full(len(idx), k, dtype=np.int64))
    tensors = {key: torch.from_numpy(np.concatenate(arrays)) for key, arrays in parts.items()}
    label = "iid" if iid else f"({alpha:g}, {beta:g})"
    return Dataset(
        name="synthetic_iid" if iid else f"synthetic_{alpha:g}_{beta:g}",
        x_train=tensors["x_train"],
        y_train=tensors["y_train"],
        x_test=tensors["x_test"],
        y_test=tensors["y_test"],
        num_classes=num_classes,
        source=f"generated: FedProx Synthetic{label}, seed {seed}",
        owner_train=tensors["owner_train"],
        owner_test=tensors["owner_test"],
        owner_names=[f"f_{k:05d}" for k in range(num_clients)],
        meta={
            "alpha": alpha,
            "beta": beta,
            "iid": iid,
            "seed": seed,
            "train_frac": train_frac,
            "sizes": n,
            "sigma_diag": sigma,
            "u": u,
            "B": big_b,
            "v": v,
            "W": np.asarray(w),
            "b": np.asarray(b),
        },
    )
