# The hot path (seed 003): the fiber migration test, built with hot.c
# compiled in so that rt_hot() can be inlined, at -O2 and at -O3 (the
# variant's CC picks gcc or clang); and bench/hot. The unit suite
# check_hot.c is built and run by mk/unit.mk like every check_*.c.

HOT_FIBER_OPTS := O2 O3
HOT_FIBER_BIN := $(HOT_FIBER_OPTS:%=$(BUILD)/hot/hot_fiber-%)

$(BUILD)/hot/hot_fiber-%: reference/tests/hot_fiber.c reference/tests/testutil.c \
  reference/tests/testmain.c reference/tests/testutil.h reference/tests/testmain.h $(RT_LIB) $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -$* $(CHECK_CFLAGS) -Ireference/tests -Ireference/src \
	  $< reference/tests/testutil.c reference/tests/testmain.c $(RT_LIB) $(ALL_LDFLAGS) $(UNIT_WRAP) \
	  $(CHECK_LIBS) -o $@

.PHONY: check-hot-fiber
check-hot-fiber-programs: $(HOT_FIBER_BIN)
check-hot-fiber: $(HOT_FIBER_BIN)
	@mkdir -p $(BUILD)/results $(BUILD)/reports
	@status=0; for t in $(HOT_FIBER_BIN); do \
	  n=$$(basename $$t); rm -f $(BUILD)/results/$$n; \
	  RT_RESULTS=$(BUILD)/results/$$n RT_XML=$(BUILD)/reports/$$n.xml $$t || status=1; \
	done; exit $$status

CHECK_TARGETS += check-hot-fiber

# The portable fallback (what musl or another architecture gets), built
# here with -DRT_PRIM_PORTABLE: the unit suites and the fiber test again,
# under $(BUILD)/portable, their results copied in as portable-<suite>.
.PHONY: check-hot-portable check-hot-portable-programs
check-hot-portable-programs:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/portable \
	  CFLAGS='$(CFLAGS) -DRT_PRIM_PORTABLE' check-unit-programs check-hot-fiber-programs
check-hot-portable:
	@status=0; $(MAKE) --no-print-directory BUILD=$(BUILD)/portable \
	  CFLAGS='$(CFLAGS) -DRT_PRIM_PORTABLE' check-unit check-hot-fiber || status=1; \
	mkdir -p $(BUILD)/results; for f in $(BUILD)/portable/results/*; do \
	  cp $$f $(BUILD)/results/portable-$$(basename $$f); done; exit $$status

CHECK_TARGETS += check-hot-portable

# bench/hot: instructions per access (callgrind) and the probes.
HOT_BENCH := $(BUILD)/bench/hot_bench
HOT_TLS_SO := $(BUILD)/bench/libhot_tls.so

$(HOT_TLS_SO): bench/hot_tls.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< $(ALL_LDFLAGS) -o $@

$(HOT_BENCH): bench/hot.c $(RT_LIB) $(HOT_TLS_SO) $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ireference/src $< $(RT_LIB) -L$(@D) -lhot_tls \
	  -Wl,-rpath,'$$ORIGIN' $(ALL_LDFLAGS) -o $@

.PHONY: bench-hot
bench-hot: $(HOT_BENCH)
	$(PYTHON) bench/hot.py $(HOT_BENCH)

BENCH_TARGETS += bench-hot

# The hot path on aarch64, cross-built and run under qemu-user (Debian's
# qemu-user, gcc-aarch64-linux-gnu): check_hot, check_region_cache and the
# fiber test at -O2 and -O3, with reference/tests/cross/check.h standing in
# for Check, which is not installed for the target. Not one of make
# check's suites (run `make check-hot-aarch64`), but the mutant verdict's
# aarch64 oracle (mutants/driver.toml) runs it for the survivors.
AARCH64_CC ?= aarch64-linux-gnu-gcc
AARCH64_RUN ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
AARCH64_DIR := $(BUILD)/aarch64
AARCH64_CFLAGS := $(WARNINGS) $(OPT) -g -pthread -Ireference/include -Ireference/tests/cross \
  -Ireference/tests -Ireference/src
AARCH64_TEST_SRC := reference/tests/testutil.c reference/tests/testmain.c reference/tests/cross/check.c
AARCH64_BIN := $(AARCH64_DIR)/check_hot $(AARCH64_DIR)/check_region_cache \
  $(HOT_FIBER_OPTS:%=$(AARCH64_DIR)/hot_fiber-%)
AARCH64_HDR := $(RT_HDR) reference/tests/testutil.h reference/tests/testmain.h \
  reference/tests/cross/check.h

# Each source is compiled once a level, then the programs are linked: the
# unit programs' objects at $(OPT) (obj/), the fiber test's at -O2 and -O3
# (obj-O2/, obj-O3/; without hot.c, which hot_fiber.c includes). A mutant
# built alone then recompiles the one source it changes, three times at
# most, not every source six times (25 s a mutant of the aarch64 oracle).
AARCH64_NAMES := $(notdir $(RT_SRC:.c=) $(AARCH64_TEST_SRC:.c=))

# $(1): the objects' folder; $(2): its level's flag, if any
define AARCH64_OBJECTS
$(AARCH64_DIR)/$(1)/%.o: reference/src/%.c $(AARCH64_HDR)
	@mkdir -p $$(@D)
	$$(AARCH64_CC) $$(AARCH64_CFLAGS) $(2) -c $$< -o $$@
$(AARCH64_DIR)/$(1)/%.o: reference/tests/%.c $(AARCH64_HDR)
	@mkdir -p $$(@D)
	$$(AARCH64_CC) $$(AARCH64_CFLAGS) $(2) -c $$< -o $$@
$(AARCH64_DIR)/$(1)/%.o: reference/tests/cross/%.c $(AARCH64_HDR)
	@mkdir -p $$(@D)
	$$(AARCH64_CC) $$(AARCH64_CFLAGS) $(2) -c $$< -o $$@
endef
$(eval $(call AARCH64_OBJECTS,obj,))
$(foreach o,$(HOT_FIBER_OPTS),$(eval $(call AARCH64_OBJECTS,obj-$(o),-$(o))))

$(AARCH64_DIR)/check_%: $(AARCH64_DIR)/obj/check_%.o $(AARCH64_NAMES:%=$(AARCH64_DIR)/obj/%.o)
	$(AARCH64_CC) $(AARCH64_CFLAGS) $^ $(UNIT_WRAP) -o $@
# kept, not deleted as a pattern rule's intermediates: the next build reuses them
.SECONDARY: $(patsubst %,$(AARCH64_DIR)/obj/%.o,$(AARCH64_NAMES) check_hot check_region_cache)

define AARCH64_FIBER
$(AARCH64_DIR)/obj-$(1)/hot_fiber.o: reference/src/hot.c
$(AARCH64_DIR)/hot_fiber-$(1): $(AARCH64_DIR)/obj-$(1)/hot_fiber.o \
  $(patsubst %,$(AARCH64_DIR)/obj-$(1)/%.o,$(filter-out hot,$(AARCH64_NAMES)))
	$$(AARCH64_CC) $$(AARCH64_CFLAGS) -$(1) $$^ $$(UNIT_WRAP) -o $$@
endef
$(foreach o,$(HOT_FIBER_OPTS),$(eval $(call AARCH64_FIBER,$(o))))

.PHONY: check-hot-aarch64
check-hot-aarch64:
	@scripts/deps aarch64
	@$(MAKE) --no-print-directory $(AARCH64_BIN)
	@rm -rf $(AARCH64_DIR)/results; mkdir -p $(AARCH64_DIR)/results
	@status=0; for t in $(AARCH64_BIN); do \
	  RT_RESULTS=$(AARCH64_DIR)/results/$$(basename $$t) $(AARCH64_RUN) $$t || status=1; \
	  if [ $$status = 1 ] && [ -n "$$RT_FAIL_FAST" ]; then break; fi; \
	done; $(PYTHON) scripts/summary aarch64 $(AARCH64_DIR)/results $$status

# The runtime loaded with dlopen, as a plugin (reference/tests/dlopen_plugin.c):
# every call through dlsym, so the library's thread-local words are where
# glibc puts a dlopen'd module's. It finds $(BUILD)/librefrt.so from its
# own path, so a copied build tree loads its own library.
DLOPEN_BIN := $(BUILD)/hot/dlopen_plugin

$(DLOPEN_BIN): reference/tests/dlopen_plugin.c reference/tests/testmain.c reference/tests/testmain.h \
  reference/tests/testutil.h $(RT_SO) $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Ireference/tests \
	  $< reference/tests/testmain.c $(ALL_LDFLAGS) -ldl $(CHECK_LIBS) -o $@

.PHONY: check-dlopen
check-dlopen-programs: $(DLOPEN_BIN)
check-dlopen: $(DLOPEN_BIN)
	@mkdir -p $(BUILD)/results $(BUILD)/reports
	@rm -f $(BUILD)/results/dlopen
	@RT_RESULTS=$(BUILD)/results/dlopen RT_XML=$(BUILD)/reports/dlopen.xml $(DLOPEN_BIN)

CHECK_TARGETS += check-dlopen
