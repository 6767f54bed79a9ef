#!/usr/bin/env python3
"""reach.py: which curated mutants the properties and the fuzzers kill.

Runs the mutant driver (scripts/region_cache_mutants.py, docs/mutants.md)
over the curated catalog, mutants/*.mut, twice: once with the property
tests as the only suite (check-properties), once with the fuzzers only
(check-fuzz-replay and check-fuzz-libfuzzer). The driver builds every
mutant in its own copy of the tree, never in place; the suites are
narrowed with MUTANT_SKIP, which `make print-mutant-suites` honours.
Prints one line a mutant and the Markdown table of docs/fuzzing.md.

  /usr/bin/python3 properties/reach.py [--only NAME]... [--jobs N]

Exits non-zero if a driver run stopped (the unmutated tree fails a suite,
a stale catalog entry) or its report lacks a mutant it was asked for.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = {
    "properties": ["check-properties"],
    "fuzzers": ["check-fuzz-replay", "check-fuzz-libfuzzer"],
}
# The driver's own runs, never suites (mk/mutants.mk).
DRIVER_SUITES = ["check-mutants", "check-mutants-driver", "gate-mutants"]


def catalog():
    """(name, catalog file, about) of every curated mutant, in catalog order."""
    entries = []
    for path in sorted(glob.glob(os.path.join(ROOT, "mutants", "*.mut"))):
        name = None
        for line in open(path, encoding="utf-8"):
            if line.startswith("== "):
                name = line[3:].strip()
                entries.append([name, os.path.basename(path), ""])
            elif line.startswith("about:") and name is not None:
                entries[-1][2] = line[6:].strip()
    return entries


def all_suites():
    out = subprocess.run(["make", "-s", "--no-print-directory", "print-mutant-suites",
                          "MUTANT_SKIP="], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return out.split()


def run_group(group, suites, names, jobs):
    """{mutant: (status, killedBy)} for one driver run with only `suites`."""
    skip = [s for s in all_suites() if s not in suites] + DRIVER_SUITES
    build = os.path.join(ROOT, "build", "reach", group)
    report = os.path.join(build, "report")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "region_cache_mutants.py"),
           "--curated-only", "--build", build, "--report", report, "--jobs", str(jobs),
           "--html", "no", "--make-var", "MUTANT_SKIP=" + " ".join(sorted(set(skip)))]
    for n in names:
        cmd += ["--only", n]
    print(f"reach: {group}: {' '.join(suites)}", flush=True)
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    tail = r.stdout.strip().splitlines()[-3:]
    for line in tail:
        print(f"  {line}")
    if "stopped" in r.stdout or not os.path.exists(os.path.join(report, "report.json")):
        sys.stdout.write(r.stdout[-2000:] + r.stderr[-2000:])
        raise SystemExit(f"reach: the {group} run stopped")
    got = {}
    for f in json.load(open(os.path.join(report, "report.json")))["files"].values():
        for m in f["mutants"]:
            got[m["id"]] = (m["status"], m.get("killedBy") or [])
    return got


def verdict(result):
    status, killed = result
    if status == "Killed":
        return "killed (" + ", ".join(killed) + ")"
    if status == "Timeout":
        return "killed (timeout: a hang)"
    return {"Survived": "survives", "NoCoverage": "not reached"}.get(status, status.lower())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="mutant names (patterns)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    entries = catalog()
    names = args.only or [e[0] for e in entries]
    results = {g: run_group(g, s, names, args.jobs) for g, s in GROUPS.items()}
    status = 0
    rows = []
    for name, cat, about in entries:
        if name not in results["properties"] and name not in results["fuzzers"]:
            if not args.only:
                print(f"reach: {name}: in no report")
                status = 1
            continue
        p = verdict(results["properties"].get(name, ("missing", [])))
        f = verdict(results["fuzzers"].get(name, ("missing", [])))
        rows.append((name, cat, about, p, f))
        print(f"reach: {name}: properties {p}; fuzzers {f}", flush=True)
    print()
    print("| mutant | catalog | what it breaks | properties | fuzzers |")
    print("|---|---|---|---|---|")
    for name, cat, about, p, f in rows:
        print(f"| `{name}` | {cat} | {about} | {p} | {f} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
