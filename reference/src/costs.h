/*
** costs.h: deterministic cost counters, for the tests only (issue 13).
**
** A fault that makes linear work quadratic, or doubles what an object
** takes from malloc, changes no result a test reads; these counters make
** it visible without a clock. Each counts work whose cost the design
** states (docs/budgets.md, "Cost counters"): slots a pointer table reads,
** free-list steps of a block allocation, chunks walked, bytes copied, and
** the bytes malloc gave each kind of object the runtime makes.
**
** Only in a test build (RT_TESTING, every build but RELEASE=1): there the
** counters are process-wide relaxed atomics, exact whatever the threads,
** read and reset through rt__cost and rt__costs_reset. In a release build
** RT_COST and RT_COST_BYTES expand to nothing and RT_COST_COPY to memcpy,
** so the shipped library is the code without them.
**
** At a site, a counting statement is one line:
**   RT_COST(RT_COST_TABLE_PROBES, 1);      work done, in its unit
**   RT_COST_BYTES(RT_COST_BYTES_CHAN, c);  what malloc gave c (its usable
**                                          size, so the call as written,
**                                          not a copy of its argument)
**   RT_COST_COPY(kind, dst, src, n);       memcpy, and n counted
*/
#ifndef REFRT_COSTS_H
#define REFRT_COSTS_H

#include <stddef.h>
#include <string.h>

enum rt_cost {
    /* task.c's pointer tables (a task's outside values, the tasks not yet
    ** joined): calls of table_put (rehash moves included), table_find and
    ** table_remove, and the slots they read, the empty slot that ends a
    ** search and the slots a removal shifts back included. */
    RT_COST_TABLE_OPS,
    RT_COST_TABLE_PROBES,
    /* block.c: rt__block_alloc calls, and the free-list heads and entries
    ** they read (the class head of the fast path, each large chunk of the
    ** first-fit walk, each class head of the search for a bigger chunk). */
    RT_COST_BLOCK_ALLOCS,
    RT_COST_FREE_STEPS,
    /* block.c: coalescing runs, and the chunks their walks visit. */
    RT_COST_COALESCES,
    RT_COST_COALESCE_CHUNKS,
    /* Bytes copied: by rt__block_realloc moving a chunk; by an outside
    ** realloc (the bytes it keeps: libc copies at most those when it
    ** moves the value) and rt_clone_outside; by the copies and write-backs
    ** of RT_COPY doors and rt_get. */
    RT_COST_BLOCK_COPIED,
    RT_COST_OUTSIDE_COPIED,
    RT_COST_SHARED_COPIED,
    /* region_cache.c: kept chunks freed when a thread ends. */
    RT_COST_CHUNKS_RELEASED,
    /* Bytes malloc gave (malloc_usable_size), per kind of object. */
    RT_COST_BYTES_TASK,    /* struct rt_task */
    RT_COST_BYTES_CHAN,    /* struct rt_chan */
    RT_COST_BYTES_RING,    /* a channel's ring of items */
    RT_COST_BYTES_SHARED,  /* struct rt_shared */
    RT_COST_BYTES_STORED,  /* a shared state's array of stored values */
    RT_COST_BYTES_BLOCK,   /* a block: struct rt_block and its arena */
    RT_COST_BYTES_TABLE,   /* a pointer table's slots */
    RT_COST_BYTES_HOT,     /* a thread's struct rt_hot */
    RT_COST_BYTES_OUTSIDE, /* outside values, realloc'ed ones included */
    RT_COSTS
};

#if RT_TESTING

#define RT_COST(kind, n) rt__cost_add((kind), (size_t)(n))
#define RT_COST_BYTES(kind, p) rt__cost_bytes((kind), (p))
#define RT_COST_COPY(kind, dst, src, n) rt__cost_copy((kind), (dst), (src), (n))
/* A private struct's size, for the tests that bound its bytes. */
#define RT_COST_SIZEOF(name, type) const size_t rt__sizeof_##name = sizeof(type)

extern unsigned long rt__costs[RT_COSTS];

static inline void rt__cost_add(enum rt_cost kind, size_t n)
{
    __atomic_add_fetch(&rt__costs[kind], (unsigned long)n, __ATOMIC_RELAXED);
}

static inline void *rt__cost_copy(enum rt_cost kind, void *dst, const void *src, size_t n)
{
    rt__cost_add(kind, n);
    return memcpy(dst, src, n);
}

/* Counts what malloc gave p (nothing for NULL). */
void rt__cost_bytes(enum rt_cost kind, void *p);
/* A counter now, all threads. */
unsigned long rt__cost(enum rt_cost kind);
/* Every counter back to 0. */
void rt__costs_reset(void);

/* The sizes of the structs the tests cannot see. */
extern const size_t rt__sizeof_block, rt__sizeof_chan, rt__sizeof_chan_item,
    rt__sizeof_shared, rt__sizeof_stored;

#else

#define RT_COST(kind, n) ((void)0)
#define RT_COST_BYTES(kind, p) ((void)0)
#define RT_COST_COPY(kind, dst, src, n) memcpy((dst), (src), (n))
#define RT_COST_SIZEOF(name, type) struct rt__cost_sizeof_##name

#endif

#endif /* REFRT_COSTS_H */
