"""Runs mutants, in parallel, cheapest suite first, stopping at the first
kill. Two ways to build a mutant, neither in place:

- alone: a fresh copy of the unmutated tree and its build (WORK/base), the
  mutant's edits applied there, so make rebuilds only what they reach;
- in a schema (schemata.py): one copy per job holds every schematised
  mutant of the run, built once; a mutant is picked with RT_MUTANT. A
  mutant that survives there is built alone before it is called a
  survivor.

A mutant that takes longer than its limit, a suite that takes longer than
its own (SUITE_TIMES times its unmutated time plus SUITE_SLACK s), or one
none of whose processes has run for IDLE_SECONDS (a deadlock), is killed
with its whole process group and recorded as Timeout."""
import math
import os
import re
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from . import hang, project, schemata, witness
from .kills import cases_named, failed_test
from .model import COMPILE_ERROR, KILLED, SURVIVED, TIMEOUT, apply_edits

# A suite's own limit. A mutant that hangs (a lock never released, a
# waiter never woken) would otherwise wait the whole mutant's limit, which
# counts every suite: about 140 s where the suite it hangs in takes 1 s.
# Three times its unmutated time, plus 5 s for a slow moment of a loaded
# machine. A deadlock is caught sooner (IDLE_SECONDS); this limit is for a
# mutant that loops.
SUITE_TIMES, SUITE_SLACK = 3, 5
# Most hangs are deadlocks (a lock never released, a waiter never woken):
# no process of the suite uses the CPU any more. Such a suite is stopped
# after this many seconds of it, long before its limit. A test that waits
# on purpose (for a thread to fall asleep) spins or sleeps for
# milliseconds, never for a second, and a process that waits for the CPU
# is not idle. Each deadlock's Timeout pays this bound (2 s until 2 Dec
# 2026, when the gate had 56 Timeouts).
IDLE_SECONDS = 1
# A test case that loops is stopped by Check after this many seconds
# (RT_CASE_TIMEOUT, testmain.c), reported as "Test timeout expired" and
# recorded as a Timeout. The slowest case of the plain build takes 0.5 s
# with the machine at a load of 7 (Check's XML durations, 1 Dec 2026), and
# the bound is scaled by the load (load_factor), so 2 s is four times that
# at any load; a hang found sooner makes a whole run shorter (a Timeout
# costs its bound and gdb's look). 3 s until 2 Dec 2026.
CASE_SECONDS = 2
# The same bound's base on a sanitizer's build, times the suite's slow-down
# there: a case slows under ASan more than its suite may (the properties'
# heaviest case ran past 3 s times its suite's slow-down, 9 s, under a
# load of 9 and passed at 15: four false Timeouts in the second red-team
# round's first measurement, 1 Dec 2026).
ORACLE_CASE_SECONDS = 5
# A case still running this long before Check's timeout is read by gdb
# (hang.CaseWatch), so that a loop Check stops has its stacks too (half the
# bound when that is shorter).
CASE_LOOK_EARLY = 1.0
# A first try of the one case that killed a mutant last time has a bound
# of its own: CASE_TIMES its time in the unmutated run (Check's XML log),
# at least CASE_FLOOR seconds, times the load. Most cases take milliseconds, the slowest 1.3 s
# (check_budgets' spawning and joining at once, 2 Dec 2026); a loop in a
# case of milliseconds is stopped at 1 s, not at the 2 s times the load
# every case of the suite may take (33 loops in the gate's run of 2 Dec
# 2026 spent 135 job seconds at that bound).
CASE_TIMES, CASE_FLOOR = 4, 1.0


def load_factor():
    """How many times over the machine's cores are asked for now (the last
    minute's load average over the core count, at least 1). The bounds of
    a suite and of a case are its unmutated time, taken on a machine less
    busy perhaps: a shared machine at a load of 13 on 2 cores runs every
    suite about 6 times slower, and a bound that does not follow calls a
    survivor a Timeout (a mutant built alone relinks every test program
    inside its first suite's bound). The idle bound needs no scaling: a
    process that waits for the CPU is not idle. RT_MUTANTS_LOAD=N sets the
    load instead (1: no scaling)."""
    try:
        load = float(os.environ.get("RT_MUTANTS_LOAD") or os.getloadavg()[0])
    except (OSError, ValueError):
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def classify(output, failed=(), noise=()):
    """(kind, line): what a kill is put down to, from the failing suite's
    output and the failure lines it wrote: the first line naming an oracle
    (project.marker_kinds: asan, ubsan, tsan, the configuration's) that the same suite
    does not print when it passes unmutated (noise); else ("functional",
    "")."""
    noise = set(noise)
    for kind, line in project.markers(output) + project.markers("\n".join(failed)):
        if project.normal_line(line) not in noise:
            return kind, line
    return "functional", ""


# a test program named in a failure line: "reference/tests/check_chan.c:357:"
# (its name as suites.hints.program says: check_{stem} in this tree)
def program_re():
    return re.compile(rf"\b({project.program_pattern()})\.c:\d+")


# a failed test case in a failure line: "unit: <case> reference/tests/check_chan.c:357:"
def case_re():
    return re.compile(rf"(\w+) (?:\S*/)?(?:{project.program_pattern()})\.c:\d+")


def _failed_tests(tree):
    """The "fail <test> <why>" lines the suites wrote in the copy."""
    return project.failed_lines(tree)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _tail(log, since, size=8000):
    """What the log got since offset since, at most its last size bytes
    (what make said of a test killed by a signal)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(since, _size(log) - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _write(tree, path, text):
    full = os.path.join(tree, path)
    with open(full, "w") as f:
        f.write(text)
    # newer than every object built from the unmutated copy (all made
    # before now), and older than those the mutant's build makes: a second
    # past now (as until 6 Dec 2026) outdated them too, so the first suite's
    # make compiled the file again, in 85 of the 86 mutants built alone
    now = time.time()
    os.utime(full, (now, now))


def _read(tree, path):
    with open(os.path.join(tree, path)) as f:
        return f.read()


def _copy_tree(src, dest, keep_build=True):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True,
                    ignore=(shutil.ignore_patterns("cov") if keep_build else
                            (lambda d, names: ["build"] if d == src else [])))
    return dest


def schema_tree(base, root, texts, mutants):
    """Copies base to root with every mutant of mutants (single-file) put
    in as a schema (schemata.py), each picked at run time by its number.
    Returns {mutant id: number}; {} when none could be put in (root is
    then left as a plain copy)."""
    by_path = {}
    for m in mutants:
        by_path.setdefault(m.path, []).append(m)
    tree = _copy_tree(base, root)
    numbers, offset = {}, 0
    noreturn = schemata.noreturn_names(
        t for p, t in texts.items() if p.endswith((".c", ".h")))
    for path, ms in by_path.items():
        # numbers unique across files: each file starts past the last
        text, nums = schemata.instrument(texts[path], ms, first=offset + 1,
                                         noreturn=noreturn, env=project.CFG.mutant_env)
        if not nums:
            continue
        offset = max(nums.values())
        numbers.update(nums)
        _write(tree, path, text)
    return numbers


class Runner:
    def __init__(self, base, work, make_vars, order, limit, logdir, jobs=1, ledger=(),
                 per_suite=True, oracle="plain", noise=None, case_seconds=None, expected=None,
                 oracle_vars=None):
        self.base = base            # WORK/base/tree, built
        self.oracle = oracle        # the build that judges (plain or an [oracles] name)
        self.noise = noise or {}    # {suite: marker lines it prints unmutated}
        self.case_seconds = case_seconds or {}   # {suite: Check's bound a case}
        # {suite: {test case: seconds}}: each case's time in the unmutated
        # run, the bound of a first try of that case alone (case_bound)
        self.case_times = {}
        # {suite: {test: passed}}: the unmutated run's results, for suites
        # that pass by their results (suites.passes = "results")
        self.expected = expected or {}
        self.oracle_vars = oracle_vars or {}     # what the oracle's build sets
        # ids mutants/equivalent lists: one that survives in the schema is
        # what its line says, and is not built alone again to confirm it
        self.ledger = set(ledger)
        self.work = work            # where the copies go
        self.make_vars = make_vars
        # The schema build holds every mutant at once. Each mutant's own
        # warnings were judged alone (tce.py compiles it with -Werror);
        # together they trip warnings no mutant has alone, and a compiler
        # other than the one TCE asked (clang builds the libFuzzer suite)
        # warns of things in a mutant (a variable left unset) that would
        # fail that suite's build and pass for a kill. So the schema is
        # built, and its suites run, with warnings not fatal.
        self.schema_vars = project.lenient(make_vars)
        self.order = order          # {suite: seconds in the unmutated run}
        self.limit = limit          # seconds a mutant may take in all
        self.per_suite = per_suite  # and a suite, from its own time (suite_limit)
        self.logdir = logdir
        self.jobs = max(1, jobs)
        self.stopping = threading.Event()
        self.schema_slots = []      # built copies holding the schema, one a job
        self.numbers = {}           # mutant id -> its number in the schema
        self.history = {}           # place -> {suite: kills}, see learn()
        self.history_lock = threading.Lock()
        self.program_kills = {}     # place -> {test program: kills}
        self.case_kills = {}        # place -> {test case: kills}
        # {mutant id: kills.Kill}: what gave each mutant its verdict in an
        # earlier run (the kill map), tried first
        self.kills = {}
        # {suite: hints}: a witness run's (witness.py), which runs only
        # the programs and cases that killed last time
        self.restrict = {}
        # whether a survivor of the schema is built alone to confirm it (a
        # witness run's survivor is judged whole next, which does)
        self.confirm_alone = True
        # {path: (original text, schema text)} -> None when the compiler
        # shows the schema with no mutant picked is the original, else why
        # not (cli.schema_proof); None: every suite checks the schema
        self.prove_schema = None
        self.schema_proven = None   # how many files the proof covered

    # ---- which suite first ------------------------------------------------

    @staticmethod
    def _places(mutant, everywhere=False):
        """Where a mutant sits, finest first: its function (generated ids
        are <file>:<function>:...), then its file; with everywhere, then
        the whole run ("*")."""
        parts = mutant.id.split(":")
        fine = [f"{mutant.path}:{parts[1]}"] if len(parts) >= 4 else []
        return fine + [mutant.path] + (["*"] if everywhere else [])

    def learn(self, mutant):
        """Records which suite killed a mutant (cached ones too), and which
        test programs (named in the failures its reason quotes), so that
        the next mutants of the same function try them early."""
        if mutant.status != KILLED or not mutant.killed_by:
            return
        with self.history_lock:
            for place in self._places(mutant, everywhere=True):
                kills = self.history.setdefault(place, {})
                for s in mutant.killed_by:
                    kills[s] = kills.get(s, 0) + 1
                programs = self.program_kills.setdefault(place, {})
                for p in dict.fromkeys(program_re().findall(mutant.status_reason)):
                    programs[p] = programs.get(p, 0) + 1
                cases = self.case_kills.setdefault(place, {})
                for c in dict.fromkeys(cases_named(case_re(), mutant.status_reason)):
                    cases[c] = cases.get(c, 0) + 1

    def first_programs(self, mutant):
        """The test programs to run first in a suite (RT_FIRST_PROGRAMS):
        those that killed this function's (or else this file's) mutants,
        most kills first; with none yet, the program named after the file
        (check_shared for shared.c)."""
        with self.history_lock:
            kills = next((self.program_kills[p] for p in self._places(mutant)
                          if self.program_kills.get(p)), {})
        stem = project.program_named(mutant.path)
        learnt = sorted(kills, key=lambda p: (-kills[p], p)) or ([stem] if stem else [])
        known = self.kills.get(mutant.id)
        if known and known.program:
            return [known.program] + [p for p in learnt if p != known.program]
        return learnt

    def first_cases(self, mutant, most=8):
        """The test cases to run first in a program (RT_FIRST_CASES): at
        most the `most` that killed this function's (or else this file's)
        mutants most often. A test program runs its cases one at a time
        until one fails, so a kill by a case late in a long program costs
        every case before it unless it is named here."""
        with self.history_lock:
            kills = next((self.case_kills[p] for p in self._places(mutant)
                          if self.case_kills.get(p)), {})
        learnt = sorted(kills, key=lambda c: (-kills[c], c))
        known = self.kills.get(mutant.id)
        if known and known.case:
            learnt = [known.case] + [c for c in learnt if c != known.case]
        return learnt[:most]

    def order_of(self, mutant, suites):
        """The suites in the order expected to kill soonest: by the seconds
        a suite takes over its chance to kill, the chance estimated from
        the kills among this function's (or else this file's) mutants so
        far, (kills + 1) / (mutants + 2); with none yet in its file, from
        the kills of the whole run so far (the suite that kills most mutants
        anywhere is a better first guess than the cheapest), and with no
        history at all, cheapest first. A mutant killed only by a slow
        suite then costs its cheap suites' time once per function, not
        once per mutant."""
        with self.history_lock:
            kills = next((self.history[p] for p in self._places(mutant, everywhere=True)
                          if p in self.history), {})
            seen = sum(kills.values())

        def expected(s):
            return max(self.order.get(s, 0), 0.01) * (seen + 2) / (kills.get(s, 0) + 1)
        learnt = sorted(suites, key=lambda s: (expected(s), self.order.get(s, 0), s))
        known = self.kills.get(mutant.id)
        if known and known.suite in suites:
            # the kill map's suite first: it gave this mutant its verdict last time
            return [known.suite] + [s for s in learnt if s != known.suite]
        return learnt

    def first_try(self, mutant, suites):
        """(suite, hints) of a run of only what killed this mutant on this
        build last time (the kill map's program and case), before any
        whole suite; None when the map names neither or the
        configuration has no such hints. The whole suite passed
        unmutated, so a part of it that fails is a kill; one that passes
        costs a program's start, and the whole suites then run as ever.
        A mutant built alone then relinks one test program, not all of
        them, before its kill (15 s a catalog entry in make check's run
        of 2 Dec 2026)."""
        known = self.kills.get(mutant.id)
        if (not known or known.oracle != self.oracle or known.suite not in suites
                or known.suite in self.restrict or known.suite in self.expected):
            return None
        only = witness.hints([known.program] if known.program else [],
                           [known.case] if known.case else [])
        if not only:
            return None
        # One case of one program, in a schema's copy where every program is
        # built: run with no make (suites.direct), as the suite's recipe
        # runs it. make's own start and recipe cost 0.11 s of the 0.14 s of
        # such a run (2 Dec 2026), and most kills are such a run.
        direct = None
        if known.case and project.hint("run_case") and mutant.id in self.numbers:
            direct = project.direct_command(known.suite, known.program)
            if direct:
                direct = (direct[0], dict(direct[1], **project.hints(run_case=known.case)))
        return known.suite, only, direct

    def case_bound(self, suite, case, load=1.0):
        """Check's bound on a case in a run of this suite (seconds, maybe
        fractional): for a first try of one case whose unmutated time is
        known, CASE_TIMES that time and at least CASE_FLOOR, times the
        load (above the suite's bound for a slow case: the 1.3 s case
        had 2 s, and a mutant that slowed it past them was a Timeout); the
        suite's bound a case otherwise."""
        own = self.case_times.get(suite, {}).get(case) if case else None
        if own is None:
            return math.ceil(self.case_seconds.get(suite, CASE_SECONDS) * load)
        return round(max(CASE_FLOOR, CASE_TIMES * own) * load, 1)

    def slow_cases(self, suite, case_limit, load=1.0):
        """{case: seconds} of a whole run of suite: the cases whose own time
        in the unmutated run asks more than the suite's bound a case
        (case_limit), CASE_TIMES that time times the load, as a first
        try's. A case that takes seconds unmutated (a value past 4 GiB is
        zeroed whole) otherwise ran past the suite's 2 s times the load on
        every mutant that reached it: a Timeout that was no verdict, four
        of the 38 faults of the seventeenth red-team round (7 Dec 2026)."""
        out = {}
        for case, own in self.case_times.get(suite, {}).items():
            bound = math.ceil(max(CASE_FLOOR, CASE_TIMES * own) * load)
            if bound > case_limit:
                out[case] = bound
        return out

    def suite_limit(self, suite, load=1.0):
        """Seconds a suite may run for one mutant, its own time scaled by the
        machine's load (load_factor)."""
        if not self.per_suite or suite not in self.order:
            return self.limit * load
        return min(self.limit * load, SUITE_TIMES * self.order[suite] * load + SUITE_SLACK)

    def _log(self, mutant):
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in mutant.id)
        os.makedirs(os.path.join(self.logdir, "mutants"), exist_ok=True)
        log = os.path.join(self.logdir, "mutants", f"{safe}.log")
        if os.path.exists(log):
            os.unlink(log)
        return log

    def _on(self):
        """How a reason names the build, past the plain one."""
        if self.oracle == "plain":
            return ""
        return (f" on the {self.oracle} build ("
                + " ".join(f"{k}={v}" for k, v in self.oracle_vars.items()) + ")")

    def _suites(self, mutant, suites, tree, log, start, env=None, make_vars=None):
        """Runs the suites cheapest first; sets the status from the first
        that fails, a kill's kind from what the suite printed, and a hang's
        class from its stacks (hang.py)."""
        deadline = start + self.limit * load_factor()
        # one failing test kills: the suites stop at the first (RT_FAIL_FAST)
        env = dict(env or {}, **project.hints(
            fail_fast="1", case_timeout=str(CASE_SECONDS),
            first_programs=" ".join(self.first_programs(mutant)),
            first_cases=" ".join(self.first_cases(mutant)) or None))
        mutant.build, mutant.kind = self.oracle, ""
        plan = [(s, None, None) for s in self.order_of(mutant, suites)]
        first = self.first_try(mutant, suites)
        if first:
            plan.insert(0, first)
        for suite, only, direct in plan:
            if self.stopping.is_set():
                raise KeyboardInterrupt
            project.clear_results(tree)
            if direct and not (tree in self.schema_slots and os.access(
                    os.path.join(tree, direct[0][0]), os.X_OK)):
                direct = None           # built alone: make relinks the program first
            mutant.tried.append(suite if only is None else f"{suite} (its last kill"
                                + ("; its program alone)" if direct else ")"))
            left = deadline - time.monotonic()
            load = load_factor()
            own = self.suite_limit(suite, load)
            known = self.kills.get(mutant.id) if only is not None else None
            case_limit = self.case_bound(suite, known.case if known else None, load)
            slow = self.slow_cases(suite, case_limit, load) if only is None else {}
            env.update(project.hints(case_timeout=str(case_limit), expected=project.expected_file(
                self.work, suite, self.expected.get(suite))))
            if project.hint("case_timeouts"):
                env.pop(project.hint("case_timeouts"), None)
                env.update(project.hints(case_timeouts=" ".join(
                    f"{c}={s}" for c, s in sorted(slow.items())) or None))
            for name in filter(None, (project.hint("only_programs"), project.hint("only_cases"))):
                env.pop(name, None)
            env.update(self.restrict.get(suite, {}) if only is None else only)
            if suite in self.expected and not project.hint("expected"):
                # stopped at its first failure, a suite that passes by its
                # results would differ from them: it runs whole
                env.pop(project.hint("fail_fast"), None)
            run = dict(make_vars=make_vars or self.make_vars, env=env, log=log, tree=tree)
            argv = None
            if direct:
                argv = direct[0]
                run["env"] = dict(env, **direct[1])
                if project.results_dir(tree):
                    os.makedirs(project.results_dir(tree), exist_ok=True)
            looks, mark = [], _size(log)
            at, since = project.size_of(log), time.time()
            cases = hang.CaseWatch(tree, case_limit - min(CASE_LOOK_EARLY, case_limit / 2))
            again_note = ""
            status, _ = project.run_make(tree, project.BUILD_IN_COPY, run["make_vars"], suite,
                                         log, timeout=max(1, min(left, own)), env=run["env"],
                                         idle=IDLE_SECONDS, on_hang=self._looker(tree, looks),
                                         watch=cases, cores=self.cores, argv=argv)
            if self.stopping.is_set():
                raise KeyboardInterrupt
            looked = self._record_look(looks, log)
            if status in (project.IDLE, None):
                why = (f"{suite} hung: none of its processes ran for {IDLE_SECONDS} s"
                       if status == project.IDLE
                       else f"{suite} ran past its limit of {own:.0f} s" if own < left
                       else f"{suite} ran past the mutant's limit of {self.limit:.0f} s")
                if looked and looked.cls == hang.UNCLASSIFIED and looked.stacks_read:
                    # a hang gdb cannot classify: once more, with a longer limit
                    status, again, cases = self._rerun(suite, run, own)
                    case_limit = hang.RERUN_TIMES * case_limit
                    again_note = f" (run again after an unclassified hang: {why})"
                    if status in (project.IDLE, None):
                        mutant.status, mutant.killed_by = TIMEOUT, [suite]
                        mutant.status_reason = (f"{why}, and again with {hang.RERUN_TIMES} "
                                                f"times the limit; " + (again.reason() if again
                                                                        else looked.reason()))
                        return mutant
                else:
                    mutant.status, mutant.killed_by = TIMEOUT, [suite]
                    mutant.status_reason = why + (f"; {looked.reason()}" if looked else "")
                    return mutant
            changes = None
            if suite in self.expected and status is not None and status != project.IDLE:
                status, changes = project.compare(tree, self.expected[suite])
            if status != 0:
                failed = _failed_tests(tree) if changes is None else changes
                mutant.failed = list(failed[:3])
                looped = failed and all("Test timeout expired" in f for f in failed)
                mutant.status, mutant.killed_by = (TIMEOUT if looped else KILLED), [suite]
                bound = slow.get(failed_test(failed), case_limit) if looped else case_limit
                mutant.status_reason = (
                    f"{suite}: a test case ran past {bound} s: {failed[0]}" if looped
                    else f"killed by {suite}: " + "; ".join(failed[:3]) if failed
                    else f"killed by {suite} (exit {status})") + again_note
                if mutant.status == KILLED:
                    said = (project.read_from(log, at) + "\n"
                            + project.reports_since(tree, since))
                    kind, line = classify(said, failed, self.noise.get(suite, ()))
                    mutant.kind = kind
                    said = [line[:200]] if line else []
                    mutant.status_reason = (
                        f"{kind}: killed by {suite}{self._on()}: " + "; ".join(said + failed[:3])
                        if said or failed
                        else f"{kind}: killed by {suite}{self._on()} (exit {status})") + again_note
                case = self._record_look(cases.looks, log) if looped else None
                if case:
                    mutant.status_reason += "; " + case.reason()
                if not looped and self.cores and hang.signalled(failed, _tail(log, mark)):
                    # the core this run wrote (none: a process that writes
                    # none, an expected death's or a conformance program's,
                    # which prints its own stack)
                    stack = self._first_core(tree, since, log)
                    if stack:
                        mutant.status_reason += "; " + stack
                elif self.cores:
                    hang.drop_cores(tree, since)
                return mutant
        mutant.status = SURVIVED
        mutant.status_reason = f"every suite that reaches it passed: {', '.join(suites)}"
        return mutant

    # ---- hangs and crashes, read by gdb (hang.py) ----------------------------

    @staticmethod
    def _looker(tree, looks):
        """The on_hang of run_make: reads the hung test programs of tree."""
        return lambda pids: looks.append(hang.look(pids, tree))

    @staticmethod
    def _record_look(looks, log):
        """The last look at a hang, its every frame written to the log."""
        if not looks:
            return None
        with open(log, "a") as f:
            f.write(looks[-1].full())
        return looks[-1]

    def _rerun(self, suite, run, own):
        """Runs a suite whose hang no stack classifies once more, with
        RERUN_TIMES its limit, its idle bound and Check's case timeout:
        (status, the look at a hang, the CaseWatch)."""
        looks = []
        with open(run["log"], "a") as f:
            f.write(f"{suite}: an unclassified hang: once more, {hang.RERUN_TIMES} times "
                    f"the limit\n")
        project.clear_results(run["tree"])
        case = hang.RERUN_TIMES * CASE_SECONDS
        cases = hang.CaseWatch(run["tree"], case - CASE_LOOK_EARLY)
        status, _ = project.run_make(run["tree"], project.BUILD_IN_COPY, run["make_vars"], suite,
                                     run["log"], timeout=max(1, hang.RERUN_TIMES * own),
                                     env=dict(run["env"], **project.hints(case_timeout=str(case))),
                                     idle=hang.RERUN_TIMES * IDLE_SECONDS,
                                     on_hang=self._looker(run["tree"], looks), watch=cases)
        if self.stopping.is_set():
            raise KeyboardInterrupt
        return status, self._record_look(looks, run["log"]), cases

    @property
    def cores(self):
        """Whether the suites write core files as they run: every test but
        an expected death's (testutil.c's run_child, a conformance program
        that declares its signal), so a crash's stack is read from the run
        that killed the mutant, with no second run."""
        return hang.CRASH_STACKS and hang.stacks.cores_readable(hang.WHO)

    @staticmethod
    def _first_core(tree, since, log):
        start = time.monotonic()
        stack = hang.crash(tree, since)
        if stack:
            with open(log, "a") as f:
                f.write(f"crash stack: {stack}, from the run's own core, "
                        f"in {time.monotonic() - start:.2f} s\n")
        return stack

    def _named(self, mutant):
        """A Timeout on an oracle's build says which build (and the bound
        of a case there)."""
        if mutant.status == TIMEOUT and self.oracle != "plain":
            case = self.case_seconds.get(mutant.killed_by[0] if mutant.killed_by else "",
                                         CASE_SECONDS)
            mutant.status_reason = mutant.status_reason.replace(
                f"a test case ran past {CASE_SECONDS} s", f"a test case ran past {case} s", 1)
            mutant.status_reason += self._on()
        return mutant

    # ---- a mutant alone ---------------------------------------------------

    def run_alone(self, mutant, suites, slot):
        """Builds one mutant in its own copy and tests it."""
        start = time.monotonic()
        tree = _copy_tree(self.base, os.path.join(self.work, f"alone{slot}"))
        log = self._log(mutant)
        try:
            for path in {e.path for e in mutant.edits}:
                with open(os.path.join(tree, path)) as f:
                    text = f.read()
                _write(tree, path, apply_edits(text, [e for e in mutant.edits if e.path == path]))
            status, _ = project.run_make(tree, project.BUILD_IN_COPY, self.make_vars,
                                         project.BUILD_STEP, log, timeout=self.limit)
            if status is None:
                mutant.status, mutant.status_reason = TIMEOUT, "building took past the limit"
                return mutant
            if status != 0:
                mutant.status, mutant.status_reason = COMPILE_ERROR, f"does not build; see {log}"
                return mutant
            return self._named(self._suites(mutant, suites, tree, log, start))
        finally:
            mutant.seconds = time.monotonic() - start
            shutil.rmtree(tree, ignore_errors=True)

    # ---- mutants in a schema ----------------------------------------------

    def build_schema(self, texts, mutants, suites):
        """Builds the schema of the mutants (generated, single-file) in one
        copy, checks the copy passes every suite with no mutant picked, and
        makes a copy of it a job. Returns the ids that are in the schema;
        on any failure, none (they are then built alone)."""
        root = os.path.join(self.work, "schema")
        log = os.path.join(self.logdir, "schema.log")
        if os.path.exists(log):
            os.unlink(log)
        numbers = schema_tree(self.base, root, texts, mutants)
        if not numbers:
            return set()
        tree = root
        env = project.schema_env("")
        ok = project.run_make(tree, project.BUILD_IN_COPY, self.schema_vars, project.BUILD_STEP,
                              log, timeout=self.limit * 10, jobs=self.jobs)[0] == 0
        if ok:
            # every program linked with the schema before the copies are
            # made (suites.programs): a first try runs its program alone
            # from the first mutant on, and no copy links them all again
            # (if they do not build, each copy builds them at a suite's run)
            project.build_programs(tree, self.schema_vars, suites, log, jobs=self.jobs,
                                   timeout=self.limit * 10)
        # With no mutant picked the schema must be the original. Where the
        # compiler shows it (prove_schema: the same object code, the pick a
        # constant 0), every suite's run of it would only repeat the
        # unmutated run; else that run is what checks it.
        self.schema_proven = None
        if ok and self.prove_schema is not None:
            paths = sorted({m.path for m in mutants if m.id in numbers})
            pairs = {p: (texts[p], _read(root, p)) for p in paths}
            why = self.prove_schema(pairs)
            with open(log, "a") as f:
                f.write(f"schema proof: {why or 'the object code of the original'}\n")
            if why is None:
                self.schema_proven = len(paths)
                suites = []
        for s in suites:
            if not ok:
                break
            project.clear_results(tree)
            status = project.run_make(tree, project.BUILD_IN_COPY, self.schema_vars, s, log,
                                      timeout=self.limit * 10, env=env, jobs=self.jobs)[0]
            if s in self.expected and status is not None and status != project.IDLE:
                status = project.compare(tree, self.expected[s])[0]
            ok = status == 0
        if not ok:
            shutil.rmtree(root, ignore_errors=True)
            return set()
        return self.adopt_schema(root, numbers)

    def adopt_schema(self, tree, numbers):
        """Takes tree, a schema's copy built and checked (schema_tree's
        numbers), as the schema of this run: a copy of it a job, tree
        itself removed. Returns the ids in it."""
        self.schema_slots = [_copy_tree(tree, f"{tree}{i}") for i in range(self.jobs)]
        shutil.rmtree(tree, ignore_errors=True)
        self.numbers = dict(numbers)
        return set(numbers)

    def run_in_schema(self, mutant, suites, slot):
        start = time.monotonic()
        log = self._log(mutant)
        known = self.kills.get(mutant.id)
        try:
            if known and known.where == "alone" and known.oracle == self.oracle \
                    and self.confirm_alone:
                # passed every suite in the schema last time and was killed
                # built alone: built alone at once (kills.Kill.where)
                mutant.alone_after_schema = True
                return self.run_alone(mutant, suites, slot)
            self._named(self._suites(mutant, suites, self.schema_slots[slot], log, start,
                                     env=project.schema_env(str(self.numbers[mutant.id])),
                                     make_vars=self.schema_vars))
            if mutant.status == SURVIVED and mutant.id not in self.ledger and self.confirm_alone:
                # a survivor must survive on its own, not only in the schema
                mutant.alone_after_schema = True
                return self.run_alone(mutant, suites, slot)
            return mutant
        finally:
            mutant.seconds = time.monotonic() - start

    def drop_schema(self):
        for s in self.schema_slots:
            shutil.rmtree(s, ignore_errors=True)
        self.schema_slots = []

    # ---- all of them --------------------------------------------------------

    def run_all(self, items, on_done):
        """items: [(mutant, suites)]; calls on_done(mutant) as each ends."""
        free = list(range(self.jobs))
        lock = threading.Lock()

        def task(item):
            mutant, suites = item
            with lock:
                slot = free.pop()
            try:
                if mutant.id in self.numbers and self.schema_slots:
                    return self.run_in_schema(mutant, suites, slot)
                return self.run_alone(mutant, suites, slot)
            finally:
                with lock:
                    free.append(slot)

        with ThreadPoolExecutor(self.jobs) as pool:
            futures = [pool.submit(task, j) for j in items]
            try:
                for f in as_completed(futures):
                    on_done(f.result())
            except BaseException:
                self.stopping.set()
                for f in futures:
                    f.cancel()
                project.kill_all()
                raise

    def naive(self, sample, suites):
        """Seconds each mutant of the sample takes the naive way (a fresh
        copy with no build, everything built, every suite run, the whole
        under the mutant's limit: a naive driver has no other bound on a
        hang). Until 2 Dec 2026 each suite had that limit of its own, and
        one sampled mutant that hung in five suites took 667 s of a gate."""
        times = []
        for m in sample:
            dest = _copy_tree(self.base, os.path.join(self.work, "naive"), keep_build=False)
            start = time.monotonic()
            try:
                for path in {e.path for e in m.edits}:
                    with open(os.path.join(dest, path)) as f:
                        text = f.read()
                    _write(dest, path, apply_edits(text, [e for e in m.edits if e.path == path]))
                log = os.path.join(self.logdir, "naive.log")
                for target in [project.BUILD_STEP] + list(suites):
                    left = start + self.limit - time.monotonic()
                    if left <= 0:
                        break
                    project.run_make(dest, project.BUILD_IN_COPY, self.make_vars, target, log,
                                     timeout=left)
            finally:
                times.append(time.monotonic() - start)
                shutil.rmtree(dest, ignore_errors=True)
        return times
