/*
** check_budgets.c: tasks, budgets, panics, outside values and strategies
** (seed 002, D4 to D10), through the public API and the door hook.
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
#include <unistd.h>

#include "internal.h"
#include "refrt.h"
#include "task.h"
#include "testutil.h"

#define KIB ((size_t)1024)

/* Runs fn(arg) as a task and joins it; returns its status, *out its result. */
static rt_status run_task(void *(*fn)(void *), void *arg, void **out)
{
    void *ignored;
    rt_task *t = rt_spawn(fn, arg);
    ck_assert_ptr_nonnull(t);
    return rt_join(t, out != NULL ? out : &ignored);
}

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

/* ---- start-up and strategies (D7) ----------------------------------------- */

static size_t expected_default(size_t running)
{
    size_t phys = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = phys / 64 / running / 4096 * 4096;
    return bytes > 65536 ? bytes : 65536;
}

START_TEST(the_default_strategy_follows_its_formula)
{
    rt_strategy s = rt_default_strategy();
    size_t counts[] = {1, 2, 3, 64, 1000, 1000000};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        ck_require(s.block_bytes(s.ctx, counts[i]) == expected_default(counts[i]));
    /* more tasks, never bigger blocks; never below 64 KiB */
    ck_assert_uint_ge(s.block_bytes(s.ctx, 1), s.block_bytes(s.ctx, 2));
    ck_assert_uint_eq(s.block_bytes(s.ctx, (size_t)1 << 40), 65536);
    ck_assert_uint_eq(s.block_bytes(s.ctx, 0), expected_default(1)); /* none yet: as one */
}
END_TEST

START_TEST(a_system_that_cannot_tell_its_memory_gets_the_smallest_default)
{
    rt_strategy s = rt_default_strategy();
    fail_sysconf(_SC_PHYS_PAGES);
    ck_assert_uint_eq(s.block_bytes(s.ctx, 1), 65536);
    fail_sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq(s.block_bytes(s.ctx, 1), 65536);
    fail_sysconf(-1);
    ck_assert_uint_eq(s.block_bytes(s.ctx, 1), expected_default(1));
}
END_TEST

/* A machine whose memory is one page of 64 GiB, or 64 Gi pages of one
** byte: a page count or a page size of 1 is a real answer, and 1/64 of
** the memory is 1 GiB. (An answer of 0 means no memory, which gives the
** smallest block either way.) */
START_TEST(a_page_count_or_a_page_size_of_one_is_counted)
{
    rt_strategy s = rt_default_strategy();
    fake_sysconf(_SC_PHYS_PAGES, 1);
    fake_sysconf(_SC_PAGESIZE, 1L << 36);
    size_t one_page = s.block_bytes(s.ctx, 1);
    fake_sysconf(_SC_PHYS_PAGES, 1L << 36);
    fake_sysconf(_SC_PAGESIZE, 1);
    size_t one_byte_pages = s.block_bytes(s.ctx, 1);
    fake_sysconf(-1, 0);
    ck_assert_uint_eq(one_page, (size_t)1 << 30);
    ck_assert_uint_eq(one_byte_pages, (size_t)1 << 30);
}
END_TEST

/* The floor to a page holds on any memory, not only on this machine's,
** where phys / 64 / k happens to be a multiple of 4096 for every k the
** formula test asks. Page sizes of 1, 4096 and 65536, page counts that
** leave every low bit of phys / 64 set (and none), memories whose 1/64 is
** past 4 GiB, and every k from 1 to 70: each block is the formula's, a
** whole number of 4096-byte pages. */
START_TEST(the_default_is_whole_pages_on_any_memory)
{
    rt_strategy s = rt_default_strategy();
    const long gib64 = 1L << 36; /* 64 GiB: 1/64 is 1 GiB, over the smallest */
    const struct { long page, pages; } memories[] = {
        {1, gib64 + 64 * 4095},        /* 1/64 is 1 GiB + 4095 */
        {1, gib64 + 64 * 4095 + 63},   /* and a remainder the / 64 drops */
        {1, gib64 + 64},               /* 1 GiB + 1 */
        {1, gib64},                    /* exactly 1 GiB */
        {4096, (gib64 >> 12) + 4095},  /* real pages, 64 of 4096 B left over */
        {4096, (gib64 >> 12) + 1},
        /* machines whose 1/64 is 4 GiB or more: the block's size past 32
        ** bits, for one task and for a few (256 GiB just, 512 GiB, 16 TiB
        ** and a remainder, 64 TiB of 64 KiB pages) */
        {1, (1L << 38) + 64 * 4095},
        {4096, 1L << 27},
        {4096, (1L << 32) + 4095},
        {65536, 1L << 30},
    };
    for (size_t m = 0; m < sizeof memories / sizeof memories[0]; m++) {
        fake_sysconf(_SC_PAGESIZE, memories[m].page);
        fake_sysconf(_SC_PHYS_PAGES, memories[m].pages);
        size_t phys = (size_t)memories[m].page * (size_t)memories[m].pages;
        for (size_t k = 1; k <= 70; k++) {
            size_t want = phys / 64 / k / 4096 * 4096;
            want = want > 65536 ? want : 65536;
            size_t got = s.block_bytes(s.ctx, k);
            if (got != want || got % 4096 != 0) {
                fake_sysconf(-1, 0);
                ck_abort_msg("memory %zu B, %zu running: block %zu, the formula %zu",
                             phys, k, got, want);
            }
        }
    }
    fake_sysconf(-1, 0);
}
END_TEST

START_TEST(main_is_a_task_with_a_default_block)
{
    rt_init();
    ck_assert_uint_eq(rt_budget(), expected_default(1));
    ck_assert_uint_eq(rt_held(), 0);
    void *p = rt_alloc(100);
    ck_assert_uint_eq(rt_held(), 112);
    rt_free(p);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

static void *report_budget(void *unused)
{
    (void)unused;
    size_t *b = rt_alloc_outside(sizeof *b);
    *b = rt_budget();
    return b;
}

/* A budget is the strategy's figure rounded down to 16 (docs/budgets.md),
** never up: at every remainder 0 to 15 above a multiple, for main's block
** and for a task's. */
START_TEST(a_budget_is_the_strategys_figure_rounded_down_to_16)
{
    init_fixed(64 * KIB + 15); /* main's block */
    ck_assert_uint_eq(rt_budget(), 64 * KIB);
    for (size_t r = 0; r < 16; r++) {
        size_t *b;
        rt_set_strategy(rt_fixed_strategy(64 * KIB + r));
        ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
        ck_assert_msg(*b == 64 * KIB, "a fixed strategy of 64 KiB + %zu: a budget of %zu", r, *b);
        rt_free(b);
    }
}
END_TEST

START_TEST(a_fixed_strategy_sizes_every_later_block)
{
    size_t *b;
    init_fixed(64 * KIB);
    ck_assert_uint_eq(rt_budget(), 64 * KIB);
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 64 * KIB);
    rt_free(b);
    rt_set_strategy(rt_fixed_strategy(200 * KIB));
    ck_assert_uint_eq(rt_budget(), 64 * KIB); /* main's block was made before */
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 200 * KIB);
    rt_free(b);
    rt_set_strategy(rt_default_strategy());
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, expected_default(2)); /* main and the new task */
    rt_free(b);
}
END_TEST

/* ---- a second rt_init does nothing ---------------------------------------- */

/* What main can see of its runtime: its task's figures, its state, the
** key, the chunks it keeps, how many blocks exist. */
struct seen {
    size_t held, budget, blocks;
    unsigned kept;
    uint64_t key;
    struct rt_hot *hot;
    void *innermost;
    bool direct;
};

static struct seen seen_now(void)
{
    struct rt_hot *h = rt_hot();
    return (struct seen){rt_held(), rt_budget(), rt__blocks_live(), rt_chunk_kept(),
                         rt__key_plus_one, h, h->innermost, rt_hot_direct()};
}

static void init_again_changes_nothing(const char *when)
{
    struct seen a = seen_now(), b;
    rt_init();
    b = seen_now();
    ck_assert_msg(b.held == a.held && b.budget == a.budget && b.blocks == a.blocks &&
                  b.kept == a.kept && b.key == a.key && b.hot == a.hot &&
                  b.innermost == a.innermost && b.direct == a.direct,
                  "a second rt_init %s changed something: held %zu -> %zu, budget %zu -> %zu, "
                  "blocks %zu -> %zu, kept %u -> %u, key %lu -> %lu, state %p -> %p, innermost "
                  "%p -> %p, direct %d -> %d", when, a.held, b.held, a.budget, b.budget,
                  a.blocks, b.blocks, a.kept, b.kept, (unsigned long)a.key,
                  (unsigned long)b.key, (void *)a.hot, (void *)b.hot, a.innermost,
                  b.innermost, a.direct, b.direct);
}

struct init_in_task {
    int ready, go;
    size_t held[2], budget[2];
};

static void *task_inits_again(void *arg)
{
    struct init_in_task *x = arg;
    void *v = rt_alloc(64);
    x->held[0] = rt_held();
    x->budget[0] = rt_budget();
    __atomic_store_n(&x->ready, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&x->go, __ATOMIC_ACQUIRE))
        sched_yield();
    rt_init(); /* from a task: a second call all the same */
    x->held[1] = rt_held();
    x->budget[1] = rt_budget();
    rt_free(v);
    return NULL;
}

/* The contract: a second call of rt_init does nothing. In every state
** main's task can be in: before its first use, with block and outside
** values held, with regions open and chunks kept, with a task running,
** after it called rt_init itself, after its join; with a strategy that
** would size a new block otherwise. Every value held before stays held
** (rt_free takes it) and the figures come back to nothing. */
START_TEST(a_second_rt_init_changes_nothing_in_any_state)
{
    rt_init();
    uint64_t key = rt__key_plus_one;
    ck_assert_uint_eq(rt__blocks_live(), 1);
    rt_init(); /* before main's first use of its task */
    ck_assert_uint_eq(rt__key_plus_one, key);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt_budget(), expected_default(1));
    init_again_changes_nothing("on a fresh main");

    rt_set_strategy(rt_fixed_strategy(200 * KIB)); /* a new block would show */
    void *p = rt_alloc(100), *q = rt_alloc(1000);
    init_again_changes_nothing("with block values held");
    void *o = rt_alloc_outside(500);
    init_again_changes_nothing("with an outside value held");
    void *c = rt_chunk_take();
    rt_chunk_give(c, c);
    rt_region r1, r2;
    rt_region_open(&r1);
    rt_region_open(&r2);
    unsigned char *in = rt_region_alloc(&r2, 10, 10, 0x44);
    init_again_changes_nothing("with two regions open");
    ck_assert_int_eq(in[99], 0x44);

    struct init_in_task x = {0};
    rt_task *t = rt_spawn(task_inits_again, &x);
    ck_assert_ptr_nonnull(t);
    while (!__atomic_load_n(&x.ready, __ATOMIC_ACQUIRE))
        sched_yield();
    init_again_changes_nothing("with a task running");
    struct seen before = seen_now();
    __atomic_store_n(&x.go, 1, __ATOMIC_RELEASE);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(x.held[1], x.held[0]);
    ck_assert_uint_eq(x.held[0], 80);
    ck_assert_uint_eq(x.budget[1], x.budget[0]);
    struct seen after = seen_now();
    ck_assert_uint_eq(after.held, before.held); /* the task's call left main's task alone */
    ck_assert_uint_eq(after.budget, before.budget);
    ck_assert_ptr_eq(after.hot, before.hot);
    init_again_changes_nothing("after a join");

    rt_region_close(&r2);
    rt_region_close(&r1);
    ck_assert_uint_eq(rt_held(), 112 + 1008 + 500);
    rt_free(q);
    rt_free(o);
    rt_free(p);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt_budget(), expected_default(1));
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt_chunk_kept(), 2); /* r1 took the chunk kept; both came back */
}
END_TEST

/* A strategy's block_bytes is the program's code: the runtime holds none
** of its locks while it runs, so it may call the runtime, rt_set_strategy
** included. A one-shot strategy sizes one block and replaces itself with
** a fixed one; called on a task it also reads rt_held and rt_budget. For
** main's block at rt_init, a spawn from main, from a task and from a plain
** thread: the block is the one-shot's size, the next is the fixed one's. */
struct one_shot {
    size_t first, then;
    int calls;
    int on_a_task; /* the spawning thread is a task: call rt_held too */
};

static size_t one_shot_bytes(void *ctx, size_t running)
{
    struct one_shot *o = ctx;
    (void)running;
    o->calls++;
    rt_set_strategy(rt_fixed_strategy(o->then));
    if (o->on_a_task) {
        (void)rt_held();
        ck_require(rt_budget() > 0);
    }
    return o->first;
}

static void set_one_shot(struct one_shot *o, size_t first, size_t then, int on_a_task)
{
    *o = (struct one_shot){first, then, 0, on_a_task};
    rt_set_strategy((rt_strategy){one_shot_bytes, o});
}

/* Spawns report_budget twice after setting the one-shot; 0 if all is as said. */
static int two_spawns_after_a_one_shot(struct one_shot *o, int on_a_task)
{
    size_t *b1, *b2;
    rt_task *t1, *t2;
    void *r1 = NULL, *r2 = NULL;

    set_one_shot(o, 24 * KIB, 40 * KIB, on_a_task);
    t1 = rt_spawn(report_budget, NULL);
    t2 = rt_spawn(report_budget, NULL);
    if (t1 == NULL || t2 == NULL)
        return 1;
    if (rt_join(t1, &r1) != RT_OK || rt_join(t2, &r2) != RT_OK)
        return 2;
    b1 = r1;
    b2 = r2;
    int bad = o->calls != 1 || *b1 != 24 * KIB || *b2 != 40 * KIB ? 3 : 0;
    rt_free(b1);
    rt_free(b2);
    return bad;
}

static void *spawns_two_after_a_one_shot(void *arg)
{
    struct one_shot o;
    int *bad = rt_alloc_outside(sizeof *bad);
    (void)arg;
    *bad = two_spawns_after_a_one_shot(&o, 1);
    return bad;
}

static void *plain_spawns_two(void *arg)
{
    struct one_shot o;
    rt_task *t1, *t2;
    (void)arg;
    set_one_shot(&o, 24 * KIB, 40 * KIB, 0);
    t1 = rt_spawn(report_budget, NULL);
    t2 = rt_spawn(report_budget, NULL);
    /* a plain thread cannot join; the budgets are read from main below */
    static rt_task *got[2];
    got[0] = t1;
    got[1] = t2;
    return o.calls == 1 ? got : NULL;
}

START_TEST(a_strategys_block_bytes_runs_with_no_runtime_lock_held_and_may_set_the_strategy)
{
    struct one_shot o;
    size_t *b;
    int *bad;

    /* main's block, made by rt_init */
    set_one_shot(&o, 48 * KIB, 32 * KIB, 0);
    rt_init();
    ck_assert_int_eq(o.calls, 1);
    ck_assert_uint_eq(rt_budget(), 48 * KIB);
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 32 * KIB);
    rt_free(b);

    /* spawns from main, a task */
    ck_assert_int_eq(two_spawns_after_a_one_shot(&o, 1), 0);

    /* spawns from a spawned task */
    ck_assert_int_eq(run_task(spawns_two_after_a_one_shot, NULL, (void **)&bad), RT_OK);
    ck_assert_int_eq(*bad, 0);
    rt_free(bad);

    /* spawns from a plain thread: their tasks are joined by main */
    pthread_t th;
    rt_task **got;
    ck_assert_int_eq(pthread_create(&th, NULL, plain_spawns_two, NULL), 0);
    ck_assert_int_eq(pthread_join(th, (void **)&got), 0);
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(got[0]);
    ck_assert_ptr_nonnull(got[1]);
    ck_assert_int_eq(rt_join(got[0], (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 24 * KIB);
    rt_free(b);
    ck_assert_int_eq(rt_join(got[1], (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 40 * KIB);
    rt_free(b);
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, 40 * KIB); /* the fixed strategy the one-shot set */
    rt_free(b);
}
END_TEST

/* The bytes a receiver took off a task's count wait in its `released`
** until the task's slow path (a charge that does not fit) or rt_held folds
** them in: a charge that fits reads no atomic (docs/budgets.md, "Channels
** and where the bytes count"). White-box: the block's own held figure,
** read without settling. Through rt_alloc_outside, rt_realloc of an
** outside value, rt_clone_outside and a join's result; then rt_held folds
** them; then a charge that fits only once they are folded folds them. */
static void *receive_and_free(void *arg)
{
    rt_free(rt_recv(arg));
    return NULL;
}

static size_t unsettled_held(void)
{
    return rt__block_held(rt__task_hot("test")->task->block);
}

static void *alloc_outside_100(void *unused)
{
    (void)unused;
    return rt_alloc_outside(100);
}

START_TEST(released_bytes_are_folded_in_only_by_the_slow_path_and_rt_held)
{
    rt_chan *c;
    void *v, *w, *x, *y;

    init_fixed(64 * KIB);
    c = rt_chan_new(1);
    ck_assert_ptr_nonnull(c);
    v = rt_alloc_outside(1000);
    ck_assert_int_eq(rt_send(c, v), RT_OK);
    ck_assert_int_eq(run_task(receive_and_free, c, NULL), RT_OK);
    ck_assert_uint_eq(unsettled_held(), 1000); /* still counted: not folded yet */

    w = rt_alloc_outside(100);
    ck_assert_uint_eq(unsettled_held(), 1100);
    w = rt_realloc(w, 300);
    ck_assert_uint_eq(unsettled_held(), 1300);
    x = rt_clone_outside(w, 50);
    ck_assert_uint_eq(unsettled_held(), 1350);
    ck_assert_int_eq(run_task(alloc_outside_100, NULL, &y), RT_OK);
    ck_assert_uint_eq(unsettled_held(), 1450);
    ck_assert_uint_eq(rt_held(), 450); /* rt_held folds them in */
    ck_assert_uint_eq(unsettled_held(), 450);

    /* a charge that fits only once the released bytes are folded in */
    v = rt_alloc_outside(40 * KIB);
    ck_assert_int_eq(rt_send(c, v), RT_OK);
    ck_assert_int_eq(run_task(receive_and_free, c, NULL), RT_OK);
    ck_assert_uint_eq(unsettled_held(), 450 + 40 * KIB);
    v = rt_alloc_outside(30 * KIB);
    ck_assert_uint_eq(unsettled_held(), 450 + 30 * KIB);
    rt_free(v);
    rt_free(w);
    rt_free(x);
    rt_free(y);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(c);
}
END_TEST

/* ---- held and the budget (D5, D6, D10) ------------------------------------ */

START_TEST(held_returns_to_exactly_its_old_figure)
{
    init_fixed(64 * KIB);
    void *keep = rt_alloc(300), *out = rt_alloc_outside(77);
    size_t before = rt_held();
    ck_assert_uint_eq(before, 320 + 77);
    for (size_t n = 0; n < 3000; n += 97) {
        void *p = rt_alloc(n);
        ck_require(rt_held() > before);
        rt_free(p);
        ck_require(rt_held() == before);
        p = rt_alloc_outside(n);
        ck_require(rt_held() == (before + n));
        rt_free(p);
        ck_require(rt_held() == before);
    }
    rt_free(keep);
    rt_free(out);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

static void *fill_exactly(void *unused)
{
    (void)unused;
    void *p = rt_alloc(rt_budget() - 8);
    ck_assert_uint_eq(rt_held(), rt_budget());
    rt_free(p);
    return NULL;
}

static void *one_byte_more(void *unused)
{
    (void)unused;
    rt_alloc(rt_budget() - 7);
    ck_abort_msg("a block one byte short did not panic");
    return NULL;
}

static void *outside_exactly(void *unused)
{
    (void)unused;
    void *a = rt_alloc(100);
    void *p = rt_alloc_outside(rt_budget() - rt_held());
    ck_assert_uint_eq(rt_held(), rt_budget());
    rt_free(p);
    rt_free(a);
    return NULL;
}

static void *outside_one_byte_more(void *unused)
{
    (void)unused;
    rt_alloc(100);
    rt_alloc_outside(rt_budget() - rt_held() + 1);
    ck_abort_msg("an outside value one byte past the budget did not panic");
    return NULL;
}

static void boundaries(void *unused)
{
    (void)unused;
    init_fixed(16 * KIB);
    if (run_task(fill_exactly, NULL, NULL) != RT_OK)
        _exit(10);
    if (run_task(one_byte_more, NULL, NULL) != RT_PANICKED)
        _exit(11);
    if (run_task(outside_exactly, NULL, NULL) != RT_OK)
        _exit(12);
    if (run_task(outside_one_byte_more, NULL, NULL) != RT_PANICKED)
        _exit(13);
    if (rt__blocks_live() != 1)
        _exit(14);
}

/* The budget counts what is held, block and outside values alike, and a
** block never hands out a chunk past it, wherever the chunk comes from: a
** freed chunk waiting on its list is reused only if the budget can take
** it again. For sizes of every kind (the smallest, small lists, the
** large list): a chunk of the size is freed, outside values then hold the
** room down to one byte short of that chunk, and the allocation panics;
** with the room exactly the chunk, it is served and held is the budget. */
static const size_t reuse_sizes[] = {1, 16, 17, 100, 500, 1000, 2000, 3000, 6000};
static size_t reuse_size; /* set before each task */

static void *reuse_over_budget(void *short_by)
{
    size_t n = reuse_size, before = rt_held();
    void *p = rt_alloc(n);
    size_t chunk = rt_held() - before;
    void *keep = rt_alloc(1); /* above it: the freed chunk stays on its list */
    rt_free(p);
    size_t room = rt_budget() - rt_held();
    ck_assert_uint_ge(room, chunk);
    void *o = rt_alloc_outside(room - chunk + (size_t)(uintptr_t)short_by);
    ck_assert_uint_eq(rt_budget() - rt_held(), chunk - (size_t)(uintptr_t)short_by);
    void *q = rt_alloc(n); /* must panic when one byte short */
    ck_assert_msg(short_by == NULL, "a chunk of %zu bytes reused past the budget "
                  "(held %zu, budget %zu)", chunk, rt_held(), rt_budget());
    ck_assert_uint_eq(rt_held(), rt_budget());
    rt_free(q);
    rt_free(o);
    rt_free(keep);
    return NULL;
}

static void reuse_within_budget(void *unused)
{
    (void)unused;
    init_fixed(16 * KIB);
    for (size_t i = 0; i < sizeof reuse_sizes / sizeof reuse_sizes[0]; i++) {
        reuse_size = reuse_sizes[i];
        if (run_task(reuse_over_budget, NULL, NULL) != RT_OK)
            _exit(20 + (int)i);
        if (run_task(reuse_over_budget, (void *)1, NULL) != RT_PANICKED)
            _exit(40 + (int)i);
    }
    if (rt__blocks_live() != 1)
        _exit(60);
}

START_TEST(a_freed_chunk_is_reused_only_within_the_budget)
{
    struct death d = run_child(reuse_within_budget, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "does not fit its budget"));
}
END_TEST

START_TEST(a_block_exactly_full_fits_one_byte_more_panics)
{
    struct death d = run_child(boundaries, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 2 panicked: an allocation of 16377 bytes "
                                        "does not fit its budget"));
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 4 panicked: an outside value of "));
    ck_assert_ptr_null(strstr(d.err, "task 1 panicked"));
    ck_assert_ptr_null(strstr(d.err, "task 3 panicked"));
}
END_TEST

/* Seed step 9: a task that reads more than its budget panics, another task
** runs on. */
struct reader {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage;
};

static void *reads_too_much(void *arg)
{
    struct reader *r = arg;
    char *text = NULL;
    size_t len = 0;
    pthread_mutex_lock(&r->lock);
    while (r->stage == 0) /* the other task is running */
        pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
    for (;;) { /* "reads" 100 bytes at a time into a growing text */
        text = rt_realloc(text, len + 100);
        memset(text + len, 'x', 100);
        len += 100;
    }
    return NULL;
}

static void *runs_on(void *arg)
{
    struct reader *r = arg;
    unsigned long *sum = rt_alloc_outside(sizeof *sum);
    pthread_mutex_lock(&r->lock);
    r->stage = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    *sum = 0;
    for (unsigned i = 0; i < 2000; i++) {
        unsigned *v = rt_alloc(64 * sizeof *v);
        for (unsigned k = 0; k < 64; k++)
            v[k] = i + k;
        *sum += v[63];
        rt_free(v);
    }
    return sum;
}

static void over_budget_and_another_runs_on(void *unused)
{
    (void)unused;
    struct reader r = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    unsigned long *sum;
    init_fixed(64 * KIB);
    rt_task *greedy = rt_spawn(reads_too_much, &r), *other = rt_spawn(runs_on, &r);
    if (rt_join(greedy, (void **)&sum) != RT_PANICKED || sum != NULL)
        _exit(10);
    if (rt_join(other, (void **)&sum) != RT_OK || *sum != 2000UL * 1999 / 2 + 63 * 2000)
        _exit(11);
    if (rt_held() != sizeof *sum)
        _exit(12);
    rt_free(sum);
}

START_TEST(a_task_reading_past_its_budget_panics_and_another_runs_on)
{
    struct death d = run_child(over_budget_and_another_runs_on, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 1 panicked: a reallocation of "));
}
END_TEST

/* Seed step 9 (D10): a long task that allocates and frees a kilobyte a
** thousand times under a 64 KiB budget does not panic. */
static void *long_task(void *unused)
{
    (void)unused;
    size_t base = rt_held();
    unsigned long *sum = rt_alloc_outside(sizeof *sum);
    *sum = 0;
    for (unsigned i = 0; i < 1000; i++) {
        unsigned char *kib = rt_alloc(1024);
        memset(kib, (int)(i & 0xFF), 1024);
        unsigned char *more = rt_realloc(rt_alloc(10), 40 + i % 900);
        *sum += kib[1023];
        rt_free(more);
        rt_free(kib);
    }
    ck_assert_uint_eq(rt_held(), base + sizeof *sum);
    return sum;
}

START_TEST(a_long_task_frees_and_allocates_a_megabyte_under_sixty_four_kib)
{
    unsigned long *sum, expected = 0;
    init_fixed(64 * KIB);
    ck_assert_int_eq(run_task(long_task, NULL, (void **)&sum), RT_OK);
    for (unsigned i = 0; i < 1000; i++)
        expected += i & 0xFF;
    ck_assert_uint_eq(*sum, expected);
    rt_free(sum);
}
END_TEST

/* A block value is refused with errno EINVAL whatever writing its message
** did to errno: with stderr on /dev/full the write fails (ENOSPC), and
** with stderr closed it fails too (EBADF); errno is EINVAL all the same. */
static int hand_over_refused_errno(void *block_value, int stderr_to)
{
    int saved = dup(2);

    ck_assert_int_ge(saved, 0);
    if (stderr_to >= 0)
        ck_assert_int_ge(dup2(stderr_to, 2), 0);
    else
        close(2);
    errno = 0;
    void *r = rt_hand_over(block_value);
    int err = errno;
    ck_assert_int_ge(dup2(saved, 2), 0);
    close(saved);
    ck_assert_ptr_null(r);
    return err;
}

START_TEST(a_block_value_refused_by_rt_hand_over_sets_einval_even_if_stderr_fails)
{
    init_fixed(64 * KIB);
    void *v = rt_alloc(10);
    int full = open("/dev/full", O_WRONLY);

    ck_assert_int_ge(full, 0);
    ck_assert_int_eq(hand_over_refused_errno(v, full), EINVAL);
    ck_assert_int_eq(hand_over_refused_errno(v, -1), EINVAL);
    close(full);
    size_t held = rt_held();
    rt_free(v); /* still the task's: nothing changed */
    ck_assert_uint_lt(rt_held(), held);
}
END_TEST

/* Any pointer into a block is a block value (docs/budgets.md), carved or
** not: a value's inside, a value freed at the top (its bytes back before
** the bump), the first byte past the bump. rt_hand_over, rt_send and
** rt_store refuse each as they refuse a live one (NULL and EINVAL,
** RT_REFUSED), nothing changed; none is "not a value this task holds".
** In a child: each refusal prints its line. */
static rt_shared *refusing_store_s;
static void *refusing_store_p;
static rt_status refusing_store_st;

static void stores_the_pointer(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    refusing_store_st = rt_store(refusing_store_s, refusing_store_p);
}

static void refuses_every_pointer_into_the_block(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    int64_t zero = 0;
    refusing_store_s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    char *kept = rt_alloc(100);
    char *top = rt_alloc(48);
    rt_free(top); /* at the top: its bytes go back before the bump */
    char *past = rt_alloc(32);
    char *const ptrs[] = {kept + 1, kept + 99, top, past + 32, past + 4096};
    size_t held = rt_held();
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) {
        errno = 0;
        if (rt_hand_over(ptrs[i]) != NULL || errno != EINVAL)
            _exit(10 + (int)i);
        if (rt_send(c, ptrs[i]) != RT_REFUSED)
            _exit(20 + (int)i);
        refusing_store_p = ptrs[i];
        if (rt_update(refusing_store_s, stores_the_pointer, NULL) != RT_OK ||
            refusing_store_st != RT_REFUSED)
            _exit(30 + (int)i);
        if (rt_held() != held)
            _exit(40 + (int)i);
    }
    rt_chan_close(c);
    if (rt_recv(c) != NULL) /* nothing was queued */
        _exit(50);
    exit(0);
}

START_TEST(any_pointer_into_the_block_is_refused_as_a_block_value)
{
    struct death d = run_child(refuses_every_pointer_into_the_block, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                  "exit %d (10+i: rt_hand_over, 20+i: rt_send, 30+i: rt_store of pointer i; "
                  "40+i: held changed), signal %d: %s", d.exit_status, d.signal, d.err);
    ck_assert_msg(strstr(d.err, "is not a value this task holds") == NULL, "%s", d.err);
}
END_TEST

/* A task's outside values sit in a table that grows when a put would
** fill it past half (16 slots, then 32, 64). A realloc of an outside value
** takes its entry out and puts the new pointer back: at every load of the
** table, from one value held to past the second growth, each value held is
** reallocated in turn (growing and shrinking by turns), and afterwards
** every one is held with exactly its new bytes, its contents kept, and
** comes out once. */
#define OUTSIDE_MOST 40

static size_t outside_first(int i)
{
    return 16 + (size_t)i; /* each its own size, so a mix-up shows */
}

static size_t outside_again(int i)
{
    return i % 2 == 0 ? 200 + (size_t)i : 1 + (size_t)i;
}

START_TEST(an_outside_value_reallocated_at_every_load_of_the_table_stays_held_once)
{
    init_fixed(1024 * KIB);
    size_t base = rt_held();
    unsigned char *v[OUTSIDE_MOST];

    for (int k = 1; k <= OUTSIDE_MOST; k++) {
        size_t held = base;
        for (int i = 0; i < k; i++) {
            v[i] = rt_alloc_outside(outside_first(i));
            memset(v[i], i + 1, outside_first(i));
            held += outside_first(i);
        }
        ck_assert_uint_eq(rt_held(), held);
        for (int i = 0; i < k; i++) {
            v[i] = rt_realloc(v[i], outside_again(i));
            held += outside_again(i) - outside_first(i);
            ck_assert_msg(rt_held() == held, "%d values held, the %dth reallocated: "
                          "rt_held %zu, not %zu", k, i + 1, rt_held(), held);
        }
        for (int i = 0; i < k; i++) {
            size_t kept = outside_again(i) < outside_first(i) ? outside_again(i)
                                                                : outside_first(i);
            for (size_t b = 0; b < kept; b++)
                ck_require(v[i][b] == (unsigned char)(i + 1));
        }
        for (int i = k - 1; i >= 0; i--) {
            rt_free(v[i]); /* a value the table lost would be a violation here */
            held -= outside_again(i);
            ck_assert_uint_eq(rt_held(), held);
        }
        ck_assert_uint_eq(rt_held(), base);
    }
}
END_TEST

START_TEST(realloc_keeps_contents_past_size_classes)
{
    init_fixed(1024 * KIB);
    unsigned char *p = NULL;
    size_t n = 0;
    for (size_t want = 1; want < 60000; want = want * 2 + 3) {
        void *pin = rt_alloc(1); /* p is not the top chunk: growth moves it */
        unsigned char *q = rt_realloc(p, want);
        for (size_t i = 0; i < n; i++)
            ck_require(q[i] == (unsigned char)(i * 13));
        for (size_t i = n; i < want; i++)
            q[i] = (unsigned char)(i * 13);
        p = q;
        n = want;
        rt_free(pin);
    }
    /* an outside value stays outside and keeps its bytes */
    unsigned char *o = rt_clone_outside(p, 5000);
    rt_free(p);
    size_t before = rt_held();
    o = rt_realloc(o, 9000);
    ck_assert_uint_eq(rt_held(), before + 4000);
    for (size_t i = 0; i < 5000; i++)
        ck_require(o[i] == (unsigned char)(i * 13));
    o = rt_realloc(o, 10);
    ck_assert_uint_eq(rt_held(), before - 4990);
    ck_assert_ptr_eq(rt_hand_over(o), o);
    free(o);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

START_TEST(nothing_and_null_are_values_too)
{
    init_fixed(64 * KIB);
    rt_free(NULL); /* does nothing, as free(NULL) */
    ck_assert_uint_eq(rt_held(), 0);
    void *none = rt_clone_outside(NULL, 0); /* an outside value of no bytes */
    ck_assert_ptr_nonnull(none);
    ck_assert_uint_eq(rt_held(), 0);
    char *o = rt_alloc_outside(300);
    ck_assert_uint_eq(rt_held(), 300);
    o = rt_realloc(o, 0); /* shrunk to nothing, still a value to free */
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(rt_held(), 0);
    o = rt_realloc(o, 40);
    ck_assert_uint_eq(rt_held(), 40);
    rt_free(o);
    rt_free(none);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

static void *grows_outside_past_the_budget(void *unused)
{
    (void)unused;
    char *o = rt_alloc_outside(100);
    o = rt_realloc(o, rt_budget() - rt_held() + 100); /* exactly full: fits */
    ck_assert_uint_eq(rt_held(), rt_budget());
    o = rt_realloc(o, rt_budget() + 1);
    ck_abort_msg("an outside value grown past the budget did not panic");
    return NULL;
}

static void outside_realloc_over_budget(void *unused)
{
    (void)unused;
    init_fixed(16 * KIB);
    if (run_task(grows_outside_past_the_budget, NULL, NULL) != RT_PANICKED)
        _exit(10);
    if (rt__blocks_live() != 1)
        _exit(11);
}

START_TEST(an_outside_value_grown_past_the_budget_panics)
{
    struct death d = run_child(outside_realloc_over_budget, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 1 panicked: a reallocation of 16385 bytes "
                                        "does not fit its budget"));
}
END_TEST

/* A block value grows into bytes a receiver released: the first try fails
** on the stale count, the settled one fits. */
struct settling {
    rt_chan *out, *back;
};

static void *grows_into_released_bytes(void *arg)
{
    struct settling *k = arg;
    char *v = rt_alloc(100);
    memset(v, 'v', 100);
    rt_send(k->out, rt_alloc_outside(10 * KIB)); /* 10 KiB of 16 in flight */
    rt_free(rt_recv(k->back)); /* main received it: its go-ahead */
    v = rt_realloc(v, 8 * KIB); /* fits only once the 10 KiB are settled */
    for (int i = 0; i < 100; i++)
        ck_require(v[i] == 'v');
    ck_assert_uint_eq(rt_held(), 8 * KIB + 16);
    return NULL;
}

START_TEST(a_realloc_settles_what_receivers_took_before_it_panics)
{
    struct settling k;
    init_fixed(64 * KIB);
    k.out = rt_chan_new(1);
    k.back = rt_chan_new(1);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_task *t = rt_spawn(grows_into_released_bytes, &k);
    void *big = rt_recv(k.out);
    ck_assert_uint_eq(rt_held(), 10 * KIB);
    rt_send(k.back, rt_alloc_outside(1));
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    rt_free(big);
    rt_chan_free(k.out);
    rt_chan_free(k.back);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* Hundreds of outside values, freed in scrambled orders with new ones made
** in between: the task's table finds every one (its removals shift the
** entries that probed past a freed slot back, never losing one). */
START_TEST(many_outside_values_are_found_whatever_order_they_go_in)
{
    enum { N = 600 };
    static unsigned char *v[N];
    size_t held = 0;
    init_fixed(1024 * KIB);
    for (int i = 0; i < N; i++) {
        v[i] = rt_alloc_outside(8 + (size_t)i % 5);
        held += 8 + (size_t)i % 5;
    }
    for (int k = 0; k < N; k++) {
        int i = (k * 7 + 3) % N; /* 7 and 600 share no factor: a permutation */
        ck_require(rt_held() == held);
        rt_free(v[i]);
        held -= 8 + (size_t)i % 5;
        v[i] = NULL;
        if (k % 3 == 0) { /* a new value where the freed one was */
            v[i] = rt_alloc_outside(8 + (size_t)i % 5);
            held += 8 + (size_t)i % 5;
        }
    }
    ck_assert_uint_eq(rt_held(), held);
    for (int k = 0; k < N; k++) {
        int i = (k * 11 + 5) % N;
        if (v[i] != NULL) {
            rt_free(v[i]);
            held -= 8 + (size_t)i % 5;
            ck_require(rt_held() == held);
        }
    }
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

static void *returns_nothing(void *unused);

/* Eight tasks spawn and join their own children all at once: the table of
** tasks not yet joined, shared by all, loses none and keeps none. */
static void *spawns_and_joins(void *unused)
{
    (void)unused;
    for (int round = 0; round < 40; round++) { /* 3,840 tasks in all */
        rt_task *kids[12];
        for (int k = 0; k < 12; k++)
            ck_require((kids[k] = rt_spawn(returns_nothing, NULL)) != NULL);
        for (int k = 0; k < 12; k++)
            ck_require(rt_join(kids[k], NULL) == RT_OK);
    }
    return NULL;
}

START_TEST(tasks_spawning_and_joining_at_once_lose_no_task)
{
    rt_task *t[8];
    init_fixed(64 * KIB);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    for (int i = 0; i < 8; i++)
        t[i] = rt_spawn(spawns_and_joins, NULL);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(rt_join(t[i], NULL), RT_OK);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- nothing leaks -------------------------------------------------------- */

static rt_chan *leak_chan;

static void *sends_two_and_returns_one(void *unused)
{
    (void)unused;
    rt_send(leak_chan, rt_alloc_outside(100));
    rt_send(leak_chan, rt_alloc_outside(3000));
    rt_alloc(500); /* left in the block: freed with it */
    rt_alloc_outside(200); /* held at the end: freed with the task */
    return rt_alloc_outside(50);
}

static void spawn_send_join_receive(void)
{
    void *r;
    rt_task *t = rt_spawn(sends_two_and_returns_one, NULL);
    if (rt_join(t, &r) != RT_OK) /* t's values still queued */
        ck_abort_msg("the task did not end well");
    rt_free(r);
    rt_free(rt_recv(leak_chan));
    rt_free(rt_recv(leak_chan)); /* the last reference to t goes */
}

START_TEST(a_task_joined_and_its_values_received_leave_nothing_allocated)
{
    init_fixed(64 * KIB);
    leak_chan = rt_chan_new(4);
    spawn_send_join_receive(); /* main's table of outside values is made */
    long before = allocs_live();
    for (int i = 0; i < 3; i++)
        spawn_send_join_receive();
    long after = allocs_live();
    ck_assert_int_eq(after, before);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(leak_chan);
}
END_TEST

/* 200 outside values at once: the task's table of them grows from 16
** slots to 512, each time into a new array. */
static void *holds_two_hundred_values(void *unused)
{
    void *v[200];
    (void)unused;
    for (int i = 0; i < 200; i++)
        v[i] = rt_alloc_outside(16);
    for (int i = 0; i < 200; i++)
        rt_free(v[i]);
    return NULL;
}

static void spawn_holding_many_and_join(void)
{
    if (rt_join(rt_spawn(holds_two_hundred_values, NULL), NULL) != RT_OK)
        ck_abort_msg("the task did not end well");
}

/* Each array the table outgrew is freed as it grows, and the last with
** the task. */
START_TEST(a_table_that_grew_leaves_nothing_allocated)
{
    init_fixed(64 * KIB);
    spawn_holding_many_and_join(); /* the runtime's own tables made once */
    long before = allocs_live();
    spawn_holding_many_and_join();
    long after = allocs_live();
    ck_assert_int_eq(after, before);
}
END_TEST

static void *receives_and_frees(void *c)
{
    rt_free(rt_recv(c));
    return NULL;
}

/* 40 KiB sent out of a 64 KiB budget, and received by a task that has
** ended: the sender's block counts them until it settles, which an
** allocation that does not fit otherwise makes it do. */
START_TEST(an_allocation_that_fits_once_received_values_are_settled_succeeds)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(1);
    rt_send(c, rt_alloc_outside(40 * KIB));
    if (rt_join(rt_spawn(receives_and_frees, c), NULL) != RT_OK)
        ck_abort_msg("the receiver did not end well");
    unsigned char *p = rt_alloc(40 * KIB);
    ck_assert_ptr_nonnull(p);
    memset(p, 0xA5, 40 * KIB);
    ck_assert_uint_ge(rt_held(), 40 * KIB);
    rt_free(p);
    rt_chan_free(c);
}
END_TEST

/* ---- panics --------------------------------------------------------------- */

static void *panics_for_no_reason(void *unused)
{
    (void)unused;
    rt_panic(NULL);
}

static void panic_without_a_reason(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    if (run_task(panics_for_no_reason, NULL, NULL) != RT_PANICKED)
        _exit(10);
}

START_TEST(a_panic_without_a_reason_says_so)
{
    struct death d = run_child(panic_without_a_reason, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_str_eq(d.err, "refrt: task 1 panicked: (no reason)\n");
}
END_TEST

static char stderr_buffer[BUFSIZ];

/* A task's panic, with stderr fully buffered; the child then ends with
** _exit (run_child), which flushes nothing. */
static void panic_with_stderr_buffered(void *unused)
{
    (void)unused;
    setvbuf(stderr, stderr_buffer, _IOFBF, sizeof stderr_buffer);
    init_fixed(64 * KIB);
    if (run_task(panics_for_no_reason, NULL, NULL) != RT_PANICKED)
        _exit(10);
}

/* The task's thread goes on after its panic (the joiner carries on, the
** process may live for long): the message is out at once, not when some
** later write fills the buffer. */
START_TEST(a_panic_message_reaches_a_buffered_stderr_at_once)
{
    struct death d = run_child(panic_with_stderr_buffered, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d", d.signal,
                  d.exit_status);
    ck_assert_str_eq(d.err, "refrt: task 1 panicked: (no reason)\n");
}
END_TEST

static void main_panics(void *unused)
{
    (void)unused;
    rt_region r;
    init_fixed(64 * KIB);
    rt_region_open(&r);
    rt_panic("the sky fell");
}

START_TEST(a_panic_in_main_exits_with_101)
{
    struct death d = run_child(main_panics, NULL);
    ck_assert_int_eq(d.signal, 0);
    ck_assert_int_eq(d.exit_status, 101);
    ck_assert_str_eq(d.err, "refrt: task 0 panicked: the sky fell\n");
}
END_TEST

/* A panic in main unwinds past its open regions like any task's: they are
** closed, innermost first, so their bytes are cleared before the process
** exits with 101. An exit handler, which runs after the panic, reads the
** bytes the two regions handed out (their chunks are kept, not freed, so
** still readable) and says what it found, and whether the two regions,
** whose structs outlive main's frames here, are closed as rt_region_close
** leaves a region (refrt.h: base NULL when not open). */
static unsigned char *main_secrets[2];
static rt_region main_regions[2];

static void report_main_secrets(void)
{
    bool cleared = true, closed = true;
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; j < 100; j++)
            cleared = cleared && main_secrets[i][j] == 0;
        closed = closed && main_regions[i].base == NULL && main_regions[i].bump == NULL;
    }
    fputs(cleared ? "secrets cleared\n" : "a secret survived the panic\n", stderr);
    fputs(closed ? "regions closed\n" : "a region still open after the panic\n", stderr);
}

static void main_panics_in_two_regions(void *unused)
{
    (void)unused;
    rt_region *outer = &main_regions[0], *inner = &main_regions[1];
    init_fixed(64 * KIB);
    rt_region_open(outer);
    main_secrets[0] = rt_region_alloc(outer, 100, 1, 0xA5);
    rt_region_open(inner);
    main_secrets[1] = rt_region_alloc(inner, 100, 1, 0x5A);
    atexit(report_main_secrets);
    rt_panic("with secrets");
}

START_TEST(a_panic_in_main_clears_its_regions_before_it_exits)
{
    struct death d = run_child(main_panics_in_two_regions, NULL);
    ck_assert_int_eq(d.signal, 0);
    ck_assert_int_eq(d.exit_status, 101);
    ck_assert_str_eq(d.err, "refrt: task 0 panicked: with secrets\nsecrets cleared\n"
                            "regions closed\n");
}
END_TEST

static void main_reallocates_past_its_budget(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    void *p = rt_alloc_outside(KIB);
    rt_realloc(p, 100 * KIB);
}

static void *returns_100_kib(void *unused)
{
    (void)unused;
    return rt_alloc_outside(100 * KIB);
}

/* Main's block is 64 KiB; the task's, made after the strategy changed,
** 256 KiB: what it returns does not fit its joiner. */
static void main_joins_too_big_a_result(void *unused)
{
    void *r;
    (void)unused;
    init_fixed(64 * KIB);
    rt_set_strategy(rt_fixed_strategy(256 * KIB));
    rt_join(rt_spawn(returns_100_kib, NULL), &r);
}

/* Growing an outside value, and taking over a task's result, count
** against the budget like any allocation: past it, the task panics. */
START_TEST(an_outside_value_grown_or_taken_over_past_the_budget_panics)
{
    struct death d = run_child(main_reallocates_past_its_budget, NULL);
    ck_assert_int_eq(d.signal, 0);
    ck_assert_int_eq(d.exit_status, 101);
    ck_assert_str_eq(d.err,
                     "refrt: task 0 panicked: a reallocation of 102400 bytes does not fit its budget\n");
    d = run_child(main_joins_too_big_a_result, NULL);
    ck_assert_int_eq(d.signal, 0);
    ck_assert_int_eq(d.exit_status, 101);
    ck_assert_str_eq(d.err, "refrt: task 0 panicked: a value taken over of 102400 bytes does "
                            "not fit its budget\n");
}
END_TEST

struct held_things {
    void *outside[3];
    unsigned char *chunk[2];
};

static void *panics_holding_things(void *arg)
{
    struct held_things *k = arg;
    rt_region a, b;
    /* outside values of a chunk's size, so the shim tracks them */
    for (int i = 0; i < 3; i++)
        k->outside[i] = rt_alloc_outside(RT_CHUNK_SIZE);
    rt_region_open(&a);
    rt_region_open(&b);
    k->chunk[0] = a.base;
    k->chunk[1] = b.base;
    memset(rt_region_alloc(&a, 1, 3000, 0), 0x77, 3000);
    memset(rt_region_alloc(&b, 1, 5000, 0), 0x66, 5000);
    rt_alloc(1000);
    rt_panic("on purpose");
}

START_TEST(a_panic_frees_outside_values_and_closes_open_regions)
{
    struct held_things k;
    void *result = &k;
    init_fixed(256 * KIB);
    chunks_reset();
    ck_assert_int_eq(rt_join(rt_spawn(panics_holding_things, &k), &result), RT_PANICKED);
    ck_assert_ptr_null(result); /* a panicked task has no result */
    for (int i = 0; i < 3; i++)
        ck_require(!chunk_live(k.outside[i]));
    /* the regions were closed (cleared, kept), then freed with the thread */
    ck_assert(!chunk_live(k.chunk[0]));
    ck_assert(!chunk_live(k.chunk[1]));
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(n.mallocs, 5);
    ck_assert_uint_eq(n.frees, 5);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

static void *ends_holding_things(void *arg)
{
    struct held_things *k = arg;
    for (int i = 0; i < 3; i++)
        k->outside[i] = rt_alloc_outside(RT_CHUNK_SIZE);
    rt_alloc(5000);
    return NULL;
}

START_TEST(a_task_that_ends_frees_its_block_and_what_it_still_holds)
{
    struct held_things k;
    init_fixed(256 * KIB);
    chunks_reset();
    ck_assert_int_eq(rt__blocks_live(), 1);
    ck_assert_int_eq(run_task(ends_holding_things, &k, NULL), RT_OK);
    for (int i = 0; i < 3; i++)
        ck_require(!chunk_live(k.outside[i]));
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

/* ---- join moves the result (D9) ------------------------------------------- */

static void *returns_text(void *arg)
{
    size_t n = (size_t)(uintptr_t)arg;
    char *s = rt_alloc_outside(n);
    memset(s, 'r', n);
    s[n - 1] = '\0';
    return s;
}

START_TEST(join_moves_the_result_to_the_joiner)
{
    char *s;
    init_fixed(64 * KIB);
    void *keep = rt_alloc(100);
    size_t before = rt_held();
    ck_assert_int_eq(run_task(returns_text, (void *)(uintptr_t)5000, (void **)&s), RT_OK);
    ck_assert_uint_eq(strlen(s), 4999);
    ck_assert_uint_eq(rt_held(), before + 5000);
    rt_free(s);
    ck_assert_uint_eq(rt_held(), before);
    rt_free(keep);
}
END_TEST

/* Whatever outside value a task returns (made there, grown, shrunk,
** cloned, received, taken from its own join, of 0 bytes, or NULL), the
** joiner's count takes exactly the bytes the value has when the task ends,
** and the ended task counts it no more; a panicked task's *result is NULL
** whatever it held before. Joined by main and by a task. */
enum { RESULT_KINDS = 8 };

static const size_t result_bytes[RESULT_KINDS] = {5000, 6000, 50, 777, 900, 1234, 0, 0};

static void *returns_a_kind(void *arg)
{
    int kind = (int)(uintptr_t)arg;
    unsigned char *v = NULL;
    unsigned char src[777];
    switch (kind) {
    case 0:
        v = rt_alloc_outside(5000);
        break;
    case 1:
        v = rt_realloc(rt_alloc_outside(300), 6000);
        break;
    case 2:
        v = rt_realloc(rt_alloc_outside(6000), 50);
        break;
    case 3:
        memset(src, 3 + 1, sizeof src);
        return rt_clone_outside(src, sizeof src);
    case 4: {
        rt_chan *c = rt_chan_new(1);
        ck_require(rt_send(c, memset(rt_alloc_outside(900), 5, 900)) == RT_OK);
        v = rt_recv(c);
        rt_chan_free(c);
        return v;
    }
    case 5: {
        rt_task *t = rt_spawn(returns_a_kind, (void *)(uintptr_t)100);
        ck_require(t != NULL && rt_join(t, (void **)&v) == RT_OK);
        return v; /* 1234 bytes of 6 */
    }
    case 6:
        return rt_alloc_outside(0);
    case 7:
        return NULL;
    case 100:
        return memset(rt_alloc_outside(1234), 6, 1234);
    default:
        rt_panic("a kind of no result");
    }
    return memset(v, kind + 1, result_bytes[kind]);
}

static void joins_every_kind(const char *who)
{
    void *keep = rt_alloc_outside(10);
    for (int kind = 0; kind < RESULT_KINDS; kind++) {
        unsigned char *r = (void *)&keep;
        size_t before = rt_held();
        rt_task *t = rt_spawn(returns_a_kind, (void *)(uintptr_t)kind);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(rt_join(t, (void **)&r), RT_OK);
        ck_assert_msg(rt_held() == before + result_bytes[kind],
                      "%s, result %d of %zu bytes: held %zu, was %zu", who, kind,
                      result_bytes[kind], rt_held(), before);
        if (kind == 7) {
            ck_assert_ptr_null(r);
            continue;
        }
        ck_assert_ptr_nonnull(r);
        for (size_t i = 0; i < result_bytes[kind]; i++)
            ck_require(r[i] == (unsigned char)(kind + 1));
        rt_free(r);
        ck_assert_msg(rt_held() == before, "%s, result %d freed: held %zu, was %zu", who, kind,
                      rt_held(), before);
    }
    void *r = keep;
    ck_assert_int_eq(rt_join(rt_spawn(returns_a_kind, (void *)(uintptr_t)99), &r),
                     RT_PANICKED);
    ck_assert_ptr_null(r);
    ck_assert_uint_eq(rt_held(), 10);
    rt_free(keep);
}

static void *joins_every_kind_as_a_task(void *unused)
{
    (void)unused;
    joins_every_kind("a task");
    return NULL;
}

START_TEST(a_result_counts_against_whichever_task_joins_with_the_bytes_it_ends_with)
{
    init_fixed(64 * KIB);
    joins_every_kind("main");
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_int_eq(run_task(joins_every_kind_as_a_task, NULL, NULL), RT_OK);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

static void *joins_a_big_result(void *arg)
{
    void **seen = arg;
    void *s;
    rt_set_strategy(rt_fixed_strategy(256 * KIB));
    rt_task *t = rt_spawn(returns_text, (void *)(uintptr_t)RT_CHUNK_SIZE);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_join(t, &s); /* 64 KiB does not fit a 16 KiB budget: panics here */
    *seen = s;
    return NULL;
}

static void joiner_panics(void *unused)
{
    (void)unused;
    void *seen = NULL;
    init_fixed(16 * KIB);
    chunks_reset();
    if (run_task(joins_a_big_result, &seen, NULL) != RT_PANICKED || seen != NULL)
        _exit(10);
    if (chunks_counted().mallocs != 1 || chunks_counted().frees != 1)
        _exit(11); /* the result was freed with the joiner */
    if (rt__blocks_live() != 1)
        _exit(12);
}

START_TEST(a_joiner_the_result_does_not_fit_panics)
{
    struct death d = run_child(joiner_panics, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 1 panicked: a value taken over of 65536 "
                                        "bytes does not fit its budget"));
}
END_TEST

/* Results as big as 2^32 and past it move with every byte: the task that
** made one holds exactly its size, the joiner holds exactly that after
** the join (main, and a task with room for it), nothing is left with the
** ended task, and a joiner whose budget is 4 GiB cannot take one byte
** more than that: it panics in its join. Virtual memory only: nothing
** writes the values. */
#define G4 ((size_t)1 << 32)
/* sizes either side of 2^32, and past it by more than a chunk */
static const size_t past_4_gib[] = {G4 - 16, G4, G4 + 1, G4 + 16, G4 + 64 * KIB + 8};
static void *returns_untouched(void *arg)
{
    size_t n = (size_t)(uintptr_t)arg;
    void *v = rt_alloc_outside(n);
    ck_require(v != NULL);
    ck_require(rt_held() == n);
    return v;
}

static void *joins_untouched(void *arg)
{
    size_t n = (size_t)(uintptr_t)arg;
    void *v = NULL;
    rt_set_strategy(rt_fixed_strategy(2 * G4));
    rt_task *t = rt_spawn(returns_untouched, arg);
    ck_require(t != NULL);
    ck_require(rt_join(t, &v) == RT_OK && v != NULL);
    ck_require(rt_held() == n);
    rt_free(v);
    ck_require(rt_held() == 0);
    return NULL;
}

START_TEST(a_result_past_4_gib_moves_to_its_joiner_with_every_byte)
{
    if (UNDER_SANITIZER)
        return;
    init_fixed(2 * G4);
    for (size_t i = 0; i < sizeof past_4_gib / sizeof past_4_gib[0]; i++) {
        void *v = NULL;
        rt_set_strategy(rt_fixed_strategy(2 * G4));
        ck_assert_int_eq(run_task(returns_untouched, (void *)(uintptr_t)past_4_gib[i], &v), RT_OK);
        ck_assert_msg(rt_held() == past_4_gib[i], "main holds %zu after joining %zu", rt_held(),
                      past_4_gib[i]);
        rt_free(v);
        ck_assert_uint_eq(rt_held(), 0);
        rt_set_strategy(rt_fixed_strategy(2 * G4 + 64 * KIB));
        ck_assert_int_eq(run_task(joins_untouched, (void *)(uintptr_t)past_4_gib[i], NULL), RT_OK);
        /* a joiner of 4 GiB takes exactly up to its budget */
        rt_set_strategy(rt_fixed_strategy(G4));
        rt_task *j = rt_spawn(joins_untouched, (void *)(uintptr_t)past_4_gib[i]);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(rt_join(j, NULL), past_4_gib[i] <= G4 ? RT_OK : RT_PANICKED);
        ck_assert_uint_eq(rt__tasks_unjoined(), 0);
        ck_assert_uint_eq(rt__blocks_live(), 1);
    }
}
END_TEST
/* Values as big as 2^32 and past it, sent on a channel and stored in a
** shared value, move with every byte: the sender holds each until it is
** received, the receiver then holds exactly its size; a store moves it
** from the task's count to the value's block and an unstore back, by
** exactly its size; the sender, joined, holds none of it. Virtual memory
** only: nothing writes the values. */
struct big_send {
    rt_chan *c;
    size_t n;
};

static void *sends_a_big_value(void *arg)
{
    struct big_send *b = arg;
    void *v = rt_alloc_outside(b->n);
    ck_require(v != NULL && rt_held() == b->n);
    ck_require(rt_send(b->c, v) == RT_OK);
    return NULL;
}

static rt_shared *big_owned;
static void *big_value;

static void stores_big(void *value, void *ctx)
{
    (void)value;
    size_t n = *(size_t *)ctx;
    ck_require(rt_store(big_owned, big_value) == RT_OK);
    ck_require(rt_held() == 0);
    ck_require(rt_shared_held(big_owned) >= n);
}

static void unstores_big(void *value, void *ctx)
{
    (void)value;
    size_t n = *(size_t *)ctx;
    ck_require(rt_unstore(big_owned, big_value) == big_value);
    ck_require(rt_held() == n);
}

START_TEST(values_past_4_gib_move_on_channels_and_into_shared_values_with_every_byte)
{
    if (UNDER_SANITIZER)
        return;
    init_fixed(2 * G4);
    for (size_t i = 0; i < sizeof past_4_gib / sizeof past_4_gib[0]; i++) {
        struct big_send b = {rt_chan_new(1), past_4_gib[i]};
        rt_set_strategy(rt_fixed_strategy(2 * G4));
        rt_task *t = rt_spawn(sends_a_big_value, &b);
        ck_assert_ptr_nonnull(t);
        void *v = rt_recv(b.c);
        ck_assert_ptr_nonnull(v);
        ck_assert_msg(rt_held() == past_4_gib[i], "main holds %zu after receiving %zu", rt_held(),
                      past_4_gib[i]);
        ck_assert_int_eq(rt_join(t, NULL), RT_OK);
        rt_chan_free(b.c);

        size_t base;
        int64_t zero = 0;
        big_owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 2 * G4);
        base = rt_shared_held(big_owned);
        big_value = v;
        ck_assert_int_eq(rt_update(big_owned, stores_big, &b.n), RT_OK);
        ck_assert_msg(rt_shared_held(big_owned) == base + past_4_gib[i],
                      "the value holds %zu after a store of %zu", rt_shared_held(big_owned) - base,
                      past_4_gib[i]);
        ck_assert_uint_eq(rt_held(), 0);
        ck_assert_int_eq(rt_update(big_owned, unstores_big, &b.n), RT_OK);
        ck_assert_uint_eq(rt_shared_held(big_owned), base);
        ck_assert_uint_eq(rt_held(), past_4_gib[i]);
        rt_free(v);
        rt_shared_free(big_owned);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

#undef G4

START_TEST(a_result_nobody_takes_is_freed)
{
    init_fixed(256 * KIB);
    chunks_reset();
    rt_set_strategy(rt_fixed_strategy(256 * KIB));
    rt_task *t = rt_spawn(returns_text, (void *)(uintptr_t)RT_CHUNK_SIZE);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(chunks_counted().mallocs, 1);
    ck_assert_uint_eq(chunks_counted().frees, 1);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* A joiner whose budget cannot take the result panics in its join; the
** result is freed with it, and so is the record of the task it joined:
** once main has joined the joiner, nothing either task made is left. The
** plain build checks the panic and the tables; a record left behind is
** LeakSanitizer's to see (the asan oracle), as glibc's own counts move
** with its thread arenas. For a result one byte past the budget, and one
** far past it. */
static void *joins_a_result_too_big(void *arg)
{
    void *got = NULL;
    rt_set_strategy(rt_fixed_strategy(256 * KIB)); /* the child's: the result fits there */
    rt_task *t = rt_spawn(returns_text, arg);
    ck_require(t != NULL);
    rt_join(t, &got); /* panics: the result does not fit */
    ck_abort_msg("a result that does not fit was taken in");
    return got;
}

START_TEST(a_joiner_the_result_does_not_fit_leaves_nothing_allocated)
{
    static const size_t sizes[] = {16 * KIB + 1, 64 * KIB};
    init_fixed(256 * KIB);
    for (int i = 0; i < 2; i++) {
        rt_set_strategy(rt_fixed_strategy(16 * KIB));
        rt_task *j = rt_spawn(joins_a_result_too_big, (void *)(uintptr_t)sizes[i]);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(rt_join(j, NULL), RT_PANICKED);
        ck_assert_uint_eq(rt__tasks_unjoined(), 0);
        ck_assert_uint_eq(rt__blocks_live(), 1);
    }
}
END_TEST

START_TEST(a_block_that_cannot_be_made_is_no_task)
{
    size_t *b;
    init_fixed(64 * KIB);
    rt_set_strategy(rt_fixed_strategy((size_t)1 << 40));
    errno = 0;
    ck_assert_ptr_null(rt_spawn(report_budget, NULL));
    ck_assert_int_eq(errno, ENOMEM);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    /* the failed spawn is not counted among the tasks running */
    rt_set_strategy(rt_default_strategy());
    ck_assert_int_eq(run_task(report_budget, NULL, (void **)&b), RT_OK);
    ck_assert_uint_eq(*b, expected_default(2));
    rt_free(b);
}
END_TEST

/* A task stops counting among the tasks running when it ends, not when it
** is joined (D7): a block made after one task has ended and before it is
** joined is sized for main's and the new one. The end is seen when the
** task's block is gone (it goes right before the count falls), waited for
** with a deadline only a hang reaches; the count is then given two seconds
** more for the one statement between, so a count that falls only at the
** join fails in seconds, not at the case's timeout. */
#if RT_TESTING /* the count of tasks running is a test build's (task.c) */
static size_t running_seen;

static size_t record_running(void *ctx, size_t running)
{
    (void)ctx;
    running_seen = running;
    return 64 * KIB;
}

START_TEST(an_ended_task_is_not_running_before_its_join)
{
    init_fixed(64 * KIB);
    rt_task *ended = rt_spawn(returns_nothing, NULL);
    ck_assert_ptr_nonnull(ended);
    const atomic_size_t *running = rt__tasks_running_at;
    for (int i = 0; i < 100000 && rt__blocks_live() != 1; i++)
        usleep(100); /* 10 s at most: the task has ended long before */
    ck_assert_uint_eq(rt__blocks_live(), 1);
    for (int i = 0; i < 20000 && atomic_load(running) != 1; i++)
        usleep(100);
    ck_assert_uint_eq(atomic_load(running), 1);
    rt_set_strategy((rt_strategy){record_running, NULL});
    rt_task *next = rt_spawn(returns_nothing, NULL);
    ck_assert_ptr_nonnull(next);
    ck_assert_uint_eq(running_seen, 2); /* main's and the new one */
    ck_assert_int_eq(rt_join(next, NULL), RT_OK);
    ck_assert_int_eq(rt_join(ended, NULL), RT_OK);
    ck_assert_uint_eq(atomic_load(running), 1);
}
END_TEST

/* The strategy is told the tasks running, the new one included, exactly,
** whichever way the others went: one that panicked and ended (not yet
** joined), one spawned by a task, a spawn whose block could not be made
** (never counted), one that returned. Ends are waited for on the count
** itself, with a deadline only a hang reaches. */
struct running_log {
    size_t seen, bytes;
};

static size_t log_running(void *ctx, size_t running)
{
    struct running_log *l = ctx;
    l->seen = running;
    return l->bytes;
}

static void wait_running(size_t n)
{
    const atomic_size_t *running = rt__tasks_running_at;
    for (int i = 0; i < 100000 && atomic_load(running) != n; i++)
        usleep(100); /* 10 s at most */
    ck_assert_uint_eq(atomic_load(running), n);
}

static void *panics_when_told(void *go)
{
    rt_free(rt_recv(go));
    rt_panic("told to");
}

struct spawns_one {
    struct running_log *log;
    size_t seen_inside, seen_failed, seen_after;
    rt_chan *go;
};

static void *spawns_from_a_task(void *arg)
{
    struct spawns_one *s = arg;
    rt_free(rt_recv(s->go)); /* main has read what its spawn of this one logged */
    rt_task *t = rt_spawn(returns_nothing, NULL); /* main, this and the new one */
    s->seen_inside = s->log->seen;
    ck_require(t != NULL && rt_join(t, NULL) == RT_OK);
    s->log->bytes = (size_t)1 << 40; /* no block */
    ck_require(rt_spawn(returns_nothing, NULL) == NULL);
    s->seen_failed = s->log->seen;
    s->log->bytes = 64 * KIB;
    t = rt_spawn(returns_nothing, NULL); /* the failed one was never counted */
    s->seen_after = s->log->seen;
    ck_require(t != NULL && rt_join(t, NULL) == RT_OK);
    return NULL;
}

START_TEST(the_strategy_is_told_the_tasks_running_exactly_however_the_others_ended)
{
    struct running_log log = {0, 64 * KIB};
    init_fixed(64 * KIB);
    rt_set_strategy((rt_strategy){log_running, &log});
    rt_chan *go = rt_chan_new(4);

    rt_task *a = rt_spawn(panics_when_told, go);
    ck_assert_uint_eq(log.seen, 2);
    ck_assert_int_eq(rt_send(go, rt_alloc_outside(1)), RT_OK);
    wait_running(1); /* a panicked and ended: not running, not joined */

    struct spawns_one s = {&log, 0, 0, 0, go};
    rt_task *b = rt_spawn(spawns_from_a_task, &s);
    ck_assert_uint_eq(log.seen, 2);
    ck_assert_int_eq(rt_send(go, rt_alloc_outside(1)), RT_OK);
    ck_assert_int_eq(rt_join(b, NULL), RT_OK);
    ck_assert_uint_eq(s.seen_inside, 3);
    ck_assert_uint_eq(s.seen_failed, 3);
    ck_assert_uint_eq(s.seen_after, 3);

    rt_task *c = rt_spawn(returns_nothing, NULL); /* b returned: main and c */
    ck_assert_uint_eq(log.seen, 2);
    ck_assert_int_eq(rt_join(c, NULL), RT_OK);
    ck_assert_int_eq(rt_join(a, NULL), RT_PANICKED);
    wait_running(1);
    rt_chan_free(go);
}
END_TEST
#endif /* RT_TESTING */

/* The task being made counts among those running from the moment its
** spawn asks the strategy, before its block exists (docs/budgets.md, D7):
** a strategy that spawns from inside its own call is told one more than
** the call around it; and two spawns at once, the first held inside its
** strategy call until the second has asked, are told main, the task that
** spawns, and each new one: 3, then 4. */
struct told {
    size_t outer, inner;
    int calls;
    rt_task *inner_task;
    int armed, second_asked;
};
static _Thread_local bool holds_its_call;

static size_t spawns_inside_its_call(void *ctx, size_t running)
{
    struct told *t = ctx;
    if (t->calls++ == 0) {
        t->outer = running;
        t->inner_task = rt_spawn(returns_nothing, NULL);
    } else {
        t->inner = running;
    }
    return 64 * KIB;
}

static size_t held_until_the_second_asks(void *ctx, size_t running)
{
    struct told *t = ctx;
    if (holds_its_call) {
        __atomic_store_n(&t->outer, running, __ATOMIC_RELEASE);
        for (int i = 0; i < 100000 && !__atomic_load_n(&t->second_asked, __ATOMIC_ACQUIRE); i++)
            usleep(100); /* 10 s at most: a deadline only a hang reaches */
    } else if (t->armed) { /* main's, once the other is held */
        t->inner = running;
        __atomic_store_n(&t->second_asked, 1, __ATOMIC_RELEASE);
    }
    return 64 * KIB;
}

static void *spawns_holding_its_call(void *unused)
{
    (void)unused;
    holds_its_call = true;
    rt_task *t = rt_spawn(returns_nothing, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    return NULL;
}

START_TEST(a_task_being_made_counts_among_those_running_before_its_block_exists)
{
    init_fixed(64 * KIB);
    struct told nested = {0};
    rt_set_strategy((rt_strategy){spawns_inside_its_call, &nested});
    rt_task *outer = rt_spawn(returns_nothing, NULL);
    ck_assert_ptr_nonnull(outer);
    ck_assert_ptr_nonnull(nested.inner_task);
    ck_assert_uint_eq(nested.outer, 2); /* main's and the outer one */
    ck_assert_uint_eq(nested.inner, 3); /* and the inner one */
    ck_assert_int_eq(rt_join(nested.inner_task, NULL), RT_OK);
    ck_assert_int_eq(rt_join(outer, NULL), RT_OK);

    struct told both = {0};
    rt_set_strategy((rt_strategy){held_until_the_second_asks, &both});
    rt_task *spawner = rt_spawn(spawns_holding_its_call, NULL); /* told 2: main's and it */
    ck_assert_ptr_nonnull(spawner);
    for (int i = 0; i < 100000 && __atomic_load_n(&both.outer, __ATOMIC_ACQUIRE) == 0; i++)
        usleep(100); /* the spawner's spawn is inside its strategy call */
    ck_assert_uint_eq(__atomic_load_n(&both.outer, __ATOMIC_ACQUIRE), 3);
    both.armed = 1;
    rt_task *second = rt_spawn(returns_nothing, NULL);
    ck_assert_ptr_nonnull(second);
    ck_assert_uint_eq(both.inner, 4); /* main, the spawner, its new one, this one */
    ck_assert_int_eq(rt_join(second, NULL), RT_OK);
    ck_assert_int_eq(rt_join(spawner, NULL), RT_OK);
}
END_TEST

/* Bytes a receiver took off main's count make room for what main takes in
** next, whatever takes it in: a join's result, a receive, an outside
** allocation, a block allocation, an outside or a block value grown, an
** unstore of a value stored before the send. Main sends 40,000 bytes that a task receives; until main's
** slow path settles, its block still counts them; then main takes 30,000
** more in a 64 KiB budget, which fits only once settled, in or out of a
** door that allocates from the task's block. No call between reads main's
** figures (rt_held settles). */
enum { SENT = 40000, TAKEN = 30000 };

static void *return_taken(void *unused)
{
    (void)unused;
    return memset(rt_alloc_outside(TAKEN), 0x7c, TAKEN);
}

static void *send_taken(void *arg)
{
    (void)rt_send(arg, memset(rt_alloc_outside(TAKEN), 0x7d, TAKEN));
    return NULL;
}

static void alloc_taken_in_door(void *value, void *ctx)
{
    (void)value;
    *(void **)ctx = memset(rt_alloc(TAKEN), 0x7c, TAKEN);
}

static void alloc_taken_in_access(const void *value, void *ctx)
{
    (void)value;
    *(void **)ctx = memset(rt_alloc(TAKEN), 0x7c, TAKEN);
}

static void store_taken(void *value, void *ctx)
{
    (void)value;
    void *v = memset(rt_alloc_outside(TAKEN), 0x7e, TAKEN);
    if (rt_store(ctx, v) != RT_OK)
        _exit(9);
    *(void **)value = v;
}

static void unstore_taken(void *value, void *ctx)
{
    void **got = ctx;
    *got = rt_unstore(*got, *(void **)value);
}

static void take_in_after_a_receive(void *how)
{
    int way = (int)(uintptr_t)how;
    init_fixed(64 * KIB);
    rt_shared *holder = NULL;
    void *small = NULL;
    if (way == 8) { /* a value stored before the send, unstored after it */
        static void *none;
        holder = rt_shared_new(RT_OWNED, sizeof none, &none, 64 * KIB);
        if (rt_update(holder, store_taken, holder) != RT_OK)
            _exit(9);
    } else if (way == 6) {
        small = rt_alloc_outside(16);
    } else if (way == 7) {
        small = rt_alloc(16);
    }
    rt_chan *c = rt_chan_new(1), *back = rt_chan_new(1);
    if (rt_send(c, rt_alloc_outside(SENT)) != RT_OK)
        _exit(3);
    rt_task *r = rt_spawn(receive_and_free, c);
    if (r == NULL || rt_join(r, NULL) != RT_OK)
        _exit(4);
    void *got = NULL;
    if (way == 0) { /* a join's result */
        rt_task *t = rt_spawn(return_taken, NULL);
        if (t == NULL || rt_join(t, &got) != RT_OK)
            _exit(5);
    } else if (way == 1) { /* a receive */
        rt_task *t = rt_spawn(send_taken, back);
        if (t == NULL)
            _exit(5);
        got = rt_recv(back);
        if (rt_join(t, NULL) != RT_OK)
            _exit(6);
    } else if (way == 2) { /* an outside allocation */
        got = memset(rt_alloc_outside(TAKEN), 0x7c, TAKEN);
    } else if (way == 3) { /* a block allocation */
        got = memset(rt_alloc(TAKEN), 0x7c, TAKEN);
    } else if (way == 6 || way == 7) { /* an outside value, a block value, grown */
        got = memset(rt_realloc(small, TAKEN), 0x7c, TAKEN);
    } else if (way == 8) { /* an unstore */
        got = holder;
        if (rt_update(holder, unstore_taken, &got) != RT_OK)
            _exit(8);
    } else { /* a block allocation inside a door that allocates from the task's block */
        static const char zero[16];
        rt_shared *sh = rt_shared_new(RT_COPY, sizeof zero, zero, 4096);
        rt_status st = way == 4 ? rt_update(sh, alloc_taken_in_door, &got)
                                : rt_access(sh, alloc_taken_in_access, &got);
        if (st != RT_OK)
            _exit(8);
        rt_shared_free(sh);
    }
    if (got == NULL || rt_held() < TAKEN || rt_held() > TAKEN + 64)
        _exit(7);
    _exit(0);
}

START_TEST(room_a_receiver_made_serves_whatever_main_takes_in_next)
{
    static const char *ways[] = {"a join's result", "a receive", "an outside allocation",
                                 "a block allocation", "a block allocation in an RT_COPY update",
                                 "a block allocation in rt_access", "an outside value grown",
                                 "a block value grown", "an unstore"};
    for (uintptr_t way = 0; way < 9; way++) {
        struct death d = run_child(take_in_after_a_receive, (void *)way);
        ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                      "%s after a receive: signal %d exit %d; stderr: %s", ways[way],
                      d.signal, d.exit_status, d.err);
    }
}
END_TEST

/* ---- outside values and the hand-over (D8, D9) --------------------------- */

START_TEST(a_handed_over_value_arrives_where_it_was_built)
{
    init_fixed(64 * KIB);
    char *built = rt_alloc_outside(200);
    strcpy(built, "built outside the block");
    ck_assert_uint_eq(rt_held(), 200);
    char *owned = rt_hand_over(built);
    ck_assert_ptr_eq(owned, built); /* no copy */
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_str_eq(owned, "built outside the block");
    free(owned); /* the foreign owner's free */
}
END_TEST

static void hand_over_a_block_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    char *v = rt_alloc(50);
    strcpy(v, "in the block");
    size_t before = rt_held();
    errno = 0;
    if (rt_hand_over(v) != NULL || errno != EINVAL)
        _exit(10);
    if (rt_held() != before || strcmp(v, "in the block") != 0)
        _exit(11);
    char *copy = rt_clone_outside(v, 50);
    if (copy == v || strcmp(copy, v) != 0 || rt_held() != before + 50)
        _exit(12);
    if (rt_hand_over(copy) != copy)
        _exit(13);
    free(copy);
    rt_free(v);
    if (rt_held() != 0)
        _exit(14);
}

START_TEST(a_block_value_is_refused_and_the_message_names_the_copy)
{
    struct death d = run_child(hand_over_a_block_value, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: rt_hand_over: "));
    ck_assert_ptr_nonnull(strstr(d.err, "rt_clone_outside"));
}
END_TEST

static void stores_it(void *value, void *ctx)
{
    (void)value;
    ck_assert_int_eq(rt_store(((void **)ctx)[0], ((void **)ctx)[1]), RT_OK);
}

START_TEST(a_stored_value_leaves_the_tasks_count)
{
    init_fixed(64 * KIB);
    void *keep = rt_alloc_outside(10), *v = rt_alloc_outside(300);
    rt_shared *s = rt_shared_new(RT_OWNED, 16, (char[16]){0}, 4 * KIB);
    ck_assert_uint_eq(rt_held(), 310);
    ck_assert_int_eq(rt_update(s, stores_it, (void *[]){s, v}), RT_OK);
    ck_assert_uint_eq(rt_held(), 10);
    rt_free(keep);
    rt_shared_free(s);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* ---- the door hook -------------------------------------------------------- */

static int unwound;

static void count_unwind(struct rt_door *d)
{
    (void)d;
    unwound++;
    fprintf(stderr, "unwound %d\n", unwound);
}

static void *allocates_in_a_door(void *arg)
{
    struct rt_block *value_block = arg;
    struct rt_door outer = {NULL, NULL, count_unwind, NULL};
    struct rt_door inner = {&outer, value_block, count_unwind, NULL};
    struct rt_hot *h = rt_hot();
    void *mine = rt_alloc(10);
    h->door = &outer;
    void *still_mine = rt_alloc(10); /* a door without a block: the task's */
    ck_assert(!rt__block_owns(value_block, still_mine));
    h->door = &inner;
    void *its = rt_alloc(100);
    ck_assert(rt__block_owns(value_block, its));
    ck_assert_uint_eq(rt__block_held(value_block), 112);
    its = rt_realloc(its, 200);
    ck_assert(rt__block_owns(value_block, its));
    rt_free(mine); /* a task value freed inside the door goes to the task */
    rt_free(its);
    ck_assert_uint_eq(rt__block_held(value_block), 0);
    rt_alloc(2000); /* the value's block is 1 KiB: panics, unwinds both doors */
    ck_abort_msg("a full door block did not panic");
    return NULL;
}

static void door_block_full(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct rt_block *b = rt__block_new(1024);
    if (run_task(allocates_in_a_door, b, NULL) != RT_PANICKED)
        _exit(10);
    if (rt__block_held(b) != 0)
        _exit(11);
    rt__block_delete(b);
}

START_TEST(a_door_with_a_block_allocates_there_and_a_panic_unwinds_it)
{
    struct death d = run_child(door_block_full, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "panicked: an allocation of 2000 bytes does not fit its "
                                        "budget\nunwound 1\nunwound 2\n"));
}
END_TEST

/* Inside a door without a block everything is the task's; inside one with
** a block, the task's values stay the task's and the door's stay in it. */
static void *works_in_doors(void *arg)
{
    struct rt_block *vb = arg;
    struct rt_door plain = {NULL, NULL, count_unwind, NULL};
    struct rt_door owned = {&plain, vb, count_unwind, NULL};
    struct rt_hot *h = rt_hot();
    rt_chan *c = rt_chan_new(2);
    char *mine = rt_alloc(10), *out = rt_alloc_outside(10);

    h->door = &plain;
    mine = rt_realloc(mine, 20);
    void *tmp = rt_alloc(30);
    ck_assert(!rt__block_owns(vb, tmp));
    rt_free(tmp);
    ck_assert_int_eq(rt_send(c, out), RT_OK);
    ck_assert_ptr_eq(rt_recv(c), out);
    ck_assert_ptr_eq(rt_hand_over(out), out);
    free(out);
    ck_assert_int_eq(rt_send(c, mine), RT_REFUSED); /* the task's block value */
    errno = 0;
    ck_assert_ptr_null(rt_hand_over(mine));
    ck_assert_int_eq(errno, EINVAL);

    h->door = &owned;
    mine = rt_realloc(mine, 600); /* a task value grows in the task's block */
    ck_assert(!rt__block_owns(vb, mine));
    char *its = rt_alloc(16);
    ck_assert(rt__block_owns(vb, its));
    ck_assert_int_eq(rt_send(c, its), RT_REFUSED); /* a block value, the door's */
    ck_assert_int_eq(rt_send(c, mine), RT_REFUSED); /* and the task's, in a door with a block */
    errno = 0;
    ck_assert_ptr_null(rt_hand_over(mine));
    ck_assert_int_eq(errno, EINVAL);
    out = rt_alloc_outside(10);
    ck_assert_int_eq(rt_send(c, out), RT_OK);
    ck_assert_ptr_eq(rt_recv(c), out);
    errno = 0;
    ck_assert_ptr_null(rt_hand_over(its));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_eq(rt_hand_over(out), out);
    free(out);
    ck_assert_uint_eq(rt__block_held(vb), 32);
    rt_free(its);
    ck_assert_uint_eq(rt__block_held(vb), 0);
    ck_assert_uint_eq(rt_held(), 608); /* mine: a chunk of 600 + 8 */

    h->door = NULL;
    rt_free(mine);
    rt_chan_free(c);
    ck_assert_uint_eq(rt_held(), 0);
    return NULL;
}

START_TEST(values_inside_doors_stay_where_they_belong)
{
    init_fixed(64 * KIB);
    struct rt_block *b = rt__block_new(1024);
    ck_assert_int_eq(run_task(works_in_doors, b, NULL), RT_OK);
    rt__block_delete(b);
}
END_TEST

static void *grows_past_the_door_block(void *value_block)
{
    struct rt_door owned = {NULL, value_block, count_unwind, NULL};
    void *its;
    rt_hot()->door = &owned;
    its = rt_alloc(100);
    rt_realloc(its, 2000); /* the value's block is 1 KiB */
    ck_abort_msg("a realloc past the door's block did not panic");
    return NULL;
}

static void door_realloc_full(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    struct rt_block *b = rt__block_new(1024);
    if (run_task(grows_past_the_door_block, b, NULL) != RT_PANICKED)
        _exit(10);
}

START_TEST(a_realloc_past_a_door_block_panics)
{
    struct death d = run_child(door_realloc_full, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "panicked: a reallocation of 2000 bytes does not fit its "
                                        "budget\nunwound 1\n"));
}
END_TEST

/* ---- the task's figures inside every door ------------------------------- */

/* rt_held and rt_budget are the current task's figures, in every door as
** at a plain call: a door that allocates from its value's block (an
** RT_OWNED update, an rt_update_all in place, an RT_OWNED build or
** rebuild) moves what rt_alloc takes, never what rt_held or rt_budget
** read. An outside value made, freed or handed over inside any door counts
** against the task, by exactly its bytes. On main and on a task of another
** budget, so a figure read from the wrong task or block shows. */
struct door_probe {
    size_t held, budget; /* the task's, outside the door */
    rt_chan *in;         /* a value of 333 bytes queued for each run, its sender ended */
    bool in_block;       /* whether this door's rt_alloc takes the value's block */
    int runs, bad_line;
    size_t bad_figure;
};

#define PROBE_NEED(pr, cond, figure)                                                 \
    do {                                                                            \
        if (!(cond) && (pr)->bad_line == 0)                                          \
            (pr)->bad_line = __LINE__, (pr)->bad_figure = (figure);                 \
    } while (0)

static void probe_figures(struct door_probe *pr)
{
    size_t h = rt_held();
    pr->runs++;
    PROBE_NEED(pr, h == pr->held, h);
    PROBE_NEED(pr, rt_budget() == pr->budget, rt_budget());
    void *o = rt_alloc_outside(100);
    PROBE_NEED(pr, rt_held() == h + 100, rt_held());
    void *p = rt_alloc(50); /* a chunk of 64 */
    PROBE_NEED(pr, rt_held() == h + 100 + (pr->in_block ? 0 : 64), rt_held());
    PROBE_NEED(pr, rt_budget() == pr->budget, rt_budget());
    rt_free(p);
    PROBE_NEED(pr, rt_held() == h + 100, rt_held());
    void *given = rt_alloc_outside(30);
    PROBE_NEED(pr, rt_held() == h + 130, rt_held());
    PROBE_NEED(pr, rt_hand_over(given) == given, 0);
    free(given);
    PROBE_NEED(pr, rt_held() == h + 100, rt_held());
    /* a value received, sent back and received again, and a block value
    ** refused: all on the task's count, never the door's block */
    unsigned char *r = rt_recv(pr->in);
    PROBE_NEED(pr, r != NULL && r[0] == 0x33 && r[332] == 0x33, 0);
    PROBE_NEED(pr, rt_held() == h + 433, rt_held());
    rt_chan *back = rt_chan_new(1);
    PROBE_NEED(pr, rt_send(back, r) == RT_OK, 0);
    PROBE_NEED(pr, rt_held() == h + 433, rt_held());
    PROBE_NEED(pr, rt_recv(back) == r, 0);
    PROBE_NEED(pr, rt_held() == h + 433, rt_held());
    p = rt_alloc(20);
    PROBE_NEED(pr, rt_send(back, p) == RT_REFUSED, 0);
    rt_free(p);
    rt_chan_free(back);
    rt_free(r);
    PROBE_NEED(pr, rt_held() == h + 100, rt_held());
    /* an outside value grown and shrunk in the door stays outside, the task's */
    o = rt_realloc(o, 300);
    PROBE_NEED(pr, rt_held() == h + 300, rt_held());
    o = rt_realloc(o, 100);
    PROBE_NEED(pr, rt_held() == h + 100, rt_held());
    void *foreign = o;
    PROBE_NEED(pr, rt_hand_over(o) == o, 0); /* still an outside value */
    PROBE_NEED(pr, rt_held() == h, rt_held());
    o = rt_clone_outside(memset(foreign, 0x44, 100), 100); /* the task's again, a copy */
    free(foreign);
    PROBE_NEED(pr, rt_held() == h + 100 && ((unsigned char *)o)[99] == 0x44, rt_held());
    rt_free(o);
    PROBE_NEED(pr, rt_held() == h, rt_held());
}

static void *sends_a_value_per_door(void *c)
{
    for (int i = 0; i < 12; i++)
        ck_require(rt_send(c, memset(rt_alloc_outside(333), 0x33, 333)) == RT_OK);
    return NULL;
}

static void probe_update(void *value, void *ctx)
{
    (void)value;
    probe_figures(ctx);
}

static void probe_update_all(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb;
    probe_figures(ctx);
}

static void probe_access(const void *value, void *ctx)
{
    (void)value;
    probe_figures(ctx);
}

static void panic_in_it(void *value, void *ctx)
{
    (void)value, (void)ctx;
    rt_panic("poisons it");
}

static void *panics_in_an_update(void *s)
{
    rt_update(s, panic_in_it, NULL);
    return NULL;
}

static void check_probe(const char *where, const char *door, struct door_probe *pr, int runs)
{
    ck_assert_msg(pr->runs == runs && pr->bad_line == 0,
                  "%s, %s: %d runs of %d; line %d read %zu (held %zu, budget %zu outside)",
                  where, door, pr->runs, runs, pr->bad_line, pr->bad_figure, pr->held,
                  pr->budget);
    pr->runs = 0;
}

static void *probes_every_door(void *where)
{
    /* what the task holds across the doors: 1000 outside, a chunk of 208 */
    void *keep_out = rt_alloc_outside(1000), *keep_in = rt_alloc(200);
    struct door_probe pr = {.held = 1208, .budget = rt_budget(), .in = rt_chan_new(12)};
    rt_shared *copy = rt_shared_new(RT_COPY, 16, (char[16]){0}, 4 * KIB);
    rt_shared *owned = rt_shared_new(RT_OWNED, 16, (char[16]){0}, 4 * KIB);
    rt_shared *owned2 = rt_shared_new(RT_OWNED, 16, (char[16]){0}, 4 * KIB);

    ck_assert_int_eq(rt_join(rt_spawn(sends_a_value_per_door, pr.in), NULL), RT_OK);
    if (rt_held() != pr.held)
        ck_abort_msg("%s: held %zu before the doors", (char *)where, rt_held());
    pr.in_block = false;
    ck_assert_int_eq(rt_update(copy, probe_update, &pr), RT_OK);
    check_probe(where, "rt_update of an RT_COPY value", &pr, 1);
    ck_assert_int_eq(rt_access(owned, probe_access, &pr), RT_OK);
    check_probe(where, "rt_access", &pr, 1);
    rt_shared *copy2 = rt_shared_new(RT_COPY, 16, (char[16]){0}, 4 * KIB);
    ck_assert_int_eq(rt_update_all(copy, copy2, probe_update_all, &pr), RT_OK);
    check_probe(where, "rt_update_all of two RT_COPY values", &pr, 1);

    pr.in_block = true;
    ck_assert_int_eq(rt_update(owned, probe_update, &pr), RT_OK);
    check_probe(where, "rt_update of an RT_OWNED value", &pr, 1);
    ck_assert_int_eq(rt_update_all(owned, copy, probe_update_all, &pr), RT_OK);
    check_probe(where, "rt_update_all, a RT_OWNED", &pr, 1);
    ck_assert_int_eq(rt_update_all(copy, owned, probe_update_all, &pr), RT_OK);
    check_probe(where, "rt_update_all, b RT_OWNED", &pr, 1);
    ck_assert_int_eq(rt_update_all(owned, owned2, probe_update_all, &pr), RT_OK);
    check_probe(where, "rt_update_all of two RT_OWNED values", &pr, 1);

    /* a supervised value's build, and its rebuild once a task poisoned it */
    for (int kind = RT_COPY; kind <= RT_OWNED; kind++) {
        pr.in_block = kind == RT_OWNED;
        rt_shared *sup = rt_shared_supervised((rt_kind)kind, 16, probe_update, &pr, 4 * KIB);
        check_probe(where, kind == RT_OWNED ? "an RT_OWNED build" : "an RT_COPY build", &pr, 1);
        rt_task *t = rt_spawn(panics_in_an_update, sup);
        ck_assert_int_eq(rt_join(t, NULL), RT_PANICKED);
        if (kind == RT_OWNED) {
            ck_assert(rt_poisoned(sup));
            /* the rebuild, then fn: both in the fresh block */
            ck_assert_int_eq(rt_update(sup, probe_update, &pr), RT_OK);
            check_probe(where, "an RT_OWNED rebuild and its update", &pr, 2);
        } else {
            ck_assert(!rt_poisoned(sup)); /* a copy is not poisoned */
        }
        rt_shared_free(sup);
    }
    rt_shared_free(copy);
    rt_shared_free(copy2);
    rt_shared_free(owned);
    rt_shared_free(owned2);
    rt_chan_free(pr.in); /* 2 values left, the ended sender's */
    ck_assert_uint_eq(rt_held(), 1208);
    rt_free(keep_in);
    rt_free(keep_out);
    ck_assert_uint_eq(rt_held(), 0);
    return NULL;
}

START_TEST(rt_held_and_rt_budget_are_the_tasks_in_every_door)
{
    init_fixed(64 * KIB);
    probes_every_door("main");
    rt_set_strategy(rt_fixed_strategy(48 * KIB)); /* a task of another budget */
    ck_assert_int_eq(run_task(probes_every_door, "a task", NULL), RT_OK);
    ck_assert_uint_eq(rt_budget(), 64 * KIB);
}
END_TEST

/* ---- misuse --------------------------------------------------------------- */

static void *plain_thread_allocates(void *unused)
{
    (void)unused;
    rt_alloc(1);
    return NULL;
}

/* Runs fn on a thread of its own, which no task runs on, after rt_init. */
static void on_a_plain_thread(void *(*fn)(void *))
{
    pthread_t t;
    rt_init();
    pthread_create(&t, NULL, fn, NULL);
    pthread_join(t, NULL);
}

/* Every call that needs a task, made where there is none, is the violation
** of that very call: "refrt: <the call>: this thread is not a task", on a
** plain thread after rt_init and on main before it. A message that names
** another function sends the reader to the wrong call. */
static rt_shared *no_task_value; /* made by main, opened from a plain thread */
static rt_chan *no_task_chan;
static int no_task_byte;

static void read_nothing(const void *value, void *ctx)
{
    (void)value;
    (void)ctx;
}

static void write_nothing(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
}

static void write_nothing_2(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    (void)ctx;
}

struct task_call {
    const char *name;
    void (*call)(void);
};

static void call_alloc(void) { (void)rt_alloc(16); }
static void call_realloc(void) { (void)rt_realloc(&no_task_byte, 16); }
static void call_free(void) { rt_free(&no_task_byte); }
static void call_held(void) { (void)rt_held(); }
static void call_budget(void) { (void)rt_budget(); }
static void call_alloc_outside(void) { (void)rt_alloc_outside(16); }
static void call_realloc_null(void) { (void)rt_realloc(NULL, 8); }
static void call_free_null(void) { rt_free(NULL); }
static void call_clone_outside(void) { (void)rt_clone_outside(&no_task_byte, 1); }
static void call_hand_over(void) { (void)rt_hand_over(&no_task_byte); }
static void call_panic(void) { rt_panic("no task to end"); }
static void call_send(void) { (void)rt_send(no_task_chan, &no_task_byte); }
static void call_recv(void) { (void)rt_recv(no_task_chan); }
static void call_update(void) { (void)rt_update(no_task_value, write_nothing, NULL); }
static void call_access(void) { (void)rt_access(no_task_value, read_nothing, NULL); }
static void call_get(void)
{
    int out;
    (void)rt_get(no_task_value, &out);
}
static void call_update_all(void)
{
    (void)rt_update_all(no_task_value, no_task_value, write_nothing_2, NULL);
}

static const struct task_call task_calls[] = {
    {"rt_alloc", call_alloc},
    {"rt_realloc", call_realloc},
    {"rt_realloc", call_realloc_null}, /* NULL is rt_alloc, but it names the call */
    {"rt_free", call_free},
    {"rt_free", call_free_null}, /* nothing to give back, still no task */
    {"rt_held", call_held},
    {"rt_budget", call_budget},
    {"rt_alloc_outside", call_alloc_outside},
    {"rt_clone_outside", call_clone_outside},
    {"rt_hand_over", call_hand_over},
    {"rt_panic", call_panic},
    {"rt_send", call_send},
    {"rt_recv", call_recv},
    {"rt_update", call_update},
    {"rt_access", call_access},
    {"rt_get", call_get},
    {"rt_update_all", call_update_all},
};

static void *call_it(void *call)
{
    ((const struct task_call *)call)->call();
    return NULL;
}

/* Before rt_init (no value made yet): the call on main. After it: on a
** plain thread, with the value and the channel main made. */
static void task_call_without_a_task(void *arg)
{
    if (no_task_value != NULL) {
        pthread_t t;
        pthread_create(&t, NULL, call_it, arg);
        pthread_join(t, NULL);
    } else {
        call_it(arg);
    }
}

static void task_call_on_a_plain_thread(void *arg)
{
    int zero = 0;
    rt_init();
    no_task_value = rt_shared_new(RT_COPY, sizeof zero, &zero, 256);
    no_task_chan = rt_chan_new(1);
    task_call_without_a_task(arg);
}

START_TEST(a_call_that_needs_a_task_names_itself_where_there_is_none)
{
    for (size_t i = 0; i < sizeof task_calls / sizeof task_calls[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, "refrt: %s: this thread is not a task", task_calls[i].name);
        ck_assert_violation(task_call_on_a_plain_thread, (void *)&task_calls[i], want);
        /* before rt_init: no value, no channel; the calls that need none */
        if (strncmp(task_calls[i].name, "rt_send", 7) != 0 &&
            strcmp(task_calls[i].name, "rt_recv") != 0 &&
            strncmp(task_calls[i].name + 3, "update", 6) != 0 &&
            strcmp(task_calls[i].name, "rt_access") != 0 && strcmp(task_calls[i].name, "rt_get") != 0)
            ck_assert_violation(task_call_without_a_task, (void *)&task_calls[i], want);
    }
}
END_TEST

static void alloc_on_a_plain_thread(void *unused)
{
    (void)unused;
    on_a_plain_thread(plain_thread_allocates);
}

static void alloc_before_init(void *unused)
{
    (void)unused;
    rt_alloc(1);
}

static void free_a_stack_pointer(void *unused)
{
    (void)unused;
    int x;
    init_fixed(64 * KIB);
    rt_free(&x);
}

static void free_a_malloc_pointer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_free(malloc(10));
}

static void free_twice(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    void *p = rt_alloc(10);
    rt_alloc(10);
    rt_free(p);
    fputs("the second free\n", stderr); /* the violation is the second call's */
    rt_free(p);
}

static void free_an_interior_pointer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    char *p = rt_alloc(100);
    rt_free(p + 32);
}

static void realloc_an_interior_pointer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    char *p = rt_alloc(100);
    rt_realloc(p + 16, 200);
}

static void realloc_a_malloc_pointer(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_alloc_outside(8); /* a table with something in it */
    rt_realloc(malloc(10), 200);
}

static void free_outside_twice(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    void *p = rt_alloc_outside(10);
    rt_free(p);
    fputs("the second free\n", stderr); /* the violation is the second call's */
    rt_free(p);
}

static void *frees_anothers_value(void *p)
{
    rt_free(p);
    return NULL;
}

static void free_another_tasks_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    void *p = rt_alloc_outside(10);
    run_task(frees_anothers_value, p, NULL);
}

static void hand_over_unheld(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_hand_over(malloc(4));
}

static void hand_over_null(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_alloc_outside(8); /* a table with something in it */
    rt_hand_over(NULL);
}

static void *returns_nothing(void *unused)
{
    (void)unused;
    return NULL;
}

static void *returns_a_block_value(void *unused)
{
    (void)unused;
    return rt_alloc(10);
}

static void task_returns_a_block_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    run_task(returns_a_block_value, NULL, NULL);
}

/* The message names the task by its id: main's is 0, the first spawned 1,
** so the third spawned is task 3. */
static void third_task_returns_a_block_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    ck_assert_int_eq(run_task(returns_nothing, NULL, NULL), RT_OK);
    ck_assert_int_eq(run_task(returns_nothing, NULL, NULL), RT_OK);
    run_task(returns_a_block_value, NULL, NULL);
}


static void join_twice(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_task *t = rt_spawn(returns_nothing, NULL);
    if (rt_join(t, NULL) != RT_OK)
        _exit(10);
    rt_join(t, NULL); /* t was freed: reported, never read */
}

/* Zeroed memory the size of a task: a join that read it would find no sign
** that it is not one (NULL, main's), so only the table can tell. */
static void join_what_is_no_task(void *unused)
{
    (void)unused;
    static struct rt_task zeroed;
    rt_task *kept;
    init_fixed(64 * KIB);
    kept = rt_spawn(returns_nothing, NULL); /* a table of tasks to look in */
    (void)kept;
    rt_join(&zeroed, NULL);
    _exit(10);
}

/* A task that joins its own handle is the violation, in the task, at
** once: main does not join it (a join of main's would be the violation of
** a task joined already, whatever the task's own join did), it waits for
** the task's rt_join to come back, which it must not. */
struct self_join {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rt_task *self;
    int returned;
};

static void *joins_itself(void *arg)
{
    struct self_join *k = arg;
    pthread_mutex_lock(&k->lock);
    while (k->self == NULL)
        pthread_cond_wait(&k->cond, &k->lock);
    pthread_mutex_unlock(&k->lock);
    rt_join(k->self, NULL);
    pthread_mutex_lock(&k->lock);
    k->returned = 1;
    pthread_cond_signal(&k->cond);
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

static void task_joins_itself(void *unused)
{
    (void)unused;
    static struct self_join k = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
    init_fixed(64 * KIB);
    rt_task *t = rt_spawn(joins_itself, &k);
    pthread_mutex_lock(&k.lock);
    k.self = t;
    pthread_cond_broadcast(&k.cond);
    while (!k.returned)
        pthread_cond_wait(&k.cond, &k.lock);
    pthread_mutex_unlock(&k.lock);
    _exit(10); /* the task's violation ends the process before this */
}

static void stores_a_value_it_does_not_hold(void *value, void *ctx)
{
    (void)value;
    rt_store(ctx, malloc(8));
}

static void store_unheld(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_alloc_outside(8); /* a table with something in it */
    rt_shared *s = rt_shared_new(RT_OWNED, 16, (char[16]){0}, 4 * KIB);
    rt_update(s, stores_a_value_it_does_not_hold, s);
}

static void strategy_without_a_function(void *unused)
{
    (void)unused;
    rt_set_strategy((rt_strategy){NULL, NULL});
}

static void clone_null_with_bytes(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_clone_outside(NULL, 5);
}

/* NULL with n bytes is the violation at every n, also where n bytes could
** never fit the budget: the call is wrong before it is too big. */
static const size_t clone_null_sizes[] = {1, 64 * KIB - 1, 64 * KIB, 64 * KIB + 1,
                                          SIZE_MAX / 2, SIZE_MAX};

static void clone_null_with_size(void *i)
{
    init_fixed(64 * KIB);
    rt_clone_outside(NULL, clone_null_sizes[(uintptr_t)i]);
}

static void *plain_thread_clones(void *unused)
{
    (void)unused;
    char byte = 1;
    rt_clone_outside(&byte, 1);
    return NULL;
}

static void clone_on_a_plain_thread(void *unused)
{
    (void)unused;
    on_a_plain_thread(plain_thread_clones);
}

static void spawn_before_init(void *unused)
{
    (void)unused;
    rt_spawn(returns_nothing, NULL);
}

static void spawn_no_function(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_spawn(NULL, NULL);
}

static void panic_on_a_plain_thread(void *unused)
{
    (void)unused;
    rt_panic("nobody");
}

/* A task's thread runs on after fn returns: the destructors of its
** thread-specific data. It is no task by then, so a runtime call made from
** one is a contract violation, whichever order the destructors run in:
** before the runtime's own (glibc runs them in key order, so a key made
** before rt_init) or after it, when the runtime's state is gone. */
static pthread_key_t user_key;

static void destructor_asks_held(void *value)
{
    (void)value;
    rt_held();
}

static void *task_sets_user_key(void *unused)
{
    (void)unused;
    pthread_setspecific(user_key, &user_key);
    return NULL;
}

static void held_in_a_destructor(void *key_before_init)
{
    void *ignored;
    if (key_before_init != NULL)
        pthread_key_create(&user_key, destructor_asks_held);
    init_fixed(64 * KIB);
    if (key_before_init == NULL)
        pthread_key_create(&user_key, destructor_asks_held);
    rt_join(rt_spawn(task_sets_user_key, NULL), &ignored);
}

START_TEST(a_thread_whose_task_ended_is_no_task_in_its_destructors)
{
    ck_assert_violation(held_in_a_destructor, (void *)1,
                        "refrt: rt_held: this thread is not a task\n");
    ck_assert_violation(held_in_a_destructor, NULL,
                        "refrt: rt_held: this thread is not a task\n");
}
END_TEST

/* A task's result must be NULL or an outside value it holds when it
** returns: one it sent, handed over, stored, freed or a static is
** rt_spawn's violation too, named by the task's id, never an RT_OK with a
** NULL result. */
enum { GONE_SENT, GONE_HANDED_OVER, GONE_STORED, GONE_FREED, GONE_STATIC, GONE_KINDS };
static char a_static[16];
static rt_chan *gone_chan;
static rt_shared *gone_shared;

static void stores_the_result(void *value, void *ctx)
{
    (void)value;
    ck_require(rt_store(gone_shared, ctx) == RT_OK);
}

static void *returns_what_it_no_longer_holds(void *arg)
{
    int kind = (int)(intptr_t)arg;
    char *v = rt_alloc_outside(32);
    switch (kind) {
    case GONE_SENT:
        ck_require(rt_send(gone_chan, v) == RT_OK);
        break;
    case GONE_HANDED_OVER:
        ck_require(rt_hand_over(v) == v);
        break;
    case GONE_STORED:
        ck_require(rt_update(gone_shared, stores_the_result, v) == RT_OK);
        break;
    case GONE_FREED:
        rt_free(v);
        break;
    default:
        rt_free(v);
        return a_static;
    }
    return v;
}

static void task_returns_what_it_no_longer_holds(void *arg)
{
    int64_t zero = 0;
    init_fixed(64 * KIB);
    gone_chan = rt_chan_new(1);
    gone_shared = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    ck_require(run_task(returns_nothing, NULL, NULL) == RT_OK); /* so it is task 2 */
    run_task(returns_what_it_no_longer_holds, arg, NULL);
    _exit(3); /* the join returned */
}

START_TEST(a_task_that_returns_a_value_it_no_longer_holds_is_a_violation)
{
    static const char *const what[] = {"sent", "handed over", "stored", "freed", "a static"};
    for (int kind = 0; kind < GONE_KINDS; kind++) {
        struct death d = run_child(task_returns_what_it_no_longer_holds, (void *)(intptr_t)kind);
        ck_assert_msg(d.signal == SIGABRT && strstr(d.err, "refrt: rt_spawn: task 2 returned 0x") &&
                          strstr(d.err, "which is not an outside value it holds\n"),
                      "a result %s: signal %d exit %d; stderr: %s", what[kind], d.signal,
                      d.exit_status, d.err);
    }
}
END_TEST

/* Bytes a receiver took off a task's count are room again for every
** allocation the task makes, in every door: its block values allocated
** and grown with rt_realloc inside an rt_access, a copy's update and an
** owned value's update (which allocate from the task's block or grow its
** values there), and outside values. The task sends 5000 bytes of an 8
** KiB budget, main receives and frees them, and only then does the task
** ask for 6000: it fits only once the release is folded in. */
enum { SETTLE_OUTSIDE, SETTLE_ACCESS, SETTLE_COPY, SETTLE_OWNED, SETTLE_DOORS };
enum { SETTLE_GROW, SETTLE_ALLOC, SETTLE_ALLOC_OUTSIDE, SETTLE_KINDS };
struct settle_run {
    rt_chan *c;
    rt_shared *copy, *owned;
    char *p;       /* a block value of the task's block, 100 bytes */
    int kind;      /* what the door asks for */
    int received;  /* __atomic: rounds main has received */
};

static void asks_for_6000(struct settle_run *r)
{
    if (r->kind == SETTLE_GROW) {
        r->p = rt_realloc(r->p, 6000);
        ck_require(r->p != NULL && r->p[99] == 'p');
    } else if (r->kind == SETTLE_ALLOC) {
        rt_free(rt_alloc(6000));
    } else {
        rt_free(rt_alloc_outside(6000));
    }
}

static void settle_in_update(void *v, void *ctx) { (void)v; asks_for_6000(ctx); }
static void settle_in_access(const void *v, void *ctx) { (void)v; asks_for_6000(ctx); }

static void *sends_then_asks_in_doors(void *arg)
{
    struct settle_run *r = arg;
    int round = 0;
    r->p = rt_alloc(100);
    memset(r->p, 'p', 100);
    for (int door = 0; door < SETTLE_DOORS; door++)
        for (r->kind = 0; r->kind < SETTLE_KINDS; r->kind++) {
            if (door == SETTLE_OWNED && r->kind == SETTLE_ALLOC)
                continue; /* an owned update allocates from its own block */
            ck_require(rt_send(r->c, rt_alloc_outside(5000)) == RT_OK);
            round++;
            while (__atomic_load_n(&r->received, __ATOMIC_ACQUIRE) < round)
                sched_yield();
            if (door == SETTLE_OUTSIDE)
                asks_for_6000(r);
            else if (door == SETTLE_ACCESS)
                ck_require(rt_access(r->copy, settle_in_access, r) == RT_OK);
            else
                ck_require(rt_update(door == SETTLE_COPY ? r->copy : r->owned, settle_in_update,
                                     r) == RT_OK);
            if (r->kind == SETTLE_GROW) { /* a shrink keeps its chunk: a fresh 100 */
                rt_free(r->p);
                r->p = rt_alloc(100);
                memset(r->p, 'p', 100);
            }
        }
    rt_free(r->p);
    ck_require(rt_held() == 0);
    return NULL;
}

/* Joins the sender and closes the channel whatever its end, so that main's
** receives stop also when the sender panicked. */
struct settle_join {
    rt_task *sender;
    rt_chan *c;
    rt_status status;
};

static void *joins_then_closes(void *arg)
{
    struct settle_join *j = arg;
    j->status = rt_join(j->sender, NULL);
    rt_chan_close(j->c);
    return NULL;
}

START_TEST(a_received_values_bytes_are_room_again_in_every_door)
{
    int64_t zero = 0;
    struct settle_run r = {0};
    init_fixed(64 * KIB);
    r.c = rt_chan_new(1);
    r.copy = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
    r.owned = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    rt_set_strategy(rt_fixed_strategy(8 * KIB));
    struct settle_join j = {rt_spawn(sends_then_asks_in_doors, &r), r.c, RT_PANICKED};
    ck_assert_ptr_nonnull(j.sender);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_task *joiner = rt_spawn(joins_then_closes, &j);
    ck_assert_ptr_nonnull(joiner);
    void *v;
    while ((v = rt_recv(r.c)) != NULL) {
        rt_free(v);
        __atomic_add_fetch(&r.received, 1, __ATOMIC_RELEASE);
    }
    ck_assert_int_eq(rt_join(joiner, NULL), RT_OK);
    ck_assert_msg(j.status == RT_OK, "the sender panicked after %d rounds", r.received);
    ck_assert_int_eq(r.received, SETTLE_DOORS * SETTLE_KINDS - 1);
    ck_assert(!rt_poisoned(r.owned));
    rt_chan_free(r.c);
    rt_shared_free(r.copy);
    rt_shared_free(r.owned);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

START_TEST(misuse_gets_the_contracts_error)
{
    ck_assert_violation(alloc_on_a_plain_thread, NULL,
                        "refrt: rt_alloc: this thread is not a task\n");
    ck_assert_violation(alloc_before_init, NULL,
                        "refrt: rt_alloc: this thread is not a task (rt_init has not been called)\n");
    ck_assert_violation(free_a_stack_pointer, NULL, "refrt: rt_free: 0x");
    ck_assert_violation(free_a_stack_pointer, NULL, "is not a value this task holds");
    ck_assert_violation(free_a_malloc_pointer, NULL, "is not a value this task holds");
    ck_assert_violation(free_twice, NULL, "the second free\nrefrt: rt_free: 0x");
    ck_assert_violation(free_twice, NULL, "is not a value this task holds\n");
    ck_assert_violation(free_an_interior_pointer, NULL, "refrt: rt_free: 0x");
    ck_assert_violation(free_an_interior_pointer, NULL, "is not a value this task holds\n");
    ck_assert_violation(free_outside_twice, NULL, "the second free\nrefrt: rt_free: 0x");
    ck_assert_violation(free_outside_twice, NULL, "is not a value this task holds\n");
    ck_assert_violation(realloc_an_interior_pointer, NULL, "refrt: rt_realloc: 0x");
    ck_assert_violation(realloc_a_malloc_pointer, NULL, "refrt: rt_realloc: 0x");
    ck_assert_violation(realloc_a_malloc_pointer, NULL, "is not a value this task holds\n");
    ck_assert_violation(free_another_tasks_value, NULL, "refrt: rt_free: 0x");
    ck_assert_violation(free_another_tasks_value, NULL, "is not a value this task holds\n");
    ck_assert_violation(hand_over_unheld, NULL, "refrt: rt_hand_over: 0x");
    ck_assert_violation(hand_over_unheld, NULL, "is not a value this task holds\n");
    ck_assert_violation(hand_over_null, NULL, "refrt: rt_hand_over: (nil) is not a value");
    ck_assert_violation(task_returns_a_block_value, NULL,
                        "which is not an outside value it holds");
    ck_assert_violation(third_task_returns_a_block_value, NULL,
                        "refrt: rt_spawn: task 3 returned 0x");
    ck_assert_violation(panic_on_a_plain_thread, NULL, "refrt: rt_panic: this thread is not a task");
    ck_assert_violation(strategy_without_a_function, NULL,
                        "refrt: rt_set_strategy: block_bytes is NULL\n");
    ck_assert_violation(clone_null_with_bytes, NULL,
                        "refrt: rt_clone_outside: NULL with 5 bytes\n");
    for (uintptr_t i = 0; i < sizeof clone_null_sizes / sizeof clone_null_sizes[0]; i++) {
        char want[80];
        snprintf(want, sizeof want, "refrt: rt_clone_outside: NULL with %zu bytes\n",
                 clone_null_sizes[i]);
        ck_assert_violation(clone_null_with_size, (void *)i, want);
    }
    ck_assert_violation(clone_on_a_plain_thread, NULL,
                        "refrt: rt_clone_outside: this thread is not a task\n");
    ck_assert_violation(spawn_before_init, NULL, "refrt: rt_spawn: rt_init has not been called\n");
    ck_assert_violation(spawn_no_function, NULL, "refrt: rt_spawn: fn is NULL\n");
    ck_assert_violation(join_twice, NULL, "refrt: rt_join: 0x");
    ck_assert_violation(join_twice, NULL, "is not a task another task can join");
    ck_assert_violation(join_what_is_no_task, NULL, "is not a task another task can join");
    ck_assert_violation(task_joins_itself, NULL, "refrt: rt_join: 0x");
    ck_assert_violation(task_joins_itself, NULL, "is not a task another task can join");
    ck_assert_violation(store_unheld, NULL, "refrt: rt_store: 0x");
    ck_assert_violation(store_unheld, NULL, "is not an outside value this task holds\n");
}
END_TEST

/* ---- a received value and a joined result at the room's edge (tw14c) ---- */

/* A task of a 16 KiB budget holding an outside value of 1000 bytes and a
** block value of 100 (a 112-byte chunk) takes a value of exactly the room
** it has left, one byte less, or one byte more: by rt_recv (D9: "a
** receiver whose budget cannot take it panics here") or by rt_join (D9:
** "a joiner whose budget cannot take it panics"). Up to the room it fits,
** and the task then holds exactly what it held plus the value (its whole
** budget at the room itself); one byte past it, the task panics in the
** call. The room counts what receivers took of the task's own sent values
** and it has not folded in yet: in the third way the task first sends its
** 1000 bytes to main, which receives them before sending the value, and
** the room is then 1000 bytes larger. A received value refused stays at
** the channel's head (main gets it back), a result refused is freed with
** its joiner; afterwards main holds nothing and only its block is left. */
enum edge_way { EDGE_RECV, EDGE_JOIN, EDGE_RECV_AFTER_RELEASE, EDGE_WAYS };
static const char *const edge_ways[] = {"rt_recv", "rt_join", "rt_recv after a release"};

#define EDGE_BUDGET (16 * KIB)
#define EDGE_OUT 1000
#define EDGE_CHUNK 112 /* rt_alloc(100): an 8-byte header, rounded to 16 */

struct edge {
    enum edge_way way;
    int delta;       /* the value is the room left + delta */
    rt_chan *in, *back;
    size_t n;        /* the value's bytes, set by the task once it knows its room */
    size_t held_before, held_after;
    int returned;
};

static int filled_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *q = p;
    for (size_t i = 0; i < n; i++)
        if (q[i] != v)
            return 0;
    return 1;
}

static void *returns_n_bytes(void *arg)
{
    size_t n = *(size_t *)arg;
    unsigned char *v = rt_alloc_outside(n);
    memset(v, 0x4E, n);
    return v;
}

static void *takes_a_value_at_the_edge(void *arg)
{
    struct edge *e = arg;
    void *out = rt_alloc_outside(EDGE_OUT), *got = NULL;
    void *keep = rt_alloc(100);
    e->held_before = rt_held();
    if (e->way == EDGE_RECV_AFTER_RELEASE) {
        ck_require(rt_send(e->back, out) == RT_OK);
        e->held_before -= EDGE_OUT; /* once main has received it */
    }
    e->n = (size_t)((long)(rt_budget() - e->held_before) + e->delta);
    if (e->way == EDGE_JOIN) {
        rt_set_strategy(rt_fixed_strategy(EDGE_BUDGET + 64 * KIB));
        rt_task *t = rt_spawn(returns_n_bytes, &e->n);
        rt_set_strategy(rt_fixed_strategy(EDGE_BUDGET));
        ck_require(rt_join(t, &got) == RT_OK); /* panics here past the room */
    } else {
        /* tell main the size, then take what it sends */
        size_t *ask = rt_alloc_outside(sizeof *ask);
        *ask = e->n;
        ck_require(rt_send(e->back, ask) == RT_OK);
        got = rt_recv(e->in); /* panics here past the room */
    }
    ck_require(got != NULL && filled_bytes(got, e->n, 0x4E));
    e->held_after = rt_held();
    e->returned = 1;
    rt_free(got);
    rt_free(keep);
    if (e->way != EDGE_RECV_AFTER_RELEASE)
        rt_free(out);
    return NULL;
}

START_TEST(a_value_received_or_joined_fits_up_to_the_room_left_and_panics_one_byte_past)
{
    init_fixed(EDGE_BUDGET + 64 * KIB);
    for (int way = 0; way < EDGE_WAYS; way++)
        for (int delta = -1; delta <= 1; delta++) {
            struct edge e = {.way = (enum edge_way)way, .delta = delta};
            e.in = rt_chan_new(1);
            e.back = rt_chan_new(2);
            rt_set_strategy(rt_fixed_strategy(EDGE_BUDGET));
            rt_task *t = rt_spawn(takes_a_value_at_the_edge, &e);
            rt_set_strategy(rt_fixed_strategy(EDGE_BUDGET + 64 * KIB));
            ck_assert_ptr_nonnull(t);
            unsigned char *v = NULL;
            size_t n = 0;
            if (way == EDGE_RECV_AFTER_RELEASE) {
                void *out = rt_recv(e.back); /* its 1000 bytes, released */
                ck_assert_uint_eq(rt_held(), EDGE_OUT);
                rt_free(out);
            }
            if (way != EDGE_JOIN) {
                size_t *ask = rt_recv(e.back);
                n = *ask;
                rt_free(ask);
                v = rt_alloc_outside(n);
                memset(v, 0x4E, n);
                ck_assert_int_eq(rt_send(e.in, v), RT_OK);
            }
            rt_status st = rt_join(t, NULL);
            size_t room = way == EDGE_RECV_AFTER_RELEASE ? EDGE_BUDGET - EDGE_CHUNK
                                                         : EDGE_BUDGET - EDGE_OUT - EDGE_CHUNK;
            ck_assert_uint_eq(e.n, room + (size_t)(long)delta);
            ck_assert_msg(e.held_before == EDGE_BUDGET - room, "%s, room %+d: held %zu before",
                          edge_ways[way], delta, e.held_before);
            if (delta <= 0) {
                ck_assert_msg(st == RT_OK && e.returned == 1,
                              "%s of the room %+d: panicked, expected it to fit",
                              edge_ways[way], delta);
                ck_assert_msg(e.held_after == EDGE_BUDGET - room + e.n,
                              "%s of the room %+d: held %zu after, expected %zu",
                              edge_ways[way], delta, e.held_after, EDGE_BUDGET - room + e.n);
            } else {
                ck_assert_msg(st == RT_PANICKED && e.returned == 0,
                              "%s of the room +1: returned, expected a panic", edge_ways[way]);
                if (way != EDGE_JOIN) { /* refused: still at the head, main's again */
                    ck_assert_ptr_eq(rt_recv(e.in), v);
                    ck_assert_uint_eq(rt_held(), n);
                    rt_free(v);
                }
            }
            ck_assert_uint_eq(rt_held(), 0);
            ck_assert_uint_eq(rt__blocks_live(), 1);
            ck_assert_uint_eq(rt__tasks_unjoined(), 0);
            rt_chan_free(e.in);
            rt_chan_free(e.back);
        }
}
END_TEST


/* Results passed up a tree of joins, many tasks at once: main spawns
** TREE_MID tasks, each spawns TREE_LEAVES leaves, all running together.
** Leaf j of task i returns an outside value of leaf_bytes(i, j), except
** one leaf of each that panics (its join: RT_PANICKED, the result NULL)
** and one that returns NULL (RT_OK, NULL). Each middle task, after every
** join, holds exactly the results it joined (D9: "an outside value whose
** bytes now count against the joiner"), keeps the largest, frees the
** others and returns the one it kept; main then holds exactly the sum of
** what the middle tasks returned, and after freeing them nothing, with
** only its own block left. */
#define TREE_MID 4
#define TREE_LEAVES 6

static size_t leaf_bytes(size_t i, size_t j)
{
    return 100 * (i + 1) + 7 * j + 1;
}

static void *tree_leaf(void *arg)
{
    size_t code = (size_t)(uintptr_t)arg, i = code / TREE_LEAVES, j = code % TREE_LEAVES;
    if (j == 1)
        rt_panic("a leaf panics");
    if (j == 2)
        return NULL;
    unsigned char *v = rt_alloc_outside(leaf_bytes(i, j));
    memset(v, (int)(code + 1), leaf_bytes(i, j));
    return v;
}

struct tree_mid {
    size_t i;
    int failed_at; /* 0: every figure as the contract says */
};

static void *tree_middle(void *arg)
{
    struct tree_mid *m = arg;
    rt_task *leaves[TREE_LEAVES];
    void *got[TREE_LEAVES];
    size_t held = 0, largest = 0;
    for (size_t j = 0; j < TREE_LEAVES; j++)
        leaves[j] = rt_spawn(tree_leaf, (void *)(uintptr_t)(m->i * TREE_LEAVES + j));
    for (size_t j = 0; j < TREE_LEAVES; j++) {
        got[j] = (void *)1;
        rt_status st = rt_join(leaves[j], &got[j]);
        if (j == 1) {
            if ((st != RT_PANICKED || got[j] != NULL) && !m->failed_at)
                m->failed_at = 1;
            continue;
        }
        if ((st != RT_OK || (j == 2) != (got[j] == NULL)) && !m->failed_at)
            m->failed_at = 2;
        if (got[j] != NULL) {
            if (!filled_bytes(got[j], leaf_bytes(m->i, j),
                              (unsigned char)(m->i * TREE_LEAVES + j + 1)) && !m->failed_at)
                m->failed_at = 3;
            held += leaf_bytes(m->i, j);
            largest = j;
        }
        if (rt_held() != held && !m->failed_at)
            m->failed_at = 4;
    }
    for (size_t j = 0; j < TREE_LEAVES; j++)
        if (j != largest)
            rt_free(got[j]); /* NULL for the panicked and the empty one */
    if (rt_held() != leaf_bytes(m->i, largest) && !m->failed_at)
        m->failed_at = 5;
    return got[largest];
}

START_TEST(results_passed_up_a_tree_of_joins_count_against_exactly_their_joiner)
{
    struct tree_mid mids[TREE_MID];
    rt_task *t[TREE_MID];
    size_t held = 0;
    init_fixed(64 * KIB);
    for (size_t i = 0; i < TREE_MID; i++) {
        mids[i] = (struct tree_mid){.i = i};
        t[i] = rt_spawn(tree_middle, &mids[i]);
        ck_assert_ptr_nonnull(t[i]);
    }
    void *got[TREE_MID];
    for (size_t i = 0; i < TREE_MID; i++) {
        ck_assert_int_eq(rt_join(t[i], &got[i]), RT_OK);
        ck_assert_msg(mids[i].failed_at == 0, "middle task %zu: check %d", i, mids[i].failed_at);
        size_t n = leaf_bytes(i, TREE_LEAVES - 1);
        ck_assert(filled_bytes(got[i], n, (unsigned char)(i * TREE_LEAVES + TREE_LEAVES)));
        held += n;
        ck_assert_uint_eq(rt_held(), held);
    }
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    for (size_t i = 0; i < TREE_MID; i++)
        rt_free(got[i]);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* A task spawned and joined inside an RT_OWNED door: its result counts
** against the joining task, not the value's block (rt_join: "whose bytes
** now count against the joiner"; D5: the door's block holds what was
** allocated in its doors and stored into it), and may then be stored into
** the value, which moves its bytes there exactly; a task joined in the door
** that panicked returns RT_PANICKED and poisons nothing (D11: a panic
** inside fn poisons; that one was another task's). The stored value comes
** back with rt_unstore in a later door, the task's again. */
struct join_in_door {
    size_t task_before, value_before;
    size_t task_after_join, value_after_join, task_after_store, value_after_store;
    rt_status ok, panicked;
    void *result;
    rt_shared *s;
    int failed;
};

static void *returns_500(void *unused)
{
    (void)unused;
    unsigned char *v = rt_alloc_outside(500);
    memset(v, 0x50, 500);
    return v;
}

static void *just_panics(void *unused)
{
    (void)unused;
    rt_panic("in a task a door joins");
}

static void joins_in_the_door(void *value, void *ctx)
{
    struct join_in_door *x = ctx;
    rt_shared *s = x->s;
    (void)value;
    x->task_before = rt_held();
    x->value_before = rt_shared_held(s);
    x->panicked = rt_join(rt_spawn(just_panics, NULL), NULL);
    x->ok = rt_join(rt_spawn(returns_500, NULL), &x->result);
    x->task_after_join = rt_held();
    x->value_after_join = rt_shared_held(s);
    if (x->result == NULL || rt_store(s, x->result) != RT_OK)
        x->failed = 1;
    x->task_after_store = rt_held();
    x->value_after_store = rt_shared_held(s);
}

static void unstores_it(void *value, void *ctx)
{
    struct join_in_door *x = ctx;
    rt_shared *s = x->s;
    (void)value;
    if (rt_unstore(s, x->result) != x->result)
        x->failed = 2;
}

START_TEST(a_result_joined_inside_a_door_is_the_tasks_and_can_be_stored)
{
    struct join_in_door x = {0};
    init_fixed(64 * KIB);
    void *keep = rt_alloc_outside(40);
    int zero = 0;
    rt_shared *s = x.s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4 * KIB);
    size_t value_base = rt_shared_held(s);
    ck_assert_int_eq(rt_update(s, joins_in_the_door, &x), RT_OK);
    ck_assert_int_eq(x.failed, 0);
    ck_assert_int_eq(x.panicked, RT_PANICKED);
    ck_assert_int_eq(x.ok, RT_OK);
    ck_assert(!rt_poisoned(s));
    ck_assert_uint_eq(x.task_before, 40);
    ck_assert_uint_eq(x.value_before, value_base);
    ck_assert_uint_eq(x.task_after_join, 40 + 500);
    ck_assert_uint_eq(x.value_after_join, value_base);
    ck_assert_uint_eq(x.task_after_store, 40);
    ck_assert_uint_eq(x.value_after_store, value_base + 500);
    ck_assert_uint_eq(rt_held(), 40);
    ck_assert_uint_eq(rt_shared_held(s), value_base + 500);
    ck_assert_int_eq(rt_update(s, unstores_it, &x), RT_OK);
    ck_assert_int_eq(x.failed, 0);
    ck_assert_uint_eq(rt_held(), 40 + 500);
    ck_assert_uint_eq(rt_shared_held(s), value_base);
    ck_assert(filled_bytes(x.result, 500, 0x50));
    rt_free(x.result);
    rt_free(keep);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 2); /* main's and the value's */
    rt_shared_free(s);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("budgets");
    suite_add_test(s, the_default_strategy_follows_its_formula);
    suite_add_test(s, a_system_that_cannot_tell_its_memory_gets_the_smallest_default);
    suite_add_test(s, a_page_count_or_a_page_size_of_one_is_counted);
    suite_add_test(s, the_default_is_whole_pages_on_any_memory);
    suite_add_test(s, main_is_a_task_with_a_default_block);
    suite_add_test(s, a_fixed_strategy_sizes_every_later_block);
    suite_add_test(s, a_budget_is_the_strategys_figure_rounded_down_to_16);
    suite_add_test(s, a_second_rt_init_changes_nothing_in_any_state);
    suite_add_test(s, a_call_that_needs_a_task_names_itself_where_there_is_none);
    suite_add_test(s, a_strategys_block_bytes_runs_with_no_runtime_lock_held_and_may_set_the_strategy);
    suite_add_test(s, released_bytes_are_folded_in_only_by_the_slow_path_and_rt_held);
    suite_add_test(s, held_returns_to_exactly_its_old_figure);
    suite_add_test(s, a_block_exactly_full_fits_one_byte_more_panics);
    suite_add_test(s, a_freed_chunk_is_reused_only_within_the_budget);
    suite_add_test(s, a_task_reading_past_its_budget_panics_and_another_runs_on);
    suite_add_test(s, a_long_task_frees_and_allocates_a_megabyte_under_sixty_four_kib);
    suite_add_test(s, realloc_keeps_contents_past_size_classes);
    suite_add_test(s, an_outside_value_reallocated_at_every_load_of_the_table_stays_held_once);
    suite_add_test(s, a_block_value_refused_by_rt_hand_over_sets_einval_even_if_stderr_fails);
    suite_add_test(s, any_pointer_into_the_block_is_refused_as_a_block_value);
    suite_add_test(s, nothing_and_null_are_values_too);
    suite_add_test(s, many_outside_values_are_found_whatever_order_they_go_in);
    suite_add_test(s, tasks_spawning_and_joining_at_once_lose_no_task);
    suite_add_test(s, a_task_joined_and_its_values_received_leave_nothing_allocated);
    suite_add_test(s, a_table_that_grew_leaves_nothing_allocated);
    suite_add_test(s, an_allocation_that_fits_once_received_values_are_settled_succeeds);
    suite_add_test(s, a_panic_message_reaches_a_buffered_stderr_at_once);
    suite_add_test(s, an_outside_value_grown_or_taken_over_past_the_budget_panics);
    suite_add_test(s, an_outside_value_grown_past_the_budget_panics);
    suite_add_test(s, a_realloc_settles_what_receivers_took_before_it_panics);
    suite_add_test(s, a_panic_without_a_reason_says_so);
    suite_add_test(s, a_panic_in_main_exits_with_101);
    suite_add_test(s, a_panic_in_main_clears_its_regions_before_it_exits);
    suite_add_test(s, a_thread_whose_task_ended_is_no_task_in_its_destructors);
    suite_add_test(s, a_panic_frees_outside_values_and_closes_open_regions);
    suite_add_test(s, a_task_that_ends_frees_its_block_and_what_it_still_holds);
    suite_add_test(s, join_moves_the_result_to_the_joiner);
    suite_add_test(s, a_result_counts_against_whichever_task_joins_with_the_bytes_it_ends_with);
    suite_add_test(s, a_joiner_the_result_does_not_fit_panics);
    suite_add_test(s, a_result_nobody_takes_is_freed);
    suite_add_test(s, a_result_past_4_gib_moves_to_its_joiner_with_every_byte);
    suite_add_test(s, values_past_4_gib_move_on_channels_and_into_shared_values_with_every_byte);
    suite_add_test(s, a_joiner_the_result_does_not_fit_leaves_nothing_allocated);
    suite_add_test(s, a_block_that_cannot_be_made_is_no_task);
#if RT_TESTING
    suite_add_test(s, an_ended_task_is_not_running_before_its_join);
    suite_add_test(s, the_strategy_is_told_the_tasks_running_exactly_however_the_others_ended);
#endif
    suite_add_test(s, a_task_being_made_counts_among_those_running_before_its_block_exists);
    suite_add_test(s, room_a_receiver_made_serves_whatever_main_takes_in_next);
    suite_add_test(s, a_handed_over_value_arrives_where_it_was_built);
    suite_add_test(s, a_block_value_is_refused_and_the_message_names_the_copy);
    suite_add_test(s, a_stored_value_leaves_the_tasks_count);
    suite_add_test(s, a_door_with_a_block_allocates_there_and_a_panic_unwinds_it);
    suite_add_test(s, values_inside_doors_stay_where_they_belong);
    suite_add_test(s, a_realloc_past_a_door_block_panics);
    suite_add_test(s, rt_held_and_rt_budget_are_the_tasks_in_every_door);
    suite_add_test(s, a_value_received_or_joined_fits_up_to_the_room_left_and_panics_one_byte_past);
    suite_add_test(s, results_passed_up_a_tree_of_joins_count_against_exactly_their_joiner);
    suite_add_test(s, a_result_joined_inside_a_door_is_the_tasks_and_can_be_stored);
    suite_add_test(s, misuse_gets_the_contracts_error);
    suite_add_test(s, a_received_values_bytes_are_room_again_in_every_door);
    suite_add_test(s, a_task_that_returns_a_value_it_no_longer_holds_is_a_violation);
    return s;
}
