"""Runs mutants: each in its own copy of the unmutated tree and its build,
in parallel, cheapest suite first, stopping at the first kill.

The copy starts from WORK/base (the snapshot with its built build/m), so
make rebuilds only what the mutated file reaches. A run that takes longer
than its limit is killed with its whole process group: Timeout."""
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from . import project
from .model import COMPILE_ERROR, KILLED, SURVIVED, TIMEOUT, apply_edits


def _failed_tests(tree):
    """The "fail <test> <why>" lines the suites wrote in the copy."""
    out = []
    results = os.path.join(tree, project.BUILD_IN_COPY, "results")
    for name in sorted(os.listdir(results)) if os.path.isdir(results) else []:
        with open(os.path.join(results, name), errors="replace") as f:
            out += [f"{name}: {line[5:].strip()[:200]}" for line in f if line.startswith("fail ")]
    return out


class Runner:
    def __init__(self, base, work, make_vars, order, limit, logdir):
        self.base = base            # WORK/base/tree, built
        self.work = work            # where the copies go
        self.make_vars = make_vars
        self.order = order          # {suite: seconds in the unmutated run}
        self.limit = limit          # seconds a mutant may take in all
        self.logdir = logdir
        self.stopping = threading.Event()

    def _copy(self, slot):
        dest = os.path.join(self.work, slot)
        if os.path.exists(dest):
            shutil.rmtree(dest)
        shutil.copytree(self.base, dest, symlinks=True,
                        ignore=shutil.ignore_patterns("cov"))
        return dest

    def run_one(self, mutant, suites, slot):
        """Builds and tests one mutant; sets its status and returns it."""
        start = time.monotonic()
        tree = self._copy(slot)
        shutil.rmtree(os.path.join(tree, project.BUILD_IN_COPY, "results"), ignore_errors=True)
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in mutant.id)
        os.makedirs(os.path.join(self.logdir, "mutants"), exist_ok=True)
        log = os.path.join(self.logdir, "mutants", f"{safe}.log")
        if os.path.exists(log):
            os.unlink(log)
        try:
            by_path = {}
            for e in mutant.edits:
                by_path.setdefault(e.path, []).append(e)
            for path, edits in by_path.items():
                full = os.path.join(tree, path)
                with open(full) as f:
                    text = f.read()
                with open(full, "w") as f:
                    f.write(apply_edits(text, edits))
                # newer than every object built from the unmutated copy
                now = time.time() + 1
                os.utime(full, (now, now))
            deadline = start + self.limit
            status, _ = project.run_make(tree, project.BUILD_IN_COPY, self.make_vars, "lib",
                                         log, timeout=max(1, deadline - time.monotonic()))
            if status is None:
                mutant.status, mutant.status_reason = TIMEOUT, "building took past the limit"
                return mutant
            if status != 0:
                mutant.status, mutant.status_reason = COMPILE_ERROR, f"does not build; see {log}"
                return mutant
            for suite in sorted(suites, key=lambda s: self.order.get(s, 0)):
                if self.stopping.is_set():
                    raise KeyboardInterrupt
                left = deadline - time.monotonic()
                status, _ = project.run_make(tree, project.BUILD_IN_COPY, self.make_vars, suite,
                                             log, timeout=max(1, left))
                if self.stopping.is_set():
                    raise KeyboardInterrupt
                if status is None:
                    mutant.status = TIMEOUT
                    mutant.killed_by = [suite]
                    mutant.status_reason = f"{suite} ran past the limit of {self.limit:.0f} s"
                    return mutant
                if status != 0:
                    mutant.status, mutant.killed_by = KILLED, [suite]
                    failed = _failed_tests(tree)
                    mutant.status_reason = (f"killed by {suite}: " + "; ".join(failed[:3])
                                            if failed else f"killed by {suite} (exit {status})")
                    return mutant
            mutant.status = SURVIVED
            mutant.status_reason = f"every suite that reaches it passed: {', '.join(suites)}"
            return mutant
        finally:
            mutant.seconds = time.monotonic() - start
            shutil.rmtree(tree, ignore_errors=True)

    def run_all(self, jobs, on_done):
        """jobs: [(mutant, suites)]; calls on_done(mutant) as each ends."""
        slots = [f"slot{i}" for i in range(max(1, self.jobs_count(jobs)))]
        free = list(slots)
        lock = threading.Lock()

        def task(item):
            mutant, suites = item
            with lock:
                slot = free.pop()
            try:
                return self.run_one(mutant, suites, slot)
            finally:
                with lock:
                    free.append(slot)

        with ThreadPoolExecutor(len(slots)) as pool:
            futures = [pool.submit(task, j) for j in jobs]
            try:
                for f in as_completed(futures):
                    on_done(f.result())
            except BaseException:
                self.stopping.set()
                for f in futures:
                    f.cancel()
                project.kill_all()
                raise

    def naive(self, sample, suites):
        """Seconds a mutant takes the naive way (a fresh copy with no build,
        everything built, every suite run), averaged over the sample."""
        total = 0.0
        for m in sample:
            dest = os.path.join(self.work, "naive")
            if os.path.exists(dest):
                shutil.rmtree(dest)
            shutil.copytree(self.base, dest, symlinks=True,
                            ignore=lambda d, names: ["build"] if d == self.base else [])
            start = time.monotonic()
            try:
                for path in {e.path for e in m.edits}:
                    full = os.path.join(dest, path)
                    with open(full) as f:
                        text = f.read()
                    with open(full, "w") as f:
                        f.write(apply_edits(text, [e for e in m.edits if e.path == path]))
                log = os.path.join(self.logdir, "naive.log")
                project.run_make(dest, project.BUILD_IN_COPY, self.make_vars, "lib", log,
                                 timeout=self.limit)
                for s in suites:
                    project.run_make(dest, project.BUILD_IN_COPY, self.make_vars, s, log,
                                     timeout=self.limit)
            finally:
                total += time.monotonic() - start
                shutil.rmtree(dest, ignore_errors=True)
        return total / max(1, len(sample))

    jobs = 2

    def jobs_count(self, items):
        return min(self.jobs, max(1, len(items)))
