"""measure.py: builds a conformance program, runs it, and takes its metrics.

Three ways to build (a program's "build:" directive):
  runtime  the variant's compiler and flags, linked with the runtime
           library; in a sanitizer variant the shim is linked in too
           (see shim.c: a preloaded malloc and a sanitizer's cannot both win).
  plain    the variant's compiler, no runtime, no sanitizer: a control that
           measures glibc, so the preloaded shim observes it in every variant.
  cc-only  exactly "cc -Ireference/include reference/src/*.c prog.c
           -lpthread" (plus -o), with the variant's compiler as cc; with
           another implementation (--lib), its library takes the place of
           the sources.

Each measurement is taken only when an expectation names it: the program
runs with the shim when a "shim." metric is named (its stdout is read for
"observe" lines always), and once more under strace -f when a "strace."
metric is named (see run() for why that is a second run).
"""
import glob
import os
import re
import resource
import shlex
import subprocess
from dataclasses import dataclass, field

HANG_GUARD_SECONDS = 180  # not a bound on time: only so a hang cannot stall make
TRACED = ("brk", "mmap", "munmap", "madvise")
WRAP_FLAGS = ["-Wl,--wrap=malloc", "-Wl,--wrap=free", "-Wl,--wrap=pthread_join"]


@dataclass
class Config:
    build: str          # $(BUILD)
    cc: list            # the compiler command, split into words
    cflags: list
    ldflags: list
    sanitize: str
    plain_cflags: list
    rt_lib: str
    shim_so: str
    shim_wrap_o: str
    impl: bool = False  # rt_lib is another implementation (make check IMPL=)


@dataclass
class Run:
    metrics: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def build(prog, cfg):
    """Builds prog; returns (binary, None) or (None, why)."""
    out = os.path.join(cfg.build, "conformance", prog.name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if prog.build == "cc-only" and cfg.impl:
        # Another implementation has no sources here: the same bare command,
        # with its library in place of reference/src/*.c.
        cmd = [*cfg.cc, "-Ireference/include", prog.path, cfg.rt_lib, "-lpthread", "-o", out]
    elif prog.build == "cc-only":
        srcs = sorted(glob.glob("reference/src/*.c"))
        cmd = [*cfg.cc, "-Ireference/include", *srcs, prog.path, "-lpthread", "-o", out]
    elif prog.build == "plain":
        cmd = [*cfg.cc, *cfg.plain_cflags, prog.path, "-o", out]
    else:
        cmd = [*cfg.cc, *cfg.cflags, prog.path, cfg.rt_lib, *cfg.ldflags, "-o", out]
        if shim_linked(prog, cfg):
            cmd[-2:-2] = [cfg.shim_wrap_o, *WRAP_FLAGS]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"build failed: {shlex.join(cmd)}: {proc.stderr.strip()[-500:]}"
    return out, None


def shim_linked(prog, cfg):
    """Whether the program carries the shim itself instead of preloading it."""
    return prog.build == "runtime" and bool(cfg.sanitize)


def run(prog, binary, cfg):
    """Runs prog with the shim (when named) and, when a "strace." metric is
    named, once more under strace -f for the system calls alone.

    Two runs, not one, because LeakSanitizer cannot work under ptrace: at
    exit it stops the world by ptrace-attaching to the process's threads,
    which strace already traces, and spins. The traced run turns leak
    detection off (ASAN_OPTIONS=detect_leaks=0, only there); the first run
    keeps every check the variant has.
    """
    report = os.path.join(cfg.build, "conformance", prog.name + ".shim")
    trace = os.path.join(cfg.build, "conformance", prog.name + ".strace")
    for stale in (report, trace):
        if os.path.exists(stale):
            os.remove(stale)
    env = dict(os.environ)
    if prog.needs("shim"):
        env["RT_SHIM_REPORT"] = report
        if not shim_linked(prog, cfg):
            env["LD_PRELOAD"] = cfg.shim_so

    result = Run()
    proc = _run([binary], env, result, core=not expects_a_signal(prog))
    if proc is None:
        return result
    result.outputs = {"stdout": proc.stdout, "stderr": proc.stderr}
    code = proc.returncode
    result.metrics["exit"] = code if code >= 0 else -1
    result.metrics["signal"] = -code if code < 0 else 0
    result.metrics.update(_observations(proc.stdout))
    if prog.needs("shim"):
        result.metrics.update(_shim_metrics(report, result.notes))
    if prog.needs("strace"):
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
        cmd = ["strace", "-f", "-qq", "--seccomp-bpf", "-c", "-o", trace,
               "-e", "trace=" + ",".join(TRACED), "--", binary]
        traced = _run(cmd, env, result, core=False)
        if traced is not None and traced.returncode != code:
            result.notes.append(f"under strace it exited {traced.returncode}, not {code}: "
                                f"{traced.stderr.strip()[-300:]}")
        else:
            result.metrics.update(_strace_counts(trace, result.notes))
    return result


def expects_a_signal(prog):
    """Whether prog declares the signal it dies of (a violation's abort)."""
    return any(e.metric == "signal" and not (e.op == "==" and e.value == 0)
               for e in prog.expectations)


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _run(cmd, env, result, core=True):
    """An expected death (core=False) writes no core file: a core the mutant
    driver finds is then an unexpected crash's, read with no second run
    (a violation's core is also hundreds of MB of reserved address space)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=HANG_GUARD_SECONDS,
                              preexec_fn=None if core else _no_core)
    except subprocess.TimeoutExpired:
        result.notes.append(f"{cmd[0]} still running after {HANG_GUARD_SECONDS} s: killed")
        return None


def _observations(stdout):
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"^observe (\w+) (-?\d+)\s*$", line)
        if m:
            found["prog." + m.group(1)] = int(m.group(2))
    return found


def _strace_counts(path, notes):
    """strace -c's table: calls is the 4th column, the syscall the last."""
    if not os.path.exists(path):
        notes.append("strace wrote no summary")
        return {}
    counts = {"strace." + name: 0 for name in TRACED}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 5 and cols[-1] in TRACED and cols[3].isdigit():
                counts["strace." + cols[-1]] = int(cols[3])
    return counts


def _shim_metrics(path, notes):
    """The shim's report (shim.c) folded into named metrics:
    shim.{mallocs,frees,dirty,cross_frees}   sums over every thread
    shim.threads                             threads that touched a chunk
    shim.max_mallocs_per_thread, shim.max_live_per_thread
    shim.main.<field>, shim.others.<field>   main's record; the rest summed
    shim.joined                              threads joined
    shim.live_at_join                        chunks still live, summed over
                                             the joined threads, when each
                                             one's join returned
    """
    if not os.path.exists(path):
        notes.append("the shim wrote no report (did the program exit normally?)")
        return {}
    head, threads = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            pairs = dict(w.split("=", 1) for w in words[1:])
            if words[0] == "shim":
                head = pairs
            elif words[0] == "thread":
                threads.append({k: int(v) for k, v in pairs.items()})
    if head.get("chunks_overflow") != "0" or head.get("threads_overflow") != "0":
        notes.append("the shim's tables overflowed: its counts are incomplete")
        return {}
    summed = ("mallocs", "frees", "dirty", "cross_frees")
    m = {"shim." + k: sum(t[k] for t in threads) for k in summed}
    m["shim.threads"] = len(threads)
    m["shim.max_mallocs_per_thread"] = max((t["mallocs"] for t in threads), default=0)
    m["shim.max_live_per_thread"] = max((t["max_live"] for t in threads), default=0)
    joined = [t for t in threads if t["joined"]]
    m["shim.joined"] = len(joined)
    m["shim.live_at_join"] = sum(t["live_at_join"] for t in joined)
    main = next((t for t in threads if t["main"]), None)
    others = [t for t in threads if not t["main"]]
    for k in summed + ("live",):
        m[f"shim.main.{k}"] = main[k] if main else 0
        m[f"shim.others.{k}"] = sum(t[k] for t in others)
    return m
