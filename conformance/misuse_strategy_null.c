/*
** misuse_strategy_null.c: a strategy without its block_bytes function is refused when it is set, not when a task is made.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_set_strategy: block_bytes is NULL
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_strategy none = {NULL, NULL};

    rt_init();
    rt_set_strategy(none);
    printf("observe after_violation 1\n");
    return 0;
}
