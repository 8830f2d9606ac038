#!/usr/bin/env bash
# Plan on your own cluster description: a RoCE fabric with 2 servers per rack and a 2:1
# oversubscribed layer above. Data parallelism is pushed onto the slow tier, TP stays on NVLink.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"${TOPOPLAN:-topoplan}" plan --cluster "$here/clusters/roce-rail-2tier.json" \
  --model llama3-8b --seq-len 8192 --global-batch 512 --top 5
