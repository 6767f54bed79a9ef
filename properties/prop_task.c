/*
** prop_task.c: the task half of the interpreter and its model: main's
** task and at most one spawned task at a time, the values each holds, two
** channels, and up to four shared values with their doors.
**
** The spawned task (the kid) runs a loop that takes one command at a time
** from the interpreter's thread and answers it, so a run stays one
** sequence of operations, as deterministic as the rest: nothing runs
** concurrently, every step is a handshake under one mutex. A task
** operation acts on the current task: the kid while it runs, else main's.
** An operation the model says must panic is given only to the kid (a panic
** in main's task ends the process); the kid's thread then ends, which the
** interpreter sees through a thread-specific value's destructor, and it
** joins the kid.
**
** The model, per task: every block value (pointer, bytes, the chunk it
** takes from the budget, its fill) and every outside value (pointer,
** bytes, fill), and what the task holds in all: its block values' chunks
** (docs/budgets.md: an 8-byte header, rounded to 16), its outside values'
** bytes, and the values it sent that nobody has received yet. A panic is
** certain when a request does not fit the room left (the budget less what
** is held). Success is certain, for the kid's block, when the chunk also
** fits past the highest chunk the model knows to be live (the kid's first
** allocation shows where its block starts): freed chunks are coalesced
** back to the bump before a block is called full. In between (room enough,
** but freed chunks may be scattered) the operation is skipped: its outcome
** is not the model's to say. Per channel: its queue, in order. Per shared
** value: its bytes (one fill), whether it is poisoned (D11, as
** docs/poisoning.md states the rules), and its block's figure.
**
** After every operation: rt_held() of each task equals the model's, the
** blocks that exist (rt__blocks_live) are the model's (main's, the kid's,
** one a shared value), and every shared value is poisoned exactly when the
** model says. Every read is also made from inside: a door's fn reads
** rt_held, rt_budget, rt_poisoned of every value and rt_shared_held of its
** own as it enters, and the counts after each store, unstore, allocation,
** send and receive it makes; a supervised value's build reads the same in
** its first build and in each rebuild; the model answers each
** (docs/fuzzing.md, "Every call in every context"). A build works as a
** door's fn does (an allocation, grown, cloned, handed over, sent; a
** receive; a region; in a rebuild, a door of its own): each build and fn
** is planned before the door runs, in the order the door runs them,
** moving the model as it goes, and checked once the door has run. A
** region opened on main's task inside a door or a build takes a chunk of
** the cache prop_run.c models, and is followed there. When a task ends,
** every outside value it held is freed (seen through prop_note_free, where
** the driver sees frees; else LeakSanitizer's job), and so is the chunk of
** a region it panicked in, cleared.
*/
#define _GNU_SOURCE
#include "prop_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refrt.h"

/* Test hooks of the runtime, not in refrt.h: how many blocks exist
** (block.c), and whether a shared value's lock is held now (shared.h). */
size_t rt__blocks_live(void);
bool rt__shared_locked(rt_shared *s);

#define HEADER 8u
#define MAX_VALS 16    /* block values a task holds in the model */
#define MAX_OUTS 16    /* outside values a task holds */
#define MAX_SHARED 4
#define MAX_SIZE 64    /* a shared value's bytes */
#define QUEUE_MAX 3
#define SPAWNS_A_RUN 3 /* a spawn is a thread: dear */

/* The bytes a block value of n bytes takes from its budget. */
static size_t chunk_of(size_t n)
{
    return (n + HEADER + 15) & ~(size_t)15;
}

struct val {
    unsigned char *p;
    size_t n, chunk; /* chunk 0: an outside value */
    uint8_t fill;
};

struct task {
    int live;
    struct val blk[MAX_VALS];
    unsigned nblk;
    struct val out[MAX_OUTS];
    unsigned nout;
    size_t held, budget;
    const unsigned char *arena; /* the kid: where its block starts */
};

enum { MAIN, KID, ENDED = -1 };

struct item {
    unsigned char *p;
    size_t n;
    uint8_t fill;
    int sender; /* MAIN, KID, or ENDED: counts against nobody */
};

struct chan {
    rt_chan *c;
    unsigned cap;
    int closed;
    struct item q[QUEUE_MAX];
    unsigned head, count;
};

/* The doors a fn (or a build) may open inside its own door: on values made
** later than the door's, as doors must nest (refrt.h). */
enum { NEST_GET, NEST_ACCESS, NEST_UPDATE, NEST_UPDATE_ALL, NEST_NONE };

/* What fn does in a door (and a build in its own), and what it saw there. */
struct door_job {
    rt_shared *alloc_in; /* the value whose block a door allocation uses, or NULL */
    rt_shared *store_into; /* stores and unstores go here; NULL: into alloc_in */
    void *store, *unstore; /* an outside value to store into alloc_in, one to unstore */
    rt_status stored;
    size_t size_a, size_b;
    uint8_t va, vb;
    size_t alloc; /* 0: no allocation in the door, else 1 + its bytes */
    /* The allocation is an outside value (made by rt_clone_outside if
    ** clone), grown to 2n + 1 bytes with rt_realloc if grow, given away
    ** with rt_hand_over and free() if hand (else rt_free). A block value
    ** grows too: grow 1 always, 2 only where grow_fits says the task's
    ** block certainly takes it (where the first chunk landed is the
    ** runtime's to choose, not the model's to say); grew says whether it
    ** did, and at, at_n where the value ended (a block value of the task's
    ** block: it must overlap none the task holds). */
    int outside, clone, grow, hand, clone_bad, grew;
    size_t grow_top, grow_budget, grow_room; /* the model's figures for grow_fits */
    const unsigned char *grow_arena;
    unsigned char *at;
    size_t at_n;
    int refused_bad; /* a block value was not refused by rt_hand_over or rt_send */
    /* fn opens a region first, allocates region_bytes of fill in it, and
    ** closes it last; if the door is to panic (the spawned task), the
    ** region is still open then, and its chunk is watched (freed, cleared,
    ** by the task's end). On main's task the chunk is the model's: where it
    ** came from (region_at) and what it used are checked after the door. */
    int region, region_watch, region_bad;
    size_t region_bytes;
    uint8_t region_fill;
    rt_region r;
    const unsigned char *region_at;
    /* fn sends the door's outside value on send_on instead of freeing it
    ** (unless the channel is closed), and receives a value from recv_on */
    rt_chan *send_on, *recv_on;
    rt_status send_st;
    void *sent, *got;
    size_t got_bytes;
    uint8_t got_fill;
    int got_bad;
    size_t recv_held; /* rt_held() with the value received */
    /* A door nested inside this one, last: nest_kind on nest_s[0] (and
    ** nest_s[1]), values made later; its fn writes nest_fill, and panics
    ** if nest_panic (the outer door's panic, moved inside). What it saw:
    ** the status, the bytes read, and inside its fn rt_poisoned and
    ** rt_shared_held of its values. */
    int nest_kind, nest_panic, nest_reached, nest_ran;
    rt_shared *nest_s[2];
    size_t nest_size[2];
    uint8_t nest_fill;
    rt_status nest_st;
    unsigned char nest_seen[MAX_SIZE];
    uint8_t nest_poisoned[2];
    size_t nest_held[2];
    int panic;
    int ran;
    int alloc_seen;                /* the counts below were read */
    size_t task_held, shared_held; /* with the door's allocation live */
    unsigned char seen[MAX_SIZE];
    /* Read inside fn, where the model answers them too: on entry, every
    ** shared value's rt_poisoned, the task's rt_held and rt_budget, and
    ** rt_shared_held of the door's values; after a store and after an
    ** unstore, the task's and the value's counts. */
    rt_shared *door_vals[2];
    rt_shared *all[MAX_SHARED];
    unsigned nall;
    int entered, store_seen, unstore_seen;
    size_t in_held, in_budget, in_shared[2];
    uint8_t in_poisoned[MAX_SHARED];
    size_t store_held, store_shared, unstore_held, unstore_shared;
};

/* What a supervised value's build is asked to do this time (planned
** before the door: build_plan), and what it saw. Its allocation, region,
** channel work and nested door are a door_job's, as fn's are. */
struct build_ctx {
    size_t size;
    uint8_t pattern;
    int panic;
    rt_shared *s;  /* the value, once made (NULL during the first build) */
    void *store;   /* an outside value of the task a rebuild stores, or NULL */
    int unstore;   /* and then unstores */
    struct door_job job;
    /* what build saw: on entry, after its store, after its unstore */
    int ran, poisoned, store_seen, unstore_seen;
    rt_status stored;
    size_t held, budget, shared_held, store_held, store_shared, unstore_held, unstore_shared;
    unsigned nall;                  /* the values made before this one, */
    uint8_t poisoned_all[MAX_SHARED]; /* and rt_poisoned() of each, on entry */
};

/* What a channel does in a door (or a build): x bit 14 of a door, the
** door's outside value sent on channel 0 (not when it is full and open:
** the send would block); x bit 13, a value received from channel 1 (not
** when it is empty and open). */
struct door_chan {
    struct chan *sch, *rch;
    int send;          /* the send goes in (else: closed, RT_CLOSED) */
    unsigned slot;     /* where in sch's queue the model put it */
    int recv;          /* a value is received (else: closed and empty, NULL) */
    int recv_panics;   /* it does not fit the task: panics, stays at the head */
    size_t sent_n;
    uint8_t fill;
    struct item it;    /* what is received */
    size_t extra;      /* what the two add to the task's count in the door */
    size_t pre_recv;   /* the task's count just before the receive */
    size_t recv_delta; /* what the receive adds to it */
};

/* The model's side of a nested door: what it must give and what its fn
** must read; v[0] NULL when there is none. */
struct nest_want {
    struct shared *v[2];
    rt_status st;
    int runs;          /* its fn runs */
    size_t held[2];    /* rt_shared_held() of its values, read in its fn */
    uint8_t value;     /* what rt_get or rt_access reads */
};

#define MAX_STORED 4

struct shared {
    rt_shared *s;
    int owned, supervised, poisoned;
    size_t size, block;
    uint8_t value;
    struct build_ctx ctx;
    /* What build does, fixed when the value is made (PROP_SHARED's bits):
    ** allocates build_bytes (0: nothing), an outside value or (clone) a
    ** clone, grows it, hands it over, sends it, receives, works in a
    ** region, opens a door of kind build_nest (rebuilds only: a door on a
    ** value made later), the build's panic inside it if build_nest_panic. */
    size_t build_bytes;
    int build_outside, build_clone, build_grow, build_hand, build_send, build_recv,
        build_region, build_nest, build_nest_panic;
    /* The build planned last: what it must read as it enters, what it
    ** stores (n 0: nothing), whether that store panics, its channel work,
    ** its nested door. */
    size_t want_held, want_budget;
    uint8_t want_poisoned[MAX_SHARED];
    struct val build_in;
    int store_panics;
    struct door_chan dc;
    struct nest_want nest;
    struct val stored[MAX_STORED]; /* outside values stored into it (D9) */
    unsigned nstored;
};

static struct {
    struct task t[2];
    struct chan ch[2];
    struct shared sh[MAX_SHARED];
    unsigned nsh, spawns;
    size_t blocks; /* rt__blocks_live() as the model has it */
} T;

/* ---- commands: what a task is asked to do ------------------------------ */

enum cmd_kind {
    C_ALLOC, C_REALLOC, C_FREE, C_OUTSIDE, C_CLONE, C_HAND_OVER, C_SEND, C_RECV,
    C_UPDATE, C_UPDATE_ALL, C_ACCESS, C_GET, C_PANIC, C_SUPERVISED, C_PROBE, C_RETURN
};

struct cmd {
    enum cmd_kind kind;
    void *p;
    size_t n;
    uint8_t fill;
    int region; /* C_PANIC: in a region */
    rt_chan *c;
    rt_shared *a, *b;
    rt_kind skind;
    struct build_ctx *ctx;
    size_t block;
    struct door_job job;
    /* results */
    void *r;
    size_t held, budget;
    size_t held_after; /* the kid's rt_held() once the command is done */
    size_t budget_after; /* its rt_budget() */
    uint8_t poisoned_after[MAX_SHARED]; /* rt_poisoned() of each value, read by the kid */
    size_t shared_after[MAX_SHARED]; /* and rt_shared_held() */
    rt_status st;
    int err;
};

/* The reads fn makes as it enters. */
static void door_enter(struct door_job *j)
{
    j->entered = 1;
    j->in_held = rt_held();
    j->in_budget = rt_budget();
    for (unsigned i = 0; i < j->nall; i++)
        j->in_poisoned[i] = rt_poisoned(j->all[i]);
    for (unsigned i = 0; i < 2; i++)
        j->in_shared[i] = j->door_vals[i] != NULL ? rt_shared_held(j->door_vals[i]) : 0;
}

/* What rt_clone_outside copies inside a door. */
static unsigned char clone_source[4096];

/* Whether a block value of n bytes at p, in the task's block, grown to
** 2n + 1 bytes, certainly fits: its new chunk fits the room left with the
** old one still live, and past the highest live chunk (the old one
** included), where the block's bump is once freed chunks are coalesced
** (block.c). The model's figures come in the job; p is where the runtime
** put the first chunk, which the model does not predict but may use. */
static int grow_fits(const struct door_job *j, const unsigned char *p, size_t n)
{
    size_t c1 = chunk_of(n), c2 = chunk_of(2 * n + 1);
    size_t end = (size_t)(p - HEADER - j->grow_arena) + c1;
    size_t hi = end > j->grow_top ? end : j->grow_top;

    return c1 <= j->grow_room && c2 <= j->grow_room - c1 && hi + c2 <= j->grow_budget;
}

/* The door's allocation: made, filled, counts read, given back. */
static void door_alloc_run(struct door_job *j, unsigned char fill)
{
    size_t n = j->alloc - 1;
    unsigned char *p;

    if (j->outside) {
        if (j->clone) {
            memset(clone_source, 0x3c, sizeof clone_source);
            p = rt_clone_outside(clone_source, n);
            j->clone_bad = n != 0 && memcmp(p, clone_source, n) != 0;
        } else {
            p = rt_alloc_outside(n);
        }
        if (j->grow) {
            p = rt_realloc(p, 2 * n + 1);
            j->clone_bad |= j->clone && n != 0 && memcmp(p, clone_source, n) != 0;
            n = 2 * n + 1;
            j->grew = 1;
        }
    } else {
        p = rt_alloc(n);
        if (j->grow == 1 || (j->grow == 2 && grow_fits(j, p, n))) { /* keeps its bytes */
            memset(p, fill, n);
            p = rt_realloc(p, 2 * n + 1);
            j->clone_bad = n != 0 && !(p[0] == fill && memcmp(p, p + 1, n - 1) == 0);
            n = 2 * n + 1;
            j->grew = 1;
        }
        j->at = p;
        j->at_n = n;
    }
    memset(p, fill, n);
    j->task_held = rt_held();
    j->shared_held = j->alloc_in != NULL ? rt_shared_held(j->alloc_in) : 0;
    j->alloc_seen = 1;
    if (!j->outside && j->hand) { /* a block value never leaves: refused, nothing changed */
        errno = 0;
        j->refused_bad = rt_hand_over(p) != NULL || errno != EINVAL;
    }
    if (!j->outside && j->send_on != NULL)
        j->refused_bad |= rt_send(j->send_on, p) != RT_REFUSED;
    if (j->outside && j->send_on != NULL) {
        j->send_st = rt_send(j->send_on, p);
        if (j->send_st == RT_OK) {
            j->sent = p; /* counts against the task until it is received */
            return;
        }
    }
    if (j->outside && j->hand)
        free(rt_hand_over(p)); /* its new owner frees it */
    else
        rt_free(p);
}

/* A value received inside the door: the task holds it from now on. */
static void door_recv(struct door_job *j)
{
    unsigned char *g;

    if (j->recv_on == NULL)
        return;
    g = j->got = rt_recv(j->recv_on);
    j->recv_held = rt_held();
    j->got_bad = g != NULL && j->got_bytes != 0 &&
                 !(g[0] == j->got_fill && memcmp(g, g + 1, j->got_bytes - 1) == 0);
}

/* The nested door's fn: it reads what the model answers, writes (or
** reads) its values, and panics if asked. */
static void nest_enter(struct door_job *j)
{
    j->nest_ran = 1;
    for (unsigned k = 0; k < 2 && j->nest_s[k] != NULL; k++) {
        j->nest_poisoned[k] = rt_poisoned(j->nest_s[k]);
        j->nest_held[k] = rt_shared_held(j->nest_s[k]);
    }
}

static void nest_one(void *v, void *ctx)
{
    struct door_job *j = ctx;
    nest_enter(j);
    memset(v, j->nest_fill, j->nest_size[0]);
    if (j->nest_panic)
        rt_panic("prop: a panic inside a nested door");
}

static void nest_two(void *va, void *vb, void *ctx)
{
    struct door_job *j = ctx;
    nest_enter(j);
    memset(va, j->nest_fill, j->nest_size[0]);
    memset(vb, (uint8_t)~j->nest_fill, j->nest_size[1]);
    if (j->nest_panic)
        rt_panic("prop: a panic inside a nested update_all");
}

static void nest_read(const void *v, void *ctx)
{
    struct door_job *j = ctx;
    nest_enter(j);
    memcpy(j->nest_seen, v, j->nest_size[0]);
    if (j->nest_panic)
        rt_panic("prop: a panic inside a nested access");
}

/* The door nested inside this one, if any (doors nest in the order values
** were made). */
static void door_nest(struct door_job *j)
{
    if (j->nest_s[0] == NULL)
        return;
    j->nest_reached = 1;
    switch (j->nest_kind) {
    case NEST_GET: j->nest_st = rt_get(j->nest_s[0], j->nest_seen); break;
    case NEST_ACCESS: j->nest_st = rt_access(j->nest_s[0], nest_read, j); break;
    case NEST_UPDATE: j->nest_st = rt_update(j->nest_s[0], nest_one, j); break;
    default: j->nest_st = rt_update_all(j->nest_s[0], j->nest_s[1], nest_two, j); break;
    }
}

static void door_region_open(struct door_job *j)
{
    unsigned char *p;

    if (!j->region)
        return;
    rt_region_open(&j->r);
    j->region_at = j->r.base;
    p = rt_region_alloc(&j->r, 1, j->region_bytes, j->region_fill);
    j->region_bad = p != j->r.base || j->r.bump != p + j->region_bytes ||
                    (j->region_bytes != 0 && !(p[0] == j->region_fill &&
                     memcmp(p, p + 1, j->region_bytes - 1) == 0));
    if (j->region_watch)
        prop_watch_add(j->r.base, j->region_bytes);
}

static void door_region_close(struct door_job *j)
{
    if (j->region)
        rt_region_close(&j->r);
}

static void door_work(struct door_job *j)
{
    j->ran = 1;
    door_enter(j);
    door_region_open(j);
    if (j->store != NULL) {
        rt_shared *into = j->store_into != NULL ? j->store_into : j->alloc_in;
        j->stored = rt_store(into, j->store);
        j->store_held = rt_held();
        j->store_shared = rt_shared_held(into);
        j->store_seen = 1;
    }
    if (j->alloc != 0)
        door_alloc_run(j, 0xd0);
    door_recv(j);
    if (j->unstore != NULL) {
        rt_shared *from = j->store_into != NULL ? j->store_into : j->alloc_in;
        rt_unstore(from, j->unstore);
        j->unstore_held = rt_held();
        j->unstore_shared = rt_shared_held(from);
        j->unstore_seen = 1;
    }
    door_nest(j);
    if (j->panic)
        rt_panic("prop: a panic inside a door");
    door_region_close(j);
}

static void door_one(void *v, void *ctx)
{
    struct door_job *j = ctx;
    memset(v, j->va, j->size_a);
    door_work(j);
}

static void door_two(void *va, void *vb, void *ctx)
{
    struct door_job *j = ctx;
    memset(va, j->va, j->size_a);
    memset(vb, j->vb, j->size_b);
    door_work(j);
}

static void door_read(const void *v, void *ctx)
{
    struct door_job *j = ctx;
    memcpy(j->seen, v, j->size_a);
    j->ran = 1;
    door_enter(j);
    door_region_open(j);
    if (j->alloc != 0) /* from the task's block: an access changes nothing */
        door_alloc_run(j, 0xd1);
    door_recv(j);
    door_nest(j);
    if (j->panic)
        rt_panic("prop: a panic inside an access");
    door_region_close(j);
}

/* A supervised value's build: the reads as it enters, the value's bytes,
** then what build_plan asked, in this order: a region, a store and an
** unstore, an allocation (grown, handed over, sent), a receive, a nested
** door, a panic. */
static void build(void *v, void *ctx)
{
    struct build_ctx *b = ctx;
    b->ran = 1;
    b->job.ran = 1;
    b->held = rt_held();
    b->budget = rt_budget();
    b->nall = T.nsh; /* T is still: the interpreter runs this, or waits for it */
    for (unsigned i = 0; i < T.nsh; i++)
        b->poisoned_all[i] = rt_poisoned(T.sh[i].s);
    if (b->s != NULL) { /* a rebuild: the handle is known */
        b->poisoned = rt_poisoned(b->s);
        b->shared_held = rt_shared_held(b->s);
    }
    memset(v, b->pattern, b->size);
    door_region_open(&b->job);
    if (b->store != NULL) { /* D9: stored by the build, charged to the fresh block */
        b->stored = rt_store(b->s, b->store);
        b->store_held = rt_held();
        b->store_shared = rt_shared_held(b->s);
        b->store_seen = 1;
        if (b->unstore) { /* D9: back to the task, off the fresh block */
            rt_unstore(b->s, b->store);
            b->unstore_held = rt_held();
            b->unstore_shared = rt_shared_held(b->s);
            b->unstore_seen = 1;
        }
    }
    if (b->job.alloc != 0)
        door_alloc_run(&b->job, 0xb1);
    door_recv(&b->job);
    door_nest(&b->job);
    if (b->panic)
        rt_panic("prop: a build that panics");
    door_region_close(&b->job);
}

/* Runs c on the calling thread, which is the task's. */
static void exec(struct cmd *c)
{
    switch (c->kind) {
    case C_ALLOC:
        c->r = rt_alloc(c->n);
        memset(c->r, c->fill, c->n);
        break;
    case C_REALLOC: c->r = rt_realloc(c->p, c->n); break;
    case C_FREE: rt_free(c->p); break;
    case C_OUTSIDE:
        c->r = rt_alloc_outside(c->n);
        memset(c->r, c->fill, c->n);
        break;
    case C_CLONE: c->r = rt_clone_outside(c->p, c->n); break;
    case C_HAND_OVER:
        errno = 0;
        c->r = rt_hand_over(c->p);
        c->err = errno;
        break;
    case C_SEND: c->st = rt_send(c->c, c->p); break;
    case C_RECV: c->r = rt_recv(c->c); break;
    case C_UPDATE: c->st = rt_update(c->a, door_one, &c->job); break;
    case C_UPDATE_ALL: c->st = rt_update_all(c->a, c->b, door_two, &c->job); break;
    case C_ACCESS: c->st = rt_access(c->a, door_read, &c->job); break;
    case C_GET: c->st = rt_get(c->a, c->job.seen); break;
    case C_PANIC:
        if (c->region) {
            rt_region r;
            rt_region_open(&r);
            rt_region_alloc(&r, 1, c->n, c->fill);
            prop_watch_add(r.base, c->n); /* freed, cleared, when the task's thread ends */
        }
        rt_panic("prop: PROP_PANIC");
    case C_SUPERVISED:
        c->r = rt_shared_supervised(c->skind, c->ctx->size, build, c->ctx, c->block);
        break;
    case C_PROBE:
        c->r = rt_alloc(0);
        rt_free(c->r);
        c->held = rt_held();
        c->budget = rt_budget();
        break;
    case C_RETURN: break; /* the kid's loop returns c->p */
    }
}

/* ---- the kid: a task that runs one command at a time -------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    struct cmd *cmd;
    int posted, replied, ended;
    rt_task *task;
    size_t held; /* the kid's rt_held() after its last command */
    size_t budget; /* its rt_budget() */
    unsigned nsh; /* how many values it read rt_poisoned of */
    uint8_t poisoned[MAX_SHARED];
    size_t shared[MAX_SHARED];
    int fresh; /* those reads are from the last operation: prop_task_check compares them */
} K = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static pthread_key_t kid_key;
static pthread_once_t kid_once = PTHREAD_ONCE_INIT;

/* The kid's thread has ended: returned, or panicked out of its loop. */
static void kid_gone(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&K.lock);
    K.ended = 1;
    pthread_cond_broadcast(&K.cv);
    pthread_mutex_unlock(&K.lock);
}

static void kid_key_make(void)
{
    if (pthread_key_create(&kid_key, kid_gone) != 0)
        abort();
}

static void *kid_main(void *arg)
{
    (void)arg;
    pthread_setspecific(kid_key, &K);
    for (;;) {
        struct cmd *c;
        pthread_mutex_lock(&K.lock);
        while (!K.posted)
            pthread_cond_wait(&K.cv, &K.lock);
        K.posted = 0;
        c = K.cmd;
        pthread_mutex_unlock(&K.lock);
        if (c->kind == C_RETURN)
            return c->p;
        exec(c);
        c->held_after = rt_held(); /* saves prop_task_check a round trip */
        c->budget_after = rt_budget();
        for (unsigned i = 0; i < T.nsh; i++) /* T is still: the interpreter waits */
            c->poisoned_after[i] = rt_poisoned(T.sh[i].s),
            /* a lock a door left held would block the read for good:
            ** prop_task_check reports that lock instead */
            c->shared_after[i] = rt__shared_locked(T.sh[i].s) ? SIZE_MAX
                                                               : rt_shared_held(T.sh[i].s);
        pthread_mutex_lock(&K.lock);
        K.replied = 1;
        pthread_cond_broadcast(&K.cv);
        pthread_mutex_unlock(&K.lock);
    }
}

static void post(struct cmd *c)
{
    pthread_mutex_lock(&K.lock);
    K.cmd = c;
    K.posted = 1;
    K.replied = 0;
    pthread_cond_broadcast(&K.cv);
    pthread_mutex_unlock(&K.lock);
}

/* Runs c on task who; 1 if the task ended (it panicked) instead of answering. */
static int run_on(int who, struct cmd *c)
{
    int ended;

    if (who == MAIN) {
        exec(c);
        return 0;
    }
    post(c);
    pthread_mutex_lock(&K.lock);
    while (!K.replied && !K.ended)
        pthread_cond_wait(&K.cv, &K.lock);
    ended = !K.replied;
    pthread_mutex_unlock(&K.lock);
    if (!ended) {
        K.held = c->held_after;
        K.budget = c->budget_after;
        K.nsh = T.nsh;
        memcpy(K.poisoned, c->poisoned_after, sizeof K.poisoned);
        memcpy(K.shared, c->shared_after, sizeof K.shared);
        K.fresh = 1;
    }
    return ended;
}

/* ---- the model's helpers --------------------------------------------------- */

static int cur(void)
{
    return T.t[KID].live ? KID : MAIN;
}

static size_t room(const struct task *t)
{
    return t->held <= t->budget ? t->budget - t->held : 0;
}

/* One past the highest live chunk of the kid's block, from its start. */
static size_t top(const struct task *t)
{
    size_t hi = 0;
    for (unsigned i = 0; i < t->nblk; i++) {
        size_t end = (size_t)(t->blk[i].p - HEADER - t->arena) + t->blk[i].chunk;
        if (end > hi)
            hi = end;
    }
    return hi;
}

/* Whether a block value taking `chunk` bytes fits task who's block: 1
** certainly, -1 certainly not (a panic), 0 the model cannot say. Main's
** block is hundreds of MiB and never asked near its budget. */
static int fits(int who, size_t chunk)
{
    const struct task *t = &T.t[who];

    if (chunk > room(t))
        return -1;
    if (who == MAIN)
        return chunk <= room(t) / 2 ? 1 : 0;
    return top(t) + chunk <= t->budget ? 1 : 0;
}

/* The same for n bytes counted outside the block (an outside value, a
** received one): only the room matters. */
static int fits_outside(int who, size_t n)
{
    const struct task *t = &T.t[who];

    if (n > room(t))
        return -1;
    return who == MAIN && n > room(t) / 2 ? 0 : 1;
}

static int reads(const unsigned char *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static const char *const who_name[2] = {"main's task", "the spawned task"};

/* Whether value v still reads its fill; why says when. The first byte,
** then each equal to the next (libc's memcmp reads many bytes a cycle). */
static int val_check(const struct val *v, const char *why)
{
    if (v->n == 0 || (v->p[0] == v->fill && memcmp(v->p, v->p + 1, v->n - 1) == 0))
        return 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->p[i] != v->fill)
            return prop_fail("%s: byte %zu of the %zu-byte value %p reads 0x%02x, the model "
                             "expects 0x%02x", why, i, v->n, (void *)v->p, v->p[i], v->fill);
    return 0;
}

/* Whether [p, p + n) overlaps a block value task who holds. */
static int overlaps(int who, const unsigned char *p, size_t n, const unsigned char *except)
{
    const struct task *t = &T.t[who];
    for (unsigned i = 0; i < t->nblk; i++) {
        const struct val *v = &t->blk[i];
        if (v->p != except && p < v->p + (v->n ? v->n : 1) && v->p < p + (n ? n : 1))
            return prop_fail("%s's new value [%p, +%zu) overlaps its value [%p, +%zu)",
                             who_name[who], (void *)p, n, (void *)v->p, v->n);
    }
    return 0;
}

static void val_drop(struct val *arr, unsigned *n, unsigned i)
{
    arr[i] = arr[--*n];
}

/* Watches the kid's outside values but `keep`: its end must free them. */
static void watch_kid(const void *keep)
{
    const struct task *t = &T.t[KID];
    for (unsigned i = 0; i < t->nout; i++)
        if (t->out[i].p != keep)
            prop_watch_add(t->out[i].p, 0);
}

/* The kid has ended: what it held is gone, what it sent counts against
** nobody. */
static void kid_forget(void)
{
    for (unsigned c = 0; c < 2; c++)
        for (unsigned k = 0; k < T.ch[c].count; k++) {
            struct item *it = &T.ch[c].q[(T.ch[c].head + k) % QUEUE_MAX];
            if (it->sender == KID)
                it->sender = ENDED;
        }
    memset(&T.t[KID], 0, sizeof T.t[KID]);
    K.task = NULL;
    T.blocks--;
}

/* The model said the kid must panic: it must have ended, and its join
** must say so; everything it held is freed. */
static int kid_panicked(int ended, const char *what)
{
    void *r = (void *)1;
    rt_status st;

    if (!ended) {
        prop_fail("%s: the spawned task did not panic, the model expects it to", what);
        return 1;
    }
    st = rt_join(K.task, &r);
    kid_forget();
    if (st != RT_PANICKED)
        return prop_fail("%s: rt_join of a task that panicked returns %d, not RT_PANICKED", what,
                         (int)st);
    if (r != NULL)
        return prop_fail("%s: rt_join of a task that panicked sets the result %p, not NULL",
                         what, r);
    return prop_watch_verify("a task that panicked");
}

/* The kid ended where the model says it must not have. */
static int kid_unexpected(const char *what)
{
    prop_fail("%s: the spawned task panicked, the model expects no panic", what);
    rt_join(K.task, NULL);
    kid_forget();
    return 1;
}

/* A value this task holds: sel even a block value, odd an outside one. */
static struct val *pick_val(struct task *t, uint8_t sel, int *outside)
{
    *outside = sel & 1;
    if (*outside)
        return t->nout != 0 ? &t->out[(sel >> 1) % t->nout] : NULL;
    return t->nblk != 0 ? &t->blk[(sel >> 1) % t->nblk] : NULL;
}


enum { ANSWERED = 0, FAILED = 1, PANICKED = 2 };

/* Runs c on task who, the kid panicking if `panics` (the model's word).
** ANSWERED: the task answered and was to (the caller checks the answer);
** PANICKED: it panicked, was to, and its end checked out; else FAILED. */
static int run(int who, struct cmd *c, int panics, const char *what)
{
    int ended;

    if (panics)
        watch_kid(NULL);
    ended = run_on(who, c);
    if (panics)
        return kid_panicked(ended, what) ? FAILED : PANICKED;
    if (ended)
        return kid_unexpected(what);
    return ANSWERED;
}

#define RUN(who, c, panics, what)                                              \
    do {                                                                       \
        int r_ = run((who), (c), (panics), (what));                            \
        if (r_ != ANSWERED)                                                    \
            return r_ == FAILED;                                               \
    } while (0)

/* ---- allocation ---------------------------------------------------------- */

static int op_alloc(const struct prop_op *op)
{
    int who = cur(), f;
    struct task *t = &T.t[who];
    struct cmd c = {.kind = C_ALLOC, .fill = op->v};
    size_t n = op->x, left;

    if (t->nblk == MAX_VALS)
        return 0;
    if (op->sel & 0xc0) {
        if (who == MAIN || t->budget > 65536)
            return 0; /* main's budget, or the default strategy's, is not to be filled */
        if (op->sel & 0x40) { /* all that is left: the budget exactly full when it can be */
            left = room(t) < t->budget - top(t) ? room(t) : t->budget - top(t);
            if ((left & ~(size_t)15) < 16)
                return 0;
            n = (left & ~(size_t)15) - HEADER;
        } else { /* a chunk of 16 more than the room, rounded down */
            n = (room(t) & ~(size_t)15) + 16 - HEADER;
        }
    }
    f = fits(who, chunk_of(n));
    if (f == 0 || (f < 0 && who == MAIN))
        return 0;
    c.n = n;
    RUN(who, &c, f < 0, "rt_alloc");
    if (c.r == NULL || ((uintptr_t)c.r & 15) != 0)
        return prop_fail("rt_alloc(%zu) in %s returns %p, not a 16-aligned pointer", n,
                         who_name[who], c.r);
    if (overlaps(who, c.r, n, NULL))
        return 1;
    t->blk[t->nblk++] = (struct val){c.r, n, chunk_of(n), op->v};
    t->held += chunk_of(n);
    return 0;
}

static int op_realloc(const struct prop_op *op)
{
    int who = cur(), outside, f;
    struct task *t = &T.t[who];
    struct val *v = pick_val(t, op->sel, &outside), was;
    struct cmd c = {.kind = C_REALLOC};
    size_t n = op->x, keep;

    if (v == NULL)
        return 0;
    if (outside) {
        f = n <= v->n ? 1 : fits_outside(who, n - v->n);
    } else if (chunk_of(n) <= v->chunk) {
        f = 1; /* it fits where it is */
    } else {
        f = fits(who, chunk_of(n)); /* a new chunk beside the old one, at worst */
        if (f < 0 && chunk_of(n) - v->chunk <= room(t))
            f = 0; /* it may still grow in place */
    }
    if (f == 0 || (f < 0 && who == MAIN))
        return 0;
    if (val_check(v, "a value about to be reallocated"))
        return 1;
    c.p = v->p;
    c.n = n;
    RUN(who, &c, f < 0, "rt_realloc");
    was = *v;
    keep = n < was.n ? n : was.n;
    if (c.r == NULL || ((uintptr_t)c.r & 15) != 0)
        return prop_fail("rt_realloc(%p, %zu) in %s returns %p", (void *)was.p, n, who_name[who],
                         c.r);
    if (!reads(c.r, keep, was.fill))
        return prop_fail("rt_realloc(%p, %zu) in %s does not keep the first %zu bytes of 0x%02x",
                         (void *)was.p, n, who_name[who], keep, was.fill);
    if (!outside && overlaps(who, c.r, n, was.p))
        return 1;
    memset(c.r, op->v, n);
    v->p = c.r;
    v->n = n;
    v->fill = op->v;
    if (outside) {
        t->held = t->held - was.n + n;
    } else {
        v->chunk = chunk_of(n) > was.chunk ? chunk_of(n) : was.chunk;
        t->held = t->held - was.chunk + v->chunk;
    }
    return 0;
}

static int op_free(const struct prop_op *op)
{
    int who = cur(), outside;
    struct task *t = &T.t[who];
    struct val *v = pick_val(t, op->sel, &outside);
    struct cmd c = {.kind = C_FREE};

    if (v == NULL)
        return 0;
    if (val_check(v, "a value about to be freed"))
        return 1;
    c.p = v->p;
    RUN(who, &c, 0, "rt_free");
    t->held -= outside ? v->n : v->chunk;
    if (outside)
        val_drop(t->out, &t->nout, (unsigned)(v - t->out));
    else
        val_drop(t->blk, &t->nblk, (unsigned)(v - t->blk));
    return 0;
}

/* ---- outside values ------------------------------------------------------ */

/* A new outside value of task who: recorded, counted. */
static void out_add(int who, void *p, size_t n, uint8_t fill)
{
    struct task *t = &T.t[who];
    t->out[t->nout++] = (struct val){p, n, 0, fill};
    t->held += n;
}

static int op_outside(const struct prop_op *op)
{
    int who = cur(), f;
    struct task *t = &T.t[who];
    struct cmd c = {.kind = C_OUTSIDE, .fill = op->v};
    size_t n = op->x;

    if (t->nout == MAX_OUTS)
        return 0;
    if (op->sel & 0x80) {
        if (who == MAIN)
            return 0;
        n = room(t) + 1;
    }
    f = fits_outside(who, n);
    if (f == 0 || (f < 0 && who == MAIN))
        return 0;
    c.n = n;
    RUN(who, &c, f < 0, "rt_alloc_outside");
    if (c.r == NULL)
        return prop_fail("rt_alloc_outside(%zu) returns NULL", n);
    out_add(who, c.r, n, op->v);
    return 0;
}

static int op_clone(const struct prop_op *op)
{
    int who = cur(), outside, f;
    struct task *t = &T.t[who];
    struct val *v = pick_val(t, op->sel, &outside);
    struct cmd c = {.kind = C_CLONE};

    if (v == NULL || t->nout == MAX_OUTS)
        return 0;
    f = fits_outside(who, v->n);
    if (f == 0 || (f < 0 && who == MAIN))
        return 0;
    c.p = v->p;
    c.n = v->n;
    RUN(who, &c, f < 0, "rt_clone_outside");
    if (c.r == NULL || c.r == (void *)v->p)
        return prop_fail("rt_clone_outside(%p, %zu) returns %p, not a new value", (void *)v->p,
                         v->n, c.r);
    if (!reads(c.r, v->n, v->fill))
        return prop_fail("rt_clone_outside(%p, %zu) does not copy its %zu bytes of 0x%02x",
                         (void *)v->p, v->n, v->n, v->fill);
    out_add(who, c.r, v->n, v->fill);
    return 0;
}

static int op_hand_over(const struct prop_op *op)
{
    int who = cur();
    struct task *t = &T.t[who];
    struct cmd c = {.kind = C_HAND_OVER};
    struct val v;
    unsigned i;

    if ((op->sel & 0x80) && t->nblk != 0) { /* a block value: refused, nothing changed */
        c.p = t->blk[op->sel % t->nblk].p;
        RUN(who, &c, 0, "rt_hand_over");
        if (c.r != NULL || c.err != EINVAL)
            return prop_fail("rt_hand_over of block value %p returns %p with errno %d, not NULL "
                             "with EINVAL", c.p, c.r, c.err);
        return 0;
    }
    if (t->nout == 0)
        return 0;
    i = op->sel % t->nout;
    v = t->out[i];
    c.p = v.p;
    RUN(who, &c, 0, "rt_hand_over");
    if (c.r != v.p)
        return prop_fail("rt_hand_over(%p) returns %p, not the value itself", (void *)v.p, c.r);
    val_drop(t->out, &t->nout, i);
    t->held -= v.n;
    if (val_check(&v, "a value handed over"))
        return 1;
    free(v.p); /* the foreign owner's now: plain free releases it */
    return 0;
}

/* ---- tasks ----------------------------------------------------------------- */

/* The default strategy's block for a task made while `running` tasks run,
** the one being made included (docs/budgets.md): the blocks share 1/64 of
** the physical memory, each at least 64 KiB. */
static size_t default_block(size_t running)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t bytes;

    if (pages <= 0 || page <= 0)
        return 65536;
    bytes = ((size_t)pages * (size_t)page / 64 / running) & ~(size_t)4095;
    return bytes > 65536 ? bytes : 65536;
}

/* The machines a default-strategy spawn runs on (prop_machine.c), as
** page counts of 4 KiB: the formula's block for two tasks running is
** phys / 128 rounded down to 4 KiB, at least 64 KiB. 1 GiB gives 8 MiB,
** 16 MiB gives 128 KiB; 8 MiB gives the floor exactly, one page less is
** under it, one page more rounds down to it, 64 pages more rounds to
** 68 KiB; and a sysconf that fails (-1) gives the floor. A driver linked
** without the wrapper runs them all on the real machine. */
long prop_machine_pages;
static const long machine_pages[] = {262144, 4096, 2048, 2047, 2049, 2112, -1};

/* A task with a fixed block of 512 * (1 + x % 128) bytes, or (sel odd)
** with the default strategy's on machine x % 7, made while it and main's
** run. */
static int op_spawn(const struct prop_op *op)
{
    struct task *t = &T.t[KID];
    struct cmd c = {.kind = C_PROBE};
    size_t budget = 512 * (1 + (size_t)(op->x % 128));
    size_t machines = sizeof machine_pages / sizeof machine_pages[0];

    if (t->live || T.spawns == SPAWNS_A_RUN)
        return 0;
    T.spawns++;
    pthread_once(&kid_once, kid_key_make);
    K.posted = K.replied = K.ended = 0;
    if (op->sel & 1) {
        __atomic_store_n(&prop_machine_pages, machine_pages[op->x % machines], __ATOMIC_RELAXED);
        budget = default_block(2);
        rt_set_strategy(rt_default_strategy());
    } else {
        rt_set_strategy(rt_fixed_strategy(budget));
    }
    K.task = rt_spawn(kid_main, NULL);
    /* the block is made in rt_spawn, on this thread: the real machine again */
    __atomic_store_n(&prop_machine_pages, 0, __ATOMIC_RELAXED);
    if (K.task == NULL)
        return 0; /* no thread to be had: nothing to check */
    memset(t, 0, sizeof *t);
    t->live = 1;
    t->budget = budget;
    T.blocks++;
    RUN(KID, &c, 0, "the spawned task's first allocation");
    if (c.budget != budget)
        return prop_fail("a task spawned with %s strategy of %zu bytes has rt_budget() %zu",
                         op->sel & 1 ? "the default" : "a fixed", budget, c.budget);
    if (c.held != 0)
        return prop_fail("a new task holds %zu bytes after allocating and freeing one value",
                         c.held);
    t->arena = (const unsigned char *)c.r - HEADER;
    return 0;
}

/* The kid returns `result` (NULL, or an outside value it holds) and is
** joined: main holds the result, everything else the kid held is freed. */
static int join_kid(unsigned char *result)
{
    struct task *t = &T.t[KID], *m = &T.t[MAIN];
    struct cmd c = {.kind = C_RETURN, .p = result};
    struct val v = {0};
    void *r = (void *)1;
    rt_status st;

    for (unsigned i = 0; i < t->nout; i++)
        if (t->out[i].p == result)
            v = t->out[i];
    watch_kid(result);
    post(&c);
    st = rt_join(K.task, &r);
    kid_forget();
    if (st != RT_OK)
        return prop_fail("rt_join of a task that returned gives %d, not RT_OK", (int)st);
    if (r != result)
        return prop_fail("rt_join gives the result %p, the task returned %p", r, (void *)result);
    if (result != NULL) {
        out_add(MAIN, result, v.n, v.fill);
        if (val_check(&m->out[m->nout - 1], "a task's result, joined"))
            return 1;
    }
    return prop_watch_verify("a task that returned");
}

static int op_join(const struct prop_op *op)
{
    struct task *t = &T.t[KID];
    unsigned char *result = NULL;

    if (!t->live)
        return 0;
    if ((op->sel & 1) && t->nout != 0 && T.t[MAIN].nout < MAX_OUTS &&
        fits_outside(MAIN, t->out[(op->sel >> 1) % t->nout].n) == 1)
        result = t->out[(op->sel >> 1) % t->nout].p;
    return join_kid(result);
}

static int op_panic(const struct prop_op *op)
{
    struct cmd c = {.kind = C_PANIC, .n = op->x, .fill = op->v, .region = op->sel & 1};

    if (!T.t[KID].live)
        return 0;
    RUN(KID, &c, 1, "rt_panic");
    return 0;
}

/* ---- channels ---------------------------------------------------------------- */

static struct chan *chan_pick(uint16_t y)
{
    struct chan *ch = &T.ch[y & 1];

    if (ch->c == NULL) {
        ch->cap = (y & 1) ? QUEUE_MAX : 1;
        ch->c = rt_chan_new(ch->cap);
        ch->closed = 0;
        ch->head = ch->count = 0;
    }
    return ch;
}

static int op_send(const struct prop_op *op)
{
    int who = cur();
    struct task *t = &T.t[who];
    struct chan *ch = chan_pick(op->y);
    struct cmd c = {.kind = C_SEND, .c = ch->c};
    struct val v;
    unsigned i;

    if (!ch->closed && ch->count == ch->cap)
        return 0; /* it would block: nobody runs to receive */
    if ((op->sel & 0x80) && t->nblk != 0) { /* a block value never leaves its task */
        c.p = t->blk[op->sel % t->nblk].p;
        RUN(who, &c, 0, "rt_send");
        if (c.st != RT_REFUSED)
            return prop_fail("rt_send of block value %p gives %d, not RT_REFUSED", c.p, (int)c.st);
        return 0;
    }
    if (t->nout == 0)
        return 0;
    i = op->sel % t->nout;
    v = t->out[i];
    c.p = v.p;
    RUN(who, &c, 0, "rt_send");
    if (ch->closed) {
        if (c.st != RT_CLOSED)
            return prop_fail("rt_send on a closed channel gives %d, not RT_CLOSED", (int)c.st);
        return 0; /* the sender still holds it */
    }
    if (c.st != RT_OK)
        return prop_fail("rt_send of outside value %p gives %d, not RT_OK", (void *)v.p,
                         (int)c.st);
    val_drop(t->out, &t->nout, i);
    ch->q[(ch->head + ch->count++) % QUEUE_MAX] = (struct item){v.p, v.n, v.fill, who};
    return 0; /* still counted against the sender */
}

static int op_recv(const struct prop_op *op)
{
    int who = cur(), f;
    struct task *t = &T.t[who];
    struct chan *ch = chan_pick(op->y);
    struct cmd c = {.kind = C_RECV, .c = ch->c};
    struct item it;

    if (ch->count == 0) {
        if (!ch->closed)
            return 0; /* it would block */
        RUN(who, &c, 0, "rt_recv");
        if (c.r != NULL)
            return prop_fail("rt_recv on a closed and empty channel gives %p, not NULL", c.r);
        return 0;
    }
    if (t->nout == MAX_OUTS)
        return 0;
    it = ch->q[ch->head];
    /* the task's own value is charged to it already (in flight): it always fits */
    f = it.sender == who ? 1 : fits_outside(who, it.n);
    if (f == 0 || (f < 0 && who == MAIN))
        return 0;
    RUN(who, &c, f < 0, "rt_recv"); /* a panic leaves the value at the head */
    if (c.r != it.p)
        return prop_fail("rt_recv gives %p, the model expects %p, the value at the head of the "
                         "queue (%u queued, %zu bytes of 0x%02x)", c.r, (void *)it.p, ch->count,
                         it.n, it.fill);
    ch->head = (ch->head + 1) % QUEUE_MAX;
    ch->count--;
    if (it.sender != ENDED)
        T.t[it.sender].held -= it.n;
    out_add(who, it.p, it.n, it.fill);
    return val_check(&t->out[t->nout - 1], "a value received");
}

static int op_close(const struct prop_op *op)
{
    struct chan *ch = chan_pick(op->y);

    rt_chan_close(ch->c);
    ch->closed = 1;
    return 0;
}

/* ---- shared values and doors (D5, D6, D11) ---------------------------------- */

/* The room left in a shared value's block: the value is its one live
** chunk between doors (every door allocation is freed in its door). */
static size_t stored_bytes(const struct shared *sh)
{
    size_t n = 0;
    for (unsigned i = 0; i < sh->nstored; i++)
        n += sh->stored[i].n;
    return n;
}

static size_t shared_room(const struct shared *sh)
{
    return (sh->block & ~(size_t)15) - chunk_of(sh->size) - stored_bytes(sh);
}

/* The room of a build's fresh block: the value's chunk, and `stored`
** bytes stored into it by the build. */
static size_t fresh_room(const struct shared *sh, size_t stored)
{
    return (sh->block & ~(size_t)15) - chunk_of(sh->size) - stored;
}

/* What the value's block holds between doors (rt_shared_held). */
static size_t shared_held(const struct shared *sh)
{
    return chunk_of(sh->size) + stored_bytes(sh);
}

/* A rebuild or a free frees the values stored into the state it drops. */
static void stored_drop(struct shared *sh)
{
    for (unsigned i = 0; i < sh->nstored; i++)
        prop_watch_add(sh->stored[i].p, 0);
    sh->nstored = 0;
}

/* Whether the value reads what the model says, through rt_get on main's
** task; only when it is not poisoned (a get would rebuild a supervised
** one, and refuses the others). */
static int shared_check(const struct shared *sh, const char *why)
{
    unsigned char out[MAX_SIZE];
    rt_status st;

    if (rt__shared_locked(sh->s)) /* a door left it locked: rt_get would block for good */
        return prop_fail("%s: shared value %u is still locked, with no door open", why,
                         (unsigned)(sh - T.sh));
    if (sh->poisoned)
        return 0;
    st = rt_get(sh->s, out);
    if (st != RT_OK)
        return prop_fail("%s: rt_get of a value that is not poisoned gives %d", why, (int)st);
    for (size_t i = 0; i < sh->size; i++)
        if (out[i] != sh->value)
            return prop_fail("%s: byte %zu of shared value %u reads 0x%02x, the model expects "
                             "0x%02x", why, i, (unsigned)(sh - T.sh), out[i], sh->value);
    return 0;
}

/* rt_poisoned() of every value as the model has it now. */
static void poison_snapshot(uint8_t *pre)
{
    memset(pre, 0, MAX_SHARED);
    for (unsigned i = 0; i < T.nsh; i++)
        pre[i] = T.sh[i].poisoned != 0;
}

/* ---- what fn, or a build, does in its door: the model's plans ---------------
**
** Each plan is made before the door runs, in the order the door will do
** the work (the rebuilds in lock order, then fn), and moves the model as
** the work will: so a later plan (a send after a build's send, a nested
** door after a build's) starts from what the earlier leaves. What each
** saw is checked once the door has run. */

/* A block value of n bytes in task who's block (a door of RT_COPY values,
** an access, an RT_COPY value's build), grown to 2n + 1 bytes if j->grow:
** 1 it fits, -1 it panics (its chunk does not fit the room, or the grown
** one cannot fit even in place: the caller asks that of the spawned task
** only), 0 the model cannot say (the caller drops the allocation). Where
** the growth is certain neither way beforehand, grow_fits decides in fn,
** from where the first chunk landed, and grows only where it certainly
** fits. *task is the first chunk, *extra what a growth adds (j->grew). */
static int task_block_plan(int who, struct door_job *j, size_t n, size_t *task, size_t *extra)
{
    const struct task *t = &T.t[who];
    size_t c1 = chunk_of(n), c2 = chunk_of(2 * n + 1);
    int f = fits(who, c1);

    *task = c1;
    *extra = c2 - c1;
    if (f != 1 || !j->grow) {
        j->grow = 0;
        return f;
    }
    if (c2 > room(t)) { /* in place it needs c2 - c1 of the room left past c1 */
        j->grow = who == KID;
        return who == KID ? -1 : 1;
    }
    if (c2 <= c1) {
        j->grow = 1; /* it fits where it is */
    } else if (who == MAIN) {
        j->grow = c1 + c2 <= room(t) / 2; /* as fits() says of main's block */
    } else {
        j->grow = 2;
        j->grow_top = top(t);
        j->grow_arena = t->arena;
        j->grow_budget = t->budget;
        j->grow_room = room(t);
    }
    return 1;
}

/* The door's allocation (1 + bytes in j->alloc, 0: none) as y bits 12 to
** 15 make it: bit 15 an outside value (bit 13: made by rt_clone_outside),
** bit 14 grown to 2n + 1 bytes with rt_realloc, bit 12 given away with
** rt_hand_over and free() (a block value: refused). With it live, the
** task's count is up by *task (and *extra if it grew: j->grew) and
** owned's block's by *value: an outside value counts against the task in
** any door; a block value against the value's block in a door of an
** RT_OWNED value (owned; grown only when the larger chunk fits there: a
** growth that panicked would leave the smaller chunk in the poisoned
** block), else the task's. Returns 1 if it fits for sure, -1 if it must
** panic, 0 if the model cannot say. */
static int door_alloc(int who, const struct shared *owned, struct door_job *j, uint16_t y,
                      size_t *task, size_t *value, size_t *extra)
{
    size_t n = j->alloc - 1;

    *task = *value = *extra = 0;
    if (j->alloc == 0)
        return 1;
    j->outside = (y >> 15) & 1;
    j->hand = (y >> 12) & 1;
    j->grow = (y >> 14) & 1;
    if (j->outside) {
        j->clone = (y >> 13) & 1;
        *task = j->grow ? 2 * n + 1 : n;
        return fits_outside(who, *task);
    }
    if (owned != NULL) { /* the value's block: the value, then this at its top */
        j->grow = j->grow && chunk_of(2 * n + 1) <= shared_room(owned);
        *value = chunk_of(j->grow ? 2 * n + 1 : n);
        return *value > shared_room(owned) ? -1 : 1;
    }
    return task_block_plan(who, j, n, task, extra);
}

/* No allocation in the door after all. */
static void door_alloc_none(struct door_job *j, size_t *task, size_t *value, size_t *extra)
{
    j->alloc = 0;
    j->outside = j->clone = j->grow = j->hand = 0;
    *task = *value = *extra = 0;
}

/* x bit 15: fn works in a region of x % 4096 bytes of v; its chunk is
** watched if the door is to panic. */
static void door_region(struct door_job *j, const struct prop_op *op, int panics)
{
    j->region = (op->x & 0x8000) != 0;
    j->region_bytes = op->x % 4096;
    j->region_fill = op->v;
    j->region_watch = panics;
}

static int door_region_check(const struct door_job *j, const char *door)
{
    if (j->ran && j->region && j->region_bad)
        return prop_fail("inside %s, a region's allocation of %zu bytes is not at its base, "
                         "or does not read its fill 0x%02x", door, j->region_bytes,
                         j->region_fill);
    return 0;
}

/* A door's channel work (send: the door's outside value on channel 0;
** recv: from channel 1), planned before the door runs unless something
** earlier in it panics; moves the model's counts and queues as the door
** will: a value sent is queued at once (its pointer filled in when the
** door has run), so a later send in the same door sees it. Returns
** whether the receive panics. */
static int door_chan_plan(int who, int send, int recv, struct door_job *j, struct door_chan *dc,
                          uint8_t fill, int earlier_panic)
{
    struct task *t = &T.t[who];

    memset(dc, 0, sizeof *dc);
    if (earlier_panic)
        return 0;
    if (send && j->alloc != 0 && !j->outside) {
        struct chan *ch = chan_pick(0);
        if (!ch->closed && ch->count < ch->cap)
            j->send_on = ch->c; /* a block value: RT_REFUSED, nothing sent */
    } else if (send && j->alloc != 0 && j->outside) {
        struct chan *ch = chan_pick(0);
        if (ch->closed || ch->count < ch->cap) {
            j->send_on = ch->c;
            dc->sch = ch;
            dc->send = !ch->closed;
            dc->sent_n = j->grow ? 2 * (j->alloc - 1) + 1 : j->alloc - 1;
            dc->fill = fill;
            if (dc->send) {
                dc->slot = (ch->head + ch->count) % QUEUE_MAX;
                ch->q[dc->slot] = (struct item){NULL, dc->sent_n, fill, who};
                ch->count++;
                t->held += dc->sent_n; /* in flight: still the sender's */
                dc->extra += dc->sent_n;
            }
        }
    }
    dc->pre_recv = t->held;
    if (recv) {
        struct chan *ch = chan_pick(1);
        if (ch->count == 0) {
            if (ch->closed) {
                j->recv_on = ch->c;
                dc->rch = ch;
            }
        } else if (t->nout < MAX_OUTS) {
            /* the task's own value is charged to it already: it always fits */
            int fo = ch->q[ch->head].sender == who ? 1 : fits_outside(who, ch->q[ch->head].n);
            if (fo == 1 || (fo < 0 && who == KID)) {
                dc->it = ch->q[ch->head];
                j->recv_on = ch->c;
                j->got_bytes = dc->it.n;
                j->got_fill = dc->it.fill;
                dc->rch = ch;
                dc->recv = 1;
                dc->recv_panics = fo < 0; /* the value stays at the head */
                if (!dc->recv_panics) {
                    ch->head = (ch->head + 1) % QUEUE_MAX;
                    ch->count--;
                    if (dc->it.sender != ENDED)
                        T.t[dc->it.sender].held -= dc->it.n;
                    out_add(who, dc->it.p, dc->it.n, dc->it.fill);
                    /* it moves to the task's count, unless the task sent it */
                    dc->recv_delta = dc->it.sender == who ? 0 : dc->it.n;
                    dc->extra += dc->recv_delta;
                }
            }
        }
    }
    return dc->recv_panics;
}

/* After the door: the value sent is in its queue (counting against nobody
** if its sender ended meanwhile); what the job saw is the model's. The
** work ran to its channel part whenever the job ran: a panic the model
** planned earlier left no channel work planned. */
static int door_chan_done(int who, int ended, const struct door_job *j,
                          const struct door_chan *dc, const char *door)
{
    int done = j->ran;

    if (done && j->refused_bad)
        return prop_fail("inside %s, a block value was not refused by rt_hand_over (NULL, "
                         "EINVAL) or rt_send (RT_REFUSED)", door);
    if (dc->sch != NULL && dc->send) {
        if (j->sent == NULL || (done && j->send_st != RT_OK))
            return prop_fail("inside %s, rt_send of an outside value gives %d, the model RT_OK",
                             door, (int)j->send_st);
        dc->sch->q[dc->slot].p = j->sent;
        dc->sch->q[dc->slot].sender = ended ? ENDED : who;
    } else if (dc->sch != NULL && done && j->send_st != RT_CLOSED) {
        return prop_fail("inside %s, rt_send on a closed channel gives %d, not RT_CLOSED", door,
                         (int)j->send_st);
    }
    if (dc->rch != NULL && done && !dc->recv_panics) {
        if (j->got != (dc->recv ? (void *)dc->it.p : NULL))
            return prop_fail("inside %s, rt_recv gives %p, the model %p", door, j->got,
                             dc->recv ? (void *)dc->it.p : NULL);
        if (j->got_bad)
            return prop_fail("inside %s, the value received does not read its fill 0x%02x",
                             door, j->got_fill);
        if (dc->recv && j->recv_held != dc->pre_recv + dc->recv_delta)
            return prop_fail("inside %s, with a %zu-byte value received, the task holds %zu, "
                             "the model %zu", door, dc->it.n, j->recv_held,
                             dc->pre_recv + dc->recv_delta);
    }
    return 0;
}

/* The door nested last in fn or a build: `kind` on the value made right
** after T.sh[last] (NEST_UPDATE_ALL: on the two made after it), unless
** there is no such value, or one is poisoned and supervised (a rebuild
** there is the rebuilds' part), or something earlier panics; its fn
** panics if `panic`. Moves the model as the nested door will: an update
** writes `fill` (a panic poisons an RT_OWNED value and leaves an RT_COPY
** one as it was), an update_all `fill` and ~`fill` (a panic poisons both
** unless both copy); a door on a poisoned value gives RT_POISONED and its
** fn does not run. Returns whether the nested fn panics. */
static int nest_plan(struct door_job *j, struct nest_want *w, int kind, unsigned last, int panic,
                     uint8_t fill, int earlier_panic)
{
    unsigned nv = kind == NEST_UPDATE_ALL ? 2 : 1;
    int copies = 1;

    memset(w, 0, sizeof *w);
    j->nest_s[0] = j->nest_s[1] = NULL;
    if (kind == NEST_NONE || earlier_panic || last + nv >= T.nsh)
        return 0;
    for (unsigned k = 0; k < nv; k++)
        if (T.sh[last + 1 + k].poisoned && T.sh[last + 1 + k].supervised)
            return 0;
    w->st = RT_OK;
    for (unsigned k = 0; k < nv; k++) {
        struct shared *n = &T.sh[last + 1 + k];
        w->v[k] = n;
        w->held[k] = shared_held(n);
        if (n->poisoned)
            w->st = RT_POISONED;
        copies = copies && !n->owned;
        j->nest_s[k] = n->s;
        j->nest_size[k] = n->size;
    }
    w->value = w->v[0]->value;
    w->runs = w->st == RT_OK && kind != NEST_GET;
    j->nest_kind = kind;
    j->nest_fill = fill;
    j->nest_panic = w->runs && panic;
    if (w->runs && kind == NEST_UPDATE) {
        struct shared *n = w->v[0];
        if (n->owned || !j->nest_panic) /* in place, or the copy written back */
            n->value = fill;
        n->poisoned = n->owned && j->nest_panic;
    } else if (w->runs && kind == NEST_UPDATE_ALL && (!copies || !j->nest_panic)) {
        w->v[0]->value = fill;
        w->v[1]->value = (uint8_t)~fill;
        w->v[0]->poisoned = w->v[1]->poisoned = !copies && j->nest_panic;
    }
    return j->nest_panic;
}

/* What the nested door gave and what its fn read, against the model; then
** its values read back from main's task. */
static int nest_check(const struct door_job *j, const struct nest_want *w, const char *where)
{
    static const char *const names[] = {"rt_get", "rt_access", "rt_update", "rt_update_all"};
    unsigned nv = j->nest_kind == NEST_UPDATE_ALL ? 2 : 1;
    const char *name;

    if (w->v[0] == NULL || !j->ran)
        return 0;
    name = names[j->nest_kind];
    if (!j->nest_reached)
        return prop_fail("inside %s, the %s nested last was never opened", where, name);
    if (!j->nest_panic && j->nest_st != w->st)
        return prop_fail("inside %s, %s of shared value %u (made later) gives %d, the model %d",
                         where, name, (unsigned)(w->v[0] - T.sh), (int)j->nest_st, (int)w->st);
    if (j->nest_ran != w->runs)
        return prop_fail("inside %s, the fn of %s on shared value %u %s, the model: it %s",
                         where, name, (unsigned)(w->v[0] - T.sh), j->nest_ran ? "ran" : "did not run",
                         w->runs ? "runs" : "does not");
    for (unsigned k = 0; j->nest_ran && k < nv; k++)
        if (j->nest_poisoned[k] || j->nest_held[k] != w->held[k])
            return prop_fail("inside the fn of %s nested in %s, rt_poisoned() of shared value %u "
                             "is %d and rt_shared_held() %zu, the model 0 and %zu", name, where,
                             (unsigned)(w->v[k] - T.sh), j->nest_poisoned[k], j->nest_held[k],
                             w->held[k]);
    if (((j->nest_kind == NEST_GET && w->st == RT_OK) ||
         (j->nest_kind == NEST_ACCESS && j->nest_ran)) &&
        !reads(j->nest_seen, w->v[0]->size, w->value))
        return prop_fail("inside %s, %s of shared value %u reads bytes other than its 0x%02x",
                         where, name, (unsigned)(w->v[0] - T.sh), w->value);
    for (unsigned k = 0; k < nv; k++)
        if (shared_check(w->v[k], "a value a nested door opened, after it"))
            return 1;
    return 0;
}

/* What a job leaves for the model to check once its door has closed: on
** main's task, the chunk its region took and gave back (main's cache is
** the model's); a block value it made, which must have overlapped none
** the task holds. */
static int job_after(int who, const struct door_job *j, int ended)
{
    if (!j->ran || ended)
        return 0;
    if (who == MAIN && j->region_at != NULL && prop_region_passed(j->region_at, j->region_bytes))
        return 1;
    return j->at != NULL && overlaps(who, j->at, j->at_n, NULL);
}

/* ---- builds ----------------------------------------------------------------- */

/* What build does, from PROP_SHARED's bits (prop.h). */
static void build_flags(struct shared *sh, const struct prop_op *op)
{
    sh->build_bytes = (size_t)(op->sel >> 2) * 24; /* sel bits 2 to 7 */
    sh->build_outside = (op->y >> 14) & 1;
    sh->build_clone = (op->y >> 13) & 1;
    sh->build_hand = (op->y >> 12) & 1;
    sh->build_grow = (op->x >> 6) & 1;
    sh->build_send = (op->x >> 7) & 1;
    sh->build_recv = (op->x >> 8) & 1;
    sh->build_region = (op->x >> 9) & 1;
    sh->build_nest = (op->x >> 10) & 1 ? (op->x >> 11) & 3 : NEST_NONE;
    sh->build_nest_panic = (op->x >> 13) & 1;
}

/* Plans one build of sh on task who: the first (first: in
** rt_shared_supervised, no handle yet), or a rebuild in a door whose
** values end at T.sh[last]. in: an outside value of the task the rebuild
** stores into the fresh block (RT_OWNED values only), unstored again if
** unstore; panic: the build panics at its end (the spawned task only).
** Records what the build must read as it enters (the model's answers now)
** and moves the model as the build will, up to where it panics. Returns
** whether it panics: a store the fresh block cannot take (the value goes
** back to the task, and is freed with it), an allocation or its growth
** that does not fit where it is made (the fresh block for an RT_OWNED
** value, the task's block for an RT_COPY one, the task's count for an
** outside value), a value received that the task cannot take, its nested
** door's fn, or the panic asked; on main's task such a step is left out.
** A build that panics leaves the value as it was (poisoned, or never
** made), its fresh block freed with what was stored into it; one that
** returns replaces the value's state with the fresh one. */
static int build_plan(int who, struct shared *sh, int first, unsigned last, const struct val *in,
                      int unstore, int panic)
{
    struct task *t = &T.t[who];
    struct build_ctx *b = &sh->ctx;
    struct door_job *j = &b->job;
    size_t n = sh->build_bytes, kept = 0, task, extra;
    int panics = 0, f;

    sh->want_held = t->held;
    sh->want_budget = t->budget;
    poison_snapshot(sh->want_poisoned);
    b->ran = b->store_seen = b->unstore_seen = 0;
    b->store = NULL;
    b->unstore = 0;
    *j = (struct door_job){.alloc_in = first ? NULL : sh->s};
    sh->build_in = (struct val){0};
    sh->store_panics = 0;
    if (in != NULL && (in->n <= fresh_room(sh, 0) || who == KID)) {
        sh->build_in = *in;
        b->store = in->p;
        b->unstore = unstore;
        if (in->n > fresh_room(sh, 0)) {
            panics = sh->store_panics = 1;
        } else if (!unstore) {
            for (unsigned i = 0; i < t->nout; i++)
                if (t->out[i].p == in->p)
                    val_drop(t->out, &t->nout, i);
            kept = sh->build_in.n;
            t->held -= kept;
        }
    }
    if (!panics && n != 0) {
        j->alloc = 1 + n;
        j->outside = sh->build_outside;
        j->clone = sh->build_outside && sh->build_clone;
        j->grow = sh->build_grow;
        j->hand = sh->build_hand;
        if (j->outside)
            f = fits_outside(who, j->grow ? 2 * n + 1 : n);
        else if (sh->owned) /* the fresh block: the value, then this at its top, grown in place */
            f = chunk_of(j->grow ? 2 * n + 1 : n) > fresh_room(sh, kept) ? -1 : 1;
        else
            f = task_block_plan(who, j, n, &task, &extra);
        if (f == 0 || (f < 0 && who == MAIN))
            door_alloc_none(j, &task, &task, &extra);
        panics = f < 0 && who == KID;
    }
    panics = door_chan_plan(who, sh->build_send, sh->build_recv, j, &sh->dc, 0xb1, panics) ||
             panics;
    j->region = sh->build_region;
    j->region_bytes = sh->size;
    j->region_fill = b->pattern;
    panics = nest_plan(j, &sh->nest, first ? NEST_NONE : sh->build_nest, last,
                       panic && sh->build_nest_panic, (uint8_t)(b->pattern ^ 0x5a), panics) ||
             panics;
    b->panic = panic;
    panics = panics || panic;
    j->region_watch = panics;
    if (panics) {
        if (kept != 0) /* stored into the fresh block: freed with it */
            prop_watch_add(sh->build_in.p, 0);
        return 1;
    }
    if (!first)
        stored_drop(sh); /* the old state goes, with what was stored into it */
    sh->poisoned = 0;
    sh->value = b->pattern;
    if (kept != 0)
        sh->stored[sh->nstored++] = sh->build_in;
    return 0;
}

/* What the build planned last saw against the model: on entry, the task's
** count and budget as they were then, every other value's rt_poisoned (one
** rebuilt earlier in the same door: false); in a rebuild, the value still
** poisoned (it stays so if build panics, so until build returns) and its
** fresh block holding the value alone; after a store and an unstore, the
** counts moved by the value's bytes; with its allocation live, the
** allocation counted where build_plan said (the fresh block for an
** RT_OWNED value's block value, else the task). */
static int build_saw(const struct shared *sh, int first)
{
    const struct build_ctx *b = &sh->ctx;
    const struct door_job *j = &b->job;
    unsigned i = (unsigned)(sh - T.sh);
    const char *what = first ? "first build" : "rebuild";
    size_t held = sh->want_held, value = chunk_of(sh->size);
    size_t in = b->store != NULL && !sh->store_panics ? sh->build_in.n : 0;
    size_t kept = b->unstore ? 0 : in, n = j->alloc - 1;
    int in_task = j->outside || !sh->owned;
    size_t grown = j->grew ? 2 * n + 1 : n, chunk = j->outside ? grown : chunk_of(grown);

    if (!b->ran)
        return prop_fail("shared value %u: its %s did not run", i, what);
    if (b->held != held || b->budget != sh->want_budget)
        return prop_fail("inside the %s of shared value %u, rt_held() is %zu and rt_budget() "
                         "%zu, the model %zu and %zu (the task's)", what, i, b->held, b->budget,
                         held, sh->want_budget);
    if (!first && !b->poisoned)
        return prop_fail("inside the rebuild of shared value %u, rt_poisoned() is false, the "
                         "model: poisoned until build returns", i);
    if (!first && b->shared_held != value)
        return prop_fail("inside the rebuild of shared value %u, rt_shared_held() is %zu, the "
                         "model %zu (a fresh block: the value alone)", i, b->shared_held, value);
    if (sh->store_panics && b->store_seen)
        return prop_fail("inside the rebuild of shared value %u, rt_store of %zu bytes returned "
                         "%d; the model: the fresh block has %zu left, so it panics", i,
                         sh->build_in.n, (int)b->stored, fresh_room(sh, 0));
    if (in != 0 && (!b->store_seen || b->stored != RT_OK || b->store_held != held - in ||
                    b->store_shared != value + in))
        return prop_fail("inside the rebuild of shared value %u, rt_store of %zu bytes gives %d; "
                         "after it the task holds %zu and the fresh block %zu, the model "
                         "RT_OK, %zu and %zu", i, in, (int)b->stored, b->store_held,
                         b->store_shared, held - in, value + in);
    if (in != 0 && b->unstore &&
        (!b->unstore_seen || b->unstore_held != held || b->unstore_shared != value))
        return prop_fail("inside the rebuild of shared value %u, after unstoring the %zu bytes "
                         "it stored, the task holds %zu and the fresh block %zu, the model %zu "
                         "and %zu", i, in, b->unstore_held, b->unstore_shared, held, value);
    if (j->alloc != 0 && j->alloc_seen && j->task_held != held - kept + (in_task ? chunk : 0))
        return prop_fail("inside the %s of shared value %u, with a %zu-byte %s live, the task "
                         "holds %zu, the model %zu (it counts against %s)", what, i, grown,
                         j->outside ? "outside value" : "allocation", j->task_held,
                         held - kept + (in_task ? chunk : 0),
                         in_task ? "the task" : "the fresh block");
    if (!first && j->alloc != 0 && j->alloc_seen &&
        j->shared_held != value + kept + (in_task ? 0 : chunk))
        return prop_fail("inside the rebuild of shared value %u, with a %zu-byte allocation "
                         "live, its block holds %zu, the model %zu", i, grown, j->shared_held,
                         value + kept + (in_task ? 0 : chunk));
    if (j->alloc != 0 && j->alloc_seen && j->clone_bad)
        return prop_fail("inside the %s of shared value %u, a clone, or a value grown, does "
                         "not read what it held", what, i);
    for (unsigned k = 0; k < b->nall; k++)
        if (b->poisoned_all[k] != sh->want_poisoned[k])
            return prop_fail("inside the %s of shared value %u, rt_poisoned() of shared value %u "
                             "is %d, the model %d", what, i, k, b->poisoned_all[k],
                             sh->want_poisoned[k]);
    return 0;
}

/* Everything the build planned last did, against the model, once the
** operation that ran it is over (ended: its task panicked in it). */
static int build_done(int who, const struct shared *sh, int first, int ended)
{
    const char *what = first ? "a first build" : "a rebuild";
    const struct door_job *j = &sh->ctx.job;

    return build_saw(sh, first) || door_region_check(j, what) ||
           door_chan_done(who, ended, j, &sh->dc, what) || nest_check(j, &sh->nest, what) ||
           job_after(who, j, ended);
}

/* Before fn runs: RT_POISONED if a value is poisoned and not supervised;
** else the poisoned supervised ones are rebuilt, in lock order (values
** made earlier first), each build planned by build_plan, and rebuilt[i]
** says which were. With `store` (1 + a selector), the first rebuild of an
** RT_OWNED value stores the task's outside value selected (and unstores
** it if `unstore`); with panic_first, the first rebuild's build panics.
** A build that panics ends the door there (*panics): fn never runs, and
** no later value is rebuilt. */
static rt_status door_ready(int who, struct shared **v, unsigned n, int *rebuilt,
                            unsigned store, int unstore, int panic_first, int *panics)
{
    struct task *t = &T.t[who];
    unsigned order[2] = {0, 1}, last = 0;

    *panics = 0;
    if (n == 2 && v[1] < v[0])
        order[0] = 1, order[1] = 0;
    for (unsigned i = 0; i < n; i++) {
        rebuilt[i] = 0;
        if ((unsigned)(v[i] - T.sh) > last)
            last = (unsigned)(v[i] - T.sh);
    }
    for (unsigned i = 0; i < n; i++)
        if (v[i]->poisoned && !v[i]->supervised)
            return RT_POISONED;
    for (unsigned o = 0; o < n; o++) {
        struct shared *sh = v[order[o]];
        struct val in = {0};
        if (!sh->poisoned)
            continue;
        if (store != 0 && sh->owned && t->nout != 0) {
            in = t->out[(store - 1) % t->nout];
            store = 0; /* the first rebuild only */
        }
        rebuilt[order[o]] = 1;
        if (build_plan(who, sh, 0, last, in.p != NULL ? &in : NULL, unstore, panic_first)) {
            *panics = 1;
            return RT_OK;
        }
        panic_first = 0;
    }
    return RT_OK;
}

/* The rebuilds of a door, in lock order, against the model. */
static int builds_done(int who, struct shared **v, unsigned n, const int *rebuilt, int ended)
{
    unsigned order[2] = {0, 1};

    if (n == 2 && v[1] < v[0])
        order[0] = 1, order[1] = 0;
    for (unsigned o = 0; o < n; o++)
        if (rebuilt[order[o]] && build_done(who, v[order[o]], 0, ended))
            return 1;
    return 0;
}

/* A door whose rebuild panicked (door_ready said so): fn never ran, the
** task ended; the values stay as the builds left them. */
static int door_ended_in_build(struct shared **v, unsigned n, const int *rebuilt, struct cmd *c,
                               const char *what)
{
    int f = run(KID, c, 1, what);

    if (f == FAILED || builds_done(KID, v, n, rebuilt, 1))
        return 1;
    for (unsigned i = 0; i < n; i++)
        if (shared_check(v[i], "after a door whose rebuild panicked"))
            return 1;
    return 0;
}

static int op_shared(const struct prop_op *op)
{
    int who = cur();
    struct shared *sh = &T.sh[T.nsh];
    unsigned char init[MAX_SIZE];

    if (T.nsh == MAX_SHARED)
        return 0;
    memset(sh, 0, sizeof *sh);
    sh->owned = op->sel & 1;
    sh->supervised = (op->sel >> 1) & 1;
    sh->size = 1 + op->x % MAX_SIZE;
    sh->block = chunk_of(sh->size) + op->y % 4096; /* the value always fits */
    sh->value = op->v;
    if (sh->supervised) {
        struct cmd c = {.kind = C_SUPERVISED, .skind = sh->owned ? RT_OWNED : RT_COPY,
                        .ctx = &sh->ctx, .block = sh->block};
        int f;
        build_flags(sh, op);
        sh->ctx = (struct build_ctx){.size = sh->size, .pattern = op->v};
        /* y bit 15: the first build panics (the spawned task only) */
        f = build_plan(who, sh, 1, 0, NULL, 0, who == KID && (op->y & 0x8000));
        f = run(who, &c, f, "rt_shared_supervised");
        if (f == FAILED || build_done(who, sh, 1, f == PANICKED))
            return 1;
        if (f == PANICKED) /* nothing is made: the blocks the model counts stay as they were */
            return 0;
        sh->s = c.r;
        sh->ctx.s = sh->s; /* a rebuild's build reads the value through it */
    } else {
        memset(init, op->v, sh->size);
        sh->s = rt_shared_new(sh->owned ? RT_OWNED : RT_COPY, sh->size, init, sh->block);
    }
    T.nsh++;
    T.blocks++;
    return shared_check(sh, "a new shared value");
}

/* What fn must read as it enters a door on v[0..n): the model's answers. */
struct entry {
    size_t held, budget, shared[2];
    uint8_t poisoned[MAX_SHARED];
};

/* The answers, taken once door_ready has run; and the job told which
** values to read. */
static void entry_expect(struct entry *e, struct door_job *j, int who, struct shared **v,
                         unsigned n)
{
    e->held = T.t[who].held;
    e->budget = T.t[who].budget;
    for (unsigned i = 0; i < T.nsh; i++) {
        e->poisoned[i] = T.sh[i].poisoned != 0;
        j->all[i] = T.sh[i].s;
    }
    j->nall = T.nsh;
    for (unsigned k = 0; k < 2; k++) {
        e->shared[k] = k < n ? shared_held(v[k]) : 0;
        j->door_vals[k] = k < n ? v[k]->s : NULL;
    }
}

static int entry_check(const struct entry *e, const struct door_job *j, const char *door)
{
    if (!j->entered)
        return 0;
    if (j->in_held != e->held || j->in_budget != e->budget)
        return prop_fail("entering %s's fn, rt_held() is %zu and rt_budget() %zu, the model "
                         "%zu and %zu", door, j->in_held, j->in_budget, e->held, e->budget);
    for (unsigned i = 0; i < j->nall; i++)
        if (j->in_poisoned[i] != e->poisoned[i])
            return prop_fail("entering %s's fn, rt_poisoned() of shared value %u is %d, the "
                             "model %d", door, i, j->in_poisoned[i], e->poisoned[i]);
    for (unsigned k = 0; k < 2; k++)
        if (j->door_vals[k] != NULL && j->in_shared[k] != e->shared[k])
            return prop_fail("entering %s's fn, rt_shared_held() of its value %c is %zu, the "
                             "model %zu", door, k == 0 ? 'a' : 'b', j->in_shared[k],
                             e->shared[k]);
    return 0;
}

/* x bit 12: fn's nested door, of the kind y bits 8 and 9 say; y bit 7:
** the door's panic (y bit 0) happens inside it. */
static int nest_of(const struct prop_op *op)
{
    return (op->x & 0x1000) ? (op->y >> 8) & 3 : NEST_NONE;
}

/* ---- the doors -------------------------------------------------------------- */

/* rt_update: fn writes v, stores an outside value of the task into the
** value (y bit 2, RT_OWNED), allocates in the door, unstores a stored
** value (y bit 3), opens a door of its own, panics (y bit 0); y bit 1: a
** rebuild's build panics. */
static int op_update(const struct prop_op *op)
{
    int who = cur(), kid = who == KID, f, panics = 0;
    struct task *t = &T.t[who];
    struct shared *sh, *v[1];
    struct cmd c = {.kind = C_UPDATE};
    struct val in = {0}, back = {0};
    size_t want_task = 0, want_shared = 0, dt, dv, dx;
    int rebuilt[1];
    struct entry e;
    struct door_chan dc;
    struct nest_want nw;
    rt_status want;

    if (T.nsh == 0)
        return 0;
    sh = v[0] = &T.sh[op->sel % T.nsh];
    c.a = sh->s;
    c.job = (struct door_job){.size_a = sh->size, .va = op->v, .alloc = op->x % 4096,
                              .panic = kid && (op->y & 1)};
    want = door_ready(who, v, 1, rebuilt, (op->y & 4) ? 1u + (op->y >> 4) : 0u, (op->y & 8) != 0,
                      kid && (op->y & 2), &f);
    if (f)
        return door_ended_in_build(v, 1, rebuilt, &c, "rt_update, in a build");
    entry_expect(&e, &c.job, who, v, 1);
    if (want == RT_OK && sh->owned) {
        c.job.alloc_in = sh->s;
        if ((op->y & 4) && t->nout != 0 && sh->nstored < MAX_STORED) {
            in = t->out[(op->y >> 4) % t->nout];
            if (in.n <= shared_room(sh) || kid)
                c.job.store = in.p;
            panics = in.n > shared_room(sh) && kid;
        }
    }
    if (!panics && c.job.store != NULL) { /* the model stores it, as fn will */
        val_drop(t->out, &t->nout, (unsigned)(in.p == t->out[0].p ? 0 : (op->y >> 4) % t->nout));
        t->held -= in.n;
        sh->stored[sh->nstored++] = in;
    }
    f = door_alloc(who, sh->owned ? sh : NULL, &c.job, op->y, &dt, &dv, &dx);
    if (f == 0 || (f < 0 && !kid) || panics)
        door_alloc_none(&c.job, &dt, &dv, &dx), f = 1;
    panics = panics || (want == RT_OK && f < 0);
    want_task = t->held + dt;
    want_shared = shared_held(sh) + dv;
    panics = door_chan_plan(who, op->x & 0x4000, op->x & 0x2000, &c.job, &dc, 0xd0,
                            panics || want != RT_OK) || panics;
    if (!panics && want == RT_OK && sh->owned && (op->y & 8) && sh->nstored != 0 &&
        t->nout < MAX_OUTS) {
        unsigned k = (op->y >> 4) % sh->nstored;
        back = sh->stored[k];
        if (fits_outside(who, back.n) == 1 || kid) {
            c.job.unstore = back.p;
            if (back.n > room(t)) {
                panics = 1; /* the value stays stored */
            } else {
                sh->stored[k] = sh->stored[--sh->nstored];
                out_add(who, back.p, back.n, back.fill);
            }
        }
    }
    panics = nest_plan(&c.job, &nw, nest_of(op), (unsigned)(sh - T.sh),
                       c.job.panic && (op->y & 0x80), (uint8_t)(op->v ^ 0x5a),
                       panics || want != RT_OK) || panics;
    panics = want == RT_OK && (panics || c.job.panic);
    door_region(&c.job, op, panics);
    f = run(who, &c, panics, "rt_update");
    if (f == FAILED)
        return 1;
    if (entry_check(&e, &c.job, "rt_update") || builds_done(who, v, 1, rebuilt, f == PANICKED) ||
        door_region_check(&c.job, "rt_update's fn") ||
        door_chan_done(who, f == PANICKED, &c.job, &dc, "rt_update's fn") ||
        nest_check(&c.job, &nw, "rt_update's fn") || job_after(who, &c.job, f == PANICKED))
        return 1;
    if (c.job.store_seen && c.job.stored == RT_OK &&
        (c.job.store_held != e.held - in.n || c.job.store_shared != e.shared[0] + in.n))
        return prop_fail("inside rt_update's fn, after storing %zu bytes, the task holds %zu "
                         "and the value's block %zu, the model %zu and %zu", in.n,
                         c.job.store_held, c.job.store_shared, e.held - in.n,
                         e.shared[0] + in.n);
    if (c.job.unstore_seen) {
        size_t moved = c.job.store_seen ? in.n : 0;
        if (c.job.unstore_held != e.held - moved + dc.extra + back.n ||
            c.job.unstore_shared != e.shared[0] + moved - back.n)
            return prop_fail("inside rt_update's fn, after unstoring %zu bytes, the task holds "
                             "%zu and the value's block %zu, the model %zu and %zu", back.n,
                             c.job.unstore_held, c.job.unstore_shared,
                             e.held - moved + dc.extra + back.n, e.shared[0] + moved - back.n);
    }
    if (want == RT_OK && sh->owned) { /* in place: what fn wrote stays */
        sh->value = op->v;
        sh->poisoned = panics;
    } else if (want == RT_OK && !panics) { /* a copy, written back when fn returns */
        sh->value = op->v;
    }
    if (f == PANICKED)
        return shared_check(sh, "after a panic in rt_update");
    if (c.st != want || c.job.ran != (want == RT_OK))
        return prop_fail("rt_update of %s shared value %u gives %d%s, the model expects %d",
                         sh->poisoned ? "poisoned" : "a", (unsigned)(op->sel % T.nsh),
                         (int)c.st, c.job.ran ? " having run fn" : "", (int)want);
    if (c.job.store != NULL && c.job.stored != RT_OK)
        return prop_fail("rt_store of outside value %p gives %d, not RT_OK", c.job.store,
                         (int)c.job.stored);
    if (c.job.alloc != 0 && c.job.ran) {
        want_task += c.job.grew ? dx : 0;
        if (c.job.clone_bad)
            return prop_fail("inside rt_update's fn, a clone, or a value grown, does not "
                             "read what it held");
        if (c.job.task_held != want_task)
            return prop_fail("inside the door, with a %zu-byte %s live, %s holds %zu "
                             "bytes, the model %zu (it must count against %s)",
                             c.job.alloc - 1, c.job.outside ? "outside value" : "allocation",
                             who_name[who], c.job.task_held, want_task,
                             sh->owned && !c.job.outside ? "the value's block" : "the task");
        if (sh->owned && c.job.shared_held != want_shared)
            return prop_fail("inside the door, the value's block holds %zu bytes, the model %zu",
                             c.job.shared_held, want_shared);
    }
    return prop_watch_verify("a value stored into a value rebuilt") ||
           shared_check(sh, "after rt_update");
}

/* rt_update_all over two values: fn writes v and ~v, stores an outside
** value of the task into the value whose block the door allocates from (y
** bit 2; a's if a is RT_OWNED, else b's), allocates in the door, unstores
** a stored value (y bit 3), opens a door of its own, panics (y bit 0); y
** bit 1: the build of the first value the door rebuilds (in lock order)
** panics. */
static int op_update_all(const struct prop_op *op)
{
    int who = cur(), kid = who == KID, f, panics, copies, store_panics = 0;
    struct task *t = &T.t[who];
    struct shared *v[2], *owned, *into;
    struct cmd c = {.kind = C_UPDATE_ALL};
    struct val in = {0}, back = {0};
    unsigned a, b;
    rt_status want;
    int rebuilt[2];
    struct entry e;
    size_t want_task, want_shared, dt, dv, dx;
    struct door_chan dc;
    struct nest_want nw;

    if (T.nsh < 2)
        return 0;
    a = op->sel % T.nsh;
    b = (a + 1 + (op->sel >> 2) % (T.nsh - 1)) % T.nsh;
    v[0] = &T.sh[a];
    v[1] = &T.sh[b];
    c.a = v[0]->s;
    c.b = v[1]->s;
    c.job = (struct door_job){.size_a = v[0]->size, .size_b = v[1]->size, .va = op->v,
                              .vb = (uint8_t)~op->v, .alloc = op->x % 4096,
                              .panic = kid && (op->y & 1)};
    want = door_ready(who, v, 2, rebuilt, (op->y & 4) ? 1u + (op->y >> 4) : 0u, (op->y & 8) != 0,
                      kid && (op->y & 2), &f);
    if (f)
        return door_ended_in_build(v, 2, rebuilt, &c, "rt_update_all, in a build");
    entry_expect(&e, &c.job, who, v, 2);
    copies = !v[0]->owned && !v[1]->owned;
    owned = copies ? NULL : v[0]->owned ? v[0] : v[1]; /* a's block if a is RT_OWNED */
    c.job.alloc_in = owned != NULL ? owned->s : NULL;
    /* stores go into the value whose block the door uses; with y bit 11
    ** and both RT_OWNED, into the other one */
    into = owned;
    if (owned != NULL && v[0]->owned && v[1]->owned && (op->y & 0x800)) {
        into = owned == v[0] ? v[1] : v[0];
        c.job.store_into = into->s;
    }
    if (want == RT_OK && into != NULL && (op->y & 4) && t->nout != 0 &&
        into->nstored < MAX_STORED) {
        unsigned k = (op->y >> 4) % t->nout;
        in = t->out[k];
        if (in.n <= shared_room(into) || kid)
            c.job.store = in.p;
        store_panics = in.n > shared_room(into) && kid;
        if (c.job.store != NULL && !store_panics) { /* the model stores it, as fn will */
            val_drop(t->out, &t->nout, k);
            t->held -= in.n;
            into->stored[into->nstored++] = in;
        }
    }
    f = door_alloc(who, owned, &c.job, op->y, &dt, &dv, &dx);
    if (f == 0 || (f < 0 && !kid) || store_panics)
        door_alloc_none(&c.job, &dt, &dv, &dx), f = 1;
    panics = store_panics || (want == RT_OK && f < 0);
    want_task = t->held + dt;
    want_shared = owned == NULL ? 0 : shared_held(owned) + dv;
    panics = door_chan_plan(who, op->x & 0x4000, op->x & 0x2000, &c.job, &dc, 0xd0,
                            panics || want != RT_OK) || panics;
    if (!panics && want == RT_OK && into != NULL && (op->y & 8) && into->nstored != 0 &&
        t->nout < MAX_OUTS) {
        unsigned k = (op->y >> 4) % into->nstored;
        back = into->stored[k];
        if (fits_outside(who, back.n) == 1 || kid) {
            c.job.unstore = back.p;
            if (back.n > room(t)) {
                panics = 1; /* the value stays stored */
            } else {
                into->stored[k] = into->stored[--into->nstored];
                out_add(who, back.p, back.n, back.fill);
            }
        }
    }
    panics = nest_plan(&c.job, &nw, nest_of(op), a > b ? a : b, c.job.panic && (op->y & 0x80),
                       (uint8_t)(op->v ^ 0x5a), panics || want != RT_OK) || panics;
    panics = want == RT_OK && (panics || c.job.panic);
    door_region(&c.job, op, panics);
    f = run(who, &c, panics, "rt_update_all");
    if (f == FAILED)
        return 1;
    if (entry_check(&e, &c.job, "rt_update_all") ||
        builds_done(who, v, 2, rebuilt, f == PANICKED) ||
        door_region_check(&c.job, "rt_update_all's fn") ||
        door_chan_done(who, f == PANICKED, &c.job, &dc, "rt_update_all's fn") ||
        nest_check(&c.job, &nw, "rt_update_all's fn") || job_after(who, &c.job, f == PANICKED))
        return 1;
    if (owned != NULL) {
        size_t sh0 = e.shared[into == v[0] ? 0 : 1], moved = c.job.store_seen ? in.n : 0;
        if (c.job.store_seen && c.job.stored == RT_OK &&
            (c.job.store_held != e.held - in.n || c.job.store_shared != sh0 + in.n))
            return prop_fail("inside rt_update_all's fn, after storing %zu bytes, the task "
                             "holds %zu and the value's block %zu, the model %zu and %zu",
                             in.n, c.job.store_held, c.job.store_shared, e.held - in.n,
                             sh0 + in.n);
        if (c.job.unstore_seen && (c.job.unstore_held != e.held - moved + dc.extra + back.n ||
                                   c.job.unstore_shared != sh0 + moved - back.n))
            return prop_fail("inside rt_update_all's fn, after unstoring %zu bytes, the task "
                             "holds %zu and the value's block %zu, the model %zu and %zu",
                             back.n, c.job.unstore_held, c.job.unstore_shared,
                             e.held - moved + dc.extra + back.n, sh0 + moved - back.n);
    }
    if (want == RT_OK && (!copies || !panics)) {
        v[0]->value = op->v;
        v[1]->value = (uint8_t)~op->v;
        v[0]->poisoned = v[1]->poisoned = !copies && panics;
    }
    if (f == PANICKED)
        return shared_check(v[0], "after a panic in rt_update_all") ||
               shared_check(v[1], "after a panic in rt_update_all");
    if (c.st != want || c.job.ran != (want == RT_OK))
        return prop_fail("rt_update_all of shared values %u and %u gives %d%s, the model "
                         "expects %d", a, b, (int)c.st, c.job.ran ? " having run fn" : "",
                         (int)want);
    if (c.job.store != NULL && c.job.stored != RT_OK)
        return prop_fail("rt_store of outside value %p in rt_update_all gives %d, not RT_OK",
                         c.job.store, (int)c.job.stored);
    if (c.job.alloc != 0 && c.job.ran) {
        want_task += c.job.grew ? dx : 0;
        if (c.job.clone_bad)
            return prop_fail("inside rt_update_all's fn, a clone, or a value grown, does not "
                             "read what it held");
        if (c.job.task_held != want_task)
            return prop_fail("inside rt_update_all's door, with a %zu-byte %s live, %s "
                             "holds %zu bytes, the model %zu (it must count against %s)",
                             c.job.alloc - 1, c.job.outside ? "outside value" : "allocation",
                             who_name[who], c.job.task_held, want_task,
                             owned != NULL && !c.job.outside ? "the value's block" : "the task");
        if (owned != NULL && c.job.shared_held != want_shared)
            return prop_fail("inside rt_update_all's door, the value's block holds %zu bytes, "
                             "the model %zu", c.job.shared_held, want_shared);
    }
    return prop_watch_verify("a value stored into a value rebuilt") ||
           shared_check(v[0], "after rt_update_all") || shared_check(v[1], "after rt_update_all");
}

/* rt_access (y bit 0: fn panics) and rt_get: they read, and poison nothing. */
static int op_read(const struct prop_op *op, int get)
{
    int who = cur(), f, panics;
    struct shared *sh, *v[1];
    struct cmd c = {.kind = get ? C_GET : C_ACCESS};
    rt_status want;
    int rebuilt[1];
    struct entry e;
    size_t dt, dv, dx;
    struct door_chan dc = {0};
    struct nest_want nw = {0};

    if (T.nsh == 0)
        return 0;
    sh = v[0] = &T.sh[op->sel % T.nsh];
    c.a = sh->s;
    c.job = (struct door_job){.size_a = sh->size, .panic = !get && who == KID && (op->y & 1),
                              .alloc = get ? 0 : op->x % 4096};
    want = door_ready(who, v, 1, rebuilt, 0, 0, 0, &f);
    if (f)
        return door_ended_in_build(v, 1, rebuilt, &c, get ? "rt_get, in a build" :
                                                            "rt_access, in a build");
    entry_expect(&e, &c.job, who, v, 1);
    f = door_alloc(who, NULL, &c.job, op->y, &dt, &dv, &dx);
    if (f == 0 || (f < 0 && who != KID))
        door_alloc_none(&c.job, &dt, &dv, &dx), f = 1;
    panics = !get && door_chan_plan(who, op->x & 0x4000, op->x & 0x2000, &c.job, &dc, 0xd1,
                                    f < 0 || want != RT_OK);
    if (!get)
        panics = nest_plan(&c.job, &nw, nest_of(op), (unsigned)(sh - T.sh),
                           c.job.panic && (op->y & 0x80), (uint8_t)(op->v ^ 0x5a),
                           f < 0 || panics || want != RT_OK) || panics;
    panics = want == RT_OK && (f < 0 || panics || c.job.panic);
    if (!get)
        door_region(&c.job, op, panics);
    f = run(who, &c, panics, get ? "rt_get" : "rt_access");
    if (f == FAILED)
        return 1;
    if (entry_check(&e, &c.job, get ? "rt_get" : "rt_access") ||
        builds_done(who, v, 1, rebuilt, f == PANICKED) ||
        door_region_check(&c.job, "rt_access's fn") ||
        door_chan_done(who, f == PANICKED, &c.job, &dc, "rt_access's fn") ||
        nest_check(&c.job, &nw, "rt_access's fn") || job_after(who, &c.job, f == PANICKED))
        return 1;
    if (f == PANICKED)
        return shared_check(sh, "after a panic in rt_access");
    if (c.st != want || (!get && c.job.ran != (want == RT_OK)))
        return prop_fail("%s of shared value %u gives %d, the model expects %d",
                         get ? "rt_get" : "rt_access", (unsigned)(op->sel % T.nsh), (int)c.st,
                         (int)want);
    if (want == RT_OK && !reads(c.job.seen, sh->size, sh->value))
        return prop_fail("%s of shared value %u reads bytes other than its 0x%02x",
                         get ? "rt_get" : "rt_access", (unsigned)(op->sel % T.nsh), sh->value);
    if (c.job.alloc != 0 && c.job.ran && c.job.clone_bad)
        return prop_fail("inside rt_access's fn, a clone, or a value grown, does not "
                         "read what it held");
    if (c.job.alloc != 0 && c.job.ran && c.job.task_held != e.held + dt + (c.job.grew ? dx : 0))
        return prop_fail("inside rt_access's fn, with a %zu-byte %s live, %s holds %zu bytes, "
                         "the model %zu (it must count against the task)", c.job.alloc - 1,
                         c.job.outside ? "outside value" : "allocation", who_name[who],
                         c.job.task_held, e.held + dt + (c.job.grew ? dx : 0));
    return 0;
}

/* ---- the run ------------------------------------------------------------------- */

int prop_task_step(const struct prop_op *op)
{
    switch (op->kind) {
    case PROP_ALLOC: return op_alloc(op);
    case PROP_REALLOC: return op_realloc(op);
    case PROP_FREE: return op_free(op);
    case PROP_OUTSIDE: return op_outside(op);
    case PROP_CLONE: return op_clone(op);
    case PROP_HAND_OVER: return op_hand_over(op);
    case PROP_SPAWN: return op_spawn(op);
    case PROP_JOIN: return op_join(op);
    case PROP_PANIC: return op_panic(op);
    case PROP_SEND: return op_send(op);
    case PROP_RECV: return op_recv(op);
    case PROP_CLOSE: return op_close(op);
    case PROP_SHARED: return op_shared(op);
    case PROP_UPDATE: return op_update(op);
    case PROP_UPDATE_ALL: return op_update_all(op);
    case PROP_ACCESS: return op_read(op, 0);
    case PROP_GET: return op_read(op, 1);
    default: return -1;
    }
}

int prop_task_check(void)
{
    size_t held = rt_held(), blocks = rt__blocks_live();

    if (held != T.t[MAIN].held)
        return prop_fail("rt_held() of main's task is %zu, the model's live bytes %zu", held,
                         T.t[MAIN].held);
    /* The kid's count changes only in its own commands (while it runs it
    ** is the current task), and each command ends with its rt_held(). */
    if (T.t[KID].live && K.held != T.t[KID].held)
        return prop_fail("rt_held() of the spawned task is %zu, the model's live bytes %zu",
                         K.held, T.t[KID].held);
    if (rt_budget() != T.t[MAIN].budget)
        return prop_fail("rt_budget() of main's task is %zu, the model %zu", rt_budget(),
                         T.t[MAIN].budget);
    /* What the kid read at the end of its last command, if this operation
    ** ran one: its budget, and whether each value is poisoned. */
    if (T.t[KID].live && K.fresh) {
        K.fresh = 0;
        if (K.budget != T.t[KID].budget)
            return prop_fail("rt_budget() of the spawned task is %zu, the model %zu", K.budget,
                             T.t[KID].budget);
        for (unsigned i = 0; i < K.nsh && i < T.nsh; i++) {
            if (K.poisoned[i] != (T.sh[i].poisoned != 0))
                return prop_fail("the spawned task reads rt_poisoned() of shared value %u as "
                                 "%d, the model says %d", i, K.poisoned[i],
                                 T.sh[i].poisoned != 0);
            if (K.shared[i] != SIZE_MAX && K.shared[i] != shared_held(&T.sh[i]))
                return prop_fail("the spawned task reads rt_shared_held() of shared value %u "
                                 "as %zu, the model %zu", i, K.shared[i],
                                 shared_held(&T.sh[i]));
        }
    }
    K.fresh = 0;
    if (blocks != T.blocks)
        return prop_fail("%zu blocks exist, the model expects %zu (main's, the spawned task's, "
                         "one a shared value)", blocks, T.blocks);
    /* Between two operations no door is open: a lock still held is one a
    ** door left behind, and the next door on the value would block for
    ** good, so it is a failure here rather than a hang there. */
    for (unsigned i = 0; i < T.nsh; i++)
        if (rt__shared_locked(T.sh[i].s))
            return prop_fail("shared value %u is still locked after the operation, with no door "
                             "open", i);
    for (unsigned i = 0; i < T.nsh; i++) /* between doors, from main's task */
        if (rt_shared_held(T.sh[i].s) != shared_held(&T.sh[i]))
            return prop_fail("rt_shared_held() of shared value %u is %zu between doors, the "
                             "model %zu", i, rt_shared_held(T.sh[i].s), shared_held(&T.sh[i]));
    for (unsigned i = 0; i < T.nsh; i++)
        if (rt_poisoned(T.sh[i].s) != (T.sh[i].poisoned != 0))
            return prop_fail("shared value %u is %spoisoned, the model says it is %s", i,
                             rt_poisoned(T.sh[i].s) ? "" : "not ",
                             T.sh[i].poisoned ? "poisoned" : "not");
    return 0;
}

void prop_task_begin(void)
{
    memset(&T, 0, sizeof T);
    T.t[MAIN].live = 1;
    T.t[MAIN].held = rt_held();
    T.t[MAIN].budget = rt_budget();
    T.blocks = rt__blocks_live();
}

int prop_task_end_checked(void)
{
    struct task *m = &T.t[MAIN];

    if (T.t[KID].live && (join_kid(NULL) || prop_task_check()))
        return 1;
    while (m->nblk > 0) {
        struct prop_op f = {PROP_FREE, (uint8_t)(2 * (m->nblk - 1)), 0, 0, 0};
        if (op_free(&f) || prop_task_check())
            return 1;
    }
    while (m->nout > 0) {
        struct prop_op f = {PROP_FREE, (uint8_t)(2 * (m->nout - 1) + 1), 0, 0, 0};
        if (op_free(&f) || prop_task_check())
            return 1;
    }
    for (unsigned i = 0; i < 2; i++) {
        struct chan *ch = &T.ch[i];
        if (ch->c == NULL)
            continue;
        for (unsigned k = 0; k < ch->count; k++) { /* freed with the channel */
            struct item *it = &ch->q[(ch->head + k) % QUEUE_MAX];
            if (it->sender != ENDED)
                T.t[it->sender].held -= it->n;
            prop_watch_add(it->p, 0);
        }
        rt_chan_free(ch->c);
        ch->c = NULL;
        ch->count = 0;
        if (prop_watch_verify("a value still queued when its channel was freed") ||
            prop_task_check())
            return 1;
    }
    while (T.nsh > 0) {
        struct shared *sh = &T.sh[--T.nsh];
        size_t held = rt_shared_held(sh->s);
        if (held != shared_held(sh))
            return prop_fail("shared value %u's block holds %zu bytes between doors, the model "
                             "%zu (its value's chunk and the values stored into it)", T.nsh,
                             held, shared_held(sh));
        stored_drop(sh);
        rt_shared_free(sh->s);
        T.blocks--;
        if (prop_watch_verify("a value stored into a shared value freed") || prop_task_check())
            return 1;
    }
    return 0;
}

void prop_task_end_unchecked(void)
{
    struct task *m = &T.t[MAIN];

    if (K.task != NULL) {
        struct cmd c = {.kind = C_RETURN};
        pthread_mutex_lock(&K.lock);
        int ended = K.ended;
        pthread_mutex_unlock(&K.lock);
        if (!ended)
            post(&c);
        rt_join(K.task, NULL);
        K.task = NULL;
    }
    for (unsigned i = 0; i < m->nblk; i++)
        rt_free(m->blk[i].p);
    for (unsigned i = 0; i < m->nout; i++)
        rt_free(m->out[i].p);
    for (unsigned i = 0; i < 2; i++)
        if (T.ch[i].c != NULL)
            rt_chan_free(T.ch[i].c);
    for (unsigned i = 0; i < T.nsh; i++)
        rt_shared_free(T.sh[i].s);
    memset(&T, 0, sizeof T);
}
