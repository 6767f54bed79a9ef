# make coverage: line and branch coverage of reference/src by the whole
# suite. The runtime and every test are built with gcc --coverage in their
# own folder, build/coverage, and `make check`'s suites run there (all but
# the mutant runs, which test other builds). gcovr (Debian's gcovr) reads
# the counts; scripts/gate/coverage.py prints the figures a file and in
# all, and records one result a file: pass when every line and branch is
# covered or named with its reason in docs/coverage.md.
# The folder is made afresh each time: no count, object or binary of an
# earlier run (built with other flags) can leak into the figures.
# Reports: build/coverage/reports/coverage/{index.html,coverage.xml,
# summary.json,coverage.txt}.

COV_BUILD := build/coverage
COV_REPORTS := $(COV_BUILD)/reports/coverage
COV_FLUSH := $(COV_BUILD)/gcov_flush.o
# Suites that do not run this build's code.
COVERAGE_SKIP := check-mutants check-mutants-driver gate-mutants check-kit-naive
GCOVR_FLAGS := --root . --filter 'reference/src/' --exclude-unreachable-branches

.PHONY: coverage coverage-run
coverage:
	@scripts/deps gate
	@rm -rf $(COV_BUILD)
	@mkdir -p $(COV_BUILD) $(COV_REPORTS)
	gcc -O2 -fPIC -c scripts/gate/gcov_flush.c -o $(COV_FLUSH)
	@status=0; $(MAKE) --no-print-directory -k BUILD=$(COV_BUILD) CC=gcc SANITIZE= \
	  CFLAGS='-O0 -g --coverage' LDFLAGS='--coverage $(abspath $(COV_FLUSH)) -Wl,--wrap=_exit' \
	  coverage-run > $(COV_BUILD)/suite.log 2>&1 || status=$$?; \
	  mkdir -p $(BUILD)/results; \
	  if $(PYTHON) scripts/summary coverage-suite $(COV_BUILD)/results $$status \
	      > $(COV_BUILD)/suite.summary; then echo "pass coverage:suite"; \
	  else echo "fail coverage:suite $$(tail -1 $(COV_BUILD)/suite.summary) (see $(COV_BUILD)/suite.log)"; \
	  fi > $(BUILD)/results/coverage-suite; tail -1 $(COV_BUILD)/suite.summary
	gcovr $(GCOVR_FLAGS) --object-directory $(COV_BUILD) $(COV_BUILD) \
	  --json $(COV_REPORTS)/coverage.json --json-summary-pretty \
	  --json-summary $(COV_REPORTS)/summary.json --xml $(COV_REPORTS)/coverage.xml \
	  --html-details $(COV_REPORTS)/index.html --txt $(COV_REPORTS)/coverage.txt
	@mkdir -p $(BUILD)/results
	@$(PYTHON) scripts/gate/coverage.py --json $(COV_REPORTS)/coverage.json \
	  --exceptions docs/coverage.md --results $(BUILD)/results/coverage \
	  --uncovered $(COV_REPORTS)/uncovered.txt

# In a recipe, so CHECK_TARGETS is read once every mk/*.mk has added to it.
coverage-run:
	@$(MAKE) --no-print-directory -k $(filter-out $(COVERAGE_SKIP),$(CHECK_TARGETS))

GATE_TARGETS += coverage
