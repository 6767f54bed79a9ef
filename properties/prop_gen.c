/*
** prop_gen.c: sequences from a seed, and the shrinker.
**
** The generator draws arguments from the values where the runtime has
** boundaries (0, 1, alignment, 16 and 17 chunks, a chunk filled exactly)
** more often than uniformly, and each profile leans towards the operations
** one property needs. The shrinker is generic: it knows operations only as
** five fields, and asks a predicate whether a smaller sequence still fails.
*/
#include "prop.h"

#include <stdlib.h>
#include <string.h>

const char *const prop_profile_names[PROP_PROFILES] = {
    [PROP_MIXED] = "mixed",
    [PROP_FILLS] = "fills",
    [PROP_REUSE] = "reuse",
    [PROP_DEEP] = "deep",
    [PROP_HELD] = "held",
    [PROP_PANICS] = "panics",
    [PROP_CHANNELS] = "channels",
    [PROP_DOORS] = "doors",
    [PROP_BUILDS] = "builds",
};

/* splitmix64: small, and every seed gives a different stream. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static unsigned below(uint64_t *s, unsigned n)
{
    return (unsigned)(next(s) % n);
}

/* An allocation's element size: boundaries first. */
static uint16_t pick_size(uint64_t *s)
{
    static const uint16_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 24, 100, 1000, 4096, 32768};
    switch (below(s, 4)) {
    case 0: return (uint16_t)below(s, 64);
    case 1: return (uint16_t)below(s, 2048);
    default: return sizes[below(s, sizeof sizes / sizeof sizes[0])];
    }
}

static uint16_t pick_count(uint64_t *s)
{
    static const uint16_t counts[] = {0, 1, 1, 1, 1, 2, 2, 3, 4, 8};
    return counts[below(s, sizeof counts / sizeof counts[0])];
}

/* A fill byte: zero now and then, since a zero fill must not pass for a
** cleared byte nor hide one. */
static uint8_t pick_fill(uint64_t *s)
{
    return below(s, 8) == 0 ? 0 : (uint8_t)(1 + below(s, 255));
}

static uint8_t pick_sel(uint64_t *s)
{
    return below(s, 4) == 0 ? (uint8_t)below(s, 256) : (uint8_t)below(s, 3);
}

static struct prop_op op_of(uint8_t kind)
{
    struct prop_op op = {kind, 0, 0, 0, 0};
    return op;
}

static struct prop_op gen_alloc(uint64_t *s)
{
    struct prop_op op = op_of(PROP_REGION_ALLOC);
    op.sel = pick_sel(s);
    op.v = pick_fill(s);
    switch (below(s, 10)) {
    case 0: /* exactly a whole chunk, when the region is empty */
        op.x = 32768, op.y = 2;
        break;
    case 1: /* most of one */
        op.x = (uint16_t)(65536 - 16 * (1 + below(s, 4))), op.y = 1;
        break;
    default:
        op.x = pick_size(s), op.y = pick_count(s);
        break;
    }
    return op;
}

/* A count and a size at a boundary of the region's state (prop_run.c
** draws them from the model): which boundary, and a small distance k. */
static struct prop_op gen_edge(uint64_t *s)
{
    struct prop_op op = op_of(PROP_REGION_EDGE);
    op.sel = pick_sel(s);
    op.x = (uint16_t)below(s, PROP_EDGES);
    op.y = below(s, 2) ? (uint16_t)below(s, 4) : (uint16_t)below(s, 65536);
    op.v = pick_fill(s);
    return op;
}

static struct prop_op gen_fill(uint64_t *s)
{
    struct prop_op op = op_of(PROP_CHUNK_FILL);
    op.sel = pick_sel(s);
    op.x = below(s, 3) == 0 ? 0 : (uint16_t)below(s, 65536);
    op.y = below(s, 4) == 0 ? 65535 : (uint16_t)below(s, 4096);
    op.v = pick_fill(s);
    return op;
}

static struct prop_op gen_give(uint64_t *s)
{
    struct prop_op op = op_of(PROP_CHUNK_GIVE);
    op.sel = pick_sel(s);
    switch (below(s, 4)) {
    case 0: op.x = 65535, op.y = 1; break; /* the whole chunk */
    case 1: op.x = 0, op.y = 0; break;     /* nothing used */
    default: op.x = (uint16_t)below(s, 65536), op.y = (uint16_t)below(s, 64); break;
    }
    return op;
}

/* ---- tasks, outside values, channels, doors ---------------------------- */

/* A size for a task's value: small mostly, now and then a few KiB. */
static uint16_t pick_bytes(uint64_t *s)
{
    switch (below(s, 8)) {
    case 0: return (uint16_t)below(s, 8192);
    case 1: case 2: return pick_size(s);
    default: return (uint16_t)below(s, 600);
    }
}

static struct prop_op gen_spawn(uint64_t *s)
{
    struct prop_op op = op_of(PROP_SPAWN);
    /* a block of 512 * (1 + x % 128) bytes: small ones, where budgets bind;
    ** now and then the default strategy's */
    op.x = below(s, 3) == 0 ? (uint16_t)below(s, 128) : (uint16_t)below(s, 16);
    op.sel = below(s, 16) == 0;
    return op;
}

static struct prop_op gen_alloc_task(uint64_t *s)
{
    struct prop_op op = op_of(PROP_ALLOC);
    op.x = pick_bytes(s);
    op.v = pick_fill(s);
    switch (below(s, 12)) {
    case 0: op.sel = 0x40; break; /* the budget exactly full */
    case 1: op.sel = 0x80; break; /* a chunk more than it has left */
    default: break;
    }
    return op;
}

static struct prop_op gen_value_op(uint64_t *s)
{
    struct prop_op op;
    switch (below(s, 12)) {
    case 0: case 1: case 2: return gen_alloc_task(s);
    case 3:
        op = op_of(PROP_REALLOC);
        op.sel = (uint8_t)below(s, 16), op.x = pick_bytes(s), op.v = pick_fill(s);
        return op;
    case 4: case 5:
        op = op_of(PROP_FREE);
        op.sel = (uint8_t)below(s, 16);
        return op;
    case 6: case 7:
        op = op_of(PROP_OUTSIDE);
        op.x = pick_bytes(s), op.v = pick_fill(s);
        if (below(s, 10) == 0)
            op.sel = 0x80;
        return op;
    case 8:
        op = op_of(PROP_CLONE);
        op.sel = (uint8_t)below(s, 16);
        return op;
    case 9:
        op = op_of(PROP_HAND_OVER);
        op.sel = (uint8_t)below(s, 8);
        op.sel |= (uint8_t)(below(s, 6) == 0 ? 0x80 : 0);
        return op;
    default:
        op = op_of(PROP_FREE);
        op.sel = (uint8_t)below(s, 16);
        return op;
    }
}

static struct prop_op gen_chan_op(uint64_t *s)
{
    struct prop_op op;
    switch (below(s, 10)) {
    case 0: case 1: case 2: case 3:
        op = op_of(PROP_SEND);
        op.sel = (uint8_t)below(s, 8);
        op.sel |= (uint8_t)(below(s, 10) == 0 ? 0x80 : 0);
        break;
    case 4: case 5: case 6: case 7:
        op = op_of(PROP_RECV);
        break;
    case 8:
        op = op_of(PROP_CLOSE);
        if (below(s, 3) != 0)
            return gen_value_op(s);
        break;
    default:
        op = op_of(PROP_OUTSIDE);
        op.x = pick_bytes(s), op.v = pick_fill(s);
        return op;
    }
    op.y = (uint16_t)below(s, 2);
    return op;
}

/* What a door's fn does besides its allocation, drawn in one order for
** every door (update, update_all, access, get): its allocation an outside
** value or a block value, a region, a send and a receive, a nested door. */
static void door_fn_args(uint64_t *s, struct prop_op *op)
{
    if (below(s, 3) == 0) /* the door's allocation an outside value: cloned, grown, handed over */
        op->y |= (uint16_t)(0x8000 | below(s, 8) << 12);
    else if (below(s, 3) == 0) /* a block value: its hand-over refused */
        op->y |= 0x1000;
    if (below(s, 4) == 0) /* fn works in a region (the spawned task) */
        op->x |= 0x8000;
    if (below(s, 4) == 0) /* fn sends its outside value, receives one */
        op->x |= (uint16_t)(below(s, 4) << 13);
    if (below(s, 4) == 0) /* fn opens a door on a value made later */
        op->x |= 0x1000;
    /* Drawn after the rest, so that the draws above stay as they were. */
    if (!(op->y & 0x8000) && below(s, 3) == 0) /* the block value grown */
        op->y |= 0x4000;
    if (op->x & 0x1000) { /* that door's kind; the door's panic inside it */
        op->y |= (uint16_t)(below(s, 4) << 8);
        op->y |= (uint16_t)(below(s, 2) << 7);
    }
}

/* A shared value: sel bits 0, 1 RT_OWNED, supervised; bits 2 to 7 what
** build allocates; and what build does besides (prop.h). */
static struct prop_op gen_shared(uint64_t *s)
{
    struct prop_op op = op_of(PROP_SHARED);

    op.sel = (uint8_t)below(s, 4), op.x = (uint16_t)below(s, 64);
    if (below(s, 2) == 0)
        op.sel |= (uint8_t)(below(s, 64) << 2);
    op.y = (uint16_t)(below(s, 2) ? below(s, 256) : below(s, 4096));
    if (below(s, 8) == 0) /* the first build panics (the spawned task only) */
        op.y |= 0x8000;
    if (below(s, 3) == 0) /* build's allocation an outside value */
        op.y |= 0x4000;
    op.v = pick_fill(s);
    /* What build does besides: its allocation cloned (an outside one),
    ** handed over, grown, sent; a receive; a region; a nested door
    ** (in rebuilds), its kind, the build's panic inside it. */
    if (below(s, 4) == 0)
        op.y |= 0x2000;
    if (below(s, 4) == 0)
        op.y |= 0x1000;
    for (unsigned bit = 6; bit <= 9; bit++) /* one statement a draw: they stay in order */
        if (below(s, 4) == 0)
            op.x |= (uint16_t)(1u << bit);
    if (below(s, 3) == 0) {
        op.x |= (uint16_t)(0x400 | below(s, 4) << 11);
        op.x |= (uint16_t)(below(s, 2) << 13);
    }
    return op;
}

static struct prop_op gen_door_op(uint64_t *s)
{
    struct prop_op op;
    switch (below(s, 10)) {
    case 0: case 1:
        return gen_shared(s);
    case 2: case 3: case 4:
        op = op_of(PROP_UPDATE);
        op.sel = (uint8_t)below(s, 16);
        op.x = below(s, 2) ? 0 : (uint16_t)(1 + pick_bytes(s) % 4095);
        /* panics, a build that panics, a store, an unstore; which values */
        op.y = (uint16_t)(below(s, 3) == 0 ? below(s, 4) : 0);
        op.y |= (uint16_t)(below(s, 3) == 0 ? 4 : 0);
        op.y |= (uint16_t)(below(s, 4) == 0 ? 8 : 0);
        op.y |= (uint16_t)(below(s, 8) << 4);
        door_fn_args(s, &op);
        op.v = pick_fill(s);
        return op;
    case 5: case 6:
        op = op_of(PROP_UPDATE_ALL);
        break;
    case 7:
        op = op_of(PROP_ACCESS);
        break;
    default:
        op = op_of(PROP_GET);
        break;
    }
    op.sel = (uint8_t)below(s, 16);
    op.x = below(s, 2) ? 0 : (uint16_t)(1 + pick_bytes(s) % 4095);
    op.y = (uint16_t)(below(s, 3) == 0 ? below(s, 4) : 0);
    door_fn_args(s, &op);
    if (op.kind == PROP_UPDATE_ALL) { /* a store, an unstore; which values; into which */
        op.y |= (uint16_t)(below(s, 3) == 0 ? 4 : 0);
        op.y |= (uint16_t)(below(s, 4) == 0 ? 8 : 0);
        op.y |= (uint16_t)(below(s, 8) << 4);
        op.y |= (uint16_t)(below(s, 2) ? 0x800 : 0);
    }
    op.v = pick_fill(s);
    return op;
}

/* A task's end: a panic (maybe in a region), or a join. */
static struct prop_op gen_end(uint64_t *s)
{
    struct prop_op op;
    if (below(s, 2) == 0) {
        op = op_of(PROP_PANIC);
        op.sel = (uint8_t)below(s, 2), op.x = pick_size(s), op.v = pick_fill(s);
    } else {
        op = op_of(PROP_JOIN);
        op.sel = (uint8_t)below(s, 16);
    }
    return op;
}

static struct prop_op gen_task_any(uint64_t *s)
{
    switch (below(s, 12)) {
    case 0: return gen_spawn(s);
    case 1: return gen_end(s);
    case 2: case 3: case 4: return gen_chan_op(s);
    case 5: case 6: case 7: return gen_door_op(s);
    default: return gen_value_op(s);
    }
}

static struct prop_op gen_any(uint64_t *s)
{
    struct prop_op op;
    switch (below(s, 24)) {
    case 0: case 1: return op_of(PROP_REGION_OPEN);
    case 2: case 3: return gen_alloc(s);
    case 4: return below(s, 2) ? gen_alloc(s) : gen_edge(s);
    case 5: case 6: return op_of(PROP_REGION_CLOSE);
    case 7: op = op_of(PROP_REGION_CHECK); op.sel = pick_sel(s); return op;
    case 8: case 9: return op_of(PROP_CHUNK_TAKE);
    case 10: case 11: return gen_fill(s);
    case 12: case 13: return gen_give(s);
    case 14: op = op_of(PROP_CHUNK_CHECK); op.sel = pick_sel(s); return op;
    case 15: /* now and then: a thread is dear */
        if (below(s, 4) != 0)
            return op_of(PROP_REGION_CHECK);
        op = op_of(PROP_THREAD);
        op.sel = (uint8_t)below(s, 256), op.x = pick_size(s), op.v = pick_fill(s);
        return op;
    case 16: /* a free slot must be skipped, whatever its arguments */
        op = op_of((uint8_t)(PROP_KINDS + below(s, PROP_SLOTS - PROP_KINDS)));
        op.sel = (uint8_t)below(s, 256), op.x = (uint16_t)below(s, 65536);
        return op;
    default:
        return gen_task_any(s);
    }
}

/* Appends op if there is room. */
#define PUSH(op) do { if (n < max) ops[n++] = (op); } while (0)

size_t prop_generate(uint64_t seed, enum prop_profile profile, struct prop_op *ops, size_t max)
{
    uint64_t s = seed;
    size_t n = 0, len = 1 + below(&s, 120);
    struct prop_op op;

    while (n < len && n < max) {
        switch (profile) {
        case PROP_FILLS:
            switch (below(&s, 10)) {
            case 0: PUSH(op_of(PROP_REGION_OPEN)); break;
            case 1: PUSH(op_of(PROP_REGION_CLOSE)); break;
            case 2: op = op_of(PROP_REGION_CHECK); op.sel = pick_sel(&s); PUSH(op); break;
            case 3: case 4: PUSH(gen_edge(&s)); break; /* empty, partly used, full */
            default: PUSH(gen_alloc(&s)); break;
            }
            break;
        case PROP_REUSE: {
            /* A region or a taken chunk used and given back, again and again. */
            unsigned uses = below(&s, 4);
            if (below(&s, 2) == 0) {
                PUSH(op_of(PROP_REGION_OPEN));
                for (unsigned u = 0; u < uses; u++)
                    PUSH(gen_alloc(&s));
                PUSH(op_of(PROP_REGION_CLOSE));
            } else {
                PUSH(op_of(PROP_CHUNK_TAKE));
                for (unsigned u = 0; u < uses; u++)
                    PUSH(gen_fill(&s));
                PUSH(gen_give(&s));
            }
            if (below(&s, 4) == 0)
                PUSH(gen_any(&s));
            break;
        }
        case PROP_DEEP: {
            /* Past the 16 kept: open or take 10 to 30, then unwind. */
            unsigned deep = 10 + below(&s, 21);
            uint8_t in = below(&s, 2) == 0 ? PROP_REGION_OPEN : PROP_CHUNK_TAKE;
            for (unsigned d = 0; d < deep; d++) {
                PUSH(op_of(in));
                if (below(&s, 4) == 0)
                    PUSH(in == PROP_REGION_OPEN ? gen_alloc(&s) : gen_fill(&s));
            }
            if (below(&s, 4) == 0) { /* a thread past 16 meanwhile */
                op = op_of(PROP_THREAD);
                op.sel = (uint8_t)(14 + below(&s, 6)), op.x = pick_size(&s), op.v = pick_fill(&s);
                PUSH(op);
            }
            for (unsigned d = 0; d < deep; d++)
                PUSH(in == PROP_REGION_OPEN ? op_of(PROP_REGION_CLOSE) : gen_give(&s));
            break;
        }
        case PROP_HELD:
            /* A task (or main's) allocating, reallocating and freeing near its budget. */
            if (below(&s, 16) == 0)
                PUSH(below(&s, 3) ? gen_spawn(&s) : gen_end(&s));
            else
                PUSH(below(&s, 8) == 0 ? gen_chan_op(&s) : gen_value_op(&s));
            break;
        case PROP_PANICS: {
            /* A task that holds values, sends some, and panics. */
            unsigned holds = below(&s, 8);
            PUSH(gen_spawn(&s));
            for (unsigned h = 0; h < holds; h++)
                PUSH(below(&s, 4) == 0 ? gen_task_any(&s) : gen_value_op(&s));
            if (below(&s, 3) == 0) { /* a door open when it panics */
                op = gen_door_op(&s);
                op.y |= 1;
                PUSH(op);
            }
            op = gen_end(&s);
            if (below(&s, 4) != 0 && op.kind == PROP_JOIN)
                op = op_of(PROP_PANIC), op.sel = (uint8_t)below(&s, 2), op.x = pick_size(&s),
                op.v = pick_fill(&s);
            PUSH(op);
            break;
        }
        case PROP_CHANNELS:
            /* Values sent by main, received by a task, sent back, joined. */
            switch (below(&s, 10)) {
            case 0: PUSH(gen_spawn(&s)); break;
            case 1: PUSH(gen_end(&s)); break;
            default: PUSH(gen_chan_op(&s)); break;
            }
            break;
        case PROP_DOORS:
            switch (below(&s, 12)) {
            case 0: PUSH(gen_spawn(&s)); break;
            case 1: PUSH(gen_end(&s)); break;
            case 2: PUSH(gen_value_op(&s)); break;
            default: PUSH(gen_door_op(&s)); break;
            }
            break;
        case PROP_BUILDS:
            /* Supervised values that the spawned task poisons and a later
            ** door rebuilds, with work for each build: outside values to
            ** store, values on the channels to receive. A spawn is skipped
            ** while a task runs, so spawns often mean a new task soon after
            ** one panicked: the rebuilds that may panic are a task's. */
            switch (below(&s, 12)) {
            case 0: case 1: PUSH(gen_spawn(&s)); break;
            case 2:
                op = gen_shared(&s);
                op.sel |= 2;
                /* each of build's work bits drawn again: builds that do more */
                op.x |= (uint16_t)(below(&s, 256) << 6);
                op.y |= (uint16_t)(below(&s, 4) << 12);
                PUSH(op);
                break;
            case 3: /* channel 1 fed for the builds to receive, channel 0 drained of what they send */
                switch (below(&s, 3)) {
                case 0: op = op_of(PROP_SEND), op.sel = (uint8_t)below(&s, 8), op.y = 1; break;
                case 1: op = op_of(PROP_RECV), op.y = 0; break;
                default: op = gen_chan_op(&s); break;
                }
                PUSH(op);
                break;
            case 4:
                /* now and then one a spawned task cannot take: sent, it
                ** panics the build that receives it */
                op = op_of(PROP_OUTSIDE);
                op.x = (uint16_t)(below(&s, 4) == 0 ? 2048 + below(&s, 6144) : below(&s, 600));
                op.v = pick_fill(&s);
                PUSH(op);
                break;
            default:
                op = gen_door_op(&s);
                if (op.kind == PROP_UPDATE || op.kind == PROP_UPDATE_ALL) {
                    if (below(&s, 3) == 0)
                        op.y |= 1; /* a panic: an RT_OWNED value poisoned, to be rebuilt */
                    if (below(&s, 4) == 0)
                        op.y |= 2; /* a rebuild's build that panics */
                    if (below(&s, 3) == 0)
                        op.y |= 4; /* a rebuild that stores */
                }
                PUSH(op);
                break;
            }
            break;
        default:
            PUSH(gen_any(&s));
            break;
        }
    }
    return n;
}

/* ---- shrinking ------------------------------------------------------------ */

struct shrink {
    struct prop_op *ops, *try;
    size_t n;
    prop_fails_fn fails;
    void *ctx;
    unsigned budget;
};

/* Whether try[0..n) fails, within the budget. */
static int still_fails(struct shrink *k, size_t n)
{
    if (k->budget == 0)
        return 0;
    k->budget--;
    return k->fails(k->try, n, k->ctx);
}

/* Drops runs of `width` operations wherever the rest still fails. */
static int drop_ops(struct shrink *k, size_t width)
{
    int changed = 0;

    for (size_t at = 0; at + width <= k->n;) {
        memcpy(k->try, k->ops, at * sizeof *k->ops);
        memcpy(k->try + at, k->ops + at + width, (k->n - at - width) * sizeof *k->ops);
        if (still_fails(k, k->n - width)) {
            k->n -= width;
            memcpy(k->ops, k->try, k->n * sizeof *k->ops);
            changed = 1;
        } else {
            at += width;
        }
    }
    return changed;
}

/* Field f of an operation: 0 sel, 1 x, 2 y, 3 v. */
static unsigned field_get(const struct prop_op *op, int f)
{
    return f == 0 ? op->sel : f == 1 ? op->x : f == 2 ? op->y : op->v;
}

static void field_set(struct prop_op *op, int f, unsigned v)
{
    if (f == 0) op->sel = (uint8_t)v;
    else if (f == 1) op->x = (uint16_t)v;
    else if (f == 2) op->y = (uint16_t)v;
    else op->v = (uint8_t)v;
}

/* Moves field f of operation i to the smallest value that still fails,
** by bisection between 0 and its value (failing is not always monotonic,
** so the result is a local minimum, which is enough for a reader). */
static int lower_field(struct shrink *k, size_t i, int f)
{
    unsigned lo = 0, hi = field_get(&k->ops[i], f);
    int changed = 0;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        memcpy(k->try, k->ops, k->n * sizeof *k->ops);
        field_set(&k->try[i], f, mid);
        if (still_fails(k, k->n)) {
            hi = mid;
            field_set(&k->ops[i], f, mid);
            changed = 1;
        } else {
            lo = mid + 1;
        }
    }
    return changed;
}

size_t prop_shrink(struct prop_op *ops, size_t n, prop_fails_fn fails, void *ctx,
                   unsigned budget)
{
    struct shrink k = {ops, malloc((n + 1) * sizeof *ops), n, fails, ctx, budget};
    int changed = 1;

    if (k.try == NULL)
        return n;
    while (changed && k.budget > 0) {
        changed = 0;
        for (size_t width = k.n > 1 ? k.n / 2 : k.n; width >= 1; width /= 2)
            changed |= drop_ops(&k, width);
        for (size_t i = 0; i < k.n; i++)
            for (int f = 0; f < 4; f++)
                changed |= lower_field(&k, i, f);
    }
    free(k.try);
    return k.n;
}
