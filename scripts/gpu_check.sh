#!/usr/bin/env bash
# The GPU check (scripts/gpu_check.md): every section of benchmarks/gpu_check.py on CUDA, each under its own
# time limit (270 s in all), into OUT_DIR/gpu_check.tar.gz and OUT_DIR/summary.txt.
#
#   scripts/gpu_check.sh OUT_DIR
#
# Exit status: 1 when the CPU/CUDA agreement check failed, 2 without the data or CUDA, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_check.sh OUT_DIR}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export FAIRFL_DATA=${FAIRFL_DATA:-$PWD/gpu_data}
[ -f "$FAIRFL_DATA/FashionMNIST/raw/train-images-idx3-ubyte.gz" ] \
  || { echo "gpu_check.sh: no Fashion-MNIST under $FAIRFL_DATA: run scripts/gpu_data.sh where the data is" >&2; exit 2; }
exec "${PYTHON:-python3}" benchmarks/gpu_check.py "$out" --size full --device cuda
