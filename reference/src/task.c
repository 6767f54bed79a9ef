/*
** task.c: tasks, their budgets, panics and the values they hold outside
** their block (D4 to D10).
**
** A task is a thread with a block (block.c) and a table of the outside
** values it holds. Everything it allocates comes from the block; a value
** that may outlive it (sent, returned, handed over) is malloc'ed outside
** and its bytes are charged to the block while the task holds it, so the
** block's `held` is the task's whole budget figure and the block can be
** freed whole when the task ends (D9).
**
** A panic unwinds with longjmp to the task's start, set with setjmp in
** the thread's start routine: C has no destructors to run, and the runtime
** itself knows everything that must be released (doors, regions, block,
** outside values). A value sent on a channel still counts against its
** sender until it is received; the receiver returns the bytes through the
** sender's `released`, which the sender folds into its block on the slow
** path and in rt_held, so the allocation fast path stays thread-local.
*/
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "costs.h"
#include "points.h"
#include "task.h"

/* ---- the strategy (D7) ------------------------------------------------- */

static pthread_mutex_t strategy_lock = RT_MUTEX_INITIALIZER;
static rt_strategy strategy; /* block_bytes NULL: the default */
static atomic_size_t tasks_running;
static atomic_ulong next_id = 1; /* main's task is 0 */

#if RT_TESTING
/* Where the two counts are, for the tests that stop a thread at its step
** of one (check_interleave.c, with a hardware watchpoint). */
const void *const rt__tasks_running_at = &tasks_running;
const void *const rt__next_id_at = &next_id;
#endif

/* The default: the blocks of the tasks running share 1/64 of the physical
** memory, each at least RT_MIN_DEFAULT_BLOCK (docs/budgets.md). */
static size_t default_bytes(void *ctx, size_t running)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys, bytes;

    (void)ctx;
    if (pages <= 0 || page <= 0)
        return RT_MIN_DEFAULT_BLOCK;
    phys = (size_t)pages * (size_t)page;
    bytes = phys / 64 / (running > 0 ? running : 1);
    bytes &= ~(size_t)4095;
    return bytes > RT_MIN_DEFAULT_BLOCK ? bytes : RT_MIN_DEFAULT_BLOCK;
}

static size_t fixed_bytes(void *ctx, size_t running)
{
    (void)running;
    return (size_t)(uintptr_t)ctx;
}

rt_strategy rt_default_strategy(void)
{
    return (rt_strategy){default_bytes, NULL};
}

rt_strategy rt_fixed_strategy(size_t bytes)
{
    return (rt_strategy){fixed_bytes, (void *)(uintptr_t)bytes};
}

void rt_set_strategy(rt_strategy s)
{
    if (s.block_bytes == NULL)
        rt__violation("rt_set_strategy", "block_bytes is NULL");
    rt__lock(&strategy_lock);
    RT_POINT("task.set_strategy.locked");
    strategy = s;
    rt__unlock(&strategy_lock);
}

/* A block for a task about to run, counting it among the tasks running. */
static struct rt_block *block_for_new_task(void)
{
    rt_strategy s;
    size_t running = atomic_fetch_add(&tasks_running, 1) + 1;
    struct rt_block *b;

    rt__lock(&strategy_lock);
    RT_POINT("task.block_for_new_task.locked");
    s = strategy.block_bytes != NULL ? strategy : rt_default_strategy();
    rt__unlock(&strategy_lock);
    b = rt__block_new(s.block_bytes(s.ctx, running));
    if (b == NULL)
        atomic_fetch_sub(&tasks_running, 1);
    return b;
}

/* ---- pointer tables: a task's outside values (pointer -> bytes) and the
** tasks not yet joined; open addressing with linear probing ------------- */

static size_t slot_of(const struct outside_table *o, const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15u >> 20) & (o->cap - 1);
}

/* Puts p in a table with room for it (table_room said so). */
static void table_put(struct outside_table *o, void *p, size_t bytes)
{
    size_t i;

    RT_COST(RT_COST_TABLE_OPS, 1);
    for (i = slot_of(o, p); o->slots[i].p != NULL; i = (i + 1) & (o->cap - 1))
        RT_COST(RT_COST_TABLE_PROBES, 1);
    RT_COST(RT_COST_TABLE_PROBES, 1); /* the empty slot it takes */
    o->slots[i].p = p;
    o->slots[i].bytes = bytes;
    o->count++;
}

/* Makes room for one more entry, keeping the table at most half full;
** false (the table unchanged) when calloc fails. */
static bool table_room(struct outside_table *o)
{
    struct outside_table old = *o;

    if ((o->count + 1) * 2 <= o->cap)
        return true;
    o->cap = old.cap != 0 ? old.cap * 2 : 16;
    o->count = 0;
    o->slots = calloc(o->cap, sizeof *o->slots);
    if (o->slots == NULL) {
        *o = old;
        return false;
    }
    RT_COST_BYTES(RT_COST_BYTES_TABLE, o->slots);
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].p != NULL)
            table_put(o, old.slots[i].p, old.slots[i].bytes);
    free(old.slots);
    return true;
}

/* A task's table takes p; out of memory traps (the contract's out of room). */
static void hold(struct outside_table *o, void *p, size_t bytes)
{
    if (!table_room(o))
        rt__trap();
    table_put(o, p, bytes);
}

/* The slot holding p, or cap if none does. */
static size_t table_find(const struct outside_table *o, const void *p)
{
    RT_COST(RT_COST_TABLE_OPS, 1);
    if (o->cap == 0 || p == NULL)
        return o->cap; /* NULL is never held */
    for (size_t i = slot_of(o, p); o->slots[i].p != NULL; i = (i + 1) & (o->cap - 1)) {
        RT_COST(RT_COST_TABLE_PROBES, 1);
        if (o->slots[i].p == p)
            return i;
    }
    RT_COST(RT_COST_TABLE_PROBES, 1); /* the empty slot that ends the search */
    return o->cap;
}

/* Empties slot i, shifting back the entries that probed past it. */
static size_t table_remove(struct outside_table *o, size_t i)
{
    size_t bytes = o->slots[i].bytes, j = i;

    RT_COST(RT_COST_TABLE_OPS, 1);
    o->slots[i].p = NULL;
    o->count--;
    for (;;) {
        j = (j + 1) & (o->cap - 1);
        RT_COST(RT_COST_TABLE_PROBES, 1);
        if (o->slots[j].p == NULL)
            return bytes;
        size_t home = slot_of(o, o->slots[j].p);
        /* j's entry may move to i unless its home lies in (i, j] */
        if (((j - home) & (o->cap - 1)) >= ((j - i) & (o->cap - 1))) {
            o->slots[i] = o->slots[j];
            o->slots[j].p = NULL;
            i = j;
        }
    }
}

#if RT_TESTING
/* The table's own operations on a table the caller owns, for tests that
** choose the pointers, and so the collisions and the clusters, themselves
** (check_states.c): an address is only hashed and compared, never read. */
bool rt__table_hold(struct outside_table *o, void *p, size_t bytes)
{
    if (!table_room(o))
        return false;
    table_put(o, p, bytes);
    return true;
}

size_t rt__table_find(const struct outside_table *o, const void *p)
{
    return table_find(o, p);
}

size_t rt__table_remove(struct outside_table *o, size_t i)
{
    return table_remove(o, i);
}

size_t rt__table_home(const struct outside_table *o, const void *p)
{
    return slot_of(o, p);
}
#endif

/* Frees every value a table holds, and the table. Only for the table of a
** task that has ended (task_empty), which nothing uses again: it is left
** as it was, pointing at freed memory. */
static void table_free_all(const struct outside_table *o)
{
    for (size_t i = 0; i < o->cap; i++)
        free(o->slots[i].p);
    free(o->slots);
}

/* ---- the current task ------------------------------------------------- */

static RT_COLD struct rt_task *main_task_here(void);

/* The slow way to the task, where h is NULL or has no task: main's first
** call attaches main's task; any other thread is a contract violation. */
static RT_COLD struct rt_hot *task_hot_slow(struct rt_hot *h, const char *fn)
{
    if (h == NULL)
        rt__violation(fn, "this thread is not a task (rt_init has not been called)");
    h->task = main_task_here();
    if (h->task == NULL)
        rt__violation(fn, "this thread is not a task");
    return h;
}

/* The way in of every public call: one load from the thread pointer and
** one test on the fast path. */
static inline struct rt_hot *task_hot(const char *fn)
{
    struct rt_hot *h = rt__hot_or_null();

    if (RT_LIKELY(h != NULL && h->task != NULL))
        return h;
    return task_hot_slow(h, fn);
}

struct rt_hot *rt__task_hot(const char *fn)
{
    return task_hot(fn);
}

/* Folds into the block the bytes receivers took off this task's count. */
static void settle(struct rt_task *t)
{
    size_t r = atomic_exchange_explicit(&t->released, 0, memory_order_relaxed);
    if (r != 0)
        rt__block_uncharge(t->block, r);
}

/* Charges `bytes` to the task, settling first if they do not fit now. */
static bool charge(struct rt_task *t, size_t bytes)
{
    if (rt__block_charge(t->block, bytes))
        return true;
    settle(t);
    return rt__block_charge(t->block, bytes);
}

/* ---- panics ------------------------------------------------------------ */

void rt__task_full(const char *what, size_t bytes)
{
    char why[160];
    snprintf(why, sizeof why, "%s of %zu bytes does not fit its budget", what, bytes);
    rt_panic(why);
}

void rt_panic(const char *why)
{
    struct rt_hot *h = task_hot("rt_panic");
    struct rt_task *t = h->task;
    struct rt_door *d;

    fprintf(stderr, "refrt: task %lu panicked: %s\n", t->id, why != NULL ? why : "(no reason)");
    fflush(stderr);
    /* Doors first: their unwind poisons or writes back before anything
    ** they may point into is freed. Popped before the call, so an unwind
    ** never sees its own door again. */
    while ((d = h->door) != NULL) {
        h->door = d->outer;
        d->unwind(d);
    }
    rt__locks_none("rt_panic", "its doors are unwound", true);
    while (h->innermost != NULL)
        rt_region_close(h->innermost);
    if (t->is_main)
        exit(101);
    longjmp(t->start, 1);
}

/* ---- allocation -------------------------------------------------------- */

void *rt_alloc(size_t n)
{
    struct rt_hot *h = task_hot("rt_alloc");
    struct rt_block *b = h->door != NULL && h->door->block != NULL ? h->door->block : h->task->block;
    void *p = rt__block_alloc(b, n);

    if (RT_LIKELY(p != NULL))
        return p;
    if (b == h->task->block) {
        settle(h->task);
        if ((p = rt__block_alloc(b, n)) != NULL)
            return p;
    }
    rt__task_full("an allocation", n);
}

/* Reallocates a value of block b; t is the task when b is its block. */
static void *realloc_in(struct rt_block *b, struct rt_task *t, void *p, size_t n)
{
    bool held;
    void *q = rt__block_realloc(b, p, n, &held);

    if (RT_LIKELY(q != NULL))
        return q;
    if (!held)
        rt__violation("rt_realloc", "%p is not a value this task holds", p);
    if (t != NULL) {
        settle(t);
        if ((q = rt__block_realloc(b, p, n, &held)) != NULL)
            return q;
    }
    rt__task_full("a reallocation", n);
}

/* An outside value stays outside: realloc'ed by malloc, counted anew. */
static void *realloc_outside(struct rt_task *t, void *p, size_t n)
{
    size_t i = table_find(&t->outside, p), old;
    void *q;

    if (i == t->outside.cap)
        rt__violation("rt_realloc", "%p is not a value this task holds", p);
    old = t->outside.slots[i].bytes;
    if (n > old && !charge(t, n - old))
        rt__task_full("a reallocation", n);
    q = realloc(p, n != 0 ? n : 1);
    if (q == NULL)
        rt__trap();
    RT_COST_BYTES(RT_COST_BYTES_OUTSIDE, q);
    RT_COST(RT_COST_OUTSIDE_COPIED, n < old ? n : old); /* kept: at most what realloc moves */
    if (n < old)
        rt__block_uncharge(t->block, old - n);
    table_remove(&t->outside, i);
    table_put(&t->outside, q, n); /* as many entries as before: no growth */
    return q;
}

/* The value of the door's shared value is the first chunk of its block:
** freed or moved, the value would point at bytes the door's next rt_alloc
** hands out again. */
static void refuse_the_doors_value(const struct rt_door *d, const void *p, const char *fn)
{
    if (RT_UNLIKELY(p == d->value))
        rt__violation(fn, "%p is the value of the open door: it is freed with its shared value", p);
}

void *rt_realloc(void *p, size_t n)
{
    struct rt_hot *h;
    struct rt_task *t;

    h = task_hot("rt_realloc"); /* first: NULL or not, a call that needs a task */
    if (p == NULL)
        return rt_alloc(n);
    t = h->task;
    if (h->door != NULL && h->door->block != NULL && rt__block_owns(h->door->block, p)) {
        refuse_the_doors_value(h->door, p, "rt_realloc");
        return realloc_in(h->door->block, NULL, p, n);
    }
    if (RT_LIKELY(rt__block_owns(t->block, p)))
        return realloc_in(t->block, t, p, n);
    return realloc_outside(t, p, n);
}

void rt_free(void *p)
{
    struct rt_hot *h;
    struct rt_task *t;
    size_t i;

    h = task_hot("rt_free"); /* first: rt_free(NULL) needs a task too */
    if (p == NULL)
        return;
    t = h->task;
    if (h->door != NULL && h->door->block != NULL) {
        refuse_the_doors_value(h->door, p, "rt_free");
        if (rt__block_free(h->door->block, p))
            return;
    }
    if (RT_LIKELY(rt__block_free(t->block, p)))
        return;
    i = table_find(&t->outside, p);
    if (RT_UNLIKELY(i == t->outside.cap))
        rt__violation("rt_free", "%p is not a value this task holds", p);
    rt__block_uncharge(t->block, table_remove(&t->outside, i));
    free(p);
}

size_t rt_held(void)
{
    struct rt_task *t = task_hot("rt_held")->task;
    settle(t);
    return rt__block_held(t->block);
}

size_t rt_budget(void)
{
    return rt__block_size(task_hot("rt_budget")->task->block);
}

/* ---- outside values (D8, D9) ----------------------------------------- */

/* A new outside value of n bytes, held and counted; panics if it does not
** fit the budget (checked before malloc is asked). */
static void *outside_new(size_t n)
{
    struct rt_task *t = task_hot("rt_alloc_outside")->task;
    void *p;

    if (!charge(t, n))
        rt__task_full("an outside value", n);
    p = malloc(n != 0 ? n : 1);
    if (p == NULL)
        rt__trap();
    RT_COST_BYTES(RT_COST_BYTES_OUTSIDE, p);
    hold(&t->outside, p, n);
    return p;
}

void *rt_alloc_outside(size_t n)
{
    return outside_new(n);
}

void *rt_clone_outside(const void *p, size_t n)
{
    void *q;

    task_hot("rt_clone_outside");
    if (p == NULL && n != 0)
        rt__violation("rt_clone_outside", "NULL with %zu bytes", n);
    q = outside_new(n);
    if (n != 0)
        RT_COST_COPY(RT_COST_OUTSIDE_COPIED, q, p, n);
    return q;
}

bool rt__block_value(const struct rt_hot *h, const void *p)
{
    if (rt__block_owns(h->task->block, p))
        return true;
    for (const struct rt_door *d = h->door; d != NULL; d = d->outer)
        if (d->block != NULL && rt__block_owns(d->block, p))
            return true;
    return false;
}

void *rt_hand_over(void *value)
{
    struct rt_hot *h = task_hot("rt_hand_over");
    struct rt_task *t = h->task;
    size_t i;

    if (rt__block_value(h, value)) {
        fprintf(stderr,
                "refrt: rt_hand_over: %p is a block value and cannot be handed over; "
                "copy it with rt_clone_outside\n", value);
        errno = EINVAL;
        return NULL;
    }
    i = table_find(&t->outside, value);
    if (i == t->outside.cap)
        rt__violation("rt_hand_over", "%p is not a value this task holds", value);
    rt__block_uncharge(t->block, table_remove(&t->outside, i));
    return value; /* malloc's own pointer: free() releases it */
}

size_t rt__outside_take(const char *fn, void *p)
{
    struct rt_task *t = task_hot(fn)->task;
    size_t i = table_find(&t->outside, p), bytes;

    if (i == t->outside.cap)
        rt__violation(fn, "%p is not an outside value this task holds", p);
    bytes = table_remove(&t->outside, i);
    rt__block_uncharge(t->block, bytes);
    return bytes;
}

void rt__outside_give(void *p, size_t bytes)
{
    struct rt_task *t = task_hot("rt__outside_give")->task;

    /* Held first, so that a panic for want of room frees it too. */
    hold(&t->outside, p, bytes);
    if (!charge(t, bytes))
        rt__task_full("a value taken over", bytes);
}

bool rt__outside_held(const void *p)
{
    struct rt_task *t = task_hot("rt__outside_held")->task;
    return table_find(&t->outside, p) != t->outside.cap;
}

size_t rt__outside_detach(struct rt_task *t, void *p)
{
    size_t i = table_find(&t->outside, p);

    if (i == t->outside.cap)
        return SIZE_MAX;
    return table_remove(&t->outside, i); /* still charged: in flight */
}

void rt__task_release(struct rt_task *t, size_t bytes)
{
    atomic_fetch_add_explicit(&t->released, bytes, memory_order_relaxed);
}

bool rt__task_charge(struct rt_task *t, size_t bytes)
{
    return charge(t, bytes);
}

void rt__task_hold(struct rt_task *t, void *p, size_t bytes)
{
    hold(&t->outside, p, bytes);
}

void rt__task_ref(struct rt_task *t)
{
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void rt__task_unref(struct rt_task *t)
{
    RT_POINT("task.unref.before_dec");
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
        free(t);
}

/* ---- tasks ------------------------------------------------------------- */

/* Everything the task holds goes: its outside values and its block. */
static void task_empty(struct rt_task *t)
{
    table_free_all(&t->outside);
    rt__block_delete(t->block);
    t->block = NULL;
    atomic_fetch_sub(&tasks_running, 1);
}

/* Runs the task's function with the panic's landing place set. Not
** inlined: the frame that calls setjmp stays small and holds nothing a
** longjmp could clobber (t is never written after setjmp). */
static __attribute__((noinline)) void task_run(struct rt_task *t)
{
    /* t was calloc'ed: no result and RT_OK until set here. */
    if (setjmp(t->start) == 0) {
        void *result = t->fn(t->arg);
        if (result != NULL) {
            size_t bytes = rt__outside_detach(t, result);
            if (bytes == SIZE_MAX)
                rt__violation("rt_spawn",
                              "task %lu returned %p, which is not an outside value it holds",
                              t->id, result);
            t->result = result;
            t->result_bytes = bytes;
        }
    } else {
        t->status = RT_PANICKED;
    }
}

static void *task_start(void *arg)
{
    struct rt_task *t = arg;
    /* Never NULL: rt_spawn checked that rt_init made the key, and hot.c
    ** traps when it cannot make this thread's state. */
    struct rt_hot *h = rt__hot_or_null();

    h->task = t;
    task_run(t);
    /* A panic closed every region it unwound past; a fn that returns with
    ** one open has ended the region's struct's life with it, so its chunk
    ** can be neither cleared nor given back: a leak of uncleared bytes. */
    if (RT_UNLIKELY(h->innermost != NULL))
        rt__violation("rt_spawn", "its task returned with a region still open");
    rt__locks_none("rt_spawn", "its task ends", true);
    RT_POINT("task.end.before_empty");
    h->task = NULL;
    h->door = NULL;
    task_empty(t);
    return NULL;
}

/* The tasks spawned and not yet joined (task -> 0). rt_join takes its task
** out of this table before it reads it, so a pointer that is no task, or a
** task joined already (freed by that join), is reported and never read. */
static pthread_mutex_t unjoined_lock = RT_MUTEX_INITIALIZER;
static struct outside_table unjoined;

static bool unjoined_add(struct rt_task *t)
{
    bool room;

    rt__lock(&unjoined_lock);
    RT_POINT("task.unjoined_add.locked");
    room = table_room(&unjoined);
    if (room)
        table_put(&unjoined, t, 0);
    rt__unlock(&unjoined_lock);
    return room;
}

/* Whether t was a task not yet joined; it is not one any more. */
static bool unjoined_take(struct rt_task *t)
{
    size_t i;
    bool found;

    rt__lock(&unjoined_lock);
    RT_POINT("task.unjoined_take.locked");
    i = table_find(&unjoined, t);
    found = i != unjoined.cap; /* under the lock: another spawn may grow it */
    if (found)
        table_remove(&unjoined, i);
    rt__unlock(&unjoined_lock);
    return found;
}

size_t rt__tasks_unjoined(void)
{
    size_t n;

    rt__lock(&unjoined_lock);
    n = unjoined.count;
    rt__unlock(&unjoined_lock);
    return n;
}

/* Undoes a spawn that made no thread: nothing else has seen t. */
static rt_task *spawn_failed(struct rt_task *t, int err)
{
    task_empty(t);
    free(t);
    errno = err;
    return NULL;
}

rt_task *rt_spawn(void *(*fn)(void *), void *arg)
{
    struct rt_task *t;
    int err;

    if (rt__key_plus_one == 0)
        rt__violation("rt_spawn", "rt_init has not been called");
    if (fn == NULL)
        rt__violation("rt_spawn", "fn is NULL");
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    RT_COST_BYTES(RT_COST_BYTES_TASK, t);
    t->block = block_for_new_task();
    if (t->block == NULL) {
        free(t);
        errno = ENOMEM;
        return NULL;
    }
    t->id = atomic_fetch_add(&next_id, 1);
    t->fn = fn;
    t->arg = arg;
    atomic_init(&t->refs, 1); /* the joiner's */
    if (!unjoined_add(t))
        return spawn_failed(t, ENOMEM);
    err = pthread_create(&t->thread, NULL, task_start, t);
    if (err != 0) {
        unjoined_take(t);
        return spawn_failed(t, err);
    }
    return t;
}

rt_status rt_join(rt_task *t, void **result)
{
    struct rt_task *me = task_hot("rt_join")->task;
    void *value;
    size_t bytes;
    rt_status status;

    /* A task joining itself would wait for ever: it stays unjoined. */
    if (t == me || !unjoined_take(t))
        rt__violation("rt_join", "%p is not a task another task can join (NULL, main's, the "
                      "caller, or joined already)", (void *)t);
    /* Cannot fail: t's thread is joinable, not the caller's, and no other
    ** join of it got past unjoined_take. */
    pthread_join(t->thread, NULL);
    status = t->status;
    value = t->result;
    bytes = t->result_bytes;
    rt__task_unref(t);
    if (result != NULL)
        *result = NULL;
    if (status != RT_OK)
        return status;
    if (value != NULL) {
        if (result == NULL)
            free(value); /* nobody takes it: freed, not leaked */
        else
            rt__outside_give(value, bytes); /* may panic: then it is freed */
    }
    if (result != NULL)
        *result = value;
    return RT_OK;
}

/* Main's task: made by rt_init, attached to main's thread state on its
** first use (rt__task_hot), so that rt_init publishes no thread state of
** its own: the first publish stays the program's (hot.c validates it).
** rt_init makes it before it publishes the key, so a thread that has a
** state (it needs the key) finds main's task made. */
static struct rt_task main_task;
static pthread_t main_thread;

void rt__main_task(void)
{
    main_task.block = block_for_new_task();
    if (main_task.block == NULL)
        rt__violation("rt_init", "no memory for main's block");
    main_task.id = 0;
    main_task.is_main = true;
    atomic_init(&main_task.refs, 1); /* never dropped: main's task stays */
    main_task.thread = main_thread = pthread_self();
}

static RT_COLD struct rt_task *main_task_here(void)
{
    return pthread_equal(pthread_self(), main_thread) ? &main_task : NULL;
}
