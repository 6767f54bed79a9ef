/*
** prim.h: the platform primitives of the hot path (hot.c calls only these).
**
** The thread-pointer read and the discovery of glibc's thread-descriptor
** layout live here and nowhere else. Conventions for every primitive:
** - An offset is a signed byte distance from the thread pointer (the %fs
**   base on x86-64, tpidr_el0 on aarch64); it is the same on every thread.
** - RT_PRIM_DIRECT is 1 where a direct read is known (glibc on x86-64 or
**   aarch64), else 0; with 0 only rt_prim_slot_find exists, and it always
**   fails, so the runtime takes pthread_getspecific from the start.
** - Nothing here latches, validates against other threads or takes locks:
**   that is hot.c's job.
*/
#ifndef REFRT_PRIM_H
#define REFRT_PRIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* -DRT_PRIM_PORTABLE builds the portable fallback anywhere, to test it. */
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(RT_PRIM_PORTABLE)
#define RT_PRIM_DIRECT 1
#else
#define RT_PRIM_DIRECT 0
#endif

#if RT_PRIM_DIRECT
#include <dlfcn.h>

/* glibc keeps the values of keys below this in the thread descriptor
** itself (struct pthread's specific_1stblock); higher keys go through a
** second-level array, which has no fixed offset. */
#define RT_PRIM_FIRST_BLOCK_KEYS 32

/* The word at offset off from this thread's thread pointer: one load.
** pre: off is an offset of a word that every thread has mapped (a slot
**      found by rt_prim_slot_find, or the offset of an initial-exec
**      __thread variable).
** The asm is volatile so that no two reads are ever merged or hoisted,
** even with the same off: code after a swapcontext may run on another
** thread, and only the read itself knows which. It is deliberately not
** a pure or const computation (seed 003: a `pure` read was reused across
** a resume on another thread). No "memory" clobber: the callers' own
** loads must stay cacheable; the slot is written only by
** pthread_setspecific, an opaque call the read is never moved across. */
static inline void *rt_prim_slot_read(intptr_t off)
{
    void *v;
#if defined(__x86_64__)
    __asm__ __volatile__("movq %%fs:(%1), %0" : "=r"(v) : "r"(off));
#else
    void *tp;
    __asm__ __volatile__("mrs %0, tpidr_el0\n\tldr %0, [%0, %1]" : "=&r"(tp) : "r"(off));
    v = tp;
#endif
    return v;
}

/* The offset of p from this thread's thread pointer.
** pre: p is the address of an initial-exec __thread variable, whose
**      offset is then the same on every thread. */
static inline intptr_t rt_prim_tp_offset(const void *p)
{
    uintptr_t tp;
#if defined(__x86_64__)
    __asm__ __volatile__("movq %%fs:0, %0" : "=r"(tp)); /* the TCB points to itself */
#else
    __asm__ __volatile__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
    return (intptr_t)((uintptr_t)p - tp);
}

/* The thread descriptor's bytes as offsets [*lo, *hi) from the thread
** pointer, bounded by glibc's own size of struct pthread (its thread_db
** symbol, exported for debuggers, private but present since 2.34). On
** x86-64 the descriptor starts at the thread pointer; on aarch64 it
** sits just below it. False when the size cannot be found. */
static inline bool rt_prim_descriptor(intptr_t *lo, intptr_t *hi)
{
    const uint32_t *size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");

    if (size == NULL || *size < 64 || *size > 65536)
        return false;
#if defined(__x86_64__)
    *lo = 64; /* past the TCB header: self pointers, never a key's value */
    *hi = (intptr_t)*size;
#else
    *lo = -(intptr_t)*size;
    *hi = 0;
#endif
    return true;
}

/* The offsets in [lo, hi) whose word equals v: how many, the first in *at. */
static inline unsigned rt_prim_scan(intptr_t lo, intptr_t hi, const void *v, intptr_t *at)
{
    unsigned found = 0;
    for (intptr_t off = lo; off + (intptr_t)sizeof(void *) <= hi; off += sizeof(void *))
        if (rt_prim_slot_read(off) == v && found++ == 0)
            *at = off;
    return found;
}
#endif /* RT_PRIM_DIRECT */

/* Finds the offset of key's slot in the calling thread's descriptor: sets
** the slot to one marker, finds the only word that holds it, sets a second
** marker and sees it there too (through pthread_getspecific as well).
** Leaves the slot NULL. False when no direct read is known here: another
** libc or architecture, a key at or above RT_PRIM_FIRST_BLOCK_KEYS, a
** descriptor of unknown size, no single word that follows the key.
** pre: the calling thread's slot for key is NULL (it has published
**      nothing yet), and nothing else sets it meanwhile. */
static inline bool rt_prim_slot_find(pthread_key_t key, intptr_t *slot)
{
#if RT_PRIM_DIRECT
    static const char markers[2];
    intptr_t lo, hi, off = 0;
    bool ok;

    if ((uintmax_t)key >= RT_PRIM_FIRST_BLOCK_KEYS || !rt_prim_descriptor(&lo, &hi))
        return false;
    if (pthread_setspecific(key, &markers[0]) != 0)
        return false;
    ok = rt_prim_scan(lo, hi, &markers[0], &off) == 1;
    ok = ok && pthread_setspecific(key, &markers[1]) == 0 &&
         rt_prim_slot_read(off) == &markers[1] && pthread_getspecific(key) == &markers[1];
    ok = pthread_setspecific(key, NULL) == 0 && ok && rt_prim_slot_read(off) == NULL;
    if (ok)
        *slot = off;
    return ok;
#else
    (void)key;
    (void)slot;
    return false;
#endif
}

#endif /* REFRT_PRIM_H */
