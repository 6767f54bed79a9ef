"""The mutant driver's own tests (python3 -m mutants.tests from scripts/)."""
