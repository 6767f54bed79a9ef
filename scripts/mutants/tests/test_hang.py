"""Hangs read by gdb before the kill, crashes explained (hang.py,
scripts/stacks.py): on the fixture project, with mutants added to a copy's
catalog that deadlock, loop, sleep, crash."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from mutants import hang, runner
from mutants.tests import util
from mutants.tests.test_driver import closing, report_of

import stacks

HAVE_GDB = shutil.which("gdb") is not None

# Appended to the copy's catalog: each a whole mutant of calc.c.
MUTANTS = {
    "deadlock": """
== deadlock
seed: test
about: clamp joins a thread that waits for the lock clamp holds
file: reference/src/calc.c
--- find
#include "calc.h"
+++ replace
#include "calc.h"
#include <pthread.h>
static pthread_mutex_t calc_lock = PTHREAD_MUTEX_INITIALIZER;
static void *calc_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&calc_lock);
    return 0;
}
--- find
int clamp(int x)
{
+++ replace
int clamp(int x)
{
    pthread_t t;
    pthread_mutex_lock(&calc_lock);
    pthread_create(&t, 0, calc_worker, 0);
    pthread_join(t, 0);
""",
    "crash": """
== crash
seed: test
about: clamp writes through a null pointer
file: reference/src/calc.c
--- find
int clamp(int x)
{
+++ replace
int clamp(int x)
{
    *(volatile int *)0 = x;
""",
    "sleeps": """
== sleeps
seed: test
about: clamp sleeps (no lock, no loop: gdb cannot classify it)
file: reference/src/calc.c
--- find
#include "calc.h"
+++ replace
#define _DEFAULT_SOURCE
#include "calc.h"
#include <unistd.h>
--- find
int clamp(int x)
{
+++ replace
int clamp(int x)
{
    sleep(1000);
""",
    "sleeps_once": """
== sleeps_once
seed: test
about: clamp sleeps the first time only, then answers wrong
file: reference/src/calc.c
--- find
#include "calc.h"
+++ replace
#define _DEFAULT_SOURCE
#include "calc.h"
#include <fcntl.h>
#include <unistd.h>
--- find
int clamp(int x)
{
+++ replace
int clamp(int x)
{
    if (access("slept-once", F_OK) != 0) {
        close(open("slept-once", O_CREAT | O_WRONLY, 0600));
        sleep(1000);
    }
    return -x;
""",
    "case_loops": """
== case_loops
seed: test
about: clamp forks a case that spins; the parent stops it at the case timeout as Check does
file: reference/src/calc.c
--- find
#include "calc.h"
+++ replace
#define _DEFAULT_SOURCE
#include "calc.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
--- find
int clamp(int x)
{
+++ replace
int clamp(int x)
{
    pid_t pid = fork();
    if (pid == 0)
        for (volatile int spin = 1; spin;)
            x++;
    for (int i = 0; i < 100 && waitpid(pid, 0, WNOHANG) == 0; i++)
        usleep(50000);
    kill(pid, SIGKILL);
    waitpid(pid, 0, 0);
    FILE *f = fopen(getenv("RESULTS"), "a");
    fprintf(f, "fail calc calc.c:1: (after this point) Test timeout expired\\n");
    fclose(f);
    exit(1);
""",
}


def with_mutants(test, *names):
    root = util.fixture_copy(test)
    with open(os.path.join(root, "mutants", "calc.mut"), "a") as f:
        for n in names:
            f.write(MUTANTS[n])
    return root


def run(root, *args, env=None):
    e = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(util.driver_cmd(root, *args), capture_output=True, text=True,
                          timeout=180, env=e)


@unittest.skipUnless(HAVE_GDB, "gdb is not installed")
class HangTest(unittest.TestCase):
    def test_a_deadlock_and_a_loop_are_told_apart(self):
        root = with_mutants(self, "deadlock")
        p = run(root, "--curated-only", "--only", "deadlock", "--only", "hang",
                "--limit", "8", "--make-var", "LDFLAGS=-pthread")
        self.assertEqual(closing(p), (0, 2, 0, 2, 0, 0), p.stderr)
        rep = report_of(root)
        dead, loop = rep["deadlock"]["statusReason"], rep["hang"]["statusReason"]
        # the deadlock: the idle rule, both threads in the lock or the join
        self.assertIn("hang class: deadlock:", dead)
        self.assertIn("none of its processes ran", dead)
        self.assertRegex(dead, r"lll_lock_wait|pthread_mutex_lock")
        self.assertRegex(dead, r"clockjoin|pthread_join")
        self.assertIn("calc_worker calc.c:", dead)
        # the loop: the limit, one thread running in clamp
        self.assertIn("hang class: infinite loop:", loop)
        self.assertRegex(loop, r"running \(R\): clamp calc.c:\d+ < main test_calc.c")
        self.assertIn("mutants: timeouts by hang class: deadlock 1, infinite loop 1", p.stdout)
        # every frame in the mutant's log
        with open(os.path.join(root, "build", "cc", "mutants", "logs", "mutants",
                               "deadlock.log")) as f:
            self.assertIn("hang class: deadlock", f.read())
        self.assertEqual(util.processes_under(root), [])

    def test_a_case_check_stops_is_read_before(self):
        root = with_mutants(self, "case_loops")
        p = run(root, "--curated-only", "--only", "case_loops", "--limit", "30")
        self.assertEqual(closing(p), (0, 1, 0, 1, 0, 0), p.stderr)
        why = report_of(root)["case_loops"]["statusReason"]
        # Check's bound, the load's multiple of CASE_SECONDS (runner.load_factor)
        self.assertRegex(why, r"a test case ran past \d+ s")
        self.assertIn("hang class: infinite loop", why)
        self.assertRegex(why, r"running \(R\): clamp calc.c:\d+ < main test_calc.c")

    def test_a_crash_names_its_faulting_frame(self):
        root = with_mutants(self, "crash")
        p = run(root, "--curated-only", "--only", "crash")
        self.assertEqual(closing(p), (1, 1, 0, 0, 0, 0), p.stderr)
        why = report_of(root)["crash"]["statusReason"]
        self.assertRegex(why, r"crash stack \(SIGSEGV in test_calc\): clamp calc.c:\d+ < main "
                              r"test_calc.c:\d+")
        # read from the core of the run that killed it: the suite ran once
        with open(os.path.join(root, "build", "cc", "mutants", "logs", "mutants",
                               "crash.log")) as f:
            log = f.read()
        self.assertIn("from the run's own core", log)
        runs = [l for l in log.splitlines() if l.startswith("$ ") and " check-calc" in l]
        self.assertEqual(len(runs), 1, log)

    def test_a_crash_s_stack_is_the_same_read_by_either_reader(self):
        # eu-stack (elfutils) reads the core where it is installed, gdb
        # where it is not, and either alone is enough
        whys = {}
        for reader, env in (("eu-stack", {"RT_GDB": "/nonexistent/gdb"}),
                            ("gdb", {"RT_EU_STACK": "/nonexistent/eu-stack"})):
            if reader == "eu-stack" and not shutil.which("eu-stack"):
                continue            # scripts/deps installs elfutils
            root = with_mutants(self, "crash")
            p = run(root, "--curated-only", "--only", "crash", env=env)
            self.assertEqual(closing(p), (1, 1, 0, 0, 0, 0), p.stderr)
            whys[reader] = report_of(root)["crash"]["statusReason"]
            self.assertRegex(whys[reader], r"crash stack \(SIGSEGV in test_calc\): clamp "
                                           r"calc.c:\d+ < main test_calc.c:\d+", reader)
        if len(whys) == 2:
            self.assertEqual(whys["eu-stack"], whys["gdb"])

    def test_an_unclassified_hang_runs_again_and_counts_if_it_hangs_again(self):
        root = with_mutants(self, "sleeps", "sleeps_once")
        p = run(root, "--curated-only", "--only", "sleeps*", "--limit", "60")
        rep = report_of(root)
        # asleep in nanosleep: unclassified; again at three times the idle
        # bound: a hang again, a Timeout
        self.assertEqual(rep["sleeps"]["status"], "Timeout", p.stderr)
        self.assertIn("and again with 3 times the limit", rep["sleeps"]["statusReason"])
        self.assertIn("hang class: unclassified", rep["sleeps"]["statusReason"])
        self.assertRegex(rep["sleeps"]["statusReason"], r"nanosleep|sleep")
        # the second run ends: what it then is, here a kill
        self.assertEqual(rep["sleeps_once"]["status"], "Killed", rep["sleeps_once"])
        self.assertIn("mutants: timeouts by hang class: unclassified 1", p.stdout)

    def test_gdb_missing_is_said_once(self):
        root = with_mutants(self, "deadlock")
        p = run(root, "--curated-only", "--only", "deadlock", "--only", "hang", "--only",
                "clamp_gone", "--limit", "8", "--make-var", "LDFLAGS=-pthread",
                env={"RT_GDB": "/nonexistent/gdb", "RT_EU_STACK": "/nonexistent/eu-stack"})
        said = [l for l in p.stderr.splitlines() if "gdb is missing" in l]
        self.assertEqual(said, ["mutants: gdb is missing (/nonexistent/gdb): hangs and "
                                "crashes are reported without stacks"], p.stderr)
        self.assertEqual(closing(p), (1, 3, 0, 2, 0, 0), p.stderr)
        # still recorded, and not run again: no stack would tell more
        rep = report_of(root)
        self.assertIn("hang class: unclassified", rep["deadlock"]["statusReason"])
        self.assertNotIn("again", rep["deadlock"]["statusReason"])


class ClassifyTest(unittest.TestCase):
    """The rule on made-up threads (no gdb needed)."""

    def threads(self, *specs):
        out = []
        for i, (running, funcs) in enumerate(specs):
            frames = [stacks.Frame(f, "reference/src/chan.c" if f.startswith("rt_") else
                                   "./nptl/x.c", 1) for f in funcs]
            out.append(hang.Thread(100 + i, "R" if running else "S", running, frames))
        return [hang.Process(100, "check_chan", out)]

    def test_classes(self):
        lock = ["__futex_abstimed_wait_common", "pthread_cond_wait", "rt_chan_recv"]
        mutex = ["__lll_lock_wait", "pthread_mutex_lock", "rt_chan_send"]
        spin = ["rt_chan_send"]
        harness = ["__GI___wait4", "srunner_run"]
        sleep = ["clock_nanosleep", "rt_sleep"]
        c = lambda *s: hang.classify(self.threads(*s))[0]
        self.assertEqual(c((False, lock), (False, mutex), (False, harness)), hang.DEADLOCK)
        self.assertEqual(c((True, spin), (False, mutex)), hang.LIVELOCK)
        self.assertEqual(c((True, spin), (False, harness)), hang.LOOP)
        self.assertEqual(c((False, sleep), (False, lock)), hang.UNCLASSIFIED)
        self.assertEqual(c((True, ["memcpy"]),), hang.UNCLASSIFIED)
        self.assertEqual(c((False, harness),), hang.UNCLASSIFIED)
        # a death test's parent reads its child's pipe: a harness too
        reader = [hang.Thread(1, "S", False, [stacks.Frame("__GI___libc_read", "read.c", 26),
                                               stacks.Frame("run_child", "testutil.c", 38)])]
        child = self.threads((False, mutex))[0]
        self.assertEqual(hang.classify([hang.Process(1, "check_chan", reader, harness=True),
                                        child]), (hang.DEADLOCK, hang.classify([child])[1]))
        self.assertEqual(hang.classify([hang.Process(1, "check_chan", reader), child])[0],
                         hang.UNCLASSIFIED)
        self.assertEqual(c((False, []), (False, [])), hang.UNCLASSIFIED)

    def test_a_failure_by_a_signal(self):
        self.assertTrue(hang.signalled(["unit: t reference/tests/check_chan.c:9: (after this "
                                        "point) Received signal 11 (Segmentation fault)"]))
        self.assertTrue(hang.signalled([], "make: *** [Makefile:26: check-calc] Segmentation "
                                           "fault"))
        # a death test that did not die: no crash to read
        self.assertFalse(hang.signalled(["unit: t reference/tests/check_chan.c:665: expected "
                                         "SIGABRT, got signal 0 exit 0; stderr:"]))

    def test_the_class_is_read_back_from_a_reason(self):
        self.assertEqual(hang.class_of("x hung: ...; hang class: infinite loop: 1 thread"),
                         hang.LOOP)
        self.assertIsNone(hang.class_of("killed by check-unit"))
        # the summary, from a report's records too (a merge of shards)
        self.assertEqual(hang.summary_line([
            {"status": "Timeout", "statusReason": "x hung; hang class: deadlock: every thread"},
            {"status": "Timeout", "statusReason": "a timeout from before the looks"},
            {"status": "Killed", "statusReason": "killed by y"}]),
            "mutants: timeouts by hang class: deadlock 1, not looked at 1")


SAMPLE_BT = """\
[New LWP 4242]
0x00007f in __futex_abstimed_wait_common64 () from /lib/libc.so.6

Thread 2 (Thread 0x7f2b0e7ff6c0 (LWP 4242) "check_chan"):
#0  futex_wait (private=..., expected=..., futex_word=...) at ../sysdeps/nptl/futex-internal.h:146
#1  __GI___lll_lock_wait (futex=..., private=...) at ./nptl/lowlevellock.c:49
#2  0x00007f3f2d5f8482 in ___pthread_mutex_lock (mutex=...) at ./nptl/pthread_mutex_lock.c:93
#3  0x000055 in rt_chan_send (...) at reference/src/chan.c:210
#4  0x000056 in ?? ()

Thread 1 (process 4241):
#0  0x00007f in __GI___wait4 (...) from /lib/x86_64-linux-gnu/libc.so.6
#1  0x000055 in main (...) at reference/tests/testmain.c:64
"""


class ParseTest(unittest.TestCase):
    def test_threads_and_frames(self):
        threads = stacks.parse_bt(SAMPLE_BT)
        self.assertEqual([lwp for lwp, _ in threads], [4242, 4241])
        f = threads[0][1]
        self.assertEqual([x.func for x in f], ["futex_wait", "__GI___lll_lock_wait",
                                               "___pthread_mutex_lock", "rt_chan_send", "??"])
        self.assertEqual((f[3].file, f[3].line, f[3].ours), ("reference/src/chan.c", 210, True))
        self.assertFalse(f[1].ours)
        self.assertEqual(threads[1][1][0].lib, "/lib/x86_64-linux-gnu/libc.so.6")
        self.assertEqual(stacks.summary(f, n=2),
                         "futex_wait futex-internal.h:146 < __GI___lll_lock_wait "
                         "lowlevellock.c:49 < rt_chan_send chan.c:210")

    def test_eu_stack_s_first_thread_is_read_with_its_inlined_calls(self):
        text = ("PID 4146 - core\nTID 4148:\n"
                "#0  0x0000558eced381cd clear - /tmp/mt\n    /tmp/mt.c:4:44\n"
                "#1  0x0000558eced381cd crasher - /tmp/mt\n    /tmp/mt.c:5:58\n"
                "#2  0x00007f99205661f5 start_thread - libc.so.6\n"
                "    ./nptl/pthread_create.c:442:8\n"
                "#3  0x00007f99205e68ec srunner_run_tagged - libcheck.so.0\n"
                "#4  0x00005620af402414 main - /tmp/mt\n    reference/tests/testmain.c:110:9\n"
                "#5  0x00007fadbf89124a __libc_start_call_main - libc.so.6\n"
                "TID 4147:\n#0  0x00007f99205ac545 __GI___clock_nanosleep - libc.so.6\n")
        f = stacks.parse_eu_stack(text)
        self.assertEqual([x.func for x in f], ["clear", "crasher", "start_thread",
                                               "srunner_run_tagged", "main"])
        self.assertEqual((f[0].file, f[0].line, f[1].line), ("/tmp/mt.c", 4, 5))
        self.assertEqual((f[3].file, f[3].lib), (None, "libcheck.so.0"))
        self.assertEqual(stacks.summary(f, n=2), "clear mt.c:4 < crasher mt.c:5")

    def test_ptrace_refused_is_said_once(self):
        # by gdb where eu-stack is missing, by eu-stack where it is not
        d = tempfile.mkdtemp(prefix="refrt-gdb-")
        self.addCleanup(shutil.rmtree, d, True)
        fakes = {"gdb": "echo 'ptrace: Operation not permitted.'",
                 "eu-stack": "echo \"eu-stack: dwfl_linux_proc_attach pid $3: Operation not "
                             "permitted\" >&2; exit 1"}
        for name, body in fakes.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(os.path.join(d, name), 0o755)
        code = ("import io, os, sys; sys.path.insert(0, %r); import stacks\n"
                "print([stacks.attach(os.getpid(), who='t') for _ in range(3)])\n") % util.SCRIPTS
        for env in ({"RT_GDB": os.path.join(d, "gdb"), "RT_EU_STACK": "/nonexistent"},
                    {"RT_GDB": "/nonexistent", "RT_EU_STACK": os.path.join(d, "eu-stack")}):
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=dict(os.environ, **env), timeout=60)
            self.assertEqual(p.stdout.strip(), "[None, None, None]", env)
            said = p.stderr.strip().splitlines()
            self.assertEqual(len(said), 1, p.stderr)
            self.assertRegex(said[0], r"^t: ptrace is refused here .*without stacks$")

    def test_a_refusal_of_a_dying_process_is_that_process_s_alone(self):
        # a case Check killed at its timeout as the look began: ptrace
        # refuses a process in exit, and that says nothing of the machine;
        # the next live process is still read (here: refused, and said)
        d = tempfile.mkdtemp(prefix="refrt-gdb-")
        self.addCleanup(shutil.rmtree, d, True)
        with open(os.path.join(d, "gdb"), "w") as f:
            f.write("#!/bin/sh\necho 'ptrace: Operation not permitted.'\n")
        os.chmod(os.path.join(d, "gdb"), 0o755)
        code = ("import os, subprocess, sys, time; sys.path.insert(0, %r); import stacks\n"
                "p = subprocess.Popen(['true']); time.sleep(0.3)\n"      # a zombie
                "print(stacks.attach(p.pid, who='t'), file=sys.stderr); p.wait()\n"
                "print(stacks.attach(p.pid, who='t'), file=sys.stderr)\n"  # gone
                "print('live', file=sys.stderr)\n"
                "print(stacks.attach(os.getpid(), who='t'), file=sys.stderr)\n") % util.SCRIPTS
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, RT_GDB=os.path.join(d, "gdb"),
                                    RT_EU_STACK="/nonexistent"), timeout=60)
        said = p.stderr.strip().splitlines()
        self.assertEqual(said[:3], ["None", "None", "live"], p.stderr)
        self.assertRegex(said[3], r"^t: ptrace is refused here .*without stacks$")
        self.assertEqual(said[4:], ["None"])

    def test_a_live_process_s_threads_are_read_by_either_reader(self):
        if not shutil.which("eu-stack"):
            self.skipTest("eu-stack is not installed (scripts/deps installs elfutils)")
        proc = subprocess.Popen(["sleep", "30"])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        time.sleep(0.2)
        code = ("import os, sys; sys.path.insert(0, %r); import stacks\n"
                "t = stacks.attach(%d, who='t') or []\n"
                "print(len(t), [f.func for f in t[0][1]] if t else [])\n") % (util.SCRIPTS,
                                                                               proc.pid)
        seen = {}
        for reader, env in (("eu-stack", {"RT_GDB": "/nonexistent"}),
                            ("gdb", {"RT_EU_STACK": "/nonexistent"})):
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=dict(os.environ, **env), timeout=60)
            seen[reader] = p.stdout.strip()
            if "ptrace is refused" in p.stderr:
                self.skipTest("ptrace is refused here")
            self.assertRegex(seen[reader], r"^1 \[.*(nanosleep|sleep).*\]$", p.stderr)
            self.assertIn("main", seen[reader])

    def test_the_key_skips_the_signal_machinery(self):
        a = stacks.parse_bt("#0 raise () at x.c:1\n#1 abort () at x.c:2\n"
                            "#2 0x1 in rt_bad () at reference/src/a.c:3\n#3 main () at m.c:4\n")
        b = stacks.parse_bt("#0 __pthread_kill_implementation () at p.c:1\n"
                            "#1 __GI_raise () at r.c:2\n#2 __GI_abort () at a.c:3\n"
                            "#3 rt_bad () at reference/src/a.c:9\n#4 main () at m.c:5\n")
        self.assertEqual(stacks.key(a[0][1]), stacks.key(b[0][1]))


@unittest.skipUnless(HAVE_GDB and shutil.which("cc"), "needs gdb and cc")
class ConformanceCrashTest(unittest.TestCase):
    """conformance/run.py's stack of a program that dies of a signal."""

    def test_the_faulting_frame(self):
        d = tempfile.mkdtemp(prefix="refrt-conf-")
        self.addCleanup(shutil.rmtree, d, True)
        src, exe = os.path.join(d, "p.c"), os.path.join(d, "p")
        with open(src, "w") as f:
            f.write("static void __attribute__((noinline)) poke(volatile int *p) { *p = 1; }\n"
                    "int main(void) { poke(0); return 0; }\n")
        subprocess.run(["cc", "-g", "-O0", src, "-o", exe], check=True)
        sys.path.insert(0, os.path.join(os.path.dirname(util.SCRIPTS), "conformance"))
        try:
            import run as conformance_run
        finally:
            sys.path.pop(0)
        self.assertRegex(conformance_run.crash_stack(exe),
                         r"^died of SIGSEGV, stack: poke p.c:1 < main p.c:2$")


@unittest.skipUnless(HAVE_GDB and shutil.which("cc"), "needs gdb and cc")
class TriageTest(unittest.TestCase):
    """The fuzz triage on a tiny harness that crashes on the byte 'C' (two
    inputs, one stack), aborts on 'A', and spins on 'H'."""

    HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
static void crash_here(int c) { if (c == 'C') *(volatile int *)0 = c; }
static void abort_here(int c) { if (c == 'A') abort(); }
static void spin_here(int c) { volatile int s = (c == 'H'); while (s) ; }
int main(int argc, char **argv)
{
    FILE *f = fopen(argv[argc - 1], "rb");
    int c = f ? fgetc(f) : -1;
    crash_here(c);
    abort_here(c);
    spin_here(c);
    return 0;
}
"""

    def test_crashes_and_hangs_deduplicated(self):
        d = tempfile.mkdtemp(prefix="refrt-triage-")
        self.addCleanup(shutil.rmtree, d, True)
        src, exe = os.path.join(d, "h.c"), os.path.join(d, "h")
        with open(src, "w") as f:
            f.write(self.HARNESS)
        subprocess.run(["cc", "-g", "-O0", src, "-o", exe], check=True)
        crashes, hangs = os.path.join(d, "crashes"), os.path.join(d, "hangs")
        os.makedirs(crashes)
        os.makedirs(hangs)
        for name, data in (("id:0", b"C1"), ("id:1", b"C2"), ("id:2", b"A"), ("id:3", b"x")):
            with open(os.path.join(crashes, name), "wb") as f:
                f.write(data)
        with open(os.path.join(hangs, "id:0"), "wb") as f:
            f.write(b"H")
        p = subprocess.run([sys.executable, os.path.join(util.SCRIPTS, "stacks.py"), "triage",
                            "--harness", exe, "--crashes", crashes, "--hangs", hangs,
                            "--timeout", "1"], capture_output=True, text=True, timeout=60)
        out = p.stdout.splitlines()
        self.assertEqual(out[-1], "triage: 3 crashes, 1 hangs", p.stdout + p.stderr)
        segv = [l for l in out if "SIGSEGV" in l]
        self.assertEqual(len(segv), 1, out)
        self.assertIn("crash_here h.c:", segv[0])
        self.assertIn("(2 inputs", segv[0])
        self.assertTrue(any("SIGABRT" in l and "abort_here h.c:" in l for l in out), out)
        self.assertTrue(any("did not fail on replay" in l for l in out), out)
        self.assertTrue(any(l.startswith("triage: hang ") and "spin_here h.c:" in l
                            for l in out), out)

    def test_nothing_found(self):
        d = tempfile.mkdtemp(prefix="refrt-triage-")
        self.addCleanup(shutil.rmtree, d, True)
        p = subprocess.run([sys.executable, os.path.join(util.SCRIPTS, "stacks.py"), "triage",
                            "--harness", "/bin/true", "--crashes", os.path.join(d, "none")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout, "triage: 0 crashes, 0 hangs\n")


if __name__ == "__main__":
    unittest.main()
