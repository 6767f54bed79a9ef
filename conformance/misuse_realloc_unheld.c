/*
** misuse_realloc_unheld.c: rt_realloc of a pointer the task never held (a stack address) is a violation, not a copy from it.
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
    long on_stack = 7;

    rt_init();
    rt_realloc(&on_stack, 64);
    printf("observe after_violation 1\n");
    return 0;
}
