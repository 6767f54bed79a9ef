# Fuzzing: the interpreter of properties/ as a fuzz target (fuzz/).
#
#   make check          replays fuzz/corpus and fuzz/regressions, then a
#                       bounded libFuzzer run (FUZZ_RUNS inputs, not a time)
#   make fuzz           AFL++ for FUZZ_SECONDS (default 600), persistent mode
#                       with a CmpLog build beside it; fails if anything
#                       crashed or hung, keeps each crash minimised in
#                       fuzz/regressions/; prints execs, execs/s, edges
#   make fuzz-speed     the same harness in persistent and in fork mode, side
#                       by side (FUZZ_SPEED_EXECS a fork-mode round, ten times
#                       as many a persistent one; FUZZ_SPEED_ROUNDS rounds)
#   make fuzz-corpus    rewrites the generated seeds in fuzz/corpus/
#
# The libFuzzer binary is always built with clang (-fsanitize=fuzzer needs
# it), the AFL++ ones with afl-clang-fast; the replay follows CC= and
# SANITIZE= like every test.

FUZZ_DIR := $(BUILD)/fuzz
FUZZ_PROP_SRC := properties/prop_codec.c properties/prop_run.c properties/prop_task.c
FUZZ_PROP_DEPS := $(FUZZ_PROP_SRC) properties/prop_machine.c properties/prop.h properties/prop_int.h properties/prop_spans.h
FUZZ_TARGET := fuzz/fuzz_ops.c
FUZZ_RUNS ?= 10000
FUZZ_SECONDS ?= 600
FUZZ_SPEED_EXECS ?= 20000
FUZZ_SPEED_ROUNDS ?= 3
FUZZ_MAX_LEN := 4096

# ---- the replay of the corpus and the regression inputs (make check) ------

$(FUZZ_DIR)/replay: fuzz/replay.c $(FUZZ_PROP_DEPS) properties/prop_wrap.c $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Iproperties fuzz/replay.c $(FUZZ_PROP_SRC) properties/prop_wrap.c $(PROP_MACHINE) \
	  $(RT_LIB) $(ALL_LDFLAGS) -Wl,--wrap=free -o $@

.PHONY: check-fuzz-replay
check-fuzz-replay-programs: $(FUZZ_DIR)/replay
check-fuzz-replay: $(FUZZ_DIR)/replay
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/fuzz-replay
	@RT_RESULTS=$(BUILD)/results/fuzz-replay $(FUZZ_DIR)/replay fuzz/corpus fuzz/regressions

# ---- libFuzzer: a bounded run in make check ---------------------------------

LF_CC := clang
LF_FLAGS := $(WARNINGS) -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=all -fno-omit-frame-pointer -pthread -Ireference/include -Iproperties
LF_BIN := $(FUZZ_DIR)/libfuzzer

$(LF_BIN): $(FUZZ_TARGET) $(FUZZ_PROP_DEPS) $(RT_SRC) $(RT_HDR)
	@mkdir -p $(@D)
	$(LF_CC) $(LF_FLAGS) $(FUZZ_TARGET) $(FUZZ_PROP_SRC) $(PROP_MACHINE) $(RT_SRC) -o $@

.PHONY: check-fuzz-libfuzzer
check-fuzz-libfuzzer: $(LF_BIN)
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/fuzz-libfuzzer
	@rm -rf $(FUZZ_DIR)/lf-corpus $(FUZZ_DIR)/lf-artifacts
	@mkdir -p $(FUZZ_DIR)/lf-corpus $(FUZZ_DIR)/lf-artifacts
	@name=libfuzzer_$(FUZZ_RUNS)_runs; \
	if $(LF_BIN) -runs=$(FUZZ_RUNS) -seed=1 -max_len=$(FUZZ_MAX_LEN) \
	     -dict=fuzz/ops.dict -artifact_prefix=$(FUZZ_DIR)/lf-artifacts/ \
	     $(FUZZ_DIR)/lf-corpus fuzz/corpus fuzz/regressions \
	     > $(FUZZ_DIR)/libfuzzer.log 2>&1; then \
	  echo "pass $$name" >> $(BUILD)/results/fuzz-libfuzzer; \
	  grep -E '^#[0-9]+ +DONE' $(FUZZ_DIR)/libfuzzer.log || tail -n 1 $(FUZZ_DIR)/libfuzzer.log; \
	else \
	  why=$$(grep -m1 -E 'refrt fuzz:|ERROR:|SUMMARY:' $(FUZZ_DIR)/libfuzzer.log); \
	  echo "fail $$name $$why (log $(FUZZ_DIR)/libfuzzer.log, input in $(FUZZ_DIR)/lf-artifacts/)" \
	    >> $(BUILD)/results/fuzz-libfuzzer; \
	  tail -n 30 $(FUZZ_DIR)/libfuzzer.log; exit 1; \
	fi

CHECK_TARGETS += check-fuzz-replay check-fuzz-libfuzzer
# Not a suite the mutants are judged by: its 15 s of random search run for
# every survivor and three times more in each run (unmutated, coverage,
# schema), and in the runs of 30 Nov 2026 (every generated mutant, 1045
# run, then 852) it killed none of the mutants the other suites let
# survive, the only ones it ran on, since it ran last; the same
# harness replays its corpus deterministically in check-fuzz-replay, which
# is judged. (docs/mutants.md)
MUTANT_SKIP += check-fuzz-libfuzzer

# ---- AFL++ (make fuzz, make fuzz-speed) -------------------------------------

AFL_CC ?= afl-clang-fast
AFL_FLAGS := $(WARNINGS) -O2 -g -pthread -Ireference/include -Iproperties
AFL_SRC := fuzz/afl_main.c $(FUZZ_TARGET) $(FUZZ_PROP_SRC) properties/prop_machine.c $(RT_SRC)
AFL_DEPS := $(AFL_SRC) properties/prop.h properties/prop_int.h properties/prop_spans.h $(RT_HDR)
AFL_OUT := $(FUZZ_DIR)/afl

# persistent: the fuzzer's target (UBSan, which costs little); cmplog: the
# same with CmpLog, for -c; fork: the same harness without the persistent
# loop, for the speed comparison; asan: fork mode with ASan and UBSan, which
# replays every input the fuzzer kept (ASan would slow the fuzzer itself
# several times, AFL++'s docs advise a sanitizer build beside the fast one)
# and minimises crashes.
AFL_SAN := AFL_USE_UBSAN=1 AFL_QUIET=1
$(FUZZ_DIR)/afl-persistent: $(AFL_DEPS)
	@mkdir -p $(@D)
	$(AFL_SAN) $(AFL_CC) $(AFL_FLAGS) $(AFL_SRC) -Wl,--wrap=sysconf -o $@
$(FUZZ_DIR)/afl-fork: $(AFL_DEPS)
	@mkdir -p $(@D)
	$(AFL_SAN) $(AFL_CC) $(AFL_FLAGS) -DFUZZ_FORK_MODE $(AFL_SRC) -Wl,--wrap=sysconf -o $@
$(FUZZ_DIR)/afl-cmplog: $(AFL_DEPS)
	@mkdir -p $(@D)
	AFL_LLVM_CMPLOG=1 $(AFL_SAN) $(AFL_CC) $(AFL_FLAGS) $(AFL_SRC) -Wl,--wrap=sysconf -o $@
$(FUZZ_DIR)/afl-asan: $(AFL_DEPS)
	@mkdir -p $(@D)
	AFL_USE_ASAN=1 $(AFL_SAN) $(AFL_CC) $(AFL_FLAGS) -DFUZZ_FORK_MODE $(AFL_SRC) -Wl,--wrap=sysconf -o $@

.PHONY: fuzz fuzz-speed fuzz-corpus fuzz-deps
fuzz-deps:
	@scripts/deps fuzz

fuzz: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_DIR)/afl-persistent $(FUZZ_DIR)/afl-cmplog $(FUZZ_DIR)/afl-asan
	@fuzz/run_afl.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

fuzz-speed: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_DIR)/afl-persistent $(FUZZ_DIR)/afl-fork
	@fuzz/speed.sh $(FUZZ_DIR) $(FUZZ_SPEED_EXECS) $(FUZZ_SPEED_ROUNDS)

$(FUZZ_DIR)/make_corpus: fuzz/make_corpus.c properties/prop_gen.c properties/prop_codec.c properties/prop.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Iproperties fuzz/make_corpus.c properties/prop_gen.c \
	  properties/prop_codec.c $(ALL_LDFLAGS) -o $@

fuzz-corpus: $(FUZZ_DIR)/make_corpus
	$(FUZZ_DIR)/make_corpus fuzz/corpus 6
