"""Mutant schemata: a schema build behaves as each mutant built alone."""
import json
import os
import subprocess
import tempfile
import unittest

from mutants import operators, schemata
from mutants.model import apply_edits
from mutants.tests import util
from mutants.model import Edit, Location, Mutant

CODE = r"""#include <stdio.h>
#include <stdarg.h>

static int scale(int x, int k)
{
    if (x > 3)
        return x * k;
    return x + k;
}

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static void show(int x)
{
    printf("%d %d\n", x, scale(x, 2));
}

int main(void)
{
    for (int i = 0; i < 6; i++)
        show(i);
    say("%s\n", "end");
    return 0;
}
"""


# A _Noreturn function (declared so in a header: die) and one that takes a
# function pointer (apply): their calls cannot be forwarded to a copy.
NORETURN_CODE = r"""#include <stdio.h>
#include <stdlib.h>

_Noreturn void die(const char *why, int (*code)(int));

static int twice(int x) { return 2 * x; }

static int apply(int (*f)(int), int x)
{
    if (x > 2)
        return f(x) + 1;
    return f(x);
}

void die(const char *why, int (*code)(int))
{
    fprintf(stdout, "dying: %s\n", why);
    fflush(stdout);
    exit(code(3));
}

int main(void)
{
    for (int i = 0; i < 5; i++)
        printf("%d\n", apply(twice, i));
    die("end", twice);
}
"""


def mut(code, mid, old, new):
    start = code.index(old)
    return Mutant(id=mid, origin="generated", operator="test", about="",
                  edits=[Edit("s.c", start, start + len(old), new)],
                  location=Location(1, 1, 1, 1))


def run_c(text, tmp, name, env=None, werror=True):
    src = os.path.join(tmp, name + ".c")
    exe = os.path.join(tmp, name)
    with open(src, "w") as f:
        f.write(text)
    # a schema build is made without -Werror (WERROR=): a mutant of a
    # _Noreturn function that returns is warned about, as alone
    flags = ["-Werror"] if werror else []
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-O2"] + flags + [src, "-o", exe],
                   check=True, capture_output=True)
    full = dict(os.environ)
    full.pop("RT_MUTANT", None)
    full.update(env or {})
    p = subprocess.run([exe], capture_output=True, text=True, env=full)
    return f"{p.stdout}exit {p.returncode}\n"


class SchemataTest(unittest.TestCase):
    def test_each_mutant_in_the_schema_behaves_as_built_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            # as in a run, only mutants that compile alone (tce) go in a schema
            alone = {}
            for m in operators.mutants("x.c", CODE):
                if ":main:" in m.id:
                    continue           # main's loop mutants may never end
                if any("va_start" in text for text in (CODE[e.start:e.end] for e in m.edits)):
                    continue           # va_arg of an unstarted list: any output is right
                try:
                    alone[m.id] = (m, run_c(apply_edits(CODE, m.edits), tmp, "alone"))
                except subprocess.CalledProcessError:
                    pass
            text, numbers = schemata.instrument(CODE, [m for m, _ in alone.values()])
            self.assertEqual(run_c(text, tmp, "schema"), run_c(CODE, tmp, "original"))
            checked = 0
            for mid, (m, out) in alone.items():
                if mid in numbers:
                    got = run_c(text, tmp, "schema", {"RT_MUTANT": str(numbers[mid])})
                    self.assertEqual(got, out, m.about)
                    checked += 1
            self.assertGreater(checked, 10)

    def test_a_constructor_that_runs_first_runs_its_mutant(self):
        # hot_start's shape: a constructor of priority 101 runs before any
        # of the schema's own would, and must still run the mutant picked
        code = ("#include <stdio.h>\nstatic int start;\n"
                "__attribute__((constructor(101))) static void early(void)\n{\n"
                "    start = 5;\n}\n"
                "int main(void)\n{\n    printf(\"%d\\n\", start);\n    return 0;\n}\n")
        m = mut(code, "early_6", "start = 5;", "start = 6;")
        text, numbers = schemata.instrument(code, [m])
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(run_c(text, tmp, "schema"), "5\nexit 0\n")
            self.assertEqual(run_c(text, tmp, "schema", {"RT_MUTANT": str(numbers["early_6"])}),
                             "6\nexit 0\n")

    def test_variadic_functions_are_in_it_inlined(self):
        mutants = operators.mutants("x.c", CODE)
        text, numbers = schemata.instrument(CODE, mutants)
        say = [m.id for m in mutants if ":say:" in m.id]
        self.assertTrue(say)
        self.assertTrue(set(say) <= set(numbers))
        self.assertNotIn("say__m", text)          # no copy: the body sits in say's own
        self.assertIn("scale__m", text)           # forwarded, as before
        self.assertTrue(any(":show:" in i for i in numbers))

    def test_noreturn_and_function_pointer_functions_behave_as_built_alone(self):
        header = "_Noreturn void die(const char *why, int (*code)(int));\n"
        code = NORETURN_CODE
        mutants = [m for m in operators.mutants("x.c", code) if ":main:" not in m.id]
        names = schemata.noreturn_names([header, code])
        self.assertEqual(names, {"die"})
        text, numbers = schemata.instrument(code, mutants, noreturn=names)
        in_die = {m.id for m in mutants if ":die:" in m.id or ":apply:" in m.id}
        self.assertTrue(in_die)
        self.assertTrue(in_die <= set(numbers))
        with tempfile.TemporaryDirectory() as tmp:
            same = lambda t, name, env=None: run_c(t, tmp, name, env, werror=False)
            self.assertEqual(same(text, "schema"), same(code, "original"))
            checked = 0
            for m in mutants:
                try:
                    out = same(apply_edits(code, m.edits), "alone")
                except subprocess.CalledProcessError:
                    continue
                got = same(text, "schema", {"RT_MUTANT": str(numbers[m.id])})
                self.assertEqual(got, out, m.about)
                checked += 1
            self.assertGreater(checked, 5)

    def test_a_body_with_a_label_that_cannot_be_forwarded_is_left_out(self):
        code = ("void walk(int n, ...)\n{\n    int i = 0;\nagain:\n    if (i++ < n)\n"
                "        goto again;\n}\n")
        mutants = operators.mutants("x.c", code)
        self.assertTrue(mutants)
        _, numbers = schemata.instrument(code, mutants)
        self.assertEqual(numbers, {})

    def test_a_syntax_copy_s_diagnostic_names_its_mutant(self):
        code = ("static int twice(int a)\n{\n    return a * 2;\n}\n"
                "_Noreturn void die(void);\nvoid die(void)\n{\n    for (;;) {}\n}\n"
                "int f(int b)\n{\n    return twice(b);\n}\n")
        ms = [mut(code, "mul", "a * 2", "a * 3"), mut(code, "undeclared", "a * 2", "z * 2"),
              mut(code, "in_die", "for (;;) {}", "for (;;) { }"),
              mut(code, "in_f", "twice(b)", "twice(b + 1)")]
        text, tags = schemata.syntax_copies(code, ms, noreturn={"die"})
        self.assertEqual(set(tags), {"mul", "undeclared", "in_f"})    # die's alone
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.c")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                                "-fsyntax-only", path], capture_output=True, text=True)
        errors = [l for l in p.stderr.splitlines() if ": error:" in l]
        # the undeclared name, and the parameter it leaves unused: its copy's
        self.assertEqual(len(errors), 2, p.stderr)
        self.assertTrue(all(e.startswith(tags["undeclared"] + ":") for e in errors), p.stderr)
        self.assertTrue(any(e.startswith(tags["undeclared"] + ":3:") for e in errors))

    def test_a_comparison_copy_keeps_the_original_s_lines_and_name(self):
        # each copy is numbered as the original is and its __func__ is the
        # original's name, so __LINE__ and __func__ give the mutant's own
        # values; two copies of the original, first and last; a function
        # with a static of its own, or declared noreturn, has none
        code = ("#include <stdio.h>\nint where(int a)\n{\n"
                "    printf(\"%s %d\\n\", __func__, __LINE__);\n    return a * 2;\n}\n"
                "int count(void)\n{\n    static int n;\n    return ++n;\n}\n"
                "_Noreturn void die(void);\nvoid die(void)\n{\n    for (;;) {}\n}\n"
                "int main(void)\n{\n    return where(1) - 2 + count() - 1;\n}\n")
        ms = [mut(code, "mul", "a * 2", "a * 3"), mut(code, "inc", "++n", "n++"),
              mut(code, "in_die", "for (;;) {}", "for (;;) { }")]
        text, copy_of, refs = schemata.compare_copies(code, ms, noreturn={"die"})
        self.assertEqual(set(copy_of), {"mul"})
        copy, fn = copy_of["mul"]
        self.assertEqual(fn, "where")
        first, last = refs["where"]
        self.assertLess(text.index(first + "("), text.index(copy + "("))
        self.assertLess(text.index(copy + "("), text.index(last + "("))
        # the copies print what the original prints; the file goes on
        # being numbered as before
        calls = (f"\nint main2(void) {{ {first}(1); {copy}(1); {last}(1); "
                 f"printf(\"%d\\n\", __LINE__); return 0; }}\n")
        with tempfile.TemporaryDirectory() as tmp:
            out = run_c(text.replace("int main(void)", "int main1(void)") + calls
                        .replace("main2", "main"), tmp, "c")
        lines = out.splitlines()
        self.assertEqual(lines[:3], ["where 4"] * 3)
        self.assertEqual(lines[3], str(code.count("\n") + 2))

    def test_numbers_start_where_asked(self):
        mutants = [m for m in operators.mutants("x.c", CODE) if ":scale:" in m.id]
        _, numbers = schemata.instrument(CODE, mutants, first=100)
        self.assertEqual(sorted(numbers.values()), list(range(100, 100 + len(numbers))))

    def test_with_none_picked_left_out_a_schema_compiles_to_the_original(self):
        # RT_SCHEMATA_NONE leaves out every part the schema adds, so the
        # rest compiles to the original's object code; a schema whose text
        # around those parts changed does not (cli.schema_proof)
        from mutants import tce
        mutants = [m for m in operators.mutants("x.c", CODE)
                   if not any("va_start" in CODE[e.start:e.end] for e in m.edits)]
        text, numbers = schemata.instrument(CODE, mutants)
        self.assertGreater(len(numbers), 10)
        flags = tce.flags_of(["-std=c11", "-Wall", "-Wextra", "-O2"])[0]
        with tempfile.TemporaryDirectory() as tmp:
            original = tce.object_digest("cc", tmp, CODE, [], flags)[0]
            none = tce.object_digest("cc", tmp, text, [], flags + ["-DRT_SCHEMATA_NONE"])[0]
            self.assertIsNotNone(original)
            self.assertEqual(none, original)
            # with the schema in, it is other code
            self.assertNotEqual(tce.object_digest("cc", tmp, text, [], flags)[0], original)
            # one token of the original changed outside the schema's parts
            at = text.rindex("return x + k;")        # the original's (its copies come first)
            broken = text[:at] + "return x - k;" + text[at + len("return x + k;"):]
            self.assertNotEqual(
                tce.object_digest("cc", tmp, broken, [], flags + ["-DRT_SCHEMATA_NONE"])[0],
                original)

    def test_a_proven_schema_runs_no_suite_unmutated_and_gives_the_same_verdicts(self):
        root = util.fixture_copy(self)
        args = ("--only", "calc.c:*", "--only", "clamp_*", "--no-cache", "--schema-min", "2")
        proven = util.run_driver(root, *args)
        self.assertRegex(proven.stderr, r"in one schema build \([\d.]+ s; with no mutant picked "
                                        r"its \d+ files compile to the original's object code")
        with open(os.path.join(root, "build", "cc", "mutants", "logs", "schema.log")) as f:
            log = f.read()
        self.assertIn("schema proof: the object code of the original", log)
        with open(os.path.join(root, "build", "cc", "mutants", "report.json")) as f:
            first = f.read()
        checked = util.run_driver(root, *args, "--schema-suites")
        self.assertIn("in one schema build", checked.stderr)
        self.assertNotIn("object code", checked.stderr)
        with open(os.path.join(root, "build", "cc", "mutants", "report.json")) as f:
            second = f.read()
        status = lambda rep: {m["id"]: (m["status"], m["killedBy"])
                              for f in json.loads(rep)["files"].values() for m in f["mutants"]}
        self.assertEqual(status(first), status(second))

    def test_the_driver_gives_the_same_verdicts_with_and_without_a_schema(self):
        root = util.fixture_copy(self)
        args = ("--only", "calc.c:*", "--only", "clamp_*", "--no-cache", "--schema-min", "2")
        with_schema = util.run_driver(root, *args)
        self.assertIn("in one schema build", with_schema.stderr)
        with open(os.path.join(root, "build", "cc", "mutants", "report.json")) as f:
            first = f.read()
        alone = util.run_driver(root, *args, "--no-schemata")
        self.assertNotIn("in one schema build", alone.stderr)
        with open(os.path.join(root, "build", "cc", "mutants", "report.json")) as f:
            second = f.read()
        status = lambda rep: {m["id"]: (m["status"], m["killedBy"])
                              for f in json.loads(rep)["files"].values() for m in f["mutants"]}
        self.assertEqual(status(first), status(second))
        self.assertEqual(with_schema.stdout.splitlines()[-1], alone.stdout.splitlines()[-1])


if __name__ == "__main__":
    unittest.main()
