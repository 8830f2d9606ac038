#!/usr/bin/env bash
# Issue 12: a plan searched around GPUs that are down, exported as a rank table, re-scores to the
# same step time under evaluate --plan and evaluate --ranks, and names no down GPU.
set -euo pipefail
b=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
c=(--nodes 64 --exclude 3:5,10:0,17:2,40:7,41:1)
"$b" plan "${c[@]}" --top 1 --format json -o "$d/p.json"
"$b" export --plan "$d/p.json" -o "$d/r.json"
# Whole files, not pipes: grep -m1 closing a pipe early would fail the writer (pipefail).
"$b" evaluate --plan "$d/p.json" --format json -o "$d/again.json"
"$b" evaluate --ranks "$d/r.json" --format json -o "$d/ranks.json"
step() { grep '"step_time_s"' "$1" | head -n 1 | tr -d ' ,'; }
planned=$(step "$d/p.json")
again=$(step "$d/again.json")
ranks=$(step "$d/ranks.json")
echo "plan $planned, evaluate --plan $again, evaluate --ranks $ranks" >&2
python3 - "$d/r.json" <<'PY'
import json, sys
down = {(3, 5), (10, 0), (17, 2), (40, 7), (41, 1)}
ranks = json.load(open(sys.argv[1]))["ranks"]
used = [(r["node"], r["gpu"]) for r in ranks]
assert not down & set(used), "a down GPU is used"
assert len(set(used)) == len(used), "a GPU used twice"
launch = sorted(r["launch_rank"] for r in ranks)
assert launch == list(range(len(ranks))), "launch ranks are not a permutation"
by_launch = sorted(ranks, key=lambda r: r["launch_rank"])
assert [(r["node"], r["gpu"]) for r in by_launch] == sorted(used), "launch order is not device order"
PY
# The DeviceMesh export builds the groups from launch ranks (a permutation of the ranks).
"$b" export --plan "$d/p.json" --format devicemesh -o "$d/mesh.py"
grep -q 'mesh = DeviceMesh("cuda", launch_ranks' "$d/mesh.py"
test "$planned" = "$again" && test "$planned" = "$ranks" && echo same
