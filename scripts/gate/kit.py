#!/usr/bin/env python3
"""kit.py: the conformance kit's failures against an implementation are the
ones the docs list.

Reads the results a `make check IMPL=...` run wrote (RESULTS/<suite>, one
"pass <name>" or "fail <name> <why>" a line, docs/conventions.md) and the
table of the docs section that lists what that implementation fails: every
row whose first cell is a check name in backquotes. Writes one result line
a check to --out:

    pass kit-naive:<check>   failed, as the docs say
    fail kit-naive:<check>   the docs list it, but it passed (or never ran)
    fail kit-naive:<check>   it failed, but the docs do not list it

so that neither the docs nor the suite can drift from the other. Exits 1 if
anything differs, or if the kit did not run at all.
"""
import argparse
import pathlib
import re
import sys

import results as results_file

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|")


def documented(docs, section):
    """The check names in the first column of the section's table."""
    names, inside = [], False
    for line in pathlib.Path(docs).read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            inside = line.lstrip("#").strip() == section
            continue
        m = ROW.match(line) if inside else None
        if m:
            names.append(m.group(1))
    return names


def recorded(results):
    """{check: passed?} over every suite the run recorded, suite-qualified
    as "<suite>/<check>" only when two suites share a name."""
    seen = {}
    for path in sorted(pathlib.Path(results).glob("*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            word, _, rest = line.partition(" ")
            if word in ("pass", "fail"):
                seen[rest.split(" ", 1)[0]] = word == "pass"
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", required=True)
    ap.add_argument("--section", default="What the naive implementation fails")
    ap.add_argument("--results", required=True, help="the kit run's results folder")
    ap.add_argument("--log", help="the kit run's output, named when it did not run")
    ap.add_argument("--name", default="kit-naive")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    expected = documented(args.docs, args.section)
    seen = recorded(args.results) if pathlib.Path(args.results).is_dir() else {}
    lines = []
    if not expected:
        lines.append(f"fail {args.name}:docs no check listed under '{args.section}' in {args.docs}")
    if not any(seen.values()):
        lines.append(f"fail {args.name}:ran the kit passed nothing: it did not run "
                     f"(see {args.log or args.results})")
    for name in expected:
        if name not in seen:
            lines.append(f"fail {args.name}:{name} listed in {args.docs} but never ran")
        elif seen[name]:
            lines.append(f"fail {args.name}:{name} listed in {args.docs} as failing, but passed")
        else:
            lines.append(f"pass {args.name}:{name}")
    for name in sorted(n for n, ok in seen.items() if not ok and n not in expected):
        lines.append(f"fail {args.name}:{name} failed, and {args.docs} does not list it")

    bad = results_file.write(args.out, lines)
    print(f"{args.name}: {len(expected)} documented failures, {len(seen)} checks ran, "
          f"{len(bad)} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
