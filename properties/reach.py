#!/usr/bin/env python3
"""reach.py CATALOG...: which deliberate faults the properties and the fuzzer kill.

For each entry of the mutant catalogs named (the format of
docs/conventions.md), copies the tree to a scratch folder (never in
place), applies the fault there, and runs each suite of this area on its
own: the property tests, the replay of the corpus and regression inputs,
and the bounded libFuzzer run. Prints one line an entry with the suites
that failed (killed it), and a Markdown table for docs/fuzzing.md.

  /usr/bin/python3 properties/reach.py mutants/chunk_cache.mut [--keep]

Exits non-zero if a fault was not applied (a stale entry) or if the tree
without any fault does not pass every suite.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SUITES = ["check-properties", "check-fuzz-replay", "check-fuzz-libfuzzer"]
BREAKS = ("== ", "--- ", "+++ ", "file:")


def parse(path):
    """The entries of a catalog: name, about, and (file, find, replace) edits."""
    entries, entry, edits, block = [], None, None, None
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith(BREAKS):
            block = None
        if line.startswith("== "):
            entry = {"name": line[3:].strip(), "about": "", "edits": []}
            entries.append(entry)
        elif entry is None:
            continue
        elif line.startswith("about:"):
            entry["about"] = line[6:].strip()
        elif line.startswith("file:"):
            edits = {"file": line[5:].strip(), "pairs": []}
            entry["edits"].append(edits)
        elif line.startswith("--- find"):
            edits["pairs"].append([[], []])
            block = edits["pairs"][-1][0]
        elif line.startswith("+++ replace"):
            block = edits["pairs"][-1][1]
        elif block is not None:
            block.append(line)
    for e in entries:
        for ed in e["edits"]:
            for pair in ed["pairs"]:
                for lines in pair:
                    while lines and lines[-1] == "":
                        lines.pop()  # blank lines between entries
    return entries


def apply(tree, entry):
    for ed in entry["edits"]:
        path = os.path.join(tree, ed["file"])
        text = open(path, encoding="utf-8").read()
        for find, replace in ed["pairs"]:
            old = "\n".join(find) + "\n"
            new = "\n".join(replace) + "\n" if replace else ""
            if text.count(old) != 1:
                raise ValueError(f"{entry['name']}: the find block occurs {text.count(old)} "
                                 f"times in {ed['file']}")
            text = text.replace(old, new)
        open(path, "w", encoding="utf-8").write(text)


def copy_tree(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", ".git"))


def run_suites(tree):
    """The suites that fail in tree, each run on its own."""
    failed = []
    for suite in SUITES:
        r = subprocess.run(["make", "-s", "--no-print-directory", suite], cwd=tree,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            failed.append(suite)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalogs", nargs="+")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folders")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    scratch = tempfile.mkdtemp(prefix="refrt-reach-")
    status = 0

    base = os.path.join(scratch, "unchanged")
    copy_tree(root, base)
    if run_suites(base):
        print("reach: the tree without a fault fails; fix that first")
        return 1
    rows = []
    for catalog in args.catalogs:
        for entry in parse(catalog):
            tree = os.path.join(scratch, entry["name"])
            copy_tree(root, tree)
            try:
                apply(tree, entry)
            except ValueError as e:
                print(f"reach: stale entry: {e}")
                status = 1
                continue
            killed = run_suites(tree)
            rows.append((entry["name"], entry["about"], killed))
            print(f"reach: {entry['name']}: "
                  + ("killed by " + ", ".join(killed) if killed else "SURVIVES"), flush=True)
            if not args.keep:
                shutil.rmtree(tree)
    print()
    print("| fault | what it breaks | killed by |")
    print("|---|---|---|")
    for name, about, killed in rows:
        print(f"| `{name}` | {about} | {', '.join(killed) if killed else 'not killed'} |")
    if not args.keep:
        shutil.rmtree(scratch)
    else:
        print(f"scratch trees kept in {scratch}")
    return status


if __name__ == "__main__":
    sys.exit(main())
