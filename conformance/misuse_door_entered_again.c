/*
** misuse_door_entered_again.c: a door opened on a value whose door is
** still open in the same task is a violation (docs/misuse.md), in every
** build, the release build included: the value's lock is not recursive,
** so the program would hang where the runtime must say why.
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_update:
** expect: stderr contains is already open in this task
*/
#include <stdio.h>

#include "refrt.h"

static rt_shared *value;

static void inner(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    printf("observe after_violation 1\n");
}

static void outer(void *v, void *ctx)
{
    (void)v;
    (void)ctx;
    rt_update(value, inner, NULL);
    printf("observe after_violation 2\n");
}

int main(void)
{
    long zero = 0;

    rt_init();
    value = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4096);
    rt_update(value, outer, NULL);
    printf("observe after_violation 3\n");
    return 0;
}
