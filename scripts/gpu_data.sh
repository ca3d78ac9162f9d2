#!/usr/bin/env bash
# Copy the offline data the GPU check needs into gpu_data/ (git-ignored, about 35 MB), so that it travels with
# the working tree to a GPU machine that has no network and no datasets: the Fashion-MNIST IDX files (from
# $FAIRFL_DATA or Debian's dataset-fashion-mnist) and the Shakespeare texts that `fairfl prepare-data` unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${FAIRFL_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/fairfl}
mkdir -p gpu_data/FashionMNIST/raw gpu_data/shakespeare
fmnist=""
for d in "$src/FashionMNIST/raw" "$src" /usr/share/datasets/fashion-mnist; do
  if [ -f "$d/train-images-idx3-ubyte.gz" ]; then fmnist=$d; break; fi
done
[ -n "$fmnist" ] || { echo "gpu_data.sh: no Fashion-MNIST IDX files found; run scripts/setup.sh first" >&2; exit 2; }
cp "$fmnist"/*-ubyte.gz gpu_data/FashionMNIST/raw/
[ -d "$src/shakespeare/texts" ] || { echo "gpu_data.sh: no Shakespeare texts in $src; run fairfl prepare-data" >&2; exit 2; }
rm -rf gpu_data/shakespeare/texts && cp -r "$src/shakespeare/texts" gpu_data/shakespeare/
du -sh gpu_data
