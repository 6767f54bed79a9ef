/*
** check_task_faults.c: tasks, channels and blocks when memory or threads
** run out, found by injection (testutil.h, fail_nth), SQLite's way: fail
** the first call, then the second, ... until the operation completes.
**
** The contract says what each failure does: rt_spawn returns NULL with
** errno set and leaks nothing; an outside value, a task's table or a
** channel that cannot be allocated traps (SIGILL, out of room); main's
** block that cannot be made is rt_init's contract violation.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include "internal.h"
#include "points.h"
#include "refrt.h"
#include "task.h"
#include "testutil.h"

#define KIB ((size_t)1024)

/* rt_init, then main's first use: its thread state is made here, so no
** test's fail_nth lands on that calloc (hot.c's, tested there). */
static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
    ck_assert_uint_eq(rt_held(), 0);
}

static size_t expected_default(size_t running)
{
    size_t phys = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = phys / 64 / running / 4096 * 4096;
    return bytes > 65536 ? bytes : 65536;
}

static void *report_budget(void *unused)
{
    (void)unused;
    size_t *b = rt_alloc_outside(sizeof *b);
    *b = rt_budget();
    return b;
}

/* ---- rt_spawn ---------------------------------------------------------------- */

/* The calls a first spawn makes, in order, and what its failure returns:
** the task (calloc), its block (malloc), room in the table of tasks not
** yet joined (calloc: the first spawn makes it), the thread. */
static const int spawn_errno[] = {ENOMEM, ENOMEM, ENOMEM, EAGAIN};
#define SPAWN_CALLS (sizeof spawn_errno / sizeof spawn_errno[0])

START_TEST(a_spawn_that_cannot_get_what_it_needs_fails_cleanly)
{
    unsigned long n;
    rt_task *t = NULL;
    size_t *b;

    init_fixed(64 * KIB);
    for (n = 1; t == NULL; n++) {
        fail_nth(n);
        errno = 0;
        t = rt_spawn(report_budget, NULL);
        int err = errno;
        unsigned long calls = fail_calls();
        fail_nth(0);
        if (t != NULL) {
            ck_assert_uint_lt(calls, n); /* it completed: no call failed */
            break;
        }
        ck_assert_uint_le(n, SPAWN_CALLS);
        ck_assert_int_eq(err, spawn_errno[n - 1]);
        ck_assert_uint_eq(rt__blocks_live(), 1); /* main's: the task's went */
        ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    }
    ck_assert_uint_eq(n, SPAWN_CALLS + 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 1);
    ck_assert_int_eq(rt_join(t, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 64 * KIB);
    rt_free(b);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    /* no failed spawn is still counted among the tasks running */
    rt_set_strategy(rt_default_strategy());
    t = rt_spawn(report_budget, NULL);
    ck_assert_int_eq(rt_join(t, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, expected_default(2));
    rt_free(b);
}
END_TEST

/* Spawned tasks are numbered from 1 in the order their spawns got their
** block (docs/budgets.md): a spawn whose block cannot be made (a strategy
** asking for more than a block can be, or its malloc failing) takes no
** number; one that fails later (the table of tasks, the thread) has taken
** its own. Seen in the panic lines: the first task spawned after two spawns
** whose block could not be made is task 1; after a spawn that fails at its
** thread, the next is one further. */
static size_t too_big_a_block(void *ctx, size_t running)
{
    (void)ctx;
    (void)running;
    return (size_t)1 << 40;
}

static void *panics_at_once(void *why)
{
    rt_panic(why);
}

static void spawns_after_failures(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_set_strategy((rt_strategy){too_big_a_block, NULL});
    if (rt_spawn(panics_at_once, "never") != NULL)
        _exit(3);
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    fail_nth(2); /* the block's malloc */
    rt_task *t = rt_spawn(panics_at_once, "never");
    fail_nth(0);
    if (t != NULL)
        _exit(4);
    t = rt_spawn(panics_at_once, "first");
    if (t == NULL || rt_join(t, NULL) != RT_PANICKED)
        _exit(5);
    fail_nth(3); /* the table of tasks is made: its thread, once the number is taken */
    errno = 0;
    t = rt_spawn(panics_at_once, "never");
    fail_nth(0);
    if (t != NULL || errno != EAGAIN)
        _exit(6);
    t = rt_spawn(panics_at_once, "third");
    if (t == NULL || rt_join(t, NULL) != RT_PANICKED)
        _exit(7);
}

START_TEST(tasks_are_numbered_in_the_order_their_spawns_got_their_block)
{
    struct death d = run_child(spawns_after_failures, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d; stderr: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, "refrt: task 1 panicked: first\n") != NULL &&
                      strstr(d.err, "refrt: task 3 panicked: third\n") != NULL &&
                      strstr(d.err, "never") == NULL,
                  "stderr: %s", d.err);
}
END_TEST

/* Whatever call of a spawn fails, the task it was making goes: past the
** first spawn (which makes the table of tasks), memory in use is as it
** was before. */
START_TEST(a_failed_spawn_leaves_nothing_allocated)
{
    size_t *b;

    init_fixed(64 * KIB);
    if (rt_join(rt_spawn(report_budget, NULL), (void **)&b) != RT_OK)
        ck_abort_msg("the first task did not end well");
    rt_free(b);
    for (unsigned long n = 1;; n++) {
        long before = allocs_live();
        fail_nth(n);
        rt_task *t = rt_spawn(report_budget, NULL);
        fail_nth(0);
        long after = allocs_live();
        if (t != NULL) {
            ck_assert_uint_ge(n, 2); /* at least the task and its block could fail */
            ck_assert_int_eq(rt_join(t, (void **)&b), RT_OK);
            rt_free(b);
            break;
        }
        ck_assert_int_eq(after, before);
    }
}
END_TEST

static void *returns_its_arg(void *arg)
{
    return arg;
}

/* Past the table's first size: a spawn whose table cannot grow fails, and
** the tasks spawned before it are joined as if nothing happened. */
START_TEST(a_table_of_tasks_that_cannot_grow_fails_the_spawn_only)
{
    enum { BEFORE = 8 }; /* 16 slots, at most half full: the 9th grows it */
    rt_task *t[BEFORE + 1];

    init_fixed(64 * KIB);
    for (int i = 0; i < BEFORE; i++)
        ck_assert_ptr_nonnull(t[i] = rt_spawn(returns_its_arg, NULL));
    fail_nth(3); /* the task, its block, then the table's growth */
    errno = 0;
    ck_assert_ptr_null(rt_spawn(returns_its_arg, NULL));
    ck_assert_int_eq(errno, ENOMEM);
    fail_nth(0);
    ck_assert_uint_eq(rt__tasks_unjoined(), BEFORE);
    ck_assert_ptr_nonnull(t[BEFORE] = rt_spawn(returns_its_arg, NULL));
    for (int i = 0; i <= BEFORE; i++)
        ck_assert_int_eq(rt_join(t[i], NULL), RT_OK);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- traps: outside values, tables and channels --------------------------- */

/* op(n) sets up what it needs, calls fail_nth(n), then runs the operation
** whose nth fallible call is to fail. */
struct fault {
    void (*op)(unsigned long n);
    unsigned long n;
};

static void run_fault(void *arg)
{
    struct fault *f = arg;
    f->op(f->n);
    unsigned long calls = fail_calls();
    fail_nth(0); /* _exit may allocate too (a coverage build's dump) */
    _exit(calls < f->n ? 0 : 3); /* 3: a failure that did not trap */
}

/* The operation's calls 1 to `calls` each trap when they fail, and with
** none of them failing it completes. */
static void traps_at_each_call(void (*op)(unsigned long), unsigned long calls)
{
    for (unsigned long n = 1; n <= calls; n++) {
        struct fault f = {op, n};
        ck_assert_trap(run_fault, &f);
    }
    struct fault f = {op, calls + 1};
    struct death d = run_child(run_fault, &f);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
}

static void alloc_outside(unsigned long n)
{
    init_fixed(64 * KIB);
    fail_nth(n);
    rt_alloc_outside(100);
}

START_TEST(an_outside_value_that_cannot_be_made_traps)
{
    traps_at_each_call(alloc_outside, 2); /* the value, then the task's first table */
}
END_TEST

static void grow_outside(unsigned long n)
{
    init_fixed(64 * KIB);
    char *p = rt_alloc_outside(100);
    memset(p, 'o', 100);
    fail_nth(n);
    p = rt_realloc(p, 5000);
    fail_nth(0);
    if (p[99] != 'o' || rt_held() != 5000)
        _exit(4);
}

START_TEST(an_outside_value_that_cannot_grow_traps)
{
    traps_at_each_call(grow_outside, 1);
}
END_TEST

/* The ninth outside value grows the task's table (16 slots, at most half
** full); a value received on a channel or a result taken at a join goes in
** the same table. */
static void ninth_outside(unsigned long n)
{
    init_fixed(64 * KIB);
    for (int i = 0; i < 8; i++)
        rt_alloc_outside(10);
    fail_nth(n);
    rt_alloc_outside(10);
}

struct receiver {
    rt_chan *c;
    unsigned long n;
};

static void *ninth_received(void *arg)
{
    struct receiver *r = arg;
    for (int i = 0; i < 8; i++)
        rt_alloc_outside(10);
    fail_nth(r->n); /* this thread's calls: the test's fail_nth is main's */
    rt_recv(r->c);
    unsigned long calls = fail_calls();
    fail_nth(0);
    if (calls >= r->n)
        _exit(3);
    return NULL;
}

static void receive_into_a_full_table(unsigned long n)
{
    init_fixed(64 * KIB);
    struct receiver r = {rt_chan_new(1), n};
    rt_send(r.c, rt_alloc_outside(10));
    rt_join(rt_spawn(ninth_received, &r), NULL);
}

static void *returns_outside(void *unused)
{
    (void)unused;
    return rt_alloc_outside(10);
}

static void join_into_a_full_table(unsigned long n)
{
    init_fixed(64 * KIB);
    rt_task *t = rt_spawn(returns_outside, NULL);
    void *r;
    for (int i = 0; i < 8; i++)
        rt_alloc_outside(10);
    fail_nth(n);
    rt_join(t, &r);
}

START_TEST(a_table_of_outside_values_that_cannot_grow_traps)
{
    traps_at_each_call(ninth_outside, 2); /* the value, then the table */
    traps_at_each_call(receive_into_a_full_table, 1);
    traps_at_each_call(join_into_a_full_table, 1);
}
END_TEST

static void make_channel(unsigned long n)
{
    init_fixed(64 * KIB);
    fail_nth(n);
    rt_chan *c = rt_chan_new(3);
    fail_nth(0);
    rt_chan_free(c);
}

START_TEST(a_channel_that_cannot_be_made_traps)
{
    traps_at_each_call(make_channel, 2); /* the channel, then its ring */
}
END_TEST

/* A trap that reports how many fallible calls came before it, then dies
** of it as it would have (through a coverage build's handler, if any). */
static void (*trap_before)(int);

static void report_calls_and_die(int sig)
{
    char line[64];
    int n = snprintf(line, sizeof line, "calls %lu\n", fail_calls());
    if (write(2, line, (size_t)n) != n)
        _exit(5);
    signal(sig, trap_before);
    raise(sig);
}

static void overflowing_channel(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    trap_before = signal(SIGILL, report_calls_and_die);
    fail_nth(1000); /* counts the calls, fails none */
    rt_chan_new(SIZE_MAX / 8);
    _exit(3);
}

START_TEST(an_overflowing_capacity_traps_before_anything_is_allocated)
{
    struct death d = run_child(overflowing_channel, NULL);
    ck_assert_int_eq(d.signal, SIGILL);
    ck_assert_str_eq(d.err, "calls 0\n"); /* nothing allocated, nothing leaked */
}
END_TEST

/* ---- main's block ------------------------------------------------------------ */

static void init_without_memory(void *unused)
{
    (void)unused;
    fail_nth(1); /* rt_init's one allocation: main's block */
    rt_init();
    _exit(3);
}

START_TEST(a_main_block_that_cannot_be_made_is_rt_inits_violation)
{
    ck_assert_violation(init_without_memory, NULL, "refrt: rt_init: no memory for main's block\n");
}
END_TEST

#if RT_TESTING /* from here on, the named points (points.h): a test build's */

/* ---- a violation is reported at once ------------------------------------ */

/* A contract violation prints its line and aborts at the call: it waits
** for nothing, not even for a lock the runtime holds on another thread,
** or a bad call made while another thread is inside the runtime would
** hang instead of reporting. rt_set_strategy of a strategy with no
** block_bytes is tried while another thread holds the strategy lock,
** parked at a named point (points.h) inside a spawn's read of the strategy
** or inside a strategy set, from a plain thread and from a task. The
** parked thread is never released: the violation ends the process. If
** the violating thread sleeps in a futex wait instead (/proc), the child
** says so and exits 3. A small harness of its own (check_interleave.c has
** the general one): relaxed atomics, no happens-before edge. */
struct held_lock_case {
    const char *point;  /* where the holder parks, holding the lock */
    int holder_spawns;  /* 1: the holder spawns; 0: it sets a strategy */
    int violator_task;  /* 1: the violating call is made by a task */
};

static const char *park_point;
static int park_claimed, park_parked, violator_tid, violator_go;

static int ld_int(const int *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void nap_briefly(void)
{
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
}

static void park_for_ever(const char *name)
{
    const char *at = __atomic_load_n(&park_point, __ATOMIC_RELAXED);
    if (at == NULL || strcmp(name, at) != 0 ||
        __atomic_exchange_n(&park_claimed, 1, __ATOMIC_RELAXED) != 0)
        return;
    __atomic_store_n(&park_parked, 1, __ATOMIC_RELAXED);
    for (;;)
        nap_briefly();
}

static void *nothing_task(void *unused)
{
    (void)unused;
    return NULL;
}

static void *holder_main(void *arg)
{
    const struct held_lock_case *c = arg;
    if (c->holder_spawns)
        (void)rt_spawn(nothing_task, NULL);
    else
        rt_set_strategy(rt_fixed_strategy(16 * KIB));
    return NULL;
}

static void *violator_main(void *unused)
{
    (void)unused;
    while (!ld_int(&violator_go))
        nap_briefly();
    __atomic_store_n(&violator_tid, (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
    rt_set_strategy((rt_strategy){NULL, NULL});
    return NULL;
}

/* Whether thread tid sleeps in a futex wait (FUTEX_WAIT, _WAIT_BITSET). */
static int in_futex_wait(int tid)
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
    return nr == SYS_futex && ((op & 127) == 0 || (op & 127) == 9);
}

#if UNDER_SANITIZER
#define PARK_DEADLINE_NAPS 200000 /* 20 s of 100 us naps */
#else
#define PARK_DEADLINE_NAPS 100000
#endif

static void violation_while_the_lock_is_held(void *arg)
{
    const struct held_lock_case *c = arg;
    pthread_t holder, violator;
    rt_task *vt = NULL;
    long naps;

    init_fixed(8 * KIB);
    if (c->violator_task) {
        vt = rt_spawn(violator_main, NULL); /* before anyone holds the lock */
        ck_require(vt != NULL);
    } else {
        ck_require(pthread_create(&violator, NULL, violator_main, NULL) == 0);
    }
    __atomic_store_n(&park_point, c->point, __ATOMIC_RELAXED);
    __atomic_store_n(&rt__point_hook, park_for_ever, __ATOMIC_RELAXED);
    ck_require(pthread_create(&holder, NULL, holder_main, (void *)c) == 0);
    for (naps = 0; !ld_int(&park_parked); naps++) {
        if (naps > PARK_DEADLINE_NAPS) {
            fprintf(stderr, "the holder never parked at %s\n", c->point);
            _exit(4);
        }
        nap_briefly();
    }
    __atomic_store_n(&violator_go, 1, __ATOMIC_RELAXED);
    for (naps = 0;; naps++) {
        int tid = ld_int(&violator_tid);
        if (tid != 0 && in_futex_wait(tid)) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
            if (in_futex_wait(tid)) {
                fprintf(stderr, "rt_set_strategy's violation waited for the lock held at %s\n",
                        c->point);
                _exit(3);
            }
        }
        if (naps > PARK_DEADLINE_NAPS) {
            fprintf(stderr, "rt_set_strategy's violation neither aborted nor waited\n");
            _exit(5);
        }
        nap_briefly();
    }
}

START_TEST(a_strategy_without_block_bytes_is_refused_at_once_while_the_strategy_lock_is_held)
{
    static const struct held_lock_case cases[] = {
        {"task.block_for_new_task.locked", 1, 0},
        {"task.block_for_new_task.locked", 1, 1},
        {"task.set_strategy.locked", 0, 0},
        {"task.set_strategy.locked", 0, 1},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct death d = run_child(violation_while_the_lock_is_held, (void *)&cases[i]);
        ck_assert_msg(d.signal == SIGABRT,
                      "case %zu (held at %s, violator a %s): expected SIGABRT, got signal %d "
                      "exit %d; stderr: %s",
                      i, cases[i].point, cases[i].violator_task ? "task" : "plain thread",
                      d.signal, d.exit_status, d.err);
        ck_assert_msg(strstr(d.err, "refrt: rt_set_strategy: block_bytes is NULL") != NULL,
                      "case %zu: stderr lacks the violation: %s", i, d.err);
    }
}
END_TEST

/* ---- a panic's line is out before its doors unwind ------------------------ */

/* A panic prints its line, flushed (stderr may be fully buffered), before
** it unwinds anything (docs/budgets.md, "Tasks and panics"): whatever an
** unwind lets happen (a waiter getting the value's lock, a process killed
** meanwhile) comes after the line is out. stderr is made fully buffered
** and sent to a file; at the first door's unwind (the named point
** shared.unwind.begin) the file must hold the line. A panic in a door on
** a copy and on an owned value, on a spawned task and on main. */
static int line_fd = -1;

static void line_out_at_unwind(const char *name)
{
    char buf[512];
    ssize_t n;

    if (strcmp(name, "shared.unwind.begin") != 0)
        return;
    n = pread(line_fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    _exit(strstr(buf, "panicked: in the door\n") != NULL ? 7 : 3);
}

static void panics_in_the_door(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_panic("in the door");
}

static void *updates_and_panics(void *arg)
{
    rt_shared *s = arg;
    (void)rt_update(s, panics_in_the_door, NULL);
    return NULL;
}

struct panic_case {
    rt_kind kind;
    int on_main;
};

static void panic_with_buffered_stderr(void *arg)
{
    const struct panic_case *c = arg;
    static char buf[8192];
    char path[] = "/tmp/refrt-panic-line-XXXXXX";
    int v = 5;
    rt_shared *s;

    line_fd = mkstemp(path);
    ck_require(line_fd >= 0);
    unlink(path);
    fflush(stderr);
    dup2(line_fd, 2);
    setvbuf(stderr, buf, _IOFBF, sizeof buf);
    init_fixed(64 * KIB);
    s = rt_shared_new(c->kind, sizeof v, &v, 16 * KIB);
    ck_require(s != NULL);
    __atomic_store_n(&rt__point_hook, line_out_at_unwind, __ATOMIC_RELAXED);
    if (c->on_main)
        updates_and_panics(s);
    else
        (void)rt_join(rt_spawn(updates_and_panics, s), NULL);
    _exit(4); /* no unwind was reached */
}

START_TEST(a_panics_line_is_flushed_before_its_doors_unwind)
{
    static const struct panic_case cases[] = {
        {RT_COPY, 0}, {RT_OWNED, 0}, {RT_COPY, 1}, {RT_OWNED, 1},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct death d = run_child(panic_with_buffered_stderr, (void *)&cases[i]);
        ck_assert_msg(d.signal == 0 && d.exit_status == 7,
                      "case %zu (%s, on %s): exit %d signal %d (3: the line was not out at the "
                      "unwind; 4: no unwind); stderr: %s",
                      i, cases[i].kind == RT_COPY ? "copy" : "owned",
                      cases[i].on_main ? "main" : "a task", d.exit_status, d.signal, d.err);
    }
}
END_TEST

/* ---- a door is popped before its unwind runs ------------------------------ */

/* A panic pops each open door, innermost first, before it calls the
** door's unwind (docs/budgets.md, "Tasks and panics"; task.c: "Popped
** before the call, so an unwind never sees its own door again"): while an
** unwind runs, the innermost door is the one around it. White-box: doors
** of the test's own (struct rt_door, internal.h) whose unwind records the
** thread's innermost door, 1, 2 and 3 deep, on a spawned task. */
struct seen_door {
    struct rt_door door;
    struct rt_door *seen; /* the innermost door while this one unwound */
    int unwound;
};

static void record_innermost(struct rt_door *d)
{
    struct seen_door *sd = (struct seen_door *)d;
    sd->seen = rt__hot_or_null()->door;
    sd->unwound++;
}

static struct seen_door seen_doors[3];

static void *opens_doors_and_panics(void *arg)
{
    struct rt_hot *h = rt__task_hot("test");
    int depth = (int)(intptr_t)arg;

    for (int i = 0; i < depth; i++) {
        seen_doors[i] = (struct seen_door){{h->door, NULL, record_innermost, NULL}, NULL, 0};
        h->door = &seen_doors[i].door;
    }
    rt_panic("with doors open");
    return NULL;
}

START_TEST(a_panic_pops_each_door_before_its_unwind_runs)
{
    init_fixed(64 * KIB);
    for (int depth = 1; depth <= 3; depth++) {
        rt_task *t = rt_spawn(opens_doors_and_panics, (void *)(intptr_t)depth);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(rt_join(t, NULL), RT_PANICKED);
        for (int i = 0; i < depth; i++) {
            ck_assert_int_eq(seen_doors[i].unwound, 1);
            ck_assert_msg(seen_doors[i].seen == (i == 0 ? NULL : &seen_doors[i - 1].door),
                          "depth %d: door %d unwound with %p innermost, not the door around it",
                          depth, i, (void *)seen_doors[i].seen);
        }
    }
}
END_TEST

/* ---- a panic unwinds its doors before it closes a region ---------------- */

/* A panic unwinds every open door before it frees anything, the task's
** regions included (docs/budgets.md, "Tasks and panics"): a door's unwind
** (its value's write-back, its lock's release) runs while every region of
** the task is still open, with its bytes, the regions opened inside the
** door's fn and around the door alike. White-box: a door of the test's
** own whose unwind looks at the regions, 1 and 2 deep, the door opened
** inside the outer region or outside every region. */
#define REGION_BYTES 64
struct region_door {
    struct rt_door door;
    rt_region *regions[2];
    unsigned char *bytes[2];
    int nregions, unwound, open, intact;
};
static struct region_door region_door;

static void look_at_the_regions(struct rt_door *d)
{
    struct region_door *rd = (struct region_door *)d;
    rd->unwound++;
    rd->open = rd->intact = 1;
    for (int i = 0; i < rd->nregions; i++) {
        rd->open &= rd->regions[i]->base != NULL;
        for (int k = 0; k < REGION_BYTES; k++)
            rd->intact &= rd->bytes[i][k] == 0xA5;
    }
    rd->open &= rt__hot_or_null()->innermost == rd->regions[rd->nregions - 1];
}

static void *opens_regions_and_a_door_then_panics(void *arg)
{
    struct rt_hot *h = rt__task_hot("test");
    int how = (int)(intptr_t)arg, depth = how / 2 + 1;
    bool door_first = how % 2;
    rt_region r[2];

    region_door = (struct region_door){{NULL, NULL, look_at_the_regions, NULL}, {NULL}, {NULL},
                                       depth, 0, 0, 0};
    for (int i = 0; i < depth; i++) {
        if (i == 0 && door_first) {
            region_door.door.outer = h->door;
            h->door = &region_door.door;
        }
        rt_region_open(&r[i]);
        region_door.regions[i] = &r[i];
        region_door.bytes[i] = rt_region_alloc(&r[i], 1, REGION_BYTES, 0xA5);
    }
    if (!door_first) {
        region_door.door.outer = h->door;
        h->door = &region_door.door;
    }
    rt_panic("with regions and a door open");
    return NULL;
}

START_TEST(a_panic_unwinds_its_doors_before_it_closes_a_region)
{
    init_fixed(64 * KIB);
    for (int how = 0; how < 4; how++) {
        rt_task *t = rt_spawn(opens_regions_and_a_door_then_panics, (void *)(intptr_t)how);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(rt_join(t, NULL), RT_PANICKED);
        ck_assert_int_eq(region_door.unwound, 1);
        ck_assert_msg(region_door.open && region_door.intact,
                      "%d regions, the door %s them: at the unwind open %d, bytes intact %d",
                      how / 2 + 1, how % 2 ? "around" : "inside", region_door.open,
                      region_door.intact);
    }
}
END_TEST

#endif /* RT_TESTING */

/* ---- a spawn that fails inside a task (tw14c) ------------------------------ */

/* rt_spawn called by a spawned task, its Nth allocation or its thread made
** to fail, each N in turn until it succeeds: NULL with errno set (ENOMEM
** or EAGAIN, the contract's "NULL with errno set when no thread can be
** made"), and the calling task's figures untouched (its held figure, its
** budget), no block made (main's and its own live), no task left to join
** but itself. No failed spawn counts among the tasks running: the strategy
** of the spawn that succeeds is told 3 (main, the spawner, the new task:
** docs/budgets.md, "tasks_running counts the running tasks including the
** one being made"), and once both have ended, main's next spawn 2. */
static atomic_size_t running_told;

static size_t records_running(void *ctx, size_t running)
{
    (void)ctx;
    atomic_store(&running_told, running);
    return 64 * KIB;
}

struct inner_spawn {
    int failed_at; /* 0: every figure as the contract says */
    unsigned long failures;
    pthread_barrier_t done; /* main joins only after the failures: until
                               then the spawner is a task not yet joined */
    size_t running_at_success, child_budget;
};

static void *spawns_with_failures(void *arg)
{
    struct inner_spawn *x = arg;
    void *out = rt_alloc_outside(100), *in = rt_alloc(100);
    size_t held = rt_held(), budget = rt_budget();
    rt_task *t = NULL;
    for (unsigned long n = 1; t == NULL && n < 100; n++) {
        fail_nth(n);
        errno = 0;
        t = rt_spawn(report_budget, NULL);
        int err = errno;
        fail_nth(0);
        if (t != NULL)
            break;
        x->failures++;
        if (err != ENOMEM && err != EAGAIN && !x->failed_at)
            x->failed_at = 1;
        if ((rt_held() != held || rt_budget() != budget) && !x->failed_at)
            x->failed_at = 2;
        if (rt__blocks_live() != 2 && !x->failed_at)
            x->failed_at = 3;
        if (rt__tasks_unjoined() != 1 && !x->failed_at)
            x->failed_at = 4;
    }
    x->running_at_success = atomic_load(&running_told);
    pthread_barrier_wait(&x->done);
    if (t == NULL)
        return NULL;
    size_t *b = NULL;
    if (rt_join(t, (void **)&b) != RT_OK && !x->failed_at)
        x->failed_at = 5;
    x->child_budget = b != NULL ? *b : 0;
    rt_free(b);
    if (rt_held() != held && !x->failed_at)
        x->failed_at = 6;
    rt_free(in);
    rt_free(out);
    return NULL;
}

START_TEST(a_spawn_that_fails_inside_a_task_leaves_its_figures_and_the_running_count_exact)
{
    struct inner_spawn x = {0};
    rt_set_strategy((rt_strategy){records_running, NULL});
    rt_init();
    ck_assert_uint_eq(rt_held(), 0);
    pthread_barrier_init(&x.done, NULL, 2);
    rt_task *t = rt_spawn(spawns_with_failures, &x);
    ck_assert_ptr_nonnull(t);
    pthread_barrier_wait(&x.done);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    pthread_barrier_destroy(&x.done);
    ck_assert_msg(x.failed_at == 0, "check %d", x.failed_at);
    ck_assert_uint_gt(x.failures, 0); /* at least its thread (pthread_create) could not be made */
    ck_assert_uint_eq(x.running_at_success, 3);
    ck_assert_uint_eq(x.child_budget, 64 * KIB);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    size_t *b = NULL;
    ck_assert_int_eq(rt_join(rt_spawn(report_budget, NULL), (void **)&b), RT_OK);
    ck_assert_uint_eq(atomic_load(&running_told), 2);
    rt_free(b);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("task_faults");
    suite_add_test(s, a_spawn_that_cannot_get_what_it_needs_fails_cleanly);
    suite_add_test(s, a_failed_spawn_leaves_nothing_allocated);
    suite_add_test(s, tasks_are_numbered_in_the_order_their_spawns_got_their_block);
    suite_add_test(s, a_table_of_tasks_that_cannot_grow_fails_the_spawn_only);
    suite_add_test(s, an_outside_value_that_cannot_be_made_traps);
    suite_add_test(s, an_outside_value_that_cannot_grow_traps);
    suite_add_test(s, a_table_of_outside_values_that_cannot_grow_traps);
    suite_add_test(s, a_channel_that_cannot_be_made_traps);
    suite_add_test(s, an_overflowing_capacity_traps_before_anything_is_allocated);
    suite_add_test(s, a_main_block_that_cannot_be_made_is_rt_inits_violation);
    suite_add_test(s, a_spawn_that_fails_inside_a_task_leaves_its_figures_and_the_running_count_exact);
#if RT_TESTING
    suite_add_test(s, a_strategy_without_block_bytes_is_refused_at_once_while_the_strategy_lock_is_held);
    suite_add_test(s, a_panics_line_is_flushed_before_its_doors_unwind);
    suite_add_test(s, a_panic_pops_each_door_before_its_unwind_runs);
    suite_add_test(s, a_panic_unwinds_its_doors_before_it_closes_a_region);
#endif
    return s;
}
