"""Results kept by content: a mutant's key is the hash of what its run
depends on (the mutated files' bytes, every other test input of the tree,
the make variables and the suites that reach it), so a rerun after a change
runs only the mutants whose inputs changed."""
import hashlib
import json
import os

from .model import COMPILE_ERROR, KILLED, SURVIVED

VERSION = "refrt-mutants-1"
KEPT = (KILLED, SURVIVED, COMPILE_ERROR)    # a Timeout may be the machine: rerun it


def key(mutant, mutated_texts, tree_fp, make_vars, suites):
    h = hashlib.sha256(VERSION.encode())
    h.update(json.dumps([tree_fp, sorted(make_vars.items()), suites]).encode())
    for path in sorted(mutated_texts):
        h.update(path.encode() + b"\0" + hashlib.sha256(mutated_texts[path].encode()).digest())
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
        if mutant.status in KEPT:
            self.entries[k] = {"status": mutant.status, "killed_by": mutant.killed_by,
                               "reason": mutant.status_reason}

    def save(self):
        if not self.enabled:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.entries, f)
        os.replace(tmp, self.path)
