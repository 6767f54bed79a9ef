/*
** misuse_realloc_doors_value.c: rt_realloc, inside the build of a
** supervised RT_OWNED value, of that value itself is a violation (refrt.h:
** the value is freed with its shared value), in every build, the release
** build included.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_realloc:
** expect: stderr contains is the value of the open door
*/
#include <stdio.h>

#include "refrt.h"

static void grows_its_own_value(void *value, void *ctx)
{
    (void)ctx;
    rt_realloc(value, 256);
    printf("observe after_violation 1\n");
}

int main(void)
{
    rt_init();
    rt_shared_supervised(RT_OWNED, sizeof(long), grows_its_own_value, NULL, 4096);
    printf("observe after_violation 2\n");
    return 0;
}
