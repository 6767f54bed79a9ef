/*
** locks.h: the runtime's locks, checked in test builds (RT_TESTING).
**
** Every lock, unlock, wait, signal, init and destroy of reference/src goes
** through the macros below. A release build gets the pthread calls themselves and nothing
** else. A test build checks, at once and on the calling thread alone (no
** race needed), the discipline one thread can see:
**   - a lock of a mutex this thread holds already (a self-deadlock);
**   - an unlock of a mutex this thread does not hold;
**   - a wait on a condition without its mutex, and a signal or broadcast
**     without it (POSIX allows one, the runtime never does: a waker that
**     has let go of the mutex has written its state outside it);
**   - a mutex that is not an error-checking one (its init was lost);
**   - the destroy of a mutex still locked, or of one destroyed already
**     (glibc sets a destroyed one's kind to -1), read in checked code so
**     that ASan sees the destroy of a mutex whose memory was freed;
**   - a mutex or condition made and never destroyed, or destroyed and
**     never made (rt__locks_live, which the tests compare);
** and, where the contract says locks must be gone, that none is left:
**   - a runtime call begins with no inner lock held (rt__hot_or_null, and
**     rt__locks_entry in the calls that never reach it);
**   - a door closes holding the locks of the doors around it, no more;
**   - a panic, once its doors are unwound, holds no lock;
**   - a task ends, a thread ends, the process exits holding none.
** A failure prints "refrt: <function>: lock discipline: <what>" and aborts;
** <function> is the runtime function that made the call (__func__), the
** one that took a lock left held, or the door, task or thread ending.
**
** Two kinds of lock. An inner lock (rt__lock) is released before the
** function that took it returns, runs no code of the program while held,
** and never nests in another inner lock. A door's lock (rt__door_lock) is
** held while the door's fn runs and is released when the door closes or
** its task's panic unwinds it; doors nest (shared.c checks their order).
**
** Who answers: on glibc every runtime mutex is an error-checking one
** (PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, for the static ones too), so
** glibc itself reports the self-deadlock (EDEADLK), the unlock or wait of
** a mutex not held (EPERM) and the destroy of a held one (EBUSY); without
** that initializer the static mutexes are plain ones and this thread's
** record of its inner lock checks them (runtime.c, RT_LOCKS_RECORD_ONLY).
** The record is a _Thread_local, not struct rt_hot: hot_lock is taken
** while this thread's state is being made.
*/
#ifndef REFRT_LOCKS_H
#define REFRT_LOCKS_H

#include <pthread.h>

#if RT_TESTING

struct rt_locks {
    const pthread_mutex_t *inner; /* the inner lock this thread holds, or NULL */
    const char *inner_fn;         /* the function that took it */
    unsigned doors;               /* doors' locks this thread holds */
};
extern _Thread_local struct rt_locks rt__locks __attribute__((visibility("hidden")));

/* Static mutexes: error-checking where glibc has the initializer. Without
** it (musl; -DRT_PRIM_PORTABLE, which builds every portable fallback, in
** check-hot-portable) they are plain, and the record checks what glibc
** would: RT_LOCKS_RECORD_ONLY. */
#if defined(PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP) && !defined(RT_PRIM_PORTABLE)
#define RT_LOCKS_RECORD_ONLY 0
#define RT_MUTEX_INITIALIZER PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#else
#define RT_LOCKS_RECORD_ONLY 1
#define RT_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#endif

/* runtime.c */
_Noreturn RT_COLD void rt__lock_fail(const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rt__mutex_init_checked(pthread_mutex_t *m);
void rt__mutex_destroy_checked(const char *fn, pthread_mutex_t *m);
/* Mutexes and conditions made by rt__mutex_init and rt__cond_init and not
** yet destroyed, all threads: tests prove that making a channel or a shared
** value counts its own and freeing it gives them back (the static mutexes
** are not counted). rt__locks_made(n) adds n. */
long rt__locks_live(void);
void rt__locks_made(long n);
void rt__lock_checked(const char *fn, pthread_mutex_t *m, bool door);
int rt__trylock_checked(const char *fn, pthread_mutex_t *m);
void rt__unlock_checked(const char *fn, pthread_mutex_t *m, bool door);
void rt__cond_wait_checked(const char *fn, pthread_cond_t *c, pthread_mutex_t *m);
/* Set by a test (relaxed), every wait returns after at most 100 us even
** when nobody woke it: a spurious wakeup, which POSIX allows at any wait.
** A wait that does not re-check its condition in a loop then acts on a
** state it never saw, at once and on every run, with no race to win. */
extern int rt__spurious_wakeups;
void rt__cond_signal_checked(const char *fn, pthread_cond_t *c, const pthread_mutex_t *m);
void rt__cond_broadcast_checked(const char *fn, pthread_cond_t *c, const pthread_mutex_t *m);
/* Fails unless this thread holds no inner lock (naming the function that
** took it) and, with_doors, no door's lock (naming fn); `when` completes
** "... still held when <when>". */
void rt__locks_none(const char *fn, const char *when, bool with_doors);
/* Fails (naming fn) unless this thread holds exactly `doors` doors' locks. */
void rt__locks_doors(const char *fn, unsigned doors);

#define rt__mutex_init(m) rt__mutex_init_checked(m)
#define rt__mutex_destroy(m) rt__mutex_destroy_checked(__func__, (m))
#define rt__cond_init(c) (rt__locks_made(1), pthread_cond_init((c), NULL))
#define rt__cond_destroy(c) (pthread_cond_destroy(c), rt__locks_made(-1))
#define rt__lock(m) rt__lock_checked(__func__, (m), false)
#define rt__trylock(m) rt__trylock_checked(__func__, (m))
#define rt__unlock(m) rt__unlock_checked(__func__, (m), false)
#define rt__door_lock(m) rt__lock_checked(__func__, (m), true)
#define rt__door_unlock(m) rt__unlock_checked(__func__, (m), true)
#define rt__cond_wait(c, m) rt__cond_wait_checked(__func__, (c), (m))
#define rt__cond_signal(c, m) rt__cond_signal_checked(__func__, (c), (m))
#define rt__cond_broadcast(c, m) rt__cond_broadcast_checked(__func__, (c), (m))

/* A runtime call begins: the previous one released its inner lock. */
static inline void rt__locks_entry(void)
{
    if (RT_UNLIKELY(rt__locks.inner != NULL))
        rt__locks_none("", "this thread calls the runtime again", false);
}

#else /* a release build: the calls themselves */

#define RT_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define rt__mutex_init(m) pthread_mutex_init((m), NULL)
#define rt__mutex_destroy(m) pthread_mutex_destroy(m)
#define rt__cond_init(c) pthread_cond_init((c), NULL)
#define rt__cond_destroy(c) pthread_cond_destroy(c)
#define rt__lock(m) pthread_mutex_lock(m)
#define rt__trylock(m) pthread_mutex_trylock(m)
#define rt__unlock(m) pthread_mutex_unlock(m)
#define rt__door_lock(m) pthread_mutex_lock(m)
#define rt__door_unlock(m) pthread_mutex_unlock(m)
#define rt__cond_wait(c, m) pthread_cond_wait((c), (m))
#define rt__cond_signal(c, m) pthread_cond_signal(c)
#define rt__cond_broadcast(c, m) pthread_cond_broadcast(c)
#define rt__locks_entry() ((void)0)
#define rt__locks_none(fn, when, with_doors) ((void)0)
#define rt__locks_doors(fn, doors) ((void)0)

#endif /* RT_TESTING */

#endif /* REFRT_LOCKS_H */
