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

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

#define RT_COLD __attribute__((cold, noinline))
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)

struct rt_block;
struct rt_door;

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
    /* The task this thread runs (task.c), NULL on a thread that is not a
    ** task: rt_alloc and the rest are then contract violations. Main's
    ** task is attached on main's first rt__task_hot, so read it through
    ** that, not straight from a fresh state. */
    struct rt_task *task;
    /* The innermost open door (shared.c), NULL outside every door. */
    struct rt_door *door;
};

/* ---- doors: the hook shared values hang on the task (task.c) ------------
**
** A door that is open on this thread is pushed on h->door (d->outer is the
** door that was innermost before) and popped when it closes, innermost
** first. While a door whose `block` is non-NULL is innermost, rt_alloc,
** rt_realloc and rt_free use that block instead of the task's; a full one
** panics the task (rt_panic), and the door's unwind then poisons the value.
**
** rt_panic, before it frees anything, pops every open door innermost first
** and calls d->unwind(d) (poison, write back, release locks, ...), so
** h->door is NULL when the task's regions, block and outside values go.
** unwind must not panic; it runs on the panicking thread. */
struct rt_door {
    struct rt_door *outer;
    struct rt_block *block; /* NULL: allocate from the task's block */
    void (*unwind)(struct rt_door *d);
    void *value; /* set with a block, read only while there is one: the
                 ** value it holds, which rt_free and rt_realloc refuse (it
                 ** is freed with its shared value) */
};

/* ---- blocks (block.c) ----------------------------------------------------
**
** A block is an arena of a fixed size, its budget (D5). It counts what is
** held (D10): live chunks, plus bytes its owner charges for values held
** outside it. Nothing here panics: a full block returns NULL/false and
** the caller panics the task or poisons the value (D6). A block is used by
** one thread at a time. */

/* A block of `bytes` rounded down to 16; NULL when malloc fails or that
** is 2^36 or more. Its budget is rt__block_size. */
struct rt_block *rt__block_new(size_t bytes);
/* Frees the block whole, whatever it still holds. */
void rt__block_delete(struct rt_block *b);
/* How many blocks exist now, all threads: tests prove none is leaked. */
size_t rt__blocks_live(void);
#if RT_TESTING
/* block.c's count of blocks made, which every cookie takes a step of. */
extern uint32_t *const rt__block_made;
#endif
/* n bytes aligned to alignof(max_align_t); NULL when the budget or the
** arena cannot take it (n is never rounded to nothing: n == 0 takes 16). */
void *rt__block_alloc(struct rt_block *b, size_t n);
/* As realloc within b: *held says whether p was a live chunk of b (if not,
** NULL and nothing changed). NULL with *held true: full, p untouched. */
void *rt__block_realloc(struct rt_block *b, void *p, size_t n, bool *held);
/* Gives a live chunk back; false (nothing changed) if p is not one. */
bool rt__block_free(struct rt_block *b, void *p);
/* The bytes the live chunk p takes from the budget, 0 if p is not one. */
size_t rt__block_chunk(const struct rt_block *b, const void *p);
/* Whether p points into b's arena (live or not): "a block value". */
bool rt__block_owns(const struct rt_block *b, const void *p);
size_t rt__block_held(const struct rt_block *b);
size_t rt__block_size(const struct rt_block *b);
/* Counts `bytes` held outside the block against it; false (nothing
** counted) when they do not fit. */
bool rt__block_charge(struct rt_block *b, size_t bytes);
void rt__block_uncharge(struct rt_block *b, size_t bytes);

/* ---- outside values (task.c, D9) -----------------------------------------
**
** An outside value is malloc's own pointer; the task that holds it keeps
** it in a table (pointer -> bytes) and charges its bytes to its block. A
** shared value that takes one in (a store outside its door) calls
** rt__outside_take, then charges the bytes to its own block; one handed
** back to the task goes through rt__outside_give. */

/* The current task stops holding p and its bytes stop counting against
** it; returns the bytes. A contract violation (named `fn`) when the task
** does not hold p as an outside value. */
size_t rt__outside_take(const char *fn, void *p);
/* The current task holds p (from malloc, `bytes` counted); panics the
** task when its budget cannot take the bytes, and p is then freed with
** the task's other values. */
void rt__outside_give(void *p, size_t bytes);
/* Whether the current task holds p as an outside value. */
bool rt__outside_held(const void *p);
/* Whether p is a block value of this thread's task: in its task's block or
** in the block of any door it has open, however far out (a value of an
** outer door's block stays one inside a door with no block of its own).
** What rt_send, rt_hand_over and rt_store refuse. */
bool rt__block_value(const struct rt_hot *h, const void *p);
/* This thread's state, after checking it runs a task (else a contract
** violation naming fn): h->task is then set. */
struct rt_hot *rt__task_hot(const char *fn);

/* task.c, for rt_init: makes main's task and its block; it is attached to
** the calling thread's state on first use. */
void rt__main_task(void);

/* hot.c: the key, kept as key + 1 so that zero means "no cache". */
extern uint64_t rt__key_plus_one;

/* The runtime's locks, checked in test builds. */
#include "locks.h"

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
#if RT_TESTING
/* hot.c's state (UNKNOWN, DIRECT, LATCHED), for a hardware watchpoint. */
int *rt__hot_state_at(void);
#endif

static inline struct rt_hot *rt__hot_or_null(void)
{
    rt__locks_entry(); /* test builds: the last runtime call left no lock */
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
