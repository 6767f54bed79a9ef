/*
** check_chan.c: channels of outside values and the transfer of their bytes
** (D9): from the sender's count to the receiver's at rt_recv.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "task.h"
#include "refrt.h"
#include "testutil.h"

#define KIB ((size_t)1024)

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* ---- send and receive ----------------------------------------------------- */

START_TEST(a_received_value_moves_to_the_receivers_count)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(4);
    char *v = rt_alloc_outside(1000);
    memset(v, 'v', 1000);
    ck_assert_uint_eq(rt_held(), 1000);
    ck_assert_int_eq(rt_send(c, v), RT_OK);
    ck_assert_uint_eq(rt_held(), 1000); /* counts against the sender until received */
    char *got = rt_recv(c);
    ck_assert_ptr_eq(got, v); /* no copy */
    ck_assert_uint_eq(rt_held(), 1000); /* sender and receiver are one task here */
    rt_free(got);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(c);
}
END_TEST

/* A value a task sends itself moves from its count to its count: the task
** holds it the whole time, so it comes back whatever its size, up to all
** the room the budget has, never counted twice on the way in and never
** released on the way out (D9: the bytes move to the receiver's count).
** Several of its own values queued at once, and one of another task's
** between them, which is charged on receipt as any other. On main and on a
** task of another budget. */
struct self_ctx {
    size_t budget;
    rt_chan *from_other; /* a value another task sent, waiting */
    size_t other_bytes;
    int failed_at;       /* 0: every step as the contract says */
};

#define SELF_CHECK(x, cond, step)                                              \
    do {                                                                       \
        if (!(cond) && (x)->failed_at == 0)                                    \
            (x)->failed_at = (step);                                           \
    } while (0)

static void sends_itself_values(struct self_ctx *x)
{
    rt_chan *c = rt_chan_new(3);
    size_t base = rt_held();
    size_t room = x->budget - base;
    size_t sizes[] = {1, 1000, room / 2 + 16, room - 1, room};

    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *v = rt_alloc_outside(sizes[i]);
        memset(v, (int)(0x40 + i), sizes[i]);
        SELF_CHECK(x, rt_held() == base + sizes[i], 10 * (int)i + 1);
        SELF_CHECK(x, rt_send(c, v) == RT_OK, 10 * (int)i + 2);
        SELF_CHECK(x, rt_held() == base + sizes[i], 10 * (int)i + 3);
        unsigned char *got = rt_recv(c);
        SELF_CHECK(x, got == v && filled(got, sizes[i], (unsigned char)(0x40 + i)),
                   10 * (int)i + 4);
        SELF_CHECK(x, rt_held() == base + sizes[i], 10 * (int)i + 5);
        rt_free(got);
        SELF_CHECK(x, rt_held() == base, 10 * (int)i + 6);
    }
    /* three of its own queued, a third of the room each, and another task's */
    size_t third = room / 3 - x->other_bytes;
    unsigned char *v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = rt_alloc_outside(third);
        memset(v[i], 'a' + i, third);
        SELF_CHECK(x, rt_send(c, v[i]) == RT_OK, 100 + i);
    }
    SELF_CHECK(x, rt_held() == base + 3 * third, 104);
    unsigned char *theirs = rt_recv(x->from_other);
    SELF_CHECK(x, theirs != NULL && filled(theirs, x->other_bytes, 'o'), 105);
    SELF_CHECK(x, rt_held() == base + 3 * third + x->other_bytes, 106);
    for (int i = 0; i < 3; i++) {
        unsigned char *got = rt_recv(c);
        SELF_CHECK(x, got == v[i] && filled(got, third, (unsigned char)('a' + i)), 110 + i);
        SELF_CHECK(x, rt_held() == base + 3 * third + x->other_bytes, 120 + i);
    }
    for (int i = 0; i < 3; i++)
        rt_free(v[i]);
    rt_free(theirs);
    SELF_CHECK(x, rt_held() == base, 130);
    rt_chan_free(c);
}

static void *sends_other_value(void *arg)
{
    struct self_ctx *x = arg;
    unsigned char *v = rt_alloc_outside(x->other_bytes);
    memset(v, 'o', x->other_bytes);
    rt_send(x->from_other, v);
    return NULL;
}

static void *sends_itself_on_a_task(void *arg)
{
    sends_itself_values(arg);
    return NULL;
}

static void give_a_value_to_receive(struct self_ctx *x)
{
    x->from_other = rt_chan_new(1);
    x->other_bytes = 333;
    rt_task *t = rt_spawn(sends_other_value, x);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
}

START_TEST(a_value_a_task_sends_itself_comes_back_however_big)
{
    struct self_ctx on_main = {.budget = 64 * KIB}, on_task = {.budget = 48 * KIB};

    init_fixed(64 * KIB);
    give_a_value_to_receive(&on_main);
    sends_itself_values(&on_main);
    ck_assert_msg(on_main.failed_at == 0, "on main: step %d", on_main.failed_at);
    rt_chan_free(on_main.from_other);

    give_a_value_to_receive(&on_task);
    rt_set_strategy(rt_fixed_strategy(48 * KIB));
    rt_task *t = rt_spawn(sends_itself_on_a_task, &on_task);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_msg(on_task.failed_at == 0, "on a task: step %d", on_task.failed_at);
    rt_chan_free(on_task.from_other);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
}
END_TEST

struct pair {
    rt_chan *to_main, *to_task;
    size_t held_after_send, held_after_recv;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool measured;
};

static void *sends_and_watches(void *arg)
{
    struct pair *p = arg;
    void *keep = rt_alloc(100);
    unsigned char *v = rt_alloc_outside(3000);
    memset(v, 0x3C, 3000);
    rt_send(p->to_main, v);
    pthread_mutex_lock(&p->lock);
    p->held_after_send = rt_held(); /* main has not received yet */
    p->measured = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    rt_free(rt_recv(p->to_task)); /* main received: its go-ahead */
    p->held_after_recv = rt_held();
    rt_free(keep);
    return NULL;
}

START_TEST(the_sender_stops_counting_a_value_when_it_is_received)
{
    struct pair p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    init_fixed(64 * KIB);
    p.to_main = rt_chan_new(1);
    p.to_task = rt_chan_new(1);
    rt_task *t = rt_spawn(sends_and_watches, &p);
    pthread_mutex_lock(&p.lock);
    while (!p.measured)
        pthread_cond_wait(&p.cond, &p.lock);
    pthread_mutex_unlock(&p.lock);
    unsigned char *v = rt_recv(p.to_main);
    ck_assert(filled(v, 3000, 0x3C));
    ck_assert_uint_eq(rt_held(), 3000);
    ck_assert_int_eq(rt_send(p.to_task, rt_alloc_outside(1)), RT_OK);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(p.held_after_send, 112 + 3000);
    ck_assert_uint_eq(p.held_after_recv, 112); /* its own go-ahead came and went */
    ck_assert_uint_eq(rt_held(), 3000);
    rt_free(v);
    rt_chan_free(p.to_main);
    rt_chan_free(p.to_task);
}
END_TEST

static void *sends_then_ends(void *arg)
{
    rt_chan *c = arg;
    unsigned char *v = rt_alloc_outside(4000);
    memset(v, 0x42, 4000);
    ck_assert_int_eq(rt_send(c, v), RT_OK);
    return NULL;
}

/* Seed step 9: a value sent from a task that has ended is read correctly by
** its receiver, and counts against it. */
START_TEST(a_value_from_an_ended_task_is_read_and_counts_against_its_receiver)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    rt_task *t = rt_spawn(sends_then_ends, c);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt_held(), 0);
    unsigned char *v = rt_recv(c);
    ck_assert(filled(v, 4000, 0x42));
    ck_assert_uint_eq(rt_held(), 4000);
    rt_free(v);
    rt_chan_free(c);
}
END_TEST

/* How many of one sender's values may wait in channels is bounded by
** memory alone: past 65,536 queued at once (a count of 16 bits) the
** sender, joined and ended, still owns each one until it is received, and
** each is read whole and counted against its receiver. */
enum { MANY_QUEUED = 65536 + 3 };

static void *sends_many_then_ends(void *arg)
{
    rt_chan *c = arg;
    for (unsigned i = 0; i < MANY_QUEUED; i++) {
        unsigned char *v = rt_alloc_outside(1);
        *v = (unsigned char)i;
        ck_assert_int_eq(rt_send(c, v), RT_OK);
    }
    ck_assert_uint_eq(rt_held(), MANY_QUEUED);
    return NULL;
}

START_TEST(more_values_of_one_sender_than_a_short_counts_wait_and_arrive_whole)
{
    init_fixed(1024 * KIB);
    rt_chan *c = rt_chan_new(MANY_QUEUED);
    rt_task *t = rt_spawn(sends_many_then_ends, c);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(rt_held(), 0);
    for (unsigned i = 0; i < MANY_QUEUED; i++) {
        unsigned char *v = rt_recv(c);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(*v, (unsigned char)i);
        ck_assert_uint_eq(rt_held(), 1);
        rt_free(v);
    }
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    rt_chan_free(c);
}
END_TEST

static void *panics_after_sending(void *arg)
{
    rt_chan *c = arg;
    unsigned char *v = rt_alloc_outside(500);
    memset(v, 0x11, 500);
    rt_send(c, v);
    rt_panic("after the send");
}

START_TEST(a_value_sent_before_a_panic_survives_it)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    rt_task *t = rt_spawn(panics_after_sending, c);
    ck_assert_int_eq(rt_join(t, NULL), RT_PANICKED);
    unsigned char *v = rt_recv(c);
    ck_assert(filled(v, 500, 0x11));
    ck_assert_uint_eq(rt_held(), 500);
    rt_free(v);
    rt_chan_free(c);
}
END_TEST

START_TEST(a_block_value_is_refused_and_nothing_is_sent)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    char *v = rt_alloc(10);
    ck_assert_int_eq(rt_send(c, v), RT_REFUSED);
    ck_assert_uint_eq(rt_held(), 32); /* still the task's, untouched */
    rt_chan_close(c);
    ck_assert_ptr_null(rt_recv(c));
    rt_free(v);
    rt_chan_free(c);
}
END_TEST

/* A block value is refused on sight, in every state of the channel: on a
** full one at once (a send of it never waits for room it could not use),
** and on a closed one as a block value (RT_REFUSED, not RT_CLOSED: what
** is wrong is the value, and no later channel takes it either). */
START_TEST(a_block_value_is_refused_at_once_on_a_full_or_closed_channel)
{
    init_fixed(64 * KIB);
    for (size_t capacity = 1; capacity <= 3; capacity++) {
        rt_chan *c = rt_chan_new(capacity);
        char *v = rt_alloc(10);
        size_t held = rt_held();
        for (size_t i = 0; i < capacity; i++)
            ck_assert_int_eq(rt_send(c, rt_alloc_outside(8)), RT_OK);
        ck_assert_int_eq(rt_send(c, v), RT_REFUSED); /* full: no wait */
        rt_chan_close(c);
        ck_assert_int_eq(rt_send(c, v), RT_REFUSED); /* closed */
        for (size_t i = 0; i < capacity; i++)
            rt_free(rt_recv(c));
        ck_assert_ptr_null(rt_recv(c));
        ck_assert_int_eq(rt_send(c, v), RT_REFUSED); /* closed and empty */
        ck_assert_uint_eq(rt_held(), held);
        rt_free(v);
        rt_chan_free(c);
    }
}
END_TEST

START_TEST(a_closed_channel_takes_nothing_and_gives_what_it_has)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(3);
    void *a = rt_alloc_outside(10), *b = rt_alloc_outside(20), *late = rt_alloc_outside(30);
    ck_assert_int_eq(rt_send(c, a), RT_OK);
    ck_assert_int_eq(rt_send(c, b), RT_OK);
    rt_chan_close(c);
    ck_assert_int_eq(rt_send(c, late), RT_CLOSED);
    ck_assert_uint_eq(rt_held(), 60);
    rt_free(late); /* still held by the sender */
    ck_assert_ptr_eq(rt_recv(c), a); /* FIFO */
    ck_assert_ptr_eq(rt_recv(c), b);
    ck_assert_ptr_null(rt_recv(c));
    ck_assert_ptr_null(rt_recv(c));
    rt_free(a);
    rt_free(b);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(c);
}
END_TEST

static void *sends_five(void *arg)
{
    rt_chan *c = arg;
    for (uintptr_t i = 0; i < 5; i++) {
        uintptr_t *v = rt_alloc_outside(sizeof *v);
        *v = i;
        ck_require(rt_send(c, v) == RT_OK); /* blocks while the one slot is full */
    }
    return NULL;
}

START_TEST(a_full_channel_blocks_the_sender_and_keeps_the_order)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(1);
    rt_task *t = rt_spawn(sends_five, c);
    for (uintptr_t i = 0; i < 5; i++) {
        uintptr_t *v = rt_recv(c);
        ck_require(*v == i);
        rt_free(v);
    }
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(c);
}
END_TEST

struct sleeper {
    rt_chan *c;
    pid_t tid;
};

static void *receives_in_vain(void *arg)
{
    struct sleeper *s = arg;
    __atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
    rt_recv(s->c); /* 20 KiB into a 16 KiB budget: panics here */
    return NULL;
}

/* Waits until thread tid sleeps: here, in rt_recv's wait on the channel. */
static void wait_asleep(struct sleeper *s)
{
    pid_t tid;
    while ((tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE)) == 0)
        sched_yield();
    thread_wait_asleep(tid);
}

struct blocked_sender {
    struct sleeper s;
    void *value;
    int ended; /* its function returned */
};

static void *sends_into_a_full_channel(void *arg)
{
    struct blocked_sender *k = arg;
    rt_chan *c = k->s.c;
    k->value = rt_alloc_outside(50);
    __atomic_store_n(&k->s.tid, gettid(), __ATOMIC_RELEASE);
    memset(k->value, 0x77, 50);
    /* the one slot is full: waits until main closes the channel */
    ck_assert_int_eq(rt_send(c, k->value), RT_CLOSED);
    ck_assert_uint_eq(rt_held(), 50); /* still the sender's */
    ck_assert(filled(k->value, 50, 0x77));
    rt_free(k->value);
    __atomic_store_n(&k->ended, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Waits up to ten seconds for k's send to return: a sender left asleep is
** a failure in seconds, not a hang until the case's timeout. */
/* Waits, 10 s at most, for k's function to return; who names the waiter
** a close did not wake. */
static void wait_ended_of(struct blocked_sender *k, const char *who)
{
    for (int i = 0; i < 10000 && !__atomic_load_n(&k->ended, __ATOMIC_ACQUIRE); i++)
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    ck_assert_msg(__atomic_load_n(&k->ended, __ATOMIC_ACQUIRE), "%s was not woken by its close",
                  who);
}

static void wait_ended(struct blocked_sender *k)
{
    wait_ended_of(k, "a sender waiting on the full channel");
}

START_TEST(closing_a_full_channel_wakes_its_sender)
{
    struct blocked_sender k = {{NULL, 0}, NULL, 0};
    init_fixed(64 * KIB);
    rt_chan *c = k.s.c = rt_chan_new(1);
    void *first = rt_alloc_outside(10);
    ck_assert_int_eq(rt_send(c, first), RT_OK);
    rt_task *t = rt_spawn(sends_into_a_full_channel, &k);
    wait_asleep(&k.s); /* in rt_send, waiting for room */
    rt_chan_close(c);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    ck_assert_ptr_eq(rt_recv(c), first); /* what was queued is still there */
    ck_assert_ptr_null(rt_recv(c));
    rt_free(first);
    rt_chan_free(c);
    rt_chan_free(NULL); /* does nothing, as free(NULL) */
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* Every sender waiting on a full channel wakes at its close: one, two and
** three of them, each asleep in its wait before the close (a broadcast, not
** one signal: a sender left asleep would hang its join). */
START_TEST(closing_a_full_channel_wakes_every_sender)
{
    init_fixed(256 * KIB);
    for (int n = 1; n <= 3; n++) {
        struct blocked_sender k[3];
        rt_task *t[3];
        rt_chan *c = rt_chan_new(1);
        void *first = rt_alloc_outside(10);
        ck_assert_int_eq(rt_send(c, first), RT_OK);
        for (int i = 0; i < n; i++) {
            k[i] = (struct blocked_sender){{c, 0}, NULL, 0};
            t[i] = rt_spawn(sends_into_a_full_channel, &k[i]);
            ck_assert_ptr_nonnull(t[i]);
        }
        for (int i = 0; i < n; i++)
            wait_asleep(&k[i].s);
        rt_chan_close(c);
        for (int i = 0; i < n; i++) {
            wait_ended(&k[i]);
            ck_assert_int_eq(rt_join(t[i], NULL), RT_OK);
        }
        ck_assert_ptr_eq(rt_recv(c), first);
        ck_assert_ptr_null(rt_recv(c));
        rt_free(first);
        rt_chan_free(c);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

/* A close wakes every sender that waits, whether the channel is full or
** not at that instant: two senders asleep on a full channel, main receives
** (room for one: one sender is signalled) and closes at once, before the
** signalled sender has run, so the channel is not full at the close. The
** other sender must wake too: each gets RT_OK (the signalled one, if it
** got the lock first) or RT_CLOSED, in seconds. Twenty rounds. */
static void *sends_once_into_a_full_channel(void *arg)
{
    struct blocked_sender *k = arg;
    void *v = rt_alloc_outside(50);
    __atomic_store_n(&k->s.tid, gettid(), __ATOMIC_RELEASE);
    rt_status st = rt_send(k->s.c, v);
    ck_assert(st == RT_OK || st == RT_CLOSED);
    if (st == RT_CLOSED)
        rt_free(v); /* still the sender's */
    k->value = st == RT_OK ? v : NULL;
    __atomic_store_n(&k->ended, 1, __ATOMIC_RELEASE);
    return NULL;
}

START_TEST(a_close_wakes_every_sender_when_a_receive_just_made_room)
{
    init_fixed(256 * KIB);
    for (int round = 0; round < 20; round++) {
        struct blocked_sender k[2];
        rt_task *t[2];
        rt_chan *c = rt_chan_new(1);
        void *first = rt_alloc_outside(10);
        ck_assert_int_eq(rt_send(c, first), RT_OK);
        for (int i = 0; i < 2; i++) {
            k[i] = (struct blocked_sender){{c, 0}, NULL, 0};
            t[i] = rt_spawn(sends_once_into_a_full_channel, &k[i]);
            ck_assert_ptr_nonnull(t[i]);
        }
        for (int i = 0; i < 2; i++)
            wait_asleep(&k[i].s);
        ck_assert_ptr_eq(rt_recv(c), first);
        rt_chan_close(c);
        int sent = 0;
        for (int i = 0; i < 2; i++) {
            wait_ended(&k[i]);
            ck_assert_int_eq(rt_join(t[i], NULL), RT_OK);
            sent += k[i].value != NULL;
        }
        ck_assert_int_le(sent, 1); /* one slot: at most one got in */
        void *v = rt_recv(c);
        ck_assert(sent ? v != NULL : v == NULL);
        if (v != NULL)
            rt_free(v);
        ck_assert_ptr_null(rt_recv(c));
        rt_free(first);
        rt_chan_free(c);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

/* The same for receivers: a close wakes every receiver that waits,
** whether the channel is empty at that instant or not. Two receivers
** asleep on an empty channel, main sends one value (one receiver is
** signalled) and closes at once, before the signalled one has run, so
** the channel holds a value at the close. The other must wake too: one
** gets the value, the other NULL, both in seconds. Twenty rounds. */
static void *receives_once_from_an_empty_channel(void *arg)
{
    struct blocked_sender *k = arg;
    __atomic_store_n(&k->s.tid, gettid(), __ATOMIC_RELEASE);
    k->value = rt_recv(k->s.c);
    __atomic_store_n(&k->ended, 1, __ATOMIC_RELEASE);
    return k->value;
}

START_TEST(a_close_wakes_every_receiver_when_a_send_just_filled_the_channel)
{
    init_fixed(256 * KIB);
    for (int round = 0; round < 20; round++) {
        struct blocked_sender k[2];
        rt_task *t[2];
        rt_chan *c = rt_chan_new(4);
        for (int i = 0; i < 2; i++) {
            k[i] = (struct blocked_sender){{c, 0}, NULL, 0};
            t[i] = rt_spawn(receives_once_from_an_empty_channel, &k[i]);
            ck_assert_ptr_nonnull(t[i]);
        }
        for (int i = 0; i < 2; i++)
            wait_asleep(&k[i].s);
        void *v = rt_alloc_outside(40);
        ck_assert_int_eq(rt_send(c, v), RT_OK);
        rt_chan_close(c);
        int got = 0;
        for (int i = 0; i < 2; i++) {
            wait_ended_of(&k[i], "a receiver waiting on the channel");
            void *result = NULL;
            ck_assert_int_eq(rt_join(t[i], &result), RT_OK);
            ck_assert_ptr_eq(result, k[i].value);
            if (result != NULL) {
                ck_assert_ptr_eq(result, v);
                got++;
                rt_free(result);
            }
        }
        ck_assert_int_eq(got, 1);
        ck_assert_ptr_null(rt_recv(c));
        rt_chan_free(c);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

/* Receivers that race for values never see NULL on an open channel, and
** every value arrives once: four tasks receive from a channel of one slot
** while two tasks send 2,000 values each, so receivers woken for a value
** another took first must wait again. Afterwards the figures are exact:
** each sender's 2,000 sends went through, the receivers got 4,000 values
** between them and hold nothing, and so does main. */
#define RACED 2000
#define RACERS 4

struct racer {
    rt_chan *c;
    const int *closing;
    unsigned long got, early_null, sent;
};

static void *receives_until_closed(void *arg)
{
    struct racer *r = arg;
    for (;;) {
        unsigned char *v = rt_recv(r->c);
        if (v == NULL) {
            if (!__atomic_load_n(r->closing, __ATOMIC_ACQUIRE))
                r->early_null++;
            return NULL;
        }
        r->got++;
        rt_free(v);
    }
}

static void *sends_its_share(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < RACED; i++)
        if (rt_send(r->c, rt_alloc_outside(1 + (size_t)i % 64)) == RT_OK)
            r->sent++;
    return NULL;
}

START_TEST(receivers_racing_for_values_see_null_only_once_closed)
{
    int closing = 0;
    struct racer r[RACERS], w[2];
    rt_task *t[RACERS], *u[2];
    unsigned long got = 0;
    init_fixed(256 * KIB);
    rt_chan *c = rt_chan_new(1);
    for (int i = 0; i < RACERS; i++) {
        r[i] = (struct racer){c, &closing, 0, 0, 0};
        t[i] = rt_spawn(receives_until_closed, &r[i]);
        ck_assert_ptr_nonnull(t[i]);
    }
    for (int i = 0; i < 2; i++) {
        w[i] = (struct racer){c, &closing, 0, 0, 0};
        u[i] = rt_spawn(sends_its_share, &w[i]);
        ck_assert_ptr_nonnull(u[i]);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(rt_join(u[i], NULL), RT_OK);
        ck_assert_uint_eq(w[i].sent, RACED);
    }
    __atomic_store_n(&closing, 1, __ATOMIC_RELEASE);
    rt_chan_close(c);
    for (int i = 0; i < RACERS; i++) {
        ck_assert_int_eq(rt_join(t[i], NULL), RT_OK);
        ck_assert_msg(r[i].early_null == 0, "receiver %d got NULL from an open channel", i);
        got += r[i].got;
    }
    ck_assert_ptr_null(rt_recv(c)); /* the receivers emptied it */
    ck_assert_uint_eq(got, 2 * RACED);
    rt_chan_free(c);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* The values a task sent keep its record alive after it ended and was
** joined: the last of them to go, freed with the channel or received,
** counts its bytes back to the sender and then drops its reference, which
** frees the record. Nothing writes to the record once it is freed (the
** quarantine of frees sees a write after free in the plain build too). */
static void *sends_three_and_ends(void *arg)
{
    rt_chan *c = arg;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rt_send(c, rt_alloc_outside(100 + (size_t)i)), RT_OK);
    return NULL;
}

START_TEST(the_last_value_of_an_ended_sender_writes_nothing_freed)
{
    init_fixed(64 * KIB);
    for (int received = 0; received <= 3; received++) {
        rt_chan *c = rt_chan_new(4);
        rt_task *t = rt_spawn(sends_three_and_ends, c);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(rt_join(t, NULL), RT_OK); /* ended, joined: the values hold it */
        quarantine_start();
        for (int i = 0; i < received; i++) {
            void *v = rt_recv(c);
            ck_assert_ptr_nonnull(v);
            rt_free(v);
        }
        rt_chan_free(c); /* the rest, if any */
        ck_assert_int_eq(quarantine_end(), 0);
        ck_assert_uint_eq(rt_held(), 0);
    }
}
END_TEST

static void *receives_nothing(void *arg)
{
    struct sleeper *s = arg;
    __atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
    ck_assert_ptr_null(rt_recv(s->c)); /* closed while it waited */
    return NULL;
}

START_TEST(closing_an_empty_channel_wakes_its_receivers)
{
    struct sleeper a = {NULL, 0}, b = {NULL, 0};
    init_fixed(64 * KIB);
    a.c = b.c = rt_chan_new(2);
    rt_task *ta = rt_spawn(receives_nothing, &a);
    rt_task *tb = rt_spawn(receives_nothing, &b);
    wait_asleep(&a);
    wait_asleep(&b);
    rt_chan_close(a.c); /* both wake: a broadcast */
    ck_assert_int_eq(rt_join(ta, NULL), RT_OK);
    ck_assert_int_eq(rt_join(tb, NULL), RT_OK);
    rt_chan_free(a.c);
}
END_TEST

START_TEST(freeing_a_channel_frees_what_is_queued)
{
    init_fixed(256 * KIB);
    rt_chan *c = rt_chan_new(4);
    chunks_reset();
    void *a = rt_alloc_outside(RT_CHUNK_SIZE), *b = rt_alloc_outside(RT_CHUNK_SIZE);
    rt_send(c, a);
    rt_send(c, b);
    rt_chan_free(c);
    ck_assert(!chunk_live(a));
    ck_assert(!chunk_live(b));
    ck_assert_uint_eq(chunks_counted().frees, 2);
    ck_assert_uint_eq(rt_held(), 0); /* the sender stops counting them */
}
END_TEST

static void *sends_one_and_ends(void *arg)
{
    rt_send(arg, rt_alloc_outside(64));
    return NULL;
}

/* A channel made, given a value by a task that then ends, and freed. */
static void channel_with_a_value_of_an_ended_task(void)
{
    rt_chan *c = rt_chan_new(4);
    if (rt_join(rt_spawn(sends_one_and_ends, c), NULL) != RT_OK)
        ck_abort_msg("the sender did not end well");
    rt_chan_free(c);
}

/* The ring, and the ended sender's record, which the queued value kept
** alive, go with the channel. */
START_TEST(freeing_a_channel_leaves_nothing_allocated)
{
    init_fixed(64 * KIB);
    channel_with_a_value_of_an_ended_task(); /* tables made once, kept */
    long before = allocs_live();
    for (int i = 0; i < 3; i++)
        channel_with_a_value_of_an_ended_task();
    long after = allocs_live();
    ck_assert_int_eq(after, before);
}
END_TEST

/* A task that sends on a closed channel (empty, or full with a value main
** sent), is refused, frees its value and ends: once it is joined and the
** channel freed, nothing it made is left (RT_CLOSED changes nothing, and
** a refused send holds no reference to its task). */
static void *sends_on_a_closed_channel(void *arg)
{
    void *v = rt_alloc_outside(64);
    if (rt_send(arg, v) != RT_CLOSED)
        return (void *)1;
    rt_free(v);
    return NULL;
}

static void closed_channel_refuses_a_task(int full)
{
    rt_chan *c = rt_chan_new(1);
    void *out = (void *)2;
    if (full && rt_send(c, rt_alloc_outside(8)) != RT_OK)
        ck_abort_msg("main's send");
    rt_chan_close(c);
    if (rt_join(rt_spawn(sends_on_a_closed_channel, c), &out) != RT_OK || out != NULL)
        ck_abort_msg("the sender was not refused, or did not end well");
    if (full)
        rt_free(rt_recv(c));
    rt_chan_free(c);
}

START_TEST(a_send_refused_as_closed_leaves_nothing_allocated)
{
    init_fixed(64 * KIB);
    for (int full = 0; full <= 1; full++) {
        closed_channel_refuses_a_task(full); /* tables made once, kept */
        long before = allocs_live();
        for (int i = 0; i < 3; i++)
            closed_channel_refuses_a_task(full);
        long after = allocs_live();
        ck_assert_int_eq(after, before);
    }
}
END_TEST

/* A task whose sent value was received has that room again for what it
** receives next, though it made no call that settles in between (D9: the
** bytes leave the sender once the value is received; the receive folds
** them in before it charges). 3000 bytes sent, received by main, then 2000
** received, in a block of 4096: fits once the 3000 are gone. */
struct sent_then_received {
    rt_chan *to_main, *to_task;
    size_t held_after;
};

static void *sends_then_receives(void *arg)
{
    struct sent_then_received *x = arg;
    void *v = rt_alloc_outside(3000);
    if (rt_send(x->to_main, v) != RT_OK)
        return (void *)1;
    void *w = rt_recv(x->to_task); /* main took v before it sent this */
    x->held_after = rt_held();
    rt_free(w);
    return NULL;
}

START_TEST(a_receive_fits_in_the_room_a_received_send_gave_back)
{
    struct sent_then_received x = {NULL, NULL, 0};
    void *out = (void *)2;
    init_fixed(4 * KIB);
    x.to_main = rt_chan_new(1);
    x.to_task = rt_chan_new(1);
    rt_task *t = rt_spawn(sends_then_receives, &x);
    ck_assert_ptr_nonnull(t);
    rt_free(rt_recv(x.to_main));
    ck_assert_int_eq(rt_send(x.to_task, rt_alloc_outside(2000)), RT_OK);
    ck_assert_int_eq(rt_join(t, &out), RT_OK);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(x.held_after, 2000);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(x.to_main);
    rt_chan_free(x.to_task);
}
END_TEST

/* ---- a receiver the value does not fit (seed step 9) ---------------------- */

struct doomed {
    rt_chan *c;
    void *got;
};

static void *receives_too_big(void *arg)
{
    struct doomed *d = arg;
    d->got = rt_recv(d->c); /* 20 KiB into a 16 KiB budget: panics here */
    return NULL;
}

static void *sends_and_runs_on(void *arg)
{
    rt_chan *c = arg;
    unsigned char *v = rt_alloc_outside(20 * KIB);
    memset(v, 0x5E, 20 * KIB);
    rt_send(c, v);
    unsigned long *sum = rt_alloc_outside(sizeof *sum);
    *sum = 0;
    for (unsigned i = 0; i < 500; i++) {
        unsigned char *w = rt_alloc(512);
        memset(w, 1, 512);
        *sum += w[i % 512];
        rt_free(w);
    }
    return sum;
}

static void receiver_does_not_fit(void *unused)
{
    (void)unused;
    struct doomed d = {rt_chan_new(1), NULL};
    unsigned long *sum;
    init_fixed(256 * KIB);
    rt_task *sender = rt_spawn(sends_and_runs_on, d.c);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_task *small = rt_spawn(receives_too_big, &d);
    if (rt_join(small, NULL) != RT_PANICKED || d.got != NULL)
        _exit(10);
    if (rt_join(sender, (void **)&sum) != RT_OK || *sum != 500)
        _exit(11); /* the sender ran on */
    rt_free(sum);
    rt_chan_close(d.c); /* so a lost value shows as NULL, not as a hang */
    unsigned char *v = rt_recv(d.c); /* the next receiver gets it intact */
    if (v == NULL || !filled(v, 20 * KIB, 0x5E) || rt_held() != 20 * KIB)
        _exit(12);
    rt_free(v);
    if (rt_recv(d.c) != NULL)
        _exit(13); /* nothing else was there: the value was not duplicated */
    rt_chan_free(d.c);
    if (rt__blocks_live() != 1 || rt_held() != 0)
        _exit(14);
}

START_TEST(a_receiver_the_value_does_not_fit_panics_and_the_next_gets_it)
{
    struct death d = run_child(receiver_does_not_fit, NULL);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d: %s", d.signal,
                  d.exit_status, d.err);
    ck_assert_ptr_nonnull(strstr(d.err, "refrt: task 2 panicked: a received value of 20480 bytes "
                                        "does not fit its budget"));
}
END_TEST

/* Two receivers asleep on an empty channel, neither with the budget for what
** comes: the one woken panics and wakes the other, which panics too; the
** value stays for a third. */
START_TEST(a_receiver_that_panics_wakes_the_next_one)
{
    struct sleeper a = {NULL, 0}, b = {NULL, 0};
    init_fixed(64 * KIB);
    a.c = b.c = rt_chan_new(1);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_task *ta = rt_spawn(receives_in_vain, &a);
    wait_asleep(&a);
    rt_task *tb = rt_spawn(receives_in_vain, &b);
    wait_asleep(&b);
    unsigned char *v = rt_alloc_outside(20 * KIB);
    memset(v, 0x3D, 20 * KIB);
    ck_assert_int_eq(rt_send(a.c, v), RT_OK); /* wakes one */
    ck_assert_int_eq(rt_join(ta, NULL), RT_PANICKED);
    ck_assert_int_eq(rt_join(tb, NULL), RT_PANICKED);
    ck_assert_ptr_eq(rt_recv(a.c), v);
    ck_assert(filled(v, 20 * KIB, 0x3D));
    rt_free(v);
    rt_chan_free(a.c);
}
END_TEST

/* ---- many senders, one receiver ------------------------------------------- */

#define SENDERS 8
#define SENT 20000

static rt_chan *crowded;

static void *sends_numbered(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    for (uintptr_t i = 0; i < SENT; i++) {
        uintptr_t *v = rt_alloc_outside(2 * sizeof *v);
        v[0] = me;
        v[1] = i;
        ck_require(rt_send(crowded, v) == RT_OK);
    }
    return NULL;
}

/* Senders and the receiver race for the ring all the time: every value
** arrives once, each sender's in the order it sent them. */
START_TEST(many_senders_into_a_small_channel_lose_nothing)
{
    uintptr_t next[SENDERS] = {0};
    rt_task *t[SENDERS];
    init_fixed(256 * KIB);
    crowded = rt_chan_new(64);
    for (uintptr_t k = 0; k < SENDERS; k++)
        t[k] = rt_spawn(sends_numbered, (void *)k);
    for (unsigned n = 0; n < SENDERS * SENT; n++) {
        uintptr_t *v = rt_recv(crowded);
        ck_require(v != NULL && v[0] < SENDERS);
        ck_require(v[1] == next[v[0]]);
        next[v[0]]++;
        rt_free(v);
    }
    for (int k = 0; k < SENDERS; k++)
        ck_assert_int_eq(rt_join(t[k], NULL), RT_OK);
    rt_chan_close(crowded);
    ck_assert_ptr_null(rt_recv(crowded));
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(crowded);
}
END_TEST

/* ---- 64 tasks in a ring ---------------------------------------------------- */

#define RING 64
#define ROUNDS 150

struct token {
    unsigned id;
    unsigned hops;
    unsigned char fill[RT_CHUNK_SIZE - 2 * sizeof(unsigned)];
};

struct ring {
    rt_chan *inbox[RING];
};

struct member {
    struct ring *ring;
    unsigned index;
};

/* Every 509th byte and the last: cheap enough for every hop. */
static int spot_filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i += 509)
        if (p[i] != v)
            return 0;
    return p[n - 1] == v;
}

static void *ring_member(void *arg)
{
    struct member *m = arg;
    rt_chan *in = m->ring->inbox[m->index], *out = m->ring->inbox[(m->index + 1) % RING];
    for (unsigned r = 0; r < ROUNDS; r++) {
        struct token *t = rt_recv(in);
        ck_require(spot_filled(t->fill, sizeof t->fill, (unsigned char)t->id));
        t->hops++;
        if ((r + m->index) % 7 == 0) { /* now and then a fresh value: an explicit copy */
            struct token *copy = rt_clone_outside(t, sizeof *t);
            rt_free(t);
            t = copy;
        }
        void *scratch = rt_alloc(100 + r);
        rt_free(scratch);
        ck_require(rt_send(out, t) == RT_OK);
    }
    return NULL;
}

START_TEST(sixty_four_tasks_exchanging_values_lose_nothing_and_leak_nothing)
{
    static struct ring ring;
    static struct member members[RING];
    rt_task *tasks[RING];
    unsigned seen[RING] = {0}, hops = 0;

    init_fixed(8192 * KIB); /* main builds the 64 tokens: 4 MiB */
    rt_set_strategy(rt_fixed_strategy(512 * KIB));
    chunks_reset();
    for (unsigned i = 0; i < RING; i++) {
        struct token *t = rt_alloc_outside(sizeof *t);
        ring.inbox[i] = rt_chan_new(2);
        t->id = i;
        t->hops = 0;
        memset(t->fill, (unsigned char)i, sizeof t->fill);
        rt_send(ring.inbox[i], t);
    }
    for (unsigned i = 0; i < RING; i++) {
        members[i] = (struct member){&ring, i};
        tasks[i] = rt_spawn(ring_member, &members[i]);
        ck_require(tasks[i] != NULL);
    }
    for (unsigned i = 0; i < RING; i++)
        ck_require(rt_join(tasks[i], NULL) == RT_OK);
    for (unsigned i = 0; i < RING; i++) {
        rt_chan_close(ring.inbox[i]);
        struct token *t = rt_recv(ring.inbox[i]);
        ck_require(t != NULL);
        ck_require(rt_recv(ring.inbox[i]) == NULL);
        ck_require(filled(t->fill, sizeof t->fill, (unsigned char)t->id));
        seen[t->id]++;
        hops += t->hops;
        rt_free(t);
        rt_chan_free(ring.inbox[i]);
    }
    for (unsigned i = 0; i < RING; i++)
        ck_require(seen[i] == 1); /* every token once: nothing lost or doubled */
    ck_assert_uint_eq(hops, RING * ROUNDS);
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_gt(n.mallocs, RING);
    ck_assert_uint_eq(n.frees, n.mallocs); /* every value built was freed */
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* ---- a ring that wraps ------------------------------------------------------ */

/* The ring's slots are reused round and round: each value keeps its own
** bytes, its place in the order and its sender whatever slot it lands in,
** at every capacity and every head the ring can have. A value of size i
** is told apart from its neighbours by its bytes. */
enum { WRAP_VALUES = 23 };

static size_t wrap_size(int i)
{
    return 40 + 16 * (size_t)i + (size_t)(i % 3); /* no two alike */
}

struct wrapper {
    rt_chan *c, *done;
    size_t held_at_end;
};

static void *sends_sizes(void *arg)
{
    struct wrapper *w = arg;
    for (int i = 0; i < WRAP_VALUES; i++) {
        unsigned char *v = rt_alloc_outside(wrap_size(i));
        memset(v, i + 1, wrap_size(i));
        ck_require(rt_send(w->c, v) == RT_OK); /* blocks while the ring is full */
    }
    rt_free(rt_recv(w->done)); /* main took them all */
    w->held_at_end = rt_held();
    return NULL;
}

START_TEST(a_ring_that_wraps_keeps_each_values_bytes_order_and_sender)
{
    static const size_t capacities[] = {1, 2, 3, 5, 7};

    init_fixed(64 * KIB);
    for (size_t k = 0; k < sizeof capacities / sizeof capacities[0]; k++) {
        size_t cap = capacities[k], sum = 0;
        /* a task sends, main receives: the ring wraps WRAP_VALUES / cap times */
        struct wrapper w = {rt_chan_new(cap), rt_chan_new(1), SIZE_MAX};
        unsigned char *got[WRAP_VALUES];
        rt_task *t = rt_spawn(sends_sizes, &w);
        ck_assert_ptr_nonnull(t);
        for (int i = 0; i < WRAP_VALUES; i++) {
            got[i] = rt_recv(w.c);
            ck_require(got[i] != NULL);
            ck_require(filled(got[i], wrap_size(i), (unsigned char)(i + 1)));
            sum += wrap_size(i);
            ck_assert_msg(rt_held() == sum, "capacity %zu, value %d: main holds %zu, not %zu",
                          cap, i, rt_held(), sum);
        }
        ck_assert_int_eq(rt_send(w.done, rt_alloc_outside(1)), RT_OK);
        ck_assert_int_eq(rt_join(t, NULL), RT_OK);
        ck_assert_msg(w.held_at_end == 0, "capacity %zu: the sender still counts %zu", cap,
                      w.held_at_end);
        for (int i = 0; i < WRAP_VALUES; i++) {
            rt_free(got[i]);
            sum -= wrap_size(i);
            ck_require(rt_held() == sum); /* each freed with its own bytes */
        }

        /* main alone, the head moved round: sends and receives in steps of
        ** one to cap, so that the values are queued from every slot */
        for (int step = 1; step <= (int)cap; step++) {
            int sent = 0, taken = 0;
            unsigned char *v[WRAP_VALUES];
            for (int round = 0; round < 3 && sent + step <= WRAP_VALUES; round++) {
                for (int j = 0; j < step; j++, sent++) {
                    v[sent] = memset(rt_alloc_outside(wrap_size(sent)), sent + 1,
                                     wrap_size(sent));
                    ck_require(rt_send(w.c, v[sent]) == RT_OK);
                }
                for (int j = 0; j < step; j++, taken++) {
                    ck_require(rt_recv(w.c) == v[taken]);
                    rt_free(v[taken]);
                }
            }
            ck_require(rt_held() == 0);
        }
        rt_chan_free(w.c);
        rt_chan_free(w.done);
    }
    ck_assert_uint_eq(rt_held(), 0);
}
END_TEST

/* rt_chan_free frees the values still queued, wherever the head stands,
** and only those: the values received before stay the receiver's, whole,
** and the sender stops counting exactly the queued ones. Values of a chunk
** each, so the shim tells which were freed. */
START_TEST(freeing_a_wrapped_channel_frees_exactly_what_is_queued)
{
    static const size_t capacities[] = {2, 3, 4, 5};

    init_fixed(1024 * KIB);
    for (size_t k = 0; k < sizeof capacities / sizeof capacities[0]; k++) {
        size_t cap = capacities[k];
        for (size_t head = 1; head < cap; head++)
            for (size_t q = 1; q <= cap; q++) {
                rt_chan *c = rt_chan_new(cap);
                unsigned char *kept[5], *queued[5];
                for (size_t i = 0; i < head; i++) { /* moves the head on by head */
                    kept[i] = memset(rt_alloc_outside(RT_CHUNK_SIZE), 0x50 + (int)i,
                                     RT_CHUNK_SIZE);
                    ck_assert_int_eq(rt_send(c, kept[i]), RT_OK);
                    ck_assert_ptr_eq(rt_recv(c), kept[i]);
                }
                for (size_t i = 0; i < q; i++) { /* from the head on, past the end */
                    queued[i] = rt_alloc_outside(RT_CHUNK_SIZE);
                    ck_assert_int_eq(rt_send(c, queued[i]), RT_OK);
                }
                ck_assert_uint_eq(rt_held(), (head + q) * RT_CHUNK_SIZE);
                chunks_reset();
                rt_chan_free(c);
                ck_assert_msg(chunks_counted().frees == q,
                              "capacity %zu, head %zu, %zu queued: %lu freed", cap, head, q,
                              chunks_counted().frees);
                for (size_t i = 0; i < q; i++)
                    ck_assert(!chunk_live(queued[i]));
                ck_assert_uint_eq(rt_held(), head * RT_CHUNK_SIZE);
                for (size_t i = 0; i < head; i++) {
                    ck_assert_msg(chunk_live(kept[i]), "capacity %zu, head %zu, %zu queued: "
                                  "received value %zu freed with the channel", cap, head, q, i);
                    ck_assert(filled(kept[i], RT_CHUNK_SIZE, (unsigned char)(0x50 + i)));
                    rt_free(kept[i]);
                }
                ck_assert_uint_eq(rt_held(), 0);
            }
    }
}
END_TEST


/* ---- exact figures across tasks (tw14c) ------------------------------------ */

/* A receiver refused a value (its budget cannot take it) leaves the channel
** as full as it was: a sender waiting for room goes on waiting (rt_send
** "blocks while full"), and the next receive that takes the head makes the
** room it sends into. Figures exact on main, the one receiving. */
struct waiting_sender {
    rt_chan *c;
    pid_t tid;
    int sent;       /* 1 once rt_send returned, with its status in status */
    rt_status status;
    size_t held_before; /* its held figure right before the send */
};

static void *sends_100_into_a_full_channel(void *arg)
{
    struct waiting_sender *w = arg;
    unsigned char *v = rt_alloc_outside(100);
    memset(v, 0x5A, 100);
    w->held_before = rt_held();
    __atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
    w->status = rt_send(w->c, v);
    __atomic_store_n(&w->sent, 1, __ATOMIC_RELEASE);
    return NULL;
}

START_TEST(a_receiver_refused_on_a_full_channel_leaves_the_waiting_sender_waiting)
{
    struct waiting_sender w = {0};
    struct sleeper r = {NULL, 0};
    init_fixed(64 * KIB);
    w.c = r.c = rt_chan_new(1);
    unsigned char *big = rt_alloc_outside(20 * KIB);
    memset(big, 0x3D, 20 * KIB);
    ck_assert_int_eq(rt_send(w.c, big), RT_OK); /* full */
    rt_task *ts = rt_spawn(sends_100_into_a_full_channel, &w);
    ck_assert_ptr_nonnull(ts);
    while (__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE) == 0)
        sched_yield();
    thread_wait_asleep(w.tid); /* in rt_send, waiting for room */
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    rt_task *tr = rt_spawn(receives_in_vain, &r); /* 20 KiB into 16: refused */
    ck_assert_ptr_nonnull(tr);
    ck_assert_int_eq(rt_join(tr, NULL), RT_PANICKED);
    thread_wait_asleep(w.tid); /* a wakeup, if any, found no room again */
    ck_assert_int_eq(__atomic_load_n(&w.sent, __ATOMIC_ACQUIRE), 0);
    ck_assert_uint_eq(rt_held(), 20 * KIB); /* still in flight, still main's */
    ck_assert_ptr_eq(rt_recv(w.c), big);    /* the head, where the refusal left it */
    ck_assert(filled(big, 20 * KIB, 0x3D));
    ck_assert_uint_eq(rt_held(), 20 * KIB); /* its own value: no second charge */
    unsigned char *v = rt_recv(w.c);        /* the room made let the sender in */
    ck_assert_int_eq(rt_join(ts, NULL), RT_OK);
    ck_assert_int_eq(w.sent, 1);
    ck_assert_int_eq(w.status, RT_OK);
    ck_assert_uint_eq(w.held_before, 100);
    ck_assert(v != NULL && filled(v, 100, 0x5A));
    ck_assert_uint_eq(rt_held(), 20 * KIB + 100);
    rt_free(v);
    rt_free(big);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    rt_chan_free(w.c);
}
END_TEST

/* rt_chan_free frees the values still queued, and they stop counting
** against their senders ("against nobody" once freed: the sender no longer
** holds them): a sender still running, on another thread, sees its held
** figure drop by exactly the bytes of its queued values, while a value it
** holds and never sent stays counted. Two senders at once, and main's own
** value queued between theirs. */
struct queued_sender {
    rt_chan *c;
    pthread_barrier_t *sent, *freed;
    size_t bytes[3];
    size_t kept;              /* a value it holds and never sends */
    size_t held_after_send, held_after_free;
};

static void *sends_three_and_waits_for_the_free(void *arg)
{
    struct queued_sender *q = arg;
    void *keep = rt_alloc_outside(q->kept);
    for (int i = 0; i < 3; i++)
        ck_require(rt_send(q->c, rt_alloc_outside(q->bytes[i])) == RT_OK);
    q->held_after_send = rt_held(); /* nobody receives from c */
    pthread_barrier_wait(q->sent);
    pthread_barrier_wait(q->freed); /* main freed c */
    q->held_after_free = rt_held();
    rt_free(keep);
    return NULL;
}

START_TEST(freeing_a_channel_gives_each_running_sender_back_exactly_its_queued_bytes)
{
    pthread_barrier_t sent, freed;
    struct queued_sender q[2];
    rt_task *t[2];
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(8);
    pthread_barrier_init(&sent, NULL, 3);
    pthread_barrier_init(&freed, NULL, 3);
    for (int k = 0; k < 2; k++) {
        q[k] = (struct queued_sender){.c = c, .sent = &sent, .freed = &freed,
                                      .bytes = {1 + 100 * (size_t)k, 777, 4096 + (size_t)k},
                                      .kept = 50 + (size_t)k};
        t[k] = rt_spawn(sends_three_and_waits_for_the_free, &q[k]);
        ck_assert_ptr_nonnull(t[k]);
    }
    ck_assert_int_eq(rt_send(c, rt_alloc_outside(300)), RT_OK);
    pthread_barrier_wait(&sent);
    ck_assert_uint_eq(rt_held(), 300);
    rt_chan_free(c);
    ck_assert_uint_eq(rt_held(), 0); /* main's own queued value too */
    pthread_barrier_wait(&freed);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(rt_join(t[k], NULL), RT_OK);
        ck_assert_uint_eq(q[k].held_after_send,
                          q[k].kept + q[k].bytes[0] + q[k].bytes[1] + q[k].bytes[2]);
        ck_assert_uint_eq(q[k].held_after_free, q[k].kept);
    }
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    pthread_barrier_destroy(&sent);
    pthread_barrier_destroy(&freed);
}
END_TEST

/* A value outlives two tasks on its way: made by one that ends, received
** by a second that sends it on and then panics, received by main. At each
** hop its bytes count against exactly the task that holds it (or in
** flight, against its last sender until received), the panic frees what
** the second still holds and not the value it sent, and main reads every
** byte. Figures taken by the second task itself, exact at each step. */
struct relay {
    rt_chan *in, *out;
    size_t held[5];
};

#define RELAYED 3000
#define RELAY_KEPT 200

static void *makes_the_value_and_ends(void *arg)
{
    struct relay *x = arg;
    unsigned char *v = rt_alloc_outside(RELAYED);
    memset(v, 0x6B, RELAYED);
    ck_require(rt_send(x->in, v) == RT_OK);
    return NULL;
}

static void *relays_and_panics(void *arg)
{
    struct relay *x = arg;
    x->held[0] = rt_held();
    void *kept = rt_alloc_outside(RELAY_KEPT); /* still held at the panic */
    (void)kept;
    x->held[1] = rt_held();
    unsigned char *v = rt_recv(x->in); /* its maker has ended */
    x->held[2] = rt_held();
    ck_require(v != NULL && filled(v, RELAYED, 0x6B));
    ck_require(rt_send(x->out, v) == RT_OK);
    x->held[3] = rt_held(); /* in flight: still this task's */
    x->held[4] = 1;
    rt_panic("after relaying");
}

/* One relay, main's strategy 64 KiB; everything made is gone at its end.
** Returns the first step that was not as the contract says, 0 if none:
** no ck_assert inside, as Check's asserts allocate (testutil.h). */
static int relay_once(void)
{
    struct relay x = {0};
    int failed_at = 0;
#define RELAY_CHECK(cond, step)                                                \
    do {                                                                       \
        if (!(cond) && failed_at == 0)                                         \
            failed_at = (step);                                                \
    } while (0)
    x.in = rt_chan_new(1);
    x.out = rt_chan_new(1);
    rt_task *maker = rt_spawn(makes_the_value_and_ends, &x);
    RELAY_CHECK(rt_join(maker, NULL) == RT_OK, 1);
    RELAY_CHECK(rt__blocks_live() == 1, 2); /* the maker's block is gone */
    rt_set_strategy(rt_fixed_strategy(8 * KIB));
    rt_task *relayer = rt_spawn(relays_and_panics, &x);
    rt_set_strategy(rt_fixed_strategy(64 * KIB));
    RELAY_CHECK(rt_join(relayer, NULL) == RT_PANICKED, 3);
    RELAY_CHECK(x.held[0] == 0, 4);
    RELAY_CHECK(x.held[1] == RELAY_KEPT, 5);
    RELAY_CHECK(x.held[2] == RELAY_KEPT + RELAYED, 6);
    RELAY_CHECK(x.held[3] == RELAY_KEPT + RELAYED, 7); /* in flight: still its own */
    RELAY_CHECK(x.held[4] == 1, 8);
    RELAY_CHECK(rt__blocks_live() == 1, 9);
    RELAY_CHECK(rt_held() == 0, 10);
    unsigned char *v = rt_recv(x.out);
    RELAY_CHECK(v != NULL && filled(v, RELAYED, 0x6B), 11);
    RELAY_CHECK(rt_held() == RELAYED, 12);
    rt_free(v);
    RELAY_CHECK(rt_held() == 0, 13);
    rt_chan_free(x.in);
    rt_chan_free(x.out);
#undef RELAY_CHECK
    return failed_at;
}

/* The second relay leaves allocated exactly what the first left (main's
** table, made once and kept): the relayer's kept value, block and record,
** the maker's record the queued value kept, the value and the channels
** all went. */
START_TEST(a_value_relayed_by_a_task_that_then_panics_reaches_the_next_receiver_whole)
{
    init_fixed(64 * KIB);
    int first = relay_once();
    long before = allocs_live();
    int second = relay_once();
    long after = allocs_live();
    ck_assert_msg(first == 0, "first relay: step %d", first);
    ck_assert_msg(second == 0, "second relay: step %d", second);
    ck_assert_int_eq(after, before);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
}
END_TEST

/* Races of sends, receives, a panicking sender, a receiver refused a value
** and a close, between ten tasks and main; afterwards every figure is
** exact. Four senders send RACE_SENT numbered values each (17 to 113
** bytes), the first panicking halfway with one value unsent; main sends one
** of its own first. Four receivers take values until the channel is closed
** and empty, keep every third and forward the others to main on a second
** channel nobody reads until all are joined: each receiver's held figure
** is, after every step, exactly what it keeps plus what it forwarded (in
** flight, still its own). A fifth receiver, whose budget is full but for
** 16 bytes, is refused whatever it is offered: it panics with the value at
** the head (nothing lost), or sees the channel closed and empty. Every
** value sent is seen by exactly one receiver, once; main then holds
** exactly the forwarded bytes, and after it frees them nothing is left. */
#define RACE_SENDERS 4
#define RACE_RECEIVERS 4
#define RACE_SENT 200

struct race {
    rt_chan *c, *forward;
    /* seen[k][i]: the receiver (1 + its index) that took sender k's value
    ** i; row RACE_SENDERS is main's one value. Each element written by one
    ** receiver at most, read by main after the joins. */
    unsigned char seen[RACE_SENDERS + 1][RACE_SENT];
};

static struct race race;

static size_t race_bytes(size_t k, size_t i)
{
    return 17 + (k * RACE_SENT + i) % 97;
}

/* A value: its bytes all (k << 8 | i) mod 251 + 1, read back whole. */
static unsigned char race_fill(size_t k, size_t i)
{
    return (unsigned char)((k << 8 | i) % 251 + 1);
}

static void *race_value(size_t k, size_t i)
{
    unsigned char *v = rt_alloc_outside(race_bytes(k, i));
    memset(v, race_fill(k, i), race_bytes(k, i));
    v[0] = (unsigned char)k;
    v[1] = (unsigned char)i;
    v[2] = (unsigned char)(i >> 8);
    return v;
}

static void *race_sends(void *arg)
{
    size_t k = (size_t)(uintptr_t)arg;
    for (size_t i = 0; i < RACE_SENT; i++) {
        void *v = race_value(k, i);
        if (k == 0 && i == RACE_SENT / 2)
            rt_panic("a sender panics halfway"); /* v, unsent, is freed */
        ck_require(rt_send(race.c, v) == RT_OK);
    }
    return NULL;
}

struct race_receiver {
    int index;
    size_t kept, forwarded, received;
    int failed_at; /* 0: every figure as the contract says */
};

static void *race_receives(void *arg)
{
    struct race_receiver *r = arg;
    unsigned char *v;
    while ((v = rt_recv(race.c)) != NULL) {
        size_t k = v[0], i = (size_t)v[1] | (size_t)v[2] << 8;
        size_t n = k <= RACE_SENDERS && i < RACE_SENT ? race_bytes(k, i) : 0;
        if (n == 0 || !filled(v + 3, n - 3, race_fill(k, i)) || race.seen[k][i] != 0) {
            r->failed_at = r->failed_at ? r->failed_at : 1;
            break;
        }
        race.seen[k][i] = (unsigned char)(1 + r->index);
        r->received++;
        if (rt_held() != r->kept + r->forwarded + n && !r->failed_at)
            r->failed_at = 2;
        if (r->received % 3 == 0) {
            r->kept += n; /* kept until the task ends */
        } else {
            if (rt_send(race.forward, v) != RT_OK && !r->failed_at)
                r->failed_at = 3;
            r->forwarded += n;
        }
        if (rt_held() != r->kept + r->forwarded && !r->failed_at)
            r->failed_at = 4;
    }
    return NULL;
}

static void *race_refused(void *arg)
{
    struct race_receiver *r = arg;
    (void)rt_alloc_outside(rt_budget() - 16);
    r->received = rt_recv(race.c) != NULL; /* every value is 17 bytes or more */
    return NULL;
}

START_TEST(every_figure_is_exact_after_sends_receives_panics_refusals_and_a_close_race)
{
    struct race_receiver r[RACE_RECEIVERS + 1];
    rt_task *senders[RACE_SENDERS], *receivers[RACE_RECEIVERS + 1];
    init_fixed(256 * KIB);
    memset(&race, 0, sizeof race);
    race.c = rt_chan_new(4);
    race.forward = rt_chan_new(RACE_SENDERS * RACE_SENT + 1);
    ck_assert_int_eq(rt_send(race.c, race_value(RACE_SENDERS, 0)), RT_OK);
    ck_assert_uint_eq(rt_held(), race_bytes(RACE_SENDERS, 0));
    rt_set_strategy(rt_fixed_strategy(2 * KIB));
    r[RACE_RECEIVERS] = (struct race_receiver){.index = RACE_RECEIVERS};
    receivers[RACE_RECEIVERS] = rt_spawn(race_refused, &r[RACE_RECEIVERS]);
    rt_set_strategy(rt_fixed_strategy(256 * KIB));
    for (int j = 0; j < RACE_RECEIVERS; j++) {
        r[j] = (struct race_receiver){.index = j};
        receivers[j] = rt_spawn(race_receives, &r[j]);
    }
    for (uintptr_t k = 0; k < RACE_SENDERS; k++)
        senders[k] = rt_spawn(race_sends, (void *)k);
    for (int k = 0; k < RACE_SENDERS; k++)
        ck_assert_int_eq(rt_join(senders[k], NULL), k == 0 ? RT_PANICKED : RT_OK);
    rt_chan_close(race.c); /* receivers may be asleep on it, or taking the last values */
    for (int j = 0; j < RACE_RECEIVERS; j++) {
        ck_assert_int_eq(rt_join(receivers[j], NULL), RT_OK);
        ck_assert_msg(r[j].failed_at == 0, "receiver %d: check %d", j, r[j].failed_at);
    }
    rt_status refused = rt_join(receivers[RACE_RECEIVERS], NULL);
    ck_assert_uint_eq(r[RACE_RECEIVERS].received, 0);
    ck_assert(refused == RT_PANICKED || refused == RT_OK);
    /* every value sent seen once, by a receiver that kept it or forwarded it */
    size_t seen = 0, forwarded = 0, received = 0, forwarded_count = 0;
    for (size_t k = 0; k <= RACE_SENDERS; k++)
        for (size_t i = 0; i < RACE_SENT; i++) {
            size_t sent = k == RACE_SENDERS ? i == 0 : k == 0 ? i < RACE_SENT / 2 : 1;
            ck_require((race.seen[k][i] != 0) == (sent != 0));
            ck_require(race.seen[k][i] <= RACE_RECEIVERS);
            seen += sent;
        }
    for (int j = 0; j < RACE_RECEIVERS; j++) {
        forwarded += r[j].forwarded;
        received += r[j].received;
        forwarded_count += r[j].received - r[j].received / 3;
    }
    ck_assert_uint_eq(seen, (RACE_SENDERS - 1) * RACE_SENT + RACE_SENT / 2 + 1);
    ck_assert_uint_eq(received, seen);
    /* main's own value was received: it counts against main no more */
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_uint_eq(rt__tasks_unjoined(), 0);
    /* the forwarded values, from ended receivers: main's now */
    rt_chan_close(race.forward);
    size_t got = 0;
    unsigned char *v;
    void **all = malloc(seen * sizeof *all);
    size_t count = 0;
    while ((v = rt_recv(race.forward)) != NULL) {
        size_t k = v[0], i = (size_t)v[1] | (size_t)v[2] << 8;
        got += race_bytes(k, i);
        ck_require(rt_held() == got);
        all[count++] = v;
    }
    ck_assert_uint_eq(got, forwarded);
    ck_assert_uint_eq(count, forwarded_count);
    for (size_t i = 0; i < count; i++)
        rt_free(all[i]);
    free(all);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(race.c);
    rt_chan_free(race.forward);
}
END_TEST


/* Each wakeup, one at a time: two receivers asleep on an empty channel;
** one send lets exactly one of them return, with the value and its bytes
** counted against it, while the other goes on waiting (the channel is not
** closed: it does not return NULL); a second send lets the other in. Then
** the mirror: two senders asleep on a full channel; one receive lets
** exactly one of them in, the other still waits; the next receive gets the
** value that was queued first, then the one that got in. */
struct one_waiter {
    rt_chan *c;
    pid_t tid;
    void *value;     /* a sender's value; what a receiver got */
    size_t held;     /* a receiver's figure right after its receive */
    rt_status status; /* a sender's */
    int done;
    pthread_mutex_t *lock;
    pthread_cond_t *cond;
};

static void mark_done(struct one_waiter *w)
{
    pthread_mutex_lock(w->lock);
    w->done = 1;
    pthread_cond_broadcast(w->cond);
    pthread_mutex_unlock(w->lock);
}

static void *waits_to_receive(void *arg)
{
    struct one_waiter *w = arg;
    __atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
    w->value = rt_recv(w->c);
    w->held = rt_held();
    mark_done(w);
    return w->value; /* to main, counted there after the join */
}

static void *waits_to_send(void *arg)
{
    struct one_waiter *w = arg;
    w->value = rt_alloc_outside(64);
    memset(w->value, 0x64, 64);
    __atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
    w->status = rt_send(w->c, w->value);
    mark_done(w);
    return NULL;
}

/* Waits until one of the two is done; returns its index. */
static int one_is_done(struct one_waiter w[2])
{
    pthread_mutex_lock(w[0].lock);
    while (!w[0].done && !w[1].done)
        pthread_cond_wait(w[0].cond, w[0].lock);
    int first = w[0].done ? 0 : 1, both = w[0].done && w[1].done;
    pthread_mutex_unlock(w[0].lock);
    ck_assert_msg(!both, "one value, or one slot, let both waiters return");
    return first;
}

static void both_asleep(struct one_waiter w[2])
{
    for (int i = 0; i < 2; i++) {
        pid_t tid;
        while ((tid = __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE)) == 0)
            sched_yield();
        thread_wait_asleep(tid);
    }
}

START_TEST(each_send_or_receive_wakes_exactly_one_waiter_on_the_other_side)
{
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    init_fixed(64 * KIB);

    /* receivers on an empty channel */
    struct one_waiter r[2];
    rt_task *tr[2];
    rt_chan *empty = rt_chan_new(2);
    for (int i = 0; i < 2; i++) {
        r[i] = (struct one_waiter){.c = empty, .lock = &lock, .cond = &cond};
        tr[i] = rt_spawn(waits_to_receive, &r[i]);
        ck_assert_ptr_nonnull(tr[i]);
    }
    both_asleep(r);
    unsigned char *a = rt_alloc_outside(111), *b = rt_alloc_outside(222);
    memset(a, 0xAA, 111);
    memset(b, 0xBB, 222);
    ck_assert_int_eq(rt_send(empty, a), RT_OK);
    int first = one_is_done(r), second = 1 - first;
    thread_wait_asleep(r[second].tid); /* still in rt_recv */
    pthread_mutex_lock(&lock);
    int second_done = r[second].done;
    pthread_mutex_unlock(&lock);
    ck_assert_int_eq(second_done, 0);
    ck_assert_uint_eq(rt_held(), 222); /* a is the first receiver's now */
    ck_assert_int_eq(rt_send(empty, b), RT_OK);
    void *res[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(rt_join(tr[i], &res[i]), RT_OK);
    ck_assert_ptr_eq(r[first].value, a);
    ck_assert_uint_eq(r[first].held, 111);
    ck_assert_ptr_eq(r[second].value, b);
    ck_assert_uint_eq(r[second].held, 222);
    ck_assert(filled(a, 111, 0xAA) && filled(b, 222, 0xBB));
    ck_assert_uint_eq(rt_held(), 333); /* both results, joined */
    rt_free(res[0]);
    rt_free(res[1]);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(empty);

    /* senders on a full channel */
    struct one_waiter s[2];
    rt_task *ts[2];
    rt_chan *full = rt_chan_new(1);
    unsigned char *queued = rt_alloc_outside(10);
    ck_assert_int_eq(rt_send(full, queued), RT_OK);
    for (int i = 0; i < 2; i++) {
        s[i] = (struct one_waiter){.c = full, .lock = &lock, .cond = &cond};
        ts[i] = rt_spawn(waits_to_send, &s[i]);
        ck_assert_ptr_nonnull(ts[i]);
    }
    both_asleep(s);
    ck_assert_ptr_eq(rt_recv(full), queued); /* makes room for one */
    first = one_is_done(s);
    second = 1 - first;
    thread_wait_asleep(s[second].tid); /* still in rt_send */
    pthread_mutex_lock(&lock);
    second_done = s[second].done;
    pthread_mutex_unlock(&lock);
    ck_assert_int_eq(second_done, 0);
    ck_assert_int_eq(s[first].status, RT_OK);
    ck_assert_ptr_eq(rt_recv(full), s[first].value); /* the one that got in */
    ck_assert_uint_eq(rt_held(), 10 + 64);
    ck_assert_ptr_eq(rt_recv(full), s[second].value); /* the room let the other in */
    ck_assert_uint_eq(rt_held(), 10 + 128);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(rt_join(ts[i], NULL), RT_OK);
    ck_assert_int_eq(s[second].status, RT_OK);
    ck_assert(filled(s[0].value, 64, 0x64) && filled(s[1].value, 64, 0x64));
    rt_free(queued);
    rt_free(s[0].value);
    rt_free(s[1].value);
    ck_assert_uint_eq(rt_held(), 0);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    rt_chan_free(full);
}
END_TEST


/* A closed channel still gives what it has (NULL only "once the channel is
** closed and empty"), and a receiver whose budget cannot take its head
** panics there as on an open one: the value stays at the head, the next
** receiver gets it, and only then is it NULL. The sender, main, counts the
** value until then, and not twice once it has it back. */
static void *receives_from_a_closed_channel(void *arg)
{
    return rt_recv(arg); /* 20 KiB into 16: panics here */
}

START_TEST(a_refused_receiver_of_a_closed_channel_leaves_the_head_for_the_next)
{
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    unsigned char *big = rt_alloc_outside(20 * KIB), *small = rt_alloc_outside(30);
    memset(big, 0x2B, 20 * KIB);
    memset(small, 0x2C, 30);
    ck_assert_int_eq(rt_send(c, big), RT_OK);
    ck_assert_int_eq(rt_send(c, small), RT_OK);
    rt_chan_close(c);
    rt_set_strategy(rt_fixed_strategy(16 * KIB));
    for (int i = 0; i < 2; i++) /* refused twice: nothing moves */
        ck_assert_int_eq(rt_join(rt_spawn(receives_from_a_closed_channel, c), NULL),
                         RT_PANICKED);
    ck_assert_uint_eq(rt_held(), 20 * KIB + 30);
    ck_assert_uint_eq(rt__blocks_live(), 1);
    ck_assert_ptr_eq(rt_recv(c), big);
    ck_assert(filled(big, 20 * KIB, 0x2B));
    ck_assert_uint_eq(rt_held(), 20 * KIB + 30);
    /* the second value fits a 16 KiB receiver: it moves there */
    void *got = NULL;
    ck_assert_int_eq(rt_join(rt_spawn(receives_from_a_closed_channel, c), &got), RT_OK);
    ck_assert_ptr_eq(got, small);
    ck_assert(filled(small, 30, 0x2C));
    ck_assert_uint_eq(rt_held(), 20 * KIB + 30); /* sent, received, joined back */
    ck_assert_ptr_null(rt_recv(c));
    void *none = (void *)1;
    ck_assert_int_eq(rt_join(rt_spawn(receives_from_a_closed_channel, c), &none), RT_OK);
    ck_assert_ptr_null(none); /* closed and empty */
    rt_free(big);
    rt_free(small);
    ck_assert_uint_eq(rt_held(), 0);
    rt_chan_free(c);
}
END_TEST

/* ---- misuse ---------------------------------------------------------------- */

static void *plain_thread_sends(void *c)
{
    rt_send(c, NULL);
    return NULL;
}

static void send_from_a_plain_thread(void *unused)
{
    (void)unused;
    pthread_t t;
    rt_init();
    rt_chan *c = rt_chan_new(1);
    pthread_create(&t, NULL, plain_thread_sends, c);
    pthread_join(t, NULL);
}

static void send_an_unheld_value(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_send(rt_chan_new(1), malloc(8));
}

static void send_twice(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(2);
    void *v = rt_alloc_outside(8);
    rt_send(c, v);
    fputs("the second send\n", stderr); /* the violation is the second call's */
    rt_send(c, v); /* no longer held */
}

static void send_null(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_alloc_outside(8); /* a table with something in it */
    rt_send(rt_chan_new(1), NULL);
}

static void recv_on_null(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_recv(NULL);
}

static void send_on_null(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    rt_send(NULL, rt_alloc_outside(8));
}

static void close_null(void *unused)
{
    (void)unused;
    rt_chan_close(NULL);
}

static void chan_of_nothing(void *unused)
{
    (void)unused;
    rt_chan_new(0);
}

/* A value the task does not hold is the violation at once, in every state
** of the channel: with room, full (no wait first), closed, closed with
** values in it; whatever it is: a malloc'ed pointer, a value sent already,
** NULL. alarm() makes a send that waits die of SIGALRM. */
enum { CH_ROOM, CH_FULL, CH_CLOSED, CH_CLOSED_FULL, CH_STATES };
enum { UNHELD_MALLOC, UNHELD_SENT, UNHELD_NULL, UNHELD_KINDS };

static void send_unheld_in_state(void *arg)
{
    int state = (int)(intptr_t)arg % CH_STATES, kind = (int)(intptr_t)arg / CH_STATES;
    die_of_alarm_after(3);
    init_fixed(64 * KIB);
    rt_chan *c = rt_chan_new(1), *other = rt_chan_new(1);
    void *sent = rt_alloc_outside(8);
    if (rt_send(other, sent) != RT_OK)
        _exit(3);
    if (state == CH_FULL || state == CH_CLOSED_FULL)
        if (rt_send(c, rt_alloc_outside(8)) != RT_OK)
            _exit(4);
    if (state == CH_CLOSED || state == CH_CLOSED_FULL)
        rt_chan_close(c);
    void *const values[] = {malloc(8), sent, NULL};
    rt_send(c, values[kind]);
    _exit(5); /* returned */
}

START_TEST(an_unheld_value_is_a_violation_in_every_state_of_the_channel)
{
    static const char *const states[] = {"with room", "full", "closed", "closed and full"};
    static const char *const kinds[] = {"a malloc'ed pointer", "a value sent already", "NULL"};
    for (int kind = 0; kind < UNHELD_KINDS; kind++)
        for (int state = 0; state < CH_STATES; state++) {
            struct death d = run_child(send_unheld_in_state,
                                       (void *)(intptr_t)(kind * CH_STATES + state));
            ck_assert_msg(d.signal == SIGABRT &&
                              strstr(d.err, "is not an outside value this task holds") != NULL,
                          "%s sent on a channel %s: signal %d (SIGALRM %d: it waited), exit %d "
                          "(5: it returned): %s",
                          kinds[kind], states[state], d.signal, SIGALRM, d.exit_status, d.err);
        }
}
END_TEST

/* A NULL channel is named first (docs/misuse.md: "channel is NULL"),
** whatever the other argument and wherever the call is made: before
** rt_init, on main, on a task, on a plain thread; rt_send with an outside
** value the task holds, a block value (which a real channel refuses), a
** pointer the task does not hold and NULL; rt_recv and rt_chan_close too.
** The case is (call * 4 + where) for rt_recv and rt_chan_close, and
** (8 + value * 4 + where) for rt_send. */
enum { NULL_CH_BEFORE_INIT, NULL_CH_MAIN, NULL_CH_TASK, NULL_CH_THREAD, NULL_CH_WHERE };
enum { NULL_CH_HELD, NULL_CH_BLOCK, NULL_CH_UNHELD, NULL_CH_NOTHING, NULL_CH_VALUES };

static void *null_channel_call(void *arg)
{
    int c = (int)(intptr_t)arg;
    if (c < 4)
        rt_recv(NULL);
    else if (c < 8)
        rt_chan_close(NULL);
    else {
        int where = c % NULL_CH_WHERE, value = (c - 8) / NULL_CH_WHERE;
        bool task = where == NULL_CH_MAIN || where == NULL_CH_TASK;
        void *v = value == NULL_CH_HELD && task  ? rt_alloc_outside(8)
                  : value == NULL_CH_BLOCK && task ? rt_alloc(8)
                  : value == NULL_CH_NOTHING       ? NULL
                                                   : malloc(8);
        rt_send(NULL, v);
    }
    _exit(5); /* returned */
}

static void null_channel_in_place(void *arg)
{
    int where = (int)(intptr_t)arg % NULL_CH_WHERE;
    if (where != NULL_CH_BEFORE_INIT)
        init_fixed(64 * KIB);
    if (where == NULL_CH_TASK) {
        rt_task *t = rt_spawn(null_channel_call, arg);
        rt_join(t, NULL);
        _exit(6); /* the task ended */
    }
    if (where == NULL_CH_THREAD) {
        pthread_t th;
        if (pthread_create(&th, NULL, null_channel_call, arg) == 0)
            pthread_join(th, NULL);
        _exit(7);
    }
    null_channel_call(arg);
}

START_TEST(a_null_channel_is_named_first_whatever_is_sent_and_wherever)
{
    static const char *const wheres[] = {"before rt_init", "on main", "on a task",
                                         "on a plain thread"};
    static const char *const values[] = {"a held outside value", "a block value",
                                         "an unheld pointer", "NULL"};
    for (int c = 0; c < 8 + NULL_CH_VALUES * NULL_CH_WHERE; c++) {
        const char *call = c < 4 ? "rt_recv" : c < 8 ? "rt_chan_close" : "rt_send";
        char want[64];
        snprintf(want, sizeof want, "refrt: %s: channel is NULL\n", call);
        struct death d = run_child(null_channel_in_place, (void *)(intptr_t)c);
        ck_assert_msg(d.signal == SIGABRT && strstr(d.err, want) != NULL,
                      "%s(NULL%s%s) %s: signal %d exit %d (5: it returned); stderr: %s", call,
                      c < 8 ? "" : ", ", c < 8 ? "" : values[(c - 8) / NULL_CH_WHERE],
                      wheres[c % NULL_CH_WHERE], d.signal, d.exit_status, d.err);
    }
}
END_TEST

START_TEST(channel_misuse_gets_the_contracts_error)
{
    ck_assert_violation(chan_of_nothing, NULL, "refrt: rt_chan_new: capacity is 0");
    ck_assert_violation(send_from_a_plain_thread, NULL,
                        "refrt: rt_send: this thread is not a task");
    ck_assert_violation(send_an_unheld_value, NULL,
                        "is not an outside value this task holds");
    ck_assert_violation(send_twice, NULL, "the second send\nrefrt: rt_send: 0x");
    ck_assert_violation(send_twice, NULL, "is not an outside value this task holds\n");
    ck_assert_violation(send_null, NULL, "refrt: rt_send: (nil) is not an outside value");
    ck_assert_violation(recv_on_null, NULL, "refrt: rt_recv: channel is NULL");
    ck_assert_violation(send_on_null, NULL, "refrt: rt_send: channel is NULL\n");
    ck_assert_violation(close_null, NULL, "refrt: rt_chan_close: channel is NULL\n");
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("chan");
    suite_add_test(s, a_received_value_moves_to_the_receivers_count);
    suite_add_test(s, a_value_a_task_sends_itself_comes_back_however_big);
    suite_add_test(s, the_sender_stops_counting_a_value_when_it_is_received);
    suite_add_test(s, a_value_from_an_ended_task_is_read_and_counts_against_its_receiver);
    suite_add_test(s, more_values_of_one_sender_than_a_short_counts_wait_and_arrive_whole);
    suite_add_test(s, a_value_sent_before_a_panic_survives_it);
    suite_add_test(s, a_block_value_is_refused_and_nothing_is_sent);
    suite_add_test(s, a_block_value_is_refused_at_once_on_a_full_or_closed_channel);
    suite_add_test(s, an_unheld_value_is_a_violation_in_every_state_of_the_channel);
    suite_add_test(s, a_closed_channel_takes_nothing_and_gives_what_it_has);
    suite_add_test(s, a_full_channel_blocks_the_sender_and_keeps_the_order);
    suite_add_test(s, closing_a_full_channel_wakes_its_sender);
    suite_add_test(s, closing_a_full_channel_wakes_every_sender);
    suite_add_test(s, a_close_wakes_every_sender_when_a_receive_just_made_room);
    suite_add_test(s, a_close_wakes_every_receiver_when_a_send_just_filled_the_channel);
    suite_add_test(s, receivers_racing_for_values_see_null_only_once_closed);
    suite_add_test(s, closing_an_empty_channel_wakes_its_receivers);
    suite_add_test(s, freeing_a_channel_frees_what_is_queued);
    suite_add_test(s, the_last_value_of_an_ended_sender_writes_nothing_freed);
    suite_add_test(s, freeing_a_channel_leaves_nothing_allocated);
    suite_add_test(s, a_send_refused_as_closed_leaves_nothing_allocated);
    suite_add_test(s, a_receive_fits_in_the_room_a_received_send_gave_back);
    suite_add_test(s, a_receiver_the_value_does_not_fit_panics_and_the_next_gets_it);
    suite_add_test(s, a_receiver_that_panics_wakes_the_next_one);
    suite_add_test(s, many_senders_into_a_small_channel_lose_nothing);
    suite_add_test(s, sixty_four_tasks_exchanging_values_lose_nothing_and_leak_nothing);
    suite_add_test(s, a_ring_that_wraps_keeps_each_values_bytes_order_and_sender);
    suite_add_test(s, freeing_a_wrapped_channel_frees_exactly_what_is_queued);
    suite_add_test(s, a_receiver_refused_on_a_full_channel_leaves_the_waiting_sender_waiting);
    suite_add_test(s, freeing_a_channel_gives_each_running_sender_back_exactly_its_queued_bytes);
    suite_add_test(s, a_value_relayed_by_a_task_that_then_panics_reaches_the_next_receiver_whole);
    suite_add_test(s, every_figure_is_exact_after_sends_receives_panics_refusals_and_a_close_race);
    suite_add_test(s, each_send_or_receive_wakes_exactly_one_waiter_on_the_other_side);
    suite_add_test(s, a_refused_receiver_of_a_closed_channel_leaves_the_head_for_the_next);
    suite_add_test(s, channel_misuse_gets_the_contracts_error);
    suite_add_test(s, a_null_channel_is_named_first_whatever_is_sent_and_wherever);
    return s;
}
