/*
** check_bounds.c: every size and count argument at its boundaries, in
** every state of what it is asked of (issue 14, item 2), table-driven.
**
** - rt_region_alloc(count, size) in a region empty, partly used (the bump
**   at 1, 15, 16, 17, ... one byte short of the chunk) and full: 0, 1,
**   alignof(max_align_t) - 1 and itself, the room left - 1, exactly, + 1,
**   SIZE_MAX - k, and count * size products that just fit, just miss, or
**   just overflow (to 0 and to small numbers). The contract: a trap
**   (SIGILL) exactly when count * size overflows or does not fit the room
**   left after the bump is rounded up to the alignment; otherwise the
**   aligned bump, bump moved to the end, every byte the fill, and nothing
**   else touched.
**   The same calls in a region whose bump was moved past its chunk (just
**   past it, up to the last byte of the address space): a trap, every one;
**   and on a region that is not open (NULL, never opened, closed): the
**   violation "region is not open", every one, before and after rt_init.
** - rt_alloc, rt_realloc (a block value at the top of the block, and an
**   outside value), rt_alloc_outside and rt_clone_outside at the budget's
**   edge - 1, exactly, + 1, and at 0, 1 and SIZE_MAX - k, in a task whose
**   block is empty, partly used (block and outside values) and exactly
**   full: the task panics exactly when the request does not fit, and
**   rt_held() moves by the exact figure (docs/budgets.md: a block value
**   takes an 8-byte header, rounded up to 16; an outside value its bytes).
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refrt.h"
#include "testutil.h"

#define CHUNK ((size_t)RT_CHUNK_SIZE)
#define ALIGN ((size_t)alignof(max_align_t))

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* ---- regions ------------------------------------------------------------ */

/* The bump before the call; CHUNK is a full region. */
static const size_t bumps[] = {0, 1, 15, 16, 17, 4097, CHUNK - 17, CHUNK - 16,
                               CHUNK - 15, CHUNK - 1, CHUNK};
#define NBUMPS (sizeof bumps / sizeof bumps[0])

struct call {
    size_t count, size;
};

/* The calls to try with `room` bytes left after the aligned bump. */
static size_t calls_for(size_t room, struct call *c)
{
    size_t n = 0;
    const size_t half = SIZE_MAX / 2, big = (size_t)1 << (sizeof(size_t) * 4);
#define ADD(a, b) (c[n].count = (a), c[n].size = (b), n++)
    ADD(0, 0);
    ADD(0, 1);
    ADD(1, 0);
    ADD(0, SIZE_MAX); /* 0 bytes, however big the other */
    ADD(SIZE_MAX, 0);
    ADD(1, 1);
    ADD(1, ALIGN - 1);
    ADD(1, ALIGN);
    ADD(ALIGN - 1, 1);
    ADD(1, ALIGN + 1);
    if (room > 0)
        ADD(1, room - 1);
    ADD(1, room);
    ADD(1, room + 1);
    ADD(room, 1);
    ADD(room + 1, 1);
    if (room >= ALIGN) {
        ADD(room / ALIGN, ALIGN); /* a product that is the room exactly */
        ADD(ALIGN, room / ALIGN);
    }
    ADD(room / ALIGN + 1, ALIGN); /* one element more */
    ADD(1, SIZE_MAX);
    ADD(SIZE_MAX, 1);
    ADD(1, SIZE_MAX - 15);
    ADD(SIZE_MAX - 15, 1);
    ADD(2, half);         /* SIZE_MAX - 1: no overflow, far too big */
    ADD(2, half + 1);     /* overflows to 0 */
    ADD(half + 1, 2);
    ADD(3, half + 1);     /* overflows to half + 1 */
    ADD(big, big);        /* 2^64: overflows to exactly 0 */
    ADD(big + 1, big - 1); /* 2^64 - 1: just fits in size_t, far too big */
    ADD(SIZE_MAX / ALIGN + 1, ALIGN); /* overflows to 0 */
    ADD(SIZE_MAX / ALIGN, ALIGN);     /* the largest multiple, no overflow */
    ADD(big, big + 1);    /* overflows to 2^32 */
    ADD(SIZE_MAX, SIZE_MAX); /* overflows to 1 */
#undef ADD
    return n;
}

struct region_case {
    rt_region *r;
    struct call call;
};

static void alloc_in_child(void *arg)
{
    struct region_case *k = arg;
    rt_region_alloc(k->r, k->call.count, k->call.size, 0x5C);
}

/* Opens a region with its bump at `bump` (bytes of 0xAB). */
static void region_at(rt_region *r, size_t bump)
{
    rt_region_open(r);
    if (bump > 0)
        ck_assert_ptr_eq(rt_region_alloc(r, bump, 1, 0xAB), r->base);
    ck_assert_ptr_eq(r->bump, r->base + bump);
}

static void region_boundaries(void)
{
    struct call calls[64];
    unsigned long tried = 0, trapped = 0;

    for (size_t b = 0; b < NBUMPS; b++) {
        size_t bump = bumps[b], at = round_up(bump, ALIGN);
        size_t room = at <= CHUNK ? CHUNK - at : 0;
        size_t n = calls_for(room, calls);
        for (size_t i = 0; i < n; i++) {
            struct call c = calls[i];
            size_t bytes;
            int overflows = __builtin_mul_overflow(c.count, c.size, &bytes);
            int traps = overflows || bytes > room;
            rt_region r;
            region_at(&r, bump);
            tried++;
            if (traps) {
                struct region_case k = {&r, c};
                struct death d = run_child(alloc_in_child, &k);
                ck_assert_msg(d.signal == SIGILL,
                              "bump %zu, %zu x %zu: expected a trap (SIGILL), got signal %d "
                              "exit %d; stderr: %s", bump, c.count, c.size, d.signal,
                              d.exit_status, d.err);
                trapped++;
            } else {
                unsigned char *p = rt_region_alloc(&r, c.count, c.size, 0x5C);
                ck_assert_msg(p == r.base + at, "bump %zu, %zu x %zu: at offset %td, expected %zu",
                              bump, c.count, c.size, p - r.base, at);
                ck_assert_ptr_eq(r.bump, p + bytes);
                for (size_t k = 0; k < bytes; k++)
                    ck_require(p[k] == 0x5C);
                /* nothing else touched: the bytes before, the alignment
                ** gap, and the byte after */
                if (bump > 0)
                    ck_assert_int_eq(r.base[bump - 1], 0xAB);
                for (size_t k = bump; k < at; k++)
                    ck_require(r.base[k] == 0);
                if (at + bytes < CHUNK)
                    ck_assert_int_eq(p[bytes], 0);
            }
            rt_region_close(&r);
        }
    }
    ck_assert_uint_gt(trapped, 0);
    ck_assert_uint_gt(tried - trapped, 0);
}

START_TEST(region_sizes_fit_or_trap_at_every_boundary_in_every_state)
{
    rt_init();
    region_boundaries();
}
END_TEST

START_TEST(region_sizes_fit_or_trap_at_every_boundary_inside_other_regions)
{
    /* the same table in a region opened 17 deep (past the cache) and
    ** with every outer region partly used */
    rt_region outer[16];
    rt_init();
    for (int i = 0; i < 16; i++)
        region_at(&outer[i], (size_t)(i * 1000 + 1));
    region_boundaries();
    for (int i = 16; i-- > 0;)
        rt_region_close(&outer[i]);
}
END_TEST

/* Counts and sizes past 4 GiB: a product of 2^32 or more traps, however
** few bytes its low 32 bits would leave (0, 15, 16, the room left, a whole
** chunk), and so does a count or a size past 2^32 alone, also when the
** other is 1; a region never takes such a size as the small one it would
** be in 32 bits. In a region empty, partly used (17 bytes) and full at
** depth 1, empty and one aligned granule short of full at depth 17 (past
** the cache), after rt_init; empty before it. */
static size_t calls_past_4_gib(size_t room, struct call *c)
{
    size_t n = 0;
    const size_t g4 = (size_t)1 << 32, g16 = (size_t)1 << 16;
#define ADD(a, b) (c[n].count = (a), c[n].size = (b), n++)
    ADD(1, g4);             /* 2^32: 0 in 32 bits */
    ADD(g4 + 16, 1);
    ADD(1, g4 + room);      /* the room exactly, in 32 bits */
    ADD(g16, g16);          /* 2^32 as a product of two small numbers */
    ADD(g16, g16 + 1);      /* 2^32 + 2^16: a whole chunk in 32 bits */
    ADD(g4 / 16 + 1, 16);   /* 2^32 + 16 */
    ADD(3, g4 + 5);         /* 3 * 2^32 + 15 */
    ADD((size_t)1 << 24, (size_t)1 << 24); /* 2^48 */
    ADD(1, ((size_t)1 << 48) + room);
    ADD(1, ((size_t)1 << 63) + 16);
#undef ADD
    return n;
}

/* Each call of calls_past_4_gib in a region whose bump is at each of at[]. */
static unsigned long past_4_gib_at(const size_t *at, size_t nat)
{
    struct call calls[16];
    unsigned long tried = 0;

    for (size_t b = 0; b < nat; b++) {
        size_t bump = at[b], aligned = round_up(bump, ALIGN);
        size_t room = aligned <= CHUNK ? CHUNK - aligned : 0;
        size_t n = calls_past_4_gib(room, calls);
        for (size_t i = 0; i < n; i++) {
            rt_region r;
            region_at(&r, bump);
            struct region_case k = {&r, calls[i]};
            struct death d = run_child(alloc_in_child, &k);
            if (d.signal != SIGILL || r.bump != r.base + bump)
                ck_abort_msg("bump %zu, %#zx x %#zx: expected a trap (SIGILL), got signal %d "
                             "exit %d; stderr: %s", bump, calls[i].count, calls[i].size,
                             d.signal, d.exit_status, d.err);
            rt_region_close(&r);
            tried++;
        }
    }
    return tried;
}

START_TEST(region_sizes_past_4_gib_trap_in_every_state_before_and_after_init)
{
    static const size_t empty[] = {0}, states[] = {0, 17, CHUNK}, deep[] = {0, CHUNK - 15};
    rt_region outer[16];
    ck_assert_uint_eq(past_4_gib_at(empty, 1), 10);
    rt_init();
    ck_assert_uint_eq(past_4_gib_at(states, 3), 30);
    for (int i = 0; i < 16; i++)
        region_at(&outer[i], (size_t)(i * 1000 + 1));
    ck_assert_uint_eq(past_4_gib_at(deep, 2), 20);
    for (int i = 16; i-- > 0;)
        rt_region_close(&outer[i]);
}
END_TEST

/* The bump moved past the end of the chunk (a program that wrote the
** region's fields, docs/misuse.md): every call traps, whatever its count
** and size, for a bump just past the chunk and for one as far past it as
** a pointer goes, up to the last byte of the address space. */
START_TEST(region_sizes_trap_at_every_boundary_when_the_bump_is_past_the_chunk)
{
    const size_t past[] = {CHUNK + 1, CHUNK + 15, CHUNK + 16, CHUNK + 17, 2 * CHUNK,
                           (size_t)1 << 32, (size_t)1 << 62, (size_t)PTRDIFF_MAX,
                           (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX + 1 + CHUNK,
                           SIZE_MAX - 15, SIZE_MAX};
    struct call calls[64];
    size_t n = calls_for(0, calls);
    unsigned long tried = 0;
    rt_region r;

    rt_init();
    rt_region_open(&r);
    for (size_t b = 0; b < sizeof past / sizeof past[0]; b++) {
        /* SIZE_MAX - 15, SIZE_MAX: the last bytes of the address space */
        size_t top = UINTPTR_MAX - (uintptr_t)r.base;
        size_t d = past[b] >= SIZE_MAX - 15 ? top - (SIZE_MAX - past[b]) : past[b];
        if (d > top)
            continue;
        r.bump = (unsigned char *)((uintptr_t)r.base + d);
        for (size_t i = 0; i < n; i++) {
            struct region_case k = {&r, calls[i]};
            struct death dd = run_child(alloc_in_child, &k);
            ck_assert_msg(dd.signal == SIGILL,
                          "bump %#zx past the base, %zu x %zu: expected a trap (SIGILL), got "
                          "signal %d exit %d; stderr: %s", d, calls[i].count, calls[i].size,
                          dd.signal, dd.exit_status, dd.err);
            tried++;
        }
    }
    r.bump = r.base;
    rt_region_close(&r);
    ck_assert_uint_ge(tried, 10 * n);
}
END_TEST

/* A region that is not open: NULL, never opened (zeroed, as a static one
** is) or closed. Every call is the contract violation, whatever its count
** and size, also those that overflow or could never fit: the region is
** checked before the arguments. Before rt_init and after it. */
static void not_open_at_every_boundary(void)
{
    struct call calls[128];
    size_t n = calls_for(CHUNK, calls);
    n += calls_for(0, calls + n);
    rt_region zeroed, closed;

    memset(&zeroed, 0, sizeof zeroed);
    rt_region_open(&closed);
    rt_region_alloc(&closed, 100, 1, 0x11);
    rt_region_close(&closed);
    rt_region *regions[] = {NULL, &zeroed, &closed};
    const char *names[] = {"NULL", "never opened", "closed"};
    for (size_t j = 0; j < 3; j++)
        for (size_t i = 0; i < n; i++) {
            struct region_case k = {regions[j], calls[i]};
            struct death d = run_child(alloc_in_child, &k);
            ck_assert_msg(d.signal == SIGABRT &&
                          strstr(d.err, "refrt: rt_region_alloc: region is not open\n") != NULL,
                          "a %s region, %zu x %zu: expected the violation \"region is not "
                          "open\", got signal %d exit %d; stderr: %s", names[j], calls[i].count,
                          calls[i].size, d.signal, d.exit_status, d.err);
        }
}

START_TEST(allocating_from_a_region_not_open_is_a_violation_for_every_count_and_size)
{
    not_open_at_every_boundary();
    rt_init();
    not_open_at_every_boundary();
}
END_TEST

/* The room left at its edges in every context a region is used in: before
** rt_init (the cache off), on a plain thread and on a task, and at every
** depth 1 to 17 on main (16 outer regions partly used around it), in a
** region empty, partly used (1 and 17 bytes), with exactly one aligned
** granule left (the bump at CHUNK - 17 and CHUNK - 16) and full (CHUNK - 1,
** rounded up, and CHUNK): 1 x room, room x 1 and room / ALIGN x ALIGN fit
** at the aligned bump, move the bump to the chunk's end, set every byte
** and touch nothing before; 0 x SIZE_MAX fits there with no byte; and
** 1 x (room + 1) traps (refrt.h: a trap exactly when the product does not
** fit the chunk's room). The traps run in children (a few, each is a
** fork): before rt_init empty, at 17, one granule left and full; on a
** thread partly used, on a task full; on main at depths 1, 2, 15, 16 and
** 17, empty, at 17, one granule left, full by rounding and full. */
static const size_t edge_bumps[] = {0, 1, 17, CHUNK - 17, CHUNK - 16, CHUNK - 1, CHUNK};
#define NEDGES (sizeof edge_bumps / sizeof edge_bumps[0])

/* Checks every fitting call at every bump of edge_bumps in fresh regions
** on this thread; NULL, or what failed, written to why. */
static const char *room_edges_fit(char *why, size_t len)
{
    for (size_t b = 0; b < NEDGES; b++) {
        size_t bump = edge_bumps[b], at = round_up(bump, ALIGN), room = CHUNK - at;
        struct call fits[4] = {{1, room}, {room, 1}, {room / ALIGN, ALIGN}, {0, SIZE_MAX}};
        for (size_t i = 0; i < 4; i++) {
            size_t bytes = fits[i].count * fits[i].size;
            rt_region r;
            rt_region_open(&r);
            if (bump > 0 && rt_region_alloc(&r, bump, 1, 0xAB) != r.base)
                return snprintf(why, len, "bump %zu: the first allocation not at the base",
                                bump), why;
            unsigned char *p = rt_region_alloc(&r, fits[i].count, fits[i].size, 0x5C);
            int ok = p == r.base + at && r.bump == p + bytes;
            for (size_t k = 0; ok && k < bytes; k++)
                ok = p[k] == 0x5C;
            for (size_t k = bump; ok && k < at; k++)
                ok = r.base[k] == 0;
            if (ok && bump > 0)
                ok = r.base[bump - 1] == 0xAB && r.base[0] == 0xAB;
            if (!ok)
                return snprintf(why, len, "bump %zu, %zu x %zu: at offset %td (%zu), bump at "
                                "%td (%zu), or a byte wrong", bump, fits[i].count, fits[i].size,
                                p - r.base, at, r.bump - r.base, at + bytes), why;
            rt_region_close(&r);
        }
    }
    return NULL;
}

static char edge_why[3][200];

static void *room_edges_fit_there(void *which)
{
    char *why = edge_why[(uintptr_t)which];
    return (void *)room_edges_fit(why, sizeof edge_why[0]);
}

/* In a child: rt_init (but before rt_init), then on `where` a region with
** its bump at `bump`, and 1 x (room + 1) from it. */
struct edge_trap {
    int where; /* 0 main before rt_init, 1 main, 2 a plain thread, 3 a task */
    size_t bump;
};

static void *alloc_one_past_the_room(void *arg)
{
    const struct edge_trap *e = arg;
    size_t room = CHUNK - round_up(e->bump, ALIGN);
    rt_region r;
    rt_region_open(&r);
    if (e->bump > 0)
        (void)rt_region_alloc(&r, e->bump, 1, 0xAB);
    (void)rt_region_alloc(&r, 1, room + 1, 0x5C);
    _exit(3); /* it returned */
}

static void one_past_the_room_in_a_child(void *arg)
{
    const struct edge_trap *e = arg;
    pthread_t t;
    if (e->where != 0)
        rt_init();
    if (e->where <= 1)
        alloc_one_past_the_room(arg);
    if (e->where == 2) {
        if (pthread_create(&t, NULL, alloc_one_past_the_room, arg) != 0)
            _exit(5);
        pthread_join(t, NULL);
    } else {
        rt_join(rt_spawn(alloc_one_past_the_room, arg), NULL);
    }
    _exit(6);
}

static void assert_traps_one_past(int where, size_t bump, unsigned depth)
{
    static const char *const wheres[] = {"before rt_init", "on main", "on a plain thread",
                                         "on a task"};
    struct edge_trap e = {where, bump};
    struct death d = run_child(one_past_the_room_in_a_child, &e);
    if (d.signal != SIGILL)
        ck_abort_msg("%s, depth %u, bump %zu, 1 x (room + 1): expected a trap (SIGILL), got "
                     "signal %d exit %d; stderr: %s", wheres[where], depth, bump, d.signal,
                     d.exit_status, d.err);
}

START_TEST(region_sizes_at_the_room_left_fit_or_trap_before_init_on_every_thread_and_at_every_depth)
{
    char why[200];
    const char *failed;
    pthread_t t;
    void *res = NULL;
    rt_region outer[RT_REGION_CACHE_SLOTS];
    static const struct {
        unsigned depth;
        size_t bump;
    } trap_at[] = {{1, 0}, {2, 17}, {15, CHUNK - 16}, {16, CHUNK - 1}, {17, CHUNK}};

    failed = room_edges_fit(why, sizeof why);
    ck_assert_msg(failed == NULL, "before rt_init: %s", failed);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
    for (size_t b = 0; b < NEDGES; b += 2) /* empty, 17, CHUNK - 16, CHUNK */
        assert_traps_one_past(0, edge_bumps[b], 1);
    assert_traps_one_past(2, 17, 1);        /* partly used, on a plain thread */
    assert_traps_one_past(3, CHUNK - 1, 1); /* full, on a task */

    rt_set_strategy(rt_fixed_strategy(16 * 1024));
    rt_init();
    ck_assert_int_eq(pthread_create(&t, NULL, room_edges_fit_there, (void *)1), 0);
    ck_assert_int_eq(pthread_join(t, &res), 0);
    ck_assert_msg(res == NULL, "on a plain thread: %s", (const char *)res);
    ck_assert_int_eq(rt_join(rt_spawn(room_edges_fit_there, (void *)2), &res), RT_OK);
    ck_assert_msg(res == NULL, "on a task: %s", (const char *)res);

    for (unsigned depth = 1; depth <= RT_REGION_CACHE_SLOTS + 1; depth++) {
        for (unsigned i = 0; i + 1 < depth; i++) {
            rt_region_open(&outer[i]);
            (void)rt_region_alloc(&outer[i], 1, i * 1000 + 1, 0x22);
        }
        failed = room_edges_fit(why, sizeof why);
        if (failed != NULL)
            ck_abort_msg("on main, %u deep: %s", depth, failed);
        /* the outer regions kept their bytes */
        for (unsigned i = 0; i + 1 < depth; i++)
            ck_require(outer[i].base[0] == 0x22 && outer[i].base[i * 1000] == 0x22 &&
                       outer[i].bump == outer[i].base + i * 1000 + 1);
        /* in a child forked here: the region it opens is `depth` deep */
        for (size_t k = 0; k < sizeof trap_at / sizeof *trap_at; k++)
            if (trap_at[k].depth == depth)
                assert_traps_one_past(1, trap_at[k].bump, depth);
        for (unsigned i = depth - 1; i-- > 0;)
            rt_region_close(&outer[i]);
    }
}
END_TEST

/* ---- budgets ------------------------------------------------------------ */

#define BUDGET ((size_t)4096)

static size_t chunk_of(size_t n)
{
    return (n + 8 + 15) & ~(size_t)15;
}

enum state { EMPTY, PARTLY, FULL, NSTATES };
enum op { ALLOC, OUTSIDE, CLONE, REALLOC_TOP, REALLOC_OUTSIDE, NOPS };
static const char *const state_names[] = {"empty", "partly used", "full"};
static const char *const op_names[] = {"rt_alloc", "rt_alloc_outside", "rt_clone_outside",
                                       "rt_realloc of the top block value",
                                       "rt_realloc of an outside value"};

static unsigned char source[2 * BUDGET];

struct budget_case {
    enum state state;
    enum op op;
    size_t n;
    /* what the task saw */
    size_t held_before, held_after;
    int returned;
};

#define TOP 100     /* the block value rt_realloc grows: the block's top */
#define OUT_BYTES 50 /* the outside value rt_realloc grows */

static void *edge_task(void *arg)
{
    struct budget_case *k = arg;
    unsigned char *top = NULL, *out = NULL;

    if (k->state != EMPTY || k->op == REALLOC_OUTSIDE)
        out = rt_alloc_outside(OUT_BYTES);
    if (k->state == FULL) {
        /* filled exactly: a block value before the top one takes the rest */
        size_t rest = rt_budget() - rt_held() - chunk_of(TOP);
        (void)rt_alloc(rest - 8 - (rest % 16));
        out = rt_realloc(out, OUT_BYTES + rt_budget() - rt_held() - chunk_of(TOP));
    }
    if (k->state != EMPTY || k->op == REALLOC_TOP)
        top = rt_alloc(TOP);
    k->held_before = rt_held();
    switch (k->op) {
    case ALLOC: (void)rt_alloc(k->n); break;
    case OUTSIDE: (void)rt_alloc_outside(k->n); break;
    case CLONE: (void)rt_clone_outside(source, k->n); break;
    case REALLOC_TOP: top = rt_realloc(top, k->n); break;
    case REALLOC_OUTSIDE: out = rt_realloc(out, k->n); break;
    default: break;
    }
    k->held_after = rt_held();
    k->returned = 1;
    return NULL;
}

/* The held figure before the call, for a state and an operation. */
static size_t held_in(enum state s, enum op op)
{
    size_t held = 0;
    if (s != EMPTY || op == REALLOC_OUTSIDE)
        held += OUT_BYTES;
    if (s != EMPTY || op == REALLOC_TOP)
        held += chunk_of(TOP);
    return s == FULL ? BUDGET : held;
}

/* Whether the call fits, and the held figure after it; room is the
** budget less what is held. */
static int fits(enum op op, size_t n, size_t room, size_t top_chunk, size_t out_bytes,
                size_t *delta)
{
    switch (op) {
    case ALLOC:
        *delta = n <= BUDGET ? chunk_of(n) : 0;
        return n <= BUDGET && chunk_of(n) <= room;
    case OUTSIDE:
    case CLONE:
        *delta = n;
        return n <= room;
    case REALLOC_TOP: /* the top chunk grows in place; a smaller one stays */
        if (n > BUDGET)
            return 0;
        *delta = chunk_of(n) > top_chunk ? chunk_of(n) - top_chunk : 0;
        return *delta <= room;
    case REALLOC_OUTSIDE: /* counted anew at its new size */
        if (n <= out_bytes) {
            *delta = (size_t)0 - (out_bytes - n);
            return 1;
        }
        *delta = n - out_bytes;
        return n - out_bytes <= room;
    default:
        return 0;
    }
}

START_TEST(requests_at_the_budgets_edge_panic_exactly_when_they_do_not_fit)
{
    unsigned long cases = 0, panicked = 0;

    memset(source, 0x3C, sizeof source);
    rt_set_strategy(rt_fixed_strategy(BUDGET));
    rt_init();
    for (int s = 0; s < NSTATES; s++)
        for (int op = 0; op < NOPS; op++) {
            size_t held = held_in(s, op), room = BUDGET - held;
            size_t top_chunk = chunk_of(TOP);
            /* full: the outside value grew by what the filler's rounding left */
            size_t out_bytes =
                s == FULL ? OUT_BYTES + (BUDGET - OUT_BYTES - chunk_of(TOP)) % 16 : OUT_BYTES;
            size_t ns[24], nn = 0, edge;
            /* the edge: the largest request that fits exactly */
            switch (op) {
            case ALLOC: edge = room >= 16 ? (room & ~(size_t)15) - 8 : 0; break;
            case REALLOC_TOP: edge = top_chunk + (room & ~(size_t)15) - 8; break;
            case REALLOC_OUTSIDE: edge = out_bytes + room; break;
            default: edge = room; break;
            }
            ns[nn++] = 0;
            ns[nn++] = 1;
            ns[nn++] = ALIGN - 1;
            ns[nn++] = ALIGN;
            if (edge > 0)
                ns[nn++] = edge - 1;
            ns[nn++] = edge;
            ns[nn++] = edge + 1;
            ns[nn++] = BUDGET;
            ns[nn++] = BUDGET + 1;
            ns[nn++] = SIZE_MAX;
            ns[nn++] = SIZE_MAX - 1;
            ns[nn++] = SIZE_MAX - 8;
            ns[nn++] = SIZE_MAX - 15;
            ns[nn++] = SIZE_MAX - 16;
            if (op == CLONE)
                for (size_t i = 0; i < nn; i++)
                    if (ns[i] > sizeof source && ns[i] < SIZE_MAX - 16)
                        ns[i] = sizeof source; /* only what the source holds */
            for (size_t i = 0; i < nn; i++) {
                struct budget_case k = {s, op, ns[i], 0, 0, 0};
                size_t delta = 0;
                int fit = fits(op, ns[i], room, top_chunk, out_bytes, &delta);
                void *result = (void *)1;
                rt_task *t = rt_spawn(edge_task, &k);
                ck_assert_ptr_nonnull(t);
                rt_status st = rt_join(t, &result);
                cases++;
                ck_assert_msg(k.held_before == held,
                              "%s, %s: the task holds %zu before the call, expected %zu",
                              state_names[s], op_names[op], k.held_before, held);
                if (fit) {
                    ck_assert_msg(st == RT_OK && k.returned,
                                  "%s in a %s block, %zu bytes (room %zu): panicked, expected "
                                  "it to fit", op_names[op], state_names[s], ns[i], room);
                    ck_assert_msg(k.held_after == held + delta,
                                  "%s in a %s block, %zu bytes: held %zu after, expected %zu",
                                  op_names[op], state_names[s], ns[i], k.held_after,
                                  held + delta);
                } else {
                    ck_assert_msg(st == RT_PANICKED && !k.returned,
                                  "%s in a %s block, %zu bytes (room %zu): returned (held %zu), "
                                  "expected a panic", op_names[op], state_names[s], ns[i],
                                  room, k.held_after);
                    panicked++;
                }
                ck_assert_ptr_null(result);
            }
        }
    ck_assert_uint_gt(panicked, 0);
    ck_assert_uint_gt(cases - panicked, 0);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* A block value past 4 GiB at the top of its block grows and shrinks in
** place, as any value at the top does: its size is read whole, never in 32
** bits. A task whose budget is 6 GiB holds one of 4 GiB + 100 bytes, grown
** to 4 GiB + 200 (moved, it would need two copies: more than the budget,
** a panic), to less (the chunk keeps its size) and past it again, each
** time the same pointer and the figure its chunk's. Virtual memory only: nothing
** touches the value's pages. */
static size_t chunk_for(size_t n)
{
    return (n + 8 + 15) & ~(size_t)15;
}

static void *a_value_past_4_gib_grows_in_place(void *unused)
{
    (void)unused;
    static const size_t g4 = (size_t)1 << 32;
    static const size_t to[] = {g4 + 200, g4 + 50, g4 + 4096, 100, g4 + 100};
    size_t base = rt_held();
    char *v = rt_alloc(g4 + 100);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(rt_held() - base, chunk_for(g4 + 100));
    size_t chunk = chunk_for(g4 + 100);
    for (size_t i = 0; i < sizeof to / sizeof *to; i++) {
        ck_assert_ptr_eq(rt_realloc(v, to[i]), v);
        if (chunk_for(to[i]) > chunk)
            chunk = chunk_for(to[i]); /* a size that fits keeps the chunk (block.c) */
        ck_assert_uint_eq(rt_held() - base, chunk);
    }
    rt_free(v);
    ck_assert_uint_eq(rt_held(), base);
    return NULL;
}

START_TEST(a_block_value_past_4_gib_at_the_top_grows_and_shrinks_in_place)
{
    if (UNDER_SANITIZER) /* their shadow of a 6 GiB block would be made resident */
        return;
    rt_set_strategy(rt_fixed_strategy((size_t)6 << 30));
    rt_init();
    a_value_past_4_gib_grows_in_place(NULL);
    rt_task *t = rt_spawn(a_value_past_4_gib_grows_in_place, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("bounds");
    suite_add_test(s, region_sizes_fit_or_trap_at_every_boundary_in_every_state);
    suite_add_test(s, region_sizes_fit_or_trap_at_every_boundary_inside_other_regions);
    suite_add_test(s, region_sizes_trap_at_every_boundary_when_the_bump_is_past_the_chunk);
    suite_add_test(s, region_sizes_past_4_gib_trap_in_every_state_before_and_after_init);
    suite_add_test(s, allocating_from_a_region_not_open_is_a_violation_for_every_count_and_size);
    suite_add_test(s, region_sizes_at_the_room_left_fit_or_trap_before_init_on_every_thread_and_at_every_depth);
    suite_add_test(s, requests_at_the_budgets_edge_panic_exactly_when_they_do_not_fit);
    suite_add_test(s, a_block_value_past_4_gib_at_the_top_grows_and_shrinks_in_place);
    return s;
}
