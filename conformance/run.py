#!/usr/bin/env python3
"""run.py: the conformance suite. Builds every conformance/*.c program,
runs it once with the measurements its expectations name (strace -f, the
chunk shim, its own "observe" lines), and checks each expectation.

Each program declares what it expects in its header comment (expect.py
says how), so a new program needs no edit here. Besides the programs, one
check reads the optimised object of give (objcheck.py).

Results: one line a check in --results, "pass <program>:<expectation>" or
"fail <program>:<expectation> <what was seen>"; the measured figures of
each program go to <build>/reports/conformance/<program>.txt. Exits 1 if
anything failed. A program that dies of a signal and fails an expectation
is run once more under gdb (scripts/stacks.py): its faulting stack is
printed and ends each of its failure lines.

Run by make (mk/conformance.mk): make check-conformance.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expect  # noqa: E402
import measure  # noqa: E402
import objcheck  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import stacks  # noqa: E402  (scripts/stacks.py: gdb's stack of a crash)


class Results:
    def __init__(self, path):
        self.path = path
        self.failed = 0
        self.seen = {}              # check name -> passed
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()

    def record(self, name, ok, why=""):
        line = f"pass {name}" if ok else f"fail {name} {why}"
        self.seen[name] = ok
        if not ok:
            self.failed += 1
            print(f"  {line}")
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")


def ensure_tool(tool, results):
    """The tool on PATH, installed through scripts/deps if missing: a
    measurement is never skipped silently."""
    if shutil.which(tool) is None:
        print(f"conformance: {tool} is missing; running scripts/deps")
        subprocess.run(["scripts/deps"], check=False)
    if shutil.which(tool) is None:
        results.record(f"tools:{tool}", False, f"{tool} is missing and scripts/deps could not install it")
        return False
    return True


def run_program(prog, cfg, results, reports):
    binary, why = measure.build(prog, cfg)
    if binary is None:
        results.record(f"{prog.name}:build", False, why)
        return
    run = measure.run(prog, binary, cfg)
    with open(os.path.join(reports, prog.name + ".txt"), "w", encoding="utf-8") as f:
        for k in sorted(run.metrics):
            f.write(f"{k} {run.metrics[k]}\n")
        for note in run.notes:
            f.write(f"note {note}\n")
        f.write("--- stderr\n" + run.outputs.get("stderr", ""))
    failed_before = results.failed
    checked = [(exp, *expect.check(exp, run.metrics, run.outputs)) for exp in prog.expectations]
    crash = None
    if run.metrics.get("signal") and not all(ok for _, ok, _ in checked):
        crash = crash_stack(binary)
        print(f"conformance: {prog.name}: {crash}")
    for exp, ok, seen in checked:
        if not ok and run.notes:
            seen += " (" + "; ".join(run.notes) + ")"
        if not ok and crash:
            seen += f" ({crash})"
        results.record(f"{prog.name}:{exp.name}", ok, seen)
    shown = " ".join(f"{k}={run.metrics[k]}" for k in sorted(run.metrics)
                     if k.startswith(("strace.brk", "shim.mallocs", "shim.frees", "shim.dirty")))
    status = "ok" if results.failed == failed_before else "FAILED"
    print(f"conformance: {prog.name}: {status} {shown}")


def chosen(programs, only, first):
    """The programs to run, in order, under the mutant driver's hints, read
    as a Check program reads them (reference/tests/testmain.c), a result's
    name "<program>:<expectation>" standing for a case's: RT_ONLY_CASES,
    the programs whose results it names, unless it names none of them (a
    witness run's list is the union over several suites); RT_FIRST_CASES,
    the programs whose results it names first. A kill's first try then
    runs one program, not the 20 of the suite."""
    def named(words):
        return {w.split(":", 1)[0] for w in (words or "").split()}
    only_names, first_names = named(only), named(first)
    if only_names & {p.name for p in programs}:
        programs = [p for p in programs if p.name in only_names]
    return ([p for p in programs if p.name in first_names]
            + [p for p in programs if p.name not in first_names])


def expected_results(path, name):
    """{check: passed, or None when either counts} from a file of "pass
    <name>:<check>", "fail <name>:<check>" and "any <name>:<check>" lines
    (the mutant driver's, for suites judged by their results), or None
    without one."""
    if not path:
        return None
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            word, _, test = line.strip().partition(" ")
            if word in ("pass", "fail", "any") and test.startswith(name + ":"):
                out[test[len(name) + 1:]] = None if word == "any" else word == "pass"
    return out


def differs(results, expected):
    """Whether a check so far has another result than expected (one
    expected does not list differs when it fails)."""
    return any((expected[name] is not None and expected[name] != ok) if name in expected
               else not ok for name, ok in results.seen.items())


def crash_stack(binary):
    """The faulting stack of a program that died of a signal, by running it
    once more under gdb (no shim, no strace): one line."""
    sig, frames = stacks.under_gdb([binary], timeout=measure.HANG_GUARD_SECONDS,
                                   who="conformance")
    if not frames:
        return ("died of a signal; no stack (gdb is missing)" if not stacks.gdb_found("conformance")
                else "died of a signal; under gdb it did not, no stack")
    return f"died of {sig}, stack: {stacks.summary(frames, n=6)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the variant's build folder")
    ap.add_argument("--cc", required=True)
    ap.add_argument("--cflags", default="")
    ap.add_argument("--ldflags", default="")
    ap.add_argument("--plain-cflags", default="-std=c11 -Wall -Wextra -Werror -O2 -g")
    ap.add_argument("--sanitize", default="")
    ap.add_argument("--results", required=True)
    ap.add_argument("--lib", help="another implementation of refrt.h (a static library) to "
                    "link every program with, instead of the reference (make check IMPL=)")
    ap.add_argument("programs", nargs="*", help="default: every conformance/*.c but shim.c")
    args = ap.parse_args()
    # Paths in the flags (-Ireference/include) and the cc-only command are
    # relative to the top of the tree, as make runs it: work from there.
    here = os.path.dirname(os.path.abspath(__file__))
    args.build, args.results = os.path.abspath(args.build), os.path.abspath(args.results)
    args.programs = [os.path.abspath(p) for p in args.programs]
    os.chdir(os.path.dirname(here))

    cfg = measure.Config(
        build=args.build, cc=shlex.split(args.cc), cflags=shlex.split(args.cflags),
        ldflags=shlex.split(args.ldflags), sanitize=args.sanitize,
        plain_cflags=shlex.split(args.plain_cflags),
        rt_lib=os.path.abspath(args.lib) if args.lib else os.path.join(args.build, "librefrt.a"),
        impl=bool(args.lib),
        shim_so=os.path.abspath(os.path.join(args.build, "conformance", "shim.so")),
        shim_wrap_o=os.path.join(args.build, "conformance", "shim-wrap.o"))
    results = Results(args.results)
    reports = os.path.join(args.build, "reports", "conformance")
    os.makedirs(reports, exist_ok=True)

    paths = args.programs or sorted(
        os.path.relpath(os.path.join(here, f)) for f in os.listdir(here)
        if f.endswith(".c") and f != "shim.c")
    programs = []
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            programs.append(expect.parse_program(path, name))
        except expect.DeclarationError as e:
            results.record(f"{name}:declaration", False, str(e))

    programs = chosen(programs, os.environ.get("RT_ONLY_CASES"), os.environ.get("RT_FIRST_CASES"))
    have_strace = ensure_tool("strace", results) if any(p.needs("strace") for p in programs) else True
    # The mutant driver needs one failure, not all of them; judging another
    # implementation by its results (make gate-kit), one result that differs
    # from the unmutated implementation's, which RT_EXPECTED_RESULTS lists.
    fail_fast = bool(os.environ.get("RT_FAIL_FAST"))
    expected = expected_results(os.environ.get("RT_EXPECTED_RESULTS"),
                                os.path.basename(args.results))
    for prog in programs:
        if fail_fast and (results.failed if expected is None else differs(results, expected)):
            break
        if prog.needs("strace") and not have_strace:
            results.record(f"{prog.name}:strace", False, "strace is missing")
            continue
        run_program(prog, cfg, results, reports)

    obj = cfg.rt_lib if cfg.impl else os.path.join(args.build, "obj", "region_cache.o")
    if ensure_tool("objdump", results):
        ok, why = objcheck.clears(obj)
        results.record("object:rt_chunk_give_clears", ok, why)
        print(f"conformance: object: {why}")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
