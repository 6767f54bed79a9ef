"""Trivial compiler equivalence: equal optimised objects are pruned."""
import os
import tempfile
import unittest

from mutants import operators, tce
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


def mutant(mid, old, new, code=CODE):
    start = code.index(old)
    return Mutant(id=mid, origin="generated", operator="test", about="",
                  edits=[Edit("x.c", start, start + len(old), new)],
                  location=Location(1, 1, 1, 1))


class TceTest(unittest.TestCase):
    def prune(self, mutants, code=CODE):
        with tempfile.TemporaryDirectory() as tree:
            tce.prune(mutants, {"x.c": code}, tree, cc="cc", jobs=2, include_dirs=())
        return mutants

    def test_a_mutant_of_dead_code_is_equivalent(self):
        [m] = self.prune([mutant("dead", "a + 1", "a - 1")])
        self.assertEqual(m.status, IGNORED)
        self.assertTrue(m.equivalent)
        self.assertIn("equivalent", m.status_reason)

    def test_equal_objects_are_duplicates_of_the_first(self):
        # a < 5 and a <= 4 compile alike; the first is kept, the second pruned
        first, second, other = self.prune([mutant("le5", "a < 5", "a <= 5"),
                                           mutant("lt6", "a < 5", "a < 6"),
                                           mutant("ge5", "a < 5", "a >= 5")])
        self.assertEqual(first.status, PENDING)
        self.assertEqual(second.status, IGNORED)
        self.assertEqual(second.duplicate_of, "le5")
        self.assertFalse(second.equivalent)
        self.assertEqual(other.status, PENDING)

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


if __name__ == "__main__":
    unittest.main()
