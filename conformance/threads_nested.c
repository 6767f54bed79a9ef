/*
** threads_nested.c: eight threads and main each run the nested loop
** (seed 000 §3.2, §6, §8.6).
**
** Each thread keeps its own stack of chunks: it takes 3 and never one of
** another thread's, and when it ends the key's destructor frees its 3,
** cleared, before pthread_join returns (the shim records what is still
** live at that moment). Main's 3 stay with the process. Each thread asks
** the shim, through the weak refrt_shim_mine, whether the chunks its open
** regions hold are ones it malloc'ed itself.
**
** expect: exit == 0
** expect: shim.threads == 9
** expect: shim.mallocs == 27
** expect: shim.max_mallocs_per_thread <= 3
** expect: shim.main.mallocs == 3
** expect: shim.main.frees == 0
** expect: shim.others.frees == 24
** expect: shim.dirty == 0
** expect: shim.cross_frees == 0
** expect: shim.joined == 8
** expect: shim.live_at_join == 0
** expect: prog.shim_present == 1
** expect: prog.foreign_chunks == 0
** expect: prog.chunks_checked >= 1000
** expect: prog.threads_keeping_3 == 9
*/
#include <pthread.h>
#include <stdio.h>

#include "refrt.h"

#define THREADS 8
#define ROUNDS 20000

/* Defined by the conformance shim: 1 if p is a live chunk that the calling
** thread malloc'ed. Weak, so the program also links and runs without it. */
int refrt_shim_mine(const void *p) __attribute__((weak));

struct outcome {
    unsigned long foreign, checked;
    unsigned kept;
};

static void check_mine(const rt_region *r, struct outcome *o)
{
    if (refrt_shim_mine == NULL)
        return;
    o->checked++;
    if (!refrt_shim_mine(r->base))
        o->foreign++;
}

static void *nested_loop(void *arg)
{
    struct outcome *o = arg;
    rt_region a, b, c;

    for (int round = 0; round < ROUNDS; round++) {
        rt_region_open(&a);
        rt_region_alloc(&a, 100, 1, 0xA1);
        rt_region_open(&b);
        rt_region_alloc(&b, 1000, 1, 0xB2);
        rt_region_open(&c);
        rt_region_alloc(&c, 4000, 1, 0xC3);
        if (round % 16 == 0) {
            check_mine(&a, o);
            check_mine(&b, o);
            check_mine(&c, o);
        }
        rt_region_close(&c);
        rt_region_close(&b);
        rt_region_close(&a);
    }
    o->kept = rt_chunk_kept();
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    struct outcome out[THREADS + 1] = {{0, 0, 0}};
    unsigned long foreign = 0, checked = 0;
    int keeping3 = 0;

    rt_init();
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, nested_loop, &out[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    nested_loop(&out[THREADS]);
    for (int i = 0; i < THREADS; i++)
        if (pthread_join(t[i], NULL) != 0) {
            perror("pthread_join");
            return 1;
        }
    for (int i = 0; i <= THREADS; i++) {
        foreign += out[i].foreign;
        checked += out[i].checked;
        keeping3 += out[i].kept == 3;
    }
    printf("observe shim_present %d\n", refrt_shim_mine != NULL);
    printf("observe foreign_chunks %lu\n", foreign);
    printf("observe chunks_checked %lu\n", checked);
    printf("observe threads_keeping_3 %d\n", keeping3);
    return 0;
}
