/*
** misuse_join_null.c: rt_join of NULL: not a task another task can join.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_join:
** expect: stderr contains is not a task another task can join
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    void *result;

    rt_init();
    rt_join(NULL, &result);
    printf("observe after_violation 1\n");
    return 0;
}
