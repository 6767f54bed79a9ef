/*
** recursion_40.c: a recursion 40 regions deep, repeated 100 times
** (seed 000 §2 "what happens at the bound", §6, §8.6).
**
** The first descent mallocs 40 chunks; the way back keeps 16 and frees 24.
** Every later descent reuses the 16 and mallocs 24, which are freed again:
** 40 + 99 * 24 = 2,416 taken, 100 * 24 = 2,400 freed, each one cleared
** (every region fills bytes, one depth its whole chunk). The stack never
** holds more than 16.
**
** expect: exit == 0
** expect: shim.mallocs == 2416
** expect: shim.frees == 2400
** expect: shim.dirty == 0
** expect: shim.max_live_per_thread == 40
** expect: prog.max_kept == 16
** expect: prog.kept_end == 16
** expect: prog.fill_errors == 0
*/
#include <stdio.h>

#include "refrt.h"

#define DEPTH 40
#define REPEATS 100

static unsigned max_kept;
static unsigned long fill_errors;

/* Depth 7 fills its whole chunk, so the last byte of a chunk is cleared too. */
static size_t bytes_at(int depth)
{
    return depth == 7 ? RT_CHUNK_SIZE : 512 + 97 * (size_t)depth;
}

static void descend(int depth)
{
    rt_region r;
    unsigned char fill = (unsigned char)(0x40 + depth);
    size_t n = bytes_at(depth);
    unsigned char *p;

    rt_region_open(&r);
    p = rt_region_alloc(&r, n, 1, fill);
    if (depth + 1 < DEPTH)
        descend(depth + 1);
    if (p[0] != fill || p[n - 1] != fill)
        fill_errors++; /* deeper regions must not have touched ours */
    rt_region_close(&r);
    if (rt_chunk_kept() > max_kept)
        max_kept = rt_chunk_kept();
}

int main(void)
{
    rt_init();
    for (int i = 0; i < REPEATS; i++)
        descend(0);
    printf("observe max_kept %u\n", max_kept);
    printf("observe kept_end %u\n", rt_chunk_kept());
    printf("observe fill_errors %lu\n", fill_errors);
    return 0;
}
