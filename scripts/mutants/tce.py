"""Trivial compiler equivalence (Papadakis et al., ICSE 2015), on every
target the runtime claims.

A mutant whose optimised object code equals the original's cannot be told
apart by any test: it is equivalent. Two mutants with equal object code are
duplicates: only the first is run. Equal on one target is not enough: a
weakened memory order (acq_rel to relaxed on a fetch_sub) gives the same
x86-64 code and a different aarch64 one. So a mutant is equivalent only
when its object equals the original's on every target (x86-64 gcc, x86-64
clang, aarch64 gcc), and a duplicate only when it equals the same earlier
mutant's on every target.

The first target is the compiler the mutants are built with (make's CC):
a mutant that does not compile there under the project's -Wall -Wextra
-Werror is a CompileError. The other targets compile with -Wno-error (a
warning changes no object code); one that does not compile there at all
cannot be shown equivalent and is run, with a line that says so. Only the
mutants found equal to the original or to another mutant on the first
target are compiled on the others: a mutant unique on one target is unique.

The runtime is compiled as shipped (no -DRT_TESTING): a mutant of test-only
instrumentation comes out equivalent by itself. Each file is compiled from
memory (stdin) with the tree's include paths, so nothing is written into
any tree. A missing target compiler is said in one line, and the others
judge."""
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import schemata
from .model import COMPILE_ERROR, IGNORED, apply_edits

# What every compilation adds to a tree's flags ([tce] flags): no unwind
# tables (they hold nothing a test sees), pipes between the compiler's
# passes (no temporary files; the same object, checked on every source),
# the text read as C from stdin.
MECHANICS = ["-fno-asynchronous-unwind-tables", "-pipe", "-x", "c"]


def flags_of(tree_flags):
    """(the first target's flags, the other targets'): the others compile
    object code only, warnings are no verdict."""
    first = list(tree_flags) + MECHANICS
    return first, list(tree_flags) + ["-Wno-error"] + MECHANICS


# The defaults when a caller names none; the driver passes its tree's
# configuration ([tce] flags and targets: this tree's mutants/driver.toml
# names these three targets, which README and mk/hot.mk's
# check-hot-aarch64 claim).
FLAGS, OTHER_FLAGS = flags_of(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC",
                               "-pthread"])
CLAIMED = (("x86-64 gcc", "gcc"),
           ("x86-64 clang", "clang"),
           ("aarch64 gcc", "aarch64-linux-gnu-gcc"))


def object_digest(cc, tree, text, include_dirs, flags=FLAGS):
    """sha256 of the object code of text compiled as one C file and the
    compiler's messages (its warnings), or None and its message when it does
    not compile."""
    with tempfile.TemporaryDirectory(prefix="refrt-tce-") as scratch:
        out = os.path.join(scratch, "m.o")
        cmd = [cc] + list(flags) + [f"-I{tree}/{d}" for d in include_dirs] + ["-c", "-", "-o", out]
        try:
            p = subprocess.run(cmd, input=text.encode(), capture_output=True)
        except OSError as e:
            return None, f"{cc}: {e}"
        message = p.stderr.decode(errors="replace").strip()
        if p.returncode != 0:
            return None, message
        if not os.path.exists(out):
            return "no object (-fsyntax-only)", message
        with open(out, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest(), message


@functools.lru_cache(maxsize=None)
def probe(cc):
    """(identity, None), or (None, why there is no usable compiler cc).
    The identity names what a compiler's output depends on besides its
    input: its path, version, target and the macros it and its C library
    predefine (the C library's version among them)."""
    path = shutil.which(cc)
    if path is None:
        return None, f"no {cc} on PATH"
    parts = [os.path.realpath(path)]
    for args, stdin in ((["--version"], ""), (["-dumpmachine"], ""),
                        (["-dM", "-E", "-x", "c", "-"], "#include <features.h>\n")):
        try:
            p = subprocess.run([cc] + args, input=stdin.encode(), capture_output=True)
        except OSError as e:
            return None, f"{cc}: {e}"
        if p.returncode != 0:
            return None, (f"{cc} {' '.join(args)} fails: "
                          + _first_error(p.stderr.decode(errors="replace")))
        parts.append(p.stdout.decode(errors="replace"))
    return "\0".join(parts), None


def identity(cc):
    return probe(cc)[0]


def _name_of(cc, fallback):
    """'x86-64 gcc', 'aarch64 gcc', 'x86-64 clang': the compiler's own target
    and family."""
    ident = identity(cc)
    if ident is None:
        return fallback
    _, version, machine, _ = ident.split("\0", 3)
    arch = machine.strip().split("-")[0].replace("x86_64", "x86-64")
    family = "clang" if "clang" in version.lower() else "gcc"
    return f"{arch} {family}"


def targets(cc="cc", claimed=CLAIMED):
    """The targets to judge on, the first the one the mutants are built
    with (cc, named after its own target and family), then the other
    claimed ones; and the claimed ones missing, as (name, why).
    Returns ([(name, compiler)], [(name, why)])."""
    first = _name_of(cc, "")
    if not first:
        return [], [(cc, probe(cc)[1])]
    present, missing, seen = [(first, cc)], [], {first}
    for name, command in claimed:
        if name in seen:
            continue
        seen.add(name)
        if identity(command) is None:
            missing.append((name, probe(command)[1]))
            continue
        actual = _name_of(command, name)
        if actual in seen and actual != name:
            continue            # e.g. gcc is aarch64 gcc on an aarch64 host
        seen.add(actual)
        present.append((actual, command))
    return present, missing


def _headers_digest(tree, include_dirs):
    h = hashlib.sha256()
    for d in include_dirs:
        full = os.path.join(tree, d)
        for name in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            if name.endswith(".h"):
                with open(os.path.join(full, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def _say(line):
    print(line, file=sys.stderr, flush=True)


def _first_error(message):
    errors = [x for x in message.splitlines() if "error" in x]
    return (errors[0] if errors else message[-200:]) or "does not compile"


def prune(mutants, texts, tree, cc="cc", jobs=2, include_dirs=(), memo=None,
          claimed=CLAIMED, say=_say, flags=None, killed=()):
    """Marks equivalent, duplicate and non-compiling mutants among single-file
    C mutants, judged on every target of targets(cc, claimed). memo
    ({key: [digest, message]}) keeps compiler verdicts by content (the
    compiler's identity, flags, headers and the text), so a rerun compiles
    only what changed; it is left holding what this run used. Says (one line
    each) every claimed target that is missing, every file a target cannot
    compile and every mutant one compiles but another does not.

    Returns a summary: {"targets": [names], "missing": [(name, why)],
    "compiled": {name: compilations}, "cached": {name: verdicts from memo},
    "split": [(id, what)]: the mutants equal on the first target, to the
    original or to an earlier mutant, that another target tells apart,
    "checked": the mutants of killed only checked to compile, "bulk": those
    of them one compilation of their file's copies found clean, "seconds":
    wall seconds}.

    killed: ids of mutants a test killed in an earlier run (the kill map,
    less the mutants its duplicates' lines name). A killed mutant is not
    equivalent, so each is only checked to compile on the first target
    (-fsyntax-only under the tree's flags: a quarter of a compilation,
    which a schema build needs; those of a file in one compilation of
    copies of their functions, syntax_in_bulk, and alone only those a
    diagnostic names), never compared, and run; the caller
    compares one that survives after all (prune again, without killed).
    Duplicates among them would go unseen: the kill map's duplicate lines
    keep the mutants they name out of killed."""
    started = time.monotonic()
    present, missing = targets(cc, claimed)
    summary = {"targets": [n for n, _ in present], "missing": missing,
               "compiled": {n: 0 for n, _ in present}, "cached": {n: 0 for n, _ in present},
               "split": [], "checked": 0, "bulk": 0, "seconds": 0.0}
    if not present:
        say(f"mutants: TCE: {missing[0][1]}: no equivalence judged")
        return summary
    for name, why in missing:
        say(f"mutants: TCE: target {name} missing ({why}; scripts/deps installs it): "
            f"equivalence judged on {', '.join(summary['targets'])} only")

    singles = [m for m in mutants if len({e.path for e in m.edits}) == 1
               and m.path.endswith(".c")]
    paths = sorted({m.path for m in singles})
    memo = {} if memo is None else memo
    headers = _headers_digest(tree, include_dirs)
    used, lock = {}, threading.Lock()
    first_flags, other_flags = flags_of(flags) if flags is not None else (FLAGS, OTHER_FLAGS)

    def compiler(index, syntax=False, bulk=False):
        name, command = present[index]
        flags = first_flags if index == 0 else other_flags
        if syntax:
            flags = flags + ["-fsyntax-only"]
        context = json.dumps([identity(command), flags, headers])

        def digest(text):
            if bulk:            # a syntax schema: its messages are read, never kept
                return object_digest(command, tree, text, include_dirs, flags)
            key = hashlib.sha256((context + "\0" + text).encode()).hexdigest()
            kept = memo.get(key)
            if kept is None:
                kept = list(object_digest(command, tree, text, include_dirs, flags))
            with lock:
                if not syntax:
                    summary["cached" if key in memo else "compiled"][name] += 1
                memo[key] = used[key] = kept
            return tuple(kept)
        return digest

    text_of = {m.id: apply_edits(texts[m.path], m.edits) for m in singles}
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        # 1. The first target: every file and every mutant.
        first, check = compiler(0), compiler(0, syntax=True)
        killed = set(killed)
        originals = dict(zip(paths, pool.map(lambda p: first(texts[p]), paths)))
        # The killed ones by file, each file's in one compilation of their
        # copies (schemata.syntax_copies); only those a diagnostic names,
        # and those no copy can judge, are checked one at a time.
        bulk = syntax_in_bulk([m for m in singles if m.id in killed], texts, pool,
                               compiler(0, syntax=True, bulk=True))
        summary["bulk"] = len(bulk)
        results = dict(bulk)
        rest = [m for m in singles if m.id not in bulk]
        results.update(zip([m.id for m in rest], pool.map(
            lambda m: (check if m.id in killed else first)(text_of[m.id]), rest)))
        # A mutant's signature: its object digest on each target so far;
        # the original's is keyed by its path.
        sig, orig_sig, judged = {}, {}, []
        for p, (d, _) in originals.items():
            if d is not None:
                orig_sig[p] = (d,)
        for m in singles:
            if m.path not in orig_sig:
                continue        # the original does not compile this way: no verdict
            d, message = results[m.id]
            if d is None:
                m.status = COMPILE_ERROR
                m.status_reason = _first_error(message)
                continue
            if m.id in killed:
                # killed before: compiles, equal to nothing, run
                sig[m.id] = (("checked", m.id),)
                summary["checked"] += 1
            else:
                sig[m.id] = (d,)
            judged.append(m)

        def classes():
            """The mutants whose signature equals the original's or
            another's, by file (only they need another target)."""
            count = {}
            for p, s in orig_sig.items():
                count[(p, s)] = count.get((p, s), 0) + 1
            for m in judged:
                count[(m.path, sig[m.id])] = count.get((m.path, sig[m.id]), 0) + 1
            return [m for m in judged if count[(m.path, sig[m.id])] > 1]

        # 2. The other targets, each on what is still equal to something.
        for index in range(1, len(present)):
            name = present[index][0]
            todo = classes()
            if not todo:
                break
            digest = compiler(index)
            files = sorted({m.path for m in todo})
            there = dict(zip(files, pool.map(lambda p: digest(texts[p]), files)))
            for p, (d, message) in there.items():
                if d is None:
                    say(f"mutants: TCE: {p} does not compile for {name} "
                        f"({_first_error(message)}): judged without {name}")
            out = dict(zip([m.id for m in todo],
                           pool.map(lambda m: digest(text_of[m.id]), todo)))
            for p in files:
                orig_sig[p] += (there[p][0],)
            for m in todo:
                if there[m.path][0] is None:
                    sig[m.id] += (None,)
                    continue
                d, message = out[m.id]
                if d is None:
                    say(f"mutants: TCE: {m.id} compiles for {present[0][0]} but not for "
                        f"{name} ({_first_error(message)}): not pruned, run")
                    d = ("does not compile", m.id)      # equal to nothing
                sig[m.id] += (d,)
    memo.clear()
    memo.update(used)           # keep what this run used, nothing older

    # 3. The verdicts: equal signatures on every target that compiled them.
    names = ", ".join(summary["targets"])
    first_with, first_on_first = {}, {}
    for m in judged:
        first_on_first.setdefault((m.path, sig[m.id][0]), m)
    for m in judged:
        s = sig[m.id]
        s_orig = orig_sig[m.path]
        if s == s_orig:
            m.status, m.equivalent = IGNORED, True
            m.status_reason = ("equivalent: the optimised object code equals the "
                               f"original's on {names}")
            continue
        key = (m.path, s)
        if key in first_with:
            m.status = IGNORED
            m.duplicate_of = first_with[key]
            m.status_reason = (f"duplicate of {m.duplicate_of}: equal optimised object "
                               f"code on {names}")
            continue
        first_with[key] = m.id
        # Equal on the first target to the original or an earlier mutant,
        # told apart by another: what a one-target TCE would have pruned.
        if s[0] == s_orig[0]:
            summary["split"].append((m.id, "equals the original on " + _agree(
                present, s, s_orig) + "; differs on " + _differ(present, s, s_orig)))
        else:
            o = first_on_first.get((m.path, s[0]))
            if o is not None and o is not m:
                summary["split"].append((m.id, f"equals {o.id} on " + _agree(
                    present, s, sig[o.id]) + "; differs on " + _differ(present, s, sig[o.id])))
    summary["seconds"] = time.monotonic() - started
    return summary


# a diagnostic's place: "@m7:3:5: error: ..." (a copy's), "<stdin>:40:2: ..."
_DIAGNOSTIC = re.compile(r"^(.+?):(\d+):(?:\d+:)? (?:fatal )?(error|warning)\b", re.M)


def syntax_in_bulk(mutants, texts, pool, check):
    """{mutant id: ("no object (-fsyntax-only)", "")} for the mutants of
    mutants (checked to compile, not compared) that one compilation of
    their file's syntax schema finds clean: no diagnostic names their copy.
    A file whose schema has a diagnostic outside every copy is left to the
    one-at-a-time checks, whole."""
    by_path = {}
    for m in mutants:
        by_path.setdefault(m.path, []).append(m)
    noreturn = schemata.noreturn_names(t for p, t in texts.items() if p.endswith((".c", ".h")))
    schemas = {p: schemata.syntax_copies(texts[p], ms, noreturn) for p, ms in by_path.items()}
    found = {}
    for p, (d, message) in zip(schemas, pool.map(
            lambda p: check(schemas[p][0]) if schemas[p][1] else ("", ""), schemas)):
        tags = schemas[p][1]
        if not tags:
            continue
        places = {where for where, _, _ in _DIAGNOSTIC.findall(message or "")}
        named = {t for t in places if t in set(tags.values())}
        if places - named or (d is None and not places):
            continue                # a diagnostic no copy owns: each alone
        for mid, tag in tags.items():
            if tag not in named:
                found[mid] = ("no object (-fsyntax-only)", "")
    return found


def _agree(present, a, b):
    return ", ".join(present[i][0] for i in range(min(len(a), len(b))) if a[i] == b[i])


def _differ(present, a, b):
    return ", ".join(present[i][0] for i in range(min(len(a), len(b))) if a[i] != b[i])
