#!/usr/bin/env bash
# Set up (as scripts/setup.sh) and run the test suite: lint, types, unit tests, the comparison tests again
# under --kernel-jitter (tests/README.md), notebooks under nbval.
#
#   scripts/test.sh [--fast] [PYTEST ARGS ...]
#
#   --fast  lint, types and the unit tests not marked slow, without the notebooks (minutes on 2 cores)
# PYTEST ARGS go to the unit tests' pytest, e.g. scripts/test.sh --fast tests/report -x
#
# Every pass runs on every core (pytest-xdist, one file per worker at a time): each test worker gets its share
# of the threads (tests/conftest.py), each notebook kernel one thread. The notebooks share the run cache
# results/; a run two of them need is computed by one while the other waits (RunStore.computing).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = --fast ]; then fast=1; shift; fi
bash scripts/setup.sh
.venv/bin/ruff check fairfl_core tests benchmarks notebooks scripts
.venv/bin/python -m mypy  # configured in pyproject.toml: fairfl_core/
# the tests that compare computations, again as on a CPU whose kernels round otherwise (tests/README.md)
jitter=(tests/sim tests/flower tests/algorithms tests/experiments tests/papers tests/gossip tests/models)
cores=(-n auto --dist loadfile)
if [ "$fast" = 1 ]; then
  .venv/bin/python -m pytest "${cores[@]}" tests -m "not slow" "$@"
  exec .venv/bin/python -m pytest "${cores[@]}" "${jitter[@]}" -m "not slow" --kernel-jitter -p no:cacheprovider
fi
.venv/bin/python -m pytest "${cores[@]}" tests "$@"
.venv/bin/python -m pytest "${cores[@]}" "${jitter[@]}" -m "not slow" --kernel-jitter -p no:cacheprovider
OMP_NUM_THREADS=1 .venv/bin/python -m pytest "${cores[@]}" --nbval-lax notebooks/ -p no:cacheprovider
