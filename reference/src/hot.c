/*
** hot.c: the one accessor of a thread's runtime state, and its latch.
**
** Everything per thread (the chunk stack, the innermost region, ...) hangs
** off one struct rt_hot, published in the runtime's one pthread key. The
** fast path (rt__hot_or_null in internal.h) is one load from the thread
** pointer at rt__hot_off. That offset is the key's own slot only after the
** first publish found it and checked it against pthread_getspecific; until
** then, and for good after any doubt, it is a __thread word that is always
** NULL, so every call takes the cold path below, which asks
** pthread_getspecific (seed 003).
**
** States, changed only under hot_lock and only forward:
**   UNKNOWN --first publish validates--> DIRECT --any mismatch--> LATCHED
**   UNKNOWN --no slot found, or a mismatch-----------------------> LATCHED
** rt__hot_off is the slot only in DIRECT. A reader loads it once, so it
** reads either the NULL word or a slot validated on this very layout; it
** never sees a slot that was not checked, also while the latch races it.
*/
#include "internal.h"

#include <pthread.h>

#include "costs.h"
#include "points.h"

/* Zero until rt_init: key + 1, so zero means "no key, no cache". Eight
** bytes, whatever the width of pthread_key_t. */
uint64_t rt__key_plus_one;

void *(*rt__hot_test_read)(intptr_t off);

enum { HOT_UNKNOWN, HOT_DIRECT, HOT_LATCHED };

static pthread_mutex_t hot_lock = RT_MUTEX_INITIALIZER;
static int hot_state;        /* process-wide, for good once LATCHED */
static intptr_t hot_slot;    /* the key's slot, set before DIRECT */

#if RT_TESTING
/* Where the state is, for the test that stops the first publish at its
** store of DIRECT (check_interleave.c, with a hardware watchpoint). A
** function, not a constant: the catalog's hot_latch_per_thread makes the
** state _Thread_local, whose address is the calling thread's. */
int *rt__hot_state_at(void)
{
    return &hot_state;
}
#endif

#if RT_PRIM_DIRECT
/* Never written: NULL on every thread. Initial-exec, so its offset from
** the thread pointer is the same on every thread. */
static __thread void *hot_null_word __attribute__((tls_model("initial-exec")));
static intptr_t hot_null_off;
intptr_t rt__hot_off;

/* Before any other code calls the runtime (priority 101 is the first a
** program may use): the fast path must read the NULL word, never the
** word at offset 0 from the thread pointer. */
__attribute__((constructor(101))) static void hot_start(void)
{
    hot_null_off = rt_prim_tp_offset(&hot_null_word);
    __atomic_store_n(&rt__hot_off, hot_null_off, __ATOMIC_RELEASE);
}
#endif

static void *hot_direct_read(intptr_t off)
{
#if RT_PRIM_DIRECT
    if (RT_UNLIKELY(rt__hot_test_read != NULL))
        return rt__hot_test_read(off);
    return rt_prim_slot_read(off);
#else
    (void)off;
    return NULL;
#endif
}

/* The direct read of the key agrees with pthread_getspecific and with
** what this thread just published. */
static bool hot_agrees(pthread_key_t key, intptr_t off, struct rt_hot *h)
{
    return hot_direct_read(off) == h && pthread_getspecific(key) == h;
}

/* pre: hot_lock held. */
static void hot_latch_locked(void)
{
    RT_POINT("hot.latch.before_stores");
    __atomic_store_n(&hot_state, HOT_LATCHED, __ATOMIC_RELEASE);
#if RT_PRIM_DIRECT
    __atomic_store_n(&rt__hot_off, hot_null_off, __ATOMIC_RELEASE);
#endif
}

static void hot_set(pthread_key_t key, struct rt_hot *h)
{
    if (pthread_setspecific(key, h) != 0)
        rt__trap();
}

/* The first publish of the process: finds the slot, publishes h there and
** opens the direct path only if the slot holds h. A thread that got here
** while another was doing it publishes after it, as any later thread:
** false, nothing done. */
static bool hot_first_publish(pthread_key_t key, struct rt_hot *h)
{
    intptr_t off = 0;
    bool found, first;

    rt__lock(&hot_lock);
    first = __atomic_load_n(&hot_state, __ATOMIC_RELAXED) == HOT_UNKNOWN;
    RT_POINT("hot.first_publish.locked");
    if (first) {
        found = rt_prim_slot_find(key, &off);
        hot_set(key, h);
        if (found && hot_agrees(key, off, h)) {
            hot_slot = off;
            __atomic_store_n(&hot_state, HOT_DIRECT, __ATOMIC_RELEASE);
#if RT_PRIM_DIRECT
            __atomic_store_n(&rt__hot_off, off, __ATOMIC_RELEASE);
#endif
        } else {
            hot_latch_locked();
        }
    }
    rt__unlock(&hot_lock);
    return first;
}

/* Makes this thread's state and publishes it. Every publish after the
** first checks the direct read again: the first doubt latches. */
static RT_COLD struct rt_hot *hot_publish(pthread_key_t key)
{
    struct rt_hot *h = calloc(1, sizeof *h);

    if (h == NULL)
        rt__trap();
    RT_COST_BYTES(RT_COST_BYTES_HOT, h);
    if (__atomic_load_n(&hot_state, __ATOMIC_ACQUIRE) == HOT_UNKNOWN &&
        hot_first_publish(key, h))
        return h;
    hot_set(key, h);
    if (__atomic_load_n(&hot_state, __ATOMIC_ACQUIRE) == HOT_DIRECT &&
        !hot_agrees(key, hot_slot, h))
        rt_hot_disable();
    return h;
}

struct rt_hot *rt__hot_cold(void)
{
    uint64_t kp1 = rt__key_plus_one;
    struct rt_hot *h;

    if (kp1 == 0)
        return NULL;
    h = pthread_getspecific((pthread_key_t)(kp1 - 1));
    if (RT_LIKELY(h != NULL))
        return h; /* the fallback: the direct path is off or not yet open */
    return hot_publish((pthread_key_t)(kp1 - 1));
}

struct rt_hot *rt_hot(void)
{
    struct rt_hot *h = rt__hot_or_null();
    if (h == NULL)
        rt__violation("rt_hot", "rt_init has not been called");
    return h;
}

bool rt_hot_direct(void)
{
    return __atomic_load_n(&hot_state, __ATOMIC_ACQUIRE) == HOT_DIRECT;
}

void rt_hot_disable(void)
{
    RT_POINT("hot.disable.before_lock");
    rt__lock(&hot_lock);
    RT_POINT("hot.disable.locked");
    hot_latch_locked();
    rt__unlock(&hot_lock);
}
