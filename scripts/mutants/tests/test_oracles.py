"""The cascade of oracles on the fixture project: a survivor of the plain
build judged again on an ASan+UBSan build and a TSan build, a kill put down
to what the failing suite printed, the cost of a run with no survivor,
and the cache's verdicts by oracle."""
import json
import os
import re
import unittest

from mutants import cache, project, report
from mutants.model import KILLED, TIMEOUT, Mutant, Location
from mutants.runner import classify
from mutants.tests import util
from mutants.tests.test_driver import closing, report_of


def setUpModule():
    # classify, the closing line and the oracles' order read the tree's
    # configuration: the fixture's names the checked locks and the cost
    # bounds as kinds of kill, and TSan for faults of concurrency
    util.configure_fixture()


def times_of(root):
    """{(id, oracle): (status, kind)} from logs/times.tsv."""
    out = {}
    with open(os.path.join(root, "build", "cc", "mutants", "logs", "times.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(head, line.rstrip("\n").split("\t")))
            out[(row["id"], row["oracle"])] = (row["status"], row["killed by"])
    return out


class CascadeTest(unittest.TestCase):
    """One run of the fixture's oracle mutants (mutants/oracles.mut) and
    its survivor, with every oracle."""

    @classmethod
    def setUpClass(cls):
        import shutil
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="refrt-mutants-oracles-")
        cls.root = os.path.join(cls.tmp, "tree")
        shutil.copytree(util.FIXTURE, cls.root)
        cls.p = util.run_driver(cls.root, "--curated-only", "--only", "uaf", "--only", "race",
                                "--only", "lock_gone", "--only", "reset_gone",
                                "--only", "slow_sum", "--only", "hash_const",
                                "--only", "clamp_from_ten")
        cls.rep = report_of(cls.root)
        cls.times = times_of(cls.root)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, True)

    def test_a_use_after_free_the_plain_build_survives_is_killed_by_asan(self):
        self.assertEqual(self.times[("uaf", "plain")], ("Survived", "-"))
        uaf = self.rep["uaf"]
        self.assertEqual(uaf["status"], "Killed", uaf)
        self.assertEqual(uaf["killedBy"], ["check-box", "oracle:asan"])
        self.assertTrue(uaf["statusReason"].startswith("asan: killed by check-box on the asan "
                                                       "build"), uaf["statusReason"])
        self.assertIn("AddressSanitizer: heap-use-after-free", uaf["statusReason"])

    def test_a_race_the_plain_test_cannot_tell_is_killed_by_tsan(self):
        self.assertEqual(self.times[("race", "plain")], ("Survived", "-"))
        self.assertEqual(self.times[("race", "asan")], ("Survived", "-"))
        race = self.rep["race"]
        self.assertEqual(race["status"], "Killed", race)
        self.assertEqual(race["killedBy"], ["check-count", "oracle:tsan"])
        self.assertIn("ThreadSanitizer: data race", race["statusReason"])

    def test_a_checked_lock_and_a_cost_bound_name_their_kills(self):
        lock, cost = self.rep["lock_gone"], self.rep["slow_sum"]
        self.assertEqual((lock["status"], lock["killedBy"]), ("Killed", ["check-count", "oracle:lock"]))
        self.assertIn("refrt: count_bump: lock discipline:", lock["statusReason"])
        self.assertEqual((cost["status"], cost["killedBy"]), ("Killed", ["check-calc", "oracle:cost"]))
        self.assertTrue(cost["statusReason"].startswith("cost: "), cost["statusReason"])
        # a hash made constant: every key still added once, in a thousand
        # times the probes the counter allows
        hashed = self.rep["hash_const"]
        self.assertEqual((hashed["status"], hashed["killedBy"]),
                         ("Killed", ["check-calc", "oracle:cost"]), hashed)
        self.assertIn("cost bound: 2000 set adds took 1001000 probes", hashed["statusReason"])
        # all on the plain build: no sanitizer judged them
        self.assertNotIn(("lock_gone", "asan"), self.times)
        self.assertNotIn(("slow_sum", "asan"), self.times)
        self.assertNotIn(("hash_const", "asan"), self.times)

    def test_a_message_the_suite_prints_when_it_passes_names_no_kill(self):
        # check-count prints a lock-discipline message on purpose (its
        # child's misuse); a wrong count in the same suite is functional
        reset = self.rep["reset_gone"]
        self.assertEqual(reset["killedBy"], ["check-count", "oracle:functional"], reset)

    def test_a_survivor_of_every_oracle_is_reported_with_them(self):
        self.assertEqual(self.p.returncode, 1, self.p.stderr)
        c = self.rep["clamp_from_ten"]
        self.assertEqual(c["status"], "Survived")
        self.assertIn("(oracles: plain, asan, tsan)", c["statusReason"])
        # the suites each oracle ran, not only the last one's
        for o in ("plain", "asan", "tsan"):
            self.assertRegex(c["statusReason"], rf"(by oracle: |; ){o}: check-\w", c)
        self.assertEqual({o for (i, o) in self.times if i == "clamp_from_ten"},
                         {"plain", "asan", "tsan"})

    def test_the_closing_line_and_the_phases_count_by_oracle(self):
        self.assertEqual(closing(self.p), (6, 7, 1, 0, 0, 0))
        self.assertTrue(self.p.stdout.rstrip().endswith(
            "; killed by functional 1, asan 1, tsan 1, lock 1, cost 2"), self.p.stdout)
        for phase in ("TCE", "unmutated run (plain)", "mutant runs (plain)",
                      "unmutated run (asan)", "mutant runs (asan)",
                      "unmutated run (tsan)", "mutant runs (tsan)"):
            self.assertIn(phase + " ", self.p.stderr)

    def test_the_json_report_lists_the_oracles_as_tests(self):
        with open(os.path.join(self.root, "build", "cc", "mutants", "report.json")) as f:
            rep = json.load(f)
        ids = [t["id"] for t in rep["testFiles"]["oracles"]["tests"]]
        self.assertEqual(ids, ["oracle:" + k for k in
                               ("functional", "asan", "ubsan", "tsan", "lock", "cost")])


class OracleLineTest(unittest.TestCase):
    """A catalog entry's `oracle:` line sends it to that oracle before the
    plain build, which judges it only if no oracle kills it."""

    def test_an_entry_goes_to_its_oracle_first_and_the_plain_build_last(self):
        root = util.fixture_copy(self)
        args = ("--curated-only", "--only", "first_race", "--only", "first_clamp")
        p = util.run_driver(root, *args)
        times, rep = times_of(root), report_of(root)
        # killed by TSan, and never run on the plain build
        self.assertEqual(times[("first_race", "tsan")], ("Killed", "tsan"))
        self.assertNotIn(("first_race", "plain"), times)
        self.assertEqual(rep["first_race"]["killedBy"], ["check-count", "oracle:tsan"])
        # no oracle tells: every one ran, the plain build last
        self.assertEqual({o for (i, o) in times if i == "first_clamp"}, {"plain", "asan", "tsan"})
        clamp = rep["first_clamp"]
        self.assertEqual(clamp["status"], "Survived", clamp)
        self.assertIn("(oracles: asan, tsan, plain)", clamp["statusReason"])
        self.assertIn("mutant runs (plain, after the oracles) ", p.stderr)
        self.assertEqual(p.returncode, 1, p.stderr)
        # both kept: a kill by the first oracle needs no plain verdict
        again = util.run_driver(root, *args)
        self.assertIn("0 to run (2 cached)", again.stderr)
        self.assertEqual(closing(again), closing(p))


OTHER_MUT = """# a fault only the other target compiles (other.h)

== other_twice_off
seed: fixture
about: other_twice adds one more on the other target; no build but check-other's compiles it
oracle: other
file: reference/src/other.h
--- find
    return x + x;
+++ replace
    return x + x + 1;

== other_twice_off_late
seed: fixture
about: the same fault with no oracle: line: the plain build and the sanitizers let it through, then the other oracle sees it
file: reference/src/other.h
--- find
    return x + x;
+++ replace
    return x + x - 1;
"""


class OwnSuitesTest(unittest.TestCase):
    """An oracle with suites of its own (refrt's aarch64 oracle: a cross
    build under qemu-user) runs them, not the suites that reach a survivor,
    which the coverage build cannot know of; an entry whose oracle: line
    names it goes there first."""

    def with_other_oracle(self, suites):
        """A fixture copy whose configuration adds the oracle `other`, its
        suites given as TOML text; returns (root, its driver.toml)."""
        root = util.fixture_copy(self)
        conf = os.path.join(root, "mutants", "driver.toml")
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace('concurrency = true}\n', 'concurrency = true}\n'
                                 f'other = {{make_vars = {{}}, suites = {suites}}}\n'))
        return root, conf

    def test_an_oracle_of_its_own_suites_kills_what_only_that_target_builds(self):
        root, _ = self.with_other_oracle('["check-other"]')
        with open(os.path.join(root, "mutants", "other.mut"), "w") as f:
            f.write(OTHER_MUT)
        p = util.run_driver(root, "--curated-only", "--only", "other_twice_off*")
        times, rep = times_of(root), report_of(root)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = rep["other_twice_off"]
        self.assertEqual((first["status"], first["killedBy"]),
                         ("Killed", ["check-other", "oracle:functional"]), first)
        self.assertEqual({o for (i, o) in times if i == "other_twice_off"}, {"other"})
        late = rep["other_twice_off_late"]
        self.assertEqual((late["status"], late["killedBy"]),
                         ("Killed", ["check-other", "oracle:functional"]), late)
        self.assertEqual(times[("other_twice_off_late", "plain")], ("Survived", "-"))
        self.assertEqual(times[("other_twice_off_late", "tsan")], ("Survived", "-"))
        self.assertEqual(times[("other_twice_off_late", "other")], ("Killed", "functional"))
        self.assertIn("unmutated run (other) ", p.stderr)
        # the other oracle's unmutated run is its own suite alone
        self.assertRegex(p.stderr, r"other: \d+ survivors to judge; the unmutated run \(\): "
                                   r"check-other\n")

    def test_an_entry_held_for_an_oracle_of_its_own_suites_waits_for_no_coverage(self):
        # the oracle runs its own suites whatever reaches the mutant, so a
        # curated run whose only survivor is held back for it, with no
        # kill map, takes no coverage: it is killed there
        root, _ = self.with_other_oracle('["check-other"]')
        with open(os.path.join(root, "mutants", "other.mut"), "w") as f:
            f.write(OTHER_MUT)
        p = util.run_driver(root, "--curated-only", "--only", "other_twice_off")
        self.assertEqual(p.returncode, 0, p.stderr)
        first = report_of(root)["other_twice_off"]
        self.assertEqual((first["status"], first["killedBy"]),
                         ("Killed", ["check-other", "oracle:functional"]), first)
        self.assertIn("mutants: phases: ", p.stderr)
        self.assertNotRegex(p.stderr, r"phases: .*coverage")

    def test_an_oracles_suites_are_a_list_of_names(self):
        from mutants import config
        _, conf = self.with_other_oracle('"check-other"')
        with self.assertRaisesRegex(config.ConfigError, r"oracles\.other\.suites: a list"):
            config.load(conf)


def names_the_kill_map(root):
    """Makes the fixture copy's configuration name its mutants/kills.tsv."""
    conf = os.path.join(root, "mutants", "driver.toml")
    with open(conf) as f:
        text = f.read()
    with open(conf, "w") as f:
        f.write(text.replace('ledger = "mutants/equivalent"',
                             'ledger = "mutants/equivalent"\nkills = "mutants/kills.tsv"'))


class KillMapTest(unittest.TestCase):
    """Every run writes its kills (kills.tsv beside report.json); a tree
    whose configuration names a kill map tries its suite first, and sends a
    mutant an oracle killed to that oracle first: the same verdicts, the
    plain build's full run of a sanitizer's kill spared."""

    def test_the_kill_map_is_written_and_read_and_changes_no_verdict(self):
        from mutants import kills
        root = util.fixture_copy(self)
        args = ("--curated-only", "--only", "uaf", "--only", "clamp_gone")
        first = util.run_driver(root, *args)
        written = kills.load(os.path.join(root, "build", "cc", "mutants", "kills.tsv"))
        self.assertEqual(written["uaf"].oracle, "asan")
        self.assertEqual(written["uaf"].suite, "check-box")
        self.assertEqual((written["clamp_gone"].oracle, written["clamp_gone"].suite),
                         ("plain", "check-calc"))
        self.assertIn(("uaf", "plain"), times_of(root))
        # the tree keeps the map (make mutants-kills) and names it
        kills.main([os.path.join(root, "mutants", "kills.tsv"),
                    os.path.join(root, "build", "cc", "mutants", "kills.tsv")])
        names_the_kill_map(root)
        again = util.run_driver(root, *args, "--no-cache")
        times, rep = times_of(root), report_of(root)
        self.assertNotIn(("uaf", "plain"), times)          # straight to ASan
        self.assertEqual(times[("uaf", "asan")], ("Killed", "asan"))
        self.assertEqual(rep["uaf"]["killedBy"], ["check-box", "oracle:asan"])
        self.assertEqual(closing(again), closing(first))


def verdict(mid, kind, **fields):
    """A mutant of no edit with its verdict (status, killed_by, reason)."""
    return Mutant(mid, kind, "x", "", [], Location(1, 1, 1, 1), **fields)


class KillNamesTest(unittest.TestCase):
    def test_a_kill_names_its_case_the_check_way_else_by_its_first_failure(self):
        import re
        from mutants import kills
        prog, case = re.compile(r"\b(check_\w+)\.c:\d+"), re.compile(
            r"(\w+) (?:\S*/)?(?:check_\w+)\.c:\d+")
        unit = verdict("u", "generated", status=KILLED,
                       killed_by=["check-unit"], status_reason="functional: killed by "
                       "check-unit: unit: one_case reference/tests/check_x.c:12: no")
        unit.failed = ["unit: one_case reference/tests/check_x.c:12: no"]
        fuzz = verdict("f", "generated", status=KILLED,
                       killed_by=["check-fuzz-replay"], status_reason="functional: killed by "
                       "check-fuzz-replay: fuzz-replay: fuzz/corpus/builds-01 a panic")
        fuzz.failed = ["fuzz-replay: fuzz/corpus/builds-01 a panic"]
        cached = verdict("c", "generated", status=KILLED,
                         killed_by=["check-taskblock"], status_reason="killed by check-taskblock")
        got = kills.of([unit, fuzz, cached], prog, case)
        self.assertEqual(got["u"], kills.Kill("plain", "check-unit", "check_x", "one_case"))
        self.assertEqual(got["f"], kills.Kill("plain", "check-fuzz-replay", "",
                                              "fuzz/corpus/builds-01"))
        self.assertEqual(got["c"], kills.Kill("plain", "check-taskblock", "", ""))
        # a hang's or a crash's stack quotes the case's function, which no
        # suite can be asked to run: the case is the failure line's
        hang = verdict("h", "curated", status=TIMEOUT,
                       killed_by=["check-unit"], status_reason="check-unit hung: none of its "
                       "processes ran for 1 s; hang class: deadlock: check_x pid 7: thread 7 "
                       "waiting (S): #2 one_case_fn check_x.c:40 < main testmain.c:106")
        crash = verdict("k", "curated", status=KILLED,
                        killed_by=["check-unit"], status_reason="functional: killed by "
                        "check-unit: unit: two_case reference/tests/check_x.c:88: Received "
                        "signal 6; crash stack (SIGABRT in check_x): abort a.c:1 < two_case_fn "
                        "check_x.c:90")
        got = kills.of([hang, crash], prog, case)
        self.assertEqual(got["h"], kills.Kill("plain", "check-unit", "check_x", ""))
        self.assertEqual(got["k"], kills.Kill("plain", "check-unit", "check_x", "two_case"))
        self.assertEqual(kills.cases_named(case, "unit: a reference/tests/check_x.c:1: b; "
                                           "#1 a_fn check_x.c:2 < c_fn check_x.c:3"), ["a"])
        self.assertEqual(kills.failed_test(["portable-unit: a_case x.c:3: m"]), "a_case")
        self.assertEqual(kills.failed_test([]), "")
        # a hang whose stacks could not be read names only its processes:
        # a conformance program is a case (RT_ONLY_CASES picks it), a test
        # program the program pattern takes is a program
        conf = verdict("n", "curated", status=TIMEOUT,
                       killed_by=["check-conformance"], build="release",
                       status_reason="check-conformance hung: none of its processes ran for "
                       "1 s; hang class: unclassified: 0 of 3 threads running; no stacks; "
                       "channels_close_wakes_all pid 26861: thread 26861 waiting (S): no stack; "
                       "thread 26862 waiting (S): no stack")
        unit = verdict("p", "curated", status=TIMEOUT,
                       killed_by=["check-unit"], status_reason="check-unit hung: none of its "
                       "processes ran for 1 s; hang class: unclassified: no stacks; check_x pid "
                       "9: thread 9 waiting (S): no stack | check_x pid 10: thread 10 waiting")
        loop = verdict("q", "curated", status=TIMEOUT,
                       killed_by=["check-taskblock"], status_reason="check-taskblock ran past "
                       "its limit of 8 s")
        got = kills.of([conf, unit, loop], prog, case)
        self.assertEqual(got["n"], kills.Kill("release", "check-conformance", "",
                                              "channels_close_wakes_all"))
        self.assertEqual(got["p"], kills.Kill("plain", "check-unit", "check_x", ""))
        self.assertEqual(got["q"], kills.Kill("plain", "check-taskblock", "", ""))

    def test_a_later_entry_that_names_no_test_keeps_the_earlier_ones(self):
        import tempfile
        from mutants import kills
        with tempfile.TemporaryDirectory() as tmp:
            old, new = os.path.join(tmp, "old.tsv"), os.path.join(tmp, "new.tsv")
            kills.write(old, {"a": kills.Kill("release", "check-unit", "check_x", "one"),
                              "b": kills.Kill("plain", "check-unit", "check_x", "two"),
                              "c": kills.Kill("plain", "check-unit", "check_x", "three"),
                              "d": kills.Kill("plain", "check-unit", "check_x", "five"),
                              "e": kills.Kill("plain", "check-unit", "check_x", "six")})
            kills.write(new, {"a": kills.Kill("release", "check-unit", "", ""),
                              "b": kills.Kill("plain", "check-box", "", ""),
                              "c": kills.Kill("plain", "check-unit", "check_y", "four"),
                              "d": kills.Kill("plain", "check-unit", "check_x", ""),
                              "e": kills.Kill("plain", "check-unit", "check_z", "")})
            got = kills.merge([old, new])
        self.assertEqual(got["a"], kills.Kill("release", "check-unit", "check_x", "one"))
        self.assertEqual(got["b"], kills.Kill("plain", "check-box", "", ""))   # another suite
        self.assertEqual(got["c"], kills.Kill("plain", "check-unit", "check_y", "four"))
        self.assertEqual(got["d"], kills.Kill("plain", "check-unit", "check_x", "five"))
        self.assertEqual(got["e"], kills.Kill("plain", "check-unit", "check_z", ""))

    def test_a_duplicate_is_written_and_read_apart_from_the_kills(self):
        import tempfile
        from mutants import kills
        from mutants.model import IGNORED
        dup = Mutant("d", "generated", "x", "", [], Location(1, 1, 1, 1), status=IGNORED,
                     duplicate_of="k")
        killed = Mutant("k", "generated", "x", "", [], Location(1, 1, 1, 1), status=KILLED,
                        killed_by=["check-unit"], status_reason="killed by check-unit")
        alone = Mutant("a", "generated", "x", "", [], Location(1, 1, 1, 1), status=KILLED,
                       killed_by=["check-box"], status_reason="killed by check-box",
                       alone_after_schema=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "alone.tsv")
            kills.write(path, kills.of([alone, killed], re.compile("x^"), re.compile("x^")))
            got = kills.load(path)
            self.assertEqual((got["a"].where, got["k"].where), ("alone", ""))
            path = os.path.join(tmp, "kills.tsv")
            kills.write(path, kills.of([dup, killed], re.compile("x^"), re.compile("x^")))
            self.assertEqual(set(kills.load(path)), {"k"})          # what a run tries first
            self.assertEqual(kills.load(path, duplicates=True), {"d": "k"})
            other = os.path.join(tmp, "more.tsv")
            kills.write(other, {"e": kills.Kill("plain", "check-box", "", "")})
            kills.main([path, other])
            self.assertEqual(set(kills.load(path)), {"k", "e"})
            self.assertEqual(kills.load(path, duplicates=True), {"d": "k"})


class WitnessTest(unittest.TestCase):
    """A mutant the kill map says an oracle killed meets that oracle's
    killing suite first, alone (witness.py): that suite's unmutated run on
    the oracle's build, then the mutant on it; every other suite's
    unmutated run under the oracle is spared. A witness that no longer
    kills costs its own run, and the whole judgement follows."""

    def map_says(self, root, line):
        with open(os.path.join(root, "mutants", "kills.tsv"), "w") as f:
            f.write("# id\toracle\tsuite\tprogram\tcase\n" + line + "\n")
        names_the_kill_map(root)

    def test_a_kill_in_the_map_runs_only_its_witness_unmutated(self):
        root = util.fixture_copy(self)
        self.map_says(root, "uaf\tasan\tcheck-box\t-\t-")
        p = util.run_driver(root, "--curated-only", "--only", "uaf", "--oracles", "plain,asan")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("asan: 1 of 1 survivors first by what killed each last time (the kill "
                      "map), unmutated then mutated: check-box (whole)", p.stderr)
        # no unmutated run of check-calc or check-count under ASan
        self.assertNotIn("the unmutated run (SANITIZE=address,undefined)", p.stderr)
        self.assertRegex(p.stderr, r"phases: .*witness unmutated runs \(asan\) [\d.]+ s, "
                                   r"witness mutant runs \(asan\) ")
        self.assertNotRegex(p.stderr, r"phases: .* unmutated run \(asan\)")
        uaf = report_of(root)["uaf"]
        self.assertEqual((uaf["status"], uaf["killedBy"]), ("Killed", ["check-box", "oracle:asan"]),
                         uaf)
        self.assertIn("AddressSanitizer", uaf["statusReason"])
        self.assertEqual(times_of(root)[("uaf", "asan")], ("Killed", "asan"))
        # one build serves the unmutated witness and the mutant
        self.assertIn("asan: 1 of 1 in the witnesses' schema build", p.stderr)

    def test_a_witness_built_alone_when_the_schema_is_off_kills_the_same(self):
        root = util.fixture_copy(self)
        self.map_says(root, "uaf\tasan\tcheck-box\t-\t-")
        p = util.run_driver(root, "--curated-only", "--only", "uaf", "--oracles", "plain,asan",
                            "--no-schemata")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("witnesses' schema", p.stderr)
        uaf = report_of(root)["uaf"]
        self.assertEqual((uaf["status"], uaf["killedBy"]), ("Killed", ["check-box", "oracle:asan"]),
                         uaf)

    def test_a_concurrency_oracles_witness_runs_again_before_the_whole_judgement(self):
        # the map names check-box for TSan's kill of the race, which it
        # cannot see: the witness runs WITNESS_TRIES times (TSan is the
        # fixture's concurrency oracle), then the whole judgement kills
        root = util.fixture_copy(self)
        self.map_says(root, "race\ttsan\tcheck-box\t-\t-")
        p = util.run_driver(root, "--curated-only", "--only", "race", "--oracles", "plain,tsan")
        self.assertEqual(p.returncode, 0, p.stderr)
        from mutants.cli import WITNESS_TRIES
        for attempt in range(2, WITNESS_TRIES + 1):
            self.assertIn(f"tsan: 1 survived their witness: run {attempt} of {WITNESS_TRIES}",
                          p.stderr)
        self.assertIn("tsan witness: time by verdict (job seconds): Survived 1 ",
                      p.stderr)
        race = report_of(root)["race"]
        self.assertEqual((race["status"], race["killedBy"]),
                         ("Killed", ["check-count", "oracle:tsan"]), race)

    def test_a_witness_that_no_longer_kills_leads_to_the_whole_judgement(self):
        # the map says ASan killed the race in check-count: ASan's witness
        # run passes with the mutant, so ASan judges it whole (every suite
        # that reaches it, after their unmutated run), and TSan, next,
        # kills it as before
        root = util.fixture_copy(self)
        self.map_says(root, "race\tasan\tcheck-count\t-\t-")
        p = util.run_driver(root, "--curated-only", "--only", "race")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("asan: 1 of 1 survivors first by what killed each last time (the kill "
                      "map), unmutated then mutated: check-count (whole)", p.stderr)
        self.assertIn("asan witness: time by verdict (job seconds): Survived 1", p.stderr)
        self.assertIn("asan: 1 survivors to judge; the unmutated run (SANITIZE=address,undefined)",
                      p.stderr)
        race = report_of(root)["race"]
        self.assertEqual((race["status"], race["killedBy"]),
                         ("Killed", ["check-count", "oracle:tsan"]), race)
        times = times_of(root)
        self.assertEqual(times[("race", "asan")], ("Survived", "-"))
        self.assertEqual(times[("race", "tsan")], ("Killed", "tsan"))

    def test_a_survivor_of_every_oracle_is_one_with_a_stale_witness_too(self):
        # clamp_from_ten survives every oracle; a map naming ASan for it
        # changes nothing but the order
        root = util.fixture_copy(self)
        args = ("--curated-only", "--only", "clamp_from_ten", "--oracles", "plain,asan")
        before = util.run_driver(root, *args)
        self.map_says(root, "clamp_from_ten\tasan\tcheck-calc\t-\t-")
        after = util.run_driver(root, *args, "--no-cache")
        self.assertEqual(closing(after), closing(before))
        clamp = report_of(root)["clamp_from_ten"]
        self.assertEqual(clamp["status"], "Survived")
        self.assertEqual(after.returncode, 1, after.stderr)
        # the coverage waited for the witness, and was taken when it
        # did not kill: the survivor is told from one no suite reaches
        self.assertRegex(after.stderr, r"phases: .*witness mutant runs \(asan\) .*, coverage ")
        self.assertEqual(clamp["coveredBy"], ["check-calc"], clamp)

    def test_a_run_whose_witnesses_kill_takes_no_coverage(self):
        root = util.fixture_copy(self)
        self.map_says(root, "uaf\tasan\tcheck-box\t-\t-")
        p = util.run_driver(root, "--curated-only", "--only", "uaf")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotRegex(p.stderr, r"phases: .*coverage")

    def test_what_a_witness_runs_is_the_union_of_what_killed(self):
        from mutants import kills, witness
        ms = [Mutant(i, "curated", "x", "", [], Location(1, 1, 1, 1)) for i in ("a", "b", "c")]
        for m in ms:
            m.covered_by = ["check-unit"]
        k = {"a": kills.Kill("asan", "check-unit", "check_x", "one"),
             "b": kills.Kill("asan", "check-unit", "check_y", "two"),
             "c": kills.Kill("tsan", "check-unit", "check_z", "three")}
        self.assertEqual(witness.by_suite(ms, "asan", k), {"check-unit": ms[:2]})
        self.assertEqual(witness.restriction(ms[:2], k), (["check_x", "check_y"], ["one", "two"]))
        # a kill that named no case: every case of the programs runs
        k["b"] = kills.Kill("asan", "check-unit", "check_y", "")
        self.assertEqual(witness.restriction(ms[:2], k), (["check_x", "check_y"], []))
        k["b"] = kills.Kill("asan", "check-unit", "", "")
        self.assertEqual(witness.restriction(ms[:2], k), ([], []))
        # a suite that no longer reaches the mutant is no witness of it
        ms[0].covered_by = ["check-other"]
        self.assertEqual(witness.by_suite(ms, "asan", k), {"check-unit": [ms[1]]})

    def test_a_mutant_first_runs_only_its_last_kill_where_the_tree_can(self):
        # Runner.first_try: a run of only the program and case that killed
        # the mutant on this build last time, before any whole suite
        import tempfile
        from mutants import config, kills
        from mutants.runner import Runner
        with open(os.path.join(util.FIXTURE, "mutants", "driver.toml")) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            conf = os.path.join(tmp, "driver.toml")
            with open(conf, "w") as f:
                f.write(text.replace('run_case = "CK_RUN_CASE"\n',
                                     'run_case = "CK_RUN_CASE"\nonly_programs = "RT_ONLY_PROGRAMS"\n'
                                     'only_cases = "RT_ONLY_CASES"\n')
                        + '[suites.direct]\ncheck-unit = {run = "{build}/unit/{program}",'
                        ' env = {RESULTS = "{build}/results/unit"}}\n'
                        'check-replay = {run = "{build}/replay corpus"}\n')
            project.configure(config.load(conf))
        self.addCleanup(util.configure_fixture)
        m = Mutant("m", "curated", "x", "", [], Location(1, 1, 1, 1))
        r = Runner("/nonexistent", "/nonexistent", {}, {}, 10, "/nonexistent")
        self.assertIsNone(r.first_try(m, ["check-unit"]))           # no kill known
        r.kills = {"m": kills.Kill("plain", "check-unit", "check_x", "one")}
        self.assertEqual(r.first_try(m, ["check-unit", "check-box"]),
                         ("check-unit", {"RT_ONLY_PROGRAMS": "check_x", "RT_ONLY_CASES": "one"},
                          None))
        # in a schema (where every program is built): the program itself,
        # with no make, its case named, its results where the suite's go
        r.numbers = {"m": 1}
        self.assertEqual(r.first_try(m, ["check-unit"])[2],
                         (["build/m/unit/check_x"],
                          {"RESULTS": "build/m/results/unit", "CK_RUN_CASE": "one"}))
        r.kills = {"m": kills.Kill("plain", "check-unit", "check_x", "")}
        self.assertIsNone(r.first_try(m, ["check-unit"])[2])        # no case: the suite's make
        r.kills = {"m": kills.Kill("plain", "check-box", "check_x", "one")}
        self.assertIsNone(r.first_try(m, ["check-box"])[2])         # no direct command given
        # a suite of one program (a corpus replay): its case alone, no program named
        r.kills = {"m": kills.Kill("plain", "check-replay", "", "corpus/seed-1")}
        self.assertEqual(r.first_try(m, ["check-replay"]),
                         ("check-replay", {"RT_ONLY_CASES": "corpus/seed-1"},
                          (["build/m/replay", "corpus"], {"CK_RUN_CASE": "corpus/seed-1"})))
        r.kills = {"m": kills.Kill("plain", "check-unit", "", "one")}
        self.assertIsNone(r.first_try(m, ["check-unit"])[2])        # its command needs a program
        r.numbers = {}
        r.kills = {"m": kills.Kill("plain", "check-unit", "check_x", "one")}
        self.assertIsNone(r.first_try(m, ["check-box"]))            # that suite no longer reaches it
        r.kills = {"m": kills.Kill("plain", "check-unit", "", "")}
        self.assertIsNone(r.first_try(m, ["check-unit"]))           # nothing less than the suite
        r.kills = {"m": kills.Kill("asan", "check-unit", "check_x", "one")}
        self.assertIsNone(r.first_try(m, ["check-unit"]))           # killed on another build
        r.oracle = "asan"
        self.assertEqual(r.first_try(m, ["check-unit"])[0], "check-unit")
        r.restrict = {"check-unit": {"RT_ONLY_PROGRAMS": "check_x"}}
        self.assertIsNone(r.first_try(m, ["check-unit"]))           # a witness run already is one

    def test_a_witness_holds_only_when_it_ran_what_it_was_for(self):
        from mutants import witness
        ok = {"unit:one": True, "unit:two": True}
        self.assertTrue(witness.held(0, ok, ["one"]))
        # a conformance program named as a case (a hang's): one of its checks ran
        conf = {"conformance:chan_close:exit==0": True, "conformance:chan_close:wakes==3": True}
        self.assertTrue(witness.held(0, conf, ["chan_close"]))
        self.assertTrue(witness.held(0, conf, ["chan_close:exit==0"]))
        self.assertFalse(witness.held(0, conf, ["chan_clos"]))
        self.assertFalse(witness.held(0, conf, ["other"]))
        self.assertTrue(witness.held(0, ok, []))
        self.assertFalse(witness.held(1, ok, ["one"]))           # it failed unmutated
        self.assertFalse(witness.held(0, {}, []))                # it ran nothing
        self.assertFalse(witness.held(0, ok, ["three"]))         # the case is gone
        self.assertFalse(witness.held(0, {"unit:one": True, "unit:two": False}, ["one"]))


class WeakenedOrderTest(unittest.TestCase):
    def test_a_weakened_order_passes_three_target_tce_and_tsan_kills_it(self):
        # ref_drop's acq_rel decrement weakened to acquire, release and
        # relaxed (generated, ATM): one locked xadd on x86-64, so gcc and
        # clang there see the original; aarch64's object differs, so TCE
        # runs them; the plain and ASan builds cannot tell, TSan sees the
        # write the free does not follow
        root = util.fixture_copy(self)
        p = util.run_driver(root, "--generated-only", "--only", "ref.c:ref_drop:ATM:*")
        self.assertRegex(p.stderr, r"TCE on x86-64 gcc, x86-64 clang, aarch64 gcc: 0 equivalent, "
                                   r"0 duplicates, 0 do not compile, of 3; 3 compared by their "
                                   r"function's copy in 3 compilations; 3 equal on x86-64 gcc "
                                   r"and told apart by another target")
        rep, times = report_of(root), times_of(root)
        weakened = sorted(rep)
        self.assertEqual(len(weakened), 3, rep)
        for mid in weakened:
            m = rep[mid]
            self.assertEqual(m["mutatorName"], "MemoryOrderWeakened")
            self.assertEqual(times[(mid, "plain")], ("Survived", "-"))
            self.assertEqual((m["status"], m["killedBy"]), ("Killed", ["check-count", "oracle:tsan"]),
                             m)
            self.assertIn("ThreadSanitizer: data race", m["statusReason"])
        self.assertEqual(closing(p)[:2], (3, 3))
        self.assertIn("killed by tsan 3", p.stdout)


class CostTest(unittest.TestCase):
    def test_a_run_with_no_survivor_builds_no_sanitizer(self):
        root = util.fixture_copy(self)
        p = util.run_driver(root, "--curated-only", "--only", "clamp_gone", "--only", "lock_gone")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(closing(p)[:3], (2, 2, 0))
        work = os.path.join(root, "build", "cc", "mutants")
        self.assertFalse(os.path.exists(os.path.join(work, "base-asan")))
        self.assertFalse(os.path.exists(os.path.join(work, "base-tsan")))
        self.assertNotIn("SANITIZE=", p.stderr)
        self.assertNotIn("(asan)", p.stderr)
        self.assertNotIn("(tsan)", p.stderr)

    def test_a_suite_that_fails_unmutated_under_an_oracle_judges_nothing_there(self):
        root = util.fixture_copy(self)
        test = os.path.join(root, "reference", "tests", "test_box.c")
        with open(test) as f:
            text = f.read()
        # check-box fails on the ASan build, unmutated
        with open(test, "w") as f:
            f.write(text.replace("int ok = box_take(box_new(7)) == 7;",
                                 "int ok = box_take(box_new(7)) == 7;\n"
                                 "#ifdef __SANITIZE_ADDRESS__\n    ok = 0;\n#endif"))
        p = util.run_driver(root, "--curated-only", "--only", "uaf", "--oracles", "plain,asan")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("WARNING: check-box fails unmutated on the asan build", p.stderr)
        # the warning quotes the log's line that says why (a CI log has no file)
        warning = next(line for line in p.stderr.splitlines() if "WARNING: check-box" in line)
        self.assertRegex(warning, r"; it says: .*(fail|Error|\*\*\*)")
        self.assertEqual(closing(p)[:3], (0, 1, 1))
        uaf = report_of(root)["uaf"]
        self.assertEqual(uaf["status"], "Survived")
        self.assertIn("oracles: plain; not judged by asan", uaf["statusReason"])


class CacheTest(unittest.TestCase):
    def test_a_plain_survivor_is_judged_again_when_oracles_are_added(self):
        root = util.fixture_copy(self)
        only = ("--curated-only", "--only", "uaf")
        first = util.run_driver(root, *only, "--oracles", "plain")
        self.assertEqual(closing(first)[:3], (0, 1, 1), first.stderr)
        self.assertIn("(oracles: plain)", report_of(root)["uaf"]["statusReason"])
        self.assertNotIn("SANITIZE=", first.stderr)
        # asan added: the plain verdict is kept, only asan runs
        second = util.run_driver(root, *only, "--oracles", "plain,asan")
        self.assertIn("0 to run (1 cached)", second.stderr)
        self.assertIn("asan: 1 to run", second.stderr)
        self.assertEqual(closing(second)[:3], (1, 1, 0), second.stderr)
        self.assertEqual(report_of(root)["uaf"]["killedBy"], ["check-box", "oracle:asan"])
        # every oracle: asan's kill is kept, nothing is built
        third = util.run_driver(root, *only)
        self.assertEqual(closing(third)[:3], (1, 1, 0), third.stderr)
        self.assertNotIn("SANITIZE=", third.stderr)
        self.assertNotIn("to run, limit", third.stderr.split("0 to run (1 cached)")[1])
        # plain alone again: the mutant survives that oracle, from the cache
        fourth = util.run_driver(root, *only, "--oracles", "plain")
        self.assertEqual(closing(fourth)[:3], (0, 1, 1), fourth.stderr)

    def test_an_entry_keeps_each_oracles_verdict(self):
        m = Mutant("m", "curated", "x", "", [], Location(1, 1, 1, 1))
        m.verdicts = {"plain": {"status": "Survived", "killed_by": [], "reason": "", "kind": ""},
                      "asan": {"status": "Timeout", "killed_by": ["s"], "reason": "", "kind": ""}}
        c = cache.Cache("/nonexistent/cache.json", enabled=True)
        c.put("k", m)
        # a Timeout may be the machine's load: asan runs again next time
        self.assertEqual(list(c.get("k")["verdicts"]), ["plain"])


class ClassifyTest(unittest.TestCase):
    def test_each_oracle_by_its_line(self):
        cases = {
            "==12==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020": "asan",
            "==12==ERROR: LeakSanitizer: detected memory leaks": "asan",
            "reference/src/chan.c:88:9: runtime error: signed integer overflow": "ubsan",
            "WARNING: ThreadSanitizer: data race (pid=4242)": "tsan",
            "refrt: rt_chan_send: lock discipline: unlock of a lock not held": "lock",
            "check_chan.c:12:F:cost:t:0: cost bound: rt_send took 3 allocations": "cost",
            "check_chan.c:12:F:basic:t:0: Assertion 'x == 1' failed": "functional",
        }
        for text, kind in cases.items():
            self.assertEqual(classify("make: entering\n" + text + "\n")[0], kind, text)

    def test_the_first_report_decides_and_noise_is_left_out(self):
        out = ("refrt: rt_x: lock discipline: unlock of a lock not held\n"
               "==99==ERROR: AddressSanitizer: SEGV on unknown address 0x0000\n")
        self.assertEqual(classify(out)[0], "lock")
        noise = {project.normal_line("refrt: rt_x: lock discipline: unlock of a lock not held")}
        self.assertEqual(classify(out, noise=noise)[0], "asan")
        # the same report with other addresses and pids is the same noise
        noise = {project.normal_line(l) for l in out.splitlines()}
        other = out.replace("99", "1234").replace("0x0000", "0x7fff10")
        self.assertEqual(classify(other, noise=noise), ("functional", ""))

    def test_a_failure_line_names_a_kill_too(self):
        self.assertEqual(classify("", failed=["calc: calc cost bound: 20 steps"])[0], "cost")

    def test_the_closing_line_counts_kills_by_kind(self):
        ms = []
        for kind in ("functional", "asan", "asan", "cost"):
            m = Mutant(kind, "curated", "x", "", [], Location(1, 1, 1, 1))
            m.status, m.kind = KILLED, kind
            ms.append(m)
        self.assertEqual(report.closing_line(report.counts(ms)),
                         "mutants: 4 killed of 4 (0 survived, 0 timeout, 0 equivalent, "
                         "0 no coverage); killed by functional 1, asan 2, cost 1")


if __name__ == "__main__":
    unittest.main()


class OracleOrderTest(unittest.TestCase):
    """Every survivor meets every oracle; a fault of concurrency meets TSan
    first, since ASan cannot see it and costs as much again."""

    def order(self, operator, oracles=("plain", "asan", "tsan")):
        from mutants import cli
        from mutants.model import Mutant, Location
        m = Mutant("x.c:f:OP:1", "generated", operator, "", [], Location(1, 1, 1, 2))
        return cli.oracle_order(m, list(oracles))

    def test_concurrency_meets_tsan_first(self):
        for op in ("MemoryOrderWeakened", "AtomicSplit", "ReleaseMoved"):
            self.assertEqual(self.order(op), ["tsan", "asan"])

    def test_the_others_meet_asan_first(self):
        self.assertEqual(self.order("CallDeletion"), ["asan", "tsan"])

    def test_a_catalog_entry_names_the_oracle_it_meets_first(self):
        from mutants import catalog, cli
        text = ("== racy\nseed: t\nabout: a race\noracle: tsan\nfile: a.c\n"
                "--- find\nint x;\n+++ replace\nlong x;\n")
        [entry] = catalog.parse(text)
        self.assertEqual(entry.oracle, "tsan")
        m = catalog.resolve(entry, {"a.c": "int x;\n"})
        self.assertEqual(cli.oracle_order(m, ["plain", "asan", "tsan"]), ["tsan", "asan"])
        self.assertEqual(cli.oracle_order(m, ["plain", "asan"]), ["asan"])

    def test_the_kill_map_s_oracle_goes_first(self):
        from mutants import cli, kills
        from mutants.model import Mutant, Location
        m = Mutant("x.c:f:OP:1", "generated", "ReleaseMoved", "", [], Location(1, 1, 1, 2))
        asan = {m.id: kills.Kill("asan", "check-unit", "check_x", "one")}
        self.assertEqual(cli.oracle_order(m, ["plain", "asan", "tsan"], asan), ["asan", "tsan"])
        plain = {m.id: kills.Kill("plain", "check-unit", "check_x", "one")}
        self.assertEqual(cli.oracle_order(m, ["plain", "asan", "tsan"], plain), ["tsan", "asan"])
        # an oracle the run does not have changes nothing
        self.assertEqual(cli.oracle_order(m, ["plain", "tsan"], asan), ["tsan"])

    def test_only_the_oracles_asked_for(self):
        self.assertEqual(self.order("MemoryOrderWeakened", ("plain", "asan")), ["asan"])
        self.assertEqual(self.order("CallDeletion", ("plain",)), [])


class RunCostTest(unittest.TestCase):
    """What a run takes before its mutant runs: when the coverage build
    waits, and the curated entries' compile check a schema needs."""

    def test_the_coverage_waits_when_the_kill_map_knows_most_mutants(self):
        import argparse
        from mutants import kills
        from mutants.cli import coverage_waits
        ms = [Mutant(f"m{i}", "generated", "x", "", [], Location(1, 1, 1, 1)) for i in range(4)]
        whole = argparse.Namespace(curated_only=False)
        k = kills.Kill("plain", "check-unit", "check_x", "one")
        self.assertFalse(coverage_waits(whole, ms, {}))                       # no map: first
        self.assertFalse(coverage_waits(whole, ms, {"m0": k}))                # a quarter known
        self.assertTrue(coverage_waits(whole, ms, {"m0": k, "m1": k}))        # half
        self.assertTrue(coverage_waits(argparse.Namespace(curated_only=True), ms, {}))
        self.assertFalse(coverage_waits(whole, [], {"m0": k}))                # nothing to run

    def test_a_schema_holds_the_curated_entries_that_compile_each_compiled_once(self):
        from mutants import tce
        from mutants.cli import compiling
        from mutants.model import Edit
        util.configure_fixture()
        path = "reference/src/calc.c"
        with open(os.path.join(util.FIXTURE, path)) as f:
            text = f.read()
        at = text.index("int twice")
        good = Mutant("good", "curated", "x", "", [Edit(path, at, at + 3, "int")],
                      Location(1, 1, 1, 1))
        bad = Mutant("bad", "curated", "x", "", [Edit(path, at, at + 3, "int int")],
                     Location(1, 1, 1, 1))
        gen = Mutant("gen", "generated", "x", "", [Edit(path, at, at + 3, "no such")],
                     Location(1, 1, 1, 1))
        ctx = dict(texts={path: text}, cc="cc", tree=util.FIXTURE, make_vars={}, compiles={})
        self.assertEqual([m.id for m in compiling(ctx, [good, bad, gen], 2)], ["good", "gen"])
        self.assertEqual(ctx["compiles"], {"good": True, "bad": False})
        calls = []
        real = tce.object_digest
        tce.object_digest = lambda *a, **k: calls.append(a) or real(*a, **k)
        self.addCleanup(setattr, tce, "object_digest", real)
        self.assertEqual([m.id for m in compiling(ctx, [bad, good], 2)], ["good"])
        self.assertEqual(calls, [])                     # an oracle's schema asks again: no compile
        # the kill map's kills: checked to parse and type-check only, and
        # one that does not is still left out
        ctx = dict(ctx, compiles={}, killed={"good", "bad"})
        self.assertEqual([m.id for m in compiling(ctx, [good, bad], 2)], ["good"])
        self.assertEqual(len(calls), 2)
        self.assertTrue(all("-fsyntax-only" in c[4] for c in calls))
