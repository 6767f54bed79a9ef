/*
** misuse_spawn_null.c: rt_spawn with no function to run.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_spawn: fn is NULL
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_init();
    rt_spawn(NULL, NULL);
    printf("observe after_violation 1\n");
    return 0;
}
