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
  instructions_per_pair_<B>B       a region open, alloc of B bytes, close
  instructions_fill_<B>B           writing B bytes (what alloc's fill costs)
  instructions_clear_<B>B          clearing B bytes (the store give makes)
  instructions_pair_beyond_fill_and_clear_<B>B   the pair less both
  instructions_pair_thread_lookups_<B>B  of the pair, those spent finding
                                   the thread's state (rt__hot_or_null)
  instructions_per_malloc_free_pair  malloc/free of 64 KiB, user space only
  threads_<T>_over_1               user+sys time a region with T threads
                                   over the same with one (flat is 1.00)
Instruction counts come from callgrind: a run of N less a run of 0, over N.
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


def instructions(binary, *args):
    """(total, in the thread-state lookup): instructions of one run, and
    those spent inside rt__hot_or_null (pthread_getspecific included)."""
    with tempfile.NamedTemporaryFile("r", suffix=".callgrind") as t:
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + t.name,
                        binary, *args], capture_output=True, check=True)
        total = next((int(line.split()[1]) for line in t
                      if line.startswith(("summary:", "totals:"))), None)
        if total is None:
            raise RuntimeError("callgrind wrote no total")
        lookup = 0
        for line in out(["callgrind_annotate", "--inclusive=yes", t.name]).splitlines():
            m = re.match(r"^\s*([\d,]+)\s.*:rt__hot_or_null\b", line)
            if m:  # the first is the function's total; later ones are per call site
                lookup = int(m.group(1).replace(",", ""))
                break
        return total, lookup


def per_one(binary, mode, size):
    """Instructions of one iteration (and of its lookups): N less 0, over N."""
    n = instructions(binary, mode, str(CALLGRIND_N), str(size))
    zero = instructions(binary, mode, "0", str(size))
    return ((n[0] - zero[0]) / CALLGRIND_N, (n[1] - zero[1]) / CALLGRIND_N)


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
        pair, lookup = per_one(binary, "pairs", size)
        fill = per_one(binary, "fill", size)[0]
        clear = per_one(binary, "clear", size)[0]
        fig(f"instructions_per_pair_{size}B", f"{pair:.1f}")
        fig(f"instructions_pair_thread_lookups_{size}B", f"{lookup:.1f}")
        fig(f"instructions_fill_{size}B", f"{fill:.1f}")
        fig(f"instructions_clear_{size}B", f"{clear:.1f}")
        fig(f"instructions_pair_beyond_fill_and_clear_{size}B", f"{pair - fill - clear:.1f}")
    n = instructions(binary, "mallocpair", str(CALLGRIND_N))[0]
    zero = instructions(binary, "mallocpair", "0")[0]
    fig("instructions_per_malloc_free_pair", f"{(n - zero) / CALLGRIND_N:.1f}")

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
