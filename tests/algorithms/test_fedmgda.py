import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.fedmgda import (
    FedMGDAHyper,
    box_centre,
    min_norm_in_box,
    normalise_rows,
    project_capped_simplex,
)
from tests.algorithms.conftest import server_round, tiny_sim
from tests.rounding import assert_close, reduction_tolerance

# λ from min_norm_in_box is a QP solver's output: its certificate is a duality gap f(λ) − f(λ*) ≤ 1e-13
# (QP_TOL, the solver's default), which bounds ‖λ − λ*‖ by √(1e-13 / μ) for G ⪰ μI, and its exact active-set
# step usually lands on λ* itself. The tolerances of 1e-9 on λ below are that optimisation's, not rounding.
QP_TOL = 1e-13


def test_capped_simplex_projection_by_hand():
    # unit box: Σ (v − τ) = 1.2 − 3τ = 1 → τ = 1/15 → (8, 5, 2)/15
    # the projection: φ sums 3 clipped values (at most Σ upper), τ interpolates between breakpoints, then the
    # shift: depth 3 of 3 terms, of magnitude Σ upper
    x = project_capped_simplex(np.array([0.6, 0.4, 0.2]), np.zeros(3), np.ones(3))
    assert_close(x, np.array([8, 5, 2]) / 15, terms=3, depth=3, scale=3.0)
    # caps 0.5: x₁ = 0.5 (capped), 0.5 + (0.3 − τ) = 1 → τ = −0.2, x₃ = clip(−0.2 + 0.2) = 0
    x = project_capped_simplex(np.array([0.9, 0.3, -0.2]), np.zeros(3), np.full(3, 0.5))
    assert_close(x, [0.5, 0.5, 0.0], terms=3, depth=3, scale=1.5)
    with pytest.raises(ValueError, match="does not meet the simplex"):
        project_capped_simplex(np.zeros(3), np.zeros(3), np.full(3, 0.2))


def test_orthogonal_unit_vectors_get_equal_weights():
    # ‖Σ λ_k e_k‖² = Σ λ_k², minimised on the simplex at λ = 1/3 (ε = 1: no box)
    lam = min_norm_in_box(np.eye(3), np.array([0.5, 0.3, 0.2]), eps=1.0)
    assert np.allclose(lam, 1 / 3, atol=1e-9)  # the QP's optimisation tolerance (QP_TOL), not rounding


def test_box_around_the_data_weights_by_hand():
    # G = I, p = (0.5, 0.3, 0.2), ε = 0.1: boxes [0.4, 0.6], [0.2, 0.4], [0.1, 0.3]; Σ λ² wants equal
    # weights: λ₁ sits at its lower bound 0.4, the other two share 0.6 equally → (0.4, 0.3, 0.3)
    lam = min_norm_in_box(np.eye(3), np.array([0.5, 0.3, 0.2]), eps=0.1)
    assert np.allclose(lam, [0.4, 0.3, 0.3], atol=1e-9)  # the QP's optimisation tolerance (QP_TOL)


def test_two_unit_vectors_by_hand():
    # d₁ = (1, 0), d₂ = (0.6, 0.8): ‖λ d₁ + (1 − λ) d₂‖² = λ² + (1 − λ)² + 1.2 λ (1 − λ), minimal at λ = ½
    # (value 0.8 = ‖(0.8, 0.4)‖²); with p = (0.8, 0.2), ε = 0.1 the box λ₁ ∈ [0.7, 0.9] clips it to 0.7
    d = np.array([[1.0, 0.0], [0.6, 0.8]])
    gram = d @ d.T
    lam = min_norm_in_box(gram, np.array([0.5, 0.5]), eps=1.0)
    assert np.allclose(lam, [0.5, 0.5], atol=1e-9)  # the QP's optimisation tolerance (QP_TOL)
    # f(λ) − f(λ*) ≤ QP_TOL by the solver's certificate, plus the rounding of G (2 terms) and of λᵀGλ (2 more
    # reductions of 2 terms), all of magnitude 1
    assert abs(lam @ gram @ lam - 0.8) <= QP_TOL + reduction_tolerance(terms=2, depth=3)
    assert np.allclose(min_norm_in_box(gram, np.array([0.8, 0.2]), eps=0.1), [0.7, 0.3], atol=1e-9)  # QP_TOL


def test_epsilon_zero_returns_the_data_weights_exactly():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(5, 7))
    p = rng.dirichlet(np.ones(5))
    assert np.array_equal(min_norm_in_box(d @ d.T, p, eps=0.0), p)


def _brute_force(gram, lower, upper, step=0.001):
    """Smallest λᵀGλ over a grid of the 3-simplex, restricted to the box."""
    a, b = np.meshgrid(np.arange(0, 1 + step / 2, step), np.arange(0, 1 + step / 2, step), indexing="ij")
    lam = np.stack([a.ravel(), b.ravel(), 1 - a.ravel() - b.ravel()], axis=1)
    lam = lam[((lam >= lower - 1e-12) & (lam <= upper + 1e-12)).all(1)]
    return np.einsum("ni,ij,nj->n", lam, gram, lam).min()


@pytest.mark.parametrize("seed", range(4))
def test_qp_matches_brute_force_and_scipy(seed):
    rng = np.random.default_rng(seed)
    # 3 clients: brute force on a grid of step 0.001 (our optimum may only be lower, and by at most about
    # ‖∇f‖ × step ≤ 2 × 2 × 0.001: the objective's slope times the grid spacing)
    d = normalise_rows(torch.as_tensor(rng.normal(size=(3, 4)) + 1.0)).numpy()
    p, eps = rng.dirichlet(np.ones(3)), [0.05, 0.2, 1.0, 0.1][seed]
    lower, upper = np.maximum(0, p - eps), np.minimum(1, p + eps)
    lam = min_norm_in_box(d @ d.T, p, eps)
    # feasible up to the solver's own slack (its exact step accepts |Σλ − 1| and bounds to 1e-12), not
    # rounding
    assert (
        lam.sum() == pytest.approx(1, abs=1e-12)
        and (lam >= lower - 1e-12).all()
        and (lam <= upper + 1e-12).all()
    )
    assert 0 <= _brute_force(d @ d.T, lower, upper) - lam @ d @ d.T @ lam < 4e-3
    # 10 clients, one direction duplicated (singular G): SLSQP from scipy, which may violate Σλ = 1 slightly
    d = normalise_rows(torch.as_tensor(rng.normal(size=(10, 6)) + rng.normal(size=6))).numpy()
    d[3] = d[7]
    gram, p = d @ d.T, rng.dirichlet(np.ones(10))
    lower, upper = np.maximum(0, p - eps), np.minimum(1, p + eps)
    lam = min_norm_in_box(gram, p, eps)
    ref = minimize(
        lambda x: x @ gram @ x,
        p,
        jac=lambda x: 2 * gram @ x,
        method="SLSQP",
        bounds=list(zip(lower, upper, strict=True)),
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        options={"ftol": 1e-14},
    )
    assert lam @ gram @ lam <= ref.fun + 1e-8  # SLSQP's own optimisation tolerance, not rounding
    assert (  # the solver's feasibility slack, as above
        lam.sum() == pytest.approx(1, abs=1e-12)
        and (lam >= lower - 1e-12).all()
        and (lam <= upper + 1e-12).all()
    )


def test_normalise_rows_keeps_zero_updates_zero():
    d = normalise_rows(torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float64))
    assert torch.equal(d, torch.tensor([[0.6, 0.8], [0.0, 0.0]], dtype=torch.float64))


def test_defaults_follow_the_reference_code():
    # ε = 0.1 (FLGo's default, in AAggFF's grid {0.1, 0.5, 1.0}); box centred on 1/m (AAggFF's FedMGDA)
    hp = FedMGDAHyper()
    assert (hp.epsilon, hp.box_centre, hp.server_lr) == (0.1, "uniform", 1.0)
    assert np.array_equal(box_centre("uniform", np.array([7.0, 12.0], dtype=np.float32)), [0.5, 0.5])
    assert np.array_equal(box_centre("weights", np.array([7.0, 12.0])), [7 / 19, 12 / 19])  # 7 + 12, divided


@pytest.mark.parametrize(
    ("centre", "lam"),
    [
        # uniform: boxes [0.4, 0.6]; ‖λ₁ e₁ + λ₂ e₂‖² = λ₁² + λ₂² is least at (½, ½), inside them
        ("uniform", (0.5, 0.5)),
        # data weights (7, 12)/19: boxes [0.268, 0.468] and [0.532, 0.732]; λ₁ stops at 7/19 + 0.1
        ("weights", (7 / 19 + 0.1, 12 / 19 - 0.1)),
    ],
)
def test_box_centre_by_hand(centre, lam):
    sim = tiny_sim()
    algo = build_algorithm("fedmgda+", sim, {"epsilon": 0.1, "box_centre": centre, "server_lr": 0.5})
    w = algo.w
    e1, e2 = torch.zeros_like(w), torch.zeros_like(w)
    e1[0], e2[1] = 1.0, 1.0
    params = torch.stack([w - 2.0 * e1, w - 3.0 * e2])  # normalised updates e₁, e₂; clients of 7 and 12
    clients = np.array([0, 1])
    update = server_round(algo, clients, params)
    # λ from the QP, and the step with it: the optimisation tolerance (QP_TOL), not rounding
    assert np.allclose(update.diagnostics["lambda"], lam, atol=1e-9)
    assert torch.allclose(update.w, w - 0.5 * (lam[0] * e1 + lam[1] * e2), atol=1e-9)


def test_aggregate_by_hand():
    sim = tiny_sim()
    algo = build_algorithm("fedmgda+", sim, {"epsilon": 0.0, "box_centre": "weights", "server_lr": 0.5})
    w = algo.w
    e = torch.zeros_like(w)
    e[0] = 1.0
    params = torch.stack([w - 3.0 * e, w + 2.0 * e])  # updates w − w_k = 3e, −2e → normalised e, −e
    clients = np.array([0, 1])  # 7 and 12 samples: λ = p = (7, 12)/19
    new = server_round(algo, clients, params).w
    # w − 0.5 (7/19 e − 12/19 e) = w + 0.5 · 5/19 e: λ = p exactly (ε = 0); the updates' differences, their
    # norms over P = 256 parameters, the weighted sum of 2 and the step, of the magnitude |w| + 3
    scale = float(w.abs().max()) + 3
    assert_close(new, w + 0.5 * 5 / 19 * e, terms=256, depth=3, scale=scale, what="w")


def test_epsilon_zero_round_is_the_weighted_mean_of_normalised_updates():
    sim = tiny_sim()
    algo = build_algorithm("fedmgda+", sim, {"epsilon": 0.0, "box_centre": "weights"})
    w0 = algo.w.clone()
    out = algo.round(0)
    local = sim.engine.train(out.selected, w0, sim.local_spec(0), sim.seed_for(0, "batches")).params
    d = (w0 - local) / (w0 - local).norm(dim=1, keepdim=True)
    p = torch.as_tensor(sim.train_sizes[out.selected] / sim.train_sizes[out.selected].sum())
    # the same training; the server's normalised updates (norms over P = 256), weighted sum of 3 and step vs
    # by hand, of the magnitude |w| + 1 (unit directions)
    assert_close(algo.w, w0 - p @ d, terms=256, depth=3, scale=float(w0.abs().max()) + 1, what="w")
    assert np.array_equal(out.diagnostics["lambda"], p.numpy())  # ε = 0: λ = clip(·, p, p) = p exactly


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="epsilon must be non-negative"):
        build_algorithm("fedmgda+", tiny_sim(), {"epsilon": -0.1})
    with pytest.raises(ValueError, match=r"box_centre must be one of \('uniform', 'weights'\)"):
        build_algorithm("fedmgda+", tiny_sim(), {"box_centre": "data"})
    with pytest.raises(ValueError, match="server_lr must be positive"):
        build_algorithm("fedmgda+", tiny_sim(), {"server_lr": 0.0})
    with pytest.raises(ValueError, match="gram must be"):
        min_norm_in_box(np.eye(2), np.ones(3) / 3, 0.1)
