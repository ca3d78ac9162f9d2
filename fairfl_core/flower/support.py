"""Which fairfl algorithms run as Flower apps, and the Flower messages of one of their rounds.

Flower routes messages between the ServerApp and each ClientApp, never between clients. An algorithm maps
exactly when every computation its server side asks of the engine is one client's computation on its own
data (``FlowerEngine``: ``train`` → a ``train`` message, ``losses`` → ``evaluate``, ``gradients`` →
``query.gradients``, ``features`` → ``query.features``, ``group_counts`` → ``query.group_counts``), however
many clients it asks. It does not map when clients exchange models among themselves between local steps
(gossip, ``engine.stack``) or when one training run pools every client's data. ``SUPPORT`` holds the
decision for every registered algorithm, read from its code; ``docs/flower.md`` shows it as a table that
``python -m fairfl_core.flower.support`` rewrites from it (the block between ``<!-- support -->`` and
``<!-- /support -->``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from fairfl_core.algorithms.base import algorithm_class

__all__ = [
    "SUPPORT",
    "FlowerUnsupported",
    "Mapping",
    "check_flower_config",
    "support_table",
    "write_support_table",
]


class FlowerUnsupported(ValueError):
    """An algorithm or setting that a Flower run cannot reproduce exactly (the message says why)."""


@dataclass(frozen=True)
class Mapping:
    """``supported``: whether the algorithm runs as a Flower app; ``how``: the messages of one round, or why
    it cannot run."""

    supported: bool
    how: str


def _runs(how: str) -> Mapping:
    return Mapping(True, how)


GOSSIP = Mapping(
    False,
    "its clients exchange models with their graph neighbours between local steps (gossip), and Flower routes "
    "messages only between the ServerApp and each ClientApp",
)
AT_RECEIVED = _runs("train, then evaluate at the received model on the uploading clients")
TRAIN = _runs("train")

SUPPORT: dict[str, Mapping] = {
    "fedavg": TRAIN,
    "fedprox": TRAIN,
    "fedavgm": TRAIN,
    "fedadagrad": TRAIN,
    "fedadam": TRAIN,
    "fedyogi": TRAIN,
    "fedamsgrad": TRAIN,
    "fedmgda+": TRAIN,
    "clustered_sampling": TRAIN,
    "fedsgd": _runs("train (one full-batch step)"),
    "propfair": _runs("train (the PropFair objective travels in the message)"),
    "scaffold": _runs("train; the control variates c_i are kept by the ServerApp and sent with it"),
    "feddyn": _runs("train; the h_i are kept by the ServerApp and sent with it"),
    "qffl": AT_RECEIVED,
    "term": AT_RECEIVED,
    "aaggff": AT_RECEIVED,
    "fedfv": AT_RECEIVED,
    "fairfed": _runs(
        "train, then evaluate at the received model on the uploading clients (with a sensitive attribute "
        "also query.group_counts there)"
    ),
    "fedeba": _runs("train, then evaluate at each trained model (loss_eval='full')"),
    "fedeba+": _runs(
        "evaluate at x_t (fair-angle test); train one step at lr 1 for ∇F_i(x_t) (query.gradients with "
        "fair_grad='full'); train; evaluate at the trained models"
    ),
    "prac_fedeba+": _runs("train, then evaluate at x_t and at the trained models"),
    "power_of_choice": _runs("evaluate at the d candidates, then train"),
    "gifair_global": _runs(
        "train (the scale s_k in the message), then evaluate for the loss cache (loss_source); "
        "init_losses='evaluate' asks all N clients once"
    ),
    "gifair_global_prox": _runs("as gifair_global"),
    "gifair_per": _runs("as gifair_global; the personal models are kept by the ServerApp"),
    "ditto": _runs(
        "train twice (the global steps, then the personal ones on the same minibatches); the personal models "
        "are kept by the ServerApp and sent with it"
    ),
    "local": _runs("train from each client's own model, kept by the ServerApp and sent with it"),
    "equitable_fl": _runs(
        "train (the activation vectors accumulate during training; query.features for other reductions); "
        "round_metrics: evaluate and query.features on all N clients"
    ),
    "afl": _runs("train on all N clients (full participation), then evaluate all N at the received model"),
    "divfl": _runs(
        "query.gradients on all N clients (every round with grad_mode='fresh', at round 0 with 'stale' and "
        "then on the uploading clients), then train"
    ),
    "subtrunc": _runs("query.gradients and evaluate on all N clients every round, then train"),
    "unionfl": _runs("query.gradients on all N clients every round, then train"),
    "afga": GOSSIP,
    "cafga": GOSSIP,
    "dsgd": GOSSIP,
    "pga": GOSSIP,
    "dadam": GOSSIP,
    "centralized": Mapping(
        False, "it trains one model on the pooled training data of every client: there is no federation"
    ),
}


def check_flower_config(cfg) -> None:
    """Raise :class:`FlowerUnsupported` naming the reason when ``cfg`` cannot run exactly as a Flower app."""
    name = cfg.algorithm.name
    algorithm_class(name)  # an unknown name: the registry's error, listing the known ones
    mapping = SUPPORT.get(name)
    if mapping is None:
        raise FlowerUnsupported(
            f"algorithm {name!r} has no entry in fairfl_core/flower/support.py: decide there whether its "
            "round maps onto Flower messages"
        )
    if not mapping.supported:
        raise FlowerUnsupported(f"algorithm {name!r} cannot run as a Flower app: {mapping.how}")
    if cfg.faults.rate:
        raise FlowerUnsupported(
            f"config field faults.rate = {cfg.faults.rate!r}: fairfl's engine simulates client faults, while "
            "in a Flower run they are real (a node that does not answer stops the run); set faults.rate: 0"
        )


DOC = Path(__file__).resolve().parents[2] / "docs" / "flower.md"
_BLOCK = re.compile(r"(<!-- support -->\n)(?P<body>.*?)(<!-- /support -->)", re.DOTALL)


def support_table() -> str:
    """:data:`SUPPORT` as the Markdown table of ``docs/flower.md``."""
    rows = [f"| `{name}` | {'yes' if m.supported else 'no'} | {m.how} |" for name, m in SUPPORT.items()]
    return (
        "\n".join(
            ["| algorithm | runs | messages of one round, or why it cannot run |", "|---|---|---|", *rows]
        )
        + "\n"
    )


def write_support_table(doc: Path = DOC) -> bool:
    """Rewrite the support block of ``doc`` from :data:`SUPPORT`; True when it changed."""
    text = doc.read_text()
    if not _BLOCK.search(text):
        raise ValueError(f"{doc} has no <!-- support --> ... <!-- /support --> block to write the table into")
    new = _BLOCK.sub(lambda m: m.group(1) + support_table() + m.group(3), text)
    doc.write_text(new)
    return new != text


if __name__ == "__main__":
    changed = write_support_table()
    print(f"{DOC}: {'rewritten' if changed else 'already up to date'}")
    sys.exit(0)
