/*
** hot.c: the one accessor of a thread's runtime state.
**
** Everything per thread (the chunk stack, the innermost region, ...) hangs
** off one struct rt_hot, published in the runtime's one pthread key. This
** file is the only place that reads the key's slot.
*/
#include "internal.h"

#include <pthread.h>

/* Zero until rt_init: key + 1, so zero means "no key, no cache". Eight
** bytes, whatever the width of pthread_key_t. */
uint64_t rt__key_plus_one;

static struct rt_hot *hot_make(pthread_key_t key)
{
    struct rt_hot *h = calloc(1, sizeof *h);
    if (h == NULL)
        rt__trap();
    if (pthread_setspecific(key, h) != 0)
        rt__trap();
    return h;
}

struct rt_hot *rt__hot_or_null(void)
{
    uint64_t kp1 = rt__key_plus_one;
    struct rt_hot *h;

    if (kp1 == 0)
        return NULL;
    h = pthread_getspecific((pthread_key_t)(kp1 - 1));
    if (RT_UNLIKELY(h == NULL))
        h = hot_make((pthread_key_t)(kp1 - 1));
    return h;
}

struct rt_hot *rt_hot(void)
{
    struct rt_hot *h = rt__hot_or_null();
    if (h == NULL)
        rt__violation("rt_hot", "rt_init has not been called");
    return h;
}

bool rt_hot_direct(void)
{
    return false;
}

void rt_hot_disable(void)
{
}
