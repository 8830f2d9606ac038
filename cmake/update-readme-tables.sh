#!/usr/bin/env bash
# Regenerates the README's measured parts from the built binary: the accuracy and calibration
# tables and every example output block (cmake/ReadmeOutputs.cmake). Run after changing the cost
# model or the calibration; the readme.* tests fail until then.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/topoplan}
replace() {  # section, command...
  local section=$1; shift
  local body; body=$("$@")
  python3 - "$section" "$body" <<'PY'
import sys
section, body = sys.argv[1], sys.argv[2]
text = open("README.md").read()
begin, end = f"<!-- {section}:begin -->\n", f"<!-- {section}:end -->"
a = text.index(begin) + len(begin)
b = text.index(end)
open("README.md", "w").write(text[:a] + body + "\n" + text[b:])
PY
}
replace calibrate "$bin" calibrate --format markdown
replace constants "$bin" calibrate --constants --format markdown
replace cross-validate "$bin" calibrate --cross-validate --format markdown
replace cluster-fields "$bin" schema cluster --format markdown
replace one-run-fit bash -c "echo '\`\`\`'; python3 tests/tools/one_run_fit.py '$bin' | grep '^one run fitted per'; echo '\`\`\`'"
"$bin" schema calibration >configs/schema/calibration.schema.json
cmake -DBIN="$bin" -DREADME=README.md -DWORKDIR="$PWD" -DMODE=update -P cmake/ReadmeOutputs.cmake
bash tests/golden/check.sh "$bin" --update >/dev/null
