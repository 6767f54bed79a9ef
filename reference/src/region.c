/*
** region.c: regions, a bump allocator over one chunk each.
**
** A region takes a chunk when it opens and gives back [base, bump) when it
** closes, so exactly the bytes it handed out are cleared. A thread's
** regions are strictly nested; the thread state knows the innermost one,
** so a close out of order is caught, and a panic can close them all.
*/
#include "internal.h"

#include <stdalign.h>

#define REGION_ALIGN alignof(max_align_t)

void rt_region_open(rt_region *r)
{
    struct rt_hot *h = rt__hot_or_null();

    if (RT_UNLIKELY(r == NULL))
        rt__violation("rt_region_open", "region is NULL");
    r->base = rt_chunk_take();
    r->bump = r->base;
    /* Before rt_init there is no thread state to track the region in: it
    ** is marked as its own outer, so a close after rt_init knows it was
    ** never this thread's innermost and does not call that a violation. */
    r->outer = r;
    if (h != NULL) {
        r->outer = h->innermost;
        h->innermost = r;
    }
}

void *rt_region_alloc(rt_region *r, size_t count, size_t size, unsigned char fill)
{
    size_t bytes, offset;
    unsigned char *p;

    if (RT_UNLIKELY(r == NULL || r->base == NULL))
        rt__violation("rt_region_alloc", "region is not open");
    if (RT_UNLIKELY(__builtin_mul_overflow(count, size, &bytes)))
        rt__trap();
    offset = ((size_t)(r->bump - r->base) + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
    if (RT_UNLIKELY(offset > RT_CHUNK_SIZE || bytes > RT_CHUNK_SIZE - offset))
        rt__trap(); /* a region never grows past its chunk */
    p = r->base + offset;
    r->bump = p + bytes;
    memset(p, fill, bytes);
    return p;
}

void rt_region_close(rt_region *r)
{
    struct rt_hot *h = rt__hot_or_null();

    if (RT_UNLIKELY(r == NULL || r->base == NULL))
        rt__violation("rt_region_close", "region is not open");
    if (h != NULL && r->outer != r) {
        if (RT_UNLIKELY(h->innermost != r))
            rt__violation("rt_region_close",
                          "region %p is not this thread's innermost open region", (void *)r);
        h->innermost = r->outer;
    }
    rt_chunk_give(r->base, r->bump);
    r->base = r->bump = NULL;
    r->outer = NULL;
}
