# The conformance kit judged by mutants of another implementation:
#
#   make gate-kit IMPL_SRC=dir    (default: conformance/naive)
#
# The mutant driver (mutants/kit.toml) makes mutants of IMPL_SRC/*.c, builds
# each into a library (kit-impl) and runs the kit on it (KIT_TARGETS, as
# `make check IMPL=` does). A mutant is killed when the kit's results differ
# from those of the unmutated implementation: a check it already fails does
# not count. The run prints the kit's mutation score on that implementation
# (docs/conformance-kit.md). IMPL_SRC is a folder of this tree: the driver
# mutates copies of the tree, never the tree.

IMPL_SRC ?= conformance/naive
KIT_IMPL_SRC = $(sort $(wildcard $(IMPL_SRC)/*.c))
KIT_IMPL_OBJ = $(KIT_IMPL_SRC:$(IMPL_SRC)/%.c=$(BUILD)/impl/%.o)
KIT_IMPL_LIB = $(BUILD)/impl/librefrt-impl.a
KIT_JOBS ?= $(MUTANT_JOBS)
# more of the driver's options: KIT_ARGS="--only 'regions.c:*'"
KIT_ARGS ?=
KIT_WORK = $(BUILD)/gate-kit/$(subst /,-,$(patsubst %/,%,$(IMPL_SRC)))

.PHONY: kit-impl print-kit-suites gate-kit
kit-impl: $(KIT_IMPL_LIB)

$(BUILD)/impl/%.o: $(IMPL_SRC)/%.c $(wildcard $(IMPL_SRC)/*.h) reference/include/refrt.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -I$(IMPL_SRC) -c $< -o $@

$(KIT_IMPL_LIB): $(KIT_IMPL_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# The suites of the kit, for the driver.
print-kit-suites:
	@echo $(KIT_TARGETS)

# The driver exits 1 when a mutant survives: here that is the measure, not
# a failure; a run that stops (the unmutated implementation does not build,
# or its kit writes no results) fails.
gate-kit:
	@test -n "$(KIT_IMPL_SRC)" || { echo "gate-kit: no .c file in IMPL_SRC=$(IMPL_SRC)"; exit 1; }
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/gate-kit
	@status=0; $(PYTHON) scripts/region_cache_mutants.py --config mutants/kit.toml \
	  --build $(KIT_WORK) --report $(KIT_WORK) --jobs $(KIT_JOBS) --html no \
	  --make-var IMPL_SRC=$(patsubst %/,%,$(IMPL_SRC)) --make-var CC=$(CC) --make-var SANITIZE= \
	  --make-var 'OPT=$(OPT)' --make-var 'CFLAGS=$(CFLAGS)' --make-var 'LDFLAGS=$(LDFLAGS)' \
	  --results $(BUILD)/results/gate-kit $(KIT_ARGS) || status=$$?; \
	  [ $$status -le 1 ]
