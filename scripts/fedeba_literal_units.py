"""Why FedEBA+ with the literal Eq. 10-11 units diverges on Table 1's Fashion-MNIST workload: a plain PyTorch
loop, independent of fairfl's engine, on the same partition (100 clients x 2 label shards, MLP 784-200-200-10,
PyTorch's default initialisation, mean cross-entropy, K = 10 steps of batch 50, 10 clients per round).

It prints, for two input conventions (fairfl's per-pixel standardisation with Fashion-MNIST's mean and std,
and raw [0, 1] pixels; easyFL, the framework the paper's protocol follows, standardises Fashion-MNIST with
MNIST's constants, which gives inputs of larger norm still):

* the sharpness lambda_max (largest Hessian eigenvalue, Lanczos on Hessian-vector products) of five
  clients' losses at initialisation: gradient descent on a loss is stable only for steps below 2 / lambda_max;
* FedAvg at local lr 0.3 and 0.5 (PropFair at M = 0.2 is FedAvg at lr 0.5), 3 rounds;
* FedEBA+ with the literal units (alpha = 0.9, tau = 0.1, lr 0.1): every local step adds alpha * lr * g~ with
  g~ fixed for the round, so each client moves alpha * lr * K = 0.9 along one direction computed at x_t.

Usage: ``.venv/bin/python scripts/fedeba_literal_units.py`` (about 5 minutes on 2 CPU cores).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.experiments.profiles import CONFIG_DIR
from fairfl_core.experiments.runner import run_data

K, B, CLIENTS, PER_ROUND = 10, 50, 100, 10


def pixels(convention: str) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    cfg = ExperimentConfig.from_dict(load_config(CONFIG_DIR / "fedeba_fmnist_mlp.yaml"))
    data = run_data(cfg)
    x = data.x.float().reshape(len(data.x), -1) / 255.0
    if convention == "standardised":
        x = (x - data.mean[0]) / data.std[0]
    return x, data.y, data.client_indices("train")


def mlp(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(), nn.Linear(200, 10))


def sharpness(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """The largest Hessian eigenvalue of the mean loss at ``model`` (Lanczos on Hessian-vector products)."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    point = tuple(p.detach().double() for p in model.parameters())
    xd = x.double()

    def loss(*params):
        return F.cross_entropy(functional_call(model, dict(zip(names, params, strict=True)), (xd,)), y)

    def hvp(v: np.ndarray) -> np.ndarray:
        parts, at = [], 0
        for shape in shapes:
            parts.append(torch.as_tensor(v[at : at + math.prod(shape)]).view(shape))
            at += math.prod(shape)
        _, hv = torch.autograd.functional.hvp(loss, point, tuple(parts))
        return torch.cat([t.flatten() for t in hv]).numpy()

    size = sum(math.prod(s) for s in shapes)
    operator = LinearOperator((size, size), matvec=hvp, dtype=np.float64)
    start = np.random.default_rng(0).standard_normal(size)
    return float(eigsh(operator, k=1, which="LA", v0=start, tol=1e-3, return_eigenvectors=False)[0])


def client_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, ix: torch.Tensor) -> float:
    with torch.no_grad():
        return float(F.cross_entropy(model(x[ix]), y[ix]))


def train_rounds(x, y, clients, method: str, lr: float, rounds: int, alpha=0.9, tau=0.1) -> list[float]:
    """Mean client training loss after each round (stops at the first non-finite or > 1e4 value)."""
    model, rng, history = mlp(0), np.random.default_rng(0), []
    for t in range(rounds):
        chosen, eta = rng.choice(CLIENTS, PER_ROUND, replace=False), lr * 0.999**t
        if method == "fedeba+literal":
            losses = torch.tensor([client_loss(model, x, y, clients[i]) for i in chosen])
            p_tilde = torch.softmax(losses / tau, 0)
            grads = []
            for i in chosen:  # one minibatch gradient at x_t per client (the paper's "one local update")
                batch = clients[i][rng.permutation(len(clients[i]))[:B]]
                model.zero_grad()
                F.cross_entropy(model(x[batch]), y[batch]).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            g_tilde = [
                sum(w * g[j] for w, g in zip(p_tilde, grads, strict=True))
                for j in range(len(grads[0]))
            ]
        local, post = [], []
        for i in chosen:
            m = copy.deepcopy(model)
            for _ in range(K):
                batch = clients[i][rng.permutation(len(clients[i]))[:B]]
                m.zero_grad()
                F.cross_entropy(m(x[batch]), y[batch]).backward()
                with torch.no_grad():
                    for j, p in enumerate(m.parameters()):
                        step = p.grad if method == "fedavg" else (1 - alpha) * p.grad + alpha * g_tilde[j]
                        p -= eta * step
            post.append(client_loss(m, x, y, clients[i]))
            local.append(m)
        n = torch.tensor([float(len(clients[i])) for i in chosen])
        weights = n / n.sum() if method == "fedavg" else torch.softmax(torch.tensor(post) / tau, 0)
        with torch.no_grad():
            for j, p in enumerate(model.parameters()):
                p.copy_(sum(w * list(m.parameters())[j] for w, m in zip(weights, local, strict=True)))
        mean_loss = float(np.mean([client_loss(model, x, y, ix) for ix in clients]))
        history.append(mean_loss)
        if not math.isfinite(mean_loss) or mean_loss > 1e4:
            break
    return history


def main() -> None:
    torch.set_num_threads(2)
    for convention in ("standardised", "[0, 1]"):
        x, y, clients = pixels(convention)
        model = mlp(0)
        lams = [sharpness(model, x[clients[i]], y[clients[i]]) for i in range(0, CLIENTS, 20)]
        print(f"{convention}: lambda_max of clients 0, 20, .., 80 at init = {[round(v, 2) for v in lams]}")
        for lr in (0.3, 0.5):
            h = train_rounds(x, y, clients, "fedavg", lr, 3)
            print(f"  FedAvg lr {lr}: mean client train loss per round {[f'{v:.3g}' for v in h]}")
        h = train_rounds(x, y, clients, "fedeba+literal", 0.1, 40)
        print(f"  FedEBA+ literal units (alpha 0.9, lr 0.1), {len(h)} rounds: {[f'{v:.3g}' for v in h]}")


if __name__ == "__main__":
    main()
