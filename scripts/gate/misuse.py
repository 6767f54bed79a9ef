#!/usr/bin/env python3
"""misuse.py: every contract violation and trap of the runtime has its row
in docs/misuse.md, and every row a test that checks its message and signal.

Reads the runtime's sources for each rt__violation("<fn>", "<format>") call
and each rt__trap(), and the table of docs/misuse.md:

    | `<fn>` | `<format>` or trap | when | SIGABRT or SIGILL | `<test>`, ... |

where a test is `<file>:<test name>` (a Check test, START_TEST(name)) or a
conformance program `conformance/<name>.c`. Records one result a source
site in --results:

  - a violation passes when a row has its function and format, and a test
    of the row exists and checks both: its body asserts a violation
    (ck_assert_violation, or "signal == SIGABRT") and contains "refrt:
    <fn>:" or a literal piece of the format;
  - a trap passes when the rows of traps in its file are as many as its
    file's rt__trap() calls, each with a test whose body asserts SIGILL
    (ck_assert_trap, or "signal == SIGILL").

A row whose violation is no longer in the source fails too: the table
describes this runtime, not an earlier one.
"""
import argparse
import pathlib
import re
import sys

import results as results_file

# The function is a literal, or a variable (a helper that reports for its
# caller): then its row's function is `(caller)`.
# The function's name: a literal, or an expression that holds it (fn,
# nd->fn, d.fn: "(caller)").
VIOLATION = re.compile(r'rt__violation\(\s*("[^"]+"|\w+(?:(?:->|\.)\w+)*)\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
TRAP = re.compile(r"\brt__trap\(\)\s*;")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(`[^`]*`|trap \(`[^`]+`\))\s*\|(.*)\|(.*)\|(.*)\|\s*$")
TEST = re.compile(r"`([^`]+)`")


def literal(lits):
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', lits))


def sites(src):
    out = []
    for path in sorted(pathlib.Path(src).glob("*.[ch]")):
        text = path.read_text(encoding="utf-8")
        text_nc = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
        for m in VIOLATION.finditer(text_nc):
            fn = m.group(1).strip('"') if m.group(1).startswith('"') else "(caller)"
            if fn == "rt_fn":
                continue
            out.append(("violation", path.name, fn, literal(m.group(2))))
        for _ in TRAP.finditer(text_nc):
            out.append(("trap", path.name, None, None))
    return out


def rows(docs):
    out = []
    for line in pathlib.Path(docs).read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if not m:
            continue
        fn, what, _when, sig, tests = m.groups()
        trap = what.startswith("trap")
        out.append({"fn": fn, "trap": trap,
                    "what": TEST.search(what).group(1),
                    "signal": sig.strip(), "tests": TEST.findall(tests)})
    return out


def test_body(root, ref):
    """The text of one test: a Check test's START_TEST..END_TEST plus the
    helpers it calls in its file, or a whole conformance program."""
    if ":" not in ref:
        p = root / ref
        return p.read_text(encoding="utf-8") if p.exists() else None
    path, name = ref.rsplit(":", 1)
    p = root / path
    if not p.exists():
        return None
    text = p.read_text(encoding="utf-8")
    m = re.search(r"START_TEST\(%s\)(.*?)END_TEST" % re.escape(name), text, re.S)
    if not m:
        return None
    body = m.group(1)
    # The helpers a death test runs in its child, and those the test calls
    # as a statement of its own (a helper that runs a table of cases):
    # their bodies count too.
    called = set(re.findall(r"ck_assert_(?:violation|trap)\((\w+)", body))
    called |= set(re.findall(r"^\s*(\w+)\(\);", body, re.M))
    for helper in called:
        h = re.search(r"\b%s\([^)]*\)\s*\{(.*?)\n\}" % re.escape(helper), text, re.S)
        if h:
            body += h.group(1)
    return body


def wrappers(root, ref, macro):
    """Functions of the test's file that call macro themselves (a suite's
    own helper, such as violates(fn, msg)): a call to one asserts as the
    macro does."""
    if ":" not in ref:
        return []
    p = root / ref.rsplit(":", 1)[0]
    text = p.read_text(encoding="utf-8") if p.exists() else ""
    out = []
    for m in re.finditer(r"^(?:static\s+)?\w[\w\s\*]*?\b(\w+)\(([^\n{;]*)\)\s*\{(.*?)^\}", text,
                         re.S | re.M):
        if macro in m.group(3) and m.group(1) != "START_TEST":
            out.append(m.group(1))
    return out


def asserts(root, ref, body, macro, signal):
    if macro in body or re.search(r"signal\s*==\s*(%s)\b" % signal, body):
        return True
    return any(re.search(r"\b%s\(" % re.escape(w), body) for w in wrappers(root, ref, macro))


def pieces(fmt):
    """The literal runs of a printf format, trimmed of the punctuation
    around them: what a test's expected message can quote."""
    runs = (p.strip(" ,.;:()[]") for p in re.split(r"%[-+ #0-9.]*[a-zA-Z]+", fmt))
    return [p for p in runs if len(p) >= 8]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--docs", default="docs/misuse.md")
    ap.add_argument("--results", required=True)
    args = ap.parse_args()
    root = pathlib.Path(args.root)
    found = sites(root / "reference" / "src")
    table = rows(root / args.docs)
    lines = []

    named = {}
    for kind, file, fn, fmt in found:
        if kind != "violation":
            continue
        name = f"misuse:{fn}:{fmt}"
        named[name] = named.get(name, 0) + 1
        if named[name] > 1:
            name += f" #{named[name]}"
        row = next((r for r in table if not r["trap"] and r["fn"] == fn and r["what"] == fmt), None)
        if row is None:
            lines.append(f"fail {name} ({file}) has no row in {args.docs}")
            continue
        good, why = [], []
        for ref in row["tests"]:
            body = test_body(root, ref)
            if body is None:
                why.append(f"{ref} not found")
                continue
            aborts = asserts(root, ref, body, "ck_assert_violation", "SIGABRT|6")
            says = (fn != "(caller)" and f"refrt: {fn}:" in body) or any(p in body for p in pieces(fmt))
            if aborts and says:
                good.append(ref)
            else:
                why.append(f"{ref} does not check " + ("the message" if aborts else "the abort"))
        lines.append(f"pass {name}" if good else
                     f"fail {name} no test checks it: {'; '.join(why) or 'no test named'}")

    per_file = {}
    for kind, file, _, _ in found:
        if kind == "trap":
            per_file[file] = per_file.get(file, 0) + 1
    for file, n in sorted(per_file.items()):
        trows = [r for r in table if r["trap"] and r["what"] == file]
        if len(trows) != n:
            lines.append(f"fail misuse:trap:{file} {n} traps in the source, {len(trows)} rows")
        for i, r in enumerate(trows, 1):
            ok = False
            for ref in r["tests"]:
                body = test_body(root, ref)
                if body and asserts(root, ref, body, "ck_assert_trap", "SIGILL|4"):
                    ok = True
            lines.append(f"pass misuse:trap:{file}:{r['fn']}:{i}" if ok else
                         f"fail misuse:trap:{file}:{r['fn']}:{i} no test named asserts SIGILL "
                         f"({', '.join(r['tests']) or 'none'})")

    for r in table:
        if r["trap"]:
            if r["what"] not in per_file:
                lines.append(f"fail misuse:trap:{r['what']} a row, but no rt__trap() there")
        elif not any(k == "violation" and fn == r["fn"] and fmt == r["what"]
                     for k, _, fn, fmt in found):
            lines.append(f"fail misuse:{r['fn']}:{r['what']} a row, but not in reference/src")

    bad = results_file.write(args.results, lines)
    print(f"misuse: {len(lines) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad or not lines else 0


if __name__ == "__main__":
    sys.exit(main())
