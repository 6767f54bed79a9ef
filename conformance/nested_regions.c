/*
** nested_regions.c: three nested regions, 20,000 rounds (seed 000 §6, §8.1).
**
** Before the chunk cache each region was a malloc and a free of 64 KiB, and
** glibc trimmed and regrew its heap for nearly every one: 80,003 brk calls
** in this loop. With the cache each depth takes its chunk once and keeps it.
**
** expect: exit == 0
** expect: strace.brk <= 16
** expect: shim.mallocs <= 3
** expect: shim.frees == 0
** expect: shim.dirty == 0
** expect: prog.kept_end == 3
** expect: prog.max_kept == 3
** expect: prog.fill_errors == 0
*/
#include <stdio.h>

#include "refrt.h"

#define ROUNDS 20000

static unsigned max_kept;
static unsigned long fill_errors;

static void note_kept(void)
{
    if (rt_chunk_kept() > max_kept)
        max_kept = rt_chunk_kept();
}

/* Each region hands out some bytes, so every close has something to clear. */
static void use(rt_region *r, size_t n, unsigned char fill)
{
    unsigned char *p = rt_region_alloc(r, n, 1, fill);
    if (p[0] != fill || p[n - 1] != fill)
        fill_errors++;
}

int main(void)
{
    rt_region a, b, c;

    rt_init();
    for (int round = 0; round < ROUNDS; round++) {
        rt_region_open(&a);
        use(&a, 100, 0xA1);
        rt_region_open(&b);
        use(&b, 1000, 0xB2);
        rt_region_open(&c);
        use(&c, 4000, 0xC3);
        rt_region_close(&c);
        note_kept();
        rt_region_close(&b);
        note_kept();
        rt_region_close(&a);
        note_kept();
    }
    printf("observe kept_end %u\n", rt_chunk_kept());
    printf("observe max_kept %u\n", max_kept);
    printf("observe fill_errors %lu\n", fill_errors);
    return 0;
}
