#!/usr/bin/env python3
"""Runs the malformed-input corpus (tests/data/errors/corpus.txt) against the topoplan binary.

Each case writes its input files into a fresh directory, runs topoplan there and asserts:
exit code 2, nothing on stdout, stderr exactly the pinned lines (warnings, then the one error
line), no file left behind but the inputs (no partial output), and an end within 10 s.

Corpus format, one case after another:

    case: <name>              a unique name; its first dotted part is the input kind
    file: <name>              the lines below, indented by two spaces, are the file's text
      ...
    args: <arguments>         split like a shell would (shlex), run in the case's directory
    stderr: <line>            zero or more pinned warnings
    error: <line>             the pinned error, the last line on stderr

Usage: error_corpus.py TOPOPLAN CORPUS [--min-cases N] [--update]
--update rewrites the stderr/error lines of CORPUS from what the binary prints now (review the
diff: a pinned message is a contract, and a changed one is a change users see).
"""

import concurrent.futures
import os
import shlex
import subprocess
import sys
import tempfile


def parse(path):
    cases, case, current_file = [], None, None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        if current_file is not None and (line.startswith("  ") or line == ""):
            if line == "" and case is not None and not case["files"][current_file]:
                continue
            case["files"][current_file].append(line[2:])
            continue
        current_file = None
        if line == "" or line.startswith("#"):
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            key, value = line.rstrip(":"), ""
        if key == "case":
            case = {"name": value, "files": {}, "args": None, "stderr": [], "error": None,
                    "line": number}
            cases.append(case)
        elif case is None:
            sys.exit(f"{path}: line {number}: expected 'case: <name>' first")
        elif key == "file":
            case["files"][value] = []
            current_file = value
        elif key == "args":
            case["args"] = shlex.split(value)
        elif key == "stderr":
            case["stderr"].append(value)
        elif key == "error":
            case["error"] = value
        else:
            sys.exit(f"{path}: line {number}: unknown key '{key}'")
    for c in cases:
        for name, text in c["files"].items():
            while text and text[-1] == "":
                text.pop()
            c["files"][name] = "\n".join(text) + ("\n" if text else "")
    return cases


def run_case(binary, case):
    with tempfile.TemporaryDirectory(prefix="topoplan-corpus-") as d:
        for name, text in case["files"].items():
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write(text)
        before = sorted(os.listdir(d))
        try:
            p = subprocess.run([binary] + case["args"], cwd=d, capture_output=True, text=True,
                               timeout=10)
        except subprocess.TimeoutExpired:
            return None, ["did not end within 10 s"]
        after = sorted(os.listdir(d))
    problems = []
    if p.returncode != 2:
        problems.append(f"exit code {p.returncode}, expected 2")
    if p.stdout:
        problems.append(f"printed on stdout: {p.stdout[:200]!r}")
    if after != before:
        problems.append(f"left files behind: {sorted(set(after) - set(before))}")
    got = p.stderr.split("\n")
    if got and got[-1] == "":
        got.pop()
    want = case["stderr"] + ([case["error"]] if case["error"] is not None else [])
    if got != want:
        problems.append("stderr differs:\n    expected: " + "\n              ".join(want) +
                        "\n    got:      " + "\n              ".join(got))
    return got, problems


def update(path, outputs):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, name = [], None
    for line in lines:
        if line.startswith("stderr: ") or line.startswith("error: "):
            continue
        out.append(line)
        if line.startswith("case: "):
            name = line[len("case: "):]
        elif line.startswith("args: "):
            got = outputs[name]
            out.extend(f"stderr: {g}" for g in got[:-1])
            if got:
                out.append(f"error: {got[-1]}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    min_cases = 0
    if "--min-cases" in sys.argv:
        min_cases = int(sys.argv[sys.argv.index("--min-cases") + 1])
        args.remove(str(min_cases))
    binary, corpus = os.path.abspath(args[0]), args[1]
    cases = parse(corpus)
    names = [c["name"] for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        sys.exit(f"{corpus}: duplicate case names: {duplicates}")
    failed, outputs = 0, {}
    for case in cases:
        if case["args"] is None:
            sys.exit(f"{corpus}: line {case['line']}: case {case['name']} has no args")
    # One case per core at a time (each in its own directory); results in corpus order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda c: run_case(binary, c), cases))
    for case, (got, problems) in zip(cases, results):
        outputs[case["name"]] = got or []
        if problems and "--update" not in sys.argv:
            failed += 1
            print(f"FAIL {case['name']} (line {case['line']}): " + "; ".join(problems))
    if "--update" in sys.argv:
        update(corpus, outputs)
        print(f"updated {len(cases)} cases in {corpus}")
        return 0
    kinds = sorted({c["name"].split(".")[0] for c in cases})
    print(f"{len(cases) - failed} of {len(cases)} malformed inputs give exit 2 and their pinned "
          f"message; kinds: {', '.join(kinds)}")
    if len(cases) < min_cases:
        print(f"FAIL the corpus has {len(cases)} cases, fewer than {min_cases}")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
