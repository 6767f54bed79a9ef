# Unit tests: every reference/tests/check_*.c is one Check suite, linked
# with testutil.c, testmain.c (the Check main) and the static library,
# with malloc and free wrapped so the tests can count chunks, and calloc,
# realloc, pthread_create and sysconf too, so they can make one fail
# (testutil.h: fail_nth, fail_sysconf), and the pthread key calls, so they
# can tell a key nobody made (keys_not_made_used).

UNIT_ALL_SRC := $(sort $(wildcard reference/tests/check_*.c))
# The release build (RELEASE=1, the release oracle of docs/mutants.md) runs
# every program but those that are about what only a test build has: the
# cost counters, the lock checks, the named points. Their cases that need
# one of those elsewhere are compiled only where RT_TESTING is.
UNIT_TEST_BUILD_ONLY := check_costs check_doors check_locks check_interleave
UNIT_SRC := $(if $(RELEASE),$(filter-out $(UNIT_TEST_BUILD_ONLY:%=reference/tests/%.c),$(UNIT_ALL_SRC)),$(UNIT_ALL_SRC))
UNIT_BIN := $(UNIT_SRC:reference/tests/%.c=$(BUILD)/unit/%)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(or $(shell pkg-config --libs check 2>/dev/null),-lcheck -lsubunit -lrt -lm)
UNIT_WRAP := -Wl,--wrap=malloc -Wl,--wrap=free
# Fault injection (testutil.h, fail_nth, fail_sysconf): the calls that can fail.
UNIT_WRAP += -Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=pthread_create \
  -Wl,--wrap=sysconf
# The keys (testutil.h, keys_not_made_used): every get or set of a key
# that no pthread_key_create made is counted.
UNIT_WRAP += -Wl,--wrap=pthread_key_create -Wl,--wrap=pthread_key_delete \
  -Wl,--wrap=pthread_getspecific -Wl,--wrap=pthread_setspecific
# The clock (testutil.h, fake_realtime_nsec): a test sets the nanoseconds
# CLOCK_REALTIME reads give, to reach a deadline that crosses a second.
UNIT_WRAP += -Wl,--wrap=clock_gettime
# The timed waits (testutil.h, timed_waits_seen): each deadline, measured
# from the waiting thread's last clock read.
UNIT_WRAP += -Wl,--wrap=pthread_cond_timedwait

# Each test source is compiled to an object of its own, with the headers
# it includes as its prerequisites (-MMD): a program is relinked, not
# recompiled, when only the library changed. That is what a mutant of a
# reference/src/*.c file changes, and the mutant driver builds a mutant
# the schema cannot hold in a copy of the tree whose objects are built
# already: check_shared.c alone takes 5 s to compile, its relink 0.2 s.
UNIT_OBJ := $(BUILD)/unit/obj
UNIT_ALL_BIN := $(UNIT_ALL_SRC:reference/tests/%.c=$(BUILD)/unit/%)

$(UNIT_OBJ)/%.o: reference/tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Ireference/tests -Ireference/src -MMD -MP -c $< -o $@

$(UNIT_ALL_BIN): $(BUILD)/unit/%: $(UNIT_OBJ)/%.o $(UNIT_OBJ)/testutil.o $(UNIT_OBJ)/testmain.o $(RT_LIB)
	$(CC) $^ $(ALL_LDFLAGS) $(UNIT_WRAP) $(CHECK_LIBS) -o $@

-include $(wildcard $(UNIT_OBJ)/*.d)

# For the mutant driver, which needs one failure, not all of them:
# RT_FAIL_FAST stops at the first program that fails, and the programs
# RT_FIRST_PROGRAMS names (those that killed the function's mutants so
# far) run first. Its witness runs (docs/mutants.md, "Oracles") build and
# run only the programs RT_ONLY_PROGRAMS names; naming none of them runs
# none, which the driver sees (no result line) and does not trust.
UNIT_RUN := $(if $(RT_ONLY_PROGRAMS),$(filter $(addprefix $(BUILD)/unit/,$(RT_ONLY_PROGRAMS)),$(UNIT_BIN)),$(UNIT_BIN))
.PHONY: check-unit
check-unit-programs: $(UNIT_RUN)
check-unit: $(UNIT_RUN)
	@mkdir -p $(BUILD)/results $(BUILD)/reports
	@rm -f $(BUILD)/results/unit
	@$(if $(RT_ONLY_PROGRAMS),$(if $(UNIT_RUN),,echo "check-unit: RT_ONLY_PROGRAMS ($(RT_ONLY_PROGRAMS)) names no unit program";))
	@order=; for f in $$RT_FIRST_PROGRAMS; do \
	  for t in $(UNIT_RUN); do [ "$$(basename $$t)" = "$$f" ] && order="$$order $$t"; done; \
	done; \
	for t in $(UNIT_RUN); do \
	  case " $$order " in *" $$t "*) ;; *) order="$$order $$t";; esac; \
	done; \
	status=0; for t in $$order; do \
	  n=$$(basename $$t); \
	  RT_RESULTS=$(BUILD)/results/unit RT_XML=$(BUILD)/reports/$$n.xml $$t || status=1; \
	  if [ $$status = 1 ] && [ -n "$$RT_FAIL_FAST" ]; then break; fi; \
	done; exit $$status

CHECK_TARGETS += check-unit
