#!/usr/bin/env python3
"""What calibrating on one run of your own buys, measured on the published corpus.

A user who has measured one training run on their stack can fit topoplan's GEMM efficiency to it
(`topoplan calibrate --runs FILE --fit --fit-keys KEY`) and plan the next runs with it. This tool
asks how far that carries: it splits the held-back, checked training rows of the corpus
(configs/calibration/runs.json) into groups of one family (a publication or benchmark suite: one
software stack and era), one GPU architecture and one precision, takes each group's first row in
corpus order as "your run", fits the one constant that row's GEMMs run at
(gemm_efficiency.<arch>, or gemm_efficiency_fp8.<arch> / gemm_efficiency_fp4.<arch> for FP8 and
MXFP8 / NVFP4) so that topoplan reproduces it
exactly, and predicts the group's other rows with that value. It prints each group's error on
those other rows before and after, and the whole. It does it twice: with those groups, and with
groups that also share the model, the sequence length and the model-parallel plan (tp, pp, cp,
ep, vpp), which is the same configuration at another scale or batch.

The first row is taken, not chosen: nothing here looks at the errors to pick it. Groups with one
row have nothing to predict and are skipped; a group whose first row no value in [0.2, 0.98]
reproduces is reported and skipped.

Usage: one_run_fit.py TOPOPLAN [RUNS_JSON] [--min-groups N] [--check-readme README]
--min-groups: exit 1 when fewer groups are found (the test that keeps the tool working).
--check-readme: exit 1 unless README contains both summary lines (the figures the README quotes
are the ones this tool measures today; cmake/update-readme-tables.sh writes them there).
Analysis only: nothing here feeds the model.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

LOW, HIGH, STEPS = 0.2, 0.98, 18  # bisection to 3e-6 of the constant


class Calibrate:
    """Runs `topoplan calibrate` with one constant overridden; rows by name. Given `names`, only
    those rows are predicted (a runs file of them: each row's prediction is its own)."""

    def __init__(self, topoplan, corpus, workdir):
        self.base = [topoplan, "calibrate", "--format", "json"]
        self.corpus = corpus
        self.path = os.path.join(workdir, "calibration.json")
        self.runs_path = os.path.join(workdir, "runs.json")

    def rows(self, overrides, names=None):
        with open(self.path, "w") as f:
            json.dump(overrides, f)
        runs = self.corpus["runs"]
        if names is not None:
            runs = [r for r in runs if r["name"] in names]
        with open(self.runs_path, "w") as f:
            json.dump(dict(self.corpus, runs=runs), f)
        out = subprocess.run(self.base + ["--runs", self.runs_path, "--calibration", self.path],
                             check=True, capture_output=True, text=True).stdout
        return {r["name"]: r for r in json.loads(out)["runs"]}


def model_name(run):
    m = run.get("model")
    return m if isinstance(m, str) else m.get("name", "?")


def groups_of(runs, rows, same_plan):
    """(family, arch, precision[, model and model-parallel plan]) -> the held-back, checked
    training rows' names, in corpus order (arch and precision as calibrate's JSON gives them)."""
    groups = OrderedDict()
    for run in runs:
        res = rows.get(run["name"])
        if not res or not res["checked"] or not res["held_out"] or res["kind"] != "training":
            continue
        key = (run["family"], res["arch"], res["precision"])
        if same_plan:
            plan = run["plan"]
            key += (model_name(run), run["job"].get("seq_len"),
                    tuple(str(plan.get(k, 1)) for k in ("tp", "pp", "cp", "ep", "vpp")))
        groups.setdefault(key, []).append(run["name"])
    return groups


SOLVED = {}


def solve(calibrate, constant, row):
    """The value of `constant` for which `row` is predicted exactly, by bisection; None if no
    value in [LOW, HIGH] does. Remembered: both groupings often start at the same row."""
    if (constant, row) not in SOLVED:
        SOLVED[(constant, row)] = bisect(calibrate, constant, row)
    return SOLVED[(constant, row)]


def bisect(calibrate, constant, row):
    error = lambda v: calibrate.rows({constant: v}, {row})[row]["error"]
    lo, hi = LOW, HIGH
    e_lo, e_hi = error(lo), error(hi)
    if e_lo * e_hi > 0:
        return None
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        e_mid = error(mid)
        if (e_mid > 0) == (e_hi > 0):
            hi, e_hi = mid, e_mid
        else:
            lo, e_lo = mid, e_mid
    return (lo + hi) / 2


def summary(errors):
    return 100 * sum(errors) / len(errors), 100 * max(errors)


def report(calibrate, base, groups, what):
    """Fits each group's first row, prints the group's other rows' errors; returns the number of
    groups used and the summary line."""
    print(f"\ngroups of one {what}")
    print(f"{'family':<32} {'GPU':<9} {'precision':<9} {'runs':>4}  {'constant fitted':<30}"
          f" {'before: mean':>12} {'worst':>7} {'after: mean':>11} {'worst':>7}")
    before, after, used = [], [], 0
    for (family, arch, precision, *_), names in groups.items():
        if len(names) < 2:
            continue
        # calibrate's JSON names architectures as the GPU files do (blackwell-ultra); the
        # constants' keys with an underscore (gemm_efficiency_fp8.blackwell_ultra).
        prefix = {"fp8": "gemm_efficiency_fp8.", "mxfp8": "gemm_efficiency_fp8.",
                  "nvfp4": "gemm_efficiency_fp4."}
        constant = prefix.get(precision, "gemm_efficiency.") + arch.replace("-", "_")
        value = solve(calibrate, constant, names[0])
        if value is None:
            print(f"{family:<32} {arch:<9} {precision:<9}: no {constant} in [{LOW}, {HIGH}] "
                  f"reproduces '{names[0]}'; skipped")
            continue
        fitted = calibrate.rows({constant: value}, set(names[1:]))
        b = [abs(base[n]["error"]) for n in names[1:]]
        a = [abs(fitted[n]["error"]) for n in names[1:]]
        before += b
        after += a
        used += 1
        print(f"{family:<32} {arch:<9} {precision:<9} {len(b):>4}  "
              f"{constant + ' ' + format(value, '.3f'):<30} {summary(b)[0]:>11.2f}% "
              f"{summary(b)[1]:>6.2f}% {summary(a)[0]:>10.2f}% {summary(a)[1]:>6.2f}%")
    line = (f"one run fitted per {what} ({used} groups): {len(before)} runs predicted; "
            f"before {summary(before)[0]:.2f}% mean, {summary(before)[1]:.2f}% worst; "
            f"after {summary(after)[0]:.2f}% mean, {summary(after)[1]:.2f}% worst")
    print(line)
    return used, line


def main():
    args = sys.argv[1:]
    min_groups, readme = 0, None
    if "--min-groups" in args:
        i = args.index("--min-groups")
        min_groups = int(args[i + 1])
        del args[i:i + 2]
    if "--check-readme" in args:
        i = args.index("--check-readme")
        readme = args[i + 1]
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    topoplan = args[0]
    runs_json = args[1] if len(args) > 1 else None
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(runs_json or os.path.join(root, "configs", "calibration", "runs.json")) as f:
        corpus = json.load(f)
    runs = corpus["runs"]
    groupings = ((False, "family, GPU and precision"),
                 (True, "family, GPU, precision, model, sequence and model-parallel plan"))
    with tempfile.TemporaryDirectory() as workdir:
        calibrate = Calibrate(topoplan, corpus, workdir)
        base = calibrate.rows({})
        results = [report(calibrate, base, groups_of(runs, base, same_plan), what)
                   for same_plan, what in groupings]
    used = results[0][0]  # --min-groups counts the coarser grouping's groups
    lines = [line for _, line in results]
    if used < min_groups:
        sys.exit(f"{used} groups, fewer than --min-groups {min_groups}")
    if readme:
        with open(readme) as f:
            text = f.read()
        for line in lines:
            if line not in text:
                sys.exit(f"{readme} does not quote today's figure: {line}")


if __name__ == "__main__":
    main()
