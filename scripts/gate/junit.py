#!/usr/bin/env python3
"""junit.py: JUnit XML from Check's XML logs and the suites' results files.

CI systems read JUnit XML (GitHub's test reporters, GitLab, Jenkins). This
writes one JUnit file a suite into --out:

  - every Check XML log under --build (reports/*.xml, the unit suites and
    the fiber tests, also those of sub-builds such as portable/), keeping
    Check's file:line, duration and message;
  - every results file (--build/results/<suite>, "pass <name>" or
    "fail <name> <why>", docs/conventions.md) whose tests are not already
    in a Check log: conformance, memcheck, coverage, the kit, mutants.

Exits 1 if it found nothing to convert.
"""
import argparse
import pathlib
import sys
import xml.etree.ElementTree as ET

CHECK_NS = "{http://check.sourceforge.net/ns}"


def check_log(path):
    """[(suite, [(name, classname, seconds, failure or None, where)])] of one Check log."""
    root = ET.parse(path).getroot()
    out = []
    for suite in root.iter(CHECK_NS + "suite"):
        title = suite.findtext(CHECK_NS + "title") or path.stem
        cases = []
        for t in suite.iter(CHECK_NS + "test"):
            name = t.findtext(CHECK_NS + "id") or "?"
            where = f"{t.findtext(CHECK_NS + 'path')}/{t.findtext(CHECK_NS + 'fn')}"
            secs = float(t.findtext(CHECK_NS + "duration") or 0)
            msg = t.findtext(CHECK_NS + "message") or ""
            failure = None if t.get("result") == "success" else f"{where}: {msg}"
            cases.append((name, f"{path.stem}.{title}", secs, failure, where))
        out.append((f"{path.stem}", cases))
    return out


def results_file(path):
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, rest = line.partition(" ")
        if word not in ("pass", "fail"):
            continue
        name, _, why = rest.partition(" ")
        cases.append((name, path.name, 0.0, why or "failed" if word == "fail" else None, ""))
    return cases


def write(out, suite, cases):
    failures = sum(1 for c in cases if c[3] is not None)
    ts = ET.Element("testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                    errors="0", skipped="0", time=f"{sum(c[2] for c in cases):.3f}")
    for name, classname, secs, failure, where in cases:
        tc = ET.SubElement(ts, "testcase", classname=classname, name=name, time=f"{secs:.3f}")
        if where:
            tc.set("file", where.rsplit(":", 1)[0])
        if failure is not None:
            f = ET.SubElement(tc, "failure", message=failure[:500])
            f.text = failure
    top = ET.Element("testsuites")
    top.append(ts)
    ET.indent(top)
    (out / f"{suite}.xml").write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(top, encoding="utf-8"))
    return len(cases), failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    build, out = pathlib.Path(args.build), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.xml"):
        old.unlink()
    in_check, written = set(), 0
    for log in sorted(build.glob("**/reports/*.xml")):
        if out in log.parents:
            continue
        prefix = "" if log.parent.parent == build else \
            str(log.parent.parent.relative_to(build)).replace("/", "-") + "-"
        try:
            suites = check_log(log)
        except ET.ParseError as e:
            print(f"junit: {log}: not a Check log ({e})")
            continue
        for suite, cases in suites:
            in_check.update(c[0] for c in cases)
            n, f = write(out, prefix + suite, cases)
            written += 1
            print(f"junit: {prefix + suite}: {n} tests, {f} failures")
    for res in sorted((build / "results").glob("*")):
        cases = results_file(res)
        if not cases or all(c[0] in in_check for c in cases):
            continue
        n, f = write(out, res.name, cases)
        written += 1
        print(f"junit: {res.name}: {n} tests, {f} failures")
    print(f"junit: {written} files in {out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
