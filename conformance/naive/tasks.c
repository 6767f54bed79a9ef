/*
** tasks.c (naive): tasks are threads; budgets are a counter.
**
** Every value a task holds is its own malloc on a list; rt_alloc charges
** the list's owner and panics past its budget, rt_free walks the list. A
** panic releases the locks of the doors the task is in (poisoning an
** RT_OWNED value it was changing), frees what the task holds and ends its
** thread with pthread_exit.
*/
#include "naive.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rt_task {
    struct naive_owner owner;
    pthread_t thread;
    void *(*fn)(void *);
    void *arg;
    void *result;
    int panicked;
    unsigned id;
};

struct door {
    pthread_mutex_t *lock;
    int *poison; /* set on a panic inside the door; NULL: poisons nothing */
};

static _Thread_local struct rt_task *self;
static _Thread_local struct naive_owner *charged;
static _Thread_local struct door doors[2];
static _Thread_local int ndoors;

static pthread_mutex_t tasks_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_strategy strategy;
static int have_strategy;
static size_t running;
static unsigned next_id = 1; /* main is task 0, as in the reference */
static struct rt_task main_task;
static int initialised;

/* ---- budgets ------------------------------------------------------------- */

static size_t fixed_bytes(void *ctx, size_t tasks)
{
    (void)tasks;
    return (size_t)(uintptr_t)ctx;
}

rt_strategy rt_fixed_strategy(size_t bytes)
{
    return (rt_strategy){fixed_bytes, (void *)(uintptr_t)bytes};
}

/* Half the physical memory, shared among the tasks running. */
static size_t default_bytes(void *ctx, size_t tasks)
{
    size_t mem = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    (void)ctx;
    return mem / 2 / (tasks + 1);
}

rt_strategy rt_default_strategy(void)
{
    return (rt_strategy){default_bytes, NULL};
}

void rt_set_strategy(rt_strategy s)
{
    pthread_mutex_lock(&tasks_lock);
    strategy = s;
    have_strategy = 1;
    pthread_mutex_unlock(&tasks_lock);
}

static size_t block_size(void)
{
    rt_strategy s = have_strategy ? strategy : rt_default_strategy();
    return s.block_bytes(s.ctx, running);
}

/* ---- values ---------------------------------------------------------------- */

struct naive_owner *naive_owner(void)
{
    return charged;
}

struct naive_owner *naive_task_owner(void)
{
    return self != NULL ? &self->owner : NULL;
}

void naive_set_owner(struct naive_owner *o)
{
    charged = o;
}

static struct naive_owner *need_owner(const char *fn)
{
    if (charged == NULL)
        naive_violation(fn, "the calling thread is not a task");
    return charged;
}

void naive_link(struct naive_owner *o, struct naive_value *v)
{
    v->next = o->values;
    o->values = v;
    o->held += v->n;
}

struct naive_value *naive_unlink(struct naive_owner *o, const void *p)
{
    for (struct naive_value **at = &o->values; *at != NULL; at = &(*at)->next)
        if ((*at)->p == p) {
            struct naive_value *v = *at;
            *at = v->next;
            o->held -= v->n;
            return v;
        }
    return NULL;
}

void *naive_add(struct naive_owner *o, size_t n, int outside, const char *fn)
{
    struct naive_value *v;

    (void)fn;
    if (n > o->budget || o->held > o->budget - n)
        rt_panic("the block is full");
    v = malloc(sizeof *v);
    if (v == NULL || (v->p = malloc(n ? n : 1)) == NULL)
        __builtin_trap();
    v->n = n;
    v->outside = outside;
    naive_link(o, v);
    return v->p;
}

void naive_free_all(struct naive_owner *o)
{
    while (o->values != NULL) {
        struct naive_value *v = o->values;
        o->values = v->next;
        free(v->p);
        free(v);
    }
    o->held = 0;
}

void *rt_alloc(size_t n)
{
    return naive_add(need_owner("rt_alloc"), n, 0, "rt_alloc");
}

void *rt_alloc_outside(size_t n)
{
    return naive_add(need_owner("rt_alloc_outside"), n, 1, "rt_alloc_outside");
}

void *rt_clone_outside(const void *p, size_t n)
{
    return memcpy(rt_alloc_outside(n), p, n);
}

void rt_free(void *p)
{
    struct naive_value *v;

    if (p == NULL)
        return;
    v = naive_unlink(need_owner("rt_free"), p);
    if (v == NULL)
        naive_violation("rt_free", "the pointer is not held by the current task");
    free(v->p);
    free(v);
}

void *rt_realloc(void *p, size_t n)
{
    struct naive_owner *o = need_owner("rt_realloc");
    struct naive_value *old;
    void *q;

    if (p == NULL)
        return rt_alloc(n);
    old = naive_unlink(o, p);
    if (old == NULL)
        naive_violation("rt_realloc", "the pointer is not held by the current task");
    naive_link(o, old); /* still held while the new one is made */
    q = naive_add(o, n, old->outside, "rt_realloc");
    memcpy(q, p, old->n < n ? old->n : n);
    rt_free(p);
    return q;
}

size_t rt_held(void)
{
    return need_owner("rt_held")->held;
}

size_t rt_budget(void)
{
    return need_owner("rt_budget")->budget;
}

void *rt_hand_over(void *value)
{
    struct naive_owner *o = need_owner("rt_hand_over");
    struct naive_value *v = naive_unlink(o, value);

    if (v == NULL)
        naive_violation("rt_hand_over", "the pointer is not held by the current task");
    if (!v->outside) {
        naive_link(o, v);
        fprintf(stderr, "refrt: rt_hand_over: a block value cannot be handed over; "
                        "copy it out with rt_clone_outside\n");
        errno = EINVAL;
        return NULL;
    }
    free(v);
    return value;
}

/* ---- tasks ----------------------------------------------------------------- */

void rt_init(void)
{
    pthread_mutex_lock(&tasks_lock);
    if (!initialised) {
        initialised = 1;
        main_task.id = 0;
        main_task.thread = pthread_self();
        pthread_mutex_unlock(&tasks_lock);
        main_task.owner.budget = block_size();
        self = &main_task;
        charged = &main_task.owner;
        return;
    }
    pthread_mutex_unlock(&tasks_lock);
}

static void *task_start(void *arg)
{
    struct rt_task *t = arg;
    struct naive_value *kept;

    self = t;
    charged = &t->owner;
    t->result = t->fn(t->arg);
    /* The result, if it is an outside value, survives; the rest goes. */
    kept = t->result != NULL ? naive_unlink(&t->owner, t->result) : NULL;
    naive_free_all(&t->owner);
    if (kept != NULL)
        naive_link(&t->owner, kept);
    return NULL;
}

rt_task *rt_spawn(void *(*fn)(void *), void *arg)
{
    struct rt_task *t = calloc(1, sizeof *t);
    int err;

    if (t == NULL)
        return NULL;
    pthread_mutex_lock(&tasks_lock);
    t->id = next_id++;
    t->owner.budget = block_size();
    running++;
    pthread_mutex_unlock(&tasks_lock);
    t->fn = fn;
    t->arg = arg;
    err = pthread_create(&t->thread, NULL, task_start, t);
    if (err != 0) {
        pthread_mutex_lock(&tasks_lock);
        running--;
        pthread_mutex_unlock(&tasks_lock);
        free(t);
        errno = err;
        return NULL;
    }
    return t;
}

rt_status rt_join(rt_task *t, void **result)
{
    rt_status status = RT_OK;
    struct naive_value *v;

    pthread_join(t->thread, NULL);
    pthread_mutex_lock(&tasks_lock);
    running--;
    pthread_mutex_unlock(&tasks_lock);
    if (result != NULL)
        *result = NULL;
    if (t->panicked) {
        status = RT_PANICKED;
    } else if (t->result != NULL && (v = naive_unlink(&t->owner, t->result)) != NULL) {
        struct naive_owner *o = need_owner("rt_join");
        if (v->n > o->budget || o->held > o->budget - v->n) {
            free(v->p);
            free(v);
            free(t);
            rt_panic("the joined task's result does not fit the budget");
        }
        naive_link(o, v);
        if (result != NULL)
            *result = t->result;
    } else if (result != NULL) {
        *result = t->result;
    }
    free(t);
    return status;
}

void naive_door_enter(void *lock, int *poison_flag)
{
    doors[ndoors].lock = lock;
    doors[ndoors].poison = poison_flag;
    ndoors++;
}

void naive_door_leave(void)
{
    ndoors--;
}

void rt_panic(const char *why)
{
    fprintf(stderr, "refrt: task %u panicked: %s\n", self != NULL ? self->id : 0, why);
    fflush(stderr);
    while (ndoors > 0) {
        struct door *d = &doors[--ndoors];
        if (d->poison != NULL)
            *d->poison = 1;
        pthread_mutex_unlock(d->lock);
    }
    if (self == NULL || self == &main_task)
        exit(101);
    naive_free_all(&self->owner);
    self->panicked = 1;
    pthread_exit(NULL);
}
