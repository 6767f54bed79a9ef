/*
** testutil.c: death tests, chunk counting and fault injection by --wrap
** (the Check main is testmain.c).
*/
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refrt.h"

/* An expected death (a violation's abort, a trap) writes no core. The
** mutant driver lets every test write one, so that a core it finds is an
** unexpected crash's, whose stack it reads with no second run; a death
** test's child that dies of another signal (a mutant's SIGSEGV) still
** writes its core. The limit drops only once the signal has come, and the
** signal then goes on to the handler that was there before (the coverage
** build's, which writes the counts: scripts/gate/gcov_flush.c), or kills. */
static struct sigaction before_abort, before_trap;

static void no_core_then_die(int sig)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    sigaction(sig, sig == SIGABRT ? &before_abort : &before_trap, NULL);
    raise(sig);
}

static void die_without_core_on(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = no_core_then_die;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, sig == SIGABRT ? &before_abort : &before_trap);
}

struct death run_child(void (*fn)(void *), void *arg)
{
    struct death d = {0, -1, {0}};
    int fds[2], status;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        die_without_core_on(SIGABRT);
        die_without_core_on(SIGILL);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    while (got < sizeof d.err - 1 && (n = read(fds[0], d.err + got, sizeof d.err - 1 - got)) > 0)
        got += (size_t)n;
    d.err[got] = '\0';
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        d.signal = WTERMSIG(status);
    else
        d.exit_status = WEXITSTATUS(status);
    return d;
}

void die_of_alarm_after(unsigned seconds)
{
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    signal(SIGALRM, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &alrm, NULL);
    alarm(seconds);
}

/* ---- chunk counting ----------------------------------------------------- */

void *__real_malloc(size_t n);
void __real_free(void *p);

#define MAX_LIVE 4096
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static void *live[MAX_LIVE];
static int live_top; /* no slot at or past it was ever used: frees scan below it */
static struct chunk_counts counts;

/* ---- fault injection ------------------------------------------------------ */

void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);

static _Thread_local unsigned long fail_at, fail_seen;
static unsigned long failures_injected; /* all threads, since the process began */

void fail_nth(unsigned long n)
{
    fail_at = n;
    fail_seen = 0;
}

unsigned long fail_calls(void)
{
    return fail_seen;
}

unsigned long fail_count(void)
{
    return __atomic_load_n(&failures_injected, __ATOMIC_RELAXED);
}

static _Thread_local size_t fail_over;

void fail_above(size_t bytes)
{
    fail_over = bytes;
}

/* Whether a call of this thread asking for bytes is refused (fail_above). */
static int refused(size_t bytes)
{
    if (fail_over == 0 || bytes <= fail_over)
        return 0;
    __atomic_add_fetch(&failures_injected, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Counts one fallible call of this thread; true if it is the one to fail. */
static int failing_now(void)
{
    if (fail_at == 0)
        return 0;
    if (++fail_seen != fail_at)
        return 0;
    fail_at = 0;
    __atomic_add_fetch(&failures_injected, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Blocks malloc, calloc and realloc gave out and free did not take back. */
static long live_allocs;

long allocs_live(void)
{
    return __atomic_load_n(&live_allocs, __ATOMIC_RELAXED);
}

static void *counted(void *p)
{
    if (p != NULL)
        __atomic_add_fetch(&live_allocs, 1, __ATOMIC_RELAXED);
    return p;
}

static size_t calloc_asked; /* bytes every calloc asked for, n * size */

size_t calloc_bytes_asked(void)
{
    return __atomic_load_n(&calloc_asked, __ATOMIC_RELAXED);
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (failing_now() || (size != 0 && refused(n > SIZE_MAX / size ? SIZE_MAX : n * size)))
        return NULL;
    __atomic_add_fetch(&calloc_asked, n * size, __ATOMIC_RELAXED);
    return counted(__real_calloc(n, size));
}

void *__wrap_realloc(void *p, size_t n)
{
    if (failing_now() || refused(n))
        return NULL;
    if (p == NULL)
        return counted(__real_realloc(p, n));
    void *q = __real_realloc(p, n);
    if (q == NULL && n == 0)
        __atomic_sub_fetch(&live_allocs, 1, __ATOMIC_RELAXED); /* glibc freed p */
    return q;
}

void (*around_thread_create)(int before);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg)
{
    void (*around)(int) = around_thread_create;

    if (around)
        around(1);
    int err = failing_now() ? EAGAIN : __real_pthread_create(t, attr, fn, arg);
    if (around)
        around(0);
    return err;
}

long __real_sysconf(int name);

/* Names whose answer a test chose, and the answers: a few at once, for a
** machine described by its page count and page size together. Set by the
** test's own thread before it starts any other. */
#define FAKED_MAX 4
static struct {
    int name;
    long value;
} faked[FAKED_MAX];
static int faked_count;

void fake_sysconf(int name, long value)
{
    int i;

    if (name == -1) {
        __atomic_store_n(&faked_count, 0, __ATOMIC_RELEASE);
        return;
    }
    for (i = 0; i < faked_count && faked[i].name != name; i++)
        ;
    if (i == FAKED_MAX) {
        fprintf(stderr, "testutil: fake_sysconf: more than %d names at once\n", FAKED_MAX);
        abort();
    }
    faked[i].name = name;
    faked[i].value = value;
    if (i == faked_count)
        __atomic_store_n(&faked_count, i + 1, __ATOMIC_RELEASE);
}

void fail_sysconf(int name)
{
    fake_sysconf(-1, 0);
    if (name != -1)
        fake_sysconf(name, -1);
}

long __wrap_sysconf(int name)
{
    int n = __atomic_load_n(&faked_count, __ATOMIC_ACQUIRE);

    for (int i = 0; i < n; i++)
        if (faked[i].name == name)
            return faked[i].value;
    return __real_sysconf(name);
}

/* A block of a GiB or more (a value past 4 GiB, its block) is asked for
** huge pages: zeroing it then faults 2 MiB at a time, not 4 KiB, and a
** test that makes one takes a second, not twenty (6 Dec 2026). The advice
** covers the whole mapping glibc made for it (from the page the chunk's
** header is on to the end of its usable bytes): advice on a part of it
** would split the mapping in three, and mremap moves only one mapping, so
** a realloc of the value would copy every byte instead (EFAULT, then
** malloc, memcpy and free: 3.6 s for 4 GiB, 7 Dec 2026). */
static void huge_pages_for(void *p, size_t n)
{
    uintptr_t page = 4096, from = (uintptr_t)p & ~(page - 1);
    uintptr_t to = ((uintptr_t)p + malloc_usable_size(p) + page - 1) & ~(page - 1);

    if (p != NULL && n >= (1u << 30))
        madvise((void *)from, to - from, MADV_HUGEPAGE);
}

void *__wrap_malloc(size_t n)
{
    if (failing_now() || refused(n))
        return NULL;
    void *p = counted(__real_malloc(n));
    huge_pages_for(p, n);
    if (n == RT_CHUNK_SIZE && p != NULL) {
        /* A fresh chunk starts zeroed here, so that a byte found set at its
        ** free was written by the program, not by malloc (ASan fills fresh
        ** memory with 0xbe). */
        memset(p, 0, n);
        pthread_mutex_lock(&chunk_lock);
        counts.mallocs++;
        for (int i = 0; i < MAX_LIVE; i++)
            if (live[i] == NULL) {
                live[i] = p;
                if (i >= live_top)
                    live_top = i + 1;
                break;
            }
        pthread_mutex_unlock(&chunk_lock);
    }
    return p;
}

/* ---- the quarantine of frees ---------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define QUARANTINE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define QUARANTINE_OFF 1
#endif
#endif

#define QUARANTINE 4096
#define FREED_BYTE 0xdd
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static int quarantining;
static void *quarantined[QUARANTINE];
static size_t quarantined_size[QUARANTINE];
static int nquarantined;

void quarantine_start(void)
{
#ifndef QUARANTINE_OFF
    __atomic_store_n(&quarantining, 1, __ATOMIC_RELAXED);
#endif
}

/* Keeps p instead of freeing it, if the quarantine is on and has room. */
static int quarantine(void *p)
{
    size_t n;

    if (!__atomic_load_n(&quarantining, __ATOMIC_RELAXED))
        return 0;
    n = malloc_usable_size(p);
    pthread_mutex_lock(&quarantine_lock);
    if (nquarantined == QUARANTINE) {
        pthread_mutex_unlock(&quarantine_lock);
        return 0;
    }
    memset(p, FREED_BYTE, n);
    quarantined[nquarantined] = p;
    quarantined_size[nquarantined++] = n;
    pthread_mutex_unlock(&quarantine_lock);
    return 1;
}

int quarantine_end(void)
{
    int written = 0;

    __atomic_store_n(&quarantining, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&quarantine_lock);
    for (int i = 0; i < nquarantined; i++) {
        const unsigned char *b = quarantined[i];
        for (size_t k = 0; k < quarantined_size[i]; k++)
            if (b[k] != FREED_BYTE) {
                fprintf(stderr, "testutil: %zu bytes at %p written at byte %zu after their "
                        "free\n", quarantined_size[i], quarantined[i], k);
                written++;
                break;
            }
        __real_free(quarantined[i]);
    }
    nquarantined = 0;
    pthread_mutex_unlock(&quarantine_lock);
    return written;
}

void __wrap_free(void *p)
{
    if (p != NULL) {
        __atomic_sub_fetch(&live_allocs, 1, __ATOMIC_RELAXED);
        if (malloc_usable_size(p) < RT_CHUNK_SIZE && quarantine(p))
            return;
        /* Smaller than a chunk: not one, and no lock taken, so that freeing
        ** adds no happens-before edge between threads (check_interleave's
        ** SANITIZE=thread tests judge the runtime's own orders). */
        if (malloc_usable_size(p) < RT_CHUNK_SIZE) {
            __real_free(p);
            return;
        }
        pthread_mutex_lock(&chunk_lock);
        for (int i = 0; i < live_top; i++)
            if (live[i] == p) {
                const unsigned char *b = p;
                live[i] = NULL;
                counts.frees++;
                for (size_t k = 0; k < RT_CHUNK_SIZE; k++)
                    if (b[k] != 0) {
                        counts.frees_dirty++;
                        break;
                    }
                break;
            }
        pthread_mutex_unlock(&chunk_lock);
    }
    __real_free(p);
}

void chunks_reset(void)
{
    pthread_mutex_lock(&chunk_lock);
    memset(&counts, 0, sizeof counts);
    pthread_mutex_unlock(&chunk_lock);
}

struct chunk_counts chunks_counted(void)
{
    struct chunk_counts c;
    pthread_mutex_lock(&chunk_lock);
    c = counts;
    pthread_mutex_unlock(&chunk_lock);
    return c;
}

int chunk_live(const void *p)
{
    int found = 0;
    pthread_mutex_lock(&chunk_lock);
    for (int i = 0; i < live_top && !found; i++)
        found = live[i] == p;
    pthread_mutex_unlock(&chunk_lock);
    return found;
}

/* ---- keys ------------------------------------------------------------------ */

int __real_pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int __real_pthread_key_delete(pthread_key_t key);
void *__real_pthread_getspecific(pthread_key_t key);
int __real_pthread_setspecific(pthread_key_t key, const void *value);

/* The keys made and not deleted; glibc's keys are below PTHREAD_KEYS_MAX
** (1024), and one at or past the table is not one that was made. Relaxed:
** a key is made before the threads that use it start. */
#define KEYS_NOTED 1024
static unsigned char key_made[KEYS_NOTED];
static unsigned long keys_unmade_used;

int __wrap_pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    int rc = __real_pthread_key_create(key, destructor);
    if (rc == 0 && *key < KEYS_NOTED)
        __atomic_store_n(&key_made[*key], 1, __ATOMIC_RELAXED);
    return rc;
}

int __wrap_pthread_key_delete(pthread_key_t key)
{
    if (key < KEYS_NOTED)
        __atomic_store_n(&key_made[key], 0, __ATOMIC_RELAXED);
    return __real_pthread_key_delete(key);
}

static void key_used(pthread_key_t key)
{
    if (key >= KEYS_NOTED || !__atomic_load_n(&key_made[key], __ATOMIC_RELAXED))
        __atomic_add_fetch(&keys_unmade_used, 1, __ATOMIC_RELAXED);
}

/* A key slot that lies (testutil.h, slot_lies_at_set): armed with the
** number of the set it acts on, counted process-wide from the arming. */
static long lie_countdown;     /* sets to go, 0: disarmed */
static int lie_kind;           /* SLOT_HOLDS_NULL, GET_SAYS_FOREIGN, SET_DROPPED, ... */
static _Thread_local bool lying;       /* this thread's slot lies now */
static _Thread_local const void *told; /* what its getspecific answers */
static const char foreign_state[1];

void slot_lies_at_set(long nth, int kind)
{
    __atomic_store_n(&lie_kind, kind, __ATOMIC_RELAXED);
    __atomic_store_n(&lie_countdown, nth, __ATOMIC_RELEASE);
}

void *__wrap_pthread_getspecific(pthread_key_t key)
{
    key_used(key);
    if (lying) {
        lying = false; /* one answer: the one that follows the set */
        return (void *)told;
    }
    return __real_pthread_getspecific(key);
}

/* A key whose every set is mirrored into another (testutil.h,
** mirror_key_sets): two words of the descriptor then hold each value. */
static pthread_key_t mirror_from, mirror_to;
static int mirroring;

void mirror_key_sets(pthread_key_t from, pthread_key_t to)
{
    mirror_from = from;
    mirror_to = to;
    __atomic_store_n(&mirroring, 1, __ATOMIC_RELEASE);
}

int __wrap_pthread_setspecific(pthread_key_t key, const void *value)
{
    key_used(key);
    if (__atomic_load_n(&mirroring, __ATOMIC_ACQUIRE) && key == mirror_from)
        __real_pthread_setspecific(mirror_to, value);
    lying = false;
    long left = __atomic_load_n(&lie_countdown, __ATOMIC_ACQUIRE);
    while (left > 0 && !__atomic_compare_exchange_n(&lie_countdown, &left, left - 1, false,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (left == 1) { /* this is the set it acts on */
        int kind = __atomic_load_n(&lie_kind, __ATOMIC_RELAXED);
        if (kind == SET_DROPPED)
            return 0;
        if (kind == SET_STORES_FOREIGN)
            return __real_pthread_setspecific(key, foreign_state);
        lying = true;
        if (kind == SLOT_HOLDS_NULL) {
            told = value; /* getspecific says value; the slot holds NULL */
            return __real_pthread_setspecific(key, NULL);
        }
        told = foreign_state; /* the slot holds value; getspecific says another */
    }
    return __real_pthread_setspecific(key, value);
}

unsigned long keys_not_made_used(void)
{
    return __atomic_load_n(&keys_unmade_used, __ATOMIC_RELAXED);
}

void thread_wait_asleep(pid_t tid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    for (;;) {
        FILE *f = fopen(path, "r");
        /* not ck_assert: Check's assertions allocate and free through the
        ** wrapped malloc, which would move allocs_live() under a test that
        ** compares it before and after a wait */
        if (f == NULL) {
            fprintf(stderr, "testutil: thread_wait_asleep: cannot open %s\n", path);
            abort();
        }
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = '\0';
        const char *state = strrchr(stat, ')');
        if (state != NULL && state[2] == 'S')
            return;
        sched_yield();
    }
}

/* ---- the clock -------------------------------------------------------------- */

int __real_clock_gettime(clockid_t id, struct timespec *ts);
static long realtime_nsec = -1;

void fake_realtime_nsec(long ns)
{
    __atomic_store_n(&realtime_nsec, ns, __ATOMIC_RELAXED);
}

/* the thread's last CLOCK_REALTIME read, which a timed wait's deadline is
** measured from */
static _Thread_local struct timespec last_realtime;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = __real_clock_gettime(id, ts);
    long ns = __atomic_load_n(&realtime_nsec, __ATOMIC_RELAXED);
    if (rc == 0 && id == CLOCK_REALTIME && ns >= 0)
        ts->tv_nsec = ns;
    if (rc == 0 && id == CLOCK_REALTIME)
        last_realtime = *ts;
    return rc;
}

/* ---- timed waits ------------------------------------------------------------ */

int __real_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *until);
static pthread_mutex_t timed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct timed_waits timed;

void timed_waits_reset(void)
{
    pthread_mutex_lock(&timed_lock);
    memset(&timed, 0, sizeof timed);
    pthread_mutex_unlock(&timed_lock);
}

struct timed_waits timed_waits_seen(void)
{
    pthread_mutex_lock(&timed_lock);
    struct timed_waits seen = timed;
    pthread_mutex_unlock(&timed_lock);
    return seen;
}

static void timed_wait_record(const struct timespec *until)
{
    long long span = ((long long)until->tv_sec - (long long)last_realtime.tv_sec) * 1000000000LL +
                     (until->tv_nsec - last_realtime.tv_nsec);
    pthread_mutex_lock(&timed_lock);
    timed.waits++;
    if (until->tv_nsec < 0 || until->tv_nsec >= 1000000000L) {
        timed.malformed++;
    } else {
        if (timed.waits - timed.malformed == 1 || span < timed.shortest_ns)
            timed.shortest_ns = span;
        if (timed.waits - timed.malformed == 1 || span > timed.longest_ns)
            timed.longest_ns = span;
    }
    pthread_mutex_unlock(&timed_lock);
}

int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *until)
{
    timed_wait_record(until);
    return __real_pthread_cond_timedwait(c, m, until);
}
