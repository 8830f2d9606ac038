#!/usr/bin/env bash
# The central example drawn: 16 x DGX H100, Llama-3-70B, TP 8 x PP 4 x DP 4, the good mapping (TP
# inside each server) and the bad one (each TP group one GPU from eight servers), as HTML reports
# and SVG pictures under examples/reports/; with Chromium installed, also PNG screenshots.
# Usage: examples/report.sh [OUTDIR]   (default: examples/reports next to this script)
set -euo pipefail
topoplan=${TOPOPLAN:-topoplan}
out=${1:-$(dirname "$0")/reports}
mkdir -p "$out"
args=(--cluster dgx-h100 --nodes 16 --model llama3-70b --tp 8 --pp 4 --dp 4)
for pair in good:tp-dp-pp bad:dp-pp-tp; do
  name=${pair%%:*} order=${pair#*:}
  "$topoplan" check "${args[@]}" --order "$order" --format html -o "$out/central-$name.html" || true
  "$topoplan" check "${args[@]}" --order "$order" --format svg -o "$out/central-$name.svg" || true
  if command -v chromium >/dev/null; then
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2000 \
      --screenshot="$out/central-$name.png" "file://$(cd "$out" && pwd)/central-$name.html" \
      >/dev/null 2>&1
  fi
done
ls "$out"
