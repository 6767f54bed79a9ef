"""Trivial compiler equivalence (Papadakis et al., ICSE 2015).

A mutant whose optimised object code equals the original's cannot be told
apart by any test: it is equivalent. Two mutants with equal object code are
duplicates: only the first is run. Mutants that do not compile are
recorded as CompileError. Each file is compiled from memory (stdin) with
the tree's include paths, so nothing is written into any tree."""
import hashlib
import json
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from .model import COMPILE_ERROR, IGNORED, apply_edits

FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC", "-pthread",
         "-fno-asynchronous-unwind-tables", "-x", "c"]


def object_digest(cc, tree, text, include_dirs):
    """sha256 of the object code of text compiled as one C file, or None and
    the compiler's message when it does not compile."""
    with tempfile.TemporaryDirectory(prefix="refrt-tce-") as scratch:
        out = os.path.join(scratch, "m.o")
        cmd = [cc] + FLAGS + [f"-I{tree}/{d}" for d in include_dirs] + ["-c", "-", "-o", out]
        p = subprocess.run(cmd, input=text.encode(), capture_output=True)
        if p.returncode != 0:
            return None, p.stderr.decode(errors="replace").strip()
        with open(out, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest(), ""


def _headers_digest(tree, include_dirs):
    h = hashlib.sha256()
    for d in include_dirs:
        full = os.path.join(tree, d)
        for name in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            if name.endswith(".h"):
                with open(os.path.join(full, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def prune(mutants, texts, tree, cc="cc", jobs=2,
          include_dirs=("reference/include", "reference/src"), memo=None):
    """Marks equivalent, duplicate and non-compiling mutants among single-file
    C mutants. Returns {path: digest of the original} for the files seen.
    memo ({key: [digest, message]}) keeps compiler verdicts by content
    (compiler, flags, headers and the text), so a rerun compiles only what
    changed."""
    singles = [m for m in mutants if len({e.path for e in m.edits}) == 1
               and m.path.endswith(".c")]
    paths = sorted({m.path for m in singles})
    memo = {} if memo is None else memo
    context = json.dumps([cc, FLAGS, _headers_digest(tree, include_dirs)])

    used = {}

    def digest(text):
        key = hashlib.sha256((context + "\0" + text).encode()).hexdigest()
        if key not in memo:
            memo[key] = list(object_digest(cc, tree, text, include_dirs))
        used[key] = memo[key]
        return tuple(memo[key])

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        originals = dict(zip(paths, pool.map(lambda p: digest(texts[p])[0], paths)))
        results = list(pool.map(
            lambda m: digest(apply_edits(texts[m.path], m.edits)), singles))
    memo.clear()
    memo.update(used)           # keep what this run used, nothing older
    first_with = {}
    for m, (digest, message) in zip(singles, results):
        if originals.get(m.path) is None:
            continue            # the original does not compile this way: no verdict
        if digest is None:
            m.status = COMPILE_ERROR
            errors = [x for x in message.splitlines() if "error:" in x]
            m.status_reason = (errors[0] if errors else message[-200:]) or "does not compile"
        elif digest == originals[m.path]:
            m.status, m.equivalent = IGNORED, True
            m.status_reason = "equivalent: the optimised object code equals the original's"
        elif (m.path, digest) in first_with:
            m.status = IGNORED
            m.duplicate_of = first_with[(m.path, digest)]
            m.status_reason = f"duplicate of {m.duplicate_of}: equal optimised object code"
        else:
            first_with[(m.path, digest)] = m.id
    return originals
