#!/usr/bin/env python3
"""test_gate.py: the gate's own scripts pass what holds and fail what does
not. Each test builds a small fixture tree in a temporary folder, runs one
script on it as make does, and checks its exit status and what it wrote.

Run by make check-gate-scripts; RT_RESULTS names the results file (one
"pass <test>" or "fail <test> <why>" a line).
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
GATE = HERE.parent
PY = sys.executable


def run(script, *args, cwd=None):
    return subprocess.run([PY, str(GATE / script), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def write(path, text):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class Tmp(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = pathlib.Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()


KIT_DOC = """# Kit
## What the naive implementation fails
| check | why |
|---|---|
| `a:exit==0` | it crashes |
## Other
| `b:exit==0` | not this section |
"""


class Kit(Tmp):
    def kit(self, results):
        write(self.tmp / "results" / "conformance", results)
        doc = write(self.tmp / "kit.md", KIT_DOC)
        return run("kit.py", "--docs", doc, "--results", self.tmp / "results",
                   "--out", self.tmp / "out")

    def test_the_documented_failures_hold(self):
        p = self.kit("fail a:exit==0 crashed\npass b:exit==0\n")
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_an_undocumented_failure_fails(self):
        p = self.kit("fail a:exit==0 crashed\nfail b:exit==0 crashed\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("fail kit-naive:b:exit==0", (self.tmp / "out").read_text())

    def test_a_documented_failure_that_passes_fails(self):
        p = self.kit("pass a:exit==0\npass b:exit==0\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("as failing, but passed", (self.tmp / "out").read_text())

    def test_a_kit_that_did_not_run_fails(self):
        p = self.kit("")
        self.assertEqual(p.returncode, 1)


GCOVR = {"files": [{"file": "reference/src/x.c", "lines": [
    {"line_number": 1, "count": 3, "branches": [{"count": 1}, {"count": 0}]},
    {"line_number": 2, "count": 0, "branches": []},
    {"line_number": 3, "count": 2, "branches": []}]}]}


class Coverage(Tmp):
    def cover(self, exceptions):
        write(self.tmp / "reference" / "src" / "x.c", "if (a) {\n    trap();\n}\n")
        js = write(self.tmp / "c.json", json.dumps(GCOVR))
        ex = write(self.tmp / "cov.md", exceptions)
        return run("coverage.py", "--json", js, "--exceptions", ex, "--results",
                   self.tmp / "res", "--uncovered", self.tmp / "unc", cwd=self.tmp)

    def test_figures_and_unjustified_gaps_fail(self):
        p = self.cover("")
        self.assertEqual(p.returncode, 1)
        self.assertIn("lines 2/3", p.stdout)
        self.assertIn("branches 1/2", p.stdout)
        self.assertIn("reference/src/x.c:2: line never run | trap();",
                      (self.tmp / "unc").read_text())

    def test_gaps_justified_by_their_text_pass(self):
        p = self.cover("| `reference/src/x.c` | `if (a) {` | why |\n"
                       "| `reference/src/x.c` | `trap();` | why |\n")
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_a_row_without_a_reason_justifies_nothing(self):
        p = self.cover("| `reference/src/x.c` | `if (a) {` | why |\n"
                       "| `reference/src/x.c` | `trap();` |  |\n")
        self.assertEqual(p.returncode, 1)


class Table(Tmp):
    def tree(self, results, mutants="Killed", killed_by=()):
        write(self.tmp / "reference" / "src" / "region.c", "")
        write(self.tmp / "reference" / "src" / "runtime.c", "")
        write(self.tmp / "conformance" / "p.c", "int main(void) { rt_region_open(0); }\n")
        build = self.tmp / "build"
        write(build / "results" / "conformance", results)
        rep = write(self.tmp / "m.json", json.dumps({"files": {"reference/src/region.c": {
            "mutants": [{"id": "1", "status": "Killed"},
                        {"id": "2", "status": mutants, "killedBy": list(killed_by)}]}}}))
        return run("table.py", "--root", self.tmp, "--build", build, "--mutants", rep)

    def test_all_held_holds(self):
        p = self.tree("pass p:exit==0\n")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("verdict: HOLDS", p.stdout)
        self.assertRegex(p.stdout, r"regions, chunk cache, clearing\s+-\s+1/1\s+-\s+2/2\s+fn 2\s")

    def test_the_mutant_kills_by_oracle(self):
        p = self.tree("pass p:exit==0\n", killed_by=["check-unit", "oracle:tsan"])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertRegex(p.stdout, r"gate: mechanism .* mutants\s+mutant kills\s+sanitizers")
        self.assertRegex(p.stdout, r"regions, chunk cache, clearing\s+-\s+1/1\s+-\s+2/2\s+fn 1 tsan 1\s")

    def test_a_failed_test_fails_the_verdict(self):
        p = self.tree("pass p:exit==0\nfail p:prog.x==1 seen 2\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("1/2 FAIL", p.stdout)
        self.assertIn("verdict: FAILS", p.stdout)

    def test_a_survivor_fails_the_verdict(self):
        p = self.tree("pass p:exit==0\n", mutants="Survived")
        self.assertEqual(p.returncode, 1)
        self.assertIn("1/2 FAIL", p.stdout)


class Junit(Tmp):
    def test_results_become_junit_with_their_failures(self):
        write(self.tmp / "build" / "results" / "conformance", "pass a\nfail b why it failed\n")
        p = run("junit.py", "--build", self.tmp / "build", "--out", self.tmp / "junit")
        self.assertEqual(p.returncode, 0, p.stdout)
        xml = (self.tmp / "junit" / "conformance.xml").read_text()
        self.assertIn('tests="2" failures="1"', xml)
        self.assertIn('message="why it failed"', xml)


class Misuse(Tmp):
    def misuse(self, test_body):
        write(self.tmp / "reference" / "src" / "a.c",
              'void f(void) { rt__violation("rt_f", "%p is bad here", p); rt__trap(); }\n')
        write(self.tmp / "reference" / "tests" / "check_a.c",
              "START_TEST(t)\n{\n%s\n}\nEND_TEST\n" % test_body)
        write(self.tmp / "docs" / "misuse.md",
              "| `rt_f` | `%p is bad here` | when | SIGABRT | `reference/tests/check_a.c:t` |\n"
              "| `rt_f` | trap (`a.c`) | when | SIGILL | `reference/tests/check_a.c:t` |\n")
        return run("misuse.py", "--root", self.tmp, "--results", self.tmp / "res")

    def test_a_test_that_checks_message_and_signal_passes(self):
        p = self.misuse('ck_assert_violation(h, NULL, "refrt: rt_f: ");\nck_assert_trap(g, NULL);')
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_a_test_without_the_message_fails(self):
        p = self.misuse('ck_assert_violation(h, NULL, "something else");\nck_assert_trap(g, NULL);')
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not check the message", p.stdout)

    def test_a_suite_helper_that_asserts_counts(self):
        write(self.tmp / "reference" / "src" / "a.c",
              'void f(void) { rt__violation("rt_f", "%p is bad here", p); }\n')
        write(self.tmp / "reference" / "tests" / "check_a.c",
              "static void violates(void (*fn)(void *), const char *msg)\n{\n"
              "    ck_assert_violation(fn, NULL, msg);\n}\n\n"
              "START_TEST(t)\n{\n    violates(h, \"refrt: rt_f: \");\n}\nEND_TEST\n")
        write(self.tmp / "docs" / "misuse.md",
              "| `rt_f` | `%p is bad here` | when | SIGABRT | `reference/tests/check_a.c:t` |\n")
        p = run("misuse.py", "--root", self.tmp, "--results", self.tmp / "res")
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_a_trap_without_its_assertion_fails(self):
        p = self.misuse('ck_assert_violation(h, NULL, "is bad here");')
        self.assertEqual(p.returncode, 1)
        self.assertIn("asserts SIGILL", p.stdout)


class Record(unittest.TextTestResult):
    lines = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.lines.append(f"pass gate-scripts:{test.id().split('.', 1)[1]}")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        why = str(err[1]).splitlines()[0] if str(err[1]) else err[0].__name__
        self.lines.append(f"fail gate-scripts:{test.id().split('.', 1)[1]} {why}")

    def addError(self, test, err):
        super().addError(test, err)
        self.lines.append(f"fail gate-scripts:{test.id().split('.', 1)[1]} error: {err[1]}")


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(resultclass=Record, verbosity=1).run(suite)
    out = os.environ.get("RT_RESULTS")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in Record.lines))
    sys.exit(0 if result.wasSuccessful() else 1)
