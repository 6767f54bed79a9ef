"""The project as the driver sees it: a snapshot of the tree, its build
and suites (as its configuration names them, config.py), the unmutated run
and its coverage.

Nothing here writes into the source tree: the tree is copied once into
WORK/base (everything but what the configuration skips), and every build,
the unmutated one included, happens in copies under WORK."""
import filecmp
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import config as config_mod
from .cache import normal

# The tree's configuration (config.py), set once by configure(): the
# commands, paths and hints every function here reads.
CFG = config_mod.default()
BUILD_IN_COPY = "build/m"    # the build folder inside each copy, relative
COVERAGE_BUILD = "build/cov"
# run_make's target for the build itself (the suites are named by their names)
BUILD_STEP = ":build"


def configure(cfg):
    """Makes cfg the configuration every later call reads."""
    global CFG
    CFG = cfg


class BaselineError(Exception):
    """The unmutated tree does not build or does not pass."""


def _ignore(root):
    root = os.path.abspath(root)

    def ignore(directory, names):
        if os.path.abspath(directory) == root:
            return [n for n in names if n in CFG.skip]
        return [n for n in names if n in ("__pycache__",)]
    return ignore


def snapshot(root, dest):
    """Copies the source tree to dest (mtimes kept), replacing what was there."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(root, dest, symlinks=True, ignore=_ignore(root))


def sync(src, dest):
    """Makes the files of dest (but build/) those of src: a kept copy gets
    what changed only in ways no test sees (the catalog, docs, comments),
    so a mutant's edits, placed in src's text, land where they belong."""
    in_src = set(tree_files(src))
    for rel in tree_files(dest):
        if rel not in in_src:
            os.unlink(os.path.join(dest, rel))
    for rel in in_src:
        a, b = os.path.join(src, rel), os.path.join(dest, rel)
        if not os.path.exists(b) or not filecmp.cmp(a, b, shallow=False):
            os.makedirs(os.path.dirname(b), exist_ok=True)
            shutil.copy2(a, b)


def tree_files(tree):
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        rel = os.path.relpath(dirpath, tree)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in CFG.skip]
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            out.append(os.path.normpath(os.path.join(rel, f)))
    return sorted(out)


def fingerprint(tree, exclude=()):
    """sha256 over the tree's test inputs (path and bytes of every file but
    those tree.not_inputs names and exclude) and the configuration's."""
    h = hashlib.sha256(CFG.digest().encode())
    for rel in tree_files(tree):
        if rel.startswith(CFG.not_inputs) or rel in exclude:
            continue
        h.update(rel.encode() + b"\0")
        with open(os.path.join(tree, rel), "rb") as f:
            data = f.read()
        if rel.endswith((".c", ".h")):
            data = normal(rel, data.decode(errors="replace")).encode()
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def hint_names():
    """The environment variables the configuration names: the hints to
    the suites and the schema's selector."""
    return [v for k, v in CFG.hints.items() if k != "program"] + (
        [CFG.mutant_env] if CFG.mutant_env else [])


def make_env():
    """The environment for an inner make: without the outer make's
    jobserver, nor any hint of an outer run."""
    env = dict(os.environ)
    for k in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"] + hint_names():
        env.pop(k, None)
    env["LC_ALL"] = "C"
    return env


def command(tree, build, make_vars, target, jobs=1):
    """(argv, extra environment) of target: BUILD_STEP (the build), or a
    suite (suites.run with {suite}); run in tree."""
    words = CFG.build_command if target == BUILD_STEP else CFG.suite_run
    return CFG.command(words, build, make_vars, jobs=jobs, suite=target)


def programs_command(build, make_vars, suite_list, jobs=1):
    """(argv, extra environment) that builds the programs of suite_list
    and runs none (suites.programs), or None when the configuration gives
    no such command."""
    if not CFG.programs:
        return None
    return CFG.command(CFG.programs, build, make_vars, jobs=jobs, suites=" ".join(suite_list))


def build_programs(tree, make_vars, suite_list, log, jobs=1, timeout=None):
    """Builds the programs of suite_list in tree (programs_command), one
    suite's after another's (each make -jN): {suite: seconds} when they
    all built, {} when one did not, None with no such command."""
    if not CFG.programs or not suite_list:
        return None
    with open(log, "a") as f:
        f.write(f"# the programs of {' '.join(suite_list)}, built before any suite runs\n")
    seconds = {}
    for s in suite_list:
        argv, extra = programs_command(BUILD_IN_COPY, make_vars, [s], jobs=jobs)
        status, seconds[s] = run_make(tree, BUILD_IN_COPY, make_vars, ":programs", log,
                                      jobs=jobs, argv=argv, env=extra, timeout=timeout)
        if status != 0:
            return {}
    return seconds


def hints(**values):
    """{variable: value} of the hints the configuration names
    (suites.hints: fail_fast, case_timeout, case_timeouts, first_programs,
    first_cases, run_case, expected); those it does not name are left out."""
    return {CFG.hints[k]: v for k, v in values.items() if CFG.hints.get(k) and v is not None}


def hint(name):
    """The variable of one hint, or None."""
    return CFG.hints.get(name)


def schema_env(value):
    """{variable: value} that picks a schema's mutant (build.mutant_env)."""
    return {CFG.mutant_env: value} if CFG.mutant_env else {}


def lenient(make_vars):
    """make_vars with warnings not fatal (build.lenient): the schema build
    and the oracles' builds."""
    return dict(make_vars, **CFG.lenient)


def program_named(path):
    """The test program named after a source file (suites.hints.program,
    "check_{stem}"), or None."""
    pat = CFG.hints.get("program")
    if not pat:
        return None
    return config_mod.expand(pat, {"stem": os.path.splitext(os.path.basename(path))[0]})


def program_pattern():
    """A regex of the test programs a failure line names as <program>.c:<line>."""
    pat = CFG.hints.get("program")
    return re.escape(pat).replace(re.escape("{stem}"), r"\w+") if pat else r"\w+"


def results_dir(tree, build=BUILD_IN_COPY):
    """The folder where the suites write their pass/fail lines (suites.results)."""
    rel = CFG.path_in(CFG.results, build, {})
    return os.path.join(tree, rel) if rel else None


def failed_lines(tree):
    """The "fail <test> <why>" lines the suites wrote in the copy, each
    "<file>: <test> <why>"."""
    out = []
    results = results_dir(tree)
    for name in sorted(os.listdir(results)) if results and os.path.isdir(results) else []:
        with open(os.path.join(results, name), errors="replace") as f:
            out += [f"{name}: {line[5:].strip()[:200]}" for line in f if line.startswith("fail ")]
    return out


def export_outputs(tree, dest, build=BUILD_IN_COPY):
    """Copies what the suites wrote in the copy, their results (pass/fail
    lines) and their reports, into dest/results and dest/reports, over
    what is there: the unmutated run serves as the tree's own run of those
    suites (--export-results)."""
    for key in ("results", "reports"):
        rel = CFG.path_in(getattr(CFG, key), build, {}) if getattr(CFG, key) else None
        src = os.path.join(tree, rel) if rel else None
        if src and os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, key), dirs_exist_ok=True)


def clear_results(tree, build=BUILD_IN_COPY):
    results = results_dir(tree, build)
    if results:
        shutil.rmtree(results, ignore_errors=True)


def result_set(tree, build=BUILD_IN_COPY):
    """{"<file>:<test>": passed} of the lines the suites wrote (results mode)."""
    out = {}
    results = results_dir(tree, build)
    for name in sorted(os.listdir(results)) if results and os.path.isdir(results) else []:
        with open(os.path.join(results, name), errors="replace") as f:
            for line in f:
                word, _, rest = line.strip().partition(" ")
                if word in ("pass", "fail") and rest:
                    out[f"{name}:{rest.split(' ', 1)[0]}"] = word == "pass"
    return out


def compare(tree, expected, build=BUILD_IN_COPY):
    """A suite's verdict in results mode: (status, changes): 0 when its
    results equal the unmutated run's (expected: {test: passed, or None
    for a test the unmutated runs did not agree on, which does not count}),
    else 1 and a line for each test whose result changed, those that
    differ first, then those not run."""
    seen = result_set(tree, build)
    changed, new, missing = [], [], []
    for test in sorted(set(expected) | set(seen)):
        if test in expected and expected[test] is None:
            continue
        if test not in expected:
            if not seen[test]:
                new.append(f"{test} fails (no such test unmutated)")
        elif test not in seen:
            missing.append(f"{test} not run ({_word(expected[test])} unmutated)")
        elif seen[test] != expected[test]:
            changed.append(f"{test} {_word(seen[test])} ({_word(expected[test])} unmutated)")
    changes = changed + new + missing
    return (1 if changes else 0), changes


_expected_lock = threading.Lock()


def expected_file(work, suite, expected):
    """A file of the unmutated run's results of suite, for a suite that
    passes by its results (None for one that passes by its exit status):
    a line a test, "pass <test>", "fail <test>", or "any <test>" for one
    the unmutated runs disagreed on (<test> as "<results file>:<test>").
    With it (suites.hints.expected) a suite may stop at the first test
    whose result differs."""
    if expected is None:
        return None
    path = os.path.join(work, f"expected-{suite}.txt")
    with _expected_lock:
        if not os.path.exists(path):
            os.makedirs(work, exist_ok=True)
            with open(path + ".tmp", "w") as f:
                f.write("".join(f"{'any' if ok is None else 'pass' if ok else 'fail'} {t}\n"
                                for t, ok in sorted(expected.items())))
            os.replace(path + ".tmp", path)
    return path


def _word(passed):
    return "passes" if passed else "fails"


_active = set()
_active_lock = threading.Lock()


def kill_all():
    """Kills the process group of every make still running (on Ctrl-C)."""
    with _active_lock:
        procs = list(_active)
    for p in procs:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        kill_session(p.pid)


# run_make's status for a run stopped because none of its processes ran
IDLE = "idle"


def session_processes(sid):
    """(pid, fields of /proc/pid/stat after "(comm) ") of every process of
    session sid but the driver itself: state(0) ppid pgrp session ...
    utime(11) stime(12). comm may hold spaces, hence the split after it."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 12 and int(fields[3]) == sid:
            yield int(entry), fields


def session_activity(sid):
    """What shows that session sid is doing something: each process's pid
    and the CPU ticks it has used, and whether any is running (or in a
    disk wait). A deadlocked test changes none of it."""
    ticks, running = {}, False
    for pid, fields in session_processes(sid):
        ticks[pid] = int(fields[11]) + int(fields[12])
        running = running or fields[0] in (b"R", b"D")
    return ticks, running


def _wait(p, timeout, idle, watch=None):
    """Waits for p; returns its status, None past timeout, or IDLE when
    for idle seconds no process of its session ran: every thread waits
    for something no one will do, a deadlock, which the timeout would
    otherwise wait out in full."""
    if idle is None:
        return p.wait(timeout=timeout)
    start = last = time.monotonic()
    seen = None
    # a poll every quarter of the idle bound: a deadlock is stopped within
    # 1.25 times the bound of its start
    poll = min(0.5, idle / 4)
    while True:
        try:
            return p.wait(timeout=poll)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if timeout is not None and now - start > timeout:
            raise subprocess.TimeoutExpired(p.args, timeout)
        if watch is not None:
            watch(p.pid)
        ticks, running = session_activity(p.pid)
        if running or ticks != seen:
            seen, last = ticks, now
        elif now - last > idle:
            return IDLE


def direct_command(suite, program, build=BUILD_IN_COPY):
    """(argv, environment) that runs one test program of suite with no
    make (suites.direct), or None when the configuration gives none, or
    its command names {program} and none is known (a suite of one program,
    such as a corpus replay, names none: its case alone picks the test)."""
    d = CFG.direct.get(suite)
    if d is None or (not program and any("{program}" in w
                                         for w in d[0] + list(d[1].values()))):
        return None
    values = {"build": build, "program": program}
    return ([config_mod.expand(w, values) for w in d[0]],
            {k: config_mod.expand(v, values) for k, v in d[1].items()})


def run_make(tree, build, make_vars, target, log, timeout=None, env=None, jobs=1, idle=None,
             on_hang=None, cores=False, watch=None, argv=None):
    """Runs make TARGET in tree in its own process group; returns
    (exit status or None on timeout, seconds). The whole group is killed
    on a timeout, so a hanging test leaves nothing behind. With idle, a
    run none of whose processes used the CPU for idle seconds is killed
    too, with the status IDLE. jobs > 1 is for the phases that build
    alone (nothing else runs then): make -jN builds the programs side by
    side. on_hang(pids) is called with the session's processes, still
    running, before a run that hung (either way) is killed; cores lets its
    programs write core files (hang.py reads them); watch(session) is
    called at each poll of an idle-bounded run. argv: a command to run
    instead of make's (direct_command)."""
    cmd, extra = (argv, {}) if argv else command(tree, build, make_vars, target, jobs=jobs)
    if cores:
        cmd = ["sh", "-c", 'ulimit -c unlimited 2>/dev/null; exec "$@"', "sh"] + cmd
    if timeout is not None:
        # a second bound that holds even if the driver itself is killed
        cmd = ["timeout", "-s", "KILL", str(int(timeout) + 5)] + cmd
    start = time.monotonic()
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        full_env = make_env()
        full_env.update(extra)
        full_env.update(env or {})
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=full_env, start_new_session=True, cwd=tree)
        with _active_lock:
            _active.add(p)
        try:
            status = _wait(p, timeout, idle, watch)
            if status == IDLE:
                _look(on_hang, p)
                kill_group(p)
            else:
                kill_session(p.pid)  # what a test left running when make ended
        except subprocess.TimeoutExpired:
            _look(on_hang, p)
            kill_group(p)
            status = None
        except BaseException:
            kill_group(p)
            raise
        finally:
            with _active_lock:
                _active.discard(p)
    return status, time.monotonic() - start


def _look(on_hang, p):
    """Lets on_hang read the hung processes before they are killed."""
    if on_hang is not None:
        try:
            on_hang([pid for pid, _ in session_processes(p.pid)])
        except Exception:  # noqa: BLE001  the kill must follow whatever happened
            pass


def kill_session(sid):
    """Kills every process of session sid. A process group is not enough:
    Check runs each test in a process group of its own (setpgid in the
    forked child), so a test that hangs would outlive a killpg of make's
    group; all of them stay in the session start_new_session made."""
    for pid, _ in session_processes(sid):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def kill_group(p):
    try:
        os.killpg(p.pid, 9)
    except ProcessLookupError:
        pass
    kill_session(p.pid)
    p.wait()


def suites(tree, make_vars):
    """The suites: suites.names, or the words suites.list prints (this
    tree: `make print-mutant-suites`, CHECK_TARGETS without the mutant
    runs' own)."""
    if CFG.suite_list is None:
        return list(CFG.suite_names)
    cmd, extra = CFG.command(CFG.suite_list, BUILD_IN_COPY, make_vars)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tree,
                       env=dict(make_env(), **extra))
    if p.returncode != 0:
        raise BaselineError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    return CFG.suite_names + [s for s in p.stdout.split() if s not in CFG.suite_names]


# The lines of a suite's output that name an oracle (runner.classify): a
# sanitizer's report; then what the configuration adds (kill_kinds: this
# tree's checked locks, a test's cost bound).
SANITIZERS = (("asan", re.compile(r"\b(?:Address|Leak)Sanitizer\b")),
              ("ubsan", re.compile(r"runtime error:")),
              ("tsan", re.compile(r"\bThreadSanitizer\b")))


def marker_kinds():
    return list(SANITIZERS) + [(k, rx) for k, (rx, _) in CFG.kill_kinds.items()]


def normal_line(line):
    """A line without what changes from run to run (addresses, pids,
    counts): the same report in two runs is the same line."""
    return re.sub(r"\d+", "N", re.sub(r"0x[0-9a-fA-F]+", "0x", line)).strip()


def markers(text):
    """[(kind, line)] of the lines of text that name an oracle, in order."""
    out = []
    for line in text.splitlines():
        for kind, rx in marker_kinds():
            if rx.search(line):
                out.append((kind, line.strip()))
                break
    return out


def read_from(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def reports_since(tree, since, build=BUILD_IN_COPY, cap=1 << 20):
    """The text of the files under the copy's reports folder
    (suites.reports) written since `since` (time.time()): part of what a
    suite printed, where a harness keeps a program's stderr rather than
    passing it on (this tree's conformance runner's
    reports/conformance/<program>.txt)."""
    out = []
    rel = CFG.path_in(CFG.reports, build, {})
    for dirpath, _, names in os.walk(os.path.join(tree, rel)) if rel else ():
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            try:
                if os.path.getmtime(path) < since or os.path.getsize(path) > cap:
                    continue
                with open(path, "rb") as f:
                    out.append(f.read().decode(errors="replace"))
            except OSError:
                continue
    return "\n".join(out)


_CHECK_NS = "{http://check.sourceforge.net/ns}"


def case_times_since(tree, since, build=BUILD_IN_COPY):
    """{test case: seconds} from the Check XML logs (suites.reports) a
    suite wrote since `since`: each case's own time in the unmutated run,
    from which a first try of that one case takes its bound (runner.py).
    A name in two programs keeps the longer; a tree whose suites write no
    such log gives {}."""
    import xml.etree.ElementTree as ET
    times = {}
    rel = CFG.path_in(CFG.reports, build, {})
    for dirpath, _, names in os.walk(os.path.join(tree, rel)) if rel else ():
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                if not name.endswith(".xml") or os.path.getmtime(path) < since:
                    continue
                root = ET.parse(path).getroot()
            except (OSError, ET.ParseError):
                continue
            for test in root.iter(f"{_CHECK_NS}test"):
                case = test.findtext(f"{_CHECK_NS}description") or test.findtext(f"{_CHECK_NS}id")
                try:
                    secs = float(test.findtext(f"{_CHECK_NS}duration") or "")
                except ValueError:
                    continue
                if case and secs >= 0:
                    times[case] = max(secs, times.get(case, 0.0))
    return times


def size_of(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def baseline(tree, make_vars, suite_list, logdir, jobs=1, tolerate=False, export=None):
    """Builds the unmutated copy and runs every suite once, timing each.
    Returns {"build": seconds, "suites": {suite: seconds}, "failed":
    [suites], "noise": {suite: [marker lines]}, "results": {suite:
    {test: passed}}, "cases": {suite: {test case: seconds}}}: noise is what a suite prints that names an oracle
    when nothing is wrong (a death test of the checked locks), which a
    kill is not put down to; results, when suites pass by their results
    (suites.passes = "results"), are the results a mutant's must equal,
    from suites.runs runs (a test they disagree on is None: it does not
    count). Raises BaselineError naming what failed; with tolerate, a
    suite that fails is listed in "failed" instead (an oracle then leaves
    it out, and "why" gives the line of its log that says why), and a
    build that fails is "failed": [BUILD_STEP]. With export (a folder),
    each suite's results and reports are copied there once it has run,
    failed or not (export_outputs).

    With suites.programs, jobs > 1 and suites that pass by their exit, the
    programs of every suite are built first, a suite's after another's
    (each make -jN), and the suites then run `jobs` at a time, each with a
    log of its own: no two makes build the same file, and a suite's tests,
    which run one after another, no longer leave a core idle. A suite's
    time is its programs' build and its run, taken beside another's (its
    bounds err long): a mutant built alone builds its programs again
    inside its first suite's bound, as when each suite's make built them.
    Its case times are those of every suite that ran (the longer of a
    name in two), and what another suite wrote into the reports meanwhile
    counts as its noise too."""
    log = os.path.join(logdir, "baseline.log")
    os.makedirs(logdir, exist_ok=True)
    if os.path.exists(log):
        os.unlink(log)
    status, build_s = run_make(tree, BUILD_IN_COPY, make_vars, BUILD_STEP, log, jobs=jobs)
    if status != 0:
        if tolerate:
            return {"build": build_s, "suites": {}, "failed": [BUILD_STEP], "noise": {},
                    "results": {}, "cases": {}}
        raise BaselineError(f"the unmutated tree does not build ({' '.join(CFG.build_command)})"
                            f"; see {log}")
    times, failed, noise, results, cases, why = {}, [], {}, {}, {}, {}
    by_results = CFG.passes == config_mod.RESULTS
    built = (jobs > 1 and not by_results and len(suite_list) > 1
             and build_programs(tree, make_vars, suite_list, log, jobs=jobs))
    if built:
        return _side_by_side(tree, make_vars, suite_list, logdir, log, jobs, tolerate, export,
                             build_s, built)
    for s in suite_list:
        at, since = size_of(log), time.time()
        runs = []
        for _ in range(max(1, CFG.runs) if by_results else 1):
            clear_results(tree)
            status, secs = run_make(tree, BUILD_IN_COPY, make_vars, s, log, jobs=jobs)
            runs.append(result_set(tree) if by_results else None)
            if by_results and status is not None:
                # its verdict is its results, whatever its exit; none is a failure
                status = 0 if runs[-1] else 1
            if status != 0:
                break
        if export:
            export_outputs(tree, export)
        if status != 0:
            if not tolerate:
                raise BaselineError(f"the unmutated tree fails {s}"
                                    + (" (it wrote no results)" if by_results else "")
                                    + f"; see {log}")
            failed.append(s)
            why[s] = first_error(read_from(log, at))
            continue
        times[s] = secs
        cases[s] = case_times_since(tree, since)
        noise[s] = noise_since(tree, log, at, since)
        if by_results:
            results[s] = agreed(runs)
    return {"build": build_s, "suites": times, "failed": failed, "noise": noise,
            "results": results, "cases": cases, "why": why}


def _side_by_side(tree, make_vars, suite_list, logdir, log, jobs, tolerate, export, build_s,
                  built):
    """baseline's suites, their programs built (built: {suite: seconds}):
    `jobs` at a time."""
    clear_results(tree)
    since = time.time()

    def one(s):
        own = os.path.join(logdir, "baseline-" + re.sub(r"[^\w.-]", "_", s) + ".log")
        if os.path.exists(own):
            os.unlink(own)
        status, secs = run_make(tree, BUILD_IN_COPY, make_vars, s, own)
        return status, secs, own

    with ThreadPoolExecutor(jobs) as pool:
        runs = dict(zip(suite_list, pool.map(one, suite_list)))
    if export:
        export_outputs(tree, export)
    case_times = case_times_since(tree, since)
    times, failed, noise, cases, why = {}, [], {}, {}, {}
    for s in suite_list:
        status, secs, own = runs[s]
        said = read_from(own, 0)
        with open(log, "a") as f:
            f.write(said)
        if status != 0:
            if not tolerate:
                raise BaselineError(f"the unmutated tree fails {s}; see {own}")
            failed.append(s)
            why[s] = first_error(said)
            continue
        times[s] = built[s] + secs
        cases[s] = dict(case_times)
        noise[s] = noise_since(tree, own, 0, since)
    return {"build": build_s, "suites": times, "failed": failed, "noise": noise,
            "results": {}, "cases": cases, "why": why}


def first_error(text):
    """The line of a failed suite's log that says why, for a warning that
    is read in a CI log without the file: a compiler's error, else a
    failed test, else make's own last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern in (r"\berror:", r"\bfail(ed)?\b|Failures: [1-9]", r"\*\*\*"):
        hit = next((line for line in lines if re.search(pattern, line)), None)
        if hit:
            return hit[:300]
    return lines[-1][:300] if lines else "it printed nothing"


def noise_since(tree, log, at, since):
    """The marker lines (normalised) a passing suite printed since offset at
    of its log and wrote to its reports since time since: what a kill on
    that suite is not put down to."""
    said = read_from(log, at) + "\n" + reports_since(tree, since)
    return sorted({normal_line(line) for _, line in markers(said)})


def agreed(runs):
    """{test: passed} over several runs' result sets; None where they
    disagree, or where a test is missing from a run."""
    out = {}
    for test in set().union(*runs):
        seen = {r.get(test) for r in runs}
        out[test] = seen.pop() if len(seen) == 1 else None
    return out


def unstable(expected):
    """The tests the unmutated runs disagreed on."""
    return sorted(t for t, v in expected.items() if v is None)


# ---- coverage ---------------------------------------------------------------

# Linked into every binary of the coverage build: a test that dies of a
# signal (a death test's abort or trap) still writes its counters.
_DUMP_ON_SIGNAL = r"""
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
extern void __gcov_dump(void);
void fail_nth(unsigned long n) __attribute__((weak)); /* testutil.h's injection */
static volatile sig_atomic_t dumping;
static void dump_and_die(int sig)
{
    /* a fault inside the dump itself must not wait on gcov's lock */
    if (dumping) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    dumping = 1;
    if (fail_nth)
        fail_nth(0);
    /* A test that used up its address space under a soft limit: lift it
    ** to write the counters; with no room still, die without them. */
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_AS, &r);
    }
    void *room = mmap(0, 1 << 22, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (room != MAP_FAILED) {
        munmap(room, 1 << 22);
        __gcov_dump();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}
__attribute__((constructor)) static void install(void)
{
    int sigs[] = {SIGABRT, SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGTRAP};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a program's own handler stays (a shim that reports at a crash) */
        if (sigaction(sigs[i], 0, &old) == 0 && old.sa_handler == SIG_DFL)
            signal(sigs[i], dump_and_die);
    }
}
"""


def _gcov_lines(tree, gcdas):
    """{path: set of executed lines} from gcov's JSON for the .gcda files."""
    executed = {}
    if not gcdas:
        return executed
    p = subprocess.run(["gcov", "-j", "-t"] + gcdas, cwd=tree, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        data = json.loads(line)
        for f in data.get("files", []):
            path = os.path.normpath(f["file"])
            if os.path.isabs(path):
                path = os.path.relpath(path, tree)
            lines = executed.setdefault(path, set())
            lines.update(l["line_number"] for l in f["lines"] if l["count"] > 0)
    return executed


def _instrumented(tree, gcnos):
    """{path: set of executable lines} from the .gcno files (gcov without
    counters reports every line it could count)."""
    out = {}
    if not gcnos:
        return out
    p = subprocess.run(["gcov", "-j", "-t"] + gcnos, cwd=tree, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            for f in json.loads(line).get("files", []):
                out.setdefault(os.path.normpath(f["file"]), set()).update(
                    l["line_number"] for l in f["lines"])
    return out


def coverage(tree, suite_list, logdir, make_vars=None, jobs=1, expected=None, root=None):
    """Runs every suite once in the coverage build of the unmutated copy
    ([coverage]: its make variables over make_vars; gcc's --coverage).
    Returns {"suites": {suite: {path: [lines]}}, "lines": {path: [lines]},
    "failed": [suites that did not pass there]}; a suite that fails under
    coverage (or, passing by its results, that does not write a result
    for each test of expected's) is treated as reaching everything. With no build folder
    variable (build.dir_var) the build is made in place, in a copy of root
    of its own."""
    if not CFG.dir_var:
        tree = os.path.join(os.path.dirname(os.path.abspath(tree)), "base-cov")
        snapshot(root, tree)
    build = os.path.join(tree, COVERAGE_BUILD)
    counters = build if CFG.dir_var else tree      # where the .gcda and .gcno files land
    os.makedirs(build, exist_ok=True)
    helper_c = os.path.join(build, "dump_on_signal.c")
    helper_o = os.path.join(build, "dump_on_signal.o")
    pathlib.Path(helper_c).write_text(_DUMP_ON_SIGNAL)
    subprocess.run([CFG.coverage_cc, "-fPIC", "-c", helper_c, "-o", helper_o], check=True)
    cov_vars = dict(make_vars or {})
    cov_vars.update({k: config_mod.expand(v, {"dump_on_signal": helper_o})
                     for k, v in CFG.coverage_vars.items()})
    log = os.path.join(logdir, "coverage.log")
    if os.path.exists(log):
        os.unlink(log)
    result = {"suites": {}, "lines": {}, "failed": []}
    for s in suite_list:
        for g in pathlib.Path(counters).rglob("*.gcda"):
            g.unlink()
        clear_results(tree, COVERAGE_BUILD)
        status, _ = run_make(tree, COVERAGE_BUILD, cov_vars, s, log, jobs=jobs)
        if expected and s in expected and status is not None:
            # passing by its results: what it ran is what counts here (a
            # figure may move under -O0); it ran everything when it wrote
            # a result for every test of the unmutated run
            status = 0 if set(result_set(tree, COVERAGE_BUILD)) >= set(expected[s]) else 1
        if status != 0:
            result["failed"].append(s)
            continue
        gcdas = [str(g) for g in pathlib.Path(counters).rglob("*.gcda")]
        result["suites"][s] = {p: sorted(l) for p, l in _gcov_lines(tree, gcdas).items()}
    gcnos = [str(g) for g in pathlib.Path(counters).rglob("*.gcno")]
    for g in pathlib.Path(counters).rglob("*.gcda"):
        g.unlink()
    result["lines"] = {p: sorted(l) for p, l in _instrumented(tree, gcnos).items()}
    return result


# A line that is one trap statement: gcov counts no block that ends in a
# trap (no edge leaves it), so such a line reads as never executed even
# where a test reaches it (conformance/naive's full region traps).
_TRAP_LINE = re.compile(r"^\s*(?:__builtin_trap|__builtin_unreachable)\s*\(\s*\)\s*;\s*$")


def countable(touched, texts):
    """touched ({path: lines}) with, for each line that is one trap
    statement, the line before it (the condition that leads there), which
    gcov does count."""
    out = {}
    for path, lines in touched.items():
        text = texts.get(path, "").splitlines()
        more = set(lines)
        for n in lines:
            if 1 < n <= len(text) and _TRAP_LINE.match(text[n - 1]):
                before = n - 1
                while before > 1 and not text[before - 1].strip():
                    before -= 1
                more.add(before)
        out[path] = more
    return out


def covering(cov, touched, suite_list):
    """The suites that can reach a mutant that touches {path: lines}.

    A suite reaches it when it executed one of its lines. When none of the
    lines is executable (a declaration, a macro), every suite that executed
    any line of the file counts; a file gcov never saw (a header of
    constants) is reached by every suite."""
    reach = set(cov.get("failed", []))
    for path, lines in touched.items():
        executable = set(cov["lines"].get(path, []))
        if path not in cov["lines"]:
            return [s for s in suite_list]
        for s, files in cov["suites"].items():
            ran = set(files.get(path, []))
            if (lines & executable and ran & lines) or (not lines & executable and ran):
                reach.add(s)
    return [s for s in suite_list if s in reach]
