/*
** testutil.c: death tests and chunk counting by --wrap (the Check main is
** testmain.c).
*/
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refrt.h"

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

/* ---- chunk counting ----------------------------------------------------- */

void *__real_malloc(size_t n);
void __real_free(void *p);

#define MAX_LIVE 4096
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static void *live[MAX_LIVE];
static int live_top; /* no slot at or past it was ever used: frees scan below it */
static struct chunk_counts counts;

void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

/* Allocations left before the one inject_alloc_failure fails; 0: none. */
static unsigned long alloc_countdown, alloc_failures;
static long alloc_live;

/* p, counted among the live allocations when it is one. */
static void *counted(void *p)
{
    if (p != NULL)
        __atomic_add_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    return p;
}

long allocations_live(void)
{
    return __atomic_load_n(&alloc_live, __ATOMIC_RELAXED);
}

/* Whether this allocation is the one to fail: counts it down when armed. */
static int alloc_injected(void)
{
    unsigned long left = __atomic_load_n(&alloc_countdown, __ATOMIC_RELAXED);
    while (left != 0)
        if (__atomic_compare_exchange_n(&alloc_countdown, &left, left - 1, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            if (left != 1)
                return 0;
            __atomic_add_fetch(&alloc_failures, 1, __ATOMIC_RELAXED);
            return 1;
        }
    return 0;
}

void inject_alloc_failure(unsigned long nth)
{
    __atomic_store_n(&alloc_countdown, nth, __ATOMIC_RELAXED);
}

unsigned long injected_alloc_failures(void)
{
    return __atomic_load_n(&alloc_failures, __ATOMIC_RELAXED);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return alloc_injected() ? NULL : counted(__real_calloc(n, size));
}

void *__wrap_realloc(void *p, size_t n)
{
    void *q;
    if (alloc_injected())
        return NULL;
    q = __real_realloc(p, n);
    if (p == NULL)
        return counted(q);
    if (q == NULL && n == 0) /* glibc's realloc(p, 0) frees p */
        __atomic_sub_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    return q;
}

void *__wrap_malloc(size_t n)
{
    void *p = alloc_injected() ? NULL : counted(__real_malloc(n));
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

void __wrap_free(void *p)
{
    if (p != NULL) {
        __atomic_sub_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
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
