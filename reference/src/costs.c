/*
** costs.c: the cost counters of a test build (costs.h); nothing in a
** release build.
*/
#include "internal.h"

#include "costs.h"

#if RT_TESTING

#include <malloc.h>

unsigned long rt__costs[RT_COSTS];

/* malloc_usable_size, not the size asked: the count then follows the
** call as it is written (calloc(2, n) shows as twice n). glibc gives
** max(n, 24) rounded up to 8 bytes short of a multiple of 16; ASan and
** TSan give n. */
void rt__cost_bytes(enum rt_cost kind, void *p)
{
    rt__cost_add(kind, malloc_usable_size(p)); /* 0 for NULL, a failed malloc */
}

unsigned long rt__cost(enum rt_cost kind)
{
    return __atomic_load_n(&rt__costs[kind], __ATOMIC_RELAXED);
}

void rt__costs_reset(void)
{
    for (int k = 0; k < RT_COSTS; k++)
        __atomic_store_n(&rt__costs[k], 0, __ATOMIC_RELAXED);
}

#else

/* ISO C wants a translation unit to declare something. */
typedef int rt__costs_off;

#endif
