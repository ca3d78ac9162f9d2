#!/usr/bin/env bash
# Set up (as scripts/setup.sh) and run the test suite: lint, types, unit tests, the comparison tests again
# under --kernel-jitter (tests/README.md), notebooks under nbval.
#
#   scripts/test.sh [--fast] [PYTEST ARGS ...]
#
#   --fast  lint, types and the unit tests not marked slow, without the notebooks (minutes on 2 cores)
# PYTEST ARGS go to the unit tests' pytest, e.g. scripts/test.sh --fast tests/report -x
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = --fast ]; then fast=1; shift; fi
bash scripts/setup.sh
.venv/bin/ruff check fairfl_core tests benchmarks notebooks
.venv/bin/python -m mypy  # configured in pyproject.toml: fairfl_core/
# the tests that compare computations, again as on a CPU whose kernels round otherwise (tests/README.md)
jitter=(tests/sim tests/flower tests/algorithms tests/experiments tests/papers tests/gossip tests/models)
if [ "$fast" = 1 ]; then
  .venv/bin/python -m pytest tests -m "not slow" "$@"
  exec .venv/bin/python -m pytest "${jitter[@]}" -m "not slow" --kernel-jitter -p no:cacheprovider
fi
.venv/bin/python -m pytest tests "$@"
.venv/bin/python -m pytest "${jitter[@]}" -m "not slow" --kernel-jitter -p no:cacheprovider
.venv/bin/python -m pytest --nbval-lax notebooks/ -p no:cacheprovider
