#!/usr/bin/env python3
"""Checks the corpus counts the README's accuracy section states against `topoplan calibrate`.

Usage: readme_counts.py TOPOPLAN README.md
The sentence "`topoplan calibrate` re-predicts N published runs" and the counts "N training runs",
"N inference runs" and "N collective measurements" after it must be the corpus's own.
"""
import json
import re
import subprocess
import sys


def main() -> int:
    binary, readme = sys.argv[1], sys.argv[2]
    runs = json.loads(subprocess.run([binary, "calibrate", "--format", "json"], check=True,
                                     capture_output=True, text=True).stdout)["runs"]
    want = {
        "published runs": len(runs),
        "training runs": sum(r["kind"] == "training" for r in runs),
        "inference runs": sum(r["kind"] == "inference" for r in runs),
        "collective measurements": sum(r["kind"] == "collective" for r in runs),
    }
    text = open(readme, encoding="utf-8").read()
    start = text.index("`topoplan calibrate` re-predicts")
    section = text[start:text.index("**Expected error", start)]
    bad = 0
    for what, n in want.items():
        found = re.search(r"(\d+) " + what.replace(" ", r"\s+"), section)
        if not found:
            print(f"README.md: the accuracy section does not say how many {what} (want {n})")
            bad += 1
        elif int(found.group(1)) != n:
            print(f"README.md: says {found.group(1)} {what}, the corpus has {n}")
            bad += 1
    if not bad:
        print("README corpus counts: " + ", ".join(f"{n} {w}" for w, n in want.items()))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
