"""Runs the driver's tests. With RT_RESULTS set, appends one "pass <test>"
or "fail <test> <why>" line a test to that file (scripts/summary's format).

`-j N` (or RT_TEST_JOBS) runs the test modules in N processes at once,
each module whole in one process, the longest first as the last run
timed them (RT_TEST_TIMES, a JSON file, when set); the lines are the same
either way.
The tests build fixture trees in their own temporary directories, so
modules do not share anything on disk."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(os.path.dirname(HERE))


class LineResult(unittest.TextTestResult):
    lines = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.lines.append(f"pass {test.id()}")

    def _fail(self, test, err):
        last = self._exc_info_to_string(err, test).strip().splitlines()[-1]
        self.lines.append(f"fail {test.id()} {last[:300]}")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        # a skipped test proved nothing: it is a failure in the results
        self.lines.append(f"fail {test.id()} skipped: {reason}")


def run_suite(suite, verbosity, out):
    result = unittest.TextTestRunner(resultclass=LineResult, verbosity=verbosity).run(suite)
    if out:
        with open(out, "a") as f:
            f.write("".join(line + "\n" for line in LineResult.lines))
    return 0 if result.wasSuccessful() and not result.skipped else 1


def modules():
    return sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))


def run_parallel(jobs, verbosity, out):
    """Each module in its own `python -m mutants.tests --module M`, at most
    jobs at once; their result lines appended to out in module order."""
    times_file = os.environ.get("RT_TEST_TIMES")
    try:
        with open(times_file) as f:
            last = json.load(f)
    except (OSError, ValueError, TypeError):
        last = {}
    queue = sorted(modules(), key=lambda m: -last.get(m, 0.0))
    running, done, status, took = [], {}, 0, {}
    tmp = tempfile.mkdtemp(prefix="refrt-driver-tests-")
    while queue or running:
        while queue and len(running) < jobs:
            m = queue.pop(0)
            lines = os.path.join(tmp, m + ".results")
            log = open(os.path.join(tmp, m + ".log"), "w+")
            argv = [sys.executable, "-m", "mutants.tests", "--module", m]
            if verbosity > 1:
                argv.append("-v")
            env = dict(os.environ, RT_RESULTS=lines)
            proc = subprocess.Popen(argv, cwd=SCRIPTS, env=env, stdout=log,
                                    stderr=subprocess.STDOUT)
            running.append((m, proc, log, lines, time.monotonic()))
        time.sleep(0.05)
        for item in list(running):
            m, proc, log, lines, start = item
            if proc.poll() is None:
                continue
            running.remove(item)
            took[m] = round(time.monotonic() - start, 2)
            log.seek(0)
            sys.stderr.write(f"--- {m} ({took[m]:.1f} s, status {proc.returncode})\n" + log.read())
            log.close()
            status |= proc.returncode != 0
            try:
                with open(lines) as f:
                    done[m] = f.read()
            except OSError:
                done[m] = f"fail mutants.tests.{m} the module ran no test (status {proc.returncode})\n"
                status = 1
    if out:
        with open(out, "a") as f:
            f.write("".join(done[m] for m in modules()))
    if times_file:
        with open(times_file, "w") as f:
            json.dump(took, f)
    shutil.rmtree(tmp, True)
    return status


def main():
    args = sys.argv[1:]
    verbosity = 2 if "-v" in args else 1
    out = os.environ.get("RT_RESULTS")
    if "--module" in args:
        name = args[args.index("--module") + 1]
        suite = unittest.defaultTestLoader.loadTestsFromName("mutants.tests." + name)
        return run_suite(suite, verbosity, out)
    jobs = int(os.environ.get("RT_TEST_JOBS", "1"))
    if "-j" in args:
        jobs = int(args[args.index("-j") + 1])
    if jobs > 1:
        return run_parallel(jobs, verbosity, out)
    suite = unittest.defaultTestLoader.discover(HERE, top_level_dir=SCRIPTS)
    return run_suite(suite, verbosity, out)


if __name__ == "__main__":
    sys.exit(main())
