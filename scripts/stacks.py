#!/usr/bin/env python3
"""stacks.py: stacks read by gdb, for a hang, a crash or a fuzzer's find.

The mutant driver (scripts/mutants/hang.py), conformance/run.py and make
fuzz (fuzz/run_afl.sh) share it:

- attach(pid): every thread's stack of a live process (gdb -p, batch);
- core(exe, core): the faulting thread's stack from a core file, by
  eu-stack (elfutils) where it is installed, else by gdb;
- core_exe(core), core_signal(core): the program that wrote a core and the
  signal it died of, read from the core's own notes;
- replay(argv): runs a program under gdb; the faulting stack if it dies of
  a signal;
- triage: `stacks.py triage --harness BIN --crashes DIR --hangs DIR`
  replays each input a fuzzer kept and prints one entry for each distinct
  stack (the hash of its top frames), then "triage: N crashes, M hangs".

Where gdb is missing or ptrace is refused, note() says so once, on one
line, and every function returns no stack: the callers go on without.
Python standard library only.
"""
import argparse
import hashlib
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading

# the gdb to use: RT_GDB, or gdb on PATH (a test points it at no file)
GDB_ENV = "RT_GDB"
# the eu-stack to read cores with: RT_EU_STACK, or eu-stack on PATH
EU_STACK_ENV = "RT_EU_STACK"
GDB_SECONDS = 15          # a bound on one gdb run (attach, read, detach)
TOP = 4                   # frames that name a stack (its dedup hash, its summary)

_said = set()
_said_lock = threading.Lock()


def note(key, line, stream=None):
    """Prints line once a process (by key): the one-line notice that stacks
    are missing, never repeated for each hang or crash."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    print(line, file=stream or sys.stderr, flush=True)


def gdb_path():
    return os.environ.get(GDB_ENV) or "gdb"


def _found(path):
    return path if os.sep in path and os.access(path, os.X_OK) else (
        None if os.sep in path else shutil.which(path))


def gdb_found(who="stacks"):
    """The gdb binary, or None (and the notice, once)."""
    path = gdb_path()
    found = _found(path)
    if not found:
        what = "hangs are" if eu_stack_found() else "hangs and crashes are"
        note("gdb-missing", f"{who}: gdb is missing ({path}): {what} reported without stacks")
    return found


def eu_stack_found():
    """The eu-stack binary (elfutils), or None: gdb reads cores then."""
    return _found(os.environ.get(EU_STACK_ENV) or "eu-stack")


def cores_readable(who="stacks"):
    """Whether a core's stack can be read here (eu-stack or gdb)."""
    return bool(eu_stack_found() or gdb_found(who))


def _gdb_cmd(gdb, *args):
    return [gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-iex", "set pagination off", "-iex", "set width 0",
            "-iex", "set print frame-arguments none", "-iex", "set print thread-events off",
            "-iex", "set auto-load safe-path /"] + list(args)


# ---- gdb's backtrace text --------------------------------------------------

class Frame:
    __slots__ = ("func", "file", "line", "lib")

    def __init__(self, func, file=None, line=None, lib=None):
        self.func, self.file, self.line, self.lib = func, file, line, lib

    @property
    def ours(self):
        """A frame of the program's own source (not libc's, not unknown)."""
        return bool(self.file) and not self.file.startswith(("../", "./", "/usr/"))

    def __str__(self):
        where = (f" {os.path.basename(self.file)}:{self.line}" if self.file
                 else f" [{os.path.basename(self.lib)}]" if self.lib else "")
        return self.func + where

    def to_dict(self):
        return {"func": self.func, "file": self.file, "line": self.line, "lib": self.lib}


_THREAD = re.compile(r"^Thread (\d+) \((?:Thread 0x[0-9a-fA-F]+ \(LWP (\d+)\)|LWP (\d+)|process (\d+))")
_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-fA-F]+ in )?(\S+)(?: \(.*\))?"
                    r"(?: at (\S+):(\d+)| from (\S+))?\s*$")


def parse_frame(line):
    m = _FRAME.match(line.strip())
    if not m:
        return None
    return Frame(m.group(2), m.group(3), int(m.group(4)) if m.group(4) else None, m.group(5))


def parse_bt(text):
    """[(lwp or None, [Frame])] from `thread apply all bt` (or a bare bt:
    one thread with no lwp)."""
    threads, cur = [], None
    for line in text.splitlines():
        t = _THREAD.match(line)
        if t:
            cur = (int(next(g for g in t.groups()[1:] if g)), [])
            threads.append(cur)
            continue
        if line.startswith("#"):
            f = parse_frame(line)
            if f is None:
                continue
            if cur is None:
                cur = (None, [])
                threads.append(cur)
            cur[1].append(f)
    return [t for t in threads if t[1]]


def summary(frames, n=TOP):
    """The top frames, innermost first: "f file.c:12 < g file.c:40"; the
    first frame of the program's own code is always shown."""
    shown = list(frames[:n])
    if frames and not any(f.ours for f in shown):
        own = next((f for f in frames if f.ours), None)
        if own is not None:
            shown.append(own)
    return " < ".join(str(f) for f in shown)


def compact(frames, n=3):
    """A waiting or running thread in few words: the call the program made
    into a library (the frame just above its own code), then n frames of
    its own code: "___pthread_mutex_lock pthread_mutex_lock.c:93 <
    calc_worker calc.c:8". Without a frame of its own, summary()."""
    first = next((i for i, f in enumerate(frames) if f.ours), None)
    if first is None:
        return summary(frames)
    shown = frames[first - 1:first] + [f for f in frames[first:] if f.ours][:n]
    return " < ".join(str(f) for f in shown)


def key(frames, n=TOP):
    """The hash that makes two stacks one: the top n function names below
    the signal machinery (abort, raise, the sanitizers' reporting)."""
    top = [f.func for f in frames if not _machinery(f.func)][:n]
    return hashlib.sha1("\n".join(top).encode()).hexdigest()[:12]


_MACHINE_NAMES = {"raise", "abort", "pthread_kill", "__libc_message", "__libc_fatal",
                  "__fortify_fail", "__assert_fail", "__assert_fail_base", "__stack_chk_fail"}
_MACHINE_PREFIXES = ("__asan", "__ubsan", "__sanitizer", "__interceptor", "__lsan",
                     "asan::", "__asan::", "__ubsan::", "__sanitizer::", "__pthread_kill")


def below_machinery(frames):
    """The frames from the fault down, without raise, abort and the like."""
    return [f for f in frames if not _machinery(f.func)] or frames


def _machinery(func):
    """A frame of how a signal is raised, not of where the fault is."""
    bare = re.sub(r"^(__GI_+)", "", func)
    return (bare in _MACHINE_NAMES or func in _MACHINE_NAMES
            or func.startswith(_MACHINE_PREFIXES) or bare.startswith(_MACHINE_PREFIXES))


# ---- live processes, cores, replays -----------------------------------------

def _run_gdb(cmd, timeout=GDB_SECONDS):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return None
    return p.stdout + p.stderr


PF_EXITING = 0x4            # a task's flags (/proc/<pid>/stat, field 9): in exit


def passing_refusal(pid):
    """Whether ptrace's refusal of pid says nothing of this machine: the
    process is gone, dying (a zombie, or PF_EXITING: a case Check killed
    at its timeout as the look began) or traced already. Such a refusal
    is that one process's; one of a live process is the machine's."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            traced = any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in f)
    except (OSError, IndexError):
        return True
    state, flags = rest[0], int(rest[6]) if len(rest) > 6 and rest[6].isdigit() else 0
    return state in "ZXx" or bool(flags & PF_EXITING) or traced


def attach(pid, who="stacks"):
    """[(lwp, [Frame])] of every thread of the live process pid, or None
    (no eu-stack nor gdb, ptrace refused: said once, and no process is
    read again; a refusal passing_refusal explains is that process's
    alone, which until 6 Dec 2026 stopped every later look of the run: 78
    of the gate's 83 timeouts went without stacks). The process is
    stopped while eu-stack (0.13 s a process, 2 Dec 2026), else gdb (0.4
    s), reads it, and left as it was (both detach)."""
    if "ptrace" in _said:                  # refused once: refused for the run
        return None
    eu = eu_stack_found()
    if eu:
        env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
        try:
            p = subprocess.run([eu, "-i", "-s", "-m", "-n", "40", "-p", str(pid)],
                               capture_output=True, text=True, errors="replace", env=env,
                               stdin=subprocess.DEVNULL, timeout=GDB_SECONDS)
            threads = parse_eu_threads(p.stdout)
            if threads:
                return threads
            if "Operation not permitted" in p.stderr:
                if passing_refusal(pid):
                    return None
                note("ptrace", f"{who}: ptrace is refused here (eu-stack -p {pid}: "
                               f"{_first(p.stderr, 'permitted')}): hangs are reported "
                               f"without stacks")
                return None
        except (OSError, subprocess.TimeoutExpired):
            pass
    gdb = gdb_found(who)
    if gdb is None:
        return None
    out = _run_gdb(_gdb_cmd(gdb, "-p", str(pid), "-ex", "thread apply all bt 40"))
    if out is None:
        return None
    if "ptrace: Operation not permitted" in out or "Could not attach to process" in out:
        if passing_refusal(pid):
            return None
        note("ptrace", f"{who}: ptrace is refused here (gdb -p {pid}: "
                       f"{_first(out, 'ptrace') or 'not permitted'}): hangs are "
                       f"reported without stacks")
        return None
    return parse_bt(out)


def _first(text, word):
    return next((l.strip() for l in text.splitlines() if word in l), "")


def core(exe, core_file, who="stacks"):
    """(signal name, [Frame]) of the thread that died, from a core file;
    (None, []) with neither eu-stack nor gdb. eu-stack reads one in 0.09 s
    where gdb takes 0.33 s (a core of check_interleave, 2 Dec 2026), and
    the mutant driver reads one for each kill by a crash (467 in a gate's
    run): gdb reads them only where elfutils is missing."""
    eu = eu_stack_found()
    if eu:
        frames = _eu_stack(eu, exe, core_file)
        if frames:
            return core_signal(core_file), frames
    gdb = gdb_found(who)
    if gdb is None:
        return None, []
    out = _run_gdb(_gdb_cmd(gdb, "-ex", "echo @@stack@@\\n", "-ex", "bt 40", exe,
                            core_file)) or ""
    m = re.search(r"terminated with signal (SIG\w+)", out)
    threads = parse_bt(out.split("@@stack@@", 1)[-1]) if "@@stack@@" in out else []
    return (m.group(1) if m else None), (threads[0][1] if threads else [])


def replay(argv, timeout=30, env=None, cwd=None, who="stacks"):
    """Runs argv under gdb. Returns (what, signal name, [Frame]): what is
    "crash" (it died of a signal), "hang" (still running after timeout:
    its stacks are read, then it is killed), "exit" or "nogdb"."""
    gdb = gdb_found(who)
    if gdb is None:
        return "nogdb", None, []
    # a hang: run it plainly, look at it at the timeout, kill it
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        threads = attach(p.pid, who) or []
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        frames = next((fr for _, fr in threads if any(f.ours for f in fr)),
                      threads[0][1] if threads else [])
        return "hang", None, frames
    if p.returncode >= 0:
        return "exit", None, []
    # it died of a signal: once more under gdb, for the faulting stack
    name, frames = under_gdb(argv, timeout, env, cwd, who)
    return "crash", name or signal.Signals(-p.returncode).name, frames


def under_gdb(argv, timeout=30, env=None, cwd=None, who="stacks"):
    """Runs argv under gdb: (the signal it died of, its faulting stack),
    or (None, []) if it did not die of one there (or no gdb)."""
    gdb = gdb_found(who)
    if gdb is None:
        return None, []
    try:
        p = subprocess.run(_gdb_cmd(gdb, "-ex", "run", "-ex", "echo @@stack@@\\n",
                                    "-ex", "bt 40", "--args", *argv),
                           capture_output=True, text=True, errors="replace", env=env, cwd=cwd,
                           stdin=subprocess.DEVNULL, timeout=timeout + GDB_SECONDS)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, []
    m = re.search(r"Program received signal (SIG\w+)", out)
    threads = parse_bt(out.split("@@stack@@", 1)[-1]) if m else []
    return (m.group(1) if m else None), (threads[0][1] if threads else [])


def find_cores(top, since):
    """Core files (ELF of type core) under top written since the time
    since, newest first, as core_pattern names them here; [] if the
    pattern is a pipe (systemd-coredump, apport): no file appears."""
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
    except OSError:
        pattern = "core"
    if pattern.startswith("|"):
        return []
    stem = os.path.basename(pattern).split("%", 1)[0] or "core"
    where = [os.path.dirname(pattern)] if os.path.isabs(pattern) else [top]
    found = []
    for base in where:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
            for name in filenames:
                if not name.startswith(stem):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                    if st.st_mtime < since or st.st_size < 64:
                        continue
                    with open(path, "rb") as f:
                        head = f.read(18)
                except OSError:
                    continue
                # ELF, e_type (little-endian) 4: a core
                if head[:4] == b"\x7fELF" and head[16:18] == b"\x04\x00":
                    found.append((st.st_mtime, path))
    return [p for _, p in sorted(found, reverse=True)]


# eu-stack's lines: "#3  0x000055e0c1a2b3c4 rt_send - /path/check_chan",
# then, indented, "/path/chan.c:210:5" when it knows the source
_EU_FRAME = re.compile(r"^#(\d+)\s+0x[0-9a-fA-F]+(?:\s+(?!-\s)(\S+))?(?:\s+-\s+(.+))?$")
_EU_SOURCE = re.compile(r"^\s+(\S+?):(\d+)(?::\d+)?$")


def _eu_stack(eu, exe, core_file):
    """[Frame] of the first thread eu-stack lists (the one that dumped the
    core: the kernel writes its registers first), inlined calls as frames
    of their own, as gdb shows them; [] when it reads none."""
    cmd = [eu, "-i", "-s", "-m", "-n", "40", f"--core={core_file}"]
    if exe:
        cmd.append(f"--executable={exe}")
    env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, env=env, timeout=GDB_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_eu_stack(p.stdout)


def parse_eu_stack(text):
    """The first thread's [Frame] from eu-stack -i -s -m's text, ending at
    main as gdb's do (its backtrace past-main is off)."""
    threads = parse_eu_threads(text)
    return threads[0][1] if threads else []


def parse_eu_threads(text):
    """[(tid, [Frame])] of every thread in eu-stack -i -s -m's text, as
    parse_bt gives gdb's; each stack ends at main."""
    threads, frames, past_main = [], None, False
    for line in text.splitlines():
        t = re.match(r"^TID (\d+):", line)
        if t:
            frames, past_main = [], False
            threads.append((int(t.group(1)), frames))
            continue
        if frames is None:
            continue
        m = _EU_FRAME.match(line)
        if m and past_main:
            continue
        if m:
            lib = (m.group(3) or "").strip()
            frames.append(Frame(m.group(2) or "??", None, None,
                                lib if lib and lib != "?" else None))
            past_main = m.group(2) == "main"
            continue
        m = _EU_SOURCE.match(line)
        if m and frames and frames[-1].file is None:
            frames[-1].file, frames[-1].line = m.group(1), int(m.group(2))
    return [t for t in threads if t[1]]


# ---- a core's own notes (ELF64, little-endian: x86-64 and aarch64 Linux) --

_NT_PRSTATUS, _NT_PRPSINFO, _NT_FILE = 1, 3, 0x46494C45


def core_notes(core_file):
    """{"signal": the dumping thread's signal number, "fname": the
    program's name (15 characters at most), "psargs": its command line (80
    at most), "files": the mapped files' paths in order}, from the core's
    PT_NOTE segments; None when it is no core this reads."""
    try:
        with open(core_file, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff = struct.unpack_from("<Q", head, 0x20)[0]
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            out = {"signal": None, "fname": "", "psargs": "", "files": []}
            for i in range(phnum):
                ptype, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", table,
                                                                    i * phentsize)
                if ptype == 4:                  # PT_NOTE
                    f.seek(offset)
                    _read_notes(f.read(filesz), out)
            return out
    except (OSError, struct.error, IndexError):
        return None


def _read_notes(data, out):
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, at)
        desc = at + 12 + ((namesz + 3) & ~3)
        body = data[desc:desc + descsz]
        at = desc + ((descsz + 3) & ~3)
        if ntype == _NT_PRSTATUS and out["signal"] is None and len(body) >= 4:
            out["signal"] = struct.unpack_from("<i", body, 0)[0]     # si_signo
        elif ntype == _NT_PRPSINFO and len(body) >= 136:
            out["fname"] = body[40:56].split(b"\0", 1)[0].decode(errors="replace")
            out["psargs"] = body[56:136].split(b"\0", 1)[0].decode(errors="replace")
        elif ntype == _NT_FILE and len(body) >= 16:
            count = struct.unpack_from("<Q", body, 0)[0]
            names = body[16 + 24 * count:].split(b"\0")
            out["files"] = [n.decode(errors="replace") for n in names[:count]]


def core_signal(core_file):
    """The name of the signal the core's process died of (SIGSEGV), or None."""
    notes = core_notes(core_file)
    try:
        return signal.Signals(notes["signal"]).name if notes else None
    except (ValueError, TypeError):
        return None


def core_exe(core_file, who="stacks"):
    """The program that wrote a core: the mapped file named as the process
    was (the core's NT_FILE and NT_PRPSINFO notes), else the first word of
    its command line; gdb's reading of the core where its notes say
    neither."""
    notes = core_notes(core_file)
    if notes:
        named = [p for p in notes["files"] if notes["fname"]
                 and os.path.basename(p).startswith(notes["fname"])]
        if named:
            return named[0]
        if notes["psargs"]:
            return notes["psargs"].split()[0]
    gdb = gdb_found(who)
    if gdb is None:
        return None
    out = _run_gdb(_gdb_cmd(gdb, "-ex", "info proc exe", "-c", core_file)) or ""
    m = re.search(r"Core was generated by `([^' ]+)", out)
    return m.group(1) if m else None


# ---- fuzz triage ------------------------------------------------------------

def triage(harness, crash_dirs, hang_dirs, timeout=5, out=sys.stdout, env=None):
    """Replays every input under gdb with the harness; prints one entry a
    distinct stack and "triage: N crashes, M hangs" (distinct ones).
    Returns (crashes, hangs): {key: (signal, frames, [inputs])}."""
    found = {"crash": {}, "hang": {}}
    inputs = [(d, "crash") for d in crash_dirs] + [(d, "hang") for d in hang_dirs]
    for d, kind in inputs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isfile(path) or name.startswith("README"):
                continue
            what, sig, frames = replay([harness, path], timeout=timeout, env=env, who="triage")
            if what == "exit":
                # a find that no longer fails here: listed under its kind, no stack
                what, sig = kind, "did not fail on replay"
            elif what == "nogdb":
                what = kind
            k = key(frames) if frames else "nostack-" + (sig or kind)
            entry = found[what].setdefault(k, [sig, frames, []])
            entry[2].append(path)
    for what in ("crash", "hang"):
        for k, (sig, frames, paths) in sorted(found[what].items()):
            inputs = f"({len(paths)} input{'s' if len(paths) != 1 else ''}, e.g. {paths[0]})"
            if frames:
                print(f"triage: {what} {k}{' ' + sig if sig else ''}: "
                      f"{summary(below_machinery(frames))} {inputs}", file=out)
            else:
                print(f"triage: {what} without a stack ({sig or 'gdb read none'}) {inputs}",
                      file=out)
    print(f"triage: {len(found['crash'])} crashes, {len(found['hang'])} hangs", file=out)
    return found["crash"], found["hang"]


def main(argv=None):
    ap = argparse.ArgumentParser(description="stacks by gdb: fuzz triage")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("triage", help="replay a fuzzer's crashes and hangs under gdb")
    t.add_argument("--harness", required=True)
    t.add_argument("--crashes", action="append", default=[])
    t.add_argument("--hangs", action="append", default=[])
    t.add_argument("--timeout", type=float, default=5)
    args = ap.parse_args(argv)
    triage(args.harness, args.crashes, args.hangs, timeout=args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
