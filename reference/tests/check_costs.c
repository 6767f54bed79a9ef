/*
** check_costs.c: the cost counters (costs.h) hold the bounds the design
** states (docs/budgets.md, "Cost counters"), at sizes where a degraded
** structure shows: no clock, only counts of work done and bytes taken.
**
** Every assertion here fails with a message that starts "cost bound:"
** (the mutant driver tells cost kills apart by it). A figure the design
** makes exact is asserted exactly; where it does not (the spread of a
** hash, what malloc rounds a size to), the bound and its reason are
** stated beside it.
*/
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costs.h"
#include "internal.h"
#include "refrt.h"
#include "task.h"
#include "testutil.h"

#if RT_TESTING

#define KIB ((size_t)1024)

/* Fails the test with a "cost bound:" message; costs a branch until then,
** so it may sit in loops of thousands. */
#define cost_assert(cond, ...)                                                 \
    do {                                                                       \
        if (__builtin_expect(!(cond), 0))                                      \
            ck_abort_msg("cost bound: " __VA_ARGS__);                          \
    } while (0)

#define C(kind) rt__cost(RT_COST_##kind)

/* What malloc gives a request of n bytes: n at least, and at most n + 31
** (OVER). glibc rounds a request up to 8 bytes short of a multiple of 16
** (+15), and hands out a free chunk up to 16 bytes larger still rather
** than split off less than its 32-byte minimum (+16); ASan and TSan give
** n exactly. Every struct counted here is larger than OVER, so one asked
** at twice its size (calloc(2, sizeof *s)) is out of bounds. */
#define OVER 31

#define assert_bytes(got, objects, size, what)                                 \
    cost_assert((got) >= (objects) * (size) && (got) <= (objects) * ((size) + OVER), \
                "%lu bytes from malloc for %lu %s of %zu bytes (at most %zu)",  \
                (unsigned long)(got), (unsigned long)(objects), (what), (size_t)(size), \
                (size_t)((objects) * ((size) + OVER)))

/* The block's head: struct rt_block rounded up to 16, then the 8 bytes
** that put the arena 8 past a 16-byte boundary (block.c). */
static size_t block_request(size_t budget)
{
    return ((rt__sizeof_block + 15) & ~(size_t)15) + 8 + budget;
}

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
    (void)rt_held(); /* main's task and thread state made before any count */
    rt__costs_reset();
}

/* ---- the outside-value table (task.c) ----------------------------------- */

/* Linear probing kept at most half full averages 1.5 slots a successful
** search and 2.5 an unsuccessful one or an insertion with a random hash
** (Knuth), at the table's fullest; growth keeps it between a quarter and
** a half full. The Fibonacci hash of malloc's evenly spaced addresses
** does better: 1.27 slots a table operation, measured (docs/budgets.md).
** PROBES_PER_OP = 2 is that with room for other spacings. A hash that
** puts every pointer in one slot reads n/2 slots an operation (25,000 at
** 50,000 values); a scan of the table, cap / 2. */
#define PROBES_PER_OP 2
/* Slack for the first operations, before averages mean anything. */
#define PROBES_SLACK 64
#define VALUES 50000

static unsigned char *values[VALUES];

/* The puts that growth adds to n inserts: a table of c slots grows when
** the insert of entry c/2 + 1 would make it more than half full, and moves
** its c/2 entries (16 to 131072 slots for 50,000 values: 8 + 16 + ... +
** 32768 = 65528 moves). */
static unsigned long moves_for(unsigned long inserts)
{
    unsigned long moves = 0;
    for (unsigned long cap = 16; cap / 2 < inserts; cap *= 2)
        moves += cap / 2;
    return moves;
}

START_TEST(fifty_thousand_outside_values_take_a_few_probes_an_operation)
{
    unsigned long ops = 0; /* table operations the calls below make */

    init_fixed(8 * 1024 * KIB);
    for (int i = 0; i < VALUES; i++) {
        values[i] = rt_alloc_outside(16);
        ops++;
        if (i % 1024 == 1023) /* fails fast when the hash has degraded */
            cost_assert(C(TABLE_PROBES) <= PROBES_PER_OP * (ops + moves_for((unsigned long)i + 1)) +
                                               PROBES_SLACK,
                        "%lu probes for %d inserts", C(TABLE_PROBES), i + 1);
    }
    ops += moves_for(VALUES);
    cost_assert(C(TABLE_OPS) == ops, "%lu table ops for %d inserts, expected %lu (puts and "
                "the moves of doubling)", C(TABLE_OPS), VALUES, ops);
    unsigned long insert_probes = C(TABLE_PROBES);
    cost_assert(insert_probes <= PROBES_PER_OP * ops, "%lu probes for %lu puts", insert_probes,
                ops);

    /* lookups that find, and lookups of pointers no table holds */
    for (int i = 0; i < VALUES; i++) {
        cost_assert(rt__outside_held(values[i]), "value %d not found", i);
        /* 8 past a value: no malloc gives it (not 16-aligned), and its
        ** search walks the value's own cluster, then misses */
        cost_assert(!rt__outside_held(values[i] + 8), "a pointer never held found");
        ops += 2;
        if (i % 1024 == 1023)
            cost_assert(C(TABLE_PROBES) <= PROBES_PER_OP * ops + PROBES_SLACK,
                        "%lu probes after %lu ops", C(TABLE_PROBES), ops);
    }
    unsigned long lookup_probes = C(TABLE_PROBES) - insert_probes;

    /* reallocations (find, remove, put) and frees (find, remove) */
    for (int i = 0; i < VALUES; i++) {
        values[i] = rt_realloc(values[i], 24);
        ops += 3;
        if (i % 1024 == 1023)
            cost_assert(C(TABLE_PROBES) <= PROBES_PER_OP * ops + PROBES_SLACK,
                        "%lu probes after %lu ops", C(TABLE_PROBES), ops);
    }
    for (int i = 0; i < VALUES; i++) {
        rt_free(values[i]);
        ops += 2;
        if (i % 1024 == 1023)
            cost_assert(C(TABLE_PROBES) <= PROBES_PER_OP * ops + PROBES_SLACK,
                        "%lu probes after %lu ops", C(TABLE_PROBES), ops);
    }
    cost_assert(C(TABLE_OPS) == ops, "%lu table ops, expected %lu", C(TABLE_OPS), ops);
    cost_assert(C(TABLE_PROBES) <= PROBES_PER_OP * ops, "%lu probes for %lu table ops",
                C(TABLE_PROBES), ops);
    /* the figures docs/budgets.md quotes */
    fprintf(stderr, "costs: %d values: %lu table ops, %lu probes (inserts %lu, lookups %lu, "
            "reallocs and frees %lu)\n", VALUES, ops, C(TABLE_PROBES), insert_probes,
            lookup_probes, C(TABLE_PROBES) - insert_probes - lookup_probes);
    cost_assert(rt_held() == 0, "%zu bytes still held", rt_held());
}
END_TEST

/* The table of 50,000 values doubles from 16 to 131,072 slots of 16
** bytes: the bytes asked are 16 * (16 + 32 + ... + 131072). malloc gives
** each at least that, and at most a page more (a table of 128 KiB or
** more is mmap'ed, rounded to pages; a smaller one at most 15 bytes
** more). A table that grows by 4, or asks twice its slots, shows. */
START_TEST(a_table_of_fifty_thousand_values_takes_its_slots_and_no_more)
{
    size_t asked = 0, growths = 0;

    init_fixed(8 * 1024 * KIB);
    for (int i = 0; i < VALUES; i++)
        values[i] = rt_alloc_outside(16);
    for (size_t cap = 16; cap <= 131072; cap *= 2, growths++)
        asked += cap * sizeof(struct outside_slot);
    cost_assert(C(BYTES_TABLE) >= asked && C(BYTES_TABLE) <= asked + growths * 4096,
                "%lu table bytes for %d values, expected %zu to %zu", C(BYTES_TABLE), VALUES,
                asked, asked + growths * 4096);
    /* each value: 16 bytes asked, 24 given by glibc; a few unsplit chunks
    ** of 40 (96 bytes more in all, measured): at most a byte more a value
    ** on average. Twice the size asked (32, given 40) shows. */
    cost_assert(C(BYTES_OUTSIDE) >= VALUES * 16 && C(BYTES_OUTSIDE) <= VALUES * (24 + 1),
                "%lu bytes from malloc for %d outside values of 16", C(BYTES_OUTSIDE), VALUES);
    for (int i = 0; i < VALUES; i++)
        rt_free(values[i]);
}
END_TEST

/* ---- block allocation (block.c) ----------------------------------------- */

/* A small class with freed chunks: every allocation pops its head, one
** step each, exactly. */
START_TEST(a_small_class_pops_in_one_step)
{
    enum { N = 1000 };
    static void *p[N];
    struct rt_block *b = rt__block_new(256 * KIB);

    for (int i = 0; i < N; i++)
        p[i] = rt__block_alloc(b, 40); /* 48-byte chunks */
    for (int i = 0; i < N - 1; i++) /* the last stays: none is the top */
        rt__block_free(b, p[i]);
    rt__costs_reset();
    for (int i = 0; i < N - 1; i++)
        cost_assert((p[i] = rt__block_alloc(b, 40)) != NULL, "allocation %d failed", i);
    cost_assert(C(BLOCK_ALLOCS) == N - 1, "%lu allocations counted", C(BLOCK_ALLOCS));
    cost_assert(C(FREE_STEPS) == N - 1, "%lu free-list steps for %d pops", C(FREE_STEPS), N - 1);
    cost_assert(C(COALESCES) == 0, "%lu coalescings", C(COALESCES));
    rt__block_delete(b);
}
END_TEST

/* Every call counts, the ones the block refuses too: larger than the
** block, over its budget (the call before every budget panic), a size
** that would wrap, and those it serves, in any mix. */
START_TEST(every_block_allocation_call_counts_refused_or_served)
{
    const size_t sizes[] = {40, (size_t)-1, 64 * KIB, 300, 8 * KIB, SIZE_MAX - 7, 0, 4 * KIB};
    struct rt_block *b = rt__block_new(16 * KIB);
    unsigned long calls = 0, refused = 0;

    rt__costs_reset();
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            refused += rt__block_alloc(b, sizes[i]) == NULL;
            calls++;
            cost_assert(C(BLOCK_ALLOCS) == calls, "%lu calls counted after %lu (size %zu)",
                        C(BLOCK_ALLOCS), calls, sizes[i]);
        }
    cost_assert(refused >= 9, "only %lu refused: the block took what it cannot", refused);
    rt__block_delete(b);
}
END_TEST

/* Large chunks freed between live ones: first fit takes the list's first
** chunk that fits, here always its head, one step each, exactly. A walk
** to the list's far end (last fit, best fit) takes k steps for the k
** chunks listed: 20,100 for these 200. */
START_TEST(first_fit_takes_the_first_large_chunk_in_one_step)
{
    enum { N = 200 };
    static void *big[N], *sep[N];
    struct rt_block *b = rt__block_new(1024 * KIB);

    for (int i = 0; i < N; i++) {
        big[i] = rt__block_alloc(b, 2000);
        sep[i] = rt__block_alloc(b, 16); /* keeps the freed ones apart */
    }
    for (int i = 0; i < N; i++)
        rt__block_free(b, big[i]);
    rt__costs_reset();
    for (int i = 0; i < N; i++)
        cost_assert((big[i] = rt__block_alloc(b, 2000)) != NULL, "allocation %d failed", i);
    cost_assert(C(FREE_STEPS) == N, "%lu free-list steps for %d first fits of %d listed",
                C(FREE_STEPS), N, N);
    cost_assert(C(COALESCES) == 0, "%lu coalescings", C(COALESCES));
    (void)sep;
    rt__block_delete(b);
}
END_TEST

/* First fit reads every listed chunk it passes over, not only the one it
** takes: 100 freed chunks of 2,000 bytes and one of 4,000, freed at each
** place in the order (the list is last freed first), then a request only
** the 4,000 one fits: one step for each chunk read up to it, exactly, at
** every place it can be in the list: its head, the second, the middle,
** the one before last, the last. */
START_TEST(first_fit_counts_each_large_chunk_it_passes_over)
{
    enum { N = 100 };
    static const int places[] = {N, N - 1, N / 2, 1, 0}; /* when the big one is freed */
    static void *small[N], *sep[N + 1];

    for (size_t k = 0; k < sizeof places / sizeof places[0]; k++) {
        struct rt_block *b = rt__block_new(1024 * KIB);
        void *big = rt__block_alloc(b, 4000);
        sep[N] = rt__block_alloc(b, 16);
        for (int i = 0; i < N; i++) {
            small[i] = rt__block_alloc(b, 2000);
            sep[i] = rt__block_alloc(b, 16); /* keeps the freed ones apart */
        }
        for (int i = 0, freed = 0; i <= N; i++)
            rt__block_free(b, i == places[k] ? big : small[freed++]);
        rt__costs_reset();
        cost_assert(rt__block_alloc(b, 3000) == big, "the 4,000-byte chunk not taken (freed %d)",
                    places[k]);
        /* freed t-th of N + 1 (0-based): N - t chunks ahead of it in the list */
        cost_assert(C(FREE_STEPS) == (unsigned long)(N - places[k] + 1),
                    "%lu free-list steps to reach a chunk %d deep in the large list",
                    C(FREE_STEPS), N - places[k] + 1);
        cost_assert(C(COALESCES) == 0, "%lu coalescings", C(COALESCES));
        rt__block_delete(b);
    }
    (void)sep;
}
END_TEST

/* A small request its class and the bump cannot serve: the fast path's
** class head, then the large list (empty), then the class heads from the
** next size up to the first with a chunk: 1 + (62 - 2 + 1) = 62 steps for
** a 32-byte chunk taken from the 1008-byte class. At most 1 + 64 + the
** large list's length, whatever the shape. */
START_TEST(a_bigger_class_is_found_in_at_most_a_class_walk)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    void *mid = rt__block_alloc(b, 1000); /* a 1008-byte chunk, class 62 */
    void *rest = rt__block_alloc(b, 64 * KIB - 1008 - 8); /* the bump now full */

    cost_assert(mid != NULL && rest != NULL, "setup allocations failed");
    rt__block_free(b, mid);
    rt__costs_reset();
    cost_assert(rt__block_alloc(b, 16) != NULL, "the split failed");
    cost_assert(C(FREE_STEPS) == 62, "%lu free-list steps to find class 62 from class 1",
                C(FREE_STEPS));
    cost_assert(C(FREE_STEPS) <= 1 + 64, "%lu free-list steps", C(FREE_STEPS));
    rt__block_delete(b);
}
END_TEST

/* A block whose free bytes are all in chunks too small for the request:
** the fast path's head (1), two passes of the class search (61 each: the
** 48-byte class up to the last), one coalescing between them that walks
** every chunk carved (2048), then NULL. A third pass, or a second
** coalescing, shows. */
START_TEST(a_block_that_cannot_serve_walks_its_chunks_once)
{
    enum { N = 64 * 1024 / 32 };
    static void *p[N];
    struct rt_block *b = rt__block_new(64 * KIB);

    for (int i = 0; i < N; i++)
        cost_assert((p[i] = rt__block_alloc(b, 16)) != NULL, "chunk %d", i); /* 32 bytes */
    for (int i = 0; i < N; i += 2) /* every other: the top stays live */
        rt__block_free(b, p[i]);
    rt__costs_reset();
    cost_assert(rt__block_alloc(b, 40) == NULL, "a 48-byte chunk found among 32-byte ones");
    cost_assert(C(COALESCES) == 1, "%lu coalescings for one allocation", C(COALESCES));
    cost_assert(C(COALESCE_CHUNKS) == N, "%lu chunks walked, %d carved", C(COALESCE_CHUNKS), N);
    /* its own list (the fast path), the 61 bigger classes, and after the
    ** coalesce the 62 from its own up (a merged run may fit exactly) */
    cost_assert(C(FREE_STEPS) == 1 + 61 + 62, "%lu free-list steps, expected 124",
                C(FREE_STEPS));
    /* merging changes nothing here (no two freed chunks touch) */
    cost_assert(rt__block_held(b) == 64 * KIB / 2, "%zu held", rt__block_held(b));
    rt__block_delete(b);
}
END_TEST

/* ---- bytes copied by a realloc ------------------------------------------ */

/* A chunk that moves carries its old payload, its chunk less the 8-byte
** header: at most the old size plus 15 (the rounding to 16), never the
** new size. One that grows in place or shrinks copies nothing. */
START_TEST(a_block_realloc_copies_at_most_the_old_chunk)
{
    struct rt_block *b = rt__block_new(64 * KIB);
    bool held;
    unsigned char *p = rt__block_alloc(b, 100); /* a 112-byte chunk */
    void *top;

    rt__costs_reset();
    p = rt__block_realloc(b, p, 1000, &held); /* the top: grows in place */
    cost_assert(C(BLOCK_COPIED) == 0, "%lu bytes copied growing the top", C(BLOCK_COPIED));
    p = rt__block_realloc(b, p, 500, &held);
    cost_assert(C(BLOCK_COPIED) == 0, "%lu bytes copied shrinking", C(BLOCK_COPIED));
    top = rt__block_alloc(b, 16); /* p is no longer the top */
    p = rt__block_realloc(b, p, 3000, &held);
    cost_assert(p != NULL && held, "the move failed");
    /* the chunk kept its 1008 bytes when it shrank: 1000 of payload */
    cost_assert(C(BLOCK_COPIED) == 1008 - 8, "%lu bytes copied moving a 1008-byte chunk",
                C(BLOCK_COPIED));
    rt__costs_reset();
    void *q = rt__block_alloc(b, 100);
    (void)rt__block_alloc(b, 16);
    q = rt__block_realloc(b, q, 5000, &held);
    cost_assert(q != NULL, "the move failed");
    cost_assert(C(BLOCK_COPIED) == 104 && C(BLOCK_COPIED) <= 100 + 15,
                "%lu bytes copied moving 100 bytes, expected 104", C(BLOCK_COPIED));
    (void)top;
    rt__block_delete(b);
}
END_TEST

/* Through the API: rt_realloc of a block value moves at most its old
** chunk; of an outside value, libc's realloc keeps the old bytes (the
** counter takes the smaller size: what realloc may copy), and
** rt_clone_outside copies exactly its n. */
START_TEST(an_outside_realloc_keeps_at_most_the_old_size)
{
    init_fixed(256 * KIB);
    unsigned char *v = rt_alloc(200); /* a 208-byte chunk */
    (void)rt_alloc(16);
    v = rt_realloc(v, 4000);
    cost_assert(C(BLOCK_COPIED) == 200, "%lu bytes copied moving 200", C(BLOCK_COPIED));

    unsigned char *o = rt_alloc_outside(300);
    o = rt_realloc(o, 6000);
    cost_assert(C(OUTSIDE_COPIED) == 300, "%lu bytes kept growing 300 to 6000",
                C(OUTSIDE_COPIED));
    o = rt_realloc(o, 50);
    cost_assert(C(OUTSIDE_COPIED) == 300 + 50, "%lu bytes kept shrinking to 50",
                C(OUTSIDE_COPIED) - 300);
    void *c = rt_clone_outside(o, 50);
    cost_assert(C(OUTSIDE_COPIED) == 300 + 50 + 50, "%lu bytes copied cloning 50",
                C(OUTSIDE_COPIED) - 350);
    /* what malloc gave: 300, 6000, 50 and 50 */
    cost_assert(C(BYTES_OUTSIDE) >= 6400 && C(BYTES_OUTSIDE) <= 6400 + 4 * OVER,
                "%lu bytes from malloc for values of 300, 6000, 50 and 50", C(BYTES_OUTSIDE));
    rt_free(c);
    rt_free(o);
    rt_free(v);
}
END_TEST

/* ---- bytes each handle takes from malloc -------------------------------- */

static void *returns_nothing(void *unused)
{
    (void)unused;
    return NULL;
}

/* A block past 4 GiB is counted at every byte malloc gave it: objects as
** big as 2^32 must not be counted in 32 bits. Virtual memory only. */
START_TEST(a_block_past_4_gib_is_counted_at_every_byte)
{
    static const size_t budgets[] = {((size_t)1 << 32) - 64 * KIB, (size_t)1 << 32,
                                     ((size_t)1 << 32) + 64 * KIB, (size_t)1 << 33};
    if (UNDER_SANITIZER)
        return;
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        rt__costs_reset();
        struct rt_block *b = rt__block_new(budgets[i]);
        cost_assert(b != NULL, "no block of %zu bytes", budgets[i]);
        /* malloc maps a block this big: its usable size is the request
        ** rounded up to a page */
        size_t want = block_request(budgets[i]);
        cost_assert(C(BYTES_BLOCK) >= want && C(BYTES_BLOCK) <= want + 4096,
                    "a block of %zu bytes counted %lu bytes (malloc gave at least %zu)",
                    budgets[i], (unsigned long)C(BYTES_BLOCK), want);
        rt__block_delete(b);
    }
}
END_TEST

/* Work counted past 4 GiB is counted at every byte, through RT_COST as
** through the byte counters: an outside value of 4 GiB + 16 grown to
** 4 GiB + 32 keeps (and counts as copied) exactly its 4 GiB + 16 bytes,
** and one shrunk from 4 GiB + 32 to 4 GiB + 1 its new size. Virtual memory
** only: glibc moves a mapping this big without touching its pages. */
START_TEST(an_outside_realloc_past_4_gib_counts_every_byte_it_keeps)
{
    static const size_t g4 = (size_t)1 << 32;
    static const size_t from[] = {g4 + 16, g4 + 32, g4 - 16, g4};
    static const size_t to[] = {g4 + 32, g4 + 1, g4 + 16, 2 * g4};
    if (UNDER_SANITIZER)
        return;
    init_fixed(4 * g4);
    for (size_t i = 0; i < sizeof from / sizeof *from; i++) {
        void *v = rt_alloc_outside(from[i]);
        cost_assert(v != NULL, "no outside value of %zu bytes", from[i]);
        rt__costs_reset();
        v = rt_realloc(v, to[i]);
        size_t kept = from[i] < to[i] ? from[i] : to[i];
        cost_assert(C(OUTSIDE_COPIED) == kept, "%zu to %zu bytes: %lu counted copied, not %zu",
                    from[i], to[i], (unsigned long)C(OUTSIDE_COPIED), kept);
        cost_assert(rt_held() == to[i], "held %zu, not %zu", rt_held(), to[i]);
        rt_free(v);
    }
}
END_TEST

/* A task is its struct rt_task and its block (struct, padding to 16, 8,
** then the budget); its thread adds one struct rt_hot; the first spawn
** makes the table of tasks not yet joined (16 slots). Each exactly what
** malloc gives a request of that size: asking twice the size shows. */
START_TEST(a_task_takes_its_struct_its_block_and_a_thread_state)
{
    rt_task *t;

    init_fixed(64 * KIB);
    t = rt_spawn(returns_nothing, NULL);
    cost_assert(t != NULL, "spawn failed");
    cost_assert(rt_join(t, NULL) == RT_OK, "join failed");
    assert_bytes(C(BYTES_TASK), 1, sizeof(struct rt_task), "struct rt_task");
    assert_bytes(C(BYTES_BLOCK), 1, block_request(64 * KIB), "block of 64 KiB");
    assert_bytes(C(BYTES_HOT), 1, sizeof(struct rt_hot), "struct rt_hot");
    assert_bytes(C(BYTES_TABLE), 1, 16 * sizeof(struct outside_slot), "table of 16 slots");
    /* a second task: no second table */
    rt__costs_reset();
    t = rt_spawn(returns_nothing, NULL);
    cost_assert(t != NULL && rt_join(t, NULL) == RT_OK, "second task failed");
    cost_assert(C(BYTES_TABLE) == 0, "%lu table bytes for a second task", C(BYTES_TABLE));
    assert_bytes(C(BYTES_TASK), 1, sizeof(struct rt_task), "struct rt_task");
}
END_TEST

/* A channel is its struct and its ring of `capacity` items: malloc's
** usable size bounds them within its slack, and their callocs ask for
** exactly the struct and `capacity` items (a spare slot hides in that
** slack), at every capacity from 1. */
START_TEST(a_channel_takes_its_struct_and_its_ring)
{
    static const size_t capacities[] = {1, 2, 3, 10, 64, 1000};

    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(10);
    assert_bytes(C(BYTES_CHAN), 1, rt__sizeof_chan, "struct rt_chan");
    assert_bytes(C(BYTES_RING), 1, 10 * rt__sizeof_chan_item, "ring of 10 items");
    rt_chan_free(c);
    for (size_t i = 0; i < sizeof capacities / sizeof capacities[0]; i++) {
        size_t before = calloc_bytes_asked();
        c = rt_chan_new(capacities[i]);
        size_t asked = calloc_bytes_asked() - before;
        cost_assert(asked == rt__sizeof_chan + capacities[i] * rt__sizeof_chan_item,
                    "a channel of %zu asked calloc for %zu bytes, its struct and ring are %zu",
                    capacities[i], asked, rt__sizeof_chan + capacities[i] * rt__sizeof_chan_item);
        rt_chan_free(c);
    }
}
END_TEST

/* A shared value is its struct and its block; the array of stored values
** doubles from 8. */
static void store_nine(void *value, void *ctx)
{
    void **kept = ctx;
    (void)value;
    for (int i = 0; i < 9; i++)
        cost_assert(rt_store(kept[9], kept[i]) == RT_OK, "store %d refused", i);
}

START_TEST(a_shared_value_takes_its_struct_and_its_block)
{
    int zero[4] = {0};
    void *ctx[10];

    init_fixed(64 * KIB);
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof zero, zero, 4 * KIB);
    assert_bytes(C(BYTES_SHARED), 1, rt__sizeof_shared, "struct rt_shared");
    assert_bytes(C(BYTES_BLOCK), 1, block_request(4 * KIB), "block of 4 KiB");
    for (int i = 0; i < 9; i++)
        ctx[i] = rt_alloc_outside(8);
    ctx[9] = s;
    rt__costs_reset();
    cost_assert(rt_update(s, store_nine, ctx) == RT_OK, "update failed");
    /* two arrays: 8 entries, then 16 (one more entry each would not do) */
    assert_bytes(C(BYTES_STORED), 2, 12 * rt__sizeof_stored, "arrays of 8 and 16 stored values");
    rt_shared_free(s);
}
END_TEST

/* An RT_COPY update copies the value out and writes it back: 2 * size
** (rt_update_all: both values); rt_get copies it once; an RT_OWNED update
** works in place: nothing. */
static void bump(void *value, void *ctx)
{
    (void)ctx;
    ((unsigned char *)value)[0]++;
}

static void bump_both(void *a, void *b, void *ctx)
{
    bump(a, ctx);
    bump(b, ctx);
}

START_TEST(a_copy_door_copies_its_value_twice_and_no_more)
{
    unsigned char init[200] = {0}, out[200];

    init_fixed(64 * KIB);
    rt_shared *small = rt_shared_new(RT_COPY, 100, init, 4 * KIB);
    rt_shared *big = rt_shared_new(RT_COPY, 200, init, 4 * KIB); /* copied into malloc's */
    rt_shared *owned = rt_shared_new(RT_OWNED, 200, init, 4 * KIB);
    rt__costs_reset();
    cost_assert(rt_update(small, bump, NULL) == RT_OK, "update failed");
    cost_assert(C(SHARED_COPIED) == 200, "%lu bytes copied updating 100", C(SHARED_COPIED));
    cost_assert(rt_update(big, bump, NULL) == RT_OK, "update failed");
    cost_assert(C(SHARED_COPIED) == 200 + 400, "%lu bytes copied updating 200",
                C(SHARED_COPIED) - 200);
    cost_assert(rt_update(owned, bump, NULL) == RT_OK, "update failed");
    cost_assert(C(SHARED_COPIED) == 600, "%lu bytes copied updating in place",
                C(SHARED_COPIED) - 600);
    cost_assert(rt_get(big, out) == RT_OK && out[0] == 1, "get failed");
    cost_assert(C(SHARED_COPIED) == 800, "%lu bytes copied by rt_get of 200",
                C(SHARED_COPIED) - 600);
    /* both copied out, both written back */
    cost_assert(rt_update_all(small, big, bump_both, NULL) == RT_OK, "update_all failed");
    cost_assert(C(SHARED_COPIED) == 800 + 2 * (100 + 200), "%lu bytes copied updating 100 and "
                "200 together", C(SHARED_COPIED) - 800);
    rt_shared_free(small);
    rt_shared_free(big);
    rt_shared_free(owned);
}
END_TEST

/* ---- chunks freed at a thread's end (region_cache.c) -------------------- */

static void *nest(void *arg)
{
    int depth = *(int *)arg;
    rt_region r[24];
    (void)rt_chunk_kept(); /* the thread's state, also at depth 0 */
    for (int i = 0; i < depth; i++)
        rt_region_open(&r[i]);
    for (int i = depth; i-- > 0;)
        rt_region_close(&r[i]);
    return NULL;
}

/* The key's destructor frees the chunks the thread keeps, one step each:
** min(depth, 16) for regions nested `depth` deep, and nothing else. */
START_TEST(a_thread_end_walks_exactly_the_chunks_it_keeps)
{
    static const int depths[] = {0, 1, 5, 15, 16, 17, 24};

    rt_init();
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        pthread_t th;
        int depth = depths[k];
        unsigned long kept = (unsigned long)(depth < RT_REGION_CACHE_SLOTS ? depth
                                                                         : RT_REGION_CACHE_SLOTS);
        rt__costs_reset();
        cost_assert(pthread_create(&th, NULL, nest, &depth) == 0, "no thread");
        pthread_join(th, NULL);
        cost_assert(C(CHUNKS_RELEASED) == kept, "%lu chunks walked at the end of a thread that "
                    "kept %lu", C(CHUNKS_RELEASED), kept);
        assert_bytes(C(BYTES_HOT), 1, sizeof(struct rt_hot), "struct rt_hot");
    }
}
END_TEST

/* The same at the end of a task's thread, whether its regions were closed
** by the task or by its panic (which closes them innermost first, so that
** they are kept or freed like any other): min(depth, 16) walked at the
** end, and every chunk freed by then, none left live. */
struct nesting {
    int depth;
    bool panics;
};

static void *nest_in_a_task(void *arg)
{
    struct nesting *n = arg;
    rt_region r[24];
    for (int i = 0; i < n->depth; i++) {
        rt_region_open(&r[i]);
        rt_region_alloc(&r[i], 1, 64, 0x5a);
    }
    if (n->panics)
        rt_panic("with its regions open");
    for (int i = n->depth; i-- > 0;)
        rt_region_close(&r[i]);
    return NULL;
}

START_TEST(a_task_end_walks_exactly_the_chunks_it_keeps_after_a_return_or_a_panic)
{
    static const int depths[] = {0, 1, 15, 16, 17, 20, 24};

    init_fixed(64 * KIB);
    for (int panics = 0; panics < 2; panics++)
        for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
            struct nesting n = {depths[k], panics != 0};
            unsigned long kept = (unsigned long)(n.depth < RT_REGION_CACHE_SLOTS
                                                     ? n.depth
                                                     : RT_REGION_CACHE_SLOTS);
            rt__costs_reset();
            chunks_reset();
            rt_task *t = rt_spawn(nest_in_a_task, &n);
            cost_assert(t != NULL, "no task");
            rt_status st = rt_join(t, NULL);
            struct chunk_counts cc = chunks_counted();
            cost_assert(st == (panics ? RT_PANICKED : RT_OK), "depth %d: status %d", n.depth,
                        (int)st);
            cost_assert(C(CHUNKS_RELEASED) == kept,
                        "%lu chunks walked at the end of a task that kept %lu (depth %d, %s)",
                        C(CHUNKS_RELEASED), kept, n.depth, panics ? "panicked" : "returned");
            cost_assert(cc.mallocs == (unsigned long)n.depth && cc.frees == cc.mallocs &&
                            cc.frees_dirty == 0,
                        "depth %d, %s: %lu chunks taken, %lu freed, %lu dirty", n.depth,
                        panics ? "panicked" : "returned", cc.mallocs, cc.frees, cc.frees_dirty);
        }
}
END_TEST

/* ---- table work per call -------------------------------------------------- */

/* Each public call that moves an outside value does a fixed number of
** table operations, one slot each while the table holds one value (the
** slot it takes or finds; a removal's look at the empty slot after it):
** on main, on a task, and inside a door that allocates from its value's
** block, the same. A call that moves no outside value does none. */
#define TABLE_WORK_NEAR(ops, slack, call)                                      \
    do {                                                                       \
        rt__costs_reset();                                                     \
        call;                                                                  \
        unsigned long ops_ = C(TABLE_OPS), probes_ = C(TABLE_PROBES);          \
        cost_assert(ops_ == (ops) && probes_ - ops_ <= (unsigned long)(slack), \
                    "%s, %s: %lu table operations and %lu slots, not %d (slots up to %d more)", \
                    where, #call, ops_, probes_, (ops), (int)(slack));         \
    } while (0)
#define TABLE_WORK(ops, call) TABLE_WORK_NEAR(ops, 0, call)

static void *returns_an_outside_value(void *unused)
{
    (void)unused;
    return rt_alloc_outside(40);
}

static void *returns_nothing_at_all(void *unused)
{
    (void)unused;
    return NULL;
}

static void table_work_of_each_call(const char *where)
{
    rt_chan *c = rt_chan_new(2);
    void *o, *b, *r;
    char src[24] = {0};

    TABLE_WORK(1, o = rt_alloc_outside(100));        /* a put */
    TABLE_WORK(3, o = rt_realloc(o, 200));           /* find, remove, put */
    TABLE_WORK(3, ck_require(rt_send(c, o) == RT_OK)); /* held?, find and remove */
    TABLE_WORK(1, ck_require(rt_recv(c) == o));      /* the receiver's put */
    TABLE_WORK(2, ck_require(rt_hand_over(o) == o)); /* find, remove */
    free(o);
    TABLE_WORK(1, o = rt_clone_outside(src, sizeof src));
    TABLE_WORK(2, rt_free(o));                       /* the block says no: find, remove */
    TABLE_WORK(0, b = rt_alloc(100));
    TABLE_WORK(0, b = rt_realloc(b, 2000));
    TABLE_WORK(0, ck_require(rt_send(c, b) == RT_REFUSED));
    TABLE_WORK(0, (void)rt_held());
    TABLE_WORK(0, rt_free(b));
    rt_chan_close(c);
    o = rt_alloc_outside(10);
    TABLE_WORK(1, ck_require(rt_send(c, o) == RT_CLOSED)); /* held?, then closed */
    rt_free(o);
    /* spawn: the unjoined table's put; join: its find and remove, and a
    ** result's detach (find, remove) in the task and put in the joiner.
    ** On a task, main's handle of it is in the unjoined table too: the put,
    ** the find and the removal's shift may each read its slot once more. */
    int other = strcmp(where, "a task") == 0 ? 3 : 0;
    TABLE_WORK_NEAR(3, other,
                    ck_require(rt_join(rt_spawn(returns_nothing_at_all, NULL), NULL) == RT_OK));
    TABLE_WORK_NEAR(7, other,
                    ck_require(rt_join(rt_spawn(returns_an_outside_value, NULL), &r) == RT_OK));
    TABLE_WORK(2, rt_free(r));
    rt_chan_free(c);
    cost_assert(rt_held() == 0, "%s: %zu bytes held at the end", where, rt_held());
}

static int table_work_done;

static void *table_work_on_a_task(void *unused)
{
    (void)unused;
    table_work_of_each_call("a task");
    __atomic_store_n(&table_work_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void table_work_in_a_door(void *value, void *ctx)
{
    (void)value;
    table_work_of_each_call(ctx);
}

START_TEST(each_call_does_its_own_table_work_on_main_on_a_task_and_in_a_door)
{
    init_fixed(64 * KIB);
    table_work_of_each_call("main");
    rt_task *t = rt_spawn(table_work_on_a_task, NULL);
    cost_assert(t != NULL, "no task");
    /* joined once its counting is over: the join's own table work (its
    ** find and remove, before it waits) must not land in the task's */
    for (int i = 0; i < 100000 && !__atomic_load_n(&table_work_done, __ATOMIC_ACQUIRE); i++)
        usleep(100); /* 10 s at most */
    cost_assert(__atomic_load_n(&table_work_done, __ATOMIC_ACQUIRE), "the task never ended");
    cost_assert(rt_join(t, NULL) == RT_OK, "the task failed");
    rt_shared *s = rt_shared_new(RT_OWNED, 16, (char[16]){0}, 8 * KIB);
    cost_assert(rt_update(s, table_work_in_a_door, "main in an RT_OWNED door") == RT_OK,
                "the door failed");
    rt_shared_free(s);
}
END_TEST

/* ---- exact across threads ----------------------------------------------- */

enum { WORKERS = 8, PER_WORKER = 5000 };

static void *allocates(void *unused)
{
    (void)unused;
    for (int i = 0; i < PER_WORKER; i++) {
        void *p = rt_alloc(24);
        void *o = rt_alloc_outside(8);
        rt_free(p);
        rt_free(o);
    }
    return NULL;
}

/* Eight tasks at once: the counters lose no increment. Each task makes
** PER_WORKER block allocations and outside values (one put, one find and
** one remove each; growth to 16 slots adds no move, the table never
** holding two). */
START_TEST(the_counters_are_exact_across_threads)
{
    rt_task *t[WORKERS];

    init_fixed(64 * KIB);
    unsigned long seen = 0;
    for (int i = 0; i < WORKERS; i++)
        cost_assert((t[i] = rt_spawn(allocates, NULL)) != NULL, "spawn %d failed", i);
    /* read while they count: a reading never goes back, and a read of a
    ** counter is as atomic as its increments (SANITIZE=thread judges it) */
    for (int k = 0; k < 1000; k++) {
        unsigned long now = C(BLOCK_ALLOCS);
        cost_assert(now >= seen && now <= WORKERS * PER_WORKER, "read %lu after %lu", now, seen);
        seen = now;
    }
    for (int i = 0; i < WORKERS; i++)
        cost_assert(rt_join(t[i], NULL) == RT_OK, "join %d failed", i);
    cost_assert(C(BLOCK_ALLOCS) == WORKERS * PER_WORKER, "%lu block allocations, expected %d",
                C(BLOCK_ALLOCS), WORKERS * PER_WORKER);
    /* + the unjoined table: a put at each spawn, a find and a remove at
    ** each join */
    cost_assert(C(TABLE_OPS) == 3ul * WORKERS * PER_WORKER + 3 * WORKERS,
                "%lu table ops, expected %d", C(TABLE_OPS), 3 * WORKERS * PER_WORKER + 3 * WORKERS);
    assert_bytes(C(BYTES_HOT), WORKERS, sizeof(struct rt_hot), "struct rt_hot");
    assert_bytes(C(BYTES_TASK), WORKERS, sizeof(struct rt_task), "struct rt_task");
}
END_TEST

/* Tasks that count at the same moment, many times: a counter bumped by a
** read and a write of its own (each atomic, so no sanitizer objects) loses
** the increments another task makes between them, and the total falls
** short. The tasks start together (a gate opened once all are running)
** and each makes RACERS_EACH block allocations, the cheapest counted call,
** so their counting overlaps on every core; whatever the interleaving,
** the total is exact. */
enum { RACERS = 4, RACERS_EACH = 200000 };
static atomic_int racers_ready;
static atomic_bool racers_go;

static void *allocates_once_all_are_ready(void *unused)
{
    (void)unused;
    atomic_fetch_add(&racers_ready, 1);
    while (!atomic_load(&racers_go))
        sched_yield();
    for (int i = 0; i < RACERS_EACH; i++)
        rt_free(rt_alloc(16));
    return NULL;
}

START_TEST(counters_bumped_by_tasks_at_the_same_moment_lose_no_increment)
{
    rt_task *t[RACERS];

    init_fixed(64 * KIB);
    atomic_store(&racers_ready, 0);
    atomic_store(&racers_go, false);
    for (int i = 0; i < RACERS; i++)
        cost_assert((t[i] = rt_spawn(allocates_once_all_are_ready, NULL)) != NULL,
                    "spawn %d failed", i);
    while (atomic_load(&racers_ready) < RACERS)
        sched_yield();
    rt__costs_reset();
    atomic_store(&racers_go, true);
    for (int i = 0; i < RACERS; i++)
        cost_assert(rt_join(t[i], NULL) == RT_OK, "join %d failed", i);
    cost_assert(C(BLOCK_ALLOCS) == (unsigned long)RACERS * RACERS_EACH,
                "%lu block allocations counted, %d made", C(BLOCK_ALLOCS), RACERS * RACERS_EACH);
}
END_TEST

/* The process's first thread state is counted like every later one: main's,
** made by the first call after rt_init, and a thread's of its own. */
static size_t thread_state_usable;

static void *touch_the_runtime(void *unused)
{
    (void)unused;
    (void)rt_chunk_kept();
    thread_state_usable = malloc_usable_size(rt_hot());
    return NULL;
}

/* ... and each is counted at exactly what malloc gave it (its usable
** size, read from the state itself), not at what was asked. */
START_TEST(the_first_thread_state_is_counted_as_the_others)
{
    rt__costs_reset();
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    rt_init();
    (void)rt_held();
    assert_bytes(C(BYTES_HOT), 1ul, sizeof(struct rt_hot), "struct rt_hot (main's)");
    size_t mains = malloc_usable_size(rt_hot());
    cost_assert(C(BYTES_HOT) == mains, "main's state counted %lu bytes, malloc gave it %zu",
                (unsigned long)C(BYTES_HOT), mains);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, touch_the_runtime, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    assert_bytes(C(BYTES_HOT), 2ul, sizeof(struct rt_hot), "struct rt_hot (main's and a thread's)");
    cost_assert(C(BYTES_HOT) == mains + thread_state_usable,
                "two states counted %lu bytes, malloc gave them %zu",
                (unsigned long)C(BYTES_HOT), mains + thread_state_usable);
}
END_TEST

/* The array of stored values grows by doubling at every size, not only at
** the first two: 10,000 stores take arrays of 8, 16, ... 16384 entries,
** under 33,000 entries in all, and log2 of the count reallocations. A
** growth by a constant step would take tens of millions. */
#define MANY_STORED 10000

static void store_many(void *value, void *ctx)
{
    void **kept = ctx;
    (void)value;
    for (int i = 0; i < MANY_STORED; i++)
        cost_assert(rt_store(kept[MANY_STORED], kept[i]) == RT_OK, "store %d refused", i);
}

START_TEST(ten_thousand_stores_take_a_doubling_array)
{
    int zero[4] = {0};
    static void *ctx[MANY_STORED + 1];

    init_fixed(4096 * KIB);
    rt_shared *s = rt_shared_new(RT_OWNED, sizeof zero, zero, 1024 * KIB);
    for (int i = 0; i < MANY_STORED; i++)
        ctx[i] = rt_alloc_outside(8);
    ctx[MANY_STORED] = s;
    rt__costs_reset();
    cost_assert(rt_update(s, store_many, ctx) == RT_OK, "update failed");
    size_t entries = 0;
    for (size_t cap = 8; cap / 2 < MANY_STORED; cap *= 2)
        entries += cap; /* 8 + 16 + ... + 16384 */
    cost_assert(C(BYTES_STORED) >= entries * rt__sizeof_stored &&
                C(BYTES_STORED) <= entries * rt__sizeof_stored + 12 * OVER,
                "%lu bytes of stored-value arrays for %d stores, expected %zu (doubling)",
                C(BYTES_STORED), MANY_STORED, entries * rt__sizeof_stored);
    rt_shared_free(s);
}
END_TEST

/* ---- the reset ------------------------------------------------------------ */

static void *a_task_that_allocates(void *unused)
{
    (void)unused;
    rt_free(rt_alloc(100));
    return NULL;
}

static void append_one(void *value, void *ctx)
{
    (void)ctx;
    ((unsigned char *)value)[0]++;
}

static void store_one(void *value, void *ctx)
{
    (void)value;
    ck_assert_int_eq(rt_store(ctx, rt_alloc_outside(16)), RT_OK);
}

/* After work that moves every counter, a reset sets each back to 0, the
** last of the enum included: what a bound counts after a reset is only
** what follows it (costs.h). */
START_TEST(a_reset_sets_every_counter_back_to_zero)
{
    init_fixed(256 * KIB);
    void *outs[64];
    for (int i = 0; i < 64; i++)
        outs[i] = rt_alloc_outside(32);
    outs[0] = rt_realloc(outs[0], 4096);
    void *p = rt_realloc(rt_alloc(40), 2000);
    rt_chan *c = rt_chan_new(2);
    unsigned char init[64] = {0};
    rt_shared *sh = rt_shared_new(RT_COPY, sizeof init, init, 4096);
    ck_assert_int_eq(rt_update(sh, append_one, NULL), RT_OK);
    rt_shared *owned = rt_shared_new(RT_OWNED, sizeof init, init, 4096);
    ck_assert_int_eq(rt_update(owned, store_one, owned), RT_OK);
    rt_task *t = rt_spawn(a_task_that_allocates, NULL);
    ck_assert_ptr_nonnull(t);
    void *result;
    ck_assert_int_eq(rt_join(t, &result), RT_OK);
    int moved = 0;
    for (int k = 0; k < RT_COSTS; k++)
        moved += rt__cost((enum rt_cost)k) != 0;
    ck_assert_int_gt(moved, RT_COSTS / 2); /* the work counted: a reset has work to undo */
    ck_assert_uint_gt(C(BYTES_OUTSIDE), 64 * 32);
    rt__costs_reset();
    for (int k = 0; k < RT_COSTS; k++)
        ck_assert_msg(rt__cost((enum rt_cost)k) == 0, "counter %d reads %lu after a reset", k,
                      rt__cost((enum rt_cost)k));
    /* and counts again from 0: one outside value of 100 bytes */
    void *q = rt_alloc_outside(100);
    assert_bytes(C(BYTES_OUTSIDE), 1ul, (size_t)100, "outside value");
    rt_free(q);
    rt_shared_free(owned);
    rt_shared_free(sh);
    rt_chan_free(c);
    rt_free(p);
    for (int i = 0; i < 64; i++)
        rt_free(outs[i]);
}
END_TEST

#endif /* RT_TESTING */

Suite *make_suite(void)
{
    Suite *s = suite_create("costs");
#if RT_TESTING
    suite_add_test(s, fifty_thousand_outside_values_take_a_few_probes_an_operation);
    suite_add_test(s, a_table_of_fifty_thousand_values_takes_its_slots_and_no_more);
    suite_add_test(s, a_small_class_pops_in_one_step);
    suite_add_test(s, every_block_allocation_call_counts_refused_or_served);
    suite_add_test(s, first_fit_takes_the_first_large_chunk_in_one_step);
    suite_add_test(s, first_fit_counts_each_large_chunk_it_passes_over);
    suite_add_test(s, a_bigger_class_is_found_in_at_most_a_class_walk);
    suite_add_test(s, a_block_that_cannot_serve_walks_its_chunks_once);
    suite_add_test(s, a_block_realloc_copies_at_most_the_old_chunk);
    suite_add_test(s, an_outside_realloc_keeps_at_most_the_old_size);
    suite_add_test(s, a_task_takes_its_struct_its_block_and_a_thread_state);
    suite_add_test(s, a_block_past_4_gib_is_counted_at_every_byte);
    suite_add_test(s, an_outside_realloc_past_4_gib_counts_every_byte_it_keeps);
    suite_add_test(s, a_channel_takes_its_struct_and_its_ring);
    suite_add_test(s, a_shared_value_takes_its_struct_and_its_block);
    suite_add_test(s, a_copy_door_copies_its_value_twice_and_no_more);
    suite_add_test(s, a_thread_end_walks_exactly_the_chunks_it_keeps);
    suite_add_test(s, a_task_end_walks_exactly_the_chunks_it_keeps_after_a_return_or_a_panic);
    suite_add_test(s, each_call_does_its_own_table_work_on_main_on_a_task_and_in_a_door);
    suite_add_test(s, the_counters_are_exact_across_threads);
    suite_add_test(s, counters_bumped_by_tasks_at_the_same_moment_lose_no_increment);
    suite_add_test(s, a_reset_sets_every_counter_back_to_zero);
    suite_add_test(s, ten_thousand_stores_take_a_doubling_array);
    suite_add_test(s, the_first_thread_state_is_counted_as_the_others);
#endif
    return s;
}
