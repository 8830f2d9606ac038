#!/usr/bin/env python3
"""How much one configuration's published throughput moves between software releases.

Reads NVIDIA Megatron-Bridge's performance summary (docs/performance-summary-archive.md, and
optionally docs/performance-summary.md, of NVIDIA-NeMo/Megatron-Bridge; not in this repository:
`git show <commit>:docs/performance-summary-archive.md` in a clone), groups its pre-training rows
by everything a row states (system, model, GPUs, precision, global and micro batch, sequence,
FSDP, TP, PP, CP, VP, EP) and, for each configuration published by two or more NeMo containers,
prints the spread of its tokens/s/GPU (largest over smallest, minus one). Rows whose figure has a
parenthesised variant, or whose table leaves a column out, are skipped.

The spread is the noise floor a release-agnostic model has on such rows: the same configuration
on the same hardware, measured by the same team, months apart.

usage: release_spread.py ARCHIVE.md [CURRENT.md ...]
"""
import re
import statistics
import sys
from collections import defaultdict

KEYS = ["System", "Model", "#-GPUs", "Precision", "GBS", "MBS", "Sequence Length", "FSDP", "TP",
        "PP", "CP", "VP", "EP"]
THROUGHPUT = "Tokens / sec / GPU"


def table_rows(path):
    """Every table row of the file as a dict, with its container, section, system and model."""
    container = section = system = model = None
    header = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if m := re.match(r"^## (\S+) NeMo Container", line):
            container, section, header = m.group(1), None, None
        elif m := re.match(r"^### (.*)", line):
            section, header = m.group(1), None
        elif m := re.match(r"^#### System: (.*)", line):
            system, model, header = m.group(1).strip(), None, None
        elif m := re.match(r"^#### Model: (.*)", line):
            model, system, header = m.group(1).strip(), None, None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                row = dict(zip(header, cells))
                row.update(container=container, section=section or "")
                row.setdefault("System", system)
                row.setdefault("Model", model)
                yield row


def configurations(paths):
    groups = defaultdict(dict)
    for path in paths:
        for r in table_rows(path):
            figure = r.get(THROUGHPUT, "")
            if "Pre-Training" not in r["section"] or not figure.isdigit():
                continue
            if any(r.get(k) in (None, "") for k in KEYS):
                continue
            key = tuple(r[k].replace("n/a", "1") for k in KEYS)
            groups[key].setdefault(r["container"], float(figure))
    return {k: v for k, v in groups.items() if len(v) >= 2}


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    multi = configurations(argv[1:])
    spreads = []
    for key, by_container in sorted(multi.items()):
        values = by_container.values()
        spread = max(values) / min(values) - 1
        spreads.append((spread, key))
        figures = ", ".join(f"{c} {v:g}" for c, v in by_container.items())
        print(f"{spread * 100:5.1f}%  {' '.join(key[:4])} GBS {key[4]} MBS {key[5]} "
              f"TP {key[8]} PP {key[9]} CP {key[10]} VP {key[11]} EP {key[12]}: {figures}")
    all_spreads = [s for s, _ in spreads]
    dense = [s for s, k in spreads if k[1].upper().startswith("LLAMA")]
    print(f"{len(all_spreads)} configurations in two or more containers: median spread "
          f"{statistics.median(all_spreads) * 100:.1f}%; dense Llama ones ({len(dense)}): "
          f"{min(dense) * 100:.1f}% to {max(dense) * 100:.1f}%, median "
          f"{statistics.median(dense) * 100:.1f}%")


if __name__ == "__main__":
    main(sys.argv)
