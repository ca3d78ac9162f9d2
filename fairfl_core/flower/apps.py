"""The Flower objects of a fairfl run (flwr imported inside these functions only): a ServerApp whose main runs
``server.run_federation`` over its Grid, and a ClientApp whose handlers answer with ``node.answer``.

* Each fairfl client is one SuperNode, known by its node config ``partition-id`` (Flower's simulation numbers
  the nodes 0 … N−1; a deployment sets it with ``flower-supernode --node-config "partition-id=K"``). The
  ServerApp waits for the N nodes, then asks each (a ``query`` message) which client it holds.
* A request or a reply is the Message content ``{"arrays": ArrayRecord, "config": ConfigRecord}`` of a
  ``wire.Payload``; its type is ``train``, ``evaluate``, ``query.gradients``, ``query.features`` or
  ``query.group_counts`` (``engines.FlowerEngine``). A ClientApp that fails, or a node that does not
  answer, stops the run: a fairfl round needs the answer of every client it asks.
* The ServerApp runs the experiment configs its caller gives (``fairfl flower-sim``) or those of the run
  config (``flwr run``): ``fairfl-config``, a config file as for ``fairfl run`` (a sweep config: each of its
  runs in turn), and ``fairfl-set``, space-separated ``key=value`` overrides as ``--set`` takes them. The
  nodes receive the config with every request, so one ClientApp serves any config.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fairfl_core.experiments.config import ExperimentConfig, load_config
from fairfl_core.experiments.sweep import expand_sweep
from fairfl_core.flower import flower_module
from fairfl_core.flower.node import KINDS, answer
from fairfl_core.flower.server import FederationResult, run_federation
from fairfl_core.flower.wire import Payload

__all__ = ["GridExchange", "client_app", "load_experiments", "map_nodes", "node_client", "server_app"]

NODE_WAIT_S = 600.0  # how long the ServerApp waits for the N SuperNodes to connect
REPLY_TIMEOUT_S = 3600.0  # how long it waits for one exchange's replies (as Flower's Strategy.start)


def load_experiments(path: str | Path, overrides: list[str] | None = None) -> list[ExperimentConfig]:
    """The runs of a config file with ``--set`` overrides: one, or each run of a sweep config."""
    return expand_sweep(load_config(path, overrides))


def run_config_experiments(run_config) -> list[ExperimentConfig]:
    """The experiments of a ``flwr run``: the run config's ``fairfl-config`` and ``fairfl-set``."""
    path = str(run_config.get("fairfl-config", ""))
    if not path:
        raise ValueError(
            "the run config has no fairfl-config: pass the fairfl config file, e.g. "
            "flwr run . <superlink> --run-config \"fairfl-config='/abs/path/config.yaml'\""
        )
    return load_experiments(path, str(run_config.get("fairfl-set", "")).split())


def node_client(context) -> int:
    """The fairfl client of this SuperNode: its node config ``partition-id``."""
    if "partition-id" not in context.node_config:
        raise ValueError(
            "this SuperNode has no node config partition-id: start it with "
            'flower-supernode ... --node-config "partition-id=K" for fairfl client K'
        )
    return int(context.node_config["partition-id"])


def _content(payload: Payload):
    app = flower_module("app")
    arrays = {k: app.Array(np.ascontiguousarray(v)) for k, v in payload.arrays.items()}
    return app.RecordDict({"arrays": app.ArrayRecord(arrays), "config": app.ConfigRecord(payload.config)})


def _payload(content) -> Payload:
    return Payload({k: a.numpy() for k, a in content["arrays"].items()}, dict(content["config"]))


def client_app():
    """The ClientApp: one handler per message type of ``node.KINDS``, and the ``query`` naming the client."""
    flwr_app = flower_module("app")
    app = flower_module("clientapp").ClientApp()

    def handler(kind: str):
        def handle(message, context):
            reply = answer(kind, _payload(message.content), node_client(context))
            return flwr_app.Message(_content(reply), reply_to=message)

        return handle

    for kind in KINDS:
        category, _, action = kind.partition(".")
        getattr(app, category)(action or "default")(handler(kind))

    @app.query()
    def which_client(message, context):
        return flwr_app.Message(_content(Payload(config={"client": node_client(context)})), reply_to=message)

    return app


def _replies(grid, messages: list, timeout: float, what: str) -> list:
    """The replies to ``messages``; an error naming the node when a ClientApp failed or did not answer."""
    replies = list(grid.send_and_receive(messages, timeout=timeout))
    for reply in replies:
        if reply.has_error():
            raise RuntimeError(
                f"{what}: the ClientApp of node {reply.metadata.src_node_id} failed: {reply.error.reason}"
            )
    if len(replies) < len(messages):
        raise TimeoutError(
            f"{what}: {len(messages) - len(replies)} of {len(messages)} nodes sent no reply within "
            f"{timeout} s; a fairfl round needs the answer of every client it asks"
        )
    return replies


def map_nodes(grid, num_clients: int, wait: float = NODE_WAIT_S, timeout: float = REPLY_TIMEOUT_S) -> dict:
    """``{fairfl client: node id}`` once the N clients' SuperNodes are connected."""
    deadline = time.monotonic() + wait
    while len(nodes := sorted(grid.get_node_ids())) < num_clients:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(nodes)} SuperNodes connected after {wait:.0f} s, but the config's data has "
                f"{num_clients} clients: start one per client, with "
                '--node-config "partition-id=K" for client K'
            )
        time.sleep(0.2)
    app = flower_module("app")
    asked = [app.Message(app.RecordDict(), node, "query") for node in nodes]
    held: dict[int, list[int]] = {}
    for reply in _replies(grid, asked, timeout, "which client each node holds"):
        held.setdefault(int(_payload(reply.content).config["client"]), []).append(reply.metadata.src_node_id)
    if sorted(held) != list(range(num_clients)) or any(len(n) > 1 for n in held.values()):
        raise ValueError(
            f"the SuperNodes hold fairfl clients {sorted(held)} (node ids by client: {held}); the config's "
            f"data needs exactly one node for each client 0 … {num_clients - 1} (node config partition-id)"
        )
    return {client: node_ids[0] for client, node_ids in held.items()}


class GridExchange:
    """``engines.Exchange`` over a Flower Grid: request i goes to the node of client ``clients[i]`` as a
    message of type ``kind``; the replies come back in request order (each carries its row)."""

    def __init__(self, grid, nodes: dict[int, int], timeout: float = REPLY_TIMEOUT_S):
        self.grid, self.nodes, self.timeout = grid, nodes, timeout

    def __call__(self, kind: str, clients: np.ndarray, requests: list[Payload]) -> list[Payload]:
        Message = flower_module("app").Message
        nodes = [self.nodes[int(k)] for k in clients]
        messages = [Message(_content(r), node, kind) for node, r in zip(nodes, requests, strict=True)]
        replies = [_payload(r.content) for r in _replies(self.grid, messages, self.timeout, kind)]
        return sorted(replies, key=lambda reply: reply.config["row"])


def server_app(
    cfgs: list[ExperimentConfig] | None = None,
    report: Callable[[str], None] = print,
    on_result: Callable[[FederationResult], None] | None = None,
):
    """The ServerApp: ``server.run_federation`` of each config of ``cfgs`` (None: the run config's, module
    docstring) in turn, ``report`` getting their progress lines. ``on_result`` receives each result
    (default: ``report`` gets its summary); with a run config ``fairfl-output`` directory, each run's summary,
    round and evaluation records are also written there, to ``flower_run_<i>.json``."""
    app = flower_module("serverapp").ServerApp()

    @app.main()
    def main(grid, context) -> None:
        output = str(context.run_config.get("fairfl-output", ""))
        for i, cfg in enumerate(cfgs if cfgs is not None else run_config_experiments(context.run_config)):
            result = run_federation(cfg, lambda n: GridExchange(grid, map_nodes(grid, n)), report)
            if output:
                Path(output).mkdir(parents=True, exist_ok=True)
                record = {"summary": result.summary, "rounds": result.rounds, "evals": result.evals}
                (Path(output) / f"flower_run_{i}.json").write_text(json.dumps(record, default=str, indent=1))
            if on_result is None:
                flat = {k: v for k, v in result.summary.items() if not isinstance(v, dict)}
                report("summary: " + json.dumps(flat))
            else:
                on_result(result)

    return app
