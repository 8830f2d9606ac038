#!/usr/bin/env bash
# Issue 12: a plan for a cluster of A100 and H100 servers, whose pipeline stages hold unequal
# layers, re-scores to the same step time from its JSON, from the Megatron-LM arguments export
# writes (a --pipeline-model-parallel-layout) and from the exported rank table.
set -euo pipefail
b=$1
cluster=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$b" plan --cluster "$cluster" --top 1 --format json -o "$d/p.json"
grep -q '"stage_layers"' "$d/p.json"
"$b" evaluate --plan "$d/p.json" --format json -o "$d/again.json"
"$b" export --plan "$d/p.json" -o "$d/r.json"
"$b" evaluate --ranks "$d/r.json" --format json -o "$d/ranks.json"
"$b" export --plan "$d/p.json" --format megatron -o "$d/args.txt"
args=$(tail -n 1 "$d/args.txt")
"$b" evaluate --cluster "$cluster" "--megatron-args=$args" --format json -o "$d/megatron.json"
step() { grep '"step_time_s"' "$1" | head -n 1 | tr -d ' ,'; }
p=$(step "$d/p.json")
for f in again ranks megatron; do
  s=$(step "$d/$f.json")
  [ "$s" = "$p" ] || { echo "$f: $s, the plan: $p" >&2; exit 1; }
done
echo same
