/*
** chan.c (naive): a bounded ring under one mutex and two conditions.
**
** A value leaves the sender's count when it is sent (the contract keeps it
** there until it is received) and joins the receiver's when received.
*/
#include "naive.h"

#include <pthread.h>
#include <stdlib.h>

struct rt_chan {
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    size_t capacity, head, count;
    int closed;
    struct naive_value **ring;
};

rt_chan *rt_chan_new(size_t capacity)
{
    rt_chan *c = calloc(1, sizeof *c);

    if (capacity == 0)
        naive_violation("rt_chan_new", "capacity is 0");
    if (c == NULL || (c->ring = calloc(capacity, sizeof *c->ring)) == NULL)
        __builtin_trap();
    c->capacity = capacity;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->not_full, NULL);
    pthread_cond_init(&c->not_empty, NULL);
    return c;
}

rt_status rt_send(rt_chan *c, void *value)
{
    struct naive_owner *o = naive_owner();
    struct naive_value *v;

    if (o == NULL)
        naive_violation("rt_send", "the calling thread is not a task");
    v = naive_unlink(o, value);
    if (v == NULL || !v->outside) {
        if (v != NULL)
            naive_link(o, v);
        return RT_REFUSED;
    }
    pthread_mutex_lock(&c->lock);
    while (c->count == c->capacity && !c->closed)
        pthread_cond_wait(&c->not_full, &c->lock);
    if (c->closed) {
        pthread_mutex_unlock(&c->lock);
        naive_link(o, v);
        return RT_CLOSED;
    }
    c->ring[(c->head + c->count++) % c->capacity] = v;
    pthread_cond_signal(&c->not_empty);
    pthread_mutex_unlock(&c->lock);
    return RT_OK;
}

void *rt_recv(rt_chan *c)
{
    struct naive_owner *o = naive_owner();
    struct naive_value *v;

    if (o == NULL)
        naive_violation("rt_recv", "the calling thread is not a task");
    pthread_mutex_lock(&c->lock);
    while (c->count == 0 && !c->closed)
        pthread_cond_wait(&c->not_empty, &c->lock);
    if (c->count == 0) {
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    v = c->ring[c->head];
    if (v->n > o->budget || o->held > o->budget - v->n) {
        pthread_mutex_unlock(&c->lock); /* the value stays at the head */
        rt_panic("a received value does not fit the budget");
    }
    c->head = (c->head + 1) % c->capacity;
    c->count--;
    pthread_cond_signal(&c->not_full);
    pthread_mutex_unlock(&c->lock);
    naive_link(o, v);
    return v->p;
}

void rt_chan_close(rt_chan *c)
{
    pthread_mutex_lock(&c->lock);
    c->closed = 1;
    pthread_cond_broadcast(&c->not_full);
    pthread_cond_broadcast(&c->not_empty);
    pthread_mutex_unlock(&c->lock);
}

void rt_chan_free(rt_chan *c)
{
    for (; c->count > 0; c->count--) {
        struct naive_value *v = c->ring[c->head];
        c->head = (c->head + 1) % c->capacity;
        free(v->p);
        free(v);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->not_full);
    pthread_cond_destroy(&c->not_empty);
    free(c->ring);
    free(c);
}
