/*
** reuse_shows_nothing.c: a reused chunk shows no byte of the region before
** it, and a region reads only its own fill (seed 000 §3.1, §6).
**
** A region is filled and closed, and the next region opened at the same
** depth gets the same chunk back (LIFO). Before it allocates anything the
** program reads the bytes the old region handed out, through the public
** base field: every one must be zero. Then it allocates over them with its
** own fill and must read back only that. The same at depth 2 under a live
** outer region (whose bytes must survive), and for a whole 64 KiB chunk.
**
** expect: exit == 0
** expect: prog.cases == 3
** expect: prog.same_chunk == 3
** expect: prog.stale_bytes == 0
** expect: prog.own_fill_wrong == 0
** expect: prog.outer_fill_wrong == 0
*/
#include <stdio.h>

#include "refrt.h"

static unsigned long cases, same_chunk, stale_bytes, own_fill_wrong;

static unsigned long count_not(const unsigned char *p, size_t n, unsigned char v)
{
    unsigned long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != v;
    return bad;
}

/* Fills n bytes of a region with old, closes it, opens the next one and
** checks what it shows before and after its own fill. */
static void reuse(size_t n, unsigned char old, unsigned char mine)
{
    rt_region r;
    unsigned char *first, *p;

    rt_region_open(&r);
    first = r.base;
    rt_region_alloc(&r, n, 1, old);
    rt_region_close(&r);

    rt_region_open(&r);
    cases++;
    same_chunk += r.base == first;
    stale_bytes += count_not(r.base, n, 0); /* what the old region wrote */
    p = rt_region_alloc(&r, n, 1, mine);
    own_fill_wrong += count_not(p, n, mine);
    rt_region_close(&r);
}

int main(void)
{
    rt_region outer;
    unsigned char *kept;
    unsigned long outer_wrong;

    rt_init();
    reuse(30000, 0x5A, 0x11);
    reuse(RT_CHUNK_SIZE, 0xFF, 0x22);

    rt_region_open(&outer);
    kept = rt_region_alloc(&outer, 5000, 1, 0x99);
    reuse(12345, 0x77, 0x33);
    outer_wrong = count_not(kept, 5000, 0x99);
    rt_region_close(&outer);

    printf("observe cases %lu\n", cases);
    printf("observe same_chunk %lu\n", same_chunk);
    printf("observe stale_bytes %lu\n", stale_bytes);
    printf("observe own_fill_wrong %lu\n", own_fill_wrong);
    printf("observe outer_fill_wrong %lu\n", outer_wrong);
    return 0;
}
