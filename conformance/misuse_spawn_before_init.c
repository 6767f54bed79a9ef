/*
** misuse_spawn_before_init.c: rt_spawn before rt_init: there is no key, so no task can be made.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_spawn: rt_init has not been called
*/
#include <stdio.h>

#include "refrt.h"

static void *nothing(void *arg)
{
    return arg;
}

int main(void)
{
    rt_spawn(nothing, NULL);
    printf("observe after_violation 1\n");
    return 0;
}
