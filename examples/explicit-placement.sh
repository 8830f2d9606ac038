#!/usr/bin/env bash
# Score and check a hand-written placement that no order string produces: TP 8 x PP 2 on two
# DGX H100 servers, each TP group taking 4 GPUs from each server (examples/ranks/).
# The file names only rank -> node, GPU and the plan; cluster and model come from its "inputs".
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
here=$(cd "$(dirname "$0")" && pwd)
"$topoplan" evaluate --ranks "$here/ranks/split-tp-groups.json"
# check must fail it (exit 1): the TP groups cross servers though an order keeps them inside one.
if "$topoplan" check --ranks "$here/ranks/split-tp-groups.json"; then
  echo "expected check to fail the split placement" >&2
  exit 1
fi
