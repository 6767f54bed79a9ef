"""Each operator on small C snippets; nothing in comments, strings or
preprocessor lines."""
import unittest

from mutants import clex, operators
from mutants.model import apply_edits


def variants(code, op=None):
    """{mutated text} of every generated mutant of code (of one operator)."""
    ms = operators.mutants("x.c", code)
    return sorted(apply_edits(code, m.edits) for m in ms
                  if op is None or m.operator == operators.NAMES[op])


class OperatorTest(unittest.TestCase):
    def test_relational(self):
        code = "int f(int a, int b) { return a < b; }\n"
        self.assertEqual(variants(code, "ROR"), sorted([
            "int f(int a, int b) { return a <= b; }\n",
            "int f(int a, int b) { return a >= b; }\n"]))
        self.assertEqual(variants("int f(int a) { return a == 3; }\n", "ROR"),
                         ["int f(int a) { return a != 3; }\n"])

    def test_arithmetic_binary_only(self):
        code = "int f(int a, int *p) { return a - *p + -a; }\n"
        self.assertEqual(variants(code, "AOR"), sorted([
            "int f(int a, int *p) { return a + *p + -a; }\n",
            "int f(int a, int *p) { return a - *p - -a; }\n"]))

    def test_increments_and_compound_assignments(self):
        code = "void f(int *a) { a[0]++; a[1] += 2; }\n"
        self.assertEqual(variants(code, "AOR"), sorted([
            "void f(int *a) { a[0]--; a[1] += 2; }\n",
            "void f(int *a) { a[0]++; a[1] -= 2; }\n"]))

    def test_pointer_declarations_are_not_products(self):
        code = "void f(void) { struct s *p = 0; unsigned char *q = 0; (void)p; (void)q; }\n"
        self.assertEqual(variants(code, "AOR"), [])

    def test_constants(self):
        code = "int f(void) { return 7u; }\n"
        self.assertEqual(variants(code, "CRP"), sorted([
            "int f(void) { return 0u; }\n", "int f(void) { return 6u; }\n",
            "int f(void) { return 8u; }\n"]))
        self.assertEqual(variants("int f(void) { return 0; }\n", "CRP"),
                         ["int f(void) { return 1; }\n"])

    def test_logical_connectors(self):
        self.assertEqual(variants("int f(int a, int b) { return a && b; }\n", "LCR"),
                         ["int f(int a, int b) { return a || b; }\n"])

    def test_negated_conditions(self):
        code = "void g(void); void f(int a) { if (a) g(); while (a > 1) a--; }\n"
        self.assertEqual(variants(code, "NEG"), sorted([
            "void g(void); void f(int a) { if (!(a)) g(); while (a > 1) a--; }\n",
            "void g(void); void f(int a) { if (a) g(); while (!(a > 1)) a--; }\n"]))

    def test_deleted_calls_and_statements(self):
        code = ("#include <string.h>\n#include <stdlib.h>\n"
                "void f(char *p, int *n) { memset(p, 0, 4); *n = 1; free(p); }\n")
        calls = variants(code, "DCL")
        self.assertEqual(len(calls), 2)
        self.assertIn("{ (void)0; *n = 1; free(p); }", calls[0] + calls[1])
        self.assertIn("{ memset(p, 0, 4); *n = 1; (void)0; }", calls[0] + calls[1])
        self.assertEqual([v.split("\n")[2] for v in variants(code, "DST")],
                         ["void f(char *p, int *n) { memset(p, 0, 4); (void)0; free(p); }"])

    def test_declarations_and_returns_are_not_deleted(self):
        code = "int f(int a) { int b = a; return b; }\n"
        self.assertEqual(variants(code, "DST") + variants(code, "DCL"), [])

    def test_a_deleted_statement_keeps_an_if_well_formed(self):
        code = "void g(void); void f(int a) { if (a) g(); }\n"
        self.assertEqual(variants(code, "DCL"),
                         ["void g(void); void f(int a) { if (a) (void)0; }\n"])

    def test_return_values(self):
        self.assertEqual(variants("int f(int a) { return a + 1; }\n", "RET"),
                         ["int f(int a) { return 0; }\n"])
        self.assertEqual(variants("int f(void) { return 0; }\n", "RET"),
                         ["int f(void) { return 1; }\n"])
        self.assertEqual(variants("_Bool f(void) { return false; }\n", "RET"),
                         ["_Bool f(void) { return true; }\n"])
        self.assertEqual(variants("void *f(void) { return NULL; }\n", "RET"), [])

    def test_volatile_dropped(self):
        code = "void f(void) { volatile int a = 1; __asm__ __volatile__(\"\"); (void)a; }\n"
        self.assertEqual(variants(code, "VOL"), sorted([
            "void f(void) { int a = 1; __asm__ __volatile__(\"\"); (void)a; }\n",
            "void f(void) { volatile int a = 1; __asm__ (\"\"); (void)a; }\n"]))

    def test_memory_orders_weakened(self):
        code = ("#include <stdatomic.h>\n"
                "int f(atomic_int *a) { return atomic_load_explicit(a, memory_order_acquire); }\n")
        self.assertEqual([v.split("\n")[1] for v in variants(code, "ATM")], [
            "int f(atomic_int *a) { return atomic_load_explicit(a, memory_order_relaxed); }"])
        code = "int f(int *a) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }\n"
        self.assertEqual(len(variants(code, "ATM")), 2)

    def test_nothing_in_comments_strings_or_directives(self):
        code = ('#define LIMIT (1 + 2 < 3)\n'
                '/* a < b && c + 1 */\n'
                'const char *f(void)\n{\n'
                '    // if (x > 1) return 2;\n'
                '    return "a < b || c - 1";\n}\n')
        ms = operators.mutants("x.c", code)
        # only the return value, the whole string replaced, never inside it
        self.assertEqual([(m.operator, m.original, m.replacement) for m in ms],
                         [("ReturnValue", '"a < b || c - 1"', "0")])

    def test_only_inside_function_bodies(self):
        code = "static int table[4] = {1, 2};\nstruct s { int a[3]; };\n"
        self.assertEqual(operators.mutants("x.c", code), [])

    def test_tokens_keep_their_offsets(self):
        code = "int  a = 'x' + \"s\\\"\";\n"
        for t in clex.tokenize(code):
            self.assertEqual(code[t.start:t.end], t.text)
        self.assertEqual([t.kind for t in clex.tokenize(code)][3:6],
                         [clex.CHAR, clex.PUNCT, clex.STRING])

    def test_ids_survive_unrelated_edits(self):
        code = "int f(int a) { return a < 3; }\n"
        before = [m.id for m in operators.mutants("x.c", code)]
        after = [m.id for m in operators.mutants("x.c", "/* new */\nint g;\n\n" + code)]
        self.assertEqual(before, after)
        self.assertEqual(len(set(before)), len(before))


if __name__ == "__main__":
    unittest.main()


class TestOnlyCodeTest(unittest.TestCase):
    """What only test builds compile is not mutated: an #if RT_TESTING
    branch, and a line that is one instrumentation statement."""

    CODE = ("int f(int a) {\n"
            "    RT_POINT(\"f.start\");\n"
            "    a += 1;\n"
            "    RT_COST(RT_COST_X, 1);\n"
            "    return a;\n"
            "}\n"
            "#if RT_TESTING\n"
            "int g(int a) { return a + 2; }\n"
            "#else\n"
            "int h(int a) { return a - 3; }\n"
            "#endif\n"
            "#if defined(OTHER)\n"
            "int k(int a) { return a * 4; }\n"
            "#endif\n")

    def test_only_the_release_code_is_left(self):
        spans = {"x.c": operators.test_only_spans(self.CODE, "RT_TESTING",
                                                  ("RT_POINT", "RT_COST", "RT_COST_BYTES"))}
        kept = [m for m in operators.mutants("x.c", self.CODE)
                if not operators.in_test_only_code(m, spans)]
        functions = {m.id.split(":")[1] for m in kept}
        self.assertEqual(functions, {"f", "h", "k"})
        self.assertFalse([m for m in kept if "RT_POINT" in m.original or "RT_COST" in m.original])
        self.assertTrue([m for m in kept if m.original == "+="])

    def test_a_tree_that_names_no_test_build_has_none(self):
        self.assertEqual(operators.test_only_spans(self.CODE), [])
