/*
** regions.c (naive): a region is a malloc and a free of one chunk.
**
** No chunk cache (rt_chunk_kept is always 0), no clearing, no record of
** nesting: the simplest code that hands out the right bytes.
*/
#include "naive.h"

#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_hot {
    int unused;
};

static _Thread_local struct rt_hot this_thread;

void naive_violation(const char *fn, const char *what)
{
    fprintf(stderr, "refrt: %s: %s\n", fn, what);
    fflush(stderr);
    abort();
}

void *rt_chunk_take(void)
{
    void *chunk = malloc(RT_CHUNK_SIZE);
    if (chunk == NULL)
        __builtin_trap();
    return chunk;
}

void rt_chunk_give(void *base, void *end)
{
    (void)end;
    free(base);
}

unsigned rt_chunk_kept(void)
{
    return 0;
}

void rt_region_open(rt_region *r)
{
    r->base = rt_chunk_take();
    r->bump = r->base;
    r->outer = NULL;
}

void *rt_region_alloc(rt_region *r, size_t count, size_t size, unsigned char fill)
{
    size_t align = alignof(max_align_t), bytes, offset;

    if (__builtin_mul_overflow(count, size, &bytes))
        __builtin_trap();
    offset = ((size_t)(r->bump - r->base) + align - 1) & ~(align - 1);
    if (offset > RT_CHUNK_SIZE || bytes > RT_CHUNK_SIZE - offset)
        __builtin_trap();
    r->bump = r->base + offset + bytes;
    return memset(r->base + offset, fill, bytes);
}

void rt_region_close(rt_region *r)
{
    rt_chunk_give(r->base, r->bump);
    r->base = r->bump = NULL;
}

struct rt_hot *rt_hot(void)
{
    return &this_thread;
}

bool rt_hot_direct(void)
{
    return false;
}

void rt_hot_disable(void)
{
}
