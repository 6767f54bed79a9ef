"""The driver end to end on the fixture project: statuses, the closing
line, the ledger, the cache, the time limit, the options, and a source tree
left byte-identical after a run that is interrupted or killed."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from mutants.tests import util

CLOSING = re.compile(r"^mutants: (\d+) killed of (\d+) \((\d+) survived, (\d+) timeout, "
                     r"(\d+) equivalent, (\d+) no coverage\)(?:; killed by [a-z0-9, ]+)?$", re.M)


def closing(p):
    lines = p.stdout.strip().splitlines()
    m = CLOSING.match(lines[-1]) if lines else None
    assert m, f"no closing line last in: {p.stdout}\n{p.stderr}"
    return tuple(int(x) for x in m.groups())


def report_of(root):
    with open(os.path.join(root, "build", "cc", "mutants", "report.json")) as f:
        rep = json.load(f)
    return {m["id"]: m for f in rep["files"].values() for m in f["mutants"]}


class DriverTest(unittest.TestCase):
    def test_statuses_and_the_closing_line(self):
        root = util.fixture_copy(self)
        before = util.tree_digest(root)
        results = os.path.join(root, "build", "results-mutants")
        p = util.run_driver(root, "--curated-only", "--only", "clamp_*", "--only",
                            "never_called_off", "--results", results)
        self.assertEqual(p.returncode, 1, p.stderr)      # a survivor fails the run
        self.assertEqual(closing(p), (1, 3, 1, 0, 0, 1))
        rep = report_of(root)
        self.assertEqual(rep["clamp_gone"]["status"], "Killed")
        self.assertEqual(rep["clamp_gone"]["killedBy"], ["check-calc", "oracle:functional"])
        self.assertEqual(rep["clamp_from_ten"]["status"], "Survived")
        self.assertEqual(rep["never_called_off"]["status"], "NoCoverage")
        self.assertEqual(rep["never_called_off"]["coveredBy"], [])
        with open(results) as f:
            lines = sorted(l.split(" ", 2)[0] + " " + l.split(" ", 2)[1]
                           for l in f.read().splitlines())
        self.assertEqual(lines, ["fail clamp_from_ten", "fail never_called_off",
                                 "pass clamp_gone"])
        self.assertEqual(util.tree_digest(root), before)

    def test_a_survivor_in_the_ledger_is_equivalent(self):
        root = util.fixture_copy(self)
        with open(os.path.join(root, "mutants", "equivalent"), "w") as f:
            f.write("clamp_from_ten clamp(10) is 10 whether it clamps or not\n")
        p = util.run_driver(root, "--curated-only", "--only", "clamp_*")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(closing(p), (1, 2, 0, 0, 1, 0))
        self.assertIn("clamp(10) is 10", report_of(root)["clamp_from_ten"]["statusReason"])
        # a listed mutant is not run: only clamp_gone was
        self.assertIn("1 to run (0 cached)", p.stderr)
        self.assertEqual(report_of(root)["clamp_from_ten"]["status"], "Ignored")

    def test_run_ledgered_runs_the_listed_mutants(self):
        root = util.fixture_copy(self)
        with open(os.path.join(root, "mutants", "equivalent"), "w") as f:
            f.write("clamp_from_ten clamp(10) is 10 whether it clamps or not\n")
            f.write("clamp_gone a line a test has made unnecessary\n")
        p = util.run_driver(root, "--curated-only", "--only", "clamp_*", "--run-ledgered")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 to run (0 cached)", p.stderr)
        # the survivor is equivalent by its line; the other one is killed
        self.assertEqual(closing(p), (1, 2, 0, 0, 1, 0))
        self.assertEqual(report_of(root)["clamp_gone"]["status"], "Killed")

    def test_a_rerun_runs_only_what_changed(self):
        root = util.fixture_copy(self)
        args = ("--curated-only", "--only", "clamp_*")
        first = util.run_driver(root, *args)
        self.assertIn("2 to run (0 cached)", first.stderr)
        again = util.run_driver(root, *args)
        self.assertIn("0 to run (2 cached)", again.stderr)
        self.assertEqual(closing(first), closing(again))
        # a comment changes no test: nothing reruns
        with open(os.path.join(root, "reference", "tests", "test_calc.c"), "a") as f:
            f.write("/* a comment */\n")
        third = util.run_driver(root, *args)
        self.assertIn("0 to run (2 cached)", third.stderr)
        # a test that changes: both rerun
        with open(os.path.join(root, "reference", "tests", "test_calc.c"), "a") as f:
            f.write("int calc_test_changed;\n")
        fourth = util.run_driver(root, *args)
        self.assertIn("2 to run (0 cached)", fourth.stderr)
        self.assertEqual(closing(fourth), closing(first))

    def test_a_hang_is_a_timeout_and_leaves_no_process(self):
        root = util.fixture_copy(self)
        p = util.run_driver(root, "--curated-only", "--only", "hang", "--limit", "3")
        self.assertEqual(closing(p), (0, 1, 0, 1, 0, 0), p.stderr)
        self.assertEqual(report_of(root)["hang"]["status"], "Timeout")
        self.assertEqual(util.processes_under(root), [])

    def test_an_unmutated_tree_that_fails_stops_the_run(self):
        root = util.fixture_copy(self)
        test = os.path.join(root, "reference", "tests", "test_calc.c")
        with open(test) as f:
            text = f.read()
        with open(test, "w") as f:
            f.write(text.replace("twice(4) == 8", "twice(4) == 9"))
        p = util.run_driver(root, "--curated-only")
        self.assertEqual(p.returncode, 2)
        self.assertIn("the unmutated tree fails check-calc", p.stderr)
        self.assertNotIn("killed of", p.stdout)

    def test_the_unmutated_run_exports_every_suites_results_and_reports(self):
        # make check leaves the suites to the curated run's unmutated run,
        # which copies what each wrote into the check's build folder: also
        # when every mutant is cached (a second run), and when a suite fails
        # (its results out, the other suites run too, the run stopped)
        root = util.fixture_copy(self)
        out = os.path.join(root, "build", "check")
        for attempt in ("fresh", "all cached"):
            p = util.run_driver(root, "--curated-only", "--only", "clamp_gone",
                                "--export-results", out)
            self.assertEqual(p.returncode, 0, attempt + p.stderr)
            self.assertEqual(closing(p)[:2], (1, 1), attempt)
            self.assertEqual(sorted(os.listdir(os.path.join(out, "results"))),
                             ["box", "calc", "count"], attempt)
            with open(os.path.join(out, "results", "calc")) as f:
                self.assertTrue(f.read().startswith("pass "), attempt)
            self.assertTrue(os.path.exists(os.path.join(out, "reports", "box.txt")), attempt)
            shutil.rmtree(out)
        test = os.path.join(root, "reference", "tests", "test_calc.c")
        with open(test) as f:
            text = f.read()
        with open(test, "w") as f:
            f.write(text.replace("twice(4) == 8", "twice(4) == 9"))
        p = util.run_driver(root, "--curated-only", "--only", "clamp_gone",
                            "--export-results", out)
        self.assertEqual(p.returncode, 2)
        self.assertIn("the unmutated tree fails check-calc", p.stderr)
        self.assertNotIn("killed of", p.stdout)
        with open(os.path.join(out, "results", "calc")) as f:
            self.assertTrue(f.read().startswith("fail "))
        self.assertEqual(sorted(os.listdir(os.path.join(out, "results"))),
                         ["box", "calc", "count"])

    def test_list_only_and_shards(self):
        root = util.fixture_copy(self)
        listed = util.run_driver(root, "--list")
        ids = [l.split("\t")[0] for l in listed.stdout.splitlines()]
        self.assertIn("clamp_gone", ids)
        self.assertTrue(any(i.startswith("calc.c:twice:AOR:") for i in ids), ids)
        curated = util.run_driver(root, "--list", "--curated-only").stdout.splitlines()
        self.assertEqual(len(curated), 12)
        generated = util.run_driver(root, "--list", "--generated-only").stdout.splitlines()
        self.assertEqual(len(curated) + len(generated), len(ids))
        halves = [set(l.split("\t")[0] for l in util.run_driver(
            root, "--list", "--shard", f"{i}/2").stdout.splitlines()) for i in (1, 2)]
        self.assertEqual(halves[0] | halves[1], set(ids))
        self.assertEqual(halves[0] & halves[1], set())

    def test_shard_reports_merge(self):
        root = util.fixture_copy(self)
        common = ("--generated-only", "--only", "calc.c:twice:*")
        whole = util.run_driver(root, *common, "--report", os.path.join(root, "build", "all"))
        parts = []
        for i in (1, 2):
            out = os.path.join(root, "build", f"shard{i}")
            util.run_driver(root, *common, "--shard", f"{i}/2", "--report", out)
            parts.append(os.path.join(out, "report.json"))
        merged = util.run_driver(root, "--merge", *parts, "--report",
                                 os.path.join(root, "build", "merged"))
        self.assertEqual(closing(merged), closing(whole))

    def test_changed_since_takes_only_changed_lines(self):
        root = util.fixture_copy(self)
        git = ["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git + ["init", "-q"], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", "base"], check=True)
        src = os.path.join(root, "reference", "src", "calc.c")
        with open(src) as f:
            text = f.read()
        with open(src, "w") as f:
            f.write(text.replace("return x * 2;", "return x * 2 + 0;"))
        p = util.run_driver(root, "--list", "--changed-since", "HEAD")
        ids = [l.split("\t")[0] for l in p.stdout.splitlines()]
        self.assertTrue(ids)
        self.assertTrue(all(i.startswith("calc.c:twice:") for i in ids), ids)

    def interrupt_mid_run(self, sig):
        root = util.fixture_copy(self)
        before = util.tree_digest(root)
        log = os.path.join(root, "build", "cc", "mutants", "logs", "mutants", "hang.log")
        env = dict(os.environ)
        env.pop("MAKEFLAGS", None)
        # A run started from a background job (`make check &`, nohup) has
        # SIGINT ignored, and Python installs no handler for an ignored
        # signal: the driver gets SIGINT's default back, as from a terminal.
        p = subprocess.Popen(util.driver_cmd(root, "--curated-only", "--only", "hang",
                                             "--limit", "60"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # wait until the mutant's suite is running (its binary spins)
        def started():
            if not os.path.exists(log):
                return False
            with open(log) as f:
                return "check-calc" in f.read()
        for _ in range(600):
            if started():
                break
            time.sleep(0.05)
        else:
            p.kill()
            self.fail("the hang mutant never started")
        time.sleep(0.3)
        p.send_signal(sig)
        p.communicate(timeout=30)
        self.assertEqual(util.tree_digest(root), before)
        return root, p.returncode

    def test_the_tree_is_unchanged_after_sigint(self):
        root, status = self.interrupt_mid_run(signal.SIGINT)
        self.assertEqual(status, 130)
        self.assertEqual(util.processes_under(root), [])

    def test_the_tree_is_unchanged_after_sigkill(self):
        root, status = self.interrupt_mid_run(signal.SIGKILL)
        self.assertEqual(status, -signal.SIGKILL)
        # the spinning test outlives a SIGKILLed driver only until its own
        # bound (timeout -s KILL); end it here so the test leaves nothing
        for pid in util.processes_under(root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    unittest.main()


class KillSessionTest(unittest.TestCase):
    """Check runs each test in a process group of its own: killing make's
    group must still end a test that hangs, or it spins on after the run."""

    def test_a_child_in_its_own_group_is_killed_with_the_session(self):
        from mutants import project
        code = ("import os, time\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os.setpgid(0, 0)\n"
                "    print(os.getpid(), flush=True)\n"
                "    time.sleep(600)\n"
                "else:\n"
                "    time.sleep(600)\n")
        p = subprocess.Popen(["/usr/bin/python3", "-c", code], stdout=subprocess.PIPE,
                             start_new_session=True)
        child = int(p.stdout.readline())
        self.assertNotEqual(os.getpgid(child), p.pid)
        project.kill_group(p)
        for _ in range(100):
            try:
                with open(f"/proc/{child}/stat") as f:
                    if f.read().split(")")[-1].split()[0] == "Z":
                        break
            except FileNotFoundError:
                break
            time.sleep(0.05)
        else:
            self.fail(f"process {child} outlived its session")
        p.stdout.close()


class SideBySideTest(unittest.TestCase):
    """project.baseline with suites.programs: every suite's programs built
    by one make, then the suites run two at a time, each with its log."""

    def setUp(self):
        from mutants import config, project
        self.root = util.fixture_copy(self)
        self.tree = os.path.join(self.root, "copy")
        shutil.copytree(self.root, self.tree)
        with open(os.path.join(self.root, "mutants", "driver.toml")) as f:
            text = f.read()
        conf = os.path.join(self.root, "mutants", "side.toml")
        with open(conf, "w") as f:
            f.write(text.replace('run = "make {suite}"\n', 'run = "make {suite}"\n'
                                 'programs = "make programs PROGRAMS_OF={suites}"\n'))
        project.configure(config.load(conf))
        self.addCleanup(util.configure_fixture)
        self.logs = os.path.join(self.root, "logs")
        self.suites = ["check-calc", "check-box", "check-count"]

    def baseline(self, jobs, suites=None, tolerate=False):
        from mutants import project
        env = {k: os.environ.pop(k) for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
               if k in os.environ}
        self.addCleanup(os.environ.update, env)
        return project.baseline(self.tree, {}, suites or self.suites, self.logs, jobs=jobs,
                                tolerate=tolerate)

    def read(self, name):
        with open(os.path.join(self.logs, name)) as f:
            return f.read()

    def test_each_program_is_built_once_before_any_suite_runs(self):
        run = self.baseline(2)
        self.assertEqual(sorted(run["suites"]), sorted(self.suites))
        self.assertEqual(run["failed"], [])
        log = self.read("baseline.log")
        self.assertIn("# the programs of check-calc check-box check-count", log)
        # one suite's programs after another's: each suite's time counts its
        # build, which a mutant built alone does again within its bound
        for s in self.suites:
            self.assertEqual(log.count(f"programs PROGRAMS_OF={s} "), 1, s)
        for name in ("calc", "box", "count"):
            self.assertEqual(log.count(f"-o build/m/test_{name}\n"), 1, name)
            # built by the programs step: its suite's own log builds nothing
            own = self.read(f"baseline-check-{name}.log")
            self.assertNotIn("-o build/m/test_", own)
            self.assertIn(own, log)
        # the results were cleared once: every suite's are there
        results = os.path.join(self.tree, "build", "m", "results")
        self.assertEqual(sorted(os.listdir(results)), ["box", "calc", "count"])

    def test_one_job_or_one_suite_runs_the_suites_one_after_another(self):
        for jobs, suites in ((1, None), (2, ["check-calc"])):
            run = self.baseline(jobs, suites)
            self.assertEqual(run["failed"], [])
            self.assertNotIn("# the programs of", self.read("baseline.log"))

    def test_a_failing_suite_is_named_as_when_the_suites_run_one_at_a_time(self):
        from mutants import project
        with open(os.path.join(self.tree, "Makefile"), "a") as f:
            f.write("\n.PHONY: check-fails\ncheck-fails:\n\t@echo 'fail one: it broke'; exit 1\n")
        run = self.baseline(2, self.suites + ["check-fails"], tolerate=True)
        self.assertEqual(run["failed"], ["check-fails"])
        self.assertIn("fail one: it broke", run["why"]["check-fails"])
        self.assertEqual(sorted(run["suites"]), sorted(self.suites))
        with self.assertRaises(project.BaselineError) as e:
            self.baseline(2, self.suites + ["check-fails"])
        self.assertIn("fails check-fails", str(e.exception))
