/*
** trap_full_region.c: a region never grows past its chunk.
**
** A region that has handed out all but 15 bytes of its chunk has no room
** for one more aligned byte: the allocation traps (SIGILL), as the seed's
** arenas do, with nothing printed and nothing corrupted.
**
** expect: signal == SIGILL
** expect: prog.before_trap == 1
** expect: shim.mallocs == 1
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_region r;

    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, RT_CHUNK_SIZE - 15, 1, 0x3C);
    printf("observe before_trap 1\n");
    fflush(stdout);
    rt_region_alloc(&r, 1, 1, 0x3C);
    printf("observe after_trap 1\n");
    return 0;
}
