"""A secure Flower deployment of real processes on this machine (docs/flower.md, "Deployment").

`LocalFederation` starts a SuperLink with TLS and SuperNode authentication (``flower-superlink
--ssl-certfile ... --enable-supernode-auth``) on a free loopback port, registers SuperNode public keys with
``flwr supernode register``, starts SuperNodes and runs the fairfl app of ``flower/template`` with ``flwr
run``: the commands of docs/flower.md, with the certificates of ``scripts/flower_certs.sh``. Every process it
starts runs in its own process group, killed on exit. ``tests/flower/test_deployment.py`` and
``benchmarks/flower_deploy_round.py`` use it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["LocalFederation", "free_port"]

TEMPLATE = Path(__file__).parent / "template"


def free_port() -> int:
    """A TCP port of 127.0.0.1 that no process listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin(name: str) -> str:
    """A console script of this Python's environment (Flower's commands)."""
    return str(Path(sys.executable).parent / name)


class LocalFederation:
    """A SuperLink with TLS and SuperNode authentication, and its SuperNodes, under ``workdir``.

    ``certs`` holds ``ca.crt``, ``server.crt``, ``server.key`` and ``supernode_<k>[.pub]``
    (``scripts/flower_certs.sh``). Use as a context manager; ``timeout`` bounds each wait and command."""

    def __init__(self, workdir: Path, certs: Path, timeout: float = 300.0):
        self.workdir, self.certs, self.timeout = Path(workdir), Path(certs), timeout
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []
        home = self.workdir / "flwr-home"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "fairfl"\n\n[superlink.fairfl]\naddress = "{self.address}"\n'
            f'root-certificates = "{self.certs / "ca.crt"}"\n'
        )
        # Flower's commands start each other (flower-superexec, flwr-clientapp) through PATH
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env = {**os.environ, "FLWR_HOME": str(home), "PATH": path}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True, cwd=self.workdir
        )
        log.close()
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def __enter__(self) -> LocalFederation:
        c = self.certs
        self._start(
            "superlink",
            [
                _bin("flower-superlink"),
                *("--ssl-ca-certfile", str(c / "ca.crt"), "--ssl-certfile", str(c / "server.crt")),
                *("--ssl-keyfile", str(c / "server.key"), "--enable-supernode-auth"),
                *("--disable-runtime-dependency-installation", "--port", str(self.port)),
            ],
        )
        deadline = time.monotonic() + self.timeout
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if time.monotonic() > deadline or self.processes[0].poll() is not None:
                self.close()
                raise RuntimeError(f"the SuperLink did not start: {self.log('superlink')[-2000:]}")
            time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process started here (its whole process group: a SuperNode's SuperExec and apps)."""
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def flwr(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """``flwr <args>`` against this SuperLink (bounded by ``timeout``)."""
        return subprocess.run(
            [_bin("flwr"), *args],
            env=self.env,
            cwd=cwd or self.workdir,
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )

    def register(self, k: int) -> None:
        """Authorise SuperNode key ``supernode_<k>`` (``flwr supernode register``)."""
        done = self.flwr("supernode", "register", str(self.certs / f"supernode_{k}.pub"), "fairfl")
        if done.returncode != 0:
            raise RuntimeError(f"flwr supernode register failed: {done.stdout}{done.stderr}")

    def supernode(
        self,
        k: int,
        client: int,
        *,
        trust_ca: bool = True,
        retries: int | None = None,
        long_lived: bool = False,
    ):
        """Start a SuperNode with key ``supernode_<k>`` for fairfl client ``client`` (its node config
        ``partition-id``); ``trust_ca=False`` leaves out ``--root-certificates``; ``retries`` bounds its
        reconnection attempts; ``long_lived`` runs its ClientApp in one process started here
        (``--isolation process`` and ``fairfl flower-clientapp``) instead of one process per message."""
        port = free_port()
        args = [_bin("flower-supernode"), "--superlink", self.address, "--port", str(port)]
        args += ["--auth-supernode-private-key", str(self.certs / f"supernode_{k}")]
        args += ["--node-config", f"partition-id={client}"]
        if trust_ca:
            args += ["--root-certificates", str(self.certs / "ca.crt")]
        if retries is not None:
            args += ["--max-retries", str(retries), "--max-wait-time", "10"]
        if long_lived:
            args += ["--isolation", "process"]
        node = self._start(f"supernode_{k}", args)
        if long_lived:
            address = f"127.0.0.1:{port}"
            self._start(
                f"clientapp_{k}", [_bin("fairfl"), "flower-clientapp", "--runtime-api-address", address]
            )
        return node

    def run(self, config: Path, overrides: str = "") -> list[dict]:
        """``flwr run`` of the fairfl app on ``config`` (``fairfl-set`` = ``overrides``); returns each run's
        ``flower_run_<i>.json``."""
        app, output = self.workdir / "app", self.workdir / "output"
        shutil.copytree(TEMPLATE, app, dirs_exist_ok=True)
        run_config = f"fairfl-config='{config}' fairfl-set='{overrides}' fairfl-output='{output}'"
        done = self.flwr("run", ".", "fairfl", "--stream", "--run-config", run_config, cwd=app)
        if not sorted(output.glob("flower_run_*.json")):
            raise RuntimeError(f"flwr run wrote no result ({done.returncode}): {done.stdout[-3000:]}")
        return [json.loads(f.read_text()) for f in sorted(output.glob("flower_run_*.json"))]
