"""``benchmarks/round_overhead.py`` runs on the CPU: one round of one algorithm, its ratio computed from the
two times it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
LINE = re.compile(r"^fedavg\s+quickstart\s+\S+\s+round_s=(\S+) local_s=(\S+) ratio=(\S+)", re.M)


def test_round_overhead_times_a_round_and_its_local_training():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    args = ["--algorithms", "fedavg,no_such_algorithm", "--only", "^quickstart$", "--rounds", "1"]
    out = subprocess.run(
        [sys.executable, "round_overhead.py", *args],
        cwd=ROOT / "benchmarks",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    match = LINE.search(out.stdout)
    assert match, out.stdout
    round_s, local_s, ratio = (float(v) for v in match.groups())
    assert 0 < local_s <= round_s  # local training is part of the round
    assert abs(ratio - round_s / local_s) <= 0.01 * ratio + 0.005
    assert "no_such_algorithm" in out.stdout and "no experiment runs it" in out.stdout
