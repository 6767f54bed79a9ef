/*
** hot.c (bench): what one rt_hot() costs, and what it buys the allocation
** paths. bench/hot.py runs this under callgrind and side by side for time.
**
**   hot_bench loops direct|fallback N   the accessor loops, for callgrind
**   hot_bench probe direct|fallback NAME N   one probe, prints its seconds
**
** "fallback" latches the direct path off before the first publish, so the
** same binary measures both paths. The probes run in main's task, which
** rt_init makes.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "refrt.h"

void *hot_tls_read(void);
void hot_tls_set(void *p);

/* Keeps a value alive without costing more than the register it is in. */
#define SINK(p) __asm__ __volatile__("" : : "r"(p))

static int anchor;

/* The loops: each differs from loop_base only in what it sinks, so their
** difference in instructions, over n, is the cost of one access. */
__attribute__((noinline)) static void loop_base(long n)
{
    for (long i = 0; i < n; i++)
        SINK(&anchor);
}

__attribute__((noinline)) static void loop_inline(long n)
{
    for (long i = 0; i < n; i++)
        SINK(rt__hot_or_null());
}

__attribute__((noinline)) static void loop_call(long n)
{
    for (long i = 0; i < n; i++)
        SINK(rt_hot());
}

__attribute__((noinline)) static void loop_tls(long n)
{
    for (long i = 0; i < n; i++)
        SINK(hot_tls_read());
}

/* ---- probes ------------------------------------------------------------- */

__attribute__((noinline)) static void probe_region(long n)
{
    for (long i = 0; i < n; i++) {
        rt_region r;
        rt_region_open(&r);
        SINK(rt_region_alloc(&r, 1, 64, 0));
        rt_region_close(&r);
    }
}

__attribute__((noinline)) static void probe_chunk(long n)
{
    for (long i = 0; i < n; i++) {
        void *c = rt_chunk_take();
        rt_chunk_give(c, c);
    }
}

/* Main's task allocates and frees 64 bytes: two accesses an iteration, the
** chunk coming back from its size class's free list every time. */
__attribute__((noinline)) static void probe_alloc_free(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = rt_alloc(64);
        SINK(p);
        rt_free(p);
    }
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void start(const char *path)
{
    if (strcmp(path, "fallback") == 0)
        rt_hot_disable();
    else if (strcmp(path, "direct") != 0) {
        fprintf(stderr, "hot_bench: path is direct or fallback, not %s\n", path);
        exit(2);
    }
    rt_init();
    rt_hot();
    hot_tls_set(&anchor);
    if (rt_hot_direct() != (strcmp(path, "direct") == 0)) {
        fprintf(stderr, "hot_bench: asked for the %s path, rt_hot_direct() is %d\n", path,
                rt_hot_direct());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long n;

    if (argc < 4) {
        fprintf(stderr, "usage: hot_bench loops PATH N | hot_bench probe PATH NAME N\n");
        return 2;
    }
    start(argv[2]);
    if (strcmp(argv[1], "loops") == 0) {
        n = atol(argv[3]);
        loop_base(n);
        loop_inline(n);
        loop_call(n);
        loop_tls(n);
        return 0;
    }
    if (strcmp(argv[1], "probe") == 0 && argc == 5) {
        void (*probe)(long) = strcmp(argv[3], "region") == 0       ? probe_region
                              : strcmp(argv[3], "chunk") == 0      ? probe_chunk
                              : strcmp(argv[3], "alloc_free") == 0 ? probe_alloc_free
                                                                   : NULL;
        double t0;
        if (probe == NULL) {
            fprintf(stderr, "hot_bench: no probe %s\n", argv[3]);
            return 2;
        }
        n = atol(argv[4]);
        probe(n / 10); /* warm the cache and the chunk stack */
        t0 = seconds();
        probe(n);
        printf("%.9f\n", seconds() - t0);
        return 0;
    }
    fprintf(stderr, "hot_bench: unknown command %s\n", argv[1]);
    return 2;
}
