/*
** misuse_free_doors_value.c: rt_free, inside an RT_OWNED rt_update, of the
** door's value itself is a violation (refrt.h: the value is freed with its
** shared value), in every build, the release build included: freed, its
** chunk would be handed out again while the value still names it.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_free:
** expect: stderr contains is the value of the open door
*/
#include <stdio.h>

#include "refrt.h"

static void frees_its_own_value(void *value, void *ctx)
{
    (void)ctx;
    rt_free(value);
    printf("observe after_violation 1\n");
}

int main(void)
{
    long zero = 0;
    rt_shared *s;

    rt_init();
    s = rt_shared_new(RT_OWNED, sizeof zero, &zero, 4096);
    rt_update(s, frees_its_own_value, NULL);
    printf("observe after_violation 2\n");
    return 0;
}
