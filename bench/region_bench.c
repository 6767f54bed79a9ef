/*
** region_bench.c: the loops bench/region_bench.py measures (seed 000 §8).
**
**   region_bench nested region|malloc ROUNDS BYTES
**       The nested loop: three regions, each handing out BYTES, opened and
**       closed ROUNDS times; "malloc" runs the same loop on malloc/free of
**       64 KiB, what every region did before the chunk cache. Prints
**       "cpu_ns <n>": the process's user+sys time spent in the loop.
**   region_bench pairs N BYTES
**       For callgrind: one warm-up, then N region open/alloc(BYTES)/close
**       pairs. Run with N and with 0: the difference over N is one pair.
**   region_bench mallocpair N
**       For callgrind: one warm-up, then N malloc/free pairs of 64 KiB.
**   region_bench threads T REGIONS
**       T threads, each opening REGIONS regions of 80 ints, filled and
**       summed through a call (the shape of seed §8.4). Prints "cpu_ns <n>"
**       for the whole process, from before the threads start to after
**       their joins.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refrt.h"

#define CHUNK 65536

/* Tells the compiler p's bytes are read, so no store to them is dead. */
#define KEEP(p) __asm__ __volatile__("" : : "r"(p) : "memory")

static long long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nested_region(long rounds, size_t bytes)
{
    rt_region a, b, c;
    for (long i = 0; i < rounds; i++) {
        rt_region_open(&a);
        KEEP(rt_region_alloc(&a, bytes, 1, 0xA1));
        rt_region_open(&b);
        KEEP(rt_region_alloc(&b, bytes, 1, 0xB2));
        rt_region_open(&c);
        KEEP(rt_region_alloc(&c, bytes, 1, 0xC3));
        rt_region_close(&c);
        rt_region_close(&b);
        rt_region_close(&a);
    }
}

static unsigned char *take(size_t bytes, int fill)
{
    unsigned char *p = malloc(CHUNK);
    if (p == NULL)
        abort();
    memset(p, fill, bytes);
    KEEP(p);
    return p;
}

static void nested_malloc(long rounds, size_t bytes)
{
    for (long i = 0; i < rounds; i++) {
        unsigned char *a = take(bytes, 0xA1);
        unsigned char *b = take(bytes, 0xB2);
        unsigned char *c = take(bytes, 0xC3);
        free(c);
        free(b);
        free(a);
    }
}

static void pair(size_t bytes)
{
    rt_region r;
    rt_region_open(&r);
    KEEP(rt_region_alloc(&r, bytes, 1, 0x5A));
    rt_region_close(&r);
}

static void malloc_pair(void)
{
    void *p = malloc(CHUNK);
    KEEP(p);
    free(p);
}

__attribute__((noinline)) static long sum(const int *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static long regions_each;

static void *thread_regions(void *out)
{
    long total = 0;
    for (long i = 0; i < regions_each; i++) {
        rt_region r;
        rt_region_open(&r);
        int *v = rt_region_alloc(&r, 80, sizeof(int), 0);
        for (int k = 0; k < 80; k++)
            v[k] = k;
        total += sum(v, 80);
        rt_region_close(&r);
    }
    *(long *)out = total;
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: region_bench nested region|malloc ROUNDS BYTES\n"
                    "       region_bench pairs N BYTES\n"
                    "       region_bench mallocpair N\n"
                    "       region_bench threads T REGIONS\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *mode = argv[1];
    long n = atol(argv[2]);
    size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 0;
    rt_init();

    if (strcmp(mode, "nested") == 0 && argc == 5) {
        long rounds = atol(argv[3]);
        bytes = (size_t)atol(argv[4]);
        int on_malloc = strcmp(argv[2], "malloc") == 0;
        long long t0 = cpu_ns();
        if (on_malloc)
            nested_malloc(rounds, bytes);
        else
            nested_region(rounds, bytes);
        printf("cpu_ns %lld\n", cpu_ns() - t0);
    } else if (strcmp(mode, "pairs") == 0) {
        pair(bytes);
        for (long i = 0; i < n; i++)
            pair(bytes);
    } else if (strcmp(mode, "mallocpair") == 0) {
        malloc_pair();
        for (long i = 0; i < n; i++)
            malloc_pair();
    } else if (strcmp(mode, "threads") == 0 && argc == 4) {
        pthread_t t[64];
        long out[64];
        regions_each = (long)bytes;
        if (n < 1 || n > 64)
            return usage();
        long long t0 = cpu_ns();
        for (long i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, thread_regions, &out[i]) != 0)
                return 1;
        for (long i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        printf("cpu_ns %lld\n", cpu_ns() - t0);
        for (long i = 0; i < n; i++)
            if (out[i] != regions_each * (79 * 80 / 2))
                return 1;
    } else {
        return usage();
    }
    return 0;
}
