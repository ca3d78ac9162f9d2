"""FedEBA+ appendix (Wang, Wang, Shi, Karimireddy & Tang, "Entropy-driven Fair and Effective Federated
Learning", App. M): Tables 9, 10, 11 and 13 as experiments, Tables 17, 18 and 19 as metrics of the Table 1
runs. Settings, helpers and data stand-ins come from
``fedeba_plus.py`` (Table 1's protocol: 100 clients × 2 label shards, 10 per round, K = 10 steps of batch
50, lr 0.1 decayed 0.999, server lr 1; FedEBA+ α = 0.9, τ = 0.1, θ = 0° with g̃ in update units).

* **Table 9** (CIFAR-10 with the MLP 3072-200-200-10): CIFAR-10 is not available offline, so without its
  pickle batches the runs use the labelled Fashion-MNIST stand-in (``data/stand_ins.py``) with the
  784-200-200-10 MLP: then the task is Table 1's Fashion-MNIST one, labelled "stand-in for CIFAR-10". The
  row "FedEBA α=0.9, τ=0.1" (FedEBA has no α) is run as Prac-FedEBA+ (α = 0.9, τ = 0.1, θ = 15°).
* **Table 10**: every method with server momentum 0.9 and **Table 11**: with FedVARP (global lr 1, client
  lr 0.1), the server plug-ins of ``fairfl_core/algorithms/server_plugins.py`` (``ServerPluginHyper``;
  FedEBA+'s FedVARP correction uses its EBA weights). Table 10's caption, "global momentum = 0.9 and
  learning rate η = 0.1", is read as v ← 0.9 v + Δ_t, x ← x + 0.1 v (``server_momentum_lr`` 0.1: the
  server's steady step is the aggregate's own, Hsu et al.'s effective rate 1); every row is run with
  heavy-ball momentum too (x ← x + v, ten times the step), the control that shows what the reading
  changes (``readings.md`` here). Table 10's AFL rows apply the momentum to AFL's model step (its λ step is
  unchanged); AFL takes all 100 clients every round, so only the paper profile runs them.
* **Table 13**: symmetric label noise ε = 0.5 on every client's training labels (``DataSpec.label_noise``,
  drawn from the partition seed; test labels clean). The baselines' hyper-parameters are not given for this
  table; Table 1's are used (q = 0.5) and Table 8's for AFL (λ = 0.7) and FedFV (α = 0.1, τ_fv = 10).
  FOCUS and the three "+ LSR" rows are not implemented (``TABLE13_NOT_IMPLEMENTED`` says why).
* **Tables 17–19** need no runs: FAA (``with_faa``), C_v with its improvement over FedAvg
  (``with_cv_improvement``), angle and KL are computed from the Table 1 runs (``fedeba_table1_fmnist``,
  ``fedeba_table1_cifar10``) at the same profile. Table 1 has no AFL, FedFV or FOCUS row, so those rows of
  Tables 17–19 keep the paper's numbers only (``TABLES17_19_NOT_RUN``).

CPU budget of the ``quick`` profiles (2 shared cores, 1 thread; the costs per round are in
``benchmarks/README.md``): ``quick`` runs 300 rounds × 1 seed of the MLP tables without AFL and 10 rounds of
the CNN with FedAvg and FedEBA+ only (each profile's description says what it leaves out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from fairfl_core.data import stand_ins
from fairfl_core.experiments.config import AlgorithmSpec, ExperimentConfig
from fairfl_core.experiments.profiles import Method, stand_in_profiles
from fairfl_core.experiments.runner import run_data, run_experiment
from fairfl_core.experiments.store import RunStore
from fairfl_core.papers.fedeba_plus.experiments import (
    ALIGN,
    CIFAR10,
    FEDAVG,
    FEDAVG_MATCHED,
    NOT_IMPLEMENTED,
    SMOKE_SHARDS,
    TABLE1,
    cnn_profiles,
    mlp_profiles,
    register_table,
    short_profiles,
    subset_methods,
)
from fairfl_core.report.results import load_runs
from fairfl_core.sim.faults import FaultConfig

__all__ = [
    "FAA_LOCAL_STEPS",
    "LSR_REASON",
    "TABLE13_NOT_IMPLEMENTED",
    "TABLES17_19_NOT_RUN",
    "client_optimum_config",
    "client_optimum_losses",
]

OURS = "FedEBA+"
MOMENTUM = {"server_momentum": 0.9, "server_momentum_lr": 0.1}  # Table 10's reading: x ← x + 0.1 v
HEAVY_BALL = {"server_momentum": 0.9}  # its control: x ← x + v
FEDVARP = {"variance_reduction": "fedvarp"}
_T1 = {m.label: m for m in TABLE1}
AFL_T8 = Method("AFL (λ=0.7)", "afl", {"lr_lambda": 0.7}, "AFL")
FEDFV_T8 = Method("FedFV (α=0.1, τ_fv=10)", "fedfv", {"alpha": 0.1, "tau": 10}, "FedFV")


def _with(params: Mapping, methods: Iterable[Method]) -> tuple[Method, ...]:
    """``methods`` with ``params`` added to each one's hyper-parameters (a plug-in on every method)."""
    return tuple(replace(m, params={**m.params, **params}) for m in methods)


# -- Table 9: CIFAR-10 with the MLP -------------------------------------------------------------------------
def _table9_data(short: tuple[Method, ...]) -> tuple[tuple[str, ...], tuple[Method, ...], str]:
    """``short_profiles``' overrides, ``short`` methods and description prefix of Table 9: the data and the
    MLP (the stand-in's 784 inputs, or 3072 on real CIFAR-10)."""
    # the stand-in's data overrides only: its CNN options do not apply to the MLP
    stand_in = tuple(o for o in stand_ins.stand_in("cifar10") if o.startswith("data."))
    model = "model.name=mlp" if stand_in else "model.name=mlp_cifar10"
    what = "stand-in (no CIFAR-10 here: Fashion-MNIST, same split, MLP 784-200-200-10), " if stand_in else ""
    return (*stand_in, model), short, what


def _fedeba_plus(alpha: float, label: str, row: str) -> Method:
    """FedEBA+ at α, τ = 0.1, θ = 0° with g̃ in update units (as every FedEBA+ run of ``fedeba_plus``)."""
    return Method(label, "fedeba+", {**ALIGN, "alpha": alpha, "tau": 0.1}, row)


TABLE9 = (
    FEDAVG,
    *(Method(f"q-FFL (q={q})", "qffl", {"q": q}, f"q-FFL q={q}") for q in (0.1, 0.2, 1.0, 2.0, 5.0)),
    *(Method(f"Ditto (λ={lam})", "ditto", {"lam": lam}, f"Ditto λ={lam}") for lam in (0.0, 0.5)),
    *(Method(f"AFL (λ={lam})", "afl", {"lr_lambda": lam}, f"AFL λ={lam}") for lam in (0.01, 0.1)),
    Method("TERM (t=1.0)", "term", {"t": 1.0}, "TERM T=1.0"),
    *(
        Method(f"FedMGDA+ (ε={e})", "fedmgda+", {"epsilon": e}, f"FedMGDA+ ε={e}")
        for e in (0.01, 0.05, 0.1, 0.5, 1.0)
    ),
    Method("FedFV (α=0.1, τ_fv=1)", "fedfv", {"alpha": 0.1, "tau": 1}, "FedFV α=0.1, τ_fv=1"),
    Method("Prac-FedEBA+ (θ=15°)", "prac_fedeba+", {"theta": 15.0}, "FedEBA α=0.9, τ=0.1"),
    _fedeba_plus(0.5, "FedEBA+ (α=0.5)", "FedEBA+ α=0.5, τ=0.1"),
    _fedeba_plus(0.9, OURS, "FedEBA+ α=0.9, τ=0.1"),
)
TABLE9_SHORT = (
    "FedAvg",
    "q-FFL (q=1.0)",
    "Ditto (λ=0.5)",
    "TERM (t=1.0)",
    "FedMGDA+ (ε=0.1)",
    "FedFV (α=0.1, τ_fv=1)",
    "FedEBA+ (α=0.5)",
    OURS,
)

# -- Tables 10 and 11: server momentum and FedVARP on every method ------------------------------------------
TABLE10_METHODS = (
    FEDAVG,
    Method("q-FFL (q=0.01)", "qffl", {"q": 0.01}, "q-FFL q=0.01"),
    Method("q-FFL (q=15)", "qffl", {"q": 15.0}, "q-FFL q=15"),
    Method("FedMGDA+ (ε=0)", "fedmgda+", {"epsilon": 0.0}, "FedMGDA+ ε=0.0"),
    Method("PropFair (M=5, ε=0.2)", "propfair", {"M": 5.0, "eps": 0.2}, "PropFair M=5, thres=0.2"),
    Method("FedProx (μ=0.1)", "fedprox", {"mu": 0.1}, "FedProx μ=0.1"),
    Method("TERM (t=0.1)", "term", {"t": 0.1}, "TERM T=0.1"),
    Method("FedFV (α=0.1, τ_fv=10)", "fedfv", {"alpha": 0.1, "tau": 10}, "FedFV α=0.1, τ=10"),
    *(Method(f"AFL (λ={lam})", "afl", {"lr_lambda": lam}, f"AFL λ={lam}") for lam in (0.05, 0.7)),
    _fedeba_plus(0.9, OURS, "FedEBA+ α=0.9, T=0.1"),
)
TABLE10 = _with(MOMENTUM, TABLE10_METHODS)
TABLE11 = _with(
    FEDVARP,
    (
        replace(FEDAVG, paper_row="FedAvg (FedVARP)"),
        Method("q-FFL (q=0.01)", "qffl", {"q": 0.01}, "q-FFL q=0.01"),
        Method("q-FFL (q=15)", "qffl", {"q": 15.0}, "q-FFL q=15"),
        Method("FedFV (α=0.1, τ_fv=10)", "fedfv", {"alpha": 0.1, "tau": 10}, "FedFV α=0.1, τ=10"),
        _fedeba_plus(0.9, OURS, "FedEBA+ α=0.9, T=0.1"),
    ),
)

# -- Table 13: symmetric label noise --------------------------------------------------------------------
NOISE = ("data.label_noise=0.5",)
TABLE13 = (FEDAVG, _T1["q-FFL (q=0.5)"], AFL_T8, FEDFV_T8, _T1[OURS])

# FedEBA+'s local step in update units is ≈0.019 against the baselines' 0.1: at the paper profile each table
# of the appendix (Table 13's Fashion-MNIST column) runs FedAvg at lr 0.02 too (with the table's plug-in), as
# Table 1 does, so that its comparisons carry their matched-step control (the short profiles leave it out)
TABLE9_MATCHED = (FEDAVG_MATCHED,)
TABLE10_MATCHED = _with(MOMENTUM, (FEDAVG_MATCHED,))
HEAVY_BALL_LABEL = " [heavy-ball: x ← x + v]"


def _heavy_ball(methods: Iterable[Method]) -> tuple[Method, ...]:
    """Table 10's control rows: ``methods`` with heavy-ball momentum, labelled so, no paper row."""
    return tuple(
        replace(m, label=m.label + HEAVY_BALL_LABEL, paper_row=None) for m in _with(HEAVY_BALL, methods)
    )


TABLE10_HEAVY_BALL = _heavy_ball(TABLE10_METHODS)
TABLE10_HEAVY_BALL_MATCHED = _heavy_ball((FEDAVG_MATCHED,))
TABLE11_MATCHED = _with(FEDVARP, (FEDAVG_MATCHED,))
TABLE13_MATCHED = (FEDAVG_MATCHED,)
LSR_REASON = (
    "not implemented: LSR (App. D, Alg. 2) trains on a loss of the logits of each minibatch and of an "
    "augmented copy (sharpened mixture of both softmaxes + Jensen-Shannon self-distillation), which the "
    "engine's local objective (a function of the mean minibatch cross-entropy) cannot express"
)
TABLE13_NOT_IMPLEMENTED = {
    "FOCUS": NOT_IMPLEMENTED["FOCUS"],
    **{f"{row} + LSR": LSR_REASON for row in ("FedAvg", "q-FFL", "FedEBA+")},
}

# -- Tables 17-19: metrics of the Table 1 runs ----------------------------------------------------------
TABLES17_19_NOT_RUN = {
    "AFL": "not run: these tables reuse the Table 1 runs, and Table 1 has no AFL row",
    "FedFV": "not run: these tables reuse the Table 1 runs, and Table 1 has no FedFV row",
    "FOCUS": NOT_IMPLEMENTED["FOCUS"],
}
# Local SGD steps of each client's own model for F_i(x_i*) of FAA (``with_faa``), per profile and Table 1
# column; 0 = the shortcut F_i(x_i*) = 0 (FAA of the losses). One CNN step of all 100 clients costs as much
# as a whole training round of 10 clients × 10 steps, so the quick CIFAR-10 column uses the shortcut.
FAA_LOCAL_STEPS = {
    "smoke": {"FashionMNIST": 2, "CIFAR-10": 2},
    "quick": {"FashionMNIST": 200, "CIFAR-10": 0},
    "paper": {"FashionMNIST": 500, "CIFAR-10": 500},
}


# -- the experiments --------------------------------------------------------------------------------------
register_table(
    "fedeba_table9_mlp",
    "Table 9, CIFAR-10 with the MLP 3072-200-200-10 (labelled Fashion-MNIST stand-in with the 784-input MLP "
    "when CIFAR-10 is absent): the rows of the implemented methods with their printed q, λ, ε, and FedAvg at "
    "lr 0.02 (the matched-step control, paper profile)",
    "fedeba_cifar10_cnn.yaml",
    TABLE9 + TABLE9_MATCHED,
    stand_in_profiles(
        "cifar10",
        lambda: short_profiles(mlp_profiles(300, (0,)), *_table9_data(subset_methods(TABLE9, TABLE9_SHORT))),
    ),
    "Table 9",
    CIFAR10,
)
register_table(
    "fedeba_table10_momentum",
    "Table 10, Fashion-MNIST (MLP): every method with server momentum 0.9 (v ← 0.9 v + Δ_t, x ← x + 0.1 v), "
    "FedAvg at lr 0.02 (the matched-step control, paper profile), and every row with heavy-ball momentum "
    "(x ← x + v: the reading's control)",
    "fedeba_fmnist_mlp.yaml",
    TABLE10 + TABLE10_MATCHED + TABLE10_HEAVY_BALL + TABLE10_HEAVY_BALL_MATCHED,
    short_profiles(
        mlp_profiles(300, (0,)),
        short_methods=tuple(m for m in TABLE10 + TABLE10_HEAVY_BALL if m.algorithm != "afl"),
        what="with server momentum 0.9; ",
        short_at=("quick",),
    ),
    "Table 10",
)
register_table(
    "fedeba_table11_fedvarp",
    "Table 11, Fashion-MNIST (MLP): every method with FedVARP (server memory of each client's last update; "
    "global lr 1, client lr 0.1), and FedAvg at lr 0.02 (the matched-step control, paper profile)",
    "fedeba_fmnist_mlp.yaml",
    TABLE11 + TABLE11_MATCHED,
    short_profiles(
        mlp_profiles(300, (0,)), short_methods=TABLE11, what="with FedVARP; ", short_at=("quick",)
    ),
    "Table 11",
)
register_table(
    "fedeba_table13_noise_fmnist",
    "Table 13, Fashion-MNIST (MLP) with symmetric label noise ε = 0.5 on the clients' training labels, and "
    "FedAvg at lr 0.02 (the matched-step control, paper profile)",
    "fedeba_fmnist_mlp.yaml",
    TABLE13 + TABLE13_MATCHED,
    short_profiles(
        mlp_profiles(300, (0,)),
        NOISE,
        subset_methods(TABLE13, ("FedAvg", "q-FFL (q=0.5)", "FedFV (α=0.1, τ_fv=10)", OURS)),
        "label noise 0.5; ",
    ),
    "Table 13",
)
register_table(
    "fedeba_table13_noise_cifar10",
    "Table 13, CIFAR-10 (CNN) with symmetric label noise ε = 0.5 (labelled Fashion-MNIST stand-in when "
    "CIFAR-10 is absent)",
    "fedeba_cifar10_cnn.yaml",
    TABLE13,
    stand_in_profiles(
        "cifar10",
        lambda: short_profiles(
            cnn_profiles(10, SMOKE_SHARDS),
            NOISE,
            subset_methods(TABLE13, ("FedAvg", OURS)),
            "label noise 0.5; ",
        ),
    ),
    "Table 13",
    CIFAR10,
)


# -- the clients' local optima of FAA (Table 17) -------------------------------------------------------------
def client_optimum_config(cfg: ExperimentConfig, steps: int) -> ExperimentConfig:
    """The run whose personal models are the clients' local optima x_i* of FAA (FedEBA+ Table 17, from
    FOCUS): algorithm ``local`` (every client trains on its own data only), one round of all N clients for
    ``steps`` local SGD steps from the run's initial model, at the run's batch size and learning rate."""
    if steps < 1:
        raise ValueError(f"steps={steps}: local training of the optimum needs at least 1 step (0: use zeros)")
    train = replace(
        cfg.train, rounds=1, clients_per_round=run_data(cfg).num_clients, local_steps=steps, local_epochs=None
    )
    return replace(
        cfg,
        name=f"{cfg.name} local optimum",
        algorithm=AlgorithmSpec("local"),
        train=train,
        eval=replace(cfg.eval, every=1),
        faults=FaultConfig(),
    )


def client_optimum_losses(cfg: ExperimentConfig, steps: int, results_dir: str | Path) -> np.ndarray:
    """F_i(x_i*): each client's mean test loss under its local optimum (``client_optimum_config``), run and
    cached in ``results_dir`` like any other run, and loaded like one (so a published page's run archive
    holds it, ``report/results.py``)."""
    optimum = client_optimum_config(cfg, steps)
    run_experiment(optimum, results_dir, progress=False)
    path = load_runs(results_dir, [optimum])["path"].iloc[0]
    return np.asarray(RunStore(path).records("evals")[-1]["personal_loss"], dtype=float)
