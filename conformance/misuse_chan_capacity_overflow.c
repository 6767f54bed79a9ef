/*
** misuse_chan_capacity_overflow.c: a channel whose ring would not fit in
** size_t traps (SIGILL), as a region's overflowing size does: the
** contract's "out of room" shape, nothing printed, nothing allocated for
** the ring (docs/misuse.md).
**
** expect: signal == SIGILL
** expect: prog.before_trap == 1
*/
#include <stdint.h>
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_init();
    printf("observe before_trap 1\n");
    fflush(stdout);
    rt_chan_new(SIZE_MAX);
    printf("observe after_trap 1\n");
    return 0;
}
