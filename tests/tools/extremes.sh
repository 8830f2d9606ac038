#!/usr/bin/env bash
# Numeric safety (issue 11, item 5): extreme but legal inputs give a plan or a clear reason
# (exit 0 or 1), and no NaN or infinity in any output, text or JSON.
#   extremes.sh TOPOPLAN DATA_DIR
set -uo pipefail
b=$1 x=$2/extreme
fail=0
run() {
  for fmt in table json; do
    out=$("$b" "$@" --format "$fmt" 2>&1); rc=$?
    if [[ $rc -gt 1 ]]; then echo "FAIL (exit $rc): $* --format $fmt: $out" | head -3; fail=1; continue; fi
    if grep -qiE '(^|[^a-z])(nan|-?inf|infinity)([^a-z]|$)' <<<"$out"; then
      echo "FAIL (non-finite): $* --format $fmt"; grep -iE 'nan|inf' <<<"$out" | head -3; fail=1; continue
    fi
    [[ $fmt == table ]] && echo "ok (exit $rc): $*: $(grep -m1 -E '^#1|no plan|no valid|^  *[0-9]' <<<"$out" | cut -c1-90)"
  done
}
run plan --gpus 1 --model llama3-8b --top 1
run evaluate --gpus 1 --model llama3-8b --tp 1 --pp 1
run plan --inference --cluster dgx-h100 --nodes 1 --model llama3-8b --tp 1 --top 1
run plan --nodes 131072 --model llama3-8b --global-batch 16777216 --top 1
run plan --inference --nodes 131072 --model llama3-8b --top 1
run plan --model "$x/model-10t.json" --nodes 4096 --global-batch 16384 --top 1
run plan --model "$x/model-10t.json" --nodes 1 --top 1
run plan --inference --model "$x/model-10t.json" --nodes 64 --top 1
run plan --cluster "$x/slow-links.json" --model llama3-8b --top 1
run plan --inference --cluster "$x/slow-links.json" --model llama3-8b --top 1
run plan --cluster "$x/fast-links.json" --model llama3-8b --top 1
run evaluate --cluster "$x/fast-links.json" --model llama3-8b --tp 8 --pp 2
run plan --nodes 2 --model llama3-8b --seq-len 1 --top 1
run plan --nodes 64 --model llama3-8b --seq-len 10000000 --global-batch 64 --top 1
run evaluate --nodes 64 --model llama3-8b --seq-len 10000000 --global-batch 64 --tp 8 --cp 64
run plan --inference --nodes 1 --model llama3-8b --prompt-len 1 --output-len 1 --top 1
run plan --inference --nodes 8 --model llama3-8b --prompt-len 10000000 --output-len 1 --top 1
exit $fail
