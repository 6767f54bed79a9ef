/*
** cache_off_before_init.c: the cache is off before rt_init; after it, take
** pops the chunk given last and the stack never holds more than 16
** (contract: rt_init, rt_chunk_take, rt_chunk_give, rt_chunk_kept).
**
** Before rt_init: 5 takes are 5 mallocs, 5 gives are 5 frees (cleared: each
** chunk was filled), and two regions opened and closed twice are 4 more
** of each. Nothing is kept.
** After rt_init: 20 chunks taken (20 mallocs) and given back in order: the
** first 16 are kept, the last 4 freed. Taking 16 again mallocs nothing and
** returns them last-given first. Giving those 16 back and taking one more
** than that (17: one malloc) shows the bound from the other side.
** In all: 5 + 4 + 20 + 1 = 30 mallocs, 5 + 4 + 4 + 1 = 14 frees.
**
** expect: exit == 0
** expect: shim.mallocs == 30
** expect: shim.frees == 14
** expect: shim.dirty == 0
** expect: prog.kept_before_init == 0
** expect: prog.lifo_mismatches == 0
** expect: prog.max_kept == 16
** expect: prog.kept_end == 16
*/
#include <stdio.h>
#include <string.h>

#include "refrt.h"

static unsigned max_kept, kept_before_init;

static void note(unsigned *max)
{
    if (rt_chunk_kept() > *max)
        *max = rt_chunk_kept();
}

static void give_filled(unsigned char *c, size_t n, unsigned *max)
{
    memset(c, 0xC7, n);
    rt_chunk_give(c, c + n);
    note(max);
}

int main(void)
{
    unsigned char *c[20];
    unsigned long lifo_mismatches = 0;

    /* The cache is off. */
    for (int i = 0; i < 5; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i < 5; i++)
        give_filled(c[i], 1000 * (size_t)(i + 1), &kept_before_init);
    for (int i = 0; i < 2; i++) {
        rt_region a, b;
        rt_region_open(&a);
        rt_region_alloc(&a, 64, 1, 0x1A);
        rt_region_open(&b);
        rt_region_alloc(&b, 64, 1, 0x1B);
        rt_region_close(&b);
        note(&kept_before_init);
        rt_region_close(&a);
        note(&kept_before_init);
    }

    rt_init();
    for (int i = 0; i < 20; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i < 20; i++)
        give_filled(c[i], 4096, &max_kept);
    for (int i = 15; i >= 0; i--)
        lifo_mismatches += rt_chunk_take() != c[i];
    for (int i = 0; i < 16; i++)
        give_filled(c[i], 64, &max_kept);
    for (int i = 0; i < 17; i++) {
        c[i] = rt_chunk_take();
        note(&max_kept);
    }
    for (int i = 0; i < 17; i++)
        give_filled(c[i], 1, &max_kept);

    printf("observe kept_before_init %u\n", kept_before_init);
    printf("observe lifo_mismatches %lu\n", lifo_mismatches);
    printf("observe max_kept %u\n", max_kept);
    printf("observe kept_end %u\n", rt_chunk_kept());
    return 0;
}
