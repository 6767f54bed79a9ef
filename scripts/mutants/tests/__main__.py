"""Runs the driver's tests. With RT_RESULTS set, appends one "pass <test>"
or "fail <test> <why>" line a test to that file (scripts/summary's format)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


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


def main():
    suite = unittest.defaultTestLoader.discover(HERE, top_level_dir=os.path.dirname(
        os.path.dirname(HERE)))
    verbosity = 2 if "-v" in sys.argv else 1
    result = unittest.TextTestRunner(resultclass=LineResult, verbosity=verbosity).run(suite)
    out = os.environ.get("RT_RESULTS")
    if out:
        with open(out, "a") as f:
            f.write("".join(line + "\n" for line in LineResult.lines))
    return 0 if result.wasSuccessful() and not result.skipped else 1


if __name__ == "__main__":
    sys.exit(main())
