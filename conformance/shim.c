/*
** shim.c: counts chunk traffic, per thread, for the conformance runner.
**
** A chunk is what malloc(RT_CHUNK_SIZE) returns; the contract promises the
** runtime gets chunks only that way and gives them back only with free. The
** shim sees each such malloc and the free of each such pointer, and:
**
**   - zeroes every fresh chunk, so a non-zero byte found at its free was
**     written by the program and left there: the runtime did not clear it;
**   - remembers which thread malloc'ed each live chunk, so a free by another
**     thread, and a region that holds another thread's chunk, show up;
**   - records, when pthread_join returns, how many chunks of the joined
**     thread are still live (the contract: none, its destructor freed them);
**   - at exit, and on SIGABRT or SIGILL (a violation, a trap) before the
**     signal takes the process, writes a report, "key=value" words a line,
**     to the file named by RT_SHIM_REPORT (format below; conformance/run.py
**     reads it).
**
** Two ways in, one source:
**   - preloaded (the default): LD_PRELOAD=shim.so. malloc, free and
**     pthread_join are defined here and reach glibc through __libc_malloc,
**     __libc_free and dlsym(RTLD_NEXT). Any binary is observed, also one
**     built by a plain "cc ... -lpthread" that knows nothing of the shim.
**   - linked (-DRT_SHIM_WRAP, for sanitizer builds): a sanitizer runtime
**     owns malloc and pthread_join itself, and a preloaded definition would
**     either lose to it or take its place. So the shim is linked into the
**     program with -Wl,--wrap=malloc,--wrap=free,--wrap=pthread_join: the
**     calls the runtime's and the program's own objects make come here
**     first and go on to the sanitizer's functions through __real_*.
**
** Why wrap pthread_join rather than let the program ask through a weak
** symbol: the moment that matters is "join has returned", and only a
** wrapper sees it without the program's help; a program that forgot to
** ask would pass. The one question only the program can ask (is this live
** chunk, which my region holds, one I malloc'ed?) is refrt_shim_mine below,
** which a program declares weak so it also runs without the shim.
**
** The shim allocates nothing of its own (fixed tables, a mutex, a report
** written with open/write), so the heap it observes is the program's. Only
** the process that loaded it reports: a forked child's chunks are its own
** copy's business and are not counted.
**
** Report format, one record a line, words "key=value":
**   shim mode=preload|wrap threads=N chunks_overflow=0|1 threads_overflow=0|1
**   thread id=K main=0|1 mallocs=M frees=F dirty=D cross_frees=X live=L
**          max_live=ML joined=0|1 live_at_join=J
** A thread appears once it has malloc'ed or freed a chunk. "dirty" counts
** chunks it freed with a byte not zero; "cross_frees" chunks it freed that
** another thread malloc'ed; "live_at_join" is -1 unless it was joined.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refrt.h"

#define MAX_CHUNKS 8192
#define MAX_THREADS 256

/* A live chunk's address is kept hidden (xor a constant), so that the
** shim's table is not what keeps a leaked chunk reachable in the eyes of
** LeakSanitizer: a chunk the runtime loses is still reported as a leak. */
#define HIDE(p) ((uintptr_t)(p) ^ (uintptr_t)0x5a5a5a5a5a5a5a5aULL)

struct chunk {
    uintptr_t hidden; /* HIDE(the chunk), 0: a free slot */
    int owner;        /* the thread record that malloc'ed it */
};

struct thread_rec {
    pthread_t self;
    int main;
    unsigned long mallocs, frees, dirty, cross_frees;
    long live, max_live;
    int joined;
    long live_at_join;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk chunks[MAX_CHUNKS];
static int chunks_used; /* high-water mark of chunks[] */
static int chunks_overflow;
static struct thread_rec threads[MAX_THREADS];
static int nthreads;
static int threads_overflow;
static pid_t report_pid; /* only this process reports, not a forked child */

/* This thread's record, + 1 (0: none yet). initial-exec: a preloaded
** library's TLS is static, and no lazy TLS allocation may call malloc. */
static __thread int my_rec_plus_one __attribute__((tls_model("initial-exec")));

#ifdef RT_SHIM_WRAP
void *__real_malloc(size_t n);
void __real_free(void *p);
int __real_pthread_join(pthread_t t, void **ret);
#define real_malloc __real_malloc
#define real_free __real_free
#define SHIM_MALLOC __wrap_malloc
#define SHIM_FREE __wrap_free
#define SHIM_JOIN __wrap_pthread_join
#define SHIM_MODE "wrap"
#else
void *__libc_malloc(size_t n);
void __libc_free(void *p);
#define real_malloc __libc_malloc
#define real_free __libc_free
#define SHIM_MALLOC malloc
#define SHIM_FREE free
#define SHIM_JOIN pthread_join
#define SHIM_MODE "preload"

static int real_pthread_join(pthread_t t, void **ret)
{
    static int (*next)(pthread_t, void **);
    if (next == NULL)
        next = (int (*)(pthread_t, void **))dlsym(RTLD_NEXT, "pthread_join");
    return next(t, ret);
}
#endif

/* The calling thread's record, made on first use; -1 past MAX_THREADS.
** Called with the lock held. */
static int my_rec(void)
{
    if (my_rec_plus_one == 0) {
        if (nthreads == MAX_THREADS) {
            threads_overflow = 1;
            return -1;
        }
        struct thread_rec *t = &threads[nthreads];
        memset(t, 0, sizeof *t);
        t->self = pthread_self();
        t->main = gettid() == getpid();
        t->live_at_join = -1;
        my_rec_plus_one = ++nthreads;
    }
    return my_rec_plus_one - 1;
}

static struct chunk *chunk_find(const void *p)
{
    for (int i = 0; i < chunks_used; i++)
        if (chunks[i].hidden == HIDE(p))
            return &chunks[i];
    return NULL;
}

static void chunk_add(void *p, int owner)
{
    for (int i = 0; i < chunks_used; i++)
        if (chunks[i].hidden == 0) {
            chunks[i].hidden = HIDE(p);
            chunks[i].owner = owner;
            return;
        }
    if (chunks_used == MAX_CHUNKS) {
        chunks_overflow = 1;
        return;
    }
    chunks[chunks_used].hidden = HIDE(p);
    chunks[chunks_used].owner = owner;
    chunks_used++;
}

static int all_zero(const void *p, size_t n)
{
    const uint64_t *w = p;
    uint64_t acc = 0;
    for (size_t i = 0; i < n / sizeof *w; i++)
        acc |= w[i];
    return acc == 0;
}

void *SHIM_MALLOC(size_t n)
{
    void *p = real_malloc(n);
    if (n != RT_CHUNK_SIZE || p == NULL)
        return p;
    /* Zero it now: any byte set at its free was set by the program. (ASan
    ** fills fresh memory with 0xbe; glibc may hand back old bytes.) */
    memset(p, 0, n);
    pthread_mutex_lock(&lock);
    int me = my_rec();
    if (me >= 0) {
        struct thread_rec *t = &threads[me];
        t->mallocs++;
        if (++t->live > t->max_live)
            t->max_live = t->live;
    }
    chunk_add(p, me);
    pthread_mutex_unlock(&lock);
    return p;
}

void SHIM_FREE(void *p)
{
    if (p != NULL) {
        pthread_mutex_lock(&lock);
        struct chunk *c = chunk_find(p);
        if (c != NULL) {
            int me = my_rec();
            int dirty = !all_zero(p, RT_CHUNK_SIZE);
            if (me >= 0) {
                threads[me].frees++;
                threads[me].dirty += (unsigned long)dirty;
                threads[me].cross_frees += (unsigned long)(c->owner != me);
            }
            if (c->owner >= 0)
                threads[c->owner].live--;
            c->hidden = 0;
        }
        pthread_mutex_unlock(&lock);
    }
    real_free(p);
}

int SHIM_JOIN(pthread_t t, void **ret)
{
#ifdef RT_SHIM_WRAP
    int rc = __real_pthread_join(t, ret);
#else
    int rc = real_pthread_join(t, ret);
#endif
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&lock);
    /* The latest record of that pthread_t: an id may be reused once its
    ** thread was joined, and that earlier thread was recorded already. */
    for (int i = nthreads - 1; i >= 0; i--)
        if (!threads[i].joined && pthread_equal(threads[i].self, t)) {
            threads[i].joined = 1;
            threads[i].live_at_join = threads[i].live;
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* 1 if p is a live chunk that the calling thread malloc'ed, else 0. */
int refrt_shim_mine(const void *p)
{
    pthread_mutex_lock(&lock);
    struct chunk *c = chunk_find(p);
    int mine = c != NULL && c->owner >= 0 && c->owner == my_rec_plus_one - 1;
    pthread_mutex_unlock(&lock);
    return mine;
}

static const char *report_path;

static void put(int fd, const char *line, int n)
{
    if (n > 0 && write(fd, line, (size_t)n) != n)
        _exit(99);
}

/* Writes the report; with wait 0 (from a signal handler) it does not wait
** for the lock, so a signal that interrupted the shim cannot deadlock. */
static void write_report(int wait)
{
    char line[512];
    int fd;

    if (report_path == NULL || getpid() != report_pid)
        return;
    if (wait)
        pthread_mutex_lock(&lock);
    else if (pthread_mutex_trylock(&lock) != 0)
        return; /* the runner sees no report and says so */
    fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    put(fd, line, snprintf(line, sizeof line,
                           "shim mode=%s threads=%d chunks_overflow=%d threads_overflow=%d\n",
                           SHIM_MODE, nthreads, chunks_overflow, threads_overflow));
    for (int i = 0; i < nthreads; i++) {
        const struct thread_rec *t = &threads[i];
        put(fd, line, snprintf(line, sizeof line,
                               "thread id=%d main=%d mallocs=%lu frees=%lu dirty=%lu "
                               "cross_frees=%lu live=%ld max_live=%ld joined=%d "
                               "live_at_join=%ld\n",
                               i, t->main, t->mallocs, t->frees, t->dirty, t->cross_frees,
                               t->live, t->max_live, t->joined, t->live_at_join));
    }
    pthread_mutex_unlock(&lock);
    close(fd);
}

/* A contract violation aborts and a full region traps: the report is still
** written, then the signal is raised again, so the process dies of it. */
static void report_and_die(int sig)
{
    write_report(0);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void shim_start(void)
{
    report_pid = getpid();
    report_path = getenv("RT_SHIM_REPORT");
    if (report_path != NULL) {
        signal(SIGABRT, report_and_die);
        signal(SIGILL, report_and_die);
    }
}

__attribute__((destructor)) static void shim_report(void)
{
    write_report(1);
}
