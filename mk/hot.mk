# The hot path (seed 003): the fiber migration test, built with hot.c
# compiled in so that rt_hot() can be inlined, at -O2 and at -O3 (the
# variant's CC picks gcc or clang); and bench/hot. The unit suite
# check_hot.c is built and run by mk/unit.mk like every check_*.c.

HOT_FIBER_OPTS := O2 O3
HOT_FIBER_BIN := $(HOT_FIBER_OPTS:%=$(BUILD)/hot/hot_fiber-%)

$(BUILD)/hot/hot_fiber-%: reference/tests/hot_fiber.c reference/tests/testutil.c \
  reference/tests/testutil.h $(RT_LIB) $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -$* $(CHECK_CFLAGS) -Ireference/tests -Ireference/src \
	  $< reference/tests/testutil.c $(RT_LIB) $(ALL_LDFLAGS) $(UNIT_WRAP) $(CHECK_LIBS) -o $@

.PHONY: check-hot-fiber
check-hot-fiber: $(HOT_FIBER_BIN)
	@mkdir -p $(BUILD)/results $(BUILD)/reports
	@status=0; for t in $(HOT_FIBER_BIN); do \
	  n=$$(basename $$t); rm -f $(BUILD)/results/$$n; \
	  RT_RESULTS=$(BUILD)/results/$$n RT_XML=$(BUILD)/reports/$$n.xml $$t || status=1; \
	done; exit $$status

CHECK_TARGETS += check-hot-fiber

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
