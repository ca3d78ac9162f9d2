"""FedEBA+ (Wang, Wang, Shi, Karimireddy & Tang, "Entropy-driven Fair and Effective Federated Learning"):
Tables 1, 3, 15, 16 and Figures 9, 14 (§6 and App. M of the paper).

Data: Fashion-MNIST is real (``configs/fedeba_fmnist_mlp.yaml``, the paper's exact Table 1 setting). CIFAR-10
is not available offline: when its pickle batches are not under the data root, the CIFAR-10 experiments swap
in a **labelled stand-in on real images with the same partition structure**: Fashion-MNIST (100 clients × 2
label shards, or the same Dirichlet split) with the paper's CIFAR-10 CNN adapted to 1×28×28 inputs
(``stand_in = "CIFAR-10"``, so tables compare it with that column: compare effects, not values).

Methods and hyper-parameters follow Table 7 (the configurations behind Table 1): q-FFL q = 0.5, FedMGDA+
ε = 0.03, PropFair M = 0.2 / ε = 0.2, TERM t = 0.1, Ditto λ = 0.5 (grid {0, 0.5}), AAggFF with the normal
CDF; FedEBA+ α = 0.9, τ = 0.1, θ = 0°; Prac-FedEBA+ θ = 15° (α, τ as FedEBA+'s: the paper gives none for
it). Ditto's row is its global model (the paper's numbers read so: variance 55.56 and best 5 % 95.79 are no
personal model's on two labels); its personal models are an extra row of the same run. FOCUS, lp-proj and
Rank-Core-Fed are not implemented (``NOT_IMPLEMENTED`` says why); their rows are kept, marked, in the tables.
PropFair at M = ε = 0.2 is, in the official code, FedAvg on 5× the loss (every positive loss is past the
threshold): at η = 0.1 it diverges in round 2, as FedAvg at η = 0.5 does, so its row is reported as diverged
and Table 7's M = 5 runs beside it (no paper row).

FedEBA+'s fair gradient g̃: with the literal units of Eqs. 10–11 FedEBA+ diverged in rounds 6–13, all 5
seeds, at paper scale (Table 1 FMNIST, lr 0.1, α = 0.9; ``readings.md`` gives the cause), so every
FedEBA+ run here uses ``fair_grad_units="update"`` (g̃ = the p̃-weighted one-step model update, the
algorithm's default, named in ``ALIGN`` so that every row says its reading) and Table 1 also runs the literal
reading as an extra row ("FedEBA+ (literal Eq. 11 units)", ``LITERAL``, no paper row).

CPU budget (2 cores; each notebook's ``quick`` profile within 30 minutes; the costs per round are in
``benchmarks/README.md``): ``quick`` runs 20 CNN rounds of 7 of Table 1's methods (``TABLE1_CNN_QUICK``; the
others keep their rows, "not run" at quick) and Fig. 14 with Table 1's MLP (each profile's description says
how).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from fairfl_core.data import stand_ins
from fairfl_core.experiments.profiles import (
    Experiment,
    Method,
    PaperTable,
    Profile,
    register_experiment,
    stand_in_profiles,
)

__all__ = [
    "NOT_IMPLEMENTED",
    "PAPER",
    "cnn_profiles",
    "mlp_profiles",
    "register_table",
    "short_profiles",
    "subset_methods",
]

PAPER = "fedeba_plus"
FMNIST = {"fashion_mnist": "FashionMNIST"}
CIFAR10 = {"cifar10": "CIFAR-10"}

# g̃ in the units of a one-step model update: the literal Eq. 10-11 units diverge at the paper's settings
# (fairfl_core/algorithms/fedeba_plus.py); every FedEBA+ run below uses it, Table 1 also runs the literal one.
ALIGN = {"fair_grad_units": "update"}
LITERAL = {"fair_grad_units": "gradient"}
GLOBAL_MODEL = ("eval.models=global",)  # report a personalised method's global model
FEDAVG = Method("FedAvg", "fedavg", {}, "FedAvg")
FEDEBA_PLUS = Method("FedEBA+", "fedeba+", ALIGN, "FedEBA+")
FEDEBA_PLUS_LITERAL = Method("FedEBA+ (literal Eq. 11 units)", "fedeba+", LITERAL)
TABLE1 = (
    FEDAVG,
    Method("FedSGD", "fedsgd", {}, "FedSGD"),
    Method("q-FFL (q=0.5)", "qffl", {"q": 0.5}, "q-FFL"),
    Method("FedMGDA+ (ε=0.03)", "fedmgda+", {"epsilon": 0.03}, "FedMGDA+"),
    # the paper's Ditto row reads as its global model's numbers (55.56 variance is no personal model's on two
    # labels); the personal models of the same run are an extra row
    Method("Ditto (λ=0.5)", "ditto", {"lam": 0.5}, "Ditto", overrides=GLOBAL_MODEL),
    Method("Ditto (λ=0.5, personal models)", "ditto", {"lam": 0.5}),
    Method("PropFair (M=0.2, ε=0.2)", "propfair", {"M": 0.2, "eps": 0.2}, "PropFair"),
    Method("PropFair (M=5, ε=0.2; Table 7 grid)", "propfair", {"M": 5.0, "eps": 0.2}),
    Method("TERM (t=0.1)", "term", {"t": 0.1}, "TERM"),
    # the doubly-robust estimate of the official AAggFF code, the implementation FedEBA+'s AAggFF row follows
    Method("AAggFF (normal CDF)", "aaggff", {"cdf": "normal", "dr_estimate": "as_coded"}, "AAggFF"),
    Method("Prac-FedEBA+ (θ=15°)", "prac_fedeba+", {"theta": 15.0}, "Prac-FedEBA+"),
    FEDEBA_PLUS,
    FEDEBA_PLUS_LITERAL,
)
# Controls for Table 1 (Fashion-MNIST). ``ALIGN``'s local step is x ← x − η(1 − α) g − α η² g̃, i.e.
# −0.01 g − 0.009 g̃ at the paper's η = 0.1, α = 0.9: an effective rate of about 0.02 on gradients of the same
# scale, five times below FedAvg's. FedAvg and FedEBA (① alone) at lr 0.02 show how much of FedEBA+'s lower
# variance that smaller step explains. The literal units at α ∈ {0.1, 0.3, 0.5} (Tables 16 and 7 print these
# α): the alignment term moves each client by α η K g̃ = α per round along one fixed direction.
MATCHED_STEP = ("train.lr=0.02",)
FEDAVG_MATCHED = Method("FedAvg (lr 0.02: matched-step control)", "fedavg", {}, overrides=MATCHED_STEP)
FEDEBA_MATCHED = Method(
    "FedEBA (① alone, lr 0.02: matched-step control)", "fedeba", {"tau": 0.1}, overrides=MATCHED_STEP
)
TABLE1_CONTROLS = (
    FEDAVG_MATCHED,
    FEDEBA_MATCHED,
    *(
        Method(f"FedEBA+ (literal Eq. 11 units, α={a})", "fedeba+", {**LITERAL, "alpha": a})
        for a in (0.1, 0.3, 0.5)
    ),
)
NOT_IMPLEMENTED = {
    "FOCUS": "not implemented: FOCUS's EM agent clustering (Chu et al. 2023) is not specified in the FedEBA+ "
    "paper and its own paper is not available offline",
    "lp-proj": "not implemented: the low-dimensional projection and infimal-convolution updates of lp-proj "
    "(Lin et al. 2022) are not given in the FedEBA+ paper and the original is not available offline",
    "Rank-Core-Fed": "not implemented: Rank-Core-Fed (Chaudhury et al. 2024) is not described in the FedEBA+ "
    "paper and the original is not available offline",
}
# Table 1's CIFAR-10 column at quick: the paper's methods whose CNN runs fit the 30-minute budget with the
# Fashion-MNIST column
TABLE1_CNN_QUICK = (
    "FedAvg",
    "q-FFL (q=0.5)",
    "FedMGDA+ (ε=0.03)",
    "PropFair (M=0.2, ε=0.2)",
    "TERM (t=0.1)",
    "Prac-FedEBA+ (θ=15°)",
    "FedEBA+",
)
THETAS = (0, 15, 30, 45, 90)
ALPHAS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)
TAUS = (0.05, 0.5, 1.0, 5.0)


def _alpha_tau(alpha: float, tau: float) -> str:
    """The paper's row label of Tables 7 and 16, e.g. "FedEBA+ α=0, τ=0.1", "FedEBA+ α=0.9, τ=5.0"."""
    return f"FedEBA+ α={alpha:g}, τ={tau}"


# Tables 3, 15 and 16 carry Table 1's matched-step controls too (the same configs: at quick and paper
# Tables 3 and 15 share Table 1's budget, so their runs are Table 1's): FedAvg, and FedEBA (EBA alone) where a
# claim compares with it, at the update reading's effective rate 0.02 (α = 0.9).
SENSITIVITY = (
    FEDAVG,
    *(
        Method(_alpha_tau(a, 0.1), "fedeba+", {**ALIGN, "alpha": a, "tau": 0.1}, _alpha_tau(a, 0.1))
        for a in ALPHAS
    ),
    *(
        Method(_alpha_tau(0.9, t), "fedeba+", {**ALIGN, "alpha": 0.9, "tau": t}, _alpha_tau(0.9, t))
        for t in TAUS
    ),
    FEDAVG_MATCHED,
    FEDEBA_MATCHED,
)
ABLATION = (
    FEDAVG,
    Method("FedAvg+① (FedEBA)", "fedeba", {"tau": 0.1}, "FedAvg+①"),
    Method(
        "FedAvg+② (alignment, uniform weights)", "fedeba+", {**ALIGN, "entropy_weights": False}, "FedAvg+②"
    ),
    Method("FedAvg+①+② (FedEBA+)", "fedeba+", ALIGN, "FedAvg+①+②"),
    FEDAVG_MATCHED,
    FEDEBA_MATCHED,
)
THETA = (
    FEDAVG,
    *(Method(f"FedEBA+ θ={t}°", "fedeba+", {**ALIGN, "theta": float(t)}, f"θ={t}°") for t in THETAS),
    FEDAVG_MATCHED,
)
ANNEALING = (
    FEDAVG,
    Method("FedEBA+ τ=1 constant", "fedeba+", {**ALIGN, "tau": 1.0}),
    *(
        Method(
            f"FedEBA+ τ₀=1 {s} (κ=0.01)",
            "fedeba+",
            {**ALIGN, "tau": 1.0, "tau_schedule": s, "tau_kappa": 0.01},
        )
        for s in ("linear", "concave", "convex")
    ),
)

# -- profiles ---------------------------------------------------------------------------------------------
SMOKE_SHARDS = ("data.partition_options.num_shards=2000", "data.pooled_test=local_union")
SMOKE_STEPS = ("train.local_steps=2",)
PAPER_SCALE = ("paper scale: 2000 rounds, 5 seeds, evaluation every 20 rounds", 2000, (0, 1, 2, 3, 4), 20)


# Why ``quick`` has two round budgets (each table's caption says its own and this reason).
QUICK_BUDGETS = (
    "quick runs Tables 1, 3 and 15 at 400 rounds × 3 seeds (a verdict needs 3 a side), the grids of Tables "
    "9–16 and Figs. 9 and 14 at 300 rounds × 1 seed and the CNN columns at 10–20 rounds × 1 seed, so that "
    "each notebook fits about 30 minutes on 2 CPU cores"
)


def mlp_profiles(quick_rounds: int, quick_seeds: tuple[int, ...]) -> dict[str, Profile]:
    return {
        "smoke": Profile(
            "CI check: 10% of the data (each client gets 2 label shards of 30 images; pooled test = the "
            "union of the client test splits), 2 local steps, 2 rounds, 1 seed; not comparable to the paper",
            2,
            (0,),
            2,
            (*SMOKE_SHARDS, *SMOKE_STEPS),
        ),
        "quick": Profile(
            f"real Fashion-MNIST, all 100 clients, paper protocol: {quick_rounds} of the 2000 rounds, "
            f"{len(quick_seeds)} of the 5 seeds ({QUICK_BUDGETS})",
            quick_rounds,
            quick_seeds,
            20,
        ),
        "paper": Profile(*PAPER_SCALE),
    }


def cnn_profiles(
    quick_rounds: int, smoke_data: tuple[str, ...], quick_mlp: bool = False
) -> dict[str, Profile]:
    """The CIFAR-10 CNN experiments' profiles; ``quick_mlp`` runs Table 1's MLP at ``quick`` (1 seed,
    ``quick_rounds`` rounds) where a CNN run of that length would not fit a 2-core CPU."""
    data = stand_ins.stand_in("cifar10")
    what = "stand-in (no CIFAR-10 here: Fashion-MNIST, same split), " if data else ""
    mlp = ("model.name=mlp", "model.options={}" if data else "model.options={in_features: 3072}")
    description, rounds, seeds, every = PAPER_SCALE
    if quick_mlp:
        quick = Profile(
            f"{what}Table 1's MLP instead of the CNN (2 CPU cores), {quick_rounds} of the 2000 rounds, "
            f"1 seed ({QUICK_BUDGETS})",
            quick_rounds,
            (0,),
            20,
            (*data, *mlp),
        )
    else:
        quick = Profile(
            f"{what}the paper's CNN and protocol, but only {quick_rounds} of the 2000 rounds and 1 seed, "
            f"far from converged ({QUICK_BUDGETS})",
            quick_rounds,
            (0,),
            10,
            data,
        )
    return {
        "smoke": Profile(
            f"CI check: {what}MLP instead of the CNN, 1 local step, 2 rounds, 1 seed; not comparable to "
            "the paper",
            2,
            (0,),
            2,
            (*data, *mlp, "train.local_steps=1", *smoke_data),
        ),
        "quick": quick,
        "paper": Profile(f"{what}{description}", rounds, seeds, every, data),
    }


def subset_methods(methods: tuple[Method, ...], labels: Iterable[str]) -> tuple[Method, ...]:
    """The ``methods`` whose label is in ``labels`` (in their order); an unknown label is an error."""
    keep = set(labels)
    unknown = keep - {m.label for m in methods}
    if unknown:
        raise ValueError(f"unknown method label(s) {sorted(unknown)}; labels: {[m.label for m in methods]}")
    return tuple(m for m in methods if m.label in keep)


def short_profiles(
    base: Mapping[str, Profile],
    overrides: tuple[str, ...] = (),
    short_methods: tuple[Method, ...] | None = None,
    what: str = "",
    short_at: tuple[str, ...] = ("smoke", "quick"),
) -> dict[str, Profile]:
    """``base`` (``mlp_profiles`` or ``cnn_profiles``) with ``overrides`` before each profile's own, the
    description prefixed by ``what`` and, at the ``short_at`` profiles, only ``short_methods`` (if given)."""
    out = {}
    for name, p in base.items():
        short = short_methods is not None and name in short_at
        note = f"; only {len(short_methods or ())} of the methods (all at paper)" if short else ""
        out[name] = replace(
            p,
            description=f"{what}{p.description}{note}",
            overrides=(*overrides, *p.overrides),
            methods=short_methods if short else p.methods,
        )
    return out


# -- the experiments --------------------------------------------------------------------------------------
def register_table(
    name: str,
    description: str,
    config: str,
    methods: tuple[Method, ...],
    profiles: Mapping[str, Profile],
    table: str | None = None,
    datasets: Mapping[str, str] = FMNIST,
) -> None:
    paper = PaperTable(PAPER, table, datasets) if table else None
    register_experiment(Experiment(name, f"FedEBA+ {description}", config, profiles, methods, paper))


register_table(
    "fedeba_table1_fmnist",
    "Table 1, Fashion-MNIST (MLP): the 10 implemented methods of the 13, plus FedEBA+ with the literal Eq. 11"
    " units (100 clients × 2 label shards, 10 per round, K=10 steps of batch 50, lr 0.1 decayed 0.999)",
    "fedeba_fmnist_mlp.yaml",
    TABLE1 + TABLE1_CONTROLS,
    mlp_profiles(400, (0, 1, 2)),
    "Table 1",
)
register_table(
    "fedeba_table1_cifar10",
    "Table 1, CIFAR-10 (CNN): the same methods and protocol (labelled Fashion-MNIST stand-in when CIFAR-10 "
    "is absent)",
    "fedeba_cifar10_cnn.yaml",
    TABLE1,
    stand_in_profiles(
        "cifar10",
        lambda: short_profiles(
            cnn_profiles(20, SMOKE_SHARDS),
            short_methods=subset_methods(TABLE1, TABLE1_CNN_QUICK),
            short_at=("quick",),
        ),
    ),
    "Table 1",
    CIFAR10,
)
register_table(
    "fedeba_table3_theta",
    "Table 3, Fashion-MNIST: the fair angle θ ∈ {0, 15, 30, 45, 90}° (α=0.9, τ=0.1) and the extra "
    "communication it costs, with FedAvg as reference and FedAvg at lr 0.02 (the matched-step control)",
    "fedeba_fmnist_mlp.yaml",
    THETA,
    mlp_profiles(400, (0, 1, 2)),
    "Table 3",
)
register_table(
    "fedeba_table15_ablation",
    "Table 15, Fashion-MNIST: FedAvg, + EBA aggregation (①), + alignment with uniform weights (②), both "
    "(FedEBA+), and FedAvg and ① at lr 0.02 (matched-step controls)",
    "fedeba_fmnist_mlp.yaml",
    ABLATION,
    mlp_profiles(400, (0, 1, 2)),
    "Table 15",
)
register_table(
    "fedeba_table16_sensitivity",
    "Table 16 (+ Table 7's α=0, 0.5, 0.9 rows), Fashion-MNIST: α ∈ {0, …, 0.9} at τ=0.1 and τ ∈ {0.05, …, 5} "
    "at α=0.9, and FedAvg and α=0 (FedEBA) at lr 0.02 (matched-step controls)",
    "fedeba_fmnist_mlp.yaml",
    SENSITIVITY,
    mlp_profiles(300, (0,)),
    "Table 16",
)
register_table(
    "fedeba_fig9_annealing",
    "Fig. 9, Fashion-MNIST: constant τ against linearly, concavely and convexly annealed τ_t = τ₀/(1+κt)^a",
    "fedeba_fmnist_mlp.yaml",
    ANNEALING,
    mlp_profiles(300, (0,)),
)
register_table(
    "fedeba_fig14_dirichlet",
    "Fig. 14, CIFAR-10 (CNN) under Dirichlet(α) label skew, α ∈ {0.1, 0.3, 0.5, 0.8, 1.0}: FedAvg vs FedEBA+ "
    "(labelled Fashion-MNIST stand-in when CIFAR-10 is absent)",
    "fedeba_cifar10_dirichlet_cnn.yaml",
    (FEDAVG, FEDEBA_PLUS),
    stand_in_profiles(
        "cifar10",
        lambda: cnn_profiles(300, ("data.pooled_test=local_union", "data.test_frac=0.05"), quick_mlp=True),
    ),
)
