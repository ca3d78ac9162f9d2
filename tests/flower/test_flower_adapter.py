"""fairfl methods as Flower apps (``fairfl_core/flower``, docs/flower.md): a Flower run ends with fairfl's own
global model, evaluations and client selections; unsupported algorithms, simulated faults and a missing Flower
are clear errors; ``import fairfl_core`` never imports Flower."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

pytest.importorskip("flwr")

from flwr.app import Context, Message, RecordDict  # noqa: E402
from flwr.serverapp import Grid  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from fairfl_core.algorithms import ALGORITHMS, build_algorithm  # noqa: E402
from fairfl_core.cli import main  # noqa: E402
from fairfl_core.experiments.config import ExperimentConfig, TrainConfig  # noqa: E402
from fairfl_core.experiments.runner import build_engine, evaluate, run_experiment  # noqa: E402
from fairfl_core.flower import apps, node, simulation  # noqa: E402
from fairfl_core.flower.engines import FlowerEngine  # noqa: E402
from fairfl_core.flower.server import FederationResult  # noqa: E402
from fairfl_core.flower.support import SUPPORT, FlowerUnsupported  # noqa: E402
from fairfl_core.flower.wire import dump_objects, load_objects  # noqa: E402
from fairfl_core.sim.context import Simulation  # noqa: E402
from fairfl_core.sim.engine import Engine  # noqa: E402
from fairfl_core.sim.local import cross_entropy  # noqa: E402
from tests.conftest import tiny_federated, tiny_model  # noqa: E402
from tests.experiments.conftest import digits_config  # noqa: E402
from tests.rounding import assert_close  # noqa: E402
from tests.sim.test_batchnorm import bn_model  # noqa: E402
from tests.test_package_layers import imported_modules  # noqa: E402

ROOT = Path(__file__).parents[2]
# A Flower node trains its client's row of the round's minibatch schedule alone instead of stacked with the
# others, and sums its losses over its own samples only: the same float64 operations in another order and
# grouping, a different computation. Compared at the rounding bound of tests/rounding.py: the longest sum is
# over a client's samples, at most the whole training set (digits: 1,437; the tiny fixture: 117), and a value
# passes through 7 reductions a local step (3 layers forward, the loss, 3 layers back) for every step of every
# round, and once more for the final evaluation.
DIGITS_TERMS, TINY_TERMS = 1437, 117


def depth(rounds: int, local_steps: int) -> int:
    return 7 * (rounds * local_steps + 1)


SUPPORTED = [name for name, mapping in SUPPORT.items() if mapping.supported]
UNSUPPORTED = [name for name, mapping in SUPPORT.items() if not mapping.supported]


def flower_config(
    name: str = "fedavg", params: dict | None = None, rounds: int = 3, **data
) -> ExperimentConfig:
    """digits over Dirichlet clients (8 unless ``num_clients`` is given), MLP 64-200-200-10, 3 clients per
    round, float64, evaluated at the end."""
    d = digits_config(rounds=rounds, clients_per_round=3).to_dict()
    d["data"].update(data)
    d["engine"]["dtype"] = "float64"
    d["eval"]["every"] = rounds
    d["algorithm"] = {"name": name, "params": params or {}}
    return ExperimentConfig.from_dict(d).validate()


def fairfl_run(cfg: ExperimentConfig):
    """fairfl's own engine on ``cfg``: the algorithm after its rounds, each round's selection, the last
    evaluation."""
    sim = Simulation(build_engine(cfg), cfg.train, cfg.seed, cfg.faults)
    algo = build_algorithm(cfg.algorithm.name, sim, cfg.algorithm.params)
    selected = [algo.round(t).selected.tolist() for t in range(cfg.train.rounds)]
    return algo, selected, evaluate(algo, sim, cfg.train.rounds)


def assert_same_run(result: FederationResult, cfg: ExperimentConfig) -> None:
    algo, selected, last = fairfl_run(cfg)
    assert [r["selected"] for r in result.rounds] == selected
    bound = dict(terms=DIGITS_TERMS, depth=depth(cfg.train.rounds, cfg.train.local_steps))
    assert_close(result.params, algo.eval_params(), **bound, what="global model")
    for key in ("client_loss", "client_acc", "personal_loss", "global_acc"):  # personal models: their losses
        assert_close(result.evals[-1].get(key, 0.0), last.get(key, 0.0), **bound, what=key)


class InProcessGrid(Grid):
    """A Grid whose nodes are the ClientApp called in this process (one Context per fairfl client), for fast
    checks of the apps' messages without Flower's Simulation Runtime (Ray)."""

    def __init__(self, client_app, clients: list[int]):
        self.client_app = client_app
        self.nodes = {
            1000 + i: Context(1, 1000 + i, {"partition-id": k}, RecordDict(), {})
            for i, k in enumerate(clients)
        }

    def set_run(self, run):
        pass

    @property
    def run(self):
        return None

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id, message_type)

    def get_node_ids(self):
        return list(self.nodes)

    def push_messages(self, messages):
        raise NotImplementedError

    def pull_messages(self, message_ids):
        raise NotImplementedError

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            reply = self.client_app(message, self.nodes[node])
            reply.metadata.__dict__["_src_node_id"] = node  # the Simulation Runtime's routing does this
            replies.append(reply)
        return replies


def as_flower_task(monkeypatch) -> None:
    """The process identity a Flower runtime sets before a ServerApp creates messages."""
    for key, value in (("_run_id", 1), ("_task_id", 1), ("_node_id", 0)):
        monkeypatch.setattr(TaskIdentity, key, value)


def run_in_process(cfgs: list[ExperimentConfig], num_nodes: int, monkeypatch) -> list[FederationResult]:
    """The ServerApp of ``cfgs`` over an :class:`InProcessGrid` of ``num_nodes`` ClientApps."""
    as_flower_task(monkeypatch)
    results = []
    server = apps.server_app(cfgs, report=lambda line: None, on_result=results.append)
    server(InProcessGrid(apps.client_app(), list(range(num_nodes))), Context(1, 0, {}, RecordDict(), {}))
    return results


@pytest.mark.slow
def test_a_flower_simulation_ends_with_fairfl_engines_global_model(tmp_path, monkeypatch):
    """FedAvg, q-FFL and FedEBA+ (fair_grad_units "gradient" and "update"), 3 rounds on 10 SuperNodes of
    Flower's Simulation Runtime, all four runs in one simulation (Ray starts once; its backend is the only one
    Flower 1.42 has): 2 Ray CPUs, one per ClientApp."""
    monkeypatch.setenv("RAY_raylet_start_wait_time_s", "120")  # Ray's 15 s for its agents: short on busy CI
    cfgs = [
        flower_config("fedavg", num_clients=10),
        flower_config("qffl", {"q": 1.0}, num_clients=10),
        flower_config("fedeba+", {"fair_grad_units": "gradient"}, num_clients=10),
        flower_config("fedeba+", num_clients=10),  # the default: "update"
    ]
    results = simulation.simulate(cfgs, num_cpus=2, report=lambda line: None)
    for result, cfg in zip(results, cfgs, strict=True):
        assert result.summary["status"] == "complete" and result.summary["rounds"] == 3
        assert_same_run(result, cfg)
    reference = run_experiment(cfgs[0], tmp_path, progress=False).summary  # ``fairfl run`` of the same config
    for key in ("global_acc", "mean", "var"):
        assert results[0].summary[key] == pytest.approx(reference[key], abs=1e-9), key


@pytest.mark.parametrize("name", SUPPORTED)
def test_every_supported_algorithm_gives_fairfl_engines_run(name, monkeypatch):
    (result,) = run_in_process([flower_config(name, rounds=2)], 8, monkeypatch)
    assert_same_run(result, flower_config(name, rounds=2))


def test_batchnorm_statistics_travel_with_the_messages(monkeypatch):
    """With BatchNorm the nodes train and evaluate with the server's global running statistics and upload
    their own, which the server averages as fairfl does (the nodes here answer in this process)."""

    def engine():
        return Engine(bn_model(), tiny_federated(), dtype=torch.float64)

    on_nodes = engine()
    monkeypatch.setattr(node, "node_engine", lambda experiment: on_nodes)

    def exchange(kind, clients, requests):
        return [node.answer(kind, r, int(k)) for k, r in zip(clients, requests, strict=True)]

    train = TrainConfig(rounds=2, clients_per_round=3, batch_size=4, lr=0.1, local_steps=2)
    flower = build_algorithm("fedavg", Simulation(FlowerEngine(engine(), exchange, "{}"), train, 0), {})
    local = build_algorithm("fedavg", Simulation(engine(), train, 0), {})
    for t in range(2):
        flower.round(t), local.round(t)
    bound = dict(terms=TINY_TERMS, depth=depth(train.rounds, train.local_steps))
    for key in ("w", "running"):
        assert_close(flower.state[key], local.state[key], **bound, what=key)
    evaluated = [algo.sim.engine.losses(algo.w, None, "test")[0] for algo in (flower, local)]
    assert_close(evaluated[0], evaluated[1], **bound, what="test losses")


def test_a_custom_loss_travels_with_evaluate_and_gradient_requests(monkeypatch):
    """``losses`` / ``gradients`` with a per-sample loss: the loss travels as fairfl code and the node's
    engine applies it (a Flower run measures what a fairfl run measures)."""
    loss = functools.partial(cross_entropy, reduction="none")  # fairfl code, unlike a lambda
    on_nodes = Engine(tiny_model(), tiny_federated(), dtype=torch.float64)
    monkeypatch.setattr(node, "node_engine", lambda experiment: on_nodes)
    loaded = []

    def exchange(kind, clients, requests):
        loaded.extend(node._loss(r) for r in requests)
        return [node.answer(kind, r, int(k)) for k, r in zip(clients, requests, strict=True)]

    flower = FlowerEngine(Engine(tiny_model(), tiny_federated(), dtype=torch.float64), exchange, "{}")
    w, clients = on_nodes.init_params(), np.array([1, 3])
    # a node computes its client alone: the same computation as the local engine given that client alone
    alone = [np.array([k]) for k in clients]
    losses = torch.cat([on_nodes.losses(w, k, loss=loss)[0] for k in alone])
    gradients = torch.cat([on_nodes.gradients(w, k, loss=loss) for k in alone])
    assert torch.equal(flower.losses(w, clients, loss=loss)[0], losses)
    assert torch.equal(flower.gradients(w, clients, loss=loss), gradients)
    pass_losses = torch.cat([on_nodes.gradients_and_losses(w, k, loss=loss)[1] for k in alone])
    assert torch.equal(flower.gradients_and_losses(w, clients, loss=loss)[1], pass_losses)
    assert len(loaded) == 6 and all(f.func is cross_entropy for f in loaded)
    with pytest.raises(FlowerUnsupported, match="pooled training data"):
        flower.train_pooled(clients, w, None, 0)


def test_group_counts_travel_as_query_messages(monkeypatch):
    """On data with a sensitive attribute: each node counts its own client's samples by (group, label,
    prediction), at one model or at its row of per-client models, as the local engine does (integer
    counts: exact)."""
    from tests.conftest import tiny_sensitive

    on_nodes = Engine(tiny_model(num_classes=2), tiny_sensitive(), dtype=torch.float64)
    monkeypatch.setattr(node, "node_engine", lambda experiment: on_nodes)

    def exchange(kind, clients, requests):
        assert kind == "query.group_counts"
        return [node.answer(kind, r, int(k)) for k, r in zip(clients, requests, strict=True)]

    flower = FlowerEngine(
        Engine(tiny_model(num_classes=2), tiny_sensitive(), dtype=torch.float64), exchange, "{}"
    )
    w, clients = on_nodes.init_params(), np.array([1, 3, 4])
    assert torch.equal(flower.group_counts(w, clients, "train"), on_nodes.group_counts(w, clients, "train"))
    stacked = w + 0.1 * torch.randn(6, len(w), generator=torch.Generator().manual_seed(0))
    assert torch.equal(
        flower.group_counts(stacked, None, "test"), on_nodes.group_counts(stacked, None, "test")
    )
    assert torch.equal(flower.pooled_group_counts(w), on_nodes.pooled_group_counts(w))  # the server's own


def test_each_client_needs_exactly_one_supernode(monkeypatch):
    as_flower_task(monkeypatch)
    client_app = apps.client_app()
    assert apps.map_nodes(InProcessGrid(client_app, [1, 0, 2]), 3) == {1: 1000, 0: 1001, 2: 1002}
    with pytest.raises(TimeoutError, match="3 SuperNodes connected after 0 s, but the config's data has 4"):
        apps.map_nodes(InProcessGrid(client_app, [0, 1, 2]), 4, wait=0)
    with pytest.raises(ValueError, match=r"hold fairfl clients \[0, 1\].*one node for each client 0 … 2"):
        apps.map_nodes(InProcessGrid(client_app, [0, 1, 1]), 3)


def test_flwr_run_reads_the_config_file_and_overrides_from_the_run_config(tmp_path):
    with pytest.raises(ValueError, match="the run config has no fairfl-config"):
        apps.run_config_experiments({})
    d = flower_config().to_dict()
    d["sweep"] = {"algorithms": ["fedavg", "qffl"]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(d))
    cfgs = apps.run_config_experiments({"fairfl-config": str(path), "fairfl-set": "train.rounds=2 seed=3"})
    assert [(c.algorithm.name, c.train.rounds, c.seed) for c in cfgs] == [("fedavg", 2, 3), ("qffl", 2, 3)]


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_algorithms_raise_naming_the_reason(name, tmp_path, capsys):
    cfg = digits_config()
    cfg.algorithm.name = name
    with pytest.raises(
        FlowerUnsupported, match=re.escape(f"algorithm '{name}' cannot run as a Flower app: ")
    ):
        simulation.simulate([cfg])
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    assert main(["flower-sim", str(path)]) == 2
    assert SUPPORT[name].how in capsys.readouterr().err


def test_simulated_faults_are_refused():
    d = flower_config().to_dict()
    d["faults"] = {"rate": 0.5}
    with pytest.raises(FlowerUnsupported, match="faults.rate = 0.5.*set faults.rate: 0"):
        simulation.simulate([ExperimentConfig.from_dict(d)])


def test_engine_calls_that_would_read_client_data_on_the_server_raise():
    engine = FlowerEngine(build_engine(flower_config()), exchange=None, experiment="{}")
    assert engine.counts("train").sum() > 0  # the partition's metadata is the server's
    with pytest.raises(FlowerUnsupported, match="gossip"):
        engine.stack(np.arange(3), engine.init_params(), None, 0)
    with pytest.raises(FlowerUnsupported, match="engine.trainer would compute on the clients' data"):
        engine.trainer.train(engine.init_params(), None, None)


def test_a_missing_flower_names_the_extra(monkeypatch, tmp_path, capsys):
    for name in [m for m in sys.modules if m == "flwr" or m.startswith("flwr.")]:
        monkeypatch.setitem(sys.modules, name, None)  # import flwr.* -> ImportError
    with pytest.raises(ImportError, match=r'Flower is not installed: pip install "fairfl\[flower\]"'):
        simulation.simulate([flower_config()])
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(flower_config().to_dict()))
    assert main(["flower-sim", str(path)]) == 2
    assert 'pip install "fairfl[flower]"' in capsys.readouterr().err


def test_flower_sim_prints_each_runs_summary(monkeypatch, tmp_path, capsys):
    cfg = flower_config().to_dict()
    cfg["sweep"] = {"algorithms": ["fedavg", "qffl"]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))

    def fake(cfgs, num_cpus=None):
        assert num_cpus == 2 and [c.algorithm.name for c in cfgs] == ["fedavg", "qffl"]
        return [
            FederationResult({"status": "complete", "algorithm": c.algorithm.name}, None, [], [])
            for c in cfgs
        ]

    monkeypatch.setattr(simulation, "simulate", fake)
    assert main(["flower-sim", str(path), "--cpus", "2"]) == 0
    out = capsys.readouterr().out
    assert "algorithm: fedavg" in out and "algorithm: qffl" in out


def test_local_step_objects_travel_only_as_fairfl_code():
    import functools
    import pickle

    from fairfl_core.algorithms.propfair import propfair_objective

    objective = functools.partial(propfair_objective, M=2.0, eps=0.1)
    assert load_objects(dump_objects({"objective": objective}))["objective"].func is propfair_objective
    with pytest.raises(FlowerUnsupported, match="a lambda or a closure is not"):
        dump_objects({"objective": lambda loss: loss})
    with pytest.raises(pickle.UnpicklingError, match=r"\.system is not fairfl code"):
        load_objects(pickle.dumps({"objective": functools.partial(__import__("os").system, "true")}))


def test_the_support_table_covers_every_algorithm_and_is_the_docs_table(tmp_path):
    from fairfl_core.flower.support import support_table, write_support_table

    assert set(SUPPORT) == set(ALGORITHMS)
    doc = (ROOT / "docs/flower.md").read_text()
    assert (
        f"<!-- support -->\n{support_table()}<!-- /support -->" in doc
    )  # python -m fairfl_core.flower.support
    rows = re.findall(r"^\| `([^`]+)` \| (yes|no) \|", support_table(), re.M)
    assert dict(rows) == {name: "yes" if m.supported else "no" for name, m in SUPPORT.items()}
    stale = tmp_path / "flower.md"
    stale.write_text("before\n<!-- support -->\n| old |\n<!-- /support -->\nafter\n")
    assert (
        write_support_table(stale)
        and stale.read_text() == f"before\n<!-- support -->\n{support_table()}<!-- /support -->\nafter\n"
    )
    assert not write_support_table(stale)


def test_the_flwr_run_template_is_a_valid_flower_app():
    from flwr.cli.config_utils import load_and_validate
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    template = ROOT / "fairfl_core/flower/template"
    config, errors, *_ = load_and_validate(template / "pyproject.toml", check_module=True)
    assert not errors
    assert config["tool"]["flwr"]["app"]["components"] == {
        "serverapp": "fairfl_app:server",
        "clientapp": "fairfl_app:client",
    }
    spec = importlib.util.spec_from_file_location("fairfl_app", template / "fairfl_app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert isinstance(module.server, ServerApp) and isinstance(module.client, ClientApp)


def test_fairfl_core_imports_flower_only_lazily():
    """No module of fairfl_core imports flwr at module level, and only ``fairfl_core/flower`` imports it at
    all (inside functions; the template's module is the Flower App's own), so ``import fairfl_core`` and the
    CLI never load Flower (checked as ``test_package_layers.py`` checks layers)."""
    offending = []
    for path in sorted((ROOT / "fairfl_core").rglob("*.py")):
        if "template" in path.parts:
            continue
        top = {
            n.lineno for n in ast.parse(path.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))
        }
        offending += [
            f"{path.relative_to(ROOT)}:{line} imports {name}"
            for line, name in imported_modules(path)
            if name.split(".")[0] == "flwr" and (line in top or "flower" not in path.parts)
        ]
    assert not offending, "\n".join(offending)
