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
