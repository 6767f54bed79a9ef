# The region chunk cache's benchmark: the nested loop on regions against
# the same loop on malloc/free of 64 KiB, instructions a region pair, and
# time a region as threads grow. Figures only ("region: <name> <value>"),
# never a pass or fail: docs/region-cache.md says what they mean.

BENCH_REGION := $(BUILD)/bench/region_bench

$(BENCH_REGION): bench/region_bench.c $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< $(RT_LIB) $(ALL_LDFLAGS) -o $@

.PHONY: bench-region
bench-region: $(BENCH_REGION) $(CONF_SHIM_SO)
	@$(PYTHON) bench/region_bench.py $(BUILD)

BENCH_TARGETS += bench-region
