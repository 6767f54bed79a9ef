"""The driver on a tree that is not refrt, through its configuration alone:
the worked example (example_lib: a string buffer with its own `make
test`, docs/user-guide.md), what a tree that names little turns off, the
keys, and suites that pass by their results (make gate-kit)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from mutants import config, project
from mutants.tests import util
from mutants.tests.test_driver import closing
from mutants.tests.test_report import MODULES

EXAMPLE = os.path.join(util.HERE, "example_lib")


def full_digest(root):
    """sha256 over every path and byte under root, build products included."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def run(*args, timeout=300):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    return subprocess.run([util.PYTHON, util.DRIVER] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env)


class ExampleLibrary(unittest.TestCase):
    """example_lib/driver.toml, 16 lines: the sources, the build, the suite
    (`make test`, its exit status), the coverage build, a second TCE target,
    an ASan+UBSan oracle, and the variable that picks a schema's mutant."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="refrt-mutants-example-")
        cls.before = full_digest(EXAMPLE)
        cls.work = os.path.join(cls.tmp, "work")
        cls.p = run("--config", os.path.join(EXAMPLE, "driver.toml"), "--build", cls.work,
                    "--jobs", "2", "--html", "no")
        with open(os.path.join(cls.work, "mutants", "report.json")) as f:
            cls.report = json.load(f)
        cls.mutants = [m for f in cls.report["files"].values() for m in f["mutants"]]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def test_the_run_counts_every_verdict(self):
        p = self.p
        # survivors are missing tests (or equivalents to list): the run fails
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(closing(p), (55, 75, 11, 6, 1, 2), p.stdout + p.stderr)
        self.assertIn("; killed by functional 54, asan 1", p.stdout)
        self.assertRegex(p.stdout, r"mutation score 82\.4%: 61 detected \(55 killed, 6 timeout\) "
                                   r"of 74 \(11 survived, 2 no coverage\)")
        by = {}
        for m in self.mutants:
            by[m["status"]] = by.get(m["status"], 0) + 1
        # 12 duplicates and the equivalent are Ignored, one does not compile
        self.assertEqual(by, {"Killed": 55, "Survived": 11, "Timeout": 6, "NoCoverage": 2,
                              "Ignored": 13, "CompileError": 1})

    def test_generated_mutants_tce_the_suite_and_its_oracle(self):
        err = self.p.stderr
        self.assertEqual(set(self.report["files"]), {"strbuf.c"})
        self.assertTrue(all(m["id"].startswith("strbuf.c:") for m in self.mutants))
        self.assertIn("mutants: TCE on x86-64 gcc, x86-64 clang: 1 equivalent, 12 duplicates, "
                      "1 do not compile, of 88", err)
        self.assertIn("mutants: the unmutated run: test", err)
        self.assertIn("in one schema build", err)
        killed = [m for m in self.mutants if m["status"] == "Killed"]
        self.assertTrue(all(m["killedBy"][0] == "test" for m in killed))
        # the free() left out of sb_free leaks: only the ASan+UBSan build says so
        leak = next(m for m in self.mutants if m["description"] ==
                    "CallDeletion: 'free(sb->data);' -> '(void)0;'")
        self.assertEqual((leak["status"], leak["killedBy"]), ("Killed", ["test", "oracle:asan"]))
        self.assertIn("on the asan build (CFLAGS=-O1 -g -fsanitize=address,undefined",
                      leak["statusReason"])
        # a loop that never ends is a timeout, read by gdb
        self.assertIn("mutants: timeouts by hang class: infinite loop 6", self.p.stdout)

    def test_a_kill_the_map_holds_spares_tce_and_changes_no_verdict(self):
        # The map says the equivalent mutant and a killed one were killed:
        # TCE compiles neither whole, it compares their functions' copies;
        # the killed one is killed again, and the equivalent one is found
        # equivalent by its copy, as the run without the map found it.
        eq = next(m for m in self.mutants if m["status"] == "Ignored"
                  and m["statusReason"].startswith("equivalent"))
        kill = next(m for m in self.mutants if m["status"] == "Killed")
        tree = os.path.join(self.tmp, "mapped")
        shutil.copytree(EXAMPLE, tree)
        with open(os.path.join(tree, "driver.toml"), "a") as f:
            f.write('[catalog]\nkills = "kills.tsv"\n')
        with open(os.path.join(tree, "kills.tsv"), "w") as f:
            for m in (eq, kill):
                f.write(f"{m['id']}\tplain\ttest\t-\t-\n")
        p = run("--config", os.path.join(tree, "driver.toml"), "--build",
                os.path.join(self.tmp, "mapped-work"), "--jobs", "2", "--html", "no",
                "--only", eq["id"], "--only", kill["id"])
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("of 2; 2 compared by their function's copy in 2 compilations", p.stderr)
        self.assertIn("compiled 1 for x86-64 gcc", p.stderr)        # the original only
        self.assertNotIn("TCE of the", p.stderr)                    # no survivor to compare
        with open(os.path.join(self.tmp, "mapped-work", "mutants", "report.json")) as f:
            got = {m["id"]: m for f in json.load(f)["files"].values() for m in f["mutants"]}
        self.assertEqual(got[eq["id"]]["status"], "Ignored")
        self.assertTrue(got[eq["id"]]["statusReason"].startswith("equivalent"))
        self.assertEqual(got[kill["id"]]["status"], "Killed")

    def test_what_the_tree_does_not_name_is_said_off(self):
        off = re.findall(r"^mutants: (.+?) off: ", self.p.stderr, re.M)
        self.assertEqual(off, ["catalog", "ledger", "build folder"])

    def test_the_tree_is_never_written(self):
        self.assertEqual(full_digest(EXAMPLE), self.before)

    def test_the_report_holds_its_suite_and_the_oracles(self):
        self.assertEqual(self.report["testFiles"]["suites"]["tests"], [{"id": "test",
                                                                       "name": "test"}])
        self.assertEqual([t["id"] for t in self.report["testFiles"]["oracles"]["tests"]],
                         ["oracle:functional", "oracle:asan", "oracle:ubsan", "oracle:tsan"])

    @unittest.skipUnless(os.path.isdir(os.path.join(MODULES, "ajv")),
                         f"no {MODULES}/ajv (make mutants-npm)")
    def test_the_report_validates_against_the_schema(self):
        p = subprocess.run(["node", os.path.join(util.HERE, "validate_report.cjs"), MODULES,
                            os.path.join(self.work, "mutants", "report.json")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class LittleNamed(unittest.TestCase):
    """A tree that names only its sources, its build and its suite: every
    feature that needs more is off, said in a line each, and the mutants
    are still built alone, run, and kept by content."""

    def test_each_mutant_alone_and_cached(self):
        tmp = tempfile.mkdtemp(prefix="refrt-mutants-little-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tree = os.path.join(tmp, "lib")
        shutil.copytree(EXAMPLE, tree)
        os.unlink(os.path.join(tree, "driver.toml"))
        cfg = os.path.join(tmp, "little.toml")
        with open(cfg, "w") as f:
            f.write('root = "lib"\n[sources]\nmutate = ["strbuf.c"]\n'
                    '[build]\ncommand = "make lib"\n[suites]\nnames = ["test"]\n')
        args = ("--config", cfg, "--build", os.path.join(tmp, "work"), "--jobs", "2",
                "--html", "no", "--only", "strbuf.c:sb_truncate:*")
        first = run(*args)
        off = re.findall(r"^mutants: (.+?) off: (.+)$", first.stderr, re.M)
        self.assertEqual([f for f, _ in off], ["schemata", "coverage", "oracles",
                                               "TCE on a second target", "catalog", "ledger",
                                               "build folder"], first.stderr)
        self.assertIn("each mutant is built alone", dict(off)["schemata"])
        self.assertNotIn("schema build", first.stderr)
        # every mutant of sb_truncate is killed but one: `n > sb->len`
        # keeps a truncation to the length, which changes nothing
        self.assertEqual(closing(first), (4, 5, 1, 0, 0, 0), first.stderr)
        again = run(*args)
        self.assertIn("0 to run (5 cached)", again.stderr)
        self.assertEqual(closing(again), closing(first))


class Keys(unittest.TestCase):
    def load(self, text, root=None):
        tmp = tempfile.mkdtemp(prefix="refrt-mutants-config-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "driver.toml")
        with open(path, "w") as f:
            f.write(text)
        return config.load(path, root)

    def test_an_unknown_key_is_refused_by_its_name(self):
        with self.assertRaises(config.ConfigError) as e:
            self.load('[build]\ncomand = "make"\n')
        self.assertIn("unknown key build.comand", str(e.exception))
        p = run("--config", os.path.join(util.HERE, "no-such.toml"), "--list")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no-such.toml", p.stderr)

    def test_the_root_is_the_files_folder_unless_it_says(self):
        cfg = self.load("")
        self.assertEqual(cfg.root, os.path.dirname(cfg.path))
        up = self.load('root = ".."')
        self.assertEqual(up.root, os.path.dirname(os.path.dirname(up.path)))

    def test_a_command_takes_the_build_folder_jobs_and_make_variables(self):
        cfg = self.load('[build]\ncommand = "make lib"\ndir_var = "BUILD"\nparallel = "-j{jobs}"\n'
                        '[suites]\nrun = "make {suite} IMPL={build}/lib.a"\n')
        argv, env = cfg.command(cfg.suite_run, "build/m", {"CC": "gcc -m32"}, jobs=2,
                                suite="check")
        self.assertEqual(argv, ["make", "check", "IMPL=build/m/lib.a", "BUILD=build/m",
                                "CC=gcc -m32", "-j2"])
        self.assertEqual(env, {})
        argv, _ = cfg.command(cfg.build_command, "b", {}, jobs=1)
        self.assertEqual(argv, ["make", "lib", "BUILD=b"])
        env_cfg = self.load('[build]\ncommand = "./build.sh"\nvars = "env"\n')
        self.assertEqual(env_cfg.command(env_cfg.build_command, "b", {"CC": "cc"}),
                         (["./build.sh"], {"CC": "cc"}))

    def test_a_direct_command_names_its_program_and_needs_a_run(self):
        cfg = self.load('[suites.direct]\ncheck-unit = {run = "{build}/unit/{program} -v", '
                        'env = {R = "{build}/results/unit"}}\n')
        self.assertEqual(cfg.direct, {"check-unit": (["{build}/unit/{program}", "-v"],
                                                     {"R": "{build}/results/unit"})})
        with self.assertRaises(config.ConfigError) as e:
            self.load('[suites.direct]\ncheck-unit = {env = {R = "x"}}\n')
        self.assertIn("suites.direct.check-unit needs run", str(e.exception))

    def test_sources_by_glob_and_make_variable(self):
        cfg = self.load('[sources]\nmutate = ["{IMPL_SRC}/*.c"]\n')
        texts = {"a/x.c": "", "a/y.h": "", "a/sub/z.c": "", "b/x.c": ""}
        self.assertEqual(cfg.sources(texts, {"IMPL_SRC": "a"}), ["a/x.c"])

    def test_a_tree_with_no_work_folder_is_run_from_outside_it(self):
        from mutants import cli
        cfg = self.load("")
        build = cli.default_build(cfg, {"CC": "gcc"})
        self.assertFalse(build.startswith(cfg.root + os.sep), build)
        self.assertTrue(build.startswith(os.path.join(cli.ROOT, "build", "trees")), build)
        refrt = config.load(os.path.join(cli.ROOT, "mutants", "driver.toml"))
        self.assertEqual(cli.default_build(refrt, {"CC": "gcc"}),
                         os.path.join(cli.ROOT, "build", "gcc"))


class TrapLines(unittest.TestCase):
    """gcov counts no block that ends in a trap: a mutant of a trap line is
    reached when the line that leads to it ran."""

    def test_the_condition_before_a_trap_counts_for_it(self):
        text = "int f(int n)\n{\n    if (n > 9)\n\n        __builtin_trap();\n    return n;\n}\n"
        self.assertEqual(project.countable({"f.c": {5}}, {"f.c": text}), {"f.c": {3, 5}})
        self.assertEqual(project.countable({"f.c": {6}}, {"f.c": text}), {"f.c": {6}})
        cov = {"lines": {"f.c": [3, 5, 6]}, "suites": {"t": {"f.c": [3, 6]}}, "failed": []}
        self.assertEqual(project.covering(cov, {"f.c": {5}}, ["t"]), [])
        self.assertEqual(project.covering(cov, project.countable({"f.c": {5}}, {"f.c": text}),
                                          ["t"]), ["t"])


class ByResults(unittest.TestCase):
    """A suite that passes by its results (make gate-kit: the kit run on
    another implementation, which fails some checks unmutated): a mutant
    is killed when a result differs, not when the suite fails."""

    def setUp(self):
        self.saved = project.CFG
        self.tree = tempfile.mkdtemp(prefix="refrt-mutants-results-")
        self.addCleanup(shutil.rmtree, self.tree, True)
        project.configure(config.Config({"suites": {"passes": "results",
                                                    "results": "{build}/results"}}))

    def tearDown(self):
        project.configure(self.saved)

    def write(self, lines):
        results = project.results_dir(self.tree)
        os.makedirs(results, exist_ok=True)
        with open(os.path.join(results, "kit"), "w") as f:
            f.write("".join(l + "\n" for l in lines))

    def test_only_a_result_that_changes_kills(self):
        self.write(["pass a:exit==0", "fail a:signal==6 exit = 0", "fail b:frees==0 3"])
        expected = project.result_set(self.tree)
        self.assertEqual(expected, {"kit:a:exit==0": True, "kit:a:signal==6": False,
                                    "kit:b:frees==0": False})
        self.assertEqual(project.compare(self.tree, expected), (0, []))
        self.write(["pass a:exit==0", "fail a:signal==6 exit = 1", "pass b:frees==0"])
        self.assertEqual(project.compare(self.tree, expected),
                         (1, ["kit:b:frees==0 passes (fails unmutated)"]))
        self.write(["fail a:exit==0 exit = 1"])
        status, changes = project.compare(self.tree, expected)
        self.assertEqual(changes, ["kit:a:exit==0 fails (passes unmutated)",
                                   "kit:a:signal==6 not run (fails unmutated)",
                                   "kit:b:frees==0 not run (fails unmutated)"])

    def test_a_result_the_unmutated_runs_disagree_on_does_not_count(self):
        runs = [{"k:a": True, "k:b": False}, {"k:a": True, "k:b": True}]
        expected = project.agreed(runs)
        self.assertEqual(expected, {"k:a": True, "k:b": None})
        self.assertEqual(project.unstable(expected), ["k:b"])
        self.write(["pass a", "pass b"])
        self.assertEqual(project.compare(self.tree, {"kit:a": True, "kit:b": None})[0], 0)
        path = project.expected_file(self.tree, "kit", {"kit:a": True, "kit:b": None,
                                                        "kit:c": False})
        with open(path) as f:
            self.assertEqual(f.read(), "pass kit:a\nany kit:b\nfail kit:c\n")


if __name__ == "__main__":
    unittest.main()
