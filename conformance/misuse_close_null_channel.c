/*
** misuse_close_null_channel.c: rt_chan_close of a NULL channel.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_chan_close: channel is NULL
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_init();
    rt_chan_close(NULL);
    printf("observe after_violation 1\n");
    return 0;
}
