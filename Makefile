# refrt: the top-level build.
#
#   make                 static and shared library under $(BUILD) (a test
#                        build; RELEASE=1 for the shipped one)
#   make check           every test (installs missing Debian packages first)
#   make gate            the whole conformance gate
#   make bench           the benchmarks, one figure a line
#   make install PREFIX=/usr/local
#   make clean
#
# CC=gcc|clang and SANITIZE=address,undefined|thread pick a variant; each
# variant builds under its own folder, build/<cc>[-<sanitizers>], so they
# never mix. Nothing is written outside build/.
#
# Each area of the project (unit tests, conformance, benchmarks, ...) keeps
# its rules in mk/<area>.mk and adds its targets to CHECK_TARGETS,
# GATE_TARGETS and BENCH_TARGETS.

comma := ,
SANITIZE ?=
# IMPL=path/to/lib.a: another implementation of refrt.h; make check then
# runs only the conformance kit (KIT_TARGETS) against it, in its own folder.
IMPL ?=
# RELEASE=1: the library as shipped. Every other build is a test build:
# the runtime is compiled with RT_TESTING, which turns on what only tests
# use (checked locks, cost counters, named points; see the headers of
# reference/src that test RT_TESTING) and adds nothing to a release build.
# `make install` and `make bench` build with RELEASE=1, in their own folder.
RELEASE ?=
VARIANT := $(notdir $(firstword $(CC)))$(if $(SANITIZE),-$(subst $(comma),-,$(SANITIZE)))$(if $(IMPL),-impl-$(basename $(notdir $(IMPL))))$(if $(RELEASE),-release)
BUILD ?= build/$(VARIANT)
PREFIX ?= /usr/local
PYTHON ?= /usr/bin/python3

OPT ?= -O2
# DWARF 4: valgrind 3.19 (callgrind in the benchmarks) cannot read the
# DWARF 5 clang 14 writes by default.
CFLAGS ?= $(OPT) -g -gdwarf-4
# WERROR= turns warnings back into warnings: only for machine-made code,
# the mutant driver's schema build (docs/mutants.md).
WERROR ?= -Werror
WARNINGS := -std=c11 -Wall -Wextra $(WERROR)
# ThreadSanitizer sees memory only through the accesses it instruments and
# the libc calls it intercepts: a memset or memcpy gcc expands inline (rep
# stos, vector stores) is neither, so a race through one goes unseen. The
# TSan build keeps them calls (a plain memset of the cost counters racing a
# counting thread: rt12b_costs_reset_by_plain_memset, docs/mutants.md).
TSAN_KEEPS_CALLS := -fno-builtin-memset -fno-builtin-memcpy -fno-builtin-memmove
SANFLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all $(if $(findstring thread,$(SANITIZE)),$(TSAN_KEEPS_CALLS)))
TESTING_FLAGS := $(if $(RELEASE),,-DRT_TESTING=1)
ALL_CFLAGS = $(WARNINGS) $(CFLAGS) $(SANFLAGS) $(TESTING_FLAGS) -pthread -Ireference/include
ALL_LDFLAGS = $(SANFLAGS) -pthread $(LDFLAGS)

RT_SRC := $(sort $(wildcard reference/src/*.c))
RT_HDR := $(wildcard reference/src/*.h) reference/include/refrt.h
RT_OBJ := $(RT_SRC:reference/src/%.c=$(BUILD)/obj/%.o)
RT_LIB := $(BUILD)/librefrt.a
RT_SO := $(BUILD)/librefrt.so

CHECK_TARGETS :=
KIT_TARGETS :=
GATE_TARGETS :=
BENCH_TARGETS :=

.PHONY: all lib check check-run gate gate-run bench bench-run install install-run clean deps
.DEFAULT_GOAL := all

all: lib
lib: $(RT_LIB) $(RT_SO)

$(BUILD)/obj/%.o: reference/src/%.c $(RT_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

$(RT_LIB): $(RT_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(RT_SO): $(RT_OBJ)
	$(CC) -shared $(ALL_LDFLAGS) -Wl,-soname,librefrt.so -o $@ $^

include $(sort $(wildcard mk/*.mk))

# The programs of the suites PROGRAMS_OF names, built and not run
# (check-<suite>-programs; none for a suite that builds nothing): the
# mutant driver builds them in one make before its unmutated run runs the
# suites side by side, so no two makes ever build the same file.
.PHONY: programs
programs: $(PROGRAMS_OF:%=%-programs)
check-%-programs: ;

# The results of each suite land in $(BUILD)/results/<suite>, one
# "pass <name>" or "fail <name>" a line; scripts/summary counts them.
# The suites run CHECK_JOBS at a time (each one's output kept together).
# The curated mutants start first: the driver keeps MUTANT_JOBS cores busy
# for most of its run, and the other suites, one at a time beside it, fill
# what its one-process phases (its unmutated run, each oracle's build) leave.
CHECK_JOBS ?= $(MUTANT_JOBS)
CHECK_FIRST := $(if $(IMPL),,$(filter check-mutants,$(CHECK_TARGETS)))
# The suites a mutant can be killed by (mk/mutants.mk) are run once, by the
# curated run's unmutated run, which copies their results and reports here
# (the driver's --export-results): it runs them on this same plain build
# anyway. A sanitizer's or the release build's check runs them itself.
CHECK_BY_DRIVER := $(if $(SANITIZE)$(IMPL)$(RELEASE),,$(if $(CHECK_FIRST),$(filter-out $(MUTANT_SKIP),$(CHECK_TARGETS))))
check: deps
	@rm -rf $(BUILD)/results
	@status=0; $(MAKE) --no-print-directory -k -j$(CHECK_JOBS) --output-sync=target check-run || status=$$?; \
	  $(PYTHON) scripts/summary check $(BUILD)/results $$status

check-run: $(if $(IMPL),$(KIT_TARGETS),$(CHECK_FIRST) $(filter-out $(CHECK_FIRST) $(CHECK_BY_DRIVER),$(CHECK_TARGETS)))

gate: deps
	@scripts/deps gate
	@rm -rf $(BUILD)/results
	@status=0; $(MAKE) --no-print-directory -k gate-run || status=$$?; \
	  $(PYTHON) scripts/summary gate $(BUILD)/results $$status; s=$$?; \
	  $(MAKE) --no-print-directory gate-report; t=$$?; [ $$s -eq 0 ] && [ $$t -eq 0 ]

# GATE_EXCLUDE: targets a CI job leaves out because other jobs ran them
# (ci/: the mutant shards). The gate's mutants are one driver run, the
# catalog and the generated ones together (gate-mutants: one unmutated
# run, one schema build, one witness run an oracle), so make check's run
# of the catalog alone (check-mutants) is left out, unless gate-mutants
# is (GATE_EXCLUDE=gate-mutants: the shards judge the generated ones).
GATE_RUN := $(filter-out $(GATE_EXCLUDE),$(CHECK_TARGETS) $(GATE_TARGETS))
GATE_MUTANTS_WHOLE := $(filter gate-mutants,$(GATE_RUN))
gate-run: $(if $(GATE_MUTANTS_WHOLE),$(filter-out check-mutants,$(GATE_RUN)),$(GATE_RUN))

# The figures are those of the shipped library, without test instrumentation.
bench: deps
	@$(MAKE) --no-print-directory RELEASE=1 bench-run
bench-run: $(BENCH_TARGETS)

deps:
	@scripts/deps

install:
	@$(MAKE) --no-print-directory RELEASE=1 install-run
install-run: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 reference/include/refrt.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(RT_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(RT_SO) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' refrt.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/refrt.pc

clean:
	rm -rf build
