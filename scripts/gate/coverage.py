#!/usr/bin/env python3
"""coverage.py: line and branch coverage of reference/src, a file and in
all, from gcovr's JSON report; every gap named or justified.

Prints one line a file and the total ("coverage: <file> lines L/T (P%)
branches B/T (P%)"), writes every uncovered line and every line with an
uncovered branch to --uncovered ("<file>:<line>: <what> | <source>"), and
records one result a file in --results: pass when every gap of the file is
an exception in --exceptions, else fail naming the first gaps.

An exception is a row of the table in docs/coverage.md,

    | `reference/src/<file>` | `<the line's source text, stripped>` | why |

matched by the line's text, not its number, so it survives edits above it.
"""
import argparse
import json
import pathlib
import re
import sys

import results as results_file

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]*)`\s*\|\s*(.*?)\s*\|\s*$")


def exceptions(path):
    rows = {}
    p = pathlib.Path(path)
    if not p.exists():
        return rows
    for line in p.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m and m.group(3):
            rows.setdefault(m.group(1), set()).add(m.group(2).strip())
    return rows


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="gcovr --json output")
    ap.add_argument("--exceptions", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--uncovered", required=True)
    args = ap.parse_args()

    report = json.loads(pathlib.Path(args.json).read_text(encoding="utf-8"))
    allowed = exceptions(args.exceptions)
    results, gaps_out = [], []
    tl = tlc = tb = tbc = 0
    for f in sorted(report["files"], key=lambda f: f["file"]):
        name = f["file"]
        try:
            source = pathlib.Path(name).read_text(encoding="utf-8").splitlines()
        except OSError:
            source = []
        lines = [ln for ln in f["lines"] if not ln.get("gcovr/noncode")]
        # gcovr lists a line once per function instance (inline functions in
        # headers): merge by number.
        by_no = {}
        for ln in lines:
            cur = by_no.setdefault(ln["line_number"], {"count": 0, "branches": []})
            cur["count"] += ln["count"]
            br = ln.get("branches", [])
            if len(cur["branches"]) < len(br):
                cur["branches"] += [0] * (len(br) - len(cur["branches"]))
            for i, b in enumerate(br):
                cur["branches"][i] += b["count"]
        nl = len(by_no)
        nlc = sum(1 for v in by_no.values() if v["count"] > 0)
        nb = sum(len(v["branches"]) for v in by_no.values())
        nbc = sum(1 for v in by_no.values() for c in v["branches"] if c > 0)
        tl, tlc, tb, tbc = tl + nl, tlc + nlc, tb + nb, tbc + nbc
        print(f"coverage: {name}: lines {nlc}/{nl} ({pct(nlc, nl):.1f}%) "
              f"branches {nbc}/{nb} ({pct(nbc, nb):.1f}%)")
        unjustified = []
        for no in sorted(by_no):
            v = by_no[no]
            missed = sum(1 for c in v["branches"] if c == 0)
            what = []
            if v["count"] == 0:
                what.append("line never run")
            if missed:
                what.append(f"{missed} of {len(v['branches'])} branches never taken")
            if not what:
                continue
            text = source[no - 1].strip() if 0 < no <= len(source) else ""
            gaps_out.append(f"{name}:{no}: {', '.join(what)} | {text}")
            if text not in allowed.get(name, set()):
                unjustified.append(f"{no}")
        if unjustified:
            results.append(f"fail coverage:{name} lines {nlc}/{nl}, branches {nbc}/{nb}; "
                           f"gaps not justified in {args.exceptions} at lines "
                           f"{', '.join(unjustified[:12])}{' ...' if len(unjustified) > 12 else ''}")
        else:
            results.append(f"pass coverage:{name}")
    print(f"coverage: total: lines {tlc}/{tl} ({pct(tlc, tl):.1f}%) "
          f"branches {tbc}/{tb} ({pct(tbc, tb):.1f}%)")
    out = pathlib.Path(args.uncovered)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(g + "\n" for g in gaps_out), encoding="utf-8")
    print(f"coverage: {len(gaps_out)} lines with a gap, listed in {args.uncovered}")
    bad = results_file.write(args.results, results)
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
