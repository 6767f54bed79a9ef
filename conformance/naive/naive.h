/*
** naive.h: what the files of the naive implementation share.
**
** The naive implementation is a second, deliberately simple library behind
** the same refrt.h: every region is a malloc and a free, nothing is cached,
** nothing is cleared, a task is a thread with a list of what it holds. It
** exists to show what the conformance suite catches (docs/user-guide.md,
** "The conformance kit"): the checks it fails are listed there and compared
** with what it really fails by make check-kit-naive.
*/
#ifndef NAIVE_H
#define NAIVE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>

#include "refrt.h"

/* Something that holds values and has a budget: a task, or a shared
** value's block inside an RT_OWNED door. Every value is its own malloc, on
** a list, so held and free are plain list walks. */
struct naive_value {
    void *p;
    size_t n;
    int outside; /* rt_alloc_outside: may be sent, returned, handed over */
    struct naive_value *next;
};

struct naive_owner {
    struct naive_value *values;
    size_t held, budget;
};

/* The owner rt_alloc charges on this thread (NULL: not a task), and the
** task's own (the same outside a door). */
struct naive_owner *naive_owner(void);
struct naive_owner *naive_task_owner(void);
void naive_set_owner(struct naive_owner *o);

/* Value lists. */
void *naive_add(struct naive_owner *o, size_t n, int outside, const char *fn);
struct naive_value *naive_unlink(struct naive_owner *o, const void *p);
void naive_link(struct naive_owner *o, struct naive_value *v);
void naive_free_all(struct naive_owner *o);

/* Doors the thread is inside, so a panic can release their locks. */
void naive_door_enter(void *lock, int *poison_flag);
void naive_door_leave(void);

_Noreturn void naive_violation(const char *fn, const char *what);

#endif
