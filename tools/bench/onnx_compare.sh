#!/usr/bin/env bash
# Inference time of the toy transformer in dagrad against ONNX Runtime on the
# same model (`dagrad export`) and inputs, with the same threads:
#
#   bash tools/bench/onnx_compare.sh [--batch=32] [--seq=32] [--threads=1] [--repeat=50] [--rounds=3]
#
# Needs build/tools/{dagrad,onnx_compare} and ONNX Runtime for Node (bash
# tools/setup.sh --onnx). Each round runs dagrad's timing (onnx_compare: the
# median of `repeat` runs of a compiled plan) and then ONNX Runtime's
# (tools/onnx/ort_run.js: the median of `repeat` session runs), both after a
# warm-up run; it prints each round's ratio dagrad / ONNX Runtime (below 1:
# dagrad is faster), the median ratio over the rounds, the largest logits
# difference between the two, and the CPU (dagrad info).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
batch=32 seq=32 threads=1 repeat=50 rounds=3
for arg in "$@"; do
  case "$arg" in
    --batch=*) batch=${arg#*=} ;;
    --seq=*) seq=${arg#*=} ;;
    --threads=*) threads=${arg#*=} ;;
    --repeat=*) repeat=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    *) echo "onnx_compare.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "onnx_compare.sh: --rounds must be >= 1, got '$rounds'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ratios=()
for ((round = 1; round <= rounds; ++round)); do
  d=$("$build/tools/onnx_compare" --out_dir="$work" --batch="$batch" --seq="$seq" \
        --threads="$threads" --repeat="$repeat")
  if ((round == 1)); then
    "$build/tools/dagrad" export --checkpoint="$work/model.safetensors" --out="$work/model.onnx" >/dev/null
  fi
  o=$(node tools/onnx/ort_run.js --model="$work/model.onnx" --input="$work/input.safetensors" \
        --output="$work/ort_logits.safetensors" --threads="$threads" --repeat="$repeat")
  dms=$(sed 's/.*dagrad_ms_median=\([0-9.]*\).*/\1/' <<<"$d")
  oms=$(sed 's/.*ort_ms_median=\([0-9.]*\).*/\1/' <<<"$o")
  ratio=$(awk -v a="$dms" -v b="$oms" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  echo "round $round: dagrad ${dms} ms, ONNX Runtime ${oms} ms, ratio ${ratio}"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { print r[int((NR + 1) / 2)] }')
echo "toy transformer (B=$batch, T=$seq, default size), threads=$threads: median ratio dagrad / ONNX Runtime = $median"
/usr/bin/python3 - "$work" <<'PY'
import os, sys
sys.path.insert(0, os.path.join("tools", "goldens"))
import numpy as np, safetensors_io
a = safetensors_io.load(os.path.join(sys.argv[1], "dagrad_logits.safetensors"))[0]["logits"]
b = safetensors_io.load(os.path.join(sys.argv[1], "ort_logits.safetensors"))[0]["logits"]
print(f"max |dagrad - ONNX Runtime| logits difference: {np.abs(a - b).max():.3g}")
PY
"$build/tools/dagrad" info | grep -E '^(cpu|kernels)'
