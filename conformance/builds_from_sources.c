/*
** builds_from_sources.c: the runtime builds from its sources alone.
**
** Built with exactly the command the README promises, nothing else:
**     cc -Ireference/include reference/src/*.c builds_from_sources.c -lpthread
** (the runner adds only "-o <binary>" to keep the output under build/, and
** uses the variant's compiler as cc). It is what a user's first program
** looks like: typed arrays from nested regions, a thread with a region of
** its own, and nothing but the public header.
**
** Main keeps its 2 chunks; the thread takes 1 and its end frees it.
**
** build: cc-only
** expect: exit == 0
** expect: prog.errors == 0
** expect: prog.kept_end == 2
** expect: shim.mallocs == 3
** expect: shim.frees == 1
** expect: shim.dirty == 0
** expect: shim.live_at_join == 0
*/
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "refrt.h"

struct point {
    double x, y;
    int tag;
};

static int errors;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "builds_from_sources: %s\n", what);
        errors++;
    }
}

static void *worker(void *arg)
{
    rt_region r;
    long *sum = arg;

    rt_region_open(&r);
    int *v = rt_region_alloc(&r, 80, sizeof(int), 0);
    for (int i = 0; i < 80; i++)
        v[i] = i;
    for (int i = 0; i < 80; i++)
        *sum += v[i];
    rt_region_close(&r);
    return NULL;
}

int main(void)
{
    rt_region outer, inner;
    pthread_t t;
    long sum = 0;

    rt_init();
    rt_region_open(&outer);
    struct point *pts = rt_region_alloc(&outer, 100, sizeof *pts, 0);
    expect((uintptr_t)pts % alignof(max_align_t) == 0, "points not aligned");
    expect(pts[99].tag == 0 && pts[0].x == 0.0, "points not zero filled");

    rt_region_open(&inner);
    unsigned char *bytes = rt_region_alloc(&inner, 3, 1, 0xEE);
    double *d = rt_region_alloc(&inner, 4, sizeof(double), 0);
    expect((uintptr_t)d % alignof(max_align_t) == 0, "doubles not aligned");
    expect(bytes[0] == 0xEE && bytes[2] == 0xEE, "bytes not filled");
    rt_region_close(&inner);
    expect(rt_chunk_kept() == 1, "the inner chunk is not kept");
    rt_region_close(&outer);
    expect(rt_chunk_kept() == 2, "the outer chunk is not kept");

    if (pthread_create(&t, NULL, worker, &sum) != 0 || pthread_join(t, NULL) != 0) {
        perror("pthread");
        return 1;
    }
    expect(sum == 79 * 80 / 2, "the thread's sum is wrong");

    printf("observe errors %d\n", errors);
    printf("observe kept_end %u\n", rt_chunk_kept());
    return 0;
}
