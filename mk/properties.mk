# Property tests: the operation interpreter and its model (properties/),
# driven by a seeded generator with shrinking, as one Check suite that
# reports in the results format of docs/conventions.md.
#
#   make check-properties                         the properties
#   REFRT_SEED=0x... make check-properties        replays one sequence
#   REFRT_PROP_RUNS=100000 make check-properties  runs longer

PROP_LIB_SRC := properties/prop_codec.c properties/prop_run.c properties/prop_task.c properties/prop_gen.c
PROP_HDR := properties/prop.h properties/prop_int.h properties/prop_spans.h
PROP_BIN := $(BUILD)/properties/check_properties
# Sequences a property. ThreadSanitizer makes every byte the runtime clears
# or fills cost ~30 times more; there the properties are run for the thread
# operation's races, and a tenth of the sequences keeps make check short.
PROP_RUNS ?= $(if $(findstring thread,$(SANITIZE)),400,4000)

# Every driver of the interpreter links prop_machine.c with
# -Wl,--wrap=sysconf: the machine a default-strategy spawn runs on.
PROP_MACHINE := properties/prop_machine.c -Wl,--wrap=sysconf

$(PROP_BIN): properties/check_properties.c $(PROP_LIB_SRC) properties/prop_wrap.c properties/prop_machine.c $(PROP_HDR) \
  reference/tests/testmain.c reference/tests/testmain.h $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Iproperties -Ireference/src -Ireference/tests \
	  $< $(PROP_LIB_SRC) properties/prop_wrap.c $(PROP_MACHINE) reference/tests/testmain.c $(RT_LIB) $(ALL_LDFLAGS) -Wl,--wrap=free \
	  $(CHECK_LIBS) -o $@

.PHONY: check-properties
check-properties-programs: $(PROP_BIN)
check-properties: $(PROP_BIN)
	@mkdir -p $(BUILD)/results $(BUILD)/reports $(BUILD)/properties/failures
	@rm -f $(BUILD)/results/properties
	@RT_RESULTS=$(BUILD)/results/properties RT_XML=$(BUILD)/reports/properties.xml \
	  REFRT_PROP_OUT=$(BUILD)/properties/failures REFRT_PROP_RUNS=$${REFRT_PROP_RUNS:-$(PROP_RUNS)} \
	  $(PROP_BIN)

CHECK_TARGETS += check-properties
