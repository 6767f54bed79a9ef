"""Which suite a mutant runs first: cheapest first until a suite has
killed mutants, then the one expected to kill soonest, by the kills of
the same function, else of its file, else of the whole run."""
import os
import time
import unittest

from mutants.model import GENERATED, KILLED, SURVIVED, Edit, Location, Mutant
from mutants import runner as runner_mod
from mutants.runner import Runner
from mutants.tests import util

COST = {"cheap": 0.1, "middle": 1.0, "slow": 8.0}


def setUpModule():
    # the hints a suite is given and the test program named after a file
    # are the tree's (the fixture's configuration, shaped as refrt's)
    util.configure_fixture()


def mutant(mid, path="reference/src/a.c", killed_by=None):
    m = Mutant(id=mid, origin=GENERATED, operator="ROR", about="",
               edits=[Edit(path, 0, 1, "x")], location=Location(1, 1, 1, 2))
    if killed_by:
        m.status, m.killed_by = KILLED, [killed_by]
    return m


class Order(unittest.TestCase):
    def setUp(self):
        self.runner = Runner("base", "work", {}, COST, 60, "logs")

    def test_with_no_history_the_cheapest_suite_runs_first(self):
        self.assertEqual(self.runner.order_of(mutant("a.c:f:ROR:1"), ["slow", "middle", "cheap"]),
                         ["cheap", "middle", "slow"])

    def test_a_suite_that_keeps_killing_a_function_moves_ahead(self):
        for i in range(12):
            self.runner.learn(mutant(f"a.c:f:ROR:{i}", killed_by="slow"))
        # middle: 1 s x 14 / 1; slow: 8 s x 14 / 13; cheap stays first,
        # a tenth of a second being worth its small chance
        self.assertEqual(self.runner.order_of(mutant("a.c:f:AOR:9"), ["cheap", "middle", "slow"]),
                         ["cheap", "slow", "middle"])

    def test_one_kill_does_not_outweigh_a_large_difference_in_cost(self):
        self.runner.learn(mutant("a.c:f:ROR:1", killed_by="slow"))
        self.assertEqual(self.runner.order_of(mutant("a.c:f:AOR:2"), ["slow", "cheap"]),
                         ["cheap", "slow"])

    def test_history_is_per_function_then_per_file(self):
        for i in range(40):
            self.runner.learn(mutant(f"a.c:f:ROR:{i}", killed_by="slow"))
        self.runner.learn(mutant("a.c:g:ROR:1", killed_by="middle"))
        # g has its own history: f's kills do not move slow ahead there
        # (by the file's, slow would go first: 8 x 43 / 41 against 1 x 43 / 2)
        self.assertEqual(self.runner.order_of(mutant("a.c:g:AOR:2"), ["slow", "middle"])[0],
                         "middle")
        # h has none: the file's (f's and g's) decides
        self.assertEqual(self.runner.order_of(mutant("a.c:h:AOR:3"), ["middle", "slow"])[0], "slow")
        # another file starts from the whole run's kills: 40 of 41 by slow
        other = mutant("b.c:f:AOR:4", path="reference/src/b.c")
        self.assertEqual(self.runner.order_of(other, ["slow", "middle"])[0], "slow")
        # and once it has kills of its own, from those
        self.runner.learn(mutant("b.c:f:ROR:5", path="reference/src/b.c", killed_by="middle"))
        self.assertEqual(self.runner.order_of(mutant("b.c:g:AOR:6", path="reference/src/b.c"),
                                              ["slow", "middle"])[0], "middle")

    def test_the_kill_maps_suite_program_and_case_go_first(self):
        from mutants.kills import Kill
        for i in range(12):
            self.runner.learn(mutant(f"a.c:f:ROR:{i}", killed_by="cheap"))
        self.runner.kills = {"a.c:f:AOR:9": Kill("plain", "slow", "check_b", "a_case")}
        m = mutant("a.c:f:AOR:9")
        self.assertEqual(self.runner.order_of(m, ["cheap", "middle", "slow"])[0], "slow")
        self.assertEqual(self.runner.first_programs(m)[0], "check_b")
        self.assertEqual(self.runner.first_cases(m), ["a_case"])
        # a suite the mutant no longer reaches is no suite to try
        self.assertEqual(self.runner.order_of(m, ["cheap", "middle"]), ["cheap", "middle"])
        # other mutants keep the order the run learnt
        self.assertEqual(self.runner.order_of(mutant("a.c:f:AOR:8"), ["slow", "cheap"])[0], "cheap")

    def test_only_kills_are_learnt(self):
        m = mutant("a.c:f:ROR:1")
        m.killed_by = ["slow"]      # a Timeout or a survivor records no kill
        self.runner.learn(m)
        self.assertEqual(self.runner.history, {})


class SchemaSurvivor(unittest.TestCase):
    """A survivor of the schema is built alone before it is called one,
    unless mutants/equivalent already lists it."""

    def runner_with(self, ledger):
        runner = Runner("base", "work", {}, COST, 60, "logs", ledger=ledger)
        runner.schema_slots, runner.alone = ["slot0"], []
        runner._log = lambda m: "/dev/null"

        def survive(mutant, *args, **kwargs):
            mutant.status = SURVIVED
            return mutant
        runner._suites = survive
        runner.run_alone = lambda m, suites, slot: runner.alone.append(m.id) or m
        return runner

    def test_an_unlisted_survivor_is_built_alone(self):
        runner = self.runner_with(ledger=[])
        m = mutant("a.c:f:ROR:1")
        runner.numbers = {m.id: 1}
        runner.run_in_schema(m, ["cheap"], 0)
        self.assertEqual(runner.alone, [m.id])

    def test_a_listed_survivor_is_not_built_again(self):
        m = mutant("a.c:f:ROR:1")
        runner = self.runner_with(ledger=[m.id])
        runner.numbers = {m.id: 1}
        runner.run_in_schema(m, ["cheap"], 0)
        self.assertEqual((runner.alone, m.status), ([], SURVIVED))

    def test_the_programs_that_killed_a_function_run_first(self):
        runner = Runner("base", "work", {}, COST, 60, "logs")
        m = mutant("a.c:f:ROR:9", path="reference/src/shared.c")
        self.assertEqual(runner.first_programs(m), ["check_shared"])  # by its name
        for i, why in enumerate([
                "killed by unit: t1 reference/tests/check_budgets.c:12: failed",
                "killed by unit: t2 reference/tests/check_budgets.c:40: failed; "
                "t3 reference/tests/check_budgets.c:41: failed",
                "killed by unit: t4 reference/tests/check_chan.c:7: failed"]):
            k = mutant(f"shared.c:f:ROR:{i}", path="reference/src/shared.c", killed_by="unit")
            k.status_reason = why
            runner.learn(k)
        # a kill counts a program once, however many of its tests failed
        self.assertEqual(runner.first_programs(m), ["check_budgets", "check_chan"])

    def test_the_cases_that_killed_a_function_run_first(self):
        runner = Runner("base", "work", {}, COST, 60, "logs")
        m = mutant("a.c:f:ROR:9", path="reference/src/shared.c")
        self.assertEqual(runner.first_cases(m), [])     # none yet: the program's order
        for i, why in enumerate([
                "functional: killed by check-unit: unit: t1 reference/tests/check_budgets.c:12: "
                "failed; unit: t2 reference/tests/check_budgets.c:40: failed",
                "functional: killed by check-unit: unit: t2 reference/tests/check_budgets.c:40: "
                "x; unit: t2 reference/tests/check_budgets.c:40: x",
                "functional: killed by check-properties: properties: p7 properties/"
                "check_properties.c:88: seed 3"]):
            k = mutant(f"shared.c:f:ROR:{i}", path="reference/src/shared.c", killed_by="unit")
            k.status_reason = why
            runner.learn(k)
        # a kill counts a case once; the most kills first, then by name
        self.assertEqual(runner.first_cases(m), ["t2", "p7", "t1"])
        self.assertEqual(runner.first_cases(m, most=1), ["t2"])
        # another function of the file falls back to the file's
        other = mutant("a.c:g:ROR:9", path="reference/src/shared.c")
        self.assertEqual(runner.first_cases(other), ["t2", "p7", "t1"])


class SuiteLimit(unittest.TestCase):
    """A hanging mutant is stopped at its suite's own limit, not at the
    whole mutant's, which counts every suite."""

    def test_a_suite_may_take_three_times_its_own_time_and_five_seconds(self):
        runner = Runner("base", "work", {}, COST, 60, "logs")
        self.assertAlmostEqual(runner.suite_limit("cheap"), 5.3)
        self.assertAlmostEqual(runner.suite_limit("slow"), 29.0)

    def test_the_limits_follow_the_machines_load(self):
        runner = Runner("base", "work", {}, COST, 60, "logs")
        self.assertAlmostEqual(runner.suite_limit("slow", 3.0), 3 * 8.0 * 3 + 5)
        self.assertAlmostEqual(runner.suite_limit("slow", 1.0), 29.0)
        cores = os.cpu_count() or 1
        os.environ["RT_MUTANTS_LOAD"] = str(3 * cores)
        self.addCleanup(os.environ.pop, "RT_MUTANTS_LOAD", None)
        self.assertAlmostEqual(runner_mod.load_factor(), 3.0)
        os.environ["RT_MUTANTS_LOAD"] = str(cores / 2)
        self.assertEqual(runner_mod.load_factor(), 1.0)     # never below its own time

    def test_never_past_the_mutants_limit_nor_when_the_user_sets_one(self):
        self.assertEqual(Runner("base", "work", {}, COST, 20, "logs").suite_limit("slow"), 20)
        self.assertEqual(Runner("base", "work", {}, COST, 60, "logs",
                                per_suite=False).suite_limit("cheap"), 60)

    def test_a_hang_is_a_timeout_at_the_suites_limit(self):
        from mutants import project
        asked = []

        def hangs(tree, build, make_vars, target, log, timeout=None, env=None, jobs=1,
                  idle=None, **_):
            asked.append((target, timeout, env))
            return None, ""
        saved, project.run_make = project.run_make, hangs
        os.environ["RT_MUTANTS_LOAD"] = "1"     # the bounds as they are on an idle machine
        self.addCleanup(os.environ.pop, "RT_MUTANTS_LOAD", None)
        try:
            runner = Runner("base", "work", {}, COST, 60, "logs")
            m = runner._suites(mutant("a.c:f:ROR:1"), ["cheap", "slow"], "/nonexistent",
                               "log", time.monotonic())
        finally:
            project.run_make = saved
        self.assertEqual(len(asked), 1)
        self.assertEqual(asked[0][0], "cheap")
        self.assertAlmostEqual(asked[0][1], 5.3, places=1)
        self.assertEqual(asked[0][2].get("RT_FAIL_FAST"), "1")  # one failure is enough
        self.assertEqual((m.status, m.killed_by), ("Timeout", ["cheap"]))
        self.assertIn("its limit of 5 s", m.status_reason)

    def test_a_case_past_its_timeout_is_a_timeout_and_a_failed_one_a_kill(self):
        import tempfile
        from mutants import project
        tree = tempfile.mkdtemp(prefix="refrt-case-")
        self.addCleanup(__import__("shutil").rmtree, tree, True)
        lines = {"loops": "fail t_loops x.c:3: (after this point) Test timeout expired\n",
                 "fails": "fail t_fails x.c:9: Assertion 'p != NULL' failed\n"}

        def fails(tree_, build, make_vars, target, log, timeout=None, env=None, jobs=1,
                  idle=None, **_):
            results = os.path.join(tree, project.BUILD_IN_COPY, "results")
            os.makedirs(results, exist_ok=True)
            with open(os.path.join(results, "unit"), "w") as f:
                f.write(lines[target])
            self.assertEqual(env.get("RT_CASE_TIMEOUT"), str(runner_mod.CASE_SECONDS))
            return 2, ""
        saved, project.run_make = project.run_make, fails
        os.environ["RT_MUTANTS_LOAD"] = "1"     # the bounds as they are on an idle machine
        self.addCleanup(os.environ.pop, "RT_MUTANTS_LOAD", None)
        try:
            runner = Runner("base", "work", {}, {"loops": 1.0, "fails": 1.0}, 60, "logs")
            looped = runner._suites(mutant("a.c:f:ROR:1"), ["loops"], tree, "log",
                                    time.monotonic())
            failed = runner._suites(mutant("a.c:f:ROR:2"), ["fails"], tree, "log",
                                    time.monotonic())
        finally:
            project.run_make = saved
        self.assertEqual(looped.status, "Timeout")
        self.assertIn(f"ran past {runner_mod.CASE_SECONDS} s", looped.status_reason)
        self.assertEqual(failed.status, "Killed")

    def _suite_writing(self, line):
        """(a tree, the environments asked, a run_make in place of make's
        that writes one result line for the unit suite and fails); the
        real one is put back at the end of the test."""
        import tempfile
        from mutants import project
        tree = tempfile.mkdtemp(prefix="refrt-case-")
        self.addCleanup(__import__("shutil").rmtree, tree, True)
        asked = []

        def run_make(tree_, build, make_vars, target, log, env=None, **_):
            asked.append(dict(env))
            results = os.path.join(tree, project.BUILD_IN_COPY, "results")
            os.makedirs(results, exist_ok=True)
            with open(os.path.join(results, "unit"), "w") as f:
                f.write(line + "\n")
            return 2, ""
        self.addCleanup(setattr, project, "run_make", project.run_make)
        project.run_make = run_make
        return tree, asked

    def test_a_case_slow_unmutated_has_a_bound_of_its_own_in_a_whole_run(self):
        """A case that takes seconds unmutated is bounded at CASE_TIMES its
        own time in a whole run of its suite (RT_CASE_TIMEOUTS), so that
        it is no Timeout of every mutant that reaches it; the other cases
        keep the suite's bound, and a slow case that loops past its own
        bound is still a Timeout, which says that bound."""
        tree, asked = self._suite_writing(
            "fail big_one x.c:3: (after this point) Test timeout expired")
        os.environ["RT_MUTANTS_LOAD"] = "1"     # the bounds as they are on an idle machine
        self.addCleanup(os.environ.pop, "RT_MUTANTS_LOAD", None)
        runner = Runner("base", "work", {}, {"unit": 10.0}, 60, "logs")
        runner.case_times = {"unit": {"big_one": 4.6, "quick": 0.01, "medium": 0.5}}
        m = runner._suites(mutant("a.c:f:ROR:1"), ["unit"], tree, "log", time.monotonic())
        self.assertEqual(asked[0].get("RT_CASE_TIMEOUT"), str(runner_mod.CASE_SECONDS))
        self.assertEqual(asked[0].get("RT_CASE_TIMEOUTS"), "big_one=19")
        self.assertEqual(m.status, "Timeout")
        self.assertIn("ran past 19 s", m.status_reason)

    def test_a_first_try_of_one_case_carries_no_other_cases_bounds(self):
        from mutants import project, kills
        tree, asked = self._suite_writing("fail quick x.c:9: Assertion 'p != NULL' failed")
        hints = dict(project.CFG.hints)
        self.addCleanup(setattr, project.CFG, "hints", hints)
        project.CFG.hints = dict(hints, only_programs="RT_ONLY_PROGRAMS", only_cases="RT_ONLY_CASES")
        runner = Runner("base", "work", {}, {"unit": 10.0}, 60, "logs")
        runner.case_times = {"unit": {"big_one": 4.6, "quick": 0.01}}
        runner.kills = {"a.c:f:ROR:1": kills.Kill("plain", "unit", "check_x", "quick")}
        m = runner._suites(mutant("a.c:f:ROR:1"), ["unit"], tree, "log", time.monotonic())
        self.assertEqual(m.status, "Killed")
        self.assertEqual(len(asked), 1)
        self.assertEqual(asked[0].get("RT_ONLY_CASES"), "quick")     # the first try
        self.assertNotIn("RT_CASE_TIMEOUTS", asked[0])


class Idle(unittest.TestCase):
    """A suite none of whose processes runs (a deadlock) is stopped as
    idle; one that computes, however long, is not."""

    def make(self, recipe):
        import tempfile
        from mutants import project
        tree = tempfile.mkdtemp(prefix="refrt-idle-")
        self.addCleanup(__import__("shutil").rmtree, tree, True)
        with open(os.path.join(tree, "Makefile"), "w") as f:
            f.write(f"t:\n\t{recipe}\n")
        return project.run_make(tree, "build", {}, "t", os.path.join(tree, "log"),
                                timeout=60, idle=1)[0]

    def test_a_run_that_only_waits_is_idle(self):
        from mutants import project
        self.assertEqual(self.make("sleep 50"), project.IDLE)

    def test_a_run_that_computes_is_not(self):
        # spins for two seconds, twice the idle bound, then passes
        self.assertEqual(self.make("timeout 2 sh -c 'while :; do :; done'; true"), 0)

    def test_a_run_that_ends_gives_its_status(self):
        self.assertEqual(self.make("exit 3"), 2)


if __name__ == "__main__":
    unittest.main()


class CaseBound(unittest.TestCase):
    """A first try of the one case that killed a mutant last time is
    bounded by that case's own unmutated time, read from Check's XML."""

    XML = ('<?xml version="1.0"?>\n<testsuites xmlns="http://check.sourceforge.net/ns">'
           '<suite><title>s</title>'
           '<test result="success"><id>fast</id><duration>0.004</duration>'
           '<description>fast</description></test>'
           '<test result="success"><id>slow</id><duration>1.3</duration>'
           '<description>slow</description></test>'
           '</suite></testsuites>\n')

    def test_a_case_s_bound_is_four_times_its_time_and_at_least_a_second(self):
        runner = Runner("base", "work", {}, COST, 60, "logs")
        runner.case_times = {"unit": {"fast": 0.004, "slow": 1.3}}
        self.assertEqual(runner.case_bound("unit", "fast"), 1.0)
        self.assertEqual(runner.case_bound("unit", "fast", 2.5), 2.5)
        # a slow case has its own multiple, past the suite's 2 s a case
        self.assertEqual(runner.case_bound("unit", "slow"), 5.2)
        runner.case_seconds = {"unit": 15}
        self.assertEqual(runner.case_bound("unit", "slow"), 5.2)
        # a case the unmutated run did not show (a stale name runs every
        # case of its program), or none named: the suite's bound a case
        self.assertEqual(runner.case_bound("unit", "renamed"), 15)
        self.assertEqual(runner.case_bound("unit", None, 2.0), 30)

    def test_the_unmutated_run_s_xml_logs_give_each_case_s_time(self):
        import shutil
        import tempfile
        from mutants import config, project
        tree = tempfile.mkdtemp(prefix="refrt-mutants-xml-")
        self.addCleanup(shutil.rmtree, tree, True)
        saved = project.CFG
        self.addCleanup(project.configure, saved)
        project.configure(config.Config({"suites": {"reports": "{build}/reports"}}))
        reports = os.path.join(tree, project.BUILD_IN_COPY, "reports")
        os.makedirs(reports)
        since = time.time() - 1
        with open(os.path.join(reports, "check_a.xml"), "w") as f:
            f.write(self.XML)
        with open(os.path.join(reports, "check_b.xml"), "w") as f:
            f.write(self.XML.replace("1.3", "0.7").replace(">fast<", ">other<"))
        with open(os.path.join(reports, "broken.xml"), "w") as f:
            f.write("<testsuites")
        self.assertEqual(project.case_times_since(tree, since),
                         {"fast": 0.004, "slow": 1.3, "other": 0.004})
        self.assertEqual(project.case_times_since(tree, time.time() + 60), {})
