# Mutants: the curated catalog (mutants/*.mut) in `make check`, curated and
# generated mutants in one run in `make gate`, and the driver's own
# unittest tests.
# The driver (scripts/region_cache_mutants.py) builds each mutant in a copy
# of the tree under $(BUILD)/mutants, never in place. What it knows of this
# tree (the sources, the build, the suites, the coverage build, the
# oracles, TCE's targets, the catalog) is in mutants/driver.toml, as
# another tree's would be in its own (docs/mutants.md, "Configuration").

MUTANTS := $(PYTHON) scripts/region_cache_mutants.py --config mutants/driver.toml
MUTANT_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Mutants are judged first on the compiler's plain build, also in a
# SANITIZE= variant: a sanitizer changes what the optimiser may merge, so
# some deliberate faults (hot_asm_not_volatile) cannot show under it. A
# mutant the plain build's suites let survive is then judged by the
# oracles (docs/mutants.md, "Oracles"): an ASan+UBSan build, then a TSan
# build, then the aarch64 cross build under qemu-user (check-hot-aarch64),
# then the release build (RELEASE=1) under the conformance programs, each
# built only when there is a survivor to judge. Sharing the
# plain variant's folder shares its cache: after `make check`, `make
# SANITIZE=... check` reruns no mutant.
MUTANT_BUILD := build/$(notdir $(firstword $(CC)))
MUTANT_ORACLES ?= plain,asan,tsan,aarch64,release
MUTANT_ARGS = --build $(MUTANT_BUILD) --jobs $(MUTANT_JOBS) --oracles $(MUTANT_ORACLES) \
  --make-var CC=$(CC) --make-var SANITIZE= --make-var 'OPT=$(OPT)' \
  --make-var 'CFLAGS=$(CFLAGS)' --make-var 'LDFLAGS=$(LDFLAGS)'
# Suites the mutants are not tested with: the mutant runs themselves.
MUTANT_SKIP += check-mutants check-mutants-driver gate-mutants

.PHONY: check-mutants check-mutants-driver gate-mutants print-mutant-suites mutants-npm

# The suites that can kill a mutant, for the driver.
print-mutant-suites:
	@echo $(filter-out $(MUTANT_SKIP),$(CHECK_TARGETS))

# report.html too (mutation-testing-elements, from mutants-npm), on a
# fresh clone as well. In the plain build's make check its unmutated run is
# the check's run of the suites it uses (CHECK_BY_DRIVER, the Makefile).
check-mutants: mutants-npm
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/mutants
	$(MUTANTS) $(MUTANT_ARGS) --curated-only --html yes --results $(BUILD)/results/mutants \
	  --report $(BUILD)/mutants/curated $(if $(CHECK_BY_DRIVER),--export-results $(BUILD))

# The driver against a naive one (a full rebuild and every suite a
# mutant): `make gate MUTANT_NAIVE_SAMPLE=4` also times 4 mutants the naive
# way and prints the ratio (docs/mutants.md, "Figures"). Off by default: the
# sample is a benchmark, four to five minutes past the run, and the gate's
# mutant phase must stay under 10 minutes (the oracles issue).
MUTANT_NAIVE_SAMPLE ?= 0
# The semantic operators (docs/mutants.md, "Semantic operators") of every
# source: each semantic survivor of each has a test or a ledger line
# (MUTANT_SEMANTIC=chan.c,shared.c names some sources only, `no` none).
MUTANT_SEMANTIC ?= yes
# In make gate, one run judges the catalog and the generated mutants
# together (the gate leaves check-mutants out: the top Makefile's
# gate-run), sharing one unmutated run, one schema build and each
# oracle's witness runs.
gate-mutants: mutants-npm
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/mutants $(BUILD)/results/mutants-generated
	$(MUTANTS) $(MUTANT_ARGS) --semantic $(MUTANT_SEMANTIC) --html yes \
	  --naive-sample $(MUTANT_NAIVE_SAMPLE) \
	  --results $(BUILD)/results/mutants --report $(BUILD)/mutants

# The kill map (mutants/kills.tsv, scripts/mutants/kills.py): what gave
# each mutant its verdict in the last runs, which a run tries first. Every
# run writes its own kills beside its report; this merges the curated
# run's (make check) and the generated run's (make gate) into the tree's
# map, to commit. A stale map makes a run slower, never different.
.PHONY: mutants-kills
mutants-kills:
	cd scripts && $(PYTHON) -m mutants.kills $(CURDIR)/mutants/kills.tsv \
	  $(CURDIR)/$(MUTANT_BUILD)/mutants/curated/kills.tsv $(CURDIR)/$(MUTANT_BUILD)/mutants/kills.tsv

# The driver's own tests (scripts/mutants/tests), one result line a test,
# the modules in MUTANT_JOBS processes, the longest of the last run first.
check-mutants-driver: mutants-npm
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/mutants-driver
	cd scripts && MUTANTS_NPM=$(CURDIR)/build/npm RT_RESULTS=$(abspath $(BUILD))/results/mutants-driver \
	  RT_TEST_TIMES=$(abspath $(BUILD))/mutants-driver-times.json $(PYTHON) -m mutants.tests -j $(MUTANT_JOBS)

# mutation-testing-elements (the HTML report) and its schema, from the npm
# registry, into build/npm (package.json and lock file in scripts/mutants).
mutants-npm: build/npm/node_modules/.refrt-stamp
build/npm/node_modules/.refrt-stamp: scripts/mutants/package.json scripts/mutants/package-lock.json
	@mkdir -p build/npm
	cp scripts/mutants/package.json scripts/mutants/package-lock.json build/npm/
	cd build/npm && npm ci --no-audit --no-fund --silent
	@touch $@

CHECK_TARGETS += check-mutants check-mutants-driver
GATE_TARGETS += gate-mutants
