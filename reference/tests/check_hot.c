/*
** check_hot.c: the hot path (seed 003): the direct read, its validation
** and the latch, unit level. The fiber migration test is check_hot_fiber.c.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "refrt.h"
#include "testutil.h"

static pthread_key_t rt_key(void)
{
    ck_assert_uint_ne(rt__key_plus_one, 0);
    return (pthread_key_t)(rt__key_plus_one - 1);
}

/* What the fast path's one load reads on this thread right now. */
static void *direct_read(void)
{
#if RT_PRIM_DIRECT
    return rt_prim_slot_read(__atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED));
#else
    return NULL;
#endif
}

static void run_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* ---- the direct path is live, and reads what pthread_getspecific reads -- */

START_TEST(direct_path_is_live)
{
    rt_init();
    struct rt_hot *h = rt_hot();
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(RT_PRIM_PORTABLE)
    /* Every other test passes whether rt_hot costs a call or four
    ** instructions: this one fails if the direct path silently fell back. */
    ck_assert_msg(rt_hot_direct(), "the direct path is not live on glibc");
    ck_assert_ptr_eq(direct_read(), h);
#else
    ck_assert(!rt_hot_direct());
#endif
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    ck_assert_ptr_eq(rt_hot(), h);
}
END_TEST

#define MANY 8
#define ROUNDS 2000

struct agree {
    pthread_barrier_t *start, *made; /* made: every state exists at once */
    struct rt_hot *mine;
    unsigned disagreed;
};

static void *thread_agrees(void *arg)
{
    struct agree *a = arg;
    pthread_barrier_wait(a->start);
    a->mine = rt_hot();
    pthread_barrier_wait(a->made);
    for (int i = 0; i < ROUNDS; i++) {
        void *got = pthread_getspecific(rt_key());
        if ((RT_PRIM_DIRECT && direct_read() != got) || got != a->mine || rt_hot() != a->mine)
            a->disagreed++;
    }
    return NULL;
}

START_TEST(direct_read_matches_getspecific_on_many_threads)
{
    pthread_barrier_t start, made;
    pthread_t t[MANY];
    struct agree a[MANY];

    rt_init();
    ck_assert_ptr_nonnull(rt_hot());
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, MANY), 0);
    ck_assert_int_eq(pthread_barrier_init(&made, NULL, MANY), 0);
    for (int i = 0; i < MANY; i++) {
        a[i] = (struct agree){&start, &made, NULL, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, thread_agrees, &a[i]), 0);
    }
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&made);
    for (int i = 0; i < MANY; i++) {
        ck_assert_uint_eq(a[i].disagreed, 0);
        ck_assert_ptr_nonnull(a[i].mine);
        ck_assert_ptr_ne(a[i].mine, rt_hot());
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(a[i].mine, a[j].mine); /* all alive at once */
    }
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
}
END_TEST

struct fresh {
    void *before_direct, *before_get;
    struct rt_hot *mine;
    void *after_direct, *after_get;
    bool direct_after;
};

static void *fresh_thread(void *arg)
{
    struct fresh *f = arg;
    f->before_direct = direct_read();
    f->before_get = pthread_getspecific(rt_key());
    f->mine = rt_hot();
    f->after_direct = direct_read();
    f->after_get = pthread_getspecific(rt_key());
    f->direct_after = rt_hot_direct();
    return NULL;
}

START_TEST(a_fresh_thread_publishes_its_own_slot)
{
    struct fresh f;
    rt_init();
    struct rt_hot *main_h = rt_hot();
    run_thread(fresh_thread, &f);
    ck_assert_ptr_null(f.before_direct); /* POSIX: NULL in a new thread */
    ck_assert_ptr_null(f.before_get);
    ck_assert_ptr_nonnull(f.mine);
    ck_assert_ptr_ne(f.mine, main_h);
    ck_assert_ptr_eq(f.after_get, f.mine);
    ck_assert_int_eq(f.direct_after, RT_PRIM_DIRECT);
    if (RT_PRIM_DIRECT)
        ck_assert_ptr_eq(f.after_direct, f.mine);
    ck_assert_ptr_eq(rt_hot(), main_h);
}
END_TEST

/* A thread that exists before the first publish and calls the runtime
** after it: what it reads of the publication (the offset, the state, the
** slot) it reads through the publication's release and acquire alone.
** It waits on a relaxed flag, which orders nothing for TSan, so a store
** of the first publish that escapes the release (a slot written after
** the state, a plain read of the offset) is a race TSan reports in every
** run, with no luck of the schedule needed. */
struct early {
    const int *go;
    struct fresh f;
};

static void *early_thread(void *arg)
{
    struct early *e = arg;
    while (!__atomic_load_n(e->go, __ATOMIC_RELAXED))
        sched_yield();
    return fresh_thread(&e->f);
}

START_TEST(a_thread_older_than_the_first_publish_reads_it_through_its_release)
{
    struct early e = {0};
    int go = 0;
    pthread_t t;

    rt_init();
    e.go = &go;
    ck_assert_int_eq(pthread_create(&t, NULL, early_thread, &e), 0);
    struct rt_hot *main_h = rt_hot(); /* the first publish of the process */
    __atomic_store_n(&go, 1, __ATOMIC_RELAXED);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_null(e.f.before_direct);
    ck_assert_ptr_null(e.f.before_get);
    ck_assert_ptr_nonnull(e.f.mine);
    ck_assert_ptr_ne(e.f.mine, main_h);
    ck_assert_ptr_eq(e.f.after_get, e.f.mine);
    ck_assert_int_eq(e.f.direct_after, RT_PRIM_DIRECT);
    if (RT_PRIM_DIRECT)
        ck_assert_ptr_eq(e.f.after_direct, e.f.mine);
    ck_assert_ptr_eq(rt_hot(), main_h);
}
END_TEST

/* A thread made before rt_init (docs/hot-path.md, check-dlopen: "A thread
** made before the dlopen and four made after, before rt_init ... none
** before rt_init"): before rt_init it has no state and the cache is off (a
** chunk given back is freed, 0 kept, contract "Start-up"); after it (
** barriers order its calls before rt_init and rt_init before its next
** call: a call racing rt_init is the program's race) its first call is the
** process's first publish, which opens the path on it, and main, which
** called nothing yet, publishes later, each its own state. */
struct older {
    pthread_barrier_t *inited, *published;
    void *hot_before, *direct_before;
    unsigned kept_before, kept_after;
    unsigned long freed_before;
    struct fresh f;
};

static void *older_than_init(void *arg)
{
    struct older *o = arg;
    chunks_reset();
    void *c = rt_chunk_take();
    rt_chunk_give(c, c);
    o->freed_before = chunks_counted().frees;
    o->kept_before = rt_chunk_kept();
    o->hot_before = rt__hot_or_null();
    o->direct_before = direct_read();
    pthread_barrier_wait(o->inited); /* done before rt_init: main may call it */
    pthread_barrier_wait(o->inited); /* rt_init has returned */
    fresh_thread(&o->f); /* the process's first publish */
    c = rt_chunk_take();
    rt_chunk_give(c, c);
    o->kept_after = rt_chunk_kept();
    pthread_barrier_wait(o->published);
    pthread_barrier_wait(o->inited); /* main has published and checked */
    return NULL;
}

START_TEST(a_thread_made_before_rt_init_has_no_state_then_may_publish_first)
{
    pthread_barrier_t inited, published;
    struct older o = {0};
    pthread_t t;

    ck_assert_int_eq(pthread_barrier_init(&inited, NULL, 2), 0);
    ck_assert_int_eq(pthread_barrier_init(&published, NULL, 2), 0);
    o.inited = &inited;
    o.published = &published;
    ck_assert_int_eq(pthread_create(&t, NULL, older_than_init, &o), 0);
    pthread_barrier_wait(&inited);
    rt_init();
    pthread_barrier_wait(&inited);
    pthread_barrier_wait(&published);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT); /* opened on the thread */
    struct rt_hot *h = rt_hot(); /* main: a later publish */
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    if (RT_PRIM_DIRECT)
        ck_assert_ptr_eq(direct_read(), h);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
    pthread_barrier_wait(&inited);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    pthread_barrier_destroy(&inited);
    pthread_barrier_destroy(&published);
    ck_assert_uint_eq(o.freed_before, 1);
    ck_assert_uint_eq(o.kept_before, 0);
    ck_assert_ptr_null(o.hot_before);
    ck_assert_ptr_null(o.direct_before);
    ck_assert_ptr_null(o.f.before_direct);
    ck_assert_ptr_null(o.f.before_get);
    ck_assert_ptr_nonnull(o.f.mine);
    ck_assert_ptr_ne(o.f.mine, h);
    ck_assert_ptr_eq(o.f.after_get, o.f.mine);
    ck_assert_int_eq(o.f.direct_after, RT_PRIM_DIRECT);
    if (RT_PRIM_DIRECT)
        ck_assert_ptr_eq(o.f.after_direct, o.f.mine);
    ck_assert_uint_eq(o.kept_after, 1);
}
END_TEST

/* ---- the latch ---------------------------------------------------------- */

#define READERS 4
#define READS 20000

struct reader {
    pthread_barrier_t *start;
    const int *latched;
    struct rt_hot *mine;
    unsigned wrong;
};

/* Reads while the latch is being thrown, then READS more once it has
** seen it thrown: every read must be this thread's own state. */
static void *reader_loop(void *arg)
{
    struct reader *r = arg;
    int after = 0;
    r->mine = rt_hot();
    pthread_barrier_wait(r->start);
    while (after < READS) {
        after += __atomic_load_n(r->latched, __ATOMIC_ACQUIRE);
        if (rt_hot() != r->mine || pthread_getspecific(rt_key()) != r->mine)
            r->wrong++;
    }
    return NULL;
}

START_TEST(readers_race_the_latch_and_every_read_is_right)
{
    pthread_barrier_t start;
    pthread_t t[READERS];
    struct reader r[READERS];
    int latched = 0;

    rt_init();
    ck_assert_ptr_nonnull(rt_hot());
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, READERS + 1), 0);
    for (int i = 0; i < READERS; i++) {
        r[i] = (struct reader){&start, &latched, NULL, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, reader_loop, &r[i]), 0);
    }
    pthread_barrier_wait(&start);
    rt_hot_disable(); /* while the readers read */
    __atomic_store_n(&latched, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < READERS; i++)
        ck_assert_uint_eq(r[i].wrong, 0);
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read()); /* the fast path reads the NULL word */
}
END_TEST

/* A direct read that disagrees, as a glibc with another layout would. */
static void *wrong_read(intptr_t off)
{
    (void)off;
    return (void *)&wrong_read;
}

struct parked {
    pthread_barrier_t *ready, *go;
    struct rt_hot *mine;
    bool direct_before, direct_after;
    void *direct_after_latch;
    struct rt_hot *after_latch;
};

/* Publishes, reports, waits for the latch, then reads again. */
static void *parked_thread(void *arg)
{
    struct parked *p = arg;
    p->mine = rt_hot();
    p->direct_before = rt_hot_direct();
    pthread_barrier_wait(p->ready);
    pthread_barrier_wait(p->go);
    p->direct_after = rt_hot_direct();
    p->direct_after_latch = direct_read();
    p->after_latch = rt_hot();
    return NULL;
}

START_TEST(a_forced_mismatch_latches_and_every_thread_reverts)
{
    pthread_barrier_t ready, go;
    pthread_t t[2];
    struct parked p[2];
    struct fresh f1, f2;

    rt_init();
    struct rt_hot *main_h = rt_hot();
    ck_assert_int_eq(pthread_barrier_init(&ready, NULL, 3), 0);
    ck_assert_int_eq(pthread_barrier_init(&go, NULL, 3), 0);
    for (int i = 0; i < 2; i++) {
        p[i] = (struct parked){&ready, &go, NULL, false, false, NULL, NULL};
        ck_assert_int_eq(pthread_create(&t[i], NULL, parked_thread, &p[i]), 0);
    }
    pthread_barrier_wait(&ready);

    rt__hot_test_read = wrong_read; /* the next publish sees a mismatch */
    run_thread(fresh_thread, &f1);
    rt__hot_test_read = NULL;

    pthread_barrier_wait(&go);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&go);

    ck_assert_ptr_nonnull(f1.mine);
    ck_assert_ptr_eq(f1.after_get, f1.mine);
    ck_assert(!f1.direct_after);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(p[i].direct_before, RT_PRIM_DIRECT);
        ck_assert(!p[i].direct_after);          /* process-wide */
        ck_assert_ptr_null(p[i].direct_after_latch); /* its fast path reverted */
        ck_assert_ptr_eq(p[i].after_latch, p[i].mine);
    }
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
    ck_assert_ptr_eq(rt_hot(), main_h);

    /* For good: a later fresh thread publishes and validates fine, and the
    ** path stays off. */
    run_thread(fresh_thread, &f2);
    ck_assert(!f2.direct_after);
    ck_assert_ptr_eq(f2.after_get, f2.mine);
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
}
END_TEST

START_TEST(a_mismatch_at_the_first_publish_never_opens_the_path)
{
    struct fresh f;
    rt_init();
    rt__hot_test_read = wrong_read;
    struct rt_hot *h = rt_hot();
    rt__hot_test_read = NULL;
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    ck_assert_ptr_eq(rt_hot(), h);
    run_thread(fresh_thread, &f);
    ck_assert(!f.direct_after);
    ck_assert_ptr_eq(f.after_get, f.mine);
    ck_assert_ptr_ne(f.mine, h);
}
END_TEST

START_TEST(disable_before_the_first_publish_is_for_good)
{
    struct fresh f;
    rt_hot_disable();
    rt_init();
    struct rt_hot *h = rt_hot();
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    run_thread(fresh_thread, &f);
    ck_assert(!f.direct_after);
    ck_assert_ptr_eq(f.after_get, f.mine);
    /* the cache still works on the fallback */
    void *c = rt_chunk_take();
    rt_chunk_give(c, c);
    ck_assert_uint_eq(rt_chunk_kept(), 1);
    ck_assert_ptr_eq(rt_chunk_take(), c);
}
END_TEST

START_TEST(disable_after_the_path_opened_is_for_good)
{
    struct fresh f;
    rt_init();
    struct rt_hot *h = rt_hot();
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
    rt_hot_disable();
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
    ck_assert_ptr_eq(rt_hot(), h);
    run_thread(fresh_thread, &f);
    ck_assert(!f.direct_after);
    ck_assert(!rt_hot_direct());
    rt_hot_disable(); /* twice is harmless */
    ck_assert_ptr_eq(rt_hot(), h);
}
END_TEST

/* ---- where there is no direct path ------------------------------------- */

START_TEST(a_key_of_32_or_more_takes_the_fallback_from_the_start)
{
    pthread_key_t filler[40];
    struct fresh f;

    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(pthread_key_create(&filler[i], NULL), 0);
    rt_init();
    ck_assert_uint_ge(rt_key(), 32);
    struct rt_hot *h = rt_hot();
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_null(direct_read());
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    ck_assert_ptr_eq(rt_hot(), h);
    run_thread(fresh_thread, &f);
    ck_assert_ptr_nonnull(f.mine);
    ck_assert_ptr_ne(f.mine, h);
    ck_assert_ptr_eq(f.after_get, f.mine);
    ck_assert(!f.direct_after);
}
END_TEST

/* The bound either side: keys below 32 live in the thread descriptor and
** take the direct path (where the platform has one), 32 and up the
** fallback (docs/hot-path.md). A child makes keys until the runtime's
** next is the one wanted (glibc hands out the lowest free key), then
** calls rt_init and reports what it got. */
static void init_at_key(void *arg)
{
    pthread_key_t want = (pthread_key_t)(uintptr_t)arg, k;
    do
        if (pthread_key_create(&k, NULL) != 0)
            _exit(2);
    while (k + 1 < want);
    rt_init();
    struct rt_hot *h = rt_hot();
    if (rt_key() != want)
        _exit(3);
    if (rt_hot() != h || pthread_getspecific(rt_key()) != h)
        _exit(4);
    /* docs/hot-path.md: UNKNOWN (0) becomes DIRECT (1) or, no slot found,
    ** LATCHED (2), at the first publish and for good: a thread's first
    ** publish later leaves it so */
    struct fresh f;
#if RT_TESTING
    int state = __atomic_load_n(rt__hot_state_at(), __ATOMIC_ACQUIRE);
    run_thread(fresh_thread, &f);
    if (__atomic_load_n(rt__hot_state_at(), __ATOMIC_ACQUIRE) != state)
        _exit(5);
    if (state != (rt_hot_direct() ? 1 : 2))
        _exit(6);
#else
    run_thread(fresh_thread, &f); /* the cross build has no test hooks */
#endif
    if (f.mine == NULL)
        _exit(5);
    _exit(rt_hot_direct() ? 10 : 11);
}

START_TEST(the_keys_either_side_of_32_take_their_path)
{
    for (uintptr_t key = 29; key <= 34; key++) {
        struct death d = run_child(init_at_key, (void *)key);
        int want = key < 32 && RT_PRIM_DIRECT ? 10 : 11;
        ck_assert_msg(d.signal == 0 && d.exit_status == want,
                      "key %lu: expected exit %d (%s), got signal %d exit %d; stderr: %s",
                      (unsigned long)key, want, want == 10 ? "direct" : "fallback",
                      d.signal, d.exit_status, d.err);
    }
}
END_TEST

/* The slot search at indices across those the runtime's key can take below 32,
** in a descriptor full of the program's own values: the search finds the
** one word that follows the runtime's key (docs/hot-path.md, "Where the
** slot is") whatever its place among glibc's first 32, leaves every other
** key's value as it was (prim.h: it "Leaves the slot NULL", its own slot
** only), and a fresh thread whose own program keys are all set publishes
** its own state, also with as many keys made after rt_init, set on both
** (many past 32). A program key made, set, deleted and made again after
** rt_init takes its old index back (glibc: the lowest free key) and
** changes nothing the runtime reads. Each index in a child: the keys
** below it are made by the program first (an index some library took
** before the child started cannot be reached: exit 7, and only below the
** first index reached). */
static pthread_key_t program_keys[64];
static char program_values[2][64];
static unsigned program_count;

static void set_program_keys(int who)
{
    for (unsigned i = 0; i < program_count; i++)
        if (pthread_setspecific(program_keys[i], &program_values[who][i]) != 0)
            _exit(20);
}

static bool program_keys_hold(int who)
{
    for (unsigned i = 0; i < program_count; i++)
        if (pthread_getspecific(program_keys[i]) != &program_values[who][i])
            return false;
    return true;
}

static void *program_thread(void *arg)
{
    struct fresh *f = arg;
    set_program_keys(1);
    fresh_thread(f);
    if (!program_keys_hold(1))
        f->mine = NULL;
    return NULL;
}

static void init_at_index(void *arg)
{
    pthread_key_t want = (pthread_key_t)(uintptr_t)arg, k, again, reused;
    struct fresh f;

    program_count = 0;
    for (;;) {
        if (pthread_key_create(&k, NULL) != 0)
            _exit(2);
        if (k >= want)
            break;
        program_keys[program_count++] = k;
    }
    if (k != want)
        _exit(7); /* taken before the child began */
    pthread_key_delete(k); /* never set: rt_init takes it back */
    set_program_keys(0);
    rt_init();
    if (rt_key() != want)
        _exit(3);
    struct rt_hot *h = rt_hot();
    if (rt_hot_direct() != (RT_PRIM_DIRECT != 0))
        _exit(4);
    if (RT_PRIM_DIRECT && direct_read() != h)
        _exit(5);
    if (pthread_getspecific(rt_key()) != h || rt_hot() != h)
        _exit(6);
    if (!program_keys_hold(0))
        _exit(8); /* the search left another key's value changed */
    /* keys made after rt_init, above the runtime's, past 32 too (glibc's
    ** second-level blocks), set on main and on the thread */
    while (program_count < 32 + want) {
        if (pthread_key_create(&program_keys[program_count++], NULL) != 0)
            _exit(2);
    }
    set_program_keys(0);
    if (rt_hot() != h || (RT_PRIM_DIRECT && direct_read() != h) ||
        pthread_getspecific(rt_key()) != h)
        _exit(15);
    run_thread(program_thread, &f);
    if (f.mine == NULL || f.mine == h || f.before_direct != NULL || f.before_get != NULL ||
        f.after_get != f.mine)
        _exit(9);
    if (f.direct_after != (RT_PRIM_DIRECT != 0) || (RT_PRIM_DIRECT && f.after_direct != f.mine))
        _exit(10);
    if (pthread_key_create(&again, NULL) != 0 ||
        pthread_setspecific(again, &program_values[0][0]) != 0 ||
        pthread_key_delete(again) != 0 || pthread_key_create(&reused, NULL) != 0)
        _exit(11);
    if (reused != again || pthread_getspecific(reused) != NULL)
        _exit(12);
    if (rt_hot() != h || (RT_PRIM_DIRECT && direct_read() != h) ||
        pthread_getspecific(rt_key()) != h || !program_keys_hold(0) ||
        rt_hot_direct() != (RT_PRIM_DIRECT != 0))
        _exit(13);
    _exit(0);
}

START_TEST(the_slot_is_found_at_indices_across_the_first_32_among_the_programs_keys)
{
    /* Each index costs a fork (about 5 ms on the 2-core machine here), so
    ** the ends and both sides of the middle; the search itself is run at
    ** every index in one process by the test below, and 29 to 34 by
    ** the_keys_either_side_of_32_take_their_path. */
    static const uintptr_t indices[] = {0, 1, 15, 16, 31};
    int reached = 0;
    for (size_t i = 0; i < sizeof indices / sizeof indices[0]; i++) {
        struct death d = run_child(init_at_index, (void *)indices[i]);
        if (reached == 0 && d.signal == 0 && d.exit_status == 7)
            continue; /* below the first index a child can reach */
        ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                      "key %lu: expected exit 0, got signal %d exit %d; stderr: %s",
                      (unsigned long)indices[i], d.signal, d.exit_status, d.err);
        reached++;
    }
    ck_assert_int_ge(reached, 3); /* 15, 16 and 31 at least */
}
END_TEST

/* prim.h's search on its own, at every index below 32 in one process (no
** rt_init: the search needs none): with every other key of the program
** set on this thread, it finds the one word that follows the key it is
** given, a different word for each key, and leaves that key's slot NULL and
** every other key's value as it was ("Leaves the slot NULL"; the direct
** read then follows pthread_setspecific for that key). Where no direct
** read is known it finds nothing, at any index. */
START_TEST(the_search_finds_a_word_of_its_own_for_each_of_the_first_32_keys)
{
    pthread_key_t k;
    intptr_t found_at[32];
    unsigned made = 0;

    program_count = 0;
    while (pthread_key_create(&k, NULL) == 0 && k < 32) {
        program_keys[program_count++] = k;
        made++;
    }
    ck_assert_uint_ge(made, 30);
    set_program_keys(0);
    for (unsigned i = 0; i < program_count; i++) {
        pthread_key_t key = program_keys[i];
        intptr_t off = -1;
        ck_assert_int_eq(pthread_setspecific(key, NULL), 0);
        bool found = rt_prim_slot_find(key, &off);
        ck_assert_msg(found == (RT_PRIM_DIRECT != 0), "key %u: found %d", (unsigned)key, found);
        ck_assert_ptr_null(pthread_getspecific(key));
        for (unsigned j = 0; j < program_count; j++)
            if (j != i)
                ck_require(pthread_getspecific(program_keys[j]) == &program_values[0][j]);
        found_at[i] = off;
#if RT_PRIM_DIRECT
        ck_assert_ptr_null(rt_prim_slot_read(off));
        ck_assert_int_eq(pthread_setspecific(key, &program_values[1][i]), 0);
        ck_assert_ptr_eq(rt_prim_slot_read(off), &program_values[1][i]);
        for (unsigned j = 0; j < i; j++)
            ck_require(found_at[j] != off); /* two keys, one word */
#else
        ck_assert_int_eq(off, -1); /* nothing found, nothing written */
        (void)found_at;
#endif
        ck_assert_int_eq(pthread_setspecific(key, &program_values[0][i]), 0);
    }
    ck_assert(program_keys_hold(0));
}
END_TEST

START_TEST(before_init_there_is_no_state_and_no_direct_path)
{
    ck_assert_ptr_null(rt__hot_or_null());
    ck_assert_ptr_null(direct_read());
    ck_assert(!rt_hot_direct());
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

/* The runtime passes pthread no key but the one rt_init made: before
** rt_init there is no key, so no call (take, give, a region, the state,
** the direct path's flag) asks about one, on main or on a plain thread;
** after it, every get and set is of that key, on main, on a fresh thread
** and after the latch. A key nobody made is undefined to POSIX. */
static void *use_the_cache_and_the_state(void *unused)
{
    (void)unused;
    rt_region r;
    unsigned char *c = rt_chunk_take();
    rt_chunk_give(c, c + 1);
    rt_region_open(&r);
    ck_assert_ptr_nonnull(rt_region_alloc(&r, 1, 1, 0));
    rt_region_close(&r);
    (void)rt_chunk_kept();
    (void)rt__hot_or_null();
    (void)rt_hot_direct();
    return NULL;
}

START_TEST(the_runtime_uses_no_pthread_key_but_the_one_rt_init_made)
{
    unsigned long before = keys_not_made_used();
    use_the_cache_and_the_state(NULL);
    run_thread(use_the_cache_and_the_state, NULL);
    ck_assert_ptr_null(rt__hot_or_null());
    ck_assert_uint_eq(keys_not_made_used(), before);
    rt_init();
    use_the_cache_and_the_state(NULL);
    ck_assert_ptr_nonnull(rt__hot_or_null());
    run_thread(use_the_cache_and_the_state, NULL);
    rt_hot_disable();
    run_thread(use_the_cache_and_the_state, NULL);
    use_the_cache_and_the_state(NULL);
    ck_assert_uint_eq(keys_not_made_used(), before);
}
END_TEST

/* ---- every publish, whoever makes it ------------------------------------- */

/* In a child (run_child): the first unmet need ends it with its line. */
#define NEED(c)                                                                      \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "need failed at line %d: %s\n", __LINE__, #c);           \
            fflush(stderr);                                                          \
            _exit(1);                                                                \
        }                                                                            \
    } while (0)

/* A task's view of its own publish (made in task_start, before fn runs).
** It says so before it returns: rt_join is main's first call that needs
** its task, so main waits for the report before it joins, and the task's
** publish comes first where main had none. */
static int task_reported;
static void *main_read_before_join; /* main's fast-path read meanwhile */

static void *task_reports(void *arg)
{
    struct fresh *f = arg;
    f->mine = rt_hot();
    f->after_direct = direct_read();
    f->after_get = pthread_getspecific(rt_key());
    f->direct_after = rt_hot_direct();
    __atomic_store_n(&task_reported, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Publishes on a plain thread (who 0) or a task (who 1) and reports. */
static void publish_on(int who, struct fresh *f)
{
    memset(f, 0, sizeof *f);
    if (who == 0) {
        run_thread(fresh_thread, f);
        NEED(f->before_direct == NULL && f->before_get == NULL);
    } else {
        __atomic_store_n(&task_reported, 0, __ATOMIC_RELAXED);
        rt_task *t = rt_spawn(task_reports, f);
        NEED(t != NULL);
        while (!__atomic_load_n(&task_reported, __ATOMIC_ACQUIRE))
            sched_yield();
        main_read_before_join = direct_read();
        NEED(rt_join(t, NULL) == RT_OK);
    }
    NEED(f->mine != NULL && f->after_get == f->mine);
}

/* A publish that validated: the path open (where there is one) and the
** fast path's read on that thread its own state. */
#define NEED_OPEN(f)                                                                 \
    NEED((f).direct_after == RT_PRIM_DIRECT &&                                       \
         (f).after_direct == (RT_PRIM_DIRECT ? (void *)(f).mine : NULL))
#define NEED_SHUT(f) NEED(!(f).direct_after && (f).after_direct == NULL)

/* The first publish of the process is whichever thread calls the runtime
** first after rt_init, not always main: rt_init publishes nothing and
** rt_spawn reads no state of main's. A plain thread or a task that
** publishes first finds the slot and opens the path; main and a thread
** after it then publish as later threads and validate against that slot.
** A mismatch at that first publish, made on the plain thread or the task,
** never opens the path, for them or for main. */
static void first_publish_off_main(void *arg)
{
    int who = (int)(uintptr_t)arg & 1, mismatch = (int)(uintptr_t)arg >> 1;
    struct fresh f, later;

    rt_init();
    NEED(!rt_hot_direct());
    NEED(direct_read() == NULL && pthread_getspecific(rt_key()) == NULL);
    if (mismatch)
        rt__hot_test_read = wrong_read;
    publish_on(who, &f);
    rt__hot_test_read = NULL;
    if (mismatch)
        NEED_SHUT(f);
    else
        NEED_OPEN(f);
    /* main had no state while the first publisher ran; a task's join has
    ** published main's since (a later publish), a plain thread's has not */
    NEED((who ? main_read_before_join : direct_read()) == NULL);
    struct rt_hot *main_h = rt_hot(); /* a later publish, or made in the join */
    NEED(main_h != NULL); /* f's thread has ended: main's may take its memory */
    NEED(pthread_getspecific(rt_key()) == main_h && rt_hot() == main_h);
    NEED(rt_hot_direct() == (!mismatch && RT_PRIM_DIRECT));
    NEED(direct_read() == (!mismatch && RT_PRIM_DIRECT ? (void *)main_h : NULL));
    publish_on(!who, &later);
    NEED(later.mine != main_h); /* f's thread has ended: its state may be reused */
    if (mismatch)
        NEED_SHUT(later);
    else
        NEED_OPEN(later);
    _exit(10);
}

/* The cold path is what a thread reaches whenever its one load reads the
** NULL word: before the path opens, after the latch, and with an offset
** read before the first publish and kept (seed 003's hoisted load). With
** a state already made it must give that state, with what it holds, in
** every state of the path (open and latched), on main and on a plain
** thread, and make none. */
static void cold_path_gives_own_state(const char *who)
{
    struct rt_hot *h = rt_hot();
    void *c[3];
    unsigned kept0 = rt_chunk_kept();

    for (int i = 0; i < 3; i++)
        c[i] = rt_chunk_take();
    for (int i = 2; i >= 0; i--)
        rt_chunk_give(c[i], c[i]);
    unsigned kept = rt_chunk_kept();
    ck_assert_msg(kept == (kept0 > 3 ? kept0 : 3), "%s keeps %u, kept %u", who, kept, kept0);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(rt__hot_cold() == h, "%s: the cold path gave another state (%s)", who,
                      rt_hot_direct() ? "open" : "latched");
        ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
        ck_assert_ptr_eq(rt_hot(), h);
        ck_assert_uint_eq(rt_chunk_kept(), kept);
    }
}

static void *cold_path_on_a_thread(void *arg)
{
    cold_path_gives_own_state(arg);
    return NULL;
}

START_TEST(the_cold_path_gives_a_thread_its_own_state_open_or_latched)
{
    rt_init();
    for (int latched = 0; latched < 2; latched++) {
        if (latched)
            rt_hot_disable();
        cold_path_gives_own_state(latched ? "main, latched" : "main");
        run_thread(cold_path_on_a_thread, latched ? "a thread, latched" : "a thread");
    }
    ck_assert(!rt_hot_direct());
}
END_TEST

START_TEST(the_first_publish_may_be_a_plain_threads_or_a_tasks)
{
    static const char *const what[] = {"a plain thread", "a task",
                                       "a plain thread, mismatched", "a task, mismatched"};
    for (uintptr_t i = 0; i < 4; i++) {
        struct death d = run_child(first_publish_off_main, (void *)i);
        ck_assert_msg(d.signal == 0 && d.exit_status == 10,
                      "first publish on %s: signal %d exit %d; stderr: %s", what[i], d.signal,
                      d.exit_status, d.err);
    }
}
END_TEST

/* What the forced direct read returns: not the state just published. */
static void *wrong_value;

static void *read_the_wrong_value(intptr_t off)
{
    (void)off;
    return wrong_value;
}

enum { WRONG_FOREIGN, WRONG_NULL, WRONG_MAINS, WRONGS };

/* A later publish whose direct read is not its own state latches the
** path, whoever publishes (a plain thread or a task), however many
** threads validated before it (0, 1 or 3), whatever the read returns (a
** pointer that is no state, NULL, or main's state: another thread's). The
** thread that saw it keeps its state; main's fast path reads the NULL word
** and rt_hot() is still main's; a thread after it stays on the fallback. */
static void later_mismatch(void *arg)
{
    uintptr_t a = (uintptr_t)arg;
    int who = (int)(a & 1), wrong = (int)(a >> 1) % WRONGS, before = (int)(a >> 1) / WRONGS;
    struct fresh f, ok, later;

    rt_init();
    struct rt_hot *main_h = rt_hot();
    NEED(rt_hot_direct() == RT_PRIM_DIRECT);
    for (int i = 0; i < (before == 2 ? 3 : before); i++) {
        publish_on(i & 1, &ok);
        NEED_OPEN(ok);
    }
    wrong_value = wrong == WRONG_FOREIGN ? (void *)&wrong_value
                  : wrong == WRONG_NULL  ? NULL
                                         : (void *)main_h;
    rt__hot_test_read = read_the_wrong_value;
    publish_on(who, &f);
    rt__hot_test_read = NULL;
    NEED_SHUT(f);
    NEED(f.mine != main_h);
    NEED(!rt_hot_direct());
    NEED(direct_read() == NULL);
    NEED(rt_hot() == main_h && pthread_getspecific(rt_key()) == main_h);
    publish_on(!who, &later);
    NEED_SHUT(later);
    NEED(!rt_hot_direct());
    _exit(10);
}

START_TEST(a_mismatch_at_any_later_publish_latches_whoever_publishes)
{
    static const char *const wrongs[] = {"a foreign pointer", "NULL", "main's state"};
    for (uintptr_t i = 0; i < 2 * WRONGS * 3; i++) {
        struct death d = run_child(later_mismatch, (void *)i);
        ck_assert_msg(d.signal == 0 && d.exit_status == 10,
                      "a mismatch reading %s on %s after %d validated: signal %d exit %d; "
                      "stderr: %s", wrongs[(i >> 1) % WRONGS], i & 1 ? "a task" : "a plain thread",
                      (int)((i >> 1) / WRONGS) == 2 ? 3 : (int)((i >> 1) / WRONGS), d.signal,
                      d.exit_status, d.err);
    }
}
END_TEST

/* The validation of a publish asks both the direct read and
** pthread_getspecific, and the slot search both markers, each once: a slot
** that disagrees with either at any of these leaves the path shut, or
** latches it (testutil.h, slot_lies_at_set; the sets are counted: the
** first publish makes four, the slot search's two markers and its NULL,
** then the state, and a later publish one). */
static void *publishes(void *arg)
{
    struct rt_hot **mine = arg;
    *mine = rt_hot();
    ck_assert_ptr_eq(rt_hot(), *mine);
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), *mine);
    return NULL;
}

/* The second marker must be both in the word found and what
** pthread_getspecific answers: a slot that holds it while the get says
** another (or the reverse) is not the key's. In a child each, the lie
** being one set of one process. */
static void second_marker_lies(void *kind)
{
    rt_init();
    slot_lies_at_set(2, (int)(intptr_t)kind);
    struct rt_hot *h = rt_hot();
    if (rt_hot_direct())
        _exit(10); /* the path opened on a slot the second marker did not follow */
    if (rt_hot() != h || pthread_getspecific(rt_key()) != h)
        _exit(11);
    struct rt_hot *other = NULL;
    run_thread(publishes, &other);
    _exit(other != h && other != NULL ? 0 : 12);
}

START_TEST(a_slot_that_does_not_follow_the_second_marker_is_not_taken)
{
    if (!RT_PRIM_DIRECT) /* no slot search, no direct path: the sets counted here differ */
        return;
    static const int kinds[] = {SLOT_HOLDS_NULL, GET_SAYS_FOREIGN};
    for (int i = 0; i < 2; i++) {
        struct death d = run_child(second_marker_lies, (void *)(intptr_t)kinds[i]);
        ck_assert_msg(d.signal == 0 && d.exit_status == 0,
                      "%s at the second marker: exit %d (10: the path opened), signal %d; %s",
                      kinds[i] == SLOT_HOLDS_NULL ? "the word missed it" : "the get denied it",
                      d.exit_status, d.signal, d.err);
    }
}
END_TEST

/* The first marker must be in exactly one word: a program key whose
** value follows the runtime's key puts it in two, and the search takes
** neither (docs/hot-path.md): the path stays shut, every thread on the
** fallback, its own state. The program's key is made after rt_init, so
** its word comes after the runtime's. */
START_TEST(a_first_marker_found_in_two_words_takes_neither)
{
    if (!RT_PRIM_DIRECT)
        return;
    rt_init();
    pthread_key_t follower;
    ck_assert_int_eq(pthread_key_create(&follower, NULL), 0);
    ck_assert_uint_lt((unsigned)follower, 32); /* in the descriptor, beside the runtime's */
    mirror_key_sets(rt_key(), follower);
    struct rt_hot *h = rt_hot();
    ck_assert_msg(!rt_hot_direct(), "the path opened with the first marker in two words");
    ck_assert_ptr_eq(rt_hot(), h);
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    struct rt_hot *other = NULL;
    run_thread(publishes, &other);
    ck_assert_ptr_nonnull(other);
    ck_assert_ptr_ne(other, h);
    ck_assert(!rt_hot_direct());
}
END_TEST

START_TEST(a_publish_whose_get_disagrees_latches_first_or_later)
{
    if (!RT_PRIM_DIRECT) /* no slot search, no direct path: the sets counted here differ */
        return;
    rt_init();
    slot_lies_at_set(4, GET_SAYS_FOREIGN); /* the first publish's own set */
    struct rt_hot *h = rt_hot();
    ck_assert_msg(!rt_hot_direct(), "the first publish opened the path with a get that "
                                    "disagreed");
    ck_assert_ptr_eq(rt_hot(), h);
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
}
END_TEST

START_TEST(a_later_publish_whose_get_disagrees_latches)
{
    struct rt_hot *other = NULL;
    if (!RT_PRIM_DIRECT) /* no slot search, no direct path: the sets counted here differ */
        return;
    rt_init();
    struct rt_hot *h = rt_hot();
    ck_assert(rt_hot_direct() == (RT_PRIM_DIRECT != 0));
    for (int validated = 0; validated < 6; validated++) {
        run_thread(publishes, &other); /* validated publishes keep it open */
        ck_assert(rt_hot_direct() == (RT_PRIM_DIRECT != 0));
    }
    slot_lies_at_set(1, GET_SAYS_FOREIGN); /* the next thread's publish */
    run_thread(publishes, &other);
    ck_assert_msg(!rt_hot_direct(), "a later publish with a get that disagreed left it open");
    ck_assert_ptr_eq(rt_hot(), h);
}
END_TEST

/* Every set a publish makes, misled in every way a slot can mislead
** (testutil.h: the word misses the set, the get denies it, the set is
** dropped, the set stores another pointer), in a child each. docs/hot-path.md:
** the first publish opens the path only on the one word that followed both
** markers and the clear, and that holds the state just published as the
** get does; a later publish latches unless both reads return its own
** state. So the path is shut after each lie a read can see, and open only
** after the lies no read follows (the get denied at the first marker or at
** the clear, whose next set comes before any get; the word missing the
** clear, which leaves it NULL as the clear would). The sets: the first
** publish's four (two markers, the clear, the state), then a later
** thread's one. */
struct misled {
    int set, kind;
};

/* Publishes, then never ends: a slot misled into holding another pointer
** would be handed to the runtime's destructor at the thread's end, which
** is not what is judged here (the child exits with the thread asleep). */
static void *publishes_once(void *arg)
{
    void *h = rt_hot();
    __atomic_store_n((void **)arg, h != NULL ? h : (void *)publishes_once, __ATOMIC_RELEASE);
    for (;;)
        pause();
    return NULL;
}

static void publish_misled(void *arg)
{
    const struct misled *m = arg;
    rt_init();
    if (m->set <= 4) {
        slot_lies_at_set(m->set, m->kind);
        if (rt_hot() == NULL)
            _exit(12);
        _exit(rt_hot_direct() ? 10 : 11);
    }
    if (rt_hot() == NULL || !rt_hot_direct())
        _exit(13); /* the first publish, unmisled, opens it */
    slot_lies_at_set(1, m->kind);
    pthread_t t;
    void *got = NULL;
    if (pthread_create(&t, NULL, publishes_once, &got) != 0)
        _exit(12);
    while (__atomic_load_n(&got, __ATOMIC_ACQUIRE) == NULL)
        sched_yield();
    _exit(got != (void *)publishes_once ? (rt_hot_direct() ? 10 : 11) : 12);
}

START_TEST(every_set_of_a_publish_that_misleads_a_read_leaves_the_path_shut)
{
    if (!RT_PRIM_DIRECT) /* no slot search, no direct path: the sets counted here differ */
        return;
    static const char *const kind_names[] = {"", "the word misses it", "the get denies it",
                                             "it is dropped", "it stores another pointer"};
    static const char *const set_names[] = {"", "first marker", "second marker", "clear",
                                            "first state", "later state"};
    for (int set = 1; set <= 5; set++)
        for (int kind = SLOT_HOLDS_NULL; kind <= SET_STORES_FOREIGN; kind++) {
            struct misled m = {set, kind};
            bool stays_open = (kind == GET_SAYS_FOREIGN && (set == 1 || set == 3)) ||
                              (kind == SLOT_HOLDS_NULL && set == 3);
            struct death d = run_child(publish_misled, &m);
            ck_assert_msg(d.signal == 0 && d.exit_status == (stays_open ? 10 : 11),
                          "the %s set, where %s: exit %d (10: the path open, 11: shut), "
                          "expected %s; signal %d; %s", set_names[set], kind_names[kind],
                          d.exit_status, stays_open ? "open" : "shut", d.signal, d.err);
        }
}
END_TEST

/* ---- at a thread's end: a key destructor before the runtime's ---------- */

/* A key the program made before rt_init has the lower index, so glibc runs
** its destructor before the runtime's at a thread's end (glibc runs them in
** key order; check_region_cache_more.c has the one after the runtime's).
** There the thread's state still exists, and every call of the hot path
** must answer it: rt_hot() is this thread's runtime state ("its chunk
** stack, its task, ..."), so the chunks it keeps (3) are still counted,
** through the direct read with the path open and through
** pthread_getspecific once latched. No new state is made there (a call
** that missed it would publish a fresh one with 0 kept). */
struct ending {
    struct rt_hot *in_body, *in_destructor;
    void *direct_in_destructor, *get_in_destructor;
    unsigned kept_in_destructor;
    int destructor_ran;
};

static pthread_key_t early_key;
static struct ending ending;

static void early_destructor(void *value)
{
    (void)value;
    ending.direct_in_destructor = direct_read();
    ending.get_in_destructor = pthread_getspecific(rt_key());
    ending.in_destructor = rt_hot();
    ending.kept_in_destructor = rt_chunk_kept();
    ending.destructor_ran++;
}

static void *keeps_three_then_ends(void *unused)
{
    void *c[3];
    (void)unused;
    ending.in_body = rt_hot();
    for (int i = 0; i < 3; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i < 3; i++)
        rt_chunk_give(c[i], c[i]);
    pthread_setspecific(early_key, &early_key);
    return NULL;
}

START_TEST(a_destructor_before_the_runtimes_finds_the_threads_own_state)
{
    ck_assert_int_eq(pthread_key_create(&early_key, early_destructor), 0);
    rt_init();
    ck_assert_uint_lt(early_key, rt_key());
    ck_assert_ptr_nonnull(rt_hot()); /* main's publish: the path opens */
    for (int latched = 0; latched < 2; latched++) {
        if (latched)
            rt_hot_disable();
        memset(&ending, 0, sizeof ending);
        chunks_reset();
        run_thread(keeps_three_then_ends, NULL);
        struct chunk_counts n = chunks_counted();
        ck_assert_int_eq(ending.destructor_ran, 1);
        ck_assert_ptr_nonnull(ending.in_body);
        ck_assert_msg(ending.in_destructor == ending.in_body,
                      "%s: the destructor's rt_hot() is not the thread's state",
                      latched ? "latched" : "open");
        ck_assert_ptr_eq(ending.get_in_destructor, ending.in_body);
        ck_assert_ptr_eq(ending.direct_in_destructor,
                         RT_PRIM_DIRECT && !latched ? (void *)ending.in_body : NULL);
        ck_assert_uint_eq(ending.kept_in_destructor, 3);
        /* then the runtime's destructor freed the 3, made no other */
        ck_assert_uint_eq(n.mallocs, 3);
        ck_assert_uint_eq(n.frees, 3);
        ck_assert_uint_eq(n.frees_dirty, 0);
        ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT && !latched);
    }
}
END_TEST

/* ---- a key's slot left by a key the program deleted --------------------- */

/* Found by the contract-wide test push of 6 Dec 2026 (tw14b), before a
** fix: the direct read returns whatever word the key's slot holds, and a
** deleted key's value is still there on a thread that set it (glibc's
** pthread_key_delete only bumps the key's sequence number; only
** pthread_getspecific compares it and ignores the word). A main that was
** not the first to publish took the program's old pointer for its state
** ("Assertion 'h != (struct rt_hot *)stale_value' failed"); the portable
** build never did. rt_init now makes main's slot NULL (runtime.c). No
** other thread may exist before rt_init (the contract), so main's is the
** only slot that can hold such a word. */
/* glibc hands out the lowest free key, so a key the program made, set on
** main and deleted before rt_init is the runtime's key: main's slot still
** holds the program's old value (glibc does not clear it at the delete;
** pthread_getspecific answers NULL for it, POSIX: a new key is NULL on
** every thread). The contract: rt_hot() is this thread's runtime state,
** and "a NULL slot (a fresh thread) takes the cold path". A stale word is
** not this thread's state, whatever the direct read finds there. */
static unsigned char stale_value[sizeof(struct rt_hot)];

static void *first_publisher(void *arg)
{
    *(struct rt_hot **)arg = rt_hot();
    return NULL;
}

START_TEST(a_value_a_deleted_key_left_on_main_is_never_its_state)
{
    pthread_key_t old;
    struct rt_hot *theirs = NULL;

    memset(stale_value, 0xa5, sizeof stale_value);
    ck_assert_int_eq(pthread_key_create(&old, NULL), 0);
    ck_assert_int_eq(pthread_setspecific(old, stale_value), 0);
    ck_assert_int_eq(pthread_key_delete(old), 0);
    rt_init();
    ck_assert_uint_eq(rt_key(), old); /* the lowest free key: the same one */
    run_thread(first_publisher, &theirs); /* the process's first publish */
    ck_assert_ptr_nonnull(theirs);
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
    struct rt_hot *h = rt_hot();
    ck_assert_ptr_ne(h, (struct rt_hot *)stale_value);
    ck_assert_ptr_ne(h, theirs);
    ck_assert_ptr_eq(pthread_getspecific(rt_key()), h);
    ck_assert_ptr_eq(rt_hot(), h);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

/* The same through the public API alone: a task's thread makes the
** process's first publish, and main's first rt_alloc then takes the
** program's old value for main's state and writes main's task into it:
** the program's own bytes change ("Nothing is ever silently corrupted").
** Fails on the direct path: "the runtime wrote into the program's old key
** value". */
static unsigned char program_data[2 * sizeof(struct rt_hot)];

static void *publishes_on_a_task(void *arg)
{
    (void)arg;
    rt_free(rt_alloc(8));
    return NULL;
}

START_TEST(a_value_a_deleted_key_left_on_main_is_never_written_by_the_runtime)
{
    pthread_key_t old;
    static const unsigned char zero[sizeof program_data];

    ck_assert_int_eq(pthread_key_create(&old, NULL), 0);
    ck_assert_int_eq(pthread_setspecific(old, program_data), 0);
    ck_assert_int_eq(pthread_key_delete(old), 0);
    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    rt_init();
    rt_task *t = rt_spawn(publishes_on_a_task, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(rt_join(t, NULL), RT_OK);
    void *p = rt_alloc(16);
    ck_assert_msg(memcmp(program_data, zero, sizeof zero) == 0,
                  "the runtime wrote into the program's old key value");
    ck_assert_uint_ge(rt_held(), 16);
    rt_free(p);
    ck_assert_uint_eq(rt_held(), 0); /* D10: what is held, not what was */
    ck_assert_ptr_ne(rt_hot(), (struct rt_hot *)program_data);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("hot");
    suite_add_test(s, direct_path_is_live);
    suite_add_test(s, direct_read_matches_getspecific_on_many_threads);
    suite_add_test(s, a_fresh_thread_publishes_its_own_slot);
    suite_add_test(s, a_thread_older_than_the_first_publish_reads_it_through_its_release);
    suite_add_test(s, a_thread_made_before_rt_init_has_no_state_then_may_publish_first);
    suite_add_test(s, readers_race_the_latch_and_every_read_is_right);
    suite_add_test(s, a_forced_mismatch_latches_and_every_thread_reverts);
    suite_add_test(s, a_mismatch_at_the_first_publish_never_opens_the_path);
    suite_add_test(s, disable_before_the_first_publish_is_for_good);
    suite_add_test(s, disable_after_the_path_opened_is_for_good);
    suite_add_test(s, a_key_of_32_or_more_takes_the_fallback_from_the_start);
    suite_add_test(s, the_keys_either_side_of_32_take_their_path);
    suite_add_test(s, the_slot_is_found_at_indices_across_the_first_32_among_the_programs_keys);
    suite_add_test(s, the_search_finds_a_word_of_its_own_for_each_of_the_first_32_keys);
    suite_add_test(s, before_init_there_is_no_state_and_no_direct_path);
    suite_add_test(s, the_runtime_uses_no_pthread_key_but_the_one_rt_init_made);
    suite_add_test(s, the_first_publish_may_be_a_plain_threads_or_a_tasks);
    suite_add_test(s, a_mismatch_at_any_later_publish_latches_whoever_publishes);
    suite_add_test(s, the_cold_path_gives_a_thread_its_own_state_open_or_latched);
    suite_add_test(s, a_slot_that_does_not_follow_the_second_marker_is_not_taken);
    suite_add_test(s, a_first_marker_found_in_two_words_takes_neither);
    suite_add_test(s, a_publish_whose_get_disagrees_latches_first_or_later);
    suite_add_test(s, a_later_publish_whose_get_disagrees_latches);
    suite_add_test(s, every_set_of_a_publish_that_misleads_a_read_leaves_the_path_shut);
    suite_add_test(s, a_destructor_before_the_runtimes_finds_the_threads_own_state);
    suite_add_test(s, a_value_a_deleted_key_left_on_main_is_never_its_state);
    suite_add_test(s, a_value_a_deleted_key_left_on_main_is_never_written_by_the_runtime);
    return s;
}
