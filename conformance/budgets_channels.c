/*
** budgets_channels.c: where a sent value counts (D9).
**
** A value sent from a task that has ended is read correctly by its
** receiver and counts against it. A receiver whose budget the next value
** does not fit (16 KiB against 20 KiB) panics at rt_recv; the sender runs
** on; the value stays at the head and the next receiver (main) gets it
** intact. A block value is refused and nothing is sent.
**
** expect: exit == 0
** expect: stderr contains refrt: task 3 panicked: a received value of 20480 bytes
** expect: prog.from_ended_intact == 1
** expect: prog.held_after_first == 4000
** expect: prog.small_status == 1
** expect: prog.sender_status == 0
** expect: prog.sender_ran_on == 500
** expect: prog.next_receiver_intact == 1
** expect: prog.held_after_second == 24480
** expect: prog.nothing_else_queued == 1
** expect: prog.block_value_refused == 1
** expect: prog.held_end == 0
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void *sends_then_ends(void *c)
{
    unsigned char *v = rt_alloc_outside(4000);
    memset(v, 0x42, 4000);
    rt_send(c, v);
    return NULL;
}

static void *sends_and_runs_on(void *c)
{
    unsigned char *v = rt_alloc_outside(20480);
    unsigned long *done = rt_alloc_outside(sizeof *done);
    memset(v, 0x5E, 20480);
    rt_send(c, v);
    for (*done = 0; *done < 500; (*done)++)
        rt_free(rt_alloc(512));
    return done;
}

static void *receives_too_big(void *c)
{
    rt_recv(c); /* panics here */
    return NULL;
}

int main(void)
{
    unsigned long *done = NULL;

    rt_set_strategy(rt_fixed_strategy(262144));
    rt_init();
    rt_chan *c = rt_chan_new(1);

    rt_join(rt_spawn(sends_then_ends, c), NULL);
    unsigned char *first = rt_recv(c);
    printf("observe from_ended_intact %d\n", filled(first, 4000, 0x42));
    printf("observe held_after_first %zu\n", rt_held());

    rt_task *sender = rt_spawn(sends_and_runs_on, c);
    rt_set_strategy(rt_fixed_strategy(16384));
    rt_task *small = rt_spawn(receives_too_big, c);
    printf("observe small_status %d\n", (int)rt_join(small, NULL));
    printf("observe sender_status %d\n", (int)rt_join(sender, (void **)&done));
    printf("observe sender_ran_on %lu\n", done != NULL ? *done : 0);
    rt_free(done);
    rt_chan_close(c);
    unsigned char *second = rt_recv(c);
    printf("observe next_receiver_intact %d\n", second != NULL && filled(second, 20480, 0x5E));
    printf("observe held_after_second %zu\n", rt_held());
    printf("observe nothing_else_queued %d\n", rt_recv(c) == NULL);
    rt_free(first);
    rt_free(second);
    rt_chan_free(c);

    rt_chan *d = rt_chan_new(1);
    char *in_block = rt_alloc(10);
    printf("observe block_value_refused %d\n", rt_send(d, in_block) == RT_REFUSED);
    rt_free(in_block);
    rt_chan_free(d);
    printf("observe held_end %zu\n", rt_held());
    return 0;
}
