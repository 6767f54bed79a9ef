/*
** check_states.c: every state of each structure, each promise checked in
** it (issue 14, item 3).
**
** - The chunk cache at each depth 0 to 16 and the 17th give: LIFO at every
**   depth, rt_chunk_kept exact, the bound (the 17th freed, counted through
**   testutil's wrapped malloc and free), the clearing of exactly
**   [base, end) for end == base, one byte, a middle, one short of and the
**   whole chunk; on main, on a plain thread and on a task; the thread end
**   freeing every kept chunk, at each depth.
** - Regions nested 1 to 20 deep (more than the cache holds), twice, with a
**   model of the cache: each region's chunk, the chunk traffic, allocations
**   in every open region, the clearing at each close; closing a region that
**   is not the innermost at each depth is a violation, and so is closing a
**   stale copy of the innermost once it closed (rt_region_close's own,
**   the chunk not given again), the cache with room and full.
** - The block's free lists empty, with one freed chunk, with many, with
**   neighbours to merge on the left, the right and both sides: rt_held
**   exact after each step and freed memory allocated again (D10), up to the
**   budget exactly.
** - The pointer table itself, with addresses the test chooses (a row, and
**   a cluster that wraps past the table's end): every entry found after
**   each put, removal and put again, up to 400 (5 growths), in three
**   orders.
** - The table of outside values at each load 0 to 70 (past two growths),
**   after deletions: rt_held exact, each value freed or handed over; and
**   emptied by stores into a shared value and filled again by unstores.
** - Channels empty, full and closed with waiters on either side: the
**   counts of sender and receiver exact at each step.
** - Doors nested 1 to 17 deep (updates in place and accesses): a store
**   into every update open at each level, rt_budget, rt_held and each
**   value's figure exact at each level, after the doors close and after a
**   panic at the innermost.
**
** The figures come from refrt.h and the documented block layout
** (docs/budgets.md: an 8-byte header, chunks rounded up to 16).
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
#include "task.h"
#include "testutil.h"

#define KIB ((size_t)1024)
#define CHUNK ((size_t)RT_CHUNK_SIZE)
#define SLOTS 16u /* written out, not read from the header: a header that
                     stated it wrongly would be copied, not caught */

static unsigned char ones[65536], zeros[65536];

static void init_patterns(void)
{
    memset(ones, 0xEE, sizeof ones);
    memset(zeros, 0, sizeof zeros);
}

/* Whether [from, to) of p reads v (0 or 0xEE). */
static int reads(const unsigned char *p, size_t from, size_t to, unsigned char v)
{
    const unsigned char *want = v == 0 ? zeros : ones;
    ck_require(v == 0 || v == 0xEE);
    return to <= from || memcmp(p + from, want, to - from) == 0;
}

/* The block layout docs/budgets.md states: an 8-byte header, rounded to 16. */
static size_t chunk_of(size_t n)
{
    return (n + 8 + 15) & ~(size_t)15;
}

/* ---- the chunk cache at every depth ------------------------------------ */

/* The ranges a give clears: end == base, one byte, a middle that is not a
** multiple of anything, one byte short of the chunk, the whole chunk. */
static const size_t give_ranges[] = {0, 1, 4097, 65535, 65536};
#define NRANGES (sizeof give_ranges / sizeof give_ranges[0])

/* Walks this thread's cache from depth 0 to 16 and past it. The thread
** must keep no chunk when it starts (a fresh thread, or main right after
** rt_init), and nothing else may take or give chunks meanwhile: the chunk
** counts are checked exactly. Leaves the thread keeping 16, all zero. */
static void walk_the_cache_at_every_depth(void)
{
    unsigned char *f[SLOTS + 1], *extra[NRANGES];
    struct chunk_counts n;

    init_patterns();
    ck_assert_uint_eq(rt_chunk_kept(), 0);
    chunks_reset();
    for (unsigned i = 0; i <= SLOTS; i++) {
        f[i] = rt_chunk_take(); /* none kept: each is fresh */
        ck_assert_uint_eq(rt_chunk_kept(), 0);
        ck_assert(chunk_live(f[i]));
        for (unsigned j = 0; j < i; j++)
            ck_assert_ptr_ne(f[i], f[j]);
    }
    n = chunks_counted();
    ck_assert_uint_eq(n.mallocs, SLOTS + 1);
    ck_assert_uint_eq(n.frees, 0);
    chunks_reset();

    /* depth d: the thread keeps f[0..d-1], f[d-1] on top */
    for (unsigned d = 0; d < SLOTS; d++) {
        ck_assert_uint_eq(rt_chunk_kept(), d);
        /* LIFO: popping all gives them back in the reverse order ... */
        for (unsigned k = d; k-- > 0;) {
            ck_assert_ptr_eq(rt_chunk_take(), f[k]);
            ck_assert_uint_eq(rt_chunk_kept(), k);
        }
        /* ... and giving them back in order restores the depth */
        for (unsigned k = 0; k < d; k++) {
            rt_chunk_give(f[k], f[k]);
            ck_assert_uint_eq(rt_chunk_kept(), k + 1);
        }
        /* the clearing of exactly [base, end) for a chunk given at depth d */
        for (size_t r = 0; r < NRANGES; r++) {
            size_t end = give_ranges[r];
            memset(f[d], 0xEE, CHUNK);
            rt_chunk_give(f[d], f[d] + end);
            ck_assert_uint_eq(rt_chunk_kept(), d + 1);
            ck_assert_ptr_eq(rt_chunk_take(), f[d]); /* the one given last */
            ck_assert_uint_eq(rt_chunk_kept(), d);
            if (end > 0) {
                ck_assert_int_eq(f[d][0], 0);
                ck_assert_int_eq(f[d][end - 1], 0);
            }
            if (end < CHUNK)
                ck_assert_int_eq(f[d][end], 0xEE);
            ck_assert_msg(reads(f[d], 0, end, 0), "depth %u, end %zu: not cleared", d, end);
            ck_assert_msg(reads(f[d], end, CHUNK, 0xEE), "depth %u, end %zu: cleared past end",
                          d, end);
            /* the chunk below it, kept, was not touched */
            if (d > 0)
                ck_assert_msg(reads(f[d - 1], 0, CHUNK, 0), "depth %u: the chunk below changed",
                              d);
        }
        rt_chunk_give(f[d], f[d] + CHUNK); /* clears it whole: depth d + 1 */
        ck_assert_ptr_eq(rt_chunk_take(), f[d]);
        ck_assert(reads(f[d], 0, CHUNK, 0));
        rt_chunk_give(f[d], f[d]);
    }
    n = chunks_counted();
    ck_assert_uint_eq(n.mallocs, 0); /* every take at depths 1 to 16 was a pop */
    ck_assert_uint_eq(n.frees, 0);   /* and every give below 16 kept */

    /* depth 16, full: the 17th give frees, cleared, and keeps the top */
    ck_assert_uint_eq(rt_chunk_kept(), SLOTS);
    memset(f[SLOTS], 0xEE, CHUNK);
    rt_chunk_give(f[SLOTS], f[SLOTS] + CHUNK);
    n = chunks_counted();
    ck_assert_uint_eq(n.frees, 1);
    ck_assert_uint_eq(n.frees_dirty, 0);
    ck_assert(!chunk_live(f[SLOTS]));
    ck_assert_uint_eq(rt_chunk_kept(), SLOTS);
    for (unsigned k = SLOTS; k-- > 0;)
        ck_assert_ptr_eq(rt_chunk_take(), f[k]); /* the stack is as it was */
    /* more chunks given at 16, each with one of the ranges (only the range
    ** written, since testutil calls a freed chunk dirty for any byte) */
    for (size_t r = 0; r < NRANGES; r++)
        extra[r] = rt_chunk_take();
    ck_assert_uint_eq(chunks_counted().mallocs, NRANGES);
    for (unsigned k = 0; k < SLOTS; k++)
        rt_chunk_give(f[k], f[k]);
    chunks_reset();
    for (size_t r = 0; r < NRANGES; r++) {
        memset(extra[r], 0xEE, give_ranges[r]);
        rt_chunk_give(extra[r], extra[r] + give_ranges[r]);
        ck_assert_uint_eq(rt_chunk_kept(), SLOTS);
        ck_assert(!chunk_live(extra[r]));
    }
    n = chunks_counted();
    ck_assert_uint_eq(n.frees, NRANGES);
    ck_assert_uint_eq(n.frees_dirty, 0);
    ck_assert_uint_eq(n.mallocs, 0);
    ck_assert_ptr_eq(rt_chunk_take(), f[SLOTS - 1]);
    rt_chunk_give(f[SLOTS - 1], f[SLOTS - 1]);
}

START_TEST(the_cache_keeps_its_promises_at_every_depth_on_main)
{
    rt_init();
    walk_the_cache_at_every_depth();
}
END_TEST

static void *walks(void *unused)
{
    (void)unused;
    walk_the_cache_at_every_depth();
    return NULL;
}

START_TEST(the_cache_keeps_its_promises_at_every_depth_on_a_thread_and_a_task)
{
    pthread_t t;
    void *result = (void *)1;

    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    ck_assert_int_eq(pthread_create(&t, NULL, walks, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(rt_chunk_kept(), 0); /* main's own cache was not touched */
    ck_assert_int_eq(rt_join(rt_spawn(walks, NULL), &result), RT_OK);
    ck_assert_ptr_null(result);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

struct ender {
    unsigned give;   /* chunks to take fresh, fill and give back */
    unsigned kept;   /* rt_chunk_kept() before the end */
    void *c[SLOTS + 2];
};

static void *gives_and_ends(void *arg)
{
    struct ender *e = arg;
    for (unsigned i = 0; i < e->give; i++)
        e->c[i] = rt_chunk_take();
    for (unsigned i = 0; i < e->give; i++) {
        memset(e->c[i], 0x42, 100 + i);
        rt_chunk_give(e->c[i], (unsigned char *)e->c[i] + 100 + i);
    }
    e->kept = rt_chunk_kept();
    return NULL;
}

START_TEST(a_thread_end_frees_every_kept_chunk_at_every_depth)
{
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    for (unsigned d = 0; d <= SLOTS + 1; d++) {
        for (int task = 0; task < 2; task++) {
            struct ender e = {d, 99, {0}};
            chunks_reset();
            if (task) {
                ck_assert_int_eq(rt_join(rt_spawn(gives_and_ends, &e), NULL), RT_OK);
            } else {
                pthread_t t;
                ck_assert_int_eq(pthread_create(&t, NULL, gives_and_ends, &e), 0);
                ck_assert_int_eq(pthread_join(t, NULL), 0);
            }
            struct chunk_counts n = chunks_counted();
            ck_assert_uint_eq(e.kept, d < SLOTS ? d : SLOTS);
            ck_assert_msg(n.mallocs == d && n.frees == d, "depth %u (%s): %lu mallocs, %lu frees",
                          d, task ? "task" : "thread", n.mallocs, n.frees);
            ck_assert_uint_eq(n.frees_dirty, 0);
            for (unsigned i = 0; i < d; i++)
                ck_assert(!chunk_live(e.c[i]));
            ck_assert_uint_eq(rt_chunk_kept(), 0);
        }
    }
}
END_TEST

/* ---- regions at every depth -------------------------------------------- */

#define MAX_DEPTH 20

/* The model of this thread's cache: the chunks kept, bottom first. */
struct cache_model {
    unsigned char *kept[SLOTS];
    unsigned n;
    unsigned long mallocs, frees;
};

static void model_take(struct cache_model *m, unsigned char *got, rt_region *open, int nopen)
{
    if (m->n > 0) {
        ck_assert_ptr_eq(got, m->kept[--m->n]);
        return;
    }
    m->mallocs++;
    for (int j = 0; j < nopen; j++)
        ck_assert_ptr_ne(got, open[j].base);
}

/* Opens regions 1..depth nested, allocates in every open region at each
** depth, checks each region's bytes at the deepest, closes innermost
** first; the model says each chunk, each count, and the clearing. */
static void nest(struct cache_model *m, int depth)
{
    rt_region r[MAX_DEPTH];
    size_t used[MAX_DEPTH] = {0};

    for (int i = 0; i < depth; i++) {
        rt_region_open(&r[i]);
        model_take(m, r[i].base, r, i);
        ck_assert_ptr_eq(r[i].bump, r[i].base);
        ck_assert_uint_eq(rt_chunk_kept(), m->n);
        ck_assert(reads(r[i].base, 0, CHUNK, 0)); /* fresh, or cleared whole */
        /* an allocation in every region open now, the innermost last */
        for (int j = 0; j <= i; j++) {
            size_t bytes = (size_t)(1 + (i + j) % 23);
            size_t at = (used[j] + 15) & ~(size_t)15;
            unsigned char *p = rt_region_alloc(&r[j], bytes, 1, (unsigned char)(j + 1));
            ck_assert_ptr_eq(p, r[j].base + at);
            ck_assert_ptr_eq(r[j].bump, p + bytes);
            used[j] = at + bytes;
        }
    }
    for (int j = 0; j < depth; j++)
        for (size_t k = 0; k < used[j]; k++)
            if (r[j].base[k] != 0)
                ck_require(r[j].base[k] == (unsigned char)(j + 1));
    for (int i = depth; i-- > 0;) {
        unsigned char *base = r[i].base;
        for (size_t k = 0; k < used[i]; k++)
            r[i].base[k] = 0xEE; /* every byte handed out, gaps included */
        rt_region_close(&r[i]);
        ck_assert_ptr_null(r[i].base);
        if (m->n < SLOTS) {
            m->kept[m->n++] = base;
            ck_assert(reads(base, 0, used[i], 0));
        } else {
            m->frees++;
            ck_assert(!chunk_live(base));
        }
        ck_assert_uint_eq(rt_chunk_kept(), m->n);
    }
}

START_TEST(regions_nest_at_every_depth_past_what_the_cache_holds)
{
    struct cache_model m = {{0}, 0, 0, 0};
    init_patterns();
    rt_init();
    chunks_reset();
    for (int depth = 1; depth <= MAX_DEPTH; depth++)
        for (int round = 0; round < 2; round++) {
            nest(&m, depth);
            struct chunk_counts n = chunks_counted();
            ck_assert_msg(n.mallocs == m.mallocs && n.frees == m.frees,
                          "depth %d round %d: %lu mallocs %lu frees, the model %lu %lu", depth,
                          round, n.mallocs, n.frees, m.mallocs, m.frees);
            ck_assert_uint_eq(n.frees_dirty, 0);
        }
    ck_assert_uint_eq(m.n, SLOTS);
}
END_TEST

struct misclose {
    int depth, close; /* open `depth` regions, then close region `close` */
};

static void close_one_not_innermost(void *arg)
{
    const struct misclose *c = arg;
    rt_region r[MAX_DEPTH];
    rt_init();
    for (int i = 0; i < c->depth; i++)
        rt_region_open(&r[i]);
    rt_region_close(&r[c->close]);
}

START_TEST(closing_a_region_not_innermost_is_a_violation_at_every_depth)
{
    for (int depth = 2; depth <= 18; depth++) {
        struct misclose outer = {depth, 0}, below = {depth, depth - 2};
        ck_assert_violation(close_one_not_innermost, &outer,
                            "is not this thread's innermost open region");
        ck_assert_violation(close_one_not_innermost, &below,
                            "is not this thread's innermost open region");
    }
}
END_TEST

/* A copy of the innermost region, kept while the region closes, then
** closed itself: it is not this thread's innermost open region (that is
** the region around it now), so rt_region_close names it in its own
** violation, and gives nothing back: its chunk went back with the first
** close (the top of the thread's stack when the cache had room, freed
** when it was full). At every depth, with the cache empty and full, and
** again once a region at the same depth has opened in its place: with
** room, that one reopened on the very chunk the stale copy names (LIFO),
** and the stale copy is still not it. */
static rt_region stale; /* static: the same address in the test and its child */

struct stale_close {
    int depth;
    bool cache_full, reopened;
};

static void close_a_stale_copy(void *arg)
{
    const struct stale_close *c = arg;
    rt_region r[MAX_DEPTH];
    void *extra[SLOTS];
    rt_init();
    for (int i = 0; i < c->depth; i++) {
        rt_region_open(&r[i]);
        rt_region_alloc(&r[i], 10, 10, 0x33);
    }
    if (c->cache_full) {
        for (unsigned i = 0; i < SLOTS; i++)
            extra[i] = rt_chunk_take();
        for (unsigned i = 0; i < SLOTS; i++)
            rt_chunk_give(extra[i], extra[i]);
    }
    stale = r[c->depth - 1];
    rt_region_close(&r[c->depth - 1]);
    if (rt_chunk_kept() != (c->cache_full ? SLOTS : 1))
        _exit(3); /* not the state the violation must be seen in */
    rt_region again;
    if (c->reopened) {
        rt_region_open(&again);
        if ((again.base == stale.base) != !c->cache_full)
            _exit(4); /* with room, the same chunk: the top of the stack */
    }
    rt_region_close(&stale);
}

START_TEST(closing_a_stale_copy_of_a_closed_region_is_rt_region_closes_violation_at_every_depth)
{
    char want[160];
    snprintf(want, sizeof want,
             "refrt: rt_region_close: region %p is not this thread's innermost open region\n",
             (void *)&stale);
    for (int depth = 1; depth <= 18; depth++)
        for (int full = 0; full <= 1; full++)
            for (int reopened = 0; reopened <= 1; reopened++) {
                struct stale_close c = {depth, full, reopened};
                struct death d = run_child(close_a_stale_copy, &c);
                ck_assert_msg(d.signal == SIGABRT && strstr(d.err, want) != NULL,
                              "depth %d, cache %s%s: expected SIGABRT and \"%s\", got "
                              "signal %d exit %d; stderr: %s", depth,
                              full ? "full" : "with room", reopened ? ", reopened" : "", want,
                              d.signal, d.exit_status, d.err);
            }
}
END_TEST

/* The thread keeps `depth` chunks, the last given on top, and gives that
** one again, with a range of no bytes, one, half the chunk or all of it: a
** violation at every depth the cache can take a give (the check looks at
** the top, wherever the stack's bottom is), whatever the range; with 16
** kept too, where the give would otherwise free a chunk still on top. */
struct give_again {
    int depth;
    size_t used;
};

static void give_the_top_again(void *arg)
{
    const struct give_again *g = arg;
    unsigned char *c[SLOTS];
    rt_init();
    for (int i = 0; i < g->depth; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i < g->depth; i++)
        rt_chunk_give(c[i], c[i] + 1);
    if ((int)rt_chunk_kept() != g->depth)
        _exit(3); /* not the state the violation must be seen in */
    fprintf(stderr, "top %p\n", (void *)c[g->depth - 1]); /* the chunk the line must name */
    fflush(stderr);
    rt_chunk_give(c[g->depth - 1], c[g->depth - 1] + g->used);
}

START_TEST(a_chunk_given_twice_on_top_is_a_violation_at_every_depth)
{
    static const size_t used[] = {0, 1, RT_CHUNK_SIZE / 2, RT_CHUNK_SIZE};
    for (int depth = 1; depth <= (int)SLOTS; depth++)
        for (size_t u = 0; u < sizeof used / sizeof *used; u++) {
            struct give_again g = {depth, used[u]};
            struct death d = run_child(give_the_top_again, &g);
            void *top = NULL;
            char want[96];
            ck_assert_msg(d.signal == SIGABRT && sscanf(d.err, "top %p", &top) == 1,
                          "depth %d, %zu bytes: expected SIGABRT, got signal %d exit %d; "
                          "stderr: %s", depth, used[u], d.signal, d.exit_status, d.err);
            /* the line names the chunk (its base), whatever the range's end */
            snprintf(want, sizeof want, "refrt: rt_chunk_give: chunk %p was given twice\n", top);
            ck_assert_msg(strstr(d.err, want) != NULL, "depth %d, %zu bytes: stderr lacks "
                          "\"%s\": %s", depth, used[u], want, d.err);
        }
}
END_TEST

/* ---- regions on every thread -------------------------------------------- */

enum { ON_MAIN, ON_A_THREAD, ON_A_TASK, PLACES };
static const char *const places[] = {"main", "a plain thread", "a task"};

/* Runs fn(arg) on main, a plain thread or a task (rt_init made first). */
static void run_on(int place, void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (place == ON_MAIN) {
        fn(arg);
    } else if (place == ON_A_THREAD) {
        ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
    } else {
        ck_assert_int_eq(rt_join(rt_spawn(fn, arg), NULL), RT_OK);
    }
}

/* Closing a region that is not the thread's innermost open one is
** rt_region_close's violation on every thread a region may be used on:
** main, a plain thread (a state, no task) and a task, at depths 2, 16,
** 17 (past the cache) and 20, closing the outermost, the one just
** below the innermost, and a copy of the innermost kept while it closed.
** The line names the region closed. Static, so that the test and its
** child know the same addresses. */
static rt_region on_nested[MAX_DEPTH], on_stale;

struct misclose_on {
    int place, depth, close; /* close: the region to close, -1 the stale copy */
};

static void *close_wrongly(void *arg)
{
    const struct misclose_on *c = arg;
    for (int i = 0; i < c->depth; i++) {
        rt_region_open(&on_nested[i]);
        rt_region_alloc(&on_nested[i], 10, 3, 0x33);
    }
    if (c->close < 0) {
        on_stale = on_nested[c->depth - 1];
        rt_region_close(&on_nested[c->depth - 1]);
        rt_region_close(&on_stale);
    } else {
        rt_region_close(&on_nested[c->close]);
    }
    _exit(3); /* the close returned */
}

static void close_wrongly_there(void *arg)
{
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    run_on(((struct misclose_on *)arg)->place, close_wrongly, arg);
    _exit(4);
}

START_TEST(closing_a_region_not_innermost_is_a_violation_on_every_thread_at_every_depth)
{
    static const int depths[] = {2, 16, 17, 20};
    for (int place = 0; place < PLACES; place++)
        for (size_t k = 0; k < sizeof depths / sizeof *depths; k++) {
            int depth = depths[k], closes[] = {0, depth - 2, -1};
            for (int j = 0; j < 3; j++) {
                struct misclose_on c = {place, depth, closes[j]};
                char want[160];
                snprintf(want, sizeof want,
                         "refrt: rt_region_close: region %p is not this thread's innermost open "
                         "region\n", closes[j] < 0 ? (void *)&on_stale
                                                   : (void *)&on_nested[closes[j]]);
                struct death d = run_child(close_wrongly_there, &c);
                ck_assert_msg(d.signal == SIGABRT && strstr(d.err, want) != NULL,
                              "on %s, %d deep, closing %s: expected SIGABRT and \"%s\", got "
                              "signal %d exit %d; stderr: %s", places[place], depth,
                              closes[j] < 0 ? "a stale copy of the innermost"
                              : closes[j] == 0 ? "the outermost" : "the one below the innermost",
                              want, d.signal, d.exit_status, d.err);
            }
        }
}
END_TEST

/* A task or a thread that ends with a region still open is a violation:
** the struct the region lives in ends with its frame, so its chunk could
** be neither cleared nor given back. A task whose fn returns, a plain
** thread that returns and main that calls pthread_exit, with 1, 16, 17
** and 20 regions open (here static structs, so the check is all that
** differs); a task that panics with them open closes them and ends
** cleanly. Main twice: before any task call, and after one has attached
** main's task to its thread (an allocation of its block), so that the
** check holds whether or not the ending thread runs a task. Each ending
** twice again: keeping no chunk, and keeping one (a region inside the open
** ones closed before the end), so that the check holds whatever the
** thread's cache holds when it ends. */
enum { END_TASK, END_THREAD, END_MAIN_EXIT, END_MAIN_TASK_EXIT, END_TASK_PANICS, ENDINGS };
struct open_end {
    int how, depth;
    bool keeps;
};

static void *returns_with_regions_open(void *arg)
{
    const struct open_end *e = arg;
    for (int i = 0; i < e->depth; i++) {
        rt_region_open(&on_nested[i]);
        rt_region_alloc(&on_nested[i], 10, 3, 0x5c);
    }
    if (e->keeps) {
        rt_region inner;
        rt_region_open(&inner);
        rt_region_alloc(&inner, 10, 3, 0x5c);
        rt_region_close(&inner);
        if (rt_chunk_kept() != 1)
            _exit(7);
    }
    if (e->how == END_TASK_PANICS)
        rt_panic("with its regions open");
    if (e->how == END_MAIN_EXIT || e->how == END_MAIN_TASK_EXIT)
        pthread_exit(NULL);
    return NULL;
}

static void end_with_regions_open(void *arg)
{
    const struct open_end *e = arg;
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    /* an allocation of main's block attaches main's task to its thread */
    if (e->how == END_MAIN_TASK_EXIT && (rt_alloc(24) == NULL || rt_held() == 0))
        _exit(6);
    if (e->how == END_MAIN_EXIT || e->how == END_MAIN_TASK_EXIT) {
        returns_with_regions_open(arg);
    } else if (e->how == END_THREAD) {
        run_on(ON_A_THREAD, returns_with_regions_open, arg);
    } else {
        rt_task *t = rt_spawn(returns_with_regions_open, arg);
        ck_require(t != NULL);
        if (rt_join(t, NULL) != (e->how == END_TASK_PANICS ? RT_PANICKED : RT_OK))
            _exit(5);
        if (e->how == END_TASK_PANICS)
            _exit(0); /* the panic closed them: nothing left open */
    }
    _exit(4); /* nothing fired */
}

START_TEST(a_task_or_a_thread_that_ends_with_a_region_open_is_a_violation)
{
    static const int depths[] = {1, 16, 17, 20};
    static const char *const want[] = {
        "refrt: rt_spawn: its task returned with a region still open\n",
        "refrt: hot_destroy: a thread ended with a region still open\n",
        "refrt: hot_destroy: a thread ended with a region still open\n",
        "refrt: hot_destroy: a thread ended with a region still open\n"};
    static const char *const how[] = {"a task that returns", "a plain thread",
                                      "main's pthread_exit before any task call",
                                      "main's pthread_exit once its task is attached",
                                      "a task that panics"};
    for (int h = 0; h < ENDINGS; h++)
        for (size_t k = 0; k < sizeof depths / sizeof *depths; k++)
            for (int keeps = 0; keeps < 2; keeps++) {
                struct open_end e = {h, depths[k], keeps};
                struct death d = run_child(end_with_regions_open, &e);
                if (h == END_TASK_PANICS)
                    ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                                  "%s, %d open, %d kept: signal %d exit %d; stderr: %s", how[h],
                                  depths[k], keeps, d.signal, d.exit_status, d.err);
                else
                    ck_assert_msg(d.signal == SIGABRT && strstr(d.err, want[h]) != NULL,
                                  "%s, %d open, %d kept: expected SIGABRT and \"%s\", got signal "
                                  "%d exit %d; stderr: %s", how[h], depths[k], keeps, want[h],
                                  d.signal, d.exit_status, d.err);
            }
}
END_TEST

/* A region's close gives back exactly [base, bump): every byte it handed
** out (the alignment gaps between its allocations too) reads 0 once it has
** closed, and a byte the program wrote just past the bump, inside the
** chunk, is still there: the close clears what the region handed out, not
** more (docs/region-cache.md), and the bump is never a multiple of 16
** here. Regions nested 1 to 20 deep, so that past 16 the closes free
** their chunks, counted clean; the chunk traffic exact at each depth. On
** main, a plain thread and a task, and before rt_init, where every close
** frees its chunk (the cache is off). */
struct exact_close {
    bool cache_on;
    int failed_depth; /* 0, or the depth a check failed at */
    const char *what;
};

static void *closes_clear_exactly(void *arg)
{
    struct exact_close *e = arg;
    rt_region r[MAX_DEPTH];
    size_t used[MAX_DEPTH];
#define CLOSE_FAIL(w)                                                          \
    do {                                                                       \
        e->failed_depth = depth;                                               \
        e->what = (w);                                                         \
        return NULL;                                                           \
    } while (0)
    for (int depth = 1; depth <= MAX_DEPTH; depth++) {
        unsigned long mallocs = 0, frees = 0;
        chunks_reset();
        for (int i = 0; i < depth; i++) {
            if (rt_chunk_kept() == 0)
                mallocs++;
            rt_region_open(&r[i]);
            (void)rt_region_alloc(&r[i], 1, (size_t)(1 + (i * 7 + depth) % 40), 0xEE);
            (void)rt_region_alloc(&r[i], 3, (size_t)(1 + i % 5), 0xEE);
            used[i] = (size_t)(r[i].bump - r[i].base);
            if (used[i] % 16 == 0)
                CLOSE_FAIL("a bump at a multiple of 16");
        }
        for (int i = depth; i-- > 0;) {
            unsigned char *base = r[i].base;
            bool keeps = e->cache_on && rt_chunk_kept() < SLOTS;
            if (keeps)
                base[used[i]] = 0x77; /* past the bump: the program's own */
            else
                frees++;
            rt_region_close(&r[i]);
            if (keeps) {
                if (rt_chunk_kept() == 0 || rt_hot() == NULL)
                    CLOSE_FAIL("a chunk not kept");
                if (!reads(base, 0, used[i], 0))
                    CLOSE_FAIL("a byte the region handed out not cleared");
                if (base[used[i]] != 0x77)
                    CLOSE_FAIL("the byte past the bump cleared");
                base[used[i]] = 0;
            } else if (chunk_live(base)) {
                CLOSE_FAIL("a chunk not freed");
            }
        }
        struct chunk_counts n = chunks_counted();
        if (n.mallocs != mallocs || n.frees != frees || n.frees_dirty != 0)
            CLOSE_FAIL("the chunk traffic");
        if (rt_chunk_kept() != (e->cache_on ? ((unsigned)depth < SLOTS ? (unsigned)depth : SLOTS) : 0u))
            CLOSE_FAIL("the chunks kept");
    }
#undef CLOSE_FAIL
    return NULL;
}

START_TEST(a_close_clears_exactly_what_its_region_handed_out_at_every_depth_on_every_thread)
{
    init_patterns();
    struct exact_close before = {false, 0, NULL};
    closes_clear_exactly(&before);
    ck_assert_msg(before.failed_depth == 0, "before rt_init, %d deep: %s", before.failed_depth,
                  before.what);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    for (int place = 0; place < PLACES; place++) {
        struct exact_close e = {true, 0, NULL};
        run_on(place, closes_clear_exactly, &e);
        ck_assert_msg(e.failed_depth == 0, "on %s, %d deep: %s", places[place], e.failed_depth,
                      e.what);
    }
}
END_TEST

/* A task's panic closes exactly the regions open when it panics, innermost
** first, each chunk cleared and kept or freed like any other: after the
** join every chunk the task's thread took is freed, clean, none twice,
** none leaked. With regions opened and closed before (the thread's
** innermost back to none), with none open at the panic, 1, 2, 16, 17 and
** 20 open, some closed before the panic; the panic at a plain call, inside
** an rt_update of an RT_OWNED value, inside an rt_update_all of two RT_COPY
** values and inside the rebuild of a poisoned supervised value (half the
** regions opened inside the door's fn or the build). A panic closes them
** as rt_region_close does: the structs here outlive the task, and each
** is then not open (refrt.h: base NULL), so closing or allocating from
** one again is the violation "region is not open", not a close of a
** chunk the thread gave back. */
enum { PANIC_AT_A_CALL, PANIC_IN_AN_UPDATE, PANIC_IN_AN_UPDATE_ALL, PANIC_IN_A_REBUILD,
       PANIC_PLACES };
static const char *const panic_places[] = {"at a plain call", "inside an rt_update",
                                           "inside an rt_update_all", "inside a rebuild"};

struct region_panic {
    int warm, open, closed, where;
    bool build_panics;
    rt_region r[MAX_DEPTH];
    rt_shared *a, *b;
};

static void open_from(struct region_panic *p, int from, int to)
{
    for (int i = from; i < to; i++) {
        rt_region_open(&p->r[i]);
        memset(rt_region_alloc(&p->r[i], 1, (size_t)(100 + i), 0xA5), 0x5A, (size_t)(100 + i));
    }
}

static void opens_the_rest_and_panics(struct region_panic *p)
{
    open_from(p, p->open / 2, p->open);
    for (int i = p->open; i-- > p->open - p->closed;)
        rt_region_close(&p->r[i]);
    rt_panic("with regions open");
}

static void panic_in_update(void *value, void *ctx)
{
    (void)value;
    opens_the_rest_and_panics(ctx);
}

static void panic_in_update_all(void *va, void *vb, void *ctx)
{
    (void)va;
    (void)vb;
    opens_the_rest_and_panics(ctx);
}

static void build_or_panic(void *value, void *ctx)
{
    struct region_panic *p = ctx;
    *(int *)value = 0;
    if (p->build_panics)
        opens_the_rest_and_panics(p);
}

static void poison_it(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    rt_panic("poisons the supervised value");
}

static void *poisons(void *arg)
{
    rt_update(arg, poison_it, NULL);
    return NULL;
}

static void not_reached(void *value, void *ctx)
{
    (void)value;
    (void)ctx;
    _exit(9); /* the rebuild panicked: fn never runs */
}

static void close_again(void *region)
{
    rt_region_close(region);
    _exit(10);
}

static void alloc_again(void *region)
{
    rt_region_alloc(region, 1, 1, 0);
    _exit(10);
}

/* Every region of p the task opened is closed, whoever closed it. */
static void assert_none_open(const struct region_panic *p, const char *where)
{
    int opened = p->warm > p->open ? p->warm : p->open;
    for (int i = 0; i < opened; i++)
        ck_assert_msg(p->r[i].base == NULL && p->r[i].bump == NULL && p->r[i].outer == NULL,
                      "%s, %d regions warm, %d open, %d closed: region %d still has base %p, "
                      "bump %p, outer %p after the panic", where, p->warm, p->open, p->closed, i,
                      (void *)p->r[i].base, (void *)p->r[i].bump, (void *)p->r[i].outer);
}

static void *regions_then_panic(void *arg)
{
    struct region_panic *p = arg;
    open_from(p, 0, p->warm);
    for (int i = p->warm; i-- > 0;)
        rt_region_close(&p->r[i]);
    open_from(p, 0, p->open / 2);
    if (p->where == PANIC_IN_AN_UPDATE)
        rt_update(p->a, panic_in_update, p);
    else if (p->where == PANIC_IN_AN_UPDATE_ALL)
        rt_update_all(p->a, p->b, panic_in_update_all, p);
    else if (p->where == PANIC_IN_A_REBUILD)
        rt_update(p->a, not_reached, NULL); /* poisoned: rebuilt first */
    else
        opens_the_rest_and_panics(p);
    return NULL;
}

START_TEST(a_panic_closes_exactly_the_regions_open_at_every_depth_in_every_door)
{
    static const int cases[][3] = {/* warm, open, closed before the panic */
                                   {3, 0, 0}, {3, 1, 0}, {0, 2, 1}, {0, 2, 0}, {0, 16, 0},
                                   {2, 17, 0}, {0, 17, 1}, {0, 20, 0}, {4, 20, 3}};
    int zero = 0;
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_init();
    for (int where = 0; where < PANIC_PLACES; where++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            static struct region_panic p;
            memset(&p, 0, sizeof p);
            p.warm = cases[k][0];
            p.open = cases[k][1];
            p.closed = cases[k][2];
            p.where = where;
            if (where == PANIC_IN_A_REBUILD) {
                p.a = rt_shared_supervised(RT_OWNED, sizeof zero, build_or_panic, &p, 4 * KIB);
                ck_assert_int_eq(rt_join(rt_spawn(poisons, p.a), NULL), RT_PANICKED);
                ck_assert(rt_poisoned(p.a));
                p.build_panics = true;
            } else {
                p.a = rt_shared_new(where == PANIC_IN_AN_UPDATE ? RT_OWNED : RT_COPY,
                                    sizeof zero, &zero, 4 * KIB);
            }
            p.b = rt_shared_new(RT_COPY, sizeof zero, &zero, 4 * KIB);
            chunks_reset();
            ck_assert_int_eq(rt_join(rt_spawn(regions_then_panic, &p), NULL), RT_PANICKED);
            struct chunk_counts n = chunks_counted();
            unsigned long took = (unsigned long)(p.warm > p.open ? p.warm : p.open);
            ck_assert_msg(n.mallocs == took && n.frees == took && n.frees_dirty == 0,
                          "%s, %d regions warm, %d open, %d closed: %lu mallocs, %lu frees (%lu "
                          "dirty), expected %lu and %lu (0)", panic_places[where], p.warm, p.open,
                          p.closed, n.mallocs, n.frees, n.frees_dirty, took, took);
            ck_assert_uint_eq(rt_chunk_kept(), 0); /* main's cache not touched */
            assert_none_open(&p, panic_places[where]);
            if (p.open > 0 && k % 3 == 0) { /* the innermost, and the outermost, once a place */
                ck_assert_violation(close_again, &p.r[p.open - 1],
                                    "refrt: rt_region_close: region is not open\n");
                ck_assert_violation(alloc_again, &p.r[0],
                                    "refrt: rt_region_alloc: region is not open\n");
            }
            rt_shared_free(p.a);
            rt_shared_free(p.b);
        }
}
END_TEST

/* ---- the block's free lists in each shape ------------------------------ */

#define BLOCK (64 * KIB)

/* Allocates exactly what main's budget has left (a multiple of 16 here),
** checks it filled, frees it: the room was there, whole. */
static void fill_the_rest_and_free(void)
{
    size_t rest = rt_budget() - rt_held();
    ck_assert_uint_eq(rt_budget(), BLOCK); /* the budget never moves: what is held does */
    ck_assert_uint_eq(rest % 16, 0);
    ck_assert_uint_ge(rest, 16);
    void *p = rt_alloc(rest - 8);
    ck_assert_uint_eq(rt_held(), rt_budget());
    rt_free(p);
    ck_assert_uint_eq(rt_held(), rt_budget() - rest);
}

START_TEST(the_block_is_reused_in_every_shape_of_its_free_lists)
{
    static const size_t sizes[] = {1, 8, 9, 100, 1000, 1016, 1017, 4000};
    rt_set_strategy(rt_fixed_strategy(BLOCK));
    rt_init();
    ck_assert_uint_eq(rt_budget(), BLOCK);

    /* empty: the whole budget at once, then again */
    ck_assert_uint_eq(rt_held(), 0);
    fill_the_rest_and_free();
    fill_the_rest_and_free();
    ck_assert_uint_eq(rt_held(), 0);

    /* one freed chunk, of each size, under a live one: freed, allocated
    ** again, then the rest of the budget still fits whole */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        void *a = rt_alloc(n), *keep = rt_alloc(24);
        ck_assert_uint_eq(rt_held(), chunk_of(n) + chunk_of(24));
        rt_free(a);
        ck_assert_uint_eq(rt_held(), chunk_of(24));
        void *again = rt_alloc(n);
        ck_assert_uint_eq(rt_held(), chunk_of(n) + chunk_of(24));
        fill_the_rest_and_free();
        rt_free(again);
        rt_free(keep);
        ck_assert_uint_eq(rt_held(), 0);
        fill_the_rest_and_free();
    }

    /* many: 40 values of mixed sizes, every other freed, allocated again
    ** in another order, then all freed: held exact at each step */
    {
        void *v[40];
        size_t held = 0;
        for (int i = 0; i < 40; i++) {
            v[i] = rt_alloc(sizes[i % 8]);
            held += chunk_of(sizes[i % 8]);
            ck_assert_uint_eq(rt_held(), held);
        }
        for (int i = 0; i < 40; i += 2) {
            rt_free(v[i]);
            held -= chunk_of(sizes[i % 8]);
            ck_assert_uint_eq(rt_held(), held);
        }
        for (int i = 38; i >= 0; i -= 2) {
            v[i] = rt_alloc(sizes[i % 8]);
            held += chunk_of(sizes[i % 8]);
            ck_assert_uint_eq(rt_held(), held);
        }
        for (int i = 0; i < 40; i++) {
            rt_free(v[(i * 7) % 40]);
            held -= chunk_of(sizes[((i * 7) % 40) % 8]);
            ck_assert_uint_eq(rt_held(), held);
        }
        ck_assert_uint_eq(rt_held(), 0);
        fill_the_rest_and_free(); /* everything freed is one room again */
    }
}
END_TEST

/* Three neighbours a, b, c of `n` bytes each, then the budget filled to
** exactly full behind them; frees the ones `freed` names (bits 0, 1, 2),
** then allocates the bytes those adjacent chunks make together: it must
** fit. */
static void merge_case(size_t n, unsigned freed)
{
    void *v[3], *rest;
    size_t chunk = chunk_of(n), total = 0;

    fill_the_rest_and_free(); /* every freed chunk merged back: a, b, c adjacent */
    for (int i = 0; i < 3; i++)
        v[i] = rt_alloc(n);
    rest = rt_alloc(rt_budget() - rt_held() - 8);
    ck_assert_uint_eq(rt_held(), rt_budget());
    for (int i = 0; i < 3; i++)
        if (freed & (1u << i)) {
            rt_free(v[i]);
            total += chunk;
        }
    ck_assert_uint_eq(rt_held(), rt_budget() - total);
    /* the freed chunks together, in one piece: needs them merged */
    void *big = rt_alloc(total - 8);
    ck_assert_uint_eq(rt_held(), rt_budget());
    memset(big, 0x5A, total - 8);
    for (int i = 0; i < 3; i++)
        if (!(freed & (1u << i)))
            rt_free(v[i]);
    rt_free(big);
    rt_free(rest);
    ck_assert_uint_eq(rt_held(), 0);
}

START_TEST(freed_neighbours_merge_on_the_left_the_right_and_both_sides)
{
    static const size_t sizes[] = {16, 100, 1000, 1016, 3000};
    rt_set_strategy(rt_fixed_strategy(BLOCK));
    rt_init();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        merge_case(sizes[i], 1u | 2u); /* b merges with its left neighbour */
        merge_case(sizes[i], 2u | 4u); /* b with its right */
        merge_case(sizes[i], 7u);      /* b with both */
        merge_case(sizes[i], 2u);      /* alone: nothing to merge, still fits */
        fill_the_rest_and_free();
    }
}
END_TEST

/* ---- the pointer table itself, with addresses the test chooses ---------- */

#if RT_TESTING /* the table's functions are reached from a test build only (task.c) */

/* The values' table above gets its addresses from malloc, so which of them
** collide, and where a cluster of them wraps past the table's end, changes
** from run to run. Here the test chooses them: 16-byte aligned as
** malloc's, hashed and compared by the table, never read. */
#define FAKE_MAX 400

static void *fake(size_t k)
{
    return (void *)(uintptr_t)(0x100000u + 16u * k);
}

/* Every entry is found where the table says, with its bytes; every other
** is not; the count is exact and the table at most half full. One check
** for the whole table (each of Check's assertions costs a write to its
** parent): the first entry that is wrong is named. */
static void the_table_holds_exactly(const struct outside_table *o, void *const *ps,
                                    const int *in, size_t n)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = rt__table_find(o, ps[k]);
        int right = in[k] ? i < o->cap && o->slots[i].p == ps[k] && o->slots[i].bytes == k + 1
                          : i == o->cap;
        if (!right)
            ck_abort_msg("entry %zu (%p, %s): found at %zu of %zu", k, ps[k],
                         in[k] ? "held" : "not held", i, o->cap);
        count += (size_t)in[k];
    }
    ck_assert_uint_eq(o->count, count);
    ck_assert_uint_le(o->count * 2, o->cap);
}

/* Puts ps[order[0..n)] in a fresh table, checking every entry after each
** (and so after each growth); takes every third out and puts it back;
** then takes them all out in another order, checking after each. */
static void table_through_every_load(void *const *ps, const size_t *order, size_t n)
{
    struct outside_table o = {0};
    int in[FAKE_MAX] = {0};
    for (size_t j = 0; j < n; j++) {
        size_t k = order[j];
        ck_assert(rt__table_hold(&o, ps[k], k + 1));
        in[k] = 1;
        the_table_holds_exactly(&o, ps, in, n);
    }
    for (size_t j = 0; j < n; j += 3) {
        size_t k = order[j];
        ck_assert_uint_eq(rt__table_remove(&o, rt__table_find(&o, ps[k])), k + 1);
        in[k] = 0;
        the_table_holds_exactly(&o, ps, in, n);
    }
    for (size_t j = 0; j < n; j += 3) {
        size_t k = order[j];
        ck_assert(rt__table_hold(&o, ps[k], k + 1));
        in[k] = 1;
        the_table_holds_exactly(&o, ps, in, n);
    }
    for (size_t j = 0; j < n; j++) {
        size_t k = order[(j * 7 + 3) % n]; /* 7 is prime to every n used */
        ck_assert_uint_eq(rt__table_remove(&o, rt__table_find(&o, ps[k])), k + 1);
        in[k] = 0;
        the_table_holds_exactly(&o, ps, in, n);
    }
    ck_assert_uint_eq(o.count, 0);
    free(o.slots);
}

START_TEST(the_table_finds_every_entry_whatever_collides_at_every_load)
{
    /* two sets: addresses in a row, and addresses whose home in the first
    ** table (16 slots) is its last slot or its first, one cluster that
    ** wraps past the end and, as the table doubles, keeps splitting into
    ** clusters that wrap or sit side by side */
    static void *row[FAKE_MAX], *wrapping[FAKE_MAX];
    struct outside_table sixteen = {.cap = 16};
    size_t order[FAKE_MAX], n = 0;
    for (size_t k = 0; k < FAKE_MAX; k++)
        row[k] = fake(k);
    for (size_t k = 0; n < FAKE_MAX; k++) {
        size_t home = rt__table_home(&sixteen, fake(k));
        if (home == 15 || home == 0)
            wrapping[n++] = fake(k);
    }
    /* a growth whose calloc fails: false, the table as it was, and the
    ** same put succeeds once calloc does */
    {
        struct outside_table o = {0};
        int in[FAKE_MAX] = {0};
        for (size_t k = 0; k < 8; k++) { /* 16 slots, 8 held: the 9th grows it */
            ck_assert(rt__table_hold(&o, row[k], k + 1));
            in[k] = 1;
        }
        fail_nth(1);
        bool held = rt__table_hold(&o, row[8], 9);
        unsigned long asked = fail_calls();
        fail_nth(0);
        ck_assert(!held);
        ck_assert_uint_eq(asked, 1);
        ck_assert_uint_eq(o.cap, 16);
        the_table_holds_exactly(&o, row, in, 9);
        ck_assert(rt__table_hold(&o, row[8], 9));
        in[8] = 1;
        ck_assert_uint_eq(o.cap, 32);
        the_table_holds_exactly(&o, row, in, 9);
        free(o.slots);
    }
    void *const *sets[] = {row, wrapping};
    for (size_t s = 0; s < 2; s++) {
        size_t sizes[] = {9, 33, 130, FAKE_MAX}; /* up to and past 1 to 5 growths */
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            size_t m = sizes[z];
            for (size_t j = 0; j < m; j++)
                order[j] = j; /* in order */
            table_through_every_load(sets[s], order, m);
            for (size_t j = 0; j < m; j++)
                order[j] = m - 1 - j; /* backwards */
            table_through_every_load(sets[s], order, m);
            for (size_t j = 0; j < m; j++)
                order[j] = (j * 101) % m; /* 101 is prime to every m used: a permutation */
            table_through_every_load(sets[s], order, m);
        }
    }
}
END_TEST

#endif /* RT_TESTING */

/* ---- the table of outside values at each load -------------------------- */

#define TABLE_MAX 70

START_TEST(outside_values_are_found_at_every_load_of_their_table)
{
    rt_set_strategy(rt_fixed_strategy(1024 * KIB));
    rt_init();
    for (int load = 0; load <= TABLE_MAX; load++) {
        unsigned char *v[TABLE_MAX];
        size_t held = 0;
        int gone[TABLE_MAX] = {0};
        for (int i = 0; i < load; i++) {
            v[i] = rt_alloc_outside((size_t)i + 1);
            memset(v[i], i, (size_t)i + 1);
            held += (size_t)i + 1;
            ck_assert_uint_eq(rt_held(), held);
        }
        /* deletions first: every third value freed, in a scrambled order */
        for (int i = load; i-- > 0;)
            if (i % 3 == 1) {
                rt_free(v[i]);
                gone[i] = 1;
                held -= (size_t)i + 1;
                ck_assert_uint_eq(rt_held(), held);
            }
        /* then each of the rest goes one way or the other: freed, handed
        ** over (freed by its new owner), or realloc'ed and then freed */
        for (int k = 0; k < load; k++) {
            int i = (k * 71) % load; /* 71 is prime, past TABLE_MAX: a permutation */
            if (gone[i])
                continue;
            ck_assert_int_eq(v[i][i], (unsigned char)i);
            switch (i % 3) {
            case 0:
                rt_free(v[i]);
                break;
            case 2: {
                unsigned char *p = rt_hand_over(v[i]);
                ck_assert_ptr_eq(p, v[i]);
                free(p);
                break;
            }
            }
            held -= (size_t)i + 1;
            gone[i] = 1;
            ck_assert_msg(rt_held() == held, "load %d, value %d: held %zu, expected %zu", load,
                          i, rt_held(), held);
        }
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

/* The table of outside values at each load 0 to 70 again, emptied and
** filled by stores and unstores (D9: a store takes the value out of the
** task's table, an unstore puts it back): at each load, the values are
** stored into an RT_OWNED value in one door in a scrambled order, each
** found in the table (a value the task does not hold would be the
** violation) and its bytes moved exactly: rt_held falls by them and the
** value's figure rises; then in a second door unstored in another order,
** each held again, and freed; every figure exact at each step. */
struct table_stores {
    rt_shared *s;
    unsigned char *v[TABLE_MAX];
    int load;
    size_t chunk;
};

static void stores_them_all(void *value, void *ctx)
{
    struct table_stores *t = ctx;
    size_t held = rt_held(), stored = 0;
    (void)value;
    for (int k = 0; k < t->load; k++) {
        int i = (k * 71) % t->load;
        ck_assert_int_eq(rt_store(t->s, t->v[i]), RT_OK);
        held -= (size_t)i + 1;
        stored += (size_t)i + 1;
        ck_assert_uint_eq(rt_held(), held);
        ck_assert_uint_eq(rt_shared_held(t->s), t->chunk + stored);
    }
    ck_assert_uint_eq(rt_held(), 0);
}

static void unstores_them_all(void *value, void *ctx)
{
    struct table_stores *t = ctx;
    size_t held = 0, stored = rt_shared_held(t->s) - t->chunk;
    (void)value;
    int odd = t->load / 2, even = t->load - odd;
    for (int k = 0; k < t->load; k++) { /* another order: the odd ones up, the even ones down */
        int i = k < odd ? 2 * k + 1 : 2 * (even - 1 - (k - odd));
        ck_assert_ptr_eq(rt_unstore(t->s, t->v[i]), t->v[i]);
        held += (size_t)i + 1;
        stored -= (size_t)i + 1;
        ck_assert_uint_eq(rt_held(), held);
        ck_assert_uint_eq(rt_shared_held(t->s), t->chunk + stored);
    }
    for (int i = 0; i < t->load; i++) {
        ck_assert_int_eq(t->v[i][i], (unsigned char)i);
        rt_free(t->v[i]);
        held -= (size_t)i + 1;
        ck_assert_uint_eq(rt_held(), held);
    }
}

START_TEST(outside_values_are_found_at_every_load_when_stores_and_unstores_move_them)
{
    static struct table_stores t;
    int64_t zero = 0;
    rt_set_strategy(rt_fixed_strategy(1024 * KIB));
    rt_init();
    t.s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 64 * KIB);
    t.chunk = rt_shared_held(t.s);
    for (t.load = 0; t.load <= TABLE_MAX; t.load++) {
        size_t held = 0;
        for (int i = 0; i < t.load; i++) {
            t.v[i] = rt_alloc_outside((size_t)i + 1);
            memset(t.v[i], i, (size_t)i + 1);
            held += (size_t)i + 1;
        }
        ck_assert_uint_eq(rt_held(), held);
        ck_assert_int_eq(rt_update(t.s, stores_them_all, &t), RT_OK);
        ck_assert_uint_eq(rt_shared_held(t.s), t.chunk + held);
        ck_assert_int_eq(rt_update(t.s, unstores_them_all, &t), RT_OK);
        ck_assert_uint_eq(rt_held(), 0);
        ck_assert_uint_eq(rt_shared_held(t.s), t.chunk);
        ck_assert(!rt_poisoned(t.s));
    }
    rt_shared_free(t.s);
}
END_TEST

START_TEST(outside_values_stay_found_when_deletions_and_insertions_interleave)
{
    unsigned char *v[200];
    size_t bytes[200], held = 0;
    int live = 0, total = 0;

    rt_set_strategy(rt_fixed_strategy(1024 * KIB));
    rt_init();
    /* waves: insert 30, free every other live one, so the table holds
    ** entries that probed past slots now empty */
    for (int wave = 0; wave < 6; wave++) {
        for (int i = 0; i < 30; i++, total++) {
            bytes[total] = (size_t)(total % 50) + 1;
            v[total] = rt_alloc_outside(bytes[total]);
            memset(v[total], total, bytes[total]);
            held += bytes[total];
            live++;
        }
        ck_assert_uint_eq(rt_held(), held);
        for (int i = 0; i < total; i += 2)
            if (v[i] != NULL) {
                unsigned char *r = rt_realloc(v[i], bytes[i] + 7); /* found, grown */
                held += 7;
                ck_assert_uint_eq(rt_held(), held);
                ck_assert_int_eq(r[bytes[i] - 1], (unsigned char)i);
                rt_free(r);
                held -= bytes[i] + 7;
                v[i] = NULL;
                live--;
                ck_assert_uint_eq(rt_held(), held);
            }
    }
    for (int i = 0; i < total; i++)
        if (v[i] != NULL) {
            ck_assert_ptr_eq(rt_hand_over(v[i]), v[i]);
            free(v[i]);
            held -= bytes[i];
            live--;
            ck_assert_uint_eq(rt_held(), held);
        }
    ck_assert_int_eq(live, 0);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* ---- channels: empty, full and closed, waiters on either side ---------- */

/* A task that runs one job at a time for the test's thread and reports
** its rt_held() after each. */
struct agent {
    pthread_mutex_t m;
    pthread_cond_t cv;
    void (*job)(struct agent *a);
    int state; /* 0 idle, 1 posted, 2 running, 3 done, -1 quit */
    pid_t tid;
    rt_task *task;
    size_t held;
    /* the job's arguments and results */
    rt_chan *c;
    void *value;
    size_t bytes;
    rt_status status;
    void *got;
};

static void *agent_main(void *arg)
{
    struct agent *a = arg;
    __atomic_store_n(&a->tid, gettid(), __ATOMIC_RELEASE);
    pthread_mutex_lock(&a->m);
    for (;;) {
        while (a->state != 1 && a->state != -1)
            pthread_cond_wait(&a->cv, &a->m);
        if (a->state == -1)
            break;
        a->state = 2;
        pthread_mutex_unlock(&a->m);
        a->job(a);
        size_t held = rt_held();
        pthread_mutex_lock(&a->m);
        a->held = held;
        a->state = 3;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->m);
    return NULL;
}

static void agent_start(struct agent *a)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->m, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->task = rt_spawn(agent_main, a);
    ck_assert_ptr_nonnull(a->task);
}

static void agent_post(struct agent *a, void (*job)(struct agent *))
{
    pthread_mutex_lock(&a->m);
    a->job = job;
    a->state = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->m);
}

static void agent_wait(struct agent *a)
{
    pthread_mutex_lock(&a->m);
    while (a->state != 3)
        pthread_cond_wait(&a->cv, &a->m);
    a->state = 0;
    pthread_mutex_unlock(&a->m);
}

static void agent_do(struct agent *a, void (*job)(struct agent *))
{
    agent_post(a, job);
    agent_wait(a);
}

/* Waits until the agent's job sleeps (in a channel's wait): its state is
** "running" and its thread is asleep. */
static void agent_wait_blocked(struct agent *a)
{
    for (;;) {
        pthread_mutex_lock(&a->m);
        int state = a->state;
        pthread_mutex_unlock(&a->m);
        ck_assert_int_ne(state, 3); /* the job finished: it did not block */
        if (state == 2)
            break;
        sched_yield();
    }
    thread_wait_asleep(__atomic_load_n(&a->tid, __ATOMIC_ACQUIRE));
}

static void agent_stop(struct agent *a)
{
    pthread_mutex_lock(&a->m);
    a->state = -1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->m);
    ck_assert_int_eq(rt_join(a->task, NULL), RT_OK);
    pthread_mutex_destroy(&a->m);
    pthread_cond_destroy(&a->cv);
}

static void job_nothing(struct agent *a)
{
    (void)a;
}

static void job_recv(struct agent *a)
{
    a->got = rt_recv(a->c);
}

static void job_free_got(struct agent *a)
{
    rt_free(a->got);
    a->got = NULL;
}

static void job_make(struct agent *a)
{
    a->value = rt_alloc_outside(a->bytes);
    memset(a->value, (int)(a->bytes & 0xff), a->bytes);
}

static void job_send(struct agent *a)
{
    a->status = rt_send(a->c, a->value);
}

static int reads_byte(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

START_TEST(a_receiver_waiting_on_an_empty_channel_gets_the_value_and_its_bytes)
{
    struct agent r1, r2;
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    rt_init();
    agent_start(&r1);
    agent_start(&r2);
    rt_chan *c = r1.c = r2.c = rt_chan_new(1);
    agent_post(&r1, job_recv);
    agent_post(&r2, job_recv);
    agent_wait_blocked(&r1);
    agent_wait_blocked(&r2);
    unsigned char *v = rt_alloc_outside(300), *w = rt_alloc_outside(77);
    memset(v, 3, 300);
    memset(w, 7, 77);
    ck_assert_uint_eq(rt_held(), 377);
    ck_assert_int_eq(rt_send(c, v), RT_OK);
    /* one receiver wakes with it; which one is the scheduler's */
    struct agent *got, *other;
    for (;;) {
        pthread_mutex_lock(&r1.m);
        int s1 = r1.state;
        pthread_mutex_unlock(&r1.m);
        pthread_mutex_lock(&r2.m);
        int s2 = r2.state;
        pthread_mutex_unlock(&r2.m);
        if (s1 == 3 || s2 == 3) {
            got = s1 == 3 ? &r1 : &r2;
            other = s1 == 3 ? &r2 : &r1;
            break;
        }
        sched_yield();
    }
    agent_wait(got);
    ck_assert_ptr_eq(got->got, v);
    ck_assert_uint_eq(got->held, 300);
    ck_assert_uint_eq(rt_held(), 77); /* the sender no longer counts it */
    ck_assert(reads_byte(got->got, 300, 3));
    /* the other still waits; the second value goes to it */
    agent_wait_blocked(other);
    ck_assert_int_eq(rt_send(c, w), RT_OK);
    agent_wait(other);
    ck_assert_ptr_eq(other->got, w);
    ck_assert_uint_eq(other->held, 77);
    ck_assert_uint_eq(rt_held(), 0);
    agent_do(got, job_free_got);
    ck_assert_uint_eq(got->held, 0);
    agent_do(other, job_free_got);
    ck_assert_uint_eq(other->held, 0);
    agent_stop(&r1);
    agent_stop(&r2);
    rt_chan_free(c);
}
END_TEST

/* A sender blocked on a full channel of `cap` slots: the values count
** against it until each is received, then against the receiver. */
static void full_channel(size_t cap)
{
    struct agent s;
    size_t sent = 0, recvd = 0;
    void *v[8];
    agent_start(&s);
    rt_chan *c = s.c = rt_chan_new(cap);
    for (size_t i = 0; i < cap; i++) {
        s.bytes = 100 + i;
        agent_do(&s, job_make);
        v[i] = s.value;
        agent_do(&s, job_send);
        ck_assert_int_eq(s.status, RT_OK);
        sent += 100 + i;
        ck_assert_uint_eq(s.held, sent); /* queued: still the sender's */
    }
    s.bytes = 100 + cap;
    agent_do(&s, job_make);
    v[cap] = s.value;
    sent += 100 + cap;
    ck_assert_uint_eq(s.held, sent);
    agent_post(&s, job_send);
    agent_wait_blocked(&s); /* full: waits for room */
    ck_assert_uint_eq(rt_held(), 0);
    for (size_t i = 0; i <= cap; i++) {
        unsigned char *got = rt_recv(c);
        ck_assert_ptr_eq(got, v[i]);
        recvd += 100 + i;
        ck_assert_uint_eq(rt_held(), recvd);
        ck_assert(reads_byte(got, 100 + i, (unsigned char)(100 + i)));
        if (i == 0) {
            agent_wait(&s); /* room made: the blocked send went in */
            ck_assert_int_eq(s.status, RT_OK);
        }
        agent_do(&s, job_nothing);
        ck_assert_uint_eq(s.held, sent - recvd);
    }
    for (size_t i = 0; i <= cap; i++)
        rt_free(v[i]);
    ck_assert_uint_eq(rt_held(), 0);
    agent_stop(&s);
    rt_chan_free(c);
}

START_TEST(a_sender_waiting_on_a_full_channel_sends_when_room_is_made)
{
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    rt_init();
    full_channel(1);
    full_channel(3);
}
END_TEST

START_TEST(closing_wakes_a_waiting_sender_and_a_waiting_receiver)
{
    struct agent s, r;
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    rt_init();
    agent_start(&s);
    agent_start(&r);
    rt_chan *full = s.c = rt_chan_new(1), *empty = r.c = rt_chan_new(2);
    unsigned char *queued = rt_alloc_outside(40);
    memset(queued, 40, 40);
    ck_assert_int_eq(rt_send(full, queued), RT_OK);
    s.bytes = 60;
    agent_do(&s, job_make);
    agent_post(&s, job_send);
    agent_post(&r, job_recv);
    agent_wait_blocked(&s);
    agent_wait_blocked(&r);
    ck_assert_uint_eq(rt_held(), 40);
    rt_chan_close(full);
    rt_chan_close(empty);
    agent_wait(&s);
    agent_wait(&r);
    ck_assert_int_eq(s.status, RT_CLOSED);
    ck_assert_uint_eq(s.held, 60); /* the sender keeps it */
    ck_assert_ptr_null(r.got);
    ck_assert_uint_eq(r.held, 0);
    /* what was queued before the close is still received, once */
    ck_assert_ptr_eq(rt_recv(full), queued);
    ck_assert_uint_eq(rt_held(), 40);
    ck_assert_ptr_null(rt_recv(full));
    ck_assert_ptr_null(rt_recv(empty));
    /* a closed channel takes nothing, from either side */
    agent_do(&s, job_send);
    ck_assert_int_eq(s.status, RT_CLOSED);
    ck_assert_uint_eq(s.held, 60);
    rt_free(queued);
    ck_assert_uint_eq(rt_held(), 0);
    agent_stop(&s); /* frees the value it still holds */
    agent_stop(&r);
    rt_chan_free(full);
    rt_chan_free(empty);
}
END_TEST

/* ---- nested doors at every depth --------------------------------------- */

/* Doors nested 1, 2, 3, 5, 16 and 17 deep on values made in that order:
** level i an update in place of an RT_OWNED value when i is even, an
** rt_access of one when i is odd. rt_store works in any update of the
** value open in the task (refrt.h: "inside an open rt_update ... of s"),
** however deep the doors opened inside it; so at each level the task
** stores an outside value of 8 + j bytes into every value j <= i whose
** update is open, and allocates 24 bytes where the innermost door says
** (docs/poisoning.md: the update's value's block, the task's in an
** access). At every level rt_budget is the task's, rt_held the task's
** figure plus the accesses' allocations, and at the innermost each value's
** figure is exact: chunk + 32 + (depth - j) * (8 + j) for an updated one,
** its chunk for an accessed one. The doors then close (each level frees
** its allocation: the stores stay, nothing poisoned) or the innermost
** panics on a task (each updated value poisoned with what its doors left,
** the accessed ones untouched, the task's allocations gone with it). */
#define NEST_MAX 17

struct nest {
    rt_shared *v[NEST_MAX];
    int depth;
    bool panics;
    size_t chunk, held0;
};

static size_t nest_task_extra(int levels) /* the accesses' allocations, levels 0..levels-1 */
{
    return (size_t)(levels / 2) * 32;
}

static int nest_entered;

static void nest_enter(struct nest *n);

static void nest_in_update(void *value, void *ctx)
{
    (void)value;
    nest_enter(ctx);
}

static void nest_in_access(const void *value, void *ctx)
{
    (void)value;
    nest_enter(ctx);
}

static void nest_enter(struct nest *n)
{
    int i = nest_entered++;
    ck_assert_uint_eq(rt_budget(), 64 * KIB);
    ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i));
    char *p = rt_alloc(24);
    ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i + 1));
    for (int j = 0; j <= i; j += 2) {
        size_t f = rt_shared_held(n->v[j]);
        void *o = rt_alloc_outside((size_t)(8 + j));
        ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i + 1) + (size_t)(8 + j));
        ck_assert_int_eq(rt_store(n->v[j], o), RT_OK);
        ck_assert_uint_eq(rt_shared_held(n->v[j]), f + (size_t)(8 + j));
        ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i + 1));
    }
    if (i + 1 < n->depth) {
        rt_status st = (i + 1) % 2 == 0 ? rt_update(n->v[i + 1], nest_in_update, n)
                                        : rt_access(n->v[i + 1], nest_in_access, n);
        ck_assert_int_eq(st, RT_OK);
    } else {
        for (int j = 0; j < n->depth; j++) {
            size_t f = n->chunk;
            if (j % 2 == 0)
                f += 32 + (size_t)(n->depth - j) * (size_t)(8 + j);
            ck_assert_uint_eq(rt_shared_held(n->v[j]), f);
            ck_assert(!rt_poisoned(n->v[j]));
        }
        if (n->panics)
            rt_panic("at the innermost door");
    }
    ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i + 1));
    rt_free(p);
    ck_assert_uint_eq(rt_held(), n->held0 + nest_task_extra(i));
}

static void *nest_run(void *arg)
{
    struct nest *n = arg;
    n->held0 = rt_held();
    nest_entered = 0;
    ck_assert_int_eq(rt_update(n->v[0], nest_in_update, n), RT_OK);
    ck_assert_uint_eq(rt_held(), n->held0);
    return NULL;
}

START_TEST(stores_reach_every_open_update_at_every_depth_of_nested_doors)
{
    static const int depths[] = {1, 2, 3, 5, 16, 17};
    int64_t zero = 0;
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    rt_init();
    for (size_t k = 0; k < sizeof depths / sizeof *depths; k++)
        for (int mode = 0; mode < 3; mode++) { /* on main, on a task, a task that panics */
            static struct nest n;
            memset(&n, 0, sizeof n);
            n.depth = depths[k];
            n.panics = mode == 2;
            for (int j = 0; j < n.depth; j++)
                n.v[j] = rt_shared_new(RT_OWNED, sizeof zero, &zero, 1 * KIB);
            n.chunk = rt_shared_held(n.v[0]);
            ck_assert_uint_eq(n.chunk, 16);
            if (mode == 0)
                nest_run(&n);
            else
                ck_assert_int_eq(rt_join(rt_spawn(nest_run, &n), NULL),
                                 n.panics ? RT_PANICKED : RT_OK);
            ck_assert_int_eq(nest_entered, n.depth);
            for (int j = 0; j < n.depth; j++) {
                size_t f = n.chunk;
                if (j % 2 == 0)
                    f += (size_t)(n.depth - j) * (size_t)(8 + j) + (n.panics ? 32 : 0);
                ck_assert_uint_eq(rt_shared_held(n.v[j]), f);
                ck_assert(rt_poisoned(n.v[j]) == (n.panics && j % 2 == 0));
                rt_shared_free(n.v[j]);
            }
            ck_assert_uint_eq(rt_held(), 0);
        }
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("states");
    suite_add_test(s, the_cache_keeps_its_promises_at_every_depth_on_main);
    suite_add_test(s, the_cache_keeps_its_promises_at_every_depth_on_a_thread_and_a_task);
    suite_add_test(s, a_thread_end_frees_every_kept_chunk_at_every_depth);
    suite_add_test(s, regions_nest_at_every_depth_past_what_the_cache_holds);
    suite_add_test(s, closing_a_region_not_innermost_is_a_violation_at_every_depth);
    suite_add_test(s, closing_a_stale_copy_of_a_closed_region_is_rt_region_closes_violation_at_every_depth);
    suite_add_test(s, a_chunk_given_twice_on_top_is_a_violation_at_every_depth);
    suite_add_test(s, closing_a_region_not_innermost_is_a_violation_on_every_thread_at_every_depth);
    suite_add_test(s, a_task_or_a_thread_that_ends_with_a_region_open_is_a_violation);
    suite_add_test(s, a_close_clears_exactly_what_its_region_handed_out_at_every_depth_on_every_thread);
    suite_add_test(s, a_panic_closes_exactly_the_regions_open_at_every_depth_in_every_door);
    suite_add_test(s, stores_reach_every_open_update_at_every_depth_of_nested_doors);
    suite_add_test(s, the_block_is_reused_in_every_shape_of_its_free_lists);
    suite_add_test(s, freed_neighbours_merge_on_the_left_the_right_and_both_sides);
#if RT_TESTING
    suite_add_test(s, the_table_finds_every_entry_whatever_collides_at_every_load);
#endif
    suite_add_test(s, outside_values_are_found_at_every_load_of_their_table);
    suite_add_test(s, outside_values_stay_found_when_deletions_and_insertions_interleave);
    suite_add_test(s, outside_values_are_found_at_every_load_when_stores_and_unstores_move_them);
    suite_add_test(s, a_receiver_waiting_on_an_empty_channel_gets_the_value_and_its_bytes);
    suite_add_test(s, a_sender_waiting_on_a_full_channel_sends_when_room_is_made);
    suite_add_test(s, closing_wakes_a_waiting_sender_and_a_waiting_receiver);
    return s;
}
