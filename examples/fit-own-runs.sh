#!/usr/bin/env bash
# Calibrate on your own measured runs, then plan with the result. topoplan's constants are
# fitted on published runs; a stack tuned better or worse than those moves every step time (the
# same model on the same GPUs runs 21% apart between two NVIDIA releases, README: How accurate
# is it). Measure a few steps of your own stack, write them in the format of
# configs/calibration/runs.json, mark the ones to fit "fit" and the rest "holdout", and:
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=${TOPOPLAN:-topoplan}
runs="$here/runs/llama3.1-405b-h100.json"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# 1. The built-in constants on your runs.
"$t" calibrate --runs "$runs"
# 2. Fit the H100 FP8 GEMM efficiency on your fit rows only; the held-back ones check it.
"$t" calibrate --runs "$runs" --fit --fit-keys gemm_efficiency_fp8.hopper \
  --fit-output "$out/my-calibration.json"
# 3. Plan or evaluate with your constants (expected-error lines then claim nothing: the
#    published held-back rows measured the built-in constants).
"$t" evaluate --calibration "$out/my-calibration.json" --cluster dgx-h100 --nodes 128 \
  --model llama3.1-405b --seq-len 8192 --global-batch 1152 --dtype fp8 --tp-overlap \
  --grad-reduce-bf16 --fp8-param-gather --sequence-parallel --tp 8 --pp 8 --cp 2 --vpp 8
