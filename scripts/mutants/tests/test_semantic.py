"""The semantic operators (semantic.py) on small C files: what each edits,
what each leaves alone, and that every mutant still compiles and does what
its name says."""
import os
import subprocess
import tempfile
import unittest

from mutants import semantic
from mutants.model import apply_edits


def variants(code, op):
    ms = semantic.mutants("x.c", code, [])
    return sorted(apply_edits(code, m.edits) for m in ms if m.operator == semantic.NAMES[op])


def body(code):
    """code as the body of a function over a few variables."""
    return ("#include <pthread.h>\n#include <string.h>\n#include <stdbool.h>\n"
            "struct s { int a; long b; int c; int d; };\n"
            "void g(int); bool charge(int); void uncharge(int);\n"
            "void f(struct s *p, pthread_mutex_t *m, int x, int y, char *buf) {\n"
            f"{code}\n}}\n")


class SemanticTest(unittest.TestCase):
    def setUp(self):
        why = semantic.unavailable()
        # scripts/deps installs python3-clang-14: its absence is a failure
        self.assertIsNone(why, why)

    def test_adjacent_statements_are_swapped(self):
        code = body("    p->a = x;\n    g(p->a);")
        self.assertEqual(variants(code, "SWP"), [body("    g(p->a);\n    p->a = x;")])

    def test_statements_that_commute_are_not_swapped(self):
        # no call, and no name in common: the swap is no fault
        self.assertEqual(variants(body("    p->a = x;\n    y = 3;"), "SWP"), [])

    def test_orders_that_are_equally_right_are_not_swapped(self):
        # a wake-up inside the critical section: its waiter runs after the unlock
        locked = body("    pthread_mutex_lock(m);\n    p->a++;\n"
                      "    pthread_cond_signal((pthread_cond_t *)buf);\n    g(x);")
        self.assertNotIn(body("    pthread_mutex_lock(m);\n    pthread_cond_signal("
                              "(pthread_cond_t *)buf);\n    p->a++;\n    g(x);"),
                         variants(locked, "MOV") + variants(locked, "SWP"))
        # unlock then signal, or signal then unlock
        pair = body("    pthread_cond_signal((pthread_cond_t *)buf);\n    pthread_mutex_unlock(m);")
        self.assertEqual(variants(pair, "MOV"), [])
        # two objects made one after the other
        made = body("    pthread_mutex_init(m, NULL);\n    pthread_mutex_init(m + 1, NULL);")
        self.assertEqual(variants(made, "SWP"), [])
        # ... also through macros, whose argument libclang places at the
        # macro's name (locks.h's rt__mutex_destroy and rt__cond_destroy)
        macros = ("#define mk(x) pthread_mutex_init((x), NULL)\n"
                  "#define unmk(x) pthread_cond_destroy(x)\n"
                  "#define unmkm(x) pthread_mutex_destroy(x)\n")
        made = macros + body("    mk(m);\n    mk(m + 1);")
        self.assertEqual(variants(made, "SWP"), [])
        gone = macros + body("    unmk((pthread_cond_t *)buf);\n    unmk((pthread_cond_t *)p);")
        self.assertEqual(variants(gone, "SWP"), [])
        same = macros + body("    mk(m);\n    unmkm(m);")
        self.assertEqual(len(variants(same, "SWP")), 1)
        # two stores to different fields, neither reading the other's
        self.assertEqual(variants(body("    p->a = x;\n    p->c = y + p->d;"), "SWP"), [])
        self.assertEqual(variants(body("    p->a = x;\n    p->c++;"), "SWP"), [])
        # but one that reads the other's field, writes the same field, or
        # reads memory through a pointer is swapped
        self.assertEqual(len(variants(body("    p->a = x;\n    p->c = p->a;"), "SWP")), 1)
        self.assertEqual(len(variants(body("    p->a = x;\n    p->a += y;"), "SWP")), 1)
        self.assertEqual(len(variants(body("    p->a = x;\n    p->c = *buf;"), "SWP")), 1)
        self.assertEqual(variants(body("    p->a = x;\n    p->e[1] = y;")
                                  .replace("int d; }", "int d; int e[2]; }"), "SWP"), [])
        # every store counts, not only the outer one; a variable stored to
        # is no field
        self.assertEqual(len(variants(body("    p->a = p->d = x;\n    p->c = p->d;"), "SWP")), 1)
        self.assertEqual(len(variants(body("    p->a = y = x;\n    p->c = y;"), "SWP")), 1)
        # but a wake-up with no lock taken before it moves
        bare = body("    p->a++;\n    pthread_cond_signal((pthread_cond_t *)buf);")
        self.assertEqual(len(variants(bare, "MOV")), 1)
        # a relaxed atomic on an object the other statement does not name,
        # GNU's builtins and C11's alike, also beside another relaxed one
        self.assertEqual(variants(body("    p->a = x;\n"
                                       "    __atomic_add_fetch(&y, 1, __ATOMIC_RELAXED);"),
                                  "SWP"), [])
        self.assertEqual(variants(body("    __atomic_add_fetch(&y, 1, __ATOMIC_RELAXED);\n"
                                       "    p->a = __atomic_add_fetch(&x, 2, __ATOMIC_RELAXED);"),
                                  "SWP"), [])
        self.assertEqual(variants(
            "#include <stdatomic.h>\n" + body(
                "    atomic_int *k = (atomic_int *)buf;\n    p->a = x;\n"
                "    atomic_fetch_add_explicit(k, 1, memory_order_relaxed);"), "SWP"), [])
        # but one that names the other's object, has any stronger order, or
        # sits beside a call, is swapped
        for other in ("    p->a = y;", "    g(x);",
                      "    __atomic_store_n(&x, 1, __ATOMIC_RELEASE);"):
            self.assertEqual(len(variants(body(
                f"    __atomic_add_fetch(&y, 1, __ATOMIC_RELAXED);\n{other}"), "SWP")), 1,
                other)
        self.assertEqual(len(variants(body("    p->a = x;\n"
                                           "    __atomic_add_fetch(&y, 1, __ATOMIC_ACQ_REL);"),
                                      "SWP")), 1)

    def test_declarations_labels_and_jumps_stay_first(self):
        code = body("    int k = x;\n    g(k);\n    return;\n    g(y);")
        self.assertEqual(variants(code, "SWP"), [])

    def test_no_swap_across_a_preprocessor_line(self):
        code = body("    g(x);\n#if 1\n    g(y);\n#endif")
        self.assertEqual(variants(code, "SWP"), [])

    def test_an_unlock_is_moved_one_statement_either_way(self):
        code = body("    g(x);\n    pthread_mutex_unlock(m);\n    g(y);")
        self.assertEqual(variants(code, "MOV"), sorted([
            body("    pthread_mutex_unlock(m);\n    g(x);\n    g(y);"),
            body("    g(x);\n    g(y);\n    pthread_mutex_unlock(m);")]))
        self.assertEqual(variants(code, "SWP"), [])

    def test_the_used_half_of_a_pair_is_replaced_by_its_success(self):
        code = body("    if (!charge(x))\n        return;\n    uncharge(x);")
        self.assertEqual(variants(code, "PAIR"),
                         [body("    if (!true)\n        return;\n    uncharge(x);")])
        # a call with no partner is left alone
        self.assertEqual(variants(body("    if (!charge2(x))\n        return;")
                                  .replace("bool charge(", "bool charge2("), "PAIR"), [])

    def test_a_length_is_off_by_one_both_ways(self):
        code = body("    memset(buf, 0, (size_t)x);")
        self.assertEqual(variants(code, "OBO"), sorted([
            body("    memset(buf, 0, ((size_t)x) + 1);"),
            body("    memset(buf, 0, ((size_t)x) - 1);")]))

    def test_only_arguments_of_one_type_are_swapped(self):
        code = body("    memcpy(buf, buf + x, (size_t)y);\n    g(x);")
        self.assertEqual(variants(code, "ARG"), [body("    memcpy(buf + x, buf, (size_t)y);\n    g(x);")])
        self.assertEqual(variants(body("    p->a = (int)sizeof(p) + x;\n    calloc_like();")
                                  .replace("void g(int);", "void g(int); void calloc_like(void);"),
                                  "ARG"), [])

    def test_a_field_becomes_its_neighbour_of_the_same_type(self):
        code = body("    g(p->c);")
        # a and c are ints around c... b is long: the neighbours of one type are a and d
        self.assertEqual(variants(code, "FLD"), sorted([body("    g(p->a);"), body("    g(p->d);")]))

    def test_ids_do_not_move_with_unrelated_edits(self):
        code = body("    p->a = x;\n    g(p->a);\n    pthread_mutex_unlock(m);")
        before = [m.id for m in semantic.mutants("x.c", code, [])]
        after = [m.id for m in semantic.mutants("x.c", "/* a comment */\nint h;\n" + code, [])]
        self.assertTrue(before)
        self.assertEqual(before, after)


RMW_PROGRAM = r"""
#include <stdatomic.h>
#include <stdio.h>
static _Atomic unsigned long refs = 5;
static unsigned long plain = 7;
int main(void)
{
    unsigned long a = atomic_fetch_sub_explicit(&refs, 2, memory_order_acq_rel);
    unsigned long b = atomic_exchange_explicit(&refs, 40, memory_order_relaxed);
    unsigned long c = __atomic_add_fetch(&plain, 3, __ATOMIC_SEQ_CST);
    printf("%lu %lu %lu %lu %lu\n", a, b, c, (unsigned long)atomic_load(&refs), plain);
    return 0;
}
"""


class AtomicSplitTest(unittest.TestCase):
    def test_a_split_compiles_and_does_what_the_atomic_did(self):
        """On one thread a split read-modify-write computes what the atomic
        one did: the fault shows only when another thread comes between
        the load and the store."""
        ms = semantic.mutants("x.c", RMW_PROGRAM, [])
        splits = [m for m in ms if m.operator == "AtomicSplit"]
        self.assertEqual(len(splits), 3)
        acq_rel = apply_edits(RMW_PROGRAM, splits[0].edits)
        self.assertIn("atomic_load_explicit(&refs, memory_order_acquire)", acq_rel)
        self.assertIn("memory_order_release", acq_rel)
        with tempfile.TemporaryDirectory() as d:
            outputs = []
            for text in [RMW_PROGRAM] + [apply_edits(RMW_PROGRAM, m.edits) for m in splits]:
                src, exe = os.path.join(d, "p.c"), os.path.join(d, "p")
                with open(src, "w") as f:
                    f.write(text)
                subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", src, "-o", exe],
                               check=True)
                outputs.append(subprocess.run([exe], capture_output=True, text=True,
                                              check=True).stdout)
        self.assertEqual(outputs[0], "5 3 10 40 10\n")
        self.assertEqual(set(outputs), {outputs[0]})


class DriverSemanticTest(unittest.TestCase):
    @unittest.skipIf(semantic.unavailable(), "no libclang")
    def test_semantic_mutants_of_the_files_named_only(self):
        from mutants.tests import util
        root = util.fixture_copy(self)
        ops = {"SWP", "MOV", "PAIR", "RMW", "OBO", "ARG", "FLD"}

        def semantic_files(how):
            p = util.run_driver(root, "--generated-only", "--semantic", how, "--list")
            self.assertEqual(p.returncode, 0, p.stderr)
            ids = [l.split("\t")[0] for l in p.stdout.splitlines()]
            return {i.split(":")[0] for i in ids if i.split(":")[2] in ops}
        every = semantic_files("yes")
        self.assertGreater(len(every), 1, every)
        self.assertEqual(semantic_files("count.c"), {"count.c"})
        self.assertEqual(semantic_files("count.c,reference/src/box.c"), {"count.c", "box.c"})
        self.assertEqual(semantic_files("no"), set())


if __name__ == "__main__":
    unittest.main()
