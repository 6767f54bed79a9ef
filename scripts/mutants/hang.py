"""A hung mutant is looked at before it is killed, and a crashed one is
explained.

When a suite runs past its limit, or no process of it has run for
IDLE_SECONDS, look() reads each of its test programs (the processes whose
executable is in the mutant's copy, not make, sh or timeout) before the
driver kills them: every thread's state, R or S, from
/proc/<pid>/task/<tid>/stat (twice, 0.2 s apart, with its CPU ticks), and
every thread's stack, by gdb attached in batch mode. The hang is then one
of

- deadlock: no thread runs, and every thread waits in a lock, a condition
  wait, a join or a semaphore (futex, pthread_mutex_lock, pthread_cond_wait,
  pthread_join, sem_wait ...);
- livelock: a thread runs while others wait in a lock or a condition (on
  what it holds, or what it should post and never does);
- infinite loop: a thread runs, in the program's own code, and none waits;
- unclassified: anything else (threads asleep in nanosleep or poll, no
  stack at all). The runner runs such a suite once more with three times
  its limit: a Timeout only if it hangs again.

A test program that only waits for its child (Check's fork mode, a death
test) is not counted: its child is what hangs.

The suites run with core files allowed (RLIMIT_CORE; expected deaths
write none, testutil.c and conformance/measure.py), so a suite that failed
with a test killed by a signal has left its core: the faulting stack from
the newest core in the copy goes into the reason (crash()).

Where gdb is missing or ptrace is refused, stacks.py says so once and the
hang is recorded with its thread states only (unclassified, and not rerun:
no stack would classify it the second time either)."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import stacks  # noqa: E402  (scripts/stacks.py)

DEADLOCK, LIVELOCK, LOOP, UNCLASSIFIED = "deadlock", "livelock", "infinite loop", "unclassified"
CLASSES = (DEADLOCK, LIVELOCK, LOOP, UNCLASSIFIED)
RERUN_TIMES = 3          # an unclassified hang runs again with this times its limit
SAMPLE_SECONDS = 0.2     # between the two readings of the threads' CPU ticks
THREADS_SHOWN = 4        # threads a process in the reason
LOOK_BUDGET = 6          # seconds: no gdb starts past this (a hang with many programs)
WHO = "mutants"

# frames of a thread that waits on another: a lock, a condition, a join
_LOCK = re.compile(r"futex|lll_lock|mutex_(timed|clock)?lock|cond_(timed|clock)?wait|"
                   r"pthread_join|clockjoin|timedjoin|rwlock_(rd|wr)?(timed|clock)?lock|"
                   r"sem_(timed|clock)?wait|do_futex_wait|barrier_wait")
# frames of a thread that waits for a child process to end
_CHILD = re.compile(r"wait4|waitpid|waitid")
# the reason's marker, read back by counts() (cached results too)
_MARK = re.compile(r"hang class: ([a-z ]+?)[;:]")


class Thread:
    __slots__ = ("tid", "state", "running", "frames")

    def __init__(self, tid, state, running, frames=None):
        self.tid, self.state, self.running, self.frames = tid, state, running, frames or []

    @property
    def kind(self):
        """lock, child or other: what the thread waits in, from its frames
        above the program's own code (or its whole stack if none)."""
        top = []
        for f in self.frames:
            top.append(f.func)
            if f.ours:
                break
        if any(_LOCK.search(fn) for fn in top):
            return "lock"
        if any(_CHILD.search(fn) for fn in top):
            return "child"
        return "other"

    def to_dict(self):
        return {"tid": self.tid, "state": self.state, "running": self.running,
                "frames": [str(f) for f in self.frames]}


class Process:
    def __init__(self, pid, name, threads, harness=False):
        self.pid, self.name, self.threads = pid, name, threads
        # the parent of another test program looked at: Check's runner
        # in wait4, a death test's parent reading its child's pipe
        self.harness = harness


class Look:
    """What look() saw: the class, why, and the processes."""

    def __init__(self, cls, why, procs, stacks_read, seconds):
        self.cls, self.why, self.procs = cls, why, procs
        self.stacks_read = stacks_read      # False: gdb missing or refused
        self.seconds = seconds

    def reason(self):
        """The text for statusReason: the class, why, then each process's
        threads with their state and top frames."""
        parts = []
        for p in self.procs:
            shown = p.threads
            ts = "; ".join(f"thread {t.tid} {'running' if t.running else 'waiting'} ({t.state}): "
                           + (stacks.compact(t.frames) if t.frames else "no stack")
                           for t in shown[:THREADS_SHOWN])
            more = f"; {len(shown) - THREADS_SHOWN} more threads" if len(shown) > THREADS_SHOWN else ""
            parts.append(f"{p.name} pid {p.pid}: {ts}{more}")
        return f"hang class: {self.cls}: {self.why}; " + " | ".join(parts)

    def full(self):
        """Every frame of every thread, for the mutant's log."""
        out = [f"hang class: {self.cls} ({self.why}), looked at in {self.seconds:.2f} s"]
        for p in self.procs:
            for t in p.threads:
                out.append(f"  {p.name} pid {p.pid} thread {t.tid} state {t.state}"
                           f"{' running' if t.running else ''}")
                out += [f"    #{i} {f}" for i, f in enumerate(t.frames)]
        return "\n".join(out) + "\n"


def _stat(path):
    """(state, utime + stime) from a /proc stat file, or None."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    return fields[0].decode(), int(fields[11]) + int(fields[12])


def _threads(pid):
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        s = _stat(f"/proc/{pid}/task/{tid}/stat")
        if s:
            out[int(tid)] = s
    return out


def _ppid(pid):
    s = None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read()
    except OSError:
        return None
    return int(s[s.rfind(b")") + 2:].split()[1])


def _traced(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(l.startswith("TracerPid:") and l.split()[1] != "0" for l in f)
    except OSError:
        return False


def test_programs(pids, tree):
    """The processes among pids whose executable lies in tree (the test
    programs a suite built; make, sh, timeout and python are elsewhere)."""
    tree = os.path.realpath(tree) + os.sep
    out = []
    for pid in pids:
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe.startswith(tree):
            out.append((pid, os.path.basename(exe)))
    return out


def classify(procs):
    """(class, why) of the hang from every thread of the test programs."""
    # a harness waiting for its child (in wait4, or reading its pipe) is
    # not counted: its child is what hangs
    threads = [t for p in procs for t in p.threads
               if t.running or not (t.kind == "child" or p.harness)]
    if not threads:
        return UNCLASSIFIED, "no thread but harnesses waiting for their children"
    running = [t for t in threads if t.running]
    locked = [t for t in threads if not t.running and t.kind == "lock"]
    if not any(t.frames for t in threads):
        return UNCLASSIFIED, (f"{len(running)} of {len(threads)} threads running; no stacks")
    if not running:
        if len(locked) == len(threads):
            return DEADLOCK, (f"every thread ({len(threads)}) waits in a lock, a condition "
                              f"or a join, none runs")
        return UNCLASSIFIED, (f"no thread runs; {len(threads) - len(locked)} of "
                              f"{len(threads)} wait in something other than a lock")
    if locked:
        return LIVELOCK, (f"{len(running)} thread(s) running while {len(locked)} wait in a lock "
                          f"or a condition")
    if any(f.ours for t in running for f in t.frames):
        return LOOP, f"{len(running)} thread(s) running in the program's code, none waiting"
    return UNCLASSIFIED, f"{len(running)} thread(s) running outside the program's code"


def look(pids, tree, hold=()):
    """Reads the hung test programs among pids (of one suite) and classifies
    the hang; the processes of hold are stopped meanwhile too. Never
    raises: a failure to look is an unclassified hang."""
    start = time.monotonic()
    progs = []
    try:
        progs = test_programs(pids, tree)
        first = {pid: _threads(pid) for pid, _ in progs}
        time.sleep(SAMPLE_SECONDS)
        second = {pid: _threads(pid) for pid, _ in progs}
        # held still while gdb reads them: Check's parent cannot kill the
        # case at its timeout midway, nor a thread move on
        for pid in [p for p, _ in progs] + list(hold):
            _signal(pid, signal.SIGSTOP)
        procs, read = [], bool(progs)
        parents = {_ppid(pid) for pid, _ in progs}
        for pid, name in progs:
            # a program strace already traces cannot be attached to; past
            # the budget, the rest are left unread
            late = time.monotonic() - start > LOOK_BUDGET
            bts = None if late or _traced(pid) else stacks.attach(pid, who=WHO)
            if bts is None:
                read = False
            frames = dict(bts or [])
            threads = []
            for tid, (state, ticks) in sorted(second.get(pid, {}).items()):
                before = first.get(pid, {}).get(tid)
                running = state in ("R", "D") or (before is not None and before[0] in ("R", "D")) \
                    or (before is not None and ticks > before[1])
                threads.append(Thread(tid, state, running, frames.get(tid, [])))
            procs.append(Process(pid, name, threads, harness=pid in parents))
        cls, why = classify(procs) if procs else (UNCLASSIFIED, "no test program was running")
        return Look(cls, why, procs, read, time.monotonic() - start)
    except Exception as e:  # the kill must happen whatever went wrong here
        return Look(UNCLASSIFIED, f"could not look: {e}", [], False, time.monotonic() - start)
    finally:
        for pid in [p for p, _ in progs] + list(hold):
            _signal(pid, signal.SIGCONT)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


class CaseWatch:
    """Check stops a test case past its timeout (RT_CASE_TIMEOUT) itself,
    killing the forked child that runs it: the driver never sees that
    hang to kill. So each poll of a suite calls this: a test program
    forked from a test program of the same executable (a Check case) that
    has lived past `seconds` is looked at once, before Check kills it (a
    case that deadlocks is mostly the idle rule's first; this one reads it
    when something else in the suite keeps the idle rule off)."""

    def __init__(self, tree, seconds):
        self.tree, self.seconds = tree, seconds
        self.looks, self.seen = [], set()
        self.hz = os.sysconf("SC_CLK_TCK")

    def __call__(self, sid):
        try:
            self._poll(sid)
        except Exception:  # noqa: BLE001  a watch never stops the run
            pass

    def _poll(self, sid):
        from . import project
        procs = dict(project.session_processes(sid))
        progs = dict(test_programs(procs, self.tree))
        with open("/proc/uptime") as f:
            now = float(f.read().split()[0])
        for pid, name in progs.items():
            fields = procs[pid]
            parent = int(fields[1])
            age = now - int(fields[19]) / self.hz
            if pid in self.seen or progs.get(parent) != name or age < self.seconds:
                continue
            self.seen.add(pid)
            # Check's parent kills the case at its timeout: held too
            self.looks.append(look([pid], self.tree, hold=[parent]))


def class_of(reason):
    m = _MARK.search(reason or "")
    return m.group(1) if m else None


def counts(mutants):
    """{class: timeouts} over the mutants' reasons (cached ones too); the
    mutants are records or a report's dicts (a merge of shards)."""
    out = {}
    for m in mutants:
        status, reason = ((m["status"], m.get("statusReason", "")) if isinstance(m, dict)
                          else (m.status, m.status_reason))
        if status == "Timeout":
            c = class_of(reason) or "not looked at"
            out[c] = out.get(c, 0) + 1
    return out


def summary_line(mutants):
    c = counts(mutants)
    if not c:
        return None
    order = list(CLASSES) + sorted(k for k in c if k not in CLASSES)
    return "mutants: timeouts by hang class: " + ", ".join(
        f"{k} {c[k]}" for k in order if k in c)


# ---- crashes ------------------------------------------------------------------

_SIGNALLED = re.compile(r"Received signal|signal [1-9]\d*|Segmentation fault|Bus error|"
                        r"Illegal instruction|Floating point exception|Aborted|core dumped|"
                        r"Killed by signal|terminated by signal|died of")


def signalled(failed_lines, log_tail=""):
    """Whether a suite's failure looks like a test killed by a signal."""
    return any(_SIGNALLED.search(l) for l in failed_lines) or bool(_SIGNALLED.search(log_tail))


# RT_CRASH_STACKS=0: the suites run with no core files, and crashes carry no stack
CRASH_STACKS = os.environ.get("RT_CRASH_STACKS", "1") != "0"


def drop_cores(tree, since):
    """Removes the core files written in tree since the time since."""
    for c in stacks.find_cores(tree, since):
        try:
            os.unlink(c)
        except OSError:
            pass


def crash(tree, since):
    """The faulting stack of the newest core file the suite left in tree
    (since the time since): "crash stack (SIGSEGV in check_chan):
    frames", or None. Removes the cores it read."""
    cores = stacks.find_cores(tree, since)
    if not cores:
        return None
    try:
        exe = stacks.core_exe(cores[0], who=WHO)
        if exe and not os.path.isabs(exe):
            exe = _find_exe(tree, exe)
        if not exe:
            return None
        sig, frames = stacks.core(exe, cores[0], who=WHO)
        if not frames:
            return None
        return (f"crash stack ({sig or 'a signal'} in {os.path.basename(exe)}): "
                + stacks.summary(stacks.below_machinery(frames), n=6))
    finally:
        for c in cores:
            try:
                os.unlink(c)
            except OSError:
                pass


def _find_exe(tree, name):
    """The program a core names by a relative path or a bare name."""
    cand = os.path.join(tree, name)
    if os.path.isfile(cand):
        return cand
    base = os.path.basename(name)
    for dirpath, _, filenames in os.walk(tree):
        if base in filenames and os.access(os.path.join(dirpath, base), os.X_OK):
            return os.path.join(dirpath, base)
    return None
