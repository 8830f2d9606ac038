#!/usr/bin/env python3
"""Splits the step-time error of calibration series into a per-microbatch and a per-step part.

A series is a set of calibration runs (configs/calibration/runs.json) that measure the step time
(metric iteration_time_s) of one family, cluster, model, sequence length, precision and model-
parallel plan (tp, pp, cp, vpp, micro-batch), and differ only in the data-parallel degree and
the global batch, so in m, the microbatches each pipeline runs per step. For such a series the
step time is close to a line, t = a m + b: a is the time of one microbatch in the steady state,
b what a step costs beyond them (pipeline fill and drain, exposed data-parallel traffic, the
optimizer, per-step host work). The tool fits that line by least squares to the published step
times and to topoplan's predictions, and prints both: a per-microbatch error points at the
kernels' speed, a per-step one at what the model leaves out around the pipeline.

Usage: step_series.py TOPOPLAN [RUNS_JSON] [--min-series N]
--min-series: exit 1 when fewer series are found (the test that keeps the tool working). Series need at least two distinct m; rows whose plan leaves dp or the micro-batch to the search
are skipped. Analysis only: nothing here feeds the model.
"""

import json
import subprocess
import sys
from collections import defaultdict


def fit_line(points):
    """Least-squares a, b of t = a m + b over (m, t) points."""
    n = len(points)
    mx = sum(m for m, _ in points) / n
    my = sum(t for _, t in points) / n
    sxx = sum((m - mx) ** 2 for m, _ in points)
    a = sum((m - mx) * (t - my) for m, t in points) / sxx
    return a, my - a * mx


def model_name(run):
    m = run.get("model")
    return m if isinstance(m, str) else m.get("name", "?")


def series_of(runs, results):
    groups = defaultdict(list)
    for run in runs:
        res = results.get(run["name"])
        plan, job = run.get("plan", {}), run.get("job", {})
        if not res or res["metric"] != "iteration_time_s" or not res["checked"]:
            continue
        dp, mb = plan.get("dp"), plan.get("micro_batch")
        if not isinstance(dp, int) or not isinstance(mb, int):
            continue
        m = job["global_batch"] / (dp * mb)
        key = (run["family"], run["cluster"], model_name(run), job.get("seq_len"),
               job.get("dtype"), plan.get("tp", 1), plan.get("pp", 1), plan.get("cp", 1),
               plan.get("vpp", 1), mb)
        groups[key].append((m, res["measured"], res["predicted"], run["name"]))
    return {k: v for k, v in groups.items() if len({m for m, *_ in v}) >= 2}


def main():
    args = sys.argv[1:]
    min_series = 0
    if "--min-series" in args:
        i = args.index("--min-series")
        min_series = int(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    binary = args[0]
    runs_path = args[1] if len(args) > 1 else "configs/calibration/runs.json"
    runs = json.load(open(runs_path))["runs"]
    out = subprocess.run([binary, "calibrate", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    results = {r["name"]: r for r in json.loads(out)["runs"]}
    print("| series | runs | microbatches | per microbatch s: published, topoplan | "
          "per step s: published, topoplan |")
    print("| --- | --- | --- | --- | --- |")
    series = series_of(runs, results)
    for key, rows in sorted(series.items()):
        family, cluster, model, _seq, _dtype, tp, pp, cp, vpp, mb = key
        a, b = fit_line([(m, t) for m, t, _, _ in rows])
        pa, pb = fit_line([(m, p) for m, _, p, _ in rows])
        ms = sorted({int(m) for m, *_ in rows})
        label = (f"{family}, {model} on {cluster}, tp {tp} pp {pp} cp {cp} vpp {vpp} "
                 f"micro-batch {mb}")
        print(f"| {label} | {len(rows)} | {ms[0]}-{ms[-1]} | {a:.4f}, {pa:.4f} "
              f"({100 * (pa / a - 1):+.1f}%) | {b:.3f}, {pb:.3f} ({pb - b:+.3f}) |")
    if len(series) < min_series:
        sys.exit(f"step_series.py: expected at least {min_series} series, found {len(series)}")


if __name__ == "__main__":
    main()
