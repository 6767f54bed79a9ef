/*
** runtime.c: start-up and the runtime's one error shape.
*/
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* The one error shape: "refrt: <fn>: <kind><what>" on stderr, flushed
** (stderr may have been made fully buffered), then abort. */
static _Noreturn void say_and_abort(const char *fn, const char *kind, const char *fmt,
                                    va_list ap)
{
    fprintf(stderr, "refrt: %s: %s", fn, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

void rt__violation(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_and_abort(fn, "", fmt, ap);
}

/* Key destructor: runs on a thread that ends (on main only if it calls
** pthread_exit; otherwise main's state goes with the process). Its chunks were cleared when they were given; a
** task's block and outside values were freed when the task ended. */
static void hot_destroy(void *p)
{
    struct rt_hot *h = p;
    /* as a task's end (task.c): the open region's chunk is lost uncleared */
    if (RT_UNLIKELY(h->innermost != NULL))
        rt__violation("hot_destroy", "a thread ended with a region still open");
    rt__locks_none("hot_destroy", "its thread ends", true);
    rt__chunks_release(h);
    free(h);
}

void rt_init(void)
{
    pthread_key_t key;

    if (rt__key_plus_one != 0)
        return; /* a second call does nothing */
    /* Main becomes a task with a block before the key is published:
    ** task.c relies on it (a thread with a state finds main's task made). */
    rt__main_task();
    if (pthread_key_create(&key, hot_destroy) != 0)
        rt__violation("rt_init", "cannot create the runtime's pthread key");
    /* A new key is NULL on every thread (POSIX), but glibc leaves a deleted
    ** key's value in each thread's slot: only pthread_getspecific, which
    ** compares the key's sequence number, ignores it. The direct read
    ** compares nothing, so once another thread has opened it, main's
    ** first call would take the program's old value for its state. Main's
    ** slot is made NULL here; no other thread exists yet (the contract),
    ** and every thread made later starts with NULL slots. */
    if (pthread_setspecific(key, NULL) != 0)
        rt__violation("rt_init", "cannot clear the runtime's pthread key");
    rt__key_plus_one = (uint64_t)key + 1;
}

#if RT_TESTING
/* ---- lock discipline (locks.h), test builds only ----------------------- */

#include <errno.h>
#include <time.h>

#include "points.h"

_Thread_local struct rt_locks rt__locks;
static long locks_live;

long rt__locks_live(void)
{
    return __atomic_load_n(&locks_live, __ATOMIC_RELAXED);
}

void rt__locks_made(long n)
{
    __atomic_add_fetch(&locks_live, n, __ATOMIC_RELAXED);
}

void rt__lock_fail(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_and_abort(fn, "lock discipline: ", fmt, ap);
}

/* Where glibc has the error-checking initializer, the mutexes are checked
** by glibc itself (EDEADLK, EPERM, EBUSY), and a mutex of another kind
** lost its init (all-zero bytes are a plain mutex, which checks nothing).
** Elsewhere (RT_LOCKS_RECORD_ONLY, locks.h) the static mutexes are plain
** ones, and the record checks the inner locks (every static one is). */

static void check_kind(const char *fn, const pthread_mutex_t *m, bool destroy)
{
#if defined(__GLIBC__) && !RT_LOCKS_RECORD_ONLY
    if (m->__data.__kind != PTHREAD_MUTEX_ERRORCHECK_NP) {
        if (destroy)
            rt__lock_fail(fn, "destroy of a mutex that is not an error-checking one "
                          "(destroyed already, or never made with rt__mutex_init?)");
        rt__lock_fail(fn, "lock of a mutex that is not an error-checking one "
                      "(was it made with rt__mutex_init?)");
    }
#else
    (void)fn;
    (void)m;
    (void)destroy;
#endif
}

static void check_rc(const char *fn, const char *call, int rc)
{
    if (rc == EDEADLK)
        rt__lock_fail(fn, "lock of a mutex this thread already holds (a self-deadlock)");
    if (rc == EPERM)
        rt__lock_fail(fn, "%s of a mutex this thread does not hold", call);
    if (rc != 0)
        rt__lock_fail(fn, "%s failed: %s", call, strerror(rc));
}

void rt__mutex_init_checked(pthread_mutex_t *m)
{
    rt__locks_made(1);
#if !RT_LOCKS_RECORD_ONLY
    *m = (pthread_mutex_t)PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
#else
    pthread_mutexattr_t a;

    if (pthread_mutexattr_init(&a) != 0 ||
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK) != 0 ||
        pthread_mutex_init(m, &a) != 0)
        rt__lock_fail("rt__mutex_init", "cannot make an error-checking mutex");
    pthread_mutexattr_destroy(&a);
#endif
}

/* glibc's destroy sets the kind to -1, so a second destroy fails the kind
** check; and the check reads the mutex here, in code the sanitizers see,
** so that ASan reports the destroy of a mutex whose memory was freed
** (glibc's own read and write of it are not instrumented). */
void rt__mutex_destroy_checked(const char *fn, pthread_mutex_t *m)
{
#if RT_LOCKS_RECORD_ONLY
    if (rt__locks.inner == m)
        rt__lock_fail(fn, "destroy of a mutex this thread holds");
#endif
    check_kind(fn, m, true);
    check_rc(fn, "destroy", pthread_mutex_destroy(m));
    rt__locks_made(-1);
}


/* Before any lock: no inner lock is held (they do not nest), and not m. */
static void may_lock(const char *fn, const pthread_mutex_t *m)
{
    struct rt_locks *l = &rt__locks;

    if (l->inner == m)
        rt__lock_fail(fn, "lock of a mutex this thread already holds (a self-deadlock)");
    if (l->inner != NULL)
        rt__lock_fail(fn, "lock taken while this thread holds the lock %s took "
                      "(inner locks do not nest)", l->inner_fn);
    check_kind(fn, m, false);
}

/* This thread has just taken m. */
static void took(const char *fn, pthread_mutex_t *m, bool door)
{
    if (door) {
        rt__locks.doors++;
    } else {
        rt__locks.inner = m;
        rt__locks.inner_fn = fn;
    }
}

void rt__lock_checked(const char *fn, pthread_mutex_t *m, bool door)
{
    may_lock(fn, m);
    check_rc(fn, "lock", pthread_mutex_lock(m));
    took(fn, m, door);
}

int rt__trylock_checked(const char *fn, pthread_mutex_t *m)
{
    int rc;

    may_lock(fn, m);
    rc = pthread_mutex_trylock(m);
    if (rc != 0)
        return rc; /* EBUSY: held, by another thread or as this one's door lock */
    took(fn, m, false);
    return 0;
}

void rt__unlock_checked(const char *fn, pthread_mutex_t *m, bool door)
{
#if RT_LOCKS_RECORD_ONLY
    if (!door && rt__locks.inner != m)
        rt__lock_fail(fn, "unlock of a mutex this thread does not hold");
#endif
    check_rc(fn, "unlock", pthread_mutex_unlock(m));
    if (door) {
        rt__locks.doors--;
        /* a door's lock is free: another task's door may open on it now */
        RT_POINT("runtime.door_unlock.released");
    } else {
        rt__locks.inner = NULL;
        /* an inner lock is free: what it guarded may change now */
        RT_POINT("runtime.unlock.released");
    }
}

int rt__spurious_wakeups;

/* A wait that a test made spurious: a timed wait of 100 us, whose timeout
** is a wakeup nobody sent (locks.h). */
static void spurious_wait(const char *fn, pthread_cond_t *c, pthread_mutex_t *m)
{
    struct timespec until;
    long long ns;
    int rc;

    /* no branch for the carry into tv_sec: one wait in 10^4 takes it, so
    ** no test could be sure to run it */
    clock_gettime(CLOCK_REALTIME, &until);
    ns = (long long)until.tv_nsec + 100 * 1000;
    until.tv_sec += (time_t)(ns / 1000000000L);
    until.tv_nsec = (long)(ns % 1000000000L);
    rc = pthread_cond_timedwait(c, m, &until);
    if (rc != ETIMEDOUT)
        check_rc(fn, "cond wait", rc);
}

void rt__cond_wait_checked(const char *fn, pthread_cond_t *c, pthread_mutex_t *m)
{
#if RT_LOCKS_RECORD_ONLY
    if (rt__locks.inner != m)
        rt__lock_fail(fn, "cond wait of a mutex this thread does not hold");
#endif
    if (RT_UNLIKELY(__atomic_load_n(&rt__spurious_wakeups, __ATOMIC_RELAXED))) {
        spurious_wait(fn, c, m);
        return;
    }
    check_rc(fn, "cond wait", pthread_cond_wait(c, m));
}

/* A signal or broadcast: under the mutex the waiters wait with (every
** condition of the runtime goes with an inner lock). */
static void may_wake(const char *fn, const pthread_mutex_t *m)
{
    if (rt__locks.inner != m)
        rt__lock_fail(fn, "cond wake without its mutex held");
}

void rt__cond_signal_checked(const char *fn, pthread_cond_t *c, const pthread_mutex_t *m)
{
    may_wake(fn, m);
    check_rc(fn, "cond signal", pthread_cond_signal(c));
}

void rt__cond_broadcast_checked(const char *fn, pthread_cond_t *c, const pthread_mutex_t *m)
{
    may_wake(fn, m);
    check_rc(fn, "cond broadcast", pthread_cond_broadcast(c));
}

void rt__locks_none(const char *fn, const char *when, bool with_doors)
{
    struct rt_locks *l = &rt__locks;

    if (l->inner != NULL)
        rt__lock_fail(l->inner_fn, "the lock it took is still held when %s", when);
    if (with_doors && l->doors != 0)
        rt__lock_fail(fn, "%u doors' locks are still held when %s", l->doors, when);
}

void rt__locks_doors(const char *fn, unsigned doors)
{
    if (rt__locks.doors != doors)
        rt__lock_fail(fn, "%u doors' locks held once the door closed; the doors around it "
                      "hold %u", rt__locks.doors, doors);
}

/* The process exits (main returned, or exit was called): no inner lock
** may be held. A door's may, when the program exits from a door's fn. */
__attribute__((destructor)) static void locks_at_exit(void)
{
    rt__locks_none("exit", "the process exits", false);
}
#endif /* RT_TESTING */
