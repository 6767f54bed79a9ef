/*
** prop_run.c: the interpreter and its reference model.
**
** The model is deliberately simple, so it is obviously right:
**
**  - every chunk the interpreter can see has a shadow: val[i] is what byte
**    i must read where known[i] is set. A fresh chunk from malloc knows
**    nothing; an allocation or a fill makes its bytes known; a give makes
**    [base, end) known zero (the runtime clears it);
**  - the chunks the thread keeps are a LIFO stack of at most 16 shadows:
**    a give pushes unless 16 are kept (then the chunk is freed and its
**    shadow forgotten), a take pops the chunk given last, or is fresh;
**  - a region is its chunk and its bump: an allocation of n bytes lands at
**    the bump rounded up to alignof(max_align_t), and fits only if it ends
**    within the chunk.
**
** After every operation the runtime's rt_chunk_kept() must equal the
** model's count (and never pass 16); a chunk taken back from the cache must
** read exactly what the model knows of it (so none of an earlier region's
** bytes); a region must read its own fills after each allocation.
**
** One run at a time, on one thread: the runtime's chunk cache is per
** thread and the model is this file's static state.
*/
#define _GNU_SOURCE
#include "prop.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

volatile size_t *prop_progress;
void (*prop_after_step)(size_t index);

/* The model of one chunk. */
struct chunk {
    unsigned char *base;  /* where the runtime put it */
    unsigned char *val;   /* what byte i must read where known[i] is 0xff */
    unsigned char *known; /* 0xff where the byte's value is known, else 0 */
    size_t hi;            /* no byte at or past hi is known */
    struct chunk *next_free;
};

/* Shadows are made once and reused: a run holds at most this many. */
#define MAX_SHADOWS (PROP_SLOTS_KEPT + PROP_MAX_DEPTH + PROP_MAX_RAW)

static struct {
    struct chunk *kept[PROP_SLOTS_KEPT]; /* kept[nkept - 1] was given last */
    unsigned nkept;
    rt_region regions[PROP_MAX_DEPTH]; /* regions[depth - 1] is innermost */
    struct chunk *region_chunk[PROP_MAX_DEPTH];
    size_t bump[PROP_MAX_DEPTH]; /* offset of the model's bump in its chunk */
    unsigned depth;
    struct chunk *raw[PROP_MAX_RAW]; /* taken with rt_chunk_take, in order */
    unsigned nraw;
    struct chunk shadows[MAX_SHADOWS];
    struct chunk *free_shadows;
    int shadows_made;
    /* The run being checked, for reports. */
    struct prop_report *rep;
    size_t index;
    const struct prop_op *op;
} M;

/* ---- reports ------------------------------------------------------------ */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Records the first failure of the run: "op N (what): why". */
static int fail(const char *fmt, ...)
{
    struct prop_report *rep = M.rep;
    char what[160] = "teardown after the last operation";
    size_t at;
    va_list ap;

    if (rep->failed)
        return 1;
    rep->failed = 1;
    rep->op = M.index;
    if (M.op != NULL)
        prop_describe(M.op, what, sizeof what);
    at = (size_t)snprintf(rep->msg, sizeof rep->msg, "op %zu (%s): ", M.index, what);
    if (at < sizeof rep->msg) {
        va_start(ap, fmt);
        vsnprintf(rep->msg + at, sizeof rep->msg - at, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* ---- shadows ------------------------------------------------------------ */

static void shadows_make(void)
{
    for (unsigned i = 0; i < MAX_SHADOWS; i++) {
        /* Twice the chunk size in one block, so the model's own mallocs are
        ** never mistaken for chunks by a shim that counts malloc(64 KiB). */
        unsigned char *mem = malloc(2 * (size_t)PROP_CHUNK_SIZE);
        if (mem == NULL)
            abort();
        M.shadows[i].val = mem;
        M.shadows[i].known = mem + PROP_CHUNK_SIZE;
        M.shadows[i].next_free = M.free_shadows;
        M.free_shadows = &M.shadows[i];
    }
    M.shadows_made = 1;
}

/* A shadow for a chunk of which nothing is known yet. */
static struct chunk *shadow_new(unsigned char *base)
{
    struct chunk *c = M.free_shadows;
    M.free_shadows = c->next_free;
    c->base = base;
    c->hi = 0;
    return c;
}

static void shadow_drop(struct chunk *c)
{
    memset(c->known, 0, c->hi);
    c->hi = 0;
    c->base = NULL;
    c->next_free = M.free_shadows;
    M.free_shadows = c;
}

static void shadow_set(struct chunk *c, size_t from, size_t to, unsigned char v)
{
    memset(c->val + from, v, to - from);
    memset(c->known + from, 0xff, to - from);
    if (to > c->hi)
        c->hi = to;
}

/* Whether the chunk reads what the model knows of it; why says when. */
static int shadow_check(const struct chunk *c, const char *why)
{
    uint64_t diff = 0;
    size_t words = c->hi / 8;

    /* Eight bytes a step: this runs after most operations. */
    for (size_t w = 0; w < words; w++) {
        uint64_t b, v, k;
        memcpy(&b, c->base + 8 * w, 8);
        memcpy(&v, c->val + 8 * w, 8);
        memcpy(&k, c->known + 8 * w, 8);
        diff |= (b ^ v) & k;
    }
    for (size_t i = 8 * words; i < c->hi; i++)
        diff |= (unsigned char)((c->base[i] ^ c->val[i]) & c->known[i]);
    if (diff == 0)
        return 0;
    for (size_t i = 0; i < c->hi; i++)
        if ((c->base[i] ^ c->val[i]) & c->known[i])
            return fail("%s: byte %zu of chunk %p reads 0x%02x, the model expects 0x%02x", why, i,
                        (void *)c->base, c->base[i], c->val[i]);
    return 0;
}

/* ---- the cache, as the model has it -------------------------------------- */

/* Whether p is a chunk the program holds now (a region's or a taken one). */
static int chunk_is_live(const unsigned char *p)
{
    for (unsigned i = 0; i < M.depth; i++)
        if (M.region_chunk[i]->base == p)
            return 1;
    for (unsigned i = 0; i < M.nraw; i++)
        if (M.raw[i]->base == p)
            return 1;
    return 0;
}

/* The runtime handed out p from a take; returns its shadow, or NULL after
** a failure. The model pops the chunk given last, if it keeps any. */
static struct chunk *model_take(unsigned char *p)
{
    struct chunk *c;

    if (p == NULL)
        return fail("take returned NULL"), NULL;
    if (M.nkept > 0) {
        c = M.kept[M.nkept - 1];
        if (p != c->base)
            return fail("take returned chunk %p, the model expects %p, the chunk given last "
                        "(LIFO, %u kept)", (void *)p, (void *)c->base, M.nkept), NULL;
        M.nkept--;
        if (shadow_check(c, "a chunk taken back from the cache shows bytes it should not"))
            return NULL;
        return c;
    }
    if (chunk_is_live(p))
        return fail("take returned chunk %p, which the program still holds (the model keeps "
                    "no chunk, so it must be fresh)", (void *)p), NULL;
    return shadow_new(p);
}

/* The program gave c back with [base, base + end): cleared, then kept
** unless 16 are kept already. */
static void model_give(struct chunk *c, size_t end)
{
    shadow_set(c, 0, end, 0);
    if (M.nkept < PROP_SLOTS_KEPT)
        M.kept[M.nkept++] = c;
    else
        shadow_drop(c);
}

static int check_kept(void)
{
    unsigned kept = rt_chunk_kept();

    if (kept > PROP_SLOTS_KEPT)
        return fail("rt_chunk_kept() is %u, more than %u", kept, PROP_SLOTS_KEPT);
    if (kept != M.nkept)
        return fail("rt_chunk_kept() is %u, the model keeps %u", kept, M.nkept);
    return 0;
}

/* ---- operations ---------------------------------------------------------- */

/* Region sel counted from the innermost; the caller checked depth > 0. */
static unsigned region_pick(uint8_t sel)
{
    return M.depth - 1 - sel % M.depth;
}

static int op_region_open(void)
{
    rt_region *r;
    struct chunk *c;

    if (M.depth == PROP_MAX_DEPTH)
        return 0;
    r = &M.regions[M.depth];
    rt_region_open(r);
    c = model_take(r->base);
    if (c == NULL) {
        rt_region_close(r); /* so the runtime's nesting stays as the model's */
        return 1;
    }
    M.region_chunk[M.depth] = c;
    M.bump[M.depth] = 0;
    M.depth++;
    if (r->bump != r->base)
        return fail("a region opened with bump %p, not at its base %p", (void *)r->bump,
                    (void *)r->base);
    return 0;
}

static int op_region_alloc(const struct prop_op *op)
{
    const size_t align = alignof(max_align_t);
    size_t bytes = (size_t)op->x * op->y, at;
    unsigned i;
    rt_region *r;
    unsigned char *p, *base;

    if (M.depth == 0)
        return 0;
    i = region_pick(op->sel);
    r = &M.regions[i];
    base = r->base;
    at = (M.bump[i] + align - 1) & ~(align - 1);
    if (at > PROP_CHUNK_SIZE || bytes > PROP_CHUNK_SIZE - at)
        return 0; /* it would trap: a region never grows past its chunk */
    p = rt_region_alloc(r, op->y, op->x, op->v);
    if (p != base + at)
        return fail("region %u (of %u open) allocated at %p, the model expects %p (bump %zu "
                    "rounded up to %zu)", i, M.depth, (void *)p, (void *)(base + at), M.bump[i],
                    align);
    if (r->base != base || r->bump != p + bytes)
        return fail("after allocating %zu bytes region %u has base %p bump %p, the model "
                    "expects %p and %p", bytes, i, (void *)r->base, (void *)r->bump,
                    (void *)base, (void *)(p + bytes));
    M.bump[i] = at + bytes;
    shadow_set(M.region_chunk[i], at, at + bytes, op->v);
    return shadow_check(M.region_chunk[i], "a region does not read its own fills");
}

static int op_region_close(void)
{
    rt_region *r;
    size_t used;

    if (M.depth == 0)
        return 0;
    r = &M.regions[M.depth - 1];
    if (shadow_check(M.region_chunk[M.depth - 1], "a region does not read its own fills"))
        return 1;
    used = (size_t)(r->bump - r->base);
    rt_region_close(r);
    if (r->base != NULL)
        return fail("a closed region still has base %p", (void *)r->base);
    M.depth--;
    model_give(M.region_chunk[M.depth], used);
    return 0;
}

static int op_region_check(const struct prop_op *op)
{
    if (M.depth == 0)
        return 0;
    return shadow_check(M.region_chunk[region_pick(op->sel)],
                        "a region does not read its own fills");
}

static int op_chunk_take(void)
{
    struct chunk *c;
    unsigned char *p;

    if (M.nraw == PROP_MAX_RAW)
        return 0;
    p = rt_chunk_take();
    c = model_take(p);
    if (c == NULL) {
        if (p != NULL)
            rt_chunk_give(p, p); /* not the model's: back to the runtime */
        return 1;
    }
    M.raw[M.nraw++] = c;
    return 0;
}

static int op_chunk_fill(const struct prop_op *op)
{
    struct chunk *c;
    size_t from = op->x, len = op->y;

    if (M.nraw == 0)
        return 0;
    c = M.raw[op->sel % M.nraw];
    if (len > PROP_CHUNK_SIZE - from)
        len = PROP_CHUNK_SIZE - from;
    memset(c->base + from, op->v, len);
    shadow_set(c, from, from + len, op->v);
    return 0;
}

static int op_chunk_give(const struct prop_op *op)
{
    struct chunk *c;
    unsigned i;
    size_t end = (size_t)op->x + op->y;

    if (M.nraw == 0)
        return 0;
    i = op->sel % M.nraw;
    c = M.raw[i];
    if (end > PROP_CHUNK_SIZE)
        end = PROP_CHUNK_SIZE;
    if (shadow_check(c, "a taken chunk does not read what the program wrote"))
        return 1;
    memmove(&M.raw[i], &M.raw[i + 1], (M.nraw - i - 1) * sizeof M.raw[0]);
    M.nraw--;
    rt_chunk_give(c->base, c->base + end);
    model_give(c, end);
    return 0;
}

static int op_chunk_check(const struct prop_op *op)
{
    if (M.nraw == 0)
        return 0;
    return shadow_check(M.raw[op->sel % M.nraw],
                        "a taken chunk does not read what the program wrote");
}

static int step(const struct prop_op *op)
{
    int bad;

    switch (op->kind) {
    case PROP_REGION_OPEN: bad = op_region_open(); break;
    case PROP_REGION_ALLOC: bad = op_region_alloc(op); break;
    case PROP_REGION_CLOSE: bad = op_region_close(); break;
    case PROP_REGION_CHECK: bad = op_region_check(op); break;
    case PROP_CHUNK_TAKE: bad = op_chunk_take(); break;
    case PROP_CHUNK_FILL: bad = op_chunk_fill(op); break;
    case PROP_CHUNK_GIVE: bad = op_chunk_give(op); break;
    case PROP_CHUNK_CHECK: bad = op_chunk_check(op); break;
    default: bad = 0; break; /* a free slot */
    }
    return bad || check_kept();
}

/* ---- a run ----------------------------------------------------------------- */

static void begin(struct prop_report *rep)
{
    rt_init();
    if (!M.shadows_made)
        shadows_make();
    rep->failed = 0;
    rep->op = 0;
    rep->msg[0] = '\0';
    M.rep = rep;
    M.index = 0;
    M.op = NULL;
    /* A cache left full by code outside the model (an earlier failed run)
    ** is emptied, so the model starts from what the runtime has. */
    for (int i = 0; i < 64 && rt_chunk_kept() > 0; i++)
        free(rt_chunk_take());
}

/* The checked teardown: the model gives everything back and takes every
** kept chunk once more, so each is read back after its clearing. */
static int end_checked(void)
{
    M.op = NULL;
    while (M.depth > 0)
        if (op_region_close() || check_kept())
            return 1;
    while (M.nraw > 0) {
        struct prop_op give = {PROP_CHUNK_GIVE, (uint8_t)(M.nraw - 1), 0xffff, 1, 0};
        if (op_chunk_give(&give) || check_kept())
            return 1;
    }
    while (M.nkept > 0) {
        struct chunk *c = model_take(rt_chunk_take());
        if (c == NULL)
            return 1;
        free(c->base);
        shadow_drop(c);
        if (check_kept())
            return 1;
    }
    return 0;
}

/* After a failure: gives back what the run holds without checking, so the
** next run in this process can start (the runtime may be the broken one). */
static void end_unchecked(void)
{
    while (M.depth > 0) {
        rt_region *r = &M.regions[--M.depth];
        if (r->base != NULL)
            rt_region_close(r);
    }
    while (M.nraw > 0) {
        struct chunk *c = M.raw[--M.nraw];
        rt_chunk_give(c->base, c->base + PROP_CHUNK_SIZE);
    }
    M.nkept = 0;
    M.free_shadows = NULL;
    for (unsigned i = 0; i < MAX_SHADOWS; i++) {
        memset(M.shadows[i].known, 0, PROP_CHUNK_SIZE);
        M.shadows[i].hi = 0;
        M.shadows[i].base = NULL;
        M.shadows[i].next_free = M.free_shadows;
        M.free_shadows = &M.shadows[i];
    }
    for (int i = 0; i < 64 && rt_chunk_kept() > 0; i++)
        free(rt_chunk_take());
}

static int finish(struct prop_report *rep, size_t n)
{
    M.index = n;
    if (!rep->failed)
        end_checked();
    if (rep->failed)
        end_unchecked();
    M.rep = NULL;
    return rep->failed;
}

int prop_run(const struct prop_op *ops, size_t n, struct prop_report *rep)
{
    begin(rep);
    for (size_t i = 0; i < n; i++) {
        M.index = i;
        M.op = &ops[i];
        if (prop_progress != NULL)
            *prop_progress = i;
        if (step(&ops[i]))
            return finish(rep, i);
        if (prop_after_step != NULL)
            prop_after_step(i);
    }
    return finish(rep, n);
}

int prop_run_bytes(const uint8_t *data, size_t size, struct prop_report *rep)
{
    size_t i = 0;

    begin(rep);
    for (size_t at = 0; at < size; at += PROP_RECORD, i++) {
        struct prop_op op = prop_decode_one(data + at, size - at);
        M.index = i;
        M.op = &op;
        if (prop_progress != NULL)
            *prop_progress = i;
        if (step(&op))
            return finish(rep, i);
        if (prop_after_step != NULL)
            prop_after_step(i);
    }
    M.op = NULL;
    return finish(rep, i);
}
