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

A mutant's code is its function's where that can judge it: a file's
mutants become copies of their functions beside two copies of the
original, compiled to assembly once a file and target (compare_in_bulk,
Assembly), a few hundred mutants in the time of a few whole compilations.
Equal function code is equal behaviour wherever the function is called,
so the copies' verdicts of equivalent and duplicate hold; what they tell
apart may still be equal where a caller inlines the function, and is
compiled whole unless a test killed it before (prune, step 4).

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

from . import clex, schemata
from .model import COMPILE_ERROR, IGNORED, PENDING, apply_edits

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


def assembly(cc, tree, text, include_dirs, flags):
    """(the assembly text compiled to from text, the compiler's messages),
    or (None, its messages) when it does not compile."""
    cmd = [cc] + list(flags) + [f"-I{tree}/{d}" for d in include_dirs] + ["-", "-o", "-"]
    try:
        p = subprocess.run(cmd, input=text.encode(), capture_output=True)
    except OSError as e:
        return None, f"{cc}: {e}"
    message = p.stderr.decode(errors="replace").strip()
    return (p.stdout.decode(errors="replace") if p.returncode == 0 else None), message


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
          claimed=CLAIMED, say=_say, flags=None, killed=(), whole=False, settled=()):
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

    How a mutant is compared. Every mutant of a file is first checked to
    compile in one -fsyntax-only of copies of its functions
    (syntax_in_bulk). Those that pass are compared by their function's
    code: one compilation to assembly a file and target, with a copy of
    each mutant's function beside two of the original's
    (compare_in_bulk). Equal code for the copies is equal behaviour
    wherever the function is called, so such a mutant is equivalent, and
    two with equal code on every target are duplicates. The rest are
    compiled whole, alone, as before: a mutant no copy can judge (edits
    outside a function, a static of its own), one whose copy a warning
    names (a CompileError under -Werror), and, compared again whole
    (step 4), one its copy told apart from everything: where its
    function is inlined, a caller's constants may make it equal after
    all, and a survivor costs every suite that reaches it. "by_function"
    counts the mutants compared by copies, "schemas" the compilations of
    comparison schemas by target, "unique_by_function" the ids told apart
    by their copies alone (the caller compares one that survives whole).

    killed: ids of mutants a test killed in an earlier run (the kill
    map). A killed mutant is not equivalent to the original: it is never
    compiled whole, only checked to compile when no copy compares it
    (-fsyntax-only under the tree's flags: a quarter of a compilation,
    which a schema build needs), and run; the caller compares one that
    survives after all (prune again, whole=True). settled: ids whose
    verdict another source gives (the ledger's lines): not compiled whole
    in step 4 either. whole: compare every mutant whole, as a run before
    comparison schemata did (the survivors' second look)."""
    started = time.monotonic()
    said, tell = [], say

    def say(line):
        said.append(line)
        tell(line)
    present, missing = targets(cc, claimed)
    summary = {"targets": [n for n, _ in present], "missing": missing,
               "compiled": {n: 0 for n, _ in present}, "cached": {n: 0 for n, _ in present},
               "split": [], "checked": 0, "bulk": 0, "seconds": 0.0,
               "schemas": {n: 0 for n, _ in present}, "by_function": 0,
               "unique_by_function": []}
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

    def assembler(index):
        """Compiles a comparison schema to assembly on target index:
        warnings are read (a copy's is its mutant's), never fatal, and gcc
        folds no two equal functions into one (-fno-ipa-icf), which would
        leave one of them a jump to the other."""
        name, command = present[index]
        flags = (first_flags if index == 0 else other_flags) + ["-Wno-error", "-S"]
        if name.endswith("gcc"):
            flags.append("-fno-ipa-icf")
        context = json.dumps([identity(command), flags, headers])

        def digests(text, names):
            key = hashlib.sha256((context + "\0" + text).encode()).hexdigest()
            kept = memo.get(key)
            if kept is None:
                asm, message = assembly(command, tree, text, include_dirs, flags)
                code = None if asm is None else Assembly(asm)
                kept = [None if code is None else {n: code.digest(n) for n in names}, message]
            with lock:
                summary["cached" if key in memo else "schemas"][name] += 1
                memo[key] = used[key] = kept
            return kept[0], kept[1]
        return digests

    text_of = {m.id: apply_edits(texts[m.path], m.edits) for m in singles}
    noreturn = schemata.noreturn_names(t for p, t in texts.items() if p.endswith((".c", ".h")))
    # Where a mutant's code is compared: (path, function) for one judged
    # by its function's copy in a comparison schema, (path, "") for one
    # compiled whole, alone.
    unit = {}
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        # 1. The first target: every file and every mutant.
        first, check = compiler(0), compiler(0, syntax=True)
        killed = set(killed)
        originals = dict(zip(paths, pool.map(lambda p: first(texts[p]), paths)))
        # Syntax in bulk: a file's mutants in one compilation of copies of
        # their functions (schemata.syntax_copies); only those a
        # diagnostic names, and those no copy can judge, one at a time.
        named = set()
        bulk = syntax_in_bulk([m for m in singles if not whole or m.id in killed], texts,
                              pool, compiler(0, syntax=True, bulk=True), noreturn, named)
        # Then those that passed, by their function's code: one
        # compilation of a file's comparison schema (compare_in_bulk).
        by_function, refs = ({}, {}) if whole else compare_in_bulk(
            [m for m in singles if m.id in bulk], texts, pool, assembler(0), noreturn,
            blame=True)
        results = {mid: bulk[mid] for mid in bulk if mid in killed and mid not in by_function}
        summary["bulk"] = len(results)      # the checked ones the bulk check found clean
        rest = [m for m in singles if m.id not in results and m.id not in by_function]

        def alone(m):
            """A killed one is checked to compile; one a diagnostic of the
            bulk check named is checked alone the same way first, and is a
            CompileError at that quarter of a compilation if it fails (the
            front end's error, which a whole compilation gives too)."""
            if m.id in killed:
                return check(text_of[m.id])
            if m.id in named:
                d, message = check(text_of[m.id])
                if d is None:
                    return d, message
            return first(text_of[m.id])
        results.update(zip([m.id for m in rest], pool.map(alone, rest)))
        # A mutant's signature: its code's digest on each target so far;
        # the original's is keyed by the unit.
        sig, orig_sig, judged = {}, {}, []
        for p, (d, _) in originals.items():
            if d is not None:
                orig_sig[(p, "")] = (d,)
        for (p, fn), d in refs.items():
            if p in {q for q, _ in orig_sig}:
                orig_sig[(p, fn)] = (d,)
        for m in singles:
            if (m.path, "") not in orig_sig:
                continue        # the original does not compile this way: no verdict
            if m.id in by_function and (m.path, by_function[m.id][0]) in orig_sig:
                fn, d = by_function[m.id]
                unit[m.id], sig[m.id] = (m.path, fn), (d,)
                judged.append(m)
                continue
            d, message = results[m.id] if m.id in results else first(text_of[m.id])
            if d is None:
                m.status = COMPILE_ERROR
                m.status_reason = _first_error(message)
                continue
            unit[m.id] = (m.path, "")
            if m.id in killed:
                # killed before: compiles, equal to nothing, run
                sig[m.id] = (("checked", m.id),)
                summary["checked"] += 1
            else:
                sig[m.id] = (d,)
            judged.append(m)
        summary["by_function"] = sum(1 for m in judged if unit[m.id][1])

        def classes():
            """The mutants whose signature equals the original's or
            another's, by unit (only they need another target)."""
            count = {}
            for u, s in orig_sig.items():
                count[(u, s)] = count.get((u, s), 0) + 1
            for m in judged:
                count[(unit[m.id], sig[m.id])] = count.get((unit[m.id], sig[m.id]), 0) + 1
            return [m for m in judged if count[(unit[m.id], sig[m.id])] > 1]

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
            copies = [m for m in todo if unit[m.id][1] and there[m.path][0] is not None]
            alone = [m for m in todo if not unit[m.id][1] and there[m.path][0] is not None]
            failed = {}
            there_fn, there_refs = compare_in_bulk(copies, texts, pool, assembler(index),
                                                   noreturn, blame=False, failed=failed)
            out = dict(zip([m.id for m in alone], pool.map(lambda m: digest(text_of[m.id]),
                                                           alone)))
            for u in {unit[m.id] for m in todo}:
                p, fn = u
                orig_sig[u] += (None if there[p][0] is None else
                                there_refs.get(u, ("unsteady", u)) if fn else there[p][0],)
            for m in todo:
                if there[m.path][0] is None:
                    sig[m.id] += (None,)
                    continue
                if unit[m.id][1]:
                    d = there_fn.get(m.id, (None, ("no copy", m.id)))[1]
                    if m.id in failed:
                        say(f"mutants: TCE: {m.id} compiles for {present[0][0]} but not for "
                            f"{name} ({_first_error(failed[m.id])}): not pruned, run")
                    elif d == ("no copy", m.id):
                        say(f"mutants: TCE: {m.id}'s copy was not compared on {name}: "
                            f"not pruned, run")
                    sig[m.id] += (d,)
                    continue
                d, message = out[m.id]
                if d is None:
                    say(f"mutants: TCE: {m.id} compiles for {present[0][0]} but not for "
                        f"{name} ({_first_error(message)}): not pruned, run")
                    d = ("does not compile", m.id)      # equal to nothing
                sig[m.id] += (d,)
    # 3. The verdicts: equal signatures on every target that compiled them.
    names = ", ".join(summary["targets"])
    first_with, first_on_first = {}, {}
    for m in judged:
        first_on_first.setdefault((unit[m.id], sig[m.id][0]), m)
    for m in judged:
        s = sig[m.id]
        s_orig = orig_sig[unit[m.id]]
        what = ("the optimised code of its function's copy" if unit[m.id][1]
                else "the optimised object code")
        if s == s_orig:
            m.status, m.equivalent = IGNORED, True
            m.status_reason = f"equivalent: {what} equals the original's on {names}"
            continue
        key = (unit[m.id], s)
        if key in first_with:
            m.status = IGNORED
            m.duplicate_of = first_with[key]
            m.status_reason = f"duplicate of {m.duplicate_of}: {what} equal on {names}"
            continue
        first_with[key] = m.id
        if unit[m.id][1]:
            summary["unique_by_function"].append(m.id)
        # Equal on the first target to the original or an earlier mutant,
        # told apart by another: what a one-target TCE would have pruned.
        if s[0] == s_orig[0]:
            summary["split"].append((m.id, "equals the original on " + _agree(
                present, s, s_orig) + "; differs on " + _differ(present, s, s_orig)))
        else:
            o = first_on_first.get((unit[m.id], s[0]))
            if o is not None and o is not m:
                summary["split"].append((m.id, f"equals {o.id} on " + _agree(
                    present, s, sig[o.id]) + "; differs on " + _differ(present, s, sig[o.id])))
    # 4. One its function's copy tells apart from everything is compiled
    # whole too, unless a test killed it before: a caller's constants,
    # where its function is inlined, may make it equivalent after all (or
    # a CompileError), and a survivor costs every suite that reaches it.
    again = [m for m in judged if m.id in summary["unique_by_function"] and m.id not in killed
             and m.id not in settled]
    if again:
        for m in again:
            m.status = PENDING
        # what it says of a target or a mutant is said already
        kept, lines = dict(memo), set(said)
        told = tuple(f"mutants: TCE: {m.id} " for m in again if any(
            line.startswith((f"mutants: TCE: {m.id} ", f"mutants: TCE: {m.id}'s"))
            for line in said))
        whole_summary = prune(again, texts, tree, cc=cc, jobs=jobs, include_dirs=include_dirs,
                              memo=kept, claimed=claimed, flags=flags, whole=True,
                              say=lambda line: None if line in lines or line.startswith(told)
                              else say(line))
        used.update(kept)
        for name in summary["compiled"]:
            summary["compiled"][name] += whole_summary["compiled"].get(name, 0)
            summary["cached"][name] += whole_summary["cached"].get(name, 0)
        again = {m.id for m in again}
        summary["split"] = [x for x in summary["split"] if x[0] not in again] + \
            whole_summary["split"]
        summary["unique_by_function"] = [mid for mid in summary["unique_by_function"]
                                         if mid not in again]
    memo.clear()
    memo.update(used)           # keep what this run used, nothing older
    summary["seconds"] = time.monotonic() - started
    return summary


# a diagnostic's place: "@m7:3:5: error: ..." (a copy's), "<stdin>:40:2: ..."
_DIAGNOSTIC = re.compile(r"^(.+?):(\d+):(?:\d+:)? (?:fatal )?(error|warning)\b", re.M)


def syntax_in_bulk(mutants, texts, pool, check, noreturn=None, named_out=None):
    """{mutant id: ("no object (-fsyntax-only)", "")} for the mutants of
    mutants (checked to compile, not compared) that one compilation of
    their file's syntax schema finds clean: no diagnostic names their copy.
    A file whose schema has a diagnostic outside every copy is left to the
    one-at-a-time checks, whole. named_out (a set), when given, is added
    the mutants whose copy a diagnostic names."""
    by_path = {}
    for m in mutants:
        by_path.setdefault(m.path, []).append(m)
    if noreturn is None:
        noreturn = schemata.noreturn_names(t for p, t in texts.items()
                                           if p.endswith((".c", ".h")))
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
        if named_out is not None:
            named_out.update(mid for mid, tag in tags.items() if tag in named)
        for mid, tag in tags.items():
            if tag not in named:
                found[mid] = ("no object (-fsyntax-only)", "")
    return found


def compare_in_bulk(mutants, texts, pool, assemble, noreturn, blame, failed=None):
    """({mutant id: (its function, the digest of its copy's code)},
    {(path, function): the digest of the original's}) for the mutants of
    mutants a comparison schema of their file (schemata.compare_copies)
    judges. assemble(text, names) compiles a schema to assembly and
    returns ({name: the digest of that function's code}, messages), or
    (None, messages) when it does not compile. A schema that does not
    compile is split, a function's copies a schema, then a mutant's, so
    that one mutant a target cannot compile leaves out only itself. Left
    out, for the caller: a mutant whose function cannot be copied or that
    cannot compile beside the original, one whose copy a diagnostic names
    (blame: on the first target, where a warning is a CompileError),
    every mutant of a schema with a diagnostic in no copy, and every
    mutant of a function whose two copies of the original differ.
    failed, when given a dict, is told each mutant that does not compile
    by itself beside the original, with the compiler's messages."""
    out, refs = {}, {}
    failed = {} if failed is None else failed

    def schema(p, ms):
        return schemata.compare_copies(texts[p], ms, noreturn)

    def judge(p, ms):
        """The groups to compile again, smaller, when this one fails."""
        text, copy_of, references = schema(p, ms)
        if not copy_of:
            return []
        names = [c for c, _ in copy_of.values()] + [c for pair in references.values()
                                                     for c in pair]
        digests, message = assemble(text, names)
        if digests is None:
            by_fn = {}
            for m in ms:
                if m.id in copy_of:
                    by_fn.setdefault(copy_of[m.id][1], []).append(m)
            if len(by_fn) > 1:
                return [(p, group) for group in by_fn.values()]
            if len(ms) == 1:
                failed[ms[0].id] = message
            return [(p, [m]) for m in ms] if len(ms) > 1 else []
        blamed = set()
        if blame:
            blamed, stray = _blame(message, set(names))
            if stray:
                return []
        for fn, (a, b) in references.items():
            if a not in blamed and digests.get(a) is not None and digests[a] == digests.get(b):
                refs[(p, fn)] = digests[a]
        for mid, (copy, fn) in copy_of.items():
            if (p, fn) in refs and copy not in blamed and digests.get(copy) is not None:
                out[mid] = (fn, digests[copy])
        return []

    todo = {}
    for m in mutants:
        if not _unuses_a_name(m, texts[m.path]):
            todo.setdefault(m.path, []).append(m)
    groups = list(todo.items())
    while groups:
        groups = [g for again in pool.map(lambda g: judge(*g), groups) for g in again]
    return out, refs


_CONTEXT = re.compile(r"(?:In function|inlined from) ['\u2018]([\w.]+)['\u2019]")


def _blame(message, copies):
    """(the copies gcc's diagnostics in message name, whether one names
    none): a diagnostic belongs to the function its "In function 'f'"
    (or the outermost "inlined from 'f'") line names, a clone of a copy
    (f.part.0) to the copy."""
    blamed, stray, current = set(), False, None
    for line in (message or "").splitlines():
        if "At top level" in line:
            current = None
        found = _CONTEXT.findall(line)
        if found:
            current = found[-1].split(".")[0]
            continue
        if _DIAGNOSTIC.match(line):
            if current in copies:
                blamed.add(current)
            else:
                stray = True
    return blamed, stray


def _unuses_a_name(m, text):
    """The mutant takes away a use of a file-scope static that then has
    one or two mentions left (its declaration and definition): gcc may say
    it is defined but not used, which a copy of the function, beside an
    original that still uses it, never shows. Such a mutant is compiled
    alone."""
    delta = {}
    for e in m.edits:
        for t in clex.tokenize(text[e.start:e.end]):
            if t.kind == clex.IDENT:
                delta[t.text] = delta.get(t.text, 0) - 1
        for t in clex.tokenize(e.replacement):
            if t.kind == clex.IDENT:
                delta[t.text] = delta.get(t.text, 0) + 1
    statics, count = _file_statics(text)
    return any(d < 0 and n in statics and count[n] + d <= 2 for n, d in delta.items())


@functools.lru_cache(maxsize=64)
def _file_statics(text):
    """(the names a file-scope static declaration mentions, every
    identifier's count in text)."""
    statics, count, depth, in_static = set(), {}, 0, False
    for t in clex.tokenize(text):
        if t.kind == clex.IDENT:
            count[t.text] = count.get(t.text, 0) + 1
        if t.text in ("{", "("):
            depth += 1
        elif t.text in ("}", ")"):
            depth -= 1
        elif depth == 0 and t.text == "static":
            in_static = True
        elif depth == 0 and t.text in (";", "="):
            in_static = False
        elif in_static and depth == 0 and t.kind == clex.IDENT:
            statics.add(t.text)
        if t.text == "{" and depth == 1:
            in_static = False
    return statics, count


def _agree(present, a, b):
    return ", ".join(present[i][0] for i in range(min(len(a), len(b))) if a[i] == b[i])


def _differ(present, a, b):
    return ", ".join(present[i][0] for i in range(min(len(a), len(b))) if a[i] != b[i])


# ---- a function's code, read from the assembly of a comparison schema -----

# What a data block (a string, a constant, a jump table) is made of.
_DATA = {".string", ".ascii", ".asciz", ".byte", ".short", ".value", ".hword", ".2byte",
         ".long", ".int", ".word", ".4byte", ".quad", ".xword", ".8byte", ".zero",
         ".skip", ".align", ".p2align", ".balign"}
_LABEL = re.compile(r"^([\w.$]+):$")
_LOCAL = re.compile(r"\.L\w+")
_STRINGS = (".string", ".ascii", ".asciz")


def _asm_lines(asm):
    """The assembly's lines without comments (clang's "# %bb.1:", the
    "# 52 prim.h" markers of inline asm) or indentation."""
    out = []
    for line in asm.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "//")):
            continue
        if not s.startswith(_STRINGS):
            s = re.sub(r"\s+(?:#|//)\s.*$", "", s)
        out.append(s)
    return out


class Assembly:
    """The functions of one compilation's assembly (-S), each rendered so
    that two functions with the same code render alike: its own name and
    the local labels it defines numbered by first use, and each label it
    refers to outside itself (a string, a constant, clang's jump tables)
    replaced by that data's own rendering. A part of the function the
    compiler split off (f.part.0; gcc's f.cold sits inside f already) is
    rendered inside it. Any other name it refers to is kept as it is, so
    two callers of two different specialisations of a callee differ."""

    def __init__(self, asm):
        self.lines = _asm_lines(asm)
        self.label_at = {}
        for i, s in enumerate(self.lines):
            m = _LABEL.match(s)
            if m:
                self.label_at.setdefault(m.group(1), i)

    def _extent(self, name):
        start = self.label_at.get(name)
        if start is None:
            return None
        size = re.compile(r"\.size\s+" + re.escape(name) + r"\s*,")
        for j in range(start + 1, len(self.lines)):
            if size.match(self.lines[j]):
                return start, j
        return None

    def _data(self, label):
        i = self.label_at[label] + 1
        block = []
        while i < len(self.lines) and self.lines[i].split(None, 1)[0] in _DATA:
            block.append(self.lines[i])
            i += 1
        return block

    def render(self, name):
        """The function's lines as rendered, or None when the assembly
        has no such function."""
        extent = self._extent(name)
        if extent is None:
            return None
        own = re.compile(r"(?<![\w.$])" + re.escape(name) + r"((?:\.\w+)*)(?![\w$])")
        ids, out, inlined = {}, [], set()
        spans = [extent]

        def defined(label):
            i = self.label_at.get(label)
            return i is not None and any(a < i < b for a, b in spans)

        def local(m, depth):
            label = m.group(0)
            if defined(label):
                return ids.setdefault(label, f".L#{len(ids)}")
            if label in self.label_at and depth < 3:
                return "{" + "; ".join(sub(x, depth + 1) for x in self._data(label)) + "}"
            return label

        def sub(line, depth=0):
            if not line.startswith(_STRINGS):
                line = own.sub(lambda m: "@self" + m.group(1), line)
            return _LOCAL.sub(lambda m: local(m, depth), line)

        def part(m):
            clone = name + m.group(1)
            if m.group(1) and clone not in inlined and self._extent(clone) \
                    and not defined(clone):
                inlined.add(clone)
                spans.append(self._extent(clone))
            return m.group(0)

        for line in self.lines[extent[0] + 1:extent[1]]:
            own.sub(part, line)
        for a, b in spans:
            out.extend(sub(x) for x in self.lines[a + 1:b])
            out.append("--")
        return out

    def digest(self, name):
        lines = self.render(name)
        return None if lines is None else hashlib.sha256("\n".join(lines).encode()).hexdigest()
