"""The example algorithm of ``fairfl_core/algorithms/README.md``, executed from the README itself: the
contract for a round of another shape (step-level local training, gossip, in-training statistics)."""

import copy
import math
import re
from pathlib import Path

import pytest
import torch

from fairfl_core.algorithms import build_algorithm
from fairfl_core.algorithms.base import make_hyper
from fairfl_core.experiments.config import TrainConfig
from fairfl_core.models.mlp import MLP
from fairfl_core.sim.context import Simulation
from fairfl_core.sim.engine import Engine
from tests.conftest import tiny_federated
from tests.rounding import assert_close

README = Path(__file__).parents[2] / "fairfl_core" / "algorithms" / "README.md"


@pytest.fixture(scope="module")
def example():
    (code,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(code.strip().splitlines()) <= 60
    namespace = {}
    exec(compile(code, str(README), "exec"), namespace)
    return namespace


def _sim(clients_per_round=6, seed=0):
    torch.manual_seed(0)
    engine = Engine(MLP(16, [12], 4), tiny_federated(), dtype=torch.float64)
    train = TrainConfig(rounds=3, clients_per_round=clients_per_round, batch_size=4, lr=0.2, local_steps=3)
    return Simulation(engine, train, seed)


def _gossip(example, sim, **params):
    cls = example["GossipAMSGrad"]
    return cls(sim, make_hyper(cls.Hyper, {"server_lr": 0.1, **params}))


def test_no_resampling_and_identity_gossip_is_fedamsgrad(example):
    """AFGA with S_{r,t} = S_r and W = I, full participation: the same minibatch streams as FedAMSGrad's
    local training, so the same rounds (to float64 rounding: a mean here, a weighted sum there)."""
    ours = _gossip(example, _sim(), resample=False, graph="disconnected")
    ref = build_algorithm("fedamsgrad", _sim(), {"server_lr": 0.1})
    # The AMSGrad step η m/√(v̂ + τ) passes an error of the mean update Δ on with a gain up to η (1 − β1)/√τ
    # (= 100 here; about 95 where the two runs differ most, a coordinate whose Δ is small): the rounding of
    # the local training and the mean, at the parameters' magnitude, reaches w that many times over.
    gain = ref.hp.server_lr * (1 - ref.hp.beta1) / math.sqrt(ref.hp.tau)
    for t in range(3):
        out = ours.round(t)
        ref_out = ref.round(t)
        assert (out.selected == ref_out.selected).all()
        # the parameters pass through 7 reductions a local step (2 layers and the loss forward and back, the
        # update) for 3 steps and 3 for the server a round, every round so far, times 1 + the step's gain; the
        # longest sum a first-layer dot product over 16 features; the training loss is a mean over the round's
        # 6 clients × 3 steps × 4 samples = 72 losses, one reduction more
        depth = math.ceil((t + 1) * (7 * 3 + 3) * (1 + gain))
        loss, ref_loss = out.diagnostics["train_loss"], ref_out.diagnostics["train_loss"]
        assert_close(loss, ref_loss, terms=72, depth=depth + 1, what=f"round {t}'s training loss")
        assert_close(ours.w, ref.w, terms=16, depth=depth, what=f"round {t}'s model")
    for key in ("m", "v", "v_hat"):
        assert_close(ours.state[key], ref.state[key], terms=16, depth=depth, what=key)  # as the model's


def test_resampling_and_gossip_change_the_rounds_and_resume_exactly(example):
    sim = _sim(clients_per_round=3)
    plain = _gossip(example, sim, resample=False, graph="disconnected")
    afga = _gossip(example, _sim(clients_per_round=3))
    for t in range(2):
        plain.round(t)
        out = afga.round(t)
    assert (plain.w - afga.w).abs().max() > 1e-6
    assert out.diagnostics["activation_spread"] > 0
    resumed = _gossip(example, _sim(clients_per_round=3))
    resumed.load_state_dict(copy.deepcopy(afga.state_dict()))
    afga.round(2), resumed.round(2)
    assert torch.equal(afga.w, resumed.w)
