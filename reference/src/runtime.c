/*
** runtime.c: start-up and the runtime's one error shape.
*/
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

void rt__violation(const char *fn, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "refrt: %s: ", fn);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

/* Key destructor: runs on a thread that ends (never on main, whose state
** goes with the process). Its chunks were cleared when they were given; a
** task's block and outside values were freed when the task ended. */
static void hot_destroy(void *p)
{
    struct rt_hot *h = p;
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
    rt__key_plus_one = (uint64_t)key + 1;
}
