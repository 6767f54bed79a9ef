/*
** misuse_doors_against_order.c: a door on a value opened inside a door on
** a value made later is a violation (docs/misuse.md: doors nest in the
** order values were made), in every build, the release build included:
** two tasks nesting the other way would deadlock.
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_access:
** expect: stderr contains made later: doors nest in the order values were made
*/
#include <stdio.h>

#include "refrt.h"

static rt_shared *first, *second;

static void reads(const void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    printf("observe after_violation 1\n");
}

static void in_the_later_door(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_access(first, reads, NULL);
    printf("observe after_violation 2\n");
}

int main(void)
{
    long zero = 0;

    rt_init();
    first = rt_shared_new(RT_COPY, sizeof zero, &zero, 4096);
    second = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4096);
    rt_update(second, in_the_later_door, NULL);
    printf("observe after_violation 3\n");
    return 0;
}
