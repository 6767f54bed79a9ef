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


class TceTest(unittest.TestCase):
    def prune(self, mutants, code=CODE, claimed=tce.CLAIMED, memo=None, killed=()):
        self.said = []
        with tempfile.TemporaryDirectory() as tree:
            self.summary = tce.prune(mutants, {"x.c": code}, tree, cc="gcc", jobs=2,
                                     include_dirs=(), claimed=claimed, memo=memo,
                                     say=self.said.append, killed=killed)
        return mutants

    def test_a_mutant_killed_before_is_only_checked_to_compile(self):
        # the kill map's kills: not compared, so neither equivalent nor a
        # duplicate, and compiled on no target; one that does not compile
        # any more is still a CompileError
        ms = [mutant("dead", "a + 1", "a - 1"), mutant("le5", "a < 5", "a <= 5"),
              mutant("le5b", "a < 5", "a <= 5"), mutant("bad", "return a;", "return b;")]
        dead, le5, le5b, bad = self.prune(ms, killed={"dead", "le5", "bad"})
        self.assertEqual((dead.status, le5.status, le5b.status), (PENDING, PENDING, PENDING))
        self.assertEqual(bad.status, COMPILE_ERROR)
        self.assertEqual(self.summary["checked"], 2)
        self.assertEqual(self.summary["compiled"][X86_GCC], 2)    # the original and le5b
        self.assertEqual(self.summary["compiled"][X86_CLANG], 0)  # le5b equals nothing compiled
        # compared after all (the caller's second prune), each is what it is
        dead, le5, le5b = self.prune([dead, le5, le5b])
        self.assertEqual(dead.status, IGNORED)
        self.assertTrue(dead.equivalent)
        self.assertEqual((le5.status, le5b.duplicate_of), (PENDING, "le5"))

    def test_the_killed_of_a_file_are_checked_in_one_compilation(self):
        # one -fsyntax-only of the file with a copy a mutant: clean copies
        # pass at once, a copy a diagnostic names is checked alone and is
        # what it is alone (an unused parameter under -Werror does not
        # compile), a diagnostic of no copy sends the whole file alone
        code = CODE + "int h(int x, int y)\n{\n    return x + y;\n}\n"
        ms = [mutant("le5", "a < 5", "a <= 5", code), mutant("ge5", "a < 5", "a >= 5", code),
              mutant("noy", "x + y", "x + 1", code), mutant("bad", "return a;", "return b;", code)]
        le5, ge5, noy, bad = self.prune(ms, code=code, killed={"le5", "ge5", "noy", "bad"})
        self.assertEqual(self.summary["bulk"], 2)
        self.assertEqual((le5.status, ge5.status), (PENDING, PENDING))
        self.assertEqual((noy.status, bad.status), (COMPILE_ERROR, COMPILE_ERROR))
        self.assertIn("unused parameter", noy.status_reason)
        self.assertEqual(self.summary["checked"], 2)
        broken = "int broken(void) { return undeclared; }\n" + code
        ms = [mutant("le5", "a < 5", "a <= 5", broken), mutant("ge5", "a < 5", "a >= 5", broken)]
        self.prune(ms, code=broken, killed={"le5", "ge5"})
        self.assertEqual(self.summary["bulk"], 0)

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
        self.assertEqual(self.summary["compiled"][X86_GCC], 3)   # original and two
        self.assertEqual(self.summary["compiled"][X86_CLANG], 2)  # original and dead
        self.assertEqual(self.summary["compiled"][AARCH64_GCC], 2)

    def test_verdicts_are_kept_by_content_a_target(self):
        memo = {}
        self.prune([mutant("dead", "a + 1", "a - 1")], memo=memo)
        self.assertEqual(len(memo), 6)          # two texts on three targets
        self.prune([mutant("dead", "a + 1", "a - 1")], memo=memo)
        self.assertEqual(sum(self.summary["compiled"].values()), 0)
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
