/*
** budgets_over_budget.c: a task that reads more than its budget panics,
** and another task runs on (seed 002 step 9, D5, D6).
**
** Both tasks get a 64 KiB block (rt_fixed_strategy). The greedy one grows a
** text 100 bytes at a time until its block cannot take it: it panics with
** the contract's message, its block and values go, and rt_join says
** RT_PANICKED. The other one runs its loop to the end and hands its result
** to main, where its bytes count against main.
**
** expect: exit == 0
** expect: stderr contains refrt: task 1 panicked: a reallocation of
** expect: prog.greedy_status == 1
** expect: prog.greedy_result_null == 1
** expect: prog.other_status == 0
** expect: prog.other_sum == 4125000
** expect: prog.main_held == 8
** expect: prog.budget == 65536
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "refrt.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int other_started;

static void *greedy(void *unused)
{
    char *text = NULL;
    size_t len = 0;
    (void)unused;
    pthread_mutex_lock(&lock);
    while (!other_started) /* so both run at once */
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    for (;;) {
        text = rt_realloc(text, len + 100);
        memset(text + len, 'x', 100);
        len += 100;
    }
    return NULL; /* not reached: the block fills first */
}

static void *other(void *unused)
{
    unsigned long *sum = rt_alloc_outside(sizeof *sum);
    (void)unused;
    pthread_mutex_lock(&lock);
    other_started = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    *sum = 0;
    for (unsigned i = 0; i < 2000; i++) {
        unsigned *v = rt_alloc(64 * sizeof *v);
        for (unsigned k = 0; k < 64; k++)
            v[k] = i + k;
        *sum += v[63] + 1000;
        rt_free(v);
    }
    return sum;
}

int main(void)
{
    void *greedy_result = &greedy_result;
    unsigned long *sum = NULL;
    rt_status gs, os;

    rt_set_strategy(rt_fixed_strategy(65536));
    rt_init();
    rt_task *g = rt_spawn(greedy, NULL), *o = rt_spawn(other, NULL);
    gs = rt_join(g, &greedy_result);
    os = rt_join(o, (void **)&sum);
    printf("observe greedy_status %d\n", (int)gs);
    printf("observe greedy_result_null %d\n", greedy_result == NULL);
    printf("observe other_status %d\n", (int)os);
    printf("observe other_sum %lu\n", sum != NULL ? *sum : 0);
    printf("observe main_held %zu\n", rt_held());
    printf("observe budget %zu\n", rt_budget());
    rt_free(sum);
    return 0;
}
