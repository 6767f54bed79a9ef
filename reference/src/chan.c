/*
** chan.c: bounded channels of outside values (D9).
**
** A ring of `capacity` items under one mutex. A sent value leaves its
** sender's table but stays charged to the sender (the item keeps a
** reference to the sender's task, so the count stays valid after the
** sender ends). At rt_recv its bytes are charged to the receiver first;
** only when they fit is the item popped and the sender released, so a
** receiver that panics leaves the value at the head for the next one.
*/
#include "internal.h"

#include <errno.h>
#include <pthread.h>

#include "costs.h"
#include "points.h"
#include "task.h"

struct item {
    void *value;
    size_t bytes;
    struct rt_task *sender; /* referenced until the value is received or freed */
};

struct rt_chan {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    size_t capacity, head, count;
    bool closed;
    struct item *ring;
};

RT_COST_SIZEOF(chan, struct rt_chan);
RT_COST_SIZEOF(chan_item, struct item);

rt_chan *rt_chan_new(size_t capacity)
{
    rt_chan *c;

    rt__locks_entry(); /* a call that never reaches the thread's state */
    if (capacity == 0)
        rt__violation("rt_chan_new", "capacity is 0");
    /* The size first, so the trap leaks nothing (calloc checks it too). */
    if (capacity > SIZE_MAX / sizeof(struct item))
        rt__trap();
    c = calloc(1, sizeof *c);
    if (c == NULL || (c->ring = calloc(capacity, sizeof *c->ring)) == NULL)
        rt__trap();
    RT_COST_BYTES(RT_COST_BYTES_CHAN, c);
    RT_COST_BYTES(RT_COST_BYTES_RING, c->ring);
    c->capacity = capacity;
    rt__mutex_init(&c->lock);
    rt__cond_init(&c->not_empty);
    rt__cond_init(&c->not_full);
    return c;
}

rt_status rt_send(rt_chan *c, void *value)
{
    struct rt_hot *h;
    struct rt_task *t;
    struct item *it;
    size_t bytes;

    if (c == NULL)
        rt__violation("rt_send", "channel is NULL");
    h = rt__task_hot("rt_send");
    t = h->task;
    if (rt__block_value(h, value))
        return RT_REFUSED; /* a block value never leaves its task */
    if (!rt__outside_held(value))
        rt__violation("rt_send", "%p is not an outside value this task holds", value);
    rt__lock(&c->lock);
    while (c->count == c->capacity && !c->closed) {
        RT_POINT("chan.send.before_wait");
        rt__cond_wait(&c->not_full, &c->lock);
    }
    if (c->closed) {
        rt__unlock(&c->lock);
        return RT_CLOSED; /* the sender still holds the value */
    }
    bytes = rt__outside_detach(t, value); /* still charged: in flight */
    rt__task_ref(t);
    it = &c->ring[(c->head + c->count) % c->capacity];
    RT_POINT("chan.send.before_enqueue");
    it->value = value;
    it->bytes = bytes;
    it->sender = t;
    c->count++;
    rt__cond_signal(&c->not_empty, &c->lock);
    rt__unlock(&c->lock);
    return RT_OK;
}

void *rt_recv(rt_chan *c)
{
    struct rt_task *me;
    struct item it;

    if (c == NULL)
        rt__violation("rt_recv", "channel is NULL");
    me = rt__task_hot("rt_recv")->task;
    rt__lock(&c->lock);
    while (c->count == 0 && !c->closed) {
        RT_POINT("chan.recv.before_wait");
        rt__cond_wait(&c->not_empty, &c->lock);
    }
    if (c->count == 0) {
        rt__unlock(&c->lock);
        return NULL; /* closed and empty */
    }
    it = c->ring[c->head];
    /* A value the task sent itself is still charged to it, in flight: it
    ** comes back with no charge and no release, never counted twice. */
    if (it.sender != me && !rt__task_charge(me, it.bytes)) {
        /* The value stays at the head; the lock goes before the panic. */
        rt__cond_signal(&c->not_empty, &c->lock);
        rt__unlock(&c->lock);
        RT_POINT("chan.recv.refused");
        rt__task_full("a received value", it.bytes);
    }
    rt__task_hold(me, it.value, it.bytes);
    c->head = (c->head + 1) % c->capacity;
    c->count--;
    rt__cond_signal(&c->not_full, &c->lock);
    rt__unlock(&c->lock);
    RT_POINT("chan.recv.before_release");
    if (it.sender != me)
        rt__task_release(it.sender, it.bytes);
    rt__task_unref(it.sender);
    return it.value;
}

void rt_chan_close(rt_chan *c)
{
    if (c == NULL)
        rt__violation("rt_chan_close", "channel is NULL");
    RT_POINT("chan.close.before_lock");
    rt__lock(&c->lock);
    c->closed = true;
    rt__cond_broadcast(&c->not_empty, &c->lock);
    rt__cond_broadcast(&c->not_full, &c->lock);
    rt__unlock(&c->lock);
}

void rt_chan_free(rt_chan *c)
{
    rt__locks_entry();
    if (c == NULL)
        return;
    for (; c->count > 0; c->count--, c->head = (c->head + 1) % c->capacity) {
        struct item *it = &c->ring[c->head];
        free(it->value);
        rt__task_release(it->sender, it->bytes);
        rt__task_unref(it->sender);
    }
    rt__mutex_destroy(&c->lock);
    rt__cond_destroy(&c->not_empty);
    rt__cond_destroy(&c->not_full);
    free(c->ring);
    free(c);
}
