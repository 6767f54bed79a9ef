/*
** dlopen_plugin.c: the runtime loaded with dlopen (librefrt.so), as a
** language runtime that loads it as a plugin would. Nothing here links the
** library: every call goes through dlsym, so the library's thread-local
** words live where glibc puts a dlopen'd module's, which is where the hot
** path's NULL word must still be at the same offset from every thread's
** pointer (hot.c: initial-exec) for the fast path's one load to read it.
**
** On every thread (one that existed before the dlopen, ones made after),
** before rt_init, with the direct path open and after the latch: a
** thread's state is its own and stays put, its chunk stack keeps exactly
** what it was given, and a region's bytes are cleared when it ends.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refrt.h"
#include "testmain.h"
#include "testutil.h"

/* The library is $(BUILD)/librefrt.so, this program $(BUILD)/hot/dlopen_plugin:
** found from the program's own path, so a build tree copied elsewhere (the
** mutant driver's copies) loads its own library, never the one it was built
** beside. RT_SO_PATH in the environment names another. */
static const char *library_path(void)
{
    static char path[PATH_MAX];
    const char *named = getenv("RT_SO_PATH");
    if (named != NULL)
        return named;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof "/../librefrt.so");
    ck_assert_msg(n > 0, "readlink /proc/self/exe failed");
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    ck_assert_ptr_nonnull(slash);
    strcpy(slash, "/../librefrt.so");
    return path;
}

#define THREADS 4
#define CALLS 200

static struct {
    __typeof__(&rt_init) init;
    __typeof__(&rt_hot) hot;
    __typeof__(&rt_hot_direct) direct;
    __typeof__(&rt_hot_disable) disable;
    __typeof__(&rt_chunk_take) take;
    __typeof__(&rt_chunk_give) give;
    __typeof__(&rt_chunk_kept) kept;
    __typeof__(&rt_region_open) open;
    __typeof__(&rt_region_alloc) alloc;
    __typeof__(&rt_region_close) close;
} rt;

static void *must(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    ck_assert_msg(f != NULL, "dlsym %s: %s", name, dlerror());
    return f;
}

static void load(void)
{
    const char *path = library_path();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen %s: %s", path, dlerror());
    *(void **)&rt.init = must(lib, "rt_init");
    *(void **)&rt.hot = must(lib, "rt_hot");
    *(void **)&rt.direct = must(lib, "rt_hot_direct");
    *(void **)&rt.disable = must(lib, "rt_hot_disable");
    *(void **)&rt.take = must(lib, "rt_chunk_take");
    *(void **)&rt.give = must(lib, "rt_chunk_give");
    *(void **)&rt.kept = must(lib, "rt_chunk_kept");
    *(void **)&rt.open = must(lib, "rt_region_open");
    *(void **)&rt.alloc = must(lib, "rt_region_alloc");
    *(void **)&rt.close = must(lib, "rt_region_close");
}

enum phase { BEFORE_INIT, OPEN, LATCHED };

struct thread_ctx {
    enum phase phase;
    pthread_barrier_t *all; /* every thread's state exists at once; NULL alone */
    struct rt_hot *mine;
    const char *failed;
};

/* Takes 20 chunks and gives them back in LIFO order: 16 are kept after
** rt_init, none before (the cache is off). */
static const char *chunks_kept_exactly(enum phase phase)
{
    void *c[20];
    unsigned before = rt.kept();
    if (before != 0)
        return "a fresh thread keeps chunks";
    for (int i = 0; i < 20; i++) {
        c[i] = rt.take();
        memset(c[i], 0x5a, 100); /* given back as used: cleared */
    }
    for (int i = 19; i >= 0; i--)
        rt.give(c[i], (unsigned char *)c[i] + 100);
    if (rt.kept() != (phase == BEFORE_INIT ? 0u : 16u))
        return "the stack does not keep exactly 16 chunks (none before rt_init)";
    return NULL;
}

/* A region's bytes are cleared when it ends: the chunk it used comes back
** from the stack with them zero. */
static const char *region_cleared(void)
{
    rt_region r;
    rt.open(&r);
    unsigned char *p = rt.alloc(&r, 1000, 1, 0xa5);
    memset(p, 0xa5, 1000);
    rt.close(&r);
    unsigned char *c = rt.take();
    const char *failed = NULL;
    if (p < c || p + 1000 > c + RT_CHUNK_SIZE)
        failed = "the region's chunk is not the stack's top";
    for (size_t i = 0; i < 1000 && failed == NULL; i++)
        if (p[i] != 0)
            failed = "a byte the region used survived it";
    rt.give(c, c);
    return failed;
}

static void *a_thread(void *arg)
{
    struct thread_ctx *x = arg;
    x->failed = chunks_kept_exactly(x->phase);
    if (x->failed == NULL && x->phase != BEFORE_INIT) {
        x->mine = rt.hot();
        for (int i = 0; i < CALLS && x->failed == NULL; i++)
            if (rt.hot() != x->mine)
                x->failed = "rt_hot moved";
        if (x->failed == NULL)
            x->failed = region_cleared();
        if (x->failed == NULL && rt.hot() != x->mine)
            x->failed = "rt_hot moved after a region";
    }
    if (x->all != NULL)
        pthread_barrier_wait(x->all);
    return NULL;
}

static void threads(enum phase phase)
{
    pthread_t t[THREADS];
    struct thread_ctx x[THREADS];
    pthread_barrier_t all;

    pthread_barrier_init(&all, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        x[i] = (struct thread_ctx){.phase = phase, .all = &all};
        ck_assert_int_eq(pthread_create(&t[i], NULL, a_thread, &x[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&all);
    for (int i = 0; i < THREADS; i++) {
        ck_assert_msg(x[i].failed == NULL, "phase %d, thread %d: %s", (int)phase, i,
                      x[i].failed);
        for (int j = 0; j < i && phase != BEFORE_INIT; j++)
            ck_assert_msg(x[i].mine != x[j].mine, "phase %d: threads %d and %d share a state",
                          (int)phase, j, i);
    }
}

/* A thread made before the dlopen: it has no block of the module's
** thread-local storage until it first touches it. */
struct elder {
    pthread_barrier_t go, done;
    enum phase phase;
    const char *failed;
};

static void *elder_thread(void *arg)
{
    struct elder *e = arg;
    for (int round = 0; round < 3; round++) {
        pthread_barrier_wait(&e->go);
        struct thread_ctx x = {.phase = e->phase}; /* alone: no barrier */
        if (round == 0 || e->failed != NULL) {
            a_thread(&x); /* its first calls: chunks, then its state */
            e->failed = x.failed;
        } else {
            struct rt_hot *h = rt.hot(); /* its state stays across the phases */
            for (int i = 0; i < CALLS && e->failed == NULL; i++)
                if (rt.hot() != h)
                    e->failed = "the elder's rt_hot moved";
            if (e->failed == NULL)
                e->failed = region_cleared();
        }
        pthread_barrier_wait(&e->done);
    }
    return NULL;
}

START_TEST(a_dlopened_runtime_gives_every_thread_its_own_state_and_chunks)
{
    struct elder e = {.phase = BEFORE_INIT};
    pthread_t t;

    pthread_barrier_init(&e.go, NULL, 2);
    pthread_barrier_init(&e.done, NULL, 2);
    ck_assert_int_eq(pthread_create(&t, NULL, elder_thread, &e), 0);
    load();

    threads(BEFORE_INIT);
    rt.init();
    e.phase = OPEN;
    pthread_barrier_wait(&e.go); /* the elder's first calls, after rt_init */
    pthread_barrier_wait(&e.done);
    ck_assert_msg(e.failed == NULL, "the thread older than the dlopen: %s", e.failed);
    struct rt_hot *h = rt.hot();
    ck_assert_ptr_nonnull(h);
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(RT_PRIM_PORTABLE)
    ck_assert_msg(rt.direct(), "the direct path is not live in a dlopen'd runtime on glibc");
#endif
    threads(OPEN);
    ck_assert_ptr_eq(rt.hot(), h);
    pthread_barrier_wait(&e.go);
    pthread_barrier_wait(&e.done);
    ck_assert_msg(e.failed == NULL, "the elder, path open: %s", e.failed);

    rt.disable();
    ck_assert(!rt.direct());
    e.phase = LATCHED;
    threads(LATCHED);
    ck_assert_ptr_eq(rt.hot(), h);
    pthread_barrier_wait(&e.go);
    pthread_barrier_wait(&e.done);
    ck_assert_msg(e.failed == NULL, "the elder, latched: %s", e.failed);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("dlopen");
    suite_add_test(s, a_dlopened_runtime_gives_every_thread_its_own_state_and_chunks);
    return s;
}
