#!/usr/bin/env bash
# Export one plan for every launcher, then re-score the exported placement exactly.
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The best plan for Llama-3-8B on 2 x DGX H100, as JSON, then every launcher format from it.
"$topoplan" plan --model llama3-8b --nodes 2 --format json -o "$out/plan.json"
"$topoplan" export --plan "$out/plan.json" --hosts "$here/hosts.txt" --out-dir "$out/launch"
ls "$out/launch"
cat "$out/launch/megatron-args.txt"

# evaluate --ranks re-scores exactly the exported placement: the same step time.
a=$("$topoplan" evaluate --plan "$out/plan.json" --format json | grep '"step_time_s"')
b=$("$topoplan" evaluate --ranks "$out/launch/ranks.json" --format json | grep '"step_time_s"')
echo "plan: $a  ranks: $b"
[ "$a" = "$b" ]
