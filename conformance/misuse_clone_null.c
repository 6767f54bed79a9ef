/*
** misuse_clone_null.c: rt_clone_outside of NULL with a size is a violation: there are no bytes to copy.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_clone_outside: NULL with 8 bytes
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_init();
    rt_clone_outside(NULL, 8);
    printf("observe after_violation 1\n");
    return 0;
}
