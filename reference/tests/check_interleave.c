/*
** check_interleave.c: forced interleavings. Each test parks a thread at a
** named point inside the runtime (points.h), drives another thread through
** the window that point opens, releases the first, and asserts the exact
** outcome the contract gives: figures, values, flags, and that nobody
** waits for ever (docs/conventions.md, "Forced interleavings").
**
** The harness adds no happens-before edge of its own: passages are counted
** and parked threads wait and are released through relaxed atomics only,
** so under SANITIZE=thread the runtime's memory orders alone order what
** the threads do (the tests marked "TSan" are the ones that judge an
** order; docs/hot-path.md and docs/budgets.md list them).
**
** A hang is a failure, reported within DEADLINE seconds by the waits
** below and within the case's own timeout otherwise: a deadlock detector,
** not a speed bound.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "costs.h"
#include "internal.h"
#include "points.h"
#include "refrt.h"
#include "shared.h"
#include "task.h"
#include "testutil.h"

#define KIB ((size_t)1024)

/* ---- the harness: roles, watches, parking -------------------------------- */

#if UNDER_SANITIZER
#define DEADLINE_S 20
#else
#define DEADLINE_S 10
#endif
/* The case's own timeout (RT_CASE_TIMEOUT may lower it further). */
#define CASE_TIMEOUT_S (3 * DEADLINE_S)

/* Who this thread is: a watch may concern one role only. */
static _Thread_local const char *role = "main";

/* A watch counts the passages of one point (by one role, or by any thread
** when role is NULL) and may park one of them, the park_at-th, until the
** test releases it. Set up before the threads it concerns start (their
** creation orders the setup before their reads); the counters are relaxed
** atomics, so watching adds no happens-before edge. */
struct watch {
    const char *point, *role;
    int park_at;
    int passed, parked, released;
    unsigned long seq; /* the global sequence number of the last passage */
    const char *who;   /* the role of the thread parked there */
};

#define WATCHES 16
static struct watch watches[WATCHES];
static int nwatches;
static unsigned long passages;
/* The stress test: every passage that does not park yields the CPU, so
** the threads interleave differently around every point. */
static int yield_at_points;

static int ld(const int *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void st(int *p, int v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static void nap(void)
{
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits for cond, polling; fails the test after DEADLINE_S seconds. */
#define WAIT_FOR(cond, ...)                                                    \
    do {                                                                       \
        uint64_t until_ = now_ns() + (uint64_t)DEADLINE_S * 1000000000u;       \
        while (!(cond)) {                                                      \
            if (now_ns() > until_)                                             \
                ck_abort_msg(__VA_ARGS__);                                     \
            nap();                                                             \
        }                                                                      \
    } while (0)

static void on_point(const char *name)
{
    for (int i = 0; i < nwatches; i++) {
        struct watch *w = &watches[i];
        if (strcmp(w->point, name) != 0 || (w->role != NULL && strcmp(w->role, role) != 0))
            continue;
        int k = __atomic_add_fetch(&w->passed, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&w->seq, __atomic_add_fetch(&passages, 1, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        if (k == w->park_at) {
            __atomic_store_n(&w->who, role, __ATOMIC_RELAXED);
            st(&w->parked, 1);
            while (!ld(&w->released))
                nap();
            st(&w->parked, 0);
        }
    }
    if (ld(&yield_at_points))
        sched_yield();
}

/* Watches point for role (NULL: any thread), parking its park_at-th
** passage (0: none). Before the threads concerned start. */
static struct watch *watch(const char *point, const char *who, int park_at)
{
    ck_assert_int_lt(nwatches, WATCHES);
    struct watch *w = &watches[nwatches++];
    *w = (struct watch){point, who, park_at, 0, 0, 0, 0, NULL};
    __atomic_store_n(&rt__point_hook, on_point, __ATOMIC_RELAXED);
    return w;
}

static int passed(struct watch *w)
{
    return ld(&w->passed);
}

static unsigned long seq_of(struct watch *w)
{
    return __atomic_load_n(&w->seq, __ATOMIC_RELAXED);
}

static void wait_parked(struct watch *w)
{
    WAIT_FOR(ld(&w->parked), "no thread (%s) parked at %s", w->role ? w->role : "any",
             w->point);
}

static void release(struct watch *w)
{
    st(&w->released, 1);
}

static int gettid_(void)
{
    return (int)syscall(SYS_gettid);
}

/* Whether thread tid sleeps in the kernel in a futex wait: blocked on a
** mutex, a condition or a join. Read from /proc: no cooperation of the
** thread, no synchronisation with it. */
static int asleep_once(int tid)
{
    char path[64], buf[256];
    long nr = -1, op = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof buf, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    if (sscanf(buf, "%ld %*s %lx", &nr, &op) != 2)
        return 0;
    return nr == SYS_futex && ((op & 127) == 0 || (op & 127) == 9); /* WAIT, WAIT_BITSET */
}

/* Asleep at two reads 2 ms apart: not a passing moment of contention. */
static int asleep(int tid)
{
    struct timespec ts = {0, 2 * 1000 * 1000};
    if (!asleep_once(tid))
        return 0;
    nanosleep(&ts, NULL);
    return asleep_once(tid);
}

/* A thread of the test: a task (rt_spawn) or a plain thread, with its role,
** its kernel id and whether its function returned. */
struct actor {
    const char *role;
    int tid, started, done;
    void *(*body)(struct actor *);
    void *ctx;
    /* what the body measured, read once it is joined */
    size_t held[4];
    void *got[4];
    rt_status status[4];
    rt_task *task;
    pthread_t thread;
};

static void *actor_main(void *arg)
{
    struct actor *a = arg;
    void *r;

    role = a->role;
    st(&a->tid, gettid_());
    st(&a->started, 1);
    r = a->body(a);
    st(&a->done, 1);
    return r;
}

static void spawn(struct actor *a, const char *who, void *(*body)(struct actor *), void *ctx)
{
    a->role = who;
    a->body = body;
    a->ctx = ctx;
    a->task = rt_spawn(actor_main, a);
    ck_require(a->task != NULL); /* the helpers allocate nothing until they fail */
    WAIT_FOR(ld(&a->started), "%s did not start", who);
}

static void start_plain(struct actor *a, const char *who, void *(*body)(struct actor *),
                        void *ctx)
{
    a->role = who;
    a->body = body;
    a->ctx = ctx;
    ck_require(pthread_create(&a->thread, NULL, actor_main, a) == 0);
    WAIT_FOR(ld(&a->started), "%s did not start", who);
}

/* Waits until a's body returned (a deadlock is reported here, in seconds). */
static void wait_done(struct actor *a)
{
    WAIT_FOR(ld(&a->done), "%s never finished: a deadlock or a lost wakeup", a->role);
}

static rt_status join_task(struct actor *a, void **result)
{
    wait_done(a);
    return rt_join(a->task, result);
}

static void join_plain(struct actor *a)
{
    wait_done(a);
    ck_require(pthread_join(a->thread, NULL) == 0);
}

/* Waits until a sleeps in a futex wait or has finished; true if it sleeps. */
static int blocks(struct actor *a)
{
    WAIT_FOR(asleep(ld(&a->tid)) || ld(&a->done), "%s neither blocked nor finished",
             a->role);
    return !ld(&a->done);
}

/* A quiet signal between threads: relaxed, no happens-before edge. */
static void wait_flag(const int *flag, const char *what)
{
    WAIT_FOR(ld(flag), "never: %s", what);
}

#define add_case(s, t)                                                         \
    do {                                                                       \
        TCase *tc_ = tcase_create(#t);                                         \
        tcase_add_test(tc_, t);                                                \
        tcase_set_timeout(tc_, CASE_TIMEOUT_S);                                \
        rt_add_case((s), tc_, #t);                                             \
    } while (0)

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

/* ---- hot.c: the first publish, the latch -------------------------------- */

static void *publish_body(struct actor *a)
{
    a->got[0] = rt_hot();
    a->got[1] = pthread_getspecific((pthread_key_t)(rt__key_plus_one - 1));
    return NULL;
}

static void *disable_body(struct actor *a)
{
    (void)a;
    rt_hot_disable();
    return NULL;
}

/* What the fast path's one load reads on this thread right now. */
static void *direct_read(void)
{
#if RT_PRIM_DIRECT
    return rt_prim_slot_read(__atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED));
#else
    return NULL;
#endif
}

/* rt_hot_disable while the process's first publish is under way: the
** latch waits for the publish (hot_lock) and wins, for good. Without the
** lock on either side the latch lands first and the publish then opens
** the path again. */
START_TEST(a_latch_during_the_first_publish_waits_and_wins)
{
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *inside = watch("hot.first_publish.locked", "A", 1);
    struct watch *before = watch("hot.disable.before_lock", "B", 0);

    rt_init(); /* publishes nothing: A's is the first publish */
    start_plain(&a, "A", publish_body, NULL);
    wait_parked(inside);
    start_plain(&b, "B", disable_body, NULL);
    WAIT_FOR(passed(before) == 1, "B never reached rt_hot_disable");
    ck_assert_msg(blocks(&b), "the latch did not wait for the first publish");
    release(inside);
    join_plain(&a);
    join_plain(&b);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert(!rt_hot_direct());
    /* main's publish comes after the latch: the fallback, its own state */
    struct rt_hot *h = rt_hot();
    ck_assert_ptr_null(direct_read());
    start_plain(&c, "C", publish_body, NULL);
    join_plain(&c);
    ck_assert_ptr_eq(c.got[0], c.got[1]);
    ck_assert_ptr_ne(c.got[0], h);
    ck_assert(!rt_hot_direct());
}
END_TEST

/* A latch in the instant after the first publish let hot_lock go: the
** publish opened the path under the lock, so the latch closes it for good.
** A publish that stored the slot's offset after its unlock would reopen
** the fast path over the latch: a later thread's one load would find its
** state although the state is LATCHED. */
static void *publish_then_read_direct(struct actor *a)
{
    a->got[0] = rt_hot();
    a->got[1] = direct_read(); /* what the fast path's load would return */
    return NULL;
}

START_TEST(a_latch_right_after_the_first_publish_closes_the_path_for_good)
{
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *published = watch("hot.first_publish.locked", "A", 0);
    struct watch *unlocked = watch("runtime.unlock.released", "A", 1);

    rt_init(); /* publishes nothing: A's is the first publish */
    start_plain(&a, "A", publish_body, NULL);
    wait_parked(unlocked);
    ck_assert_int_eq(passed(published), 1); /* parked right after the publish's unlock */
    ck_assert_uint_lt(seq_of(published), seq_of(unlocked));
    start_plain(&b, "B", disable_body, NULL);
    join_plain(&b); /* the latch, with hot_lock free */
    ck_assert(!rt_hot_direct());
    release(unlocked);
    join_plain(&a);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert(!rt_hot_direct());
    start_plain(&c, "C", publish_then_read_direct, NULL);
    join_plain(&c);
    ck_assert_ptr_nonnull(c.got[0]);
    ck_assert_ptr_null(c.got[1]); /* the fast path stays shut */
    ck_assert(!rt_hot_direct());
}
END_TEST

/* The other order: a latch under way (hot_lock held, the state not yet
** LATCHED) when the process's first publish begins. The publish reads the
** state only once it holds the lock, so it sees the latch and opens
** nothing; one that read the state before taking the lock would take
** itself for the first and open the path the latch has just closed. */
START_TEST(a_first_publish_during_a_latch_waits_and_opens_nothing)
{
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *latching = watch("hot.disable.locked", "B", 1);

    rt_init(); /* publishes nothing: A's is the first publish */
    start_plain(&b, "B", disable_body, NULL);
    wait_parked(latching);
    start_plain(&a, "A", publish_body, NULL);
    ck_assert_msg(blocks(&a), "the first publish did not wait for the latch");
    release(latching);
    join_plain(&b);
    join_plain(&a);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert(!rt_hot_direct());
    start_plain(&c, "C", publish_body, NULL);
    join_plain(&c);
    ck_assert_ptr_eq(c.got[0], c.got[1]);
    ck_assert(!rt_hot_direct());
}
END_TEST

/* Further on in the latch: its stores under way (B inside
** hot_latch_locked, hot_lock held, the state not yet LATCHED) when the
** process's first publish begins. The latch keeps the lock until both its
** stores are done, so the publish waits and then sees LATCHED. A latch
** that let the lock go before its stores would let the publish read
** UNKNOWN and take itself for the first: its stores of DIRECT and of the
** slot's offset may then land after the latch's, and the path is open
** again once rt_hot_disable has returned. */
START_TEST(a_first_publish_during_the_latchs_stores_waits_and_opens_nothing)
{
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *storing = watch("hot.latch.before_stores", "B", 1);
    struct watch *inside = watch("hot.first_publish.locked", "A", 0);

    rt_init(); /* publishes nothing: A's is the first publish */
    start_plain(&b, "B", disable_body, NULL);
    wait_parked(storing);
    start_plain(&a, "A", publish_body, NULL);
    ck_assert_msg(blocks(&a), "the first publish did not wait for the latch's stores");
    ck_assert_int_eq(passed(inside), 0);
    release(storing);
    join_plain(&b);
    join_plain(&a);
    ck_assert_int_eq(passed(inside), 1); /* it got in after the latch: not first */
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert(!rt_hot_direct());
    start_plain(&c, "C", publish_body, NULL);
    join_plain(&c);
    ck_assert_ptr_eq(c.got[0], c.got[1]);
    ck_assert_ptr_null(direct_read());
    ck_assert(!rt_hot_direct());
}
END_TEST

/* Where rt_hot_disable's points sit (docs/hot-path.md): hot.disable.locked
** with hot_lock taken and nothing latched yet, then the latch's own
** hot.latch.before_stores. Parked at the first, with the path open, the
** path is still open to every thread: rt_hot_direct() is true and a
** published thread's one load still finds its state; released, the latch
** stores and closes it, in that order of points. */
#if RT_PRIM_DIRECT
static int may_read_again;

static void *publish_then_wait(struct actor *a)
{
    __atomic_store_n(&a->got[0], rt_hot(), __ATOMIC_RELEASE);
    while (!ld(&may_read_again))
        nap();
    a->got[1] = direct_read();
    return NULL;
}
#endif

START_TEST(a_disable_parked_with_its_lock_taken_has_latched_nothing_yet)
{
#if RT_PRIM_DIRECT
    struct actor a = {0}, b = {0};
    struct watch *locked = watch("hot.disable.locked", "B", 1);
    struct watch *storing = watch("hot.latch.before_stores", "B", 0);

    rt_init();
    start_plain(&a, "A", publish_then_wait, NULL);
    WAIT_FOR(__atomic_load_n(&a.got[0], __ATOMIC_ACQUIRE) != NULL, "A never published");
    if (!rt_hot_direct()) {
        /* this machine's glibc gave no slot: nothing to keep open */
        st(&may_read_again, 1);
        join_plain(&a);
        return;
    }
    struct rt_hot *mine = rt_hot(); /* main's publish, a later one */
    ck_assert_ptr_eq(direct_read(), mine);
    start_plain(&b, "B", disable_body, NULL);
    wait_parked(locked);
    ck_assert_int_eq(passed(storing), 0);
    ck_assert_msg(rt_hot_direct(), "the path was closed before the latch began");
    ck_assert_ptr_eq(direct_read(), mine); /* main's one load: its own state still */
    release(locked);
    join_plain(&b);
    ck_assert_int_eq(passed(storing), 1);
    ck_assert_uint_lt(seq_of(locked), seq_of(storing));
    ck_assert(!rt_hot_direct());
    st(&may_read_again, 1);
    join_plain(&a);
    ck_assert_ptr_null(a.got[1]); /* the latch emptied A's slot too */
#endif
}
END_TEST

/* Two threads reach the first publish at once: the second waits for the
** first (hot_lock), then publishes as any later thread does. */
START_TEST(a_second_first_publish_waits_for_the_first)
{
    struct actor a = {0}, b = {0};
    struct watch *inside_a = watch("hot.first_publish.locked", "A", 1);
    struct watch *inside_b = watch("hot.first_publish.locked", "B", 0);

    rt_init();
    start_plain(&a, "A", publish_body, NULL);
    wait_parked(inside_a);
    start_plain(&b, "B", publish_body, NULL);
    ck_assert_msg(blocks(&b), "a second first publish did not wait for the first");
    ck_assert_int_eq(passed(inside_b), 0);
    release(inside_a);
    join_plain(&a);
    join_plain(&b);
    ck_assert_int_eq(passed(inside_b), 1); /* it got in, after A: not first */
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert_ptr_eq(b.got[0], b.got[1]);
    ck_assert_ptr_ne(a.got[0], b.got[0]);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
}
END_TEST

/* A thread (B) that found the state unknown and waited for the first
** publish (A) is no first publish once it gets the lock: A opened the
** direct path. B publishes as any later thread does, so its own slot is
** checked against the direct read, and a mismatch on B (the test's read
** lies there) latches the path off for every thread. A publish that kept
** the state it read before waiting would take the path for open and
** unchecked on B. The lie is the hook's; the direct read itself is never
** changed. */
static __thread int lie_here;

static void *lying_read(intptr_t off)
{
#if RT_PRIM_DIRECT
    return lie_here ? NULL : rt_prim_slot_read(off);
#else
    (void)off;
    return NULL;
#endif
}

static void *lied_to_publish_body(struct actor *a)
{
    lie_here = 1;
    return publish_body(a);
}

START_TEST(a_publish_that_waited_for_the_first_checks_its_own_slot)
{
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *inside_a = watch("hot.first_publish.locked", "A", 1);

    rt_init();
    rt__hot_test_read = lying_read; /* before any thread that reads it */
    start_plain(&a, "A", publish_body, NULL);
    wait_parked(inside_a);
    start_plain(&b, "B", lied_to_publish_body, NULL);
    ck_assert_msg(blocks(&b), "a second first publish did not wait for the first");
    release(inside_a);
    join_plain(&a);
    join_plain(&b);
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert_ptr_eq(b.got[0], b.got[1]); /* B's own state, from the fallback */
    ck_assert_ptr_ne(a.got[0], b.got[0]);
    ck_assert_msg(!rt_hot_direct(), "a mismatch on a thread that waited for the first "
                  "publish left the direct path open");
    /* for good: a thread after it reads its own state through the fallback */
    start_plain(&c, "C", publish_body, NULL);
    join_plain(&c);
    ck_assert_ptr_eq(c.got[0], c.got[1]);
    ck_assert(!rt_hot_direct());
}
END_TEST

/* A first publish whose check fails (A, lied to) latches the path while
** it still holds the first publish's lock: wherever A is stopped on its way
** to the latch (the latch's own point, or a disable's if it went through
** rt_hot_disable), another thread's publish (C, not lied to) waits for it
** and never opens the path, then or after. A first publish that let its
** lock go before latching would leave the state UNKNOWN and the lock free:
** C would make a first publish of its own, which validates, and open it. */
START_TEST(a_first_publish_that_fails_its_check_latches_before_another_can_publish)
{
    struct actor a = {0}, c = {0};
    struct watch *latching = watch("hot.latch.before_stores", "A", 1);
    struct watch *disabling = watch("hot.disable.before_lock", "A", 1);

    rt_init();
    rt__hot_test_read = lying_read; /* before any thread that reads it */
    start_plain(&a, "A", lied_to_publish_body, NULL);
    WAIT_FOR(ld(&latching->parked) || ld(&disabling->parked),
             "A's failed first publish reached no latch");
    start_plain(&c, "C", publish_body, NULL);
    ck_assert_msg(blocks(&c), "a publish ran while the failed first publish had not latched");
    ck_assert_msg(!rt_hot_direct(), "the path opened before the failed first check latched");
    release(latching);
    release(disabling);
    join_plain(&a);
    join_plain(&c);
    rt__hot_test_read = NULL;
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert_ptr_eq(c.got[0], c.got[1]); /* C's own state, from the fallback */
    ck_assert_ptr_ne(a.got[0], c.got[0]);
    ck_assert_msg(!rt_hot_direct(), "a failed first publish left the direct path open");
    ck_assert_ptr_null(direct_read());
}
END_TEST

/* The process's first publish (A) and a later one (C) that reads the slot
** A found: C reads hot_slot only after an acquire load of hot_state saw
** DIRECT, which A stored with release after writing hot_slot. Nothing else
** orders the two threads (C waits for A through a relaxed flag), so under
** SANITIZE=thread a relaxed store of DIRECT is a data race on hot_slot.
** TSan: hot.c:hot_first_publish, the release store of HOT_DIRECT. */
static int first_published;

static void *first_publish_body(struct actor *a)
{
    a->got[0] = rt_hot();
    st(&first_published, 1);
    return NULL;
}

static void *later_publish_body(struct actor *a)
{
    wait_flag(&first_published, "the first publish");
    a->got[0] = rt_hot();
    a->got[1] = direct_read();
    a->got[2] = pthread_getspecific((pthread_key_t)(rt__key_plus_one - 1));
    return NULL;
}

START_TEST(a_later_publish_reads_the_slot_the_first_one_published)
{
    struct actor a = {0}, c = {0};

    rt_init();
    start_plain(&c, "C", later_publish_body, NULL);
    start_plain(&a, "A", first_publish_body, NULL);
    join_plain(&a);
    join_plain(&c);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_nonnull(c.got[0]);
    ck_assert_ptr_eq(c.got[2], c.got[0]);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
    if (RT_PRIM_DIRECT)
        ck_assert_ptr_eq(c.got[1], c.got[0]);
}
END_TEST

/* The process's first publish checks the slot it found (the direct read
** against pthread_getspecific) with hot_lock still held, and opens nothing
** before that check agrees (docs/hot-path.md, "Validation": the offset
** becomes the slot only when the first publish has set the slot to the
** new state and seen the direct read return that state; "The latch": the
** states change only under one mutex). A is parked inside its check (the
** test's read hook, which validation calls and discovery does not): the
** state is not DIRECT and rt__hot_off is still the NULL word's offset; a
** latch (B) and a second first publish (C) both wait for A. Released, A
** opens the path and the latch, which waited, closes it for good; C
** publishes as a later thread. A first publish that let its lock go
** before the check (or stored DIRECT or the offset before it) fails here
** at once, with no race to win: the other hot.c lock tests park at
** hot.first_publish.locked, before the slot is even found. */
#if RT_PRIM_DIRECT
static void *read_parked_in_validation(intptr_t off)
{
    on_point("test.hot.validation_read"); /* the watches below park A here */
    return rt_prim_slot_read(off);
}
#endif

START_TEST(the_first_publish_holds_its_lock_through_its_check_of_the_slot)
{
#if RT_PRIM_DIRECT
    struct actor a = {0}, b = {0}, c = {0};
    struct watch *checking = watch("test.hot.validation_read", "A", 1);
    struct watch *inside_c = watch("hot.first_publish.locked", "C", 0);
    struct watch *before_b = watch("hot.disable.before_lock", "B", 0);
    struct watch *locked_b = watch("hot.disable.locked", "B", 0);

    rt_init(); /* publishes nothing: A's is the first publish */
    rt__hot_test_read = read_parked_in_validation; /* before any thread reads it */
    intptr_t null_off = __atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED);
    start_plain(&a, "A", publish_body, NULL);
    wait_parked(checking);
    /* in the check: nothing opened yet, for A or anyone */
    ck_assert_msg(!rt_hot_direct(), "the path opened before its slot was checked");
    ck_assert_msg(__atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED) == null_off,
                  "the fast path reads the found slot before it was checked");
    start_plain(&b, "B", disable_body, NULL);
    WAIT_FOR(passed(before_b) == 1, "B never reached rt_hot_disable");
    ck_assert_msg(blocks(&b), "a latch did not wait for the first publish's check");
    ck_assert_int_eq(passed(locked_b), 0);
    start_plain(&c, "C", publish_body, NULL);
    ck_assert_msg(blocks(&c), "a second first publish did not wait for the first's check");
    ck_assert_int_eq(passed(inside_c), 0);
    ck_assert(!rt_hot_direct());
    release(checking);
    join_plain(&a);
    join_plain(&b);
    join_plain(&c);
    rt__hot_test_read = NULL;
    ck_assert_int_eq(passed(checking), 1);
    ck_assert_int_eq(passed(locked_b), 1);
    ck_assert_int_eq(passed(inside_c), 1); /* it got in, after A: not first */
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_eq(a.got[0], a.got[1]);
    ck_assert_ptr_nonnull(c.got[0]);
    ck_assert_ptr_eq(c.got[0], c.got[1]);
    ck_assert_ptr_ne(a.got[0], c.got[0]);
    ck_assert_msg(!rt_hot_direct(), "the latch that waited for the check did not win");
    ck_assert_int_eq(__atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED), null_off);
    struct rt_hot *h = rt_hot(); /* main: after the latch, its own state */
    ck_assert_ptr_eq(pthread_getspecific((pthread_key_t)(rt__key_plus_one - 1)), h);
    ck_assert_ptr_null(direct_read());
#endif
}
END_TEST

/* ---- chan.c: send, receive, close ----------------------------------------- */

struct chan_ctx {
    rt_chan *c;
    size_t bytes;
    int go; /* a quiet signal from main */
};

static void *recv_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    a->got[0] = rt_recv(x->c);
    a->held[0] = rt_held();
    if (a->got[0] != NULL)
        rt_free(a->got[0]);
    a->held[1] = rt_held();
    return NULL;
}

/* Closes, then tells (x->go) whoever waits for the close. */
static void *close_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    rt_chan_close(x->c);
    st(&x->go, 1);
    return NULL;
}

/* A channel closed on another thread, with values queued: a receiver told
** of the close only by a quiet flag (relaxed: no happens-before edge) still
** reads the channel under its lock, so it gets every queued value, then
** NULL. A receive that answered "closed and empty" from an unlocked read
** races the close's writes, and SANITIZE=thread reports it here. */
static void *send_two_then_close_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    for (int i = 0; i < 2; i++)
        a->status[i] = rt_send(x->c, a->got[i] = rt_alloc_outside(64));
    rt_chan_close(x->c);
    st(&x->go, 1);
    return NULL;
}

static void *recv_three_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    wait_flag(&x->go, "the close");
    for (int i = 0; i < 3; i++)
        a->got[i] = rt_recv(x->c);
    a->held[0] = rt_held();
    for (int i = 0; i < 2; i++)
        rt_free(a->got[i]);
    return NULL;
}

START_TEST(a_receive_after_a_close_on_another_thread_reads_under_the_lock)
{
    struct actor s = {0}, r = {0};
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(2);
    spawn(&r, "R", recv_three_body, &x);
    spawn(&s, "S", send_two_then_close_body, &x);
    ck_assert_int_eq(join_task(&s, NULL), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(s.status[0], RT_OK);
    ck_assert_int_eq(s.status[1], RT_OK);
    ck_assert_ptr_eq(r.got[0], s.got[0]);
    ck_assert_ptr_eq(r.got[1], s.got[1]);
    ck_assert_ptr_null(r.got[2]);
    ck_assert_uint_eq(r.held[0], 128);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* The same for a sender: a channel closed on another thread, the sender
** told only by a quiet flag, is refused RT_CLOSED from a read made under
** the channel's lock, on a full channel and on one with room (a send that
** answered from an unlocked read of the flag races the close's write,
** which SANITIZE=thread reports here); the value stays the sender's. */
static void *send_after_the_close_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    wait_flag(&x->go, "the close");
    a->got[0] = rt_alloc_outside(64);
    a->status[0] = rt_send(x->c, a->got[0]);
    a->held[0] = rt_held();
    rt_free(a->got[0]);
    return NULL;
}

START_TEST(a_send_after_a_close_on_another_thread_reads_under_the_lock)
{
    for (int full = 0; full <= 1; full++) {
        struct actor s = {0}, b = {0};
        struct chan_ctx x = {0};

        init_fixed(64 * KIB);
        x.c = rt_chan_new(1);
        if (full)
            ck_assert_int_eq(rt_send(x.c, rt_alloc_outside(8)), RT_OK);
        spawn(&s, "S", send_after_the_close_body, &x);
        spawn(&b, "B", close_body, &x);
        ck_assert_int_eq(join_task(&b, NULL), RT_OK);
        ck_assert_int_eq(join_task(&s, NULL), RT_OK);
        ck_assert_int_eq(s.status[0], RT_CLOSED);
        ck_assert_uint_eq(s.held[0], 64);
        if (full)
            rt_free(rt_recv(x.c));
        ck_assert_ptr_null(rt_recv(x.c));
        rt_chan_free(x.c);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

/* A receiver has seen the channel open and empty and is about to sleep:
** a close in that instant must wait for the lock the receiver holds until
** it sleeps, so its broadcast wakes it. Without the lock the broadcast
** goes before the receiver sleeps, and it sleeps for ever. */
START_TEST(a_close_while_a_receiver_is_about_to_sleep_wakes_it)
{
    struct actor r = {0}, b = {0};
    struct watch *about_to_sleep = watch("chan.recv.before_wait", "R", 1);
    struct watch *closing = watch("chan.close.before_lock", "B", 0);
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    spawn(&r, "R", recv_body, &x);
    wait_parked(about_to_sleep);
    start_plain(&b, "B", close_body, &x);
    WAIT_FOR(passed(closing) == 1, "B never reached rt_chan_close");
    ck_assert_msg(blocks(&b), "the close did not wait for the receiver's lock");
    release(about_to_sleep);
    join_plain(&b);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_ptr_null(r.got[0]); /* closed and empty */
    ck_assert_int_eq(passed(about_to_sleep), 1); /* it slept once and woke */
    ck_assert_uint_eq(r.held[0], 0);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

static void *send_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    char *v = rt_alloc_outside(x->bytes);
    memset(v, a->role[0], x->bytes);
    a->got[0] = v;
    st(&x->go, 1); /* about to send */
    a->status[0] = rt_send(x->c, v);
    a->held[0] = rt_held(); /* in flight: still the sender's */
    return NULL;
}

/* Two senders on one channel: A has chosen the slot at the tail and is
** about to fill it; B must wait for the lock, then take the next slot.
** Without the lock B fills A's slot and A overwrites it: one value lost,
** one slot never filled. */
START_TEST(two_senders_never_share_a_slot)
{
    struct actor a = {0}, b = {0};
    struct watch *choosing = watch("chan.send.before_enqueue", "A", 1);
    struct chan_ctx xa = {0}, xb = {0};

    init_fixed(64 * KIB);
    xa.c = xb.c = rt_chan_new(4);
    xa.bytes = 100;
    xb.bytes = 200;
    spawn(&a, "A", send_body, &xa);
    wait_parked(choosing);
    spawn(&b, "B", send_body, &xb);
    wait_flag(&xb.go, "B about to send");
    ck_assert_msg(blocks(&b), "a second sender did not wait for the first");
    release(choosing);
    ck_assert_int_eq(join_task(&a, NULL), RT_OK);
    ck_assert_int_eq(join_task(&b, NULL), RT_OK);
    ck_assert_int_eq(a.status[0], RT_OK);
    ck_assert_int_eq(b.status[0], RT_OK);
    ck_assert_uint_eq(a.held[0], 100);
    ck_assert_uint_eq(b.held[0], 200);
    ck_assert_uint_eq(rt_held(), 0);
    char *first = rt_recv(xa.c), *second = rt_recv(xa.c);
    ck_assert_ptr_eq(first, a.got[0]);
    ck_assert_ptr_eq(second, b.got[0]);
    ck_assert(first[0] == 'A' && first[99] == 'A' && second[0] == 'B' && second[199] == 'B');
    ck_assert_uint_eq(rt_held(), 300); /* both senders ended: now main's alone */
    rt_chan_close(xa.c);
    ck_assert_ptr_null(rt_recv(xa.c));
    rt_free(first);
    rt_free(second);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(xa.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* The same instant with a send: the sender waits for the receiver's lock,
** so its signal comes after the receiver sleeps and wakes it, and the
** value moves to the receiver exactly. */
START_TEST(a_send_while_a_receiver_is_about_to_sleep_wakes_it)
{
    struct actor r = {0}, s = {0};
    struct watch *about_to_sleep = watch("chan.recv.before_wait", "R", 1);
    struct watch *enqueue = watch("chan.send.before_enqueue", "S", 0);
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    x.bytes = 700;
    spawn(&r, "R", recv_body, &x);
    wait_parked(about_to_sleep);
    spawn(&s, "S", send_body, &x);
    wait_flag(&x.go, "S about to send");
    ck_assert_msg(blocks(&s), "the send did not wait for the receiver's lock");
    ck_assert_int_eq(passed(enqueue), 0);
    release(about_to_sleep);
    ck_assert_int_eq(join_task(&s, NULL), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(passed(about_to_sleep), 1); /* it slept once and woke */
    ck_assert_int_eq(s.status[0], RT_OK);
    ck_assert_ptr_eq(r.got[0], s.got[0]);
    ck_assert_uint_eq(r.held[0], 700);
    ck_assert_uint_eq(r.held[1], 0);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* Woken for nothing, a wait waits again. POSIX lets any condition wait
** return with nobody having signalled it (a spurious wakeup), and a
** receiver woken for a value another receiver took first is in the same
** place: rt__spurious_wakeups makes every wait of the runtime such a
** wakeup, on every run. A receiver on an empty channel must loop through
** them, asleep each time again, until a value comes: then it gets that
** value, not NULL, for the channel is open. */
/* A wait made spurious is a timed wait of 100 us: its deadline, read off
** the clock, carries into the next second when the clock is that close to
** one (one wait in 10^4 on a real clock, every wait here): the wait must
** still be a wait, not an invalid deadline. The fake clock makes each wait
** last up to a second of real time, and the send wakes it. */
/* A receiver waits on an empty channel with its clock's nanoseconds faked
** to ns and spurious wakeups on, is seen in its wait, and gets the value
** sent then. With measure, its first wait's deadline is checked too: at
** most 100 us after the clock read it was made from (locks.h). */
static void receives_at_faked_nanoseconds(long ns, bool measure)
{
    struct actor r = {0};
    struct watch *waits = watch("chan.recv.before_wait", "R", 0);
    struct chan_ctx x = {0};
    x.c = rt_chan_new(1);
    fake_realtime_nsec(ns);
    timed_waits_reset();
    spawn(&r, "R", recv_body, &x);
    /* the first wait is what is measured; the send then wakes it (the
    ** faked nanoseconds can put its deadline up to a second past the
    ** real clock) */
    WAIT_FOR((passed(waits) >= 1 && (!measure || timed_waits_seen().waits >= 1)) || ld(&r.done),
             "R never waited on the empty channel");
    ck_assert_msg(!ld(&r.done), "a receiver on an empty open channel returned");
    if (measure) {
        struct timed_waits seen = timed_waits_seen();
        ck_assert_msg(seen.waits >= 1 && seen.malformed == 0,
                      "at %ld ns: %lu timed waits, %lu with a tv_nsec out of range", ns,
                      seen.waits, seen.malformed);
        ck_assert_msg(seen.shortest_ns > 0 && seen.longest_ns <= 100000,
                      "at %ld ns: deadlines %lld to %lld ns after their clock reads "
                      "(a spurious wait ends at most 100 us after)",
                      ns, seen.shortest_ns, seen.longest_ns);
    }
    char *v = rt_alloc_outside(8);
    ck_assert_int_eq(rt_send(x.c, v), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_ptr_eq(r.got[0], v);
    fake_realtime_nsec(-1);
    rt_chan_free(x.c);
}

START_TEST(a_wait_whose_deadline_crosses_a_second_still_waits)
{
    static const long near_a_second[] = {999900000L, 999950000L, 999999999L};

    init_fixed(64 * KIB);
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < sizeof near_a_second / sizeof near_a_second[0]; i++)
        receives_at_faked_nanoseconds(near_a_second[i], false);
    __atomic_store_n(&rt__spurious_wakeups, 0, __ATOMIC_RELAXED);
}
END_TEST

/* locks.h: with rt__spurious_wakeups set, every wait returns after at most
** 100 us though nobody woke it. Each deadline is measured from the clock
** read the waiting thread made for it, at nanoseconds that carry into the
** next second and ones that do not. */
START_TEST(a_spurious_wait_ends_at_most_100_us_after_its_clock_read)
{
    static const long at[] = {0L, 1L, 500000000L, 999899999L, 999900000L, 999900001L, 999999999L};

    init_fixed(64 * KIB);
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        receives_at_faked_nanoseconds(at[i], true);
    __atomic_store_n(&rt__spurious_wakeups, 0, __ATOMIC_RELAXED);
}
END_TEST

START_TEST(a_receiver_woken_for_nothing_waits_again)
{
    struct actor r = {0};
    struct watch *waits = watch("chan.recv.before_wait", "R", 0);
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    spawn(&r, "R", recv_body, &x);
    WAIT_FOR(passed(waits) >= 3 || ld(&r.done), "R never waited on the empty channel");
    ck_assert_msg(!ld(&r.done), "a receiver woken on an empty open channel returned");
    char *v = rt_alloc_outside(300);
    ck_assert_int_eq(rt_send(x.c, v), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_ptr_eq(r.got[0], v);
    ck_assert_uint_eq(r.held[0], 300);
    ck_assert_uint_eq(r.held[1], 0);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_close(x.c);
    ck_assert_ptr_null(rt_recv(x.c)); /* a closed empty channel: NULL at once */
    rt_chan_free(x.c);
    __atomic_store_n(&rt__spurious_wakeups, 0, __ATOMIC_RELAXED);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* The same for a sender on a full channel: woken with no room, it waits
** again; it enqueues nothing until a receive makes room, then its value
** follows the one that was there. */
START_TEST(a_sender_woken_with_no_room_waits_again)
{
    struct actor s = {0};
    struct watch *waits = watch("chan.send.before_wait", "S", 0);
    struct watch *enqueue = watch("chan.send.before_enqueue", "S", 0);
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    x.bytes = 200;
    char *first = rt_alloc_outside(100);
    ck_assert_int_eq(rt_send(x.c, first), RT_OK);
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    spawn(&s, "S", send_body, &x);
    WAIT_FOR(passed(waits) >= 3 || ld(&s.done), "S never waited on the full channel");
    ck_assert_msg(!ld(&s.done), "a sender woken on a full open channel returned");
    ck_assert_int_eq(passed(enqueue), 0);
    ck_assert_ptr_eq(rt_recv(x.c), first);
    ck_assert_int_eq(join_task(&s, NULL), RT_OK);
    ck_assert_int_eq(s.status[0], RT_OK);
    ck_assert_uint_eq(s.held[0], 200); /* in flight: still the sender's */
    ck_assert_uint_eq(rt_held(), 100);
    char *second = rt_recv(x.c);
    ck_assert_ptr_eq(second, s.got[0]);
    ck_assert(second[0] == 'S' && second[199] == 'S');
    ck_assert_uint_eq(rt_held(), 300);
    rt_chan_close(x.c);
    ck_assert_ptr_null(rt_recv(x.c));
    rt_free(first);
    rt_free(second);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(x.c);
    __atomic_store_n(&rt__spurious_wakeups, 0, __ATOMIC_RELAXED);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

static void *send_two_body(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    char *v1 = rt_alloc_outside(100), *v2 = rt_alloc_outside(50);
    a->got[0] = v1;
    a->got[1] = v2;
    a->status[0] = rt_send(x->c, v1);
    st(&x->go, 1);
    a->status[1] = rt_send(x->c, v2); /* full: waits */
    a->held[0] = rt_held();           /* v1 in flight, v2 still held */
    rt_free(v2);
    a->held[1] = rt_held();
    return NULL;
}

/* A sender waits on a full channel; the channel closes: RT_CLOSED, and the
** value is still the sender's, counted exactly; the queued one is still
** delivered, then NULL. */
START_TEST(a_sender_waiting_on_a_full_channel_gets_closed_and_keeps_its_value)
{
    struct actor s = {0};
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    spawn(&s, "S", send_two_body, &x);
    wait_flag(&x.go, "the first send");
    ck_assert_msg(blocks(&s), "the second send did not wait on the full channel");
    rt_chan_close(x.c);
    ck_assert_int_eq(join_task(&s, NULL), RT_OK);
    ck_assert_int_eq(s.status[0], RT_OK);
    ck_assert_int_eq(s.status[1], RT_CLOSED);
    ck_assert_uint_eq(s.held[0], 150);
    ck_assert_uint_eq(s.held[1], 100);
    void *v = rt_recv(x.c);
    ck_assert_ptr_eq(v, s.got[0]);
    ck_assert_uint_eq(rt_held(), 100);
    ck_assert_ptr_null(rt_recv(x.c));
    rt_free(v);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* R1's budget cannot take the value at the head: it lets the lock go and
** panics. Parked in between, the value is at the head for R2, who takes it
** exactly; then R1's panic ends R1 alone. */
START_TEST(a_receiver_that_panics_leaves_the_value_to_the_next)
{
    struct actor r1 = {0}, r2 = {0};
    struct watch *refused = watch("chan.recv.refused", "R1", 1);
    struct chan_ctx x = {0};
    void *result = NULL;

    init_fixed(64 * KIB);
    x.c = rt_chan_new(2);
    char *v = rt_alloc_outside(1000);
    memset(v, 'v', 1000);
    ck_assert_int_eq(rt_send(x.c, v), RT_OK);
    ck_assert_uint_eq(rt_held(), 1000);
    rt_set_strategy(rt_fixed_strategy(512)); /* R1: 1000 bytes do not fit */
    spawn(&r1, "R1", recv_body, &x);
    wait_parked(refused);
    ck_assert_uint_eq(rt_held(), 1000); /* refused: still the sender's */
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    spawn(&r2, "R2", recv_body, &x);
    ck_assert_int_eq(join_task(&r2, &result), RT_OK);
    ck_assert_ptr_eq(r2.got[0], v);
    ck_assert_uint_eq(r2.held[0], 1000);
    ck_assert_uint_eq(r2.held[1], 0);
    ck_assert_uint_eq(rt_held(), 0); /* received: off the sender's count */
    ck_assert_int_eq(ld(&r1.done), 0);
    release(refused);
    ck_assert_int_eq(rt_join(r1.task, NULL), RT_PANICKED);
    ck_assert_int_eq(ld(&r1.done), 0); /* it never returned from rt_recv */
    ck_assert_int_eq(passed(refused), 1);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- task.c: the last two unrefs, a join racing the end, settles --------- */

/* T sends one value and ends; its struct rt_task has two references, the
** joiner's and the queued value's. Whichever of main's join and R's
** receive drops the last one frees the task, and must see everything the
** other did to it: main reads status and result in rt_join, R adds to
** `released`. The harness orders the two with relaxed flags only, so under
** SANITIZE=thread only the acq_rel of rt__task_unref orders them.
** TSan: task.c:rt__task_unref, acq_rel (weakened to acquire, release or
** relaxed). */
struct unref_ctx {
    rt_chan *c;
    int received, end; /* quiet signals */
};

static void *send_one_body(struct actor *a)
{
    struct unref_ctx *x = a->ctx;
    void *v = rt_alloc_outside(64);
    a->got[0] = v;
    a->status[0] = rt_send(x->c, v);
    a->held[0] = rt_held();
    return NULL;
}

static void *recv_and_wait_body(struct actor *a)
{
    struct unref_ctx *x = a->ctx;
    a->got[0] = rt_recv(x->c);
    a->held[0] = rt_held();
    st(&x->received, 1);
    /* stay alive until main is done with T: a task's end orders too much */
    wait_flag(&x->end, "the end");
    rt_free(a->got[0]);
    a->held[1] = rt_held();
    return NULL;
}

static void last_two_unrefs(int receiver_last)
{
    struct actor t = {0}, r = {0};
    struct unref_ctx x = {0};
    struct watch *r_release = watch("chan.recv.before_release", "R", receiver_last ? 1 : 0);
    struct watch *r_unref = watch("task.unref.before_dec", "R", 0);
    struct watch *main_unref = watch("task.unref.before_dec", "main", 0);

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    spawn(&t, "T", send_one_body, &x);
    wait_done(&t);
    spawn(&r, "R", recv_and_wait_body, &x);
    if (receiver_last) {
        wait_parked(r_release); /* R popped the value, released nothing yet */
        ck_assert_int_eq(rt_join(t.task, NULL), RT_OK);
        ck_assert_int_eq(passed(r_unref), 0);
        release(r_release);
        wait_flag(&x.received, "R's receive");
        ck_assert_uint_gt(seq_of(r_unref), seq_of(main_unref)); /* R's was last */
    } else {
        wait_flag(&x.received, "R's receive");
        ck_assert_int_eq(passed(main_unref), 0);
        ck_assert_int_eq(rt_join(t.task, NULL), RT_OK);
        ck_assert_uint_gt(seq_of(main_unref), seq_of(r_unref)); /* main's was last */
    }
    ck_assert_int_eq(passed(r_unref), 1);
    ck_assert_int_eq(passed(main_unref), 1);
    st(&x.end, 1);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(t.status[0], RT_OK);
    ck_assert_uint_eq(t.held[0], 64); /* in flight: the sender's until received */
    ck_assert_ptr_eq(r.got[0], t.got[0]);
    ck_assert_uint_eq(r.held[0], 64);
    ck_assert_uint_eq(r.held[1], 0);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}

START_TEST(the_receiver_drops_the_last_reference_after_the_join)
{
    last_two_unrefs(1);
}
END_TEST

START_TEST(the_joiner_drops_the_last_reference_after_the_receive)
{
    last_two_unrefs(0);
}
END_TEST

struct end_ctx {
    size_t result_bytes, extra_bytes;
    int panics;
};

static void *end_body(struct actor *a)
{
    struct end_ctx *x = a->ctx;
    void *extra = rt_alloc_outside(x->extra_bytes); /* never freed: the end frees it */
    void *result = rt_alloc_outside(x->result_bytes);
    a->held[1] = rt_held();
    (void)rt_alloc(500); /* in the block: freed with it */
    a->got[0] = result;
    a->got[1] = extra;
    a->held[0] = rt_held();
    if (x->panics)
        rt_panic("ends in a panic");
    return result;
}

/* Releases a parked task's end once main sleeps in rt_join. */
struct releaser {
    int main_tid;
    struct watch *end;
};

static void *release_when_main_waits(struct actor *a)
{
    struct releaser *x = a->ctx;
    WAIT_FOR(asleep(x->main_tid), "main never waited in rt_join");
    release(x->end);
    return NULL;
}

/* rt_join while the task is between its function's return (or its panic)
** and the freeing of what it holds: the join waits for the end, then gets
** the result exactly, charged to the joiner, and the task's block and
** values are gone. */
static void join_racing_the_end(int panics)
{
    struct actor t = {0}, helper = {0};
    struct watch *end = watch("task.end.before_empty", "T", 1);
    struct end_ctx x = {300, 200, panics};
    struct releaser rx;
    void *result = (void *)&x;

    init_fixed(64 * KIB);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    spawn(&t, "T", end_body, &x);
    wait_parked(end);
    ck_assert_uint_eq(rt__blocks_live(), 2); /* T's block is still there */
    ck_assert_uint_eq(rt__tasks_unjoined(), 1);
    rx = (struct releaser){gettid_(), end};
    start_plain(&helper, "helper", release_when_main_waits, &rx);
    rt_status st_ = rt_join(t.task, &result);
    join_plain(&helper);
    ck_assert_uint_eq(t.held[1], 500);       /* its two outside values */
    ck_assert_uint_eq(t.held[0], 500 + 512); /* and a chunk of 500 + 8 bytes, in 16s */
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    if (panics) {
        ck_assert_int_eq(st_, RT_PANICKED);
        ck_assert_ptr_null(result);
        ck_assert_uint_eq(rt_held(), 0);
    } else {
        ck_assert_int_eq(st_, RT_OK);
        ck_assert_ptr_eq(result, t.got[0]);
        ck_assert_uint_eq(rt_held(), 300);
        rt_free(result);
        ck_assert_uint_eq(rt_held(), 0);
    }
}

START_TEST(a_join_waits_for_the_task_to_end_and_gets_its_result)
{
    join_racing_the_end(0);
}
END_TEST

START_TEST(a_join_waits_for_a_panicked_task_to_end)
{
    join_racing_the_end(1);
}
END_TEST

/* S sends 1000 bytes with a budget of 4096. R receives them and is parked
** after the pop, before it releases them to S: the value still counts
** against S, exactly. Once R has released them, S's next outside value
** of its whole budget fits, because the charge settles what R released.
** settle and release meet only in the atomic `released`. */
struct settle_ctx {
    rt_chan *c;
    int step, measured; /* quiet signals */
};

static void *settling_sender_body(struct actor *a)
{
    struct settle_ctx *x = a->ctx;
    void *v = rt_alloc_outside(1000);
    a->status[0] = rt_send(x->c, v);
    wait_flag(&x->step, "step 1");
    a->held[0] = rt_held(); /* R parked inside rt_recv */
    st(&x->measured, 1);
    WAIT_FOR(ld(&x->step) == 2, "step 2");
    void *whole = rt_alloc_outside(4096); /* fits only once settled */
    a->held[1] = rt_held();
    rt_free(whole);
    a->held[2] = rt_held();
    return NULL;
}

START_TEST(a_sent_value_counts_against_the_sender_until_released)
{
    struct actor s = {0}, r = {0};
    struct watch *popped = watch("chan.recv.before_release", "R", 1);
    struct settle_ctx x = {0};
    struct chan_ctx rx = {0};

    init_fixed(4096);
    x.c = rx.c = rt_chan_new(1);
    spawn(&s, "S", settling_sender_body, &x);
    spawn(&r, "R", recv_body, &rx);
    wait_parked(popped);
    st(&x.step, 1);
    wait_flag(&x.measured, "S's figure");
    release(popped);
    wait_done(&r);
    st(&x.step, 2);
    ck_assert_int_eq(join_task(&s, NULL), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(s.status[0], RT_OK);
    ck_assert_uint_eq(s.held[0], 1000);
    ck_assert_uint_eq(s.held[1], 4096);
    ck_assert_uint_eq(s.held[2], 0);
    ck_assert_uint_eq(r.held[0], 1000);
    ck_assert_uint_eq(r.held[1], 0);
    rt_chan_free(x.c);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- task.c: the strategy's lock and the table of tasks not yet joined -- */

static void *nothing(void *arg)
{
    return arg;
}

static void *spawn_one_body(struct actor *a)
{
    a->got[0] = rt_spawn(nothing, NULL);
    return NULL;
}

static void *set_strategy_body(struct actor *a)
{
    rt_set_strategy(rt_fixed_strategy((size_t)(uintptr_t)a->ctx));
    return NULL;
}

static void *count_unjoined_body(struct actor *a)
{
    a->held[0] = rt__tasks_unjoined();
    return NULL;
}

/* A spawn reading the strategy holds its lock: a strategy set meanwhile
** waits, and the block is the old strategy's size; the next spawn gets
** the new one. */
START_TEST(a_strategy_set_during_a_spawn_waits_for_it)
{
    struct actor a = {0}, b = {0};
    struct watch *reading = watch("task.block_for_new_task.locked", "A", 1);

    init_fixed(8 * KIB);
    start_plain(&a, "A", spawn_one_body, NULL); /* any thread may spawn */
    wait_parked(reading);
    start_plain(&b, "B", set_strategy_body, (void *)(uintptr_t)(16 * KIB));
    ck_assert_msg(blocks(&b), "rt_set_strategy did not wait for the spawn's read");
    release(reading);
    join_plain(&a);
    join_plain(&b);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_int_eq(rt_join(a.got[0], NULL), RT_OK);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

START_TEST(a_spawn_during_a_strategy_set_waits_for_it)
{
    struct actor a = {0}, b = {0};
    struct watch *setting = watch("task.set_strategy.locked", "B", 1);
    struct watch *reading = watch("task.block_for_new_task.locked", "A", 0);

    init_fixed(8 * KIB);
    start_plain(&b, "B", set_strategy_body, (void *)(uintptr_t)(16 * KIB));
    wait_parked(setting);
    start_plain(&a, "A", spawn_one_body, NULL);
    ck_assert_msg(blocks(&a), "a spawn did not wait for rt_set_strategy");
    ck_assert_int_eq(passed(reading), 0);
    release(setting);
    join_plain(&a);
    join_plain(&b);
    ck_assert_int_eq(passed(reading), 1);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_int_eq(rt_join(a.got[0], NULL), RT_OK);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* What the strategy's lock guards is read and written inside it: a spawn
** has read the strategy by the time it lets the lock go, and a set has
** written it. A is parked right after the first unlock of its rt_spawn
** (the strategy's: nothing before it in rt_spawn takes a lock), main sets
** a strategy of 16 KiB, and A's task still gets the 8 KiB it read; then B
** is parked right after its set's unlock, and a task main spawns meanwhile
** gets B's 32 KiB. */
static void *own_budget(void *arg)
{
    *(size_t *)arg = rt_budget(); /* read by the joiner, after the join */
    return NULL;
}

static size_t budgets[3];

static void *spawn_budget_body(struct actor *a)
{
    a->got[0] = rt_spawn(own_budget, &budgets[0]);
    return NULL;
}

static size_t budget_of(rt_task *t, const size_t *budget)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    return *budget;
}

START_TEST(the_strategy_is_read_and_set_before_its_lock_goes)
{
    struct actor a = {0}, b = {0};
    struct watch *read = watch("runtime.unlock.released", "A", 1);
    struct watch *set = watch("runtime.unlock.released", "B", 1);

    init_fixed(8 * KIB);
    start_plain(&a, "A", spawn_budget_body, NULL);
    wait_parked(read);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    release(read);
    join_plain(&a);
    ck_assert_uint_eq(budget_of(a.got[0], &budgets[0]), 8 * KIB);

    start_plain(&b, "B", set_strategy_body, (void *)(uintptr_t)(32 * KIB));
    wait_parked(set);
    ck_assert_uint_eq(budget_of(rt_spawn(own_budget, &budgets[1]), &budgets[1]), 32 * KIB);
    release(set);
    join_plain(&b);
    ck_assert_uint_eq(budget_of(rt_spawn(own_budget, &budgets[2]), &budgets[2]), 32 * KIB);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* The table of tasks not yet joined is changed and read inside its lock:
** A is parked right after the second unlock of its rt_spawn (the table's:
** the strategy's is the first), and its task is counted already; then C,
** counting, is parked right after its unlock, main spawns meanwhile, and
** C's count is the table at its lock, without main's task. */
START_TEST(the_table_of_unjoined_tasks_is_put_and_counted_before_its_lock_goes)
{
    struct actor a = {0}, c = {0};
    struct watch *added = watch("runtime.unlock.released", "A", 2);
    struct watch *counted = watch("runtime.unlock.released", "C", 1);

    init_fixed(8 * KIB);
    size_t before = rt__tasks_unjoined();
    start_plain(&a, "A", spawn_one_body, NULL);
    wait_parked(added);
    ck_assert_uint_eq(rt__tasks_unjoined(), before + 1);
    release(added);
    join_plain(&a);
    start_plain(&c, "C", count_unjoined_body, NULL);
    wait_parked(counted);
    rt_task *t = rt_spawn(nothing, NULL);
    ck_assert_ptr_nonnull(t);
    release(counted);
    join_plain(&c);
    ck_assert_uint_eq(c.held[0], before + 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), before + 2);
    ck_assert_int_eq(rt_join(a.got[0], NULL), RT_OK);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(rt__tasks_unjoined(), before);
}
END_TEST

/* A join takes its task out of the table before the table's lock goes: J,
** a task joining T, is parked right after its first unlock in rt_join (the
** table's), and T is no longer counted. */
static void *join_ctx_body(struct actor *a)
{
    a->status[0] = rt_join(a->ctx, NULL);
    return NULL;
}

START_TEST(a_join_takes_its_task_out_of_the_table_before_its_lock_goes)
{
    struct actor j = {0};
    struct watch *taken = watch("runtime.unlock.released", "J", 1);

    init_fixed(8 * KIB);
    size_t before = rt__tasks_unjoined();
    rt_task *t = rt_spawn(nothing, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(rt__tasks_unjoined(), before + 1);
    spawn(&j, "J", join_ctx_body, t);
    wait_parked(taken);
    ck_assert_uint_eq(rt__tasks_unjoined(), before + 1); /* J is counted, T no longer */
    release(taken);
    ck_assert_int_eq(join_task(&j, NULL), RT_OK);
    ck_assert_int_eq(j.status[0], RT_OK);
    ck_assert_uint_eq(rt__tasks_unjoined(), before);
}
END_TEST

/* A spawn inside the table of tasks not yet joined: a count of the table
** waits for it and counts its task; a join inside the table waits for a
** second spawn; the table ends exact. */
struct join_old {
    rt_task *old;
    int go;
};

static void *join_old_body(struct actor *a)
{
    struct join_old *x = a->ctx;
    wait_flag(&x->go, "go");
    a->status[0] = rt_join(x->old, NULL);
    return NULL;
}

START_TEST(the_table_of_unjoined_tasks_is_changed_by_one_thread_at_a_time)
{
    struct actor a = {0}, b = {0}, counter = {0}, j = {0};
    struct watch *a_adding = watch("task.unjoined_add.locked", "A", 1);
    struct watch *b_adding = watch("task.unjoined_add.locked", "B", 1);
    struct watch *j_taking = watch("task.unjoined_take.locked", "J", 0);

    init_fixed(8 * KIB);
    rt_task *old = rt_spawn(nothing, NULL);
    ck_assert_ptr_nonnull(old);
    start_plain(&a, "A", spawn_one_body, NULL);
    wait_parked(a_adding);
    start_plain(&counter, "counter", count_unjoined_body, NULL);
    ck_assert_msg(blocks(&counter), "a count of the table did not wait for a spawn");
    release(a_adding);
    join_plain(&a);
    join_plain(&counter);
    ck_assert_uint_eq(counter.held[0], 2); /* old and A's, counted after A's add */

    struct join_old jx = {old, 0};
    spawn(&j, "J", join_old_body, &jx); /* before B holds the table */
    start_plain(&b, "B", spawn_one_body, NULL);
    wait_parked(b_adding);
    st(&jx.go, 1);
    ck_assert_msg(blocks(&j), "a join did not wait for a spawn in the table");
    ck_assert_int_eq(passed(j_taking), 0);
    release(b_adding);
    join_plain(&b);
    wait_done(&j);
    ck_assert_int_eq(passed(j_taking), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 3); /* A's, B's and J */
    ck_assert_int_eq(rt_join(j.task, NULL), RT_OK);
    ck_assert_int_eq(j.status[0], RT_OK);
    ck_assert_int_eq(rt_join(a.got[0], NULL), RT_OK);
    ck_assert_int_eq(rt_join(b.got[0], NULL), RT_OK);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- shared.c: doors on two values, a panic in a door ---------------------- */

struct pair_ctx {
    rt_shared *first, *second; /* as the caller passes them */
    long add;
};

static void add_both(void *va, void *vb, void *ctx)
{
    *(long *)va += *(long *)ctx;
    *(long *)vb += *(long *)ctx;
}

static void *update_all_body(struct actor *a)
{
    struct pair_ctx *x = a->ctx;
    a->status[0] = rt_update_all(x->first, x->second, add_both, &x->add);
    return NULL;
}

/* A opens a door on (a, b) and is parked with a locked, b not yet; B opens
** one on (b, a): it must wait for a, holding nothing (the global order),
** so A gets b and both finish. Locked in argument order, B would hold b and
** wait for a while A waits for b: a deadlock, reported here in seconds. */
START_TEST(doors_on_two_values_lock_them_in_one_order)
{
    struct actor a = {0}, b = {0};
    struct watch *one_locked = watch("shared.door_open.locked_one", "A", 1);
    long zero = 0, va = -1, vb = -1;

    init_fixed(64 * KIB);
    rt_shared *x = rt_shared_new(RT_COPY, sizeof(long), &zero, 4096);
    rt_shared *y = rt_shared_new(RT_COPY, sizeof(long), &zero, 4096);
    struct pair_ctx ca = {x, y, 1}, cb = {y, x, 10};
    spawn(&a, "A", update_all_body, &ca);
    wait_parked(one_locked);
    ck_assert(rt__shared_locked(x));
    ck_assert(!rt__shared_locked(y));
    spawn(&b, "B", update_all_body, &cb);
    ck_assert_msg(blocks(&b), "the second door did not wait");
    ck_assert_msg(!rt__shared_locked(y), "the second door holds b while it waits for a");
    release(one_locked);
    ck_assert_int_eq(join_task(&a, NULL), RT_OK);
    ck_assert_int_eq(join_task(&b, NULL), RT_OK);
    ck_assert_int_eq(a.status[0], RT_OK);
    ck_assert_int_eq(b.status[0], RT_OK);
    ck_assert_int_eq(rt_get(x, &va), RT_OK);
    ck_assert_int_eq(rt_get(y, &vb), RT_OK);
    ck_assert_int_eq(va, 11);
    ck_assert_int_eq(vb, 11);
    ck_assert(!rt__shared_locked(x) && !rt__shared_locked(y));
    rt_shared_free(x);
    rt_shared_free(y);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

struct panic_ctx {
    rt_shared *s;
    size_t held_in_door;
    int ran;
};

static void allocate_then_panic(void *value, void *ctx)
{
    struct panic_ctx *x = ctx;
    char *p = rt_alloc(100); /* in the value's block */
    memset(p, 'p', 100);
    *(char **)value = p;
    x->held_in_door = rt_shared_held(x->s);
    rt_panic("half changed");
}

static void count_runs(void *value, void *ctx)
{
    (void)value;
    ((struct panic_ctx *)ctx)->ran++;
}

static void *panicking_update_body(struct actor *a)
{
    struct panic_ctx *x = a->ctx;
    rt_update(x->s, allocate_then_panic, x);
    return NULL;
}

static void *update_body(struct actor *a)
{
    struct panic_ctx *x = a->ctx;
    a->status[0] = rt_update(x->s, count_runs, x);
    return NULL;
}

/* A panics in a door on an RT_OWNED value; B's door on it waits. Parked in
** the unwind, before the value is poisoned and after (lock still held):
** the flag is read from a third thread without the lock. B then gets in,
** sees the poison and does not run fn; the value keeps exactly what A's
** door left in its block. */
START_TEST(a_panic_in_a_door_poisons_before_the_next_door_gets_in)
{
    struct actor a = {0}, b = {0};
    struct watch *begin = watch("shared.unwind.begin", "A", 1);
    struct watch *poisoned = watch("shared.unwind.before_release", "A", 1);
    char *none = NULL;
    struct panic_ctx x = {0};

    init_fixed(64 * KIB);
    x.s = rt_shared_new(RT_OWNED, sizeof(char *), &none, 4096);
    size_t fresh = rt_shared_held(x.s);
    spawn(&a, "A", panicking_update_body, &x);
    wait_parked(begin);
    ck_assert(!rt_poisoned(x.s)); /* read without the lock A holds */
    ck_assert(rt__shared_locked(x.s));
    spawn(&b, "B", update_body, &x);
    ck_assert_msg(blocks(&b), "a door got in while another was unwinding");
    release(begin);
    wait_parked(poisoned);
    ck_assert(rt_poisoned(x.s));
    ck_assert(rt__shared_locked(x.s));
    ck_assert_int_eq(ld(&b.done), 0);
    release(poisoned);
    ck_assert_int_eq(rt_join(a.task, NULL), RT_PANICKED);
    ck_assert_int_eq(join_task(&b, NULL), RT_OK);
    ck_assert_int_eq(b.status[0], RT_POISONED);
    ck_assert_int_eq(x.ran, 0);
    ck_assert(rt_poisoned(x.s));
    ck_assert_uint_eq(x.held_in_door, fresh + 112); /* 100 + 8 bytes, in 16s */
    ck_assert_uint_eq(rt_shared_held(x.s), x.held_in_door);
    ck_assert_uint_eq(rt__blocks_live(), 2); /* main's and the value's */
    rt_shared_free(x.s);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* rt_shared_held takes its value's lock as a door would (refrt.h), for
** every value: a read from another thread waits while a task's door is
** open on it, whether the value is RT_COPY or RT_OWNED, poisoned or
** supervised, and while a panic's unwind is parked after poisoning it with
** the lock still held; it then reads what that door left. B is a plain
** thread (rt_shared_held needs no task) or a task. */
static int door_entered, door_may_close;

static void grows_and_waits(void *value, void *ctx)
{
    (void)value;
    struct panic_ctx *x = ctx;
    if (x->ran++ == 0) {
        char *p = rt_alloc(200); /* in the owned value's block; the task's for a copy */
        memset(p, 'q', 200);
        x->held_in_door = rt_shared_held(x->s);
    }
    st(&door_entered, 1);
    while (!ld(&door_may_close))
        nap();
}

static void *holding_update_body(struct actor *a)
{
    struct panic_ctx *x = a->ctx;
    a->status[0] = rt_update(x->s, grows_and_waits, x);
    return NULL;
}

static void *held_body(struct actor *a)
{
    struct panic_ctx *x = a->ctx;
    a->held[0] = rt_shared_held(x->s);
    return NULL;
}

static void build_zero(void *value, void *ctx)
{
    (void)ctx;
    memset(value, 0, sizeof(char *));
}

START_TEST(a_held_figure_waits_for_any_door_open_on_its_value)
{
    char *none = NULL;
    init_fixed(256 * KIB);
    for (int kind = 0; kind < 4; kind++)
        for (int on_task = 0; on_task < 2; on_task++) {
            struct actor a = {0}, b = {0};
            struct panic_ctx x = {0};
            st(&door_entered, 0);
            st(&door_may_close, 0);
            x.s = kind == 0   ? rt_shared_new(RT_COPY, sizeof none, &none, 4096)
                  : kind == 1 ? rt_shared_new(RT_OWNED, sizeof none, &none, 4096)
                  : kind == 2 ? rt_shared_supervised(RT_COPY, sizeof none, build_zero, NULL, 4096)
                              : rt_shared_supervised(RT_OWNED, sizeof none, build_zero, NULL,
                                                     4096);
            size_t before = rt_shared_held(x.s);
            spawn(&a, "A", holding_update_body, &x);
            wait_flag(&door_entered, "A's door opened");
            if (on_task)
                spawn(&b, "B", held_body, &x);
            else
                start_plain(&b, "B", held_body, &x);
            ck_assert_msg(blocks(&b), "kind %d, on %s: rt_shared_held did not wait for the "
                          "door", kind, on_task ? "a task" : "a plain thread");
            st(&door_may_close, 1);
            ck_assert_int_eq(join_task(&a, NULL), RT_OK);
            if (on_task)
                ck_assert_int_eq(join_task(&b, NULL), RT_OK);
            else
                join_plain(&b);
            ck_assert_uint_eq(b.held[0], rt_shared_held(x.s));
            ck_assert_uint_eq(b.held[0], kind % 2 ? x.held_in_door : before);
            rt_shared_free(x.s);
        }
    /* a panic's unwind parked after it poisoned the value, its lock held */
    for (int on_task = 0; on_task < 2; on_task++) {
        struct actor a = {0}, b = {0};
        struct panic_ctx x = {0};
        struct watch *poisoned = watch("shared.unwind.before_release", "A", 1);
        x.s = rt_shared_new(RT_OWNED, sizeof none, &none, 4096);
        spawn(&a, "A", panicking_update_body, &x);
        wait_parked(poisoned);
        ck_assert(rt_poisoned(x.s));
        if (on_task)
            spawn(&b, "B", held_body, &x);
        else
            start_plain(&b, "B", held_body, &x);
        ck_assert_msg(blocks(&b), "on %s: rt_shared_held of a poisoned value did not wait for "
                      "the unwind", on_task ? "a task" : "a plain thread");
        release(poisoned);
        ck_assert_int_eq(rt_join(a.task, NULL), RT_PANICKED);
        if (on_task)
            ck_assert_int_eq(join_task(&b, NULL), RT_OK);
        else
            join_plain(&b);
        ck_assert_uint_eq(b.held[0], x.held_in_door);
        rt_shared_free(x.s);
        nwatches = 0;
    }
}
END_TEST

/* ---- races only ThreadSanitizer sees, each arranged with no happens-before ---- */

/* A latch after another thread's later publish: the publish read the
** slot's offset with the path open, then said so by a relaxed flag (no
** happens-before); the latch, made after, writes nothing the publish read
** without a lock both take. ThreadSanitizer judges it. */
static int later_published, later_may_end;

static void *publish_then_linger(struct actor *a)
{
    a->got[0] = rt_hot();
    st(&later_published, 1);
    while (!ld(&later_may_end))
        nap();
    return NULL;
}

START_TEST(a_latch_after_another_threads_later_publish_races_with_nothing_it_read)
{
    struct actor a = {0};
    rt_init();
    struct rt_hot *mine = rt_hot(); /* the first publish */
    start_plain(&a, "A", publish_then_linger, NULL);
    wait_flag(&later_published, "A published");
    rt_hot_disable();
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_eq(rt_hot(), mine);
    st(&later_may_end, 1);
    join_plain(&a);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_ne(a.got[0], mine);
}
END_TEST

/* The spurious-wakeup switch (locks.h) turned on while a receiver is
** parked before its wait, ordered only by relaxed flags: the wait reads the
** switch atomically, so ThreadSanitizer sees no race; the receiver then
** gets the value main sends. */
START_TEST(the_spurious_switch_may_change_while_a_receiver_is_about_to_wait)
{
    struct actor r = {0};
    struct watch *about_to_sleep = watch("chan.recv.before_wait", "R", 1);
    struct chan_ctx x = {0};

    init_fixed(64 * KIB);
    x.c = rt_chan_new(1);
    spawn(&r, "R", recv_body, &x);
    wait_parked(about_to_sleep);
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    release(about_to_sleep);
    void *v = rt_alloc_outside(24);
    ck_assert_int_eq(rt_send(x.c, v), RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_ptr_eq(r.got[0], v);
    __atomic_store_n(&rt__spurious_wakeups, 0, __ATOMIC_RELAXED);
    rt_chan_free(x.c);
}
END_TEST

/* A channel freed with a value queued by a sender that has ended: the
** program orders its send before the free (a receive on another channel,
** as the contract asks of a free), but not the sender's end, which the
** free learns of by the count of blocks, a relaxed read. The sender's end
** (its block emptied and freed) and the free's release of its bytes are
** then ordered by the runtime alone. ThreadSanitizer judges it. */
static rt_chan *told_sent;

static void *sends_one_and_ends(struct actor *a)
{
    struct chan_ctx *x = a->ctx;
    void *v = rt_alloc_outside(x->bytes);
    a->status[0] = rt_send(x->c, v);
    a->status[1] = rt_send(told_sent, rt_alloc_outside(8));
    return NULL;
}

START_TEST(a_channel_freed_after_its_sender_ended_races_with_nothing)
{
    init_fixed(64 * KIB);
    for (int round = 0; round < 4; round++) {
        struct actor snd = {0};
        struct chan_ctx x = {0};
        x.c = rt_chan_new(2);
        x.bytes = 100;
        told_sent = rt_chan_new(1);
        size_t blocks = rt__blocks_live();
        spawn(&snd, "S", sends_one_and_ends, &x);
        rt_free(rt_recv(told_sent)); /* the send on x.c happened before */
        WAIT_FOR(rt__blocks_live() == blocks, "the sender's block was never freed");
        rt_chan_free(x.c); /* before the join: only the count said it ended */
        ck_assert_int_eq(join_task(&snd, NULL), RT_OK);
        ck_assert_int_eq(snd.status[0], RT_OK);
        ck_assert_int_eq(snd.status[1], RT_OK);
        ck_assert_uint_eq(rt__blocks_live(), blocks);
        ck_assert_uint_eq(rt_held(), 0);
        rt_chan_free(told_sent);
    }
}
END_TEST

/* A door's copy is gone before the value's lock is: parked right after its
** door let go of a lock (runtime.door_unlock.released), when another task's
** door could open on the value and make a copy of its own, A holds no copy
** of that value any more, whether fn returned or panicked, and for each
** value of an rt_update_all at its own unlock. So a value has one copy alive
** at most, however many tasks wait on it. Values of RT_CHUNK_SIZE bytes:
** their copies are chunk-sized mallocs, which chunk_live tells from freed
** ones. The copies' addresses cross threads through relaxed atomics. */
struct copy_ctx {
    rt_shared *s, *t;
    void *copy[2]; /* the copies fn got, of s and of t */
    int panic;
};

static void note_copy(void *value, void *ctx)
{
    struct copy_ctx *x = ctx;
    __atomic_store_n(&x->copy[0], value, __ATOMIC_RELAXED);
    if (x->panic)
        rt_panic("a copy update panics");
}

static void note_copies(void *va, void *vb, void *ctx)
{
    struct copy_ctx *x = ctx;
    __atomic_store_n(&x->copy[0], va, __ATOMIC_RELAXED);
    __atomic_store_n(&x->copy[1], vb, __ATOMIC_RELAXED);
}

static void *copy_update_body(struct actor *a)
{
    struct copy_ctx *x = a->ctx;
    a->status[0] = rt_update(x->s, note_copy, x);
    return NULL;
}

static void *copy_update_all_body(struct actor *a)
{
    struct copy_ctx *x = a->ctx;
    a->status[0] = rt_update_all(x->t, x->s, note_copies, x); /* t first: its copy is va */
    return NULL;
}

static void *copy_of_noted(struct copy_ctx *x, int i)
{
    return __atomic_load_n(&x->copy[i], __ATOMIC_RELAXED);
}

START_TEST(a_door_frees_its_copy_before_another_door_can_open_on_the_value)
{
    static unsigned char zero[RT_CHUNK_SIZE];
    struct copy_ctx x = {0};

    init_fixed(64 * KIB);
    x.s = rt_shared_new(RT_COPY, sizeof zero, zero, 2 * RT_CHUNK_SIZE);
    x.t = rt_shared_new(RT_COPY, sizeof zero, zero, 2 * RT_CHUNK_SIZE);
    /* an rt_update whose fn returns, then one whose fn panics */
    for (int panic = 0; panic < 2; panic++) {
        const char *who = panic ? "P" : "R";
        struct actor a = {0};
        struct watch *released = watch("runtime.door_unlock.released", who, 1);
        x.panic = panic;
        x.copy[0] = NULL;
        spawn(&a, who, copy_update_body, &x);
        wait_parked(released);
        ck_assert(!rt__shared_locked(x.s)); /* a door could open on it now */
        ck_assert_ptr_nonnull(copy_of_noted(&x, 0));
        ck_assert_msg(!chunk_live(copy_of_noted(&x, 0)),
                      "the copy was still alive once its value's lock was free (%s)",
                      panic ? "fn panicked" : "fn returned");
        release(released);
        /* a task that panics never returns from its body: joined directly */
        ck_assert_int_eq(panic ? rt_join(a.task, NULL) : join_task(&a, NULL),
                         panic ? RT_PANICKED : RT_OK);
    }
    /* rt_update_all over two copies: t is locked last, so let go of first */
    struct actor a = {0};
    struct watch *first = watch("runtime.door_unlock.released", "U", 1);
    struct watch *second = watch("runtime.door_unlock.released", "U", 2);
    x.copy[0] = x.copy[1] = NULL;
    spawn(&a, "U", copy_update_all_body, &x);
    wait_parked(first);
    ck_assert(!rt__shared_locked(x.t) && rt__shared_locked(x.s));
    ck_assert_ptr_nonnull(copy_of_noted(&x, 0));
    ck_assert_msg(!chunk_live(copy_of_noted(&x, 0)), "t's copy outlived t's lock");
    release(first);
    wait_parked(second);
    ck_assert(!rt__shared_locked(x.s));
    ck_assert_ptr_nonnull(copy_of_noted(&x, 1));
    ck_assert_msg(!chunk_live(copy_of_noted(&x, 1)), "s's copy outlived s's lock");
    release(second);
    ck_assert_int_eq(join_task(&a, NULL), RT_OK);
    ck_assert_int_eq(a.status[0], RT_OK);
    rt_shared_free(x.s);
    rt_shared_free(x.t);
}
END_TEST

/* A read of a shared value is over before its lock goes: R reads g with
** rt_get, a with rt_access and w's figure with rt_shared_held, and tells
** main through a relaxed flag; main's doors then change all three. Only
** the values' locks order R's reads before main's writes (one value a
** read: a later door of R's on the same value would order it too), so a
** read made after the unlock is a data race under SANITIZE=thread. R stays
** a task until main is done: a task's end orders too much.
** TSan: shared.c:rt_get (the copy out), rt_access (fn), rt_shared_held. */
struct reads_ctx {
    rt_shared *g, *a, *w;
    long got, seen, add;
    size_t held;
    int read, end; /* quiet signals */
};

static void read_long(const void *value, void *ctx)
{
    ((struct reads_ctx *)ctx)->seen = *(const long *)value;
}

static void *reader_body(struct actor *a)
{
    struct reads_ctx *x = a->ctx;
    a->status[0] = rt_get(x->g, &x->got);
    a->status[1] = rt_access(x->a, read_long, x);
    x->held = rt_shared_held(x->w);
    st(&x->read, 1);
    wait_flag(&x->end, "the end");
    return NULL;
}

static void add_to_long(void *value, void *ctx)
{
    *(long *)value += ((struct reads_ctx *)ctx)->add;
}

static void allocate_in_it(void *value, void *ctx)
{
    (void)ctx;
    *(char **)value = rt_alloc(100); /* in the value's block */
}

START_TEST(a_read_of_a_shared_value_is_over_before_its_lock_goes)
{
    struct actor r = {0};
    struct reads_ctx x = {0};
    long seven = 7, eight = 8, out = 0;
    char *none = NULL;

    init_fixed(64 * KIB);
    x.g = rt_shared_new(RT_COPY, sizeof(long), &seven, 4096);
    x.a = rt_shared_new(RT_COPY, sizeof(long), &eight, 4096);
    x.w = rt_shared_new(RT_OWNED, sizeof(char *), &none, 4096);
    x.add = 100;
    size_t fresh = rt_shared_held(x.w);
    spawn(&r, "R", reader_body, &x);
    wait_flag(&x.read, "R's reads");
    ck_assert_int_eq(rt_update(x.g, add_to_long, &x), RT_OK);
    ck_assert_int_eq(rt_update(x.a, add_to_long, &x), RT_OK);
    ck_assert_int_eq(rt_update(x.w, allocate_in_it, &x), RT_OK);
    st(&x.end, 1);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(r.status[0], RT_OK);
    ck_assert_int_eq(r.status[1], RT_OK);
    ck_assert_int_eq(x.got, 7);  /* read before main's doors */
    ck_assert_int_eq(x.seen, 8);
    ck_assert_uint_eq(x.held, fresh);
    ck_assert_int_eq(rt_get(x.g, &out), RT_OK);
    ck_assert_int_eq(out, 107);
    ck_assert_int_eq(rt_get(x.a, &out), RT_OK);
    ck_assert_int_eq(out, 108);
    ck_assert_uint_eq(rt_shared_held(x.w), fresh + 112); /* 100 + 8 bytes, in 16s */
    rt_shared_free(x.g);
    rt_shared_free(x.a);
    rt_shared_free(x.w);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* The same reads, forced, so that every build sees the order and not only
** TSan: R is parked right after it lets go of the lock each read took (the
** value's own lock for rt_shared_held, the door's for rt_get and for
** rt_access), and main changes that value before R goes on. R must have
** read what the value held before main's door: a read finished after its
** unlock would see main's change. */
static void *parked_reader_body(struct actor *a)
{
    struct reads_ctx *x = a->ctx;
    x->held = rt_shared_held(x->w);
    a->status[0] = rt_get(x->g, &x->got);
    a->status[1] = rt_access(x->a, read_long, x);
    return NULL;
}

START_TEST(a_read_is_over_when_its_lock_goes_even_if_the_value_changes_at_once)
{
    struct actor r = {0};
    struct reads_ctx x = {0};
    long seven = 7, eight = 8, out = 0;
    char *none = NULL;
    struct watch *held_unlocked = watch("runtime.unlock.released", "R", 1);
    struct watch *get_unlocked = watch("runtime.door_unlock.released", "R", 1);
    struct watch *access_unlocked = watch("runtime.door_unlock.released", "R", 2);

    init_fixed(64 * KIB);
    x.g = rt_shared_new(RT_COPY, sizeof(long), &seven, 4096);
    x.a = rt_shared_new(RT_COPY, sizeof(long), &eight, 4096);
    x.w = rt_shared_new(RT_OWNED, sizeof(char *), &none, 4096);
    x.add = 100;
    size_t fresh = rt_shared_held(x.w);
    spawn(&r, "R", parked_reader_body, &x);
    wait_parked(held_unlocked);
    ck_assert_int_eq(rt_update(x.w, allocate_in_it, &x), RT_OK);
    release(held_unlocked);
    wait_parked(get_unlocked);
    ck_assert_int_eq(rt_update(x.g, add_to_long, &x), RT_OK);
    release(get_unlocked);
    wait_parked(access_unlocked);
    ck_assert_int_eq(rt_update(x.a, add_to_long, &x), RT_OK);
    release(access_unlocked);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    ck_assert_int_eq(r.status[0], RT_OK);
    ck_assert_int_eq(r.status[1], RT_OK);
    ck_assert_uint_eq(x.held, fresh); /* each read before main's door */
    ck_assert_int_eq(x.got, 7);
    ck_assert_int_eq(x.seen, 8);
    ck_assert_uint_eq(rt_shared_held(x.w), fresh + 112);
    ck_assert_int_eq(rt_get(x.g, &out), RT_OK);
    ck_assert_int_eq(out, 107);
    ck_assert_int_eq(rt_get(x.a, &out), RT_OK);
    ck_assert_int_eq(out, 108);
    rt_shared_free(x.g);
    rt_shared_free(x.a);
    rt_shared_free(x.w);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* rt_shared_held with no door open takes the value's lock as a door would,
** and reads the block only once it holds it: the block is the value's
** state, which a rebuild replaces (and frees the old one) under that lock.
** A rebuilds a poisoned supervised value and is parked inside its build
** (the lock held, the fresh block made, the old one not yet freed); a task
** and a plain thread each read the held figure and must sleep on the lock;
** once A's door is over they read the rebuilt block's figure, exactly what
** A read inside its door, never the old block's. */
struct rebuild_ctx {
    rt_shared *s;
    size_t bytes[2]; /* what the first build and the rebuild allocate */
    int builds, building, go;
    size_t held_in_door;
};

static void build_parked_on_rebuild(void *value, void *ctx)
{
    struct rebuild_ctx *x = ctx;
    int n = x->builds++;
    char *p = rt_alloc(x->bytes[n]); /* in the fresh block: the value is RT_OWNED */

    memset(p, 'b', x->bytes[n]);
    *(char **)value = p;
    if (n == 1) {
        st(&x->building, 1);
        wait_flag(&x->go, "the test's go to finish the rebuild");
    }
}

static void panic_in_update(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_panic("poisons the supervised value");
}

static void note_held_in_door(void *value, void *ctx)
{
    struct rebuild_ctx *x = ctx;
    (void)value;
    x->held_in_door = rt_shared_held(x->s);
}

static void *poisoning_body(struct actor *a)
{
    struct rebuild_ctx *x = a->ctx;
    rt_update(x->s, panic_in_update, x);
    return NULL;
}

static void *rebuilding_body(struct actor *a)
{
    struct rebuild_ctx *x = a->ctx;
    a->status[0] = rt_update(x->s, note_held_in_door, x);
    return NULL;
}

static void *held_reader_body(struct actor *a)
{
    struct rebuild_ctx *x = a->ctx;
    a->held[0] = rt_shared_held(x->s);
    return NULL;
}

START_TEST(a_held_figure_read_during_a_rebuild_is_the_rebuilt_blocks)
{
    struct actor p = {0}, a = {0}, r = {0}, t = {0};
    struct rebuild_ctx x = {.bytes = {3000, 1000}};

    init_fixed(64 * KIB);
    x.s = rt_shared_supervised(RT_OWNED, sizeof(char *), build_parked_on_rebuild, &x,
                               16 * KIB);
    ck_assert_ptr_nonnull(x.s);
    size_t before = rt_shared_held(x.s);
    spawn(&p, "P", poisoning_body, &x);
    ck_assert_int_eq(rt_join(p.task, NULL), RT_PANICKED);
    ck_assert(rt_poisoned(x.s));
    ck_assert_uint_eq(rt_shared_held(x.s), before); /* a panic in fn changes no block */
    spawn(&a, "A", rebuilding_body, &x);
    wait_flag(&x.building, "A's rebuild");
    ck_assert(rt__shared_locked(x.s));
    spawn(&r, "R", held_reader_body, &x);
    start_plain(&t, "T", held_reader_body, &x);
    ck_assert_msg(blocks(&r), "a task read the held figure while a rebuild held the lock");
    ck_assert_msg(blocks(&t), "a thread read the held figure while a rebuild held the lock");
    st(&x.go, 1);
    ck_assert_int_eq(join_task(&a, NULL), RT_OK);
    ck_assert_int_eq(a.status[0], RT_OK);
    ck_assert_int_eq(join_task(&r, NULL), RT_OK);
    join_plain(&t);
    ck_assert_int_eq(x.builds, 2);
    ck_assert(!rt_poisoned(x.s));
    ck_assert_uint_eq(before - x.held_in_door, 2000); /* 3000 and 1000: multiples of 16 */
    ck_assert_uint_eq(r.held[0], x.held_in_door);
    ck_assert_uint_eq(t.held[0], x.held_in_door);
    ck_assert_uint_eq(rt_shared_held(x.s), x.held_in_door);
    rt_shared_free(x.s);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- exact accounting after races (issue 14) ------------------------------- */

/* Each round: 3 senders send 8 values each (every size distinct), add
** what they sent to a shared RT_COPY total, wait until every value is
** received, and return a value of their own; 2 receivers keep what they
** receive until the channel closes; X panics in a door on an RT_OWNED
** value w while U's door on w waits. Every point yields, and a conductor
** forces three windows each round: a receiver parked between its pop and
** its release until every value is sent, a sender parked between its
** return and its end until main sleeps joining it (each sender), X parked in its unwind
** (w poisoned, locked) until U sleeps on w's lock. Afterwards every figure
** is exact. */
#define SENDERS 3
#define PER_SENDER 8
#define RECEIVERS 2
#if UNDER_SANITIZER
#define ROUNDS 3
#else
#define ROUNDS 12
#endif

struct stress {
    rt_chan *c;
    rt_shared *total, *w;
    int sent, received, joining, u_go; /* quiet */
    struct watch *popped, *ending[SENDERS], *unwinding;
    int main_tid;
    struct actor *u;
    struct panic_ctx wx;
};

static size_t stress_size(int p, int k)
{
    return 16 * (size_t)(p + 1) * PER_SENDER + (size_t)k + 1;
}

static void add_long(void *value, void *ctx)
{
    *(long *)value += *(long *)ctx;
}

static void *stress_sender(struct actor *a)
{
    struct stress *x = a->ctx;
    int p = a->role[1] - '0';
    long sum = 0;
    rt_region r;

    rt_region_open(&r); /* a chunk for this thread's cache */
    memset(rt_region_alloc(&r, 1, 64, 1), 2, 64);
    rt_region_close(&r);
    for (int k = 0; k < PER_SENDER; k++) {
        size_t n = stress_size(p, k);
        unsigned char *v = rt_alloc_outside(n);
        memset(v, p * PER_SENDER + k + 1, n); /* its id, 1 to 24 */
        a->status[0] |= rt_send(x->c, v);
        __atomic_add_fetch(&x->sent, 1, __ATOMIC_RELAXED);
        sum += (long)n;
    }
    a->status[1] = rt_update(x->total, add_long, &sum);
    WAIT_FOR(ld(&x->received) == SENDERS * PER_SENDER, "every value received");
    a->held[0] = rt_held(); /* all received: settled to nothing */
    a->held[1] = rt_budget();
    a->held[2] = rt_chunk_kept();
    return rt_alloc_outside(10 + (size_t)p);
}

static void *stress_receiver(struct actor *a)
{
    struct stress *x = a->ctx;
    unsigned char *kept[SENDERS * PER_SENDER];
    size_t n = 0, bytes = 0, wrong = 0;
    unsigned char *v;

    while ((v = rt_recv(x->c)) != NULL) {
        kept[n++] = v;
        __atomic_add_fetch(&x->received, 1, __ATOMIC_RELAXED);
    }
    for (size_t i = 0; i < n; i++) {
        /* every byte is the value's id, p * PER_SENDER + k + 1 */
        int id = kept[i][0] - 1;
        size_t size = stress_size(id / PER_SENDER, id % PER_SENDER);
        for (size_t j = 0; j < size; j++)
            wrong += kept[i][j] != kept[i][0];
        bytes += size;
    }
    a->held[0] = rt_held();
    a->held[1] = bytes;
    a->held[2] = n;
    a->held[3] = wrong;
    for (size_t i = 0; i < n; i++)
        rt_free(kept[i]);
    a->got[0] = (void *)(uintptr_t)rt_held();
    return NULL;
}

static void *stress_panicker(struct actor *a)
{
    struct stress *x = a->ctx;
    rt_update(x->w, allocate_then_panic, &x->wx);
    return NULL;
}

static void *stress_updater(struct actor *a)
{
    struct stress *x = a->ctx;
    wait_flag(&x->u_go, "X in its unwind");
    a->status[0] = rt_update(x->w, count_runs, &x->wx);
    return NULL;
}

/* Releases each forced window when the other thread has got where it must. */
static void *stress_conductor(struct actor *a)
{
    struct stress *x = a->ctx;
    int popped = 0, ending = 0, unwinding = 0;

    while (!(popped && ending == SENDERS && unwinding)) {
        if (!popped && ld(&x->popped->parked) &&
            ld(&x->sent) == SENDERS * PER_SENDER) {
            release(x->popped);
            popped = 1;
        }
        for (int p = 0; p < SENDERS; p++)
            if (ld(&x->ending[p]->parked) && !ld(&x->ending[p]->released) &&
                ld(&x->joining) == p && asleep(x->main_tid)) {
                release(x->ending[p]);
                ending++;
            }
        if (!unwinding && ld(&x->unwinding->parked)) {
            st(&x->u_go, 1);
            if (ld(&x->u->tid) != 0 && asleep(ld(&x->u->tid))) {
                release(x->unwinding);
                unwinding = 1;
            }
        }
        nap();
    }
    return NULL;
}

static void rearm(struct watch *w)
{
    st(&w->passed, 0);
    st(&w->parked, 0);
    st(&w->released, 0);
    __atomic_store_n(&w->who, NULL, __ATOMIC_RELAXED);
}

/* Receivers release bytes to a sender with one atomic add each; the
** sender folds them into its block with one exchange when a charge does
** not fit (settle). A release that lands while a settle runs is folded by
** that settle or the next, never lost and never folded twice: here one
** thread releases a byte at a time while main's task settles in a loop,
** and afterwards main holds exactly what it held before. No named point
** can stand inside one atomic operation, so this is a stress: on two idle
** cores the two loops overlap for the whole run. */
struct byte_releaser {
    struct rt_task *task;
    atomic_int started, done;
    int bytes;
};

static void *release_a_byte_at_a_time(void *arg)
{
    struct byte_releaser *r = arg;
    atomic_store(&r->started, 1);
    for (int i = 0; i < r->bytes; i++)
        rt__task_release(r->task, 1);
    atomic_store(&r->done, 1);
    return NULL;
}

START_TEST(releases_racing_settles_are_each_folded_once)
{
    rt_init();
    struct rt_task *t = rt__task_hot("releases_racing_settles_are_each_folded_once")->task;
    size_t before = rt_held();
    for (int round = 0; round < 40; round++) {
        struct byte_releaser r = {.task = t, .bytes = 100000};
        pthread_t th;
        ck_assert(rt__task_charge(t, (size_t)r.bytes));
        ck_assert_uint_eq(rt_held(), before + (size_t)r.bytes);
        ck_assert_int_eq(pthread_create(&th, NULL, release_a_byte_at_a_time, &r), 0);
        while (!atomic_load(&r.started))
            ;
        while (!atomic_load(&r.done))
            ck_assert(!rt__task_charge(t, SIZE_MAX / 2)); /* never fits: settles */
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert(!rt__task_charge(t, SIZE_MAX / 2)); /* the last releases */
        ck_assert_msg(rt_held() == before, "round %d: main holds %zu, %zu before", round,
                      rt_held(), before);
    }
}
END_TEST

START_TEST(every_figure_is_exact_after_racing_rounds)
{
    struct stress x;
    struct watch *popped = watch("chan.recv.before_release", NULL, 1);
    struct watch *ending[SENDERS] = {watch("task.end.before_empty", "S0", 1),
                                     watch("task.end.before_empty", "S1", 1),
                                     watch("task.end.before_empty", "S2", 1)};
    struct watch *unwinding = watch("shared.unwind.before_release", "X", 1);
    long zero = 0, total = -1, expected_total = 0;
    char *none = NULL;
    size_t round_bytes = 0;

    for (int p = 0; p < SENDERS; p++)
        for (int k = 0; k < PER_SENDER; k++)
            round_bytes += stress_size(p, k);
    init_fixed(64 * KIB);
    chunks_reset();
    memset(&x, 0, sizeof x);
    x.total = rt_shared_new(RT_COPY, sizeof(long), &zero, 4096);
    x.popped = popped;
    memcpy(x.ending, ending, sizeof ending);
    x.unwinding = unwinding;
    x.main_tid = gettid_();
    st(&yield_at_points, 1);
    for (int round = 0; round < ROUNDS; round++) {
        struct actor s[SENDERS] = {{0}}, r[RECEIVERS] = {{0}}, xa = {0}, u = {0}, cond = {0};
        static const char *sender_roles[] = {"S0", "S1", "S2"};
        static const char *receiver_roles[] = {"R0", "R1"};
        void *results[SENDERS];
        size_t fresh;
        long live_before = allocs_live(); /* ck_require, not ck_assert: no
                                          ** allocation until one fails */

        rearm(popped);
        for (int p = 0; p < SENDERS; p++)
            rearm(ending[p]);
        rearm(unwinding);
        x.c = rt_chan_new(3);
        x.w = rt_shared_new(RT_OWNED, sizeof(char *), &none, 4096);
        fresh = rt_shared_held(x.w);
        st(&x.sent, 0);
        st(&x.received, 0);
        st(&x.joining, -1);
        st(&x.u_go, 0);
        memset(&x.wx, 0, sizeof x.wx);
        x.wx.s = x.w;
        x.u = &u;
        for (int i = 0; i < RECEIVERS; i++)
            spawn(&r[i], receiver_roles[i], stress_receiver, &x);
        for (int p = 0; p < SENDERS; p++)
            spawn(&s[p], sender_roles[p], stress_sender, &x);
        spawn(&u, "U", stress_updater, &x);
        spawn(&xa, "X", stress_panicker, &x);
        start_plain(&cond, "conductor", stress_conductor, &x);

        for (int p = 0; p < SENDERS; p++) {
            st(&x.joining, p);
            ck_require(rt_join(s[p].task, &results[p]) == RT_OK);
        }
        ck_require(rt_held() == 10 + 11 + 12); /* the results, now main's */
        for (int p = 0; p < SENDERS; p++)
            rt_free(results[p]);
        ck_require(rt_held() == 0);
        rt_chan_close(x.c);
        for (int i = 0; i < RECEIVERS; i++)
            ck_require(join_task(&r[i], NULL) == RT_OK);
        ck_require(rt_join(xa.task, NULL) == RT_PANICKED);
        ck_require(join_task(&u, NULL) == RT_OK);
        join_plain(&cond);

        size_t got = 0, bytes = 0;
        for (int p = 0; p < SENDERS; p++) {
            ck_require(s[p].status[0] == RT_OK);
            ck_require(s[p].status[1] == RT_OK);
            ck_require(s[p].held[0] == 0);
            ck_require(s[p].held[1] == 64 * KIB);
            ck_require(s[p].held[2] == 1);
        }
        for (int i = 0; i < RECEIVERS; i++) {
            ck_require(r[i].held[0] == r[i].held[1]); /* held = what it keeps */
            ck_require(r[i].held[3] == 0);
            ck_require(r[i].got[0] == NULL); /* 0 once freed */
            got += r[i].held[2];
            bytes += r[i].held[1];
        }
        ck_require(got == SENDERS * PER_SENDER);
        ck_require(bytes == round_bytes);
        /* each window was forced once; every receive, task end and unwind
        ** of the round passed its point */
        ck_require(passed(popped) == SENDERS * PER_SENDER);
        for (int p = 0; p < SENDERS; p++)
            ck_require(passed(ending[p]) == 1);
        ck_require(passed(unwinding) == 1);
        ck_require(ld(&popped->released) == 1);
        for (int p = 0; p < SENDERS; p++)
            ck_require(ld(&ending[p]->released) == 1);
        ck_require(ld(&unwinding->released) == 1);
        ck_require(u.status[0] == RT_POISONED);
        ck_require(x.wx.ran == 0);
        ck_require(rt_poisoned(x.w));
        ck_require(!rt_poisoned(x.total));
        ck_require(rt_shared_held(x.w) == fresh + 112);
        expected_total += (long)round_bytes;
        ck_require(rt_get(x.total, &total) == RT_OK);
        ck_require(total == expected_total);
        ck_require(rt__blocks_live() == 3); /* main's, total's, w's */
        ck_require(rt__tasks_unjoined() == 0);
        rt_shared_free(x.w);
        rt_chan_free(x.c);
        ck_require(rt__blocks_live() == 2);
        ck_require(rt_held() == 0);
        ck_require(rt_budget() == 64 * KIB);
        ck_require(rt_chunk_kept() == 0);
        /* values live: what the round made, it freed (the first round
        ** also makes the tables that stay: the unjoined tasks', main's) */
        if (round > 0)
            ck_require(allocs_live() == live_before);
    }
    st(&yield_at_points, 0);
    struct chunk_counts cc = chunks_counted();
    ck_assert_uint_eq(cc.mallocs, SENDERS * ROUNDS); /* one chunk a sender's thread */
    ck_assert_uint_eq(cc.frees, SENDERS * ROUNDS);   /* freed when its thread ended */
    ck_assert_uint_eq(cc.frees_dirty, 0);
    rt_shared_free(x.total);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- hardware watchpoints: a thread stopped inside one statement ------- */

/* No named point can sit inside one update of a variable, or between two
** stores that must stay in order, so these windows are forced with a
** watchpoint instead: a trap on the watching thread only, right after
** each instruction of it that touches a few bytes. The handler parks the
** thread at the first one (or at the trap_park_at-th). Relaxed flags
** only, and nothing in the handlers but them, reads of the registers and
** instruction bytes the kernel hands them, and nanosleep
** (async-signal-safe). The watchpoint is the hardware's where it fires
** (perf_event_open, a synchronous SIGTRAP), else one in software. */
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

static int traps, trap_parked, trap_released;
static int trap_park_at = 1; /* the trap that parks: the first, unless a test says */

static void trap_hit(void)
{
    if (__atomic_add_fetch(&traps, 1, __ATOMIC_RELAXED) == ld(&trap_park_at)) {
        st(&trap_parked, 1);
        while (!ld(&trap_released)) {
            struct timespec ts = {0, 100 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static void park_at_first_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == TRAP_PERF)
        trap_hit();
}

static void on_trap(void (*handler)(int, siginfo_t *, void *), struct sigaction *old)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGTRAP, &sa, old), 0);
}

static void on_sigtrap_park(void)
{
    on_trap(park_at_first_trap, NULL);
}

/* A hardware watchpoint on the 4 bytes at addr for the calling thread
** (bp_type: HW_BREAKPOINT_W or _RW): its fd, or -errno. */
static long hardware_watch(const void *addr, unsigned bp_type)
{
    struct perf_event_attr pe;
    long fd;

    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_BREAKPOINT;
    pe.size = sizeof pe;
    pe.bp_type = bp_type;
    pe.bp_addr = (uintptr_t)addr;
    pe.bp_len = HW_BREAKPOINT_LEN_4;
    pe.sample_period = 1;
    pe.exclude_kernel = 1;
    pe.exclude_hv = 1;
    pe.sigtrap = 1;
    pe.remove_on_exec = 1; /* the kernel asks it of sigtrap */
    fd = syscall(SYS_perf_event_open, &pe, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Whether a hardware watchpoint opened here also fires: some machines
** open one and never trap (a virtual machine that keeps the debug
** registers to itself: so on 2 Dec 2026, where gdb's "watch" never
** stopped either). Asked once a process, on a byte of its own. */
static volatile int probe_byte;
static int probe_traps;

static void count_probe_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == TRAP_PERF)
        __atomic_add_fetch(&probe_traps, 1, __ATOMIC_RELAXED);
}

static int hardware_watchpoints_fire(void)
{
    static int known = -1;
    struct sigaction old;

    if (known >= 0)
        return known;
    on_trap(count_probe_trap, &old);
    long fd = hardware_watch((const void *)&probe_byte, HW_BREAKPOINT_W);
    probe_byte = 1;
    if (fd >= 0)
        close((int)fd);
    ck_assert_int_eq(sigaction(SIGTRAP, &old, NULL), 0);
    known = ld(&probe_traps) > 0;
    return known;
}

#if defined(__x86_64__)
/* The watchpoint in software: the watching thread runs one instruction at
** a time (x86-64's trap flag, a SIGTRAP after each), and after each the
** handler decides whether it touched the watched bytes, as the hardware
** would: it decodes the instruction's memory operand (ModRM, SIB,
** displacement, RIP-relative, %fs) against the registers it ran with,
** and the decoding must account for the instruction's exact length, which
** the next trap's address gives (an instruction that branched is not
** judged: a call or a return touches only the stack). lea, nop and the
** prefetches touch nothing; VEX and EVEX instructions are not decoded
** (they are glibc's vector string functions, which move no counter). A
** write watch also asks that the bytes changed: the counters watched are
** written only to change them. Other threads, which inherit the trap flag
** through clone, clear it at their first trap. */
#define TRAP_FLAG 0x100

static struct {
    int armed;
    const volatile unsigned char *addr;
    int writes_only;
    uintptr_t fs_base;          /* the watching thread's %fs */
    uintptr_t rip;              /* where the last trap left it: 0 at the first */
    greg_t regs[NGREG];         /* the registers it held there */
    unsigned char bytes[4];     /* the watched bytes then */
} sw;
static _Thread_local int sw_watching;

static const int greg_of[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                                REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                REG_R12, REG_R13, REG_R14, REG_R15};

struct operand {
    uintptr_t at;
    size_t size;
};

/* Skips the legacy prefixes and REX of the instruction at p (len bytes):
** the offset of its opcode; *rex, *narrow (0x66) and *fs (0x64) set. */
static size_t skip_prefixes(const unsigned char *p, size_t len, unsigned *rex, int *narrow,
                            int *fs)
{
    size_t i = 0;

    for (; i < len; i++) {
        unsigned b = p[i];
        if (b == 0x66)
            *narrow = 1;
        else if (b == 0x64)
            *fs = 1;
        else if (!(b == 0x67 || b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E ||
                   b == 0x36 || b == 0x3E || b == 0x26 || b == 0x65))
            break;
    }
    if (i < len && (p[i] & 0xF0) == 0x40)
        *rex = p[i++];
    return i;
}

/* The bytes an instruction with opcode op (0x1xx: after 0F) moves. */
static size_t operand_size(unsigned op, unsigned rex, int narrow)
{
    if (op == 0x110 || op == 0x111 || op == 0x128 || op == 0x129 || op == 0x16F ||
        op == 0x17F)
        return 16;
    return (rex & 8) ? 8 : narrow ? 2 : 4;
}

/* The memory operand of the len-byte instruction at p, run with regs and
** followed by next; 0 if it has none or its bytes do not decode to
** exactly len. */
static int memory_operand(const unsigned char *p, size_t len, const greg_t *regs,
                          uintptr_t next, struct operand *out)
{
    unsigned rex = 0;
    int narrow = 0, fs = 0;
    size_t i = skip_prefixes(p, len, &rex, &narrow, &fs);

    if (i >= len || p[i] == 0xC4 || p[i] == 0xC5 || p[i] == 0x62)
        return 0;
    unsigned op = p[i++];
    if (op == 0x0F) {
        if (i >= len)
            return 0;
        op = 0x100 | p[i++];
        if ((op == 0x138 || op == 0x13A) && i++ >= len)
            return 0;
    }
    if (op == 0x8D || op == 0x11F || op == 0x118 || op == 0x10D || i >= len)
        return 0;
    unsigned modrm = p[i++], mod = modrm >> 6, rm = modrm & 7;
    if (mod == 3)
        return 0;
    uintptr_t at = 0;
    int rip = 0, disp32 = mod == 2;
    if (rm == 4) {
        if (i >= len)
            return 0;
        unsigned sib = p[i++], base = sib & 7, index = ((sib >> 3) & 7) | ((rex & 2) << 2);
        if (index != 4)
            at += (uintptr_t)regs[greg_of[index]] << (sib >> 6);
        if (base == 5 && mod == 0)
            disp32 = 1;
        else
            at += (uintptr_t)regs[greg_of[base | ((rex & 1) << 3)]];
    } else if (rm == 5 && mod == 0) {
        rip = disp32 = 1;
    } else {
        at += (uintptr_t)regs[greg_of[rm | ((rex & 1) << 3)]];
    }
    int32_t disp = 0;
    if (mod == 1 && i < len) {
        disp = (int8_t)p[i++];
    } else if (disp32 && i + 4 <= len) {
        uint32_t d = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
                     (uint32_t)p[i + 3] << 24;
        disp = (int32_t)d;
        i += 4;
    } else if (mod == 1 || disp32) {
        return 0;
    }
    size_t imm = len - i;
    if (imm != 0 && imm != 1 && imm != 2 && imm != 4)
        return 0;
    out->at = (rip ? next : at + (fs ? sw.fs_base : 0)) + (uintptr_t)(intptr_t)disp;
    out->size = operand_size(op, rex, narrow);
    return 1;
}

/* Relaxed, as every access to what the runtime shares: no data race, and
** no happens-before edge for TSan to take from the watch. */
static unsigned char watched_byte(int i)
{
    return __atomic_load_n(&sw.addr[i], __ATOMIC_RELAXED);
}

static int watched_bytes_changed(void)
{
    for (int i = 0; i < 4; i++)
        if (watched_byte(i) != sw.bytes[i])
            return 1;
    return 0;
}

/* Whether the instruction the last trap stopped at, now run, touched the
** watched bytes (next: where it left the thread). */
static int last_instruction_touched(uintptr_t next)
{
    struct operand o;
    uintptr_t w = (uintptr_t)sw.addr;

    if (sw.rip == 0 || next <= sw.rip || next - sw.rip > 15)
        return 0;
    if (!memory_operand((const unsigned char *)sw.rip, next - sw.rip, sw.regs, next, &o))
        return 0;
    if (o.at + o.size <= w || o.at >= w + 4)
        return 0;
    return !sw.writes_only || watched_bytes_changed();
}

/* Whether the instruction about to run is a system call that blocks
** SIGTRAP (glibc blocks every signal as a thread ends): the trap after it
** would end the process, so the stepping ends there. */
static int blocks_sigtrap_next(const greg_t *g)
{
    const unsigned char *p = (const unsigned char *)g[REG_RIP];
    const unsigned long *set = (const unsigned long *)g[REG_RSI];

    return p[0] == 0x0F && p[1] == 0x05 && g[REG_RAX] == SYS_rt_sigprocmask &&
           (g[REG_RDI] == SIG_BLOCK || g[REG_RDI] == SIG_SETMASK) && set != NULL &&
           (set[0] >> (SIGTRAP - 1) & 1);
}

static void step_trap(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    greg_t *g = uc->uc_mcontext.gregs;

    (void)sig;
    if (si->si_code == TRAP_PERF) {
        trap_hit();
        return;
    }
    if (!sw_watching || !ld(&sw.armed)) {
        g[REG_EFL] &= ~(greg_t)TRAP_FLAG;
        return;
    }
    if (last_instruction_touched((uintptr_t)g[REG_RIP]))
        trap_hit();
    sw.rip = (uintptr_t)g[REG_RIP];
    for (int i = 0; i < NGREG; i++)
        sw.regs[i] = g[i];
    for (int i = 0; i < 4; i++)
        sw.bytes[i] = watched_byte(i);
    if (blocks_sigtrap_next(g))
        g[REG_EFL] &= ~(greg_t)TRAP_FLAG;
}

/* around_thread_create (testutil.h): no stepping over a pthread_create of
** the watching thread, which the new thread would inherit. */
static void step_around_thread_create(int before)
{
    if (!sw_watching || !ld(&sw.armed))
        return;
    if (before)
        __asm__ volatile("pushfq; andq $~0x100, (%%rsp); popfq" ::: "memory", "cc");
    else
        __asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");
}
/* Watches the 4 bytes at addr from this thread on, in software: an fd to
** give unwatch, or -errno. */
static long software_watch(const void *addr, unsigned bp_type)
{
    long fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    sw.addr = addr;
    sw.writes_only = bp_type == HW_BREAKPOINT_W;
    sw.rip = 0;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(sw.fs_base));
    sw_watching = 1;
    st(&sw.armed, 1);
    on_trap(step_trap, NULL);
    around_thread_create = step_around_thread_create;
    __asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");
    return fd;
}

static void software_unwatch(void)
{
    st(&sw.armed, 0); /* the watching thread's next trap clears its flag */
}

#else
static long software_watch(const void *addr, unsigned bp_type)
{
    (void)addr;
    (void)bp_type;
    return -ENOTSUP; /* the hardware's never fires, and no software one here */
}

static void software_unwatch(void)
{
}
#endif

/* A watchpoint on the 4 bytes at addr for the calling thread (bp_type:
** HW_BREAKPOINT_W or _RW): an fd for unwatch, or -errno. If it fails,
** trap_parked is set, so the test does not wait for a stop that cannot
** come. */
static long watch_bytes(const void *addr, unsigned bp_type)
{
    long fd = hardware_watchpoints_fire() ? hardware_watch(addr, bp_type)
                                          : software_watch(addr, bp_type);

    if (fd < 0)
        st(&trap_parked, 1); /* nothing to wait for */
    return fd;
}

/* Ends a watch_bytes watch (from any thread). */
static void unwatch(long fd)
{
    if (!hardware_watchpoints_fire())
        software_unwatch();
    close((int)fd);
}

#define REQUIRE_WATCHPOINT(err)                                                \
    ck_assert_msg((err) == 0, "no watchpoint (%s): "                           \
                  "this test cannot stop a thread inside one statement",       \
                  strerror((int)(err)))

/* What every test below rests on: a watchpoint traps once after each
** access of the watching thread to its 4 bytes (a read only if it
** watches reads, a read-modify-write once), never for the bytes beside
** them, and not after it is ended; whichever kind this machine gives. */
static int watched_words[4];

static int traps_for(unsigned bp_type)
{
    int *w = watched_words;

    __atomic_store_n(&traps, 0, __ATOMIC_RELAXED);
    long fd = watch_bytes(&w[1], bp_type);
    if (fd < 0)
        return (int)fd;
    __atomic_store_n(&w[0], 1, __ATOMIC_RELAXED);                   /* beside: none */
    __atomic_store_n(&w[2], __atomic_load_n(&w[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    (void)__atomic_load_n(&w[1], __ATOMIC_RELAXED);                 /* a read */
    __atomic_store_n(&w[1], 5, __ATOMIC_RELAXED);                   /* a write */
    __atomic_fetch_add(&w[1], 1, __ATOMIC_SEQ_CST);                 /* one update */
    unwatch(fd);
    __atomic_store_n(&w[1], 7, __ATOMIC_RELAXED);                   /* ended: none */
    return __atomic_load_n(&traps, __ATOMIC_RELAXED);
}

START_TEST(a_watchpoint_traps_after_each_access_to_its_bytes_and_no_other)
{
    on_sigtrap_park();
    st(&trap_park_at, -1); /* count, never park */
    int rw = traps_for(HW_BREAKPOINT_RW);
    REQUIRE_WATCHPOINT(rw < 0 ? -rw : 0);
    int w = traps_for(HW_BREAKPOINT_W);
    ck_assert_int_eq(rw, 3);
    ck_assert_int_eq(w, 2);
    ck_assert_int_eq(watched_words[1], 7);
}
END_TEST

/* An actor's watchpoint on addr: its fd, or -1 with held[0] the errno
** (for REQUIRE_WATCHPOINT). */
static long actor_watch(struct actor *a, const void *addr, unsigned bp_type)
{
    long fd = watch_bytes(addr, bp_type);

    if (fd < 0)
        a->held[0] = (size_t)-fd;
    return fd;
}

/* ---- hot.c: the store that opens the direct path ------------------------ */

/* Does the first publish with a watchpoint on the hot state's writes:
** held[0] the errno of perf_event_open if it failed (0 if not). */
static void *watched_first_publish_body(struct actor *a)
{
    long fd = actor_watch(a, rt__hot_state_at(), HW_BREAKPOINT_W);

    if (fd < 0)
        return NULL;
    a->got[0] = rt_hot();
    unwatch(fd);
    return NULL;
}

/* Starts A's first publish of the process and stops it right after its
** first write of the state, inside the first publish (it holds hot_lock):
** the window between the store of the state and the store of the offset
** the fast path reads. */
static void stop_the_first_publish_in_its_window(struct actor *a)
{
    rt_init();
    on_sigtrap_park();
    start_plain(a, "A", watched_first_publish_body, NULL);
    wait_flag(&trap_parked, "A stopped at its write of the hot state");
    REQUIRE_WATCHPOINT(a->held[0]);
    ck_assert_int_eq(ld(&traps), 1);
}

/* Runs C's body in that window, which must finish without going for the
** latch (latched: the failure's message); then lets A go on and joins
** both. The state was written once: no latch. */
static void go_through_the_window(struct actor *a, struct actor *c,
                                  void *(*body)(struct actor *), const char *latched)
{
    struct watch *latching = watch("hot.disable.before_lock", "C", 0);

    start_plain(c, "C", body, NULL);
    WAIT_FOR(ld(&c->done) || passed(latching) > 0,
             "C neither finished nor went for the latch");
    ck_assert_msg(passed(latching) == 0, "%s", latched);
    st(&trap_released, 1);
    join_plain(c);
    join_plain(a);
    ck_assert_int_eq(ld(&traps), 1);
}

/* The first publish opens the direct path only with the slot it found
** already in place: a thread that publishes the moment the path opens
** reads that slot, agrees, and the path stays open. A is stopped right
** after its first write of the state, inside the first publish (it holds
** hot_lock); C then makes its state and publishes it, and must finish
** without touching the latch. Were the state stored before the slot, C
** would read the slot still 0, disagree and latch the path for good
** (waiting for hot_lock until A goes on). Not in a TSan build (UNDER_TSAN:
** A would stop holding TSan's own lock on the state, which C's first load
** of it waits for); there a_later_publish_reads_the_slot_the_first_one_
** published judges the order. */
START_TEST(a_publish_the_moment_the_direct_path_opens_reads_its_slot)
{
    struct actor a = {0}, c = {0};

    stop_the_first_publish_in_its_window(&a);
    ck_assert_int_eq(__atomic_load_n(rt__hot_state_at(), __ATOMIC_RELAXED) != 0, 1);
    go_through_the_window(&a, &c, publish_body, "a publish the moment the direct path "
                          "opened found it disagreeing and went to latch it");
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_ptr_nonnull(c.got[0]);
    ck_assert_ptr_eq(c.got[1], c.got[0]);
    ck_assert_ptr_ne(c.got[0], a.got[0]);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
}
END_TEST

/* Publishes, then uses the runtime again at once: rt_hot three more
** times, and a region opened, filled and closed (its chunk taken from and
** given back to this thread's cache). got[0], got[2] and got[3] three
** of the states it was handed, got[1] what the key holds (as in
** publish_body); held[1] the last byte the region handed out. */
static void *publish_and_go_on_body(struct actor *a)
{
    static rt_region r;
    a->got[0] = rt_hot();
    a->got[2] = rt_hot();
    rt_region_open(&r);
    unsigned char *p = rt_region_alloc(&r, 100, 1, 0x5a);
    a->held[1] = p[99];
    rt_region_close(&r);
    a->got[3] = rt_hot();
    a->got[1] = pthread_getspecific((pthread_key_t)(rt__key_plus_one - 1));
    return NULL;
}

/* The same window, as a thread that goes on using the runtime: while the
** first publish (A) is stopped between its store of the state and its
** store of the offset the fast path reads, the direct path is open
** (rt_hot_direct) but every thread's one load still reads the NULL word,
** so a thread that has published its state (C) finds it again through the
** fallback, call after call. That is the design working, not a doubt: C
** gets its own state each time, never goes for the latch, and the path is
** open once A goes on. A cold path that took "a published state found
** through the fallback while the path is open" for a mismatch would latch
** it for every thread (and wait for hot_lock, which A holds). Not in a
** TSan build (UNDER_TSAN), as above. */
START_TEST(a_published_thread_in_the_opening_window_reads_its_state_through_the_fallback)
{
    struct actor a = {0}, c = {0};

    stop_the_first_publish_in_its_window(&a);
    ck_assert_msg(rt_hot_direct() == RT_PRIM_DIRECT, "the path is not open at A's stop");
    go_through_the_window(&a, &c, publish_and_go_on_body, "a thread that found its published "
                          "state through the fallback while the path was opening went to "
                          "latch it");
    ck_assert_ptr_nonnull(c.got[0]);
    ck_assert_ptr_eq(c.got[1], c.got[0]);
    ck_assert_ptr_eq(c.got[2], c.got[0]);
    ck_assert_ptr_eq(c.got[3], c.got[0]);
    ck_assert_ptr_ne(c.got[0], a.got[0]);
    ck_assert_uint_eq(c.held[1], 0x5a);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
}
END_TEST

/* ---- shared.c: the order values are made in ----------------------------- */

/* Makes a value with a watchpoint on the count values take their numbers
** from: got[0] the value, held[0] the errno of perf_event_open if it
** failed (0 if not). */
static void *watched_shared_new_body(struct actor *a)
{
    long seven = 7;
    long fd = actor_watch(a, rt__shared_next_seq, HW_BREAKPOINT_RW);

    if (fd < 0)
        return NULL;
    a->got[0] = rt_shared_new(RT_COPY, sizeof(long), &seven, 4096);
    unwatch(fd);
    return NULL;
}

/* Doors nest in the order values were made, so no two values share a
** place in that order, also when two threads make values at once: each
** value takes its number in one step. A is stopped at its first access to
** the count, inside rt_shared_new; main makes a value meanwhile; A goes
** on. A's value was made first, and the two numbers differ. Were the
** count read and written back in two steps, both values would take the
** number A read. Not in a TSan build (UNDER_TSAN: TSan's own lock on the
** count would be held by the stopped thread). */
START_TEST(two_values_made_at_once_take_two_places_in_the_order)
{
    struct actor a = {0};
    long eight = 8;

    init_fixed(64 * KIB);
    on_sigtrap_park();
    spawn(&a, "A", watched_shared_new_body, NULL);
    wait_flag(&trap_parked, "A stopped at the count of values made");
    REQUIRE_WATCHPOINT(a.held[0]);
    rt_shared *m = rt_shared_new(RT_COPY, sizeof(long), &eight, 4096);
    st(&trap_released, 1);
    ck_assert_int_eq(join_task(&a, NULL), RT_OK);
    ck_assert_int_ge(ld(&traps), 1);
    ck_assert_ptr_nonnull(a.got[0]);
    ck_assert_uint_lt(rt__shared_seq(a.got[0]), rt__shared_seq(m));
    rt_shared_free(a.got[0]);
    rt_shared_free(m);
}
END_TEST

/* ---- task.c: the count of tasks running, the task ids ------------------ */

/* A strategy that records the count of tasks running it is told, in call
** order, and gives every task 8 KiB. */
static size_t told[16];
static int ntold;

static size_t recording_bytes(void *ctx, size_t running)
{
    (void)ctx;
    int i = __atomic_fetch_add(&ntold, 1, __ATOMIC_RELAXED);
    if (i < 16)
        __atomic_store_n(&told[i], running, __ATOMIC_RELAXED);
    return 8 * KIB;
}

static size_t told_at(int i)
{
    ck_assert_int_lt(i, ld(&ntold));
    return __atomic_load_n(&told[i], __ATOMIC_RELAXED);
}

static int tasks_go; /* the tasks below wait for it, so they stay running */

static void *wait_for_go(void *arg)
{
    (void)arg;
    wait_flag(&tasks_go, "go");
    return NULL;
}

/* Spawns a task of wait_for_go with a watchpoint on a->ctx (reads and
** writes): got[0] the task (NULL if the spawn failed) and held[1] the
** errno it left, held[0] the errno if perf_event_open failed. */
static void *watched_spawn_body(struct actor *a)
{
    long fd = actor_watch(a, a->ctx, HW_BREAKPOINT_RW);

    if (fd < 0)
        return NULL;
    errno = 0;
    a->got[0] = rt_spawn(wait_for_go, NULL);
    a->held[1] = (size_t)errno;
    unwatch(fd);
    return NULL;
}

/* A strategy is told how many tasks run, the new one included: every task
** counted once, also when two spawns count at once. A is stopped at its
** first access to the count, inside its rt_spawn; main spawns B meanwhile;
** A goes on; a third spawn C is told 4 (main, A's, B and C), and A's and
** B's were told 2 and 3. Were the count read and written back in two steps,
** A would write back what B's spawn made of it, and C would be told 3. Not
** in a TSan build (UNDER_TSAN: its lock on the count). */
START_TEST(two_spawns_at_once_are_each_counted_among_the_tasks_running)
{
    struct actor a = {0};

    rt_set_strategy((rt_strategy){recording_bytes, NULL});
    rt_init();
    ck_assert_uint_eq(told_at(0), 1); /* main's own block */
    on_sigtrap_park();
    start_plain(&a, "A", watched_spawn_body, (void *)rt__tasks_running_at);
    wait_flag(&trap_parked, "A stopped at the count of tasks running");
    REQUIRE_WATCHPOINT(a.held[0]);
    rt_task *b = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(b);
    st(&trap_released, 1);
    join_plain(&a);
    ck_assert_ptr_nonnull(a.got[0]);
    rt_task *c = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(ld(&ntold), 4);
    ck_assert_uint_eq(told_at(1) + told_at(2), 2 + 3);
    ck_assert_uint_ne(told_at(1), told_at(2));
    ck_assert_uint_eq(told_at(3), 4);
    st(&tasks_go, 1);
    ck_assert_int_eq(rt_join(a.got[0], NULL), RT_OK);
    ck_assert_int_eq(rt_join(b, NULL), RT_OK);
    ck_assert_int_eq(rt_join(c, NULL), RT_OK);
    /* the ends counted too: main and the next one */
    rt_task *d = rt_spawn(wait_for_go, NULL);
    ck_assert_int_eq(rt_join(d, NULL), RT_OK);
    ck_assert_uint_eq(told_at(4), 2);
}
END_TEST

/* Ends with a watchpoint on the count of tasks running, which its end
** lowers: held[0] the errno if perf_event_open failed, held[1] the fd. */
static void *end_watched(void *arg)
{
    struct actor *e = arg;
    long fd = actor_watch(e, rt__tasks_running_at, HW_BREAKPOINT_RW);

    if (fd >= 0)
        e->held[1] = (size_t)fd; /* closed by main, after the join */
    return NULL;
}

/* A task's end takes it out of the count in one step too: E is stopped at
** its end's access to the count; main spawns B meanwhile, told 2 (main and
** B: E is out); E goes on; C is told 3 (main, B, C). Were the count read
** and written back in two steps, E would write back what it read before
** B's spawn, and C would be told 2. Not in a TSan build. */
START_TEST(a_task_ending_while_another_is_spawned_leaves_the_count_exact)
{
    struct actor e = {0};

    rt_set_strategy((rt_strategy){recording_bytes, NULL});
    rt_init();
    on_sigtrap_park();
    rt_task *t = rt_spawn(end_watched, &e);
    ck_assert_ptr_nonnull(t);
    wait_flag(&trap_parked, "E stopped at its end's step of the count");
    REQUIRE_WATCHPOINT(e.held[0]);
    rt_task *b = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(b);
    st(&trap_released, 1);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    unwatch((long)e.held[1]);
    rt_task *c = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(ld(&ntold), 4); /* main, E, B, C */
    ck_assert_uint_eq(told_at(1), 2);
    ck_assert_uint_eq(told_at(2), 2);
    ck_assert_uint_eq(told_at(3), 3);
    st(&tasks_go, 1);
    ck_assert_int_eq(rt_join(b, NULL), RT_OK);
    ck_assert_int_eq(rt_join(c, NULL), RT_OK);
}
END_TEST

/* A spawn whose block cannot be made takes its task out of the count
** again, in one step too. A's strategy call asks for more than a block
** can be (the strategy's one-shot flag), so its spawn fails; A is stopped
** at its second access to the count, the step back; main spawns B
** meanwhile, told 2 (main and B); A goes on and gets ENOMEM; C is told 3.
** Were the step back a read and a write, A would write back what it read
** before B's spawn, and C would be told 2. Not in a TSan build. */
static int refuse_next;

static size_t refusing_bytes(void *ctx, size_t running)
{
    if (__atomic_exchange_n(&refuse_next, 0, __ATOMIC_RELAXED))
        return (size_t)1 << 40; /* past the largest block: rt_spawn fails */
    return recording_bytes(ctx, running);
}

START_TEST(a_spawn_that_fails_while_another_is_spawned_leaves_the_count_exact)
{
    struct actor a = {0};

    rt_set_strategy((rt_strategy){refusing_bytes, NULL});
    rt_init();
    on_sigtrap_park();
    st(&trap_park_at, 2);
    st(&refuse_next, 1);
    start_plain(&a, "A", watched_spawn_body, (void *)rt__tasks_running_at);
    wait_flag(&trap_parked, "A stopped at its step back of the count");
    REQUIRE_WATCHPOINT(a.held[0]);
    rt_task *b = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(b);
    st(&trap_released, 1);
    join_plain(&a);
    ck_assert_ptr_null(a.got[0]);
    ck_assert_uint_eq(a.held[1], ENOMEM);
    rt_task *c = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(ld(&ntold), 3); /* main, B, C: A's call was refused */
    ck_assert_uint_eq(told_at(1), 2);
    ck_assert_uint_eq(told_at(2), 3);
    st(&tasks_go, 1);
    ck_assert_int_eq(rt_join(b, NULL), RT_OK);
    ck_assert_int_eq(rt_join(c, NULL), RT_OK);
}
END_TEST

/* A task's references: its joiner's, and one for each value of its in
** flight. A send takes one in one step, also while a receiver drops
** another: S sends v1 on c1, then sends v2 on c2 with a watchpoint on its
** references, and is stopped at its step; main receives v1 meanwhile,
** which drops v1's; S goes on. S then has exactly 2 (its joiner's, v2's).
** Were the step a read and a write, S would write back what it read
** before main's drop, and hold 3: the task would never be freed. */
struct refs_ctx {
    rt_chan *c1, *c2;
    rt_task *self;
    int published, sent, err;
};

static void *sends_watching_its_refs(void *arg)
{
    struct refs_ctx *x = arg;

    wait_flag(&x->published, "main's pointer to this task");
    ck_assert_int_eq(rt_send(x->c1, rt_alloc_outside(16)), RT_OK);
    long fd = watch_bytes(&x->self->refs, HW_BREAKPOINT_RW);
    if (fd < 0) {
        st(&x->err, (int)-fd);
        return NULL;
    }
    ck_assert_int_eq(rt_send(x->c2, rt_alloc_outside(16)), RT_OK);
    unwatch(fd);
    st(&x->sent, 1);
    wait_flag(&tasks_go, "go");
    return NULL;
}

START_TEST(a_send_while_a_receiver_drops_a_reference_counts_both)
{
    struct refs_ctx x = {0};

    init_fixed(64 * KIB);
    on_sigtrap_park();
    x.c1 = rt_chan_new(4);
    x.c2 = rt_chan_new(4);
    rt_task *s = rt_spawn(sends_watching_its_refs, &x);
    ck_assert_ptr_nonnull(s);
    x.self = s;
    st(&x.published, 1);
    wait_flag(&trap_parked, "S stopped at its step of its references");
    REQUIRE_WATCHPOINT(ld(&x.err));
    void *v1 = rt_recv(x.c1);
    ck_assert_ptr_nonnull(v1);
    st(&trap_released, 1);
    wait_flag(&x.sent, "S's second send");
    ck_assert_uint_eq(atomic_load(&s->refs), 2);
    rt_free(v1);
    st(&tasks_go, 1);
    ck_assert_int_eq(rt_join(s, NULL), RT_OK);
    rt_free(rt_recv(x.c2)); /* the last reference: the task is freed */
    rt_chan_free(x.c1);
    rt_chan_free(x.c2);
}
END_TEST

/* Every task has an id of its own (the panic message names it), also when
** two are spawned at once: A is stopped at its first access to the next
** id, main spawns B meanwhile, and the two ids differ. Not in a TSan
** build. */
START_TEST(two_tasks_spawned_at_once_get_two_ids)
{
    struct actor a = {0};

    init_fixed(8 * KIB);
    on_sigtrap_park();
    start_plain(&a, "A", watched_spawn_body, (void *)rt__next_id_at);
    wait_flag(&trap_parked, "A stopped at the next task id");
    REQUIRE_WATCHPOINT(a.held[0]);
    rt_task *b = rt_spawn(wait_for_go, NULL);
    ck_assert_ptr_nonnull(b);
    st(&trap_released, 1);
    join_plain(&a);
    rt_task *ta = a.got[0];
    ck_assert_ptr_nonnull(ta);
    ck_assert_uint_eq(ta->id, 1); /* A took its id first */
    ck_assert_uint_eq(b->id, 2);
    st(&tasks_go, 1);
    ck_assert_int_eq(rt_join(ta, NULL), RT_OK);
    ck_assert_int_eq(rt_join(b, NULL), RT_OK);
}
END_TEST

/* ---- block.c: the cookie's count of blocks made ------------------------ */

/* Makes a block with a watchpoint on the count of blocks made: got[0] the
** block, held[0] the errno of perf_event_open if it failed (0 if not). */
static void *watched_new_body(struct actor *a)
{
    long fd = actor_watch(a, rt__block_made, HW_BREAKPOINT_RW);

    if (fd < 0)
        return NULL;
    a->got[0] = rt__block_new(4 * KIB);
    unwatch(fd);
    return NULL;
}

/* The cookie is different for every block so that a stale pointer into a
** deleted block is refused by the next block made at its address: the
** count of blocks made moves once for each, even when two threads make
** blocks at once. A is stopped at its first access to the count, inside
** rt__block_new; meanwhile main makes two blocks and deletes the second,
** keeping a pointer into it; A goes on; the block main makes next, at the
** deleted one's address, refuses that pointer. Were the count read and
** written back in two steps, A would write back the value main's first
** block took, and main's next block would take the deleted one's cookie. */
START_TEST(a_stale_pointer_is_refused_by_the_next_block_while_another_thread_makes_one)
{
    struct actor a = {0};
    struct rt_block *y1, *y2, *y3;
    uintptr_t was, stale;

    on_sigtrap_park();
    start_plain(&a, "A", watched_new_body, NULL);
    wait_flag(&trap_parked, "A stopped at the count of blocks made");
    REQUIRE_WATCHPOINT(a.held[0]);
    y1 = rt__block_new(4 * KIB);
    y2 = rt__block_new(4 * KIB);
    was = (uintptr_t)y2;
    rt__block_alloc(y2, 100);
    stale = (uintptr_t)rt__block_alloc(y2, 100);
    rt__block_delete(y2);
    st(&trap_released, 1);
    join_plain(&a);
    ck_assert_int_ge(ld(&traps), 1); /* A was stopped inside the update */
    ck_assert_ptr_nonnull(a.got[0]);
    y3 = rt__block_new(4 * KIB);
    if (!UNDER_SANITIZER)
        ck_assert_uint_eq((uintptr_t)y3, was); /* glibc: the same bytes */
    unsigned char *big = rt__block_alloc(y3, 1000); /* over the old headers, untouched */
    ck_assert(!rt__block_free(y3, (void *)stale));
    ck_assert_uint_eq(rt__block_chunk(y3, (void *)stale), 0);
    ck_assert(rt__block_free(y3, big));
    rt__block_delete(y3);
    rt__block_delete(y1);
    rt__block_delete(a.got[0]);
}
END_TEST

/* points.h lets a test install or change the hook while threads run (any
** thread may call it, several at once): the hook's word is read as an
** atomic, so a change while another thread passes points is no data race
** (ThreadSanitizer judges it) and the new hook is the one called. A task
** updates a value in a loop (every door's unlock passes a point); main
** installs a counting hook meanwhile, waits until that hook has seen ten
** passages on the task, and takes it away again, ten times. */
static int counted_passages, stop_updating, updates_done;

static void counts_passages(const char *name)
{
    (void)name;
    __atomic_add_fetch(&counted_passages, 1, __ATOMIC_RELAXED);
}

static void add_one_long(void *value, void *ctx)
{
    (void)ctx;
    ++*(long *)value;
}

static void *updates_until_told(void *s)
{
    while (!ld(&stop_updating)) {
        if (rt_update(s, add_one_long, NULL) != RT_OK)
            abort();
        __atomic_add_fetch(&updates_done, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

START_TEST(the_hook_may_change_while_threads_pass_points)
{
    long zero = 0, total = 0;
    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_new(RT_COPY, sizeof zero, &zero, 4096);
    rt_task *t = rt_spawn(updates_until_told, s);
    ck_assert_ptr_nonnull(t);
    WAIT_FOR(ld(&updates_done) > 0, "the task never updated");
    for (int round = 0; round < 10; round++) {
        int before = ld(&counted_passages);
        __atomic_store_n(&rt__point_hook, counts_passages, __ATOMIC_RELAXED);
        WAIT_FOR(ld(&counted_passages) >= before + 10, "round %d: the new hook was not called",
                 round);
        __atomic_store_n(&rt__point_hook, NULL, __ATOMIC_RELAXED);
    }
    st(&stop_updating, 1);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_int_eq(rt_get(s, &total), RT_OK);
    ck_assert_int_eq(total, ld(&updates_done));
    rt_shared_free(s);
}
END_TEST

/* The cost counters are atomics whatever the threads: a reset on main while
** a task counts is no data race (ThreadSanitizer judges it), and once the
** task has ended a reset leaves every counter at 0 and the next work is
** counted exactly. */
static void *allocates_until_told(void *unused)
{
    (void)unused;
    while (!ld(&stop_updating)) {
        rt_free(rt_alloc(48));
        __atomic_add_fetch(&updates_done, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

START_TEST(a_cost_reset_while_another_thread_counts_is_no_race)
{
    init_fixed(64 * KIB);
    rt_task *t = rt_spawn(allocates_until_told, NULL);
    ck_assert_ptr_nonnull(t);
    for (int round = 0; round < 200; round++) {
        int before = ld(&updates_done);
        rt__costs_reset();
        WAIT_FOR(ld(&updates_done) > before, "round %d: the task stopped counting", round);
    }
    st(&stop_updating, 1);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    rt__costs_reset();
    for (int k = 0; k < RT_COSTS; k++)
        ck_assert_msg(rt__cost((enum rt_cost)k) == 0, "counter %d is %lu after a reset", k,
                      rt__cost((enum rt_cost)k));
    for (int i = 0; i < 5; i++)
        rt_free(rt_alloc(48));
    ck_assert_uint_eq(rt__cost(RT_COST_BLOCK_ALLOCS), 5);
}
END_TEST

/* Every point a thread reaches calls the hook (points.h), also the points
** of a runtime call the hook itself makes: a hook that, at a channel's
** close, disables the direct path and, at the disable's first point, frees
** a shared value sees the points of the disable, of the door and of the
** latch, nested in order. */
#define NESTED_MAX 64
static const char *nested_seen[NESTED_MAX];
static int nested_count;
static rt_shared *freed_from_a_hook;

static void nothing_to_do(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void records_nested_points(const char *name)
{
    if (nested_count < NESTED_MAX)
        nested_seen[nested_count++] = name;
    if (strcmp(name, "chan.close.before_lock") == 0)
        rt_hot_disable();
    else if (strcmp(name, "hot.disable.before_lock") == 0 && freed_from_a_hook != NULL) {
        rt_shared *s = freed_from_a_hook;
        freed_from_a_hook = NULL;
        ck_assert_int_eq(rt_update(s, nothing_to_do, NULL), RT_OK);
        rt_shared_free(s);
    }
}

START_TEST(a_hook_is_called_for_the_points_of_the_calls_it_makes)
{
    int64_t zero = 0;
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(1);
    freed_from_a_hook = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    ck_assert_ptr_nonnull(rt_hot()); /* main's first publish before the hook */
    __atomic_store_n(&rt__point_hook, records_nested_points, __ATOMIC_RELAXED);
    rt_chan_close(c);
    __atomic_store_n(&rt__point_hook, NULL, __ATOMIC_RELAXED);
    rt_chan_free(c);
    static const char *const want[] = {"chan.close.before_lock", "hot.disable.before_lock"};
    ck_assert_int_ge(nested_count, 4);
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(nested_seen[i], want[i]);
    int at_locked = -1, at_latch = -1;
    for (int i = 2; i < nested_count; i++) {
        if (at_locked < 0 && strcmp(nested_seen[i], "hot.disable.locked") == 0)
            at_locked = i;
        if (at_locked >= 0 && at_latch < 0 && strcmp(nested_seen[i], "hot.latch.before_stores") == 0)
            at_latch = i;
    }
    ck_assert_msg(at_locked > 2, "the disable's own point was not seen after the door's");
    ck_assert_msg(at_latch > at_locked, "the latch's point did not follow the disable's");
    ck_assert(!rt_hot_direct());
}
END_TEST

/* The first publish, parked with its lock taken (hot.first_publish.locked),
** has found nothing yet: the direct path is not open there, for the
** publishing thread or any other. It opens once the publish goes on (where
** a direct path is known). */
static int direct_seen_at_first_publish = -1;

static void records_the_path_at_the_first_publish(const char *name)
{
    if (strcmp(name, "hot.first_publish.locked") == 0 &&
        __atomic_load_n(&direct_seen_at_first_publish, __ATOMIC_RELAXED) == -1)
        __atomic_store_n(&direct_seen_at_first_publish, rt_hot_direct(), __ATOMIC_RELAXED);
}

START_TEST(the_first_publish_has_opened_nothing_where_it_takes_its_lock)
{
    __atomic_store_n(&rt__point_hook, records_the_path_at_the_first_publish, __ATOMIC_RELAXED);
    init_fixed(64 * KIB);
    ck_assert_ptr_nonnull(rt_hot()); /* the process's first publish */
    __atomic_store_n(&rt__point_hook, NULL, __ATOMIC_RELAXED);
    ck_assert_int_eq(ld(&direct_seen_at_first_publish), 0);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
}
END_TEST

/* Only the process's first publish takes the first publish's lock: a
** later thread's first call publishes on its own (docs/hot-path.md), so it
** never waits behind a latch parked with that lock, and the point inside it
** is passed once in the process, whichever threads come after. */
static int first_publish_passages;

static void counts_first_publishes(const char *name)
{
    if (strcmp(name, "hot.first_publish.locked") == 0)
        __atomic_add_fetch(&first_publish_passages, 1, __ATOMIC_RELAXED);
}

static void *first_call_of_a_later_thread(void *unused)
{
    (void)unused;
    return rt_hot();
}

START_TEST(only_the_first_publish_takes_the_first_publishs_lock)
{
    __atomic_store_n(&rt__point_hook, counts_first_publishes, __ATOMIC_RELAXED);
    init_fixed(64 * KIB);
    ck_assert_ptr_nonnull(rt_hot());
    for (int i = 0; i < 8; i++) {
        pthread_t t;
        void *theirs = NULL;
        ck_assert_int_eq(pthread_create(&t, NULL, first_call_of_a_later_thread, NULL), 0);
        ck_assert_int_eq(pthread_join(t, &theirs), 0);
        ck_assert_ptr_nonnull(theirs);
    }
    __atomic_store_n(&rt__point_hook, NULL, __ATOMIC_RELAXED);
    ck_assert_int_eq(ld(&first_publish_passages), 1);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("interleave");
    add_case(s, the_hook_may_change_while_threads_pass_points);
    add_case(s, a_cost_reset_while_another_thread_counts_is_no_race);
    add_case(s, the_first_publish_has_opened_nothing_where_it_takes_its_lock);
    add_case(s, only_the_first_publish_takes_the_first_publishs_lock);
    add_case(s, a_latch_during_the_first_publish_waits_and_wins);
    add_case(s, a_latch_right_after_the_first_publish_closes_the_path_for_good);
    add_case(s, a_first_publish_during_a_latch_waits_and_opens_nothing);
    add_case(s, a_first_publish_during_the_latchs_stores_waits_and_opens_nothing);
    add_case(s, a_disable_parked_with_its_lock_taken_has_latched_nothing_yet);
    add_case(s, a_second_first_publish_waits_for_the_first);
    add_case(s, a_publish_that_waited_for_the_first_checks_its_own_slot);
    add_case(s, a_first_publish_that_fails_its_check_latches_before_another_can_publish);
    add_case(s, a_hook_is_called_for_the_points_of_the_calls_it_makes);
    add_case(s, a_later_publish_reads_the_slot_the_first_one_published);
    add_case(s, the_first_publish_holds_its_lock_through_its_check_of_the_slot);
    add_case(s, a_watchpoint_traps_after_each_access_to_its_bytes_and_no_other);
    if (!UNDER_TSAN)
        add_case(s, a_publish_the_moment_the_direct_path_opens_reads_its_slot);
    if (!UNDER_TSAN)
        add_case(s, a_published_thread_in_the_opening_window_reads_its_state_through_the_fallback);
    add_case(s, a_close_while_a_receiver_is_about_to_sleep_wakes_it);
    add_case(s, a_receive_after_a_close_on_another_thread_reads_under_the_lock);
    add_case(s, a_send_after_a_close_on_another_thread_reads_under_the_lock);
    add_case(s, two_senders_never_share_a_slot);
    add_case(s, a_send_while_a_receiver_is_about_to_sleep_wakes_it);
    add_case(s, a_receiver_woken_for_nothing_waits_again);
    add_case(s, a_wait_whose_deadline_crosses_a_second_still_waits);
    add_case(s, a_spurious_wait_ends_at_most_100_us_after_its_clock_read);
    add_case(s, a_sender_woken_with_no_room_waits_again);
    add_case(s, a_sender_waiting_on_a_full_channel_gets_closed_and_keeps_its_value);
    add_case(s, a_receiver_that_panics_leaves_the_value_to_the_next);
    add_case(s, the_receiver_drops_the_last_reference_after_the_join);
    add_case(s, the_joiner_drops_the_last_reference_after_the_receive);
    add_case(s, a_join_waits_for_the_task_to_end_and_gets_its_result);
    add_case(s, a_join_waits_for_a_panicked_task_to_end);
    add_case(s, a_sent_value_counts_against_the_sender_until_released);
    add_case(s, releases_racing_settles_are_each_folded_once);
    add_case(s, a_strategy_set_during_a_spawn_waits_for_it);
    add_case(s, a_spawn_during_a_strategy_set_waits_for_it);
    add_case(s, the_strategy_is_read_and_set_before_its_lock_goes);
    add_case(s, the_table_of_unjoined_tasks_is_changed_by_one_thread_at_a_time);
    add_case(s, the_table_of_unjoined_tasks_is_put_and_counted_before_its_lock_goes);
    add_case(s, a_join_takes_its_task_out_of_the_table_before_its_lock_goes);
    add_case(s, doors_on_two_values_lock_them_in_one_order);
    add_case(s, a_panic_in_a_door_poisons_before_the_next_door_gets_in);
    add_case(s, a_door_frees_its_copy_before_another_door_can_open_on_the_value);
    add_case(s, a_read_of_a_shared_value_is_over_before_its_lock_goes);
    add_case(s, a_read_is_over_when_its_lock_goes_even_if_the_value_changes_at_once);
    add_case(s, a_held_figure_waits_for_any_door_open_on_its_value);
    add_case(s, a_latch_after_another_threads_later_publish_races_with_nothing_it_read);
    add_case(s, the_spurious_switch_may_change_while_a_receiver_is_about_to_wait);
    add_case(s, a_channel_freed_after_its_sender_ended_races_with_nothing);
    add_case(s, a_held_figure_read_during_a_rebuild_is_the_rebuilt_blocks);
    if (!UNDER_TSAN)
        add_case(s, two_values_made_at_once_take_two_places_in_the_order);
    if (!UNDER_TSAN) {
        add_case(s, two_spawns_at_once_are_each_counted_among_the_tasks_running);
        add_case(s, a_task_ending_while_another_is_spawned_leaves_the_count_exact);
        add_case(s, two_tasks_spawned_at_once_get_two_ids);
        add_case(s, a_spawn_that_fails_while_another_is_spawned_leaves_the_count_exact);
        add_case(s, a_send_while_a_receiver_drops_a_reference_counts_both);
    }
    add_case(s, every_figure_is_exact_after_racing_rounds);
    add_case(s, a_stale_pointer_is_refused_by_the_next_block_while_another_thread_makes_one);
    return s;
}
