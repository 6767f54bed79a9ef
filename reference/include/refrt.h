/*
** refrt.h: the public contract of the reference runtime.
**
** Every name, signature and behaviour stated in shared/contract.md is kept
** here as it is written there; this header may add, never change. C11 and
** POSIX threads. Errors have one shape: a contract violation prints
** "refrt: <function>: <what is wrong>" on stderr and aborts; a region that
** runs out of room traps (SIGILL).
*/
#ifndef REFRT_H
#define REFRT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Start-up --------------------------------------------------------- */

/* Makes the runtime's one pthread key and makes the calling thread (main) a
** task with a block. Call from main before any thread is created; a second
** call does nothing. Before it, the chunk cache is off. */
void rt_init(void);

/* ---- Chunk cache (seed 000) ------------------------------------------- */

#define RT_CHUNK_SIZE 65536
#define RT_REGION_CACHE_SLOTS 16

/* The chunk this thread gave back last (LIFO), else malloc(RT_CHUNK_SIZE).
** Never NULL: a failed malloc traps. */
void *rt_chunk_take(void);

/* Clears [base, end) with a store the optimiser cannot delete, then keeps
** the chunk if this thread keeps fewer than RT_REGION_CACHE_SLOTS, else
** frees it. */
void rt_chunk_give(void *base, void *end);

/* How many chunks this thread keeps now, 0 to RT_REGION_CACHE_SLOTS. */
unsigned rt_chunk_kept(void);

/* ---- Regions ---------------------------------------------------------- */

/* Kept on the caller's stack. The fields are the runtime's: read them if
** you like, never write them. */
typedef struct rt_region {
    unsigned char *base;     /* the chunk, NULL when not open */
    unsigned char *bump;     /* next free byte; [base, bump) was handed out */
    struct rt_region *outer; /* the region that was innermost when this opened
                                (itself if it opened before rt_init) */
} rt_region;

/* Takes a chunk. A thread's regions are strictly nested. */
void rt_region_open(rt_region *r);

/* count * size bytes aligned to alignof(max_align_t), every byte set to
** fill. Traps when count * size overflows or the chunk has no room. */
void *rt_region_alloc(rt_region *r, size_t count, size_t size, unsigned char fill);

/* Gives the chunk back with [base, bump). Closing a region that is not
** this thread's innermost open one is a contract violation. */
void rt_region_close(rt_region *r);

/* ---- Tasks and budgets (seed 002, D4 to D10) -------------------------- */

typedef enum { RT_OK = 0, RT_PANICKED, RT_POISONED, RT_REFUSED, RT_CLOSED } rt_status;

/* D7: sizes the block of each task made after rt_set_strategy. */
typedef struct {
    size_t (*block_bytes)(void *ctx, size_t tasks_running);
    void *ctx;
} rt_strategy;

typedef struct rt_task rt_task;

void rt_set_strategy(rt_strategy s);
rt_strategy rt_fixed_strategy(size_t bytes);
rt_strategy rt_default_strategy(void);

rt_task *rt_spawn(void *(*fn)(void *), void *arg);
rt_status rt_join(rt_task *t, void **result);
_Noreturn void rt_panic(const char *why);

void *rt_alloc(size_t n);
void *rt_realloc(void *p, size_t n);
void rt_free(void *p);
size_t rt_held(void);
size_t rt_budget(void);

void *rt_alloc_outside(size_t n);
void *rt_clone_outside(const void *p, size_t n);
void *rt_hand_over(void *value);

/* ---- Channels (D9) ---------------------------------------------------- */

typedef struct rt_chan rt_chan;

rt_chan *rt_chan_new(size_t capacity);
rt_status rt_send(rt_chan *c, void *value);
void *rt_recv(rt_chan *c);
void rt_chan_close(rt_chan *c);
void rt_chan_free(rt_chan *c);

/* ---- Shared values, doors and poisoning (D5, D6, D11) ----------------- */

typedef enum { RT_COPY, RT_OWNED } rt_kind;
typedef struct rt_shared rt_shared;

rt_shared *rt_shared_new(rt_kind kind, size_t size, const void *init, size_t block_bytes);
rt_shared *rt_shared_supervised(rt_kind kind, size_t size,
                                void (*build)(void *value, void *ctx), void *ctx,
                                size_t block_bytes);
rt_status rt_update(rt_shared *s, void (*fn)(void *value, void *ctx), void *ctx);
rt_status rt_update_all(rt_shared *a, rt_shared *b,
                        void (*fn)(void *va, void *vb, void *ctx), void *ctx);
rt_status rt_access(rt_shared *s, void (*fn)(const void *value, void *ctx), void *ctx);
rt_status rt_get(rt_shared *s, void *out);
bool rt_poisoned(rt_shared *s);
void rt_shared_free(rt_shared *s);

/* Added to the contract (docs/poisoning.md). A door is rt_update,
** rt_update_all, rt_access and rt_get; each needs a task. A door entered
** again on a value whose door this task has open, rt_update_all(a, a), and
** a door nested inside a door on a value made later (doors nest in the
** order values were made, so nested doors never deadlock) are contract
** violations. In rt_update_all, rt_alloc and rt_free use a's block if a is
** RT_OWNED, else b's. Inside a door that works in the value's own block (an
** RT_OWNED update, rt_update_all in place, a supervised RT_OWNED build),
** rt_free or rt_realloc of that value itself is a contract violation: it
** is freed with its shared value. */

/* D9: stores the outside value `value` into s, inside an open rt_update or
** rt_update_all of s (or the build of a supervised s), s being RT_OWNED.
** The task stops holding it and its bytes move from the task's count to
** s's block; the caller keeps the pointer inside s's value. It is reached
** through s in later doors, handed back with rt_unstore, and freed with s
** when s is freed or rebuilt: never lost, never leaked. A value s's block
** cannot take panics in the door, and goes back to the task to be freed
** with the task's other values; that panic does to s what any panic there
** does (docs/poisoning.md): in an update it poisons s, in a first build
** nothing is made, in a rebuild s stays poisoned. A block value (the
** task's or s's own) is RT_REFUSED, nothing changed, and the message
** names rt_clone_outside. A value the task does not hold is a contract
** violation. */
rt_status rt_store(rt_shared *s, void *value);

/* The reverse of rt_store, in the same kind of door: the value leaves s,
** its bytes move back to the task's count, and the task holds it again (to
** free it with rt_free, send it or return it). A task whose budget cannot
** take it panics, and the value stays stored. A value not stored in s is a
** contract violation. Returns value. */
void *rt_unstore(rt_shared *s, void *value);

/* The bytes s's block holds now: the value itself, what was allocated in
** its doors and not freed, and the values stored into it (D5, D9). With no
** door on s open in this task it takes s's lock as a door would, so inside
** a door on a value made after s it is a contract violation (doors nest in
** the order values were made). */
size_t rt_shared_held(rt_shared *s);

/* ---- The hot path (seed 003) ------------------------------------------ */

struct rt_hot;

/* This thread's runtime state, found through the runtime's one key. */
struct rt_hot *rt_hot(void);
/* Whether the direct path is live, process-wide. */
bool rt_hot_direct(void);
/* Latches the direct path off for every thread, for good. */
void rt_hot_disable(void);

#ifdef __cplusplus
}
#endif

#endif /* REFRT_H */
