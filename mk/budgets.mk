# Task blocks and budgets (seed 002): the taskblock benchmark and its smoke
# check. The runtime's own tests are Check suites (mk/unit.mk picks up
# reference/tests/check_block.c, check_budgets.c and check_chan.c).
#
#   make bench      builds bench/taskblock.c once per allocator and runs
#                   bench/taskblock.py: callgrind figures and ratio lines
#   make check      runs check-taskblock: every variant prints the same
#                   digest, and the long task stays inside 64 KiB

TASKBLOCK_ALLOCATORS := malloc budget bump block block-free api
taskblock_id_malloc := 1
taskblock_id_budget := 2
taskblock_id_bump := 3
taskblock_id_block := 4
taskblock_id_block-free := 5
taskblock_id_api := 6
TASKBLOCK_BIN := $(TASKBLOCK_ALLOCATORS:%=$(BUILD)/bench/taskblock-%)

$(BUILD)/bench/taskblock-%: bench/taskblock.c $(RT_LIB) $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ireference/src -DALLOC=$(taskblock_id_$*) $< $(RT_LIB) $(ALL_LDFLAGS) -o $@

.PHONY: bench-taskblock check-taskblock
bench-taskblock: $(TASKBLOCK_BIN)
	$(PYTHON) bench/taskblock.py --dir $(BUILD)/bench

check-taskblock-programs: $(TASKBLOCK_BIN)
check-taskblock: $(TASKBLOCK_BIN)
	@mkdir -p $(BUILD)/results
	@$(PYTHON) bench/taskblock.py --dir $(BUILD)/bench --smoke $(BUILD)/results/taskblock

BENCH_TARGETS += bench-taskblock
CHECK_TARGETS += check-taskblock
