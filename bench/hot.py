#!/usr/bin/python3
"""bench/hot.py HOT_BENCH: what one rt_hot() costs and what it buys.

Instructions come from callgrind (deterministic): each loop of hot_bench
differs from loop_base only in what it reads, so
(Ir(loop_X) - Ir(loop_base)) / n is the cost of one access, call included
where there is one. Probe times are wall clock, but only as a ratio: the
direct and the fallback processes run alternately, round by round, and the
best of each is compared. A ratio above 1 means the direct path is faster.

Prints "hot: <path> instructions_per_call <n>" and
"hot: <probe> direct/fallback <ratio>" lines; exits 1 if a deterministic
target is missed (at most 4 instructions a direct inline access, probes
doing fewer instructions on the direct path).
"""
import os
import re
import subprocess
import sys
import tempfile

LOOP_N = 200000
PROBE_IR_N = 20000
PROBE_TIME_N = 2000000
ROUNDS = 7


def callgrind(cmd):
    """Inclusive instruction counts by function name, for one run of cmd."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                              check=True, capture_output=True, text=True).stdout
    counts = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:?(\w+)\s", line)
        if m:
            name = m.group(2)
            counts.setdefault(name, int(m.group(1).replace(",", "")))
    return counts


def per_call(counts, name, n):
    return (counts[name] - counts["loop_base"]) / n


def probe_seconds(exe, path, probe):
    out = subprocess.run([exe, "probe", path, probe, str(PROBE_TIME_N)], check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def main():
    exe = sys.argv[1]
    ok = True
    figures = {}
    for path in ("direct", "fallback"):
        c = callgrind([exe, "loops", path, str(LOOP_N)])
        figures[path + "_inline"] = per_call(c, "loop_inline", LOOP_N)
        figures[path + "_call"] = per_call(c, "loop_call", LOOP_N)
        if path == "direct":
            figures["tls_global_dynamic_shared"] = per_call(c, "loop_tls", LOOP_N)
    for name, v in figures.items():
        print(f"hot: {name} instructions_per_call {v:.2f}")
    if round(figures["direct_inline"], 2) > 4:
        ok = False

    for probe, label in (("region", "region_open_close"), ("chunk", "chunk_take_give"),
                         ("alloc_free", "alloc_free")):
        ir = {}
        for path in ("direct", "fallback"):
            c = callgrind([exe, "probe", path, probe, str(PROBE_IR_N)])
            ir[path] = c["probe_" + probe]
        print(f"hot: {label}_instructions direct/fallback {ir['fallback'] / ir['direct']:.3f}")
        ok = ok and ir["fallback"] > ir["direct"]
        best = {"direct": float("inf"), "fallback": float("inf")}
        for r in range(ROUNDS):
            order = ("direct", "fallback") if r % 2 == 0 else ("fallback", "direct")
            for path in order:
                best[path] = min(best[path], probe_seconds(exe, path, probe))
        print(f"hot: {label}_time direct/fallback {best['fallback'] / best['direct']:.3f}")
    if not ok:
        print("hot: a target was missed (direct_inline <= 4 instructions, probes fewer "
              "instructions on the direct path)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
