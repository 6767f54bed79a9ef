"""The catalog format (docs/conventions.md) and stale entries."""
import os
import unittest

from mutants import catalog, project
from mutants.model import apply_edits
from mutants.tests import util

TEXT = "int f(void)\n{\n    rt__clear(base, used);\n    return 0;\n}\n"

ENTRY = """# a comment before the first entry
== no_clearing
seed: 000 §8.6
about: give keeps or frees the chunk without clearing it
file: reference/src/x.c
--- find
    rt__clear(base, used);
+++ replace
    (void)used;

"""


class CatalogTest(unittest.TestCase):
    def test_the_conventions_example_parses_and_applies(self):
        [entry] = catalog.parse(ENTRY)
        self.assertEqual(entry.name, "no_clearing")
        self.assertEqual(entry.seed, "000 §8.6")
        m = catalog.resolve(entry, {"reference/src/x.c": TEXT})
        self.assertEqual(apply_edits(TEXT, m.edits),
                         "int f(void)\n{\n    (void)used;\n    return 0;\n}\n")
        self.assertEqual((m.location.line, m.location.column), (3, 1))

    def test_an_empty_replace_deletes_the_lines(self):
        text = ENTRY.replace("    (void)used;\n", "")
        m = catalog.resolve(catalog.parse(text)[0], {"reference/src/x.c": TEXT})
        self.assertEqual(apply_edits(TEXT, m.edits), "int f(void)\n{\n    return 0;\n}\n")

    def test_two_files_and_two_pairs(self):
        text = ("== two\nfile: a.c\n--- find\nA\n+++ replace\nB\n--- find\nC\n+++ replace\nD\n"
                "file: b.c\n--- find\nE\n+++ replace\nF\n")
        m = catalog.resolve(catalog.parse(text)[0], {"a.c": "A\nC\n", "b.c": "E\n"})
        self.assertEqual(apply_edits("A\nC\n", [e for e in m.edits if e.path == "a.c"]),
                         "B\nD\n")
        self.assertEqual(apply_edits("E\n", [e for e in m.edits if e.path == "b.c"]), "F\n")

    def test_a_find_that_no_longer_matches_is_stale_and_named(self):
        [entry] = catalog.parse(ENTRY)
        with self.assertRaises(catalog.CatalogError) as e:
            catalog.resolve(entry, {"reference/src/x.c": TEXT.replace("used", "n")})
        self.assertEqual(e.exception.name, "no_clearing")
        self.assertIn("0 times", str(e.exception))

    def test_a_find_that_matches_twice_is_stale(self):
        [entry] = catalog.parse(ENTRY)
        twice = TEXT + TEXT
        with self.assertRaises(catalog.CatalogError) as e:
            catalog.resolve(entry, {"reference/src/x.c": twice})
        self.assertIn("2 times", str(e.exception))

    def test_leading_spaces_count(self):
        [entry] = catalog.parse(ENTRY.replace("    rt__clear", "  rt__clear"))
        with self.assertRaises(catalog.CatalogError):
            catalog.resolve(entry, {"reference/src/x.c": TEXT})

    def test_a_find_inside_a_line_does_not_match(self):
        [entry] = catalog.parse("== mid\nfile: x.c\n--- find\nclear(a);\n+++ replace\n")
        with self.assertRaises(catalog.CatalogError):
            catalog.resolve(entry, {"x.c": "    rt__clear(a);\n"})

    def test_malformed_entries_are_refused(self):
        for text in ("== a\nfile: x.c\n--- find\nX\n",          # no replace
                     "== a\nfile: x.c\n+++ replace\nX\n",       # no find
                     "== a\n--- find\nX\n+++ replace\n",        # no file
                     "stray\n== a\n"):                          # text before an entry
            with self.assertRaises(catalog.CatalogError, msg=text):
                catalog.parse(text)

    def test_the_ledger_needs_a_reason(self):
        root = util.fixture_copy(self)
        with open(os.path.join(root, "mutants", "equivalent"), "w") as f:
            f.write("# id reason\nclamp_from_ten clamp(10) is 10 either way\n")
        self.assertEqual(catalog.load_ledger(root),
                         {"clamp_from_ten": "clamp(10) is 10 either way"})
        with open(os.path.join(root, "mutants", "equivalent"), "a") as f:
            f.write("no_reason\n")
        with self.assertRaises(catalog.CatalogError):
            catalog.load_ledger(root)

    def test_every_entry_of_the_project_applies(self):
        root = os.path.dirname(util.SCRIPTS)
        texts = {}
        for rel in project.tree_files(root):
            if rel.startswith("reference/"):
                with open(os.path.join(root, rel)) as f:
                    texts[rel] = f.read()
        mutants, errors = catalog.load(root, texts)
        self.assertEqual([str(e) for e in errors], [])
        self.assertGreaterEqual(len(mutants), 8)
        for name in ("no_clearing", "stack_keeps_17", "take_never_pops", "give_never_keeps",
                     "thread_end_keeps_chunks", "main_makes_no_key",
                     "key_stored_without_its_one", "fifteen_slots"):
            self.assertIn(name, [m.id for m in mutants])

    def test_a_stale_entry_fails_the_run_with_its_name(self):
        root = util.fixture_copy(self)
        with open(os.path.join(root, "mutants", "calc.mut"), "a") as f:
            f.write("\n== gone_stale\nseed: fixture\nabout: x\nfile: reference/src/calc.c\n"
                    "--- find\n    return x * 3;\n+++ replace\n    return 0;\n")
        results = os.path.join(root, "build", "results")
        p = util.run_driver(root, "--curated-only", "--only", "clamp_gone", "--only",
                            "gone_stale", "--results", results)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("gone_stale", p.stderr)
        with open(results) as f:
            lines = f.read().splitlines()
        self.assertIn("pass clamp_gone", lines)
        self.assertTrue(any(l.startswith("fail gone_stale ") for l in lines), lines)


if __name__ == "__main__":
    unittest.main()
