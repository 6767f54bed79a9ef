"""Results kept by content: a mutant's key is the hash of what its run
depends on (the mutated files' bytes, every other test input of the tree,
the make variables and the suites that reach it), so a rerun after a change
runs only the mutants whose inputs changed.

An entry keeps every oracle's verdict (plain, then the configuration's [oracles]): a mutant that
survived the plain build in a run without the sanitizer oracles is judged
again, by those oracles only, when a run asks for them; one an oracle
killed reads as a survivor in a run that leaves that oracle out."""
import hashlib
import json
import os
import re

from .model import COMPILE_ERROR, KILLED, NO_COVERAGE, SURVIVED

VERSION = "refrt-mutants-3"
# A Timeout may be the machine's load: it is run again.
KEPT = (KILLED, SURVIVED, COMPILE_ERROR, NO_COVERAGE)

_COMMENT = re.compile(r'''("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|/\*.*?\*/|//[^\n]*''', re.S)


def normal(path, text):
    """What of a file can change a test: for C, the text without comments,
    blank lines and runs of blanks (a comment edit reruns nothing)."""
    if not path.endswith((".c", ".h")):
        return text
    text = _COMMENT.sub(lambda m: m.group(1) or " ", text)
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def key(mutant, mutated_texts, tree_fp, make_vars):
    """The suites a mutant is run with follow from the tree's inputs, which
    tree_fp covers; so do the unmutated run and its coverage."""
    h = hashlib.sha256(VERSION.encode())
    h.update(json.dumps([tree_fp, sorted(make_vars.items())]).encode())
    for path in sorted(mutated_texts):
        h.update(path.encode() + b"\0" +
                 hashlib.sha256(normal(path, mutated_texts[path]).encode()).digest())
    return h.hexdigest()


class Cache:
    def __init__(self, path, enabled=True):
        self.path = path
        self.enabled = enabled
        self.entries = {}
        if enabled and os.path.exists(path):
            try:
                with open(path) as f:
                    self.entries = json.load(f)
            except (OSError, ValueError):
                self.entries = {}

    def get(self, k):
        return self.entries.get(k) if self.enabled else None

    def put(self, k, mutant):
        """Keeps the mutant's verdicts by oracle that are worth keeping (a
        Timeout may be the machine's load: that oracle runs again)."""
        verdicts = {o: v for o, v in mutant.verdicts.items() if v["status"] in KEPT}
        if verdicts:
            self.entries[k] = {"covered_by": mutant.covered_by, "verdicts": verdicts}
        else:
            self.entries.pop(k, None)

    def save(self):
        if not self.enabled:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.entries, f)
        os.replace(tmp, self.path)
