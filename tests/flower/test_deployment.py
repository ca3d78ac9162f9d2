"""A secure deployment on loopback (issue #33): a SuperLink with TLS and SuperNode authentication
(`fairfl_core.flower.local`, the commands of docs/flower.md, certificates of scripts/flower_certs.sh). An
authorised SuperNode, its ClientApp a long-lived ``fairfl flower-clientapp`` process, completes a 1-round
run; a SuperNode whose key is not registered is refused; one that
does not trust the CA cannot connect. Every wait is bounded and every process group is killed at the end."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytest.importorskip("flwr")

from fairfl_core.flower.local import LocalFederation  # noqa: E402
from tests.experiments.conftest import digits_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("openssl") and shutil.which("ssh-keygen")),
        reason="scripts/flower_certs.sh needs openssl and ssh-keygen",
    ),
]


def test_tls_and_supernode_authentication_on_loopback(tmp_path):
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(ROOT / "scripts/flower_certs.sh"), str(certs), "3"], check=True, timeout=120)
    cfg = digits_config(rounds=1, clients_per_round=1).to_dict()
    cfg["data"].update(partition="iid", num_clients=1, partition_options={})
    config = tmp_path / "one_client.yaml"
    config.write_text(yaml.safe_dump(cfg))
    with LocalFederation(tmp_path, certs, timeout=240) as federation:
        federation.register(0)
        federation.register(1)
        unregistered = federation.supernode(2, 0, retries=1)
        untrusting = federation.supernode(1, 0, trust_ca=False, retries=1)
        assert unregistered.wait(120) != 0 and untrusting.wait(120) != 0
        assert "Failed to activate SuperNode" in federation.log("supernode_2")
        assert "CERTIFICATE_VERIFY_FAILED" in federation.log("supernode_1")
        federation.supernode(0, 0, long_lived=True)  # its ClientApp: one `fairfl flower-clientapp` process
        (run,) = federation.run(config)
    assert run["summary"]["status"] == "complete" and run["summary"]["rounds"] == 1
    assert json.dumps(run)  # the result is plain JSON
