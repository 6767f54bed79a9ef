#!/usr/bin/env python3
"""table.py: the gate's one table, mechanism x (unit, conformance,
properties, mutants, sanitizers, coverage), and its verdict line.

Reads only what the suites wrote (docs/conventions.md): results files and
Check XML logs of the main build and of each variant (--variant NAME=DIR:
clang, asan, tsan...), gcovr's JSON (--coverage) and the mutant driver's
JSON reports (--mutants, Stryker's schema). A test is put in a mechanism's
row by what it exercises:

  unit        the Check suite's file (check_<area>.c) names the area
  conformance the refrt.h functions the program calls (every row they hit)
  properties  the properties' and fuzz suites' test names (their keywords)
  mutants     the file the mutant changes; "mutant kills" counts a row's
              kills by the oracle that made them (the report's killedBy
              "oracle:<kind>": functional, asan, ubsan, tsan, lock, cost)
  coverage    the runtime's source files of the mechanism
  sanitizers  unit, conformance and properties under ASan+UBSan and TSan,
              and valgrind memcheck, attributed as above

Anything that fits no row lands in "(other)", never nowhere. The verdict
holds only if every cell holds and no results file under the main build
records a failure. Exits 0 when it holds.
"""
import argparse
import json
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

CHECK_NS = "{http://check.sourceforge.net/ns}"

# name, runtime sources, unit suite stems, API pattern, property keywords
MECHANISMS = [
    ("start-up and errors", ["runtime.c", "internal.h"], [], r"rt_init\b", r"init"),
    ("regions, chunk cache, clearing", ["region.c", "region_cache.c"], ["check_region_cache"],
     r"rt_(region_\w+|chunk_\w+)\b", r"region|chunk|cache|clear|reuse|open|close|kept|lifo"),
    ("hot path", ["hot.c", "prim.h"], ["check_hot", "hot_fiber-O2", "hot_fiber-O3"],
     r"rt_hot\w*\b", r"hot|fiber|direct"),
    ("tasks and budgets", ["block.c", "task.c", "task.h"], ["check_block", "check_budgets"],
     r"rt_(spawn|join|panic|alloc|realloc|free|held|budget|alloc_outside|clone_outside|"
     r"hand_over|set_strategy|fixed_strategy|default_strategy)\b", r"task|budget|block|panic"),
    ("channels", ["chan.c"], ["check_chan"], r"rt_(chan_\w+|send|recv)\b", r"chan|send|recv"),
    ("shared values, poisoning", ["shared.c", "shared.h"], ["check_shared"],
     r"rt_(shared_\w+|update|update_all|access|get|poisoned|store|unstore)\b",
     r"shared|door|poison"),
]
OTHER = "(controls, other)"
# The mutant driver's kinds of kill (scripts/mutants/model.py KINDS), in
# the order the "mutant kills" cell names them, with a short name.
KILL_KINDS = (("functional", "fn"), ("asan", "asan"), ("ubsan", "ubsan"), ("tsan", "tsan"),
              ("lock", "lock"), ("cost", "cost"))


def kill_kind(mutant):
    """The kind of a killed mutant's kill: killedBy's "oracle:<kind>",
    else the statusReason's first word, else functional (a report of a
    driver before the oracles)."""
    for t in mutant.get("killedBy", []):
        if t.startswith("oracle:"):
            return t[len("oracle:"):]
    word = mutant.get("statusReason", "").split(":", 1)[0]
    return word if word in dict(KILL_KINDS) else "functional"


class Kills:
    """A cell of kills by kind: "fn 9 asan 2"; always holds."""

    def __init__(self):
        self.by = {}

    def add(self, kind):
        self.by[kind] = self.by.get(kind, 0) + 1

    def holds(self):
        return True

    def text(self):
        out = " ".join(f"{short} {self.by[k]}" for k, short in KILL_KINDS if self.by.get(k))
        extra = " ".join(f"{k} {n}" for k, n in sorted(self.by.items())
                         if k not in dict(KILL_KINDS))
        return " ".join(x for x in (out, extra) if x) or "-"


class Tally:
    def __init__(self):
        self.passed = self.total = 0

    def add(self, ok):
        self.total += 1
        self.passed += bool(ok)

    def holds(self):
        return self.passed == self.total

    def text(self):
        if self.total == 0:
            return "-"
        return f"{self.passed}/{self.total}" + ("" if self.holds() else " FAIL")


def read_results(path):
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, rest = line.partition(" ")
        if word in ("pass", "fail"):
            out.append((rest.split(" ", 1)[0], word == "pass"))
    return out


def check_logs(build):
    """{stem: [(test, ok)]} of the Check logs under build (sub-builds too)."""
    logs = {}
    for log in sorted(build.glob("**/reports/*.xml")):
        if "junit" in log.parts:
            continue
        try:
            root = ET.parse(log).getroot()
        except ET.ParseError:
            continue
        tests = [(t.findtext(CHECK_NS + "id"), t.get("result") == "success")
                 for t in root.iter(CHECK_NS + "test")]
        logs.setdefault(log.stem, []).extend(tests)
    return logs


class Gate:
    def __init__(self, root):
        self.root = root
        present = {p.name for p in (root / "reference" / "src").glob("*")}
        self.rows = [m for m in MECHANISMS if any(s in present for s in m[1])]
        self.cells = {m[0]: {} for m in self.rows}
        self.cells[OTHER] = {}
        self.api_cache = {}

    def cell(self, mech, column):
        return self.cells[mech].setdefault(column, Tally())

    def by_suite(self, stem):
        for m in self.rows:
            if stem in m[2]:
                return [m[0]]
        return [OTHER]

    def by_program(self, program):
        if program not in self.api_cache:
            path = self.root / "conformance" / f"{program}.c"
            text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
            code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
            # rt_init alone puts a program in the start-up row: nearly every
            # program calls it, and it says nothing of what else they test.
            hit = [m[0] for m in self.rows[1:] if re.search(m[3], code)]
            if not hit and re.search(self.rows[0][3], code):
                hit = [self.rows[0][0]]
            self.api_cache[program] = hit or [OTHER]
        return self.api_cache[program]

    def by_keyword(self, name):
        hit = [m[0] for m in self.rows if re.search(m[4], name, re.I)]
        return hit[:1] or [OTHER]

    def by_file(self, path):
        base = pathlib.Path(path).name
        for m in self.rows:
            if base in m[1]:
                return [m[0]]
        return [OTHER]

    def add_build(self, build, unit_col, conf_col, prop_col):
        """The suites of one build: Check logs, conformance, properties."""
        results = build / "results"
        for stem, tests in check_logs(build).items():
            is_prop = stem.startswith("properties")
            col = prop_col if is_prop else unit_col
            for name, ok in tests:
                mechs = self.by_keyword(name) if is_prop else self.by_suite(stem)
                for m in mechs:
                    self.cell(m, col).add(ok)
        for path in sorted(results.glob("*")) if results.is_dir() else []:
            if path.name == "conformance" or path.name.endswith("-conformance"):
                for name, ok in read_results(path):
                    for m in self.by_program(name.split(":", 1)[0]):
                        self.cell(m, conf_col).add(ok)
            elif path.name.startswith("fuzz"):
                for name, ok in read_results(path):
                    for m in self.by_keyword(name):
                        self.cell(m, prop_col).add(ok)

    def add_memcheck(self, path, col):
        for name, ok in read_results(path):
            for m in self.by_program(name.split(":", 1)[1]):
                self.cell(m, col).add(ok)

    def add_mutants(self, report):
        data = json.loads(report.read_text(encoding="utf-8"))
        for path, f in data.get("files", {}).items():
            for mutant in f.get("mutants", []):
                status = mutant.get("status")
                if status in ("Ignored", "CompileError"):
                    continue
                for m in self.by_file(path):
                    self.cell(m, "mutants").add(status in ("Killed", "Timeout"))
                    if status == "Killed":
                        self.cells[m].setdefault("mutant kills", Kills()).add(kill_kind(mutant))

    def add_coverage(self, report):
        data = json.loads(report.read_text(encoding="utf-8"))
        for f in data.get("files", []):
            seen = {}
            for ln in f["lines"]:
                if ln.get("gcovr/noncode"):
                    continue
                cur = seen.setdefault(ln["line_number"], [0, []])
                cur[0] += ln["count"]
                br = [b["count"] for b in ln.get("branches", [])]
                cur[1] = [a + b for a, b in zip(cur[1] + [0] * len(br), br)] if cur[1] else br
            for m in self.by_file(f["file"]):
                c = self.cells[m].setdefault("coverage", [0, 0, 0, 0])
                c[0] += sum(1 for v in seen.values() if v[0] > 0)
                c[1] += len(seen)
                c[2] += sum(1 for v in seen.values() for b in v[1] if b > 0)
                c[3] += sum(len(v[1]) for v in seen.values())


def coverage_cell(c, justified):
    if c is None:
        return "-", True
    pl = 100.0 * c[0] / c[1] if c[1] else 100.0
    pb = 100.0 * c[2] / c[3] if c[3] else 100.0
    full = c[0] == c[1] and c[2] == c[3]
    ok = full or justified
    return f"{pl:.0f}%/{pb:.0f}%" + ("" if full else (" just." if ok else " FAIL")), ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--build", required=True, help="the main build (gcc)")
    ap.add_argument("--variant", action="append", default=[], metavar="KIND=DIR",
                    help="KIND: compiler (a second compiler) or sanitizer")
    ap.add_argument("--memcheck", help="memcheck's results file")
    ap.add_argument("--coverage", help="gcovr's JSON report")
    ap.add_argument("--coverage-results", help="coverage.py's results file (justified gaps)")
    ap.add_argument("--mutants", action="append", default=[], help="a mutant JSON report")
    ap.add_argument("--expect-mutants", action="store_true",
                    help="a missing mutant report is a failure (the driver is installed)")
    args = ap.parse_args()
    root, build = pathlib.Path(args.root), pathlib.Path(args.build)
    gate = Gate(root)
    problems = []

    gate.add_build(build, "unit", "conformance", "properties")
    for v in args.variant:
        kind, _, d = v.partition("=")
        d = pathlib.Path(d)
        if not (d / "results").is_dir():
            problems.append(f"the {kind} build {d} has no results")
            continue
        if kind == "compiler":
            gate.add_build(d, "unit", "conformance", "properties")
        else:
            gate.add_build(d, "sanitizers", "sanitizers", "sanitizers")
    if args.memcheck:
        p = pathlib.Path(args.memcheck)
        if p.exists():
            gate.add_memcheck(p, "sanitizers")
        else:
            problems.append(f"no memcheck results ({p})")
    for r in args.mutants:
        p = pathlib.Path(r)
        if p.exists():
            gate.add_mutants(p)
        elif args.expect_mutants:
            problems.append(f"no mutant report ({p})")
    justified = {}
    if args.coverage_results and pathlib.Path(args.coverage_results).exists():
        for name, ok in read_results(pathlib.Path(args.coverage_results)):
            justified[pathlib.Path(name.split(":", 1)[1]).name] = ok
    if args.coverage:
        p = pathlib.Path(args.coverage)
        if p.exists():
            gate.add_coverage(p)
        else:
            problems.append(f"no coverage report ({p})")

    columns = ["unit", "conformance", "properties", "mutants", "mutant kills", "sanitizers",
               "coverage"]
    rows, holds = [], True
    for mech in [m[0] for m in gate.rows] + [OTHER]:
        cells = gate.cells[mech]
        if mech == OTHER and not cells:
            continue
        line = [mech]
        for col in columns:
            if col == "coverage":
                files = next((m[1] for m in gate.rows if m[0] == mech), [])
                ok_j = all(justified.get(f, True) for f in files) and bool(justified)
                text, ok = coverage_cell(cells.get("coverage"), ok_j)
            else:
                t = cells.get(col)
                text, ok = (t.text(), t.holds()) if t else ("-", True)
            holds = holds and ok
            line.append(text)
        rows.append(line)

    # Every results file of the main build, whatever suite wrote it.
    failed = []
    for path in sorted((build / "results").glob("*")) if (build / "results").is_dir() else []:
        failed += [f"{path.name}: {n}" for n, ok in read_results(path) if not ok]
    if failed:
        problems.append(f"{len(failed)} failed results, first: {failed[0]}")
    holds = holds and not problems

    head = ["mechanism"] + columns
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    print("gate: " + fmt.format(*head))
    for r in rows:
        print("gate: " + fmt.format(*r))
    for p in problems:
        print(f"gate: {p}")
    print("gate: unit, conformance, properties: gcc and clang; mutants: killed/total "
          "(equivalents left out); mutant kills: by oracle (fn: a test's assertion, "
          "asan/ubsan/tsan: a sanitizer's report, lock: a checked lock, cost: a cost "
          "bound); sanitizers: ASan+UBSan, TSan, memcheck; coverage: lines/branches")
    print(f"gate: verdict: {'HOLDS' if holds else 'FAILS'}")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
