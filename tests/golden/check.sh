#!/usr/bin/env bash
# Runs every command of tests/golden/commands.txt and compares its stdout with the stored output
# (--update rewrites them). Run from anywhere: paths in the commands are relative to the repo.
set -euo pipefail
bin=$(realpath "$1")
mode=${2:-check}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
n=0
failed=0
while IFS= read -r line; do
  n=$((n + 1))
  case "$line" in ''|'#'*) continue ;; esac
  read -r -a args <<< "$line"
  out="$here/$n.out"
  actual=$("$bin" "${args[@]}" 2>/dev/null; echo "exit $?")
  if [ "$mode" = "--update" ]; then
    printf '%s\n' "$actual" > "$out"
  elif ! diff -q <(printf '%s\n' "$actual") "$out" >/dev/null 2>&1; then
    echo "golden output differs: line $n: topoplan $line" >&2
    diff <(printf '%s\n' "$actual") "$out" | head -20 >&2 || true
    failed=1
  fi
done < "$here/commands.txt"
[ "$failed" = 0 ] && echo "golden outputs identical"
exit "$failed"
