#!/usr/bin/env python3
"""memcheck.py: every conformance program under valgrind's memcheck.

Builds each conformance/*.c program as conformance/run.py does (the same
flags; conformance/measure.py builds it) into <build>/memcheck, runs it
once under

    valgrind --tool=memcheck --leak-check=full --error-exitcode=99
             --errors-for-leak-kinds=definite,indirect --track-origins=yes

and records one result a program in --results: pass when valgrind counted
no error and the program ended as it declares (its "exit" or "signal"
expectation; a violation still aborts, a full region still traps). A leak
that is "still reachable" is not an error: main's kept chunks "go with the
process" (the contract). There is no suppression file: an error found here
is a bug or a missing line in the contract, never something to hide.

A program that declares it dies of a signal (a violation aborts, a full
region traps) runs with --leak-check=no: the process ends at the signal
with whatever it held in registers, and what it held then is not a leak
the runtime made (rt_chan_new's trap, for one, fires with the channel just
calloc'ed). Every other error memcheck finds still counts there.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

import results as results_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "conformance"))

import expect  # noqa: E402
import measure  # noqa: E402

VALGRIND = ["valgrind", "--tool=memcheck", "--leak-check=full", "--error-exitcode=99",
            "--errors-for-leak-kinds=definite,indirect", "--track-origins=yes",
            "--child-silent-after-fork=yes"]
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors")
GUARD_SECONDS = 600  # only so a hang cannot stall make


def ends_as_declared(prog, code):
    """(ok, why) for the program's exit/signal expectations."""
    metrics = {"exit": code if code >= 0 else -1, "signal": -code if code < 0 else 0}
    for exp in prog.expectations:
        if exp.metric in metrics:
            ok, seen = expect.check(exp, metrics, {})
            if not ok:
                return False, f"expected {exp.text}, {seen}"
    return True, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--cflags", default="")
    ap.add_argument("--ldflags", default="")
    ap.add_argument("--plain-cflags", default="")
    ap.add_argument("--lib", required=True, help="the library the programs link")
    ap.add_argument("--results", required=True)
    ap.add_argument("programs", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(os.path.join(args.build, "memcheck"))
    results = os.path.abspath(args.results)
    lib = os.path.abspath(args.lib)
    os.chdir(ROOT)
    cfg = measure.Config(build=build, cc=shlex.split(args.cc), cflags=shlex.split(args.cflags),
                         ldflags=shlex.split(args.ldflags), sanitize="",
                         plain_cflags=shlex.split(args.plain_cflags), rt_lib=lib,
                         shim_so="", shim_wrap_o="")
    paths = args.programs or sorted(
        os.path.join("conformance", f) for f in os.listdir("conformance")
        if f.endswith(".c") and f != "shim.c")
    lines = []
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            prog = expect.parse_program(path, name)
        except expect.DeclarationError as e:
            lines.append(f"fail memcheck:{name} {e}")
            continue
        binary, why = measure.build(prog, cfg)
        if binary is None:
            lines.append(f"fail memcheck:{name} {why}")
            continue
        log = binary + ".valgrind"
        try:
            dies = any(e.metric == "signal" and e.op == "==" and e.value != 0
                       for e in prog.expectations)
            flags = [f for f in VALGRIND if not f.startswith(("--leak-check", "--errors-for"))] \
                + ["--leak-check=no"] if dies else VALGRIND
            proc = subprocess.run([*flags, f"--log-file={log}", binary],
                                  capture_output=True, text=True, timeout=GUARD_SECONDS)
        except subprocess.TimeoutExpired:
            lines.append(f"fail memcheck:{name} still running after {GUARD_SECONDS} s")
            continue
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
        m = SUMMARY.findall(text)
        errors = int(m[-1]) if m else None
        ok_end, why_end = ends_as_declared(prog, proc.returncode)
        if errors is None:
            lines.append(f"fail memcheck:{name} valgrind wrote no error summary (see {log})")
        elif errors:
            lines.append(f"fail memcheck:{name} {errors} errors (see {log})")
        elif proc.returncode == 99:
            lines.append(f"fail memcheck:{name} valgrind exited 99 (see {log})")
        elif not ok_end:
            lines.append(f"fail memcheck:{name} {why_end} (see {log})")
        else:
            lines.append(f"pass memcheck:{name}")
        print(f"memcheck: {name}: {lines[-1].split(' ', 1)[0]}"
              f"{'' if errors is None else f', {errors} errors'}")
    bad = results_file.write(results, lines)
    return 1 if bad or not lines else 0


if __name__ == "__main__":
    sys.exit(main())
