#!/usr/bin/env bash
# The central example: 128 GPUs = 16 x DGX H100, Llama-3-70B (80 layers), TP 8 x PP 4 x DP 4.
# The same degrees, two mappings: TP groups inside one server, or each TP group taken from eight
# servers. topoplan shows the second is far slower and that the difference is exposed TP traffic.
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
args=(--cluster dgx-h100 --nodes 16 --model llama3-70b --tp 8 --pp 4 --dp 4)

"$topoplan" evaluate "${args[@]}" --order tp-dp-pp          # TP inside a server
"$topoplan" evaluate "${args[@]}" --order dp-pp-tp          # TP across eight servers
"$topoplan" plan "${args[@]}" --top 6                        # rank all six mappings

# The check a user would script: the good mapping must be at least twice as fast.
step() { "$topoplan" evaluate "${args[@]}" --order "$1" --format json |
         sed -n 's/.*"step_time_s": \([0-9.e+-]*\).*/\1/p'; }
good=$(step tp-dp-pp)
bad=$(step dp-pp-tp)
awk -v g="$good" -v b="$bad" 'BEGIN {
  printf "intra-server TP: %.2f s/step; TP across servers: %.2f s/step (%.2fx)\n", g, b, b / g
  exit !(b > 2 * g) }'
