/*
** check_shared.c: shared values, doors and poisoning (seed 002: D5, D6,
** D9, D11; supervised values, ADR-327 D1 to D3).
**
** Each test runs its scenario in a child (run_child) so that the panics it
** provokes are captured and checked, and fails with the line of the first
** unmet need. The rows of docs/poisoning.md name these tests one for one.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"
#include "refrt.h"
#include "shared.h"
#include "testutil.h"

#define KIB ((size_t)1024)

/* In a scenario (a child, maybe a task in it): the first unmet need ends
** the child with its line. */
#define NEED(c)                                                                      \
    do {                                                                             \
        if (!(c)) {                                                                  \
            dprintf(need_fd, "need failed at line %d: %s\n", __LINE__, #c);          \
            _exit(1);                                                                \
        }                                                                            \
    } while (0)
static int need_fd = 2; /* the stress test sends panics elsewhere, not this */

/* The scenario, then exit() rather than run_child's _exit(), so that the
** sanitizers' exit checks (LeakSanitizer's leak check, ThreadSanitizer's
** exit status after a report) run in the child too. */
struct scenario {
    void (*fn)(void *);
};

/* A scenario that deadlocks (a deliberate fault can make one) dies with
** the test process when Check's timeout kills it, rather than hang on. */
static void die_with_the_test(void)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1)
        _exit(3);
}

static void scenario_then_exit(void *arg)
{
    die_with_the_test();
    ((struct scenario *)arg)->fn(NULL);
    exit(0);
}

static void scenario_violates(void *arg)
{
    die_with_the_test();
    ((struct scenario *)arg)->fn(NULL);
}

/* fn must end in the contract violation whose message holds msg. */
static void violates(void (*fn)(void *), const char *msg)
{
    struct scenario sc = {fn};
    ck_assert_violation(scenario_violates, &sc, msg);
}

/* Runs the scenario in a child; it must exit 0 with no sanitizer report,
** and its stderr must hold `expect` when that is not NULL (a panic's
** message, say). */
static struct death run_ok_death(void (*fn)(void *), const char *expect)
{
    struct scenario sc = {fn};
    struct death d = run_child(scenario_then_exit, &sc);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d; stderr: %s",
                  d.signal, d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, "Sanitizer") == NULL, "a sanitizer report: %s", d.err);
    if (expect != NULL)
        ck_assert_msg(strstr(d.err, expect) != NULL, "stderr lacks \"%s\": %s", expect, d.err);
    return d;
}

static void run_ok(void (*fn)(void *), const char *expect)
{
    (void)run_ok_death(fn, expect);
}

#define RUN_OK(fn, expect) run_ok((fn), (expect))

/* As RUN_OK, and expect is said exactly times times: a line the runtime
** prints for each refusal is printed for every one, not only the first. */
static void run_ok_said(void (*fn)(void *), const char *expect, int times)
{
    int said = 0;
    struct death d = run_ok_death(fn, NULL);
    for (const char *p = d.err; (p = strstr(p, expect)) != NULL; p += strlen(expect))
        said++;
    ck_assert_msg(said == times, "\"%s\" said %d times, not %d: %s", expect, said, times, d.err);
}

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

/* Every shared value a scenario makes is tracked until it is freed, so
** that after a task panicked the scenario can check that no value is left
** locked (the unwind releases the locks) before a door would wait on one. */
static rt_shared *tracked[64];

static rt_shared *track(rt_shared *s)
{
    for (size_t i = 0; i < sizeof tracked / sizeof tracked[0]; i++)
        if (tracked[i] == NULL) {
            tracked[i] = s;
            return s;
        }
    NEED(!"more than 64 shared values");
    return s;
}

static void untrack(rt_shared *s)
{
    for (size_t i = 0; i < sizeof tracked / sizeof tracked[0]; i++)
        if (tracked[i] == s)
            tracked[i] = NULL;
}

#define rt_shared_new(...) track((rt_shared_new)(__VA_ARGS__))
#define rt_shared_supervised(...) track((rt_shared_supervised)(__VA_ARGS__))
#define rt_shared_free(s) (untrack(s), (rt_shared_free)(s))

/* Runs fn(arg) as a task and joins it; a task that panicked left no value
** locked. */
static rt_status run_task(void *(*fn)(void *), void *arg)
{
    void *result = NULL;
    rt_task *t = rt_spawn(fn, arg);
    NEED(t != NULL);
    rt_status st = rt_join(t, &result);
    NEED(result == NULL);
    for (size_t i = 0; st == RT_PANICKED && i < sizeof tracked / sizeof tracked[0]; i++)
        NEED(tracked[i] == NULL || !rt__shared_locked(tracked[i]));
    return st;
}

static int64_t get_i64(rt_shared *s)
{
    int64_t v = -1;
    NEED(rt_get(s, &v) == RT_OK);
    return v;
}

static rt_shared *new_i64(int64_t v)
{
    return rt_shared_new(RT_COPY, sizeof v, &v, 256);
}

/* An owned value: a list of numbers whose items live in the value's block. */
struct list {
    int64_t *items;
    size_t n, cap;
};

static void push(struct list *l, int64_t x)
{
    if (l->n == l->cap) {
        l->cap = l->cap != 0 ? l->cap * 2 : 4;
        l->items = rt_realloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->n++] = x;
}

static rt_shared *new_list(size_t block_bytes)
{
    struct list empty = {NULL, 0, 0};
    return rt_shared_new(RT_OWNED, sizeof empty, &empty, block_bytes);
}

static void list_sum(const void *value, void *ctx)
{
    const struct list *l = value;
    int64_t sum = 0;
    for (size_t i = 0; i < l->n; i++)
        sum += l->items[i];
    *(int64_t *)ctx = sum;
}

static int64_t sum_of(rt_shared *list)
{
    int64_t sum = -1;
    NEED(rt_access(list, list_sum, &sum) == RT_OK);
    return sum;
}

static void push_ctx(void *value, void *ctx)
{
    push(value, *(int64_t *)ctx);
}

static void add_one_item(void *value, void *ctx)
{
    (void)ctx;
    push(value, 1);
}

static void add_ctx(void *value, void *ctx)
{
    *(int64_t *)value += *(int64_t *)ctx;
}

static int ran; /* how many fns ran, in the scenario's own thread order */

static void count_update(void *value, void *ctx)
{
    (void)value, (void)ctx;
    ran++;
}

static void count_access(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    ran++;
}

static void count_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    ran++;
}

/* ---- RT_COPY updates (D11, first rule) --------------------------------- */

/* The seed's `kasse.update fn(mut v) { v += i64::MAX }`: the sum
** overflows, the copy has been scribbled on, and the update panics. */
static void add_max_or_panic(void *value, void *ctx)
{
    int64_t *v = value, sum;
    (void)ctx;
    if (__builtin_add_overflow(*v, INT64_MAX, &sum)) {
        *v = -777; /* the copy is changed, then the panic */
        rt_panic("i64 overflow");
    }
    *v = sum;
}

static void *update_kasse(void *kasse)
{
    rt_update(kasse, add_max_or_panic, NULL);
    return NULL;
}

static void *read_kasse(void *kasse)
{
    NEED(!rt_poisoned(kasse));
    NEED(get_i64(kasse) == 5);
    return NULL;
}

/* Allocates past the task's budget inside a copy update: D6 for the task. */
static void add_then_allocate_too_much(void *value, void *ctx)
{
    (void)ctx;
    *(int64_t *)value += 1000;
    rt_alloc(rt_budget() + 1);
}

static void *update_allocating(void *kasse)
{
    rt_update(kasse, add_then_allocate_too_much, NULL);
    return NULL;
}

/* A copy value too big for the door's copy on the stack: copied on the
** heap, freed at the door's end or by the panic. */
struct big {
    int64_t n[64];
};

static void fill_big(void *value, void *ctx)
{
    struct big *b = value;
    for (int i = 0; i < 64; i++)
        b->n[i] += i;
    if (ctx != NULL)
        rt_panic("a big copy");
}

static void *update_big_then_panic(void *big)
{
    rt_update(big, fill_big, big);
    return NULL;
}

static void copy_update_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *kasse = new_i64(5);
    NEED(run_task(update_kasse, kasse) == RT_PANICKED);
    NEED(!rt__shared_locked(kasse)); /* the unwind released it */
    NEED(run_task(read_kasse, kasse) == RT_OK); /* a second task, no panic */
    NEED(run_task(update_allocating, kasse) == RT_PANICKED);
    NEED(run_task(read_kasse, kasse) == RT_OK);
    /* and an update that returns is written back */
    int64_t two = 2;
    NEED(rt_update(kasse, add_ctx, &two) == RT_OK);
    NEED(get_i64(kasse) == 7);
    rt_shared_free(kasse);
    NEED(rt__blocks_live() == 1);

    struct big zero = {{0}}, out;
    rt_shared *big = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
    NEED(rt_update(big, fill_big, NULL) == RT_OK);
    NEED(run_task(update_big_then_panic, big) == RT_PANICKED);
    NEED(rt_get(big, &out) == RT_OK && !rt_poisoned(big));
    for (int i = 0; i < 64; i++)
        NEED(out.n[i] == i);
    rt_shared_free(big);
}

/* A copy is taken and written back byte for byte, no byte more: values
** whose last byte is the last byte of their block (the block sized to the
** value's chunk: an 8-byte header, then the value, rounded to 16), at
** sizes 1 to 8 short of a granule and past the copy on the stack, in an
** rt_update and in an rt_update_all. A copy that read or wrote past the
** value would reach past the block's malloc: ASan reports it. */
static void copy_every_byte_plus_one(void *value, void *ctx)
{
    size_t n = *(size_t *)ctx;
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)value)[i] += 1;
}

static void copy_pair_plus_one(void *va, void *vb, void *ctx)
{
    copy_every_byte_plus_one(va, ctx);
    copy_every_byte_plus_one(vb, ctx);
}

static void copies_at_the_end_of_their_block(void *unused)
{
    static const size_t sizes[] = {1, 8, 24, 120, 136, 1000, 4104};
    static unsigned char init[4104], out[4104];
    (void)unused;
    init_fixed(64 * KIB);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k], block = (n + 8 + 15) & ~(size_t)15;
        memset(init, 0x40, n);
        rt_shared *a = rt_shared_new(RT_COPY, n, init, block);
        rt_shared *b = rt_shared_new(RT_COPY, n, init, block);
        NEED(rt_update(a, copy_every_byte_plus_one, &n) == RT_OK);
        NEED(rt_update_all(a, b, copy_pair_plus_one, &n) == RT_OK);
        NEED(rt_get(a, out) == RT_OK);
        for (size_t i = 0; i < n; i++)
            NEED(out[i] == 0x42);
        NEED(rt_get(b, out) == RT_OK);
        for (size_t i = 0; i < n; i++)
            NEED(out[i] == 0x41);
        rt_shared_free(a);
        rt_shared_free(b);
    }
}

START_TEST(a_copy_takes_and_writes_back_no_byte_past_its_value)
{
    RUN_OK(copies_at_the_end_of_their_block, NULL);
}
END_TEST

/* An RT_COPY update works on a copy whatever the value's size: a panic in
** fn leaves the old value whole and unpoisoned (D11), an update that
** returns writes every byte back, and fn's allocation comes from the task's
** block, never the value's. At sizes either side of the copy on the stack
** (128) and of a page, and up to 1 MiB; in rt_update and in rt_update_all
** over two copies. */
struct copy_sized {
    rt_shared *a, *b;
    size_t size;
    unsigned char write;
    bool panics;
    size_t value_held_in_fn;
};

static void writes_every_byte(void *value, void *ctx)
{
    struct copy_sized *c = ctx;
    memset(value, c->write, c->size);
    NEED(rt_alloc(32) != NULL);
    c->value_held_in_fn = rt_shared_held(c->a);
    if (c->panics)
        rt_panic("a sized copy");
}

static void writes_both(void *va, void *vb, void *ctx)
{
    struct copy_sized *c = ctx;
    memset(vb, c->write, c->size);
    writes_every_byte(va, ctx);
}

static void *updates_sized(void *arg)
{
    struct copy_sized *c = arg;
    if (c->b != NULL)
        rt_update_all(c->a, c->b, writes_both, c);
    else
        rt_update(c->a, writes_every_byte, c);
    return NULL;
}

static bool every_byte_is(rt_shared *s, size_t size, unsigned char byte)
{
    unsigned char *out = malloc(size);
    bool same = out != NULL && rt_get(s, out) == RT_OK;
    for (size_t i = 0; same && i < size; i++)
        same = out[i] == byte;
    free(out);
    return same;
}

static void copies_of_every_size(void *unused)
{
    static const size_t sizes[] = {1, 127, 128, 129, 4095, 4096, 4097, 65536, 1 << 20};
    (void)unused;
    init_fixed(4 * 1024 * KIB);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int pair = 0; pair < 2; pair++) {
            size_t size = sizes[k];
            unsigned char *init = malloc(size);
            NEED(init != NULL);
            memset(init, 0x11, size);
            struct copy_sized c = {rt_shared_new(RT_COPY, size, init, size + 4 * KIB),
                                   pair ? rt_shared_new(RT_COPY, size, init, size + 4 * KIB) : NULL,
                                   size, 0x22, true, 0};
            free(init);
            size_t value_held = rt_shared_held(c.a);
            NEED(run_task(updates_sized, &c) == RT_PANICKED);
            NEED(!rt_poisoned(c.a) && every_byte_is(c.a, size, 0x11));
            NEED(c.b == NULL || (!rt_poisoned(c.b) && every_byte_is(c.b, size, 0x11)));
            NEED(c.value_held_in_fn == value_held && rt_shared_held(c.a) == value_held);
            c.write = 0x33;
            c.panics = false;
            size_t task_held = rt_held();
            updates_sized(&c);
            NEED(rt_held() > task_held); /* fn's allocation is the task's */
            NEED(!rt_poisoned(c.a) && every_byte_is(c.a, size, 0x33));
            NEED(c.b == NULL || every_byte_is(c.b, size, 0x33));
            NEED(c.value_held_in_fn == value_held && rt_shared_held(c.a) == value_held);
            rt_shared_free(c.a);
            if (c.b != NULL)
                rt_shared_free(c.b);
        }
}

START_TEST(a_copy_update_leaves_or_writes_back_every_byte_at_every_size)
{
    RUN_OK(copies_of_every_size, "panicked: a sized copy");
}
END_TEST

/* A panic in main's task ends the process with 101 (refrt.h), and its
** doors unwind first, as any task's do: an exit handler, which runs after
** the panic, finds the RT_OWNED value main panicked in poisoned, the
** RT_COPY one not, and both unlocked (a door on each answers at once,
** RT_POISONED and RT_OK). In rt_update, nested doors, and rt_update_all. */
static rt_shared *main_owned, *main_copy;
static int main_panic_where;

static void report_after_mains_panic(void)
{
    int64_t out = 0;
    bool owned_poisoned = rt_poisoned(main_owned), copy_poisoned = rt_poisoned(main_copy);
    rt_status owned_door = rt_get(main_owned, &out), copy_door = rt_get(main_copy, &out);
    fprintf(stderr, "after: owned %d %d, copy %d %d %lld\n", owned_poisoned, owned_door,
            copy_poisoned, copy_door, (long long)out);
}

static void main_panics_here(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_panic("in a door");
}

static void main_panics_in_both(void *va, void *vb, void *ctx)
{
    (void)vb;
    main_panics_here(va, ctx);
}

static void main_opens_the_owned_door(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_update(main_owned, main_panics_here, NULL);
}

static void main_panics_in_a_door(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    main_copy = new_i64(7);
    main_owned = new_list(1 * KIB);
    atexit(report_after_mains_panic);
    if (main_panic_where == 0)
        rt_update(main_owned, main_panics_here, NULL);
    else if (main_panic_where == 1)
        rt_update(main_copy, main_opens_the_owned_door, NULL); /* copy #1, then owned #2 */
    else
        rt_update_all(main_copy, main_owned, main_panics_in_both, NULL);
    _exit(3);
}

START_TEST(a_panic_in_mains_door_unwinds_it_before_the_exit)
{
    for (main_panic_where = 0; main_panic_where < 3; main_panic_where++) {
        struct death d = run_child(main_panics_in_a_door, NULL);
        ck_assert_msg(d.signal == 0 && d.exit_status == 101, "%d: signal %d exit %d: %s",
                      main_panic_where, d.signal, d.exit_status, d.err);
        const char *want = main_panic_where == 2
                               ? "refrt: task 0 panicked: in a door\nafter: owned 1 2, copy 1 2 0\n"
                               : "refrt: task 0 panicked: in a door\nafter: owned 1 2, copy 0 0 7\n";
        ck_assert_msg(strcmp(d.err, want) == 0, "%d: stderr %s, not %s", main_panic_where, d.err,
                      want);
    }
}
END_TEST

/* Outside values of every size are stored and unstored alike, an empty
** one (rt_alloc_outside(0)) and one byte included: each stored value is
** listed in the value (rt_unstore gives it back to the task, held again),
** and each left stored goes with the value when it is freed: nothing of
** malloc's stays live. */
struct sized_store {
    rt_shared *s;
    void *v;
    rt_status status;
};

static void stores_it(void *value, void *ctx)
{
    struct sized_store *st = ctx;
    (void)value;
    st->status = rt_store(st->s, st->v);
}

static void unstores_it(void *value, void *ctx)
{
    struct sized_store *st = ctx;
    (void)value;
    st->status = rt_unstore(st->s, st->v) == st->v ? RT_OK : RT_REFUSED;
}

static void stores_of_every_size(void *unused)
{
    static const size_t sizes[] = {0, 1, 15, 16, 17, 4096};
    (void)unused;
    init_fixed(64 * KIB);
    rt_free(rt_alloc_outside(8)); /* the task's table of outside values made */
    long live = allocs_live();
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int left_stored = 0; left_stored < 2; left_stored++) {
            struct sized_store st = {new_list(16 * KIB), rt_alloc_outside(sizes[k]), RT_OK};
            size_t held = rt_held(), value_held = rt_shared_held(st.s);
            NEED(rt_update(st.s, stores_it, &st) == RT_OK && st.status == RT_OK);
            NEED(rt_held() == held - sizes[k] && rt_shared_held(st.s) == value_held + sizes[k]);
            if (!left_stored) {
                NEED(rt_update(st.s, unstores_it, &st) == RT_OK && st.status == RT_OK);
                NEED(rt_held() == held && rt_shared_held(st.s) == value_held);
                rt_free(st.v);
            }
            rt_shared_free(st.s);
            NEED(allocs_live() == live);
        }
}

START_TEST(stored_values_of_every_size_are_listed_and_go_with_their_value)
{
    RUN_OK(stores_of_every_size, NULL);
}
END_TEST

START_TEST(a_copy_update_that_panics_leaves_the_old_value_to_a_second_task)
{
    RUN_OK(copy_update_panics, "panicked: i64 overflow");
}
END_TEST

/* ---- RT_OWNED updates -------------------------------------------------- */

static void push_then_panic(void *value, void *ctx)
{
    (void)ctx;
    push(value, 99);
    rt_panic("after a push");
}

static void *update_push_then_panic(void *list)
{
    rt_update(list, push_then_panic, NULL);
    return NULL;
}

static void owned_update_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *list = new_list(1 * KIB);
    int64_t x = 7;
    NEED(rt_update(list, push_ctx, &x) == RT_OK);
    NEED(sum_of(list) == 7);
    NEED(run_task(update_push_then_panic, list) == RT_PANICKED);
    NEED(!rt__shared_locked(list));
    NEED(rt_poisoned(list));
    rt_shared_free(list);
}

START_TEST(an_owned_update_that_panics_after_an_allocation_poisons)
{
    RUN_OK(owned_update_panics, "panicked: after a push");
}
END_TEST

static void poisoned_doors(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *list = new_list(1 * KIB), *kasse = new_i64(5);
    int64_t out = -1;
    NEED(run_task(update_push_then_panic, list) == RT_PANICKED);
    NEED(rt_poisoned(list));
    /* every door on it refuses, without running fn or copying out */
    ran = 0;
    NEED(rt_update(list, count_update, NULL) == RT_POISONED);
    NEED(rt_access(list, count_access, NULL) == RT_POISONED);
    NEED(rt_get(list, &out) == RT_POISONED && out == -1);
    NEED(rt_update_all(kasse, list, count_pair, NULL) == RT_POISONED);
    NEED(rt_update_all(list, kasse, count_pair, NULL) == RT_POISONED);
    NEED(ran == 0);
    /* the healthy value of the pair is neither changed nor poisoned */
    NEED(!rt_poisoned(kasse) && get_i64(kasse) == 5);
    NEED(rt_poisoned(list));
    rt_shared_free(list);
    rt_shared_free(kasse);
}

START_TEST(a_door_on_a_poisoned_value_returns_poisoned_without_running)
{
    RUN_OK(poisoned_doors, "panicked: after a push");
}
END_TEST

/* D5 and D6: the door allocates from the value's block; a full one panics
** in the door and poisons the value, and the task's block is not used. */
static void push_many(void *value, void *ctx)
{
    size_t *task_held = ctx;
    for (int64_t i = 0; i < 10; i++)
        push(value, i);
    *task_held = rt_held(); /* the pushes did not touch the task's count */
    for (int64_t i = 0;; i++)
        push(value, i); /* until the value's 1 KiB block is full */
}

static void *update_push_many(void *arg)
{
    void **a = arg;
    rt_update(a[0], push_many, a[1]);
    return NULL;
}

static void owned_block_full(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *list = new_list(1 * KIB);
    size_t before = rt_shared_held(list), task_held = 1;
    int64_t x = 1;
    NEED(rt_update(list, push_ctx, &x) == RT_OK);
    NEED(rt_shared_held(list) > before); /* the push went to the value's block */
    NEED(rt_held() == 0);                 /* not to main's */
    void *arg[2] = {list, &task_held};
    NEED(run_task(update_push_many, arg) == RT_PANICKED);
    NEED(task_held == 0);
    NEED(rt_poisoned(list));
    rt_shared_free(list);
    NEED(rt__blocks_live() == 1);
}

START_TEST(a_full_value_block_panics_in_the_door_and_poisons_the_value)
{
    RUN_OK(owned_block_full, "does not fit its budget");
}
END_TEST

/* D10 and D11 in a value's block: a request that finds the block full is
** served, in that same door, by freed neighbours merged to exactly its size
** (runs of 32 to 112 bytes), so the value is not poisoned for room it has.
** A task's own block is asked again after a settle; a door's is asked once. */
struct refill {
    rt_shared *s;
    size_t block;
};

static void refill_merged_neighbours(void *value, void *ctx)
{
    struct refill *r = ctx;
    unsigned char *c[300];
    size_t n = (r->block - rt_shared_held(r->s)) / 16;
    (void)value;
    NEED(n > 200 && n <= 300);
    for (size_t i = 0; i < n; i++) /* 16-byte chunks, the block exactly full */
        NEED((c[i] = rt_alloc(8)) != NULL);
    NEED(rt_shared_held(r->s) == r->block);
    for (size_t k = 2; k <= 7; k++) {
        size_t at = 25 * k;
        for (size_t i = at; i < at + k; i++)
            rt_free(c[i]);
        NEED(rt_alloc(16 * k - 8) == c[at]);
        NEED(rt_shared_held(r->s) == r->block);
    }
}

static void owned_block_refilled(void *unused)
{
    int64_t zero = 0;
    (void)unused;
    init_fixed(64 * KIB);
    struct refill r = {rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB), 4 * KIB};
    NEED(rt_update(r.s, refill_merged_neighbours, &r) == RT_OK);
    NEED(!rt_poisoned(r.s));
    rt_shared_free(r.s);
}

START_TEST(a_full_value_block_serves_a_request_from_neighbours_merged_to_its_size)
{
    RUN_OK(owned_block_refilled, NULL);
}
END_TEST

/* ---- rt_update_all ----------------------------------------------------- */

static void first_then_panic(void *va, void *vb, void *ctx)
{
    (void)ctx;
    *(int64_t *)va += 100;
    rt_panic("after the first");
    *(int64_t *)vb += 100;
}

static void *update_all_then_panic(void *arg)
{
    rt_shared **ab = arg;
    rt_update_all(ab[0], ab[1], first_then_panic, NULL);
    return NULL;
}

static void *read_both(void *arg)
{
    rt_shared **ab = arg;
    NEED(!rt_poisoned(ab[0]) && !rt_poisoned(ab[1]));
    NEED(get_i64(ab[0]) == 1 && get_i64(ab[1]) == 2);
    return NULL;
}

static void update_all_copies_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(1), *b = new_i64(2);
    rt_shared *ab[2] = {a, b}, *ba[2] = {b, a};
    NEED(run_task(update_all_then_panic, ab) == RT_PANICKED);
    NEED(!rt__shared_locked(a) && !rt__shared_locked(b));
    NEED(run_task(read_both, ab) == RT_OK);
    NEED(run_task(update_all_then_panic, ba) == RT_PANICKED); /* b first this time */
    NEED(run_task(read_both, ab) == RT_OK);
    rt_shared_free(a);
    rt_shared_free(b);
}

START_TEST(update_all_over_two_copies_that_panics_after_the_first_leaves_both)
{
    RUN_OK(update_all_copies_panics, "panicked: after the first");
}
END_TEST

static void copy_and_list_then_panic(void *va, void *vb, void *ctx)
{
    (void)ctx;
    *(int64_t *)va += 100;
    push(vb, 5);
    rt_panic("changed both");
}

static void list_and_copy_then_panic(void *va, void *vb, void *ctx)
{
    copy_and_list_then_panic(vb, va, ctx);
}

static void *update_mixed(void *arg)
{
    rt_shared **ab = arg; /* ab[0] the copy, ab[1] the list; ab[2] says the order */
    if (ab[2] == NULL)
        rt_update_all(ab[0], ab[1], copy_and_list_then_panic, NULL);
    else
        rt_update_all(ab[1], ab[0], list_and_copy_then_panic, NULL);
    return NULL;
}

static void *read_poisoned_pair(void *arg)
{
    rt_shared **ab = arg;
    union {
        int64_t i;
        struct list l;
    } v; /* room for either kind of value */
    NEED(rt_poisoned(ab[0]) && rt_poisoned(ab[1]));
    NEED(rt_get(ab[0], &v) == RT_POISONED);
    ran = 0;
    NEED(rt_update_all(ab[0], ab[1], count_pair, NULL) == RT_POISONED);
    NEED(ran == 0);
    return NULL;
}

static void update_all_mixed_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    /* the copy made first or last; passed as a or as b */
    for (int made = 0; made < 2; made++)
        for (int passed = 0; passed < 2; passed++) {
            rt_shared *c = NULL, *l = NULL;
            if (made == 0) {
                c = new_i64(1);
                l = new_list(1 * KIB);
            } else {
                l = new_list(1 * KIB);
                c = new_i64(1);
            }
            rt_shared *arg[3] = {c, l, passed == 0 ? NULL : c};
            NEED(run_task(update_mixed, arg) == RT_PANICKED);
            NEED(run_task(read_poisoned_pair, arg) == RT_OK);
            rt_shared_free(c);
            rt_shared_free(l);
        }
}

START_TEST(update_all_over_a_copy_and_an_owned_value_that_panics_poisons_both)
{
    RUN_OK(update_all_mixed_panics, "panicked: changed both");
}
END_TEST

static void both_lists_then_panic(void *va, void *vb, void *ctx)
{
    (void)ctx;
    push(va, 1);
    push(vb, 2);
    rt_panic("changed both lists");
}

static void *update_two_lists(void *arg)
{
    rt_shared **ab = arg;
    rt_update_all(ab[0], ab[1], both_lists_then_panic, NULL);
    return NULL;
}

static void update_all_owned_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_list(1 * KIB), *b = new_list(1 * KIB);
    rt_shared *ba[3] = {b, a, NULL};
    NEED(run_task(update_two_lists, ba) == RT_PANICKED);
    NEED(run_task(read_poisoned_pair, ba) == RT_OK);
    rt_shared_free(a);
    rt_shared_free(b);
}

START_TEST(update_all_over_two_owned_values_that_panics_poisons_both)
{
    RUN_OK(update_all_owned_panics, "panicked: changed both lists");
}
END_TEST

/* Where neither is copied, fn works in place and allocates from the owned
** value's block; with both owned, from a's. */
struct mixed_seen {
    rt_shared *list;
    size_t list_held_in_door;
    int64_t *copy_address;
    rt_shared *list_b;
    size_t list_held_in_door_b;
};

static void mixed_in_place(void *va, void *vb, void *ctx)
{
    struct mixed_seen *m = ctx;
    m->copy_address = va;
    push(vb, 3);
    m->list_held_in_door = rt_shared_held(m->list);
}

static void push_into_a(void *va, void *vb, void *ctx)
{
    struct mixed_seen *m = ctx;
    (void)vb;
    m->list_held_in_door_b = rt_shared_held(m->list_b);
    push(va, 4);
    m->list_held_in_door = rt_shared_held(m->list);
}

static void update_all_mixed_in_place(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *c = new_i64(1), *l = new_list(1 * KIB), *a = new_list(1 * KIB);
    struct mixed_seen m = {l, 0, NULL, l, 0};
    size_t before = rt_shared_held(l), a_before = rt_shared_held(a);

    NEED(rt_update_all(c, l, mixed_in_place, &m) == RT_OK);
    NEED(m.list_held_in_door > before && rt_shared_held(l) == m.list_held_in_door);
    NEED(rt_held() == 0);
    NEED(sum_of(l) == 3);
    /* fn got the value itself, not a copy: two calls see the same address */
    int64_t *first = m.copy_address;
    NEED(rt_update_all(c, l, mixed_in_place, &m) == RT_OK);
    NEED(m.copy_address == first);
    /* both owned: a's block, whichever was made first */
    m.list = a;
    NEED(rt_update_all(a, l, push_into_a, &m) == RT_OK);
    NEED(rt_shared_held(a) > a_before && m.list_held_in_door == rt_shared_held(a));
    NEED(rt_shared_held(l) == m.list_held_in_door_b);
    NEED(sum_of(a) == 4);
    rt_shared_free(c);
    rt_shared_free(l);
    rt_shared_free(a);
}

START_TEST(update_all_with_an_owned_value_works_in_place_in_its_block)
{
    RUN_OK(update_all_mixed_in_place, NULL);
}
END_TEST

/* Both copies are written back while both locks are held: the hook runs
** between the two write-backs. */
static int hook_calls, hook_both_locked, hook_in_order;

static void between(rt_shared *first, rt_shared *second)
{
    hook_calls++;
    hook_both_locked += rt__shared_locked(first) && rt__shared_locked(second);
    hook_in_order += rt__shared_seq(first) < rt__shared_seq(second);
}

static void move_ten(void *va, void *vb, void *ctx)
{
    (void)ctx;
    *(int64_t *)va -= 10;
    *(int64_t *)vb += 10;
}

static void update_all_writes_back_together(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(100), *b = new_i64(0);
    rt__shared_between_writebacks = between;
    NEED(rt_update_all(a, b, move_ten, NULL) == RT_OK);
    NEED(rt_update_all(b, a, move_ten, NULL) == RT_OK); /* made first, locked first */
    NEED(rt_update_all(a, b, move_ten, NULL) == RT_OK);
    rt__shared_between_writebacks = NULL;
    NEED(hook_calls == 3 && hook_both_locked == 3 && hook_in_order == 3);
    NEED(!rt__shared_locked(a) && !rt__shared_locked(b));
    NEED(get_i64(a) == 90 && get_i64(b) == 10);
    rt_shared_free(a);
    rt_shared_free(b);
}

START_TEST(update_all_writes_both_copies_back_before_releasing_either_lock)
{
    RUN_OK(update_all_writes_back_together, NULL);
}
END_TEST

/* ---- rt_access and rt_get poison nothing ------------------------------- */

static void read_then_panic(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("in a read");
}

static void *access_then_panic(void *s)
{
    rt_access(s, read_then_panic, NULL);
    return NULL;
}

static void access_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *kasse = new_i64(5), *list = new_list(1 * KIB);
    int64_t x = 4;
    NEED(rt_update(list, push_ctx, &x) == RT_OK);
    NEED(run_task(access_then_panic, kasse) == RT_PANICKED);
    NEED(run_task(access_then_panic, list) == RT_PANICKED);
    NEED(!rt__shared_locked(kasse) && !rt__shared_locked(list));
    NEED(!rt_poisoned(kasse) && !rt_poisoned(list));
    NEED(run_task(read_kasse, kasse) == RT_OK);
    NEED(sum_of(list) == 4);
    rt_shared_free(kasse);
    rt_shared_free(list);
}

START_TEST(an_access_that_panics_leaves_the_value_readable)
{
    RUN_OK(access_panics, "panicked: in a read");
}
END_TEST

/* ---- a change made in an earlier door stands --------------------------- */

struct earlier {
    rt_shared *kasse, *list, *cache;
};

static void build_zero(void *value, void *ctx)
{
    (void)ctx;
    *(int64_t *)value = 0;
}

static void add_one(void *value, void *ctx)
{
    (void)ctx;
    *(int64_t *)value += 1;
}

static void *change_then_panic(void *arg)
{
    struct earlier *e = arg;
    int64_t ten = 10, twenty = 20;
    NEED(rt_update(e->kasse, add_ctx, &ten) == RT_OK);
    NEED(rt_update(e->list, push_ctx, &twenty) == RT_OK);
    NEED(rt_update(e->cache, add_ctx, &ten) == RT_OK);
    /* a later door on the copy value panics: the earlier change stands */
    rt_update(e->kasse, add_then_allocate_too_much, NULL);
    return NULL;
}

static void *change_then_panic_outside(void *arg)
{
    struct earlier *e = arg;
    NEED(rt_update(e->list, add_one_item, NULL) == RT_OK);
    NEED(rt_update(e->cache, add_one, NULL) == RT_OK);
    rt_panic("after the doors");
}

static void earlier_change_stands(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct earlier e = {new_i64(0), new_list(1 * KIB),
                        rt_shared_supervised(RT_COPY, sizeof(int64_t), build_zero, NULL, 256)};
    NEED(run_task(change_then_panic, &e) == RT_PANICKED);
    NEED(get_i64(e.kasse) == 10 && sum_of(e.list) == 20 && get_i64(e.cache) == 10);
    NEED(run_task(change_then_panic_outside, &e) == RT_PANICKED);
    NEED(!rt_poisoned(e.list) && !rt_poisoned(e.cache));
    NEED(sum_of(e.list) == 21 && get_i64(e.cache) == 11);
    rt_shared_free(e.kasse);
    rt_shared_free(e.list);
    rt_shared_free(e.cache);
}

START_TEST(a_change_made_in_an_earlier_door_stands_after_a_later_panic)
{
    RUN_OK(earlier_change_stands, "panicked: after the doors");
}
END_TEST

/* Nested doors (in the order values were made): the inner copy door's
** panic poisons the outer owned value, whose door is still open, and the
** copy is not written back. */
static void inner_copy_panics(void *value, void *ctx)
{
    rt_shared *kasse = ctx;
    push(value, 1);
    rt_update(kasse, add_max_or_panic, NULL);
}

static void *nested_panic(void *arg)
{
    rt_shared **lk = arg;
    rt_update(lk[0], inner_copy_panics, lk[1]);
    return NULL;
}

static void nested_doors(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *list = new_list(1 * KIB), *kasse = new_i64(5);
    rt_shared *lk[2] = {list, kasse};
    NEED(run_task(nested_panic, lk) == RT_PANICKED);
    NEED(rt_poisoned(list) && !rt_poisoned(kasse));
    NEED(get_i64(kasse) == 5);
    rt_shared_free(list);
    rt_shared_free(kasse);
}

START_TEST(a_panic_in_a_nested_door_unwinds_every_open_door)
{
    RUN_OK(nested_doors, "panicked: i64 overflow");
}
END_TEST

/* ---- supervised values (ADR-327 D1 to D3) ------------------------------ */

/* A cache: the numbers seen, in the value's block; `builds` counts builds. */
struct cache {
    struct list seen;
    unsigned generation;
};

struct builder {
    unsigned builds;
    bool fail; /* the next build panics */
};

static void build_cache(void *value, void *ctx)
{
    struct cache *c = value;
    struct builder *b = ctx;
    NEED(c->seen.items == NULL && c->seen.n == 0); /* a fresh, zeroed value */
    c->generation = ++b->builds;
    push(&c->seen, 0); /* an allocation, in the fresh block */
    if (b->fail) {
        b->fail = false;
        rt_panic("the build failed");
    }
}

static void remember(void *value, void *ctx)
{
    struct cache *c = value;
    push(&c->seen, *(int64_t *)ctx);
}

static void *outgrow(void *cache)
{
    for (int64_t i = 1; rt_update(cache, remember, &i) == RT_OK; i++)
        ; /* until the block is full and the task panics */
    return NULL;
}

struct cache_view {
    unsigned generation;
    size_t n;
};

static void view_cache(const void *value, void *ctx)
{
    const struct cache *c = value;
    struct cache_view *v = ctx;
    v->generation = c->generation;
    v->n = c->seen.n;
}

static void supervised_cache(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct builder b = {0, false};
    rt_shared *cache = rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, &b,
                                            2 * KIB);
    size_t built = rt_shared_held(cache), live = rt__blocks_live();
    struct cache_view v;
    NEED(b.builds == 1 && !rt_poisoned(cache));

    NEED(run_task(outgrow, cache) == RT_PANICKED);
    NEED(rt_poisoned(cache));
    NEED(rt_shared_held(cache) > built);
    /* the next door rebuilds it in a fresh block, then runs */
    NEED(rt_access(cache, view_cache, &v) == RT_OK);
    NEED(b.builds == 2 && v.generation == 2 && v.n == 1);
    NEED(!rt_poisoned(cache));
    NEED(rt_shared_held(cache) == built);
    NEED(rt__blocks_live() == live); /* the old block was freed */

    /* rt_get and rt_update rebuild too */
    NEED(run_task(outgrow, cache) == RT_PANICKED);
    struct cache copy;
    NEED(rt_get(cache, &copy) == RT_OK);
    NEED(b.builds == 3 && copy.generation == 3 && copy.seen.n == 1);
    NEED(run_task(outgrow, cache) == RT_PANICKED);
    int64_t x = 42;
    NEED(rt_update(cache, remember, &x) == RT_OK);
    NEED(rt_access(cache, view_cache, &v) == RT_OK);
    NEED(b.builds == 4 && v.generation == 4 && v.n == 2);
    rt_shared_free(cache);
    NEED(rt__blocks_live() == live - 1);
}

START_TEST(a_supervised_cache_that_outgrows_its_block_is_rebuilt)
{
    RUN_OK(supervised_cache, "does not fit its budget");
}
END_TEST

static void *nothing(void *arg)
{
    (void)arg;
    return NULL;
}

static void *make_failing(void *arg)
{
    struct builder *b = arg;
    rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, b, 2 * KIB);
    return NULL;
}

static void *access_cache(void *cache)
{
    struct cache_view v;
    rt_access(cache, view_cache, &v);
    return NULL;
}

static void supervised_build_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct builder b = {0, true};
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    size_t live = rt__blocks_live();
    long allocations = allocs_live();
    /* a first build that panics frees everything it made: the value too */
    NEED(run_task(make_failing, &b) == RT_PANICKED);
    NEED(b.builds == 1 && rt__blocks_live() == live);
    NEED(allocs_live() == allocations);

    rt_shared *cache = rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, &b,
                                            2 * KIB);
    NEED(run_task(outgrow, cache) == RT_PANICKED);
    /* a rebuild that panics leaves the value poisoned, its fresh block freed */
    b.fail = true;
    ran = 0;
    NEED(run_task(access_cache, cache) == RT_PANICKED);
    NEED(rt_poisoned(cache) && b.builds == 3);
    NEED(rt__blocks_live() == live + 1);
    /* the next door tries again */
    struct cache_view v;
    NEED(rt_access(cache, view_cache, &v) == RT_OK);
    NEED(!rt_poisoned(cache) && b.builds == 4 && v.generation == 4 && v.n == 1);
    rt_shared_free(cache);
    NEED(rt__blocks_live() == live);
}

START_TEST(a_build_that_panics_leaves_nothing_behind_and_the_value_poisoned)
{
    RUN_OK(supervised_build_panics, "panicked: the build failed");
}
END_TEST

/* A first build that panics, in either kind, wherever the panic comes from:
** in build itself, from an allocation that does not fit (the value's block
** for RT_OWNED, the task's for RT_COPY), from inside a door the build opens
** on values it made (rt_update, rt_update_all, rt_access), or from the
** first build of a value made inside it. The unwind frees the value it was
** making, its block and its lock, every door's lock is released, and only
** what the build made and handed to the test is left, unlocked. */
enum first_panic { FP_BUILD, FP_ALLOC, FP_UPDATE, FP_UPDATE_ALL, FP_ACCESS, FP_FIRST_BUILD };
#define FP_COUNT 6

struct first_build {
    rt_kind kind;
    enum first_panic where;
    rt_shared *made[2]; /* values the build made, freed by the test */
};

static void first_panic_update(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("the first build failed");
}

static void first_panic_access(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("the first build failed");
}

static void first_panic_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    rt_panic("the first build failed");
}

static void build_panics_at_once(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("the first build failed");
}

static void build_that_panics(void *value, void *ctx)
{
    struct first_build *f = ctx;
    (void)value;
    NEED(rt_alloc(100) != NULL); /* something of the build's own to free */
    switch (f->where) {
    case FP_BUILD:
        rt_panic("the first build failed");
    case FP_ALLOC:
        rt_alloc(1024 * KIB);
        break;
    case FP_UPDATE:
        f->made[0] = new_list(1 * KIB);
        rt_update(f->made[0], first_panic_update, NULL);
        break;
    case FP_UPDATE_ALL:
        f->made[0] = new_i64(1);
        f->made[1] = new_list(1 * KIB);
        rt_update_all(f->made[0], f->made[1], first_panic_pair, NULL);
        break;
    case FP_ACCESS:
        f->made[0] = new_i64(1);
        rt_access(f->made[0], first_panic_access, NULL);
        break;
    case FP_FIRST_BUILD:
        rt_shared_supervised(f->kind, sizeof(int64_t), build_panics_at_once, NULL, 4 * KIB);
        break;
    }
    NEED(!"the build went on");
}

static void *make_panicking(void *arg)
{
    struct first_build *f = arg;
    rt_shared_supervised(f->kind, sizeof(int64_t), build_that_panics, f, 4 * KIB);
    NEED(!"the first build returned");
    return NULL;
}

static void first_builds_that_panic(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    for (int kind = RT_COPY; kind <= RT_OWNED; kind++)
        for (int where = 0; where < FP_COUNT; where++) {
            struct first_build f = {(rt_kind)kind, (enum first_panic)where, {NULL, NULL}};
            size_t blocks = rt__blocks_live();
            long allocations = allocs_live(), locks = locks_live();
            NEED(run_task(make_panicking, &f) == RT_PANICKED);
            for (int i = 0; i < 2; i++)
                if (f.made[i] != NULL) {
                    NEED(!rt__shared_locked(f.made[i]));
                    rt_shared_free(f.made[i]);
                }
            NEED(rt__blocks_live() == blocks);
            NEED(allocs_live() == allocations);
            NEED(locks_live() == locks);
        }
}

/* A rebuild's build that stores outside values and then panics leaves
** nothing behind: what it stored goes with the fresh block (refrt.h), the
** value stays poisoned, and not one malloc'ed byte stays live; the next
** door's rebuild stores and keeps them, and they go with the value. One to
** three values of 0, 1 and 4096 bytes. */
struct storing_build {
    rt_shared *s;
    int stores;
    bool panics;
};

static void build_stores_then_maybe_panics(void *value, void *ctx)
{
    static const size_t sizes[] = {0, 1, 4096};
    struct storing_build *b = ctx;
    (void)value;
    if (b->s == NULL)
        return; /* the first build: no handle to store through yet */
    for (int i = 0; i < b->stores; i++)
        NEED(rt_store(b->s, rt_alloc_outside(sizes[i])) == RT_OK);
    if (b->panics)
        rt_panic("a build that stored");
}

static void panic_in_the_door(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_panic("poison it");
}

static void *poison_by_a_panic_in_place(void *s)
{
    rt_update(s, panic_in_the_door, NULL);
    return NULL;
}

static void *gets_it(void *s)
{
    int64_t out;
    rt_get(s, &out);
    return NULL;
}

static void rebuilds_that_store_then_panic(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    for (int stores = 1; stores <= 3; stores++) {
        struct storing_build b = {NULL, stores, false};
        long live = allocs_live();
        size_t blocks = rt__blocks_live();
        b.s = rt_shared_supervised(RT_OWNED, sizeof(int64_t), build_stores_then_maybe_panics, &b,
                                   16 * KIB);
        NEED(run_task(poison_by_a_panic_in_place, b.s) == RT_PANICKED && rt_poisoned(b.s));
        long poisoned_live = allocs_live();
        b.panics = true;
        NEED(run_task(gets_it, b.s) == RT_PANICKED && rt_poisoned(b.s));
        NEED(allocs_live() == poisoned_live && rt__blocks_live() == blocks + 1);
        b.panics = false;
        NEED(run_task(gets_it, b.s) == RT_OK && !rt_poisoned(b.s));
        rt_shared_free(b.s);
        NEED(allocs_live() == live && rt__blocks_live() == blocks);
    }
}

START_TEST(a_rebuild_that_stores_then_panics_leaves_nothing_behind)
{
    RUN_OK(rebuilds_that_store_then_panic, "panicked: a build that stored");
}
END_TEST

START_TEST(a_first_build_that_panics_frees_its_value_in_either_kind_wherever_it_panics)
{
    RUN_OK(first_builds_that_panic, "panicked: the first build failed");
}
END_TEST

/* ---- storing outside values (D9) --------------------------------------- */

/* An owned value that keeps one outside value by pointer. */
struct holder {
    char *text;
    size_t len;
};

struct store_op {
    rt_shared *s;
    char *value;
    size_t len;
    rt_status status;
    size_t task_held_in_door, value_held_in_door;
};

static void store_text(void *value, void *ctx)
{
    struct holder *h = value;
    struct store_op *op = ctx;
    op->status = rt_store(op->s, op->value);
    if (op->status == RT_OK) {
        h->text = op->value;
        h->len = op->len;
    }
    op->task_held_in_door = rt_held();
    op->value_held_in_door = rt_shared_held(op->s);
}

static void unstore_text(void *value, void *ctx)
{
    struct holder *h = value;
    struct store_op *op = ctx;
    op->value = rt_unstore(op->s, h->text);
    h->text = NULL;
    h->len = 0;
}

static void read_text(const void *value, void *ctx)
{
    const struct holder *h = value;
    NEED(h->text != NULL && strcmp(h->text, ctx) == 0);
}

static void *store_and_end(void *arg)
{
    struct store_op *op = arg;
    op->value = rt_clone_outside("kept after its task", 20);
    op->len = 20;
    NEED(rt_held() == 20);
    NEED(rt_update(op->s, store_text, op) == RT_OK);
    NEED(op->status == RT_OK && rt_held() == 0);
    return NULL;
}

static void store_transfer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct holder empty = {NULL, 0};
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    struct store_op op = {s, NULL, 11, RT_CLOSED, 0, 0};
    size_t value_before = rt_shared_held(s);

    op.value = rt_clone_outside("hello there", 12);
    op.len = 12;
    NEED(rt_held() == 12);
    NEED(rt_update(s, store_text, &op) == RT_OK && op.status == RT_OK);
    /* the bytes moved: off the task's count, onto the value's */
    NEED(op.task_held_in_door == 0 && rt_held() == 0);
    NEED(op.value_held_in_door == value_before + 12);
    NEED(rt_shared_held(s) == value_before + 12);
    NEED(rt_access(s, read_text, "hello there") == RT_OK);
    /* and back */
    NEED(rt_update(s, unstore_text, &op) == RT_OK);
    NEED(rt_held() == 12 && rt_shared_held(s) == value_before);
    NEED(strcmp(op.value, "hello there") == 0);
    rt_free(op.value);
    NEED(rt_held() == 0);

    /* a value stored by a task that has ended is still reached through s,
    ** counts against s, and goes with s */
    NEED(run_task(store_and_end, &op) == RT_OK);
    NEED(rt_shared_held(s) == value_before + 20);
    NEED(rt_access(s, read_text, "kept after its task") == RT_OK);
    rt_shared_free(s);
}

START_TEST(a_stored_value_moves_its_bytes_from_the_task_to_the_value)
{
    RUN_OK(store_transfer, NULL);
}
END_TEST

static void *store_too_big(void *arg)
{
    struct store_op *op = arg;
    op->value = rt_alloc_outside(op->len);
    NEED(chunk_live(op->value));
    rt_update(op->s, store_text, op);
    return NULL;
}

static void store_does_not_fit(void *unused)
{
    (void)unused;
    init_fixed(256 * KIB);
    struct holder empty = {NULL, 0};
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 64 * KIB);
    struct store_op op = {s, NULL, RT_CHUNK_SIZE, RT_CLOSED, 0, 0};
    size_t before = rt_shared_held(s);

    NEED(run_task(store_too_big, &op) == RT_PANICKED);
    NEED(rt_poisoned(s));
    NEED(rt_shared_held(s) == before); /* nothing was charged */
    NEED(!chunk_live(op.value));      /* freed with the task: nothing leaked */
    rt_shared_free(s);
}

START_TEST(a_stored_value_that_does_not_fit_poisons_the_value)
{
    RUN_OK(store_does_not_fit,
           "a stored value of 65536 bytes does not fit shared value #1's budget\n");
}
END_TEST

static void store_own_block_value(void *value, void *ctx)
{
    struct store_op *op = ctx;
    size_t held = rt_shared_held(op->s);
    void *p = rt_alloc(16); /* in an update of an RT_OWNED value: its block */
    NEED(rt_shared_held(op->s) > held);
    op->status = rt_store(op->s, p);
    (void)value;
}

static void store_block_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct holder empty = {NULL, 0};
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    struct store_op op = {s, rt_alloc(16), 16, RT_OK, 0, 0};
    size_t value_before = rt_shared_held(s), task_before = rt_held();
    NEED(rt_update(s, store_text, &op) == RT_OK);
    NEED(op.status == RT_REFUSED);
    NEED(rt_held() == task_before && rt_shared_held(s) == value_before);
    NEED(!rt_poisoned(s));
    rt_free(op.value);
    /* a value of the shared value's own block, allocated in its door */
    task_before = rt_held();
    NEED(rt_update(s, store_own_block_value, &op) == RT_OK);
    NEED(op.status == RT_REFUSED && rt_held() == task_before);
    NEED(!rt_poisoned(s));
    rt_shared_free(s);
}

/* The same inside a rebuild's build: the value being built has a fresh
** block, and a value of that block, or of the task's, is a block value
** there too: RT_REFUSED, nothing changed, the message naming the copy. */
struct refusing_build {
    rt_shared *s;          /* set once made: the first build stores nothing */
    void *task_value;      /* a value of the task's block */
    rt_status fresh, task; /* what rt_store answered */
    int builds;
};

static void build_and_store_block_values(void *value, void *ctx)
{
    struct refusing_build *b = ctx;
    memset(value, 0, sizeof(struct holder));
    b->builds++;
    if (b->s == NULL)
        return;
    void *fresh = rt_alloc(16); /* from the fresh block: an owned value's build */
    b->fresh = rt_store(b->s, fresh);
    b->task = rt_store(b->s, b->task_value);
    rt_free(fresh);
}

static void store_nothing(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
}

static void store_block_values_in_a_rebuild(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct refusing_build b = {NULL, NULL, RT_OK, RT_OK, 0};
    rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof(struct holder),
                                        build_and_store_block_values, &b, 1 * KIB);
    b.s = s;
    b.task_value = rt_alloc(16);
    NEED(run_task(poison_by_a_panic_in_place, s) == RT_PANICKED && rt_poisoned(s));
    size_t task_before = rt_held();
    NEED(rt_update(s, store_nothing, NULL) == RT_OK); /* rebuilt, then fn */
    NEED(b.builds == 2 && !rt_poisoned(s));
    NEED(b.fresh == RT_REFUSED && b.task == RT_REFUSED);
    NEED(rt_held() == task_before);
    rt_free(b.task_value);
    NEED(rt_held() == 0);
    rt_shared_free(s);
}

START_TEST(a_block_value_is_refused_by_store_in_a_rebuild_and_the_message_names_the_copy)
{
    run_ok_said(store_block_values_in_a_rebuild, "cannot be stored; copy it with rt_clone_outside",
                2);
}
END_TEST

START_TEST(a_block_value_is_refused_by_store_and_the_message_names_the_copy)
{
    run_ok_said(store_block_value, "cannot be stored; copy it with rt_clone_outside", 2);
}
END_TEST

/* Stored values go with the state they were stored into: freed when the
** value is rebuilt, or freed, never left behind. */
struct kept {
    char *big;
};

struct keep_op {
    rt_shared *s;       /* NULL during the first build: nothing to store into yet */
    char *big;          /* stored by an update */
    char *built_big;    /* stored by the last rebuild */
    size_t held_in_build; /* rt_shared_held(s) in the last rebuild, after its store */
};

/* A rebuild stores an outside value of its own: it is charged to the fresh
** block, and goes with that state. */
static void build_kept(void *value, void *ctx)
{
    struct keep_op *k = ctx;
    if (k->s == NULL)
        return;
    k->built_big = rt_alloc_outside(RT_CHUNK_SIZE);
    NEED(rt_store(k->s, k->built_big) == RT_OK);
    ((struct kept *)value)->big = k->built_big;
    k->held_in_build = rt_shared_held(k->s); /* the fresh state's figure */
}

static void keep_big(void *value, void *ctx)
{
    struct keep_op *k = ctx;
    NEED(rt_store(k->s, k->big) == RT_OK);
    ((struct kept *)value)->big = k->big;
}

static void *store_big(void *arg)
{
    struct keep_op *k = arg;
    k->big = rt_alloc_outside(RT_CHUNK_SIZE); /* counted by the malloc wrap */
    NEED(rt_update(k->s, keep_big, k) == RT_OK);
    return NULL;
}

static void kept_then_panic(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_alloc(1000); /* in the value's block: the poisoned state holds more */
    rt_panic("poisons the holder");
}

static void *poison_it(void *s)
{
    rt_update(s, kept_then_panic, NULL);
    return NULL;
}

static void stored_values_go_with_their_state(void *unused)
{
    (void)unused;
    init_fixed(512 * KIB);
    struct keep_op k = {NULL, NULL, NULL, 0};
    rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof(struct kept), build_kept, &k,
                                        256 * KIB);
    size_t built = rt_shared_held(s);
    struct kept out;
    k.s = s;

    NEED(run_task(store_big, &k) == RT_OK);
    NEED(chunk_live(k.big) && rt_shared_held(s) == built + RT_CHUNK_SIZE);
    NEED(run_task(poison_it, s) == RT_PANICKED && rt_poisoned(s));
    NEED(chunk_live(k.big)); /* poisoned, not yet rebuilt: still there */
    /* rebuilt by rt_get: the old state's stored value goes, the build's own
    ** is charged to the fresh block and moved off main's count */
    NEED(rt_get(s, &out) == RT_OK && out.big == k.built_big);
    NEED(k.held_in_build == built + RT_CHUNK_SIZE); /* read in the build: the fresh block */
    NEED(!chunk_live(k.big) && chunk_live(k.built_big));
    NEED(rt_shared_held(s) == built + RT_CHUNK_SIZE && rt_held() == 0);

    NEED(run_task(store_big, &k) == RT_OK);
    NEED(chunk_live(k.big) && rt_shared_held(s) == built + 2 * RT_CHUNK_SIZE);
    rt_shared_free(s);
    NEED(!chunk_live(k.big) && !chunk_live(k.built_big));
}

START_TEST(stored_values_are_freed_with_the_state_they_were_stored_into)
{
    RUN_OK(stored_values_go_with_their_state, "panicked: poisons the holder");
}
END_TEST

/* Inside rt_update_all, the rebuild of one value may store into the other
** (its update is open): the stored value goes to that other value, never
** to the state being built, whichever argument the rebuilt value is; an
** unstore in a later rebuild takes it back out of the other value. */
struct partner_build {
    rt_shared *self, *partner; /* NULL in the first build */
    char *stored;
    size_t self_in_build, partner_in_build; /* rt_shared_held in the build */
};

static void build_touching_the_partner(void *value, void *ctx)
{
    struct partner_build *p = ctx;
    (void)value;
    if (p->partner == NULL)
        return;
    if (p->stored == NULL) {
        p->stored = rt_alloc_outside(RT_CHUNK_SIZE);
        NEED(rt_store(p->partner, p->stored) == RT_OK);
    } else {
        NEED(rt_unstore(p->partner, p->stored) == p->stored);
        rt_free(p->stored);
        p->stored = NULL;
    }
    p->self_in_build = rt_shared_held(p->self);
    p->partner_in_build = rt_shared_held(p->partner);
}

static void touch_nothing(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
}

static void stores_in_a_partners_build(void *unused)
{
    (void)unused;
    init_fixed(512 * KIB);
    for (int swapped = 0; swapped <= 1; swapped++) {
        struct partner_build p = {NULL, NULL, NULL, 0, 0};
        int64_t zero = 0;
        rt_shared *a = rt_shared_supervised(RT_OWNED, sizeof zero, build_touching_the_partner,
                                            &p, 256 * KIB);
        rt_shared *b = rt_shared_new(RT_OWNED, sizeof zero, &zero, 256 * KIB);
        size_t held_a = rt_shared_held(a), held_b = rt_shared_held(b);
        p.self = a;
        p.partner = b;

        NEED(run_task(poison_it, a) == RT_PANICKED && rt_poisoned(a));
        NEED(rt_update_all(swapped ? b : a, swapped ? a : b, touch_nothing, NULL) == RT_OK);
        NEED(p.stored != NULL && chunk_live(p.stored));
        NEED(p.self_in_build == held_a && p.partner_in_build == held_b + RT_CHUNK_SIZE);
        NEED(rt_shared_held(a) == held_a && rt_shared_held(b) == held_b + RT_CHUNK_SIZE);
        NEED(rt_held() == 0);

        /* poisoned again: this rebuild takes it back and frees it */
        char *stored = p.stored;
        NEED(run_task(poison_it, a) == RT_PANICKED && rt_poisoned(a));
        NEED(rt_update_all(swapped ? b : a, swapped ? a : b, touch_nothing, NULL) == RT_OK);
        NEED(p.stored == NULL && !chunk_live(stored));
        NEED(p.self_in_build == held_a && p.partner_in_build == held_b);
        NEED(rt_shared_held(a) == held_a && rt_shared_held(b) == held_b && rt_held() == 0);

        /* and stored once more, freed with b, not with a */
        NEED(run_task(poison_it, a) == RT_PANICKED);
        NEED(rt_update_all(swapped ? b : a, swapped ? a : b, touch_nothing, NULL) == RT_OK);
        stored = p.stored;
        rt_shared_free(a);
        NEED(chunk_live(stored));
        rt_shared_free(b);
        NEED(!chunk_live(stored));
    }
}

START_TEST(a_rebuild_inside_update_all_stores_into_the_other_value_there)
{
    RUN_OK(stores_in_a_partners_build, "panicked: poisons the holder");
}
END_TEST

/* ---- lock order -------------------------------------------------------- */

#define PAIR_ROUNDS 20000

struct pair_run {
    rt_shared *first, *second; /* passed in this order */
    int64_t add_first, add_second;
};

static void add_pair(void *va, void *vb, void *ctx)
{
    struct pair_run *p = ctx;
    if (p->add_first != 0)
        *(int64_t *)va += p->add_first;
    if (p->add_second != 0)
        *(int64_t *)vb += p->add_second;
}

static void add_pair_list(void *va, void *vb, void *ctx)
{
    (void)vb;
    add_pair(va, &(int64_t){0}, ctx); /* the copy side only; the list stays */
}

static void *pair_rounds(void *arg)
{
    struct pair_run *p = arg;
    for (int i = 0; i < PAIR_ROUNDS; i++)
        NEED(rt_update_all(p->first, p->second, add_pair, p) == RT_OK);
    return NULL;
}

static void *mixed_rounds(void *arg)
{
    struct pair_run *p = arg;
    for (int i = 0; i < PAIR_ROUNDS; i++)
        NEED(rt_update_all(p->first, p->second, add_pair_list, p) == RT_OK);
    return NULL;
}

static void add_to_b(void *va, void *vb, void *ctx)
{
    (void)va;
    *(int64_t *)vb += ((struct pair_run *)ctx)->add_first;
}

static void *list_first_rounds(void *arg)
{
    struct pair_run *p = arg; /* first is the list, second the copy */
    for (int i = 0; i < PAIR_ROUNDS; i++)
        NEED(rt_update_all(p->first, p->second, add_to_b, p) == RT_OK);
    return NULL;
}

static void opposite_order_pairs(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(0), *b = new_i64(0), *c = new_i64(0), *l = new_list(1 * KIB);
    struct pair_run ab = {a, b, 1, 2}, ba = {b, a, 4, 3};
    struct pair_run cl = {c, l, 5, 0}, lc = {l, c, 7, 0};
    rt_task *t[4] = {rt_spawn(pair_rounds, &ab), rt_spawn(pair_rounds, &ba),
                     rt_spawn(mixed_rounds, &cl), rt_spawn(list_first_rounds, &lc)};
    for (int i = 0; i < 4; i++) {
        NEED(t[i] != NULL);
        NEED(rt_join(t[i], NULL) == RT_OK);
    }
    NEED(get_i64(a) == 4 * PAIR_ROUNDS && get_i64(b) == 6 * PAIR_ROUNDS);
    NEED(get_i64(c) == 12 * PAIR_ROUNDS);
    rt_shared_free(a);
    rt_shared_free(b);
    rt_shared_free(c);
    rt_shared_free(l);
}

START_TEST(opposite_order_update_all_pairs_never_deadlock)
{
    RUN_OK(opposite_order_pairs, NULL);
}
END_TEST

/* ---- misuse ------------------------------------------------------------ */

static void update_inside(void *value, void *ctx)
{
    (void)value;
    rt_update(ctx, count_update, NULL);
}

static void get_inside(const void *value, void *ctx)
{
    int64_t out;
    (void)value;
    rt_get(ctx, &out);
}

static void pair_update_inside(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    rt_update(ctx, count_update, NULL);
}

static void free_inside(void *value, void *ctx)
{
    (void)value;
    rt_shared_free(ctx);
}

static void door_again_on_a_copy(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(1);
    rt_update(s, update_inside, s);
}

static void door_again_on_an_owned(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    rt_access(s, get_inside, s);
}

static void door_again_inside_update_all(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(1), *b = new_list(1 * KIB);
    rt_update_all(a, b, pair_update_inside, b);
}

static void update_all_same(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(1);
    rt_update_all(a, a, count_pair, NULL);
}

static void nested_against_the_order(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *older = new_i64(1), *newer = new_i64(2);
    rt_update(newer, update_inside, older);
}

static void pair_update_all_inside(void *value, void *ctx)
{
    rt_shared **ab = ctx;
    (void)value;
    rt_update_all(ab[0], ab[1], count_pair, NULL);
}

/* a, middle, b made in that order: an update_all of a and b inside a door
** on the middle one is against the order for a, though not for b */
static void update_all_around_the_middle(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(1), *middle = new_i64(2), *b = new_i64(3);
    rt_shared *ab[2] = {b, a};
    rt_update(middle, pair_update_all_inside, ab);
}

static void free_in_its_door(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    rt_update(s, free_inside, s);
}

static void door_on_a_plain_thread_body(void)
{
    int64_t v = 1;
    rt_shared *s = new_i64(v);
    rt_get(s, &v);
}

static void *plain_thread(void *unused)
{
    (void)unused;
    door_on_a_plain_thread_body();
    return NULL;
}

static void door_on_a_plain_thread(void *unused)
{
    (void)unused;
    pthread_t t;
    rt_init();
    pthread_create(&t, NULL, plain_thread, NULL);
    pthread_join(t, NULL);
}

static void too_small_a_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    char big[300] = {0};
    rt_shared_new(RT_COPY, sizeof big, big, 256);
}

/* What the store scenarios below store: an outside value of 8 bytes,
** NULL, or a block value. A store with no door that may change the value
** is refused for the door, whatever it stores: the NULL value's own
** message, and a block value's refusal (RT_REFUSED), are for a door that
** may change the value (docs/misuse.md). */
enum { STORE_OUTSIDE, STORE_NULL, STORE_BLOCK_VALUE, STORE_KINDS };
static int the_value_stored;

static void *a_value_to_store(void)
{
    return the_value_stored == STORE_NULL          ? NULL
           : the_value_stored == STORE_BLOCK_VALUE ? rt_alloc(8)
                                                   : rt_alloc_outside(8);
}

/* The scenarios below store, or (the_call_unstores) unstore: an unstore
** with no door that may change the value is refused for the door too,
** whatever it is given (NULL, a value never stored, a block value), before
** the value's own message (docs/misuse.md). */
static int the_call_unstores;

static void store_or_unstore(rt_shared *s)
{
    if (the_call_unstores)
        rt_unstore(s, a_value_to_store());
    else
        rt_store(s, a_value_to_store());
}

static void store_outside_a_door(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    store_or_unstore(s);
}

static void store_into_a_copy_outside_a_door(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(1);
    store_or_unstore(s);
}

static void unstore_from_a_copy_outside_a_door(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(1);
    rt_unstore(s, rt_alloc_outside(8));
}

/* In an update of the owned value ctx[1], a store into or an unstore from
** the copy value ctx[0], on which no door is open. */
static void store_into_the_other(void *value, void *ctx)
{
    rt_shared **pair = ctx;
    (void)value;
    store_or_unstore(pair[0]);
}

static void unstore_from_the_other(void *value, void *ctx)
{
    rt_shared **pair = ctx;
    (void)value;
    rt_unstore(pair[0], rt_alloc_outside(8));
}

static void store_into_a_copy_in_a_door_on_another(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *pair[2] = {new_i64(1), new_list(1 * KIB)};
    rt_update(pair[1], store_into_the_other, pair);
}

static void unstore_from_a_copy_in_a_door_on_another(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *pair[2] = {new_i64(1), new_list(1 * KIB)};
    rt_update(pair[1], unstore_from_the_other, pair);
}

static void store_in_update(void *value, void *ctx)
{
    (void)value;
    store_or_unstore(ctx);
}

static void store_in_access(const void *value, void *ctx)
{
    (void)value;
    store_or_unstore(ctx);
}

static void store_into_a_copy(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(1);
    rt_update(s, store_in_update, s);
}

/* The build of an RT_COPY supervised value stores nothing either. The first
** build cannot name its value, so the value is poisoned (with an owned one,
** by a panic in rt_update_all) and its rebuild's build tries the store. */
static rt_shared *copy_to_store_into;

static void build_storing_into_a_copy(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (copy_to_store_into != NULL)
        store_or_unstore(copy_to_store_into);
}

static void panic_in_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    rt_panic("both poisoned");
}

static void *poison_pair(void *arg)
{
    rt_shared **pair = arg;
    rt_update_all(pair[0], pair[1], panic_in_pair, NULL);
    return NULL;
}

static void store_in_the_build_of_a_copy(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *pair[2] = {
        rt_shared_supervised(RT_COPY, sizeof(int64_t), build_storing_into_a_copy, NULL, 256),
        new_list(1 * KIB)};
    NEED(run_task(poison_pair, pair) == RT_PANICKED && rt_poisoned(pair[0]));
    copy_to_store_into = pair[0];
    get_i64(pair[0]); /* rebuilt first: its build stores */
}

static void store_in_an_access(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    rt_access(s, store_in_access, s);
}

static void store_unheld_in_update(void *value, void *ctx)
{
    static char not_held[8];
    (void)value;
    rt_store(ctx, not_held);
}

static void store_an_unheld_pointer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    rt_update(s, store_unheld_in_update, s);
}

static void unstore_in_update(void *value, void *ctx)
{
    (void)value;
    rt_unstore(ctx, &value);
}

static void unstore_what_was_not_stored(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_list(1 * KIB);
    rt_update(s, unstore_in_update, s);
}

/* ---- nesting: which violation a door hears of, in each nesting --------- */

/* A plan of nested doors: plan[0] is the outermost, each door's fn opens
** the next, and the last one is the door under test. Values are indices
** into plan_values, made in index order (so value i is #i+1 in a fresh
** child): 0 and 2 RT_COPY, 1 RT_OWNED. */
enum plan_door { P_UPDATE, P_ACCESS, P_GET, P_ALL };

struct plan_step {
    enum plan_door door;
    int a, b; /* b only for P_ALL */
};

static struct plan_step plan[8];
static int plan_len;
static rt_shared *plan_values[3];

static void plan_open(intptr_t k);

static void plan_update_fn(void *value, void *ctx)
{
    (void)value;
    plan_open((intptr_t)ctx);
}

static void plan_access_fn(const void *value, void *ctx)
{
    (void)value;
    plan_open((intptr_t)ctx);
}

static void plan_all_fn(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    plan_open((intptr_t)ctx);
}

static void plan_open(intptr_t k)
{
    if (k == plan_len)
        return;
    const struct plan_step *p = &plan[k];
    void *next = (void *)(k + 1);
    int64_t out[4];
    switch (p->door) {
    case P_UPDATE:
        rt_update(plan_values[p->a], plan_update_fn, next);
        break;
    case P_ACCESS:
        rt_access(plan_values[p->a], plan_access_fn, next);
        break;
    case P_GET:
        NEED(k + 1 == plan_len); /* a get has no fn to nest in */
        rt_get(plan_values[p->a], out);
        break;
    case P_ALL:
        rt_update_all(plan_values[p->a], plan_values[p->b], plan_all_fn, next);
        break;
    }
}

static void *plan_task(void *unused)
{
    (void)unused;
    plan_open(0);
    return NULL;
}

static bool plan_on_a_task;
/* Values #1 and #3 of 0 bytes (a copy and an owned one): a door's checks
** hold at every size, none included. */
static bool plan_empty;

static void plan_run(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    plan_values[0] = plan_empty ? rt_shared_new(RT_COPY, 0, NULL, 256) : new_i64(1);
    plan_values[1] = new_list(1 * KIB);
    plan_values[2] = plan_empty ? rt_shared_new(RT_OWNED, 0, NULL, 256) : new_i64(3);
    if (plan_on_a_task)
        run_task(plan_task, NULL);
    else
        plan_open(0);
    NEED(!"the last door opened");
}

/* The plan (its steps, outermost first) must end in the violation whose
** message holds msg, on main and on a spawned task, with #1 and #3 of 8
** bytes and of none. */
static void plan_violates(const char *msg, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        plan[i] = va_arg(ap, struct plan_step);
    va_end(ap);
    plan_len = n;
    for (int on_task = 0; on_task < 4; on_task++) {
        plan_on_a_task = on_task & 1;
        plan_empty = on_task >> 1;
        violates(plan_run, msg);
    }
}

#define UPDATE(i) ((struct plan_step){P_UPDATE, (i), -1})
#define ACCESS(i) ((struct plan_step){P_ACCESS, (i), -1})
#define GET(i) ((struct plan_step){P_GET, (i), -1})
#define ALL(i, j) ((struct plan_step){P_ALL, (i), (j)})

/* A rebuild's build runs in the door that found the value poisoned: a
** door inside it on the value itself is entered again, also past a door
** the build opens on a value made later. */
static rt_shared *rebuilt, *rebuilt_later;
static bool past_a_later_door;

static void get_rebuilt(void *value, void *ctx)
{
    int64_t out;
    (void)value, (void)ctx;
    rt_get(rebuilt, &out);
}

static void build_entering_again(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (rebuilt == NULL)
        return; /* the first build */
    if (past_a_later_door)
        rt_update(rebuilt_later, get_rebuilt, NULL);
    else
        get_rebuilt(NULL, NULL);
}

static void *poison_owned(void *s)
{
    rt_update(s, kept_then_panic, NULL);
    return NULL;
}

static void rebuild_entering_again(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof(int64_t), build_entering_again, NULL,
                                        4 * KIB);
    rebuilt_later = new_i64(2);
    NEED(run_task(poison_owned, s) == RT_PANICKED && rt_poisoned(s));
    rebuilt = s;
    rt_access(s, count_access, NULL);
    NEED(!"the build's door opened");
}

START_TEST(a_door_on_a_value_open_anywhere_in_the_task_is_reported_as_entered_again)
{
    /* right inside the door on it, and past doors on values made later,
    ** which the order alone would report instead */
    plan_violates("refrt: rt_update: a door on shared value #1 is already open in this task "
                  "(entered again from inside rt_update)\n",
                  2, UPDATE(0), UPDATE(0));
    plan_violates("refrt: rt_update: a door on shared value #1 is already open in this task "
                  "(entered again from inside rt_update)\n",
                  3, UPDATE(0), UPDATE(1), UPDATE(0));
    plan_violates("refrt: rt_get: a door on shared value #1 is already open in this task "
                  "(entered again from inside rt_access)\n",
                  4, ACCESS(0), UPDATE(1), ACCESS(2), GET(0));
    plan_violates("refrt: rt_access: a door on shared value #2 is already open in this task "
                  "(entered again from inside rt_update_all)\n",
                  3, ALL(1, 0), UPDATE(2), ACCESS(1));
    /* either value of an rt_update_all, in either argument order: the one
    ** made first, and the one made later */
    plan_violates("refrt: rt_update_all: a door on shared value #1 is already open in this "
                  "task (entered again from inside rt_access)\n",
                  2, ACCESS(0), ALL(0, 1));
    plan_violates("refrt: rt_update_all: a door on shared value #1 is already open in this "
                  "task (entered again from inside rt_access)\n",
                  2, ACCESS(0), ALL(1, 0));
    plan_violates("refrt: rt_update_all: a door on shared value #2 is already open in this "
                  "task (entered again from inside rt_update)\n",
                  2, UPDATE(1), ALL(0, 1));
    plan_violates("refrt: rt_update_all: a door on shared value #2 is already open in this "
                  "task (entered again from inside rt_update)\n",
                  2, UPDATE(1), ALL(1, 0));
    plan_violates("refrt: rt_update_all: a door on shared value #3 is already open in this "
                  "task (entered again from inside rt_update_all)\n",
                  2, ALL(0, 2), ALL(2, 1));
    plan_violates("refrt: rt_update: a door on shared value #2 is already open in this task "
                  "(entered again from inside rt_update_all)\n",
                  3, ALL(1, 0), UPDATE(2), UPDATE(1));
    plan_violates("refrt: rt_get: a door on shared value #3 is already open in this task "
                  "(entered again from inside rt_update)\n",
                  2, UPDATE(2), GET(2));
    /* in a rebuild's build, right inside its door and past a later one */
    past_a_later_door = false;
    violates(rebuild_entering_again,
             "refrt: rt_get: a door on shared value #1 is already open in this task "
             "(entered again from inside rt_access)\n");
    past_a_later_door = true;
    violates(rebuild_entering_again,
             "refrt: rt_get: a door on shared value #1 is already open in this task "
             "(entered again from inside rt_access)\n");
}
END_TEST

/* A first build runs in a door on its own value, the newest there is:
** a door inside it on a value made before is against the order; one on a
** value the build itself makes (later still) is in order, and that value
** may be made, updated, read and freed inside the build. */
static void build_with_a_door_on_a_value_it_makes(void *value, void *ctx)
{
    int64_t one = 1, out = 0;
    rt_shared *inner = rt_shared_new(RT_OWNED, sizeof one, &one, 256);
    (void)ctx;
    NEED(rt_update(inner, add_one, NULL) == RT_OK);
    NEED(rt_get(inner, &out) == RT_OK && out == 2);
    rt_shared_free(inner);
    *(int64_t *)value = out;
}

static void first_build_nests_in_order(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    size_t live = rt__blocks_live();
    rt_shared *s = rt_shared_supervised(RT_COPY, sizeof(int64_t),
                                        build_with_a_door_on_a_value_it_makes, NULL, 256);
    NEED(get_i64(s) == 2);
    NEED(rt__blocks_live() == live + 1); /* its own block; the inner value's went with it */
    rt_shared_free(s);
}

static void build_with_a_door_on_an_older_value(void *value, void *ctx)
{
    int64_t out;
    (void)value;
    rt_get(ctx, &out);
}

static void first_build_nests_against_the_order(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *older = new_i64(1);
    rt_shared_supervised(RT_COPY, sizeof(int64_t), build_with_a_door_on_an_older_value, older,
                         256);
}

START_TEST(a_first_build_nests_doors_only_on_values_it_makes)
{
    RUN_OK(first_build_nests_in_order, NULL);
    violates(first_build_nests_against_the_order,
             "refrt: rt_get: a door on shared value #1 opened inside a door on #2, made later");
}
END_TEST

/* A value a first build makes and keeps was made after the value being
** built: the built value keeps the number it had when its build began, so
** after rt_shared_supervised returns a door on the kept value nests inside
** a door on the built one, and the reverse is against the order, whichever
** kind either is. */
static void build_keeps_a_value_it_makes(void *value, void *ctx)
{
    int64_t one = 1;
    *(rt_shared **)ctx = rt_shared_new(RT_OWNED, sizeof one, &one, 256);
    *(int64_t *)value = 40;
}

static void reads_the_other(void *value, void *ctx)
{
    int64_t out = 0;
    (void)value;
    NEED(rt_get(ctx, &out) == RT_OK);
}

static rt_shared *kept_by_its_build;

static rt_shared *built_before_what_its_build_kept(rt_kind kind)
{
    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_supervised(kind, sizeof(int64_t), build_keeps_a_value_it_makes,
                                        &kept_by_its_build, 256);
    NEED(s != NULL && kept_by_its_build != NULL && get_i64(s) == 40);
    return s;
}

static void kept_value_nests_inside_the_built_one(void *unused)
{
    (void)unused;
    for (int kind = 0; kind < 2; kind++) {
        rt_shared *s = built_before_what_its_build_kept(kind ? RT_OWNED : RT_COPY);
        NEED(rt_update(s, reads_the_other, kept_by_its_build) == RT_OK);
        rt_shared_free(kept_by_its_build);
        rt_shared_free(s);
    }
}

static bool built_owned;

static void built_value_inside_what_its_build_kept(void *unused)
{
    (void)unused;
    rt_shared *s = built_before_what_its_build_kept(built_owned ? RT_OWNED : RT_COPY);
    rt_update(kept_by_its_build, reads_the_other, s);
}

START_TEST(a_value_a_first_build_keeps_is_made_after_the_value_built)
{
    RUN_OK(kept_value_nests_inside_the_built_one, NULL);
    for (int owned = 0; owned < 2; owned++) {
        built_owned = owned;
        violates(built_value_inside_what_its_build_kept,
                 "refrt: rt_get: a door on shared value #1 opened inside a door on #2, made "
                 "later");
    }
}
END_TEST

START_TEST(a_door_entered_again_on_the_same_value_is_a_violation)
{
    violates(door_again_on_a_copy,
                        "refrt: rt_update: a door on shared value #1 is already open in this "
                        "task (entered again from inside rt_update)\n");
    violates(door_again_on_an_owned,
                        "refrt: rt_get: a door on shared value #1 is already open in this task "
                        "(entered again from inside rt_access)\n");
    violates(door_again_inside_update_all,
                        "refrt: rt_update: a door on shared value #2 is already open");
    violates(free_in_its_door,
                        "refrt: rt_shared_free: a door on shared value #1 is open in this task");
}
END_TEST

START_TEST(update_all_over_one_value_is_a_violation)
{
    violates(update_all_same,
                        "refrt: rt_update_all: a and b are the same shared value (#1); "
                        "use rt_update\n");
}
END_TEST

START_TEST(doors_nest_only_in_the_order_values_were_made)
{
    violates(nested_against_the_order,
                        "refrt: rt_update: a door on shared value #1 opened inside a door on "
                        "#2, made later");
    violates(update_all_around_the_middle,
             "refrt: rt_update_all: a door on shared value #1 opened inside a door on #2, "
             "made later");
    /* on main and on a task; past a door on a value made before, in either
    ** place of a pair, with one door on a value made later or two */
    plan_violates("refrt: rt_update: a door on shared value #1 opened inside a door on #2, "
                  "made later: doors nest in the order values were made (or use "
                  "rt_update_all)\n",
                  2, UPDATE(1), UPDATE(0));
    plan_violates("refrt: rt_get: a door on shared value #2 opened inside a door on #3, "
                  "made later",
                  3, UPDATE(0), UPDATE(2), GET(1));
    plan_violates("refrt: rt_get: a door on shared value #1 opened inside a door on #2, "
                  "made later",
                  2, UPDATE(1), GET(0));
    plan_violates("refrt: rt_update_all: a door on shared value #1 opened inside a door on #2, "
                  "made later",
                  2, ACCESS(1), ALL(2, 0));
    plan_violates("refrt: rt_update_all: a door on shared value #1 opened inside a door on #2, "
                  "made later",
                  2, ACCESS(1), ALL(0, 2));
    plan_violates("refrt: rt_access: a door on shared value #1 opened inside a door on #",
                  2, ALL(1, 2), ACCESS(0));
    plan_violates("refrt: rt_access: a door on shared value #2 opened inside a door on #3, "
                  "made later",
                  2, ALL(0, 2), ACCESS(1));
}
END_TEST

/* rt_shared_held of a value with no door open in this task takes its lock
** for the read, as a door would, so it keeps the doors' order: read inside
** a door on a value made later, it is a violation (a task in a door on the
** earlier value opening one on the later would wait for this task, which
** would wait for it). Read inside a door on a value made before, or on the
** value itself, it is a plain read, exact. */
static rt_shared *held_earlier, *held_later;

static void read_earlier_in_update(void *value, void *ctx)
{
    (void)value, (void)ctx;
    (void)rt_shared_held(held_earlier);
}

static void read_earlier_in_access(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    (void)rt_shared_held(held_earlier);
}

static void read_earlier_in_update_all(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    (void)rt_shared_held(held_earlier);
}

static void read_earlier_in_build(void *value, void *ctx)
{
    (void)value, (void)ctx;
    (void)rt_shared_held(held_earlier);
}

static void held_in_update_of_later(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    held_earlier = new_i64(1);
    held_later = new_i64(2);
    rt_update(held_later, read_earlier_in_update, NULL);
}

static void held_in_access_of_later(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    held_earlier = new_list(1 * KIB);
    held_later = new_list(1 * KIB);
    rt_access(held_later, read_earlier_in_access, NULL);
}

static void held_in_update_all_of_later(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *a = new_i64(1);
    held_earlier = new_i64(2); /* between the two: #2 */
    rt_shared *c = new_i64(3);
    rt_update_all(c, a, read_earlier_in_update_all, NULL);
}

static void held_in_a_first_build(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    held_earlier = new_i64(1);
    rt_shared_supervised(RT_OWNED, 16, read_earlier_in_build, NULL, 1 * KIB);
}

static void *held_on_a_task(void *unused)
{
    held_in_update_of_later(unused);
    return NULL;
}

static void held_in_update_of_later_on_a_task(void *unused)
{
    (void)unused;
    rt_task *t;
    init_fixed(64 * KIB);
    t = rt_spawn(held_on_a_task, NULL);
    rt_join(t, NULL);
}

/* The violation comes before the lock, not after it: another task holds a
** door on the earlier value (parked in its fn until main's read returns),
** and main's read inside a door on the later value is refused at once. A
** read that took the lock first would wait for that task, which waits for
** main: the deadlock the rule is there for (an alarm ends the child after
** 10 s, a deadlock's signal, not the violation's). */
static int holder_inside, read_returned;

static void hold_until_the_read_returns(void *value, void *ctx)
{
    (void)value, (void)ctx;
    __atomic_store_n(&holder_inside, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&read_returned, __ATOMIC_ACQUIRE))
        usleep(1000);
}

static void *holds_the_earlier_door(void *unused)
{
    (void)unused;
    rt_update(held_earlier, hold_until_the_read_returns, NULL);
    return NULL;
}

static void read_earlier_then_say_so(void *value, void *ctx)
{
    (void)value, (void)ctx;
    (void)rt_shared_held(held_earlier);
    __atomic_store_n(&read_returned, 1, __ATOMIC_RELEASE);
}

static void held_while_another_task_holds_it(void *unused)
{
    (void)unused;
    alarm(10);
    init_fixed(64 * KIB);
    held_earlier = new_i64(1);
    held_later = new_i64(2);
    rt_task *t = rt_spawn(holds_the_earlier_door, NULL);
    NEED(t != NULL);
    while (!__atomic_load_n(&holder_inside, __ATOMIC_ACQUIRE))
        usleep(1000);
    rt_update(held_later, read_earlier_then_say_so, NULL);
}

struct held_seen {
    rt_shared *other;
    size_t seen;
};

static void read_other(void *value, void *ctx)
{
    struct held_seen *h = ctx;
    (void)value;
    h->seen = rt_shared_held(h->other);
}

/* Doors nested on values made one after the other, 1 to 4 deep: at the
** innermost, rt_shared_held of every value whose door is open (its own
** and each outer one) is that value's exact figure, read under the lock
** this task already holds. */
struct held_nest {
    rt_shared *v[4];
    size_t want[4];
    int depth, at, wrong;
};

static void held_nest_door(void *value, void *ctx)
{
    struct held_nest *n = ctx;
    (void)value;
    if (++n->at < n->depth) {
        NEED(rt_update(n->v[n->at], held_nest_door, n) == RT_OK);
        return;
    }
    for (int j = 0; j < n->depth; j++)
        if (rt_shared_held(n->v[j]) != n->want[j])
            n->wrong++;
}

static void held_of_every_open_door(void)
{
    struct held_nest n = {{new_list(1 * KIB), new_list(2 * KIB), new_list(1 * KIB),
                           new_list(4 * KIB)}, {0}, 0, 0, 0};
    for (int j = 0; j < 4; j++)
        n.want[j] = rt_shared_held(n.v[j]);
    for (n.depth = 1; n.depth <= 4; n.depth++) {
        n.at = 0;
        NEED(rt_update(n.v[0], held_nest_door, &n) == RT_OK);
        NEED(n.at == n.depth && n.wrong == 0);
    }
    for (int j = 0; j < 4; j++)
        rt_shared_free(n.v[j]);
}

static void held_in_order(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    held_of_every_open_door();
    rt_shared *earlier = new_list(1 * KIB), *later = new_list(1 * KIB);
    size_t held = rt_shared_held(later);
    struct held_seen h = {later, 0};
    NEED(rt_update(earlier, read_other, &h) == RT_OK && h.seen == held);
    h.other = earlier; /* the door's own value: no lock taken again */
    held = rt_shared_held(earlier);
    NEED(rt_update(earlier, read_other, &h) == RT_OK && h.seen == held);
    rt_shared_free(earlier);
    rt_shared_free(later);
}

START_TEST(a_held_figure_read_inside_a_door_on_a_later_value_is_a_violation)
{
    violates(held_in_update_of_later,
             "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later: "
             "its lock is taken in the order doors nest in, the order values were made\n");
    violates(held_in_access_of_later,
             "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later");
    violates(held_in_update_all_of_later,
             "refrt: rt_shared_held: shared value #2 read inside a door on #3, made later");
    violates(held_in_a_first_build,
             "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later");
    violates(held_in_update_of_later_on_a_task,
             "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later");
    violates(held_while_another_task_holds_it,
             "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later");
    RUN_OK(held_in_order, NULL);
}
END_TEST

/* A poisoned value keeps the doors' rules: each door on it returns
** RT_POISONED where it may open, and nested inside a door on a value made
** later it is still the violation, not RT_POISONED (the order is checked
** before the value is looked at). */
static rt_shared *poisoned_first;
static int poisoned_door; /* 0 update, 1 access, 2 get, 3 update_all */

static void nop_update(void *value, void *ctx) { (void)value, (void)ctx; }
static void nop_access(const void *value, void *ctx) { (void)value, (void)ctx; }
static void nop_update_all(void *va, void *vb, void *ctx) { (void)va, (void)vb, (void)ctx; }

static void door_on_the_poisoned_one(void *value, void *ctx)
{
    (void)value;
    char out[64];
    switch (poisoned_door) {
    case 0: rt_update(poisoned_first, nop_update, NULL); break;
    case 1: rt_access(poisoned_first, nop_access, NULL); break;
    case 2: rt_get(poisoned_first, out); break;
    default: rt_update_all(poisoned_first, ctx, nop_update_all, NULL); break;
    }
}

static void poisoned_door_against_the_order(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    poisoned_first = new_list(1 * KIB);
    rt_shared *later = new_i64(2), *latest = new_i64(3);
    NEED(run_task(poison_it, poisoned_first) == RT_PANICKED && rt_poisoned(poisoned_first));
    /* where it may open, each door returns RT_POISONED */
    char out[64];
    NEED(rt_update(poisoned_first, nop_update, NULL) == RT_POISONED);
    NEED(rt_access(poisoned_first, nop_access, NULL) == RT_POISONED);
    NEED(rt_get(poisoned_first, out) == RT_POISONED);
    NEED(rt_update_all(poisoned_first, latest, nop_update_all, NULL) == RT_POISONED);
    rt_update(later, door_on_the_poisoned_one, latest);
}

START_TEST(a_door_on_a_poisoned_value_keeps_the_order_doors_nest_in)
{
    static const char *const fns[] = {"rt_update", "rt_access", "rt_get", "rt_update_all"};
    for (poisoned_door = 0; poisoned_door < 4; poisoned_door++) {
        char want[160];
        snprintf(want, sizeof want, "refrt: %s: a door on shared value #1 opened inside a door "
                 "on #2, made later", fns[poisoned_door]);
        violates(poisoned_door_against_the_order, want);
    }
}
END_TEST

/* rt_store's refusals for its door: none open, an RT_COPY value, a door
** that cannot change the value; the same message for an outside value and
** for NULL and for a block value (the_value_stored). */
static void misuse_of_stores_by_the_door(void)
{
    static const struct {
        void (*fn)(void *);
        const char *says;
    } cases[] = {
        {store_outside_a_door, "no door on shared value #1 is open in this task\n"},
        {store_into_a_copy, "shared value #1 is RT_COPY: it holds no outside values\n"},
        {store_into_a_copy_outside_a_door, "no door on shared value #1 is open in this task\n"},
        {store_into_a_copy_in_a_door_on_another,
         "no door on shared value #1 is open in this task\n"},
        {store_in_the_build_of_a_copy, "shared value #1 is RT_COPY: it holds no outside values\n"},
        {store_in_an_access,
         "the door open on shared value #1 is rt_access, which cannot change it\n"},
    };
    for (the_call_unstores = 0; the_call_unstores < 2; the_call_unstores++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char want[160];
            snprintf(want, sizeof want, "refrt: %s: %s",
                     the_call_unstores ? "rt_unstore" : "rt_store", cases[i].says);
            violates(cases[i].fn, want);
        }
    the_call_unstores = 0;
}

/* rt_unstore: "A task whose budget cannot take it panics, and the value
** stays stored" (refrt.h), in every door that can name the value it
** unstores from: an owned update, rt_update_all with the owned value as a
** and as b, and a supervised value's rebuild (through rt_get; a first
** build cannot name its value). On a task of an 8 KiB budget, the door
** stores a 1000-byte outside value, fills the task to less room than that
** value's bytes, and unstores it: the task panics at the unstore (which
** never returns), and the door leaves what its row says
** (docs/poisoning.md): an update's value poisoned with the value still
** stored (its figure holds it); a rebuild's value poisoned still, with
** its old state's figure (the fresh state, the stored value with it, is
** gone). */
enum { UNSTORE_IN_UPDATE, UNSTORE_IN_ALL_A, UNSTORE_IN_ALL_B, UNSTORE_IN_REBUILD,
       UNSTORE_DOORS };
static int unstore_door;
static bool unstore_returned;
static size_t unstored_bytes;
static rt_shared *unstore_target;

/* Stores a 1000-byte value into s, fills the task, unstores it. */
static void store_fill_unstore(rt_shared *s)
{
    size_t before = rt_held();
    void *v = rt_alloc_outside(1000);
    unstored_bytes = rt_held() - before;
    NEED(rt_store(s, v) == RT_OK && rt_held() == before);
    size_t room = rt_budget() - rt_held();
    NEED(room > unstored_bytes);
    NEED(rt_alloc_outside(room - unstored_bytes + 1) != NULL);
    NEED(rt_budget() - rt_held() < unstored_bytes);
    rt_unstore(s, v);
    unstore_returned = true;
}

static void unstore_too_big_in_update(void *value, void *ctx)
{
    (void)value;
    store_fill_unstore(ctx);
}

static void unstore_too_big_in_all(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    store_fill_unstore(ctx);
}

static void unstore_too_big_in_build(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (unstore_target != NULL)
        store_fill_unstore(unstore_target);
}

static void *unstore_on_a_task(void *arg)
{
    rt_shared **pair = arg; /* [0] the owned value it unstores from, [1] another */
    int64_t out;
    switch (unstore_door) {
    case UNSTORE_IN_UPDATE:
        rt_update(pair[0], unstore_too_big_in_update, pair[0]);
        break;
    case UNSTORE_IN_ALL_A:
        rt_update_all(pair[0], pair[1], unstore_too_big_in_all, pair[0]);
        break;
    case UNSTORE_IN_ALL_B:
        rt_update_all(pair[1], pair[0], unstore_too_big_in_all, pair[0]);
        break;
    default:
        unstore_target = pair[0];
        rt_get(pair[0], &out);
    }
    return NULL;
}

static void an_unstore_that_does_not_fit(void *unused)
{
    (void)unused;
    init_fixed(8 * KIB);
    rt_shared *pair[2] = {NULL, new_list(1 * KIB)};
    if (unstore_door == UNSTORE_IN_REBUILD) {
        unstore_target = NULL; /* the first build stores nothing */
        pair[0] = rt_shared_supervised(RT_OWNED, sizeof(int64_t), unstore_too_big_in_build, NULL,
                                       4 * KIB);
        rt_shared *poison[2] = {pair[0], pair[1]};
        NEED(run_task(poison_pair, poison) == RT_PANICKED && rt_poisoned(pair[0]));
    } else {
        pair[0] = new_list(4 * KIB);
    }
    size_t before = rt_shared_held(pair[0]);
    NEED(run_task(unstore_on_a_task, pair) == RT_PANICKED);
    NEED(!unstore_returned);
    NEED(rt_poisoned(pair[0]));
    if (unstore_door == UNSTORE_IN_REBUILD)
        NEED(rt_shared_held(pair[0]) == before);
    else
        NEED(rt_shared_held(pair[0]) == before + unstored_bytes);
    exit(0);
}

START_TEST(an_unstore_the_task_cannot_take_panics_in_every_door_that_unstores)
{
    static const char *const doors[] = {"an update", "rt_update_all as a", "rt_update_all as b",
                                        "a rebuild's build"};
    for (unstore_door = 0; unstore_door < UNSTORE_DOORS; unstore_door++) {
        struct death d = run_child(an_unstore_that_does_not_fit, NULL);
        ck_assert_msg(d.signal == 0 && d.exit_status == 0 &&
                          strstr(d.err, "an unstored value of") != NULL,
                      "in %s: signal %d exit %d; stderr: %s", doors[unstore_door], d.signal,
                      d.exit_status, d.err);
    }
}
END_TEST

/* "The poisoned block and its stored values are freed; then fn runs"
** (docs/poisoning.md, a door on a poisoned supervised value): in every
** door that rebuilds and then runs fn (an update, an access, rt_update_all
** with the value as a and as b), fn already sees the poisoned state gone:
** as many blocks live as before the door (the fresh one for the poisoned
** one), and fewer allocations by exactly the value the poisoned state held
** stored and what storing it allocated, on main and on a task. */
enum { REBUILT_IN_UPDATE, REBUILT_IN_ACCESS, REBUILT_IN_ALL_A, REBUILT_IN_ALL_B,
       REBUILT_DOORS };
static int rebuilt_door;
static size_t rebuilt_blocks_before;
static long rebuilt_allocs_before;
static bool rebuilt_fn_ran;

static void build_nothing_owned(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

/* What the store itself allocated for the state (its list of stored
** values): freed with the state too. */
static long store_allocated;

static void store_then_panic(void *value, void *ctx)
{
    (void)value;
    void *v = rt_alloc_outside(100);
    long before = allocs_live();
    NEED(rt_store(ctx, v) == RT_OK);
    store_allocated = allocs_live() - before;
    rt_panic("poisoned with a value stored");
}

static void *poison_with_a_stored_value(void *arg)
{
    rt_update(arg, store_then_panic, arg);
    return NULL;
}

static void sees_the_poisoned_state_gone(void)
{
    NEED(rt__blocks_live() == rebuilt_blocks_before);
    NEED(allocs_live() == rebuilt_allocs_before - 1 - store_allocated);
    rebuilt_fn_ran = true;
}

static void rebuilt_update(void *value, void *ctx)
{
    (void)value, (void)ctx;
    sees_the_poisoned_state_gone();
}

static void rebuilt_access(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    sees_the_poisoned_state_gone();
}

static void rebuilt_all(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    sees_the_poisoned_state_gone();
}

static void *rebuild_in_a_door(void *arg)
{
    rt_shared **pair = arg; /* [0] the poisoned supervised value, [1] a healthy one */
    rebuilt_blocks_before = rt__blocks_live();
    rebuilt_allocs_before = allocs_live();
    rebuilt_fn_ran = false;
    rt_status st = rebuilt_door == REBUILT_IN_UPDATE   ? rt_update(pair[0], rebuilt_update, NULL)
                   : rebuilt_door == REBUILT_IN_ACCESS ? rt_access(pair[0], rebuilt_access, NULL)
                   : rebuilt_door == REBUILT_IN_ALL_A
                       ? rt_update_all(pair[0], pair[1], rebuilt_all, NULL)
                       : rt_update_all(pair[1], pair[0], rebuilt_all, NULL);
    NEED(st == RT_OK && rebuilt_fn_ran && !rt_poisoned(pair[0]));
    return NULL;
}

static void a_rebuild_in_a_door(void *on_task)
{
    init_fixed(64 * KIB);
    rt_shared *pair[2] = {rt_shared_supervised(RT_OWNED, sizeof(int64_t), build_nothing_owned,
                                               NULL, 4 * KIB),
                          new_list(1 * KIB)};
    NEED(run_task(poison_with_a_stored_value, pair[0]) == RT_PANICKED && rt_poisoned(pair[0]));
    if (on_task != NULL)
        NEED(run_task(rebuild_in_a_door, pair) == RT_OK);
    else
        rebuild_in_a_door(pair);
    exit(0);
}

START_TEST(a_rebuild_frees_the_poisoned_state_before_fn_runs_in_every_door)
{
    static const char *const doors[] = {"an update", "an access", "rt_update_all as a",
                                        "rt_update_all as b"};
    for (rebuilt_door = 0; rebuilt_door < REBUILT_DOORS; rebuilt_door++)
        for (int task = 0; task < 2; task++) {
            struct death d = run_child(a_rebuild_in_a_door, task ? (void *)1 : NULL);
            ck_assert_msg(d.signal == 0 && d.exit_status == 0, "in %s on %s: signal %d exit %d; "
                          "stderr: %s", doors[rebuilt_door], task ? "a task" : "main",
                          d.signal, d.exit_status, d.err);
        }
}
END_TEST

/* "A value has one copy alive at most, however many tasks wait on it"
** (docs/poisoning.md): a task inside an rt_update of a 4096-byte RT_COPY
** value (or an rt_update_all over two 1000-byte ones) holds the copy;
** four tasks that then wait on the value's lock hold no copy while they
** wait: the allocations live are the same with them asleep at a gate of
** the test's and asleep in the door, and the same again once every door
** is over. Copies of 128 bytes or less are on the door's stack; these are
** past that. */
#define COPY_WAITERS 4
struct copy_wait {
    rt_shared *a, *b;
    int pair;
    atomic_int entered, go, release, tids[COPY_WAITERS];
    pthread_mutex_t gate;
    pthread_cond_t opened;
};

static void copy_wait_hold(struct copy_wait *w)
{
    atomic_store(&w->entered, 1);
    while (!atomic_load(&w->release))
        sched_yield();
}

static void copy_wait_in_update(void *value, void *ctx)
{
    (void)value;
    copy_wait_hold(ctx);
}

static void copy_wait_in_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    copy_wait_hold(ctx);
}

static void copy_wait_nothing(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void *copy_wait_holder(void *arg)
{
    struct copy_wait *w = arg;
    NEED((w->pair ? rt_update_all(w->a, w->b, copy_wait_in_pair, w)
                  : rt_update(w->a, copy_wait_in_update, w)) == RT_OK);
    return NULL;
}

struct copy_waiter {
    struct copy_wait *w;
    int i;
};

static void *copy_waiter(void *arg)
{
    struct copy_waiter *me = arg;
    struct copy_wait *w = me->w;
    pthread_mutex_lock(&w->gate);
    atomic_store(&w->tids[me->i], (int)gettid());
    while (!atomic_load(&w->go))
        pthread_cond_wait(&w->opened, &w->gate);
    atomic_store(&w->tids[me->i], -(int)gettid()); /* past the gate */
    pthread_mutex_unlock(&w->gate);
    NEED((w->pair ? rt_update_all(w->a, w->b, touch_nothing, NULL)
                  : rt_update(w->a, copy_wait_nothing, NULL)) == RT_OK);
    return NULL;
}

static void copies_of_waiters(void *arg)
{
    static struct copy_wait w;
    static unsigned char big[4096], mid[1000];
    w.pair = arg != NULL;
    init_fixed(64 * KIB);
    die_of_alarm_after(30);
    pthread_mutex_init(&w.gate, NULL);
    pthread_cond_init(&w.opened, NULL);
    w.a = rt_shared_new(RT_COPY, w.pair ? sizeof mid : sizeof big, w.pair ? mid : big,
                        16 * KIB);
    w.b = rt_shared_new(RT_COPY, sizeof mid, mid, 16 * KIB);
    rt_task *holder = rt_spawn(copy_wait_holder, &w), *t[COPY_WAITERS];
    NEED(holder != NULL);
    while (!atomic_load(&w.entered))
        sched_yield();
    struct copy_waiter ws[COPY_WAITERS];
    for (int i = 0; i < COPY_WAITERS; i++) {
        ws[i] = (struct copy_waiter){&w, i};
        NEED((t[i] = rt_spawn(copy_waiter, &ws[i])) != NULL);
    }
    for (int i = 0; i < COPY_WAITERS; i++) {
        while (atomic_load(&w.tids[i]) == 0)
            sched_yield();
        thread_wait_asleep(atomic_load(&w.tids[i])); /* at the gate */
    }
    long at_the_gate = allocs_live();
    pthread_mutex_lock(&w.gate);
    atomic_store(&w.go, 1);
    pthread_cond_broadcast(&w.opened);
    pthread_mutex_unlock(&w.gate);
    for (int i = 0; i < COPY_WAITERS; i++) {
        while (atomic_load(&w.tids[i]) > 0)
            sched_yield();
        thread_wait_asleep(-atomic_load(&w.tids[i])); /* in its door, on the lock */
    }
    NEED(allocs_live() == at_the_gate);
    atomic_store(&w.release, 1);
    NEED(rt_join(holder, NULL) == RT_OK);
    for (int i = 0; i < COPY_WAITERS; i++)
        NEED(rt_join(t[i], NULL) == RT_OK);
    exit(0);
}

START_TEST(tasks_waiting_on_a_copy_value_hold_no_copy_while_they_wait)
{
    for (int pair = 0; pair < 2; pair++) {
        struct death d = run_child(copies_of_waiters, pair ? (void *)1 : NULL);
        ck_assert_msg(d.signal == 0 && d.exit_status == 0, "waiting on %s: signal %d exit %d; "
                      "stderr: %s", pair ? "an rt_update_all" : "an rt_update", d.signal,
                      d.exit_status, d.err);
    }
}
END_TEST

START_TEST(misuse_of_doors_and_stores_gets_the_contracts_error)
{
    violates(door_on_a_plain_thread, "refrt: rt_get: this thread is not a task");
    violates(too_small_a_block,
                        "refrt: rt_shared_new: a value of 300 bytes does not fit a block of 256 "
                        "bytes");
    for (the_value_stored = 0; the_value_stored < STORE_KINDS; the_value_stored++)
        misuse_of_stores_by_the_door();
    the_value_stored = STORE_OUTSIDE;
    /* an RT_COPY value with no door open on it: the missing door is what
    ** is wrong, outside every door and inside a door on another value */
    violates(unstore_from_a_copy_outside_a_door,
             "refrt: rt_unstore: no door on shared value #1 is open in this task\n");
    violates(unstore_from_a_copy_in_a_door_on_another,
             "refrt: rt_unstore: no door on shared value #1 is open in this task\n");
    violates(store_an_unheld_pointer,
                        "is not an outside value this task holds");
    violates(unstore_what_was_not_stored,
                        "is not a value stored in shared value #1");
}
END_TEST

/* ---- misuse: the arguments --------------------------------------------- */

/* Where a block cannot be made (block.c, docs/budgets.md): the largest is
** 2^36 - 16 bytes, one granule short of 2^36 (its chunk's size must fit the
** header's 32 bits of granules), so every size that rounds down to 2^36 or
** more is refused. The first sizes it refuses (2^36, which is also what
** 2^36 + 15 rounds down to, and the next granule), and the last it takes. */
#define BLOCK_TOO_BIG ((size_t)1 << 36)
#define BLOCK_LARGEST (((size_t)1 << 36) - 1)

static size_t too_big;

static void new_with_too_big_a_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    rt_shared_new(RT_COPY, sizeof v, &v, too_big);
}

static void supervised_with_too_big_a_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_supervised(RT_COPY, sizeof(int64_t), build_zero, NULL, too_big);
}

START_TEST(a_block_bigger_than_a_block_can_be_is_a_violation)
{
    const size_t sizes[] = {BLOCK_TOO_BIG, BLOCK_TOO_BIG + 15, BLOCK_TOO_BIG + 16, SIZE_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char want[160];
        too_big = sizes[i]; /* the child is a fork: it sees the value */
        snprintf(want, sizeof want,
                 "refrt: rt_shared_new: block_bytes %zu is more than a block can be\n", too_big);
        violates(new_with_too_big_a_block, want);
        snprintf(want, sizeof want,
                 "refrt: rt_shared_supervised: block_bytes %zu is more than a block can be\n",
                 too_big);
        violates(supervised_with_too_big_a_block, want);
    }
}
END_TEST

static void new_of_no_kind(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    rt_shared_new((rt_kind)2, sizeof v, &v, 256);
}

static void new_of_a_negative_kind(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    rt_shared_new((rt_kind)-1, sizeof v, &v, 256);
}

static void supervised_of_no_kind(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_supervised((rt_kind)2, sizeof(int64_t), build_zero, NULL, 256);
}

START_TEST(a_kind_that_is_neither_copy_nor_owned_is_a_violation)
{
    violates(new_of_no_kind, "refrt: rt_shared_new: kind 2 is neither RT_COPY nor RT_OWNED\n");
    violates(new_of_a_negative_kind,
             "refrt: rt_shared_new: kind -1 is neither RT_COPY nor RT_OWNED\n");
    violates(supervised_of_no_kind,
             "refrt: rt_shared_supervised: kind 2 is neither RT_COPY nor RT_OWNED\n");
}
END_TEST

/* Each NULL argument a function of shared.c refuses, one scenario each:
** a value made first, so that only the NULL is wrong. */
enum null_arg {
    NULL_INIT,
    NULL_BUILD,
    NULL_UPDATE_VALUE,
    NULL_UPDATE_FN,
    NULL_UPDATE_ALL_A,
    NULL_UPDATE_ALL_B,
    NULL_UPDATE_ALL_FN,
    NULL_UPDATE_BOTH,
    NULL_UPDATE_ALL_A_AND_FN,
    NULL_UPDATE_ALL_B_AND_FN,
    NULL_UPDATE_ALL_EVERY,
    NULL_ACCESS_BOTH,
    NULL_ACCESS_VALUE,
    NULL_ACCESS_FN,
    NULL_GET_VALUE,
    NULL_GET_OUT,
    NULL_GET_BOTH,
    NULL_POISONED,
    NULL_HELD,
    NULL_STORE_VALUE,
    NULL_UNSTORE_VALUE,
    NULL_STORED,
    NULL_UNSTORED,
};

static enum null_arg null_case;

static void store_null(void *value, void *ctx)
{
    (void)value;
    rt_store(ctx, NULL);
}

static void unstore_null(void *value, void *ctx)
{
    (void)value;
    rt_unstore(ctx, NULL);
}

static void with_a_null(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(1), *list = new_list(1 * KIB);
    void *held = rt_alloc_outside(8);
    switch (null_case) {
    case NULL_INIT:
        rt_shared_new(RT_COPY, 8, NULL, 256);
        break;
    case NULL_BUILD:
        rt_shared_supervised(RT_COPY, 8, NULL, NULL, 256);
        break;
    case NULL_UPDATE_VALUE:
        rt_update(NULL, count_update, NULL);
        break;
    case NULL_UPDATE_FN:
        rt_update(s, NULL, NULL);
        break;
    case NULL_UPDATE_ALL_A:
        rt_update_all(NULL, s, count_pair, NULL);
        break;
    case NULL_UPDATE_ALL_B:
        rt_update_all(s, NULL, count_pair, NULL);
        break;
    case NULL_UPDATE_ALL_FN:
        rt_update_all(s, list, NULL, NULL);
        break;
    case NULL_UPDATE_BOTH:
        rt_update(NULL, NULL, NULL);
        break;
    case NULL_UPDATE_ALL_A_AND_FN:
        rt_update_all(NULL, s, NULL, NULL);
        break;
    case NULL_UPDATE_ALL_B_AND_FN:
        rt_update_all(s, NULL, NULL, NULL);
        break;
    case NULL_UPDATE_ALL_EVERY:
        rt_update_all(NULL, NULL, NULL, NULL);
        break;
    case NULL_ACCESS_BOTH:
        rt_access(NULL, NULL, NULL);
        break;
    case NULL_ACCESS_VALUE:
        rt_access(NULL, count_access, NULL);
        break;
    case NULL_ACCESS_FN:
        rt_access(s, NULL, NULL);
        break;
    case NULL_GET_VALUE:
        rt_get(NULL, held);
        break;
    case NULL_GET_OUT:
        rt_get(s, NULL);
        break;
    case NULL_GET_BOTH:
        rt_get(NULL, NULL); /* no value: nothing to ask out of */
        break;
    case NULL_POISONED:
        rt_poisoned(NULL);
        break;
    case NULL_HELD:
        rt_shared_held(NULL);
        break;
    case NULL_STORE_VALUE:
        rt_store(NULL, held);
        break;
    case NULL_UNSTORE_VALUE:
        rt_unstore(NULL, held);
        break;
    case NULL_STORED:
        rt_update(list, store_null, list);
        break;
    case NULL_UNSTORED:
        rt_update(list, unstore_null, list);
        break;
    }
    NEED(!"returned");
}

static void null_violates(enum null_arg which, const char *msg)
{
    struct scenario sc = {with_a_null};
    null_case = which;
    ck_assert_violation(scenario_violates, &sc, msg);
}

/* ---- before rt_init ------------------------------------------------------ */

/* Main is no task before rt_init, yet the calls that never reach a task's
** state are allowed there (refrt.h): values and channels are made, read
** for poisoned and held, closed and freed. What was made then serves main's
** task once rt_init has made it. The calls that need a task are each their
** own violation there (check_budgets.c,
** a_call_that_needs_a_task_names_itself_where_there_is_none; the first
** build of a supervised value is one of them, below). docs/fuzzing.md,
** the column "main before rt_init". */
struct before_init_write {
    void *grown;
};

static void write_and_grow(void *value, void *ctx)
{
    struct before_init_write *w = ctx;
    ((unsigned char *)value)[0] = 0x01;
    w->grown = rt_alloc(16); /* into the value's own block: 16 + 8, to 32 */
    memset(w->grown, 0x5a, 16);
}

static void read_first_byte(const void *value, void *ctx)
{
    *(unsigned char *)ctx = ((const unsigned char *)value)[0];
}

static void build_one_byte(void *value, void *ctx)
{
    (void)ctx;
    ((unsigned char *)value)[0] = 1;
}

static void supervised_before_init(void *unused)
{
    (void)unused;
    rt_shared_supervised(RT_OWNED, 1, build_one_byte, NULL, 256);
}

START_TEST(values_and_channels_made_before_rt_init_serve_main_after_it)
{
    int seven = 7, got = 0;
    unsigned char bytes[100], first = 0;
    memset(bytes, 0xa5, sizeof bytes);

    rt_shared *v = rt_shared_new(RT_COPY, sizeof seven, &seven, 256);
    rt_shared *w = rt_shared_new(RT_OWNED, sizeof bytes, bytes, 4096);
    rt_chan *c = rt_chan_new(2), *closed = rt_chan_new(1);
    ck_assert(!rt_poisoned(v) && !rt_poisoned(w));
    ck_assert_uint_eq(rt_shared_held(v), 16);  /* 4 bytes and the 8-byte header, to 16 */
    ck_assert_uint_eq(rt_shared_held(w), 112); /* 100 and 8, to 16 */
    rt_chan_close(closed);
    rt_chan_free(closed);
    ck_assert_violation(supervised_before_init, NULL,
                        "refrt: rt_shared_supervised: this thread is not a task");

    rt_init();
    ck_assert_int_eq(rt_get(v, &got), RT_OK);
    ck_assert_int_eq(got, 7);
    struct before_init_write wr = {NULL};
    ck_assert_int_eq(rt_update(w, write_and_grow, &wr), RT_OK);
    ck_assert_uint_eq(rt_shared_held(w), 112 + 32);
    ck_assert_uint_eq(rt_held(), 0); /* the growth went to the value, not the task */
    ck_assert_int_eq(rt_access(w, read_first_byte, &first), RT_OK);
    ck_assert_uint_eq(first, 0x01);
    ck_assert(!rt_poisoned(v) && !rt_poisoned(w));

    unsigned char *m = rt_alloc_outside(40);
    memset(m, 0x3c, 40);
    ck_assert_uint_eq(rt_held(), 40);
    ck_assert_int_eq(rt_send(c, m), RT_OK);
    ck_assert_uint_eq(rt_held(), 40); /* until it is received */
    unsigned char *r = rt_recv(c);
    ck_assert_ptr_eq(r, m);
    ck_assert_uint_eq(rt_held(), 40); /* its own value, counted once */
    for (size_t i = 0; i < 40; i++)
        ck_assert_uint_eq(r[i], 0x3c);
    rt_free(r);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_close(c);
    ck_assert_ptr_null(rt_recv(c));
    rt_chan_free(c);
    rt_shared_free(v);
    rt_shared_free(w);
}
END_TEST

START_TEST(null_arguments_are_violations)
{
    null_violates(NULL_INIT, "refrt: rt_shared_new: init is NULL for a value of 8 bytes\n");
    null_violates(NULL_BUILD, "refrt: rt_shared_supervised: build is NULL\n");
    null_violates(NULL_UPDATE_VALUE, "refrt: rt_update: the shared value is NULL\n");
    null_violates(NULL_UPDATE_FN, "refrt: rt_update: fn is NULL\n");
    null_violates(NULL_UPDATE_ALL_A, "refrt: rt_update_all: the shared value is NULL\n");
    null_violates(NULL_UPDATE_ALL_B, "refrt: rt_update_all: the shared value is NULL\n");
    null_violates(NULL_UPDATE_ALL_FN, "refrt: rt_update_all: fn is NULL\n");
    /* a NULL value is named before a NULL fn: both of rt_update_all's */
    null_violates(NULL_UPDATE_BOTH, "refrt: rt_update: the shared value is NULL\n");
    null_violates(NULL_UPDATE_ALL_A_AND_FN, "refrt: rt_update_all: the shared value is NULL\n");
    null_violates(NULL_UPDATE_ALL_B_AND_FN, "refrt: rt_update_all: the shared value is NULL\n");
    null_violates(NULL_UPDATE_ALL_EVERY, "refrt: rt_update_all: the shared value is NULL\n");
    null_violates(NULL_ACCESS_BOTH, "refrt: rt_access: the shared value is NULL\n");
    null_violates(NULL_ACCESS_VALUE, "refrt: rt_access: the shared value is NULL\n");
    null_violates(NULL_ACCESS_FN, "refrt: rt_access: fn is NULL\n");
    null_violates(NULL_GET_VALUE, "refrt: rt_get: the shared value is NULL\n");
    null_violates(NULL_GET_OUT, "refrt: rt_get: out is NULL\n");
    null_violates(NULL_GET_BOTH, "refrt: rt_get: the shared value is NULL\n");
    null_violates(NULL_POISONED, "refrt: rt_poisoned: the shared value is NULL\n");
    null_violates(NULL_HELD, "refrt: rt_shared_held: the shared value is NULL\n");
    null_violates(NULL_STORE_VALUE, "refrt: rt_store: the shared value is NULL\n");
    null_violates(NULL_UNSTORE_VALUE, "refrt: rt_unstore: the shared value is NULL\n");
    null_violates(NULL_STORED, "refrt: rt_store: the value is NULL\n");
    null_violates(NULL_UNSTORED, "refrt: rt_unstore: (nil) is not a value stored in shared "
                                 "value #2\n");
}
END_TEST

/* A value of no bytes needs no init and no out: NULL is fine for both. One
** of one byte is copied in and out like any other. */
static void empty_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_new(RT_COPY, 0, NULL, 256);
    NEED(rt_get(s, NULL) == RT_OK);
    NEED(rt_update(s, count_update, NULL) == RT_OK && ran == 1);
    rt_shared_free(s);

    unsigned char one = 0x5a, out = 0;
    s = rt_shared_new(RT_COPY, 1, &one, 256);
    NEED(rt_get(s, &out) == RT_OK && out == 0x5a);
    rt_shared_free(s);
}

START_TEST(a_value_of_no_bytes_takes_null_for_init_and_out)
{
    RUN_OK(empty_value, NULL);
}
END_TEST

/* ---- out of memory, by injection (testutil.h) --------------------------- */

/* Each allocation shared.c makes, failed on purpose: the runtime traps
** (SIGILL) rather than go on with NULL. A scenario warms up first (main's
** task, this thread's state), so that the failure lands where it names. */
static void make_after_a_failed_calloc(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    fail_nth(1); /* the rt_shared itself */
    rt_shared_new(RT_COPY, sizeof v, &v, 256);
    _exit(3);
}

static void make_after_a_failed_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    fail_nth(2); /* the rt_shared, then its block */
    rt_shared_new(RT_COPY, sizeof v, &v, 256);
    _exit(3);
}

/* The largest block_bytes a block takes: its malloc failing is a trap, not
** a size "more than a block can be". */
static void make_the_largest_block_failing(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t v = 1;
    fail_nth(2);
    rt_shared_new(RT_COPY, sizeof v, &v, BLOCK_LARGEST);
    _exit(3);
}

static void supervised_after_a_failed_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_get(new_i64(1), &(int64_t){0}); /* this thread's state, made */
    fail_nth(2);
    rt_shared_supervised(RT_COPY, sizeof(int64_t), build_zero, NULL, 256);
    _exit(3);
}

START_TEST(a_value_or_block_that_cannot_be_allocated_traps)
{
    ck_assert_trap(make_after_a_failed_calloc, NULL);
    ck_assert_trap(make_after_a_failed_block, NULL);
    ck_assert_trap(make_the_largest_block_failing, NULL);
    ck_assert_trap(supervised_after_a_failed_block, NULL);
}
END_TEST

/* A copy of more than 128 bytes is malloc'ed; up to 128 it is on the
** stack, so a failure injected for it never comes. */
struct sized {
    size_t size;
    unsigned long nth; /* the allocation to fail, counted from the door */
    bool pair;         /* rt_update_all over two such values */
};

static void fill_ones(void *value, void *ctx)
{
    memset(value, 1, *(size_t *)ctx);
}

static void fill_both(void *va, void *vb, void *ctx)
{
    fill_ones(va, ctx);
    fill_ones(vb, ctx);
}

static struct sized sized;

static void copy_door_failing(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    unsigned char zero[256] = {0}, out[256];
    rt_shared *a = rt_shared_new(RT_COPY, sized.size, zero, 1 * KIB);
    rt_shared *b = rt_shared_new(RT_COPY, sized.size, zero, 1 * KIB);
    NEED(rt_get(a, out) == RT_OK); /* this thread's state, made */
    fail_nth(sized.nth);
    if (sized.pair)
        NEED(rt_update_all(a, b, fill_both, &sized.size) == RT_OK);
    else
        NEED(rt_update(a, fill_ones, &sized.size) == RT_OK);
    NEED(fail_count() == 0);
    fail_nth(0);
    NEED(rt_get(a, out) == RT_OK && out[0] == 1 && out[sized.size - 1] == 1);
    NEED(rt_get(b, out) == RT_OK && out[0] == sized.pair);
    rt_shared_free(a);
    rt_shared_free(b);
    exit(0);
}

static void copy_door_must_trap(size_t size, unsigned long nth, bool pair)
{
    sized = (struct sized){size, nth, pair};
    ck_assert_trap(copy_door_failing, NULL);
}

static void copy_door_must_not_allocate(size_t size, bool pair)
{
    sized = (struct sized){size, 1, pair};
    struct death d = run_child(copy_door_failing, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "%zu bytes: signal %d exit %d: %s",
                  size, d.signal, d.exit_status, d.err);
}

START_TEST(a_copy_that_cannot_be_allocated_traps)
{
    copy_door_must_trap(129, 1, false);
    copy_door_must_trap(256, 1, false);
    copy_door_must_trap(129, 1, true); /* the first copy */
    copy_door_must_trap(129, 2, true); /* the second */
    copy_door_must_not_allocate(128, false);
    copy_door_must_not_allocate(128, true);
}
END_TEST

/* A door's copy of an RT_COPY value is the whole value, past 4 GiB too (a
** size kept in 32 bits would copy the 16 bytes past 4 GiB). Such a value
** is made and zeroed whole, once, in the test's own process (4 GiB for a
** moment); each door then runs in a child of it, where a copy of more
** than 4 GiB is refused (fail_above: no second 4 GiB is taken), so a door
** that asks for all of it traps before fn runs, where one that asked for
** less would run fn, which exits. In rt_update (the door's first copy)
** and in rt_update_all with the big value made second (its second copy).
** The children share the zeroed pages (fork copies none of them): made
** in each child, the value cost 4.5 s of zeroing twice (7 Dec 2026). Not
** under a sanitizer, whose allocator takes such sizes its own way, nor in
** the portable build: a copy's size does not go near the thread-pointer
** read that build replaces. */
#define PAST_4_GIB (((size_t)1 << 32) + 16)

static void exits_in_fn(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    _exit(7);
}

static void exits_in_fn_of_two(void *va, void *vb, void *ctx)
{
    (void)vb;
    exits_in_fn(va, ctx);
}

static rt_shared *small_copy, *big_copy; /* made in this order */

static void update_big_copy(void *unused)
{
    (void)unused;
    fail_above(PAST_4_GIB - 1);
    rt_update(big_copy, exits_in_fn, NULL);
    _exit(3);
}

static void update_all_with_big_copy_second(void *unused)
{
    (void)unused;
    fail_above(PAST_4_GIB - 1);
    rt_update_all(big_copy, small_copy, exits_in_fn_of_two, NULL);
    _exit(3);
}

START_TEST(a_copy_of_a_value_past_4_gib_asks_for_every_byte)
{
#ifdef RT_PRIM_PORTABLE
    return;
#endif
    int64_t zero = 0;

    if (UNDER_SANITIZER)
        return;
    init_fixed(64 * KIB);
    small_copy = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
    big_copy = rt_shared_supervised(RT_COPY, PAST_4_GIB, build_zero, NULL, PAST_4_GIB + 64 * KIB);
    ck_assert_trap(update_big_copy, NULL);
    ck_assert_trap(update_all_with_big_copy_second, NULL);
}
END_TEST

/* The table of stored values starts at 8 and doubles: the 1st, the 9th and
** the 17th store grow it, no other. Its growth failing traps; the values
** stored come out again one by one, each with its own bytes, in any order. */
#define STORES 17

struct stores {
    rt_shared *s;
    void *v[STORES];
};

static size_t store_bytes(int i)
{
    return 8 * (size_t)(i + 1); /* each its own size, so a mix-up shows */
}

static void store_all(void *value, void *ctx)
{
    struct stores *st = ctx;
    (void)value;
    for (int i = 0; i < STORES; i++) {
        fprintf(stderr, "store %d\n", i + 1);
        NEED(rt_store(st->s, st->v[i]) == RT_OK);
    }
}

/* Unstores every value, the 0th last and the others in a scrambled order
** (7 is prime to 17), each moving exactly its bytes back to the task. */
static void unstore_all(void *value, void *ctx)
{
    struct stores *st = ctx;
    (void)value;
    for (int k = 1; k <= STORES; k++) {
        int i = (k * 7) % STORES;
        size_t task = rt_held(), held = rt_shared_held(st->s);
        NEED(rt_unstore(st->s, st->v[i]) == st->v[i]);
        NEED(rt_held() == task + store_bytes(i));
        NEED(rt_shared_held(st->s) == held - store_bytes(i));
    }
}

static void unstore_one_twice(void *value, void *ctx)
{
    struct stores *st = ctx;
    (void)value;
    NEED(rt_unstore(st->s, st->v[1]) == st->v[1]);
    rt_unstore(st->s, st->v[1]); /* sixteen others are still stored */
}

static unsigned long store_nth; /* the allocation to fail, from the first store */

static void stores(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct stores st = {new_list(4 * KIB), {NULL}};
    for (int i = 0; i < STORES; i++)
        st.v[i] = rt_alloc_outside(store_bytes(i));
    size_t held = rt_shared_held(st.s), task = rt_held();
    fail_nth(store_nth);
    NEED(rt_update(st.s, store_all, &st) == RT_OK);
    NEED(fail_count() == 0);
    fail_nth(0);
    NEED(rt_held() == 0 && rt_shared_held(st.s) == held + task);
    if (store_nth == 0) /* a violation */
        rt_update(st.s, unstore_one_twice, &st);
    NEED(rt_update(st.s, unstore_all, &st) == RT_OK);
    NEED(rt_held() == task && rt_shared_held(st.s) == held);
    exit(0);
}

/* The number of the store the child was at when it died, 0 if none. */
static int last_store(const struct death *d)
{
    int last = 0;
    for (const char *p = d->err; (p = strstr(p, "store ")) != NULL; p++)
        last = atoi(p + 6);
    return last;
}

static void stores_must_trap_at(unsigned long nth, int store)
{
    store_nth = nth;
    struct death d = run_child(stores, NULL);
    ck_assert_msg(d.signal == SIGILL && last_store(&d) == store,
                  "allocation %lu failed: expected a trap at store %d, got signal %d at "
                  "store %d: %s", nth, store, d.signal, last_store(&d), d.err);
}

START_TEST(a_table_of_stored_values_that_cannot_grow_traps)
{
    stores_must_trap_at(1, 1);
    stores_must_trap_at(2, 9);
    stores_must_trap_at(3, 17);
}
END_TEST

START_TEST(stored_values_come_out_one_by_one_each_with_its_bytes)
{
    store_nth = 4; /* 17 stores grow the table three times: never reached */
    struct death d = run_child(stores, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    store_nth = 0;
    ck_assert_violation(stores, NULL, "is not a value stored in shared value #1");
}
END_TEST

/* The value of a door that works in place is the first chunk of its
** block: rt_free or rt_realloc of it inside the door is a violation in
** every such door (an update of an RT_OWNED value, rt_update_all in place
** with either value the one whose block the door uses, a supervised build
** and its rebuild), on main and on a spawned task, resized to more, to
** the same size and to less (a size that fits its chunk is still the
** value's); another chunk of the block is freed and resized as before.
** A value of the task's own block, made before the door, is the task's
** inside it too: resized there to more and to less, its bytes kept, and
** freed after the door, as rt_realloc promises for a value the task holds. */
enum { VALUE_FREE, VALUE_REALLOC, VALUE_REALLOC_SAME, VALUE_REALLOC_LESS, OTHER_CHUNK,
       TASKS_OWN_VALUE, VALUE_OPS };
enum { IN_UPDATE, IN_UPDATE_ALL_A, IN_UPDATE_ALL_B, IN_BUILD, IN_REBUILD, VALUE_DOORS };
static int value_op;
static bool value_rebuilding;
static unsigned char *tasks_own; /* TASKS_OWN_VALUE: made before the door */

static void touch_value(void *v)
{
    if (value_op == TASKS_OWN_VALUE) {
        unsigned char *p = rt_realloc(tasks_own, 3 * KIB);
        NEED(p != NULL && p[0] == 0x3c && p[99] == 0x3c);
        memset(p, 0x3d, 3 * KIB);
        p = rt_realloc(p, 40);
        NEED(p != NULL && p[0] == 0x3d && p[39] == 0x3d);
        tasks_own = p;
    } else if (value_op == VALUE_FREE) {
        rt_free(v);
    } else if (value_op == VALUE_REALLOC) {
        (void)rt_realloc(v, 4 * KIB);
    } else if (value_op == VALUE_REALLOC_SAME) {
        (void)rt_realloc(v, 64);
    } else if (value_op == VALUE_REALLOC_LESS) {
        (void)rt_realloc(v, 1);
    } else {
        char *other = rt_alloc(100);
        NEED(other != NULL && other != (char *)v);
        other = rt_realloc(other, 2 * KIB);
        NEED(other != NULL);
        rt_free(other);
    }
}
static void value_update(void *v, void *ctx) { (void)ctx; touch_value(v); }
static void value_update_a(void *va, void *vb, void *ctx) { (void)vb; (void)ctx; touch_value(va); }
static void value_update_b(void *va, void *vb, void *ctx) { (void)va; (void)ctx; touch_value(vb); }
static void value_build(void *v, void *ctx)
{
    (void)ctx;
    memset(v, 7, 64);
    if (value_rebuilding)
        touch_value(v);
}
static void value_panic(void *v, void *ctx) { (void)v; (void)ctx; rt_panic("poison it"); }
static void *value_panic_on_task(void *s) { rt_update(s, value_panic, NULL); return NULL; }

static void *touch_in_door(void *arg)
{
    int door = (int)(intptr_t)arg;
    unsigned char zero[64] = {0}, out[64];
    rt_shared *owned = rt_shared_new(RT_OWNED, 64, zero, 16 * KIB);
    rt_shared *copy = rt_shared_new(RT_COPY, 64, zero, KIB);
    rt_shared *sup = NULL;
    rt_status st = RT_OK;
    size_t held = rt_held();

    if (value_op == TASKS_OWN_VALUE) {
        tasks_own = rt_alloc(100);
        memset(tasks_own, 0x3c, 100);
    }
    switch (door) {
    case IN_UPDATE: st = rt_update(owned, value_update, NULL); break;
    case IN_UPDATE_ALL_A: st = rt_update_all(owned, copy, value_update_a, NULL); break;
    case IN_UPDATE_ALL_B: st = rt_update_all(copy, owned, value_update_b, NULL); break;
    case IN_BUILD:
        value_rebuilding = true; /* the first build is the one that touches */
        sup = rt_shared_supervised(RT_OWNED, 64, value_build, NULL, 16 * KIB);
        break;
    case IN_REBUILD:
        sup = rt_shared_supervised(RT_OWNED, 64, value_build, NULL, 16 * KIB);
        rt_join(rt_spawn(value_panic_on_task, sup), NULL);
        NEED(rt_poisoned(sup));
        value_rebuilding = true;
        st = rt_get(sup, out); /* rebuilt first */
        NEED(out[0] == 7);
        break;
    }
    NEED(st == RT_OK);
    NEED(!rt_poisoned(owned) && rt_get(owned, out) == RT_OK && out[0] == 0);
    if (value_op == TASKS_OWN_VALUE) {
        NEED(rt_held() > held && tasks_own[0] == 0x3d && tasks_own[39] == 0x3d);
        rt_free(tasks_own);
        NEED(rt_held() == held);
    }
    if (sup != NULL)
        rt_shared_free(sup);
    rt_shared_free(owned);
    rt_shared_free(copy);
    return NULL;
}

static int value_door_arg(int door, int op, bool on_task)
{
    return (door * VALUE_OPS + op) * 2 + on_task;
}

static void touch_the_doors_value(void *arg)
{
    int n = (int)(intptr_t)arg, door = n / 2 / VALUE_OPS;
    bool on_task = n % 2;

    value_op = n / 2 % VALUE_OPS;
    init_fixed(64 * KIB);
    if (on_task)
        NEED(rt_join(rt_spawn(touch_in_door, (void *)(intptr_t)door), NULL) == RT_OK);
    else
        touch_in_door((void *)(intptr_t)door);
    exit(0);
}

START_TEST(a_doors_value_freed_or_resized_in_its_door_is_a_violation_in_every_door_in_place)
{
    static const char *const fns[] = {"refrt: rt_free: ", "refrt: rt_realloc: ",
                                      "refrt: rt_realloc: ", "refrt: rt_realloc: "};
    const char *msg = "is the value of the open door: it is freed with its shared value";
    for (int door = 0; door < VALUE_DOORS; door++)
        for (int on_task = 0; on_task < 2; on_task++) {
            for (int op = VALUE_FREE; op <= VALUE_REALLOC_LESS; op++) {
                struct death d = run_child(touch_the_doors_value,
                                           (void *)(intptr_t)value_door_arg(door, op, on_task));
                ck_assert_msg(d.signal == SIGABRT && strstr(d.err, fns[op]) != NULL &&
                                  strstr(d.err, msg) != NULL,
                              "door %d op %d on task %d: signal %d exit %d: %s", door, op,
                              on_task, d.signal, d.exit_status, d.err);
            }
            for (int op = OTHER_CHUNK; op <= TASKS_OWN_VALUE; op++) {
                struct death d = run_child(touch_the_doors_value,
                                           (void *)(intptr_t)value_door_arg(door, op, on_task));
                ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                              "door %d, %s, on task %d: signal %d exit %d: %s", door,
                              op == OTHER_CHUNK ? "another chunk" : "the task's own value",
                              on_task, d.signal, d.exit_status, d.err);
            }
        }
}
END_TEST

/* What a door hands its fn is aligned for any object (max_align_t), as
** malloc's memory is: a copy on the stack (128 bytes or less), a copy on
** the heap, and an owned value in place; in rt_update, in rt_access and
** for both values of rt_update_all, of every size around the stack copy's. */
static int misaligned;

static void note_alignment(const void *v)
{
    misaligned += (uintptr_t)v % alignof(max_align_t) != 0;
}
static void aligned_update(void *v, void *ctx) { (void)ctx; note_alignment(v); }
static void aligned_access(const void *v, void *ctx) { (void)ctx; note_alignment(v); }
static void aligned_both(void *va, void *vb, void *ctx)
{
    (void)ctx;
    note_alignment(va);
    note_alignment(vb);
}

START_TEST(every_door_hands_its_fn_a_value_aligned_for_any_object)
{
    static const size_t sizes[] = {1, 8, 15, 16, 24, 100, 127, 128, 129, 1000};
    static unsigned char zero[1000];

    init_fixed(64 * KIB);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int kind = RT_COPY; kind <= RT_OWNED; kind++) {
            rt_shared *a = rt_shared_new(kind, sizes[i], zero, 4 * KIB);
            rt_shared *b = rt_shared_new(RT_COPY, sizes[i], zero, 4 * KIB);
            misaligned = 0;
            ck_assert_int_eq(rt_update(a, aligned_update, NULL), RT_OK);
            ck_assert_int_eq(rt_access(a, aligned_access, NULL), RT_OK);
            ck_assert_int_eq(rt_update_all(a, b, aligned_both, NULL), RT_OK);
            ck_assert_int_eq(rt_update_all(b, a, aligned_both, NULL), RT_OK);
            ck_assert_msg(misaligned == 0, "%d values misaligned, %zu bytes, %s", misaligned,
                          sizes[i], kind == RT_COPY ? "copy" : "owned");
            rt_shared_free(b);
            rt_shared_free(a);
        }
}
END_TEST

static void *panic_in_update(void *s)
{
    rt_update(s, kept_then_panic, NULL);
    return NULL;
}

static void rebuild_failing(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof(int64_t), build_zero, NULL, 256);
    NEED(run_task(panic_in_update, s) == RT_PANICKED && rt_poisoned(s));
    fail_nth(1); /* the fresh block */
    rt_access(s, count_access, NULL);
    _exit(3);
}

START_TEST(a_rebuild_whose_block_cannot_be_allocated_traps)
{
    ck_assert_trap(rebuild_failing, NULL);
}
END_TEST

/* SQLite's loop: a whole life of shared values (made, copied in doors,
** built storing an outside value, freed), with its n-th allocation failed,
** for n = 1, 2, ... until it completes. Every failure traps; the run that
** completes has failed nothing and leaves no allocation behind. */
struct store_one {
    rt_shared *s;
    void *value;
};

static void store_one(void *value, void *ctx)
{
    struct store_one *op = ctx;
    (void)value;
    NEED(rt_store(op->s, op->value) == RT_OK);
}

static void build_list_of_one(void *value, void *ctx)
{
    (void)ctx;
    push(value, 1);
}

static unsigned long life_nth;

static void life_of_values(void *unused)
{
    (void)unused;
    init_fixed(256 * KIB);
    unsigned char zero[200] = {0};
    size_t size = sizeof zero;
    rt_free(rt_alloc_outside(8));      /* main's table of outside values, made */
    rt_get(new_i64(1), &(int64_t){0}); /* this thread's state */
    long live = allocs_live();

    fail_nth(life_nth);
    rt_shared *a = rt_shared_new(RT_COPY, sizeof zero, zero, 1 * KIB);
    rt_shared *b = rt_shared_new(RT_COPY, sizeof zero, zero, 1 * KIB);
    NEED(rt_update(a, fill_ones, &size) == RT_OK);
    NEED(rt_update_all(a, b, fill_both, &size) == RT_OK);
    struct store_one op = {new_list(1 * KIB), rt_alloc_outside(8)};
    NEED(rt_update(op.s, store_one, &op) == RT_OK);
    rt_shared *c = rt_shared_supervised(RT_OWNED, sizeof(struct list), build_list_of_one, NULL,
                                        1 * KIB);
    NEED(sum_of(c) == 1);
    rt_shared_free(a);
    rt_shared_free(b);
    rt_shared_free(op.s);
    rt_shared_free(c);
    fail_nth(0); /* exit may allocate (gcov's counters, in a coverage build) */
    NEED(fail_count() == 0);
    NEED(allocs_live() == live); /* the copies, the table, the value: all freed */
    exit(0);
}

START_TEST(every_allocation_failure_in_a_life_of_values_traps)
{
    unsigned long n;
    for (n = 1; n < 64; n++) {
        life_nth = n;
        struct death d = run_child(life_of_values, NULL);
        if (d.signal == 0 && d.exit_status == 0)
            break; /* fewer than n allocations: the life completed */
        ck_assert_msg(d.signal == SIGILL, "allocation %lu failed: signal %d exit %d: %s", n,
                      d.signal, d.exit_status, d.err);
    }
    /* 13 allocations, each failed once: two values and their blocks, three
    ** copies, a list and its block, an outside value and the table it is
    ** stored in, a supervised value and its block */
    ck_assert_msg(n == 14, "the life completed at allocation %lu, not 14", n);
}
END_TEST

/* ---- which block a door allocates from ---------------------------------- */

/* What one rt_alloc in a door changed: the task's figure and the value's. */
struct alloc_seen {
    rt_shared *s;
    size_t task, value;
};

static void alloc_and_see(struct alloc_seen *a)
{
    size_t task = rt_held(), value = rt_shared_held(a->s);
    void *p = rt_alloc(64);
    a->task = rt_held() - task;
    a->value = rt_shared_held(a->s) - value;
    rt_free(p);
}

static void alloc_in_update(void *value, void *ctx)
{
    (void)value;
    alloc_and_see(ctx);
}

static void alloc_in_access(const void *value, void *ctx)
{
    (void)value;
    alloc_and_see(ctx);
}

/* The same one door further in: the innermost door decides, whatever the
** doors around it are. */
struct nested_seen {
    rt_shared *inner, *outer;
    bool inner_updates; /* rt_update, else rt_access */
    size_t task, outer_v, inner_v;
};

static void nested_alloc_and_see(struct nested_seen *n)
{
    size_t task = rt_held(), outer = rt_shared_held(n->outer), inner = rt_shared_held(n->inner);
    void *p = rt_alloc(64);
    n->task = rt_held() - task;
    n->outer_v = rt_shared_held(n->outer) - outer;
    n->inner_v = rt_shared_held(n->inner) - inner;
    rt_free(p); /* freed where it came from: no violation */
}

static void nested_alloc_in_update(void *value, void *ctx)
{
    (void)value;
    nested_alloc_and_see(ctx);
}

static void nested_alloc_in_access(const void *value, void *ctx)
{
    (void)value;
    nested_alloc_and_see(ctx);
}

static void open_the_inner_door(struct nested_seen *n)
{
    if (n->inner_updates)
        NEED(rt_update(n->inner, nested_alloc_in_update, n) == RT_OK);
    else
        NEED(rt_access(n->inner, nested_alloc_in_access, n) == RT_OK);
}

static void outer_update_opens_inner(void *value, void *ctx)
{
    (void)value;
    open_the_inner_door(ctx);
}

static void outer_access_opens_inner(const void *value, void *ctx)
{
    (void)value;
    open_the_inner_door(ctx);
}

/* One allocation two doors deep: outer door (update or access) on outer,
** inner door on inner; returns what it changed. */
static struct nested_seen nested_alloc(rt_shared *outer, bool outer_updates, rt_shared *inner,
                                       bool inner_updates)
{
    struct nested_seen n = {inner, outer, inner_updates, 0, 0, 0};
    if (outer_updates)
        NEED(rt_update(outer, outer_update_opens_inner, &n) == RT_OK);
    else
        NEED(rt_access(outer, outer_access_opens_inner, &n) == RT_OK);
    return n;
}

static void alloc_from_nested_blocks(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    /* made in this order, so each nests inside the ones before it */
    rt_shared *list = new_list(1 * KIB), *kasse = new_i64(1), *list2 = new_list(1 * KIB);
    size_t held_list = rt_shared_held(list), held_list2 = rt_shared_held(list2),
           held_kasse = rt_shared_held(kasse);
    struct nested_seen n;

    /* an OWNED update outside; inside, a door that is not an OWNED update */
    n = nested_alloc(list, true, kasse, false);
    NEED(n.task >= 64 && n.outer_v == 0 && n.inner_v == 0);
    n = nested_alloc(list, true, kasse, true);
    NEED(n.task >= 64 && n.outer_v == 0 && n.inner_v == 0);
    n = nested_alloc(list, true, list2, false);
    NEED(n.task >= 64 && n.outer_v == 0 && n.inner_v == 0);
    /* an OWNED update inside: its block, whatever is outside */
    n = nested_alloc(list, true, list2, true);
    NEED(n.task == 0 && n.outer_v == 0 && n.inner_v >= 64);
    n = nested_alloc(list, false, list2, true);
    NEED(n.task == 0 && n.outer_v == 0 && n.inner_v >= 64);
    n = nested_alloc(kasse, true, list2, true);
    NEED(n.task == 0 && n.outer_v == 0 && n.inner_v >= 64);
    /* and back out: the outer update's block again */
    struct alloc_seen a = {list, 0, 0};
    NEED(rt_update(list, alloc_in_update, &a) == RT_OK);
    NEED(a.task == 0 && a.value >= 64);
    /* every allocation was freed where it came from */
    NEED(rt_held() == 0 && rt_shared_held(list) == held_list &&
         rt_shared_held(list2) == held_list2 && rt_shared_held(kasse) == held_kasse);
    rt_shared_free(list);
    rt_shared_free(kasse);
    rt_shared_free(list2);
}

START_TEST(the_innermost_door_decides_where_an_allocation_comes_from)
{
    RUN_OK(alloc_from_nested_blocks, "");
}
END_TEST

static void alloc_from_blocks(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *list = new_list(1 * KIB), *kasse = new_i64(1);
    rt_shared *cache = rt_shared_supervised(RT_OWNED, sizeof(struct list), build_list_of_one,
                                            NULL, 1 * KIB);
    struct alloc_seen a = {list, 0, 0};

    NEED(rt_update(list, alloc_in_update, &a) == RT_OK);
    NEED(a.task == 0 && a.value >= 64); /* an update in place: the value's block */
    NEED(rt_access(list, alloc_in_access, &a) == RT_OK);
    NEED(a.task >= 64 && a.value == 0); /* right after it, a read: the task's */
    a.s = kasse;
    NEED(rt_update(kasse, alloc_in_update, &a) == RT_OK);
    NEED(a.task >= 64 && a.value == 0); /* an update on a copy: the task's */
    /* a rebuild allocates from the fresh block; the door's fn, after it,
    ** from the task's */
    NEED(run_task(update_push_then_panic, cache) == RT_PANICKED && rt_poisoned(cache));
    a.s = cache;
    NEED(rt_access(cache, alloc_in_access, &a) == RT_OK && !rt_poisoned(cache));
    NEED(a.task >= 64 && a.value == 0);
    rt_shared_free(list);
    rt_shared_free(kasse);
    rt_shared_free(cache);
}

START_TEST(only_an_update_of_an_owned_value_allocates_from_its_block)
{
    RUN_OK(alloc_from_blocks, "panicked: after a push");
}
END_TEST

/* A door that rebuilds a poisoned value and whose fn then panics: the
** fresh value is poisoned in its turn, the old block already freed. */
static void rebuilt_then_panics(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct builder b = {0, false};
    rt_shared *cache = rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, &b,
                                            2 * KIB);
    size_t live = rt__blocks_live();
    struct cache_view v;

    NEED(run_task(outgrow, cache) == RT_PANICKED && rt_poisoned(cache));
    NEED(run_task(update_push_then_panic, cache) == RT_PANICKED);
    NEED(b.builds == 2 && rt_poisoned(cache));
    NEED(rt__blocks_live() == live);
    NEED(rt_access(cache, view_cache, &v) == RT_OK);
    NEED(b.builds == 3 && v.generation == 3 && v.n == 1 && !rt_poisoned(cache));
    rt_shared_free(cache);
    NEED(rt__blocks_live() == live - 1);
}

START_TEST(a_rebuilt_value_whose_door_then_panics_is_poisoned_again)
{
    RUN_OK(rebuilt_then_panics, "panicked: after a push");
}
END_TEST

/* A door left by longjmp out of its fn is still open when the door around
** it closes: a violation, not a lock held for ever. */
static jmp_buf left_by;

static void jump_out(void *value, void *ctx)
{
    (void)value, (void)ctx;
    longjmp(left_by, 1);
}

static void leave_a_door(void *value, void *ctx)
{
    (void)value;
    if (setjmp(left_by) == 0)
        rt_update(ctx, jump_out, NULL);
}

static void door_left_open(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared *outer = new_i64(1), *inner = new_i64(2);
    rt_update(outer, leave_a_door, inner);
}

START_TEST(a_door_left_by_longjmp_is_a_violation_when_the_door_around_it_closes)
{
    violates(door_left_open,
             "refrt: rt_update: a door opened inside this one was not closed\n");
}
END_TEST

/* A task may carry doors of other mechanisms (internal.h's hook): the
** doors of shared values look past them, to their own. */
static void foreign_unwind(struct rt_door *d)
{
    (void)d;
}

struct foreign {
    rt_shared *list, *later;
    size_t held, held_nested;
};

/* In a door on a value made later: the list's door is found past it. */
static void read_the_list(void *value, void *ctx)
{
    struct foreign *f = ctx;
    (void)value;
    f->held_nested = rt_shared_held(f->list);
}

static void inside_a_foreign_door(void *value, void *ctx)
{
    struct foreign *f = ctx;
    struct rt_hot *h = rt__hot_or_null();
    struct rt_door other = {.outer = h->door, .block = NULL, .unwind = foreign_unwind};
    void *v = rt_alloc_outside(8);
    (void)value;
    h->door = &other;
    NEED(rt_store(f->list, v) == RT_OK);     /* found past the foreign door */
    f->held = rt_shared_held(f->list);       /* read in the door, not waiting */
    NEED(rt_update(f->later, read_the_list, f) == RT_OK && f->held_nested == f->held);
    NEED(rt_unstore(f->list, v) == v);
    h->door = other.outer;
    rt_free(v);
}

static void foreign_doors(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct foreign f = {new_list(1 * KIB), new_i64(1), 0, 0};
    size_t held = rt_shared_held(f.list);
    NEED(rt_update(f.list, inside_a_foreign_door, &f) == RT_OK);
    NEED(f.held == held + 8 && rt_shared_held(f.list) == held);
    rt_shared_free(f.list);
    rt_shared_free(f.later);
}

START_TEST(doors_of_shared_values_look_past_the_doors_of_other_mechanisms)
{
    RUN_OK(foreign_doors, NULL);
}
END_TEST

/* A fresh state's value is zeroed before build sees it, also when its
** block is memory just freed by another value that was full of 0xee. */
static void build_from_zero(void *value, void *ctx)
{
    const unsigned char *v = value;
    (void)ctx;
    for (size_t i = 0; i < 256; i++)
        NEED(v[i] == 0);
    memset(value, 0xee, 256);
}

static void fill_ee(void *value, void *ctx)
{
    (void)ctx;
    memset(value, 0xee, 256);
    rt_panic("after filling");
}

static void *update_fill_ee(void *s)
{
    rt_update(s, fill_ee, NULL);
    return NULL;
}

static void zeroed_rebuild(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    unsigned char ee[256];
    memset(ee, 0xee, sizeof ee);
    rt_shared *s = rt_shared_supervised(RT_OWNED, 256, build_from_zero, NULL, 512);
    NEED(run_task(update_fill_ee, s) == RT_PANICKED && rt_poisoned(s));
    rt_shared *junk = rt_shared_new(RT_OWNED, sizeof ee, ee, 512);
    rt_shared_free(junk); /* its block, 0xee, freed */
    NEED(rt_get(s, ee) == RT_OK && ee[0] == 0xee && !rt_poisoned(s));
    rt_shared_free(s);
}

START_TEST(a_rebuilt_value_starts_zeroed_in_reused_memory)
{
    RUN_OK(zeroed_rebuild, "panicked: after filling");
}
END_TEST

/* rt_update_all rebuilds each of its values that is poisoned and
** supervised, the one locked second as well as the first, then runs. */
static void add_to_both_caches(void *va, void *vb, void *ctx)
{
    int64_t seven = 7;
    (void)ctx;
    remember(va, &seven);
    remember(vb, &seven);
}

static void both_rebuilt(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct builder ba = {0, false}, bb = {0, false};
    rt_shared *a = rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, &ba,
                                        2 * KIB);
    rt_shared *b = rt_shared_supervised(RT_OWNED, sizeof(struct cache), build_cache, &bb,
                                        2 * KIB);
    struct cache_view v;

    /* only the second poisoned */
    NEED(run_task(outgrow, b) == RT_PANICKED && rt_poisoned(b) && !rt_poisoned(a));
    NEED(rt_update_all(b, a, add_to_both_caches, NULL) == RT_OK);
    NEED(!rt_poisoned(a) && !rt_poisoned(b) && ba.builds == 1 && bb.builds == 2);
    NEED(rt_access(b, view_cache, &v) == RT_OK && v.generation == 2 && v.n == 2);
    /* both poisoned */
    NEED(run_task(outgrow, a) == RT_PANICKED && run_task(outgrow, b) == RT_PANICKED);
    NEED(rt_update_all(a, b, add_to_both_caches, NULL) == RT_OK);
    NEED(!rt_poisoned(a) && !rt_poisoned(b) && ba.builds == 2 && bb.builds == 3);
    NEED(rt_access(a, view_cache, &v) == RT_OK && v.generation == 2 && v.n == 2);
    rt_shared_free(a);
    rt_shared_free(b);
}

START_TEST(update_all_rebuilds_each_poisoned_supervised_value)
{
    RUN_OK(both_rebuilt, "does not fit its budget");
}
END_TEST

/* The same for two supervised RT_COPY values: a mixed rt_update_all (a
** copy and an owned value) that panics poisons the copy too; the next
** rt_update_all over two copies rebuilds each poisoned one first, then fn
** runs on copies of the fresh values, and what fn wrote is what is kept.
** For the first value, the second and both, each in both argument orders
** (the lock order is the order of making, not of the arguments). */
struct copy_counts {
    int builds;
};

static void build_seven(void *value, void *ctx)
{
    ((struct copy_counts *)ctx)->builds++;
    *(int64_t *)value = 7;
}

static void add_ten_and_twenty(void *va, void *vb, void *ctx)
{
    (void)ctx;
    *(int64_t *)va += 10;
    *(int64_t *)vb += 20;
}

static void panic_in_both(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    (void)ctx;
    rt_panic("a mixed update_all that panics");
}

struct mixed {
    rt_shared *copy, *owned;
};

static void *poison_through_a_mixed_update_all(void *arg)
{
    struct mixed *m = arg;
    rt_update_all(m->copy, m->owned, panic_in_both, NULL);
    return NULL;
}

static int64_t value_of(rt_shared *s)
{
    int64_t v = -1;
    NEED(rt_get(s, &v) == RT_OK);
    return v;
}

static void copies_rebuilt_then_updated(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    for (int which = 1; which <= 3; which++) {        /* a, b, both poisoned */
        for (int swapped = 0; swapped <= 1; swapped++) {
            struct copy_counts ca = {0}, cb = {0};
            int64_t zero = 0;
            rt_shared *a = rt_shared_supervised(RT_COPY, sizeof zero, build_seven, &ca, 256);
            rt_shared *b = rt_shared_supervised(RT_COPY, sizeof zero, build_seven, &cb, 256);
            /* one owned value a poisoning: a poisoned one opens no door again */
            rt_shared *oa = rt_shared_new(RT_OWNED, sizeof zero, &zero, 256);
            rt_shared *ob = rt_shared_new(RT_OWNED, sizeof zero, &zero, 256);
            struct mixed ma = {a, oa}, mb = {b, ob};
            NEED(ca.builds == 1 && cb.builds == 1 && value_of(a) == 7 && value_of(b) == 7);
            /* a door's change first, so that the poisoned state differs from a build's */
            NEED(rt_update_all(a, b, add_ten_and_twenty, NULL) == RT_OK);
            NEED(value_of(a) == 17 && value_of(b) == 27);
            if (which & 1)
                NEED(run_task(poison_through_a_mixed_update_all, &ma) == RT_PANICKED);
            if (which & 2)
                NEED(run_task(poison_through_a_mixed_update_all, &mb) == RT_PANICKED);
            NEED(rt_poisoned(a) == ((which & 1) != 0) && rt_poisoned(b) == ((which & 2) != 0));
            rt_shared *first = swapped ? b : a, *second = swapped ? a : b;
            NEED(rt_update_all(first, second, add_ten_and_twenty, NULL) == RT_OK);
            NEED(!rt_poisoned(a) && !rt_poisoned(b));
            NEED(ca.builds == 1 + ((which & 1) != 0) && cb.builds == 1 + ((which & 2) != 0));
            /* rebuilt: 7, then fn's change; not rebuilt: 17 or 27, then fn's */
            int64_t was_a = (which & 1) ? 7 : 17, was_b = (which & 2) ? 7 : 27;
            NEED(value_of(first) == (swapped ? was_b : was_a) + 10);
            NEED(value_of(second) == (swapped ? was_a : was_b) + 20);
            rt_shared_free(a);
            rt_shared_free(b);
            rt_shared_free(oa);
            rt_shared_free(ob);
        }
    }
}

START_TEST(update_all_over_two_copies_rebuilds_each_poisoned_one_then_keeps_fns_change)
{
    RUN_OK(copies_rebuilt_then_updated, "a mixed update_all that panics");
}
END_TEST

/* Every door on a poisoned supervised RT_COPY value rebuilds it before fn
** runs, so fn sees the fresh value, never the half-changed one, and an
** update's change is made to the fresh value: rt_update, rt_access, rt_get
** and rt_update_all with the value first or second. */
enum copy_door { BY_UPDATE, BY_ACCESS, BY_GET, BY_UPDATE_ALL_FIRST, BY_UPDATE_ALL_SECOND };

static int64_t seen_in_door;

static void see_and_add_ten(void *value, void *ctx)
{
    (void)ctx;
    seen_in_door = *(int64_t *)value;
    *(int64_t *)value += 10;
}

static void see(const void *value, void *ctx)
{
    (void)ctx;
    seen_in_door = *(const int64_t *)value;
}

static void see_first_and_add_ten(void *va, void *vb, void *ctx)
{
    (void)vb;
    see_and_add_ten(va, ctx);
}

static void see_second_and_add_ten(void *va, void *vb, void *ctx)
{
    (void)va;
    see_and_add_ten(vb, ctx);
}

static void every_door_on_a_poisoned_copy(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    for (int door = BY_UPDATE; door <= BY_UPDATE_ALL_SECOND; door++) {
        struct copy_counts ca = {0};
        int64_t zero = 0, got = -1;
        rt_shared *a = rt_shared_supervised(RT_COPY, sizeof zero, build_seven, &ca, 256);
        rt_shared *oa = rt_shared_new(RT_OWNED, sizeof zero, &zero, 256);
        rt_shared *other = rt_shared_new(RT_COPY, sizeof zero, &zero, 256);
        struct mixed ma = {a, oa};
        NEED(rt_update(a, see_and_add_ten, NULL) == RT_OK && seen_in_door == 7);
        NEED(value_of(a) == 17); /* the poisoned state differs from a build's */
        NEED(run_task(poison_through_a_mixed_update_all, &ma) == RT_PANICKED);
        NEED(rt_poisoned(a) && ca.builds == 1);
        seen_in_door = -1;
        switch (door) {
        case BY_UPDATE:
            NEED(rt_update(a, see_and_add_ten, NULL) == RT_OK);
            break;
        case BY_ACCESS:
            NEED(rt_access(a, see, NULL) == RT_OK);
            break;
        case BY_GET:
            NEED(rt_get(a, &got) == RT_OK && got == 7);
            seen_in_door = got;
            break;
        case BY_UPDATE_ALL_FIRST:
            NEED(rt_update_all(a, other, see_first_and_add_ten, NULL) == RT_OK);
            break;
        case BY_UPDATE_ALL_SECOND:
            NEED(rt_update_all(other, a, see_second_and_add_ten, NULL) == RT_OK);
            break;
        }
        NEED(seen_in_door == 7 && ca.builds == 2 && !rt_poisoned(a));
        int updates = door == BY_UPDATE || door >= BY_UPDATE_ALL_FIRST;
        NEED(value_of(a) == (updates ? 17 : 7));
        NEED(value_of(other) == 0);
        rt_shared_free(a);
        rt_shared_free(oa);
        rt_shared_free(other);
    }
}

START_TEST(every_door_on_a_poisoned_supervised_copy_works_on_the_fresh_value)
{
    RUN_OK(every_door_on_a_poisoned_copy, "a mixed update_all that panics");
}
END_TEST

/* rt_update_all over two RT_COPY values of different sizes writes each
** copy back whole, by its own size, whichever is locked first. */
struct three {
    int64_t n[3];
};

static void set_pair(void *va, void *vb, void *ctx)
{
    size_t *sizes = ctx;
    memset(va, 0x11, sizes[0]);
    memset(vb, 0x22, sizes[1]);
}

static bool all_bytes(rt_shared *s, size_t size, unsigned char b)
{
    unsigned char out[sizeof(struct three)];
    NEED(rt_get(s, out) == RT_OK);
    for (size_t i = 0; i < size; i++)
        if (out[i] != b)
            return false;
    return true;
}

static void two_sizes(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct three zero3 = {{0}};
    int64_t zero = 0;
    rt_shared *big = rt_shared_new(RT_COPY, sizeof zero3, &zero3, 256);
    rt_shared *small = rt_shared_new(RT_COPY, sizeof zero, &zero, 256);
    size_t big_small[2] = {sizeof zero3, sizeof zero}, small_big[2] = {sizeof zero, sizeof zero3};

    NEED(rt_update_all(big, small, set_pair, big_small) == RT_OK); /* big locked first */
    NEED(all_bytes(big, sizeof zero3, 0x11) && all_bytes(small, sizeof zero, 0x22));
    rt_shared *small2 = rt_shared_new(RT_COPY, sizeof zero, &zero, 256);
    rt_shared *big2 = rt_shared_new(RT_COPY, sizeof zero3, &zero3, 256);
    NEED(rt_update_all(small2, big2, set_pair, small_big) == RT_OK); /* small first */
    NEED(all_bytes(small2, sizeof zero, 0x11) && all_bytes(big2, sizeof zero3, 0x22));
    rt_shared_free(big);
    rt_shared_free(small);
    rt_shared_free(small2);
    rt_shared_free(big2);
}

START_TEST(update_all_over_copies_of_two_sizes_writes_each_back_whole)
{
    RUN_OK(two_sizes, NULL);
}
END_TEST

/* An unstore makes room in the table: with 8 stored, one unstored and two
** more stored, the table grows at the second of those, when it is full
** again, and not before. Its growth is found by failing it. */
struct room_op {
    rt_shared *s;
    void *v[10];
};

static void store_unstore_store(void *value, void *ctx)
{
    struct room_op *op = ctx;
    (void)value;
    for (int i = 0; i < 8; i++)
        NEED(rt_store(op->s, op->v[i]) == RT_OK);
    NEED(rt_unstore(op->s, op->v[3]) == op->v[3]);
    fail_nth(1); /* the next growth of the table fails */
    fprintf(stderr, "store 9\n");
    NEED(rt_store(op->s, op->v[8]) == RT_OK); /* fills the slot freed */
    fprintf(stderr, "store 10\n");
    NEED(rt_store(op->s, op->v[9]) == RT_OK); /* full: grows, and traps */
    fprintf(stderr, "stored\n");
}

static void room_after_unstore(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct room_op op = {new_list(1 * KIB), {NULL}};
    for (int i = 0; i < 10; i++)
        op.v[i] = rt_alloc_outside(8);
    rt_update(op.s, store_unstore_store, &op);
    _exit(3);
}

START_TEST(an_unstore_makes_room_in_the_table_of_stored_values)
{
    struct death d = run_child(room_after_unstore, NULL);
    ck_assert_msg(d.signal == SIGILL && strstr(d.err, "store 10\n") != NULL &&
                  strstr(d.err, "stored\n") == NULL, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
}
END_TEST

/* ---- values outside tasks ---------------------------------------------- */

/* Making, reading the figures of and freeing a value need no task: before
** rt_init, and on a thread that is not a task. */
static void value_life_without_a_task(void)
{
    int64_t v = 7;
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof v, &v, 256);
    NEED(!rt_poisoned(s));
    NEED(rt_shared_held(s) >= sizeof v && rt_shared_held(s) <= 256);
    rt_shared_free(s);
}

static void *plain_thread_values(void *unused)
{
    (void)unused;
    value_life_without_a_task();
    return NULL;
}

static void values_without_a_task(void *unused)
{
    (void)unused;
    pthread_t t;
    long allocations = allocs_live();
    rt_shared_free(NULL); /* nothing to free */
    value_life_without_a_task(); /* before rt_init */
    NEED(allocs_live() == allocations);
    rt_init();
    NEED(pthread_create(&t, NULL, plain_thread_values, NULL) == 0);
    NEED(pthread_join(t, NULL) == 0);
}

START_TEST(values_are_made_read_and_freed_outside_any_task)
{
    RUN_OK(values_without_a_task, NULL);
}
END_TEST

/* rt_shared_free(NULL) does nothing in a task too, inside a door on one
** value, on two, and inside a build: NULL is no value any door is on. */
static void free_null(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_shared_free(NULL);
    ran++;
}

static void free_null_of_two(void *va, void *vb, void *ctx)
{
    free_null(va, ctx);
    (void)vb;
}

static void free_null_reading(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_shared_free(NULL);
    ran++;
}

static void build_freeing_null(void *value, void *ctx)
{
    *(int64_t *)value = 9;
    free_null(value, ctx);
}

static void null_freed_in_doors(void *unused)
{
    (void)unused;
    ran = 0;
    init_fixed(64 * KIB);
    rt_shared *s = new_i64(4), *list = new_list(1 * KIB);
    NEED(rt_update(s, free_null, NULL) == RT_OK);
    long allocations = allocs_live();
    NEED(rt_update(list, free_null, NULL) == RT_OK);
    NEED(rt_access(s, free_null_reading, NULL) == RT_OK);
    NEED(rt_update_all(s, list, free_null_of_two, NULL) == RT_OK);
    NEED(ran == 4);
    NEED(allocs_live() == allocations);
    rt_shared *built = rt_shared_supervised(RT_COPY, sizeof(int64_t), build_freeing_null, NULL,
                                            256);
    NEED(ran == 5 && get_i64(built) == 9);
    NEED(get_i64(s) == 4 && !rt_poisoned(s) && !rt_poisoned(list));
    NEED(!rt__shared_locked(s) && !rt__shared_locked(list));
    rt_shared_free(built);
    rt_shared_free(list);
    rt_shared_free(s);
}

START_TEST(freeing_null_does_nothing_inside_a_door_either)
{
    RUN_OK(null_freed_in_doors, NULL);
}
END_TEST

/* rt_shared_held from another thread reads under the value's lock: while a
** door is open on the value it waits, and then reads the closed door's
** figure, never a block in the middle of a change. The reader is a plain
** thread, a task, and a task inside a door on a value made earlier (an
** rt_access and an update: its own door does not stand for s's lock). */
enum { READ_ON_A_THREAD, READ_ON_A_TASK, READ_IN_AN_ACCESS, READ_IN_AN_UPDATE, READERS };
struct held_reader {
    rt_shared *s, *earlier;
    int how;
    atomic_int started, done;
    size_t seen;
    rt_task *task;
};

static void *read_held(void *arg)
{
    struct held_reader *r = arg;
    atomic_store(&r->started, 1);
    r->seen = rt_shared_held(r->s);
    atomic_store(&r->done, 1);
    return NULL;
}

static void read_held_in_access(const void *value, void *ctx)
{
    (void)value;
    read_held(ctx);
}

static void read_held_in_update(void *value, void *ctx)
{
    (void)value;
    read_held(ctx);
}

static void *read_held_in_a_door(void *arg)
{
    struct held_reader *r = arg;
    if (r->how == READ_IN_AN_ACCESS)
        NEED(rt_access(r->earlier, read_held_in_access, r) == RT_OK);
    else
        NEED(rt_update(r->earlier, read_held_in_update, r) == RT_OK);
    return NULL;
}

static void change_while_read(void *value, void *ctx)
{
    struct held_reader *r = ctx;
    pthread_t t;
    if (r->how == READ_ON_A_THREAD)
        NEED(pthread_create(&t, NULL, read_held, r) == 0);
    else
        NEED((r->task = rt_spawn(r->how == READ_ON_A_TASK ? read_held : read_held_in_a_door, r)) !=
             NULL);
    while (!atomic_load(&r->started))
        sched_yield();
    for (int i = 0; i < 1000; i++) {
        sched_yield();
        NEED(!atomic_load(&r->done)); /* it waits for this door */
    }
    push(value, 1); /* an allocation in the value's block */
    if (r->how == READ_ON_A_THREAD)
        NEED(pthread_detach(t) == 0);
}

static void held_waits(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    int64_t zero = 0;
    for (int how = 0; how < READERS; how++) {
        rt_shared *earlier = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
        struct held_reader r = {new_list(1 * KIB), earlier, how, 0, 0, 0, NULL};
        NEED(rt_update(r.s, change_while_read, &r) == RT_OK);
        while (!atomic_load(&r.done))
            sched_yield();
        if (r.task != NULL)
            NEED(rt_join(r.task, NULL) == RT_OK);
        NEED(r.seen == rt_shared_held(r.s)); /* with the push */
        rt_shared_free(r.s);
        rt_shared_free(earlier);
    }
}

START_TEST(a_held_figure_read_from_another_thread_waits_for_the_open_door)
{
    RUN_OK(held_waits, NULL);
}
END_TEST

/* An unstore whose bytes do not fit the task's budget panics the task: the
** value stays stored (and the owned value, changed in place, poisoned). */
static void unstore_ctx(void *value, void *ctx)
{
    struct store_one *op = ctx;
    (void)value;
    rt_unstore(op->s, op->value);
    NEED(!"the unstore fitted");
}

static void *unstore_into_a_full_task(void *arg)
{
    rt_alloc(32 * KIB);
    rt_update(((struct store_one *)arg)->s, unstore_ctx, arg);
    return NULL;
}

static void unstore_does_not_fit(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    rt_free(rt_alloc_outside(8));           /* and main's table of outside values */
    long allocations = allocs_live();
    struct store_one op = {new_list(64 * KIB), rt_alloc_outside(48 * KIB)};
    NEED(rt_update(op.s, store_one, &op) == RT_OK && rt_held() == 0);
    size_t held = rt_shared_held(op.s);
    NEED(run_task(unstore_into_a_full_task, &op) == RT_PANICKED);
    NEED(rt_poisoned(op.s) && rt_shared_held(op.s) == held && rt_held() == 0);
    rt_shared_free(op.s); /* and the stored value with it */
    NEED(allocs_live() == allocations);
}

START_TEST(an_unstore_that_does_not_fit_the_task_panics_and_the_value_stays_stored)
{
    RUN_OK(unstore_does_not_fit, "an unstored value of 49152 bytes does not fit its budget");
}
END_TEST

/* ---- a rebuild that panics poisons nothing more ------------------------- */

/* The build of a poisoned supervised value panics in its rebuild, in every
** door: rt_update, rt_access, rt_get, and rt_update_all with the value as
** a and as b, its partner of either kind, healthy or poisoned and
** supervised, made (so locked and rebuilt) before it or after it. The
** fresh state goes whole (blocks and allocations as before), the value
** stays poisoned with its old state's figure, fn never runs, and nothing
** else is poisoned: a healthy partner is untouched, a partner the door
** rebuilt first stays rebuilt, one it had not reached yet stays poisoned
** and unbuilt. The next door rebuilds the value. Then a rebuild that
** succeeds and whose door's fn panics: only an update in place poisons it
** (D11); an RT_COPY update or an access leaves the rebuilt value standing. */
struct rb_build {
    unsigned builds, fail_at; /* the build that panics, 0 none */
    rt_kind kind;
};

#define RB_BUILD_ALLOC 40
#define RB_POISON_ALLOC 100

static void rb_build(void *value, void *ctx)
{
    struct rb_build *b = ctx;
    NEED(*(int64_t *)value == 0);
    *(int64_t *)value = 50 + (int64_t)++b->builds;
    if (b->kind == RT_OWNED)
        NEED(rt_alloc(RB_BUILD_ALLOC) != NULL); /* in the fresh block */
    if (b->builds == b->fail_at)
        rt_panic("the rebuild failed");
}

enum rb_door { RB_UPDATE, RB_ACCESS, RB_GET, RB_ALL_A, RB_ALL_B, RB_DOORS };

struct rb_run {
    rt_shared *s, *p;
    enum rb_door door;
    bool fn_panics;
    int ran;
};

static void rb_fn(struct rb_run *r)
{
    r->ran++;
    if (r->fn_panics)
        rt_panic("the door's fn panics");
}
static void rb_update_fn(void *v, void *ctx) { (void)v; rb_fn(ctx); }
static void rb_access_fn(const void *v, void *ctx) { (void)v; rb_fn(ctx); }
static void rb_pair_fn(void *va, void *vb, void *ctx) { (void)va, (void)vb; rb_fn(ctx); }

static void *rb_task(void *arg)
{
    struct rb_run *r = arg;
    int64_t out = -1;
    switch (r->door) {
    case RB_UPDATE: rt_update(r->s, rb_update_fn, r); break;
    case RB_ACCESS: rt_access(r->s, rb_access_fn, r); break;
    case RB_GET: rt_get(r->s, &out); break;
    case RB_ALL_A: rt_update_all(r->s, r->p, rb_pair_fn, r); break;
    default: rt_update_all(r->p, r->s, rb_pair_fn, r); break;
    }
    NEED(!"the door returned");
    return NULL;
}

/* Poisons x in place: an owned value by an update that allocates and
** panics (its old state then holds more than a fresh one), a copy by an
** rt_update_all with an owned helper that writes it and panics. */
static void rb_poison_fn(void *v, void *ctx)
{
    (void)v, (void)ctx;
    NEED(rt_alloc(RB_POISON_ALLOC) != NULL);
    rt_panic("poisoned in place");
}

static void rb_poison_pair_fn(void *va, void *vb, void *ctx)
{
    (void)vb, (void)ctx;
    *(int64_t *)va = 999;
    rt_panic("poisoned in place");
}

static void *rb_poison_task(void *arg)
{
    rt_shared **xh = arg;
    if (xh[1] == NULL)
        rt_update(xh[0], rb_poison_fn, NULL);
    else
        rt_update_all(xh[0], xh[1], rb_poison_pair_fn, NULL);
    return NULL;
}

static void rb_poison(rt_shared *x, rt_kind kind)
{
    int64_t zero = 0;
    rt_shared *xh[2] = {x, kind == RT_OWNED ? NULL : rt_shared_new(RT_OWNED, 8, &zero, 256)};
    NEED(!rt_poisoned(x));
    NEED(run_task(rb_poison_task, xh) == RT_PANICKED && rt_poisoned(x));
    if (xh[1] != NULL)
        rt_shared_free(xh[1]);
}

static size_t rb_fresh(rt_kind kind)
{
    return 16 + (kind == RT_OWNED ? 48 : 0); /* the value's chunk, and the build's */
}

/* One case. p_state: 0 no partner is used, 1 a healthy plain partner, 2 a
** poisoned supervised one. */
static void one_rebuild_panic(rt_kind kind, enum rb_door door, rt_kind p_kind, int p_state,
                              bool p_first, bool fn_panics)
{
    struct rb_build bs = {0, 0, kind}, bp = {0, 0, p_kind};
    int64_t seven = 7, out = -1;
    rt_shared *s, *p;
    bool pair = door == RB_ALL_A || door == RB_ALL_B;

    if (p_first)
        p = p_state == 2 ? rt_shared_supervised(p_kind, 8, rb_build, &bp, 1 * KIB)
                         : rt_shared_new(p_kind, 8, &seven, 1 * KIB);
    s = rt_shared_supervised(kind, 8, rb_build, &bs, 1 * KIB);
    if (!p_first)
        p = p_state == 2 ? rt_shared_supervised(p_kind, 8, rb_build, &bp, 1 * KIB)
                         : rt_shared_new(p_kind, 8, &seven, 1 * KIB);
    NEED(bs.builds == 1 && rt_shared_held(s) == rb_fresh(kind));
    rb_poison(s, kind);
    size_t s_held = rt_shared_held(s); /* the poisoned state's */
    NEED(s_held == rb_fresh(kind) + (kind == RT_OWNED ? 112 : 0));
    if (p_state == 2)
        rb_poison(p, p_kind);
    size_t p_held = rt_shared_held(p);
    unsigned p_builds = bp.builds;

    struct rb_run r = {s, p, door, fn_panics, 0};
    bs.fail_at = fn_panics ? 0 : 2;
    size_t blocks = rt__blocks_live();
    long allocations = allocs_live();
    NEED(run_task(rb_task, &r) == RT_PANICKED);
    NEED(bs.builds == 2);
    if (!fn_panics) {
        /* the rebuild panicked: fn never ran, the value keeps its old state */
        NEED(r.ran == 0);
        NEED(rt_poisoned(s) && rt_shared_held(s) == s_held);
        NEED(rt__blocks_live() == blocks && allocs_live() == allocations);
        bool p_rebuilt = pair && p_state == 2 && p_first;
        if (p_state == 1) {
            NEED(!rt_poisoned(p) && rt_shared_held(p) == p_held);
            NEED(rt_get(p, &out) == RT_OK && out == 7);
        } else if (p_rebuilt) {
            NEED(!rt_poisoned(p) && bp.builds == p_builds + 1);
            NEED(rt_shared_held(p) == rb_fresh(p_kind));
            NEED(rt_get(p, &out) == RT_OK && out == 50 + (int64_t)bp.builds);
        } else if (p_state == 2) {
            NEED(rt_poisoned(p) && bp.builds == p_builds && rt_shared_held(p) == p_held);
        }
        /* the next door rebuilds it */
        NEED(rt_get(s, &out) == RT_OK && out == 53 && bs.builds == 3);
        NEED(!rt_poisoned(s) && rt_shared_held(s) == rb_fresh(kind));
    } else {
        /* rebuilt, then fn panicked: poisoned only by an update in place */
        bool in_place = door == RB_UPDATE && kind == RT_OWNED;
        NEED(r.ran == 1);
        NEED(rt_poisoned(s) == in_place && rt_shared_held(s) == rb_fresh(kind));
        if (!in_place) {
            NEED(rt_get(s, &out) == RT_OK && out == 52 && bs.builds == 2);
            NEED(!rt_poisoned(s));
        }
    }
    NEED(!rt__shared_locked(s) && !rt__shared_locked(p));
    rt_shared_free(s);
    rt_shared_free(p);
}

static void rebuilds_that_panic(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    FILE *quiet = fopen("/dev/null", "w"); /* the panics' lines; NEED writes to fd 2 */
    NEED(quiet != NULL);
    stderr = quiet;
    for (int kind = RT_COPY; kind <= RT_OWNED; kind++)
        for (int door = 0; door < RB_DOORS; door++) {
            bool pair = door == RB_ALL_A || door == RB_ALL_B;
            for (int p_kind = RT_COPY; p_kind <= RT_OWNED; p_kind++)
                for (int p_state = pair ? 1 : 0; p_state <= (pair ? 2 : 0); p_state++)
                    for (int p_first = 0; p_first < 2; p_first++) {
                        one_rebuild_panic(kind, door, p_kind, p_state, p_first, false);
                        if (!pair && door != RB_GET)
                            one_rebuild_panic(kind, door, p_kind, p_state, p_first, true);
                    }
        }
}

START_TEST(a_rebuild_that_panics_poisons_nothing_else_in_any_door)
{
    RUN_OK(rebuilds_that_panic, NULL);
}
END_TEST

/* ---- stores and unstores inside a rebuild's build ----------------------- */

/* A rebuild's build may store into and unstore from the state it builds,
** in every door that rebuilds (rt_update, rt_access, rt_get, rt_update_all
** with the value as a and as b), on main and on a task: a value stored
** there moves its exact bytes from the task to the fresh block and back
** on its unstore, the task holding it again; what the build keeps stored
** is the rebuilt value's, freed with it; the poisoned state's stored value
** is freed by the rebuild, and unstoring it in the build is a violation:
** it is no value of the state being built. */
struct sb_holder {
    char *kept;
    size_t spare; /* 16 bytes: a chunk of 32 */
};

struct sb_build {
    rt_shared *s; /* NULL in the first build */
    char *old;    /* stored into the poisoned state */
    char *kept;   /* stored by the last rebuild */
    bool unstore_old;
    int builds;
};

#define SB_TRIED 24
#define SB_KEPT 40

static void sb_build(void *value, void *ctx)
{
    struct sb_build *b = ctx;
    struct sb_holder *h = value;
    b->builds++;
    if (b->s == NULL)
        return;
    size_t fresh = rt_shared_held(b->s), task = rt_held();
    NEED(fresh == 32); /* the fresh block: the value's chunk alone */
    if (b->unstore_old)
        rt_unstore(b->s, b->old);
    char *x = rt_alloc_outside(SB_TRIED);
    NEED(rt_held() == task + SB_TRIED);
    NEED(rt_store(b->s, x) == RT_OK);
    NEED(rt_held() == task && rt_shared_held(b->s) == fresh + SB_TRIED);
    NEED(rt_unstore(b->s, x) == x);
    NEED(rt_held() == task + SB_TRIED && rt_shared_held(b->s) == fresh);
    rt_free(x);
    NEED(rt_held() == task);
    h->kept = b->kept = rt_alloc_outside(SB_KEPT);
    NEED(rt_store(b->s, h->kept) == RT_OK);
    NEED(rt_held() == task && rt_shared_held(b->s) == fresh + SB_KEPT);
}

static void sb_store_old(void *value, void *ctx)
{
    struct sb_build *b = ctx;
    NEED(rt_store(b->s, b->old) == RT_OK);
    ((struct sb_holder *)value)->kept = b->old;
}

static void sb_read_kept(const void *value, void *ctx)
{
    NEED(((const struct sb_holder *)value)->kept == ctx);
}

struct sb_run {
    rt_shared *s, *partner;
    enum rb_door door;
};

static void sb_door(struct sb_run *r)
{
    struct sb_holder out = {NULL, 0};
    switch (r->door) {
    case RB_UPDATE: NEED(rt_update(r->s, nop_update, NULL) == RT_OK); break;
    case RB_ACCESS: NEED(rt_access(r->s, nop_access, NULL) == RT_OK); break;
    case RB_GET: NEED(rt_get(r->s, &out) == RT_OK && out.kept != NULL); break;
    case RB_ALL_A: NEED(rt_update_all(r->s, r->partner, nop_update_all, NULL) == RT_OK); break;
    default: NEED(rt_update_all(r->partner, r->s, nop_update_all, NULL) == RT_OK); break;
    }
}

static void *sb_door_task(void *arg)
{
    sb_door(arg);
    NEED(rt_held() == 0);
    return NULL;
}

static enum rb_door sb_violating_door;

static void one_store_in_a_rebuild(enum rb_door door, bool on_task, bool unstore_old)
{
    struct sb_build b = {NULL, NULL, NULL, unstore_old, 0};
    int64_t zero = 0;
    long made = allocs_live();
    rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof(struct sb_holder), sb_build, &b,
                                        256 * KIB);
    rt_shared *partner = rt_shared_new(RT_COPY, sizeof zero, &zero, 256);
    struct sb_run r = {s, partner, door};
    NEED(b.builds == 1 && rt_shared_held(s) == 32);
    b.s = s;
    b.old = rt_alloc_outside(RT_CHUNK_SIZE);
    NEED(rt_update(s, sb_store_old, &b) == RT_OK);
    NEED(rt_shared_held(s) == 32 + RT_CHUNK_SIZE && rt_held() == 0);
    rb_poison(s, RT_OWNED);
    NEED(chunk_live(b.old)); /* poisoned, not yet rebuilt: still there */
    long allocations = allocs_live();
    if (on_task)
        NEED(run_task(sb_door_task, &r) == RT_OK);
    else
        sb_door(&r);
    NEED(b.builds == 2 && !rt_poisoned(s));
    NEED(!chunk_live(b.old)); /* freed with the poisoned state */
    NEED(rt_shared_held(s) == 32 + SB_KEPT && rt_held() == 0);
    NEED(allocs_live() == allocations); /* the old value out, the kept one in */
    NEED(rt_access(s, sb_read_kept, b.kept) == RT_OK);
    rt_shared_free(s);
    rt_shared_free(partner);
    NEED(allocs_live() == made); /* the kept value went with its value */
}

static void stores_in_rebuilds(void *unused)
{
    (void)unused;
    init_fixed(512 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    rt_free(rt_alloc_outside(8));           /* and main's table of outside values */
    FILE *quiet = fopen("/dev/null", "w"); /* the panics' lines; NEED writes to fd 2 */
    NEED(quiet != NULL);
    stderr = quiet;
    for (int door = 0; door < RB_DOORS; door++)
        for (int on_task = 0; on_task < 2; on_task++)
            one_store_in_a_rebuild((enum rb_door)door, on_task, false);
}

static void unstore_of_the_old_state_in_a_rebuild(void *unused)
{
    (void)unused;
    init_fixed(512 * KIB);
    one_store_in_a_rebuild(sb_violating_door, false, true);
}

START_TEST(a_rebuilds_build_stores_and_unstores_in_the_state_it_builds_in_every_door)
{
    RUN_OK(stores_in_rebuilds, NULL);
    for (sb_violating_door = 0; sb_violating_door < RB_DOORS; sb_violating_door++)
        violates(unstore_of_the_old_state_in_a_rebuild,
                 "is not a value stored in shared value #1\n");
}
END_TEST

/* ---- every check looks past the doors of other mechanisms --------------- */

/* The checks that refuse a door, a read or a free find the shared value's
** doors past a door of another mechanism hung on the task (internal.h's
** hook) as they do without one: a door entered again, a door or an
** rt_update_all nested against the order, rt_shared_held of an earlier
** value, rt_shared_free of a value whose door is open; on main and on a
** task. rt_shared_free of a value is refused in a door that holds it as
** the value locked second of an rt_update_all (passed as a or as b) and in
** its own rebuild's build. */
enum past_case {
    PAST_AGAIN,
    PAST_ORDER,
    PAST_PAIR_ORDER,
    PAST_HELD,
    PAST_FREE,
    FREE_SECOND_AS_A,
    FREE_SECOND_AS_B,
    FREE_IN_ITS_REBUILD,
    PAST_CASES
};

static enum past_case past_case;
static bool past_on_task;
static rt_shared *past_v[3]; /* #1, #2, #3 */

/* Hangs a foreign door on the task, then makes the misuse. */
static void past_misuse(void)
{
    struct rt_hot *h = rt__hot_or_null();
    struct rt_door other = {.outer = h->door, .block = NULL, .unwind = foreign_unwind};
    int64_t out;
    if (past_case < FREE_SECOND_AS_A)
        h->door = &other;
    switch (past_case) {
    case PAST_AGAIN: rt_access(past_v[0], nop_access, NULL); break;
    case PAST_ORDER: rt_get(past_v[0], &out); break;
    case PAST_PAIR_ORDER: rt_update_all(past_v[2], past_v[0], nop_update_all, NULL); break;
    case PAST_HELD: (void)rt_shared_held(past_v[0]); break;
    case PAST_FREE: rt_shared_free(past_v[0]); break;
    default: rt_shared_free(past_v[1]); break;
    }
    NEED(!"the misuse was let through");
}

static void past_update_fn(void *v, void *ctx) { (void)v, (void)ctx; past_misuse(); }
static void past_pair_fn(void *va, void *vb, void *ctx) { (void)va, (void)vb, (void)ctx; past_misuse(); }

static void past_build(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (past_v[1] != NULL && rt_poisoned(past_v[1]))
        past_misuse(); /* in the rebuild: frees the value being rebuilt */
}

static void *past_body(void *unused)
{
    (void)unused;
    switch (past_case) {
    case PAST_AGAIN:
    case PAST_FREE:
        rt_update(past_v[0], past_update_fn, NULL);
        break;
    case PAST_ORDER:
    case PAST_PAIR_ORDER:
    case PAST_HELD:
        rt_update(past_v[1], past_update_fn, NULL);
        break;
    case FREE_SECOND_AS_A:
        rt_update_all(past_v[1], past_v[0], past_pair_fn, NULL);
        break;
    case FREE_SECOND_AS_B:
        rt_update_all(past_v[0], past_v[1], past_pair_fn, NULL);
        break;
    default:
        rt_update(past_v[1], nop_update, NULL); /* rebuilt first */
        break;
    }
    NEED(!"the door returned");
    return NULL;
}

static void past_scenario(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    past_v[0] = new_list(1 * KIB);
    if (past_case == FREE_IN_ITS_REBUILD) {
        rt_shared *s = rt_shared_supervised(RT_OWNED, 16, past_build, NULL, 1 * KIB);
        NEED(run_task(poison_owned, s) == RT_PANICKED && rt_poisoned(s));
        past_v[1] = s;
    } else {
        past_v[1] = new_i64(2);
    }
    past_v[2] = new_list(1 * KIB);
    if (past_on_task)
        run_task(past_body, NULL);
    else
        past_body(NULL);
    NEED(!"no violation");
}

START_TEST(every_check_finds_the_doors_of_shared_values_past_other_doors_and_either_value_of_a_pair)
{
    static const char *const want[PAST_CASES] = {
        ("refrt: rt_access: a door on shared value #1 is already open in this task (entered "
         "again from inside rt_update)\n"),
        "refrt: rt_get: a door on shared value #1 opened inside a door on #2, made later",
        "refrt: rt_update_all: a door on shared value #1 opened inside a door on #2, made later",
        "refrt: rt_shared_held: shared value #1 read inside a door on #2, made later",
        "refrt: rt_shared_free: a door on shared value #1 is open in this task\n",
        "refrt: rt_shared_free: a door on shared value #2 is open in this task\n",
        "refrt: rt_shared_free: a door on shared value #2 is open in this task\n",
        "refrt: rt_shared_free: a door on shared value #2 is open in this task\n",
    };
    for (past_case = 0; past_case < PAST_CASES; past_case++)
        for (int on_task = 0; on_task < 2; on_task++) {
            past_on_task = on_task;
            violates(past_scenario, want[past_case]);
        }
}
END_TEST

/* ---- exact figures outside any task ------------------------------------ */

/* rt_shared_held is exact wherever it is read, not just "some bytes": the
** value's chunk (its bytes and an 8-byte header in 16-byte granules), the
** chunks of what its doors allocated and kept, and the bytes stored into
** it. Before rt_init, on a plain thread, on main and on a task outside any
** door, and inside a door on a value made before it, a value of 8 bytes
** reads 16, and 16 + 112 + 40 once an update kept a 100-byte allocation
** and stored a 40-byte outside value. rt_poisoned is true on a plain
** thread for a value poisoned on a task, and rt_shared_free on a plain
** thread frees the value with what it stored: every allocation goes. */
#define EX_HELD (16 + 112 + 40)

static rt_shared *ex_s, *ex_p, *ex_earlier;
static long ex_allocs; /* the allocations the three values hold */

static void ex_keep(void *value, void *ctx)
{
    void **kept = ctx;
    (void)value;
    kept[0] = rt_alloc(100);
    NEED(kept[0] != NULL && rt_store(ex_s, kept[1]) == RT_OK);
}

static void ex_read_in_door(void *value, void *ctx)
{
    (void)value;
    *(size_t *)ctx = rt_shared_held(ex_s);
}

static void *ex_plain_thread(void *unused)
{
    int64_t v = 3;
    (void)unused;
    rt_shared *mine = rt_shared_new(RT_OWNED, sizeof v, &v, 256);
    NEED(rt_shared_held(mine) == 16);
    (rt_shared_free)(mine);
    NEED(rt_shared_held(ex_s) == EX_HELD);
    NEED(rt_poisoned(ex_p) && !rt_poisoned(ex_s));
    long live = allocs_live();
    (rt_shared_free)(ex_s);
    (rt_shared_free)(ex_p);
    (rt_shared_free)(ex_earlier);
    NEED(allocs_live() == live - ex_allocs);
    return NULL;
}

static void *ex_task(void *unused)
{
    size_t in_door = 0;
    (void)unused;
    NEED(rt_shared_held(ex_s) == EX_HELD);
    NEED(rt_update(ex_earlier, ex_read_in_door, &in_door) == RT_OK && in_door == EX_HELD);
    return NULL;
}

static void exact_figures_outside_tasks(void *unused)
{
    (void)unused;
    int64_t v = 5;
    long before = allocs_live();
    rt_shared *s = (rt_shared_new)(RT_OWNED, sizeof v, &v, 256); /* before rt_init */
    NEED(rt_shared_held(s) == 16 && !rt_poisoned(s));
    (rt_shared_free)(s);
    NEED(allocs_live() == before);

    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    rt_free(rt_alloc_outside(8));           /* and main's table of outside values */
    long made = allocs_live();
    ex_earlier = (rt_shared_new)(RT_COPY, sizeof v, &v, 256);
    ex_s = (rt_shared_new)(RT_OWNED, sizeof v, &v, 1 * KIB);
    ex_p = (rt_shared_new)(RT_OWNED, sizeof v, &v, 1 * KIB);
    NEED(rt_shared_held(ex_s) == 16);
    void *kept[2] = {NULL, rt_alloc_outside(40)};
    NEED(rt_update(ex_s, ex_keep, kept) == RT_OK);
    NEED(rt_shared_held(ex_s) == EX_HELD && rt_held() == 0);
    ex_allocs = allocs_live() - made;
    size_t in_door = 0;
    NEED(rt_update(ex_earlier, ex_read_in_door, &in_door) == RT_OK && in_door == EX_HELD);
    NEED(run_task(ex_task, NULL) == RT_OK);
    NEED(run_task(poison_it, ex_p) == RT_PANICKED && rt_poisoned(ex_p));
    pthread_t t;
    NEED(pthread_create(&t, NULL, ex_plain_thread, NULL) == 0);
    NEED(pthread_join(t, NULL) == 0);
}

START_TEST(a_values_figure_is_exact_before_rt_init_on_a_plain_thread_and_on_a_task)
{
    RUN_OK(exact_figures_outside_tasks, "panicked: poisons the holder");
}
END_TEST

/* ---- stores inside rt_update_all go to the value named ----------------- */

/* In an rt_update_all, rt_store(x, v) and rt_unstore(x, v) work on x's
** state and charge x's block, whichever block the door allocates from (a's
** if it is RT_OWNED, else b's): both values owned, or a copy beside an owned
** one, each passed as a and as b, made (so locked) first or second. A
** value stored into each moves exactly its bytes onto that value alone,
** comes back from it alone, and one kept stored goes with its own value. */
struct pair_store {
    rt_shared *a, *b;
    void *va, *vb; /* stored into a (if owned) and b */
    bool unstore;
    size_t held_a, held_b, task;
};

static void store_into_each(void *va, void *vb, void *ctx)
{
    struct pair_store *p = ctx;
    (void)va, (void)vb;
    size_t a = rt_shared_held(p->a), b = rt_shared_held(p->b), task = rt_held();
    if (p->va != NULL) {
        if (p->unstore)
            NEED(rt_unstore(p->a, p->va) == p->va);
        else
            NEED(rt_store(p->a, p->va) == RT_OK);
    }
    NEED(rt_shared_held(p->b) == b); /* b untouched by a's */
    if (p->unstore)
        NEED(rt_unstore(p->b, p->vb) == p->vb);
    else
        NEED(rt_store(p->b, p->vb) == RT_OK);
    p->held_a = rt_shared_held(p->a) - a;
    p->held_b = rt_shared_held(p->b) - b;
    p->task = task - rt_held(); /* what left the task (a store) */
}

static void stores_into_a_pair(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_free(rt_alloc_outside(8)); /* main's table of outside values, made */
    int64_t zero = 0;
    for (int a_owned = 0; a_owned < 2; a_owned++)
        for (int b_first = 0; b_first < 2; b_first++) {
            long live = allocs_live();
            rt_shared *a = NULL, *b = NULL;
            rt_kind ka = a_owned ? RT_OWNED : RT_COPY;
            if (b_first)
                b = rt_shared_new(RT_OWNED, sizeof zero, &zero, 1 * KIB);
            a = rt_shared_new(ka, sizeof zero, &zero, 1 * KIB);
            if (!b_first)
                b = rt_shared_new(RT_OWNED, sizeof zero, &zero, 1 * KIB);
            struct pair_store p = {a, b, a_owned ? rt_alloc_outside(24) : NULL,
                                   rt_alloc_outside(40), false, 0, 0, 0};
            size_t ha = rt_shared_held(a), hb = rt_shared_held(b);
            NEED(rt_held() == (a_owned ? 24u : 0u) + 40);
            NEED(rt_update_all(a, b, store_into_each, &p) == RT_OK);
            NEED(p.held_a == (a_owned ? 24u : 0u) && p.held_b == 40);
            NEED(rt_held() == 0 && p.task == (a_owned ? 24u : 0u) + 40);
            NEED(rt_shared_held(a) == ha + p.held_a && rt_shared_held(b) == hb + 40);
            /* back out, the pair passed the other way round */
            p.unstore = true;
            NEED(rt_update_all(b, a, store_into_each, &p) == RT_OK);
            NEED(rt_shared_held(a) == ha && rt_shared_held(b) == hb);
            NEED(rt_held() == (a_owned ? 24u : 0u) + 40);
            /* and in again, then freed with their values, each with its own */
            p.unstore = false;
            NEED(rt_update_all(a, b, store_into_each, &p) == RT_OK);
            NEED(rt_held() == 0);
            long with_both = allocs_live();
            rt_shared_free(b);
            NEED(rt_shared_held(a) == ha + p.held_a);
            rt_shared_free(a);
            NEED(allocs_live() == live && with_both > live);
        }
}

START_TEST(stores_inside_update_all_go_to_the_value_named_whichever_block_the_door_uses)
{
    RUN_OK(stores_into_a_pair, NULL);
}
END_TEST

/* ---- a panic deep in nested doors -------------------------------------- */

/* Doors nested 2, 16, 17 and 20 deep, on values made in that order, each
** level an update in place of an owned value (which keeps an allocation),
** an update of a 200-byte copy (its copy on the heap, scribbled on), or an
** access of an owned value; the innermost fn panics. Every open door
** unwinds by its own row: exactly the owned values updated in place are
** poisoned, with the figure their fn left; the copies keep their old
** bytes; the accessed values are neither poisoned nor changed; no lock is
** left held, and every heap copy is freed (allocations as before). A door
** entered again or nested against the order at the innermost level is the
** violation naming the right values. */
#define DEEP_MAX 20
#define DEEP_COPY 200

static rt_shared *deep[DEEP_MAX + 1]; /* deep[0] made first, outside the chain */
static int deep_depth, deep_misuse;   /* 0 panic, 1 enter #2 again, 2 open #1 */

static int deep_level_kind(int level)
{
    return level % 3; /* 0 owned update, 1 copy update, 2 owned access */
}

static void deep_open(intptr_t level);

static void deep_update_fn(void *value, void *ctx)
{
    intptr_t level = (intptr_t)ctx;
    if (deep_level_kind((int)level) == 0)
        NEED(rt_alloc(16) != NULL); /* kept in the value's block */
    else
        memset(value, 0x99, DEEP_COPY);
    deep_open(level + 1);
}

static void deep_access_fn(const void *value, void *ctx)
{
    (void)value;
    deep_open((intptr_t)ctx + 1);
}

static void deep_open(intptr_t level)
{
    unsigned char out[DEEP_COPY];
    if (level == deep_depth) {
        if (deep_misuse == 1)
            rt_get(deep[1], out);
        else if (deep_misuse == 2)
            rt_get(deep[0], out);
        rt_panic("deep in the doors");
    }
    rt_shared *s = deep[level + 1];
    if (deep_level_kind((int)level) == 2)
        rt_access(s, deep_access_fn, (void *)level);
    else
        rt_update(s, deep_update_fn, (void *)level);
    NEED(!"a door returned");
}

static void *deep_task(void *unused)
{
    (void)unused;
    deep_open(0);
    return NULL;
}

static void deep_make(void)
{
    static const unsigned char zero[DEEP_COPY];
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    deep[0] = new_i64(0);
    for (int level = 0; level < deep_depth; level++)
        deep[level + 1] = rt_shared_new(deep_level_kind(level) == 1 ? RT_COPY : RT_OWNED,
                                        DEEP_COPY, zero, 1 * KIB);
}

static void deep_panic(void *unused)
{
    (void)unused;
    static const int depths[] = {2, 16, 17, 20};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        deep_depth = depths[i];
        deep_make();
        long live = allocs_live();
        NEED(run_task(deep_task, NULL) == RT_PANICKED);
        NEED(allocs_live() == live); /* every heap copy freed by the unwind */
        for (int level = 0; level < deep_depth; level++) {
            rt_shared *s = deep[level + 1];
            unsigned char out[DEEP_COPY];
            int k = deep_level_kind(level);
            NEED(!rt__shared_locked(s));
            NEED(rt_poisoned(s) == (k == 0));
            NEED(rt_shared_held(s) == 208 + (k == 0 ? 32 : 0));
            if (k != 0) {
                NEED(rt_get(s, out) == RT_OK);
                for (size_t j = 0; j < DEEP_COPY; j++)
                    NEED(out[j] == 0);
            }
            rt_shared_free(s);
        }
        rt_shared_free(deep[0]);
    }
}

static void deep_violation(void *unused)
{
    (void)unused;
    deep_make();
    deep_open(0); /* on main */
}

START_TEST(a_panic_twenty_doors_deep_unwinds_every_door_by_its_own_row)
{
    RUN_OK(deep_panic, "panicked: deep in the doors");
    static const int depths[] = {2, 16, 17, 20};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        char want[200];
        deep_depth = depths[i];
        deep_misuse = 1;
        violates(deep_violation, "refrt: rt_get: a door on shared value #2 is already open in "
                                 "this task (entered again from inside rt_update)\n");
        deep_misuse = 2;
        snprintf(want, sizeof want, "refrt: rt_get: a door on shared value #1 opened inside a "
                 "door on #%d, made later", deep_depth + 1);
        violates(deep_violation, want);
    }
    deep_misuse = 0;
}
END_TEST

/* ---- stress: 8 tasks, 4 values, seeded panics -------------------------- */
/*
** Each of 8 drivers runs STRESS_ROUNDS workers one after another; a worker
** is a task doing up to STRESS_OPS random doors (seeded by driver and
** round), some of which panic and end it. Every update adds to the
** driver's own counter and to the total, so updates commute and the model
** is exact: a value that is not poisoned holds exactly the sums of the
** doors that returned RT_OK. A fn that panics first records which values
** the rules poison (expect_poison); at the end a value is poisoned if and
** only if such a panic ran on it.
*/
#define STRESS_DRIVERS 8
#define STRESS_VALUES 4 /* 0 and 1 RT_COPY, 2 and 3 RT_OWNED */
#define STRESS_ROUNDS 64
#define STRESS_OPS 32
#define STRESS_OWNED_BLOCK (2 * KIB)

struct counters {
    uint64_t by[STRESS_DRIVERS];
    uint64_t total;
};

static rt_shared *stress_v[STRESS_VALUES];
static atomic_bool expect_poison[STRESS_VALUES];
static atomic_uint panics_poisoning, panics_harmless;
static uint64_t committed[STRESS_DRIVERS][STRESS_VALUES]; /* each row its driver's */

enum stress_panic { NO_PANIC, PANIC_CALL, PANIC_FULL };

struct stress_op {
    unsigned driver;
    uint64_t inc;
    enum stress_panic panic;
    int v[2]; /* value indexes; v[1] -1 for a single value */
};

static bool owned(int v)
{
    return v >= 2;
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Du;
}

static void stress_add(struct counters *k, const struct stress_op *op)
{
    k->by[op->driver] += op->inc;
    k->total += op->inc;
}

/* Ends fn as op says, after recording what the rules poison. */
static void stress_maybe_panic(const struct stress_op *op, bool poisons, bool in_owned_block)
{
    if (op->panic == NO_PANIC)
        return;
    for (int i = 0; i < 2 && poisons; i++)
        if (op->v[i] >= 0)
            atomic_store(&expect_poison[op->v[i]], true);
    atomic_fetch_add(poisons ? &panics_poisoning : &panics_harmless, 1);
    if (op->panic == PANIC_FULL) /* the door's block (the value's or the task's) is full */
        rt_alloc(in_owned_block ? STRESS_OWNED_BLOCK : rt_budget() + 1);
    rt_panic("stress");
}

static void stress_update(void *value, void *ctx)
{
    const struct stress_op *op = ctx;
    stress_add(value, op);
    if (owned(op->v[0]))
        rt_free(rt_alloc(op->inc % 200 + 1)); /* in the value's block */
    stress_maybe_panic(op, owned(op->v[0]), owned(op->v[0]));
}

static void stress_update_all(void *va, void *vb, void *ctx)
{
    const struct stress_op *op = ctx;
    bool any_owned = owned(op->v[0]) || owned(op->v[1]);
    stress_add(va, op);
    stress_add(vb, op);
    if (any_owned)
        rt_free(rt_alloc(op->inc % 200 + 1));
    stress_maybe_panic(op, any_owned, any_owned);
}

static void stress_access(const void *value, void *ctx)
{
    const struct stress_op *op = ctx;
    const struct counters *k = value;
    NEED(k->by[op->driver] <= k->total);
    stress_maybe_panic(op, false, false);
}

struct worker {
    unsigned driver, round;
};

static void *stress_worker(void *arg)
{
    struct worker *w = arg;
    uint64_t x = 0x9E3779B97F4A7C15u * (w->driver * 1000 + w->round + 1);
    unsigned ops = (unsigned)(next_random(&x) % STRESS_OPS) + 1;

    for (unsigned i = 0; i < ops; i++) {
        struct stress_op op = {w->driver, next_random(&x) % 1000 + 1, NO_PANIC, {-1, -1}};
        unsigned what = (unsigned)(next_random(&x) % 100);
        bool any_owned;
        rt_status st;

        op.v[0] = (int)(next_random(&x) % STRESS_VALUES);
        if (what >= 50 && what < 85)
            op.v[1] = (op.v[0] + 1 + (int)(next_random(&x) % (STRESS_VALUES - 1))) % STRESS_VALUES;
        any_owned = owned(op.v[0]) || (op.v[1] >= 0 && owned(op.v[1]));
        /* a panic that poisons is rare, so the owned values live a while */
        if (next_random(&x) % (any_owned && what < 85 ? 1500 : 30) == 0)
            op.panic = next_random(&x) % 2 == 0 ? PANIC_CALL : PANIC_FULL;
        /* the last round of driver 0 poisons value 3 for sure */
        if (w->driver == 0 && w->round == STRESS_ROUNDS - 1 && i == 0) {
            op.v[0] = 3, op.v[1] = -1, what = 0;
            op.panic = PANIC_CALL;
        }
        if (what < 50) {
            st = rt_update(stress_v[op.v[0]], stress_update, &op);
        } else if (what < 85) {
            st = rt_update_all(stress_v[op.v[0]], stress_v[op.v[1]], stress_update_all, &op);
        } else {
            st = rt_access(stress_v[op.v[0]], stress_access, &op);
            continue;
        }
        NEED(st == RT_OK || st == RT_POISONED);
        for (int k = 0; k < 2 && st == RT_OK; k++)
            if (op.v[k] >= 0)
                committed[w->driver][op.v[k]] += op.inc;
    }
    return NULL;
}

static void *stress_driver(void *arg)
{
    unsigned driver = (unsigned)(uintptr_t)arg;
    for (unsigned round = 0; round < STRESS_ROUNDS; round++) {
        struct worker w = {driver, round};
        rt_task *t = rt_spawn(stress_worker, &w);
        NEED(t != NULL);
        rt_status st = rt_join(t, NULL);
        NEED(st == RT_OK || st == RT_PANICKED);
    }
    return NULL;
}

static void stress(void *unused)
{
    (void)unused;
    struct counters zero;
    size_t owned_held;
    rt_task *t[STRESS_DRIVERS];

    memset(&zero, 0, sizeof zero);
    init_fixed(64 * KIB);
    for (int v = 0; v < STRESS_VALUES; v++)
        stress_v[v] = rt_shared_new(owned(v) ? RT_OWNED : RT_COPY, sizeof zero, &zero,
                                    owned(v) ? STRESS_OWNED_BLOCK : 256);
    owned_held = rt_shared_held(stress_v[2]);
    /* hundreds of panic lines: away from the captured stderr */
    need_fd = dup(2);
    NEED(need_fd >= 0 && freopen("/dev/null", "w", stderr) != NULL);

    for (unsigned d = 0; d < STRESS_DRIVERS; d++)
        NEED((t[d] = rt_spawn(stress_driver, (void *)(uintptr_t)d)) != NULL);
    for (unsigned d = 0; d < STRESS_DRIVERS; d++)
        NEED(rt_join(t[d], NULL) == RT_OK);

    NEED(atomic_load(&panics_harmless) > 0 && atomic_load(&panics_poisoning) > 0);
    for (int v = 0; v < STRESS_VALUES; v++) {
        struct counters k;
        uint64_t total = 0;
        NEED(rt_poisoned(stress_v[v]) == atomic_load(&expect_poison[v]));
        if (rt_poisoned(stress_v[v]))
            continue;
        NEED(rt_get(stress_v[v], &k) == RT_OK);
        for (unsigned d = 0; d < STRESS_DRIVERS; d++) {
            NEED(k.by[d] == committed[d][v]);
            total += committed[d][v];
        }
        NEED(k.total == total);
        if (owned(v))
            NEED(rt_shared_held(stress_v[v]) == owned_held);
    }
    NEED(rt_poisoned(stress_v[3]));
    NEED(!rt_poisoned(stress_v[0]) || !rt_poisoned(stress_v[1]) || !rt_poisoned(stress_v[2]));
    for (int v = 0; v < STRESS_VALUES; v++)
        rt_shared_free(stress_v[v]);
}

START_TEST(eight_tasks_with_random_panics_match_the_sequential_model)
{
    RUN_OK(stress, NULL);
}
END_TEST

/* Each test in a test case of its own, so that each result line names it.
** The timeout bounds no figure: the tests take well under a second, also
** under the sanitizers; it ends a scenario that a deliberate fault has
** deadlocked (a lock taken twice, a lock never released) in a minute
** rather than the 300 s of testutil's hang guard. */
/* A value of an open door's block is a block value in every door inside
** that one, also in doors with no block of their own (an rt_access, an
** update of a copy) and in the door of an owned value made later: there
** rt_hand_over gives NULL with EINVAL, rt_send RT_REFUSED and rt_store
** RT_REFUSED, nothing changed (the value stays in its block with its
** bytes, the figures stay), 1, 2 and 3 doors inside the one whose block
** holds it; and in rt_update_all(a owned, b owned), a value of b's own
** block (allocated in an earlier door on b) is refused by a store into b
** as one of a's is. On main and on a task. */
struct outer_block {
    rt_shared *a, *mid[2], *late;
    rt_chan *c;
    void *v;     /* the value of a's block */
    void *freed; /* a chunk of late's block, freed */
    size_t held; /* the task's figure before the refusals */
    int k, max;  /* the door being opened inside a's, and how many mid doors */
    int refused; /* refusals seen */
};

static void refuse_here(struct outer_block *o)
{
    errno = 0;
    NEED(rt_hand_over(o->v) == NULL && errno == EINVAL);
    NEED(rt_send(o->c, o->v) == RT_REFUSED);
    NEED(rt_held() == o->held);
    o->refused += 2;
}

static void in_the_late_door(void *value, void *ctx)
{
    struct outer_block *o = ctx;
    (void)value;
    refuse_here(o);
    NEED(rt_store(o->late, o->v) == RT_REFUSED);
    NEED(rt_held() == o->held);
    o->refused++;
}

static void next_door(struct outer_block *o);

static void in_a_mid_access(const void *value, void *ctx)
{
    (void)value;
    refuse_here(ctx);
    next_door(ctx);
}

static void in_a_mid_update(void *value, void *ctx)
{
    (void)value;
    refuse_here(ctx);
    next_door(ctx);
}

/* Opens mid[k] (an access, then an update of a copy) until max are open,
** then the owned value made last. */
static void next_door(struct outer_block *o)
{
    int k = o->k++;
    if (k == o->max)
        NEED(rt_update(o->late, in_the_late_door, o) == RT_OK);
    else if (k == 0)
        NEED(rt_access(o->mid[0], in_a_mid_access, o) == RT_OK);
    else
        NEED(rt_update(o->mid[1], in_a_mid_update, o) == RT_OK);
}

static void allocates_in_a(void *value, void *ctx)
{
    struct outer_block *o = ctx;
    (void)value;
    o->v = rt_alloc(48);
    memset(o->v, 0x6b, 48);
    o->held = rt_held();
    for (o->max = 0; o->max <= 2; o->max++) {
        o->k = 0;
        next_door(o);
    }
    NEED(((unsigned char *)o->v)[47] == 0x6b);
    rt_free(o->v);
}

/* Any pointer into b's own block is refused: a value of it, inside one,
** b's value itself and inside it, a chunk freed there (docs/budgets.md:
** a block value is any pointer into the block). */
static void stores_b_value_into_b(void *va, void *vb, void *ctx)
{
    struct outer_block *o = ctx;
    (void)va;
    size_t held = rt_held(), late = rt_shared_held(o->late);
    void *const into_b[] = {o->v, (char *)o->v + 8, vb, (char *)vb + 1, o->freed};
    for (size_t i = 0; i < sizeof into_b / sizeof *into_b; i++) {
        NEED(rt_store(o->late, into_b[i]) == RT_REFUSED);
        NEED(rt_held() == held && rt_shared_held(o->late) == late);
    }
    o->refused++;
}

static void allocates_in_late(void *value, void *ctx)
{
    struct outer_block *o = ctx;
    (void)value;
    o->freed = rt_alloc(40);
    o->v = rt_alloc(24); /* late's block; stays there */
    rt_free(o->freed);
}

static void *refuses_outer_block_values(void *unused)
{
    struct outer_block o = {0};
    int64_t zero = 0;
    (void)unused;
    o.a = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    o.mid[0] = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    o.mid[1] = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    o.late = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    o.c = rt_chan_new(1);
    NEED(rt_update(o.a, allocates_in_a, &o) == RT_OK);
    NEED(o.refused == (2 * 0 + 3) + (2 * 1 + 3) + (2 * 2 + 3)); /* mid doors 2, late 3 */
    size_t late_held = rt_shared_held(o.late);
    NEED(rt_update(o.late, allocates_in_late, &o) == RT_OK);
    NEED(rt_update_all(o.a, o.late, stores_b_value_into_b, &o) == RT_OK);
    NEED(o.refused == 15 + 1);
    NEED(rt_shared_held(o.late) > late_held); /* the 24 bytes stayed in late's block */
    NEED(!rt_poisoned(o.a) && !rt_poisoned(o.late));
    rt_chan_close(o.c);
    NEED(rt_recv(o.c) == NULL); /* nothing was sent */
    rt_chan_free(o.c);
    rt_shared_free(o.a);
    rt_shared_free(o.mid[0]);
    rt_shared_free(o.mid[1]);
    rt_shared_free(o.late);
    NEED(rt_held() == 0);
    return NULL;
}

static void outer_block_values_refused(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    refuses_outer_block_values(NULL);
    NEED(run_task(refuses_outer_block_values, NULL) == RT_OK);
}

START_TEST(a_value_of_any_open_doors_block_is_refused_in_every_door_inside_it)
{
    RUN_OK(outer_block_values_refused, NULL);
}
END_TEST

/* What a value stored and then unstored costs is gone with the value:
** after 1 to 17 stores (the list grows at 8 and 16) all unstored again, the
** value freed, or poisoned and rebuilt by a build that stores and unstores
** too, leaves not one malloc'ed byte live (its list of stored values
** included). */
static int stores_then_unstores_n;

static void store_then_unstore(rt_shared *s)
{
    void *v[17];
    for (int i = 0; i < stores_then_unstores_n; i++) {
        v[i] = rt_alloc_outside(8 + (size_t)i);
        NEED(rt_store(s, v[i]) == RT_OK);
    }
    for (int i = 0; i < stores_then_unstores_n; i++)
        rt_free(rt_unstore(s, v[i]));
}

static rt_shared *store_s;

static void stores_and_unstores(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    store_then_unstore(store_s);
}

static void builds_storing_and_unstoring(void *value, void *ctx)
{
    (void)ctx;
    memset(value, 0, 8);
    if (store_s != NULL)
        store_then_unstore(store_s);
}

static void panics_in_it(void *value, void *ctx) { (void)value, (void)ctx; rt_panic("poison"); }
static void *poisons_store_s(void *unused) { (void)unused; rt_update(store_s, panics_in_it, NULL); return NULL; }

static void stored_then_unstored_leaves_nothing(void *unused)
{
    (void)unused;
    init_fixed(256 * KIB); /* the child's stderr is captured: the panics' lines go there */
    int64_t zero = 0;
    void *warm[17]; /* main's table of outside values grown once, for good */
    for (int i = 0; i < 17; i++)
        warm[i] = rt_alloc_outside(8);
    for (int i = 0; i < 17; i++)
        rt_free(warm[i]);
    NEED(run_task(nothing, NULL) == RT_OK); /* and the table of tasks made */
    for (stores_then_unstores_n = 1; stores_then_unstores_n <= 17; stores_then_unstores_n++) {
        long live = allocs_live();
        store_s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 16 * KIB);
        NEED(rt_update(store_s, stores_and_unstores, NULL) == RT_OK);
        rt_shared_free(store_s);
        NEED(allocs_live() == live);

        store_s = NULL;
        rt_shared *sup = rt_shared_supervised(RT_OWNED, 8, builds_storing_and_unstoring, NULL,
                                              16 * KIB);
        store_s = sup;
        NEED(rt_update(sup, stores_and_unstores, NULL) == RT_OK);
        NEED(run_task(poisons_store_s, NULL) == RT_PANICKED);
        unsigned char out[8];
        NEED(rt_get(sup, out) == RT_OK); /* rebuilt, by a build that stores and unstores */
        store_s = NULL;
        rt_shared_free(sup);
        NEED(allocs_live() == live);
    }
}

START_TEST(a_value_that_stored_and_unstored_leaves_nothing_when_it_goes)
{
    RUN_OK(stored_then_unstored_leaves_nothing, NULL);
}
END_TEST

/* A value a store cannot fit goes back to the task (refrt.h), counted as
** before: on main, whose panic exits 101 and frees nothing, an atexit
** handler finds it held and counted, and frees it back to the figure main
** had before it was made; in every door that stores (an update,
** rt_update_all with the value as a and as b, a rebuild's build, whose
** fresh state must not take it with it). */
static void *store_back_value;
static size_t store_back_before, store_back_with;

static void store_back_at_exit(void)
{
    size_t now = rt_held();
    rt_free(store_back_value);
    fprintf(stderr, "at exit: held %s, freed %s\n", now == store_back_with ? "ok" : "wrong",
            rt_held() == store_back_before ? "ok" : "wrong");
}

static void stores_the_big_one(void *value, void *ctx)
{
    (void)value;
    rt_store(*(rt_shared **)ctx, store_back_value);
}

static void stores_the_big_one_in_both(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    rt_store(*(rt_shared **)ctx, store_back_value);
}

/* The value that a rebuild's build stores into, once set. */
static rt_shared *store_back_into;

static void build_storing_the_big_one(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (store_back_into != NULL)
        rt_store(store_back_into, store_back_value);
}

static void panics_there(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("poisoned");
}

static void *poisons_it(void *arg)
{
    rt_update(arg, panics_there, NULL);
    return NULL;
}

/* In an update (arg 0), rt_update_all with the value as a (1) and as b
** (2), and a rebuild's build (3: rt_get of a poisoned supervised value,
** whose fresh block the value does not fit either). */
static void main_stores_what_does_not_fit(void *arg)
{
    int where = (int)(intptr_t)arg;
    int64_t zero = 0;
    init_fixed(64 * KIB);
    rt_shared *s = where == 3 ? rt_shared_supervised(RT_OWNED, sizeof zero,
                                                      build_storing_the_big_one, NULL, KIB)
                              : rt_shared_new(RT_OWNED, sizeof zero, &zero, KIB);
    rt_shared *other = new_list(KIB);
    if (where == 3)
        NEED(run_task(poisons_it, s) == RT_PANICKED && rt_poisoned(s));
    store_back_before = rt_held();
    store_back_value = rt_alloc_outside(4 * KIB);
    store_back_with = rt_held();
    NEED(store_back_with > store_back_before);
    atexit(store_back_at_exit);
    if (where == 0)
        rt_update(s, stores_the_big_one, &s);
    else if (where == 1)
        rt_update_all(s, other, stores_the_big_one_in_both, &s);
    else if (where == 2)
        rt_update_all(other, s, stores_the_big_one_in_both, &s);
    else {
        store_back_into = s;
        rt_get(s, &zero);
    }
    _exit(3); /* the store did not panic */
}

START_TEST(a_value_a_store_cannot_fit_is_mains_again_and_counted_at_its_exit)
{
    static const char *const doors[] = {"an update", "rt_update_all as a",
                                        "rt_update_all as b", "a rebuild's build"};
    for (int where = 0; where < 4; where++) {
        struct death d = run_child(main_stores_what_does_not_fit, (void *)(intptr_t)where);
        ck_assert_msg(d.signal == 0 && d.exit_status == 101 &&
                          strstr(d.err, "at exit: held ok, freed ok\n") != NULL,
                      "in %s: signal %d exit %d: %s", doors[where], d.signal, d.exit_status,
                      d.err);
    }
}
END_TEST

/* ---- the task's figures inside every door ------------------------------ */

/* Inside every door's fn (rt_update and rt_access of either kind,
** rt_update_all over each pair of kinds) and inside a supervised value's
** first build and its rebuild, rt_budget and rt_held answer for the task:
** "the current task's budget: its block's size" and "bytes the current
** task holds now" (the contract), whatever block the door allocates from.
** An allocation and its growth move the figure of the block they come from
** alone (docs/poisoning.md: an update over an RT_OWNED value, rt_update_all
** with one, and an RT_OWNED build use the value's block; every other door,
** the task's); a value of the task's block made before the door grows and
** is freed in the task's block wherever it is called (docs/budgets.md, "The
** door hook"); an outside value made, cloned, sent to the task itself and
** received, handed over, joined from a task spawned in the door, grown,
** received from another task, stored and unstored moves the task's figure
** by exactly its bytes and a value's only while stored in it (D9); and the values the door is open on are not
** poisoned in fn. When the door closes, every figure is the one before it. */
struct fig_where {
    rt_shared *vals[2];   /* the door's values that can be read here */
    rt_shared *in_block;  /* the one whose block rt_alloc uses; NULL: the task's, or unknown */
    rt_shared *store_into; /* an RT_OWNED value writable here, NULL none */
    bool tasks_block;     /* rt_alloc takes from the task's block */
    bool in_fn;           /* fn, not a build: the values are not poisoned */
};

struct fig {
    struct fig_where build, fn;
    size_t budget, held; /* the task's when the door was entered, mine included */
    void *mine;          /* 16 bytes of the task's block, made before the door */
    int probes;
};

#define FIG_CHUNK(n) (((n) + 8 + 15) / 16 * 16)

static void *fig_returns_56(void *unused)
{
    (void)unused;
    void *p = rt_alloc_outside(56);
    memset(p, 0x56, 56);
    return p;
}

static void *fig_sends_72(void *ch)
{
    NEED(rt_send(ch, rt_alloc_outside(72)) == RT_OK);
    return NULL;
}

static size_t fig_of(rt_shared *s)
{
    return s != NULL ? rt_shared_held(s) : 0;
}

static void fig_probe(struct fig *f, const struct fig_where *w)
{
    size_t held = f->held, v[2] = {fig_of(w->vals[0]), fig_of(w->vals[1])};
    size_t moved = w->tasks_block ? FIG_CHUNK(100) : 0;

    NEED(rt_budget() == f->budget);
    NEED(rt_held() == held);
    for (int i = 0; w->in_fn && i < 2; i++)
        NEED(w->vals[i] == NULL || !rt_poisoned(w->vals[i]));
    char *p = rt_alloc(100);
    memset(p, 1, 100);
    NEED(rt_held() == held + moved);
    for (int i = 0; i < 2; i++)
        NEED(fig_of(w->vals[i]) == v[i] + (w->vals[i] != NULL && w->vals[i] == w->in_block &&
                                               !w->tasks_block
                                               ? FIG_CHUNK(100) : 0));
    p = rt_realloc(p, 200); /* grows where it is */
    NEED(p[99] == 1);
    moved = w->tasks_block ? FIG_CHUNK(200) : 0;
    NEED(rt_held() == held + moved);
    for (int i = 0; i < 2; i++)
        NEED(fig_of(w->vals[i]) == v[i] + (w->vals[i] != NULL && w->vals[i] == w->in_block &&
                                               !w->tasks_block
                                               ? FIG_CHUNK(200) : 0));
    size_t base = held + moved, vb[2] = {fig_of(w->vals[0]), fig_of(w->vals[1])};
    if (f->mine != NULL) { /* the task's block value: the task's, in any door */
        f->mine = rt_realloc(f->mine, 300);
        NEED(rt_held() == base - FIG_CHUNK(16) + FIG_CHUNK(300));
        rt_free(f->mine);
        f->mine = NULL;
        f->held -= FIG_CHUNK(16);
        held -= FIG_CHUNK(16);
        base -= FIG_CHUNK(16);
        NEED(rt_held() == base);
    }
    char *o = rt_alloc_outside(40);
    NEED(rt_held() == base + 40);
    char *c = rt_clone_outside(o, 24);
    NEED(rt_held() == base + 64);
    rt_chan *ch = rt_chan_new(1);
    NEED(rt_send(ch, c) == RT_OK && rt_held() == base + 64); /* in flight: still the task's */
    NEED(rt_recv(ch) == c && rt_held() == base + 64);       /* its own: counted once */
    rt_chan_free(ch);
    NEED(rt_hand_over(c) == c && rt_held() == base + 40);
    free(c);
    if (w->store_into != NULL) {
        size_t s0 = rt_shared_held(w->store_into);
        NEED(rt_store(w->store_into, o) == RT_OK);
        NEED(rt_held() == base && rt_shared_held(w->store_into) == s0 + 40);
        NEED(rt_unstore(w->store_into, o) == o);
        NEED(rt_held() == base + 40 && rt_shared_held(w->store_into) == s0);
    }
    void *r = NULL;
    rt_task *t = rt_spawn(fig_returns_56, NULL);
    NEED(t != NULL && rt_join(t, &r) == RT_OK && r != NULL);
    NEED(rt_held() == base + 96); /* the joiner is the task, not the value */
    rt_free(r);
    o = rt_realloc(o, 64); /* an outside value grows outside, the task's */
    NEED(rt_held() == base + 64);
    ch = rt_chan_new(1); /* a value another task sent, received here */
    t = rt_spawn(fig_sends_72, ch);
    NEED(t != NULL && rt_join(t, NULL) == RT_OK && rt_held() == base + 64);
    r = rt_recv(ch);
    NEED(r != NULL && rt_held() == base + 64 + 72); /* the receiver is the task */
    rt_chan_free(ch);
    rt_free(r);
    rt_free(o);
    NEED(rt_held() == base);
    for (int i = 0; i < 2; i++)
        NEED(fig_of(w->vals[i]) == vb[i]);
    rt_free(p);
    NEED(rt_held() == held);
    for (int i = 0; i < 2; i++)
        NEED(fig_of(w->vals[i]) == v[i]);
    NEED(rt_budget() == f->budget);
    f->probes++;
}

static void fig_build(void *value, void *ctx)
{
    (void)value;
    fig_probe(ctx, &((struct fig *)ctx)->build);
}

static void fig_update(void *value, void *ctx)
{
    (void)value;
    fig_probe(ctx, &((struct fig *)ctx)->fn);
}

static void fig_access(const void *value, void *ctx)
{
    (void)value;
    fig_probe(ctx, &((struct fig *)ctx)->fn);
}

static void fig_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    fig_probe(ctx, &((struct fig *)ctx)->fn);
}

static void fig_panics_in_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    rt_panic("poison the pair");
}

static void *fig_poison(void *arg)
{
    rt_shared **sp = arg;
    rt_update_all(sp[0], sp[1], fig_panics_in_pair, NULL);
    return NULL;
}

/* Poisons s (either kind) by a panic in an rt_update_all beside an owned
** value made for it. */
static void fig_poisons(rt_shared *s)
{
    int64_t zero = 0;
    rt_shared *o = rt_shared_new(RT_OWNED, sizeof zero, &zero, 1 * KIB);
    rt_shared *pair[2] = {s, o};
    NEED(run_task(fig_poison, pair) == RT_PANICKED && rt_poisoned(s) && rt_poisoned(o));
    rt_shared_free(o);
}

static const struct fig_where fig_nowhere = {{NULL, NULL}, NULL, NULL, true, true};

/* Enters the door, its figures before it set, and checks them after. */
static void fig_begin(struct fig *f)
{
    f->mine = rt_alloc(16);
    f->budget = rt_budget();
    f->held = rt_held();
    f->probes = 0;
}

static void fig_end(struct fig *f, size_t held_before, int probes)
{
    NEED(f->probes == probes && f->mine == NULL);
    NEED(rt_held() == held_before && rt_budget() == f->budget);
}

static void figures_in_every_door(void)
{
    struct fig f;
    int64_t zero = 0;
    size_t held0 = rt_held();

    for (int kc = 0; kc < 4; kc++) { /* the kinds of a and b: CC, OC, CO, OO */
        rt_kind ka = kc & 1 ? RT_OWNED : RT_COPY, kb = kc & 2 ? RT_OWNED : RT_COPY;
        rt_shared *a = rt_shared_new(ka, sizeof zero, &zero, 1 * KIB);
        rt_shared *b = rt_shared_new(kb, sizeof zero, &zero, 1 * KIB);
        size_t fa = rt_shared_held(a), fb = rt_shared_held(b);
        /* rt_update and rt_access of a */
        f.fn = (struct fig_where){{a, NULL}, ka == RT_OWNED ? a : NULL,
                                  ka == RT_OWNED ? a : NULL, ka != RT_OWNED, true};
        fig_begin(&f);
        NEED(rt_update(a, fig_update, &f) == RT_OK);
        fig_end(&f, held0, 1);
        f.fn = (struct fig_where){{a, NULL}, NULL, NULL, true, true};
        fig_begin(&f);
        NEED(rt_access(a, fig_access, &f) == RT_OK);
        fig_end(&f, held0, 1);
        /* rt_update_all, in both argument orders: the first argument's block
        ** if it is owned, else the second's; either owned value takes a
        ** store (the one whose block is not used is the store's target
        ** when there is one, else the other) */
        for (int swap = 0; swap < 2; swap++) {
            rt_shared *x = swap ? b : a, *y = swap ? a : b;
            rt_kind kx = swap ? kb : ka, ky = swap ? ka : kb;
            rt_shared *blk = kx == RT_OWNED ? x : ky == RT_OWNED ? y : NULL;
            rt_shared *into = ky == RT_OWNED ? y : kx == RT_OWNED ? x : NULL;
            f.fn = (struct fig_where){{x, y}, blk, into, blk == NULL, true};
            fig_begin(&f);
            NEED(rt_update_all(x, y, fig_pair, &f) == RT_OK);
            fig_end(&f, held0, 1);
        }
        NEED(rt_shared_held(a) == fa && rt_shared_held(b) == fb);
        NEED(!rt_poisoned(a) && !rt_poisoned(b));
        rt_shared_free(a);
        rt_shared_free(b);
    }

    for (int k = 0; k < 2; k++) { /* supervised values of either kind */
        rt_kind kind = k ? RT_OWNED : RT_COPY;
        /* the first build: the value is nobody's yet, its figure unread */
        f.build = fig_nowhere;
        f.build.tasks_block = kind == RT_COPY;
        f.build.in_fn = false;
        fig_begin(&f);
        rt_shared *s = rt_shared_supervised(kind, sizeof zero, fig_build, &f, 1 * KIB);
        fig_end(&f, held0, 1);
        size_t fs = rt_shared_held(s);
        /* a rebuild in each door, then its fn */
        for (int door = 0; door < 4; door++) {
            int64_t other = 0;
            rt_shared *p = door >= 2 ? rt_shared_new(RT_COPY, sizeof other, &other, 1 * KIB)
                                     : NULL;
            fig_poisons(s);
            f.build = (struct fig_where){{s, NULL}, kind == RT_OWNED ? s : NULL,
                                         kind == RT_OWNED ? s : NULL, kind == RT_COPY, false};
            fig_begin(&f);
            switch (door) {
            case 0: /* rt_update: in place if owned */
                f.fn = (struct fig_where){{s, NULL}, kind == RT_OWNED ? s : NULL,
                                          kind == RT_OWNED ? s : NULL, kind == RT_COPY, true};
                NEED(rt_update(s, fig_update, &f) == RT_OK);
                break;
            case 1: /* rt_access: the task's block */
                f.fn = (struct fig_where){{s, NULL}, NULL, NULL, true, true};
                NEED(rt_access(s, fig_access, &f) == RT_OK);
                break;
            case 2: /* rt_update_all(s, copy): s's block if owned */
                f.fn = (struct fig_where){{s, p}, kind == RT_OWNED ? s : NULL,
                                          kind == RT_OWNED ? s : NULL, kind == RT_COPY, true};
                NEED(rt_update_all(s, p, fig_pair, &f) == RT_OK);
                break;
            default: /* rt_update_all(copy, s): s's block if owned */
                f.fn = (struct fig_where){{p, s}, kind == RT_OWNED ? s : NULL,
                                          kind == RT_OWNED ? s : NULL, kind == RT_COPY, true};
                NEED(rt_update_all(p, s, fig_pair, &f) == RT_OK);
                break;
            }
            fig_end(&f, held0, 2); /* the build's probe, then fn's */
            NEED(!rt_poisoned(s) && rt_shared_held(s) == fs);
            if (p != NULL) {
                NEED(!rt_poisoned(p));
                rt_shared_free(p);
            }
        }
        rt_shared_free(s);
    }
    NEED(rt_held() == held0);
}

static void *figures_in_every_door_on_a_task(void *unused)
{
    (void)unused;
    figures_in_every_door();
    return NULL;
}

static void figures_in_every_door_on_main_and_a_task(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK); /* what a first task makes, made */
    rt_free(rt_alloc_outside(8));           /* and main's table of outside values */
    long allocations = allocs_live();
    figures_in_every_door();
    NEED(run_task(figures_in_every_door_on_a_task, NULL) == RT_OK);
    NEED(rt_held() == 0);
    NEED(allocs_live() == allocations);
}

START_TEST(the_tasks_budget_and_held_answer_for_the_task_in_every_door_and_build)
{
    RUN_OK(figures_in_every_door_on_main_and_a_task, NULL);
}
END_TEST

/* ---- poisoning at the edge of a value's block --------------------------- */

/* D6 and D9 at the boundary: inside an update in place (rt_update of an
** RT_OWNED value, rt_update_all with one) and in a rebuild's build, an
** allocation whose chunk is exactly the room the value's block has left,
** and a stored value of exactly that room, fit: the door returns RT_OK,
** the block is exactly full (rt_shared_held is block_bytes) and nothing is
** poisoned. One byte more does not fit: the task panics in the door and
** the value is poisoned (both values of an rt_update_all; a build's value
** stays poisoned), its figure what the door left, the refused store's value
** freed with the task. On the task's side, an outside value of exactly the
** task's room made in an RT_COPY update fits and poisons nothing; one byte
** more panics, and the copy keeps its old value unpoisoned (D11); an
** rt_unstore of exactly the task's room fits, one byte more panics with the
** value still stored. A chunk is its bytes and an 8-byte header in 16-byte
** granules (docs/budgets.md, "The block"), so rt_alloc(room - 8) takes
** exactly room bytes when room is a multiple of 16, and rt_alloc(room - 7)
** needs 16 more. */
#define EDGE_BLOCK (1 * KIB)

struct edge_value {
    void *p, *q;
};

enum edge_how { EDGE_ALLOC, EDGE_STORE, EDGE_FREE, EDGE_UNSTORE, EDGE_OUTSIDE };

struct edge {
    rt_shared *s, *other; /* other: the second value of an rt_update_all, or NULL */
    rt_shared *full;      /* the value whose block is filled */
    enum edge_how how;
    size_t over;          /* 0: exactly the room; 1: a byte more (7 for an allocation) */
    void *stored;         /* what a store stored, for the next door's unstore */
    int builds;
    bool build_stores;
};

/* The room left in s's block, read inside a door on it. */
static size_t edge_room(rt_shared *s)
{
    return EDGE_BLOCK - rt_shared_held(s);
}

static void edge_fill(struct edge *e, rt_shared *s, struct edge_value *v)
{
    size_t room = edge_room(s), task_held = rt_held();
    NEED(e->how >= EDGE_FREE || (room % 16 == 0 && room >= 64));
    switch (e->how) {
    case EDGE_ALLOC:
        v->p = rt_alloc(room - 8 + e->over * 7);
        NEED(e->over == 0 && rt_shared_held(s) == EDGE_BLOCK && rt_held() == task_held);
        break;
    case EDGE_STORE:
        e->stored = rt_alloc_outside(room + e->over);
        NEED(rt_held() == task_held + room + e->over);
        NEED(rt_store(s, e->stored) == RT_OK);
        NEED(e->over == 0 && rt_shared_held(s) == EDGE_BLOCK && rt_held() == task_held);
        v->q = e->stored;
        break;
    case EDGE_FREE:
        rt_free(v->p);
        v->p = NULL;
        break;
    case EDGE_UNSTORE: {
        size_t task_room = rt_budget() - rt_held(), bytes = EDGE_BLOCK - 16 - 16;
        /* the task made to have exactly the stored value's room, or a byte less */
        void *fill = rt_alloc_outside(task_room - bytes + e->over);
        NEED(rt_held() == rt_budget() - bytes + e->over);
        NEED(rt_unstore(s, v->q) == v->q);
        NEED(e->over == 0 && rt_held() == rt_budget());
        rt_free(v->q);
        rt_free(fill);
        v->q = NULL;
        e->stored = NULL;
        break;
    }
    case EDGE_OUTSIDE: {
        size_t task_room = rt_budget() - rt_held();
        void *p = rt_alloc_outside(task_room + e->over);
        NEED(e->over == 0 && rt_held() == rt_budget());
        rt_free(p);
        *(int64_t *)v = -1; /* the copy changed: kept only if the door returns */
        break;
    }
    }
}

static void edge_update(void *value, void *ctx)
{
    struct edge *e = ctx;
    NEED(!rt_poisoned(e->s));
    edge_fill(e, e->full, value);
}

static void edge_pair(void *va, void *vb, void *ctx)
{
    struct edge *e = ctx;
    edge_fill(e, e->full, e->full == e->s ? va : vb);
}

static void *edge_update_on_a_task(void *arg)
{
    struct edge *e = arg;
    if (e->other != NULL)
        rt_update_all(e->s, e->other, edge_pair, e);
    else
        rt_update(e->s, edge_update, e);
    return NULL;
}

static void edge_build(void *value, void *ctx)
{
    struct edge *e = ctx;
    e->builds++;
    if (e->build_stores)
        edge_fill(e, e->full, value);
}

static void edge_nothing(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void poisoning_at_the_edge(void *unused)
{
    struct edge_value zero = {NULL, NULL};
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();

    /* rt_update in place: an allocation and a store of exactly the room */
    for (int how = EDGE_ALLOC; how <= EDGE_STORE; how++) {
        rt_shared *s = rt_shared_new(RT_OWNED, sizeof zero, &zero, EDGE_BLOCK);
        size_t chunk = rt_shared_held(s);
        struct edge e = {s, NULL, s, how, 0, NULL, 0, false};
        NEED(chunk == 32);
        NEED(rt_update(s, edge_update, &e) == RT_OK);
        NEED(!rt_poisoned(s) && rt_shared_held(s) == EDGE_BLOCK && rt_held() == 0);
        if (how == EDGE_STORE) { /* and back out: exactly the task's room, then one byte less */
            e.how = EDGE_UNSTORE;
            NEED(rt_update(s, edge_update, &e) == RT_OK);
            NEED(!rt_poisoned(s) && rt_shared_held(s) == chunk && rt_held() == 0);
        } else {
            e.how = EDGE_FREE;
            NEED(rt_update(s, edge_update, &e) == RT_OK);
            NEED(!rt_poisoned(s) && rt_shared_held(s) == chunk);
        }
        /* one byte more, on a task: the value is poisoned, its figure as left */
        e.how = how;
        e.over = 1;
        NEED(run_task(edge_update_on_a_task, &e) == RT_PANICKED);
        NEED(rt_poisoned(s) && rt_shared_held(s) == chunk && rt_held() == 0);
        rt_shared_free(s);
    }

    /* an unstore a byte past the task's room: the value stays stored */
    {
        rt_shared *s = rt_shared_new(RT_OWNED, sizeof zero, &zero, EDGE_BLOCK);
        struct edge e = {s, NULL, s, EDGE_STORE, 0, NULL, 0, false};
        NEED(rt_update(s, edge_update, &e) == RT_OK && rt_shared_held(s) == EDGE_BLOCK);
        e.how = EDGE_UNSTORE;
        e.over = 1;
        NEED(run_task(edge_update_on_a_task, &e) == RT_PANICKED);
        NEED(rt_poisoned(s) && rt_shared_held(s) == EDGE_BLOCK && rt_held() == 0);
        rt_shared_free(s); /* with its stored value */
    }

    /* rt_update_all: a's block for the allocation, b's for the store */
    for (int how = EDGE_ALLOC; how <= EDGE_STORE; how++)
        for (int kind_a = 0; kind_a < 2; kind_a++) {
            rt_kind ka = kind_a ? RT_OWNED : RT_COPY;
            rt_shared *a = rt_shared_new(ka, sizeof zero, &zero, EDGE_BLOCK);
            rt_shared *b = rt_shared_new(RT_OWNED, sizeof zero, &zero, EDGE_BLOCK);
            /* an allocation comes from a's block if a is owned, else b's */
            rt_shared *full = how == EDGE_ALLOC && ka == RT_OWNED ? a : b;
            struct edge e = {a, b, full, how, 0, NULL, 0, false};
            NEED(run_task(edge_update_on_a_task, &e) == RT_OK);
            NEED(!rt_poisoned(a) && !rt_poisoned(b));
            NEED(rt_shared_held(full) == EDGE_BLOCK);
            NEED(rt_shared_held(full == a ? b : a) == 32);
            rt_shared_free(a);
            rt_shared_free(b);
            a = rt_shared_new(ka, sizeof zero, &zero, EDGE_BLOCK);
            b = rt_shared_new(RT_OWNED, sizeof zero, &zero, EDGE_BLOCK);
            full = how == EDGE_ALLOC && ka == RT_OWNED ? a : b;
            e = (struct edge){a, b, full, how, 1, NULL, 0, false};
            NEED(run_task(edge_update_on_a_task, &e) == RT_PANICKED);
            NEED(rt_poisoned(a) && rt_poisoned(b)); /* in place: both */
            NEED(rt_shared_held(a) == 32 && rt_shared_held(b) == 32);
            rt_shared_free(a);
            rt_shared_free(b);
        }

    /* a rebuild's build allocating, and storing, exactly the fresh block's room */
    for (int how = EDGE_ALLOC; how <= EDGE_STORE; how++) {
        struct edge e = {NULL, NULL, NULL, how, 0, NULL, 0, false};
        rt_shared *s = rt_shared_supervised(RT_OWNED, sizeof zero, edge_build, &e, EDGE_BLOCK);
        e.s = e.full = s;
        NEED(run_task(poison_by_a_panic_in_place, s) == RT_PANICKED && rt_poisoned(s));
        e.build_stores = true;
        NEED(rt_update(s, edge_nothing, NULL) == RT_OK && e.builds == 2);
        NEED(!rt_poisoned(s) && rt_shared_held(s) == EDGE_BLOCK && rt_held() == 0);
        NEED(run_task(poison_by_a_panic_in_place, s) == RT_PANICKED && rt_poisoned(s));
        e.over = 1; /* a byte more: the build panics, the value stays poisoned */
        NEED(run_task(edge_update_on_a_task, &e) == RT_PANICKED && e.builds == 3);
        NEED(rt_poisoned(s) && rt_shared_held(s) == EDGE_BLOCK); /* the old state's */
        e.over = 0;
        NEED(rt_update(s, edge_nothing, NULL) == RT_OK && e.builds == 4);
        NEED(!rt_poisoned(s) && rt_shared_held(s) == EDGE_BLOCK);
        rt_shared_free(s);
    }

    /* an RT_COPY update: the task's own room */
    {
        int64_t five = 5, out = 0;
        rt_shared *s = rt_shared_new(RT_COPY, sizeof five, &five, EDGE_BLOCK);
        struct edge e = {s, NULL, s, EDGE_OUTSIDE, 0, NULL, 0, false};
        NEED(rt_update(s, edge_update, &e) == RT_OK && rt_held() == 0);
        NEED(!rt_poisoned(s) && rt_get(s, &out) == RT_OK && out == -1);
        NEED(run_task(edge_update_on_a_task, &e) == RT_OK);
        out = 5;
        NEED(rt_update(s, add_ctx, &out) == RT_OK); /* -1 + 5 */
        e.over = 1;
        NEED(run_task(edge_update_on_a_task, &e) == RT_PANICKED);
        NEED(!rt_poisoned(s) && rt_get(s, &out) == RT_OK && out == 4);
        rt_shared_free(s);
    }
    NEED(rt_held() == 0);
    NEED(allocs_live() == allocations);
}

START_TEST(a_value_is_poisoned_by_what_does_not_fit_its_block_never_by_what_just_fits)
{
    static const char *const said[] = {
        "panicked: an allocation of 991 bytes does not fit its budget\n",
        "panicked: a stored value of 993 bytes does not fit shared value #",
        "panicked: an unstored value of 992 bytes does not fit its budget\n",
        "panicked: an outside value of 65537 bytes does not fit its budget\n"};
    struct death d = run_ok_death(poisoning_at_the_edge, NULL);
    for (size_t i = 0; i < sizeof said / sizeof *said; i++)
        ck_assert_msg(strstr(d.err, said[i]) != NULL, "stderr lacks \"%s\": %s", said[i], d.err);
}
END_TEST

/* ---- racing stores ------------------------------------------------------ */

/* Four tasks race on one RT_OWNED value, two by rt_update and two by
** rt_update_all beside an RT_COPY counter, in opposite argument orders.
** Each round a task stores an outside value of its own size and allocates
** 24 bytes in the value's block (the door's block: the owned value's,
** whether it is a or b); every odd round it also unstores and frees what it
** stored in the round before and frees that round's allocation. Inside
** every door the value's figure is exactly its chunk, the bytes stored in
** it and the chunks allocated in it now (D5, D9: read under the lock the
** door holds), and the task's own figure moves by exactly each stored
** value's bytes; after the race the value holds exactly what the last
** rounds left, the counter exactly the rt_update_all rounds, nothing is
** poisoned, every task ended holding nothing, and freeing the value leaves
** no allocation. Judged under TSan too. */
#define RACE_TASKS 4
#define RACE_ROUNDS 40

struct race_value {
    void *stored[RACE_TASKS * RACE_ROUNDS], *allocated[RACE_TASKS * RACE_ROUNDS];
    size_t bytes[RACE_TASKS * RACE_ROUNDS];
    size_t nstored, nallocated;
};

struct race {
    rt_shared *s, *counter;
    size_t chunk; /* s's own chunk */
    pthread_barrier_t start;
};

struct racer {
    struct race *race;
    unsigned k, r;
    void *last_stored, *last_allocated;
    size_t held; /* the task's figure outside its doors */
};

static size_t race_size(unsigned k, unsigned r)
{
    return 1 + 100 * k + r;
}

static size_t race_figure(const struct race *race, const struct race_value *v)
{
    size_t f = race->chunk + v->nallocated * FIG_CHUNK(24);
    for (size_t i = 0; i < v->nstored; i++)
        f += v->bytes[i];
    return f;
}

static void race_take(void **list, size_t *bytes, size_t *n, void *p)
{
    size_t i = 0;
    while (i < *n && list[i] != p)
        i++;
    NEED(i < *n);
    (*n)--;
    list[i] = list[*n];
    if (bytes != NULL)
        bytes[i] = bytes[*n];
}

static void race_round(struct racer *me, struct race_value *v)
{
    struct race *race = me->race;
    size_t size = race_size(me->k, me->r);

    NEED(rt_budget() == 64 * KIB && rt_held() == me->held);
    NEED(!rt_poisoned(race->s));
    NEED(rt_shared_held(race->s) == race_figure(race, v));
    void *o = rt_alloc_outside(size);
    NEED(rt_held() == me->held + size);
    NEED(rt_store(race->s, o) == RT_OK && rt_held() == me->held);
    v->stored[v->nstored] = o;
    v->bytes[v->nstored++] = size;
    v->allocated[v->nallocated++] = rt_alloc(24);
    NEED(rt_held() == me->held && rt_shared_held(race->s) == race_figure(race, v));
    if (me->r % 2 == 1) {
        race_take(v->stored, v->bytes, &v->nstored, me->last_stored);
        NEED(rt_unstore(race->s, me->last_stored) == me->last_stored);
        NEED(rt_held() == me->held + race_size(me->k, me->r - 1));
        rt_free(me->last_stored);
        race_take(v->allocated, NULL, &v->nallocated, me->last_allocated);
        rt_free(me->last_allocated);
        NEED(rt_held() == me->held && rt_shared_held(race->s) == race_figure(race, v));
    }
    me->last_stored = o;
    me->last_allocated = v->allocated[v->nallocated - 1];
}

static void race_update(void *value, void *ctx)
{
    race_round(ctx, value);
}

static void race_pair(void *va, void *vb, void *ctx)
{
    struct racer *me = ctx;
    bool s_is_a = me->k == 1;
    *(int64_t *)(s_is_a ? vb : va) += 1;
    race_round(me, s_is_a ? va : vb);
}

static void *racer(void *arg)
{
    struct racer *me = arg;
    struct race *race = me->race;
    me->held = rt_held();
    NEED(me->held == 0);
    int w = pthread_barrier_wait(&race->start);
    NEED(w == 0 || w == PTHREAD_BARRIER_SERIAL_THREAD);
    for (me->r = 0; me->r < RACE_ROUNDS; me->r++) {
        rt_status st = me->k == 0 || me->k == 2 ? rt_update(race->s, race_update, me)
                     : me->k == 1 ? rt_update_all(race->s, race->counter, race_pair, me)
                                  : rt_update_all(race->counter, race->s, race_pair, me);
        NEED(st == RT_OK && rt_held() == me->held);
    }
    return NULL;
}

static void tasks_racing_on_one_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    long allocations = allocs_live();
    static struct race_value empty; /* zeroed */
    int64_t zero = 0, count = -1;
    struct race race;
    race.s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 64 * KIB);
    race.counter = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
    race.chunk = rt_shared_held(race.s);
    NEED(race.chunk == FIG_CHUNK(sizeof empty));
    NEED(pthread_barrier_init(&race.start, NULL, RACE_TASKS) == 0);
    struct racer rs[RACE_TASKS];
    rt_task *t[RACE_TASKS];
    for (unsigned k = 0; k < RACE_TASKS; k++) {
        rs[k] = (struct racer){&race, k, 0, NULL, NULL, 0};
        NEED((t[k] = rt_spawn(racer, &rs[k])) != NULL);
    }
    for (unsigned k = 0; k < RACE_TASKS; k++)
        NEED(rt_join(t[k], NULL) == RT_OK);
    pthread_barrier_destroy(&race.start);
    /* kept: each task's odd rounds' stored values and allocations */
    size_t expected = race.chunk;
    for (unsigned k = 0; k < RACE_TASKS; k++)
        for (unsigned r = 1; r < RACE_ROUNDS; r += 2)
            expected += race_size(k, r) + FIG_CHUNK(24);
    NEED(!rt_poisoned(race.s) && !rt_poisoned(race.counter));
    NEED(rt_shared_held(race.s) == expected);
    NEED(rt_get(race.counter, &count) == RT_OK && count == 2 * RACE_ROUNDS);
    NEED(rt_held() == 0);
    rt_shared_free(race.s);
    rt_shared_free(race.counter);
    NEED(allocs_live() == allocations);
}

START_TEST(tasks_racing_to_store_into_one_value_leave_its_figures_exact)
{
    RUN_OK(tasks_racing_on_one_value, NULL);
}
END_TEST

/* ---- racing doors on a poisoned supervised value ------------------------ */

/* "Once poisoned, the next door rebuilds it in a fresh block and then
** runs" (the contract): eight tasks started together open every kind of
** door on one poisoned supervised value at once (two rt_update, two
** rt_access, two rt_get, two rt_update_all beside a copy, one with the value
** as a and one as b). Exactly one of them rebuilds it, whichever gets in
** first: build runs once, every door returns RT_OK, each fn runs once on
** the rebuilt value, and the value ends holding the build's figure and the
** four updates' change, not poisoned; the poisoned state's stored value and
** allocation are freed with it. Either kind; judged under TSan too. */
#define REBUILD_RACERS 8

struct rebuild_value {
    int64_t n;
    void *kept; /* the build's allocation in the fresh block (RT_OWNED) */
};

struct rebuild_race {
    rt_shared *s, *p;
    rt_kind kind;
    int builds; /* written by build, under s's lock */
    pthread_barrier_t start;
};

struct rebuild_racer {
    struct rebuild_race *race;
    int door;
    int64_t seen;
};

static void rebuild_race_build(void *value, void *ctx)
{
    struct rebuild_race *race = ctx;
    struct rebuild_value *v = value;
    NEED(v->n == 0 && v->kept == NULL);
    race->builds++;
    v->n = 1000;
    if (race->kind == RT_OWNED)
        v->kept = rt_alloc(40);
}

static void rebuild_race_add(void *value, void *ctx)
{
    struct rebuild_racer *me = ctx;
    struct rebuild_value *v = value;
    NEED(v->n >= 1000 && v->n < 1000 + REBUILD_RACERS);
    me->seen = v->n++;
}

static void rebuild_race_read(const void *value, void *ctx)
{
    struct rebuild_racer *me = ctx;
    me->seen = ((const struct rebuild_value *)value)->n;
}

static void rebuild_race_pair(void *va, void *vb, void *ctx)
{
    struct rebuild_racer *me = ctx;
    rebuild_race_add(me->door == 6 ? va : vb, ctx);
    *(int64_t *)(me->door == 6 ? vb : va) += 1;
}

static void *rebuild_racer(void *arg)
{
    struct rebuild_racer *me = arg;
    struct rebuild_race *race = me->race;
    struct rebuild_value out = {-1, NULL};
    rt_status st = RT_CLOSED;
    int w = pthread_barrier_wait(&race->start);
    NEED(w == 0 || w == PTHREAD_BARRIER_SERIAL_THREAD);
    switch (me->door) {
    case 0: case 1: st = rt_update(race->s, rebuild_race_add, me); break;
    case 2: case 3: st = rt_access(race->s, rebuild_race_read, me); break;
    case 4: case 5:
        st = rt_get(race->s, &out);
        me->seen = out.n;
        break;
    case 6: st = rt_update_all(race->s, race->p, rebuild_race_pair, me); break;
    default: st = rt_update_all(race->p, race->s, rebuild_race_pair, me); break;
    }
    NEED(st == RT_OK);
    NEED(me->seen >= 1000 && me->seen < 1000 + REBUILD_RACERS); /* the rebuilt value */
    NEED(rt_held() == 0);
    return NULL;
}

static void poison_in_place_storing(void *value, void *ctx)
{
    struct rebuild_value *v = value;
    (void)ctx;
    v->n = -5;
    void *o = rt_alloc_outside(300);
    NEED(rt_store(ctx, o) == RT_OK);
    rt_alloc(200);
    rt_panic("poison it, half changed");
}

static void *poison_storing(void *s)
{
    rt_update(s, poison_in_place_storing, s);
    return NULL;
}

static void racing_doors_on_a_poisoned_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    long allocations = allocs_live();
    for (int k = 0; k < 2; k++) {
        struct rebuild_race race;
        int64_t zero = 0, partner = -1;
        race.kind = k ? RT_OWNED : RT_COPY;
        race.builds = 0;
        race.p = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
        race.s = rt_shared_supervised(race.kind, sizeof(struct rebuild_value),
                                      rebuild_race_build, &race, 1 * KIB);
        size_t built = rt_shared_held(race.s);
        NEED(race.builds == 1);
        if (race.kind == RT_OWNED) {
            NEED(built == FIG_CHUNK(sizeof(struct rebuild_value)) + FIG_CHUNK(40));
            NEED(run_task(poison_storing, race.s) == RT_PANICKED);
            NEED(rt_shared_held(race.s) == built + 300 + FIG_CHUNK(200));
        } else {
            NEED(built == FIG_CHUNK(sizeof(struct rebuild_value)));
            fig_poisons(race.s);
        }
        NEED(rt_poisoned(race.s) && race.builds == 1);
        NEED(pthread_barrier_init(&race.start, NULL, REBUILD_RACERS) == 0);
        struct rebuild_racer rs[REBUILD_RACERS];
        rt_task *t[REBUILD_RACERS];
        for (int i = 0; i < REBUILD_RACERS; i++) {
            rs[i] = (struct rebuild_racer){&race, i, -1};
            NEED((t[i] = rt_spawn(rebuild_racer, &rs[i])) != NULL);
        }
        for (int i = 0; i < REBUILD_RACERS; i++)
            NEED(rt_join(t[i], NULL) == RT_OK);
        pthread_barrier_destroy(&race.start);
        NEED(race.builds == 2); /* one rebuild, whoever came first */
        NEED(!rt_poisoned(race.s) && !rt_poisoned(race.p));
        NEED(rt_shared_held(race.s) == built); /* the poisoned state's bytes went */
        struct rebuild_value v = {-1, NULL};
        NEED(rt_get(race.s, &v) == RT_OK && v.n == 1004);
        NEED(rt_get(race.p, &partner) == RT_OK && partner == 2);
        /* the four updates each saw a different count: 1000 to 1003 */
        unsigned seen = 0;
        for (int i = 0; i < REBUILD_RACERS; i++)
            if (i < 2 || i >= 6)
                seen |= 1u << (rs[i].seen - 1000);
        NEED(seen == 0xf);
        rt_shared_free(race.s);
        rt_shared_free(race.p);
    }
    NEED(allocs_live() == allocations);
}

START_TEST(doors_racing_on_a_poisoned_supervised_value_rebuild_it_once)
{
    RUN_OK(racing_doors_on_a_poisoned_value, NULL);
}
END_TEST

/* ---- a panic after every kind of call in a door ------------------------- */

/* A door's fn allocates 100 bytes, makes an outside value of 40 it keeps,
** stores one of 24 into the owned value open there and unstores one of 16
** stored by an earlier door, then panics, in rt_update and rt_access of
** either kind and rt_update_all over each pair of kinds in both argument
** orders, on a task. Poisoned exactly by the rows of D11: an update in
** place poisons its value, rt_update_all with an owned value both, a copy's
** update, an access and rt_update_all over two copies nothing. Each figure
** stays where the door left it, nothing undone (the contract: "a change
** made in an earlier door is not undone"; a store and an unstore are such
** changes, made when they return): the block the door allocated from holds
** the 100 bytes' chunk, the value stored into holds its 24 bytes and no
** longer the 16 unstored. The 16 bytes unstored and the 40 kept are the
** task's, freed with it (D4: a panic frees every outside value the task
** still holds): once the values are freed no allocation is left. */
struct after {
    rt_shared *x, *y; /* the door's values, as passed (y NULL: one value) */
    rt_shared *blk, *into; /* the block it allocates from, the owned value open */
    int door;          /* 0 rt_update, 1 rt_access, 2 rt_update_all */
    void *earlier;     /* 16 bytes stored into `into` by an earlier door */
};

static void after_calls(struct after *a)
{
    size_t held = rt_held();
    NEED(rt_alloc(100) != NULL);
    NEED(rt_held() == held + (a->blk == NULL ? FIG_CHUNK(100) : 0));
    NEED(rt_alloc_outside(40) != NULL);
    if (a->into != NULL) {
        NEED(rt_store(a->into, rt_alloc_outside(24)) == RT_OK);
        NEED(rt_unstore(a->into, a->earlier) == a->earlier);
    }
    rt_panic("after every kind of call");
}

static void after_update(void *value, void *ctx)
{
    (void)value;
    after_calls(ctx);
}

static void after_access(const void *value, void *ctx)
{
    (void)value;
    after_calls(ctx);
}

static void after_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    after_calls(ctx);
}

static void *after_door(void *arg)
{
    struct after *a = arg;
    if (a->door == 0)
        rt_update(a->x, after_update, a);
    else if (a->door == 1)
        rt_access(a->x, after_access, a);
    else
        rt_update_all(a->x, a->y, after_pair, a);
    NEED(!"the door returned");
    return NULL;
}

static void store_earlier(void *value, void *ctx)
{
    (void)value;
    struct after *a = ctx;
    a->earlier = rt_alloc_outside(16);
    NEED(rt_store(a->into, a->earlier) == RT_OK);
}

static void panics_after_every_kind_of_call(void *unused)
{
    int64_t zero = 0;
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();
    for (int kc = 0; kc < 4; kc++)
        for (int door = 0; door < 4; door++) { /* update, access, all(a, b), all(b, a) */
            rt_kind ka = kc & 1 ? RT_OWNED : RT_COPY, kb = kc & 2 ? RT_OWNED : RT_COPY;
            rt_shared *a = rt_shared_new(ka, sizeof zero, &zero, 1 * KIB);
            rt_shared *b = rt_shared_new(kb, sizeof zero, &zero, 1 * KIB);
            struct after at = {a, NULL, NULL, NULL, door < 2 ? door : 2, NULL};
            bool poisons;
            if (door == 0) {
                at.blk = at.into = ka == RT_OWNED ? a : NULL;
                poisons = ka == RT_OWNED;
            } else if (door == 1) {
                poisons = false;
            } else {
                rt_kind kx = door == 2 ? ka : kb, ky = door == 2 ? kb : ka;
                at.x = door == 2 ? a : b;
                at.y = door == 2 ? b : a;
                at.blk = kx == RT_OWNED ? at.x : ky == RT_OWNED ? at.y : NULL;
                at.into = ky == RT_OWNED ? at.y : kx == RT_OWNED ? at.x : NULL;
                poisons = kx == RT_OWNED || ky == RT_OWNED;
            }
            if (at.into != NULL) /* the earlier door's store */
                NEED(rt_update(at.into, store_earlier, &at) == RT_OK);
            size_t fa = rt_shared_held(a), fb = rt_shared_held(b);
            NEED(run_task(after_door, &at) == RT_PANICKED);
            NEED(rt_poisoned(a) == poisons);
            NEED(rt_poisoned(b) == (poisons && door >= 2));
            for (int i = 0; i < 2; i++) {
                rt_shared *v = i ? b : a;
                size_t f = i ? fb : fa;
                if (v == at.blk)
                    f += FIG_CHUNK(100);
                if (v == at.into)
                    f = f + 24 - 16;
                NEED(rt_shared_held(v) == f);
            }
            NEED(rt_held() == 0);
            rt_shared_free(a);
            rt_shared_free(b);
            NEED(allocs_live() == allocations); /* the unstored 16 went with the task */
        }
}

START_TEST(a_panic_after_stores_and_allocations_in_a_door_leaves_each_figure_and_poisons_by_its_row)
{
    run_ok_said(panics_after_every_kind_of_call, "panicked: after every kind of call\n", 16);
}
END_TEST

/* ---- each door fills only the block it allocates from ------------------- */

/* D6 names the block that is full: "a full block panics the task (or
** poisons the value)". A task whose own block is exactly full still
** allocates in an update in place (the value's block: docs/poisoning.md)
** and in a supervised RT_OWNED value's rebuild (its fresh block), and an
** outside value of 0 bytes fits it; the first byte that must come from the
** task's block panics: in an update in place (an outside value) it poisons
** the value, in a copy's update, an access, and a rebuild's build of an
** RT_COPY value (which allocates from the task's block) it poisons nothing
** more (the rebuilt value stays poisoned). The other way round, a value
** whose block is exactly full serves an access's allocation from the task
** and an rt_update_all's from the owned value passed as a; an allocation
** from it (an rt_update_all whose a copies) or a store into it panics, and
** both values of the rt_update_all are poisoned. */
enum full_how { FULL_ALLOC, FULL_ALLOC_1, FULL_OUTSIDE_0, FULL_OUTSIDE_1, FULL_STORE_1 };

struct full {
    rt_shared *s, *other;
    enum full_how how;
    int door; /* 0 rt_update, 1 rt_access, 2 rt_update_all(s, other), 3 (other, s) */
    bool fill_task, build_allocates;
    int builds;
    size_t value_figure; /* the figure of the block the allocation should come from */
    rt_shared *from;     /* that value, NULL: the task's */
};

static void full_calls(struct full *f)
{
    size_t held = rt_held(), vf = f->from != NULL ? rt_shared_held(f->from) : 0;
    void *p;
    switch (f->how) {
    case FULL_ALLOC:
        p = rt_alloc(100);
        NEED(rt_held() == held + (f->from == NULL ? FIG_CHUNK(100) : 0));
        NEED(f->from == NULL || rt_shared_held(f->from) == vf + FIG_CHUNK(100));
        rt_free(p);
        break;
    case FULL_ALLOC_1:
        rt_alloc(1);
        NEED(!"one byte fitted");
        break;
    case FULL_OUTSIDE_0:
        p = rt_alloc_outside(0);
        NEED(rt_held() == held);
        rt_free(p);
        break;
    case FULL_OUTSIDE_1:
        rt_alloc_outside(1);
        NEED(!"one byte fitted");
        break;
    case FULL_STORE_1:
        rt_store(f->s, rt_alloc_outside(1));
        NEED(!"one byte fitted");
        break;
    }
    NEED(rt_held() == held);
}

static void full_update(void *value, void *ctx)
{
    (void)value;
    full_calls(ctx);
}

static void full_access(const void *value, void *ctx)
{
    (void)value;
    full_calls(ctx);
}

static void full_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    full_calls(ctx);
}

static void full_build(void *value, void *ctx)
{
    struct full *f = ctx;
    (void)value;
    f->builds++;
    if (f->build_allocates) {
        size_t held = rt_held();
        NEED(rt_alloc(40) != NULL); /* kept: the value's (owned), or the task's (copy) */
        NEED(rt_held() == held + (f->from == NULL ? FIG_CHUNK(40) : 0));
    }
}

static rt_status full_door(struct full *f)
{
    switch (f->door) {
    case 0: return rt_update(f->s, full_update, f);
    case 1: return rt_access(f->s, full_access, f);
    case 2: return rt_update_all(f->s, f->other, full_pair, f);
    default: return rt_update_all(f->other, f->s, full_pair, f);
    }
}

static void *full_on_a_task(void *arg)
{
    struct full *f = arg;
    void *fill = NULL;
    if (f->fill_task) {
        fill = rt_alloc_outside(rt_budget() - rt_held());
        NEED(rt_held() == rt_budget());
    }
    NEED(full_door(f) == RT_OK);
    NEED(rt_held() == rt_budget() || !f->fill_task);
    rt_free(fill);
    return NULL;
}

/* Fills s's block exactly, in an update of it: its figure is then its block. */
static void full_fill_value(void *value, void *ctx)
{
    (void)value;
    rt_shared *s = ctx;
    NEED(rt_alloc(1 * KIB - rt_shared_held(s) - 8) != NULL);
    NEED(rt_shared_held(s) == 1 * KIB);
}

static void each_door_fills_its_own_block(void *unused)
{
    int64_t zero = 0, out = -1;
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();

    /* the task's block full */
    for (int k = 0; k < 2; k++) {
        rt_kind kind = k ? RT_OWNED : RT_COPY;
        rt_shared *s = rt_shared_new(kind, sizeof zero, &zero, 1 * KIB);
        size_t fs = rt_shared_held(s);
        struct full f = {s, NULL, FULL_ALLOC, 0, true, false, 0, 0,
                         kind == RT_OWNED ? s : NULL};
        for (f.door = 0; f.door < 2; f.door++) {
            f.from = kind == RT_OWNED && f.door == 0 ? s : NULL;
            for (f.how = FULL_ALLOC; f.how <= FULL_OUTSIDE_1; f.how++) {
                /* what comes from the task's block does not fit; the rest does */
                bool panics = f.how == FULL_ALLOC_1 ? f.from == NULL
                            : f.how == FULL_ALLOC ? f.from == NULL
                            : f.how == FULL_OUTSIDE_1;
                if (f.how == FULL_ALLOC_1 && f.from != NULL)
                    continue; /* the value's block has room: it is the next part */
                NEED(run_task(full_on_a_task, &f) == (panics ? RT_PANICKED : RT_OK));
                NEED(rt_poisoned(s) == (panics && kind == RT_OWNED && f.door == 0));
                NEED(rt_shared_held(s) == fs);
                NEED(rt_get(s, &out) == (rt_poisoned(s) ? RT_POISONED : RT_OK));
                if (rt_poisoned(s)) {
                    rt_shared_free(s);
                    s = f.s = rt_shared_new(kind, sizeof zero, &zero, 1 * KIB);
                    if (f.from != NULL)
                        f.from = s;
                }
            }
        }
        rt_shared_free(s);

        /* a rebuild on a full task: an owned build's allocation is the fresh
        ** block's; a copy's is the task's, and panics */
        struct full b = {NULL, NULL, FULL_OUTSIDE_0, 0, true, false, 0, 0, NULL};
        s = rt_shared_supervised(kind, sizeof zero, full_build, &b, 1 * KIB);
        b.s = s;
        b.from = kind == RT_OWNED ? s : NULL;
        fig_poisons(s);
        b.build_allocates = true;
        NEED(run_task(full_on_a_task, &b) == (kind == RT_OWNED ? RT_OK : RT_PANICKED));
        NEED(b.builds == 2 && rt_poisoned(s) == (kind == RT_COPY));
        NEED(rt_shared_held(s) == fs + (kind == RT_OWNED ? FIG_CHUNK(40) : 0));
        rt_shared_free(s);
    }

    /* a value's block full */
    for (int door = 1; door < 4; door++) {
        rt_shared *s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 1 * KIB);
        rt_shared *o = rt_shared_new(door == 2 ? RT_COPY : RT_OWNED, sizeof zero, &zero, 1 * KIB);
        NEED(rt_update(s, full_fill_value, s) == RT_OK && !rt_poisoned(s));
        size_t fo = rt_shared_held(o);
        /* door 1: an access allocates from the task; door 3, rt_update_all(o
        ** owned, s): from o; door 2, rt_update_all(s, o copy): from s, full */
        struct full f = {s, o, FULL_ALLOC, door, false, false, 0, 0, door == 3 ? o : NULL};
        if (door == 2)
            f.door = 3; /* (o copy, s owned): s's block, a copies */
        rt_status st = run_task(full_on_a_task, &f);
        NEED(st == (door == 2 ? RT_PANICKED : RT_OK));
        NEED(rt_poisoned(s) == (door == 2) && rt_poisoned(o) == (door == 2));
        NEED(rt_shared_held(s) == 1 * KIB && rt_shared_held(o) == fo);
        if (door == 3) { /* a store into the full one: both poisoned */
            f.how = FULL_STORE_1;
            NEED(run_task(full_on_a_task, &f) == RT_PANICKED);
            NEED(rt_poisoned(s) && rt_poisoned(o));
            NEED(rt_shared_held(s) == 1 * KIB && rt_shared_held(o) == fo);
        }
        rt_shared_free(s);
        rt_shared_free(o);
    }
    NEED(rt_held() == 0);
    NEED(allocs_live() == allocations);
}

START_TEST(a_door_is_stopped_only_by_the_full_block_it_allocates_from)
{
    RUN_OK(each_door_fills_its_own_block, "does not fit");
}
END_TEST

/* ---- doors waiting on a door that panics -------------------------------- */

/* Task A is in rt_update_all(a, b) in place (a a supervised RT_OWNED value,
** b an RT_COPY one), has allocated in a's block and changed both, and
** holds both locks; four tasks are asleep in doors waiting on them (two
** rt_update of a, an rt_access of b, an rt_update_all(b, c) with c a healthy
** supervised copy). A panics: its unwind poisons both (D11: in place, both)
** and lets them in. Whichever update of a gets in first rebuilds it
** (build runs once more, not twice) and both run fn on the fresh value;
** the door on b and the pair (b, c) return RT_POISONED without running fn,
** and c is not rebuilt, changed or poisoned. Exact: a ends at the build's 7
** plus the two updates, its figure its chunk and the build's allocation (A's
** allocation went with the poisoned state); b stays poisoned. */
struct waiting {
    rt_shared *a, *b, *c;
    int builds_a, builds_c, ran;
    atomic_int entered, go, tids[4];
    rt_status st[4];
};

struct waiting_value {
    int64_t n;
    void *kept;
};

static void waiting_build_a(void *value, void *ctx)
{
    struct waiting *w = ctx;
    struct waiting_value *v = value;
    w->builds_a++;
    v->n = 7;
    v->kept = rt_alloc(40);
}

static void waiting_build_c(void *value, void *ctx)
{
    ((struct waiting *)ctx)->builds_c++;
    *(int64_t *)value = 3;
}

static void waiting_panics(void *va, void *vb, void *ctx)
{
    struct waiting *w = ctx;
    struct waiting_value *v = va;
    v->kept = rt_alloc(100);
    v->n = -1;
    *(int64_t *)vb = -1;
    atomic_store(&w->entered, 1);
    while (!atomic_load(&w->go))
        sched_yield();
    rt_panic("the doors waiting on it");
}

static void *waiting_holder(void *arg)
{
    struct waiting *w = arg;
    rt_update_all(w->a, w->b, waiting_panics, w);
    return NULL;
}

static void waiting_add(void *value, void *ctx)
{
    struct waiting_value *v = value;
    NEED(v->n == 7 || v->n == 8); /* the fresh value, never A's -1 */
    v->n++;
    ((struct waiting *)ctx)->ran++;
}

static void waiting_read(const void *value, void *ctx)
{
    (void)value;
    ((struct waiting *)ctx)->ran += 100;
}

static void waiting_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    ((struct waiting *)ctx)->ran += 100;
}

struct waiter {
    struct waiting *w;
    int i;
};

static void *waiting_door(void *arg)
{
    struct waiter *me = arg;
    struct waiting *w = me->w;
    atomic_store(&w->tids[me->i], (int)gettid());
    rt_status st = me->i < 2 ? rt_update(w->a, waiting_add, w)
                 : me->i == 2 ? rt_access(w->b, waiting_read, w)
                              : rt_update_all(w->b, w->c, waiting_pair, w);
    w->st[me->i] = st;
    NEED(rt_held() == 0);
    return NULL;
}

static void doors_waiting_on_a_panic(void *unused)
{
    int64_t zero = 0, out = -1;
    (void)unused;
    init_fixed(64 * KIB);
    die_of_alarm_after(30);
    static struct waiting w; /* zeroed */
    w.a = rt_shared_supervised(RT_OWNED, sizeof(struct waiting_value), waiting_build_a, &w,
                               1 * KIB);
    w.b = rt_shared_new(RT_COPY, sizeof zero, &zero, 1 * KIB);
    w.c = rt_shared_supervised(RT_COPY, sizeof zero, waiting_build_c, &w, 1 * KIB);
    size_t built = rt_shared_held(w.a), fc = rt_shared_held(w.c);
    NEED(built == FIG_CHUNK(sizeof(struct waiting_value)) + FIG_CHUNK(40));
    rt_task *holder = rt_spawn(waiting_holder, &w), *t[4];
    NEED(holder != NULL);
    while (!atomic_load(&w.entered))
        sched_yield();
    struct waiter ws[4];
    for (int i = 0; i < 4; i++) {
        ws[i] = (struct waiter){&w, i};
        NEED((t[i] = rt_spawn(waiting_door, &ws[i])) != NULL);
    }
    for (int i = 0; i < 4; i++) {
        while (atomic_load(&w.tids[i]) == 0)
            sched_yield();
        thread_wait_asleep(atomic_load(&w.tids[i])); /* in its door, waiting */
    }
    NEED(!rt_poisoned(w.a) && !rt_poisoned(w.b)); /* A's door is still open */
    atomic_store(&w.go, 1);
    NEED(rt_join(holder, NULL) == RT_PANICKED);
    for (int i = 0; i < 4; i++)
        NEED(rt_join(t[i], NULL) == RT_OK);
    NEED(w.st[0] == RT_OK && w.st[1] == RT_OK);
    NEED(w.st[2] == RT_POISONED && w.st[3] == RT_POISONED);
    NEED(w.builds_a == 2 && w.builds_c == 1 && w.ran == 2);
    NEED(!rt_poisoned(w.a) && rt_poisoned(w.b) && !rt_poisoned(w.c));
    struct waiting_value v = {-1, NULL};
    NEED(rt_get(w.a, &v) == RT_OK && v.n == 9);
    NEED(rt_shared_held(w.a) == built);
    NEED(rt_get(w.b, &out) == RT_POISONED);
    NEED(rt_get(w.c, &out) == RT_OK && out == 3 && rt_shared_held(w.c) == fc);
    rt_shared_free(w.a);
    rt_shared_free(w.b);
    rt_shared_free(w.c);
}

START_TEST(doors_waiting_on_a_door_that_panics_get_in_by_their_rows_after_the_unwind)
{
    RUN_OK(doors_waiting_on_a_panic, "panicked: the doors waiting on it\n");
}
END_TEST

/* ---- at the end of a task's thread -------------------------------------- */

/* Making a value, rt_poisoned, rt_shared_held and rt_shared_free need no
** task (docs/poisoning.md: values_are_made_read_and_freed_outside_any_task),
** so they serve a destructor of thread-specific data run on a task's
** thread after the task ended, before the runtime's own destructor (a key
** made before rt_init: glibc runs them in key order) and after it: the
** figure of a value holding a stored value is exact, a value poisoned by
** another task reads poisoned and one healthy not, a value made there
** reads its chunk, and freeing values there (a poisoned one with its
** allocation, a fresh one) leaves no allocation behind. The thread is no
** task by then (check_budgets.c,
** a_thread_whose_task_ended_is_no_task_in_its_destructors), so a door or
** a store there is the contract's violation. */
static pthread_key_t end_key;

struct at_end {
    rt_shared *s, *q;
    size_t s_figure;
    int door; /* 0 none, 1 rt_update, 2 rt_get, 3 rt_shared_supervised */
    bool done;
};

static void at_end_nothing(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void at_end_build(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void at_end_destructor(void *arg)
{
    struct at_end *e = arg;
    int64_t seven = 7, out = 0;
    NEED(rt_shared_held(e->s) == e->s_figure);
    NEED(!rt_poisoned(e->s) && rt_poisoned(e->q));
    rt_shared *n = rt_shared_new(RT_OWNED, sizeof seven, &seven, 256);
    NEED(rt_shared_held(n) == 16 && !rt_poisoned(n));
    (rt_shared_free)(n);
    (rt_shared_free)(e->q); /* poisoned, its block holding the panicked door's allocation */
    e->q = NULL;
    if (e->door == 1)
        rt_update(e->s, at_end_nothing, NULL);
    else if (e->door == 2)
        rt_get(e->s, &out);
    else if (e->door == 3)
        rt_shared_supervised(RT_COPY, sizeof seven, at_end_build, NULL, 256);
    e->done = true;
}

static void *at_end_task(void *arg)
{
    NEED(pthread_setspecific(end_key, arg) == 0);
    return NULL;
}

static void at_end_stores(void *value, void *ctx)
{
    (void)value;
    NEED(rt_store(ctx, rt_alloc_outside(40)) == RT_OK);
}

static void values_at_the_end_of_a_task(int key_before_init, int door)
{
    struct holder empty = {NULL, 0};
    static struct at_end e;
    if (key_before_init)
        NEED(pthread_key_create(&end_key, at_end_destructor) == 0);
    init_fixed(64 * KIB);
    if (!key_before_init)
        NEED(pthread_key_create(&end_key, at_end_destructor) == 0);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();
    e.s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    e.q = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    untrack(e.q); /* freed by the destructor */
    NEED(rt_update(e.s, at_end_stores, e.s) == RT_OK);
    e.s_figure = rt_shared_held(e.s);
    NEED(e.s_figure == 32 + 40);
    NEED(run_task(poison_by_a_panic_in_place, e.q) == RT_PANICKED);
    e.door = door;
    e.done = false;
    NEED(run_task(at_end_task, &e) == RT_OK);
    NEED(e.done && e.q == NULL);
    NEED(rt_shared_held(e.s) == e.s_figure && !rt_poisoned(e.s));
    rt_shared_free(e.s);
    NEED(allocs_live() == allocations);
}

static void at_end_key_before(void *unused)
{
    (void)unused;
    values_at_the_end_of_a_task(1, 0);
}

static void at_end_key_after(void *unused)
{
    (void)unused;
    values_at_the_end_of_a_task(0, 0);
}

static void at_end_update_before(void *unused) { (void)unused; values_at_the_end_of_a_task(1, 1); }
static void at_end_update_after(void *unused) { (void)unused; values_at_the_end_of_a_task(0, 1); }
static void at_end_get_after(void *unused) { (void)unused; values_at_the_end_of_a_task(0, 2); }
static void at_end_supervised_before(void *unused) { (void)unused; values_at_the_end_of_a_task(1, 3); }

START_TEST(values_are_made_read_and_freed_in_a_destructor_after_the_task_ended)
{
    RUN_OK(at_end_key_before, "panicked: poison it");
    RUN_OK(at_end_key_after, "panicked: poison it");
    violates(at_end_update_before, "refrt: rt_update: this thread is not a task");
    violates(at_end_update_after, "refrt: rt_update: this thread is not a task");
    violates(at_end_get_after, "refrt: rt_get: this thread is not a task");
    violates(at_end_supervised_before, "refrt: rt_shared_supervised: this thread is not a task");
}
END_TEST

/* ---- a stored value changes hands --------------------------------------- */

/* D9: a stored value is "reached through s in later doors, handed back with
** rt_unstore" and "the task holds it again (to free it with rt_free, send
** it or return it)": the task that unstores it, whoever stored it. Task A
** stores 300 bytes into s and ends; task B unstores it (B's figure +300,
** s's -300) and returns it, so the join charges main; main stores it into
** t, unstores it again, sends it on a channel, and task C receives it
** (main's figure falls, C's rises by 300) and stores it into s, where it
** stays after C ended, counted by s alone; freeing s frees it. */
struct hands {
    rt_shared *s, *t;
    void *v;
    rt_chan *c;
    size_t s0, t0;
};

static void hands_store(void *value, void *ctx)
{
    struct hands *h = ctx;
    (void)value;
    NEED(rt_store(h->s, h->v) == RT_OK);
}

static void hands_unstore(void *value, void *ctx)
{
    struct hands *h = ctx;
    (void)value;
    NEED(rt_unstore(h->s, h->v) == h->v);
}

static void hands_store_t(void *value, void *ctx)
{
    struct hands *h = ctx;
    (void)value;
    size_t held = rt_held();
    NEED(rt_store(h->t, h->v) == RT_OK);
    NEED(rt_held() == held - 300 && rt_shared_held(h->t) == h->t0 + 300);
    NEED(rt_unstore(h->t, h->v) == h->v);
    NEED(rt_held() == held && rt_shared_held(h->t) == h->t0);
}

static void *hands_a(void *arg)
{
    struct hands *h = arg;
    h->v = rt_alloc_outside(300);
    memset(h->v, 0x33, 300);
    NEED(rt_held() == 300);
    NEED(rt_update(h->s, hands_store, h) == RT_OK);
    NEED(rt_held() == 0 && rt_shared_held(h->s) == h->s0 + 300);
    return NULL;
}

static void *hands_b(void *arg)
{
    struct hands *h = arg;
    NEED(rt_held() == 0);
    NEED(rt_update(h->s, hands_unstore, h) == RT_OK);
    NEED(rt_held() == 300 && rt_shared_held(h->s) == h->s0);
    return h->v; /* an outside value B holds */
}

static void *hands_c(void *arg)
{
    struct hands *h = arg;
    void *v = rt_recv(h->c);
    NEED(v == h->v && rt_held() == 300);
    NEED(rt_update(h->s, hands_store, h) == RT_OK);
    NEED(rt_held() == 0 && rt_shared_held(h->s) == h->s0 + 300);
    return NULL;
}

static void stored_value_changes_hands(void *unused)
{
    struct holder empty = {NULL, 0};
    void *result = NULL;
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();
    static struct hands h;
    h.s = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    h.t = rt_shared_new(RT_OWNED, sizeof empty, &empty, 1 * KIB);
    h.s0 = rt_shared_held(h.s);
    h.t0 = rt_shared_held(h.t);
    NEED(run_task(hands_a, &h) == RT_OK);
    NEED(rt_shared_held(h.s) == h.s0 + 300 && rt_held() == 0);
    rt_task *b = rt_spawn(hands_b, &h);
    NEED(b != NULL && rt_join(b, &result) == RT_OK && result == h.v);
    NEED(rt_held() == 300 && rt_shared_held(h.s) == h.s0); /* the joiner's now */
    NEED(rt_update(h.t, hands_store_t, &h) == RT_OK && rt_held() == 300);
    h.c = rt_chan_new(1);
    NEED(rt_send(h.c, h.v) == RT_OK);
    rt_task *c = rt_spawn(hands_c, &h);
    NEED(c != NULL && rt_join(c, NULL) == RT_OK);
    NEED(rt_held() == 0); /* received by C: off main's count */
    NEED(rt_shared_held(h.s) == h.s0 + 300 && rt_shared_held(h.t) == h.t0);
    NEED(((unsigned char *)h.v)[299] == 0x33);
    rt_chan_free(h.c);
    rt_shared_free(h.t);
    rt_shared_free(h.s); /* and the value stored in it */
    NEED(allocs_live() == allocations);
}

START_TEST(a_stored_value_is_unstored_and_held_by_whichever_task_unstores_it)
{
    RUN_OK(stored_value_changes_hands, NULL);
}
END_TEST

/* ---- a receive or a join in a door, at the task's edge ------------------ */

/* rt_recv and rt_join inside a door charge the task (the receiver, the
** joiner: the contract), never the value's block, so the task's budget is
** what they must fit, at its edge: with exactly the value's bytes of room
** they fit (rt_held is then the budget, the value's figure unchanged);
** with one byte less the task panics in the door, which poisons the value
** only in an update in place (D11): an RT_COPY update and an access leave
** it unpoisoned. The received value stays at the head of the channel for
** the next receiver (main, which sent it: its own value comes back counted
** once); the joined one is freed with the panicking joiner. */
#define EDGE_SENT 1000

struct edge_io {
    rt_shared *s;
    rt_chan *c;
    int door;   /* 0 update (in place if s is owned), 1 access */
    bool join;  /* rt_join of a task returning EDGE_SENT bytes, else rt_recv */
    size_t short_by; /* 0: exactly the room; 1: a byte less */
    size_t figure;
    bool fitted;
};

static void *edge_io_returns(void *unused)
{
    (void)unused;
    return rt_alloc_outside(EDGE_SENT);
}

static void edge_io_calls(struct edge_io *e)
{
    size_t vf = rt_shared_held(e->s);
    void *got = NULL;
    rt_task *t = NULL;
    if (e->join)
        NEED((t = rt_spawn(edge_io_returns, NULL)) != NULL);
    void *fill = rt_alloc_outside(rt_budget() - rt_held() - EDGE_SENT + e->short_by);
    NEED(rt_held() == rt_budget() - EDGE_SENT + e->short_by);
    if (e->join)
        NEED(rt_join(t, &got) == RT_OK);
    else
        got = rt_recv(e->c);
    NEED(got != NULL && rt_held() == rt_budget() && rt_shared_held(e->s) == vf);
    e->fitted = true;
    rt_free(got);
    rt_free(fill);
}

static void edge_io_update(void *value, void *ctx)
{
    (void)value;
    edge_io_calls(ctx);
}

static void edge_io_access(const void *value, void *ctx)
{
    (void)value;
    edge_io_calls(ctx);
}

static void *edge_io_task(void *arg)
{
    struct edge_io *e = arg;
    NEED((e->door == 0 ? rt_update(e->s, edge_io_update, e)
                       : rt_access(e->s, edge_io_access, e)) == RT_OK);
    return NULL;
}

static void receive_and_join_at_the_edge(void *unused)
{
    int64_t zero = 0;
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    rt_free(rt_alloc_outside(8));
    long allocations = allocs_live();
    for (int k = 0; k < 2; k++)
        for (int door = 0; door < 2; door++)
            for (int join = 0; join < 2; join++)
                for (size_t short_by = 0; short_by < 2; short_by++) {
                    rt_kind kind = k ? RT_OWNED : RT_COPY;
                    struct edge_io e = {rt_shared_new(kind, sizeof zero, &zero, 1 * KIB),
                                        rt_chan_new(1), door, join, short_by, 0, false};
                    e.figure = rt_shared_held(e.s);
                    void *sent = NULL;
                    if (!join) {
                        sent = rt_alloc_outside(EDGE_SENT);
                        NEED(rt_send(e.c, sent) == RT_OK && rt_held() == EDGE_SENT);
                    }
                    rt_status st = run_task(edge_io_task, &e);
                    NEED(st == (short_by ? RT_PANICKED : RT_OK) && e.fitted == !short_by);
                    NEED(rt_poisoned(e.s) == (short_by && kind == RT_OWNED && door == 0));
                    NEED(rt_shared_held(e.s) == e.figure);
                    if (!join && short_by) { /* still at the head, main's own */
                        NEED(rt_held() == EDGE_SENT);
                        NEED(rt_recv(e.c) == sent && rt_held() == EDGE_SENT);
                        rt_free(sent);
                    }
                    NEED(rt_held() == 0);
                    rt_chan_free(e.c);
                    rt_shared_free(e.s);
                    NEED(allocs_live() == allocations);
                }
}

START_TEST(a_receive_or_join_in_a_door_fits_the_task_at_its_edge_and_poisons_by_its_row)
{
    RUN_OK(receive_and_join_at_the_edge, "does not fit its budget");
}
END_TEST

/* ---- every door needs a task -------------------------------------------- */

/* refrt.h: "A door is rt_update, rt_update_all, rt_access and rt_get; each
** needs a task", and so do rt_store and rt_unstore (inside a door) and a
** supervised value's build (the contract: calling the rest "on a thread
** that is not a task is a contract violation"). Before rt_init, on main,
** and after it on a plain thread, each is refused with its own name, on
** values made there (which needs no task). */
enum no_task_call { NT_UPDATE, NT_UPDATE_ALL, NT_ACCESS, NT_GET, NT_STORE, NT_UNSTORE,
                    NT_SUPERVISED, NT_CALLS };
static const char *const no_task_names[NT_CALLS] = {
    "rt_update", "rt_update_all", "rt_access", "rt_get", "rt_store", "rt_unstore",
    "rt_shared_supervised"};
static int no_task_call;

static void no_task_build(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static void *no_task_calls(void *unused)
{
    int64_t zero = 0, out;
    char stack_byte = 0;
    (void)unused;
    rt_shared *o = (rt_shared_new)(RT_OWNED, sizeof zero, &zero, 256);
    rt_shared *c = (rt_shared_new)(RT_COPY, sizeof zero, &zero, 256);
    switch (no_task_call) {
    case NT_UPDATE: rt_update(o, count_update, NULL); break;
    case NT_UPDATE_ALL: rt_update_all(o, c, count_pair, NULL); break;
    case NT_ACCESS: rt_access(c, count_access, NULL); break;
    case NT_GET: rt_get(c, &out); break;
    case NT_STORE: rt_store(o, &stack_byte); break;
    case NT_UNSTORE: rt_unstore(o, &stack_byte); break;
    default: rt_shared_supervised(RT_OWNED, sizeof zero, no_task_build, NULL, 256); break;
    }
    NEED(!"refused");
    return NULL;
}

static void no_task_before_init(void *unused)
{
    (void)unused;
    no_task_calls(NULL);
}

static void no_task_on_a_plain_thread(void *unused)
{
    pthread_t t;
    (void)unused;
    init_fixed(64 * KIB);
    NEED(pthread_create(&t, NULL, no_task_calls, NULL) == 0);
    pthread_join(t, NULL);
}

START_TEST(every_door_store_and_build_needs_a_task_before_rt_init_and_on_a_plain_thread)
{
    char want[128];
    for (no_task_call = 0; no_task_call < NT_CALLS; no_task_call++) {
        snprintf(want, sizeof want, "refrt: %s: this thread is not a task (rt_init has not "
                 "been called)\n", no_task_names[no_task_call]);
        violates(no_task_before_init, want);
        snprintf(want, sizeof want, "refrt: %s: this thread is not a task\n",
                 no_task_names[no_task_call]);
        violates(no_task_on_a_plain_thread, want);
    }
}
END_TEST

/* Two RT_OWNED values x and y, four tasks started together, two calling
** rt_update_all(x, y) and two rt_update_all(y, x), 50 rounds each: each
** round stores an outside value of its own size into x and another into
** y (whichever block the door allocates from: stores go to the value
** named) and allocates 24 bytes in the door's block (the first argument's,
** both being owned); every other round it unstores and frees the previous
** pair. Inside every door both figures are exactly what the values list;
** after the race each holds exactly what the odd rounds left, nothing is
** poisoned and no task holds anything. Judged under TSan too. */
#define OPP_TASKS 4
#define OPP_ROUNDS 50

struct pair_value {
    void *stored[OPP_TASKS * OPP_ROUNDS], *allocated[OPP_TASKS * OPP_ROUNDS];
    size_t bytes[OPP_TASKS * OPP_ROUNDS];
    size_t nstored, nallocated;
};

struct pair_race {
    rt_shared *x, *y;
    size_t chunk;
    pthread_barrier_t start;
};

struct pair_racer {
    struct pair_race *race;
    unsigned k, r;
    void *last[2], *last_allocated;
};

static size_t pair_figure(const struct pair_race *race, const struct pair_value *v)
{
    size_t f = race->chunk + v->nallocated * FIG_CHUNK(24);
    for (size_t i = 0; i < v->nstored; i++)
        f += v->bytes[i];
    return f;
}

static void pair_round(void *va, void *vb, void *ctx)
{
    struct pair_racer *me = ctx;
    struct pair_race *race = me->race;
    bool x_first = me->k % 2 == 0;
    struct pair_value *v[2] = {x_first ? va : vb, x_first ? vb : va}; /* x's, y's */
    rt_shared *s[2] = {race->x, race->y};
    struct pair_value *blk = va; /* the first argument's block */

    NEED(rt_held() == 0);
    for (int i = 0; i < 2; i++) {
        NEED(rt_shared_held(s[i]) == pair_figure(race, v[i]));
        size_t size = 1 + 100 * me->k + 10 * (size_t)i + me->r;
        void *o = rt_alloc_outside(size);
        NEED(rt_held() == size && rt_store(s[i], o) == RT_OK && rt_held() == 0);
        v[i]->stored[v[i]->nstored] = o;
        v[i]->bytes[v[i]->nstored++] = size;
        if (me->r % 2 == 1) {
            race_take(v[i]->stored, v[i]->bytes, &v[i]->nstored, me->last[i]);
            NEED(rt_unstore(s[i], me->last[i]) == me->last[i]);
            rt_free(me->last[i]);
        }
        me->last[i] = o;
        NEED(rt_held() == 0);
    }
    if (me->r % 2 == 1) {
        /* last round's allocation lies in the block of that round's first argument,
        ** the same value as now: each task always passes the same order */
        race_take(blk->allocated, NULL, &blk->nallocated, me->last_allocated);
        rt_free(me->last_allocated);
    }
    blk->allocated[blk->nallocated++] = me->last_allocated = rt_alloc(24);
    NEED(rt_held() == 0);
    for (int i = 0; i < 2; i++)
        NEED(rt_shared_held(s[i]) == pair_figure(race, v[i]));
}

static void *pair_racer_task(void *arg)
{
    struct pair_racer *me = arg;
    struct pair_race *race = me->race;
    int w = pthread_barrier_wait(&race->start);
    NEED(w == 0 || w == PTHREAD_BARRIER_SERIAL_THREAD);
    for (me->r = 0; me->r < OPP_ROUNDS; me->r++) {
        rt_status st = me->k % 2 == 0 ? rt_update_all(race->x, race->y, pair_round, me)
                                      : rt_update_all(race->y, race->x, pair_round, me);
        NEED(st == RT_OK && rt_held() == 0);
    }
    return NULL;
}

static void tasks_racing_on_a_pair(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(nothing, NULL) == RT_OK);
    long allocations = allocs_live();
    static struct pair_value empty;
    struct pair_race race;
    race.x = rt_shared_new(RT_OWNED, sizeof empty, &empty, 64 * KIB);
    race.y = rt_shared_new(RT_OWNED, sizeof empty, &empty, 64 * KIB);
    race.chunk = rt_shared_held(race.x);
    NEED(race.chunk == FIG_CHUNK(sizeof empty));
    NEED(pthread_barrier_init(&race.start, NULL, OPP_TASKS) == 0);
    struct pair_racer rs[OPP_TASKS];
    rt_task *t[OPP_TASKS];
    for (unsigned k = 0; k < OPP_TASKS; k++) {
        rs[k] = (struct pair_racer){&race, k, 0, {NULL, NULL}, NULL};
        NEED((t[k] = rt_spawn(pair_racer_task, &rs[k])) != NULL);
    }
    for (unsigned k = 0; k < OPP_TASKS; k++)
        NEED(rt_join(t[k], NULL) == RT_OK);
    pthread_barrier_destroy(&race.start);
    size_t fx = race.chunk, fy = race.chunk;
    for (unsigned k = 0; k < OPP_TASKS; k++)
        for (unsigned r = 1; r < OPP_ROUNDS; r += 2) {
            fx += 1 + 100 * k + r;
            fy += 1 + 100 * k + 10 + r;
            if (k % 2 == 0)
                fx += FIG_CHUNK(24);
            else
                fy += FIG_CHUNK(24);
        }
    NEED(!rt_poisoned(race.x) && !rt_poisoned(race.y));
    NEED(rt_shared_held(race.x) == fx && rt_shared_held(race.y) == fy);
    NEED(rt_held() == 0);
    rt_shared_free(race.x);
    rt_shared_free(race.y);
    NEED(allocs_live() == allocations);
}

START_TEST(tasks_racing_opposite_update_alls_store_into_each_value_named_with_exact_figures)
{
    RUN_OK(tasks_racing_on_a_pair, NULL);
}
END_TEST

#define ADD_TEST(s, t)                                                               \
    do {                                                                             \
        TCase *tc_ = tcase_create(#t);                                               \
        tcase_set_timeout(tc_, 60);                                                  \
        tcase_add_test(tc_, t);                                                      \
        rt_add_case((s), tc_, #t);                                                   \
    } while (0)

Suite *make_suite(void)
{
    Suite *s = suite_create("shared");
    ADD_TEST(s, a_copy_update_that_panics_leaves_the_old_value_to_a_second_task);
    ADD_TEST(s, a_copy_takes_and_writes_back_no_byte_past_its_value);
    ADD_TEST(s, stored_values_of_every_size_are_listed_and_go_with_their_value);
    ADD_TEST(s, a_panic_in_mains_door_unwinds_it_before_the_exit);
    ADD_TEST(s, a_copy_update_leaves_or_writes_back_every_byte_at_every_size);
    ADD_TEST(s, an_owned_update_that_panics_after_an_allocation_poisons);
    ADD_TEST(s, a_door_on_a_poisoned_value_returns_poisoned_without_running);
    ADD_TEST(s, a_full_value_block_panics_in_the_door_and_poisons_the_value);
    ADD_TEST(s, a_full_value_block_serves_a_request_from_neighbours_merged_to_its_size);
    ADD_TEST(s, update_all_over_two_copies_that_panics_after_the_first_leaves_both);
    ADD_TEST(s, update_all_over_a_copy_and_an_owned_value_that_panics_poisons_both);
    ADD_TEST(s, update_all_over_two_owned_values_that_panics_poisons_both);
    ADD_TEST(s, update_all_with_an_owned_value_works_in_place_in_its_block);
    ADD_TEST(s, update_all_writes_both_copies_back_before_releasing_either_lock);
    ADD_TEST(s, an_access_that_panics_leaves_the_value_readable);
    ADD_TEST(s, a_change_made_in_an_earlier_door_stands_after_a_later_panic);
    ADD_TEST(s, a_panic_in_a_nested_door_unwinds_every_open_door);
    ADD_TEST(s, a_supervised_cache_that_outgrows_its_block_is_rebuilt);
    ADD_TEST(s, a_build_that_panics_leaves_nothing_behind_and_the_value_poisoned);
    ADD_TEST(s, a_first_build_that_panics_frees_its_value_in_either_kind_wherever_it_panics);
    ADD_TEST(s, a_rebuild_that_stores_then_panics_leaves_nothing_behind);
    ADD_TEST(s, a_stored_value_moves_its_bytes_from_the_task_to_the_value);
    ADD_TEST(s, a_stored_value_that_does_not_fit_poisons_the_value);
    ADD_TEST(s, a_block_value_is_refused_by_store_and_the_message_names_the_copy);
    ADD_TEST(s, a_block_value_is_refused_by_store_in_a_rebuild_and_the_message_names_the_copy);
    ADD_TEST(s, stored_values_are_freed_with_the_state_they_were_stored_into);
    ADD_TEST(s, a_rebuild_inside_update_all_stores_into_the_other_value_there);
    ADD_TEST(s, opposite_order_update_all_pairs_never_deadlock);
    ADD_TEST(s, a_door_entered_again_on_the_same_value_is_a_violation);
    ADD_TEST(s, a_door_on_a_value_open_anywhere_in_the_task_is_reported_as_entered_again);
    ADD_TEST(s, update_all_over_one_value_is_a_violation);
    ADD_TEST(s, doors_nest_only_in_the_order_values_were_made);
    ADD_TEST(s, a_first_build_nests_doors_only_on_values_it_makes);
    ADD_TEST(s, a_value_a_first_build_keeps_is_made_after_the_value_built);
    ADD_TEST(s, misuse_of_doors_and_stores_gets_the_contracts_error);
    ADD_TEST(s, tasks_waiting_on_a_copy_value_hold_no_copy_while_they_wait);
    ADD_TEST(s, a_rebuild_frees_the_poisoned_state_before_fn_runs_in_every_door);
    ADD_TEST(s, an_unstore_the_task_cannot_take_panics_in_every_door_that_unstores);
    ADD_TEST(s, a_held_figure_read_inside_a_door_on_a_later_value_is_a_violation);
    ADD_TEST(s, a_door_on_a_poisoned_value_keeps_the_order_doors_nest_in);
    ADD_TEST(s, a_block_bigger_than_a_block_can_be_is_a_violation);
    ADD_TEST(s, a_kind_that_is_neither_copy_nor_owned_is_a_violation);
    ADD_TEST(s, null_arguments_are_violations);
    ADD_TEST(s, values_and_channels_made_before_rt_init_serve_main_after_it);
    ADD_TEST(s, a_value_of_no_bytes_takes_null_for_init_and_out);
    ADD_TEST(s, a_value_or_block_that_cannot_be_allocated_traps);
    ADD_TEST(s, a_copy_that_cannot_be_allocated_traps);
    ADD_TEST(s, a_copy_of_a_value_past_4_gib_asks_for_every_byte);
    ADD_TEST(s, a_table_of_stored_values_that_cannot_grow_traps);
    ADD_TEST(s, stored_values_come_out_one_by_one_each_with_its_bytes);
    ADD_TEST(s, a_doors_value_freed_or_resized_in_its_door_is_a_violation_in_every_door_in_place);
    ADD_TEST(s, every_door_hands_its_fn_a_value_aligned_for_any_object);
    ADD_TEST(s, a_rebuild_whose_block_cannot_be_allocated_traps);
    ADD_TEST(s, every_allocation_failure_in_a_life_of_values_traps);
    ADD_TEST(s, only_an_update_of_an_owned_value_allocates_from_its_block);
    ADD_TEST(s, the_innermost_door_decides_where_an_allocation_comes_from);
    ADD_TEST(s, a_rebuilt_value_whose_door_then_panics_is_poisoned_again);
    ADD_TEST(s, values_are_made_read_and_freed_outside_any_task);
    ADD_TEST(s, freeing_null_does_nothing_inside_a_door_either);
    ADD_TEST(s, a_rebuilt_value_starts_zeroed_in_reused_memory);
    ADD_TEST(s, update_all_rebuilds_each_poisoned_supervised_value);
    ADD_TEST(s, update_all_over_two_copies_rebuilds_each_poisoned_one_then_keeps_fns_change);
    ADD_TEST(s, every_door_on_a_poisoned_supervised_copy_works_on_the_fresh_value);
    ADD_TEST(s, update_all_over_copies_of_two_sizes_writes_each_back_whole);
    ADD_TEST(s, an_unstore_makes_room_in_the_table_of_stored_values);
    ADD_TEST(s, a_door_left_by_longjmp_is_a_violation_when_the_door_around_it_closes);
    ADD_TEST(s, doors_of_shared_values_look_past_the_doors_of_other_mechanisms);
    ADD_TEST(s, a_held_figure_read_from_another_thread_waits_for_the_open_door);
    ADD_TEST(s, an_unstore_that_does_not_fit_the_task_panics_and_the_value_stays_stored);
    ADD_TEST(s, a_rebuild_that_panics_poisons_nothing_else_in_any_door);
    ADD_TEST(s, a_rebuilds_build_stores_and_unstores_in_the_state_it_builds_in_every_door);
    ADD_TEST(s, every_check_finds_the_doors_of_shared_values_past_other_doors_and_either_value_of_a_pair);
    ADD_TEST(s, a_values_figure_is_exact_before_rt_init_on_a_plain_thread_and_on_a_task);
    ADD_TEST(s, stores_inside_update_all_go_to_the_value_named_whichever_block_the_door_uses);
    ADD_TEST(s, a_panic_twenty_doors_deep_unwinds_every_door_by_its_own_row);
    ADD_TEST(s, a_value_of_any_open_doors_block_is_refused_in_every_door_inside_it);
    ADD_TEST(s, a_value_that_stored_and_unstored_leaves_nothing_when_it_goes);
    ADD_TEST(s, a_value_a_store_cannot_fit_is_mains_again_and_counted_at_its_exit);
    ADD_TEST(s, the_tasks_budget_and_held_answer_for_the_task_in_every_door_and_build);
    ADD_TEST(s, a_value_is_poisoned_by_what_does_not_fit_its_block_never_by_what_just_fits);
    ADD_TEST(s, tasks_racing_to_store_into_one_value_leave_its_figures_exact);
    ADD_TEST(s, doors_racing_on_a_poisoned_supervised_value_rebuild_it_once);
    ADD_TEST(s, a_panic_after_stores_and_allocations_in_a_door_leaves_each_figure_and_poisons_by_its_row);
    ADD_TEST(s, a_door_is_stopped_only_by_the_full_block_it_allocates_from);
    ADD_TEST(s, doors_waiting_on_a_door_that_panics_get_in_by_their_rows_after_the_unwind);
    ADD_TEST(s, values_are_made_read_and_freed_in_a_destructor_after_the_task_ended);
    ADD_TEST(s, a_stored_value_is_unstored_and_held_by_whichever_task_unstores_it);
    ADD_TEST(s, a_receive_or_join_in_a_door_fits_the_task_at_its_edge_and_poisons_by_its_row);
    ADD_TEST(s, every_door_store_and_build_needs_a_task_before_rt_init_and_on_a_plain_thread);
    ADD_TEST(s, tasks_racing_opposite_update_alls_store_into_each_value_named_with_exact_figures);
    ADD_TEST(s, eight_tasks_with_random_panics_match_the_sequential_model);
    return s;
}
