"""DAdam (AFGA Table 8): the moments by hand, and without gossip every client runs its own AMSGrad on its
own minibatch stream across rounds, checked against a plain loop."""

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.dadam import dadam_moments
from fairfl_core.sim.local import masked_mean_loss
from tests.algorithms.conftest import tiny_model, tiny_sim
from tests.rounding import assert_close

# DAdam's engine (stacked, or one client after another) vs the plain per-client loop with autograd: the same
# float64 arithmetic in other shapes. The longest sum is a first-layer dot product over the 16 features
# (batches of 4); 7 reductions a local step (2 layers and the loss forward and back, the AMSGrad update).


def plain_bound(rounds: int, steps: int = 3) -> dict:
    return dict(terms=16, depth=7 * rounds * steps)


def test_moments_by_hand():
    g = torch.tensor([[1.0, -2.0]])
    m, v, v_hat = dadam_moments(
        g, torch.zeros(1, 2), torch.zeros(1, 2), torch.tensor([[0.0, 5.0]]), 0.5, 0.75
    )
    assert m.tolist() == [[0.5, -1.0]] and v.tolist() == [[0.25, 1.0]] and v_hat.tolist() == [[0.25, 5.0]]


def _plain_dadam(sim, rounds, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """Every client alone (W = I): its minibatches of each round's schedule, autograd, AMSGrad by hand."""
    model = tiny_model().double()
    everyone = np.arange(sim.num_clients)
    x = sim.engine.init_params().expand(sim.num_clients, -1).clone()
    m, v, v_hat = torch.zeros_like(x), torch.zeros_like(x), torch.zeros_like(x)
    for t in range(rounds):
        schedule = sim.engine.schedule(everyone, sim.local_spec(t), sim.seed_for(t, "batches"))
        for s in range(schedule.num_steps):
            for k in everyone:
                if not schedule.active[k, s]:
                    continue
                idx, mask = schedule.index[k, s], schedule.mask[k, s].double()
                w = x[k].clone().requires_grad_()
                h = torch.func.functional_call(
                    model, sim.engine.space.unflatten(w), (sim.engine.data.inputs(idx, torch.float64),)
                )
                (g,) = torch.autograd.grad(masked_mean_loss(h, sim.engine.data.y[idx], mask), w)
                m[k] = beta1 * m[k] + (1 - beta1) * g
                v[k] = beta2 * v[k] + (1 - beta2) * g**2
                v_hat[k] = torch.maximum(v_hat[k], v[k])
                x[k] = x[k] - lr * m[k] / (v_hat[k].sqrt() + eps)
    return x


@pytest.mark.parametrize("kind", ["batched", "sequential"])
def test_without_gossip_every_client_runs_its_own_amsgrad(kind):
    sim = tiny_sim(kind=kind, lr=0.01)
    algo = build_algorithm("dadam", sim, {"topology": "disconnected"})
    for t in range(2):
        algo.round(t)
    expected = _plain_dadam(tiny_sim(lr=0.01), 2, 0.01)
    assert_close(algo.state["models"], expected, **plain_bound(2), what="client models")
    # and the mean of the 6 models: one more reduction
    bound = plain_bound(2)
    assert_close(algo.eval_params(), expected.mean(0), terms=16, depth=bound["depth"] + 1, what="mean model")


def test_gossip_combines_before_the_adaptive_step():
    """One iteration on the complete graph: every client ends at the mean of the starting models (all equal)
    minus its own adaptive step, so the network mean moves by the mean step."""
    sim = tiny_sim(local_steps=1, lr=0.01)
    algo = build_algorithm("dadam", sim, {"topology": "complete"})
    algo.round(0)
    alone = _plain_dadam(tiny_sim(local_steps=1, lr=0.01), 1, 0.01)
    # W x = x when every model is x_0, up to the mixing's sum of 6 terms: one step, and the gossip
    assert_close(algo.state["models"], alone, terms=16, depth=7 + 1, what="client models")
    assert algo.round(1).diagnostics["consensus_error"] > 0


@pytest.mark.parametrize("params,match", [({"beta2": 1.0}, "beta2"), ({"eps": 0.0}, "eps")])
def test_bad_moments_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        build_algorithm("dadam", tiny_sim(), params)
