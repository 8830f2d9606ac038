#!/usr/bin/env bash
# A CI step: reject a training configuration whose rank placement is pathological before it runs.
# It hands topoplan the same Megatron-LM arguments the training script would get. Exit 0 passes,
# 1 fails the job (a rule found an error), 2 means the inputs themselves are wrong.
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}

# The arguments your launcher passes (here: the seed's good layout, TP inside each server).
MEGATRON_ARGS="--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4
  --micro-batch-size 1 --global-batch-size 512 --seq-length 4096 --bf16
  --use-distributed-optimizer"

"$topoplan" check --cluster dgx-h100 --nodes 16 --model llama3-70b \
  --megatron-args "$MEGATRON_ARGS" --max-slowdown 1.25 --format github

# The pathological layout must fail: each TP group takes one GPU from eight servers.
if "$topoplan" check --cluster dgx-h100 --nodes 16 --model llama3-70b \
     --tp 8 --pp 4 --dp 4 --order dp-pp-tp --format junit -o check-report.xml; then
  echo "expected the dp-pp-tp layout to fail" >&2
  exit 1
fi
grep -q '<failure type="tp-tier"' check-report.xml
echo "check-training-config: good layout passes, pathological layout fails"
