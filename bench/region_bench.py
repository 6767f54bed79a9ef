#!/usr/bin/env python3
"""region_bench.py BUILD: the chunk cache against malloc/free, side by side.

Prints one figure a line, "region: <name> <value>":
  brk_calls_{region,malloc}        brk calls in the whole run of the nested
                                   loop (strace -f), 20,000 rounds
  chunk_mallocs_{region,malloc}    malloc(64 KiB) in that run (the shim)
  cpu_ratio_malloc_over_region_<B>B  user+sys time a round of the nested
                                   loop on malloc/free over the same round
                                   on regions, each region handing out B
                                   bytes; runs alternate, the least of each
  instructions_per_pair_with_loop_<B>B  a region open, alloc of B bytes
                                   (filled), close, with the bench's loop
  instructions_per_pair_<B>B       the same, inside the three calls only
  instructions_pair_in_memset_<B>B of those, inside memset: the fill of
                                   the B bytes and their clearing at close
  instructions_pair_in_thread_lookups_<B>B  of those, finding the thread's
                                   state (rt__hot_or_null)
  instructions_pair_beyond_memset_<B>B   the pair less its two memsets
  instructions_per_malloc_free_pair  malloc/free of 64 KiB, user space only
  threads_<T>_over_1               user+sys time a region with T threads
                                   over the same with one (flat is 1.00)
Instruction counts come from callgrind (inclusive counts a function, from
callgrind_annotate): a run of N less a run of 0, over N.
"""
import os
import re
import subprocess
import sys
import tempfile

STRACE_ROUNDS = 20000
TIMED_ROUNDS = {"region": 2000000, "malloc": 20000}
PASSES = 3
CALLGRIND_N = 50000
THREAD_REGIONS = 300000
SIZES = (0, 64, 4096)


def fig(name, value):
    print(f"region: {name} {value}", flush=True)


def out(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout


def brk_calls(binary, mode):
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as t:
        out(["strace", "-f", "-qq", "--seccomp-bpf", "-c", "-o", t.name, "-e", "trace=brk",
             binary, "nested", mode, str(STRACE_ROUNDS), "64"])
        for line in t:
            cols = line.split()
            if cols and cols[-1] == "brk":
                return int(cols[3])
    return 0


def chunk_mallocs(binary, mode, shim):
    with tempfile.NamedTemporaryFile("r", suffix=".shim") as t:
        env = dict(os.environ, LD_PRELOAD=shim, RT_SHIM_REPORT=t.name)
        out([binary, "nested", mode, str(STRACE_ROUNDS), "64"], env)
        return sum(int(m) for m in re.findall(r"\bmallocs=(\d+)", t.read()))


def cpu_ns(cmd):
    return int(re.search(r"cpu_ns (\d+)", out(cmd)).group(1))


PAIR_FUNCS = ("rt_region_open", "rt_region_alloc", "rt_region_close")


def instructions(binary, *args):
    """The instructions of one run under callgrind: "total", and for each
    function its inclusive count (what it and its callees executed)."""
    with tempfile.NamedTemporaryFile("r", suffix=".callgrind") as t:
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + t.name,
                        binary, *args], capture_output=True, check=True)
        text = out(["callgrind_annotate", "--inclusive=yes", "--threshold=100", t.name])
    counts = {}
    for line in text.splitlines():
        if line.startswith("-- Auto-annotated") or line.startswith("-- User-annotated"):
            break  # below are per-line counts, not per function
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if not m:
            continue
        n, where = int(m.group(1).replace(",", "")), m.group(2)
        if where.startswith("PROGRAM TOTALS"):
            counts["total"] = n
            continue
        func = re.sub(r"\s*\[.*\]$", "", where).rsplit(":", 1)[-1]
        func = func.split("@")[0]
        counts.setdefault(func, n)
    if "total" not in counts:
        raise RuntimeError("callgrind_annotate printed no total")
    return counts


def per_one(binary, *args):
    """Per iteration: a run of CALLGRIND_N less a run of 0, over CALLGRIND_N."""
    n = instructions(binary, args[0], str(CALLGRIND_N), *args[1:])
    zero = instructions(binary, args[0], "0", *args[1:])
    return {k: (n[k] - zero.get(k, 0)) / CALLGRIND_N for k in n}


def main():
    build = sys.argv[1]
    binary = os.path.join(build, "bench", "region_bench")
    shim = os.path.abspath(os.path.join(build, "conformance", "shim.so"))

    for mode in ("region", "malloc"):
        fig(f"brk_calls_{mode}", brk_calls(binary, mode))
    for mode in ("region", "malloc"):
        fig(f"chunk_mallocs_{mode}", chunk_mallocs(binary, mode, shim))

    for size in (64, 4096):
        best = {}
        for _ in range(PASSES):
            for mode, rounds in TIMED_ROUNDS.items():
                ns = cpu_ns([binary, "nested", mode, str(rounds), str(size)]) / rounds
                best[mode] = min(best.get(mode, ns), ns)
        fig(f"cpu_ratio_malloc_over_region_{size}B", f"{best['malloc'] / best['region']:.0f}")

    for size in SIZES:
        one = per_one(binary, "pairs", str(size))
        pair = sum(one.get(f, 0) for f in PAIR_FUNCS)
        memset = sum(v for k, v in one.items() if "memset" in k and k != "total")
        lookups = one.get("rt__hot_or_null", 0)
        fig(f"instructions_per_pair_with_loop_{size}B", f"{one['total']:.1f}")
        fig(f"instructions_per_pair_{size}B", f"{pair:.1f}")
        fig(f"instructions_pair_in_memset_{size}B", f"{memset:.1f}")
        fig(f"instructions_pair_in_thread_lookups_{size}B", f"{lookups:.1f}")
        fig(f"instructions_pair_beyond_memset_{size}B", f"{pair - memset:.1f}")
    one = per_one(binary, "mallocpair")
    fig("instructions_per_malloc_free_pair", f"{one['total']:.1f}")

    best = {}
    for _ in range(PASSES):
        for threads in (1, 2, 4, 8):
            ns = cpu_ns([binary, "threads", str(threads), str(THREAD_REGIONS)])
            per = ns / (threads * THREAD_REGIONS)
            best[threads] = min(best.get(threads, per), per)
    for threads in (2, 4, 8):
        fig(f"threads_{threads}_over_1", f"{best[threads] / best[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
