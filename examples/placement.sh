#!/usr/bin/env bash
# Placement around GPUs that are down (issue 12), on a rail-optimized fat tree
# (examples/clusters/h100-rail-fat-tree.json: 8-GPU servers, GPU i of 16 servers on rail switch i,
# rails joined by a 2:1 spine; server 3 has GPUs 6 and 7 down).
# 1. Llama-3-8B at TP 4 x PP 2 x DP 14 on 16 servers: the placement search keeps every TP group
#    inside a server and on the same GPU indices; the order strings laid over the usable GPUs
#    split one server's group and shift every later group across rails.
# 2. The whole search, with one more GPU down from the command line.
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
here=$(cd "$(dirname "$0")" && pwd)
cluster="$here/clusters/h100-rail-fat-tree.json"
"$topoplan" evaluate --cluster "$cluster" --nodes 16 --model llama3-8b --global-batch 448 \
  --no-overlap-grad-reduce --tp 4 --pp 2 --dp 14 | tail -n 1
"$topoplan" plan --cluster "$cluster" --exclude 9:0 --top 3
