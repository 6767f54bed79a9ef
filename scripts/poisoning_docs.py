#!/usr/bin/env python3
"""poisoning_docs.py RESULTS_FILE: docs/poisoning.md matches its tests.

The tables of docs/poisoning.md name, in their last column, the tests of
reference/tests/check_shared.c and check_doors.c and the faults of
mutants/poisoning.mut. Three checks, one result line each ("pass <name>" or
"fail <name> <why>"):

  poisoning-docs-tests     every test of check_shared.c and check_doors.c
                           is named in exactly one row of the rules,
                           guarantees and combinations tables, and every
                           name there is a test;
  poisoning-docs-faults    the fault table names every entry of the
                           catalog once, and nothing else;
  poisoning-docs-killers   every test the fault table names as a killer is
                           a test of one of those files.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "poisoning.md"
TESTS = [ROOT / "reference" / "tests" / name for name in ("check_shared.c", "check_doors.c")]
CATALOG = ROOT / "mutants" / "poisoning.mut"


def tables(text):
    """Every Markdown table: (its header's cells, its body rows' cells)."""
    found, lines = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            lines.append(line)
            continue
        if lines:
            cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in lines]
            found.append((cells[0], [c for c in cells[2:]]))
            lines = []
    return found


def names(cell):
    return re.findall(r"`([A-Za-z_0-9]+)`", cell)


def main():
    out = pathlib.Path(sys.argv[1])
    tests = [t for f in TESTS for t in re.findall(r"^START_TEST\((\w+)\)", f.read_text(), re.M)]
    faults = re.findall(r"^== (\S+)", CATALOG.read_text(), re.M)
    found = tables(DOC.read_text())
    test_rows = [r for head, body in found if head[-1] == "checked by" for r in body]
    fault_rows = [r for head, body in found if head[-1] == "killed by" for r in body]

    named = [n for r in test_rows for n in names(r[-1])]
    results = []

    problems = [f"{t} named {named.count(t)} times" for t in tests if named.count(t) != 1]
    problems += [f"{n} is not a test" for n in sorted(set(named) - set(tests))]
    results.append(("poisoning-docs-tests", problems))

    listed = [n for r in fault_rows for n in names(r[0])]
    problems = [f"{f} listed {listed.count(f)} times" for f in faults if listed.count(f) != 1]
    problems += [f"{n} is not in the catalog" for n in sorted(set(listed) - set(faults))]
    results.append(("poisoning-docs-faults", problems))

    killers = [n for r in fault_rows for n in names(r[1])]
    problems = [f"{k} is not a test" for k in killers if k not in tests]
    problems += [f"{r[0]} names no test" for r in fault_rows if not names(r[1])]
    results.append(("poisoning-docs-killers", problems))

    failed = 0
    with out.open("a") as f:
        for name, problems in results:
            if problems:
                failed += 1
                f.write(f"fail {name} {'; '.join(problems)}\n")
            else:
                f.write(f"pass {name}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
