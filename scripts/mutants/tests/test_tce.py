"""Trivial compiler equivalence: equal optimised objects are pruned, on
every target the runtime claims (x86-64 gcc, x86-64 clang, aarch64 gcc;
scripts/deps installs the three, so none of these tests is skipped)."""
import os
import tempfile
import unittest

from mutants import operators, tce
from mutants.tests import util
from mutants.model import COMPILE_ERROR, IGNORED, PENDING, Edit, Location, Mutant

CODE = """int g;
int f(int a)
{
    int unused = a + 1;
    (void)unused;
    if (a < 5)
        g = 1;
    return a;
}
"""

# rt__task_unref's pattern: the last of two references dropped on two
# threads. x86-64 has one locked xadd for every order; aarch64 without LSE
# a load-acquire/store-release exclusive loop for acq_rel and a plain one
# for relaxed.
UNREF = """#include <stdatomic.h>
#include <stdlib.h>

struct obj { atomic_int refs; int data; };

void obj_unref(struct obj *o)
{
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        free(o);
}

int obj_peek(struct obj *o)
{
    int unused = o->data + 1;
    (void)unused;
    return o->data;
}
"""

X86_GCC, X86_CLANG, AARCH64_GCC = (name for name, _ in tce.CLAIMED)


def mutant(mid, old, new, code=CODE):
    start = code.index(old)
    return Mutant(id=mid, origin="generated", operator="test", about="",
                  edits=[Edit("x.c", start, start + len(old), new)],
                  location=Location(1, 1, 1, 1))


class Pruning(unittest.TestCase):
    def prune(self, mutants, code=CODE, claimed=tce.CLAIMED, memo=None, killed=()):
        self.said = []
        with tempfile.TemporaryDirectory() as tree:
            self.summary = tce.prune(mutants, {"x.c": code}, tree, cc="gcc", jobs=2,
                                     include_dirs=(), claimed=claimed, memo=memo,
                                     say=self.said.append, killed=killed)
        return mutants


class TceTest(Pruning):
    def test_a_mutant_killed_before_is_compared_by_its_copy_and_never_compiled_whole(self):
        # the kill map's kills: compared by their function's copies (so a
        # duplicate among them is found), never compiled whole; one that
        # does not compile any more is still a CompileError
        ms = [mutant("dead", "a + 1", "a - 1"), mutant("le5", "a < 5", "a <= 5"),
              mutant("le5b", "a < 5", "a <= 5"), mutant("bad", "return a;", "return b;")]
        dead, le5, le5b, bad = self.prune(ms, killed={"dead", "le5", "le5b", "bad"})
        self.assertTrue(dead.equivalent)
        self.assertIn("function's copy", dead.status_reason)
        self.assertEqual((le5.status, le5b.duplicate_of), (PENDING, "le5"))
        self.assertEqual(bad.status, COMPILE_ERROR)
        self.assertEqual(self.summary["by_function"], 3)
        self.assertEqual(self.summary["compiled"][X86_GCC], 1)    # the original only
        self.assertEqual(self.summary["unique_by_function"], ["le5"])

    def test_a_killed_mutant_no_copy_can_judge_is_only_checked_to_compile(self):
        # a function with a static of its own: each copy would have its
        # own, so no copy compares; killed, it is checked, not compiled
        code = CODE.replace("int unused = a + 1;", "static int calls;\n    calls++;\n"
                            "    int unused = a + 1;")
        ms = [mutant("le5", "a < 5", "a <= 5", code), mutant("dead", "a + 1", "a - 1", code)]
        le5, dead = self.prune(ms, code=code, killed={"le5"})
        self.assertEqual(le5.status, PENDING)
        self.assertEqual(self.summary["checked"], 1)
        self.assertEqual(self.summary["by_function"], 0)
        # one not killed is compiled whole, as every mutant was before
        self.assertTrue(dead.equivalent)
        self.assertIn("object code", dead.status_reason)
        self.assertEqual(self.summary["compiled"][X86_GCC], 2)    # the original and dead

    def test_the_mutants_of_a_file_are_checked_in_one_compilation(self):
        # one -fsyntax-only of the file with a copy a mutant: clean copies
        # pass at once, a copy a diagnostic names is checked alone and is
        # what it is alone (an unused parameter under -Werror does not
        # compile), a diagnostic of no copy sends the whole file alone
        code = CODE + "int h(int x, int y)\n{\n    return x + y;\n}\n"
        ms = [mutant("le5", "a < 5", "a <= 5", code), mutant("ge5", "a < 5", "a >= 5", code),
              mutant("noy", "x + y", "x + 1", code), mutant("bad", "return a;", "return b;", code)]
        le5, ge5, noy, bad = self.prune(ms, code=code, killed={"le5", "ge5", "noy", "bad"})
        self.assertEqual((le5.status, ge5.status), (PENDING, PENDING))
        self.assertEqual((noy.status, bad.status), (COMPILE_ERROR, COMPILE_ERROR))
        self.assertIn("unused parameter", noy.status_reason)
        self.assertEqual(self.summary["by_function"], 2)
        # not killed, the same: a front-end error is found by -fsyntax-only
        # alone, with no whole compilation
        le5, ge5, noy, bad = self.prune([mutant(m.id, *old, code) for m, old in zip(
            ms, [("a < 5", "a <= 5"), ("a < 5", "a >= 5"), ("x + y", "x + 1"),
                 ("return a;", "return b;")])], code=code)
        self.assertEqual((noy.status, bad.status), (COMPILE_ERROR, COMPILE_ERROR))
        broken = "int broken(void) { return undeclared; }\n" + code
        ms = [mutant("le5", "a < 5", "a <= 5", broken), mutant("ge5", "a < 5", "a >= 5", broken)]
        self.prune(ms, code=broken, killed={"le5", "ge5"})
        self.assertEqual((self.summary["by_function"], self.summary["bulk"]), (0, 0))
        # the clean ones no copy compares are counted as checked in bulk
        local = code.replace("int unused = a + 1;", "static int n;\n    n++;\n"
                             "    int unused = a + 1;")
        ms = [mutant("le5", "a < 5", "a <= 5", local), mutant("ge5", "a < 5", "a >= 5", local)]
        self.prune(ms, code=local, killed={"le5", "ge5"})
        self.assertEqual((self.summary["by_function"], self.summary["bulk"]), (0, 2))

    def test_every_claimed_target_is_here(self):
        # scripts/deps (scripts/packages.d/mutants) installs them: a test
        # run without one would prove nothing about it
        present, missing = tce.targets("gcc")
        self.assertEqual(missing, [], "run scripts/deps")
        self.assertEqual([n for n, _ in present], [X86_GCC, X86_CLANG, AARCH64_GCC])

    def test_a_mutant_of_dead_code_is_equivalent(self):
        [m] = self.prune([mutant("dead", "a + 1", "a - 1")])
        self.assertEqual(m.status, IGNORED)
        self.assertTrue(m.equivalent)
        self.assertIn("equivalent", m.status_reason)

    def test_equal_on_every_target_is_equivalent(self):
        [m] = self.prune([mutant("dead", "o->data + 1", "o->data - 1", UNREF)], UNREF)
        self.assertTrue(m.equivalent)
        self.assertIn(f"{X86_GCC}, {X86_CLANG}, {AARCH64_GCC}", m.status_reason)
        self.assertEqual(self.summary["targets"], [X86_GCC, X86_CLANG, AARCH64_GCC])
        self.assertEqual(self.summary["split"], [])

    def test_a_weakening_equal_on_x86_64_only_is_not_equivalent(self):
        [m] = self.prune([mutant("relaxed", "memory_order_acq_rel", "memory_order_relaxed",
                                 UNREF)], UNREF)
        self.assertEqual(m.status, PENDING)
        self.assertFalse(m.equivalent)
        # a one-target TCE would have pruned it: the summary says which differ
        [(mid, what)] = self.summary["split"]
        self.assertEqual(mid, "relaxed")
        self.assertIn(f"equals the original on {X86_GCC}, {X86_CLANG}", what)
        self.assertIn(f"differs on {AARCH64_GCC}", what)

    def test_the_weakening_is_equivalent_on_x86_64_alone(self):
        # the damage the three targets undo: gcc alone calls it equivalent
        only_x86 = tuple(t for t in tce.CLAIMED if t[0] != AARCH64_GCC)
        [m] = self.prune([mutant("relaxed", "memory_order_acq_rel", "memory_order_relaxed",
                                 UNREF)], UNREF, claimed=only_x86)
        self.assertTrue(m.equivalent)

    def test_equal_objects_are_duplicates_of_the_first(self):
        # a < 5 and a <= 4 compile alike; the first is kept, the second pruned
        first, second, other = self.prune([mutant("le5", "a < 5", "a <= 5"),
                                           mutant("lt6", "a < 5", "a < 6"),
                                           mutant("ge5", "a < 5", "a >= 5")])
        self.assertEqual(first.status, PENDING)
        self.assertEqual(second.status, IGNORED)
        self.assertEqual(second.duplicate_of, "le5")
        self.assertFalse(second.equivalent)
        self.assertIn(AARCH64_GCC, second.status_reason)
        self.assertEqual(other.status, PENDING)

    def test_a_duplicate_must_be_one_on_every_target(self):
        # Three mutants that compare with 2 instead of 1: all alike on
        # x86-64 (one locked xadd for every order), but release and relaxed
        # apart on aarch64 (stlxr against stxr). The third spells the first
        # another way: a duplicate of it on every target.
        old = "memory_order_acq_rel) == 1"

        def three():
            return [mutant("release", old, "memory_order_release) == 2", UNREF),
                    mutant("relaxed", old, "memory_order_relaxed) == 2", UNREF),
                    mutant("again", old, "memory_order_release) == 1 + 1", UNREF)]
        release, relaxed, again = self.prune(three(), UNREF)
        self.assertEqual(release.status, PENDING)
        self.assertEqual(relaxed.status, PENDING)
        self.assertIsNone(relaxed.duplicate_of)
        self.assertEqual(again.status, IGNORED)
        self.assertEqual(again.duplicate_of, "release")
        self.assertEqual(self.summary["split"], [
            ("relaxed", f"equals release on {X86_GCC}, {X86_CLANG}; differs on {AARCH64_GCC}")])
        # on x86-64 alone, relaxed would be a duplicate of release too
        only_x86 = tuple(t for t in tce.CLAIMED if t[0] != AARCH64_GCC)
        release, relaxed, again = self.prune(three(), UNREF, claimed=only_x86)
        self.assertEqual(relaxed.duplicate_of, "release")
        self.assertEqual(again.duplicate_of, "release")

    def test_a_missing_target_is_said_and_the_others_judge(self):
        claimed = tce.CLAIMED + (("riscv64 gcc", "refrt-no-such-riscv64-gcc"),)
        [m] = self.prune([mutant("relaxed", "memory_order_acq_rel", "memory_order_relaxed",
                                 UNREF)], UNREF, claimed=claimed)
        self.assertEqual(self.summary["missing"],
                         [("riscv64 gcc", "no refrt-no-such-riscv64-gcc on PATH")])
        [line] = [l for l in self.said if "riscv64 gcc" in l]
        self.assertIn("missing", line)
        self.assertIn(f"judged on {X86_GCC}, {X86_CLANG}, {AARCH64_GCC} only", line)
        self.assertEqual(m.status, PENDING)     # aarch64 still tells it apart

    def test_a_target_without_its_c_library_is_missing_too(self):
        # the cross compiler without libc6-dev-arm64-cross: said, not used
        with tempfile.TemporaryDirectory() as bin_dir:
            cc = os.path.join(bin_dir, "refrt-test-aarch64-gcc")
            with open(cc, "w") as f:
                # its own headers (stdatomic.h) and none of the C library's
                f.write("#!/bin/sh\nexec aarch64-linux-gnu-gcc -nostdinc -isystem "
                        "\"$(aarch64-linux-gnu-gcc -print-file-name=include)\" \"$@\"\n")
            os.chmod(cc, 0o755)
            claimed = tce.CLAIMED[:2] + ((AARCH64_GCC, cc),)
            [m] = self.prune([mutant("relaxed", "memory_order_acq_rel",
                                     "memory_order_relaxed", UNREF)], UNREF, claimed=claimed)
        [(name, why)] = self.summary["missing"]
        self.assertEqual(name, AARCH64_GCC)
        self.assertIn("features.h", why)
        self.assertEqual(self.summary["targets"], [X86_GCC, X86_CLANG])
        [line] = self.said
        self.assertIn(f"target {AARCH64_GCC} missing", line)
        self.assertTrue(m.equivalent)           # what x86-64 alone concludes

    def test_a_mutant_another_target_cannot_compile_is_run_and_said(self):
        # gcc takes a nested function (unused: the same object code); clang
        # does not. Not a CompileError (gcc builds it), not equivalent
        # (clang's object is unknown): run, and said.
        [m] = self.prune([mutant("nested", "(void)unused;",
                                 "__attribute__((unused)) int h(void) { return 0; } "
                                 "(void)unused;")])
        self.assertEqual(m.status, PENDING)
        [line] = [l for l in self.said if "nested" in l]
        self.assertIn(f"compiles for {X86_GCC} but not for {X86_CLANG}", line)

    def test_only_mutants_equal_on_the_first_target_compile_on_the_others(self):
        ms = [mutant("ret", "return a;", "return 0;"),       # unique on x86-64 gcc
              mutant("dead", "a + 1", "a - 1")]              # equal to the original
        self.prune(ms)
        # one comparison schema on each target; whole, on x86-64 gcc the
        # original and ret (unique by its copy, not known killed), on the
        # others the original (does the file compile there)
        self.assertEqual(self.summary["schemas"], {X86_GCC: 1, X86_CLANG: 1, AARCH64_GCC: 1})
        self.assertEqual(self.summary["compiled"], {X86_GCC: 2, X86_CLANG: 1, AARCH64_GCC: 1})
        self.prune([mutant("ret", "return a;", "return 0;")])
        self.assertEqual(self.summary["schemas"], {X86_GCC: 1, X86_CLANG: 0, AARCH64_GCC: 0})

    def test_verdicts_are_kept_by_content_a_target(self):
        memo = {}
        self.prune([mutant("dead", "a + 1", "a - 1")], memo=memo)
        # the original whole and the comparison schema, on three targets
        self.assertEqual(len(memo), 6)
        self.prune([mutant("dead", "a + 1", "a - 1")], memo=memo)
        self.assertEqual(sum(self.summary["compiled"].values()), 0)
        self.assertEqual(sum(self.summary["schemas"].values()), 0)
        self.assertEqual(sum(self.summary["cached"].values()), 6)

    def test_a_mutant_that_does_not_compile_is_recorded(self):
        [m] = self.prune([mutant("bad", "return a;", "return b;")])
        self.assertEqual(m.status, COMPILE_ERROR)
        self.assertIn("error", m.status_reason)

    def test_a_real_change_is_kept(self):
        [m] = self.prune([mutant("ret", "return a;", "return 0;")])
        self.assertEqual(m.status, PENDING)

    def test_generated_mutants_of_a_snippet(self):
        ms = self.prune(operators.mutants("x.c", CODE))
        statuses = {m.id: m.status for m in ms}
        self.assertIn(IGNORED, statuses.values())     # the dead a + 1 at least
        self.assertIn(PENDING, statuses.values())
        # nothing written beside the snippet: tce compiles from memory
        self.assertFalse(os.path.exists("x.o"))


# A cold path gcc splits off (f.cold), a string, a switch with a jump
# table, a static helper one caller calls with a constant, and a static
# function only one place calls.
SHAPES = """#include <stdlib.h>
extern void say(const char *what);
extern int ext(int);

int check(int a)
{
    if (__builtin_expect(a < 0, 0)) {
        say("a is negative");
        abort();
    }
    return a * 3;
}

int pick(int k)
{
    switch (k) {
    case 0: return ext(10);
    case 1: return ext(11);
    case 2: return ext(12);
    case 3: return ext(13);
    case 4: return ext(14);
    case 5: return ext(15);
    default: return ext(99);
    }
}

static int sign(int x)
{
    return x > 0 ? 1 : 2;
}

int five(void)
{
    return sign(5);
}

static int helper(int x)
{
    return ext(x) + 1;
}

int uses(int x)
{
    return helper(x);
}
"""


def shaped(mid, old, new):
    return mutant(mid, old, new, SHAPES)


class FunctionCopiesTest(Pruning):
    """A file's mutants compared by copies of their functions: what each
    copy's code must show, and what is compiled whole after all."""

    def test_a_change_in_the_cold_part_or_a_string_is_seen(self):
        text, negative = self.prune([shaped("msg", '"a is negative"', '"a is < 0"'),
                                     shaped("gone", 'say("a is negative");', "(void)0;")],
                                    SHAPES, killed={"msg", "gone"})
        self.assertEqual((text.status, negative.status), (PENDING, PENDING))
        self.assertIsNone(negative.duplicate_of)
        self.assertEqual(self.summary["by_function"], 2)

    def test_a_change_in_a_jump_table_is_seen(self):
        ms = [shaped("k3", "case 3:", "case 6:"), shaped("k3b", "case 3:", "case 6:"),
              shaped("v4", "ext(14)", "ext(13)")]
        k3, k3b, v4 = self.prune(ms, SHAPES, killed={"k3", "k3b", "v4"})
        self.assertEqual((k3.status, v4.status), (PENDING, PENDING))
        self.assertEqual(k3b.duplicate_of, "k3")
        self.assertEqual(self.summary["by_function"], 3)

    def test_equal_only_where_its_caller_inlines_it_is_compiled_whole(self):
        # sign's copy tells x > 1 apart (sign(1) differs), but its only
        # caller passes 5: whole, the objects are equal. Not known killed,
        # it is compiled whole and is equivalent; known killed, it is run
        # and named, for the caller to compare whole if it survives.
        [m] = self.prune([shaped("gt1", "x > 0", "x > 1")], SHAPES)
        self.assertTrue(m.equivalent)
        self.assertIn("object code", m.status_reason)
        self.assertEqual(self.summary["unique_by_function"], [])
        [m] = self.prune([shaped("gt1", "x > 0", "x > 1")], SHAPES, killed={"gt1"})
        self.assertEqual(m.status, PENDING)
        self.assertEqual(self.summary["unique_by_function"], ["gt1"])
        [m] = tce.prune([m], {"x.c": SHAPES}, tempfile.gettempdir(), cc="gcc", whole=True,
                        say=lambda line: None) and [m]
        self.assertTrue(m.equivalent)

    def test_a_static_left_unused_is_a_compile_error(self):
        # no copy shows it (the original still calls helper): alone
        [m] = self.prune([shaped("nohelp", "helper(x)", "ext(x)")], SHAPES)
        self.assertEqual(m.status, COMPILE_ERROR)
        self.assertIn("defined but not used", m.status_reason)

    def test_a_warning_only_the_optimiser_gives_names_its_copy(self):
        # -Wmaybe-uninitialized comes from the optimiser, not -fsyntax-only:
        # the comparison schema's diagnostic names the copy, which is then
        # compiled whole (a CompileError); the others are still compared
        code = ("extern int get(void);\nextern void use(int);\nint f(int a)\n{\n"
                "    int r;\n    if (a > 0)\n        r = get();\n    else\n        r = 0;\n"
                "    use(r);\n    return r;\n}\n")
        ms = [mutant("noelse", "r = 0;", "(void)a;", code),
              mutant("one", "a > 0", "a > 1", code)]
        noelse, one = self.prune(ms, code=code)
        self.assertEqual(noelse.status, COMPILE_ERROR)
        self.assertIn("uninitialized", noelse.status_reason)
        self.assertEqual(one.status, PENDING)
        self.assertEqual(self.summary["by_function"], 1)

    def test_a_weakening_on_aarch64_is_seen_by_its_copy(self):
        # the function copies judge the memory order on every target, as
        # the whole objects do
        ms = [mutant("relaxed", "memory_order_acq_rel", "memory_order_relaxed", UNREF),
              mutant("dead", "o->data + 1", "o->data - 1", UNREF)]
        relaxed, dead = self.prune(ms, UNREF, killed={"relaxed", "dead"})
        self.assertEqual(relaxed.status, PENDING)
        self.assertTrue(dead.equivalent)
        self.assertEqual(self.summary["by_function"], 2)
        [(mid, what)] = self.summary["split"]
        self.assertEqual(mid, "relaxed")
        self.assertIn(f"differs on {AARCH64_GCC}", what)


class AssemblyTest(unittest.TestCase):
    ASM = """\t.text
\t.section\t.rodata.str1.1,"aMS",@progbits,1
.LC0:
\t.string\t"one"
.LC1:
\t.string\t"two"
\t.text
\t.type\tf__tce1, @function
f__tce1:
\tleaq\t.LC0(%rip), %rdi
\tje\t.L3
\tcall\tf__tce1.part.0
.L3:
\tret
\t.size\tf__tce1, .-f__tce1
\t.type\tf__tce2, @function
f__tce2:
\tleaq\t.LC0(%rip), %rdi   # a comment
\tje\t.L9
\tcall\tf__tce2.part.0
.L9:
\tret
\t.size\tf__tce2, .-f__tce2
\t.type\tf__tce1.part.0, @function
f__tce1.part.0:
\tmovl\t$1, %eax
\t.size\tf__tce1.part.0, .-f__tce1.part.0
\t.type\tf__tce2.part.0, @function
f__tce2.part.0:
\tmovl\t$2, %eax
\t.size\tf__tce2.part.0, .-f__tce2.part.0
"""

    def test_names_labels_and_data_are_rendered_by_what_they_are(self):
        code = tce.Assembly(self.ASM)
        one = code.render("f__tce1")
        self.assertIn('leaq\t{.string\t"one"}(%rip), %rdi', one)
        self.assertIn("je\t.L#0", one)
        self.assertIn("call\t@self.part.0", one)
        self.assertIn("movl\t$1, %eax", one)          # the split-off part, inside
        self.assertIsNone(code.render("nothing"))

    def test_a_difference_in_a_split_off_part_is_a_difference(self):
        code = tce.Assembly(self.ASM)
        self.assertNotEqual(code.digest("f__tce1"), code.digest("f__tce2"))
        same = tce.Assembly(self.ASM.replace("movl\t$2", "movl\t$1"))
        self.assertEqual(same.digest("f__tce1"), same.digest("f__tce2"))
        other = tce.Assembly(self.ASM.replace("movl\t$2", "movl\t$1").replace(
            "f__tce2:\n\tleaq\t.LC0", "f__tce2:\n\tleaq\t.LC1"))
        self.assertNotEqual(other.digest("f__tce1"), other.digest("f__tce2"))


class BlameTest(unittest.TestCase):
    def test_a_diagnostic_belongs_to_the_copy_it_is_in_or_inlined_into(self):
        message = ("<stdin>: In function \u2018f__tce3\u2019:\n"
                   "<stdin>:7:8: warning: \u2018r\u2019 may be used uninitialized\n"
                   "<stdin>:5:9: note: \u2018r\u2019 was declared here\n"
                   "In function 'helper',\n    inlined from 'g__tce9' at <stdin>:40:3:\n"
                   "<stdin>:20:5: warning: array subscript 4 is above array bounds\n")
        self.assertEqual(tce._blame(message, {"f__tce3", "g__tce9", "f__tce4"}),
                         ({"f__tce3", "g__tce9"}, False))

    def test_a_diagnostic_of_no_copy_is_stray(self):
        message = ("<stdin>: In function 'original':\n<stdin>:3:1: warning: unused\n"
                   "<stdin>: At top level:\n<stdin>:9:1: warning: defined but not used\n")
        self.assertEqual(tce._blame(message, {"original__tce1"}), (set(), True))
        self.assertEqual(tce._blame("", {"x"}), (set(), False))

    def test_a_use_taken_from_a_static_with_no_other_is_compiled_alone(self):
        code = ("static int helper(int x);\nstatic int helper(int x)\n{\n    return x;\n}\n"
                "int twice(int x);\nint uses(int x)\n{\n    return helper(x) + twice(x) "
                "+ twice(x);\n}\n")
        self.assertTrue(tce._unuses_a_name(mutant("h", "helper(x) +", "", code), code))
        # a name with other uses left, or no static, is not
        self.assertFalse(tce._unuses_a_name(mutant("t", "+ twice(x)", "", code), code))
        self.assertFalse(tce._unuses_a_name(mutant("x", "helper(x)", "helper(1)", code), code))


class DriverTceTest(unittest.TestCase):
    def test_tce_only_says_the_targets_and_stops(self):
        root = util.fixture_copy(self)
        before = util.tree_digest(root)
        p = util.run_driver(root, "--generated-only", "--tce-only")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"mutants: TCE on {X86_GCC}, {X86_CLANG}, {AARCH64_GCC}: ", p.stderr)
        self.assertRegex(p.stderr, r"compiled \d+ for x86-64 gcc, \d+ for x86-64 clang, "
                                   r"\d+ for aarch64 gcc")
        self.assertNotIn("unmutated run", p.stderr)     # nothing run but TCE
        self.assertNotIn("killed of", p.stdout)
        self.assertEqual(util.tree_digest(root), before)
        # a second run takes every verdict from tce.json
        again = util.run_driver(root, "--generated-only", "--tce-only")
        self.assertRegex(again.stderr, r"compiled 0 for x86-64 gcc, 0 for x86-64 clang, "
                                       r"0 for aarch64 gcc")

if __name__ == "__main__":
    unittest.main()
