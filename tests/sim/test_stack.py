"""Step-level local training (``sim/client_stack.py``, ``sim/batched_trainer.py``), the step terms
(``sim/local.py``) and the in-training statistics (``sim/statistics.py``), in float64 against plain PyTorch
loops."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fairfl_core.models.cnn import ConvLayer, ConvNet
from fairfl_core.models.mlp import MLP
from fairfl_core.sim.engine import Engine
from fairfl_core.sim.local import LocalSpec, StepTerm, masked_mean_loss
from fairfl_core.sim.statistics import ActivationMean, StepLosses
from tests.conftest import tiny_federated
from tests.rounding import assert_close

FORMS = [("batched", "bmm"), ("batched", "vmap"), ("batched", "loop"), ("sequential", "auto")]


def _model(kind="mlp"):
    torch.manual_seed(0)
    if kind == "mlp":
        return MLP(16, [12], 4)
    return ConvNet(in_channels=1, input_size=4, convs=[ConvLayer(3, 3, 1, False)], hidden=[8], num_classes=4)


def _engine(kind="batched", client_axis="auto", model="mlp", **kw):
    return Engine(
        _model(model), tiny_federated(), kind=kind, dtype=torch.float64, client_axis=client_axis, **kw
    )


def _spec(**changes):
    base = dict(lr=0.1, batch_size=5, steps=4, momentum=0.9, weight_decay=1e-3, prox_mu=0.1)
    return LocalSpec(**{**base, **changes})


CLIENTS = np.array([0, 2, 5])  # 7, 17 and 32 samples: at batch size 5, up to 7 steps an epoch


def bound(steps: int, extra: int = 0) -> dict:
    """The rounding bound (tests/rounding.py) between the trainer and another computation of the same
    training (a subset of rows, another trainer, a hand loop): sums over at most the tiny fixture's 117
    training samples, 7 reductions a local step (2 layers and the loss forward and back, the update) for
    ``steps`` steps, and ``extra`` reductions after them."""
    return dict(terms=117, depth=7 * steps + extra)


@pytest.mark.parametrize("kind,client_axis", FORMS)
@pytest.mark.parametrize("work", [dict(steps=4), dict(steps=None, epochs=2)])
def test_single_steps_equal_one_call(kind, client_axis, work):
    engine = _engine(kind, client_axis)
    spec = _spec(**work, grad_scale=torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64))
    whole = engine.train(CLIENTS, engine.init_params(), spec, seed=3)
    stack = engine.stack(CLIENTS, engine.init_params(), spec, seed=3)
    for _ in range(stack.schedule.num_steps):
        stack.step()
    stepped = stack.result()
    assert torch.equal(stepped.params, whole.params)
    assert torch.equal(stepped.train_loss, whole.train_loss)


@pytest.mark.parametrize("kind,client_axis", FORMS)
def test_any_interleaving_of_row_subsets_gives_each_client_its_own_trajectory(kind, client_axis):
    """Rows step on their own stream only: random subsets until every schedule is exhausted equal the
    lockstep run (momentum, proximal term and a per-client shift carried per row)."""
    engine = _engine(kind, client_axis)
    shift = 0.01 * torch.randn(
        3, engine.space.size, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    spec = _spec(steps=None, epochs=2, grad_shift=shift)
    whole = engine.train(CLIENTS, engine.init_params(), spec, seed=5)
    stack = engine.stack(CLIENTS, engine.init_params(), spec, seed=5)
    rng = np.random.default_rng(0)
    before = stack.flat_params()
    stack.step(np.array([1]))
    after = stack.flat_params()
    assert torch.equal(after[[0, 2]], before[[0, 2]]) and not torch.equal(after[1], before[1])
    while (stack.cursor < stack.schedule.num_steps).any():
        stack.step(np.flatnonzero(rng.random(3) < 0.5))
    # subsets of rows are other batch shapes: 2 epochs of 7 steps, and the loss's mean over them
    assert_close(stack.result().params, whole.params, **bound(14), what="parameters")
    assert_close(stack.result().train_loss, whole.train_loss, **bound(14, 1), what="train loss")
    assert (stack.steps_taken() == stack.schedule.active.sum(axis=1)).all()


@pytest.mark.exact_arithmetic(
    "each row is computed alone at the same shapes either way; the objective's running sum takes one "
    "index_add_ per row (distinct indices: one addition each, exact on every CPU), which the jitter perturbs "
    "as if it summed"
)
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_the_loop_axis_leaves_idle_rows_out_with_the_same_bits(model):
    """Clients of 7, 17 and 32 samples for 2 epochs take 4, 8 and 14 steps (13: one idle step in the
    middle, as a schedule may have): on the loop axis the stack
    computes only the rows that step (``skips_idle_rows``), and every number equals the lockstep run that
    carries the idle rows masked (each row is its own computation either way): parameters, momentum,
    proximal drift, a per-client shift, the objective and both in-training statistics."""
    engine = _engine("batched", "loop", model=model)
    shift = 0.01 * torch.randn(
        3, engine.space.size, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    spec = _spec(steps=None, epochs=2, grad_shift=shift, statistics=(ActivationMean(), StepLosses()))
    results = []
    for skip in (True, False):
        stack = engine.stack(CLIENTS, engine.init_params(), spec, seed=4)
        assert stack.skips_idle_rows
        stack.skips_idle_rows = skip
        stack.schedule.active[2, 3] = False  # a hole: client 5 idles at step 3 and steps again at step 4
        for _ in range(stack.schedule.num_steps):
            stack.step()
        results.append(stack.result())
    assert list(stack.schedule.active.sum(axis=1)) == [4, 8, 13]
    skipped, carried = results
    assert torch.equal(skipped.params, carried.params)
    assert torch.equal(skipped.train_loss, carried.train_loss)
    assert skipped.stats.keys() == carried.stats.keys()
    for name in skipped.stats:  # step losses are NaN after a client's last step
        torch.testing.assert_close(skipped.stats[name], carried.stats[name], rtol=0, atol=0, equal_nan=True)
    assert (stack.steps_taken() == [4, 8, 13]).all()


def test_batched_axes_keep_idle_rows_in_the_call():
    for axis in ("bmm", "vmap"):
        engine = _engine("batched", axis)
        assert not engine.stack(CLIENTS, engine.init_params(), _spec(), seed=0).skips_idle_rows


def test_an_exhausted_row_stays_put():
    engine = _engine()
    stack = engine.stack(CLIENTS, engine.init_params(), _spec(steps=2), seed=0)
    stack.step()
    stack.step()
    done = stack.flat_params()
    stack.step(np.array([0, 2]))
    assert torch.equal(stack.flat_params(), done)
    assert (stack.steps_taken() == 2).all()


def test_rows_must_be_distinct_stacked_clients():
    engine = _engine()
    stack = engine.stack(CLIENTS, engine.init_params(), _spec(), seed=0)
    for rows in ([0, 0], [3], [-1]):
        with pytest.raises(ValueError, match=r"distinct indices in \[0, 3\)"):
            stack.step(np.array(rows))


def test_mix_applies_the_matrix_to_the_stacked_parameters():
    engine = _engine()
    stack = engine.stack(CLIENTS, engine.init_params(), _spec(), seed=0)
    stack.step()
    x = stack.flat_params()
    W = torch.full((3, 3), 1 / 3, dtype=torch.float64)
    stack.mix(lambda t: (W @ t.flatten(1)).view_as(t))
    # Σ_j fl(1/3) x_j against (Σ_j x_j) / 3: 3 terms, 4 roundings with the rounded 1/3, of sizes ≤ max|x|
    mean = x.mean(0, keepdim=True).expand(3, -1)
    assert_close(stack.flat_params(), mean, terms=4, scale=float(x.abs().max()))


class Scaled(StepTerm):
    """An algorithm-defined term: δ = c · w (per-client c), with a per-client gradient scale 1/(1 + c)."""

    def __init__(self, c):
        self.c = c

    def rows(self, rows):
        return Scaled(self.c[rows])

    def scale(self, rows):
        return 1 / (1 + (self.c if rows is None else self.c[rows]))

    def drift(self, ws, rows):
        c = self.c if rows is None else self.c[rows]
        return [w * c.view(-1, *[1] * (w.dim() - 1)) for w in ws]


def smoothed_loss(logits, y):
    """Label-smoothed cross-entropy (ε = 0.1) per sample: not covered by the closed-form MLP gradient."""
    return F.cross_entropy(logits, y, reduction="none", label_smoothing=0.1)


@pytest.mark.parametrize("client_axis", ["bmm", "vmap", "loop"])
def test_a_new_term_and_a_new_loss_reach_every_trainer(client_axis):
    spec = _spec(terms=[Scaled(torch.tensor([0.1, 0.0, 0.3], dtype=torch.float64))], loss=smoothed_loss)
    out = {}
    for kind in ("batched", "sequential"):
        engine = _engine(kind, client_axis if kind == "batched" else "auto", chunk_size=2)
        out[kind] = engine.train(CLIENTS, engine.init_params(), spec, seed=2)
    assert_close(out["batched"].params, out["sequential"].params, **bound(4), what="parameters")  # 4 steps
    plain = _engine("batched", client_axis)
    unchanged = plain.train(CLIENTS, plain.init_params(), _spec(), seed=2)
    assert (out["batched"].params - unchanged.params).abs().max() > 1e-4


def _plain_loop(engine, spec, seed):
    """Each client by hand: its schedule, the model, the step; activations and losses recorded."""
    schedule = engine.schedule(CLIENTS, spec, seed)
    model = _model().double()
    acts, losses = [], []
    for k in range(len(CLIENTS)):
        w = engine.init_params().clone().requires_grad_()
        done = int(schedule.active[k].sum())
        last = range(done - int(schedule.epoch_steps[k]), done)
        total, count, trace = 0, 0, []
        for s in range(done):
            idx, m = schedule.index[k, s], schedule.mask[k, s].double()
            x, y = engine.data.inputs(idx, torch.float64), engine.data.y[idx]
            params = engine.space.unflatten(w)
            h = torch.func.functional_call(model, params, (x,), strict=False)
            feats = torch.func.functional_call(
                model.body, {n[5:]: v for n, v in params.items() if n.startswith("body.")}, (x,)
            )
            loss = masked_mean_loss(h, y, m)
            if s in last:
                total = total + (feats.log_softmax(-1) * m[:, None]).sum(0)
                count += m.sum()
            (g,) = torch.autograd.grad(loss, w)
            with torch.no_grad():
                w -= spec.lr * g
            trace.append(float(loss.detach()))
        acts.append((total / count).detach())
        losses.append(trace + [float("nan")] * (schedule.num_steps - done))
    return torch.stack(acts), torch.tensor(losses, dtype=torch.float64)


@pytest.mark.parametrize("kind,client_axis", FORMS)
def test_activation_vector_and_step_losses_equal_a_hand_computation(kind, client_axis):
    spec = LocalSpec(lr=0.1, batch_size=5, epochs=3, statistics=(ActivationMean(), StepLosses()))
    engine = _engine(kind, client_axis)
    result = engine.train(CLIENTS, engine.init_params(), spec, seed=4)
    acts, losses = _plain_loop(engine, spec, 4)
    assert result.stats["activation"].shape == (3, 12)
    # 3 epochs of up to 7 steps; the activation then takes the layer, log_softmax and the mean over samples
    assert_close(result.stats["activation"], acts, **bound(21, 3), what="activation")
    assert_close(result.stats["step_losses"], losses, **bound(21), what="step losses")  # NaN after the last


def test_activation_window_all_averages_every_step_and_transform_none_keeps_h():
    engine = _engine()
    spec = LocalSpec(lr=0.0, batch_size=5, epochs=2, statistics=(ActivationMean("none", "all"),))
    result = engine.train(CLIENTS, engine.init_params(), spec, seed=0)
    # lr 0: the model never moves, so every epoch sees each sample once at the same model; the statistic sums
    # over the steps' minibatches, features over the whole set: the layer, the sum and the division
    assert_close(result.stats["activation"], engine.features(engine.init_params(), CLIENTS), **bound(0, 3))


def test_statistics_follow_their_rows_through_faults_and_chunks():
    spec = LocalSpec(lr=0.1, batch_size=5, steps=3, statistics=(StepLosses(),))
    whole = _engine().train(CLIENTS, _engine().init_params(), spec, seed=1)
    chunked = _engine(chunk_size=2).train(CLIENTS, _engine().init_params(), spec, seed=1)
    # chunks of 2 and 1 against one batch of 3: another computation, at the rounding bound of
    # tests/rounding.py (the tiny fixture's sums of at most 117 samples, 7 reductions a step for 3 steps)
    assert_close(whole.stats["step_losses"], chunked.stats["step_losses"], terms=117, depth=7 * 3)
    kept = whole.rows(torch.tensor([2, 0]))
    assert torch.equal(kept.stats["step_losses"], whole.stats["step_losses"][[2, 0]])


def test_bad_statistic_options_are_named():
    with pytest.raises(ValueError, match="transform must be one of"):
        ActivationMean(transform="relu")
    with pytest.raises(ValueError, match="window must be one of"):
        ActivationMean(window="first_epoch")


@pytest.mark.parametrize("kind,client_axis", FORMS)
def test_gradients_equal_a_hand_computation_and_leave_the_parameters(kind, client_axis):
    """gradients(rows): each row's step direction at its parameters on its next minibatch (here the plain
    gradient), streams advanced, parameters unmoved; add() then takes the step: the same as step()."""
    spec = LocalSpec(lr=0.1, batch_size=5, steps=3)
    engine = _engine(kind, client_axis)
    stack = engine.stack(CLIENTS, engine.init_params(), spec, seed=6)
    before = stack.flat_params()
    g = stack.gradients(np.array([0, 2]))
    assert torch.equal(stack.flat_params(), before) and stack.cursor.tolist() == [1, 0, 1]
    model = _model().double()
    for row, k in ((0, 0), (1, 2)):
        idx, m = stack.schedule.index[k, 0], stack.schedule.mask[k, 0].double()
        w = before[k].clone().requires_grad_()
        h = torch.func.functional_call(
            model, engine.space.unflatten(w), (engine.data.inputs(idx, torch.float64),)
        )
        (by_hand,) = torch.autograd.grad(masked_mean_loss(h, engine.data.y[idx], m), w)
        assert_close(g[row], by_hand, **bound(1), what=f"gradient of row {row}")  # a client alone
    stack.add(-spec.lr * torch.stack([g[0], torch.zeros_like(g[0]), g[1]]))
    stepped = engine.stack(CLIENTS, engine.init_params(), spec, seed=6)
    stepped.step(np.array([0, 2]))
    # gradients() against step(): the gradient, and the update in another order of operations
    assert_close(stack.flat_params(), stepped.flat_params(), **bound(1, 1), what="parameters")
    assert torch.equal(stack.result().train_loss, stepped.result().train_loss)


def test_gradients_of_an_exhausted_row_are_zero():
    stack = _engine().stack(CLIENTS, _engine().init_params(), _spec(steps=1, momentum=0.0), seed=0)
    stack.step()
    assert torch.equal(stack.gradients(), torch.zeros(3, stack.trainer.space.size, dtype=torch.float64))


def test_a_step_term_used_before_bind_names_the_problem():
    from fairfl_core.sim.local import Shift

    with pytest.raises(RuntimeError, match=r"used before bind\(space, start\)"):
        Shift(torch.zeros(3)).drift([torch.zeros(2, 3)], None)
