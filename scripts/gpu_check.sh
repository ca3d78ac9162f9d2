#!/usr/bin/env bash
# The GPU check: one command for a GPU machine with torch installed and no network (scripts/gpu_check.md).
#
#   scripts/gpu_check.sh OUT_DIR
#
# Runs, each under its own time limit (their limits add up to 9 minutes; about 8 on one H100):
#   1. the CPU/CUDA agreement of one config and seed (W1 in float64, 30 rounds; benchmarks/device_agreement.py);
#   2. W1-W4 on CUDA (round_speed.py with W1 as rows, cnn_round.py, lstm_step.py, convmixer_round.py); W3
#      times the LSTM's fused loop against its gates kernel under vmap (engine.client_axis=vmap);
#   3. what every experiment's paper profile costs on this card (benchmarks/paper_cost.py --device cuda), and
#      the Shakespeare experiments again with engine.client_axis=vmap (step w3_vmap).
# Each step's whole output goes to OUT_DIR/<step>.log (paper_cost also to OUT_DIR/paper_cost.json); the
# summary table comes last. Exit status: 1 when the agreement check failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_check.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export FAIRFL_DATA=${FAIRFL_DATA:-$PWD/gpu_data}
py=${PYTHON:-python3}
[ -f "$FAIRFL_DATA/FashionMNIST/raw/train-images-idx3-ubyte.gz" ] \
  || { echo "gpu_check.sh: no Fashion-MNIST under $FAIRFL_DATA: run scripts/gpu_data.sh where the data is" >&2; exit 2; }
"$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check.sh: CUDA is not available')" || exit 2
"$py" -c "import torch; print('device:', torch.cuda.get_device_name(0), '| torch', torch.__version__, '| CUDA', torch.version.cuda)" | tee "$out/device.txt"

step() {  # step NAME SECONDS ARGS...: one benchmark under a time limit, its output in OUT_DIR/NAME.log
  local name=$1 limit=$2; shift 2
  local tick=$SECONDS
  timeout "$limit" "$py" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - tick))s" | tee -a "$out/steps.txt"
  return $rc
}

step agreement 75 benchmarks/device_agreement.py --rounds 30 --devices cpu cuda
agreement=$?
step w1 75 benchmarks/round_speed.py --device cuda --rounds 60 --sequential-rounds 6 --repeats 3 --rows 8
step w2 60 benchmarks/cnn_round.py --device cuda --repeats 2
step w3 50 benchmarks/lstm_step.py --device cuda --repeats 2 --steps 2
step w4 60 benchmarks/convmixer_round.py --device cuda --repeats 2
step w3_vmap 50 benchmarks/paper_cost.py --device cuda --only shakespeare --rounds 1 --rows 0 --max-round-s 3 \
  --set engine.client_axis=vmap --json "$out/paper_cost_vmap.json"
step paper_cost 180 benchmarks/paper_cost.py --device cuda --rounds 2 --rows 4 --max-round-s 3 --json "$out/paper_cost.json"

echo
echo "== GPU check summary ($(cat "$out/device.txt")) =="
cat "$out/steps.txt"
grep -h -E "^agreement |^W1 |^W2\[|^W3 |^W4 |^paper_cost " "$out"/agreement.log "$out"/w1.log "$out"/w2.log \
  "$out"/w3.log "$out"/w4.log "$out"/w3_vmap.log "$out"/paper_cost.log 2>/dev/null
[ "$agreement" = 0 ]
