/*
** shared.h: what shared.c lets the unit tests see of a shared value.
**
** Nothing here is part of the contract: it is the seam through which
** check_shared.c observes what the public API cannot show without a race
** (which locks are held at a given instant).
*/
#ifndef REFRT_SHARED_H
#define REFRT_SHARED_H

#include <pthread.h>

#include "refrt.h"

/* Called, when non-NULL, by rt_update_all over two RT_COPY values between
** the write-back of the first value (in lock order) and of the second,
** while both locks must still be held. NULL outside the tests. */
extern void (*rt__shared_between_writebacks)(rt_shared *first, rt_shared *second);

/* Whether s's lock is held now, by any thread (a trylock that gives it
** straight back when it succeeds). */
bool rt__shared_locked(rt_shared *s);

/* s's lock itself, for the lock checker's tests: a door's fn that lets an
** outer door's lock go (check_locks.c). */
pthread_mutex_t *rt__shared_mutex(rt_shared *s);

/* The order in which s's lock is taken: values made earlier first. */
unsigned long rt__shared_seq(const rt_shared *s);

/* The count every value made takes its number from (shared.c's next_seq),
** for a hardware watchpoint. */
extern const void *const rt__shared_next_seq;

#endif
