"""The documented 4-SuperNode deployment (docs/flower.md, "Deployment") on loopback: seconds per round with
a new ``flwr-clientapp`` process per message (Flower's default, ``--isolation subprocess``) and with one
long-lived ClientApp process per SuperNode (``--isolation process`` and ``fairfl flower-clientapp``).

Both runs are secure as documented (TLS, SuperNode authentication: ``fairfl_core.flower.local``, the
certificates of ``scripts/flower_certs.sh``): a 2-round q-FFL run on digits with 4 clients, one SuperNode
each, all selected every round. A round is the ServerApp's ``algorithm.round(t)`` (its ``seconds``), the
evaluation excluded. The last line is::

    flower_deploy per_message_s_per_round=<x> long_lived_s_per_round=<y> ratio=<x/y>

Usage: ``python benchmarks/flower_deploy_round.py [--rounds 2]`` from the repository root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

import yaml

from fairfl_core.flower.local import LocalFederation

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {
    "name": "flower-deployment-4",
    "data": {
        "name": "digits",
        "partition": "dirichlet",
        "num_clients": 4,
        "partition_options": {"alpha": 1.0},
    },
    "model": {"name": "mlp", "options": {"in_features": 64}},
    "algorithm": {"name": "qffl", "params": {"q": 1.0}},
    "train": {"clients_per_round": 4, "batch_size": 16, "lr": 0.05, "local_steps": 3},
}


def seconds_per_round(workdir: Path, certs: Path, config: Path, rounds: int, long_lived: bool) -> float:
    with LocalFederation(workdir, certs, timeout=600) as federation:
        for k in range(4):
            federation.register(k)
            federation.supernode(k, k, long_lived=long_lived)
        (run,) = federation.run(config, f"train.rounds={rounds} eval.every={rounds}")
    seconds = [r["seconds"] for r in run["rounds"]]
    print(f"long_lived={long_lived} seconds per round: {[round(s, 2) for s in seconds]}")
    return statistics.mean(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(["bash", str(ROOT / "scripts/flower_certs.sh"), str(tmp / "certs"), "4"], check=True)
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump(CONFIG))
        before = seconds_per_round(tmp / "per_message", tmp / "certs", config, args.rounds, False)
        after = seconds_per_round(tmp / "long_lived", tmp / "certs", config, args.rounds, True)
    print(
        f"flower_deploy per_message_s_per_round={before:.2f} long_lived_s_per_round={after:.2f} "
        f"ratio={before / after:.1f}"
    )


if __name__ == "__main__":
    main()
