#!/usr/bin/env bash
# Set up (as scripts/setup.sh) and run the test suite: lint, types, unit tests, notebooks under nbval.
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
.venv/bin/ruff check fairfl_core tests benchmarks
.venv/bin/python -m mypy  # configured in pyproject.toml: fairfl_core/
if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest tests -m "not slow" "$@"
fi
.venv/bin/python -m pytest tests "$@"
.venv/bin/python -m pytest --nbval-lax notebooks/ -p no:cacheprovider
