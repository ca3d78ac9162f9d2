"""A node's side of a fairfl Flower run: one request of the ServerApp's ``FlowerEngine``, answered for this
node's client by fairfl's own engine (``engines.node_engine``) exactly as ``Engine`` computes it for that
client among the others.

Local training draws the round's minibatch schedule of all the requested clients (``Engine.schedule``,
seeded by the server's ``seed_for(t, "batches")``: each client's stream depends on the other clients' sample
counts) and trains its own row of it, so a client sees the minibatches it sees in fairfl's own engine.
"""

from __future__ import annotations

import numpy as np

from fairfl_core.flower.engines import LOSS, STAT, node_engine
from fairfl_core.flower.wire import Payload, array, load_objects, payload_spec, tensor
from fairfl_core.sim.engine import Engine

__all__ = ["KINDS", "answer"]


def answer(kind: str, request: Payload, client: int) -> Payload:
    """The reply to a request of message type ``kind`` on the node of fairfl client ``client``."""
    engine = node_engine(request.config["experiment"])
    if "running" in request.arrays:
        engine.set_running_stats(tensor(request.arrays["running"], engine.device))
    reply = KINDS[kind](engine, request, np.array([client]))
    reply.config["row"] = request.config["row"]
    return reply


def _train(engine: Engine, request: Payload, client: np.ndarray) -> Payload:
    """Row ``row`` of ``Engine.train(clients, start, spec, seed)``: this client's local training."""
    clients, row = np.asarray(request.config["clients"]), request.config["row"]
    if clients[row] != client[0]:
        raise ValueError(f"the node of client {client[0]} was asked to train client {clients[row]}'s data")
    spec = payload_spec(request, engine.device)
    schedule = engine.schedule(clients, spec, request.config["seed"])
    start = tensor(request.arrays["start"], engine.device)
    result = engine.trainer.train(start, spec, schedule.rows(slice(row, row + 1)), engine.running)
    reply = Payload({"params": array(result.params[0])}, {"train_loss": float(result.train_loss[0])})
    reply.arrays.update({STAT + name: array(value[0]) for name, value in result.stats.items()})
    if result.running is not None:
        reply.arrays["running"] = array(result.running[0])
    return reply


def _model(engine: Engine, request: Payload):
    return tensor(request.arrays["w"], engine.device)


def _loss(request: Payload):
    """The request's custom per-sample loss (None: cross-entropy)."""
    return load_objects(request.config[LOSS])["loss"] if LOSS in request.config else None


def _evaluate(engine: Engine, request: Payload, client: np.ndarray) -> Payload:
    loss, acc = engine.losses(_model(engine, request), client, request.config["split"], _loss(request))
    return Payload(config={"loss": float(loss[0]), "acc": float(acc[0])})


def _gradients(engine: Engine, request: Payload, client: np.ndarray) -> Payload:
    gradient, loss = engine.gradients_and_losses(
        _model(engine, request), client, request.config["split"], _loss(request)
    )
    return Payload({"gradient": array(gradient[0])}, {"loss": float(loss[0])})


def _features(engine: Engine, request: Payload, client: np.ndarray) -> Payload:
    config = request.config
    features = engine.features(_model(engine, request), client, config["split"], config["transform"])
    return Payload({"features": array(features[0])})


def _group_counts(engine: Engine, request: Payload, client: np.ndarray) -> Payload:
    counts = engine.group_counts(_model(engine, request), client, request.config["split"])
    return Payload(config={"counts": counts[0].reshape(-1).tolist()})


KINDS = {
    "train": _train,
    "evaluate": _evaluate,
    "query.gradients": _gradients,
    "query.features": _features,
    "query.group_counts": _group_counts,
}
