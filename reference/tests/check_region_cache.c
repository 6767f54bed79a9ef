/*
** check_region_cache.c: the chunk cache and regions (seed 000), unit level.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "refrt.h"
#include "testutil.h"

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* ---- the cache off before rt_init --------------------------------------- */

START_TEST(take_before_init_mallocs_and_give_frees)
{
    chunks_reset();
    unsigned char *c = rt_chunk_take();
    ck_assert_ptr_nonnull(c);
    memset(c, 0xA5, RT_CHUNK_SIZE);
    rt_chunk_give(c, c + RT_CHUNK_SIZE);
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(n.mallocs, 1);
    ck_assert_uint_eq(n.frees, 1);
    ck_assert_uint_eq(n.frees_dirty, 0);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

START_TEST(regions_work_before_init)
{
    rt_region r;
    rt_region_open(&r);
    unsigned char *p = rt_region_alloc(&r, 8, 8, 7);
    ck_assert_int_eq(p[63], 7);
    rt_region_close(&r);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

START_TEST(init_twice_keeps_the_key)
{
    rt_init();
    uint64_t key = rt__key_plus_one;
    ck_assert_uint_ne(key, 0);
    rt_init();
    ck_assert_uint_eq(rt__key_plus_one, key);
}
END_TEST

/* A second rt_init does nothing: it makes no key either. glibc hands out
** the lowest free key, so the key the test makes, deletes and makes again
** around three more rt_init calls is the same one unless they took keys. */
START_TEST(init_again_makes_no_key)
{
    pthread_key_t before, after;
    rt_init();
    ck_assert_int_eq(pthread_key_create(&before, NULL), 0);
    ck_assert_int_eq(pthread_key_delete(before), 0);
    for (int i = 0; i < 3; i++)
        rt_init();
    ck_assert_int_eq(pthread_key_create(&after, NULL), 0);
    ck_assert_uint_eq(after, before);
    ck_assert_int_eq(pthread_key_delete(after), 0);
}
END_TEST

/* ---- LIFO and the bound --------------------------------------------------- */

START_TEST(take_pops_the_chunk_given_last)
{
    rt_init();
    unsigned char *a = rt_chunk_take(), *b = rt_chunk_take();
    rt_chunk_give(a, a);
    rt_chunk_give(b, b);
    ck_assert_uint_eq(rt_chunk_kept(), 2);
    ck_assert_ptr_eq(rt_chunk_take(), b);
    ck_assert_ptr_eq(rt_chunk_take(), a);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

/* Gives n fresh chunks; returns how many were freed instead of kept. */
static unsigned long give_fresh(unsigned n)
{
    void *c[64];
    chunks_reset();
    for (unsigned i = 0; i < n; i++)
        c[i] = rt_chunk_take();
    for (unsigned i = 0; i < n; i++)
        rt_chunk_give(c[i], c[i]);
    return chunks_counted().frees;
}

START_TEST(fifteen_given_fifteen_kept)
{
    rt_init();
    ck_assert_uint_eq(give_fresh(15), 0);
    ck_assert_uint_eq(rt_chunk_kept(), 15);
}
END_TEST

START_TEST(sixteen_given_sixteen_kept)
{
    rt_init();
    ck_assert_uint_eq(give_fresh(16), 0);
    ck_assert_uint_eq(rt_chunk_kept(), RT_REGION_CACHE_SLOTS);
}
END_TEST

START_TEST(seventeenth_is_freed)
{
    rt_init();
    ck_assert_uint_eq(give_fresh(17), 1);
    ck_assert_uint_eq(rt_chunk_kept(), RT_REGION_CACHE_SLOTS);
}
END_TEST

START_TEST(forty_given_twenty_four_freed)
{
    rt_init();
    ck_assert_uint_eq(give_fresh(40), 24);
    ck_assert_uint_eq(rt_chunk_kept(), 16);
    ck_assert_uint_eq(chunks_counted().frees_dirty, 0);
}
END_TEST

START_TEST(take_reuses_without_malloc)
{
    rt_init();
    void *a = rt_chunk_take();
    rt_chunk_give(a, a);
    chunks_reset();
    for (int i = 0; i < 1000; i++) {
        void *c = rt_chunk_take();
        ck_assert_ptr_eq(c, a);
        rt_chunk_give(c, c);
    }
    ck_assert_uint_eq(chunks_counted().mallocs, 0);
    ck_assert_uint_eq(chunks_counted().frees, 0);
}
END_TEST

/* ---- clearing ------------------------------------------------------------- */

START_TEST(give_clears_exactly_the_range)
{
    rt_init();
    unsigned char *c = rt_chunk_take();
    memset(c, 0xEE, RT_CHUNK_SIZE);
    rt_chunk_give(c, c + 1000);
    unsigned char *again = rt_chunk_take();
    ck_assert_ptr_eq(again, c);
    ck_assert(all_zero(c, 1000));
    ck_assert_int_eq(c[1000], 0xEE);
    memset(c, 0, RT_CHUNK_SIZE);
    rt_chunk_give(c, c);
}
END_TEST

START_TEST(give_of_a_whole_chunk_clears_its_last_byte)
{
    rt_init();
    unsigned char *c = rt_chunk_take();
    memset(c, 0x11, RT_CHUNK_SIZE);
    rt_chunk_give(c, c + RT_CHUNK_SIZE);
    ck_assert_ptr_eq(rt_chunk_take(), c);
    ck_assert(all_zero(c, RT_CHUNK_SIZE));
}
END_TEST

START_TEST(a_freed_chunk_is_cleared_first)
{
    rt_init();
    void *c[17];
    for (int i = 0; i < 17; i++)
        c[i] = rt_chunk_take();
    chunks_reset();
    for (int i = 0; i < 17; i++) {
        memset(c[i], 0x5A, 4096);
        rt_chunk_give(c[i], (unsigned char *)c[i] + 4096);
    }
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(n.frees, 1);
    ck_assert_uint_eq(n.frees_dirty, 0);
}
END_TEST

START_TEST(a_new_region_shows_no_byte_of_the_last)
{
    rt_init();
    rt_region r;
    rt_region_open(&r);
    unsigned char *secret = rt_region_alloc(&r, 1, 30000, 0x77);
    ck_assert_int_eq(secret[29999], 0x77);
    unsigned char *base = r.base;
    rt_region_close(&r);
    rt_region_open(&r);
    ck_assert_ptr_eq(r.base, base);
    ck_assert(all_zero(r.base, 30000));
    unsigned char *mine = rt_region_alloc(&r, 10, 10, 0x01);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(mine[i], 0x01);
    rt_region_close(&r);
}
END_TEST

/* ---- threads -------------------------------------------------------------- */

static void *thread_gives_three(void *out)
{
    void **c = out;
    for (int i = 0; i < 3; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i < 3; i++) {
        memset(c[i], 0x42, 100);
        rt_chunk_give(c[i], (unsigned char *)c[i] + 100);
    }
    c[3] = (void *)(uintptr_t)rt_chunk_kept();
    return NULL;
}

START_TEST(a_thread_end_frees_its_chunks_cleared)
{
    rt_init();
    void *c[4];
    pthread_t t;
    chunks_reset();
    ck_assert_int_eq(pthread_create(&t, NULL, thread_gives_three, c), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq((uintptr_t)c[3], 3);
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(n.mallocs, 3);
    ck_assert_uint_eq(n.frees, 3);
    ck_assert_uint_eq(n.frees_dirty, 0);
    for (int i = 0; i < 3; i++)
        ck_assert(!chunk_live(c[i]));
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

/* A thread that ends by pthread_exit, not by returning, ends all the
** same (refrt.h: "When a thread ends, its kept chunks ... are freed"):
** with 0, 1, 15, 16 and 17 chunks given,
** exactly the min(given, 16) kept are freed, cleared, by the time
** pthread_join returns, and none is left live. */
static void *gives_then_exits(void *arg)
{
    void **c = arg;
    unsigned give = (unsigned)(uintptr_t)c[RT_REGION_CACHE_SLOTS + 1];
    for (unsigned i = 0; i < give; i++)
        c[i] = rt_chunk_take();
    for (unsigned i = 0; i < give; i++) {
        memset(c[i], 0x42, 10 + i);
        rt_chunk_give(c[i], (unsigned char *)c[i] + 10 + i);
    }
    c[RT_REGION_CACHE_SLOTS + 2] = (void *)(uintptr_t)rt_chunk_kept();
    pthread_exit(NULL);
}

START_TEST(a_thread_that_calls_pthread_exit_frees_exactly_the_chunks_it_keeps)
{
    static const unsigned gives[] = {0, 1, 15, RT_REGION_CACHE_SLOTS, RT_REGION_CACHE_SLOTS + 1};
    rt_init();
    for (size_t g = 0; g < sizeof gives / sizeof *gives; g++) {
        void *c[RT_REGION_CACHE_SLOTS + 3] = {0};
        unsigned kept = gives[g] < RT_REGION_CACHE_SLOTS ? gives[g] : RT_REGION_CACHE_SLOTS;
        pthread_t t;
        c[RT_REGION_CACHE_SLOTS + 1] = (void *)(uintptr_t)gives[g];
        chunks_reset();
        ck_assert_int_eq(pthread_create(&t, NULL, gives_then_exits, c), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        struct chunk_counts n = chunks_counted();
        unsigned live = 0;
        for (unsigned i = 0; i < gives[g]; i++)
            live += chunk_live(c[i]) != 0;
        ck_assert_msg((uintptr_t)c[RT_REGION_CACHE_SLOTS + 2] == kept && n.mallocs == gives[g] &&
                          n.frees == gives[g] && n.frees_dirty == 0 && live == 0,
                      "%u given, then pthread_exit: kept %u (%u), %lu mallocs, %lu frees, %lu "
                      "dirty, %u live (%u, %u, 0, 0)", gives[g],
                      (unsigned)(uintptr_t)c[RT_REGION_CACHE_SLOTS + 2], kept, n.mallocs,
                      n.frees, n.frees_dirty, live, gives[g], gives[g]);
    }
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

static void *thread_takes_one(void *out)
{
    *(void **)out = rt_chunk_take();
    rt_chunk_give(*(void **)out, *(void **)out);
    return NULL;
}

START_TEST(a_thread_never_takes_anothers_chunk)
{
    rt_init();
    void *mine = rt_chunk_take(), *theirs = NULL;
    pthread_t t;
    rt_chunk_give(mine, mine);
    ck_assert_int_eq(pthread_create(&t, NULL, thread_takes_one, &theirs), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_ne(theirs, mine);
    ck_assert_uint_eq(rt_chunk_kept(), 1);
}
END_TEST

/* A thread whose first runtime call is a give: the chunk (taken on main's
** thread and handed over) is kept, as on any thread keeping fewer than 16,
** and comes back on its next take; the shim sees no free until it ends. */
static void *thread_first_gives(void *arg)
{
    void **c = arg;
    unsigned char *chunk = c[0];
    rt_chunk_give(chunk, chunk + 10);
    c[1] = (void *)(uintptr_t)rt_chunk_kept();
    c[2] = (void *)(uintptr_t)chunks_counted().frees;
    c[3] = rt_chunk_take();
    rt_chunk_give(c[3], c[3]);
    return NULL;
}

START_TEST(a_threads_first_call_may_be_a_give_and_it_is_kept)
{
    rt_init();
    void *c[4] = {rt_chunk_take(), NULL, NULL, NULL};
    pthread_t t;
    memset(c[0], 0x5a, 10);
    chunks_reset();
    ck_assert_int_eq(pthread_create(&t, NULL, thread_first_gives, c), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq((uintptr_t)c[1], 1);
    ck_assert_uint_eq((uintptr_t)c[2], 0);
    ck_assert_ptr_eq(c[3], c[0]);
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(n.frees, 1); /* at the thread's end, cleared */
    ck_assert_uint_eq(n.frees_dirty, 0);
}
END_TEST

/* A region is closed on the thread that opened it: a thread with no region
** of its own open, or with one, that closes another thread's region gets
** rt_region_close's violation, and the region's chunk is not given. */
static rt_region foreign;

static void *close_the_foreign_region(void *own)
{
    rt_region mine;
    if (own != NULL)
        rt_region_open(&mine);
    rt_region_close(&foreign);
    return NULL;
}

static void close_anothers_region(void *own)
{
    pthread_t t;
    rt_init();
    rt_region_open(&foreign);
    (void)rt_region_alloc(&foreign, 1, 100, 0x33);
    if (pthread_create(&t, NULL, close_the_foreign_region, own) != 0)
        _exit(5);
    pthread_join(t, NULL);
    _exit(0);
}

START_TEST(closing_another_threads_region_is_a_violation)
{
    ck_assert_violation(close_anothers_region, NULL,
                        "is not this thread's innermost open region");
    ck_assert_violation(close_anothers_region, (void *)1,
                        "is not this thread's innermost open region");
}
END_TEST

/* ---- regions -------------------------------------------------------------- */

START_TEST(alloc_aligns_and_fills)
{
    rt_init();
    rt_region r;
    rt_region_open(&r);
    unsigned char *a = rt_region_alloc(&r, 3, 1, 0xAB);
    unsigned char *b = rt_region_alloc(&r, 5, 3, 0xCD);
    ck_assert_uint_eq((uintptr_t)a % _Alignof(max_align_t), 0);
    ck_assert_uint_eq((uintptr_t)b % _Alignof(max_align_t), 0);
    ck_assert_ptr_eq(b, a + _Alignof(max_align_t));
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(a[i], 0xAB);
    for (int i = 0; i < 15; i++)
        ck_assert_int_eq(b[i], 0xCD);
    ck_assert_ptr_eq(r.bump, b + 15);
    rt_region_close(&r);
}
END_TEST

START_TEST(a_whole_chunk_fits)
{
    rt_init();
    rt_region r;
    rt_region_open(&r);
    unsigned char *p = rt_region_alloc(&r, RT_CHUNK_SIZE, 1, 9);
    ck_assert_int_eq(p[RT_CHUNK_SIZE - 1], 9);
    ck_assert_ptr_eq(rt_region_alloc(&r, 0, 1, 9), r.base + RT_CHUNK_SIZE);
    rt_region_close(&r);
}
END_TEST

static void alloc_past_chunk(void *unused)
{
    (void)unused;
    rt_region r;
    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, RT_CHUNK_SIZE - 15, 1, 0);
    rt_region_alloc(&r, 1, 1, 0); /* the aligned offset is past the end */
}

static void alloc_one_too_many(void *unused)
{
    (void)unused;
    rt_region r;
    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, RT_CHUNK_SIZE + 1, 1, 0);
}

static void alloc_overflowing(void *unused)
{
    (void)unused;
    rt_region r;
    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, SIZE_MAX / 2 + 1, 2, 0); /* wraps to 0 */
}

/* rt_chunk_take never returns NULL: a failed malloc traps, before rt_init
** (the cache off), after it with nothing kept, and on a thread of its own.
** So does rt_region_open, which takes its chunk: a region is never open
** without one (take_through_a_region). */
static bool take_through_a_region;

static void take_when_malloc_fails(void *arg)
{
    rt_region r = {0};
    void *c;
    if (arg != NULL) {
        rt_init();
        c = rt_chunk_take();
        rt_chunk_give(c, c);
        (void)rt_chunk_take(); /* the stack empty again, the state made */
    }
    fail_nth(1);
    if (take_through_a_region) {
        rt_region_open(&r);
        c = r.base;
    } else {
        c = rt_chunk_take();
    }
    fail_nth(0);
    _exit(c == NULL ? 3 : 4);
}

static void *take_on_a_thread_body(void *arg)
{
    take_when_malloc_fails(arg);
    return NULL;
}

static void take_on_a_thread_when_malloc_fails(void *arg)
{
    pthread_t t;
    rt_init();
    if (pthread_create(&t, NULL, take_on_a_thread_body, arg) != 0)
        _exit(5);
    pthread_join(t, NULL);
    _exit(6);
}

START_TEST(a_take_whose_malloc_fails_traps_in_every_state)
{
    for (int region = 0; region < 2; region++) {
        take_through_a_region = region;
        ck_assert_trap(take_when_malloc_fails, NULL);
        ck_assert_trap(take_when_malloc_fails, (void *)1);
        ck_assert_trap(take_on_a_thread_when_malloc_fails, NULL);
        ck_assert_trap(take_on_a_thread_when_malloc_fails, (void *)1);
    }
}
END_TEST

START_TEST(a_full_chunk_traps)
{
    ck_assert_trap(alloc_past_chunk, NULL);
    ck_assert_trap(alloc_one_too_many, NULL);
}
END_TEST

START_TEST(an_overflowing_size_traps)
{
    ck_assert_trap(alloc_overflowing, NULL);
}
END_TEST

START_TEST(nested_regions_keep_their_depth)
{
    rt_init();
    rt_region a, b, c;
    chunks_reset();
    for (int round = 0; round < 1000; round++) {
        rt_region_open(&a);
        rt_region_open(&b);
        rt_region_open(&c);
        rt_region_alloc(&c, 100, 1, 1);
        rt_region_close(&c);
        rt_region_close(&b);
        rt_region_close(&a);
    }
    ck_assert_uint_eq(chunks_counted().mallocs, 3);
    ck_assert_uint_eq(rt_chunk_kept(), 3);
}
END_TEST

static void close_outer_first(void *unused)
{
    (void)unused;
    rt_region a, b;
    rt_init();
    rt_region_open(&a);
    rt_region_open(&b);
    rt_region_close(&a);
}

static void close_twice(void *unused)
{
    (void)unused;
    rt_region a;
    rt_init();
    rt_region_open(&a);
    rt_region_close(&a);
    rt_region_close(&a);
}

static void alloc_after_close(void *unused)
{
    (void)unused;
    rt_region a;
    rt_init();
    rt_region_open(&a);
    rt_region_close(&a);
    rt_region_alloc(&a, 1, 1, 0);
}

START_TEST(closing_out_of_order_is_a_violation)
{
    ck_assert_violation(close_outer_first, NULL,
                        "refrt: rt_region_close: region 0x");
    ck_assert_violation(close_outer_first, NULL, "is not this thread's innermost open region");
}
END_TEST

START_TEST(closing_twice_is_a_violation)
{
    ck_assert_violation(close_twice, NULL, "refrt: rt_region_close: region is not open");
}
END_TEST

START_TEST(alloc_on_a_closed_region_is_a_violation)
{
    ck_assert_violation(alloc_after_close, NULL, "refrt: rt_region_alloc: region is not open");
}
END_TEST

static void give_twice(void *unused)
{
    (void)unused;
    rt_init();
    void *c = rt_chunk_take();
    rt_chunk_give(c, c);
    rt_chunk_give(c, c);
}

static void give_backwards(void *unused)
{
    (void)unused;
    unsigned char *c = rt_chunk_take();
    rt_chunk_give(c + 10, c);
}

static void give_too_much(void *unused)
{
    (void)unused;
    unsigned char *c = rt_chunk_take();
    rt_chunk_give(c, c + RT_CHUNK_SIZE + 1);
}

/* Ranges past the chunk by amounts that wrap a narrower length: 2^32 + k
** bytes reads as k in 32 bits, 2^16 + k as k in 16. The end is made as an
** address: such a range is exactly the misuse being checked. */
static const uint64_t too_long[] = {
    RT_CHUNK_SIZE + 1ull, 2 * RT_CHUNK_SIZE, (1ull << 32), (1ull << 32) + 16,
    (1ull << 32) + RT_CHUNK_SIZE, (1ull << 33) + 1, (1ull << 47),
};

static void give_far_too_much(void *arg)
{
    uint64_t n = too_long[(uintptr_t)arg];
    rt_init();
    unsigned char *c = rt_chunk_take();
    rt_chunk_give(c, (void *)((uintptr_t)c + (uintptr_t)n));
}

START_TEST(giving_a_chunk_twice_is_a_violation)
{
    ck_assert_violation(give_twice, NULL, "refrt: rt_chunk_give: chunk 0x");
}
END_TEST

START_TEST(giving_a_range_not_in_a_chunk_is_a_violation)
{
    ck_assert_violation(give_backwards, NULL, "refrt: rt_chunk_give: [");
    ck_assert_violation(give_too_much, NULL, "is not a range inside one chunk");
    for (uintptr_t i = 0; i < sizeof too_long / sizeof *too_long; i++)
        ck_assert_violation(give_far_too_much, (void *)i, "is not a range inside one chunk");
}
END_TEST

/* The message names the range as it was given, [base, end): base first,
** for each way a range is not inside one chunk (an end before the base,
** more than a chunk, a NULL base), before rt_init and after it. Static,
** so the test and its child know the same addresses. */
static void *range_base, *range_end;

static void give_the_range(void *unused)
{
    (void)unused;
    rt_chunk_give(range_base, range_end);
}

static void wrong_ranges_are_named_base_first(unsigned char *c)
{
    void *ranges[][2] = {{c + 1, c},
                         {c + RT_CHUNK_SIZE, c},
                         {c + RT_CHUNK_SIZE, c + RT_CHUNK_SIZE - 1},
                         {c, c + RT_CHUNK_SIZE + 1},
                         {c, (void *)UINTPTR_MAX},
                         {NULL, c},
                         {NULL, c + RT_CHUNK_SIZE + 1}};
    char want[160];

    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        range_base = ranges[i][0];
        range_end = ranges[i][1];
        snprintf(want, sizeof want,
                 "refrt: rt_chunk_give: [%p, %p) is not a range inside one chunk\n", range_base,
                 range_end);
        struct death d = run_child(give_the_range, NULL);
        ck_assert_msg(d.signal == SIGABRT && strstr(d.err, want) != NULL,
                      "expected SIGABRT and \"%s\", got signal %d exit %d; stderr: %s", want,
                      d.signal, d.exit_status, d.err);
    }
}

START_TEST(a_range_not_in_a_chunk_is_named_base_first_in_the_violation)
{
    unsigned char *c = rt_chunk_take();
    wrong_ranges_are_named_base_first(c);
    rt_init();
    wrong_ranges_are_named_base_first(c);
    rt_chunk_give(c, c);
    ck_assert_uint_eq(rt_chunk_kept(), 1);
}
END_TEST

static void hot_before_init(void *unused)
{
    (void)unused;
    rt_hot();
}

START_TEST(rt_hot_before_init_is_a_violation)
{
    ck_assert_violation(hot_before_init, NULL, "refrt: rt_hot: rt_init has not been called");
}
END_TEST

/* ---- rt_chunk_give's violations in every state, on every thread ---------- */

/* Each of rt_chunk_give's violations holds whatever the thread's cache
** holds and whichever thread gives: a range not inside one chunk (an end
** before the base, one byte more than a chunk, 2^32 + 16 bytes, a NULL
** base) with the thread keeping 0, 1, 15 or 16 chunks (16: a give that
** would free), and the chunk on top given again with 1, 15 or 16 kept; on
** main, a plain thread and a task. The line names the range as it was
** given, or the chunk, exactly. The child writes what it gives first, so
** that the test knows the addresses. */
enum { GIVE_ON_MAIN, GIVE_ON_A_THREAD, GIVE_ON_A_TASK, GIVE_PLACES };
enum { GIVE_BACKWARDS, GIVE_A_BYTE_TOO_MANY, GIVE_PAST_4_GIB, GIVE_NULL_BASE, GIVE_TOP_AGAIN,
       WRONG_GIVES };
static const char *const give_places[] = {"main", "a plain thread", "a task"};
static const char *const wrong_gives[] = {"an end before the base", "a byte too many",
                                          "2^32 + 16 bytes", "a NULL base", "the top again"};

struct wrong_give {
    int place, kind;
    unsigned kept;
};

static void *give_wrongly(void *arg)
{
    const struct wrong_give *w = arg;
    unsigned char *c[RT_REGION_CACHE_SLOTS + 1], *base, *end;

    for (unsigned i = 0; i <= w->kept; i++)
        c[i] = rt_chunk_take();
    for (unsigned i = 0; i < w->kept; i++)
        rt_chunk_give(c[i], c[i] + 1);
    if (rt_chunk_kept() != w->kept)
        _exit(3); /* not the state the violation must be seen in */
    switch (w->kind) {
    case GIVE_BACKWARDS: base = c[w->kept] + 10, end = c[w->kept]; break;
    case GIVE_A_BYTE_TOO_MANY: base = c[w->kept], end = base + RT_CHUNK_SIZE + 1; break;
    case GIVE_PAST_4_GIB:
        base = c[w->kept];
        end = (unsigned char *)((uintptr_t)base + ((uintptr_t)1 << 32) + 16);
        break;
    case GIVE_NULL_BASE: base = NULL, end = c[w->kept]; break;
    default: base = c[w->kept - 1], end = base + 1; break;
    }
    fprintf(stderr, "giving %p %p\n", (void *)base, (void *)end);
    fflush(stderr);
    rt_chunk_give(base, end);
    _exit(4); /* the give returned */
}

static void give_wrongly_there(void *arg)
{
    const struct wrong_give *w = arg;
    pthread_t t;

    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    rt_init();
    if (w->place == GIVE_ON_MAIN) {
        give_wrongly(arg);
    } else if (w->place == GIVE_ON_A_THREAD) {
        if (pthread_create(&t, NULL, give_wrongly, arg) != 0)
            _exit(5);
        pthread_join(t, NULL);
    } else {
        rt_join(rt_spawn(give_wrongly, arg), NULL);
    }
    _exit(6);
}

START_TEST(every_wrong_give_is_a_violation_in_every_state_on_every_thread)
{
    static const unsigned kepts[] = {0, 1, 15, RT_REGION_CACHE_SLOTS};
    for (int place = 0; place < GIVE_PLACES; place++)
        for (int kind = 0; kind < WRONG_GIVES; kind++)
            for (size_t k = 0; k < sizeof kepts / sizeof *kepts; k++) {
                struct wrong_give w = {place, kind, kepts[k]};
                void *base = NULL, *end = NULL;
                char want[160];
                if (kind == GIVE_TOP_AGAIN && w.kept == 0)
                    continue; /* nothing on top to give again */
                struct death d = run_child(give_wrongly_there, &w);
                if (d.signal != SIGABRT || sscanf(d.err, "giving %p %p", &base, &end) != 2)
                    ck_abort_msg("%s on %s keeping %u: expected SIGABRT, got signal %d exit %d; "
                                 "stderr: %s", wrong_gives[kind], give_places[place], w.kept,
                                 d.signal, d.exit_status, d.err);
                if (kind == GIVE_TOP_AGAIN)
                    snprintf(want, sizeof want,
                             "refrt: rt_chunk_give: chunk %p was given twice\n", base);
                else
                    snprintf(want, sizeof want,
                             "refrt: rt_chunk_give: [%p, %p) is not a range inside one chunk\n",
                             base, end);
                if (strstr(d.err, want) == NULL) /* ck_require's way: no message a pass */
                    ck_abort_msg("%s on %s keeping %u: stderr lacks \"%s\": %s",
                                 wrong_gives[kind], give_places[place], w.kept, want, d.err);
            }
}
END_TEST

/* rt_chunk_give's violations hold in the contexts at a thread's edges too:
** inside a destructor that runs before the runtime's (a key made before
** rt_init: the thread's state still there), inside one that runs after it
** (a key made after: the state the call makes there), and on a thread
** made before rt_init, giving after it (its first call after rt_init made
** its state). The top given again with 1 and 16 kept and a byte too many
** with 16 kept (a give that would free): each child is a fork, so no more
** than these; the line names the chunk or the range exactly. */
enum { EDGE_DTOR_BEFORE, EDGE_DTOR_AFTER, EDGE_THREAD_BEFORE_INIT, EDGE_PLACES };
static const char *const edge_places[] = {"a destructor before the runtime's",
                                          "a destructor after the runtime's",
                                          "a thread made before rt_init"};
static pthread_key_t wrong_give_key;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cond = PTHREAD_COND_INITIALIZER;
static int init_stage; /* 1: the thread is done before rt_init; 2: rt_init made */

static void destructor_gives_wrongly(void *arg)
{
    give_wrongly(arg);
}

static void *sets_the_wrong_give_key(void *arg)
{
    (void)rt_chunk_kept(); /* this thread's state, before its end */
    pthread_setspecific(wrong_give_key, arg);
    return NULL;
}

static void *waits_for_init_then_gives_wrongly(void *arg)
{
    void *c = rt_chunk_take(); /* the cache off: malloc'ed, and freed */
    rt_chunk_give(c, c);
    pthread_mutex_lock(&init_lock);
    init_stage = 1;
    pthread_cond_broadcast(&init_cond);
    while (init_stage < 2)
        pthread_cond_wait(&init_cond, &init_lock);
    pthread_mutex_unlock(&init_lock);
    return give_wrongly(arg);
}

static void give_wrongly_at_the_edge(void *arg)
{
    const struct wrong_give *w = arg;
    pthread_t t;
    die_of_alarm_after(5); /* a hang, not a bound */
    if (w->place == EDGE_DTOR_BEFORE &&
        pthread_key_create(&wrong_give_key, destructor_gives_wrongly) != 0)
        _exit(7);
    if (w->place == EDGE_THREAD_BEFORE_INIT &&
        pthread_create(&t, NULL, waits_for_init_then_gives_wrongly, arg) != 0)
        _exit(5);
    pthread_mutex_lock(&init_lock); /* rt_init once the thread's calls before it are done */
    while (w->place == EDGE_THREAD_BEFORE_INIT && init_stage < 1)
        pthread_cond_wait(&init_cond, &init_lock);
    pthread_mutex_unlock(&init_lock);
    rt_init();
    if (w->place == EDGE_DTOR_AFTER &&
        pthread_key_create(&wrong_give_key, destructor_gives_wrongly) != 0)
        _exit(7);
    if (w->place == EDGE_THREAD_BEFORE_INIT) {
        pthread_mutex_lock(&init_lock);
        init_stage = 2;
        pthread_cond_broadcast(&init_cond);
        pthread_mutex_unlock(&init_lock);
    } else if (pthread_create(&t, NULL, sets_the_wrong_give_key, arg) != 0) {
        _exit(5);
    }
    pthread_join(t, NULL);
    _exit(6);
}

START_TEST(every_wrong_give_is_a_violation_in_a_destructor_and_on_a_thread_made_before_init)
{
    static const struct {
        int kind;
        unsigned kept;
    } cases[] = {{GIVE_TOP_AGAIN, 1},
                 {GIVE_TOP_AGAIN, RT_REGION_CACHE_SLOTS},
                 {GIVE_A_BYTE_TOO_MANY, RT_REGION_CACHE_SLOTS}};
    for (int place = 0; place < EDGE_PLACES; place++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            struct wrong_give w = {place, cases[k].kind, cases[k].kept};
            void *base = NULL, *end = NULL;
            char want[160];
            struct death d = run_child(give_wrongly_at_the_edge, &w);
            if (d.signal != SIGABRT || sscanf(d.err, "giving %p %p", &base, &end) != 2)
                ck_abort_msg("%s in %s keeping %u: expected SIGABRT, got signal %d exit %d; "
                             "stderr: %s", wrong_gives[w.kind], edge_places[place], w.kept,
                             d.signal, d.exit_status, d.err);
            if (w.kind == GIVE_TOP_AGAIN)
                snprintf(want, sizeof want, "refrt: rt_chunk_give: chunk %p was given twice\n",
                         base);
            else
                snprintf(want, sizeof want,
                         "refrt: rt_chunk_give: [%p, %p) is not a range inside one chunk\n",
                         base, end);
            if (strstr(d.err, want) == NULL)
                ck_abort_msg("%s in %s keeping %u: stderr lacks \"%s\": %s", wrong_gives[w.kind],
                             edge_places[place], w.kept, want, d.err);
        }
}
END_TEST

/* ---- main's chunks when main calls pthread_exit ------------------------- */

/* Main's chunks go with the process, except when main calls pthread_exit:
** then the key's destructor runs on main as on any thread, and frees the
** chunks main keeps, cleared (docs/region-cache.md). With 0, 3 and 16 kept
** (16 after a 17th give that freed), main as a task (its task attached by
** rt_held) and not yet (only the cache used). A plain thread made before the exit
** waits until main has ended, then writes the chunk traffic since main's
** last give. */
/* Whether main's thread has ended: its task in /proc is a zombie (Z) or
** gone, which it is only once its key destructors have run. Not
** pthread_join: TSan cannot join main's thread. */
static int main_has_ended(void)
{
    char path[64], line[512], *close;
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    close = strrchr(line, ')');
    return close == NULL || close[1] == '\0' || close[2] == 'Z' || close[2] == 'X';
}

static void *report_after_main(void *unused)
{
    (void)unused;
    while (!main_has_ended())
        sched_yield();
    struct chunk_counts n = chunks_counted();
    fprintf(stderr, "after main: %lu frees, %lu dirty, %lu mallocs\n", n.frees, n.frees_dirty,
            n.mallocs);
    fflush(stderr);
    _exit(0);
}

static void main_exits_keeping(void *arg)
{
    unsigned give = (unsigned)(uintptr_t)arg / 2;
    unsigned char *c[RT_REGION_CACHE_SLOTS + 1];
    pthread_t t;

    rt_init();
    if ((uintptr_t)arg % 2 != 0 && rt_held() != 0)
        _exit(7); /* main's task attached, holding nothing */
    for (unsigned i = 0; i < give; i++)
        c[i] = rt_chunk_take();
    for (unsigned i = 0; i < give; i++) {
        memset(c[i], 0x6B, 100 + i);
        rt_chunk_give(c[i], c[i] + 100 + i);
    }
    fprintf(stderr, "main keeps %u\n", rt_chunk_kept());
    fflush(stderr);
    chunks_reset();
    if (pthread_create(&t, NULL, report_after_main, NULL) != 0)
        _exit(5);
    pthread_exit(NULL);
}

START_TEST(a_main_that_calls_pthread_exit_frees_the_chunks_it_keeps_cleared)
{
    static const unsigned gives[] = {0, 3, RT_REGION_CACHE_SLOTS + 1};
    for (size_t k = 0; k < 2 * sizeof gives / sizeof *gives; k++) {
        size_t i = k / 2;
        unsigned kept = gives[i] < RT_REGION_CACHE_SLOTS ? gives[i] : RT_REGION_CACHE_SLOTS;
        char want[128];
        struct death d = run_child(main_exits_keeping, (void *)(uintptr_t)(gives[i] * 2 + k % 2));
        snprintf(want, sizeof want, "main keeps %u\nafter main: %u frees, 0 dirty, 0 mallocs\n",
                 kept, kept);
        ck_assert_msg(d.signal == 0 && d.exit_status == 0 && strcmp(d.err, want) == 0,
                      "main%s giving %u then pthread_exit: expected \"%s\", got signal %d "
                      "exit %d; stderr: %s", k % 2 ? " (a task)" : "", gives[i], want, d.signal, d.exit_status, d.err);
    }
}
END_TEST

/* ---- a region's fill over bytes a chunk still holds ----------------------- */

/* Every byte rt_region_alloc hands out is set to fill, fill 0 too, also
** where the chunk still holds bytes: those a program wrote past the last
** region's bump are not cleared by its close (docs/region-cache.md), so a
** region reopened on that chunk must set them itself. Fills 0, 0x01 and
** 0xFF over such bytes, at the start of the region and after an aligned
** gap; on main, a plain thread and a task. */
static void *fills_over_old_bytes(void *failed)
{
    static const unsigned char fills[] = {0, 0x01, 0xFF};
    for (size_t f = 0; f < sizeof fills; f++) {
        rt_region r;
        rt_region_open(&r);
        unsigned char *base = r.base;
        (void)rt_region_alloc(&r, 1, 5, 0x11);
        memset(r.bump, 0x77, 4000); /* past the bump, inside the chunk */
        rt_region_close(&r);
        rt_region_open(&r);
        if (r.base != base) {
            *(int *)failed = 1; /* not the chunk given last */
            return NULL;
        }
        unsigned char *a = rt_region_alloc(&r, 1, 3, fills[f]);
        unsigned char *b = rt_region_alloc(&r, 100, 30, fills[f]);
        if (a != base || b != base + 16)
            *(int *)failed = 2;
        for (size_t i = 0; i < 3; i++)
            if (a[i] != fills[f])
                *(int *)failed = 3;
        for (size_t i = 0; i < 3000; i++)
            if (b[i] != fills[f])
                *(int *)failed = 4;
        memset(base, 0, 4005); /* what this test wrote past the bump */
        rt_region_close(&r);
    }
    return NULL;
}

START_TEST(a_region_sets_every_byte_to_its_fill_over_bytes_its_chunk_still_holds)
{
    int failed[3] = {0, 0, 0};
    pthread_t t;
    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    rt_init();
    fills_over_old_bytes(&failed[0]);
    ck_assert_int_eq(pthread_create(&t, NULL, fills_over_old_bytes, &failed[1]), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(rt_join(rt_spawn(fills_over_old_bytes, &failed[2]), NULL), RT_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(failed[i] == 0, "on %s: check %d failed", give_places[i], failed[i]);
}
END_TEST

/* ---- a take over kept chunks allocates nothing --------------------------- */

/* rt_chunk_take is the chunk given last, "else" a fresh malloc (refrt.h),
** and the cache "pays neither malloc nor free on a hit"
** (docs/region-cache.md): with the 16 chunks of 16 nested regions kept,
** reopening the regions at each depth 1 to 16 with the thread's next
** allocation armed to fail (fail_nth(1)) pops the chunk the same region
** had (closed innermost first, the outermost's chunk is on top) and makes
** no allocation call at all; closing them again with the failure armed
** makes none either and keeps each chunk (rt_chunk_kept() exact at every
** depth), and no chunk is malloc'ed or freed. With all 16 in use (none
** kept) a 17th open has only malloc left: armed to fail, it traps. On
** main, a plain thread and a task. */
static const char *reopens_over_kept_chunks(void)
{
    rt_region r[RT_REGION_CACHE_SLOTS];
    unsigned char *had[RT_REGION_CACHE_SLOTS];
    unsigned long calls;

    if (rt_chunk_kept() != 0)
        return "kept a chunk before the test";
    for (unsigned i = 0; i < RT_REGION_CACHE_SLOTS; i++) {
        rt_region_open(&r[i]);
        had[i] = r[i].base;
        (void)rt_region_alloc(&r[i], 1, 1 + i, 0x31);
    }
    for (unsigned i = RT_REGION_CACHE_SLOTS; i-- > 0;)
        rt_region_close(&r[i]);
    if (rt_chunk_kept() != RT_REGION_CACHE_SLOTS)
        return "16 closes did not keep 16";
    chunks_reset();
    for (unsigned i = 0; i < RT_REGION_CACHE_SLOTS; i++) {
        fail_nth(1);
        rt_region_open(&r[i]);
        calls = fail_calls();
        fail_nth(0);
        if (calls != 0)
            return "an open over a kept chunk made an allocation call";
        if (r[i].base != had[i])
            return "an open did not take the chunk its region had (LIFO)";
        if (rt_chunk_kept() != RT_REGION_CACHE_SLOTS - 1 - i)
            return "kept after an open";
        if (rt_region_alloc(&r[i], 1, 1 + i, 0x32) != r[i].base)
            return "an allocation not at the base";
    }
    for (unsigned i = RT_REGION_CACHE_SLOTS; i-- > 0;) {
        fail_nth(1);
        rt_region_close(&r[i]);
        calls = fail_calls();
        fail_nth(0);
        if (calls != 0)
            return "a close that keeps made an allocation call";
        if (rt_chunk_kept() != RT_REGION_CACHE_SLOTS - i)
            return "kept after a close";
    }
    struct chunk_counts n = chunks_counted();
    if (n.mallocs != 0 || n.frees != 0)
        return "a chunk malloc'ed or freed with every open a hit";
    return NULL;
}

static void *reopens_there(void *unused)
{
    (void)unused;
    return (void *)reopens_over_kept_chunks();
}

static void seventeenth_open_with_malloc_failing(void *unused)
{
    rt_region r[RT_REGION_CACHE_SLOTS + 1];
    (void)unused;
    rt_init();
    for (unsigned i = 0; i < RT_REGION_CACHE_SLOTS; i++)
        rt_region_open(&r[i]);
    if (rt_chunk_kept() != 0)
        _exit(4);
    fail_nth(1);
    rt_region_open(&r[RT_REGION_CACHE_SLOTS]);
    fail_nth(0);
    _exit(3); /* the open returned */
}

START_TEST(regions_reopened_over_kept_chunks_allocate_nothing_at_every_depth)
{
    pthread_t t;
    void *why = NULL;
    rt_set_strategy(rt_fixed_strategy(16 * 1024));
    rt_init();
    const char *on_main = reopens_over_kept_chunks();
    ck_assert_msg(on_main == NULL, "on main: %s", on_main);
    ck_assert_int_eq(pthread_create(&t, NULL, reopens_there, NULL), 0);
    ck_assert_int_eq(pthread_join(t, &why), 0);
    ck_assert_msg(why == NULL, "on a plain thread: %s", (const char *)why);
    ck_assert_int_eq(rt_join(rt_spawn(reopens_there, NULL), &why), RT_OK);
    ck_assert_msg(why == NULL, "on a task: %s", (const char *)why);
    ck_assert_trap(seventeenth_open_with_malloc_failing, NULL);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("region_cache");
    suite_add_test(s, take_before_init_mallocs_and_give_frees);
    suite_add_test(s, regions_work_before_init);
    suite_add_test(s, init_twice_keeps_the_key);
    suite_add_test(s, init_again_makes_no_key);
    suite_add_test(s, take_pops_the_chunk_given_last);
    suite_add_test(s, fifteen_given_fifteen_kept);
    suite_add_test(s, sixteen_given_sixteen_kept);
    suite_add_test(s, seventeenth_is_freed);
    suite_add_test(s, forty_given_twenty_four_freed);
    suite_add_test(s, take_reuses_without_malloc);
    suite_add_test(s, give_clears_exactly_the_range);
    suite_add_test(s, give_of_a_whole_chunk_clears_its_last_byte);
    suite_add_test(s, a_freed_chunk_is_cleared_first);
    suite_add_test(s, a_new_region_shows_no_byte_of_the_last);
    suite_add_test(s, a_thread_end_frees_its_chunks_cleared);
    suite_add_test(s, a_thread_that_calls_pthread_exit_frees_exactly_the_chunks_it_keeps);
    suite_add_test(s, a_thread_never_takes_anothers_chunk);
    suite_add_test(s, closing_another_threads_region_is_a_violation);
    suite_add_test(s, a_threads_first_call_may_be_a_give_and_it_is_kept);
    suite_add_test(s, alloc_aligns_and_fills);
    suite_add_test(s, a_whole_chunk_fits);
    suite_add_test(s, a_full_chunk_traps);
    suite_add_test(s, a_take_whose_malloc_fails_traps_in_every_state);
    suite_add_test(s, an_overflowing_size_traps);
    suite_add_test(s, nested_regions_keep_their_depth);
    suite_add_test(s, closing_out_of_order_is_a_violation);
    suite_add_test(s, closing_twice_is_a_violation);
    suite_add_test(s, alloc_on_a_closed_region_is_a_violation);
    suite_add_test(s, giving_a_chunk_twice_is_a_violation);
    suite_add_test(s, giving_a_range_not_in_a_chunk_is_a_violation);
    suite_add_test(s, a_range_not_in_a_chunk_is_named_base_first_in_the_violation);
    suite_add_test(s, rt_hot_before_init_is_a_violation);
    suite_add_test(s, every_wrong_give_is_a_violation_in_every_state_on_every_thread);
    suite_add_test(s, every_wrong_give_is_a_violation_in_a_destructor_and_on_a_thread_made_before_init);
    suite_add_test(s, a_main_that_calls_pthread_exit_frees_the_chunks_it_keeps_cleared);
    suite_add_test(s, a_region_sets_every_byte_to_its_fill_over_bytes_its_chunk_still_holds);
    suite_add_test(s, regions_reopened_over_kept_chunks_allocate_nothing_at_every_depth);
    return s;
}
