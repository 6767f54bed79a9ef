/*
** check_locks.c: lock discipline in test builds (locks.h).
**
** Two halves. Every API that takes a runtime lock, on one thread and from
** inside callbacks (a door's fn that calls other API, a panic inside a
** door, a panic with doors open, a build that panics), must leave the
** checks silent and this thread's record of held locks as the contract
** says: no inner lock once a call returns, exactly the open doors' locks
** inside a door, none once a task, a thread or a panic is over. And the
** checker itself must fire, with "refrt: <function>: lock discipline: ",
** on each fault it claims to see: a doubled unlock, a doubled lock, a wait
** without the mutex, a mutex that is not a checked one, a destroy of a
** held mutex, a destroy of one destroyed already or never made, a lock
** left held past a call, a door, a task, a thread.
**
** Each scenario runs in a child that ends with exit(), so that the check
** at the process's exit and the sanitizers' own exit checks run too.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "refrt.h"
#include "shared.h"
#include "task.h"
#include "testutil.h"

#define KIB ((size_t)1024)
#define DISCIPLINE "lock discipline: "

/* In a scenario: the first unmet need ends the child with its line. */
#define NEED(c)                                                                      \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "need failed at line %d: %s\n", __LINE__, #c);           \
            fflush(stderr);                                                          \
            _exit(1);                                                                \
        }                                                                            \
    } while (0)

/* This thread holds no runtime lock, or exactly `doors` doors' locks. */
#define HOLDS_NONE() NEED(rt__locks.inner == NULL && rt__locks.doors == 0)
#define HOLDS_DOORS(n) NEED(rt__locks.inner == NULL && rt__locks.doors == (n))

struct scenario {
    void (*fn)(void);
};

static void scenario_then_exit(void *arg)
{
    ((struct scenario *)arg)->fn();
    exit(0);
}

/* fn must exit 0 with no lock discipline failure and no sanitizer report;
** stderr must hold `expect` when that is not NULL. */
static void run_silent(void (*fn)(void), const char *expect)
{
    struct scenario sc = {fn};
    struct death d = run_child(scenario_then_exit, &sc);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d; stderr: %s",
                  d.signal, d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, DISCIPLINE) == NULL, "the check fired: %s", d.err);
    ck_assert_msg(strstr(d.err, "Sanitizer") == NULL, "a sanitizer report: %s", d.err);
    if (expect != NULL)
        ck_assert_msg(strstr(d.err, expect) != NULL, "stderr lacks \"%s\": %s", expect, d.err);
}

/* fn must abort with "refrt: <who>: lock discipline: <what>...". */
static void fires(void (*fn)(void), const char *who, const char *what)
{
    char msg[256];
    struct scenario sc = {fn};

    snprintf(msg, sizeof msg, "refrt: %s: " DISCIPLINE "%s", who, what);
    ck_assert_violation(scenario_then_exit, &sc, msg);
}

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

/* Runs fn(arg) as a task and joins it; returns its status. */
static rt_status run_task(void *(*fn)(void *), void *arg)
{
    void *result = NULL;
    rt_task *t = rt_spawn(fn, arg);
    NEED(t != NULL);
    rt_status st = rt_join(t, &result);
    NEED(result == NULL);
    return st;
}

/* ---- channels ----------------------------------------------------------- */

static void channels_on_one_thread(void)
{
    init_fixed(256 * KIB);
    rt_chan *c = rt_chan_new(2);
    void *a = rt_alloc_outside(16), *b = rt_alloc_outside(16), *late = rt_alloc_outside(8);
    HOLDS_NONE();
    NEED(rt_send(c, a) == RT_OK);
    HOLDS_NONE();
    NEED(rt_send(c, b) == RT_OK);
    NEED(rt_send(c, rt_alloc(8)) == RT_REFUSED); /* no lock taken at all */
    HOLDS_NONE();
    NEED(rt_recv(c) == a);
    HOLDS_NONE();
    rt_chan_close(c);
    HOLDS_NONE();
    NEED(rt_send(c, late) == RT_CLOSED); /* the unlock on the closed path */
    HOLDS_NONE();
    NEED(rt_recv(c) == b);
    NEED(rt_recv(c) == NULL); /* closed and empty: the unlock on that path */
    HOLDS_NONE();
    rt_free(a);
    rt_free(b);
    rt_free(late);
    rt_chan *d = rt_chan_new(1);
    NEED(rt_send(d, rt_alloc_outside(4)) == RT_OK);
    rt_chan_free(d); /* a value still queued */
    rt_chan_free(c);
    HOLDS_NONE();
}

START_TEST(channels_on_one_thread_leave_the_checks_silent)
{
    run_silent(channels_on_one_thread, NULL);
}
END_TEST

/* A receiver whose budget cannot take the value panics in rt_recv, after
** the channel's lock went; the next receiver gets the value. */
static rt_chan *chan;

static void *receive_too_much(void *arg)
{
    (void)arg;
    HOLDS_NONE();
    rt_recv(chan);
    return NULL;
}

static void a_receiver_that_panics(void)
{
    init_fixed(64 * KIB);
    chan = rt_chan_new(1);
    NEED(rt_send(chan, rt_alloc_outside(4 * KIB)) == RT_OK);
    rt_set_strategy(rt_fixed_strategy(2 * KIB));
    NEED(run_task(receive_too_much, NULL) == RT_PANICKED);
    HOLDS_NONE();
    void *v = rt_recv(chan); /* the lock is free: main takes it */
    NEED(v != NULL);
    rt_free(v);
    rt_chan_free(chan);
}

START_TEST(a_receiver_that_panics_in_rt_recv_leaves_no_lock)
{
    run_silent(a_receiver_that_panics, "does not fit its budget");
}
END_TEST

/* A sender that blocks on a full channel waits (the cond wait) until a
** receiver on another task makes room. */
static void *receive_two(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        void *v = rt_recv(chan);
        NEED(v != NULL);
        HOLDS_NONE();
        rt_free(v);
    }
    return NULL;
}

static void a_sender_that_waits(void)
{
    init_fixed(256 * KIB);
    chan = rt_chan_new(1);
    rt_task *t = rt_spawn(receive_two, NULL);
    NEED(t != NULL);
    NEED(rt_send(chan, rt_alloc_outside(8)) == RT_OK);
    NEED(rt_send(chan, rt_alloc_outside(8)) == RT_OK);
    HOLDS_NONE();
    NEED(rt_join(t, NULL) == RT_OK);
    rt_chan_free(chan);
}

START_TEST(a_sender_and_a_receiver_that_wait_leave_the_checks_silent)
{
    run_silent(a_sender_that_waits, NULL);
}
END_TEST

/* ---- doors --------------------------------------------------------------- */

static rt_shared *first, *second, *owned;

static void add_one(void *v, void *ctx)
{
    (void)ctx;
    HOLDS_DOORS(1);
    ++*(int64_t *)v;
}

static void add_both(void *va, void *vb, void *ctx)
{
    (void)ctx;
    HOLDS_DOORS(2);
    ++*(int64_t *)va;
    ++*(int64_t *)vb;
}

static void read_one(const void *v, void *ctx)
{
    HOLDS_DOORS(1);
    *(int64_t *)ctx = *(const int64_t *)v;
}

static void doors_on_one_thread(void)
{
    int64_t zero = 0, got = -1;

    init_fixed(256 * KIB);
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    second = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    NEED(rt_update(first, add_one, NULL) == RT_OK);
    HOLDS_NONE();
    NEED(rt_update(owned, add_one, NULL) == RT_OK);
    HOLDS_NONE();
    NEED(rt_update_all(second, first, add_both, NULL) == RT_OK); /* out of order */
    HOLDS_NONE();
    NEED(rt_update_all(first, owned, add_both, NULL) == RT_OK); /* not both copies */
    HOLDS_NONE();
    NEED(rt_access(first, read_one, &got) == RT_OK && got == 3);
    HOLDS_NONE();
    NEED(rt_get(owned, &got) == RT_OK && got == 2);
    HOLDS_NONE();
    NEED(rt_shared_held(owned) > 0); /* outside a door: the inner lock */
    NEED(!rt__shared_locked(first) && !rt__shared_locked(owned)); /* the trylock */
    HOLDS_NONE();
    NEED(!rt_poisoned(first));
    rt_shared_free(first);
    rt_shared_free(second);
    rt_shared_free(owned);
    HOLDS_NONE();
}

START_TEST(doors_on_one_thread_leave_the_checks_silent)
{
    run_silent(doors_on_one_thread, NULL);
}
END_TEST

/* A door's fn that calls the rest of the API: a door on a value made
** later, a channel, the strategy, a task spawned and joined, the chunk
** cache, stores and unstores, rt_shared_held inside the door. */
static void *nothing(void *arg)
{
    (void)arg;
    HOLDS_NONE(); /* a new task holds none of its spawner's locks */
    return NULL;
}

static void inner_door(void *v, void *ctx)
{
    (void)v;
    HOLDS_DOORS(2);
    void *kept = rt_alloc_outside(32);
    NEED(rt_store(owned, kept) == RT_OK);
    HOLDS_DOORS(2);
    NEED(rt_shared_held(owned) > 0); /* inside its own door: no lock taken */
    NEED(rt_unstore(owned, kept) == kept);
    *(void **)ctx = kept;
    HOLDS_DOORS(2);
}

static void outer_door(void *v, void *ctx)
{
    int64_t got = -1;
    void *kept = NULL;

    (void)ctx;
    HOLDS_DOORS(1);
    ++*(int64_t *)v;
    NEED(rt_update(owned, inner_door, &kept) == RT_OK);
    HOLDS_DOORS(1);
    rt_free(kept);
    NEED(rt_get(second, &got) == RT_OK);
    NEED(rt_shared_held(second) > 0); /* no door on it: the inner lock */
    HOLDS_DOORS(1);
    rt_chan *c = rt_chan_new(1);
    NEED(rt_send(c, rt_alloc_outside(8)) == RT_OK);
    void *back = rt_recv(c);
    NEED(back != NULL);
    rt_free(back);
    rt_chan_close(c);
    rt_chan_free(c);
    HOLDS_DOORS(1);
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    NEED(run_task(nothing, NULL) == RT_OK);
    HOLDS_DOORS(1);
    void *chunk = rt_chunk_take();
    rt_chunk_give(chunk, chunk);
    HOLDS_DOORS(1);
}

static void a_door_that_calls_the_api(void)
{
    int64_t zero = 0, got = -1;

    init_fixed(256 * KIB);
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    second = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    NEED(rt_update(first, outer_door, NULL) == RT_OK);
    HOLDS_NONE();
    NEED(rt_get(first, &got) == RT_OK && got == 1);
    rt_shared_free(first);
    rt_shared_free(owned);
    rt_shared_free(second);
}

START_TEST(a_doors_fn_that_calls_the_api_leaves_the_checks_silent)
{
    run_silent(a_door_that_calls_the_api, NULL);
}
END_TEST

/* Panics with doors open: in fn, nested two deep, in an rt_update_all, and
** the runtime's own panics in a door (a full value block, a store that does
** not fit). Each task's end is checked by the runtime; main then opens
** doors on every value, which a lock left held would deadlock or fail. */
static void panics(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_panic("in the door");
}

static void panics_inside(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_update(owned, panics, NULL);
}

static void panics_both(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    (void)ctx;
    HOLDS_DOORS(2);
    rt_panic("in update_all");
}

static void fills_the_block(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    for (;;)
        rt_alloc(KIB); /* the value's block: full, the task panics */
}

static void stores_too_much(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_store(owned, rt_alloc_outside(64 * KIB));
}

static void *task_update(void *arg)
{
    rt_update(arg == NULL ? owned : first, arg == NULL ? panics : panics_inside, NULL);
    return NULL;
}

static void *task_update_all(void *arg)
{
    (void)arg;
    rt_update_all(owned, second, panics_both, NULL);
    return NULL;
}

static void *task_fills(void *arg)
{
    rt_update(owned, arg == NULL ? fills_the_block : stores_too_much, NULL);
    return NULL;
}

static void panics_with_doors_open(void)
{
    int64_t zero = 0, got = -1;

    init_fixed(256 * KIB);
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    second = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    NEED(run_task(task_update, (void *)1) == RT_PANICKED); /* two doors deep */
    NEED(rt_poisoned(owned) && !rt_poisoned(first));
    HOLDS_NONE();
    NEED(rt_get(first, &got) == RT_OK);
    NEED(rt_get(owned, &got) == RT_POISONED); /* its door opens: the lock is free */
    rt_shared_free(owned);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    NEED(run_task(task_update_all, NULL) == RT_PANICKED);
    NEED(rt_poisoned(owned) && rt_poisoned(second));
    NEED(rt_get(owned, &got) == RT_POISONED);
    NEED(rt_get(second, &got) == RT_POISONED);
    HOLDS_NONE();
    rt_shared_free(owned);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    NEED(run_task(task_fills, NULL) == RT_PANICKED);
    rt_shared_free(owned);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    NEED(run_task(task_fills, (void *)1) == RT_PANICKED);
    NEED(rt_get(owned, &got) == RT_POISONED);
    HOLDS_NONE();
    rt_shared_free(first);
    rt_shared_free(owned);
    rt_shared_free(second);
}

START_TEST(panics_with_doors_open_leave_no_lock)
{
    run_silent(panics_with_doors_open, "panicked: in update_all");
}
END_TEST

/* Supervised values: the first build in its door, a rebuild in the door of
** the next update, a build that panics (the value never handed out: its
** mutex is destroyed by the unwind), a rebuild that panics. */
static int builds_to_panic;

static void build(void *v, void *ctx)
{
    (void)ctx;
    HOLDS_DOORS(1);
    if (builds_to_panic > 0 && --builds_to_panic == 0)
        rt_panic("in build");
    *(int64_t *)v = 7;
}

static void *task_supervised(void *arg)
{
    (void)arg;
    builds_to_panic = 1;
    rt_shared_supervised(RT_OWNED, sizeof(int64_t), build, NULL, 4 * KIB);
    return NULL;
}

static void *task_rebuild(void *arg)
{
    (void)arg;
    builds_to_panic = 1;
    rt_update(owned, add_one, NULL);
    return NULL;
}

static void supervised_rebuilds(void)
{
    int64_t got = -1;

    init_fixed(256 * KIB);
    owned = rt_shared_supervised(RT_OWNED, sizeof got, build, NULL, 4 * KIB);
    HOLDS_NONE();
    NEED(run_task(task_supervised, NULL) == RT_PANICKED);
    NEED(run_task(task_update, NULL) == RT_PANICKED); /* poisons owned */
    NEED(run_task(task_rebuild, NULL) == RT_PANICKED); /* its rebuild panics */
    NEED(rt_update(owned, add_one, NULL) == RT_OK);     /* rebuilt, then fn */
    HOLDS_NONE();
    NEED(rt_get(owned, &got) == RT_OK && got == 8);
    rt_shared_free(owned);
}

START_TEST(supervised_builds_and_rebuilds_leave_no_lock)
{
    run_silent(supervised_rebuilds, "panicked: in build");
}
END_TEST

/* A panic in main's task with two doors open exits with 101; the check of
** rt_panic runs before that exit. */
static void main_panics(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    HOLDS_DOORS(2);
    rt_panic("main in two doors");
}

static void main_outer(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_update(owned, main_panics, NULL);
}

static void a_panic_in_main(void *arg)
{
    int64_t zero = 0;

    (void)arg;
    init_fixed(256 * KIB);
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    rt_update(first, main_outer, NULL);
}

START_TEST(a_panic_in_mains_doors_exits_101_with_no_lock)
{
    struct death d = run_child(a_panic_in_main, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 101, "signal %d exit %d; stderr: %s",
                  d.signal, d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, DISCIPLINE) == NULL, "the check fired: %s", d.err);
}
END_TEST

/* ---- the hot path, the strategy, the task table ---------------------------- */

static void *plain_thread(void *arg)
{
    (void)arg;
    void *chunk = rt_chunk_take(); /* this thread's publish */
    rt_chunk_give(chunk, chunk);
    NEED(rt_hot() != NULL);
    HOLDS_NONE();
    return NULL; /* its state's destructor checks it holds none */
}

static void hot_strategy_and_tasks(void)
{
    pthread_t t;

    rt_init();
    NEED(rt_hot() != NULL); /* main's first publish: the hot lock */
    HOLDS_NONE();
    NEED(pthread_create(&t, NULL, plain_thread, NULL) == 0);
    NEED(pthread_join(t, NULL) == 0);
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    HOLDS_NONE();
    rt_task *tasks[4];
    for (int i = 0; i < 4; i++)
        NEED((tasks[i] = rt_spawn(nothing, NULL)) != NULL);
    NEED(rt__tasks_unjoined() == 4);
    HOLDS_NONE();
    for (int i = 0; i < 4; i++)
        NEED(rt_join(tasks[i], NULL) == RT_OK);
    HOLDS_NONE();
    /* Each allocation of a spawn fails in turn, then pthread_create (the
    ** spawn takes its task out of the table again), until one succeeds. */
    for (unsigned long n = 1;; n++) {
        fail_nth(n);
        rt_task *t1 = rt_spawn(nothing, NULL);
        fail_nth(0);
        HOLDS_NONE();
        if (t1 != NULL) {
            NEED(rt_join(t1, NULL) == RT_OK);
            break;
        }
        NEED(rt__tasks_unjoined() == 0);
    }
    HOLDS_NONE();
    rt_hot_disable(); /* the latch: the hot lock again */
    HOLDS_NONE();
    NEED(pthread_create(&t, NULL, plain_thread, NULL) == 0);
    NEED(pthread_join(t, NULL) == 0);
    HOLDS_NONE();
}

START_TEST(the_hot_path_the_strategy_and_the_task_table_leave_the_checks_silent)
{
    run_silent(hot_strategy_and_tasks, NULL);
}
END_TEST

/* ---- every mutex and condition made is destroyed --------------------------- */

static void *first_build_panics(void *arg)
{
    (void)arg;
    builds_to_panic = 1;
    rt_shared_supervised(RT_OWNED, sizeof(int64_t), build, NULL, 4 * KIB);
    return NULL;
}

static void made_and_destroyed(void)
{
    int64_t zero = 0;

    init_fixed(256 * KIB);
    long base = rt__locks_live();
    rt_chan *c = rt_chan_new(2);
    NEED(rt__locks_live() == base + 3); /* its mutex and two conditions */
    NEED(rt_send(c, rt_alloc_outside(8)) == RT_OK);
    rt_chan_free(c);
    NEED(rt__locks_live() == base);
    rt_shared *s = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    NEED(rt__locks_live() == base + 1);
    rt_shared_free(s);
    NEED(rt__locks_live() == base);
    builds_to_panic = 0;
    s = rt_shared_supervised(RT_OWNED, sizeof zero, build, NULL, 4 * KIB);
    NEED(rt__locks_live() == base + 1);
    rt_shared_free(s);
    NEED(rt__locks_live() == base);
    NEED(run_task(first_build_panics, NULL) == RT_PANICKED); /* the unwind destroys it */
    NEED(rt__locks_live() == base);
}

START_TEST(every_mutex_and_condition_made_is_destroyed)
{
    run_silent(made_and_destroyed, "panicked: in build");
}
END_TEST

/* The count of mutexes and conditions live is exact whichever threads
** make and destroy them at once: four tasks each make and free 100,000
** channels (a mutex and two conditions each) and 100,000 shared values
** (one mutex each), started together; afterwards the count is back at its
** start exactly. A count updated by a load and a store loses some of the
** other threads' steps: here none at 3,000 each, in 5 runs of 6 at
** 30,000, in 8 of 8 at 100,000 (0.4 s). */
#define RACING_MAKERS 4
static atomic_int makers_go;

static void *make_and_free_many(void *arg)
{
    int64_t zero = 0;
    (void)arg;
    while (!atomic_load(&makers_go))
        sched_yield();
    for (int i = 0; i < 100000; i++) {
        rt_chan *c = rt_chan_new(1);
        rt_shared *v = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
        rt_shared_free(v);
        rt_chan_free(c);
    }
    return NULL;
}

static void made_and_destroyed_at_once(void)
{
    rt_task *t[RACING_MAKERS];

    init_fixed(256 * KIB);
    long base = rt__locks_live();
    for (int i = 0; i < RACING_MAKERS; i++)
        NEED((t[i] = rt_spawn(make_and_free_many, NULL)) != NULL);
    atomic_store(&makers_go, 1);
    for (int i = 0; i < RACING_MAKERS; i++)
        NEED(rt_join(t[i], NULL) == RT_OK);
    NEED(rt__locks_live() == base);
}

START_TEST(the_count_of_locks_live_is_exact_after_threads_make_and_destroy_at_once)
{
    run_silent(made_and_destroyed_at_once, NULL);
}
END_TEST

/* ---- the checker fires ------------------------------------------------- */

static pthread_mutex_t m;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void doubled_unlock(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
    rt__unlock(&m);
    rt__unlock(&m);
}

START_TEST(a_doubled_unlock_fires)
{
    fires(doubled_unlock, "doubled_unlock", "unlock of a mutex this thread does not hold\n");
}
END_TEST

/* abort() flushes nothing: the message is out before it, also when the
** program made stderr fully buffered. */
static char stderr_buffer[BUFSIZ];

static void doubled_unlock_buffered(void)
{
    setvbuf(stderr, stderr_buffer, _IOFBF, sizeof stderr_buffer);
    doubled_unlock();
}

START_TEST(the_message_reaches_a_buffered_stderr)
{
    fires(doubled_unlock_buffered, "doubled_unlock", "unlock of a mutex this thread does not hold\n");
}
END_TEST

static void doubled_lock(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
    rt__lock(&m);
}

START_TEST(a_doubled_lock_fires)
{
    fires(doubled_lock, "doubled_lock",
          "lock of a mutex this thread already holds (a self-deadlock)\n");
}
END_TEST

/* The same, past the record: the error-checking mutex itself answers. */
static void doubled_door_lock(void)
{
    rt__mutex_init(&m);
    rt__door_lock(&m);
    rt__door_lock(&m);
}

START_TEST(a_doubled_door_lock_fires)
{
    fires(doubled_door_lock, "doubled_door_lock",
          "lock of a mutex this thread already holds (a self-deadlock)\n");
}
END_TEST

static void door_unlock_not_held(void)
{
    static pthread_mutex_t other;
    rt__mutex_init(&m);
    rt__mutex_init(&other);
    rt__door_lock(&m);
    rt__door_unlock(&other);
}

START_TEST(a_door_unlock_of_another_mutex_fires)
{
    fires(door_unlock_not_held, "door_unlock_not_held",
          "unlock of a mutex this thread does not hold\n");
}
END_TEST

static void wait_without_lock(void)
{
    rt__mutex_init(&m);
    rt__cond_wait(&cv, &m);
}

START_TEST(a_wait_without_the_mutex_fires)
{
    fires(wait_without_lock, "wait_without_lock",
          "cond wait of a mutex this thread does not hold\n");
}
END_TEST

static void signal_without_lock(void)
{
    rt__mutex_init(&m);
    rt__cond_signal(&cv, &m);
}

static void broadcast_without_lock(void)
{
    rt__mutex_init(&m);
    rt__cond_broadcast(&cv, &m);
}

START_TEST(a_signal_or_broadcast_without_the_mutex_fires)
{
    fires(signal_without_lock, "signal_without_lock", "cond wake without its mutex held\n");
    fires(broadcast_without_lock, "broadcast_without_lock", "cond wake without its mutex held\n");
}
END_TEST

/* Each check holds with another inner lock held too: an unlock, a wait and
** a wake of a mutex this thread does not hold are reported though it holds
** one (the record's, where glibc's error-checking mutexes do not answer,
** compares the mutex, not only whether one is held). */
static pthread_mutex_t held_instead;

static void hold_another(void)
{
    rt__mutex_init(&m);
    rt__mutex_init(&held_instead);
    rt__lock(&held_instead);
}

static void unlock_with_another_held(void)
{
    hold_another();
    rt__unlock(&m);
}

static void wait_with_another_held(void)
{
    hold_another();
    rt__cond_wait(&cv, &m);
}

static void signal_with_another_held(void)
{
    hold_another();
    rt__cond_signal(&cv, &m);
}

static void broadcast_with_another_held(void)
{
    hold_another();
    rt__cond_broadcast(&cv, &m);
}

/* Where locks.h promises that the record alone checks the static mutexes
** (plain ones there): a libc without glibc's error-checking initializer,
** and the portable build (-DRT_PRIM_PORTABLE), which stands in for musl.
** The tests read that promise themselves, not RT_LOCKS_RECORD_ONLY, so a
** build that picks the wrong side fails them. */
#if defined(PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP) && !defined(RT_PRIM_PORTABLE)
#define RECORD_ONLY_PROMISED 0
#else
#define RECORD_ONLY_PROMISED 1
#endif

START_TEST(the_record_alone_checks_where_locks_h_promises_it)
{
    ck_assert_int_eq(RT_LOCKS_RECORD_ONLY, RECORD_ONLY_PROMISED);
}
END_TEST

/* The same with static mutexes, which are plain ones where the record
** alone answers (-DRT_PRIM_PORTABLE, musl): the
** record compares the mutex. Waits are made spurious, so a wait the check
** let through returns (and the test fails) instead of sleeping for ever. */
static pthread_mutex_t static_target = RT_MUTEX_INITIALIZER;
static pthread_mutex_t static_held = RT_MUTEX_INITIALIZER;

static void unlock_static_with_another_held(void)
{
    rt__lock(&static_held);
    rt__unlock(&static_target);
}

static void wait_static_with_another_held(void)
{
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
    rt__lock(&static_held);
    rt__cond_wait(&cv, &static_target);
}

START_TEST(each_check_holds_with_another_inner_lock_held)
{
    fires(unlock_static_with_another_held, "unlock_static_with_another_held",
          "unlock of a mutex this thread does not hold\n");
    fires(wait_static_with_another_held, "wait_static_with_another_held",
          "cond wait of a mutex this thread does not hold\n");
    fires(unlock_with_another_held, "unlock_with_another_held",
          "unlock of a mutex this thread does not hold\n");
    fires(wait_with_another_held, "wait_with_another_held",
          "cond wait of a mutex this thread does not hold\n");
    fires(signal_with_another_held, "signal_with_another_held",
          "cond wake without its mutex held\n");
    fires(broadcast_with_another_held, "broadcast_with_another_held",
          "cond wake without its mutex held\n");
}
END_TEST

/* A mutex another thread holds is not this thread's: an unlock, a wait and
** a wake of it fire on this thread as for one nobody holds (locks.h: "an
** unlock of a mutex this thread does not hold; a wait on a condition
** without its mutex, and a signal or broadcast without it"). The record is
** this thread's (a _Thread_local, locks.h) and glibc's error-checking
** mutex knows its owner, so neither takes the other thread's hold for this
** one's: for a mutex made by rt__mutex_init and for a static one (plain
** where the record alone answers). The holder takes the lock through the
** same checked call and keeps it until the process ends; waits are made
** spurious, so a wait the check let through returns and fails the test. */
static pthread_mutex_t *held_elsewhere;
static int elsewhere_holds;

static void *holds_it_for_good(void *unused)
{
    (void)unused;
    rt__lock(held_elsewhere);
    __atomic_store_n(&elsewhere_holds, 1, __ATOMIC_RELEASE);
    for (;;)
        pause(); /* the process ends with the scenario */
    return NULL;
}

static void another_thread_holds(pthread_mutex_t *mx)
{
    pthread_t t;
    held_elsewhere = mx;
    NEED(pthread_create(&t, NULL, holds_it_for_good, NULL) == 0);
    while (!__atomic_load_n(&elsewhere_holds, __ATOMIC_ACQUIRE))
        sched_yield();
    __atomic_store_n(&rt__spurious_wakeups, 1, __ATOMIC_RELAXED);
}

static void unlock_held_elsewhere(void)
{
    rt__mutex_init(&m);
    another_thread_holds(&m);
    rt__unlock(&m);
}

static void wait_held_elsewhere(void)
{
    rt__mutex_init(&m);
    another_thread_holds(&m);
    rt__cond_wait(&cv, &m);
}

static void signal_held_elsewhere(void)
{
    rt__mutex_init(&m);
    another_thread_holds(&m);
    rt__cond_signal(&cv, &m);
}

static void broadcast_held_elsewhere(void)
{
    another_thread_holds(&static_target);
    rt__cond_broadcast(&cv, &static_target);
}

static void unlock_static_held_elsewhere(void)
{
    another_thread_holds(&static_target);
    rt__unlock(&static_target);
}

static void wait_static_held_elsewhere(void)
{
    another_thread_holds(&static_target);
    rt__cond_wait(&cv, &static_target);
}

START_TEST(a_mutex_another_thread_holds_is_not_held_by_this_one)
{
    fires(unlock_held_elsewhere, "unlock_held_elsewhere",
          "unlock of a mutex this thread does not hold\n");
    fires(wait_held_elsewhere, "wait_held_elsewhere",
          "cond wait of a mutex this thread does not hold\n");
    fires(signal_held_elsewhere, "signal_held_elsewhere", "cond wake without its mutex held\n");
    fires(broadcast_held_elsewhere, "broadcast_held_elsewhere",
          "cond wake without its mutex held\n");
    fires(unlock_static_held_elsewhere, "unlock_static_held_elsewhere",
          "unlock of a mutex this thread does not hold\n");
    fires(wait_static_held_elsewhere, "wait_static_held_elsewhere",
          "cond wait of a mutex this thread does not hold\n");
}
END_TEST

/* Only where the mutexes are error-checking ones: elsewhere the static
** ones are plain, and the record checks them. */
#if defined(__GLIBC__) && !RECORD_ONLY_PROMISED
static void unchecked_mutex(void)
{
    static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
    rt__lock(&plain);
}

/* A door's lock is checked the same way, at the door, whatever a later
** destroy would say: before rt_init, after it, and on a value's own lock
** taken as its door takes it. */
static void unchecked_door_mutex(void)
{
    static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
    rt__door_lock(&plain);
}

static void unchecked_door_mutex_after_init(void)
{
    rt_init();
    unchecked_door_mutex();
}
#endif

START_TEST(a_mutex_that_is_not_error_checking_fires)
{
#if defined(__GLIBC__) && !RECORD_ONLY_PROMISED
    fires(unchecked_mutex, "unchecked_mutex", "lock of a mutex that is not an error-checking one "
          "(was it made with rt__mutex_init?)\n");
    fires(unchecked_door_mutex, "unchecked_door_mutex", "lock of a mutex that is not an "
          "error-checking one (was it made with rt__mutex_init?)\n");
    fires(unchecked_door_mutex_after_init, "unchecked_door_mutex", "lock of a mutex that is not "
          "an error-checking one (was it made with rt__mutex_init?)\n");
#endif
}
END_TEST

static void destroy_held(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
    rt__mutex_destroy(&m);
}

static void destroy_held_by_a_door(void)
{
    rt__mutex_init(&m);
    rt__door_lock(&m);
    rt__mutex_destroy(&m);
}

START_TEST(a_destroy_of_a_held_mutex_fires)
{
    char busy[128];

    snprintf(busy, sizeof busy, "destroy failed: %s\n", strerror(EBUSY));
#if RECORD_ONLY_PROMISED
    fires(destroy_held, "destroy_held", "destroy of a mutex this thread holds\n");
#else
    fires(destroy_held, "destroy_held", busy);
#endif
    fires(destroy_held_by_a_door, "destroy_held_by_a_door", busy);
}
END_TEST

/* Only where the mutexes are error-checking ones (glibc sets a destroyed
** one's kind to -1): a second destroy, and the destroy of a mutex never
** made, fire at the destroy. */
#if defined(__GLIBC__) && !RECORD_ONLY_PROMISED
static void doubled_destroy(void)
{
    rt__mutex_init(&m);
    rt__mutex_destroy(&m);
    rt__mutex_destroy(&m);
}

static void destroy_never_made(void)
{
    static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
    rt__mutex_destroy(&plain);
}
#endif

START_TEST(a_destroy_of_a_mutex_destroyed_already_or_never_made_fires)
{
#if defined(__GLIBC__) && !RECORD_ONLY_PROMISED
    fires(doubled_destroy, "doubled_destroy", "destroy of a mutex that is not an error-checking "
          "one (destroyed already, or never made with rt__mutex_init?)\n");
    fires(destroy_never_made, "destroy_never_made", "destroy of a mutex that is not an "
          "error-checking one (destroyed already, or never made with rt__mutex_init?)\n");
#endif
}
END_TEST

static void nested_inner_locks(void)
{
    static pthread_mutex_t other;
    rt__mutex_init(&m);
    rt__mutex_init(&other);
    rt__lock(&m);
    rt__lock(&other);
}

/* The nesting message names the function whose lock is held, not the one
** taking the second: two functions here, so the two names differ. */
static void takes_the_first_lock(void)
{
    static pthread_mutex_t first;
    rt__mutex_init(&first);
    rt__lock(&first);
}

static void takes_the_second_lock(void)
{
    static pthread_mutex_t second;
    rt__mutex_init(&second);
    rt__lock(&second);
}

static void nested_from_two_functions(void)
{
    takes_the_first_lock();
    takes_the_second_lock();
}

START_TEST(the_nesting_message_names_the_function_that_holds_the_lock)
{
    fires(nested_from_two_functions, "takes_the_second_lock",
          "lock taken while this thread holds the lock takes_the_first_lock took "
          "(inner locks do not nest)\n");
}
END_TEST

START_TEST(an_inner_lock_inside_another_fires)
{
    fires(nested_inner_locks, "nested_inner_locks",
          "lock taken while this thread holds the lock nested_inner_locks took "
          "(inner locks do not nest)\n");
}
END_TEST

/* The checks answer before the lock is waited for, whoever holds the
** mutex: an inner lock taken under another while a second thread holds
** it fires at once (it does not wait for that thread, which never lets
** go), a trylock the same; a doubled lock of a static mutex fires where
** the mutex itself would hang (a plain one: the record-only build,
** check-hot-portable). A hang dies of SIGALRM after 10 s. */
static pthread_mutex_t mutex_held_away;
static atomic_int held_now;

static void *hold_forever(void *arg)
{
    (void)arg;
    rt__lock(&mutex_held_away);
    atomic_store(&held_now, 1);
    for (;;)
        pause();
    return NULL;
}

static void inner_lock_mutex_held_away(int try)
{
    pthread_t t;
    die_of_alarm_after(10);
    rt__mutex_init(&m);
    rt__mutex_init(&mutex_held_away);
    pthread_create(&t, NULL, hold_forever, NULL);
    while (!atomic_load(&held_now))
        sched_yield();
    rt__lock(&m);
    if (try)
        (void)rt__trylock(&mutex_held_away);
    else
        rt__lock(&mutex_held_away);
}

static void nested_lock_mutex_held_away(void)
{
    inner_lock_mutex_held_away(0);
}

static void nested_trylock_mutex_held_away(void)
{
    inner_lock_mutex_held_away(1);
}

static void doubled_static_lock(void)
{
    static pthread_mutex_t s = RT_MUTEX_INITIALIZER;
    die_of_alarm_after(10);
    rt__lock(&s);
    rt__lock(&s);
}

START_TEST(the_checks_fire_before_a_lock_is_waited_for)
{
    fires(nested_lock_mutex_held_away, "inner_lock_mutex_held_away",
          "lock taken while this thread holds the lock inner_lock_mutex_held_away took "
          "(inner locks do not nest)\n");
    fires(nested_trylock_mutex_held_away, "inner_lock_mutex_held_away",
          "lock taken while this thread holds the lock inner_lock_mutex_held_away took "
          "(inner locks do not nest)\n");
    fires(doubled_static_lock, "doubled_static_lock",
          "lock of a mutex this thread already holds (a self-deadlock)\n");
}
END_TEST

/* No lock of either kind is taken under an inner lock: a door's lock
** taken while one is held fires as an inner one would (the door's fn
** would run program code with the inner lock held). */
static void door_lock_inside_an_inner_lock(void)
{
    static pthread_mutex_t door;
    rt__mutex_init(&m);
    rt__mutex_init(&door);
    rt__lock(&m);
    rt__door_lock(&door);
}

START_TEST(a_doors_lock_inside_an_inner_lock_fires)
{
    fires(door_lock_inside_an_inner_lock, "door_lock_inside_an_inner_lock",
          "lock taken while this thread holds the lock door_lock_inside_an_inner_lock took "
          "(inner locks do not nest)\n");
}
END_TEST

static void trylock_inside_a_lock(void)
{
    static pthread_mutex_t other;
    rt__mutex_init(&m);
    rt__mutex_init(&other);
    rt__lock(&m);
    rt__trylock(&other);
}

START_TEST(a_trylock_inside_an_inner_lock_fires)
{
    fires(trylock_inside_a_lock, "trylock_inside_a_lock",
          "lock taken while this thread holds the lock trylock_inside_a_lock took "
          "(inner locks do not nest)\n");
}
END_TEST

/* A trylock that takes the lock records it as any lock does. */
static void trylock_held_into_the_next_call(void)
{
    rt_init();
    rt__mutex_init(&m);
    NEED(rt__trylock(&m) == 0);
    rt_chunk_take();
}

START_TEST(a_trylocked_lock_held_into_the_next_call_fires)
{
    fires(trylock_held_into_the_next_call, "trylock_held_into_the_next_call",
          "the lock it took is still held when this thread calls the runtime again\n");
}
END_TEST

/* A lock left held past its call: found when the thread next calls the
** runtime, when its task ends, when it ends, when the process exits. */
static void leaves_a_lock(void)
{
    rt_init();
    rt__mutex_init(&m);
    rt__lock(&m);
}

static void held_into_the_next_call(void)
{
    leaves_a_lock();
    rt_chunk_take();
}

START_TEST(a_lock_held_into_the_next_call_fires)
{
    fires(held_into_the_next_call, "leaves_a_lock",
          "the lock it took is still held when this thread calls the runtime again\n");
}
END_TEST

/* The same on either path to the thread's state: each runtime call below
** is made with an inner lock left held, once the thread's state is
** published, on the direct path (where this build has one: the state is
** read with one load) and after rt_hot_disable, on the fallback; each
** fires at its entry, also the calls that take no lock and never ask for
** the thread's state (a channel's or a shared value's making, a channel's
** free, rt_poisoned). */
static void call_chunk_take(void) { rt_chunk_take(); }
static void call_chunk_kept(void) { (void)rt_chunk_kept(); }
static void call_held(void) { (void)rt_held(); }
static void call_budget(void) { (void)rt_budget(); }
static void call_alloc(void) { (void)rt_alloc(16); }
static void call_hot(void) { (void)rt_hot(); }
/* calls that never reach the thread's state check the entry too */
static rt_chan *made_before;
static rt_shared *value_before;
static void call_chan_new(void) { (void)rt_chan_new(1); }
static void call_chan_free(void) { rt_chan_free(made_before); }
static void call_poisoned(void) { (void)rt_poisoned(value_before); }
static void call_shared_new(void)
{
    int64_t zero = 0;
    (void)rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
}

static void (*const entry_calls[])(void) = {call_chunk_take, call_chunk_kept, call_held,
                                             call_budget,     call_alloc,      call_hot,
                                             call_chan_new,   call_chan_free,  call_poisoned,
                                             call_shared_new};
#define ENTRY_CALLS (sizeof entry_calls / sizeof entry_calls[0])

static unsigned entry_call;
static bool entry_direct;
/* where the call is made: on its own, inside a door's fn (its door's lock
** held), or after a door's lock taken before the inner one was released */
enum { ON_ITS_OWN, INSIDE_A_DOOR, AFTER_A_DOOR_UNLOCK, ENTRY_PLACES };
static int entry_place;

static void leak_then_call(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    leaves_a_lock();
    entry_calls[entry_call]();
}

static void held_into_a_call_on_a_path(void)
{
    static pthread_mutex_t door;
    int64_t zero = 0;

    init_fixed(64 * KIB);
    rt_free(rt_alloc(8)); /* the state published, its path chosen */
    made_before = rt_chan_new(1);
    value_before = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    if (!entry_direct)
        rt_hot_disable();
    NEED(rt_hot_direct() == entry_direct);
    if (entry_place == INSIDE_A_DOOR) {
        rt_update(rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB), leak_then_call, NULL);
    } else if (entry_place == AFTER_A_DOOR_UNLOCK) {
        rt__mutex_init(&door);
        rt__door_lock(&door);
        leaves_a_lock();
        rt__door_unlock(&door);
        entry_calls[entry_call]();
    } else {
        leak_then_call(NULL, NULL);
    }
}

START_TEST(a_lock_held_into_any_call_fires_on_either_path)
{
    for (int direct = 0; direct <= RT_PRIM_DIRECT; direct++)
        for (entry_place = 0; entry_place < ENTRY_PLACES; entry_place++)
            for (entry_call = 0; entry_call < ENTRY_CALLS; entry_call++) {
                entry_direct = direct;
                fires(held_into_a_call_on_a_path, "leaves_a_lock",
                      "the lock it took is still held when this thread calls the runtime "
                      "again\n");
            }
}
END_TEST

static void *task_leaves_a_lock(void *arg)
{
    (void)arg;
    rt__lock(&m);
    return NULL;
}

static void held_past_a_task(void)
{
    rt_init();
    rt__mutex_init(&m);
    run_task(task_leaves_a_lock, NULL);
}

START_TEST(a_lock_held_past_its_task_fires)
{
    fires(held_past_a_task, "task_leaves_a_lock", "the lock it took is still held when its task ends\n");
}
END_TEST

static void *thread_leaves_a_lock(void *arg)
{
    (void)arg;
    void *chunk = rt_chunk_take(); /* a state, so its destructor runs */
    rt_chunk_give(chunk, chunk);
    rt__lock(&m);
    return NULL;
}

static void held_past_a_thread(void)
{
    pthread_t t;

    rt_init();
    rt__mutex_init(&m);
    NEED(pthread_create(&t, NULL, thread_leaves_a_lock, NULL) == 0);
    pthread_join(t, NULL);
}

START_TEST(a_lock_held_past_its_thread_fires)
{
    fires(held_past_a_thread, "thread_leaves_a_lock",
          "the lock it took is still held when its thread ends\n");
}
END_TEST

/* A task's thread that ends inside a door (pthread_exit from the door's fn,
** which skips the task's own check at its end) still holds the door's
** lock: the thread's end says so, doors' locks included. */
static void exit_in_the_door(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    pthread_exit(NULL);
}

static void *task_exits_in_a_door(void *arg)
{
    (void)rt_update(arg, exit_in_the_door, NULL);
    return NULL;
}

static void exits_in_a_door(void)
{
    static const char zero[16];
    init_fixed(64 * 1024);
    rt_shared *s = rt_shared_new(RT_COPY, sizeof zero, zero, 4096);
    rt_task *t = rt_spawn(task_exits_in_a_door, s);
    NEED(t != NULL);
    (void)rt_join(t, NULL);
}

START_TEST(a_thread_that_ends_inside_a_door_fires)
{
    fires(exits_in_a_door, "hot_destroy", "1 doors' locks are still held when its thread ends\n");
}
END_TEST

/* The same before rt_init, which has taken no lock of its own: the
** check at exit does not depend on the runtime having started. */
static void leaves_a_lock_before_init(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
}

START_TEST(a_lock_held_at_exit_fires)
{
    fires(leaves_a_lock, "leaves_a_lock", "the lock it took is still held when the process exits\n");
    fires(leaves_a_lock_before_init, "leaves_a_lock_before_init",
          "the lock it took is still held when the process exits\n");
}
END_TEST

/* A program may exit from inside a door's fn (exit in an rt_update, in an
** rt_access, in both values' fn of rt_update_all, in a supervised build):
** the doors' locks are still held then, and that is no failure; the inner
** locks, never held across a call, are all free. */
static void exit_in_update(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    exit(0);
}

static void exit_in_access(const void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    exit(0);
}

static void exit_in_update_all(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    (void)ctx;
    exit(0);
}

static int exit_where;

static void exits_inside_a_door(void)
{
    int64_t zero = 0;

    rt_init();
    rt_shared *a = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    rt_shared *b = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    switch (exit_where) {
    case 0:
        rt_update(a, exit_in_update, NULL);
        break;
    case 1:
        rt_update(b, exit_in_update, NULL);
        break;
    case 2:
        rt_access(a, exit_in_access, NULL);
        break;
    case 3:
        rt_update_all(a, b, exit_in_update_all, NULL);
        break;
    default:
        rt_shared_supervised(RT_OWNED, sizeof zero, exit_in_update, NULL, 4 * KIB);
        break;
    }
    _exit(3); /* fn did not run */
}

START_TEST(a_program_that_exits_inside_a_door_holds_no_lock_it_should_not)
{
    for (exit_where = 0; exit_where < 5; exit_where++)
        run_silent(exits_inside_a_door, NULL); /* the child is a fork: it sees exit_where */
}
END_TEST

/* A door's fn that leaves a door's lock of its own: found as the door
** closes. */
static void takes_a_door_lock(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt__door_lock(&m);
}

static void held_past_a_door(void)
{
    int64_t zero = 0;

    rt_init();
    rt__mutex_init(&m);
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    rt_update(first, takes_a_door_lock, NULL);
}

START_TEST(a_lock_held_past_its_door_fires)
{
    fires(held_past_a_door, "rt_update",
          "1 doors' locks held once the door closed; the doors around it hold 0\n");
}
END_TEST

static void *panics_holding_doors(void *arg)
{
    (void)arg;
    rt__door_lock(&m);
    rt_panic("holding a lock no door owns");
}

static void held_past_a_panic(void)
{
    rt_init();
    rt__mutex_init(&m);
    run_task(panics_holding_doors, NULL);
}

START_TEST(a_lock_held_past_a_panic_fires)
{
    fires(held_past_a_panic, "rt_panic", "1 doors' locks are still held when its doors are unwound\n");
}
END_TEST

/* ---- the checks in every context they hold in ------------------------------ */

/* A door's lock left by a door's fn is found as that door closes, in every
** kind of door (an update of a copy, an update in place, rt_update_all,
** rt_access, a supervised build), at every depth: with no door around it,
** inside one, inside two nested updates, inside an rt_update_all (two
** locks in one door); on main and on a task. The message names the door
** and counts exactly: the doors around it hold theirs, plus the one left. */
enum { LEFT_UPDATE_COPY, LEFT_UPDATE_OWNED, LEFT_UPDATE_ALL, LEFT_ACCESS, LEFT_BUILD, LEFT_KINDS };
static const char *const left_door[] = {"rt_update", "rt_update", "rt_update_all", "rt_access",
                                         "rt_shared_supervised"};
enum { AROUND_NONE, AROUND_ONE, AROUND_TWO_NESTED, AROUND_UPDATE_ALL, AROUNDS };
static const unsigned around_locks[] = {0, 1, 2, 2};
static int left_kind, left_around;
static bool left_on_a_task;
static bool let_an_outer_go; /* the fn lets outer1's lock go instead */
static rt_shared *outer1, *outer2;

static void leave_a_door_lock(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    if (let_an_outer_go)
        rt__door_unlock(rt__shared_mutex(outer1));
    else
        rt__door_lock(&m);
}

static void leave_a_door_lock_both(void *va, void *vb, void *ctx)
{
    leave_a_door_lock(va, ctx);
    (void)vb;
}

static void leave_a_door_lock_reading(const void *v, void *ctx)
{
    (void)v;
    leave_a_door_lock(NULL, ctx);
}

/* The innermost door: its values are made here, after the outer ones. */
static void door_that_leaves_a_lock(void)
{
    int64_t zero = 0;
    rt_shared *a = rt_shared_new(left_kind == LEFT_UPDATE_OWNED ? RT_OWNED : RT_COPY,
                                 sizeof zero, &zero, 4 * KIB);
    rt_shared *b = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    switch (left_kind) {
    case LEFT_UPDATE_COPY:
    case LEFT_UPDATE_OWNED:
        rt_update(a, leave_a_door_lock, NULL);
        break;
    case LEFT_UPDATE_ALL:
        rt_update_all(a, b, leave_a_door_lock_both, NULL);
        break;
    case LEFT_ACCESS:
        rt_access(a, leave_a_door_lock_reading, NULL);
        break;
    default:
        rt_shared_supervised(RT_OWNED, sizeof zero, leave_a_door_lock, NULL, 4 * KIB);
        break;
    }
    _exit(3); /* the close did not fire */
}

static void around_inner(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    door_that_leaves_a_lock();
}

static void around_outer(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_update(outer2, around_inner, NULL);
}

static void around_both(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    (void)ctx;
    door_that_leaves_a_lock();
}

static void *doors_around_a_left_lock(void *arg)
{
    (void)arg;
    switch (left_around) {
    case AROUND_NONE:
        door_that_leaves_a_lock();
        break;
    case AROUND_ONE:
        rt_update(outer1, around_inner, NULL);
        break;
    case AROUND_TWO_NESTED:
        rt_update(outer1, around_outer, NULL);
        break;
    default:
        rt_update_all(outer1, outer2, around_both, NULL);
        break;
    }
    return NULL;
}

static void a_door_lock_left_at_a_depth(void)
{
    int64_t zero = 0;

    init_fixed(256 * KIB);
    rt__mutex_init(&m);
    outer1 = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    outer2 = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    if (left_on_a_task)
        run_task(doors_around_a_left_lock, NULL);
    else
        doors_around_a_left_lock(NULL);
}

START_TEST(a_door_lock_left_in_any_door_fires_at_its_close_at_every_depth)
{
    char what[160];

    let_an_outer_go = false;
    for (int task = 0; task < 2; task++)
        for (left_around = 0; left_around < AROUNDS; left_around++)
            for (left_kind = 0; left_kind < LEFT_KINDS; left_kind++) {
                unsigned around = around_locks[left_around];
                left_on_a_task = task;
                snprintf(what, sizeof what, "%u doors' locks held once the door closed; the doors "
                         "around it hold %u\n", around + 1, around);
                fires(a_door_lock_left_at_a_depth, left_door[left_kind], what);
            }
}
END_TEST

/* The other way round: a door's fn that lets go of the lock of a door
** around it (its value's, outer1's, which the thread holds, so the unlock
** itself succeeds) is found as that door closes, not only later when the
** outer door's own unlock fails: the doors around it hold one lock more
** than the thread does. Every kind of inner door, inside one update, two
** nested and an rt_update_all, on main and on a task. */
START_TEST(a_door_lock_let_go_by_an_inner_door_fires_at_its_close_at_every_depth)
{
    char what[160];

    let_an_outer_go = true;
    for (int task = 0; task < 2; task++)
        for (left_around = AROUND_ONE; left_around < AROUNDS; left_around++)
            for (left_kind = 0; left_kind < LEFT_KINDS; left_kind++) {
                unsigned around = around_locks[left_around];
                left_on_a_task = task;
                snprintf(what, sizeof what, "%u doors' locks held once the door closed; the doors "
                         "around it hold %u\n", around - 1, around);
                fires(a_door_lock_left_at_a_depth, left_door[left_kind], what);
            }
}
END_TEST

/* A door's lock still held when a task ends or a panic has unwound its
** doors is named there: a task that returns holding one it took itself,
** two of them, or one whose door its fn left by longjmp (the close never
** ran); main's panic, before it exits with 101, as a task's does; a panic
** inside a door, whose own lock the unwind releases, with one more left. */
enum { END_TASK_RETURNS, END_TASK_RETURNS_TWO, END_TASK_LEFT_BY_LONGJMP, END_MAIN_PANICS,
       END_MAIN_PANICS_IN_A_DOOR, END_TASK_PANICS_IN_A_DOOR, ENDS };
static int end_how;
static pthread_mutex_t m2;
static jmp_buf out_of_the_door;

static void longjmp_out(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    longjmp(out_of_the_door, 1);
}

static void lock_then_panic(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt__door_lock(&m);
    rt_panic("with a door's lock of its own");
}

static void *ends_holding_a_door_lock(void *arg)
{
    int64_t zero = 0;
    rt_shared *s = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);

    (void)arg;
    switch (end_how) {
    case END_TASK_RETURNS:
        rt__door_lock(&m);
        break;
    case END_TASK_RETURNS_TWO:
        rt__door_lock(&m);
        rt__door_lock(&m2);
        break;
    case END_TASK_LEFT_BY_LONGJMP:
        if (setjmp(out_of_the_door) == 0)
            rt_update(s, longjmp_out, NULL);
        break;
    case END_MAIN_PANICS:
        rt__door_lock(&m);
        rt_panic("holding a door's lock");
    default:
        rt_update(s, lock_then_panic, NULL);
        break;
    }
    return NULL;
}

static void ends_with_a_door_lock(void)
{
    init_fixed(256 * KIB);
    rt__mutex_init(&m);
    rt__mutex_init(&m2);
    if (end_how == END_MAIN_PANICS || end_how == END_MAIN_PANICS_IN_A_DOOR)
        ends_holding_a_door_lock(NULL);
    else
        run_task(ends_holding_a_door_lock, NULL);
    _exit(3); /* nothing fired */
}

START_TEST(a_door_lock_left_past_a_task_or_any_panic_fires)
{
    static const char *const who[] = {"rt_spawn", "rt_spawn", "rt_spawn", "rt_panic", "rt_panic",
                                      "rt_panic"};
    static const char *const what[] = {
        "1 doors' locks are still held when its task ends\n",
        "2 doors' locks are still held when its task ends\n",
        "1 doors' locks are still held when its task ends\n",
        "1 doors' locks are still held when its doors are unwound\n",
        "1 doors' locks are still held when its doors are unwound\n",
        "1 doors' locks are still held when its doors are unwound\n"};
    for (end_how = 0; end_how < ENDS; end_how++)
        fires(ends_with_a_door_lock, who[end_how], what[end_how]);
}
END_TEST

/* Doors nest as deep as a program makes values (the contract sets no
** depth): a ladder of doors hundreds deep, rt_update and rt_access in
** turn, holds exactly its depth in doors' locks at every rung and none
** after, on main and on a task; a task that leaves such a ladder by
** longjmp ends holding exactly that many, and that is what fires. */
#define LADDER_MAX 300
/* TSan's deadlock detector holds at most 64 locks a thread (it stops the
** process past that): under TSan the ladders stop at 60 + depth % 4. */
#define LADDER_DEPTH(d) (UNDER_TSAN ? 60 + (d) % 4 : (d))
static rt_shared *ladder[LADDER_MAX];
static unsigned ladder_depth;
static jmp_buf out_of_the_ladder;
static bool ladder_jumps;

static void rung(unsigned i);

static void rung_update(void *v, void *ctx)
{
    unsigned i = *(unsigned *)ctx;
    HOLDS_DOORS(i + 1);
    ++*(int64_t *)v;
    rung(i + 1);
    HOLDS_DOORS(i + 1);
}

static void rung_access(const void *v, void *ctx)
{
    unsigned i = *(unsigned *)ctx;
    HOLDS_DOORS(i + 1);
    NEED(*(const int64_t *)v == 0);
    rung(i + 1);
    HOLDS_DOORS(i + 1);
}

static void rung(unsigned i)
{
    if (i == ladder_depth) {
        if (ladder_jumps)
            longjmp(out_of_the_ladder, 1);
        return;
    }
    if (i % 2 == 0)
        NEED(rt_update(ladder[i], rung_update, &i) == RT_OK);
    else
        NEED(rt_access(ladder[i], rung_access, &i) == RT_OK);
}

static void make_ladder(void)
{
    int64_t zero = 0;
    for (unsigned i = 0; i < LADDER_MAX; i++)
        ladder[i] = rt_shared_new(i % 3 == 2 ? RT_OWNED : RT_COPY, sizeof zero, &zero, 4 * KIB);
}

static void *climb(void *arg)
{
    (void)arg;
    HOLDS_NONE();
    if (ladder_jumps) {
        if (setjmp(out_of_the_ladder) == 0)
            rung(0);
        return NULL;
    }
    rung(0);
    HOLDS_NONE();
    return NULL;
}

static void ladders_on_main_and_a_task(void)
{
    static const unsigned depths[] = {254, 255, 256, 257, LADDER_MAX};

    init_fixed(1024 * KIB);
    make_ladder();
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        ladder_depth = LADDER_DEPTH(depths[k]);
        climb(NULL);
        NEED(run_task(climb, NULL) == RT_OK);
    }
    for (unsigned i = 0; i < LADDER_MAX; i++) {
        int64_t got = -1;
        int64_t climbs_past = 0; /* on main and on the task */
        for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++)
            climbs_past += LADDER_DEPTH(depths[k]) > i ? 2 : 0;
        NEED(rt_get(ladder[i], &got) == RT_OK);
        NEED(got == (i % 2 == 0 ? climbs_past : 0));
        rt_shared_free(ladder[i]);
    }
    HOLDS_NONE();
}

START_TEST(doors_nested_hundreds_deep_hold_exactly_their_depth)
{
    run_silent(ladders_on_main_and_a_task, NULL);
}
END_TEST

static void a_task_leaves_the_ladder(void)
{
    init_fixed(1024 * KIB);
    make_ladder();
    ladder_jumps = true;
    run_task(climb, NULL);
    _exit(3); /* nothing fired */
}

START_TEST(a_task_that_ends_hundreds_of_doors_deep_fires_with_their_count)
{
    static const unsigned depths[] = {255, 256, 257, LADDER_MAX};
    char what[128];

    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        ladder_depth = LADDER_DEPTH(depths[k]);
        snprintf(what, sizeof what, "%u doors' locks are still held when its task ends\n",
                 ladder_depth);
        fires(a_task_leaves_the_ladder, "rt_spawn", what);
    }
}
END_TEST

/* A runtime call begins with no inner lock held, also at a thread's very
** first call: before rt_init (no state, the cache off) on main and on a
** plain thread; main's first call after rt_init (the process's first
** publish); a plain thread's first call while the direct path is open (a
** later publish) and once it is latched (the fallback). Each call that
** reaches the thread's state fires at its entry. */
static void leaves_an_inner_lock(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
}

static void first_take(void) { rt_chunk_take(); }
static void first_kept(void) { (void)rt_chunk_kept(); }
static void first_hot(void) { (void)rt_hot(); }
static void first_alloc(void) { (void)rt_alloc(16); }

static void first_region(void)
{
    static rt_region r;
    rt_region_open(&r);
}

static void (*const first_calls[])(void) = {first_take, first_kept, first_hot, first_alloc,
                                             first_region};
#define FIRST_CALLS (sizeof first_calls / sizeof first_calls[0])
enum { FIRST_BEFORE_INIT_MAIN, FIRST_BEFORE_INIT_THREAD, FIRST_MAIN_AFTER_INIT,
       FIRST_THREAD_DIRECT, FIRST_THREAD_LATCHED, FIRST_WHERES };
static unsigned first_call;
static int first_where;

static void *leak_then_first_call(void *arg)
{
    (void)arg;
    leaves_an_inner_lock();
    first_calls[first_call]();
    _exit(3); /* the entry did not fire */
}

static void held_into_a_first_call(void)
{
    pthread_t t;

    if (first_where != FIRST_BEFORE_INIT_MAIN && first_where != FIRST_BEFORE_INIT_THREAD)
        init_fixed(64 * KIB);
    if (first_where >= FIRST_THREAD_DIRECT) {
        rt_free(rt_alloc(8)); /* main's publish: the path opens where there is one */
        if (first_where == FIRST_THREAD_LATCHED)
            rt_hot_disable();
        NEED(rt_hot_direct() == (first_where == FIRST_THREAD_DIRECT && RT_PRIM_DIRECT));
    }
    if (first_where == FIRST_BEFORE_INIT_MAIN || first_where == FIRST_MAIN_AFTER_INIT)
        leak_then_first_call(NULL);
    NEED(pthread_create(&t, NULL, leak_then_first_call, NULL) == 0);
    pthread_join(t, NULL);
}

START_TEST(a_lock_held_into_a_threads_first_call_fires_before_and_after_rt_init)
{
    for (first_where = 0; first_where < FIRST_WHERES; first_where++)
        for (first_call = 0; first_call < FIRST_CALLS; first_call++)
            fires(held_into_a_first_call, "leaves_an_inner_lock",
                  "the lock it took is still held when this thread calls the runtime again\n");
}
END_TEST

/* A trylock that finds the mutex taken (EBUSY) records nothing: not inside
** the door whose lock it is (this thread's own door's lock), not on a task
** while main is in that door, not on a plain thread while another holds
** it as an inner lock. Each then calls the runtime and closes its door
** with no check firing. A trylock that takes the lock records it (above);
** one of this thread's own inner lock is a self-deadlock (below). */
static rt_shared *tried;
static int inner_taken, inner_done;

static void *task_tries(void *arg)
{
    (void)arg;
    NEED(rt__shared_locked(tried)); /* main's door holds it */
    HOLDS_NONE();
    rt_free(rt_alloc(16));
    HOLDS_NONE();
    return NULL;
}

static void tries_in_its_door(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    NEED(rt__shared_locked(tried)); /* its own door's lock */
    HOLDS_DOORS(1);
    rt_free(rt_alloc(16));
    void *chunk = rt_chunk_take();
    rt_chunk_give(chunk, chunk);
    HOLDS_DOORS(1);
    NEED(run_task(task_tries, NULL) == RT_OK);
    HOLDS_DOORS(1);
}

static void *holds_an_inner_lock(void *arg)
{
    (void)arg;
    rt__lock(&m);
    __atomic_store_n(&inner_taken, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&inner_done, __ATOMIC_ACQUIRE))
        sched_yield();
    rt__unlock(&m);
    return NULL;
}

static void trylocks_that_find_it_taken(void)
{
    int64_t zero = 0;
    pthread_t t;

    init_fixed(256 * KIB);
    tried = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    NEED(rt_update(tried, tries_in_its_door, NULL) == RT_OK);
    HOLDS_NONE();
    NEED(!rt__shared_locked(tried));
    HOLDS_NONE();
    rt_shared_free(tried);

    rt__mutex_init(&m);
    NEED(pthread_create(&t, NULL, holds_an_inner_lock, NULL) == 0);
    while (!__atomic_load_n(&inner_taken, __ATOMIC_ACQUIRE))
        sched_yield();
    NEED(rt__trylock(&m) == EBUSY);
    HOLDS_NONE();
    rt_free(rt_alloc(16)); /* the entry check finds no inner lock */
    __atomic_store_n(&inner_done, 1, __ATOMIC_RELEASE);
    NEED(pthread_join(t, NULL) == 0);
    NEED(rt__trylock(&m) == 0); /* free now: taken and recorded */
    NEED(rt__locks.inner == &m);
    rt__unlock(&m);
    HOLDS_NONE();
    rt__mutex_destroy(&m);
}

static void trylock_of_its_own_lock(void)
{
    rt__mutex_init(&m);
    rt__lock(&m);
    rt__trylock(&m);
}

START_TEST(a_trylock_that_finds_the_lock_taken_records_nothing)
{
    run_silent(trylocks_that_find_it_taken, NULL);
    fires(trylock_of_its_own_lock, "trylock_of_its_own_lock",
          "lock of a mutex this thread already holds (a self-deadlock)\n");
}
END_TEST

/* The count of mutexes and conditions made and not destroyed is one for
** all threads, exact whichever thread makes or destroys them: a task makes
** a channel (its mutex and two conditions) and a shared value (its
** mutex) that main frees, main makes one a task frees, a plain thread
** makes a channel main frees and frees one main made. rt_init, a publish,
** a spawn and a join count nothing (their mutexes are static). */
static rt_chan *made_chan;
static rt_shared *made_shared;

static void *task_makes(void *arg)
{
    int64_t zero = 0;
    (void)arg;
    made_chan = rt_chan_new(1);
    made_shared = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    return NULL;
}

static void *task_frees(void *arg)
{
    (void)arg;
    rt_shared_free(made_shared);
    return NULL;
}

static void *thread_makes_and_frees(void *arg)
{
    rt_chan_free(arg);
    made_chan = rt_chan_new(3);
    return NULL;
}

static void counted_on_every_thread(void)
{
    int64_t zero = 0;
    pthread_t t;

    NEED(rt__locks_live() == 0);
    init_fixed(256 * KIB);
    NEED(rt__locks_live() == 0);
    rt_free(rt_alloc(8)); /* main's publish */
    NEED(run_task(nothing, NULL) == RT_OK);
    NEED(rt__locks_live() == 0);
    NEED(run_task(task_makes, NULL) == RT_OK);
    NEED(rt__locks_live() == 4);
    rt_chan_free(made_chan);
    NEED(rt__locks_live() == 1);
    rt_shared_free(made_shared);
    NEED(rt__locks_live() == 0);
    made_shared = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    NEED(rt__locks_live() == 1);
    NEED(run_task(task_frees, NULL) == RT_OK);
    NEED(rt__locks_live() == 0);
    rt_chan *mine = rt_chan_new(2);
    NEED(rt__locks_live() == 3);
    NEED(pthread_create(&t, NULL, thread_makes_and_frees, mine) == 0);
    NEED(pthread_join(t, NULL) == 0);
    NEED(rt__locks_live() == 3);
    rt_chan_free(made_chan);
    NEED(rt__locks_live() == 0);
}

START_TEST(mutexes_and_conditions_are_counted_whichever_thread_makes_or_destroys_them)
{
    run_silent(counted_on_every_thread, NULL);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("locks");

    suite_add_test(s, channels_on_one_thread_leave_the_checks_silent);
    suite_add_test(s, a_receiver_that_panics_in_rt_recv_leaves_no_lock);
    suite_add_test(s, a_sender_and_a_receiver_that_wait_leave_the_checks_silent);
    suite_add_test(s, doors_on_one_thread_leave_the_checks_silent);
    suite_add_test(s, a_doors_fn_that_calls_the_api_leaves_the_checks_silent);
    suite_add_test(s, panics_with_doors_open_leave_no_lock);
    suite_add_test(s, supervised_builds_and_rebuilds_leave_no_lock);
    suite_add_test(s, a_panic_in_mains_doors_exits_101_with_no_lock);
    suite_add_test(s, the_hot_path_the_strategy_and_the_task_table_leave_the_checks_silent);
    suite_add_test(s, every_mutex_and_condition_made_is_destroyed);
    suite_add_test(s, the_checks_fire_before_a_lock_is_waited_for);
    suite_add_test(s, the_count_of_locks_live_is_exact_after_threads_make_and_destroy_at_once);
    suite_add_test(s, a_doubled_unlock_fires);
    suite_add_test(s, the_message_reaches_a_buffered_stderr);
    suite_add_test(s, a_doubled_lock_fires);
    suite_add_test(s, a_doubled_door_lock_fires);
    suite_add_test(s, a_doors_lock_inside_an_inner_lock_fires);
    suite_add_test(s, a_door_unlock_of_another_mutex_fires);
    suite_add_test(s, a_wait_without_the_mutex_fires);
    suite_add_test(s, a_signal_or_broadcast_without_the_mutex_fires);
    suite_add_test(s, a_mutex_that_is_not_error_checking_fires);
    suite_add_test(s, a_destroy_of_a_held_mutex_fires);
    suite_add_test(s, the_record_alone_checks_where_locks_h_promises_it);
    suite_add_test(s, a_destroy_of_a_mutex_destroyed_already_or_never_made_fires);
    suite_add_test(s, an_inner_lock_inside_another_fires);
    suite_add_test(s, a_trylock_inside_an_inner_lock_fires);
    suite_add_test(s, a_trylocked_lock_held_into_the_next_call_fires);
    suite_add_test(s, a_lock_held_into_the_next_call_fires);
    suite_add_test(s, each_check_holds_with_another_inner_lock_held);
    suite_add_test(s, a_mutex_another_thread_holds_is_not_held_by_this_one);
    suite_add_test(s, the_nesting_message_names_the_function_that_holds_the_lock);
    suite_add_test(s, a_lock_held_into_any_call_fires_on_either_path);
    suite_add_test(s, a_lock_held_past_its_task_fires);
    suite_add_test(s, a_lock_held_past_its_thread_fires);
    suite_add_test(s, a_thread_that_ends_inside_a_door_fires);
    suite_add_test(s, a_lock_held_at_exit_fires);
    suite_add_test(s, a_program_that_exits_inside_a_door_holds_no_lock_it_should_not);
    suite_add_test(s, a_lock_held_past_its_door_fires);
    suite_add_test(s, a_lock_held_past_a_panic_fires);
    suite_add_test(s, a_door_lock_left_in_any_door_fires_at_its_close_at_every_depth);
    suite_add_test(s, a_door_lock_let_go_by_an_inner_door_fires_at_its_close_at_every_depth);
    suite_add_test(s, a_door_lock_left_past_a_task_or_any_panic_fires);
    suite_add_test(s, doors_nested_hundreds_deep_hold_exactly_their_depth);
    suite_add_test(s, a_task_that_ends_hundreds_of_doors_deep_fires_with_their_count);
    suite_add_test(s, a_lock_held_into_a_threads_first_call_fires_before_and_after_rt_init);
    suite_add_test(s, a_trylock_that_finds_the_lock_taken_records_nothing);
    suite_add_test(s, mutexes_and_conditions_are_counted_whichever_thread_makes_or_destroys_them);
    return s;
}
