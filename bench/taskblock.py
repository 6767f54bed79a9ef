#!/usr/bin/python3
"""taskblock.py: runs the taskblock binaries side by side (seed 002, step 1).

    taskblock.py --dir BUILD/bench              the figures (make bench)
    taskblock.py --dir BUILD/bench --smoke OUT  quick checks for make check

Figures come from callgrind with --branch-sim=yes: instructions (Ir) and
mispredicted branches (Bcm + Bim), per task, minus a run of no task. Two
views of each run:

  task:      the whole program, the workload's own work included
  allocator: only inside the tb_* entry points (--toggle-collect), i.e.
             as the allocator sees it: block made, the 29 calls (22
             allocations, 7 reallocations), block emptied (or, for malloc,
             the 22 frees that stand in for emptying a block)

Every line printed is "taskblock: <allocator> <figure> <value>" or a ratio
"taskblock: <a>/<b> <figure> <value>".
"""
import argparse
import os
import subprocess
import sys
import tempfile

ALLOCATORS = ["malloc", "budget", "bump", "block", "block-free", "api"]
SHIPPED = "block"  # what the runtime's tasks do: the block is emptied whole
TASKS = 100000     # the seed's count, for the native runs
CG_TASKS = 10000   # under callgrind; per-task figures are stable at this count
LONG_REQUESTS = 20000
CG_LONG = 5000


# RT_CASE_TIMEOUT (seconds; the mutant driver's bound on a test case, as
# reference/tests/testmain.c reads it): a run past it is stopped and its
# result says "Test timeout expired", as Check says it. A loop is then
# stopped at the case's bound, not at the whole suite's.
TIMED_OUT = "Test timeout expired"


def run(cmd):
    limit = float(os.environ.get("RT_CASE_TIMEOUT") or 0) or None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, f"{TIMED_OUT} after {limit:g} s"
    return p.returncode, p.stdout


def digest(binary, mode, n):
    code, out = run([binary, mode, str(n)])
    return code, out.strip().splitlines()


def shown(code, got):
    """A run's failure as a result line says it: a timeout as Check does."""
    return got[-1] if code is None else f"exit {code}"


def callgrind(binary, mode, n, allocator_only):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--branch-sim=yes",
               "--callgrind-out-file=" + out]
        if allocator_only:
            cmd.append("--toggle-collect=tb_*")
        p = subprocess.run(cmd + [binary, mode, str(n)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"taskblock: callgrind failed on {binary} {mode} {n}: {p.stderr[-400:]}")
        events = totals = None
        with open(out) as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith(("totals:", "summary:")):
                    totals = [int(x) for x in line.split()[1:]]
        c = dict(zip(events, totals))
        return c.get("Ir", 0), c.get("Bcm", 0) + c.get("Bim", 0)


def per_unit(binary, mode, n, allocator_only):
    ir1, mis1 = callgrind(binary, mode, n, allocator_only)
    ir0, mis0 = callgrind(binary, mode, 0, allocator_only)
    return (ir1 - ir0) / n, (mis1 - mis0) / n


def smoke(bindir, out):
    """Same digest from every allocator; the long task bounded in its block."""
    lines = []
    digests = {}
    for a in ALLOCATORS:
        code, got = digest(os.path.join(bindir, "taskblock-" + a), "short", 2000)
        digests[a] = got[-1] if code == 0 and got else shown(code, got)
    ref = digests["malloc"]
    for a in ALLOCATORS:
        ok = digests[a] == ref and ref.startswith("taskblock: short 2000 digest ")
        lines.append(("pass " if ok else "fail ") + f"taskblock_short_digest_{a}" +
                     ("" if ok else f" {digests[a]!r} != {ref!r}"))
    code, got = digest(os.path.join(bindir, "taskblock-block-free"), "long", 3000)
    _, ref_long = digest(os.path.join(bindir, "taskblock-malloc"), "long", 3000)
    ok = code == 0 and got[-1:] == ref_long[-1:] and any("peak-held" in g for g in got)
    lines.append(("pass " if ok else "fail ") + "taskblock_long_block_bounded" +
                 ("" if ok else f" {shown(code, got)}: {got}"))
    code, got = digest(os.path.join(bindir, "taskblock-api"), "long", 3000)
    ok = code == 0 and got[-1:] == ref_long[-1:]
    lines.append(("pass " if ok else "fail ") + "taskblock_long_api_bounded" +
                 ("" if ok else f" {shown(code, got)}: {got}"))
    code, got = digest(os.path.join(bindir, "taskblock-bump"), "long", 3000)
    ok = code == 2 and "out of its 64 KiB budget" in "".join(got)
    lines.append(("pass " if ok else "fail ") + "taskblock_long_bump_runs_out" +
                 ("" if ok else f" {shown(code, got)}: {got}"))
    with open(out, "a") as f:
        f.write("\n".join(lines) + "\n")
    return all(line.startswith("pass") for line in lines)


def figures(bindir):
    bins = {a: os.path.join(bindir, "taskblock-" + a) for a in ALLOCATORS}
    # all variants print the same bytes
    outs = {a: digest(bins[a], "short", TASKS) for a in ALLOCATORS}
    for a in ALLOCATORS:
        code, out = outs[a]
        if code != 0 or out != outs["malloc"][1]:
            sys.exit(f"taskblock: {a} printed {out} (exit {code}), malloc {outs['malloc'][1]}")
    print(f"taskblock: all {out[-1].split(' ', 1)[1]}")

    fig = {}
    for a in ALLOCATORS:
        ir, mis = per_unit(bins[a], "short", CG_TASKS, False)
        air, amis = per_unit(bins[a], "short", CG_TASKS, True)
        fig[a] = {"instructions": ir, "mispredicted": mis,
                  "alloc-instructions": air, "alloc-mispredicted": amis}
        for k, v in fig[a].items():
            print(f"taskblock: {a} {k}-per-task {v:.1f}")
    for a in ["budget", "bump", "block", "block-free", "api"]:
        for k in ["instructions", "mispredicted", "alloc-instructions", "alloc-mispredicted"]:
            print(f"taskblock: {a}/malloc {k} {fig[a][k] / fig['malloc'][k]:.3f}")
    for a in ["block", "block-free"]:
        print(f"taskblock: {a}/bump alloc-instructions "
              f"{fig[a]['alloc-instructions'] / fig['bump']['alloc-instructions']:.3f}")
    print(f"taskblock: api/block-free alloc-instructions "
          f"{fig['api']['alloc-instructions'] / fig['block-free']['alloc-instructions']:.3f}")

    # the second workload: one long task, a connection loop, 64 KiB budget
    for a in ALLOCATORS:
        code, out = digest(bins[a], "long", LONG_REQUESTS)
        if code != 0:
            print(f"taskblock: long-{a} fails {out[-1] if out else code}")
            continue
        for line in out[:-1]:
            print(line.replace("taskblock: long", f"taskblock: long-{a}"))
        ir, mis = per_unit(bins[a], "long", CG_LONG, False)
        print(f"taskblock: long-{a} instructions-per-request {ir:.1f}")
        print(f"taskblock: long-{a} mispredicted-per-request {mis:.1f}")

    target = fig[SHIPPED]["alloc-instructions"] / fig["malloc"]["alloc-instructions"]
    budget = fig["budget"]["instructions"] / fig["malloc"]["instructions"]
    print(f"taskblock: target {SHIPPED}/malloc alloc-instructions <= 0.59: "
          f"{'met' if target <= 0.59 else 'missed'} ({target:.3f})")
    print(f"taskblock: target budget/malloc instructions <= 1.03: "
          f"{'met' if budget <= 1.03 else 'missed'} ({budget:.3f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--smoke")
    args = ap.parse_args()
    if args.smoke:
        sys.exit(0 if smoke(args.dir, args.smoke) else 1)
    figures(args.dir)


if __name__ == "__main__":
    main()
