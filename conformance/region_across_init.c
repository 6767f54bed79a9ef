/*
** region_across_init.c: a region opened before rt_init closes after it.
**
** The contract lets regions work before rt_init (the cache is off) and
** calls a close a violation only when the region is not the thread's
** innermost open one. A region opened before rt_init, with another opened
** and closed inside it after rt_init, is the innermost when it closes: no
** violation. Its chunk, given back once the cache is on, is kept.
**
** expect: exit == 0
** expect: prog.kept_end == 2
** expect: shim.mallocs == 2
** expect: shim.frees == 0
** expect: shim.dirty == 0
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_region early, late;

    rt_region_open(&early);
    rt_region_alloc(&early, 100, 1, 0xE1);
    rt_init();
    rt_region_open(&late);
    rt_region_alloc(&late, 100, 1, 0x1A);
    rt_region_close(&late);
    rt_region_close(&early);
    printf("observe kept_end %u\n", rt_chunk_kept());
    return 0;
}
