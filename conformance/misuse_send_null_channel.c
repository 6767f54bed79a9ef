/*
** misuse_send_null_channel.c: rt_send on a NULL channel.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_send: channel is NULL
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    void *v;

    rt_init();
    v = rt_alloc_outside(16);
    rt_send(NULL, v);
    printf("observe after_violation 1\n");
    return 0;
}
