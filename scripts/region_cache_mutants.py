#!/usr/bin/env python3
"""region_cache_mutants.py: the mutant driver of refrt (docs/mutants.md).

A thin entry point: the driver is the package scripts/mutants (catalog,
operators, equivalence pruning, runner, cache, reports). Run with --help.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mutants.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
