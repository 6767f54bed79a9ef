/*
** internal.h: what the runtime's files share and nobody else sees.
**
** Every file of reference/src includes this header first: it sets the
** feature macros the POSIX and GNU names need before any system header.
*/
#ifndef REFRT_INTERNAL_H
#define REFRT_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

#define RT_COLD __attribute__((cold, noinline))
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)

/* This thread's runtime state: one per thread, made on first use, reached
** through the runtime's one pthread key (hot.c) and freed by its
** destructor when the thread ends. */
struct rt_hot {
    /* The chunk cache: a LIFO stack, chunks[kept - 1] given back last. */
    unsigned kept;
    void *chunks[RT_REGION_CACHE_SLOTS];
    /* The innermost open region, so a close can be checked and a panic can
    ** close the regions it unwinds past, innermost first. */
    rt_region *innermost;
};

/* hot.c: the key, kept as key + 1 so that zero means "no cache". */
extern uint64_t rt__key_plus_one;

/* hot.c: this thread's state, made if it has none; NULL before rt_init.
** The fast path is one load from the thread pointer (prim.h) at
** rt__hot_off: the runtime key's slot once validated, else a __thread word
** that is always NULL, so the cold path (pthread_getspecific, and the
** first publish of a fresh thread) is the only branch. */
#include "prim.h"
#if RT_PRIM_DIRECT
/* Hidden: a -fPIC load straight from .data, not through the GOT. */
extern intptr_t rt__hot_off __attribute__((visibility("hidden")));
#endif
struct rt_hot *rt__hot_cold(void) __attribute__((visibility("hidden")));
/* Test hook: when set, validation reads the slot through it. */
extern void *(*rt__hot_test_read)(intptr_t off);

static inline struct rt_hot *rt__hot_or_null(void)
{
#if RT_PRIM_DIRECT
    struct rt_hot *h = rt_prim_slot_read(__atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED));
    if (RT_LIKELY(h != NULL))
        return h;
#endif
    return rt__hot_cold();
}

/* region_cache.c: frees the chunks a thread keeps (they are cleared). */
void rt__chunks_release(struct rt_hot *h);

/* runtime.c: the error shape. Prints "refrt: <fn>: <what>" and aborts. */
_Noreturn RT_COLD void rt__violation(const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A region out of room, a size that overflows, a malloc that failed: the
** contract says SIGILL. x86-64's __builtin_trap is ud2 (SIGILL); aarch64's
** is brk (SIGTRAP), so there the permanently undefined instruction. */
#if defined(__aarch64__)
#define rt__trap()                                                             \
    do {                                                                       \
        __asm__ __volatile__("udf #0");                                        \
        __builtin_unreachable();                                               \
    } while (0)
#else
#define rt__trap() __builtin_trap()
#endif

/* Clears n bytes at p with a store the optimiser cannot delete: the empty
** asm claims to read all memory through p, so the memset is never dead,
** not even right before a free. */
static inline void rt__clear(void *p, size_t n)
{
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

#endif /* REFRT_INTERNAL_H */
