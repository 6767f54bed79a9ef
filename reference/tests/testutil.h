/*
** testutil.h: what every Check suite of the runtime shares.
**
** - Each suite file defines make_suite(); testmain.c runs it in fork
**   mode, so every test starts in a fresh child that never called rt_init
**   unless the test does.
** - Death tests: a contract violation must abort with its "refrt: ..."
**   message, a region out of room must trap; both are checked in a child of
**   the test with stderr captured.
** - Chunk counting: the unit binaries are linked with --wrap=malloc and
**   --wrap=free, so chunk traffic (malloc(RT_CHUNK_SIZE) and the free of
**   such a chunk) is counted as the conformance shim counts it.
** - Fault injection: fail_nth() makes one allocation or pthread_create fail,
**   fail_sysconf() a sysconf name, fake_sysconf() a machine of another size.
** - Keys: keys_not_made_used() counts the uses of a pthread key nobody made.
*/
#ifndef REFRT_TESTUTIL_H
#define REFRT_TESTUTIL_H

#include <check.h>

#include "testmain.h"

/* UNDER_SANITIZER: 1 in an ASan or TSan build. Sanitizers bring their own
** allocator and address space layout: a test of memory exhaustion, of
** freed bytes handed back at once, or of allocation counts means nothing
** there, and such tests are left out. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif
/* UNDER_TSAN: 1 in a TSan build, whose atomics of acquire or release
** order run inside its runtime with a lock of its own held: a thread
** stopped by a watchpoint right after such a store holds that lock, and
** every other access to the variable waits for it. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* Adds test t to s in a test case of its own, named after the test: Check
** reports results by test case, so this is what gives each result line
** the test's own name. */
#define suite_add_test(s, t)                                                   \
    do {                                                                       \
        TCase *tc_ = tcase_create(#t);                                         \
        tcase_add_test(tc_, t);                                                \
        rt_add_case((s), tc_, #t);                                             \
    } while (0)

/* ck_assert for hot loops: Check records every passing ck_assert (a
** message to the runner), which dominates a loop of thousands; this one
** costs a branch until it fails, and then fails the test the same way. */
#define ck_require(cond)                                                       \
    do {                                                                       \
        if (__builtin_expect(!(cond), 0))                                      \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);               \
    } while (0)

struct death {
    int signal;      /* the signal the child died of, 0 if it exited */
    int exit_status; /* its exit status if it exited, else -1 */
    char err[4096];  /* what it wrote on stderr */
};

/* Runs fn(arg) in a child with stderr captured and waits for it. */
struct death run_child(void (*fn)(void *), void *arg);

/* In a child of run_child: dies of SIGALRM after seconds, whatever Check
** left of SIGALRM's disposition and mask. A deadline only a hang reaches,
** so that a hang is a failure named in seconds, not a case's timeout. */
void die_of_alarm_after(unsigned seconds);

/* fn(arg) must abort (SIGABRT) having printed msg (a prefix of its line,
** e.g. "refrt: rt_region_close: "). */
#define ck_assert_violation(fn, arg, msg)                                           \
    do {                                                                            \
        struct death d_ = run_child((fn), (arg));                                   \
        ck_assert_msg(d_.signal == SIGABRT, "expected SIGABRT, got signal %d exit %d; " \
                      "stderr: %s", d_.signal, d_.exit_status, d_.err);             \
        ck_assert_msg(strstr(d_.err, (msg)) != NULL, "stderr lacks \"%s\": %s",       \
                      (msg), d_.err);                                               \
    } while (0)

/* fn(arg) must trap (SIGILL). */
#define ck_assert_trap(fn, arg)                                                     \
    do {                                                                            \
        struct death d_ = run_child((fn), (arg));                                   \
        ck_assert_msg(d_.signal == SIGILL, "expected SIGILL, got signal %d exit %d; " \
                      "stderr: %s", d_.signal, d_.exit_status, d_.err);             \
    } while (0)

/* Chunk traffic since the last chunks_reset(), all threads. */
struct chunk_counts {
    unsigned long mallocs;      /* malloc(RT_CHUNK_SIZE) */
    unsigned long frees;        /* free of a pointer such a malloc returned */
    unsigned long frees_dirty;  /* of those, freed with a non-zero byte in
                                   the range a region was seen to fill */
};
void chunks_reset(void);
struct chunk_counts chunks_counted(void);
/* Whether p is a chunk that was malloc'ed and not yet freed. */
int chunk_live(const void *p);

/* A quarantine of frees, the plain build's own use-after-free check: from
** quarantine_start() on, each free of less than a chunk, on any thread, is
** not freed but filled with 0xdd and kept; quarantine_end() frees them and
** returns how many were written to after their free (0: none). A write
** into freed memory, which the plain build survives and only ASan would
** see, then fails a test in every build. Under ASan or TSan it does
** nothing (ASan has a quarantine of its own; a lock here would order the
** threads TSan judges) and quarantine_end() returns 0. At most 4096 frees
** are kept; those past it are freed at once. */
void quarantine_start(void);
int quarantine_end(void);

/* Fault injection, SQLite's way: the unit binaries are also linked with
** --wrap=calloc, --wrap=realloc and --wrap=pthread_create, so every
** malloc, calloc, realloc and pthread_create of the runtime and the tests
** passes through testutil. After fail_nth(n), the nth of those calls this
** thread makes (1: the next) fails, as when memory or threads run out
** (NULL; EAGAIN for pthread_create), and every later call succeeds again;
** fail_nth(0) disarms. Per thread, so a thread the operation starts
** cannot take the failure meant for the operation itself.
** fail_calls() counts this thread's calls since fail_nth, the failed one
** included: an operation that made fewer calls than n completed untouched,
** which ends a fail-the-Nth loop. Check's own asserts allocate too: read
** the counts, disarm, then assert. */
void fail_nth(unsigned long n);
unsigned long fail_calls(void);
/* How many calls the injection has failed, in all threads, since the
** process began: unchanged across an operation, it completed untouched. */
unsigned long fail_count(void);
/* After fail_above(bytes), every malloc, calloc and realloc of this thread
** asking for more than bytes fails (NULL), until fail_above(0): what the
** runtime asks for a value past 4 GiB is seen without taking it. */
void fail_above(size_t bytes);
/* How many blocks malloc, calloc and realloc (of NULL) gave out that free
** has not taken back, all threads: an operation that leaks nothing leaves
** it as it was. Check's asserts allocate too: read it around them. */
long allocs_live(void);
/* sysconf(name) answers value from now on, on every thread (also --wrap),
** as a machine of another size would; fake_sysconf(-1, 0) ends every
** fake. fail_sysconf(name): from now on name, and only name, fails (-1),
** as on a system that cannot tell; fail_sysconf(-1) ends every fake. */
void fake_sysconf(int name, long value);
void fail_sysconf(int name);

/* The bytes every calloc of the process has asked for (n * size), the
** exact request where the cost counters see malloc's usable size. */
size_t calloc_bytes_asked(void);

/* From now on every CLOCK_REALTIME read gives ns (0 to 999999999) as its
** tv_nsec, its tv_sec the real one; fake_realtime_nsec(-1) ends it. */
void fake_realtime_nsec(long ns);

/* What every pthread_cond_timedwait of the process asked for, measured
** from the last CLOCK_REALTIME read of the thread that waits (its deadline
** minus that read): how many there were, and the shortest and longest.
** timed_waits_reset starts the count again. A deadline whose tv_nsec is
** not in [0, 10^9) counts in .malformed and not in the span. */
struct timed_waits {
    unsigned long waits, malformed;
    long long shortest_ns, longest_ns;
};
void timed_waits_reset(void);
struct timed_waits timed_waits_seen(void);
/* Called with 1 before and 0 after every pthread_create that passes
** through testutil (NULL: nothing is called). check_interleave.c's
** software watchpoint runs a thread one instruction at a time: a thread
** that thread creates would inherit the trap flag with every signal still
** blocked, and its first trap would end the process, so it stops stepping
** over the creation. */
extern void (*around_thread_create)(int before);

/* Keys: the unit binaries are also linked with --wrap for
** pthread_key_create, pthread_key_delete, pthread_getspecific and
** pthread_setspecific. keys_not_made_used() counts, in all threads since
** the process began, the gets and sets of a key that no pthread_key_create
** of this process made (or that was deleted since): POSIX leaves those
** undefined (glibc answers NULL or EINVAL for most, musl indexes its table
** with the key). */
unsigned long keys_not_made_used(void);

/* A slot that lies, to reach the hot path's validation from a test: the
** nth pthread_setspecific from now (process-wide, 1 the next) on a
** thread makes that thread's slot and its next pthread_getspecific
** disagree once. SLOT_HOLDS_NULL: the slot (what a direct read sees)
** holds NULL while the get answers the value set; GET_SAYS_FOREIGN: the
** slot holds the value while the get answers another pointer. Disarmed
** once it has acted; slot_lies_at_set(0, 0) disarms it. */
enum { SLOT_HOLDS_NULL = 1, GET_SAYS_FOREIGN,
       /* the set returns 0 and changes nothing: the slot and the get both
       ** answer what was there before */
       SET_DROPPED,
       /* the set stores another pointer: the slot and the get both answer it */
       SET_STORES_FOREIGN };
void slot_lies_at_set(long nth, int kind);

/* From now on, on every thread, each pthread_setspecific of key from also
** sets key to to the same value (a program whose own key follows the
** runtime's): the value is then in two words of the thread descriptor. */
void mirror_key_sets(pthread_key_t from, pthread_key_t to);

/* Waits until the thread tid (a gettid() of this process) is asleep, in a
** lock, a condition or any other wait: its state in /proc is S. Tests use
** it to know a waiter is in its wait before they act. */
void thread_wait_asleep(pid_t tid);

/* The runtime's locks live (locks.h counts them in a test build). The
** release build counts none: there a figure taken and compared with it is
** 0 == 0, and the other figures of the same check still judge it. */
#if RT_TESTING
#define locks_live() rt__locks_live()
#else
#define locks_live() 0L
#endif

#endif
