/*
** region_cache.c: the chunks each thread keeps for its regions (seed 000).
**
** A LIFO stack of at most RT_REGION_CACHE_SLOTS chunks of RT_CHUNK_SIZE per
** thread. Regions are strictly nested, so the chunk given back last is the
** one a region at the same depth used last time, warm in cache. Chunks come
** only from malloc(RT_CHUNK_SIZE) and go only to free, so a shim can count
** them; every byte a region used is cleared before its chunk is kept or
** freed.
*/
#include "internal.h"

#include "costs.h"

void *rt_chunk_take(void)
{
    struct rt_hot *h = rt__hot_or_null();
    void *chunk;

    if (RT_LIKELY(h != NULL && h->kept > 0))
        return h->chunks[--h->kept];
    chunk = malloc(RT_CHUNK_SIZE);
    if (RT_UNLIKELY(chunk == NULL))
        rt__trap();
    return chunk;
}

void rt_chunk_give(void *base, void *end)
{
    struct rt_hot *h;
    size_t used = (size_t)((unsigned char *)end - (unsigned char *)base);

    if (RT_UNLIKELY(base == NULL || (unsigned char *)end < (unsigned char *)base ||
                    used > RT_CHUNK_SIZE))
        rt__violation("rt_chunk_give", "[%p, %p) is not a range inside one chunk", base, end);
    rt__clear(base, used);
    h = rt__hot_or_null();
    /* The cheap half of double-give detection: the chunk on top. A full
    ** stack is checked too: freeing its top would leave it kept, and the
    ** next take would hand out freed memory. */
    if (RT_UNLIKELY(h != NULL && h->kept > 0 && h->chunks[h->kept - 1] == base))
        rt__violation("rt_chunk_give", "chunk %p was given twice", base);
    if (RT_LIKELY(h != NULL && h->kept < RT_REGION_CACHE_SLOTS)) {
        h->chunks[h->kept++] = base;
        return;
    }
    free(base);
}

unsigned rt_chunk_kept(void)
{
    struct rt_hot *h = rt__hot_or_null();
    return h != NULL ? h->kept : 0;
}

void rt__chunks_release(struct rt_hot *h)
{
    while (h->kept > 0) {
        RT_COST(RT_COST_CHUNKS_RELEASED, 1);
        free(h->chunks[--h->kept]);
    }
}
