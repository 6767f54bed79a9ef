/*
** misuse_realloc_freed.c: rt_realloc of a block value already freed: the block knows the address but the task no longer holds it.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_realloc:
** expect: stderr contains is not a value this task holds
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    void *p;

    rt_init();
    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    p = rt_alloc(48);
    rt_free(p);
    rt_realloc(p, 96);
    printf("observe after_violation 1\n");
    return 0;
}
