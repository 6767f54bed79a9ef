/*
** check_region_cache.c: the chunk cache and regions (seed 000), unit level.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
** (the cache off), after it with nothing kept, and on a thread of its own. */
static void take_when_malloc_fails(void *arg)
{
    if (arg != NULL) {
        rt_init();
        void *c = rt_chunk_take();
        rt_chunk_give(c, c);
        (void)rt_chunk_take(); /* the stack empty again, the state made */
    }
    fail_nth(1);
    void *c = rt_chunk_take();
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
    ck_assert_trap(take_when_malloc_fails, NULL);
    ck_assert_trap(take_when_malloc_fails, (void *)1);
    ck_assert_trap(take_on_a_thread_when_malloc_fails, NULL);
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
    return s;
}
