/*
** check_block.c: the block allocator (block.c) on its own, no task.
*/
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costs.h"
#include "internal.h"
#include "refrt.h"
#include "testutil.h"

#define KIB 1024u

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

START_TEST(payloads_are_aligned_and_counted_as_chunks)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    ck_assert_uint_eq(rt__block_size(b), 64 * KIB);
    ck_assert_uint_eq(rt__block_held(b), 0);
    for (size_t n = 0; n < 300; n++) {
        size_t before = rt__block_held(b);
        unsigned char *p = rt__block_alloc(b, n);
        ck_require(p != NULL);
        ck_require((uintptr_t)p % _Alignof(max_align_t) == 0);
        /* header of 8 bytes, rounded up to 16 */
        ck_require(rt__block_held(b) - before == (n + 8 + 15) / 16 * 16);
        ck_require(rt__block_chunk(b, p) == (n + 8 + 15) / 16 * 16);
        ck_require(rt__block_owns(b, p));
        memset(p, 0x5C, n);
        ck_require(rt__block_free(b, p));
        ck_require(rt__block_held(b) == before);
    }
    rt__block_delete(b);
}
END_TEST

START_TEST(held_returns_to_its_old_figure_after_a_free)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    void *keep[40];
    for (int i = 0; i < 40; i++)
        keep[i] = rt__block_alloc(b, (size_t)i * 37);
    size_t before = rt__block_held(b);
    for (size_t n = 1; n < 5000; n += 111) {
        void *p = rt__block_alloc(b, n);
        ck_require(p != NULL);
        ck_require(rt__block_held(b) > before);
        ck_require(rt__block_free(b, p));
        ck_require(rt__block_held(b) == before);
    }
    for (int i = 0; i < 40; i++)
        ck_require(rt__block_free(b, keep[i]));
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

START_TEST(exactly_full_fits_one_byte_more_does_not)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    void *p = rt__block_alloc(b, 4 * KIB - 8);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(rt__block_held(b), 4 * KIB);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    ck_assert(rt__block_free(b, p));
    ck_assert_ptr_null(rt__block_alloc(b, 4 * KIB - 7));
    ck_assert_uint_eq(rt__block_held(b), 0);
    ck_assert_ptr_nonnull(rt__block_alloc(b, 4 * KIB - 8));
    rt__block_delete(b);
}
END_TEST

START_TEST(a_size_is_rounded_down_to_sixteen)
{
    struct rt_block *b = rt__block_new(1000);
    ck_assert_uint_eq(rt__block_size(b), 992);
    ck_assert_ptr_nonnull(rt__block_alloc(b, 984));
    rt__block_delete(b);
    b = rt__block_new(0);
    ck_assert_uint_eq(rt__block_size(b), 0);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    rt__block_delete(b);
    ck_assert_ptr_null(rt__block_new((size_t)1 << 40));
}
END_TEST

START_TEST(an_overflowing_size_does_not_fit)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    ck_assert_ptr_null(rt__block_alloc(b, SIZE_MAX));
    ck_assert_ptr_null(rt__block_alloc(b, SIZE_MAX - 7));
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

START_TEST(a_freed_chunk_is_allocated_again)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    void *a = rt__block_alloc(b, 100), *guard = rt__block_alloc(b, 8);
    ck_assert(rt__block_free(b, a));
    ck_assert_ptr_eq(rt__block_alloc(b, 100), a); /* same class */
    void *big = rt__block_alloc(b, 5000);
    guard = rt__block_alloc(b, 8);
    ck_assert(rt__block_free(b, big));
    ck_assert_ptr_eq(rt__block_alloc(b, 3000), big); /* large, first fit, split */
    void *rest = rt__block_alloc(b, 1900);           /* the split-off rest */
    ck_assert_ptr_eq(rest, (unsigned char *)big + 3008);
    (void)guard;
    rt__block_delete(b);
}
END_TEST

START_TEST(the_top_chunk_goes_back_to_the_bump)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    void *a = rt__block_alloc(b, 40);
    ck_assert(rt__block_free(b, a));
    /* a different class gets the same place: the bump went back */
    ck_assert_ptr_eq(rt__block_alloc(b, 500), a);
    rt__block_delete(b);
}
END_TEST

START_TEST(a_small_request_splits_a_bigger_freed_chunk_when_the_bump_is_spent)
{
    struct rt_block *b = rt__block_new(2 * KIB);
    void *a = rt__block_alloc(b, 1000 - 8);
    void *c = rt__block_alloc(b, 2 * KIB - 1000 - 8 - 8); /* fills the arena */
    ck_assert_ptr_nonnull(c);
    ck_assert(rt__block_free(b, a));
    /* 1000 rounds to 1008; two chunks of 496 come out of it */
    void *x = rt__block_alloc(b, 488), *y = rt__block_alloc(b, 488);
    ck_assert_ptr_eq(x, a);
    ck_assert_ptr_eq(y, (unsigned char *)a + 496);
    ck_assert_ptr_nonnull(rt__block_alloc(b, 0)); /* the last 16 bytes */
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    rt__block_delete(b);
}
END_TEST

START_TEST(realloc_keeps_contents_within_and_past_size_classes)
{
    struct rt_block *b = rt__block_new(1024 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 1);
    size_t n = 1, pins = 0;
    p[0] = 0;
    for (size_t want = 2; want < 100000; want = want * 3 / 2 + 1) {
        unsigned char *q = rt__block_realloc(b, p, want, &held);
        ck_require(held);
        ck_require(q != NULL);
        for (size_t i = 0; i < n; i++)
            ck_require(q[i] == (unsigned char)(i * 7));
        for (size_t i = n; i < want; i++)
            q[i] = (unsigned char)(i * 7);
        p = q;
        n = want;
        /* a pin above p, so the next growth past its chunk moves it */
        ck_require(rt__block_alloc(b, 8) != NULL);
        pins++;
    }
    ck_assert(rt__block_free(b, p));
    ck_assert_uint_eq(rt__block_held(b), pins * 16);
    rt__block_delete(b);
}
END_TEST

START_TEST(realloc_grows_the_top_chunk_in_place)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 10);
    memset(p, 3, 10);
    ck_assert_ptr_eq(rt__block_realloc(b, p, 3000, &held), p);
    ck_assert(filled(p, 10, 3));
    ck_assert_uint_eq(rt__block_held(b), 3008); /* one chunk of 3000 + 8, rounded */
    ck_assert_ptr_eq(rt__block_realloc(b, p, 5, &held), p); /* shrinking stays */
    rt__block_delete(b);
}
END_TEST

START_TEST(a_full_realloc_leaves_the_value_as_it_was)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 1000);
    memset(p, 9, 1000);
    rt__block_alloc(b, 8);
    size_t before = rt__block_held(b);
    ck_assert_ptr_null(rt__block_realloc(b, p, 3500, &held));
    ck_assert(held);
    ck_assert_uint_eq(rt__block_held(b), before);
    ck_assert(filled(p, 1000, 9));
    ck_assert_uint_eq(rt__block_chunk(b, p), 1008);
    rt__block_delete(b);
}
END_TEST

START_TEST(a_pointer_the_block_does_not_hold_is_refused)
{
    struct rt_block *b = rt__block_new(64 * KIB), *other = rt__block_new(64 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 64), *q = rt__block_alloc(other, 64);
    int on_stack;
    rt__block_alloc(b, 64);
    ck_assert(!rt__block_free(b, p + 16)); /* interior, aligned */
    ck_assert(!rt__block_free(b, p + 1));  /* interior, unaligned */
    ck_assert(!rt__block_free(b, q));      /* another block's */
    ck_assert(!rt__block_free(b, &on_stack));
    ck_assert(!rt__block_free(b, NULL));
    ck_assert_ptr_null(rt__block_realloc(b, q, 10, &held));
    ck_assert(!held);
    ck_assert(rt__block_free(b, p));
    ck_assert(!rt__block_free(b, p)); /* twice */
    ck_assert(!rt__block_owns(b, q));
    ck_assert(!rt__block_owns(b, &on_stack));
    ck_assert_uint_eq(rt__block_held(b), 80);
    rt__block_delete(b);
    rt__block_delete(other);
}
END_TEST

/* A header overwritten in place (a write before the payload) keeps its
** check word but not its size: the block refuses the chunk rather than
** follow a size of nothing or one past the carved arena. */
START_TEST(a_chunk_whose_size_was_overwritten_is_refused)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 100), *q = rt__block_alloc(b, 100);
    uint64_t h, forged;
    memcpy(&h, p - 8, sizeof h);
    forged = h & 0xFFFFFFFFu; /* a size of 0 granules */
    memcpy(p - 8, &forged, sizeof forged);
    ck_assert_uint_eq(rt__block_chunk(b, p), 0);
    ck_assert(!rt__block_free(b, p));
    ck_assert_ptr_null(rt__block_realloc(b, p, 10, &held));
    ck_assert(!held);
    forged = (h & 0xFFFFFFFFu) | (uint64_t)(2 * 112 / 16 + 1) << 32; /* past the bump */
    memcpy(p - 8, &forged, sizeof forged);
    ck_assert(!rt__block_free(b, p));
    forged = (h & 0xFFFFFFFFu) | (uint64_t)(2 * 112 / 16) << 32; /* up to the bump: a size */
    memcpy(p - 8, &forged, sizeof forged);
    ck_assert_uint_eq(rt__block_chunk(b, p), 224);
    memcpy(p - 8, &h, sizeof h);
    ck_assert_uint_eq(rt__block_chunk(b, p), 112);
    ck_assert_uint_eq(rt__block_chunk(b, p + 16), 0); /* not a chunk at all */
    ck_assert(rt__block_free(b, p));
    ck_assert(rt__block_free(b, q));
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

/* The top chunk cannot grow past the arena's end even when the budget
** could take it (freed chunks below): it moves into one of them. */
START_TEST(the_top_chunk_moves_when_the_arena_ends_before_the_budget)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *a = rt__block_alloc(b, 3000); /* a chunk of 3008 */
    unsigned char *p = rt__block_alloc(b, 500);  /* 512, the top: 576 bytes after it */
    memset(p, 0x2B, 500);
    ck_assert(rt__block_free(b, a));
    ck_assert_ptr_eq(rt__block_realloc(b, p, 1000, &held), p); /* 496 more: in place */
    unsigned char *q = rt__block_realloc(b, p, 2000, &held);   /* 1504 more: no */
    ck_assert_ptr_eq(q, a);
    ck_assert(filled(q, 500, 0x2B));
    ck_assert_uint_eq(rt__block_held(b), 2016);
    rt__block_delete(b);
}
END_TEST

START_TEST(the_largest_block_is_one_granule_short_of_two_to_the_36)
{
    /* a chunk of the whole arena must fit the header's 32 bits of granules */
    struct rt_block *over, *rounded, *largest;
    unsigned long asked_over;
    /* counts the mallocs, the first one asked fails (no 64 GiB is taken);
    ** Check's asserts allocate too, so they come after */
    fail_nth(1);
    over = rt__block_new((size_t)1 << 36);
    rounded = rt__block_new(((size_t)1 << 36) + 15); /* rounds down to 2^36 */
    asked_over = fail_calls();
    largest = rt__block_new(((size_t)1 << 36) - 1); /* 2^36 - 16 */
    unsigned long asked = fail_calls();
    fail_nth(0);
    ck_assert_ptr_null(over);
    ck_assert_ptr_null(rounded);
    ck_assert_uint_eq(asked_over, 0); /* refused before malloc is asked */
    ck_assert_ptr_null(largest);
    ck_assert_uint_eq(asked, 1); /* the largest: malloc is asked */
}
END_TEST

START_TEST(the_block_owns_its_whole_arena_and_nothing_past_it)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    unsigned char *p = rt__block_alloc(b, 4 * KIB - 8); /* the whole arena: p is its start + 8 */
    ck_assert(rt__block_owns(b, p - 8));
    ck_assert(rt__block_owns(b, p + 4 * KIB - 9));
    ck_assert(!rt__block_owns(b, p + 4 * KIB - 8));
    ck_assert(!rt__block_owns(b, p - 9));
    rt__block_delete(b);
}
END_TEST

/* The arena is the block's from its first byte to its last whatever the
** bump has carved (rt_send, rt_hand_over and rt_store ask it whether a
** pointer is a block value, rt_realloc whether the block takes it): with
** nothing carved, part of it, the top given back, all of it. */
START_TEST(the_block_owns_its_whole_arena_however_much_of_it_is_carved)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    unsigned char *p = rt__block_alloc(b, 8), *arena = p - 8, *end = arena + 4 * KIB, *q;
    ck_assert(rt__block_free(b, p)); /* back to the bump: nothing carved */
    for (int state = 0; state < 4; state++) {
        if (state == 1)
            ck_assert_ptr_eq(rt__block_alloc(b, 8), p); /* 16 bytes carved */
        if (state == 2) {
            q = rt__block_alloc(b, 2000); /* 2032 more, then back to the bump */
            ck_assert(rt__block_free(b, q));
        }
        if (state == 3)
            ck_assert_ptr_nonnull(rt__block_alloc(b, 4 * KIB - 16 - 8)); /* all carved */
        for (unsigned char *x = arena; x < end; x += 8)
            ck_require(rt__block_owns(b, x));
        ck_require(rt__block_owns(b, end - 1));
        ck_require(!rt__block_owns(b, end));
        ck_require(!rt__block_owns(b, arena - 1));
    }
    rt__block_delete(b);
}
END_TEST

START_TEST(freed_chunks_of_one_size_are_all_used_again_before_the_bump)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    unsigned char *v[4], *guard;
    for (int i = 0; i < 4; i++)
        v[i] = rt__block_alloc(b, 100);
    guard = rt__block_alloc(b, 8);
    for (int i = 0; i < 3; i++)
        ck_assert(rt__block_free(b, v[i]));
    ck_assert_ptr_eq(rt__block_alloc(b, 100), v[2]); /* last freed, first used */
    ck_assert_ptr_eq(rt__block_alloc(b, 100), v[1]);
    ck_assert_ptr_eq(rt__block_alloc(b, 100), v[0]);
    ck_assert_ptr_eq(rt__block_alloc(b, 100), guard + 16); /* then the bump */
    rt__block_delete(b);
}
END_TEST

/* 1024 bytes is the largest small class, 1040 the smallest large chunk:
** each is used again at once, though the bump could serve it. */
START_TEST(chunks_on_each_side_of_the_small_classes_are_used_again)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    unsigned char *a = rt__block_alloc(b, 1016), *l;
    rt__block_alloc(b, 8);
    ck_assert(rt__block_free(b, a));
    ck_assert_ptr_eq(rt__block_alloc(b, 1016), a);
    l = rt__block_alloc(b, 1032);
    rt__block_alloc(b, 8);
    ck_assert(rt__block_free(b, l));
    ck_assert_ptr_eq(rt__block_alloc(b, 1032), l);
    rt__block_delete(b);
}
END_TEST

START_TEST(a_coalesced_run_of_1024_bytes_is_a_small_chunk)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    /* chunks of 512, 512, 16 (kept) and 3056 fill the arena */
    unsigned char *a = rt__block_alloc(b, 504), *c = rt__block_alloc(b, 504);
    rt__block_alloc(b, 8);
    unsigned char *top = rt__block_alloc(b, 3048);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    ck_assert(rt__block_free(b, a));
    ck_assert(rt__block_free(b, c));
    ck_assert(rt__block_free(b, top)); /* back to the bump: 3056 there */
    ck_assert_ptr_null(rt__block_alloc(b, 3064)); /* 3072: none, but a and c merge */
    /* the bump could serve 1024 bytes; the merged run is used first */
    ck_assert_ptr_eq(rt__block_alloc(b, 1016), a);
    rt__block_delete(b);
}
END_TEST

START_TEST(an_exact_fit_at_the_bump_comes_from_the_bump)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    /* chunks of 2016, 16 and 2032; 32 bytes of bump left */
    unsigned char *l = rt__block_alloc(b, 2008);
    rt__block_alloc(b, 8);
    unsigned char *x = rt__block_alloc(b, 2024);
    ck_assert(rt__block_free(b, l)); /* a large freed chunk that could serve it too */
    ck_assert_ptr_eq(rt__block_alloc(b, 24), x + 2032);
    ck_assert_ptr_eq(rt__block_alloc(b, 24), l); /* now the freed one, split */
    rt__block_delete(b);
}
END_TEST

/* The top chunk goes back to the bump marked freed, so a stale pointer to
** it stays refused when the bump later grows over its old header. */
START_TEST(a_pointer_freed_at_the_top_stays_refused_under_a_later_chunk)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    rt__block_alloc(b, 8);
    unsigned char *q = rt__block_alloc(b, 100), *p = rt__block_alloc(b, 100);
    ck_assert(rt__block_free(b, p)); /* the top */
    ck_assert(rt__block_free(b, q)); /* the top now */
    unsigned char *w = rt__block_alloc(b, 300); /* from q's place, over p's old header */
    ck_assert_ptr_eq(w, q);
    ck_assert(!rt__block_free(b, p));
    ck_assert_uint_eq(rt__block_chunk(b, p), 0);
    ck_assert_uint_eq(rt__block_held(b), 16 + 320);
    rt__block_delete(b);
}
END_TEST

/* malloc hands a new block bytes an earlier owner wrote: the block reads
** none it did not set (a search past the last small class would). */
START_TEST(a_block_made_over_dirty_memory_works_as_a_clean_one)
{
    void *(*volatile allocate)(size_t) = malloc;
    void (*volatile release)(void *) = free;
    unsigned char *dirty = allocate(8 * KIB);
    ck_assert_ptr_nonnull(dirty);
    memset(dirty, 0xA5, 8 * KIB);
    release(dirty);
    struct rt_block *b = rt__block_new(4 * KIB);
    if (!UNDER_SANITIZER)
        ck_assert_ptr_eq((void *)b, (void *)dirty); /* glibc: the same bytes */
    /* chunks of 16, 16, 16 and the rest; the first and third freed: 32
    ** bytes of budget left, in no chunk that can hold 32 */
    unsigned char *x = rt__block_alloc(b, 8), *y;
    rt__block_alloc(b, 8);
    y = rt__block_alloc(b, 8);
    ck_assert_ptr_nonnull(rt__block_alloc(b, 4 * KIB - 48 - 8));
    ck_assert(rt__block_free(b, x));
    ck_assert(rt__block_free(b, y));
    ck_assert_ptr_null(rt__block_alloc(b, 24)); /* every bigger small class searched: none */
    ck_assert_uint_eq(rt__block_held(b), 4 * KIB - 32);
    rt__block_delete(b);
}
END_TEST

/* A block made where a deleted one was: a stale pointer into the old one,
** whose header is still there inside a new chunk, is refused (the cookie
** differs from block to block). */
START_TEST(a_stale_pointer_into_a_deleted_block_is_refused_by_the_next)
{
    struct rt_block *a = rt__block_new(4 * KIB);
    uintptr_t was = (uintptr_t)a;
    rt__block_alloc(a, 100);
    unsigned char *stale = rt__block_alloc(a, 100);
    uintptr_t stale_at = (uintptr_t)stale;
    rt__block_delete(a);
    struct rt_block *b = rt__block_new(4 * KIB);
    if (!UNDER_SANITIZER)
        ck_assert_uint_eq((uintptr_t)b, was); /* glibc: the same bytes */
    unsigned char *big = rt__block_alloc(b, 1000); /* over the old header, untouched */
    ck_assert(!rt__block_free(b, (void *)stale_at));
    ck_assert_uint_eq(rt__block_chunk(b, (void *)stale_at), 0);
    ck_assert(rt__block_free(b, big));
    rt__block_delete(b);
}
END_TEST

/* A header copied 2^29, 2^32 and 2^34 bytes further into the block: the
** check word holds enough of the address (bits 3..34) that no copy makes a
** chunk. A block of 16 GiB is address space only (overcommit): three pages
** are touched. */
/* The 8 bytes just below the arena's first header are the block's own
** (padding past its struct, never written): a pointer whose header would sit
** there is below the arena, and refused whatever those bytes hold, even a
** header whose check word is right for that place (made here from the
** first chunk's: the word is the place's address, the cookie and the state,
** so the cookie is the first word's with its place taken out). */
START_TEST(a_header_forged_below_the_arena_makes_no_chunk)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *first = rt__block_alloc(b, 8), *below = first - 16;
    uint64_t h, forged, saved;
    memcpy(&h, first - 8, sizeof h);
    uint32_t cookie = (uint32_t)h ^ (uint32_t)((uintptr_t)(first - 8) >> 3);
    forged = (uint64_t)1 << 32 | ((uint32_t)((uintptr_t)(below - 8) >> 3) ^ cookie);
    memcpy(&saved, below - 8, sizeof saved);
    memcpy(below - 8, &forged, sizeof forged);
    ck_assert_uint_eq(rt__block_chunk(b, below), 0);
    ck_assert(!rt__block_free(b, below));
    ck_assert_ptr_null(rt__block_realloc(b, below, 4, &held));
    ck_assert(!held);
    ck_assert(!rt__block_owns(b, below));
    ck_assert_uint_eq(rt__block_held(b), 16);
    memcpy(below - 8, &saved, sizeof saved);
    ck_assert(rt__block_free(b, first));
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

/* Past the bump nothing is carved: a pointer there is refused whatever
** the bytes before it hold, even a header whose check word is right for
** that place (made as above), at every granule up to the arena's end, with
** nothing carved, part of the arena carved, and the top given back. */
START_TEST(a_header_forged_past_the_bump_makes_no_chunk)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *first = rt__block_alloc(b, 8), *arena = first - 8, *end = arena + 4 * KIB;
    unsigned char *bump = arena, *top = NULL;
    uint64_t h, forged, saved;
    memcpy(&h, first - 8, sizeof h);
    uint32_t cookie = (uint32_t)h ^ (uint32_t)((uintptr_t)(first - 8) >> 3);
    ck_assert(rt__block_free(b, first)); /* the top: the bump is back at the arena */
    for (int state = 0; state < 3; state++) {
        size_t held_before;
        if (state == 1) { /* chunks of 16 and 112 carved */
            ck_assert_ptr_eq(rt__block_alloc(b, 8), first);
            top = rt__block_alloc(b, 100);
            bump = top - 8 + 112;
        }
        if (state == 2) { /* the top given back */
            ck_assert(rt__block_free(b, top));
            bump = top - 8;
        }
        held_before = rt__block_held(b);
        for (unsigned char *chunk = bump; chunk + 16 <= end; chunk += 16) {
            unsigned char *q = chunk + 8;
            size_t rest = (size_t)(end - chunk) / 16; /* granules up to the end */
            const size_t sizes[] = {1, 2, rest};
            for (size_t k = 0; k < 3; k++) {
                if (sizes[k] > rest)
                    continue;
                forged = (uint64_t)sizes[k] << 32 | ((uint32_t)((uintptr_t)chunk >> 3) ^ cookie);
                memcpy(&saved, chunk, sizeof saved);
                memcpy(chunk, &forged, sizeof forged);
                ck_require(rt__block_chunk(b, q) == 0);
                ck_require(!rt__block_free(b, q));
                ck_require(rt__block_realloc(b, q, 4, &held) == NULL);
                ck_require(!held);
                ck_require(rt__block_held(b) == held_before);
                memcpy(chunk, &saved, sizeof saved);
            }
        }
    }
    ck_assert(rt__block_free(b, first));
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

START_TEST(a_header_copied_far_into_a_big_block_makes_no_chunk)
{
    const size_t far[] = {(size_t)1 << 29, (size_t)1 << 32, (size_t)1 << 34};
    if (UNDER_SANITIZER)
        return;
    struct rt_block *b = rt__block_new(((size_t)1 << 34) + 64 * KIB);
    ck_assert_ptr_nonnull(b);
    unsigned char *first = rt__block_alloc(b, 8);
    unsigned char *big = rt__block_alloc(b, ((size_t)1 << 34) + 32 * KIB);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        unsigned char *fake = first + far[i]; /* inside big's payload */
        memcpy(fake - 8, first - 8, 8);
        ck_assert(!rt__block_free(b, fake));
        ck_assert_uint_eq(rt__block_chunk(b, fake), 0);
    }
    ck_assert_uint_eq(rt__block_chunk(b, first), 16);
    rt__block_delete(b);
}
END_TEST

/* Chunks either side of 4 GiB in a block bigger than that: each is
** counted at its whole size (the request plus its 8-byte header, rounded
** up to 16), alone and with another big one live, and each free gives back
** exactly that, in either order. Sizes as big as 2^32 must not be read or
** made in 32 bits anywhere. Virtual memory only: nothing writes the
** payloads. */
START_TEST(chunks_either_side_of_4_gib_are_counted_and_freed_exactly)
{
    const size_t g4 = (size_t)1 << 32;
    const size_t sizes[] = {g4 - 24, g4 - 8, g4 - 7, g4, g4 + 8, g4 + 9, 2 * g4 + 1};
    if (UNDER_SANITIZER)
        return;
    struct rt_block *b = rt__block_new(((size_t)1 << 34) + 64 * KIB);
    ck_assert_ptr_nonnull(b);
    unsigned char *small = rt__block_alloc(b, 8);
    size_t base = rt__block_held(b);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t want = (sizes[i] + 8 + 15) & ~(size_t)15;
        size_t j = (i + 3) % (sizeof sizes / sizeof sizes[0]);
        size_t other = (sizes[j] + 8 + 15) & ~(size_t)15;
        unsigned char *p = rt__block_alloc(b, sizes[i]);
        ck_assert_msg(p != NULL, "size %zu", sizes[i]);
        ck_assert_uint_eq(rt__block_chunk(b, p), want);
        ck_assert_uint_eq(rt__block_held(b), base + want);
        unsigned char *q = rt__block_alloc(b, sizes[j]);
        ck_assert_msg(q != NULL, "size %zu then %zu", sizes[i], sizes[j]);
        ck_assert_uint_eq(rt__block_held(b), base + want + other);
        ck_assert(p + want <= q || q + other <= p); /* chunks [p - 8, p - 8 + want) apart */
        if (i % 2 == 0) {
            ck_assert(rt__block_free(b, p));
            ck_assert_uint_eq(rt__block_held(b), base + other);
            ck_assert(rt__block_free(b, q));
        } else {
            ck_assert(rt__block_free(b, q));
            ck_assert_uint_eq(rt__block_held(b), base + want);
            ck_assert(rt__block_free(b, p));
        }
        ck_assert_uint_eq(rt__block_held(b), base);
    }
    ck_assert_uint_eq(rt__block_chunk(b, small), 16);
    rt__block_delete(b);
}
END_TEST

/* Freed chunks that coalesce into a run of more than 4 GiB: three of just
** over 2 GiB side by side, the block's bump used up, so that only their
** merged run can serve a request for all three. The run is their sum, as
** big as 2^32 and more, and is handed out at the first one's place with
** the block's figure exact; a request one granule bigger finds no room. */
START_TEST(freed_chunks_coalesce_into_a_run_past_4_gib)
{
    const size_t big = ((size_t)1 << 31) + 8, chunk = ((size_t)1 << 31) + 16;
    if (UNDER_SANITIZER)
        return;
    for (int order = 0; order < 2; order++) {
        struct rt_block *b = rt__block_new(((size_t)1 << 33) + 64 * KIB);
        ck_assert_ptr_nonnull(b);
        unsigned char *p[3];
        for (int i = 0; i < 3; i++) {
            p[i] = rt__block_alloc(b, big);
            ck_assert_ptr_nonnull(p[i]);
            ck_assert_uint_eq(rt__block_chunk(b, p[i]), chunk);
        }
        unsigned char *fence = rt__block_alloc(b, 8);
        ck_assert_ptr_nonnull(fence);
        size_t room = rt__block_size(b) - rt__block_held(b);
        ck_assert_uint_eq(room % 16, 0);
        unsigned char *rest = rt__block_alloc(b, room - 8);
        ck_assert_ptr_nonnull(rest);
        ck_assert_uint_eq(rt__block_held(b), rt__block_size(b));
        for (int i = 0; i < 3; i++)
            ck_assert(rt__block_free(b, p[order == 0 ? i : 2 - i]));
        ck_assert_uint_eq(rt__block_held(b), rt__block_size(b) - 3 * chunk);
        ck_assert_ptr_null(rt__block_alloc(b, 3 * chunk - 8 + 1)); /* one granule more */
        unsigned char *all = rt__block_alloc(b, 3 * chunk - 8);
        ck_assert_ptr_eq(all, p[0]);
        ck_assert_uint_eq(rt__block_chunk(b, all), 3 * chunk);
        ck_assert_uint_eq(rt__block_held(b), rt__block_size(b));
        ck_assert(rt__block_free(b, all));
        ck_assert(rt__block_free(b, rest));
        ck_assert(rt__block_free(b, fence));
        ck_assert_uint_eq(rt__block_held(b), 0);
        /* and the whole arena coalesces back into one run for one request */
        unsigned char *whole = rt__block_alloc(b, rt__block_size(b) - 8);
        ck_assert_ptr_eq(whole, p[0]);
        ck_assert_uint_eq(rt__block_held(b), rt__block_size(b));
        rt__block_delete(b);
    }
}
END_TEST

#if RT_TESTING
/* A block is one malloc: its struct, padding up to 8 bytes past a 16-byte
** boundary, then the arena. Nothing writes the padding: what malloc left
** there stays through making the block, allocating chunks of two small
** classes, of the last one (whose list head is the struct's last field) and
** a large one, freeing them onto their lists, coalescing, growing and
** moving a value, charging; so a field or a list head written past the
** struct shows. (Under a sanitizer malloc may not give the dirty bytes
** back: the padding is filled once the block is made.) */
START_TEST(a_block_writes_no_byte_between_its_struct_and_its_arena)
{
    void *(*volatile allocate)(size_t) = malloc;
    void (*volatile release)(void *) = free;
    size_t request = ((rt__sizeof_block + 15) & ~(size_t)15) + 8 + 4 * KIB;
    unsigned char *dirty = allocate(request);
    ck_assert_ptr_nonnull(dirty);
    memset(dirty, 0xA5, request);
    release(dirty);
    struct rt_block *b = rt__block_new(4 * KIB);
    unsigned char *first = rt__block_alloc(b, 8), *arena = first - 8;
    unsigned char *pad = (unsigned char *)b + rt__sizeof_block;
    size_t pad_bytes = (size_t)(arena - pad);
    void *v[4], *guard[4], *p, *q, *pin;
    bool held;
    ck_assert_uint_ge(pad_bytes, 8);
    if (UNDER_SANITIZER)
        memset(pad, 0xA5, pad_bytes);
    else
        ck_assert_ptr_eq((void *)b, (void *)dirty); /* glibc: the same bytes */
    ck_assert_msg(filled(pad, pad_bytes, 0xA5), "making the block wrote its padding");
    ck_assert(rt__block_free(b, first));
    rt__costs_reset();
    for (int round = 0; round < 2; round++) {
        /* chunks of 16, 32, 1024 (the last small class) and 1040 (large),
        ** each with a live guard after it, freed onto their lists */
        const size_t n[4] = {8, 24, 1016, 1032};
        for (int i = 0; i < 4; i++) {
            v[i] = rt__block_alloc(b, n[i]);
            guard[i] = rt__block_alloc(b, 8);
            ck_assert(v[i] != NULL && guard[i] != NULL);
        }
        for (int i = 0; i < 4; i++)
            ck_assert(rt__block_free(b, v[i]));
        ck_assert_msg(filled(pad, pad_bytes, 0xA5), "freeing onto the lists wrote the padding");
        /* 1920 bytes of bump, no freed chunk of 2016: a coalescing, then NULL */
        ck_assert_ptr_null(rt__block_alloc(b, 2008));
        ck_assert_msg(filled(pad, pad_bytes, 0xA5), "coalescing wrote the padding");
        /* the lists serve again; the top grows in place, then moves */
        for (int i = 3; i >= 0; i--)
            ck_assert_ptr_eq(rt__block_alloc(b, n[i]), v[i]);
        p = rt__block_alloc(b, 100);
        ck_assert_ptr_eq(rt__block_realloc(b, p, 1000, &held), p);
        pin = rt__block_alloc(b, 8);
        ck_assert(rt__block_free(b, v[3]));
        q = rt__block_realloc(b, p, 1030, &held); /* 1040: into v[3]'s place */
        ck_assert_ptr_eq(q, v[3]);
        ck_assert(rt__block_charge(b, 100));
        rt__block_uncharge(b, 100);
        ck_assert_msg(filled(pad, pad_bytes, 0xA5), "allocating wrote the padding");
        /* everything freed: a coalescing merges it all back to the bump */
        ck_assert(rt__block_free(b, q));
        for (int i = 0; i < 3; i++)
            ck_assert(rt__block_free(b, v[i]));
        for (int i = 0; i < 4; i++)
            ck_assert(rt__block_free(b, guard[i]));
        ck_assert(rt__block_free(b, pin));
        ck_assert_uint_eq(rt__block_held(b), 0);
        ck_assert_ptr_eq(rt__block_alloc(b, 4 * KIB - 8), first);
        ck_assert(rt__block_free(b, first));
        ck_assert_msg(filled(pad, pad_bytes, 0xA5), "merging back to the bump wrote the padding");
    }
    ck_assert_uint_ge(rt__cost(RT_COST_COALESCES), 4);
    rt__block_delete(b);
}
END_TEST
#endif

START_TEST(a_realloc_within_its_chunk_stays_put)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 100); /* a chunk of 112, not the top */
    rt__block_alloc(b, 8);
    memset(p, 7, 100);
    ck_assert_ptr_eq(rt__block_realloc(b, p, 104, &held), p); /* 104 + 8: still 112 */
    ck_assert(held);
    ck_assert(filled(p, 100, 7));
    ck_assert_uint_eq(rt__block_held(b), 128);
    rt__block_delete(b);
}
END_TEST

START_TEST(the_top_chunk_grows_in_place_up_to_exactly_full)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 1000); /* 1008, the top; 3088 left */
    memset(p, 4, 1000);
    ck_assert_ptr_eq(rt__block_realloc(b, p, 3000, &held), p); /* 2000 more */
    ck_assert_ptr_eq(rt__block_realloc(b, p, 4 * KIB - 8, &held), p); /* the last 1088 */
    ck_assert_uint_eq(rt__block_held(b), 4 * KIB);
    ck_assert(filled(p, 1000, 4));
    rt__block_delete(b);
}
END_TEST

START_TEST(charges_count_against_the_budget)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    ck_assert(rt__block_charge(b, 4 * KIB - 16));
    ck_assert(!rt__block_charge(b, 17));
    ck_assert_ptr_nonnull(rt__block_alloc(b, 8)); /* exactly the last 16 */
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    ck_assert(!rt__block_charge(b, 1));
    rt__block_uncharge(b, 4 * KIB - 16);
    ck_assert_uint_eq(rt__block_held(b), 16);
    rt__block_delete(b);
}
END_TEST

START_TEST(freed_neighbours_are_coalesced_before_the_block_is_full)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    void *small[63];
    for (int i = 0; i < 63; i++) /* 63 chunks of 64 bytes, the last 64 free */
        small[i] = rt__block_alloc(b, 56);
    void *top = rt__block_alloc(b, 56); /* the arena is carved whole */
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    for (int i = 0; i < 63; i++)
        ck_require(rt__block_free(b, small[i]));
    ck_assert_uint_eq(rt__block_held(b), 64);
    /* no free list holds 4000 bytes, but 63 neighbours together do */
    void *big = rt__block_alloc(b, 4000);
    ck_assert_ptr_eq(big, small[0]);
    ck_assert_ptr_null(rt__block_alloc(b, 16)); /* 32 bytes left, a 32-byte chunk: none */
    ck_assert(rt__block_free(b, big));
    ck_assert(rt__block_free(b, top));
    ck_assert_uint_eq(rt__block_held(b), 0);
    ck_assert_ptr_eq(rt__block_alloc(b, 4 * KIB - 8), small[0]);
    rt__block_delete(b);
}
END_TEST

/* The request that finds the block full coalesces it, and a run merged to
** exactly its size serves that same request (the next one would find it on
** its list anyway): for a task's block the runtime asks twice, but a
** value's block, in a door, is asked once, and a refusal there poisons the
** value for nothing (D10, D11). Every small size and a large one, merged
** from 16-byte chunks, and from a 16 and a 48. */
START_TEST(a_run_merged_to_exactly_the_size_asked_serves_that_same_request)
{
    for (size_t k = 2; k <= 80; k++) { /* runs of 32 to 1280 bytes */
        struct rt_block *b = rt__block_new(4 * KIB);
        unsigned char *c[256];
        for (int i = 0; i < 256; i++) /* 256 chunks of 16: the arena carved whole */
            ck_require((c[i] = rt__block_alloc(b, 8)) != NULL);
        ck_require(rt__block_alloc(b, 0) == NULL);
        for (size_t i = 100; i < 100 + k; i++)
            ck_require(rt__block_free(b, c[i]));
        unsigned char *p = rt__block_alloc(b, k * 16 - 8);
        ck_assert_msg(p == c[100], "a run of %zu bytes, asked for in one request: got %p, not %p",
                      k * 16, (void *)p, (void *)c[100]);
        ck_require(rt__block_held(b) == 4 * KIB);
        rt__block_delete(b);
    }
    struct rt_block *b = rt__block_new(4 * KIB);
    unsigned char *a = rt__block_alloc(b, 8), *m = rt__block_alloc(b, 40);
    unsigned char *rest = rt__block_alloc(b, 4 * KIB - 64 - 8);
    ck_assert_ptr_nonnull(rest);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    ck_assert(rt__block_free(b, a));
    ck_assert(rt__block_free(b, m));
    ck_assert_ptr_eq(rt__block_alloc(b, 56), a); /* 16 + 48 = 64 */
    rt__block_delete(b);
}
END_TEST

START_TEST(a_live_chunk_between_keeps_its_neighbours_apart)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    /* chunks of 2032, 16 and 2048 bytes fill the arena */
    char *a = rt__block_alloc(b, 2024), *mid = rt__block_alloc(b, 8);
    char *c = rt__block_alloc(b, 2040);
    memset(mid, 0x6D, 8);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    ck_assert(rt__block_free(b, a));
    ck_assert(rt__block_free(b, c)); /* the top: back to the bump */
    /* 4080 bytes are free, but in runs of 2032 and 2048 */
    ck_assert_ptr_null(rt__block_alloc(b, 2056));
    ck_assert_ptr_eq(rt__block_alloc(b, 2024), a);
    ck_assert_ptr_eq(rt__block_alloc(b, 2040), c);
    ck_assert(filled((unsigned char *)mid, 8, 0x6D));
    rt__block_delete(b);
}
END_TEST

/* D10 with drifting sizes: every round a different mix, all freed. */
START_TEST(drifting_sizes_do_not_strand_the_budget)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    uint32_t s = 7;
    void *v[40];
    for (int round = 0; round < 3000; round++) {
        int k = 0;
        for (; k < 40; k++) {
            s = s * 1664525u + 1013904223u;
            v[k] = rt__block_alloc(b, (s >> 8) % (round % 3 == 0 ? 1500 : 200));
            ck_require(v[k] != NULL);
        }
        while (k-- > 0)
            ck_require(rt__block_free(b, v[(k * 7) % 40]));
        ck_require(rt__block_held(b) == 0);
    }
    rt__block_delete(b);
}
END_TEST

/* D10: a long task allocating and freeing far more than its budget. */
START_TEST(a_long_loop_stays_inside_sixty_four_kib)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    bool held;
    void *keep = rt__block_alloc(b, 20000);
    for (unsigned i = 0; i < 1000; i++) {
        unsigned char *p = rt__block_alloc(b, 1024);
        ck_require(p != NULL);
        unsigned char *q = rt__block_alloc(b, 100 + i % 700);
        ck_require(q != NULL);
        p = rt__block_realloc(b, p, 2048 + i % 3000, &held);
        ck_require(p != NULL);
        ck_require(rt__block_free(b, q));
        ck_require(rt__block_free(b, p));
    }
    ck_assert_uint_eq(rt__block_held(b), 20016);
    ck_assert(rt__block_free(b, keep));
    rt__block_delete(b);
}
END_TEST

/* Random operations against a model: no two live values overlap, each
** keeps its bytes, held is the sum of the live chunks. */
START_TEST(random_operations_agree_with_a_model)
{
    enum { SLOTS = 64 };
    struct rt_block *b = rt__block_new(32 * KIB);
    unsigned char *p[SLOTS] = {0};
    size_t n[SLOTS] = {0}, sum = 0;
    uint64_t x = 88172645463325252u;
    bool held;

    for (int step = 0; step < 8000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int i = (int)(x % SLOTS);
        size_t want = (x >> 8) % ((x >> 40) % 4 == 0 ? 6000 : 300);
        unsigned char tag = (unsigned char)(i + 1);
        if (p[i] != NULL)
            ck_require(filled(p[i], n[i], tag));
        if (p[i] == NULL) {
            p[i] = rt__block_alloc(b, want);
            if (p[i] == NULL)
                continue;
            n[i] = want;
        } else if ((x >> 32) % 2 == 0) {
            sum -= rt__block_chunk(b, p[i]);
            ck_require(rt__block_free(b, p[i]));
            p[i] = NULL;
            ck_require(rt__block_held(b) == sum);
            continue;
        } else {
            size_t before = rt__block_chunk(b, p[i]);
            unsigned char *q = rt__block_realloc(b, p[i], want, &held);
            ck_require(held);
            if (q == NULL) {
                ck_require(rt__block_held(b) == sum);
                continue;
            }
            sum -= before;
            p[i] = q;
            n[i] = want < n[i] ? want : n[i];
            memset(p[i], tag, n[i]);
            n[i] = want;
        }
        memset(p[i], tag, n[i]);
        sum += rt__block_chunk(b, p[i]);
        ck_require(rt__block_held(b) == sum);
        ck_require(sum <= rt__block_size(b));
    }
    for (int i = 0; i < SLOTS; i++)
        if (p[i] != NULL) {
            ck_require(filled(p[i], n[i], (unsigned char)(i + 1)));
            ck_require(rt__block_free(b, p[i]));
        }
    ck_assert_uint_eq(rt__block_held(b), 0);
    rt__block_delete(b);
}
END_TEST

/* ---- free-list shapes, exact to the last byte (tw14c) --------------------- */

/* A large freed chunk, the only one on its list, split again and again:
** each rest stands as a freed chunk of its own size (docs/budgets.md,
** "the rest of a split stands as a freed chunk of its own size"), a large
** rest on the large list, a rest of 1024 on its small class, until every
** byte of it is live again and the block is exactly full. Freed again, the
** pieces (live neighbours, nothing between them) coalesce back into the
** whole chunk, which a request of its full size gets, at its place. */
START_TEST(a_large_freed_chunk_splits_to_its_last_byte_and_merges_back_whole)
{
    struct rt_block *b = rt__block_new(16 * KIB);
    unsigned char *a = rt__block_alloc(b, 4096 - 8);
    void *guard = rt__block_alloc(b, 8);
    void *fill = rt__block_alloc(b, 16 * KIB - 4096 - 16 - 8); /* the arena carved whole */
    ck_assert_ptr_nonnull(fill);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB);
    ck_assert(rt__block_free(b, a));
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 4096);
    unsigned char *p1 = rt__block_alloc(b, 8);       /* 16: rest 4080, large */
    ck_assert_ptr_eq(p1, a);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 4080);
    unsigned char *p2 = rt__block_alloc(b, 3056 - 8); /* 3056 of the 4080: rest 1024, small */
    ck_assert_ptr_eq(p2, a + 16);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 1024);
    unsigned char *p3 = rt__block_alloc(b, 1024 - 8); /* the rest, from its small class */
    ck_assert_ptr_eq(p3, a + 16 + 3056);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB);
    ck_assert_uint_eq(rt__block_chunk(b, p1), 16);
    ck_assert_uint_eq(rt__block_chunk(b, p2), 3056);
    ck_assert_uint_eq(rt__block_chunk(b, p3), 1024);
    ck_assert_ptr_null(rt__block_alloc(b, 0));
    memset(p1, 1, 8);
    memset(p2, 2, 3056 - 8);
    memset(p3, 3, 1024 - 8);
    ck_assert(filled(p1, 8, 1) && filled(p2, 3056 - 8, 2) && filled(p3, 1024 - 8, 3));
    /* the middle one out and in again: the same bytes, exactly full */
    ck_assert(rt__block_free(b, p2));
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 3056);
    ck_assert_ptr_eq(rt__block_alloc(b, 3056 - 8), p2);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB);
    /* all three out: no list holds 4096, the three neighbours do */
    ck_assert(rt__block_free(b, p3));
    ck_assert(rt__block_free(b, p1));
    ck_assert(rt__block_free(b, p2));
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 4096);
    ck_assert_ptr_eq(rt__block_alloc(b, 4096 - 8), a);
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB);
    ck_assert_uint_eq(rt__block_chunk(b, a), 4096);
    ck_assert(rt__block_free(b, guard));
    ck_assert_uint_eq(rt__block_held(b), 16 * KIB - 16);
    rt__block_delete(b);
}
END_TEST

/* A chunk freed on a list, right below the top chunk, which is freed
** after it: the top goes back to the bump, the listed one is not there
** yet. A request that only their bytes and the bump's together can serve
** coalesces: the listed chunk, now the last one carved, goes back to the
** bump too, and the request gets everything past the live first chunk,
** the block exactly full. Then the same with the order of the two frees
** reversed (the top first: the other is then itself the top and follows
** it to the bump at once). */
START_TEST(a_freed_chunk_left_below_a_freed_top_goes_back_to_the_bump_when_needed)
{
    for (int order = 0; order < 2; order++) {
        struct rt_block *b = rt__block_new(4 * KIB);
        unsigned char *a = rt__block_alloc(b, 1000); /* 1008 each */
        unsigned char *m = rt__block_alloc(b, 1000);
        unsigned char *top = rt__block_alloc(b, 1000);
        ck_assert_uint_eq(rt__block_held(b), 3 * 1008);
        if (order == 0) {
            ck_assert(rt__block_free(b, m));   /* to its class list */
            ck_assert(rt__block_free(b, top)); /* to the bump */
        } else {
            ck_assert(rt__block_free(b, top));
            ck_assert(rt__block_free(b, m));
        }
        ck_assert_uint_eq(rt__block_held(b), 1008);
        unsigned char *p = rt__block_alloc(b, 4 * KIB - 1008 - 8);
        ck_assert_msg(p == m, "order %d: the request for all the room left got %p, not %p",
                      order, (void *)p, (void *)m);
        ck_assert_uint_eq(rt__block_held(b), 4 * KIB);
        ck_assert_uint_eq(rt__block_chunk(b, p), 4 * KIB - 1008);
        memset(p, 0x77, 4 * KIB - 1008 - 8);
        ck_assert(rt__block_free(b, a));
        ck_assert(rt__block_free(b, p));
        ck_assert_uint_eq(rt__block_held(b), 0);
        ck_assert_ptr_eq(rt__block_alloc(b, 4 * KIB - 8), a); /* one room again */
        rt__block_delete(b);
    }
}
END_TEST

/* A small class with many chunks is a stack of them all: each of n freed
** chunks of one class (n = 1, 2, 3, 17) is served again before the bump
** or any other class is touched, and every one of them exactly once; a
** request of another class meanwhile comes from the bump. Held exact at
** every step. */
START_TEST(a_class_list_of_any_length_serves_each_chunk_once)
{
    static const int lengths[] = {1, 2, 3, 17};
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
        int n = lengths[l];
        struct rt_block *b = rt__block_new(16 * KIB);
        unsigned char *v[17], *guard;
        for (int i = 0; i < n; i++)
            v[i] = rt__block_alloc(b, 40); /* 48 each */
        guard = rt__block_alloc(b, 8);
        size_t held = (size_t)n * 48 + 16;
        ck_assert_uint_eq(rt__block_held(b), held);
        for (int i = 0; i < n; i++)
            ck_require(rt__block_free(b, v[i]));
        held -= (size_t)n * 48;
        ck_require(rt__block_held(b) == held);
        unsigned char *other = rt__block_alloc(b, 8); /* a 16: the bump, past the guard */
        ck_assert_ptr_eq(other, guard + 16);
        held += 16;
        int got[17] = {0};
        for (int i = 0; i < n; i++) {
            unsigned char *p = rt__block_alloc(b, 33); /* 48 again */
            int k = -1;
            for (int j = 0; j < n; j++)
                if (p == v[j])
                    k = j;
            ck_assert_msg(k >= 0 && got[k] == 0, "list of %d: request %d got %p, not a freed "
                          "chunk of the class not yet served", n, i, (void *)p);
            got[k] = 1;
            held += 48;
            ck_require(rt__block_held(b) == held);
        }
        /* the list is empty now: the next one comes from the bump */
        ck_assert_ptr_eq(rt__block_alloc(b, 40), other + 16);
        rt__block_delete(b);
    }
}
END_TEST

/* A realloc that must move (its chunk is not the top) needs room for both
** chunks at once (docs/budgets.md, "What is not claimed"): with exactly the
** new chunk's bytes free it moves, the old chunk is freed (held: the new
** chunk and the rest, nothing of the old one), and the old chunk's place
** serves the next request of its size; with one granule less it fails,
** the value and the figures as they were. */
START_TEST(a_realloc_that_moves_needs_room_for_both_chunks_and_frees_the_old_one)
{
    bool held;
    for (int short_by = 0; short_by <= 1; short_by++) {
        struct rt_block *b = rt__block_new(1024);
        unsigned char *a = rt__block_alloc(b, 100); /* 112 */
        void *guard = rt__block_alloc(b, 8);        /* 16: a is not the top */
        ck_assert_ptr_nonnull(guard);
        memset(a, 0x3A, 100);
        ck_assert_uint_eq(rt__block_held(b), 128);
        /* 1024 - 128 = 896 free: a chunk of 896 holds 888 bytes */
        unsigned char *q = rt__block_realloc(b, a, 888 + (size_t)short_by, &held);
        ck_assert(held);
        if (short_by) {
            ck_assert_ptr_null(q);
            ck_assert_uint_eq(rt__block_held(b), 128);
            ck_assert_uint_eq(rt__block_chunk(b, a), 112);
            ck_assert(filled(a, 100, 0x3A));
        } else {
            ck_assert_ptr_nonnull(q);
            ck_assert_ptr_ne(q, a);
            ck_assert(filled(q, 100, 0x3A));
            ck_assert_uint_eq(rt__block_held(b), 16 + 896);
            ck_assert_uint_eq(rt__block_chunk(b, q), 896);
            ck_assert_uint_eq(rt__block_chunk(b, a), 0); /* freed: no live chunk there */
            ck_assert_ptr_eq(rt__block_alloc(b, 100), a); /* its place, again */
            ck_assert_uint_eq(rt__block_held(b), 1024);
        }
        rt__block_delete(b);
    }
}
END_TEST

/* docs/budgets.md, "What is not claimed": only the top chunk grows in
** place; a chunk a freed neighbour follows is moved like any other, so the
** block must hold both at once: 2016 + 16 held with a freed 1008-byte
** neighbour after the 2016, growing it to 2112 needs 2032 + 2112 and is
** refused, nothing changed. */
START_TEST(a_chunk_a_freed_neighbour_follows_is_moved_not_grown_into_it)
{
    struct rt_block *b = rt__block_new(4 * KIB);
    bool held;
    unsigned char *a = rt__block_alloc(b, 2000);  /* 2016 */
    unsigned char *n = rt__block_alloc(b, 1000);  /* 1008, right after a */
    void *guard = rt__block_alloc(b, 8);          /* 16: a is not the top */
    ck_assert_ptr_eq(n, a + 2016);
    ck_assert_ptr_nonnull(guard);
    memset(a, 0x2A, 2000);
    ck_assert(rt__block_free(b, n));
    ck_assert_uint_eq(rt__block_held(b), 2032);
    ck_assert_ptr_null(rt__block_realloc(b, a, 2100, &held));
    ck_assert(held);
    ck_assert_uint_eq(rt__block_held(b), 2032);
    ck_assert_uint_eq(rt__block_chunk(b, a), 2016);
    ck_assert(filled(a, 2000, 0x2A));
    rt__block_delete(b);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("block");
    suite_add_test(s, payloads_are_aligned_and_counted_as_chunks);
    suite_add_test(s, held_returns_to_its_old_figure_after_a_free);
    suite_add_test(s, exactly_full_fits_one_byte_more_does_not);
    suite_add_test(s, a_size_is_rounded_down_to_sixteen);
    suite_add_test(s, an_overflowing_size_does_not_fit);
    suite_add_test(s, a_freed_chunk_is_allocated_again);
    suite_add_test(s, the_top_chunk_goes_back_to_the_bump);
    suite_add_test(s, a_small_request_splits_a_bigger_freed_chunk_when_the_bump_is_spent);
    suite_add_test(s, realloc_keeps_contents_within_and_past_size_classes);
    suite_add_test(s, realloc_grows_the_top_chunk_in_place);
    suite_add_test(s, a_full_realloc_leaves_the_value_as_it_was);
    suite_add_test(s, a_pointer_the_block_does_not_hold_is_refused);
    suite_add_test(s, a_chunk_whose_size_was_overwritten_is_refused);
    suite_add_test(s, the_top_chunk_moves_when_the_arena_ends_before_the_budget);
    suite_add_test(s, the_largest_block_is_one_granule_short_of_two_to_the_36);
    suite_add_test(s, the_block_owns_its_whole_arena_and_nothing_past_it);
    suite_add_test(s, the_block_owns_its_whole_arena_however_much_of_it_is_carved);
    suite_add_test(s, freed_chunks_of_one_size_are_all_used_again_before_the_bump);
    suite_add_test(s, chunks_on_each_side_of_the_small_classes_are_used_again);
    suite_add_test(s, a_coalesced_run_of_1024_bytes_is_a_small_chunk);
    suite_add_test(s, an_exact_fit_at_the_bump_comes_from_the_bump);
    suite_add_test(s, a_pointer_freed_at_the_top_stays_refused_under_a_later_chunk);
    suite_add_test(s, a_block_made_over_dirty_memory_works_as_a_clean_one);
    suite_add_test(s, a_stale_pointer_into_a_deleted_block_is_refused_by_the_next);
    suite_add_test(s, a_header_copied_far_into_a_big_block_makes_no_chunk);
    suite_add_test(s, chunks_either_side_of_4_gib_are_counted_and_freed_exactly);
    suite_add_test(s, freed_chunks_coalesce_into_a_run_past_4_gib);
    suite_add_test(s, a_header_forged_below_the_arena_makes_no_chunk);
    suite_add_test(s, a_header_forged_past_the_bump_makes_no_chunk);
#if RT_TESTING
    suite_add_test(s, a_block_writes_no_byte_between_its_struct_and_its_arena);
#endif
    suite_add_test(s, a_realloc_within_its_chunk_stays_put);
    suite_add_test(s, the_top_chunk_grows_in_place_up_to_exactly_full);
    suite_add_test(s, a_chunk_a_freed_neighbour_follows_is_moved_not_grown_into_it);
    suite_add_test(s, charges_count_against_the_budget);
    suite_add_test(s, freed_neighbours_are_coalesced_before_the_block_is_full);
    suite_add_test(s, a_run_merged_to_exactly_the_size_asked_serves_that_same_request);
    suite_add_test(s, a_live_chunk_between_keeps_its_neighbours_apart);
    suite_add_test(s, drifting_sizes_do_not_strand_the_budget);
    suite_add_test(s, a_long_loop_stays_inside_sixty_four_kib);
    suite_add_test(s, random_operations_agree_with_a_model);
    suite_add_test(s, a_large_freed_chunk_splits_to_its_last_byte_and_merges_back_whole);
    suite_add_test(s, a_freed_chunk_left_below_a_freed_top_goes_back_to_the_bump_when_needed);
    suite_add_test(s, a_class_list_of_any_length_serves_each_chunk_once);
    suite_add_test(s, a_realloc_that_moves_needs_room_for_both_chunks_and_frees_the_old_one);
    return s;
}
