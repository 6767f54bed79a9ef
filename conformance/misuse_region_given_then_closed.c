/*
** misuse_region_given_then_closed.c: a region whose chunk the program has
** already given back with rt_chunk_give is closed: the close gives the same
** chunk again, on top of the stack, and that is rt_chunk_give's violation
** (refrt.h: rt_region_close gives the chunk back with [base, bump)), in
** every build. Kept twice, two later regions would share one chunk.
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_chunk_give:
** expect: stderr contains was given twice
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_region r;

    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, 1, 64, 0x5a);
    rt_chunk_give(r.base, r.bump);
    printf("observe kept %u\n", rt_chunk_kept());
    rt_region_close(&r);
    printf("observe after_violation 1\n");
    return 0;
}
