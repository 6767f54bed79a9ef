/*
** prop_int.h: what the two halves of the interpreter share: prop_run.c
** (regions, the chunk cache, threads, and the run itself) and prop_task.c
** (tasks, outside values, channels, shared values and doors).
*/
#ifndef REFRT_PROP_INT_H
#define REFRT_PROP_INT_H

#include <stddef.h>

#include "prop.h"

/* Records the run's first failure ("op N (what): why"); returns 1. */
int prop_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Pointers that must be freed by a given moment (a thread's chunks, a
** task's values when it ends), watched through prop_note_free: with
** prop_sees_frees only. A chunk must also read zero in [0, used) when it
** is freed. Any thread may add; prop_watch_verify empties the list. */
void prop_watch_add(const void *p, size_t used);
/* 0 if every pointer watched was freed (clean); else a failure naming
** what, and the list is emptied either way. */
int prop_watch_verify(const char *what);

/* A region opened and closed on main's thread inside a door's fn or a
** build (main's cache is the model's, prop_run.c): it took the chunk at
** base and used [base, base + used). Checks that the take was the model's
** (the chunk given back last, or a fresh one when none is kept), moves the
** model as a take and a give would, and reads the chunk back; 1 on a
** failure. */
int prop_region_passed(const unsigned char *base, size_t used);

/* prop_task.c, called by prop_run.c. */
void prop_task_begin(void);
/* Runs op if it is a task operation (else returns -1), 0 or 1 as step. */
int prop_task_step(const struct prop_op *op);
/* The checks after every operation: held, blocks, poison marks. */
int prop_task_check(void);
/* The checked teardown: joins the task, frees every value and channel and
** shared value through checked operations. */
int prop_task_end_checked(void);
/* After a failure: the same without checks, as far as it can go. */
void prop_task_end_unchecked(void);

#endif
