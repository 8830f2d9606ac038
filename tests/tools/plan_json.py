#!/usr/bin/env python3
"""Round-trip helpers for the CLI tests that hand a plan topoplan wrote back to --plan.

  plan_json.py pick SRC PATH OUT    write the object at PATH ("best_overall_plan", "plans.0") of
                                    the JSON file SRC to OUT
  plan_json.py same WANT GOT LABEL [--except KEY] [--expect PATH=VALUE]
                                    print "LABEL same" when every key of WANT (but KEY) has the
                                    same value in GOT and PATH holds VALUE in WANT, else
                                    "LABEL differs"
"""
import json
import sys


def at(doc, path):
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def main(argv):
    if argv[:1] == ["pick"] and len(argv) == 4:
        with open(argv[1]) as f:
            obj = at(json.load(f), argv[2])
        with open(argv[3], "w") as f:
            json.dump(obj, f)
        return 0
    if argv[:1] == ["same"] and len(argv) >= 4:
        with open(argv[1]) as f:
            want = json.load(f)
        with open(argv[2]) as f:
            got = json.load(f)
        skip, expect, rest = set(), [], argv[4:]
        while rest:
            flag, value, rest = rest[0], rest[1], rest[2:]
            if flag == "--except":
                skip.add(value)
            elif flag == "--expect":
                path, _, text = value.partition("=")
                expect.append((path, json.loads(text)))
            else:
                raise SystemExit(f"plan_json.py: unknown option {flag}")
        ok = bool(want) and all(got.get(k) == v for k, v in want.items() if k not in skip)
        ok = ok and all(at(want, p) == v for p, v in expect)
        print(argv[3], "same" if ok else "differs")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
