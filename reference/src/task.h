/*
** task.h: what task.c and chan.c share about a task.
*/
#ifndef REFRT_TASK_H
#define REFRT_TASK_H

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>

/* The smallest block the default strategy makes: the seed's 64 KiB. */
#define RT_MIN_DEFAULT_BLOCK ((size_t)65536)

/* The outside values a task holds: pointer -> bytes, open addressing with
** linear probing; cap is 0 or a power of two, at most half full. */
struct outside_table {
    struct outside_slot {
        void *p;
        size_t bytes;
    } *slots;
    size_t cap, count;
};

struct rt_task {
    unsigned long id;
    bool is_main;
    struct rt_block *block;       /* NULL once the task has ended */
    struct outside_table outside; /* values held outside the block */
    /* Bytes of values this task sent that receivers have taken since it
    ** last settled: the receivers add, the task subtracts from its block. */
    atomic_size_t released;
    /* The joiner's reference, plus one per value it sent still queued, so
    ** `released` stays valid after the task has ended and been joined. */
    atomic_uint refs;
    pthread_t thread;
    jmp_buf start; /* where rt_panic unwinds to */
    void *(*fn)(void *);
    void *arg;
    void *result;
    size_t result_bytes;
    rt_status status;
};

/* p leaves t's table but stays charged (it is in flight); its bytes, or
** SIZE_MAX if t does not hold p. */
size_t rt__outside_detach(struct rt_task *t, void *p);
/* A receiver took `bytes` t sent: they stop counting against t. */
void rt__task_release(struct rt_task *t, size_t bytes);
/* Charges bytes to t (settling first if needed); false if they do not fit. */
bool rt__task_charge(struct rt_task *t, size_t bytes);
/* t holds p (already charged). */
void rt__task_hold(struct rt_task *t, void *p, size_t bytes);
void rt__task_ref(struct rt_task *t);
/* Panics the current task: `what` of `bytes` does not fit its budget. */
_Noreturn RT_COLD void rt__task_full(const char *what, size_t bytes);
void rt__task_unref(struct rt_task *t);
/* Tasks spawned and not yet joined, all threads: tests prove a failed
** spawn or a join leaves none behind. */
size_t rt__tasks_unjoined(void);
#if RT_TESTING
/* task.c's count of tasks running (what a strategy is told) and the next
** task id, for a hardware watchpoint. */
extern const void *const rt__tasks_running_at;
extern const void *const rt__next_id_at;
/* The pointer table's operations (task.c), on a table the test owns:
** hold returns false when the table cannot grow; find returns cap when p
** is not held; remove empties slot i and returns its bytes. */
bool rt__table_hold(struct outside_table *o, void *p, size_t bytes);
size_t rt__table_find(const struct outside_table *o, const void *p);
size_t rt__table_remove(struct outside_table *o, size_t i);
size_t rt__table_home(const struct outside_table *o, const void *p);
#endif

#endif
