/*
** misuse_give_twice.c: rt_chunk_give of the chunk on top of this thread's
** stack is a violation (refrt.h, docs/misuse.md), in every build, the
** release build included: kept twice, the next two takes would hand one
** chunk to two regions. The stack is full here (16 kept), the depth where
** a give that skipped the compare would free a chunk still kept.
**
** A contract violation, seen from outside: one line "refrt: <function>:
** <what is wrong>" on stderr, then abort (docs/misuse.md).
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_chunk_give:
** expect: stderr contains was given twice
*/
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    void *chunks[RT_REGION_CACHE_SLOTS];

    rt_init();
    for (unsigned i = 0; i < RT_REGION_CACHE_SLOTS; i++)
        chunks[i] = rt_chunk_take();
    for (unsigned i = 0; i < RT_REGION_CACHE_SLOTS; i++)
        rt_chunk_give(chunks[i], chunks[i]);
    printf("observe kept %u\n", rt_chunk_kept());
    rt_chunk_give(chunks[RT_REGION_CACHE_SLOTS - 1], chunks[RT_REGION_CACHE_SLOTS - 1]);
    printf("observe after_violation 1\n");
    return 0;
}
