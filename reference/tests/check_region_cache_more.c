/*
** check_region_cache_more.c: the chunk cache's edges that the generated
** mutants showed untested (seed 000, docs/mutants.md).
**
** - Out of memory: a chunk or a thread's state that cannot be allocated
**   traps, found by injection (RLIMIT_AS, or a pthread_setspecific that
**   fails), not by hope.
**   A give that traps so has cleared its range first.
** - The error shape: the whole line, newline included, reaches stderr even
**   when stderr is buffered.
** - A thread's state is one struct rt_hot, freed when the thread ends.
** - Region fields: what outer holds before rt_init and after a close.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "costs.h"
#include "internal.h"
#include "refrt.h"
#include "testutil.h"

/* ---- injection ------------------------------------------------------------ */

#if !UNDER_SANITIZER
/* This binary's pthread_setspecific: the runtime's calls bind to it (the
** library is static), so a test can make publishing a thread's state fail.
** Not under sanitizers: TSan calls it while it starts a thread, before that
** thread may run instrumented code. */
static int fail_setspecific;
/* When not 0: the calls left until the one that fails (1: the next), and
** only that one. */
static int fail_setspecific_at;

int pthread_setspecific(pthread_key_t key, const void *value)
{
    static int (*real)(pthread_key_t, const void *);
    if (fail_setspecific || (fail_setspecific_at != 0 && --fail_setspecific_at == 0))
        return ENOMEM;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
    return real(key, value);
}
#endif

/* Caps the address space a little above what the process maps now, so
** that the next few MiB of allocation fail. The soft limit only: a
** coverage build's crash handler may lift it to write its counters. */
static void cap_address_space(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (8u << 20);
    struct rlimit r;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &r), 0);
    r.rlim_cur = cap;
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &r), 0);
}

/* Allocates until nothing of any size is left (the blocks are never
** freed: the child that calls this dies right after). Through a volatile
** pointer, or the compiler may drop an allocation nobody reads. */
static void use_up_the_heap(void)
{
    void *(*volatile allocate)(size_t) = malloc;
    for (size_t n = 1u << 20; n >= 1024; n /= 2)
        while (allocate(n) != NULL)
            ;
    for (size_t n = 1024; n >= 16; n -= 16)
        while (allocate(n) != NULL)
            ;
}

static void take_with_no_memory_left(void *unused)
{
    (void)unused;
    cap_address_space();
    for (int i = 0; i < 100000; i++)
        if (rt_chunk_take() == NULL)
            _exit(3); /* take must trap, never hand out NULL */
    _exit(4);
}

START_TEST(a_chunk_malloc_cannot_make_traps)
{
    ck_assert_trap(take_with_no_memory_left, NULL);
}
END_TEST

static void first_use_with_no_memory_left(void *unused)
{
    (void)unused;
    rt_init();
    cap_address_space();
    use_up_the_heap();
    rt_chunk_kept(); /* the first use makes this thread's state */
    _exit(3);
}

START_TEST(a_thread_state_that_cannot_be_allocated_traps)
{
    ck_assert_trap(first_use_with_no_memory_left, NULL);
}
END_TEST

#if !UNDER_SANITIZER
/* Every publish traps when its set fails, not only the process's first:
** main's first call, a plain thread's and a task's after main published,
** and a later thread's once the direct path is latched off. */
enum { FIRST_PUBLISH, LATER_ON_A_PLAIN_THREAD, LATER_ON_A_TASK, LATER_AFTER_THE_LATCH,
       PUBLISHES };

static void *use_unpublished(void *unused)
{
    (void)unused;
    fail_setspecific = 1;
    rt_chunk_kept();
    return NULL;
}

static void *task_body(void *unused)
{
    (void)unused;
    return NULL;
}

static void first_use_unpublished(void *which)
{
    int n = (int)(intptr_t)which;
    pthread_t t;

    rt_init();
    if (n == FIRST_PUBLISH)
        use_unpublished(NULL);
    rt_chunk_kept(); /* main publishes first */
    if (n == LATER_AFTER_THE_LATCH)
        rt_hot_disable();
    if (n == LATER_ON_A_TASK) {
        fail_setspecific = 1; /* the task's thread publishes as it starts */
        rt_join(rt_spawn(task_body, NULL), NULL);
    } else {
        pthread_create(&t, NULL, use_unpublished, NULL);
        pthread_join(t, NULL);
    }
    _exit(3);
}

START_TEST(a_thread_state_that_cannot_be_published_traps)
{
    for (int n = FIRST_PUBLISH; n < PUBLISHES; n++)
        ck_assert_trap(first_use_unpublished, (void *)(intptr_t)n);
}
END_TEST
#endif

/* A give that is its thread's first call makes the thread's state, to
** find its cache. When that fails (no memory for the state, or it cannot
** be published) the give traps, and it has cleared the range by then, as
** its contract orders (it clears, then keeps or frees): a trap leaves no
** byte a region handed out in the chunk. The dying child's SIGILL handler
** reads the bytes, then lets the signal go on as before. On main (its
** first call after rt_init) and on a plain thread. */
enum { STATE_NOT_ALLOCATED, STATE_NOT_PUBLISHED };
#define GIVEN_BYTES 1000
static unsigned char *given; /* taken before rt_init: main has no state yet */
static struct sigaction trap_before_give;

static void report_the_range_on_trap(int sig)
{
    int cleared = 1;
    for (size_t i = 0; i < GIVEN_BYTES; i++)
        cleared &= given[i] == 0;
    const char *m = !cleared ? "the range was not cleared\n"
                    : given[GIVEN_BYTES] != 0x5E ? "more than the range was cleared\n"
                    : "the range was cleared, nothing past it\n";
    ssize_t w = write(2, m, strlen(m));
    (void)w;
    sigaction(sig, &trap_before_give, NULL); /* the trap comes again, to that */
}

static void give_that_fails(int how)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = report_the_range_on_trap;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGILL, &sa, &trap_before_give);
    if (how == STATE_NOT_ALLOCATED)
        fail_nth(1);
#if !UNDER_SANITIZER
    else
        fail_setspecific = 1;
#endif
    rt_chunk_give(given, given + GIVEN_BYTES);
    _exit(3);
}

static void give_first_on_main(void *how)
{
    give_that_fails(*(int *)how);
}

static void *give_first_body(void *how)
{
    give_that_fails(*(int *)how);
    return NULL;
}

static void give_first_on_a_thread(void *how)
{
    pthread_t t;
    if (pthread_create(&t, NULL, give_first_body, how) != 0)
        _exit(5);
    pthread_join(t, NULL);
    _exit(4);
}

START_TEST(a_give_whose_thread_state_cannot_be_made_has_cleared_the_range_when_it_traps)
{
    void (*where[])(void *) = {give_first_on_main, give_first_on_a_thread};
    const char *names[] = {"main", "a plain thread"};
    given = rt_chunk_take();
    memset(given, 0x5E, RT_CHUNK_SIZE);
    rt_init(); /* publishes nothing: main's first call is the give, in each child */
    for (int how = STATE_NOT_ALLOCATED; how <= (UNDER_SANITIZER ? 0 : 1); how++)
        for (int w = 0; w < 2; w++) {
            struct death d = run_child(where[w], &how);
            ck_assert_msg(d.signal == SIGILL &&
                          strstr(d.err, "the range was cleared, nothing past it\n") != NULL,
                          "a give on %s whose state cannot be %s: expected a trap (SIGILL) "
                          "with the range cleared, got signal %d exit %d; stderr: %s",
                          names[w], how == STATE_NOT_ALLOCATED ? "allocated" : "published",
                          d.signal, d.exit_status, d.err);
        }
}
END_TEST

static void take_every_key(void)
{
    pthread_key_t k;
    /* PTHREAD_KEYS_MAX is at least 128 and 1024 on glibc: the loop ends */
    for (int i = 0; i < 100000 && pthread_key_create(&k, NULL) == 0; i++)
        ;
}

static void init_with_no_key_left(void *unused)
{
    (void)unused;
    take_every_key();
    rt_init();
    _exit(3);
}

START_TEST(init_without_a_key_left_is_a_violation)
{
    ck_assert_violation(init_with_no_key_left, NULL,
                        "refrt: rt_init: cannot create the runtime's pthread key");
}
END_TEST

#if !UNDER_SANITIZER
/* rt_init makes main's slot of its new key NULL (a deleted key's word may
** be there, docs/hot-path.md): a pthread_setspecific that fails there is a
** violation, not a key left half made. */
static void init_whose_slot_clear_fails(void *unused)
{
    (void)unused;
    fail_setspecific_at = 1;
    rt_init();
    _exit(3);
}

START_TEST(init_whose_clear_of_mains_slot_fails_is_a_violation)
{
    ck_assert_violation(init_whose_slot_clear_fails, NULL,
                        "refrt: rt_init: cannot clear the runtime's pthread key");
}
END_TEST

/* An rt_init that stops at a violation has published no key: the chunk
** cache is still off when it aborts, as before the call (a violation
** takes, keeps and frees nothing first). Seen from a SIGABRT handler, the
** one place a program still runs after the violation: a chunk taken and
** given back there is malloc'ed and freed, not kept. The runtime is
** called from the handler because abort is raised from rt_init itself,
** outside any malloc (in a test child only: no handler should do this). */
static void kept_at_abort(int sig)
{
    (void)sig;
    void *p = rt_chunk_take();
    rt_chunk_give(p, p);
    _exit(10 + (int)rt_chunk_kept());
}

static void init_fails_with_a_handler_that_takes_a_chunk(void *clear_fails)
{
    signal(SIGABRT, kept_at_abort);
    if (clear_fails != NULL)
        fail_setspecific_at = 1;
    else
        take_every_key();
    rt_init();
    _exit(3);
}

START_TEST(an_init_that_stops_at_a_violation_leaves_the_cache_off)
{
    static const char *const why[2] = {"cannot create the runtime's pthread key",
                                       "cannot clear the runtime's pthread key"};
    for (int clear_fails = 0; clear_fails < 2; clear_fails++) {
        struct death d = run_child(init_fails_with_a_handler_that_takes_a_chunk,
                                   clear_fails ? (void *)1 : NULL);
        if (d.signal != 0 || d.exit_status != 10 || strstr(d.err, why[clear_fails]) == NULL)
            ck_abort_msg("rt_init that %s: expected its violation, then a chunk taken and "
                         "given at the abort kept by no cache (exit 10), got signal %d exit %d "
                         "(10 + chunks kept); stderr: %s", why[clear_fails], d.signal,
                         d.exit_status, d.err);
    }
}
END_TEST
#endif

/* ---- the error shape -------------------------------------------------------- */

static void hot_before_init(void *unused)
{
    (void)unused;
    rt_hot();
}

START_TEST(a_violation_is_one_whole_line)
{
    struct death d = run_child(hot_before_init, NULL);
    ck_assert_int_eq(d.signal, SIGABRT);
    ck_assert_str_eq(d.err, "refrt: rt_hot: rt_init has not been called\n");
}
END_TEST

static char stderr_buffer[BUFSIZ];

static void violation_with_stderr_buffered(void *unused)
{
    (void)unused;
    setvbuf(stderr, stderr_buffer, _IOFBF, sizeof stderr_buffer);
    rt_region_close(&(rt_region){0});
}

START_TEST(a_violation_reaches_a_buffered_stderr)
{
    struct death d = run_child(violation_with_stderr_buffered, NULL);
    ck_assert_int_eq(d.signal, SIGABRT);
    ck_assert_str_eq(d.err, "refrt: rt_region_close: region is not open\n");
}
END_TEST

/* A violation prints its line and aborts at once, whatever the program's
** other threads hold of its stdio: a thread that keeps stdout locked
** (flockfile) or one asleep in a read of stdin holds a stream lock the
** violation must not wait for. Two violations, one before rt_init (a
** region) and one of a task's (main's rt_free of a stack pointer), each
** beside either holder; alarm() turns a hang into SIGALRM in 3 s. */
enum { HOLDS_STDOUT, READS_STDIN, STDIO_HOLDS };

struct stdio_holder {
    int how;
    int tid; /* published once the holder holds, or is about to read */
};

static void *holds_a_stream(void *arg)
{
    struct stdio_holder *h = arg;
    char line[64];
    if (h->how == HOLDS_STDOUT)
        flockfile(stdout);
    __atomic_store_n(&h->tid, (int)gettid(), __ATOMIC_RELEASE);
    if (h->how == READS_STDIN)
        (void)fgets(line, sizeof line, stdin); /* nobody writes the pipe */
    for (;;)
        pause();
    return NULL;
}

static void violation_beside_a_held_stream(void *arg)
{
    int how = (int)(intptr_t)arg % STDIO_HOLDS, which = (int)(intptr_t)arg / STDIO_HOLDS;
    struct stdio_holder h = {how, 0};
    pthread_t t;
    int fds[2];
    die_of_alarm_after(3); /* a hang, not a bound: the abort takes milliseconds */
    if (how == READS_STDIN) {
        if (pipe(fds) != 0 || dup2(fds[0], 0) != 0) /* fds[1] stays open: the read waits */
            _exit(3);
    }
    printf("the program's own output, still in stdout's buffer");
    if (which == 1)
        rt_init();
    if (pthread_create(&t, NULL, holds_a_stream, &h) != 0)
        _exit(4);
    while (__atomic_load_n(&h.tid, __ATOMIC_ACQUIRE) == 0)
        usleep(100);
    thread_wait_asleep(h.tid); /* in pause() holding stdout, or in the read */
    if (which == 0) {
        rt_region_close(&(rt_region){0});
    } else {
        int local;
        rt_free(&local);
    }
}

START_TEST(a_violation_aborts_at_once_whatever_another_thread_holds_of_stdio)
{
    static const char *const lines[] = {
        "refrt: rt_region_close: region is not open\n",
        "refrt: rt_free: ", /* then the pointer */
    };
    for (int which = 0; which < 2; which++)
        for (int how = 0; how < STDIO_HOLDS; how++) {
            struct death d = run_child(violation_beside_a_held_stream,
                                       (void *)(intptr_t)(which * STDIO_HOLDS + how));
            ck_assert_msg(d.signal == SIGABRT,
                          "%s held by another thread, violation %d: signal %d (SIGALRM %d: "
                          "it hung), exit %d; stderr: %s",
                          how == HOLDS_STDOUT ? "stdout" : "stdin", which, d.signal, SIGALRM,
                          d.exit_status, d.err);
            ck_assert_msg(strncmp(d.err, lines[which], strlen(lines[which])) == 0 &&
                              strchr(d.err, '\n') == d.err + strlen(d.err) - 1,
                          "one line, %s: %s", lines[which], d.err);
        }
}
END_TEST

/* The check holds wherever a region may be opened: before rt_init (no
** thread state yet), on main after it, on a plain thread (a state, no
** task), on a task, and with another region already open. */
enum { BEFORE_INIT, ON_MAIN, ON_PLAIN_THREAD, ON_TASK, INSIDE_A_REGION, OPEN_CONTEXTS };

static void *open_null_here(void *unused)
{
    (void)unused;
    rt_region_open(NULL);
    return NULL;
}

static void open_null(void *context)
{
    int where = (int)(intptr_t)context;
    pthread_t t;
    rt_region outer;

    if (where != BEFORE_INIT)
        rt_init();
    if (where == ON_PLAIN_THREAD) {
        pthread_create(&t, NULL, open_null_here, NULL);
        pthread_join(t, NULL);
    } else if (where == ON_TASK) {
        rt_join(rt_spawn(open_null_here, NULL), NULL);
    } else {
        if (where == INSIDE_A_REGION)
            rt_region_open(&outer);
        open_null_here(NULL);
    }
    exit(0);
}

START_TEST(opening_a_null_region_is_a_violation)
{
    for (int where = BEFORE_INIT; where < OPEN_CONTEXTS; where++)
        ck_assert_violation(open_null, (void *)(intptr_t)where,
                            "refrt: rt_region_open: region is NULL\n");
}
END_TEST

/* A violation changes nothing before it aborts: no chunk is taken,
** malloc'ed, kept or freed by the call that breaks the contract, whatever
** the thread keeps (0, 1 or 16 chunks) and wherever it is (main, a plain
** thread, a task). A SIGABRT handler compares the chunk traffic and the
** thread's kept count with what they were just before the call. Thread
** ends are in it too: a thread or a task that ends with a region open
** aborts with its kept chunks untouched (the violation first; what the
** thread keeps is lost to the abort, not freed before it). */
enum { VIOL_OPEN_NULL, VIOL_GIVE_TWICE, VIOL_CLOSE_NOT_OPEN, VIOL_ALLOC_NOT_OPEN,
       VIOL_THREAD_ENDS_OPEN, VIOL_KINDS };
static const char *const viol_msgs[] = {
    "refrt: rt_region_open: region is NULL\n",
    "was given twice",
    "refrt: rt_region_close: region is not open\n",
    "refrt: rt_region_alloc: region is not open\n",
    "with a region still open\n", /* a thread ended, or its task returned */
};
static struct chunk_counts viol_before;
static long viol_kept = -1; /* -1: the violating thread is not this one */
static __thread int viol_here;

static void viol_check(int sig)
{
    (void)sig;
    struct chunk_counts now = chunks_counted();
    if (now.mallocs != viol_before.mallocs || now.frees != viol_before.frees) {
        dprintf(2, "chunks moved before the abort: mallocs %lu -> %lu, frees %lu -> %lu\n",
                viol_before.mallocs, now.mallocs, viol_before.frees, now.frees);
        _exit(3);
    }
    if (viol_here && viol_kept >= 0 && (long)rt_chunk_kept() != viol_kept) {
        dprintf(2, "kept %ld before the call, %ld at the abort\n", viol_kept,
                (long)rt_chunk_kept());
        _exit(4);
    }
    _exit(0);
}

enum { VIOL_ON_MAIN, VIOL_ON_A_THREAD, VIOL_ON_A_TASK, VIOL_PLACES };

struct viol {
    int kind, where, keep;
};

static void viol_keep(int keep)
{
    rt_region r[RT_REGION_CACHE_SLOTS];
    for (int i = 0; i < keep; i++)
        rt_region_open(&r[i]);
    for (int i = keep; i-- > 0;)
        rt_region_close(&r[i]);
}

static void *viol_here_now(void *arg)
{
    const struct viol *v = arg;
    rt_region r, never;
    unsigned char *given = NULL;
    memset(&never, 0, sizeof never);
    viol_keep(v->keep);
    if (v->kind == VIOL_GIVE_TWICE) {
        rt_region_open(&r);
        given = r.base;
        rt_region_close(&r); /* its chunk is the top one kept */
    }
    if (v->kind == VIOL_THREAD_ENDS_OPEN) {
        rt_region_open(&r);
        viol_before = chunks_counted();
        return NULL; /* the end is the violation */
    }
    viol_before = chunks_counted();
    viol_kept = (long)rt_chunk_kept();
    viol_here = 1;
    if (v->kind == VIOL_OPEN_NULL)
        rt_region_open(NULL);
    else if (v->kind == VIOL_GIVE_TWICE)
        rt_chunk_give(given, given + RT_CHUNK_SIZE);
    else if (v->kind == VIOL_CLOSE_NOT_OPEN)
        rt_region_close(&never);
    else
        (void)rt_region_alloc(&never, 1, 8, 8);
    return NULL;
}

static void viol_in(void *arg)
{
    const struct viol *v = arg;
    struct sigaction sa = {.sa_handler = viol_check};
    sigaction(SIGABRT, &sa, NULL);
    rt_init();
    /* main cannot end here and go on: its thread end is a plain thread's */
    if (v->where == VIOL_ON_MAIN && v->kind != VIOL_THREAD_ENDS_OPEN) {
        viol_here_now(arg);
    } else if (v->where != VIOL_ON_A_TASK) {
        pthread_t t;
        pthread_create(&t, NULL, viol_here_now, arg);
        pthread_join(t, NULL);
    } else {
        rt_join(rt_spawn(viol_here_now, arg), NULL);
    }
    exit(5); /* no violation */
}

START_TEST(a_violation_takes_keeps_and_frees_no_chunk_before_it_aborts)
{
    static const char *const places[] = {"main", "a plain thread", "a task"};
    static const int keeps[] = {0, 1, RT_REGION_CACHE_SLOTS};
    for (int kind = 0; kind < VIOL_KINDS; kind++)
        for (int where = VIOL_ON_MAIN; where < VIOL_PLACES; where++)
            for (size_t k = 0; k < sizeof keeps / sizeof *keeps; k++) {
                if (kind == VIOL_GIVE_TWICE && keeps[k] == RT_REGION_CACHE_SLOTS)
                    continue; /* its own region's chunk must fit the stack */
                struct viol v = {kind, where, keeps[k]};
                struct death d = run_child(viol_in, &v);
                ck_assert_msg(d.signal == 0 && d.exit_status == 0 &&
                                  strstr(d.err, viol_msgs[kind]) != NULL,
                              "violation %d on %s keeping %d chunks: signal %d exit %d; "
                              "stderr: %s", kind, places[where], keeps[k], d.signal,
                              d.exit_status, d.err);
            }
}
END_TEST

/* A region that is not open (NULL, never opened: zeroed as a static one
** is, or closed already) is the violation "region is not open" of
** rt_region_close and of rt_region_alloc (with a size that fits and one
** that overflows: the region is checked first) wherever it is used:
** before rt_init, on main, on a plain thread, on a task and with another
** region open. */
enum { NOT_OPEN_NULL, NOT_OPEN_ZEROED, NOT_OPEN_CLOSED, NOT_OPEN_KINDS };
enum { CLOSE_IT, ALLOC_FROM_IT, ALLOC_TOO_MUCH_FROM_IT, NOT_OPEN_OPS };
static const char *const not_open_kinds[] = {"NULL", "never opened", "closed"};
static const char *const not_open_ops[] = {"rt_region_close", "rt_region_alloc",
                                           "rt_region_alloc"};

struct not_open {
    int where, kind, op;
};

static void *use_not_open_here(void *arg)
{
    const struct not_open *n = arg;
    rt_region zeroed, closed, *r = NULL;
    memset(&zeroed, 0, sizeof zeroed);
    if (n->kind == NOT_OPEN_ZEROED)
        r = &zeroed;
    if (n->kind == NOT_OPEN_CLOSED) {
        rt_region_open(&closed);
        rt_region_alloc(&closed, 10, 10, 0x21);
        rt_region_close(&closed);
        r = &closed;
    }
    if (n->op == CLOSE_IT)
        rt_region_close(r);
    else if (n->op == ALLOC_FROM_IT)
        rt_region_alloc(r, 1, 1, 0);
    else
        rt_region_alloc(r, SIZE_MAX, 2, 0);
    _exit(3); /* the call returned */
}

static void use_not_open(void *arg)
{
    const struct not_open *n = arg;
    pthread_t t;
    rt_region outer;

    if (n->where != BEFORE_INIT) {
        rt_set_strategy(rt_fixed_strategy(64 * 1024));
        rt_init();
    }
    if (n->where == ON_PLAIN_THREAD) {
        pthread_create(&t, NULL, use_not_open_here, arg);
        pthread_join(t, NULL);
    } else if (n->where == ON_TASK) {
        rt_join(rt_spawn(use_not_open_here, arg), NULL);
    } else {
        if (n->where == INSIDE_A_REGION)
            rt_region_open(&outer);
        use_not_open_here(arg);
    }
    exit(0);
}

START_TEST(a_region_not_open_is_a_violation_of_close_and_alloc_wherever_it_is_used)
{
    static const char *const wheres[] = {"before rt_init", "on main", "on a plain thread",
                                         "on a task", "inside a region"};
    for (int where = BEFORE_INIT; where < OPEN_CONTEXTS; where++)
        for (int kind = 0; kind < NOT_OPEN_KINDS; kind++)
            for (int op = 0; op < NOT_OPEN_OPS; op++) {
                struct not_open n = {where, kind, op};
                char want[96];
                snprintf(want, sizeof want, "refrt: %s: region is not open\n", not_open_ops[op]);
                struct death d = run_child(use_not_open, &n);
                if (d.signal != SIGABRT || strstr(d.err, want) == NULL)
                    ck_abort_msg("%s of a %s region %s%s: expected SIGABRT and \"%s\", got "
                                 "signal %d exit %d; stderr: %s", not_open_ops[op],
                                 not_open_kinds[kind], wheres[where],
                                 op == ALLOC_TOO_MUCH_FROM_IT ? " (a size that overflows)" : "",
                                 want, d.signal, d.exit_status, d.err);
            }
}
END_TEST

/* ---- a thread's state --------------------------------------------------------- */

static void *hot_of_this_thread(void *out)
{
    *(struct rt_hot **)out = rt_hot();
    return NULL;
}

START_TEST(rt_hot_is_one_state_a_thread)
{
    rt_init();
    struct rt_hot *mine = rt_hot(), *theirs = NULL;
    pthread_t t;
    ck_assert_ptr_nonnull(mine);
    ck_assert_ptr_eq(rt_hot(), mine);
    ck_assert_ptr_eq(rt__hot_or_null(), mine);
    ck_assert_int_eq(pthread_create(&t, NULL, hot_of_this_thread, &theirs), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_nonnull(theirs);
    ck_assert_ptr_ne(theirs, mine);
}
END_TEST

START_TEST(a_disabled_direct_path_is_off)
{
    rt_init();
    rt_hot_disable();
    ck_assert(!rt_hot_direct());
    rt_hot_disable();
    ck_assert(!rt_hot_direct());
}
END_TEST

#if RT_PRIM_DIRECT
/* A test read that finds what the slot really holds: the direct read agrees. */
static void *honest_read(intptr_t off)
{
    return rt_prim_slot_read(off);
}

static void *publish_here(void *unused)
{
    (void)unused;
    rt_hot();
    return NULL;
}

/* A later thread's publish checks the direct read through the test hook
** when one is set; when that read agrees, the path stays open. */
START_TEST(a_direct_read_that_agrees_keeps_the_path_open)
{
    pthread_t t;
    rt_init();
    rt_hot();
    ck_assert(rt_hot_direct());
    rt__hot_test_read = honest_read;
    ck_assert_int_eq(pthread_create(&t, NULL, publish_here, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    rt__hot_test_read = NULL;
    ck_assert(rt_hot_direct());
}
END_TEST
#endif

static size_t heap_in_use(void)
{
    return mallinfo2().uordblks; /* every arena */
}

START_TEST(a_thread_state_is_one_struct_rt_hot)
{
    rt_init();
    size_t before = heap_in_use();
    rt_chunk_kept(); /* makes main's state */
    size_t grew = heap_in_use() - before;
    ck_assert_uint_ge(grew, sizeof(struct rt_hot));
    ck_assert_uint_lt(grew, sizeof(struct rt_hot) + 64);
}
END_TEST

static void *make_state(void *unused)
{
    (void)unused;
    rt_chunk_kept();
    return NULL;
}

/* 256 threads one after another, each making its state: what they leave
** allocated must stay far below 256 states. */
START_TEST(a_thread_end_frees_its_state)
{
    enum { THREADS = 256 };
    pthread_t t;
    rt_init();
    for (int i = 0; i < 8; i++) { /* the arenas and stacks threads reuse */
        ck_assert_int_eq(pthread_create(&t, NULL, make_state, NULL), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
    }
    size_t before = heap_in_use();
    for (int i = 0; i < THREADS; i++) {
        ck_assert_int_eq(pthread_create(&t, NULL, make_state, NULL), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
    }
    size_t after = heap_in_use();
    ck_assert_uint_lt(after > before ? after - before : 0,
                      THREADS * sizeof(struct rt_hot) / 4);
}
END_TEST

/* ---- region fields ------------------------------------------------------------ */

/* Before rt_init no thread state tracks regions: region.c marks such a
** region as its own outer, so that closing it later is not taken for a
** close out of order. */
START_TEST(a_region_opened_before_init_is_its_own_outer)
{
    rt_region r;
    memset(&r, 0xAB, sizeof r);
    rt_region_open(&r);
    ck_assert_ptr_eq(r.outer, &r);
    rt_region_close(&r);
}
END_TEST

START_TEST(a_closed_region_holds_no_pointer)
{
    rt_init();
    rt_region a, b;
    rt_region_open(&a);
    rt_region_open(&b);
    ck_assert_ptr_eq(b.outer, &a);
    rt_region_close(&b);
    ck_assert_ptr_null(b.base);
    ck_assert_ptr_null(b.bump);
    ck_assert_ptr_null(b.outer);
    rt_region_close(&a);
}
END_TEST

/* ---- edges of regions and of the direct path -------------------------------- */

static void alloc_null(void *unused)
{
    (void)unused;
    rt_init();
    rt_region_alloc(NULL, 1, 1, 0);
}

static void close_null(void *unused)
{
    (void)unused;
    rt_init();
    rt_region_close(NULL);
}

static void give_null(void *unused)
{
    (void)unused;
    rt_init();
    rt_chunk_give(NULL, NULL);
}

START_TEST(a_null_region_or_chunk_is_a_violation)
{
    ck_assert_violation(alloc_null, NULL, "refrt: rt_region_alloc: region is not open\n");
    ck_assert_violation(close_null, NULL, "refrt: rt_region_close: region is not open\n");
    ck_assert_violation(give_null, NULL,
                        "refrt: rt_chunk_give: [(nil), (nil)) is not a range inside one chunk\n");
}
END_TEST

/* The bump past the end of the chunk (a program that wrote the region's
** fields): the room left would wrap, so the alloc traps instead. */
static void alloc_past_the_chunk(void *unused)
{
    rt_region r;
    (void)unused;
    rt_init();
    rt_region_open(&r);
    r.bump = r.base + RT_CHUNK_SIZE + 16;
    rt_region_alloc(&r, 1, 1, 0);
    _exit(3);
}

START_TEST(a_region_bumped_past_its_chunk_traps)
{
    ck_assert_trap(alloc_past_the_chunk, NULL);
}
END_TEST

/* Opened before rt_init, closed after: no thread state knew it, and its
** close is no violation; the chunk goes to this thread's cache. */
START_TEST(a_region_opened_before_init_closes_after_it)
{
    rt_region r;
    rt_region_open(&r);
    rt_region_alloc(&r, 1, 64, 0x5a);
    rt_init();
    ck_assert_uint_eq(rt_chunk_kept(), 0);
    rt_region_close(&r);
    ck_assert_uint_eq(rt_chunk_kept(), 1);
    ck_assert_ptr_null(rt_hot()->innermost);
}
END_TEST

#if RT_PRIM_DIRECT
/* The runtime's key at or above the first block of keys (32 keys made
** before rt_init): no direct read is known for it, so the path stays off
** and every thread's state still comes through pthread_getspecific. */
START_TEST(a_key_past_the_first_block_keeps_the_direct_path_off)
{
    pthread_key_t k[RT_PRIM_FIRST_BLOCK_KEYS];
    struct rt_hot *theirs = NULL;
    pthread_t t;
    for (int i = 0; i < RT_PRIM_FIRST_BLOCK_KEYS; i++)
        ck_assert_int_eq(pthread_key_create(&k[i], NULL), 0);
    rt_init();
    ck_assert_ptr_nonnull(rt_hot());
    ck_assert(!rt_hot_direct());
    ck_assert_ptr_eq(rt__hot_or_null(), rt_hot());
    ck_assert_int_eq(pthread_create(&t, NULL, hot_of_this_thread, &theirs), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_ptr_nonnull(theirs);
    ck_assert_ptr_ne(theirs, rt_hot());
}
END_TEST

#endif

#if RT_PRIM_DIRECT && !UNDER_SANITIZER
/* Each pthread_setspecific of the slot search failing in turn (the first
** marker, the second, the NULL that clears the slot): the search finds no
** slot, the direct path stays off, and the state is published all the same. */
START_TEST(a_slot_search_whose_setspecific_fails_keeps_the_direct_path_off)
{
    for (int n = 1; n <= 3; n++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            rt_init();
            fail_setspecific_at = n;
            struct rt_hot *h = rt_hot();
            _exit(h != NULL && !rt_hot_direct() && rt__hot_or_null() == h &&
                          fail_setspecific_at == 0 ? 0 : 1);
        }
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "setspecific %d failing: status %#x", n, status);
    }
}
END_TEST
#endif

/* A thread-specific-data destructor that runs after the runtime's (a key
** made after rt_init: glibc runs destructors in key order) may still use
** the chunk cache, as any call on that thread may: the runtime's state is
** gone by then, so the call makes a new one, the chunk given there is kept
** like any other (1 kept), rt_hot() answers that new state, and the next
** round of destructors frees it and its chunks, cleared. Nothing leaks and
** nothing reads the state that was freed. On a plain thread and on a
** task's thread (a region needs no task). */
struct late_use {
    unsigned kept_after_give, kept_after_region;
    bool hot_answered, hot_is_new;
    struct rt_hot *first_state;
    void *chunk;
};

static pthread_key_t late_key;
static struct late_use late;

static void late_destructor(void *value)
{
    rt_region r;
    (void)value;
    late.chunk = rt_chunk_take();
    memset(late.chunk, 0x6b, 40);
    rt_chunk_give(late.chunk, (unsigned char *)late.chunk + 40);
    late.kept_after_give = rt_chunk_kept();
    late.hot_answered = rt_hot() != NULL;
    late.hot_is_new = rt_hot() != late.first_state || rt_hot()->kept == 1;
    rt_region_open(&r);
    rt_region_alloc(&r, 3, 21, 0x6c);
    rt_region_close(&r);
    late.kept_after_region = rt_chunk_kept();
}

static void *uses_the_runtime_then_sets_the_late_key(void *unused)
{
    (void)unused;
    late.first_state = rt_hot();
    pthread_setspecific(late_key, &late_key);
    return NULL;
}

START_TEST(a_destructor_after_the_runtimes_uses_the_cache_and_leaks_nothing)
{
    rt_set_strategy(rt_fixed_strategy(64 * 1024));
    rt_init();
    ck_assert_int_eq(pthread_key_create(&late_key, late_destructor), 0);
    for (int on_a_task = 0; on_a_task < 2; on_a_task++) {
        memset(&late, 0, sizeof late);
        chunks_reset();
        if (on_a_task) {
            rt_task *t = rt_spawn(uses_the_runtime_then_sets_the_late_key, NULL);
            ck_assert_ptr_nonnull(t);
            ck_assert_int_eq(rt_join(t, NULL), RT_OK);
        } else {
            pthread_t t;
            ck_assert_int_eq(pthread_create(&t, NULL, uses_the_runtime_then_sets_the_late_key,
                                            NULL), 0);
            ck_assert_int_eq(pthread_join(t, NULL), 0);
        }
        struct chunk_counts n = chunks_counted();
        ck_assert_msg(late.kept_after_give == 1 && late.kept_after_region == 1,
                      "%s: kept %u after the give, %u after the region (1 each)",
                      on_a_task ? "a task" : "a thread", late.kept_after_give,
                      late.kept_after_region);
        ck_assert(late.hot_answered && late.hot_is_new);
        ck_assert_msg(n.mallocs == 1 && n.frees == 1 && n.frees_dirty == 0,
                      "%s: %lu chunk mallocs, %lu frees, %lu dirty (1, 1, 0)",
                      on_a_task ? "a task" : "a thread", n.mallocs, n.frees, n.frees_dirty);
        ck_assert(!chunk_live(late.chunk));
    }
}
END_TEST

/* A chunk a thread took from its cache is the program's, wherever it goes:
** handed to another thread, it is not freed when its taker ends. The taker
** keeps 3, takes one back (2 kept) and hands it over; at its end exactly
** its 2 kept chunks are freed (the cost counter and the shim agree), and
** the chunk handed over is live and serves its new thread, whose give keeps
** it. At every depth the taker's stack can be left at: 0 to 15 kept. */
struct handed {
    int keep;
    void *chunk;
};

static void *keeps_then_hands_one_over(void *arg)
{
    struct handed *hd = arg;
    void *c[RT_REGION_CACHE_SLOTS];
    for (int i = 0; i <= hd->keep; i++)
        c[i] = rt_chunk_take();
    for (int i = 0; i <= hd->keep; i++)
        rt_chunk_give(c[i], c[i]);
    hd->chunk = rt_chunk_take();
    return NULL;
}

START_TEST(a_chunk_taken_and_handed_to_another_thread_outlives_its_taker)
{
    rt_init();
    for (int keep = 0; keep < RT_REGION_CACHE_SLOTS; keep++) {
        struct handed hd = {keep, NULL};
        pthread_t t;
        chunks_reset();
#if RT_TESTING
        rt__costs_reset();
#endif
        ck_assert_int_eq(pthread_create(&t, NULL, keeps_then_hands_one_over, &hd), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        struct chunk_counts n = chunks_counted();
#if RT_TESTING
        unsigned long released = rt__cost(RT_COST_CHUNKS_RELEASED);
#else /* the release build counts nothing: the frees say the same */
        unsigned long released = n.frees;
#endif
        ck_assert_msg(n.mallocs == (unsigned long)keep + 1 && n.frees == (unsigned long)keep &&
                          released == (unsigned long)keep,
                      "%d kept at the end: %lu mallocs, %lu frees, %lu released (%d, %d, %d)",
                      keep, n.mallocs, n.frees, released, keep + 1, keep, keep);
        ck_assert(chunk_live(hd.chunk));
        memset(hd.chunk, 0x77, RT_CHUNK_SIZE);
        unsigned before = rt_chunk_kept();
        rt_chunk_give(hd.chunk, (unsigned char *)hd.chunk + RT_CHUNK_SIZE);
        ck_assert_uint_eq(rt_chunk_kept(), before + 1);
        ck_assert_ptr_eq(rt_chunk_take(), hd.chunk);
        free(hd.chunk); /* the program's to free: it came from malloc */
    }
}
END_TEST

/* rt_init makes main a task before it publishes its key: a strategy set
** before rt_init, whose block_bytes rt_init asks for main's block, runs
** with the cache still off, as any call before rt_init (refrt.h): a chunk
** taken there is malloc'ed, given back is cleared and freed (0 kept), a
** region there is untracked, and rt_hot() there is the violation. After
** rt_init nothing is kept and no chunk is live. */
static struct {
    unsigned calls, kept_after_give, kept_after_region;
    void *chunk;
} during;

static size_t block_bytes_uses_the_cache(void *ctx, size_t running)
{
    rt_region r;
    (void)ctx;
    (void)running;
    during.calls++;
    during.chunk = rt_chunk_take();
    memset(during.chunk, 0x3c, 100);
    rt_chunk_give(during.chunk, (unsigned char *)during.chunk + 100);
    during.kept_after_give = rt_chunk_kept();
    rt_region_open(&r);
    rt_region_alloc(&r, 1, 100, 0x3d);
    rt_region_close(&r);
    during.kept_after_region = rt_chunk_kept();
    return 64 * 1024;
}

static size_t block_bytes_asks_rt_hot(void *ctx, size_t running)
{
    (void)ctx;
    (void)running;
    (void)rt_hot();
    return 64 * 1024;
}

static void init_whose_strategy_asks_rt_hot(void *unused)
{
    (void)unused;
    rt_set_strategy((rt_strategy){block_bytes_asks_rt_hot, NULL});
    rt_init();
    _exit(3);
}

START_TEST(the_strategy_rt_init_asks_runs_with_the_cache_off)
{
    /* first, while this process has not called rt_init: the child's is its first */
    ck_assert_violation(init_whose_strategy_asks_rt_hot, NULL,
                        "refrt: rt_hot: rt_init has not been called\n");
    chunks_reset();
    rt_set_strategy((rt_strategy){block_bytes_uses_the_cache, NULL});
    rt_init();
    struct chunk_counts n = chunks_counted();
    ck_assert_uint_eq(during.calls, 1);
    ck_assert_msg(during.kept_after_give == 0 && during.kept_after_region == 0,
                  "kept %u after the give, %u after the region, inside rt_init (0 each)",
                  during.kept_after_give, during.kept_after_region);
    ck_assert_msg(n.mallocs == 2 && n.frees == 2 && n.frees_dirty == 0,
                  "%lu chunk mallocs, %lu frees, %lu dirty (2, 2, 0)", n.mallocs, n.frees,
                  n.frees_dirty);
    ck_assert_uint_eq(rt_chunk_kept(), 0);
    ck_assert_ptr_nonnull(rt_hot());
}
END_TEST

/* A region opened before rt_init is untracked: closed while regions opened
** after rt_init are open inside it, that is not reported (docs/misuse.md),
** its chunk is given (kept, cleared), and the tracked regions inside it
** still close in order, 1 to 16 deep, on main and on a thread that opened
** its untracked region before rt_init. */
static void *closes_the_untracked_one_first(void *arg)
{
    rt_region *outer = arg;
    for (int depth = 1; depth <= RT_REGION_CACHE_SLOTS; depth++) {
        rt_region inner[RT_REGION_CACHE_SLOTS];
        unsigned kept = rt_chunk_kept();
        for (int i = 0; i < depth; i++) {
            rt_region_open(&inner[i]);
            rt_region_alloc(&inner[i], 1, 8, 0x11);
        }
        if (outer[depth - 1].base == NULL)
            return "the untracked region is not open";
        rt_region_close(&outer[depth - 1]);
        if (rt_hot()->innermost != &inner[depth - 1])
            return "closing the untracked region changed the innermost";
        for (int i = depth - 1; i >= 0; i--)
            rt_region_close(&inner[i]);
        if (rt_hot()->innermost != NULL || rt_chunk_kept() < (kept > (unsigned)depth ? kept - (unsigned)depth : 0))
            return "the tracked regions did not close in order";
    }
    return NULL;
}

START_TEST(an_untracked_region_closes_while_tracked_ones_are_open_inside_it)
{
    static rt_region outer[RT_REGION_CACHE_SLOTS];
    for (int i = 0; i < RT_REGION_CACHE_SLOTS; i++) {
        rt_region_open(&outer[i]);
        rt_region_alloc(&outer[i], 1, 32, 0x22);
    }
    rt_init();
    const char *why = closes_the_untracked_one_first(outer);
    ck_assert_msg(why == NULL, "on main: %s", why);
}
END_TEST

/* The cache at every depth inside a thread-specific-data destructor, one
** that runs before the runtime's (a key made before rt_init: glibc runs
** destructors in key order, so the thread's state is still there) and one
** that runs after it (a key made after rt_init: the call makes a new
** state, docs/region-cache.md). There, regions nested 0 to 17 deep, one
** depth after the other, are checked against a model of the cache: each
** open takes the chunk given last (LIFO) or, with none kept, a fresh one;
** each close keeps its chunk below 16 kept, cleared up to its bump and
** not a byte further (a byte the test wrote past the bump survives), and
** at 16 frees it, cleared (no byte written past the bump there: testutil
** calls a freed chunk with any byte set dirty);
** rt_chunk_kept() and the innermost region are exact after every call.
** The destructor then takes back all but `left` chunks (the program's:
** the test frees them), and the thread's end frees exactly the `left` it
** keeps, cleared, for left 0, 1, 15 and 16 on a plain thread, 0 and 16
** on a task. (Each thread's chunks are fresh pages, which this machine
** faults in slowly: no more threads than that.) */
struct depth_in_destructor {
    unsigned left;
    const char *failed; /* NULL: every check held */
    unsigned at_depth;
    struct chunk_counts at_end; /* the counts when the destructor returns */
    void *taken[RT_REGION_CACHE_SLOTS];
    unsigned ntaken;
    void *seen[64]; /* every chunk the walk used */
    unsigned nseen;
};

static pthread_key_t key_before_runtimes, key_after_runtimes;
static struct depth_in_destructor in_dtor;

static void destructor_walks_every_depth(void *value)
{
    struct depth_in_destructor *w = value;
    void *model[RT_REGION_CACHE_SLOTS];
    unsigned kept = 0;
    rt_region r[RT_REGION_CACHE_SLOTS + 1];

#define WALK_CHECK(cond, what)                                                                    \
    do {                                                                                          \
        if (w->failed == NULL && !(cond))                                                         \
            w->failed = (what);                                                                   \
    } while (0)
    WALK_CHECK(rt_chunk_kept() == 0, "kept a chunk before the walk");
    for (unsigned d = 0; d <= RT_REGION_CACHE_SLOTS + 1; d++) {
        w->at_depth = d;
        for (unsigned i = 0; i < d; i++) {
            rt_region_open(&r[i]);
            if (kept > 0) {
                WALK_CHECK(r[i].base == model[--kept], "an open took another than the top");
            } else {
                for (unsigned j = 0; j < w->nseen; j++)
                    WALK_CHECK(r[i].base != w->seen[j] || !chunk_live(r[i].base),
                               "an open with none kept took a live chunk");
                if (w->nseen < 64)
                    w->seen[w->nseen++] = r[i].base;
            }
            WALK_CHECK(rt_chunk_kept() == kept, "kept after an open");
            WALK_CHECK(rt_hot()->innermost == &r[i], "innermost after an open");
            unsigned char *p = rt_region_alloc(&r[i], 1, 100 + i, 0x6b);
            WALK_CHECK(p == r[i].base && p[99 + i] == 0x6b, "an allocation");
        }
        for (unsigned i = d; i-- > 0;) {
            unsigned char *base = r[i].base;
            if (kept < RT_REGION_CACHE_SLOTS)
                base[100 + i] = 0x7e; /* past the bump: the close leaves it */
            rt_region_close(&r[i]);
            if (kept < RT_REGION_CACHE_SLOTS) {
                model[kept++] = base;
                WALK_CHECK(base[0] == 0 && base[99 + i] == 0, "a kept chunk not cleared");
                WALK_CHECK(base[100 + i] == 0x7e, "a close cleared past its bump");
                base[100 + i] = 0;
            } else {
                WALK_CHECK(!chunk_live(base), "a close at 16 kept did not free");
            }
            WALK_CHECK(rt_chunk_kept() == kept, "kept after a close");
            WALK_CHECK(rt_hot()->innermost == (i > 0 ? &r[i - 1] : NULL),
                       "innermost after a close");
        }
    }
    w->at_depth = 99;
    while (kept > w->left) {
        void *c = rt_chunk_take();
        WALK_CHECK(c == model[--kept], "a take after the walk took another than the top");
        w->taken[w->ntaken++] = c;
    }
    WALK_CHECK(rt_chunk_kept() == w->left, "kept at the end");
#undef WALK_CHECK
    w->at_end = chunks_counted();
}

static void *sets_the_destructors_key(void *key)
{
    (void)rt_chunk_kept(); /* this thread's state, made before its end */
    pthread_setspecific(*(pthread_key_t *)key, &in_dtor);
    return NULL;
}

START_TEST(the_cache_keeps_its_promises_at_every_depth_in_a_destructor_before_and_after_the_runtimes)
{
    static const char *const whens[] = {"before", "after"};
    static const unsigned lefts[] = {0, 1, 15, RT_REGION_CACHE_SLOTS};
    rt_set_strategy(rt_fixed_strategy(16 * 1024));
    ck_assert_int_eq(pthread_key_create(&key_before_runtimes, destructor_walks_every_depth), 0);
    rt_init();
    ck_assert_int_eq(pthread_key_create(&key_after_runtimes, destructor_walks_every_depth), 0);
    pthread_key_t *keys[] = {&key_before_runtimes, &key_after_runtimes};
    for (int when = 0; when < 2; when++)
        for (int on_a_task = 0; on_a_task < 2; on_a_task++)
            for (size_t l = 0; l < sizeof lefts / sizeof *lefts; l++) {
                const char *where = on_a_task ? "a task" : "a thread";
                if (on_a_task && lefts[l] != 0 && lefts[l] != RT_REGION_CACHE_SLOTS)
                    continue;
                memset(&in_dtor, 0, sizeof in_dtor);
                in_dtor.left = lefts[l];
                chunks_reset();
                if (on_a_task) {
                    ck_require(rt_join(rt_spawn(sets_the_destructors_key, keys[when]), NULL) ==
                               RT_OK);
                } else {
                    pthread_t t;
                    ck_require(pthread_create(&t, NULL, sets_the_destructors_key, keys[when]) ==
                               0);
                    ck_require(pthread_join(t, NULL) == 0);
                }
                struct chunk_counts n = chunks_counted();
                if (in_dtor.failed != NULL)
                    ck_abort_msg("%s the runtime's destructor, on %s, %u deep: %s", whens[when],
                                 where, in_dtor.at_depth, in_dtor.failed);
                /* the walk freed what it could not keep; the end freed the `left` kept */
                if (n.mallocs != in_dtor.nseen || n.frees != in_dtor.at_end.frees + lefts[l] ||
                    n.frees_dirty != 0 || in_dtor.at_end.mallocs != in_dtor.nseen)
                    ck_abort_msg("%s the runtime's destructor, on %s, %u left: %lu mallocs (%u), "
                                 "%lu frees (%lu at the destructor's end + %u), %lu dirty",
                                 whens[when], where, lefts[l], n.mallocs, in_dtor.nseen,
                                 n.frees, in_dtor.at_end.frees, lefts[l], n.frees_dirty);
                unsigned live = 0;
                for (unsigned j = 0; j < in_dtor.nseen; j++)
                    live += chunk_live(in_dtor.seen[j]) != 0;
                if (live != in_dtor.ntaken)
                    ck_abort_msg("%s the runtime's destructor, on %s, %u left: %u chunks live "
                                 "after the end, expected the %u taken", whens[when], where,
                                 lefts[l], live, in_dtor.ntaken);
                for (unsigned j = 0; j < in_dtor.ntaken; j++)
                    free(in_dtor.taken[j]); /* the program's, from malloc */
                ck_require(rt_chunk_kept() == 0); /* main's cache untouched */
            }
}
END_TEST

/* Four threads walking every depth at once (the same walk and model as in
** a destructor above), started together right after rt_init, so that
** their states are made, their first publish raced and their caches used
** concurrently (run under TSan too): each thread's cache is its own, so
** each meets its model exactly (LIFO, 16 kept, kept counts, innermost),
** and together they malloc exactly the chunks they saw and free all but
** the ones they took back, none dirty; each thread's end frees the `left`
** it keeps (0, 1, 15, 16) before its join returns. */
static pthread_barrier_t walkers_start;

static void *walks_every_depth_at_once(void *arg)
{
    pthread_barrier_wait(&walkers_start);
    destructor_walks_every_depth(arg);
    return NULL;
}

START_TEST(threads_walking_every_depth_at_once_each_keep_their_own_cache)
{
    enum { WALKERS = 4 };
    static const unsigned lefts[WALKERS] = {0, 1, 15, RT_REGION_CACHE_SLOTS};
    static struct depth_in_destructor w[WALKERS];
    pthread_t t[WALKERS];
    unsigned long seen = 0, taken = 0;

    rt_init();
    ck_assert_int_eq(pthread_barrier_init(&walkers_start, NULL, WALKERS), 0);
    chunks_reset();
    for (int i = 0; i < WALKERS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].left = lefts[i];
        ck_assert_int_eq(pthread_create(&t[i], NULL, walks_every_depth_at_once, &w[i]), 0);
    }
    for (int i = 0; i < WALKERS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    struct chunk_counts n = chunks_counted();
    for (int i = 0; i < WALKERS; i++) {
        if (w[i].failed != NULL)
            ck_abort_msg("thread %d (%u left), %u deep: %s", i, lefts[i], w[i].at_depth,
                         w[i].failed);
        unsigned live = 0;
        for (unsigned j = 0; j < w[i].ntaken; j++)
            live += chunk_live(w[i].taken[j]) != 0;
        if (live != w[i].ntaken || w[i].ntaken != RT_REGION_CACHE_SLOTS - lefts[i])
            ck_abort_msg("thread %d (%u left): %u of its %u taken live (%u each)", i, lefts[i],
                         live, w[i].ntaken, RT_REGION_CACHE_SLOTS - lefts[i]);
        seen += w[i].nseen;
        taken += w[i].ntaken;
    }
    /* every other chunk was freed: among all the addresses seen (one thread
    ** may have been handed an address another freed), only the taken live */
    void *all[WALKERS * 64];
    unsigned nall = 0, live_all = 0;
    for (int i = 0; i < WALKERS; i++)
        for (unsigned j = 0; j < w[i].nseen; j++) {
            unsigned k = 0;
            while (k < nall && all[k] != w[i].seen[j])
                k++;
            if (k == nall) {
                all[nall++] = w[i].seen[j];
                live_all += chunk_live(w[i].seen[j]) != 0;
            }
        }
    ck_assert_msg(live_all == taken, "%u chunks live after the ends, %lu taken", live_all, taken);
    ck_assert_msg(n.mallocs == seen && n.frees == seen - taken && n.frees_dirty == 0,
                  "%lu mallocs (%lu), %lu frees (%lu), %lu dirty", n.mallocs, seen, n.frees,
                  seen - taken, n.frees_dirty);
    for (int i = 0; i < WALKERS; i++)
        for (unsigned j = 0; j < w[i].ntaken; j++)
            free(w[i].taken[j]); /* the program's, from malloc */
    ck_assert_int_eq(pthread_barrier_destroy(&walkers_start), 0);
}
END_TEST

/* A destructor that leaves a region open: the thread then ends with a
** region open, which the runtime's destructor reports (docs/region-cache.md:
** "the destructor reports it as a violation instead"), whatever the thread
** keeps (1 here): a destructor that runs before the runtime's (a key made
** before rt_init), and one that runs after it (a key made after: its
** region is in the state the call made there, which the next round of
** destructors frees), 1, 2 and 17 deep. */
static pthread_key_t key_leaving_a_region;

static void destructor_leaves_regions_open(void *value)
{
    static rt_region r[RT_REGION_CACHE_SLOTS + 1];
    unsigned d = (unsigned)(uintptr_t)value / 2;
    void *c = rt_chunk_take();
    rt_chunk_give(c, c); /* 1 kept, in whichever state this is */
    for (unsigned i = 0; i < d; i++)
        rt_region_open(&r[i]);
}

static void *sets_the_leaving_key(void *arg)
{
    (void)rt_chunk_kept(); /* this thread's state */
    pthread_setspecific(key_leaving_a_region, arg);
    return NULL;
}

static void thread_ends_with_a_region_opened_in_a_destructor(void *arg)
{
    pthread_t t;
    bool after = (uintptr_t)arg % 2 != 0;
    if (!after && pthread_key_create(&key_leaving_a_region, destructor_leaves_regions_open) != 0)
        _exit(4);
    rt_init();
    if (after && pthread_key_create(&key_leaving_a_region, destructor_leaves_regions_open) != 0)
        _exit(4);
    if (pthread_create(&t, NULL, sets_the_leaving_key, arg) != 0)
        _exit(5);
    pthread_join(t, NULL);
    _exit(3);
}

START_TEST(a_region_left_open_by_a_destructor_before_or_after_the_runtimes_is_a_violation)
{
    static const uintptr_t depths[] = {1, 2, RT_REGION_CACHE_SLOTS + 1};
    for (uintptr_t after = 0; after < 2; after++)
        for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
            struct death d = run_child(thread_ends_with_a_region_opened_in_a_destructor,
                                       (void *)(depths[i] * 2 + after));
            if (d.signal != SIGABRT ||
                strstr(d.err, "refrt: hot_destroy: a thread ended with a region still open\n") ==
                    NULL)
                ck_abort_msg("%u regions left open by a destructor %s the runtime's: expected "
                             "SIGABRT and hot_destroy's violation, got signal %d exit %d; "
                             "stderr: %s", (unsigned)depths[i], after ? "after" : "before",
                             d.signal, d.exit_status, d.err);
        }
}
END_TEST

/* A thread made before rt_init (as docs/hot-path.md's dlopen test makes
** four): before rt_init the cache is off on it as on main (refrt.h: take
** is malloc, give clears and frees, nothing kept), and once main has
** called rt_init its next call makes its state and the cache is on: a
** region it opened before rt_init is untracked, so closing it while d
** regions opened after are open inside it is no violation and its chunk
** is kept; then the d close innermost first; the first 16 chunks given
** are kept (rt_chunk_kept() exact), the rest freed cleared, taken back in
** LIFO order; at the thread's end exactly the chunks kept are freed,
** cleared. One thread for each d from 0 to 17, all made before rt_init,
** run one at a time so that the chunk counts are each thread's. */
struct early_thread {
    unsigned depth;
    int stage; /* 0 made, 1 done before init, 2 go on, 3 done */
    pthread_mutex_t m;
    pthread_cond_t c;
    unsigned kept_before_init, kept_after_region, kept_after_close, kept_after_give;
    bool freed_before_init, innermost_right, lifo;
    void *before_init;
    void *untracked_chunk, *chunk[RT_REGION_CACHE_SLOTS + 2];
};

static void stage_set(struct early_thread *e, int stage)
{
    pthread_mutex_lock(&e->m);
    e->stage = stage;
    pthread_cond_broadcast(&e->c);
    pthread_mutex_unlock(&e->m);
}

static void stage_wait(struct early_thread *e, int stage)
{
    pthread_mutex_lock(&e->m);
    while (e->stage < stage)
        pthread_cond_wait(&e->c, &e->m);
    pthread_mutex_unlock(&e->m);
}

static void *made_before_init(void *arg)
{
    struct early_thread *e = arg;
    rt_region untracked, r[RT_REGION_CACHE_SLOTS + 2];
    unsigned d = e->depth;

    unsigned char *c = rt_chunk_take();
    memset(c, 0x4d, 50);
    rt_chunk_give(c, c + 50);
    e->before_init = c;
    e->freed_before_init = !chunk_live(c);
    e->kept_before_init = rt_chunk_kept();
    rt_region_open(&untracked);
    (void)rt_region_alloc(&untracked, 1, 32, 0x4e);
    e->untracked_chunk = untracked.base;
    e->kept_after_region = rt_chunk_kept();
    stage_set(e, 1);
    stage_wait(e, 2); /* main has called rt_init */

    e->innermost_right = true;
    for (unsigned i = 0; i < d; i++) {
        rt_region_open(&r[i]);
        (void)rt_region_alloc(&r[i], 1, 64 + i, 0x4f);
        e->chunk[i] = r[i].base;
    }
    rt_region_close(&untracked); /* the first give after rt_init: kept */
    e->innermost_right = rt_hot()->innermost == (d > 0 ? &r[d - 1] : NULL);
    for (unsigned i = d; i-- > 0;)
        rt_region_close(&r[i]);
    e->innermost_right &= rt_hot()->innermost == NULL;
    e->kept_after_close = rt_chunk_kept();
    /* given: the untracked chunk, then r[d-1] down to r[0]; the first 16 kept */
    void *given[RT_REGION_CACHE_SLOTS + 3], *popped[RT_REGION_CACHE_SLOTS];
    unsigned ngiven = 0, kept = d + 1 < RT_REGION_CACHE_SLOTS ? d + 1 : RT_REGION_CACHE_SLOTS;
    given[ngiven++] = e->untracked_chunk;
    for (unsigned i = d; i-- > 0;)
        given[ngiven++] = e->chunk[i];
    e->lifo = true;
    for (unsigned k = 0; k < kept; k++) {
        popped[k] = rt_chunk_take();
        e->lifo &= popped[k] == given[kept - 1 - k];
    }
    for (unsigned k = kept; k-- > 0;)
        rt_chunk_give(popped[k], popped[k]);
    e->kept_after_give = rt_chunk_kept();
    return NULL;
}

START_TEST(a_thread_made_before_init_has_the_cache_off_then_on_at_every_depth)
{
    enum { THREADS = RT_REGION_CACHE_SLOTS + 2 };
    static struct early_thread e[THREADS];
    pthread_t t[THREADS];
    struct chunk_counts n;

    rt_set_strategy(rt_fixed_strategy(16 * 1024));
    for (unsigned d = 0; d < THREADS; d++) {
        e[d].depth = d;
        pthread_mutex_init(&e[d].m, NULL);
        pthread_cond_init(&e[d].c, NULL);
        chunks_reset();
        ck_assert_int_eq(pthread_create(&t[d], NULL, made_before_init, &e[d]), 0);
        stage_wait(&e[d], 1);
        n = chunks_counted();
        ck_assert_msg(n.mallocs == 2 && n.frees == 1 && n.frees_dirty == 0 &&
                          e[d].freed_before_init && e[d].kept_before_init == 0 &&
                          e[d].kept_after_region == 0,
                      "thread %u before rt_init: %lu mallocs, %lu frees, %lu dirty (2, 1, 0); "
                      "freed %d; kept %u, %u (0, 0)", d, n.mallocs, n.frees, n.frees_dirty,
                      e[d].freed_before_init, e[d].kept_before_init, e[d].kept_after_region);
    }
    rt_init();
    for (unsigned d = 0; d < THREADS; d++) {
        unsigned kept = d + 1 < RT_REGION_CACHE_SLOTS ? d + 1 : RT_REGION_CACHE_SLOTS;
        chunks_reset();
        stage_set(&e[d], 2);
        ck_assert_int_eq(pthread_join(t[d], NULL), 0);
        n = chunks_counted();
        bool live = chunk_live(e[d].untracked_chunk) != 0;
        for (unsigned i = 0; i < d; i++)
            live |= chunk_live(e[d].chunk[i]) != 0;
        ck_assert_msg(e[d].kept_after_close == kept && e[d].kept_after_give == kept &&
                          e[d].innermost_right && e[d].lifo,
                      "thread made before rt_init, %u deep after it: kept %u after the closes, "
                      "%u after the gives (%u each); innermost right %d; LIFO %d", d,
                      e[d].kept_after_close, e[d].kept_after_give, kept, e[d].innermost_right,
                      e[d].lifo);
        /* the d regions' chunks are fresh; the untracked one's too is freed by now */
        ck_assert_msg(n.mallocs == d && n.frees == d + 1 && n.frees_dirty == 0 && !live,
                      "thread made before rt_init, %u deep after it: %lu mallocs, %lu frees, "
                      "%lu dirty, some live %d (%u, %u, 0, 0)", d, n.mallocs, n.frees,
                      n.frees_dirty, live, d, d + 1);
    }
    ck_assert_uint_eq(rt_chunk_kept(), 0);
}
END_TEST

/* A thread made before rt_init that ends with regions it opened after
** rt_init still open is the violation of any thread (docs/region-cache.md:
** "A thread must end with no region open"), 1 and 17 deep, also with a
** region it opened before rt_init (untracked) open around them. */
static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t early_cond = PTHREAD_COND_INITIALIZER;
static int early_stage; /* 1: the thread is done before rt_init; 2: rt_init made */

static void *early_thread_leaves_regions_open(void *arg)
{
    static rt_region untracked, r[RT_REGION_CACHE_SLOTS + 1];
    unsigned d = (unsigned)(uintptr_t)arg / 2;
    if ((uintptr_t)arg % 2 != 0)
        rt_region_open(&untracked);
    pthread_mutex_lock(&early_lock);
    early_stage = 1;
    pthread_cond_broadcast(&early_cond);
    while (early_stage < 2)
        pthread_cond_wait(&early_cond, &early_lock);
    pthread_mutex_unlock(&early_lock);
    for (unsigned i = 0; i < d; i++)
        rt_region_open(&r[i]);
    return NULL;
}

static void early_thread_ends_with_regions_open(void *arg)
{
    pthread_t t;
    die_of_alarm_after(5); /* a hang, not a bound */
    if (pthread_create(&t, NULL, early_thread_leaves_regions_open, arg) != 0)
        _exit(5);
    pthread_mutex_lock(&early_lock);
    while (early_stage < 1)
        pthread_cond_wait(&early_cond, &early_lock);
    pthread_mutex_unlock(&early_lock);
    rt_init();
    pthread_mutex_lock(&early_lock);
    early_stage = 2;
    pthread_cond_broadcast(&early_cond);
    pthread_mutex_unlock(&early_lock);
    pthread_join(t, NULL);
    _exit(3);
}

START_TEST(a_thread_made_before_init_that_ends_with_a_region_open_is_a_violation)
{
    static const uintptr_t depths[] = {1, RT_REGION_CACHE_SLOTS + 1};
    for (uintptr_t untracked = 0; untracked < 2; untracked++)
        for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
            struct death d = run_child(early_thread_ends_with_regions_open,
                                       (void *)(depths[i] * 2 + untracked));
            if (d.signal != SIGABRT ||
                strstr(d.err, "refrt: hot_destroy: a thread ended with a region still open\n") ==
                    NULL)
                ck_abort_msg("%u regions open%s at the end of a thread made before rt_init: "
                             "expected SIGABRT and hot_destroy's violation, got signal %d exit "
                             "%d; stderr: %s", (unsigned)depths[i],
                             untracked ? " inside an untracked one" : "", d.signal,
                             d.exit_status, d.err);
        }
}
END_TEST

Suite *make_suite(void)
{
    /* one test case a test: the driver's witness runs (RT_ONLY_CASES) name cases */
    Suite *s = suite_create("region_cache_more");
    if (!UNDER_SANITIZER) {
        suite_add_test(s, a_chunk_malloc_cannot_make_traps);
        suite_add_test(s, a_thread_state_that_cannot_be_allocated_traps);
        suite_add_test(s, a_thread_state_is_one_struct_rt_hot);
        suite_add_test(s, a_thread_end_frees_its_state);
    }
#if !UNDER_SANITIZER
    suite_add_test(s, a_thread_state_that_cannot_be_published_traps);
#endif
    suite_add_test(s, a_give_whose_thread_state_cannot_be_made_has_cleared_the_range_when_it_traps);
    suite_add_test(s, init_without_a_key_left_is_a_violation);
#if !UNDER_SANITIZER
    suite_add_test(s, init_whose_clear_of_mains_slot_fails_is_a_violation);
    suite_add_test(s, an_init_that_stops_at_a_violation_leaves_the_cache_off);
#endif
    suite_add_test(s, a_violation_is_one_whole_line);
    suite_add_test(s, a_violation_reaches_a_buffered_stderr);
#if !UNDER_TSAN /* ThreadSanitizer's own abort path waits for the stdout lock the test holds */
    suite_add_test(s, a_violation_aborts_at_once_whatever_another_thread_holds_of_stdio);
#else
    (void)a_violation_aborts_at_once_whatever_another_thread_holds_of_stdio;
#endif
    suite_add_test(s, opening_a_null_region_is_a_violation);
    suite_add_test(s, a_violation_takes_keeps_and_frees_no_chunk_before_it_aborts);
    suite_add_test(s, a_region_not_open_is_a_violation_of_close_and_alloc_wherever_it_is_used);
    suite_add_test(s, rt_hot_is_one_state_a_thread);
    suite_add_test(s, a_disabled_direct_path_is_off);
#if RT_PRIM_DIRECT
    suite_add_test(s, a_direct_read_that_agrees_keeps_the_path_open);
#endif
    suite_add_test(s, a_region_opened_before_init_is_its_own_outer);
    suite_add_test(s, a_closed_region_holds_no_pointer);
    suite_add_test(s, a_null_region_or_chunk_is_a_violation);
    suite_add_test(s, a_region_bumped_past_its_chunk_traps);
    suite_add_test(s, a_region_opened_before_init_closes_after_it);
    suite_add_test(s, a_destructor_after_the_runtimes_uses_the_cache_and_leaks_nothing);
    suite_add_test(s, a_chunk_taken_and_handed_to_another_thread_outlives_its_taker);
    suite_add_test(s, the_strategy_rt_init_asks_runs_with_the_cache_off);
    suite_add_test(s, an_untracked_region_closes_while_tracked_ones_are_open_inside_it);
    suite_add_test(s, the_cache_keeps_its_promises_at_every_depth_in_a_destructor_before_and_after_the_runtimes);
    suite_add_test(s, threads_walking_every_depth_at_once_each_keep_their_own_cache);
    suite_add_test(s, a_region_left_open_by_a_destructor_before_or_after_the_runtimes_is_a_violation);
    suite_add_test(s, a_thread_made_before_init_has_the_cache_off_then_on_at_every_depth);
    suite_add_test(s, a_thread_made_before_init_that_ends_with_a_region_open_is_a_violation);
#if RT_PRIM_DIRECT
    suite_add_test(s, a_key_past_the_first_block_keeps_the_direct_path_off);
#endif
#if RT_PRIM_DIRECT && !UNDER_SANITIZER
    suite_add_test(s, a_slot_search_whose_setspecific_fails_keeps_the_direct_path_off);
#endif
    return s;
}
