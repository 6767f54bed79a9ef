# The gate (docs/ci.md, docs/user-guide.md): the naive implementation and
# the conformance kit's own check; the rest of `make gate` (coverage,
# valgrind, the table) is in mk/coverage.mk and below.

# ---- the naive implementation (conformance/naive) ------------------------
NAIVE_SRC := $(sort $(wildcard conformance/naive/*.c))
NAIVE_OBJ := $(NAIVE_SRC:conformance/naive/%.c=$(BUILD)/naive/%.o)
NAIVE_LIB := $(BUILD)/naive/librefrt-naive.a

$(BUILD)/naive/%.o: conformance/naive/%.c conformance/naive/naive.h reference/include/refrt.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(NAIVE_LIB): $(NAIVE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

.PHONY: naive check-kit-naive
naive: $(NAIVE_LIB)

# The conformance kit run against the naive library (make check IMPL=...),
# in its own folder; then the checks it failed are compared with the list
# in docs/conformance-kit.md, so the docs cannot drift. Passes only when
# they are the same set.
KIT_NAIVE_BUILD := $(BUILD)/kit-naive
check-kit-naive: $(NAIVE_LIB)
	@mkdir -p $(BUILD)/results
	@$(MAKE) --no-print-directory check IMPL=$(NAIVE_LIB) BUILD=$(KIT_NAIVE_BUILD) \
	  > $(KIT_NAIVE_BUILD).log 2>&1 || true
	@$(PYTHON) scripts/gate/kit.py --docs docs/conformance-kit.md \
	  --results $(KIT_NAIVE_BUILD)/results --log $(KIT_NAIVE_BUILD).log \
	  --out $(BUILD)/results/kit-naive

GATE_TARGETS += check-kit-naive

# ---- valgrind memcheck over the conformance programs ----------------------
.PHONY: check-valgrind
check-valgrind: $(RT_LIB)
	@if [ -n "$(SANITIZE)" ]; then echo "check-valgrind: needs a build without sanitizers"; exit 1; fi
	@$(PYTHON) scripts/gate/memcheck.py --build=$(BUILD) --cc="$(CC)" --lib=$(RT_LIB) \
	  --cflags="$(ALL_CFLAGS)" --ldflags="$(ALL_LDFLAGS)" \
	  --plain-cflags="$(CONF_PLAIN_CFLAGS)" --results=$(BUILD)/results/memcheck

GATE_TARGETS += check-valgrind

# ---- the other builds of the gate -----------------------------------------
# `make check` again with clang, with ASan+UBSan and with TSan, each in its
# own folder, all suites but those that run no code of that build (the
# mutant runs build their own trees; the kit tests another library). Each
# writes its own results; here one line a build goes to results/variants.
GATE_SKIP := check-mutants check-mutants-driver gate-mutants check-kit-naive
GATE_CLANG_BUILD := build/clang
GATE_ASAN_BUILD := build/$(VARIANT)-address-undefined
GATE_TSAN_BUILD := build/$(VARIANT)-thread

# The suites of make check but SKIP (a recipe, so CHECK_TARGETS is read
# once every mk/*.mk has added to it).
.PHONY: check-except gate-clang gate-asan gate-tsan
check-except:
	@$(MAKE) --no-print-directory -k $(filter-out $(SKIP),$(CHECK_TARGETS))

# $(call gate-variant,name,build,make variables)
define gate-variant
	@mkdir -p $(BUILD)/results
	@rm -rf $(2)/results
	@echo "gate: $(1): make check $(3) (log: $(2).log)"
	@status=0; $(MAKE) --no-print-directory BUILD=$(2) $(3) SKIP='$(GATE_SKIP)' \
	  check-except > $(2).log 2>&1 || status=$$?; \
	  if $(PYTHON) scripts/summary $(1) $(2)/results $$status > $(2).summary; then \
	    echo "pass variant:$(1)" >> $(BUILD)/results/variants; \
	  else echo "fail variant:$(1) $$(tail -1 $(2).summary) (see $(2).log)" \
	    >> $(BUILD)/results/variants; cat $(2).summary; exit 1; fi
endef

gate-clang:
	$(call gate-variant,clang,$(GATE_CLANG_BUILD),CC=clang SANITIZE=)
gate-asan:
	$(call gate-variant,asan-ubsan,$(GATE_ASAN_BUILD),SANITIZE=address$(comma)undefined)
gate-tsan:
	$(call gate-variant,tsan,$(GATE_TSAN_BUILD),SANITIZE=thread)

GATE_TARGETS += gate-clang gate-asan gate-tsan

# ---- the gate's reports: JUnit XML and the table ----------------------------
# Run by `make gate` after every suite, whether they passed or not.
# gate-mutants' report holds the catalog too; without it (the shards'
# merged report), make check's run of the catalog gives its own.
MUTANT_REPORTS ?= $(BUILD)/mutants/report.json \
  $(if $(GATE_MUTANTS_WHOLE),,$(BUILD)/mutants/curated/report.json)
.PHONY: gate-report
gate-report:
	@$(PYTHON) scripts/gate/junit.py --build $(BUILD) --out $(BUILD)/reports/junit | tail -1
	@$(PYTHON) scripts/gate/table.py --build $(BUILD) \
	  --variant compiler=$(GATE_CLANG_BUILD) --variant sanitizer=$(GATE_ASAN_BUILD) \
	  --variant sanitizer=$(GATE_TSAN_BUILD) --memcheck $(BUILD)/results/memcheck \
	  --coverage $(COV_REPORTS)/coverage.json --coverage-results $(BUILD)/results/coverage \
	  $(foreach r,$(MUTANT_REPORTS),--mutants $(r)) \
	  $(if $(wildcard scripts/region_cache_mutants.py),--expect-mutants)

# ---- the generated mutants, sharded over CI runners (ci/, docs/ci.md) -----
# make gate-mutants-shard SHARD=2/4   one shard's report in $(BUILD)/mutants/shard-2-of-4
# make gate-mutants-merge SHARD_REPORTS='a/report.json b/report.json'
#                                     one report, $(BUILD)/mutants/report.json,
#                                     where the gate's table reads it
# then: make gate GATE_EXCLUDE=gate-mutants
SHARD ?= 1/1
SHARD_REPORTS ?= $(wildcard $(BUILD)/mutants/shard-*/report.json)
MUTANT_SHARD_DIR = $(BUILD)/mutants/shard-$(subst /,-of-,$(SHARD))

.PHONY: gate-mutants-shard gate-mutants-merge
gate-mutants-shard:
	@scripts/deps gate
	@test -n "$(MUTANTS)" || { echo "gate-mutants-shard: the mutant driver (mk/mutants.mk) is not here"; exit 1; }
	@mkdir -p $(BUILD)/results
	$(MUTANTS) $(MUTANT_ARGS) --generated-only --html no --shard $(SHARD) \
	  --results $(BUILD)/results/mutants-shard --report $(MUTANT_SHARD_DIR)

gate-mutants-merge:
	@test -n "$(MUTANTS)" || { echo "gate-mutants-merge: the mutant driver (mk/mutants.mk) is not here"; exit 1; }
	@test -n "$(SHARD_REPORTS)" || { echo "gate-mutants-merge: no shard report (SHARD_REPORTS=)"; exit 1; }
	@mkdir -p $(BUILD)/mutants
	$(MUTANTS) --merge $(SHARD_REPORTS) --report $(BUILD)/mutants

# ---- the CI files (ci/run, .github/workflows) are what docs/ci.md says ----
.PHONY: check-ci
check-ci:
	@$(PYTHON) scripts/gate/test_ci.py --results $(BUILD)/results/ci

CHECK_TARGETS += check-ci

# ---- docs/misuse.md names a test for every violation and trap -------------
.PHONY: check-misuse
check-misuse:
	@$(PYTHON) scripts/gate/misuse.py --docs docs/misuse.md --results $(BUILD)/results/misuse

GATE_TARGETS += check-misuse

# A mutant cannot change what check-ci reads: the mutant driver skips it.
MUTANT_SKIP += check-ci

# ---- the gate's own scripts, on fixtures ------------------------------------
.PHONY: check-gate-scripts
check-gate-scripts:
	@mkdir -p $(BUILD)/results
	@RT_RESULTS=$(abspath $(BUILD))/results/gate-scripts $(PYTHON) scripts/gate/tests/test_gate.py \
	  > $(BUILD)/gate-scripts.log 2>&1; s=$$?; tail -1 $(BUILD)/gate-scripts.log; exit $$s

CHECK_TARGETS += check-gate-scripts
MUTANT_SKIP += check-gate-scripts
