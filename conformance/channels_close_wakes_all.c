/*
** channels_close_wakes_all.c: rt_chan_close wakes every task blocked on
** the channel (D9), in whatever build the library is: three receivers
** asleep on an empty channel all get NULL, three senders asleep on a full
** one all get RT_CLOSED and still hold their values. The program waits
** until each is asleep in the kernel (its /proc state), closes, and gives
** the six ten seconds to come back: a task left asleep is a lost wakeup,
** reported as such rather than as a hang.
**
** expect: exit == 0
** expect: prog.receivers_woken == 3
** expect: prog.receivers_got_null == 3
** expect: prog.senders_woken == 3
** expect: prog.senders_closed == 3
** expect: prog.senders_kept_their_values == 3
** expect: prog.held_end == 0
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refrt.h"

#define EACH 3

struct waiter {
    rt_chan *c;
    volatile pid_t tid; /* set just before the call that blocks */
    int returned;       /* __atomic: the call came back */
    int outcome;        /* receiver: 1 got NULL; sender: 1 RT_CLOSED, + 2 value kept */
};

static void *receives(void *arg)
{
    struct waiter *w = arg;
    __atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
    void *v = rt_recv(w->c);
    w->outcome = v == NULL;
    __atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *sends(void *arg)
{
    struct waiter *w = arg;
    unsigned char *v = rt_alloc_outside(100);
    memset(v, 0x33, 100);
    __atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
    rt_status st = rt_send(w->c, v);
    /* refused by the close: the value is still this task's */
    w->outcome = (st == RT_CLOSED) + 2 * (rt_held() == 100 && v[99] == 0x33);
    if (st == RT_CLOSED)
        rt_free(v);
    __atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int asleep(pid_t tid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *end = strrchr(stat, ')');
    return end != NULL && end[1] == ' ' && end[2] == 'S';
}

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Until every waiter is asleep twice in a row, 20 ms apart. */
static void wait_until_asleep(struct waiter *w)
{
    for (int stable = 0; stable < 2;) {
        int all = 1;
        for (int i = 0; i < EACH; i++) {
            pid_t tid = __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE);
            all &= tid != 0 && asleep(tid);
        }
        stable = all ? stable + 1 : 0;
        pause_ms(20);
    }
}

/* How many came back within ten seconds. */
static int woken(struct waiter *w)
{
    int back = 0;
    for (int tries = 0; tries < 1000; tries++) {
        back = 0;
        for (int i = 0; i < EACH; i++)
            back += __atomic_load_n(&w[i].returned, __ATOMIC_ACQUIRE);
        if (back == EACH)
            break;
        pause_ms(10);
    }
    return back;
}

static void run(const char *what, void *(*fn)(void *), rt_chan *c)
{
    struct waiter w[EACH];
    rt_task *t[EACH];
    int got_null = 0, closed = 0, kept = 0;

    memset(w, 0, sizeof w);
    for (int i = 0; i < EACH; i++) {
        w[i].c = c;
        t[i] = rt_spawn(fn, &w[i]);
        if (t[i] == NULL)
            exit(2);
    }
    wait_until_asleep(w);
    rt_chan_close(c);
    int back = woken(w);
    printf("observe %s_woken %d\n", what, back);
    fflush(stdout);
    if (back != EACH)
        _exit(3); /* a lost wakeup: the others would never be joined */
    for (int i = 0; i < EACH; i++) {
        rt_join(t[i], NULL);
        got_null += w[i].outcome == 1;
        closed += w[i].outcome & 1;
        kept += (w[i].outcome & 2) != 0;
    }
    if (fn == receives) {
        printf("observe receivers_got_null %d\n", got_null);
    } else {
        printf("observe senders_closed %d\n", closed);
        printf("observe senders_kept_their_values %d\n", kept);
    }
}

int main(void)
{
    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    rt_init();

    rt_chan *empty = rt_chan_new(1);
    run("receivers", receives, empty);
    rt_chan_free(empty);

    rt_chan *full = rt_chan_new(1);
    void *first = rt_alloc_outside(8);
    if (rt_send(full, first) != RT_OK)
        return 4;
    run("senders", sends, full);
    void *back = rt_recv(full); /* what was queued before the close */
    if (back != first)
        return 5;
    rt_free(back);
    rt_chan_free(full);
    printf("observe held_end %zu\n", rt_held());
    return 0;
}
