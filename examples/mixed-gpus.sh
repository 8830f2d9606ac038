#!/usr/bin/env bash
# A reservation over two GPU generations (examples/clusters/mixed-a100-h100.json: 16 DGX A100 +
# 16 DGX H100 servers on one leaf). Each pipeline stage computes at its slowest GPU's speed, so
# the search balances layers across stages (fewer on the A100 stages) and prints the result side
# by side with the best plan that ignores the difference. Then one balanced split costed by hand.
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
here=$(cd "$(dirname "$0")" && pwd)
cluster="$here/clusters/mixed-a100-h100.json"
"$topoplan" plan --cluster "$cluster" --top 3
"$topoplan" evaluate --cluster "$cluster" --tp 8 --pp 4 --stage-layers 10,10,30,30 | grep -E "^step|^mixed"
