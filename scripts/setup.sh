#!/usr/bin/env bash
# Create or reuse .venv, install the pinned dependencies (requirements.lock: every package of
# `pip install -e ".[dev]"`, exact versions) and fairfl itself, and prepare the offline data.
# Idempotent: a second call with unchanged requirements.lock and pyproject.toml skips the install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.fairfl-installed
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing requirements.lock and fairfl into .venv (first time: a few minutes, torch is large)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
fi

# Offline data (see docs/data.md): the full Fashion-MNIST from Debian's dataset-fashion-mnist package.
if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "setup: installing Debian's dataset-fashion-mnist (real Fashion-MNIST, 30 MB)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist; } >/dev/null \
    || echo "setup: warning: could not install dataset-fashion-mnist; Fashion-MNIST runs need FAIRFL_DATA"
fi
.venv/bin/fairfl prepare-data
