/*
** shared.c (naive): a shared value is bytes under an error-checking mutex.
**
** The value's block is an owner of its own: inside an RT_OWNED door,
** rt_alloc charges it. A panic inside an RT_OWNED update poisons the value;
** a door entered again on a value the thread is already in fails to lock
** (EDEADLK) and is a violation.
*/
#include "naive.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rt_shared {
    pthread_mutex_t lock;
    rt_kind kind;
    size_t size;
    unsigned char *value;
    int poisoned;
    struct naive_owner block;
    void (*build)(void *value, void *ctx);
    void *ctx;
};

static rt_shared *make(rt_kind kind, size_t size, size_t block_bytes)
{
    rt_shared *s = calloc(1, sizeof *s);
    pthread_mutexattr_t attr;

    if (s == NULL || (s->value = calloc(1, size ? size : 1)) == NULL)
        __builtin_trap();
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&s->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    s->kind = kind;
    s->size = size;
    s->block.budget = block_bytes;
    return s;
}

static void build(rt_shared *s)
{
    struct naive_owner *was = naive_owner();

    naive_free_all(&s->block);
    memset(s->value, 0, s->size);
    naive_set_owner(&s->block);
    naive_door_enter(&s->lock, &s->poisoned);
    s->build(s->value, s->ctx);
    naive_door_leave();
    naive_set_owner(was);
    s->poisoned = 0;
}

rt_shared *rt_shared_new(rt_kind kind, size_t size, const void *init, size_t block_bytes)
{
    rt_shared *s = make(kind, size, block_bytes);
    if (init != NULL)
        memcpy(s->value, init, size);
    return s;
}

rt_shared *rt_shared_supervised(rt_kind kind, size_t size, void (*fn)(void *, void *), void *ctx,
                                size_t block_bytes)
{
    rt_shared *s = make(kind, size, block_bytes);
    s->build = fn;
    s->ctx = ctx;
    pthread_mutex_lock(&s->lock);
    build(s);
    pthread_mutex_unlock(&s->lock);
    return s;
}

/* Locks s for a door; false (unlocked) when it is poisoned for good. */
static bool open_door(rt_shared *s, const char *fn)
{
    if (pthread_mutex_lock(&s->lock) == EDEADLK)
        naive_violation(fn, "a door is nested on its own value");
    if (s->poisoned && s->build != NULL)
        build(s);
    if (s->poisoned) {
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    return true;
}

rt_status rt_update(rt_shared *s, void (*fn)(void *, void *), void *ctx)
{
    struct naive_owner *was = naive_owner();

    if (!open_door(s, "rt_update"))
        return RT_POISONED;
    if (s->kind == RT_COPY) {
        unsigned char *copy = malloc(s->size ? s->size : 1);
        if (copy == NULL)
            __builtin_trap();
        memcpy(copy, s->value, s->size);
        naive_door_enter(&s->lock, NULL);
        fn(copy, ctx);
        naive_door_leave();
        memcpy(s->value, copy, s->size);
        free(copy);
    } else {
        naive_set_owner(&s->block);
        naive_door_enter(&s->lock, &s->poisoned);
        fn(s->value, ctx);
        naive_door_leave();
        naive_set_owner(was);
    }
    pthread_mutex_unlock(&s->lock);
    return RT_OK;
}

rt_status rt_update_all(rt_shared *a, rt_shared *b, void (*fn)(void *, void *, void *), void *ctx)
{
    rt_shared *first = a < b ? a : b, *second = a < b ? b : a;
    int copies = a->kind == RT_COPY && b->kind == RT_COPY;
    unsigned char *ca, *cb;

    if (a == b)
        naive_violation("rt_update_all", "a door is nested on its own value");
    if (!open_door(first, "rt_update_all"))
        return RT_POISONED;
    if (!open_door(second, "rt_update_all")) {
        pthread_mutex_unlock(&first->lock);
        return RT_POISONED;
    }
    naive_door_enter(&first->lock, copies ? NULL : &first->poisoned);
    naive_door_enter(&second->lock, copies ? NULL : &second->poisoned);
    if (copies) {
        ca = malloc(a->size + b->size + 1);
        if (ca == NULL)
            __builtin_trap();
        cb = ca + a->size;
        memcpy(ca, a->value, a->size);
        memcpy(cb, b->value, b->size);
        fn(ca, cb, ctx);
        memcpy(a->value, ca, a->size);
        memcpy(b->value, cb, b->size);
        free(ca);
    } else {
        fn(a->value, b->value, ctx);
    }
    naive_door_leave();
    naive_door_leave();
    pthread_mutex_unlock(&second->lock);
    pthread_mutex_unlock(&first->lock);
    return RT_OK;
}

rt_status rt_access(rt_shared *s, void (*fn)(const void *, void *), void *ctx)
{
    if (!open_door(s, "rt_access"))
        return RT_POISONED;
    naive_door_enter(&s->lock, NULL);
    fn(s->value, ctx);
    naive_door_leave();
    pthread_mutex_unlock(&s->lock);
    return RT_OK;
}

rt_status rt_get(rt_shared *s, void *out)
{
    if (!open_door(s, "rt_get"))
        return RT_POISONED;
    memcpy(out, s->value, s->size);
    pthread_mutex_unlock(&s->lock);
    return RT_OK;
}

bool rt_poisoned(rt_shared *s)
{
    bool p;
    pthread_mutex_lock(&s->lock);
    p = s->poisoned;
    pthread_mutex_unlock(&s->lock);
    return p;
}

void rt_shared_free(rt_shared *s)
{
    naive_free_all(&s->block);
    pthread_mutex_destroy(&s->lock);
    free(s->value);
    free(s);
}

/* Moves an outside value from one owner to another; panics (poisoning s
** when inside its door) if the receiver's budget cannot take it. */
static void *move(struct naive_owner *from, struct naive_owner *to, void *value, const char *fn)
{
    struct naive_value *v = naive_unlink(from, value);

    if (v == NULL)
        naive_violation(fn, "the value is not held here");
    if (v->n > to->budget || to->held > to->budget - v->n) {
        naive_link(from, v);
        rt_panic("a stored value does not fit");
    }
    naive_link(to, v);
    return value;
}

rt_status rt_store(rt_shared *s, void *value)
{
    struct naive_owner *task = naive_task_owner();
    struct naive_value *v;

    if (task == NULL)
        naive_violation("rt_store", "the calling thread is not a task");
    v = naive_unlink(task, value);
    if (v == NULL)
        naive_violation("rt_store", "the value is not held by the current task");
    naive_link(task, v);
    if (!v->outside)
        return RT_REFUSED;
    move(task, &s->block, value, "rt_store");
    return RT_OK;
}

void *rt_unstore(rt_shared *s, void *value)
{
    struct naive_owner *task = naive_task_owner();

    if (task == NULL)
        naive_violation("rt_unstore", "the calling thread is not a task");
    return move(&s->block, task, value, "rt_unstore");
}

size_t rt_shared_held(rt_shared *s)
{
    return s->size + s->block.held;
}
