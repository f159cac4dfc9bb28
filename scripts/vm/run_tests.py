"""The cgroup v2 lane's test runner (scripts/vm/guest.sh): python3 -m unittest -v with -k
name patterns, and each test's wall time after its outcome, so that the lane's cost can be
read test by test (it must stay near 10 minutes under emulation).
    python3 run_tests.py MODULE... -k PATTERN...
Exits 1 when a test failed or errored, 0 otherwise (skips included)."""
import os
import sys
import time
import unittest


class TimedResult(unittest.TextTestResult):
    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.stream.writeln(f"    took {time.monotonic() - self._started:.1f} s: {test.id()}")
        self.stream.flush()


def main(argv):
    sys.path.insert(0, os.getcwd())  # the test modules are where it runs, as for -m unittest
    modules, patterns = [], []
    args = iter(argv)
    for arg in args:
        if arg == "-k":
            patterns.append(f"*{next(args)}*")
        else:
            modules.append(arg)
    loader = unittest.TestLoader()
    loader.testNamePatterns = patterns or None
    suite = unittest.TestSuite(loader.loadTestsFromName(m) for m in modules)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult, stream=sys.stdout)
    return 0 if runner.run(suite).wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
