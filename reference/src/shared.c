/*
** shared.c: shared values, their doors and poisoning (seed 002: D5, D6,
** D9, D11; ADR-327 D1 to D3 for supervised values).
**
** A shared value is a lock, a kind and a state: a block of its own (D5),
** the value's bytes as the block's first chunk, and the outside values
** stored into it (D9), whose bytes its block counts. A door locks the
** values it opens, in one global order (the sequence number each value
** gets when it is made), and hangs a `struct door` on the task through the
** door hook of internal.h, so that
**
**   - inside an update of an RT_OWNED value, rt_alloc and rt_free use the
**     value's block; a full one panics the task in the door (D6);
**   - a panic anywhere inside the door calls door_unwind before the task's
**     memory goes: it poisons what D11 says, and releases the locks.
**
** D11 comes down to where fn works. An RT_COPY update works on a copy that
** is written back only when fn returns, so a panic leaves the old value
** whole and nothing needs poisoning. rt_update_all copies only when both
** values copy, and writes both copies back before either lock is released,
** so no other door ever sees one written and not the other. Everything
** else works in place, and a panic there may leave the value half changed:
** the value is poisoned (both values, in an update_all, because they were
** changed together). rt_access and rt_get cannot change the value, so they
** poison nothing. A door that has closed has written its change for good.
**
** A door on a poisoned value returns RT_POISONED without running fn; a
** supervised value is first rebuilt into a fresh state (new block, value
** zeroed, then `build` in a door of its own), the poisoned state is freed
** whole, and fn runs on the new value.
*/
#include "internal.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "costs.h"
#include "points.h"
#include "shared.h"
#include "task.h"

/* An outside value stored into a shared value, and the bytes its block is
** charged for it. */
struct stored {
    void *p;
    size_t bytes;
};

/* Everything a rebuild replaces. */
struct state {
    struct rt_block *block; /* NULL: no state yet (a value being built) */
    void *value;            /* the value's bytes, a chunk of block */
    struct stored *stored;  /* the outside values stored into it */
    size_t nstored, capstored;
};

struct rt_shared {
    /* First: at a non-zero offset, gcc 12 takes the atomic load of a mutant
    ** that reads a NULL value (the mutant schema's build) for a write past
    ** the end of an object, and -Werror stops the whole schema. */
    atomic_bool poisoned; /* written under the lock, read by rt_poisoned */
    pthread_mutex_t lock;
    unsigned long seq; /* lock order: values made earlier are locked first */
    rt_kind kind;
    size_t size, block_bytes;
    void (*build)(void *value, void *ctx); /* NULL: not supervised */
    void *ctx;
    struct state now;
};

RT_COST_SIZEOF(shared, struct rt_shared);
RT_COST_SIZEOF(stored, struct stored);

void (*rt__shared_between_writebacks)(rt_shared *first, rt_shared *second);

static atomic_ulong next_seq = 1;

#if RT_TESTING
/* Where it is, for the test that stops a thread at its step of it
** (check_interleave.c, with a hardware watchpoint). */
const void *const rt__shared_next_seq = &next_seq;
#endif

/* ---- states ------------------------------------------------------------ */

/* A fresh state: a block of block_bytes with a zeroed value of size bytes.
** fn names the caller when the size cannot fit (only at creation: a
** rebuild asks for what fitted before). */
static void state_make(struct state *st, size_t size, size_t block_bytes, const char *fn)
{
    memset(st, 0, sizeof *st);
    st->block = rt__block_new(block_bytes);
    if (st->block == NULL) {
        /* rt__block_new refuses a size of 2^36 or more once rounded down
        ** to 16 (the largest block is 2^36 - 16: its chunk's size must fit
        ** the header's 32 bits of granules), which, 2^36 being a multiple
        ** of 16, is block_bytes of 2^36 or more; any other NULL is its
        ** malloc failing */
        if (block_bytes >= ((size_t)1 << 36))
            rt__violation(fn, "block_bytes %zu is more than a block can be", block_bytes);
        rt__trap();
    }
    st->value = rt__block_alloc(st->block, size);
    if (st->value == NULL)
        rt__violation(fn, "a value of %zu bytes does not fit a block of %zu bytes", size,
                      block_bytes);
    memset(st->value, 0, size);
}

/* Frees the state whole: its stored values, then its block. The state is
** not used again (its value is freed, or replaced by another state). */
static void state_drop(struct state *st)
{
    for (size_t i = 0; i < st->nstored; i++)
        free(st->stored[i].p);
    free(st->stored);
    if (st->block != NULL)
        rt__block_delete(st->block);
}

static void stored_put(struct state *st, void *p, size_t bytes)
{
    if (st->nstored == st->capstored) {
        size_t cap = st->capstored != 0 ? st->capstored * 2 : 8;
        struct stored *s = realloc(st->stored, cap * sizeof *s);
        if (s == NULL)
            rt__trap();
        RT_COST_BYTES(RT_COST_BYTES_STORED, s);
        st->stored = s;
        st->capstored = cap;
    }
    st->stored[st->nstored++] = (struct stored){p, bytes};
}

/* The index of p among st's stored values, nstored if it is not one. */
static size_t stored_find(const struct state *st, const void *p)
{
    size_t i;
    for (i = 0; i < st->nstored; i++)
        if (st->stored[i].p == p)
            break;
    return i;
}

/* ---- doors ------------------------------------------------------------- */

enum door_what { DOOR_BUILD, DOOR_UPDATE, DOOR_ACCESS, DOOR_GET };

/* A copy an RT_COPY update works on: on the stack when it is small. p is
** NULL when the door made no copy, local.bytes or malloc's when it did. */
struct copy {
    void *p;
    union {
        max_align_t align;
        unsigned char bytes[128];
    } local;
};

struct door {
    struct rt_door hook; /* first: the task knows only this part */
    const char *fn;      /* the public function, for messages */
    enum door_what what;
    unsigned n;        /* 1 or 2 values, each locked while the door is open */
    rt_shared *v[2];   /* in lock order */
    bool poisons;      /* a panic from here on poisons every v */
    bool constructing; /* v[0] was never handed out: a panic frees it */
    rt_shared *building_for; /* the value `building` is being built for */
    struct state building;
    struct copy copy[2];
};

static void door_unwind(struct rt_door *hook);

/* Our doors are the ones that unwind with door_unwind. */
static struct door *as_door(struct rt_door *hook)
{
    return hook->unwind == door_unwind ? (struct door *)hook : NULL;
}

/* The innermost door this thread has open on s, NULL if none. */
static struct door *door_on(struct rt_hot *h, const rt_shared *s)
{
    for (struct rt_door *o = h->door; o != NULL; o = o->outer) {
        struct door *d = as_door(o);
        /* v[1] is NULL in a door on one value, and s is never NULL */
        if (d != NULL && (d->v[0] == s || d->v[1] == s))
            return d;
    }
    return NULL;
}

/* This thread's state, after checking it runs a task (a violation naming
** fn if not): doors need a task, since a panic in them ends one. */
static struct rt_hot *door_hot(const char *fn)
{
    return rt__task_hot(fn);
}

/* A value made after s whose door is open in this task, or NULL: s's lock
** may not be taken here, since a task in a door on s may be opening one on
** that value (a deadlock). */
static const rt_shared *open_after(struct rt_hot *h, const rt_shared *s)
{
    for (struct rt_door *o = h->door; o != NULL; o = o->outer) {
        struct door *d = as_door(o);
        for (unsigned i = 0; d != NULL && i < d->n; i++)
            if (d->v[i]->seq > s->seq)
                return d->v[i];
    }
    return NULL;
}

/* Door nd, on its values in lock order, may open here: no value of it
** already has a door open in this task (the lock is not recursive: that
** would deadlock), and it is not inside a door on a value made later
** (nested doors take their locks in the global order too). A value entered
** again is looked for in every open door first: it is what the program
** must hear of, also where a door on a value made later lies between the
** two. nd is taken whole, not its array, so that UBSan's bounds check sees
** its values as the array they are. */
static void check_nesting(struct rt_hot *h, const struct door *nd)
{
    for (struct rt_door *o = h->door; o != NULL; o = o->outer) {
        struct door *d = as_door(o);
        for (unsigned i = 0; d != NULL && i < d->n; i++)
            for (unsigned j = 0; j < nd->n; j++)
                if (d->v[i] == nd->v[j])
                    rt__violation(nd->fn, "a door on shared value #%lu is already open in "
                                  "this task (entered again from inside %s)", nd->v[j]->seq,
                                  d->fn);
    }
    /* v[0] was made first: wherever v[1] may not open, v[0] may not either */
    const rt_shared *later = open_after(h, nd->v[0]);
    if (later != NULL)
        rt__violation(nd->fn, "a door on shared value #%lu opened inside a door on "
                      "#%lu, made later: doors nest in the order values were made "
                      "(or use rt_update_all)", nd->v[0]->seq, later->seq);
}

/* Opens a door on s (and b, if not NULL): checks, locks in order, pushes. */
static void door_open(struct rt_hot *h, struct door *d, const char *fn, enum door_what what,
                      rt_shared *a, rt_shared *b)
{
    d->fn = fn;
    d->what = what;
    d->poisons = false;
    d->constructing = false;
    d->building_for = NULL;
    d->copy[0].p = d->copy[1].p = NULL;
    d->n = b != NULL ? 2 : 1;
    d->v[0] = a;
    d->v[1] = b;
    if (b != NULL && b->seq < a->seq) {
        d->v[0] = b;
        d->v[1] = a;
    }
    check_nesting(h, d);
    for (unsigned i = 0; i < d->n; i++) {
        rt__door_lock(&d->v[i]->lock);
        RT_POINT("shared.door_open.locked_one");
    }
    d->hook.block = NULL; /* hook.value is set with a block, read only with one */
    d->hook.unwind = door_unwind;
    d->hook.outer = h->door;
    h->door = &d->hook;
}

/* Frees the copies and releases the locks, last taken first. A door is
** released once: by its close, or by its unwind if it never closed. */
static void door_release(struct door *d)
{
    for (unsigned i = d->n; i-- > 0;) {
        if (d->copy[i].p != d->copy[i].local.bytes)
            free(d->copy[i].p); /* malloc's, or NULL */
        rt__door_unlock(&d->v[i]->lock);
    }
}

#if RT_TESTING
/* The doors' locks of the doors open on this thread (locks.h). */
static unsigned door_locks(struct rt_hot *h)
{
    unsigned n = 0;

    for (struct rt_door *o = h->door; o != NULL; o = o->outer)
        n += as_door(o) != NULL ? as_door(o)->n : 0;
    return n;
}
#endif

static void door_close(struct rt_hot *h, struct door *d)
{
    const char *fn = d->fn;

    /* fn returned with a door of its own still open: it left that door's
    ** fn by longjmp, which skipped the close */
    if (h->door != &d->hook)
        rt__violation(fn, "a door opened inside this one was not closed");
    h->door = d->hook.outer;
    door_release(d);
    rt__locks_doors(fn, door_locks(h));
}

/* Runs on the panicking task before it frees anything (task.c). */
static void door_unwind(struct rt_door *hook)
{
    struct door *d = (struct door *)hook;

    RT_POINT("shared.unwind.begin");
    if (d->building_for != NULL) {
        /* build panicked: the half-built state goes, the value stays as it
        ** was (poisoned, or never handed out) */
        state_drop(&d->building);
    } else if (d->poisons) {
        for (unsigned i = 0; i < d->n; i++)
            atomic_store_explicit(&d->v[i]->poisoned, true, memory_order_relaxed);
    }
    RT_POINT("shared.unwind.before_release");
    door_release(d);
    if (d->constructing) {
        rt__mutex_destroy(&d->v[0]->lock);
        free(d->v[0]);
    }
}

/* Builds s a fresh state in door d (s locked by d) and puts it in place of
** the old one, which is freed whole; s is no longer poisoned. */
static void rebuild(struct door *d, rt_shared *s)
{
    state_make(&d->building, s->size, s->block_bytes, d->fn);
    d->building_for = s;
    d->hook.block = s->kind == RT_OWNED ? d->building.block : NULL;
    d->hook.value = d->building.value;
    s->build(d->building.value, s->ctx);
    d->hook.block = NULL; /* a door allocates from the task until fn runs */
    state_drop(&s->now);
    s->now = d->building;
    d->building_for = NULL;
    atomic_store_explicit(&s->poisoned, false, memory_order_relaxed);
}

/* Whether the door's fn may run: RT_POISONED if a value is poisoned and
** not supervised (then nothing is rebuilt); supervised ones are rebuilt. */
static rt_status door_ready(struct door *d)
{
    for (unsigned i = 0; i < d->n; i++)
        if (atomic_load_explicit(&d->v[i]->poisoned, memory_order_relaxed) &&
            d->v[i]->build == NULL)
            return RT_POISONED;
    for (unsigned i = 0; i < d->n; i++)
        if (atomic_load_explicit(&d->v[i]->poisoned, memory_order_relaxed))
            rebuild(d, d->v[i]);
    return RT_OK;
}

/* A copy of v[i]'s value for fn to work on. */
static void *copy_of(struct door *d, unsigned i)
{
    struct copy *c = &d->copy[i];
    size_t size = d->v[i]->size;

    c->p = size > sizeof c->local.bytes ? malloc(size) : c->local.bytes;
    if (c->p == NULL)
        rt__trap();
    RT_COST_COPY(RT_COST_SHARED_COPIED, c->p, d->v[i]->now.value, size);
    return c->p;
}

/* ---- making and freeing ----------------------------------------------- */

static rt_shared *shared_make(const char *fn, rt_kind kind, size_t size, size_t block_bytes)
{
    rt_shared *s;

    if (kind != RT_COPY && kind != RT_OWNED)
        rt__violation(fn, "kind %d is neither RT_COPY nor RT_OWNED", (int)kind);
    s = calloc(1, sizeof *s);
    if (s == NULL)
        rt__trap();
    RT_COST_BYTES(RT_COST_BYTES_SHARED, s);
    rt__mutex_init(&s->lock);
    s->seq = atomic_fetch_add(&next_seq, 1);
    s->kind = kind;
    s->size = size;
    s->block_bytes = block_bytes;
    atomic_init(&s->poisoned, false);
    return s;
}

rt_shared *rt_shared_new(rt_kind kind, size_t size, const void *init, size_t block_bytes)
{
    rt_shared *s;

    rt__locks_entry(); /* a call that never reaches the thread's state */
    if (init == NULL && size != 0)
        rt__violation("rt_shared_new", "init is NULL for a value of %zu bytes", size);
    s = shared_make("rt_shared_new", kind, size, block_bytes);
    state_make(&s->now, size, block_bytes, "rt_shared_new");
    if (size != 0)
        memcpy(s->now.value, init, size);
    return s;
}

rt_shared *rt_shared_supervised(rt_kind kind, size_t size, void (*build)(void *value, void *ctx),
                                void *ctx, size_t block_bytes)
{
    struct rt_hot *h = door_hot("rt_shared_supervised");
    struct door d;
    rt_shared *s;

    if (build == NULL)
        rt__violation("rt_shared_supervised", "build is NULL");
    s = shared_make("rt_shared_supervised", kind, size, block_bytes);
    s->build = build;
    s->ctx = ctx;
    /* The first build is a rebuild from nothing, in a door, so that its
    ** allocations go to the value's block and a panic frees it all. */
    door_open(h, &d, "rt_shared_supervised", DOOR_BUILD, s, NULL);
    d.constructing = true; /* read only by a panic in build: the close ignores it */
    rebuild(&d, s);
    door_close(h, &d);
    return s;
}

void rt_shared_free(rt_shared *s)
{
    struct rt_hot *h = rt__hot_or_null();

    if (s == NULL)
        return;
    if (h != NULL && h->task != NULL && door_on(h, s) != NULL)
        rt__violation("rt_shared_free", "a door on shared value #%lu is open in this task",
                      s->seq);
    state_drop(&s->now);
    rt__mutex_destroy(&s->lock);
    free(s);
}

/* ---- the doors --------------------------------------------------------- */

static void check_value(const char *fn, const rt_shared *s, bool has_fn)
{
    if (s == NULL)
        rt__violation(fn, "the shared value is NULL");
    if (!has_fn)
        rt__violation(fn, "fn is NULL");
}

rt_status rt_update(rt_shared *s, void (*fn)(void *value, void *ctx), void *ctx)
{
    struct rt_hot *h = door_hot("rt_update");
    struct door d;
    rt_status st;

    check_value("rt_update", s, fn != NULL);
    door_open(h, &d, "rt_update", DOOR_UPDATE, s, NULL);
    st = door_ready(&d);
    if (st == RT_OK) {
        if (s->kind == RT_COPY) {
            void *c = copy_of(&d, 0);
            fn(c, ctx);
            memcpy(s->now.value, c, s->size); /* only once fn has returned */
            RT_COST(RT_COST_SHARED_COPIED, s->size);
        } else {
            d.hook.value = s->now.value;
            d.hook.block = s->now.block;
            d.poisons = true;
            fn(s->now.value, ctx);
        }
    }
    door_close(h, &d);
    return st;
}

rt_status rt_update_all(rt_shared *a, rt_shared *b, void (*fn)(void *va, void *vb, void *ctx),
                        void *ctx)
{
    struct rt_hot *h = door_hot("rt_update_all");
    struct door d;
    rt_status st;

    check_value("rt_update_all", a, true); /* both values before fn */
    check_value("rt_update_all", b, fn != NULL);
    if (a == b)
        rt__violation("rt_update_all", "a and b are the same shared value (#%lu); "
                      "use rt_update", a->seq);
    door_open(h, &d, "rt_update_all", DOOR_UPDATE, a, b);
    st = door_ready(&d);
    if (st == RT_OK) {
        if (a->kind == RT_COPY && b->kind == RT_COPY) {
            void *c0 = copy_of(&d, 0), *c1 = copy_of(&d, 1);
            if (d.v[0] == a)
                fn(c0, c1, ctx);
            else
                fn(c1, c0, ctx);
            /* both written back while both locks are held */
            memcpy(d.v[0]->now.value, c0, d.v[0]->size);
            RT_COST(RT_COST_SHARED_COPIED, d.v[0]->size);
            if (rt__shared_between_writebacks != NULL)
                rt__shared_between_writebacks(d.v[0], d.v[1]);
            memcpy(d.v[1]->now.value, c1, d.v[1]->size);
            RT_COST(RT_COST_SHARED_COPIED, d.v[1]->size);
        } else {
            d.hook.value = a->kind == RT_OWNED ? a->now.value : b->now.value;
            d.hook.block = a->kind == RT_OWNED ? a->now.block : b->now.block;
            d.poisons = true;
            fn(a->now.value, b->now.value, ctx);
        }
    }
    door_close(h, &d);
    return st;
}

rt_status rt_access(rt_shared *s, void (*fn)(const void *value, void *ctx), void *ctx)
{
    struct rt_hot *h = door_hot("rt_access");
    struct door d;
    rt_status st;

    check_value("rt_access", s, fn != NULL);
    door_open(h, &d, "rt_access", DOOR_ACCESS, s, NULL);
    st = door_ready(&d);
    if (st == RT_OK)
        fn(s->now.value, ctx); /* d.poisons stays false: a read changes nothing */
    door_close(h, &d);
    return st;
}

rt_status rt_get(rt_shared *s, void *out)
{
    struct rt_hot *h = door_hot("rt_get");
    struct door d;
    rt_status st;

    if (s == NULL)
        rt__violation("rt_get", "the shared value is NULL");
    if (out == NULL && s->size != 0)
        rt__violation("rt_get", "out is NULL");
    door_open(h, &d, "rt_get", DOOR_GET, s, NULL);
    st = door_ready(&d);
    if (st == RT_OK && s->size != 0)
        RT_COST_COPY(RT_COST_SHARED_COPIED, out, s->now.value, s->size);
    door_close(h, &d);
    return st;
}

bool rt_poisoned(rt_shared *s)
{
    rt__locks_entry(); /* a call that never reaches the thread's state */
    if (s == NULL)
        rt__violation("rt_poisoned", "the shared value is NULL");
    return atomic_load_explicit(&s->poisoned, memory_order_relaxed);
}

/* ---- storing outside values (D9) -------------------------------------- */

/* rt_panic with a message made from fmt: the longest (two 20-digit
** numbers) fits. */
static _Noreturn void panic_with(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void panic_with(const char *fmt, ...)
{
    char why[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_panic(why);
}

/* The state of s that the door open on it in this task may change: the
** one being built, or the one in place inside an update of RT_OWNED s. */
static struct state *writable_state(struct rt_hot *h, const char *fn, rt_shared *s)
{
    struct door *d;

    if (s == NULL)
        rt__violation(fn, "the shared value is NULL");
    d = door_on(h, s);
    if (d == NULL)
        rt__violation(fn, "no door on shared value #%lu is open in this task", s->seq);
    if (s->kind != RT_OWNED)
        rt__violation(fn, "shared value #%lu is RT_COPY: it holds no outside values", s->seq);
    if (d->building_for == s)
        return &d->building;
    if (d->what != DOOR_UPDATE)
        rt__violation(fn, "the door open on shared value #%lu is %s, which cannot change it",
                      s->seq, d->fn);
    return &s->now;
}

rt_status rt_store(rt_shared *s, void *value)
{
    struct rt_hot *h = door_hot("rt_store");
    struct state *st = writable_state(h, "rt_store", s);
    size_t bytes;

    if (value == NULL)
        rt__violation("rt_store", "the value is NULL");
    if (rt__block_value(h, value) || rt__block_owns(st->block, value)) {
        fprintf(stderr, "refrt: rt_store: %p is a block value and cannot be stored; "
                        "copy it with rt_clone_outside\n", value);
        return RT_REFUSED;
    }
    bytes = rt__outside_take("rt_store", value);
    if (!rt__block_charge(st->block, bytes)) {
        rt__outside_give(value, bytes); /* the task's again: freed by the panic */
        panic_with("a stored value of %zu bytes does not fit shared value #%lu's budget",
                   bytes, s->seq); /* in the door: s is poisoned */
    }
    stored_put(st, value, bytes);
    return RT_OK;
}

void *rt_unstore(rt_shared *s, void *value)
{
    struct rt_hot *h = door_hot("rt_unstore");
    struct state *st = writable_state(h, "rt_unstore", s);
    size_t i = stored_find(st, value), bytes;

    if (value == NULL || i == st->nstored)
        rt__violation("rt_unstore", "%p is not a value stored in shared value #%lu", value,
                      s->seq);
    bytes = st->stored[i].bytes;
    if (!rt__task_charge(h->task, bytes))
        panic_with("an unstored value of %zu bytes does not fit its budget",
                   bytes); /* the value stays stored */
    st->stored[i] = st->stored[--st->nstored];
    rt__block_uncharge(st->block, bytes);
    rt__task_hold(h->task, value, bytes);
    return value;
}

size_t rt_shared_held(rt_shared *s)
{
    struct rt_hot *h = rt__hot_or_null();
    struct door *d;
    size_t held;

    if (s == NULL)
        rt__violation("rt_shared_held", "the shared value is NULL");
    d = h != NULL && h->task != NULL ? door_on(h, s) : NULL;
    if (d != NULL) /* this task holds the lock */
        return rt__block_held(d->building_for == s ? d->building.block : s->now.block);
    /* s's lock is taken as a door's would be: in the order values were
    ** made (a task in a door on s may be opening one on the later value) */
    const rt_shared *later = h != NULL && h->task != NULL ? open_after(h, s) : NULL;
    if (later != NULL)
        rt__violation("rt_shared_held", "shared value #%lu read inside a door on #%lu, made "
                      "later: its lock is taken in the order doors nest in, the order values "
                      "were made", s->seq, later->seq);
    rt__lock(&s->lock);
    held = rt__block_held(s->now.block);
    rt__unlock(&s->lock);
    return held;
}

/* ---- for the tests (shared.h) ----------------------------------------- */

bool rt__shared_locked(rt_shared *s)
{
    if (rt__trylock(&s->lock) != 0)
        return true;
    rt__unlock(&s->lock);
    return false;
}

pthread_mutex_t *rt__shared_mutex(rt_shared *s)
{
    return &s->lock;
}

unsigned long rt__shared_seq(const rt_shared *s)
{
    return s->seq;
}
