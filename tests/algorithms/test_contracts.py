"""Contracts every registered algorithm keeps (new algorithms are covered automatically).

* the batched engine and the sequential reference give the same run (selected clients, every state
  tensor), with local work in steps and in epochs (unequal step counts across clients), also when 30% of
  each round's clients drop out or straggle (``sim/faults.py``);
* resuming from a saved ``state_dict`` continues exactly as the uninterrupted run, with and without faults;
* a short run on real data (scikit-learn digits) improves the evaluated model.
"""

import copy

import numpy as np
import pytest
import torch

from fairfl_core.algorithms import ALGORITHMS, build_algorithm
from fairfl_core.algorithms.base import FederatedAlgorithm
from fairfl_core.sim.faults import FaultConfig
from tests.algorithms.conftest import run_rounds, short_run, tiny_sim
from tests.rounding import assert_close

# Non-default hyperparameters that make the tiny float64 runs exercise each method's own mechanism.
EXACT = {
    "afga": [{}, {"comm_adapted": "active_ring"}, {"comm_adapted": "selected_ring", "topology": "complete"}],
    "cafga": [{"num_clusters": 3}],
    "afl": [{"client_step": "local", "lr_lambda": 0.1}, {"client_step": "gradient", "lr_lambda": 0.1}],
    "clustered_sampling": [{"mu": 0.1, "similarity": "L2"}],
    "divfl": [{"mu": 0.1}],
    "fairfed": [{"mu": 0.1}],
    "fedeba": [
        {"tau": 0.5},
        {
            "tau": 0.5,
            "weighting": "size",
            "loss_eval": "last_epoch_avg",
            "tau_schedule": "linear",
            "tau_kappa": 1.0,
        },
    ],
    "fedeba+": [
        {"tau": 0.5},
        {"tau": 0.5, "theta": 90.0, "model_align_scale": "local_steps"},
        {"entropy_weights": False, "fair_grad": "full", "fair_grad_units": "update"},
    ],
    "fedfv": [{"tau": 2}],
    "fedmgda+": [{"epsilon": 0.1}],
    "fedprox": [{"mu": 0.5}],
    "gifair_global": [{"lam_frac": 0.9}, {"lam_frac": 0.9, "groups": "individual", "loss_source": "global"}],
    "gifair_per": [{"lam_frac": 0.9}],
    "power_of_choice": [{"d": 4, "mu": 0.1}],
    "prac_fedeba+": [{"tau": 0.5, "theta": 0.0}, {"tau": 0.5, "theta": 90.0}],
    "propfair": [{"M": 2.0, "eps": 0.5}],
    "qffl": [{"q": 1.0}],
    "term": [{"t": 1.0}, {"t": 1.0, "normalizer": "running"}],
}
# (hyperparameters, train overrides) for the short real run.
REAL = {
    "afl": ({"lr_lambda": 0.1}, {}),
    "dadam": ({}, {"lr": 0.01}),  # an Adam step of 0.05 per coordinate overshoots
    "fedadagrad": ({"server_lr": 0.03}, {}),
    "fedsgd": ({}, {"lr": 0.5}),
    "gifair_global": ({"lam_frac": 0.9}, {}),
    "gifair_per": ({"lam_frac": 0.9}, {}),
    "qffl": ({"q": 1.0}, {}),
    "term": ({"t": 1.0}, {}),
}
CASES = [(name, params) for name in sorted(ALGORITHMS) for params in EXACT.get(name, [{}])]
WORK = {"steps": {}, "epochs": {"local_steps": None, "local_epochs": 1}}
FAULTS = {
    "none": None,
    "dropout": FaultConfig(rate=0.3, kind="dropout"),
    "straggler": FaultConfig(rate=0.3, kind="straggler", straggler_work=0.5),
}
# (local work, faults) of the batched-vs-sequential runs: stragglers in epoch mode truncate unequal schedules
SETTINGS = [("steps", "none"), ("epochs", "none"), ("steps", "dropout"), ("epochs", "straggler")]
# The batched engine trains a round's clients stacked, the sequential reference one by one: the same float64
# operations on other shapes. The longest sum is an inner product or norm of updates over the P = 256
# parameters (FedFV, q-FFL, FedMGDA+, ...), longer than a client's 32 samples; a value passes through 7
# reductions a local step (2 layers and the loss forward and back, the update) for at most 8 steps a round (an
# epoch of the largest client, 32 samples in batches of 4) and 3 server reductions a round, for 3 rounds.
BATCHED_VS_SEQUENTIAL = dict(terms=256, depth=3 * (7 * 8 + 3))


def _state_tensors(algo) -> dict[str, torch.Tensor]:
    return {
        k: torch.as_tensor(v)
        for k, v in algo.state_dict().items()
        if isinstance(v, (torch.Tensor, np.ndarray))
    }


@pytest.mark.parametrize("work,faults", SETTINGS, ids=[f"{w}-{f}" for w, f in SETTINGS])
@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(CASES)])
def test_batched_and_sequential_runs_agree(name, params, work, faults):
    runs = {}
    for kind in ("batched", "sequential"):
        algo = build_algorithm(name, tiny_sim(kind=kind, faults=FAULTS[faults], **WORK[work]), params)
        outs = run_rounds(algo, 3)
        selected = [(o.selected.tolist(), o.diagnostics.get("faults")) for o in outs]
        runs[kind] = (selected, algo.eval_params(), _state_tensors(algo))
    (sel_b, w_b, state_b), (sel_s, w_s, state_s) = runs["batched"], runs["sequential"]
    assert sel_b == sel_s
    assert faults == "none" or all(f["failed"] for _, f in sel_b)  # 30% of 3 or 6 clients: 1 or 2 fail
    assert_close(w_b, w_s, **BATCHED_VS_SEQUENTIAL, what="evaluated model")
    assert state_b.keys() == state_s.keys()
    for key in state_b:
        assert_close(state_b[key], state_s[key], **BATCHED_VS_SEQUENTIAL, what=key)


@pytest.mark.parametrize("faults", ["none", "dropout"])  # the fault draw is counter-based like the rest
@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(CASES)])
def test_resume_from_saved_state_continues_exactly(name, params, faults):
    full = build_algorithm(name, tiny_sim(faults=FAULTS[faults]), params)
    run_rounds(full, 3)
    first = build_algorithm(name, tiny_sim(faults=FAULTS[faults]), params)
    run_rounds(first, 1)
    saved = copy.deepcopy(first.state_dict())
    resumed = build_algorithm(name, tiny_sim(faults=FAULTS[faults]), params)
    resumed.load_state_dict(saved)
    for t in (1, 2):
        resumed.round(t)
    assert torch.equal(resumed.eval_params(), full.eval_params())
    for key, value in _state_tensors(full).items():
        assert torch.equal(_state_tensors(resumed)[key], value), key


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_short_real_run_improves(name):
    params, train = REAL.get(name, ({}, {}))
    before, after = short_run(name, params, rounds=8, **train)
    assert after > before + 0.2, f"{name}: mean client accuracy {before:.3f} → {after:.3f}"


def _depth(cls: type) -> int:
    """Levels between ``cls`` and ``FederatedAlgorithm`` (FedAvg: 1), along its longest path."""
    if cls is FederatedAlgorithm:
        return 0
    return 1 + max(_depth(b) for b in cls.__bases__ if issubclass(b, FederatedAlgorithm))


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_inheritance_is_at_most_two_levels_below_the_contract(name):
    """A strategy another algorithm reuses is a part it composes (``ServerOptimizer``, ``EBAWeighting``,
    ``GroupPenalty``, ``ClientSelector``, ``proximal_spec``), not a parent class."""
    chain = [c.__name__ for c in ALGORITHMS[name].__mro__ if issubclass(c, FederatedAlgorithm)]
    assert _depth(ALGORITHMS[name]) <= 2, (
        f"{name}: {' → '.join(chain)}; compose a part or Hyper groups instead"
    )
