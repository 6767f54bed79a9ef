/*
** prop_run.c: the interpreter and its reference model.
**
** The model is deliberately simple, so it is obviously right:
**
**  - every chunk the interpreter can see has a shadow: the runs of bytes
**    whose value is known, and the value. A fresh chunk from malloc knows
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
** bytes); an allocation's bytes must read its fill, and a region's whole
** chunk its fills when it is checked or closed; a thread must start with
** no chunk kept and free every chunk it used, cleared, when it ends.
**
** Every run starts and (on a correct runtime) ends with 16 chunks kept, so
** runs do not depend on each other (docs/fuzzing.md). One run at a time, on
** one thread: the runtime's chunk cache is per thread and the model is this
** file's static state.
*/
#define _GNU_SOURCE
#include "prop_int.h"
#include "prop_spans.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

volatile size_t *prop_progress;
int prop_checks_traps;
void (*prop_after_step)(size_t index);

/* An allocation or a fill that could need more runs than a chunk's model
** holds is skipped (its precondition: the model can follow it); a give
** adds at most one run, and SPAN_SLACK keeps room for it. */
#define SPAN_SLACK 4

/* The model of one chunk. */
struct chunk {
    unsigned char *base;     /* where the runtime put it */
    struct prop_spans known; /* its bytes whose value is known */
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
    unsigned threads; /* thread operations run so far */
    struct chunk shadows[MAX_SHADOWS];
    struct chunk *free_shadows;
    unsigned shadows_made; /* shadows[0..shadows_made) have been used */
    /* The run being checked, for reports. */
    struct prop_report *rep;
    size_t index;
    const struct prop_op *op;
} M;

/* ---- reports ------------------------------------------------------------ */

#define fail prop_fail

/* Records the first failure of the run: "op N (what): why". */
int prop_fail(const char *fmt, ...)
{
    struct prop_report *rep = M.rep;
    char what[320] = "teardown after the last operation";
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

/* A shadow for a chunk of which nothing is known yet. */
static struct chunk *shadow_new(unsigned char *base)
{
    struct chunk *c = M.free_shadows;

    if (c != NULL)
        M.free_shadows = c->next_free;
    else if (M.shadows_made < MAX_SHADOWS)
        c = &M.shadows[M.shadows_made++];
    else
        abort(); /* unreachable: every shadow is kept, a region's or a taken chunk's */
    c->base = base;
    c->known.n = 0;
    return c;
}

static void shadow_drop(struct chunk *c)
{
    c->known.n = 0;
    c->base = NULL;
    c->next_free = M.free_shadows;
    M.free_shadows = c;
}

/* Whether the model can follow one more allocation or fill of c. */
static int shadow_has_room(const struct chunk *c)
{
    return c->known.n + SPAN_SLACK <= PROP_MAX_SPANS;
}

/* Bytes [from, to) of c now read v. */
static void shadow_set(struct chunk *c, size_t from, size_t to, unsigned char v)
{
    prop_spans_set(&c->known, from, to, v);
}

/* Whether bytes [from, to) of p all read v: the first does, and each
** equals the next. This runs after most operations, and libc's memcmp
** reads many bytes a cycle. */
static int all_equal(const unsigned char *p, size_t from, size_t to, unsigned char v)
{
    if (from >= to)
        return 1;
    return p[from] == v && memcmp(p + from, p + from + 1, to - from - 1) == 0;
}

/* Whether the chunk reads what the model knows of it; why says when. */
static int shadow_check(const struct chunk *c, const char *why)
{
    for (unsigned k = 0; k < c->known.n; k++) {
        const struct prop_span *s = &c->known.s[k];
        if (all_equal(c->base, s->from, s->to, s->v))
            continue;
        for (size_t i = s->from; i < s->to; i++)
            if (c->base[i] != s->v)
                return fail("%s: byte %zu of chunk %p reads 0x%02x, the model expects 0x%02x",
                            why, i, (void *)c->base, c->base[i], s->v);
    }
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

int prop_region_passed(const unsigned char *base, size_t used)
{
    struct chunk *c;

    if (M.nkept > 0) {
        c = M.kept[M.nkept - 1];
        if (base != c->base)
            return fail("a region opened inside a door took chunk %p, the model expects %p, "
                        "the chunk given last (LIFO, %u kept)", (const void *)base,
                        (void *)c->base, M.nkept);
        M.nkept--;
    } else {
        if (chunk_is_live(base))
            return fail("a region opened inside a door took chunk %p, which the program still "
                        "holds (the model keeps no chunk, so it must be fresh)",
                        (const void *)base);
        c = shadow_new((unsigned char *)base);
    }
    /* The region's own bytes were cleared at its close: what the chunk
    ** read before the take is checked with the rest, once given back. */
    model_give(c, used);
    return shadow_check(c, "a chunk a region inside a door used, given back");
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

/* rt_region_alloc(region i, count, size, fill) where the model says it
** fits: bytes is count * size, which did not overflow. */
static int region_alloc_fits(unsigned i, size_t count, size_t size, size_t bytes, uint8_t fill)
{
    const size_t align = alignof(max_align_t);
    rt_region *r = &M.regions[i];
    unsigned char *p, *base = r->base;
    size_t at = (M.bump[i] + align - 1) & ~(align - 1);

    if (!shadow_has_room(M.region_chunk[i]))
        return 0;
    p = rt_region_alloc(r, count, size, fill);
    if (p != base + at)
        return fail("region %u (of %u open) allocated at %p, the model expects %p (bump %zu "
                    "rounded up to %zu)", i, M.depth, (void *)p, (void *)(base + at), M.bump[i],
                    align);
    if (r->base != base || r->bump != p + bytes)
        return fail("after allocating %zu bytes region %u has base %p bump %p, the model "
                    "expects %p and %p", bytes, i, (void *)r->base, (void *)r->bump,
                    (void *)base, (void *)(p + bytes));
    M.bump[i] = at + bytes;
    shadow_set(M.region_chunk[i], at, at + bytes, fill);
    /* The new bytes now; the earlier ones at the region's close or check
    ** (reading the whole chunk after every allocation would be quadratic). */
    if (!all_equal(base, at, at + bytes, fill))
        return fail("region %u allocated %zu bytes of fill 0x%02x at offset %zu, and they do "
                    "not all read it", i, bytes, fill, at);
    return 0;
}

static int op_region_alloc(const struct prop_op *op)
{
    const size_t align = alignof(max_align_t);
    size_t bytes = (size_t)op->x * op->y, at;
    unsigned i;

    if (M.depth == 0)
        return 0;
    i = region_pick(op->sel);
    at = (M.bump[i] + align - 1) & ~(align - 1);
    if (at > PROP_CHUNK_SIZE || bytes > PROP_CHUNK_SIZE - at)
        return 0; /* it would trap: a region never grows past its chunk */
    return region_alloc_fits(i, op->y, op->x, bytes, op->v);
}

/* The call must trap (SIGILL, the contract's out of room). A fork a trap
** would cost more than the rest of the run, so the trap is caught here:
** a handler for SIGILL, installed around the one call, jumps back. The
** runtime checks before it changes anything, so the region is as it was;
** if it is not, the run cannot go on (a trap ends a program, so none could
** see that) and says so. */
static sigjmp_buf trap_jump;

static void on_trap(int sig)
{
    (void)sig;
    siglongjmp(trap_jump, 1);
}

static int region_alloc_traps(unsigned i, size_t count, size_t size, size_t room)
{
    rt_region *r = &M.regions[i];
    unsigned char *base = r->base, *bump = r->bump;
    struct sigaction sa, old;
    volatile int trapped = 0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_trap;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGILL, &sa, &old) != 0)
        return fail("sigaction: %s", strerror(errno));
    if (sigsetjmp(trap_jump, 1) == 0)
        rt_region_alloc(r, count, size, 0xee);
    else
        trapped = 1;
    sigaction(SIGILL, &old, NULL);
    if (!trapped)
        return fail("region %u: rt_region_alloc(%zu, %zu) with %zu bytes left returned %s; it "
                    "must trap (SIGILL): count * size %s", i, count, size, room,
                    "instead of trapping",
                    count != 0 && size > SIZE_MAX / count ? "overflows" : "does not fit");
    if (r->base != base || r->bump != bump)
        return fail("region %u: rt_region_alloc(%zu, %zu) trapped after moving the region "
                    "(base %p bump %p, was %p %p): the run cannot go on", i, count, size,
                    (void *)r->base, (void *)r->bump, (void *)base, (void *)bump);
    return 0;
}

/* A count and a size at a boundary of region sel's state (x: which, y: k),
** from the model: the room left after the aligned bump -1, 0, +1; the
** alignment -1, 0; products that fit exactly or by one element too many,
** SIZE_MAX - k, products that overflow (to 0, or wrap) or just do not. A
** call that fits is checked as region_alloc's; one that must trap is made
** with the trap caught when the driver asks for it (prop_checks_traps),
** else skipped. */
static int op_region_edge(const struct prop_op *op)
{
    const size_t align = alignof(max_align_t), k = op->y, half = SIZE_MAX / 2;
    size_t at, room, count, size, bytes;
    unsigned i;

    if (M.depth == 0)
        return 0;
    i = region_pick(op->sel);
    at = (M.bump[i] + align - 1) & ~(align - 1);
    room = at <= PROP_CHUNK_SIZE ? PROP_CHUNK_SIZE - at : 0;
    switch (op->x % PROP_EDGES) {
    case 0: count = 0, size = 0; break;
    case 1: count = 1, size = 1; break;
    case 2: count = 1, size = align - 1; break;
    case 3: count = align, size = 1; break;
    case 4: count = 1, size = room > 0 ? room - 1 : 0; break;
    case 5: count = 1, size = room; break;                 /* exactly full */
    case 6: count = room + 1, size = 1; break;             /* one byte too many */
    case 7: count = room / align, size = align; break;     /* a product that fits exactly */
    case 8: count = room / align + 1, size = align; break; /* one element too many */
    case 9: count = 1, size = SIZE_MAX - k; break;
    case 10: count = SIZE_MAX - k, size = 1; break;
    case 11: count = 2, size = half + 1 + k % 1024; break; /* overflows, wraps to 2k */
    case 12: count = SIZE_MAX / align + 1, size = align; break; /* overflows to exactly 0 */
    case 13: count = 2, size = half; break;                /* SIZE_MAX - 1: no overflow */
    case 14: count = 0, size = SIZE_MAX - k; break;        /* nothing, however big */
    default: count = k % (room + 2), size = 1; break;      /* anything up to one past */
    }
    if (__builtin_mul_overflow(count, size, &bytes) || bytes > room)
        return prop_checks_traps ? region_alloc_traps(i, count, size, room) : 0;
    return region_alloc_fits(i, count, size, bytes, op->v);
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
    if (!shadow_has_room(c))
        return 0;
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

/* ---- threads ------------------------------------------------------------ */

/* The chunks a thread used, watched until they are freed. */
#define THREAD_MAX_CHUNKS 20
#define THREADS_A_RUN 1 /* a thread costs more than all the other operations of a run */

/* Pointers that must be freed by some moment (prop_int.h). */
#define WATCH_MAX 64

struct watched {
    const unsigned char *p;
    size_t used;   /* bytes [0, used) must read zero when it is freed */
    int freed, dirty;
};

int prop_sees_frees;
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watched watch[WATCH_MAX];
static unsigned nwatch;

void prop_note_free(void *p)
{
    pthread_mutex_lock(&watch_lock);
    for (unsigned i = 0; i < nwatch; i++)
        if (watch[i].p == p && !watch[i].freed) {
            watch[i].freed = 1;
            watch[i].dirty = !all_equal(p, 0, watch[i].used, 0);
        }
    pthread_mutex_unlock(&watch_lock);
}

void prop_watch_add(const void *p, size_t used)
{
    if (!prop_sees_frees)
        return;
    pthread_mutex_lock(&watch_lock);
    if (nwatch < WATCH_MAX) /* past it, a pointer goes unwatched: a check lost, not a false one */
        watch[nwatch++] = (struct watched){p, used, 0, 0};
    pthread_mutex_unlock(&watch_lock);
}

int prop_watch_verify(const char *what)
{
    int bad = 0;

    pthread_mutex_lock(&watch_lock);
    for (unsigned i = 0; i < nwatch && !bad; i++) {
        if (!watch[i].freed)
            bad = fail("%s: %p (%u of %u watched) was not freed", what, (const void *)watch[i].p,
                       i + 1, nwatch);
        else if (watch[i].dirty)
            bad = fail("%s: %p (%u of %u watched) was freed without its %zu bytes cleared", what,
                       (const void *)watch[i].p, i + 1, nwatch, watch[i].used);
    }
    nwatch = 0;
    pthread_mutex_unlock(&watch_lock);
    return bad;
}

struct thread_job {
    unsigned n;
    size_t used;
    unsigned char fill;
    unsigned kept_first, kept_last; /* rt_chunk_kept() on its way in and out */
    unsigned char *chunks[THREAD_MAX_CHUNKS];
    uintptr_t addr[THREAD_MAX_CHUNKS]; /* the same, to compare once they are freed */
};

/* A thread of its own: its cache starts empty, takes fresh chunks, keeps
** at most 16 of those it gives back, and frees them all when it ends. */
static void *thread_body(void *arg)
{
    struct thread_job *j = arg;

    j->kept_first = rt_chunk_kept();
    for (unsigned i = 0; i < j->n; i++) {
        j->chunks[i] = rt_chunk_take();
        j->addr[i] = (uintptr_t)j->chunks[i];
        memset(j->chunks[i], j->fill, j->used);
    }
    for (unsigned i = 0; i < j->n; i++)
        prop_watch_add(j->chunks[i], j->used);
    for (unsigned i = j->n; i-- > 0;)
        rt_chunk_give(j->chunks[i], j->chunks[i] + j->used);
    j->kept_last = rt_chunk_kept();
    return NULL;
}

static int op_thread(const struct prop_op *op)
{
    struct thread_job j = {1 + op->sel % THREAD_MAX_CHUNKS, op->x, op->v, 0, 0, {NULL}, {0}};
    unsigned kept_last = j.n < PROP_SLOTS_KEPT ? j.n : PROP_SLOTS_KEPT;
    pthread_t t;

    if (M.threads == THREADS_A_RUN)
        return 0;
    M.threads++;
    if (pthread_create(&t, NULL, thread_body, &j) != 0)
        return 0; /* no thread to be had: nothing to check */
    pthread_join(t, NULL);
    if (j.kept_first != 0)
        return fail("a new thread starts with %u chunks kept, not 0", j.kept_first);
    if (j.kept_last != kept_last)
        return fail("a thread that gave back %u chunks keeps %u, the model %u", j.n, j.kept_last,
                    kept_last);
    for (unsigned k = 0; k < j.n; k++) {
        for (unsigned i = 0; i < M.depth; i++)
            if ((uintptr_t)M.region_chunk[i]->base == j.addr[k])
                return fail("a thread took chunk %#lx, a region of the main thread's",
                            (unsigned long)j.addr[k]);
        for (unsigned i = 0; i < M.nraw; i++)
            if ((uintptr_t)M.raw[i]->base == j.addr[k])
                return fail("a thread took chunk %#lx, which the main thread holds",
                            (unsigned long)j.addr[k]);
        for (unsigned i = 0; i < M.nkept; i++)
            if ((uintptr_t)M.kept[i]->base == j.addr[k])
                return fail("a thread took chunk %#lx, which the main thread's cache keeps",
                            (unsigned long)j.addr[k]);
    }
    return prop_watch_verify("a chunk a thread used, when it ended");
}

static int step(const struct prop_op *op)
{
    int bad;

    switch (op->kind) {
    case PROP_REGION_OPEN: bad = op_region_open(); break;
    case PROP_REGION_ALLOC: bad = op_region_alloc(op); break;
    case PROP_REGION_EDGE: bad = op_region_edge(op); break;
    case PROP_REGION_CLOSE: bad = op_region_close(); break;
    case PROP_REGION_CHECK: bad = op_region_check(op); break;
    case PROP_CHUNK_TAKE: bad = op_chunk_take(); break;
    case PROP_CHUNK_FILL: bad = op_chunk_fill(op); break;
    case PROP_CHUNK_GIVE: bad = op_chunk_give(op); break;
    case PROP_CHUNK_CHECK: bad = op_chunk_check(op); break;
    case PROP_THREAD: bad = op_thread(op); break;
    default:
        bad = prop_task_step(op);
        if (bad < 0)
            bad = 0; /* a free slot */
        break;
    }
    return bad || check_kept() || prop_task_check();
}

/* ---- a run ----------------------------------------------------------------- */

/* Makes the cache hold 16 chunks, which the model knows by address and
** order only. Every run starts so and, on a correct runtime, ends so (a
** run gives back all it takes, and only a full cache frees), so a fuzzer's
** inputs neither depend on each other nor pay a malloc and a free of 64 KiB
** for each chunk they use. */
static void cache_fill(void)
{
    void *c[PROP_SLOTS_KEPT];

    for (int i = 0; i < 64 && rt_chunk_kept() > 0; i++)
        free(rt_chunk_take()); /* whatever a failed run left */
    for (unsigned i = 0; i < PROP_SLOTS_KEPT; i++)
        c[i] = rt_chunk_take();
    for (unsigned i = 0; i < PROP_SLOTS_KEPT; i++) {
        rt_chunk_give(c[i], c[i]);
        M.kept[i] = shadow_new(c[i]);
    }
    M.nkept = PROP_SLOTS_KEPT;
}

void prop_prepare(void)
{
    static int prepared;

    if (prepared)
        return;
    prepared = 1;
#ifdef M_TRIM_THRESHOLD
    /* Chunks past the 16 kept are malloc'ed and freed in every run that
    ** nests deeper: without this glibc would give the top of its heap back
    ** to the kernel and take it again each time (seed 000 §1), and a
    ** fuzzer would measure brk, not the runtime. */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_TOP_PAD, 4 << 20);
#endif
    rt_init();
    cache_fill();
}

static void begin(struct prop_report *rep)
{
    prop_prepare();
    rep->failed = 0;
    rep->op = 0;
    rep->msg[0] = '\0';
    M.rep = rep;
    M.index = 0;
    M.op = NULL;
    M.threads = 0;
    /* What an earlier run left in the kept chunks is forgotten, so that a
    ** run's checks and paths depend on its own operations only. */
    for (unsigned i = 0; i < M.nkept; i++)
        M.kept[i]->known.n = 0;
    prop_task_begin();
}

/* The checked teardown: closes every region and gives every chunk back,
** then reads each chunk the cache keeps (its bytes must be what the model
** knows: zero wherever this run used it). */
static int end_checked(void)
{
    M.op = NULL;
    if (prop_task_end_checked())
        return 1;
    while (M.depth > 0)
        if (op_region_close() || check_kept())
            return 1;
    while (M.nraw > 0) {
        /* Given up to the last byte the program wrote: all of it cleared. */
        size_t hi = prop_spans_end(&M.raw[M.nraw - 1]->known);
        struct prop_op give = {PROP_CHUNK_GIVE, (uint8_t)(M.nraw - 1),
                               (uint16_t)(hi > 0xffff ? 0xffff : hi), (uint16_t)(hi > 0xffff), 0};
        if (op_chunk_give(&give) || check_kept())
            return 1;
    }
    for (unsigned i = 0; i < M.nkept; i++)
        if (shadow_check(M.kept[i], "a chunk the cache keeps shows bytes it should not"))
            return 1;
    return 0;
}

/* After a failure: gives back what the run holds without checking and
** starts the cache afresh, so a next run in this process can start (the
** runtime may be the broken one). */
static void end_unchecked(void)
{
    prop_task_end_unchecked();
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
    for (unsigned i = 0; i < M.shadows_made; i++) {
        M.shadows[i].known.n = 0;
        M.shadows[i].base = NULL;
        M.shadows[i].next_free = M.free_shadows;
        M.free_shadows = &M.shadows[i];
    }
    cache_fill();
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
