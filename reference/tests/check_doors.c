/*
** check_doors.c: the doors of shared values promise by promise, in every
** combination (seed 002: D5, D6, D11; supervised values, ADR-327 D1 to D3).
**
** check_shared.c states each rule of docs/poisoning.md once; this suite
** takes the promises of rt_update_all, rt_get and the making of a value
** and checks each in every context it holds: both kinds of each value,
** supervised or not, poisoned or not, in both argument orders and both
** lock orders, at the boundaries of sizes and blocks, and with the exact
** figures of rt_shared_held and rt_held. It also checks that a misuse seen
** in the arguments is refused before the call changes anything.
**
** Each test runs its scenario in a child (run_child), as check_shared.c
** does, and fails with the line of the first unmet need.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "costs.h"
#include "internal.h"
#include "refrt.h"
#include "shared.h"
#include "testutil.h"

#define KIB ((size_t)1024)

/* In a scenario (a child, maybe a task in it): the first unmet need ends
** the child with its line. */
#define NEED(c)                                                                      \
    do {                                                                             \
        if (!(c)) {                                                                  \
            dprintf(need_fd, "need failed at line %d: %s\n", __LINE__, #c);          \
            _exit(1);                                                                \
        }                                                                            \
    } while (0)
static const int need_fd = 2;

struct scenario {
    void (*fn)(void *);
};

/* A scenario that deadlocks (a deliberate fault can make one) dies with
** the test process when Check's timeout kills it, rather than hang on. */
static void die_with_the_test(void)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1)
        _exit(3);
}

/* The scenario, then exit() rather than run_child's _exit(), so that the
** sanitizers' exit checks run in the child too. */
static void scenario_then_exit(void *arg)
{
    die_with_the_test();
    ((struct scenario *)arg)->fn(NULL);
    exit(0);
}

/* Runs the scenario in a child; it must exit 0 with no sanitizer report,
** and its stderr must hold `expect` when that is not NULL. */
static void run_ok(void (*fn)(void *), const char *expect)
{
    struct scenario sc = {fn};
    struct death d = run_child(scenario_then_exit, &sc);
    ck_assert_msg(d.signal == 0 && d.exit_status == 0, "signal %d exit %d; stderr: %s",
                  d.signal, d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, "Sanitizer") == NULL, "a sanitizer report: %s", d.err);
    ck_assert_msg(strstr(d.err, "runtime error") == NULL, "a UBSan report: %s", d.err);
    if (expect != NULL)
        ck_assert_msg(strstr(d.err, expect) != NULL, "stderr lacks \"%s\": %s", expect, d.err);
}

static void init_fixed(size_t bytes)
{
    rt_set_strategy(rt_fixed_strategy(bytes));
    rt_init();
}

/* Every shared value a scenario makes is tracked until it is freed, so
** that after a task panicked the scenario can check that no value is left
** locked (the unwind releases the locks) before a door would wait on one. */
static rt_shared *tracked[64];

static rt_shared *track(rt_shared *s)
{
    for (size_t i = 0; i < sizeof tracked / sizeof tracked[0]; i++)
        if (tracked[i] == NULL) {
            tracked[i] = s;
            return s;
        }
    NEED(!"more than 64 shared values");
    return s;
}

static void untrack(rt_shared *s)
{
    for (size_t i = 0; i < sizeof tracked / sizeof tracked[0]; i++)
        if (tracked[i] == s)
            tracked[i] = NULL;
}

#define rt_shared_new(...) track((rt_shared_new)(__VA_ARGS__))
#define rt_shared_supervised(...) track((rt_shared_supervised)(__VA_ARGS__))
#define rt_shared_free(s) (untrack(s), (rt_shared_free)(s))

/* Runs fn(arg) as a task and joins it; a task that panicked left no value
** locked. */
static rt_status run_task(void *(*fn)(void *), void *arg)
{
    void *result = NULL;
    rt_task *t = rt_spawn(fn, arg);
    NEED(t != NULL);
    rt_status st = rt_join(t, &result);
    NEED(result == NULL);
    for (size_t i = 0; st == RT_PANICKED && i < sizeof tracked / sizeof tracked[0]; i++)
        NEED(tracked[i] == NULL || !rt__shared_locked(tracked[i]));
    return st;
}

/* What a block takes for a value of n bytes: an 8-byte header and the
** payload, in 16-byte granules (block.c). */
static size_t chunk_for(size_t n)
{
    return (n + 8 + 15) & ~(size_t)15;
}

/* Hundreds of panic lines would fill the captured stderr: the runtime's
** messages (stdio's stderr) go to /dev/null from here on, while fd 2, where
** the sanitizers report and NEED writes, stays the captured one. */
static void quiet_panics(void)
{
    FILE *quiet = fopen("/dev/null", "w");
    NEED(quiet != NULL);
    stderr = quiet;
}

/* Poisons x (not poisoned yet) the one way that works for either kind: an
** rt_update_all of x and a fresh RT_OWNED helper whose fn panics before it
** changes anything. x's block keeps its figure; the helper goes. */
static void panic_at_once(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    rt_panic("poisoning");
}

static void *poison_task(void *arg)
{
    rt_shared **pair = arg;
    rt_update_all(pair[0], pair[1], panic_at_once, NULL);
    return NULL;
}

static void poison(rt_shared *x)
{
    int64_t zero = 0;
    size_t held = rt_shared_held(x);
    rt_shared *helper = rt_shared_new(RT_OWNED, sizeof zero, &zero, 256);
    rt_shared *pair[2] = {x, helper};
    NEED(!rt_poisoned(x));
    NEED(run_task(poison_task, pair) == RT_PANICKED);
    NEED(rt_poisoned(x) && rt_poisoned(helper));
    NEED(rt_shared_held(x) == held);
    rt_shared_free(helper);
}

/* ---- rt_update_all in every combination -------------------------------- */

/* A value of either kind: a tag that says whose value fn got, and, in an
** RT_OWNED one, the allocations that doors and builds made in its block. */
struct tagged {
    int64_t tag;
    unsigned generation; /* builds of a supervised value */
    void *kept[6];       /* allocations in the value's own block */
    unsigned nkept;
};

#define TAGGED_HELD chunk_for(sizeof(struct tagged))
#define BUILD_ALLOC 40 /* a supervised RT_OWNED build allocates this much */
#define FN_ALLOC 100   /* and every fn below this much */

struct build_ctx {
    int64_t tag;
    rt_kind kind;
    unsigned builds;
};

static void build_tagged(void *value, void *ctx)
{
    struct tagged *t = value;
    struct build_ctx *b = ctx;
    NEED(t->tag == 0 && t->generation == 0 && t->nkept == 0); /* fresh, zeroed */
    t->tag = b->tag;
    t->generation = ++b->builds;
    if (b->kind == RT_OWNED)
        t->kept[t->nkept++] = rt_alloc(BUILD_ALLOC); /* in the fresh block */
}

/* What the model expects of one value. */
struct model {
    rt_shared *s;
    rt_kind kind;
    bool supervised, poisoned;
    int64_t tag;
    unsigned generation;
    size_t held;
    struct build_ctx build;
};

static size_t fresh_held(const struct model *m)
{
    return TAGGED_HELD + (m->supervised && m->kind == RT_OWNED ? chunk_for(BUILD_ALLOC) : 0);
}

static void make_model(struct model *m, rt_kind kind, bool supervised, int64_t tag)
{
    struct tagged init;
    memset(&init, 0, sizeof init);
    init.tag = tag;
    m->kind = kind;
    m->supervised = supervised;
    m->poisoned = false;
    m->tag = tag;
    m->generation = supervised ? 1 : 0;
    m->build = (struct build_ctx){tag, kind, 0};
    if (supervised)
        m->s = rt_shared_supervised(kind, sizeof init, build_tagged, &m->build, 1 * KIB);
    else
        m->s = rt_shared_new(kind, sizeof init, &init, 1 * KIB);
    m->held = fresh_held(m);
    NEED(rt_shared_held(m->s) == m->held);
    NEED(m->build.builds == m->generation);
}

/* The value is as the model says: poisoned or not, its block's figure,
** its builds, and, when it is not poisoned, its tag and generation as
** rt_get copies them out (on either kind). */
static void model_holds(const struct model *m)
{
    struct tagged out;
    NEED(rt_poisoned(m->s) == m->poisoned);
    NEED(rt_shared_held(m->s) == m->held);
    NEED(m->build.builds == m->generation);
    if (m->poisoned)
        return; /* a door would rebuild a supervised one: checked by the door */
    NEED(rt_get(m->s, &out) == RT_OK);
    NEED(out.tag == m->tag && out.generation == m->generation);
}

struct pair_run {
    rt_shared *a, *b;
    rt_kind ka, kb;
    bool panics;
    int ran;
    int64_t seen_a, seen_b;   /* the tags fn found in va and vb */
    unsigned gen_a, gen_b;    /* and the generations */
    size_t held_a, held_b;    /* in the door, once fn allocated */
    size_t task_before, task_in; /* rt_held() before and after that */
    rt_status st;
};

/* The matrix's fn: notes what it got, changes both, allocates FN_ALLOC
** (from a's block if a is RT_OWNED, else from b's if b is, else from the
** task's) and keeps it in the owned value (frees it if the task's), then
** panics if told to. */
static void pair_fn(void *va, void *vb, void *ctx)
{
    struct pair_run *r = ctx;
    struct tagged *ta = va, *tb = vb;
    void *p;

    r->ran++;
    r->seen_a = ta->tag;
    r->seen_b = tb->tag;
    r->gen_a = ta->generation;
    r->gen_b = tb->generation;
    ta->tag += 1000;
    tb->tag += 2000;
    r->task_before = rt_held();
    p = rt_alloc(FN_ALLOC);
    r->held_a = rt_shared_held(r->a);
    r->held_b = rt_shared_held(r->b);
    r->task_in = rt_held();
    if (r->ka == RT_OWNED)
        ta->kept[ta->nkept++] = p;
    else if (r->kb == RT_OWNED)
        tb->kept[tb->nkept++] = p;
    else
        rt_free(p);
    if (r->panics)
        rt_panic("the pair panics");
}

static void *pair_task(void *arg)
{
    struct pair_run *r = arg;
    r->st = rt_update_all(r->a, r->b, pair_fn, r);
    return NULL;
}

/* A door rebuilds m: what the model expects of the fresh value. */
static void rebuilt(struct model *m)
{
    m->poisoned = false;
    m->tag = m->build.tag;
    m->generation++;
    m->held = fresh_held(m);
}

/* After the door: a value left poisoned is refused by the next door, or
** rebuilt by it if it is supervised. */
static void next_door(struct model *m)
{
    struct tagged out, untouched;
    memset(&out, 0xcc, sizeof out);
    memset(&untouched, 0xcc, sizeof untouched);
    if (!m->poisoned)
        return;
    if (!m->supervised) {
        NEED(rt_get(m->s, &out) == RT_POISONED && memcmp(&out, &untouched, sizeof out) == 0);
        NEED(rt_poisoned(m->s) && rt_shared_held(m->s) == m->held);
        return;
    }
    NEED(rt_get(m->s, &out) == RT_OK);
    rebuilt(m);
    NEED(out.tag == m->tag && out.generation == m->generation);
    model_holds(m);
}

/* One combination: a of kind ka, b of kb; sup and poi say (bit 0 for a,
** bit 1 for b) which are supervised and which are poisoned before the
** door; b_first makes b first (so b is locked first); panics makes fn
** panic once it changed both. */
static void one_pair(rt_kind ka, rt_kind kb, int sup, int poi, bool b_first, bool panics)
{
    struct model ma, mb;
    long locks = rt__locks_live();

    NEED(rt_held() == 0 && rt__blocks_live() == 1);
    if (b_first) {
        make_model(&mb, kb, sup & 2, 20);
        make_model(&ma, ka, sup & 1, 10);
    } else {
        make_model(&ma, ka, sup & 1, 10);
        make_model(&mb, kb, sup & 2, 20);
    }
    NEED((rt__shared_seq(mb.s) < rt__shared_seq(ma.s)) == b_first);
    if (poi & 1) {
        poison(ma.s);
        ma.poisoned = true;
    }
    if (poi & 2) {
        poison(mb.s);
        mb.poisoned = true;
    }
    model_holds(&ma);
    model_holds(&mb);

    struct pair_run r;
    memset(&r, 0, sizeof r);
    r.a = ma.s;
    r.b = mb.s;
    r.ka = ka;
    r.kb = kb;
    r.panics = panics;
    r.st = (rt_status)-1;
    rt_status joined = run_task(pair_task, &r);
    NEED(!rt__shared_locked(ma.s) && !rt__shared_locked(mb.s));

    if ((ma.poisoned && !ma.supervised) || (mb.poisoned && !mb.supervised)) {
        /* refused: fn does not run, nothing is rebuilt, neither changes */
        NEED(joined == RT_OK && r.st == RT_POISONED && r.ran == 0);
    } else {
        /* each poisoned one (all supervised here) rebuilt, then fn runs on
        ** a's value as va and b's as vb, whatever the lock order */
        if (ma.poisoned)
            rebuilt(&ma);
        if (mb.poisoned)
            rebuilt(&mb);
        NEED(r.ran == 1);
        NEED(r.seen_a == ma.tag && r.gen_a == ma.generation);
        NEED(r.seen_b == mb.tag && r.gen_b == mb.generation);
        /* the allocation: a's block if a is owned, else b's, else the task's */
        if (ka == RT_OWNED) {
            NEED(r.held_a == ma.held + chunk_for(FN_ALLOC) && r.held_b == mb.held);
            NEED(r.task_in == r.task_before);
            ma.held += chunk_for(FN_ALLOC);
        } else if (kb == RT_OWNED) {
            NEED(r.held_b == mb.held + chunk_for(FN_ALLOC) && r.held_a == ma.held);
            NEED(r.task_in == r.task_before);
            mb.held += chunk_for(FN_ALLOC);
        } else {
            NEED(r.held_a == ma.held && r.held_b == mb.held);
            NEED(r.task_in == r.task_before + chunk_for(FN_ALLOC));
        }
        if (!panics) {
            NEED(joined == RT_OK && r.st == RT_OK);
            ma.tag += 1000;
            mb.tag += 2000;
        } else {
            NEED(joined == RT_PANICKED);
            /* both copies: nothing written back, nothing poisoned (a value
            ** the door rebuilt stays rebuilt); else both poisoned, their
            ** blocks as fn left them */
            if (ka == RT_OWNED || kb == RT_OWNED)
                ma.poisoned = mb.poisoned = true;
        }
    }
    model_holds(&ma);
    model_holds(&mb);
    next_door(&ma);
    next_door(&mb);
    rt_shared_free(ma.s);
    rt_shared_free(mb.s);
    NEED(rt_held() == 0 && rt__blocks_live() == 1 && rt__locks_live() == locks);
}

static void update_all_matrix(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    quiet_panics();
    for (int kinds = 0; kinds < 4; kinds++)
        for (int sup = 0; sup < 4; sup++)
            for (int poi = 0; poi < 4; poi++)
                for (int b_first = 0; b_first < 2; b_first++)
                    for (int panics = 0; panics < 2; panics++)
                        one_pair(kinds & 1 ? RT_OWNED : RT_COPY, kinds & 2 ? RT_OWNED : RT_COPY,
                                 sup, poi, b_first, panics);
}

START_TEST(update_all_runs_fn_on_a_and_b_in_argument_order_and_keeps_its_rules_in_every_combination)
{
    run_ok(update_all_matrix, NULL);
}
END_TEST

/* ---- rt_update and rt_access in every combination ----------------------- */

/* The rows of docs/poisoning.md for a door on one value, in every
** combination: either kind, supervised or not, poisoned or not, rt_update
** or rt_access, fn returning or panicking once it changed the value (its
** copy, in a copy's update; nothing, in an access) and allocated, on a
** spawned task and (fn returning) on main. A poisoned value not supervised
** is refused (RT_POISONED, fn not run, nothing rebuilt or changed);
** otherwise a poisoned one is rebuilt first, and fn sees the fresh value,
** not poisoned, the task's budget its block's; its allocation comes from
** the value's block in an RT_OWNED update and from the task's everywhere
** else. A return keeps an update's change; a panic poisons the value only
** in an RT_OWNED update (its block as fn left it), and an RT_COPY update's
** change is not written back. */
struct one_run {
    rt_shared *s;
    rt_kind kind;
    bool access, panics;
    int ran;
    int64_t seen;
    unsigned gen;
    bool poisoned_in_fn;
    size_t budget_in, held_in, task_before, task_in;
    rt_status st;
};

static void one_fn_body(struct one_run *r, struct tagged *t, const struct tagged *seen)
{
    void *p;
    r->ran++;
    r->seen = seen->tag;
    r->gen = seen->generation;
    r->poisoned_in_fn = rt_poisoned(r->s);
    r->budget_in = rt_budget();
    if (t != NULL)
        t->tag += 1000;
    r->task_before = rt_held();
    p = rt_alloc(FN_ALLOC);
    r->held_in = rt_shared_held(r->s);
    r->task_in = rt_held();
    if (t != NULL && r->kind == RT_OWNED)
        t->kept[t->nkept++] = p;
    else if (!r->panics)
        rt_free(p); /* the task's: freed here, or with the task by the panic */
    if (r->panics)
        rt_panic("the door panics");
}

static void one_update_fn(void *value, void *ctx)
{
    one_fn_body(ctx, value, value);
}

static void one_access_fn(const void *value, void *ctx)
{
    one_fn_body(ctx, NULL, value);
}

static void *one_door(void *arg)
{
    struct one_run *r = arg;
    r->st = r->access ? rt_access(r->s, one_access_fn, r) : rt_update(r->s, one_update_fn, r);
    return NULL;
}

static void one_value(rt_kind kind, bool sup, bool poi, bool access, bool panics, bool on_main)
{
    struct model m;
    long locks = rt__locks_live();

    NEED(rt_held() == 0 && rt__blocks_live() == 1);
    make_model(&m, kind, sup, 10);
    if (poi) {
        poison(m.s);
        m.poisoned = true;
    }
    model_holds(&m);

    struct one_run r;
    memset(&r, 0, sizeof r);
    r.s = m.s;
    r.kind = kind;
    r.access = access;
    r.panics = panics;
    r.st = (rt_status)-1;
    rt_status joined = RT_OK;
    if (on_main)
        one_door(&r);
    else
        joined = run_task(one_door, &r);
    NEED(!rt__shared_locked(m.s));

    if (m.poisoned && !m.supervised) {
        NEED(joined == RT_OK && r.st == RT_POISONED && r.ran == 0);
    } else {
        if (m.poisoned)
            rebuilt(&m);
        NEED(r.ran == 1 && r.seen == m.tag && r.gen == m.generation);
        NEED(!r.poisoned_in_fn && r.budget_in == 64 * KIB);
        if (kind == RT_OWNED && !access) {
            NEED(r.held_in == m.held + chunk_for(FN_ALLOC) && r.task_in == r.task_before);
            m.held += chunk_for(FN_ALLOC);
        } else {
            NEED(r.held_in == m.held && r.task_in == r.task_before + chunk_for(FN_ALLOC));
        }
        if (!panics) {
            NEED(joined == RT_OK && r.st == RT_OK);
            if (!access)
                m.tag += 1000;
        } else {
            NEED(joined == RT_PANICKED);
            if (kind == RT_OWNED && !access)
                m.poisoned = true;
        }
    }
    NEED(rt_held() == 0);
    model_holds(&m);
    next_door(&m);
    rt_shared_free(m.s);
    NEED(rt_held() == 0 && rt__blocks_live() == 1 && rt__locks_live() == locks);
}

static void one_value_matrix(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    quiet_panics();
    for (int kind = 0; kind < 2; kind++)
        for (int sup = 0; sup < 2; sup++)
            for (int poi = 0; poi < 2; poi++)
                for (int access = 0; access < 2; access++)
                    for (int how = 0; how < 3; how++) /* main returning, task returning, task panicking */
                        one_value(kind ? RT_OWNED : RT_COPY, sup, poi, access, how == 2, how == 0);
}

START_TEST(update_and_access_keep_their_rules_in_every_combination)
{
    run_ok(one_value_matrix, NULL);
}
END_TEST

/* ---- rt_get on every kind and state ------------------------------------ */

/* rt_get copies exactly the value's bytes out: for each size (none, one,
** the stack copy's 128 and past it, a value that ends its block), kind,
** supervised or not, poisoned or not, from main, from a spawned task and
** from inside a door on a value made earlier (an access, and an update in
** place, whose block a rebuild inside it must not touch). A poisoned value
** not supervised copies nothing; a supervised one is rebuilt first. */
static const size_t get_sizes[] = {0, 1, 8, 24, 128, 129, 1000};
#define GET_CANARY 32
#define GET_BUILD_ALLOC 40

static unsigned char pattern(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 31 + i * 7 + 1);
}

struct get_build {
    size_t size;
    rt_kind kind;
    unsigned builds;
};

static void build_pattern(void *value, void *ctx)
{
    struct get_build *b = ctx;
    unsigned char *v = value;
    b->builds++;
    for (size_t i = 0; i < b->size; i++) {
        NEED(v[i] == 0); /* fresh, zeroed */
        v[i] = pattern(100 + b->builds, i);
    }
    if (b->kind == RT_OWNED)
        NEED(rt_alloc(GET_BUILD_ALLOC) != NULL); /* in the fresh block */
}

struct get_case {
    rt_shared *s;
    size_t size;
    bool null_out; /* a value of no bytes: out is NULL */
    unsigned char out[1000 + GET_CANARY];
    rt_status st;
    unsigned long copied; /* RT_COST_SHARED_COPIED over the rt_get alone */
    size_t outer_held_before, outer_held_after;
    rt_shared *outer;
};

static void do_get(struct get_case *g)
{
    memset(g->out, 0xcc, sizeof g->out);
    unsigned long before = rt__cost(RT_COST_SHARED_COPIED);
    g->st = rt_get(g->s, g->null_out ? NULL : g->out);
    g->copied = rt__cost(RT_COST_SHARED_COPIED) - before;
}

static void *get_task(void *arg)
{
    do_get(arg);
    return NULL;
}

static void get_in_access(const void *value, void *ctx)
{
    (void)value;
    do_get(ctx);
}

static void get_in_update(void *value, void *ctx)
{
    struct get_case *g = ctx;
    (void)value;
    g->outer_held_before = rt_shared_held(g->outer);
    do_get(g);
    g->outer_held_after = rt_shared_held(g->outer);
}

enum get_where { GET_MAIN, GET_TASK, GET_IN_ACCESS, GET_IN_UPDATE, GET_WHERE };

static void one_get(size_t size, rt_kind kind, bool supervised, bool poisoned,
                    enum get_where where, bool null_out)
{
    int64_t zero = 0;
    unsigned char init[1000];
    struct get_build b = {size, kind, 0};
    struct get_case g;
    size_t block = chunk_for(size) + (supervised && kind == RT_OWNED ? chunk_for(GET_BUILD_ALLOC) : 0);
    /* the outer door's value is made first: rt_get nests in order */
    rt_shared *outer = rt_shared_new(where == GET_IN_UPDATE ? RT_OWNED : RT_COPY, sizeof zero,
                                     &zero, 256);
    rt_shared *s;
    unsigned seed;

    for (size_t i = 0; i < size; i++)
        init[i] = pattern(7, i);
    if (supervised) {
        s = rt_shared_supervised(kind, size, build_pattern, &b, block);
        seed = 101;
    } else {
        s = rt_shared_new(kind, size, size != 0 ? init : NULL, block);
        seed = 7;
    }
    NEED(rt_shared_held(s) == block);
    if (poisoned)
        poison(s);

    memset(&g, 0, sizeof g);
    g.s = s;
    g.size = size;
    g.null_out = null_out;
    g.outer = outer;
    unsigned builds = b.builds;
    size_t task_held = rt_held();
    switch (where) {
    case GET_MAIN:
        do_get(&g);
        break;
    case GET_TASK:
        NEED(run_task(get_task, &g) == RT_OK);
        break;
    case GET_IN_ACCESS:
        NEED(rt_access(outer, get_in_access, &g) == RT_OK);
        break;
    case GET_IN_UPDATE:
        NEED(rt_update(outer, get_in_update, &g) == RT_OK);
        NEED(g.outer_held_after == g.outer_held_before); /* the rebuild's block is s's */
        break;
    default:
        NEED(!"a place");
    }
    NEED(rt_held() == task_held);
    NEED(!rt__shared_locked(s) && !rt__shared_locked(outer));
    if (poisoned && !supervised) {
        /* refused: nothing copied out, nothing rebuilt, still poisoned */
        NEED(g.st == RT_POISONED && g.copied == 0 && b.builds == builds);
        for (size_t i = 0; i < sizeof g.out; i++)
            NEED(g.out[i] == 0xcc);
        NEED(rt_poisoned(s) && rt_shared_held(s) == block);
    } else {
        if (poisoned) {
            NEED(b.builds == builds + 1); /* rebuilt, then copied out */
            seed = 100 + b.builds;
        } else {
            NEED(b.builds == builds);
        }
        NEED(g.st == RT_OK && g.copied == size);
        NEED(!rt_poisoned(s) && rt_shared_held(s) == block);
        for (size_t i = 0; i < size; i++)
            NEED(g.out[i] == pattern(seed, i));
        for (size_t i = size; i < sizeof g.out; i++)
            NEED(g.out[i] == 0xcc); /* not a byte more */
        /* and the value is as it was: a second read gets the same */
        g.null_out = false;
        do_get(&g);
        NEED(g.st == RT_OK && g.copied == size);
        for (size_t i = 0; i < size; i++)
            NEED(g.out[i] == pattern(seed, i));
    }
    rt_shared_free(s);
    rt_shared_free(outer);
}

static void get_matrix(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    quiet_panics();
    for (size_t z = 0; z < sizeof get_sizes / sizeof get_sizes[0]; z++)
        for (int kind = 0; kind < 2; kind++)
            for (int sup = 0; sup < 2; sup++)
                for (int poi = 0; poi < 2; poi++)
                    for (int where = 0; where < GET_WHERE; where++)
                        for (int null_out = 0; null_out < (get_sizes[z] == 0 ? 2 : 1); null_out++)
                            one_get(get_sizes[z], kind ? RT_OWNED : RT_COPY, sup, poi,
                                    (enum get_where)where, null_out);
    NEED(rt_held() == 0 && rt__blocks_live() == 1);
}

START_TEST(get_copies_exactly_the_value_out_on_every_kind_size_and_state)
{
    run_ok(get_matrix, NULL);
}
END_TEST

/* ---- making a value: sizes and blocks at their boundaries --------------- */

/* A value of n bytes fits a block of exactly its chunk (n and an 8-byte
** header in 16-byte granules), and of up to 15 bytes more (a block's
** budget is rounded down to 16); one byte less is a violation naming the
** function. So does a size no block can hold (SIZE_MAX: no wrap). A
** supervised RT_OWNED value's first build allocates in that block too: a
** block that fits the value and not the build's allocation panics the
** build, in the task, and leaves nothing behind. */
static const size_t make_sizes[] = {0, 1, 8, 9, 24, 120, 128, 129, 1000, 4096};

static size_t violation_size, violation_block;

static void new_in_too_small_a_block(void *unused)
{
    unsigned char init[4096] = {0};
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_new(RT_COPY, violation_size, init, violation_block);
}

static void supervised_in_too_small_a_block(void *unused)
{
    struct get_build b = {violation_size, RT_COPY, 0};
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_supervised(RT_COPY, violation_size, build_pattern, &b, violation_block);
}

static void new_of_the_largest_size(void *unused)
{
    unsigned char init[16] = {0};
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_new(RT_OWNED, SIZE_MAX, init, 256);
}

static void supervised_of_the_largest_size(void *unused)
{
    struct get_build b = {0, RT_COPY, 0};
    (void)unused;
    init_fixed(64 * KIB);
    rt_shared_supervised(RT_OWNED, SIZE_MAX, build_pattern, &b, 256);
}

static struct get_build *failing_build;
static size_t failing_block;

static void *make_with_a_build_that_does_not_fit(void *unused)
{
    (void)unused;
    rt_shared_supervised(RT_OWNED, failing_build->size, build_pattern, failing_build,
                         failing_block);
    NEED(!"the build fitted");
    return NULL;
}

static void *no_work(void *unused)
{
    return unused;
}

static void fits_exactly(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    NEED(run_task(no_work, NULL) == RT_OK); /* what a first task makes for good */
    quiet_panics();
    long locks = rt__locks_live();
    for (size_t z = 0; z < sizeof make_sizes / sizeof make_sizes[0]; z++) {
        size_t n = make_sizes[z], chunk = chunk_for(n);
        unsigned char init[4096], out[4096 + 16];
        for (size_t i = 0; i < n; i++)
            init[i] = pattern(3, i);
        for (size_t extra = 0; extra < 16; extra += 15)
            for (int kind = 0; kind < 2; kind++) {
                rt_shared *s = rt_shared_new(kind ? RT_OWNED : RT_COPY, n, n ? init : NULL,
                                             chunk + extra);
                NEED(rt_shared_held(s) == chunk);
                memset(out, 0xcc, sizeof out);
                NEED(rt_get(s, out) == RT_OK && memcmp(out, init, n) == 0 && out[n] == 0xcc);
                rt_shared_free(s);

                struct get_build b = {n, kind ? RT_OWNED : RT_COPY, 0};
                size_t need = chunk + (kind ? chunk_for(GET_BUILD_ALLOC) : 0);
                s = rt_shared_supervised(b.kind, n, build_pattern, &b, need + extra);
                NEED(b.builds == 1 && rt_shared_held(s) == need && rt_held() == 0);
                NEED(rt_get(s, out) == RT_OK && out[n] == 0xcc);
                for (size_t i = 0; i < n; i++)
                    NEED(out[i] == pattern(101, i));
                rt_shared_free(s);

                /* the owned build's allocation one granule short: it panics
                ** in the first build, and nothing is left */
                if (kind) {
                    long allocs = allocs_live();
                    b.builds = 0;
                    failing_build = &b;
                    failing_block = need - 16 + extra;
                    NEED(run_task(make_with_a_build_that_does_not_fit, NULL) == RT_PANICKED);
                    NEED(b.builds == 1 && rt__blocks_live() == 1);
                    NEED(rt__locks_live() == locks && allocs_live() == allocs);
                }
            }
        NEED(rt__blocks_live() == 1 && rt__locks_live() == locks);
    }
}

static void too_small_must_violate(size_t size, size_t block)
{
    char msg[160];
    struct scenario sc = {new_in_too_small_a_block};
    violation_size = size;
    violation_block = block;
    snprintf(msg, sizeof msg, "refrt: rt_shared_new: a value of %zu bytes does not fit a block "
             "of %zu bytes\n", size, block);
    ck_assert_violation(scenario_then_exit, &sc, msg);
    sc.fn = supervised_in_too_small_a_block;
    snprintf(msg, sizeof msg, "refrt: rt_shared_supervised: a value of %zu bytes does not fit a "
             "block of %zu bytes\n", size, block);
    ck_assert_violation(scenario_then_exit, &sc, msg);
}

START_TEST(a_value_fits_a_block_of_exactly_its_chunk_and_not_one_byte_less)
{
    run_ok(fits_exactly, NULL);
    for (size_t z = 0; z < sizeof make_sizes / sizeof make_sizes[0]; z++)
        too_small_must_violate(make_sizes[z], chunk_for(make_sizes[z]) - 1);
    too_small_must_violate(0, 0);
    too_small_must_violate(1, 15);
    too_small_must_violate(9, 16);

    struct scenario sc = {new_of_the_largest_size};
    char msg[160];
    snprintf(msg, sizeof msg, "refrt: rt_shared_new: a value of %zu bytes does not fit a block "
             "of 256 bytes\n", SIZE_MAX);
    ck_assert_violation(scenario_then_exit, &sc, msg);
    sc.fn = supervised_of_the_largest_size;
    snprintf(msg, sizeof msg, "refrt: rt_shared_supervised: a value of %zu bytes does not fit a "
             "block of 256 bytes\n", SIZE_MAX);
    ck_assert_violation(scenario_then_exit, &sc, msg);
}
END_TEST

/* ---- misuse is refused before the call changes anything ---------------- */

/* An argument refused on sight (a kind that is no kind, a NULL init or
** build or fn or value or out, a and b the same value, a value freed in its
** own door) is refused before the call allocates, locks, pushes a door or
** frees anything: the abort finds the figures as they were just before the
** call. A SIGABRT handler reads them (allocations live, blocks live, locks
** made, this thread's innermost door) and says whether they changed, then
** hands over to run_child's own handler. Each case also names its own
** message: a check made late would report another misuse first (a door
** already open, a door nested against the order) or none (a trap when the
** allocation made too early fails). */
static struct figures {
    long allocs, locks;
    size_t blocks;
    struct rt_door *door;
} at_call;
static struct rt_hot *misuse_hot;
static struct sigaction before_misuse;

static struct figures figures_now(void)
{
    return (struct figures){allocs_live(), rt__locks_live(), rt__blocks_live(),
                            misuse_hot != NULL ? misuse_hot->door : NULL};
}

static void figures_at_abort(int sig)
{
    struct figures now = figures_now();
    if (now.allocs == at_call.allocs && now.locks == at_call.locks &&
        now.blocks == at_call.blocks && now.door == at_call.door)
        dprintf(2, "figures unchanged at the abort\n");
    else
        dprintf(2, "figures changed at the abort: allocations %ld -> %ld, locks %ld -> %ld, "
                "blocks %zu -> %zu, innermost door %p -> %p\n", at_call.allocs, now.allocs,
                at_call.locks, now.locks, at_call.blocks, now.blocks, (void *)at_call.door,
                (void *)now.door);
    if (before_misuse.sa_handler != SIG_DFL && before_misuse.sa_handler != SIG_IGN)
        before_misuse.sa_handler(sig);
}

/* Called right before the misuse, everything else made. */
static void about_to_misuse(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = figures_at_abort;
    sigemptyset(&sa.sa_mask);
    NEED(sigaction(SIGABRT, &sa, &before_misuse) == 0);
    misuse_hot = rt__hot_or_null();
    at_call = figures_now();
}

static void nothing_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    NEED(!"fn ran");
}

static void build_nothing(void *value, void *ctx)
{
    (void)value, (void)ctx;
}

static int64_t zero64;

static rt_shared *value_of_kind(rt_kind kind)
{
    return rt_shared_new(kind, sizeof zero64, &zero64, 256);
}

/* The cases: what is misused, and where. */
enum misuse {
    NEW_KIND_2,
    NEW_KIND_MINUS_1,
    NEW_INIT_NULL,
    NEW_INIT_NULL_HUGE,
    SUPERVISED_KIND_2,
    SUPERVISED_BUILD_NULL,
    SUPERVISED_BUILD_NULL_IN_A_DOOR,
    PAIR_A_NULL,
    PAIR_B_NULL,
    PAIR_FN_NULL,
    PAIR_A_AND_FN_NULL,
    PAIR_SAME,
    PAIR_SAME_POISONED,
    GET_OUT_NULL,
    GET_OUT_NULL_POISONED,
    GET_OUT_NULL_POISONED_SUPERVISED,
    GET_OUT_NULL_IN_ITS_ACCESS,
    GET_OUT_NULL_IN_ITS_UPDATE,
    GET_OUT_NULL_IN_A_LATER_DOOR,
    FREE_IN_COPY_UPDATE,
    FREE_IN_OWNED_UPDATE,
    FREE_IN_ACCESS,
    FREE_IN_PAIR_AS_A,
    FREE_IN_PAIR_AS_B,
    FREE_IN_A_LATER_DOOR,
    FREE_IN_A_DOOR_THAT_REBUILT_IT,
    MISUSES
};

static enum misuse misuse;
static rt_shared *mv[2]; /* the values of the case */
static rt_kind misuse_kind;

static void misuse_now(void)
{
    switch (misuse) {
    case NEW_KIND_2:
        about_to_misuse();
        rt_shared_new((rt_kind)2, sizeof zero64, &zero64, 256);
        break;
    case NEW_KIND_MINUS_1:
        about_to_misuse();
        rt_shared_new((rt_kind)-1, sizeof zero64, &zero64, 256);
        break;
    case NEW_INIT_NULL:
        about_to_misuse();
        rt_shared_new(misuse_kind, sizeof zero64, NULL, 256);
        break;
    case NEW_INIT_NULL_HUGE:
        about_to_misuse();
        rt_shared_new(misuse_kind, SIZE_MAX, NULL, 256);
        break;
    case SUPERVISED_KIND_2:
        about_to_misuse();
        rt_shared_supervised((rt_kind)2, sizeof zero64, build_nothing, NULL, 256);
        break;
    case SUPERVISED_BUILD_NULL:
    case SUPERVISED_BUILD_NULL_IN_A_DOOR:
        about_to_misuse();
        rt_shared_supervised(misuse_kind, sizeof zero64, NULL, NULL, 256);
        break;
    case PAIR_A_NULL:
        about_to_misuse();
        rt_update_all(NULL, mv[1], nothing_pair, NULL);
        break;
    case PAIR_B_NULL:
        about_to_misuse();
        rt_update_all(mv[0], NULL, nothing_pair, NULL);
        break;
    case PAIR_FN_NULL:
        about_to_misuse();
        rt_update_all(mv[0], mv[1], NULL, NULL);
        break;
    case PAIR_A_AND_FN_NULL:
        about_to_misuse();
        rt_update_all(NULL, mv[1], NULL, NULL);
        break;
    case PAIR_SAME:
    case PAIR_SAME_POISONED:
        about_to_misuse();
        rt_update_all(mv[0], mv[0], nothing_pair, NULL);
        break;
    case GET_OUT_NULL:
    case GET_OUT_NULL_POISONED:
    case GET_OUT_NULL_POISONED_SUPERVISED:
    case GET_OUT_NULL_IN_ITS_ACCESS:
    case GET_OUT_NULL_IN_ITS_UPDATE:
    case GET_OUT_NULL_IN_A_LATER_DOOR:
        about_to_misuse();
        rt_get(mv[0], NULL);
        break;
    default:
        about_to_misuse();
        rt_shared_free(mv[0]);
        break;
    }
    NEED(!"the misuse returned");
}

static void misuse_in_update(void *value, void *ctx)
{
    (void)value, (void)ctx;
    if (misuse == FREE_IN_OWNED_UPDATE) {
        /* the value's block and a stored value, which a free would drop */
        void *kept = rt_alloc(64), *stored = rt_alloc_outside(32);
        NEED(kept != NULL && stored != NULL && rt_store(mv[0], stored) == RT_OK);
    }
    misuse_now();
}

static void misuse_in_access(const void *value, void *ctx)
{
    (void)value, (void)ctx;
    misuse_now();
}

static void misuse_in_pair(void *va, void *vb, void *ctx)
{
    (void)va, (void)vb, (void)ctx;
    misuse_now();
}

static void misuse_in_a_later_door(void *value, void *ctx)
{
    (void)value;
    rt_update(mv[1], misuse_in_update, ctx);
}

static void *poison_by_panic(void *s)
{
    rt_update_all(s, mv[1], panic_at_once, NULL);
    return NULL;
}

static void misuse_scenario(void *unused)
{
    struct get_build b = {sizeof zero64, RT_OWNED, 0};
    (void)unused;
    init_fixed(64 * KIB);
    switch (misuse) {
    case NEW_KIND_2:
    case NEW_KIND_MINUS_1:
    case NEW_INIT_NULL:
    case NEW_INIT_NULL_HUGE:
    case SUPERVISED_KIND_2:
    case SUPERVISED_BUILD_NULL:
        misuse_now();
        break;
    case SUPERVISED_BUILD_NULL_IN_A_DOOR:
        mv[0] = value_of_kind(RT_OWNED);
        rt_update(mv[0], misuse_in_update, NULL);
        break;
    case PAIR_A_NULL:
    case PAIR_B_NULL:
    case PAIR_FN_NULL:
    case PAIR_A_AND_FN_NULL:
    case PAIR_SAME:
        mv[0] = value_of_kind(misuse_kind);
        mv[1] = value_of_kind(misuse_kind == RT_COPY ? RT_OWNED : RT_COPY);
        misuse_now();
        break;
    case PAIR_SAME_POISONED:
    case GET_OUT_NULL_POISONED:
        mv[0] = value_of_kind(misuse_kind);
        mv[1] = value_of_kind(RT_OWNED);
        NEED(run_task(poison_by_panic, mv[0]) == RT_PANICKED && rt_poisoned(mv[0]));
        misuse_now();
        break;
    case GET_OUT_NULL_POISONED_SUPERVISED:
        b.kind = misuse_kind;
        mv[0] = rt_shared_supervised(misuse_kind, sizeof zero64, build_pattern, &b, 256);
        mv[1] = value_of_kind(RT_OWNED);
        NEED(run_task(poison_by_panic, mv[0]) == RT_PANICKED && rt_poisoned(mv[0]));
        misuse_now(); /* refused before the rebuild */
        break;
    case GET_OUT_NULL:
        mv[0] = value_of_kind(misuse_kind);
        misuse_now();
        break;
    case GET_OUT_NULL_IN_ITS_ACCESS:
    case FREE_IN_ACCESS:
        mv[0] = value_of_kind(misuse_kind);
        rt_access(mv[0], misuse_in_access, NULL);
        break;
    case GET_OUT_NULL_IN_ITS_UPDATE:
        mv[0] = value_of_kind(misuse_kind);
        rt_update(mv[0], misuse_in_update, NULL);
        break;
    case FREE_IN_COPY_UPDATE:
        mv[0] = value_of_kind(RT_COPY);
        rt_update(mv[0], misuse_in_update, NULL);
        break;
    case FREE_IN_OWNED_UPDATE:
        mv[0] = rt_shared_new(RT_OWNED, sizeof zero64, &zero64, 1 * KIB);
        rt_update(mv[0], misuse_in_update, NULL);
        break;
    case GET_OUT_NULL_IN_A_LATER_DOOR:
        /* in a door on a value made later: refused as a NULL out, not as
        ** a door nested against the order */
        mv[0] = value_of_kind(misuse_kind);
        mv[1] = value_of_kind(RT_OWNED);
        rt_update(mv[1], misuse_in_update, NULL);
        break;
    case FREE_IN_A_LATER_DOOR:
        /* in a door on a value made later, inside a door on the value */
        mv[0] = value_of_kind(misuse_kind);
        mv[1] = value_of_kind(RT_OWNED);
        rt_update(mv[0], misuse_in_a_later_door, NULL);
        break;
    case FREE_IN_PAIR_AS_A:
    case FREE_IN_PAIR_AS_B:
        mv[0] = value_of_kind(misuse_kind);
        mv[1] = value_of_kind(misuse_kind == RT_COPY ? RT_OWNED : RT_COPY);
        if (misuse == FREE_IN_PAIR_AS_A)
            rt_update_all(mv[0], mv[1], misuse_in_pair, NULL);
        else
            rt_update_all(mv[1], mv[0], misuse_in_pair, NULL);
        break;
    case FREE_IN_A_DOOR_THAT_REBUILT_IT:
        b.kind = misuse_kind;
        mv[0] = rt_shared_supervised(misuse_kind, sizeof zero64, build_pattern, &b, 256);
        mv[1] = value_of_kind(RT_OWNED);
        NEED(run_task(poison_by_panic, mv[0]) == RT_PANICKED && rt_poisoned(mv[0]));
        rt_access(mv[0], misuse_in_access, NULL); /* rebuilt, then the free */
        break;
    default:
        NEED(!"a case");
    }
    NEED(!"the misuse was not refused");
}

static void misuse_child(void *unused)
{
    (void)unused;
    die_with_the_test();
    misuse_scenario(NULL);
}

static void misuse_must_be_refused_at_once(enum misuse m, rt_kind kind, const char *msg)
{
    misuse = m;
    misuse_kind = kind;
    struct death d = run_child(misuse_child, NULL);
    ck_assert_msg(d.signal == SIGABRT, "case %d kind %d: expected SIGABRT, got signal %d exit %d; "
                  "stderr: %s", (int)m, (int)kind, d.signal, d.exit_status, d.err);
    ck_assert_msg(strstr(d.err, msg) != NULL, "case %d kind %d: stderr lacks \"%s\": %s", (int)m,
                  (int)kind, msg, d.err);
    ck_assert_msg(strstr(d.err, "figures unchanged at the abort\n") != NULL,
                  "case %d kind %d: the call changed something before it refused: %s", (int)m,
                  (int)kind, d.err);
}

START_TEST(an_argument_refused_on_sight_is_refused_before_the_call_changes_anything)
{
    static const struct {
        enum misuse m;
        const char *msg;
    } cases[] = {
        {NEW_KIND_2, "refrt: rt_shared_new: kind 2 is neither RT_COPY nor RT_OWNED\n"},
        {NEW_KIND_MINUS_1, "refrt: rt_shared_new: kind -1 is neither RT_COPY nor RT_OWNED\n"},
        {NEW_INIT_NULL, "refrt: rt_shared_new: init is NULL for a value of 8 bytes\n"},
        {NEW_INIT_NULL_HUGE, "refrt: rt_shared_new: init is NULL for a value of "
                             "18446744073709551615 bytes\n"},
        {SUPERVISED_KIND_2, "refrt: rt_shared_supervised: kind 2 is neither RT_COPY nor "
                            "RT_OWNED\n"},
        {SUPERVISED_BUILD_NULL, "refrt: rt_shared_supervised: build is NULL\n"},
        {SUPERVISED_BUILD_NULL_IN_A_DOOR, "refrt: rt_shared_supervised: build is NULL\n"},
        {PAIR_A_NULL, "refrt: rt_update_all: the shared value is NULL\n"},
        {PAIR_B_NULL, "refrt: rt_update_all: the shared value is NULL\n"},
        {PAIR_FN_NULL, "refrt: rt_update_all: fn is NULL\n"},
        {PAIR_A_AND_FN_NULL, "refrt: rt_update_all: the shared value is NULL\n"},
        {PAIR_SAME, "refrt: rt_update_all: a and b are the same shared value (#"},
        {PAIR_SAME_POISONED, "refrt: rt_update_all: a and b are the same shared value (#"},
        {GET_OUT_NULL, "refrt: rt_get: out is NULL\n"},
        {GET_OUT_NULL_POISONED, "refrt: rt_get: out is NULL\n"},
        {GET_OUT_NULL_POISONED_SUPERVISED, "refrt: rt_get: out is NULL\n"},
        {GET_OUT_NULL_IN_ITS_ACCESS, "refrt: rt_get: out is NULL\n"},
        {GET_OUT_NULL_IN_ITS_UPDATE, "refrt: rt_get: out is NULL\n"},
        {GET_OUT_NULL_IN_A_LATER_DOOR, "refrt: rt_get: out is NULL\n"},
        {FREE_IN_COPY_UPDATE, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_OWNED_UPDATE, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_ACCESS, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_PAIR_AS_A, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_PAIR_AS_B, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_A_LATER_DOOR, "refrt: rt_shared_free: a door on shared value #1 is open"},
        {FREE_IN_A_DOOR_THAT_REBUILT_IT, "refrt: rt_shared_free: a door on shared value #1 is "
                                         "open"},
    };
    ck_assert_int_eq(sizeof cases / sizeof cases[0], MISUSES);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(cases[i].m, i);
        misuse_must_be_refused_at_once(cases[i].m, RT_COPY, cases[i].msg);
        misuse_must_be_refused_at_once(cases[i].m, RT_OWNED, cases[i].msg);
    }
}
END_TEST

/* ---- rt_update_all over two copies: the write-backs -------------------- */

/* shared.h's seam runs between the write-back of the value locked first and
** that of the value locked second: there the first holds fn's change and
** the second still its old bytes, both locked, whatever the argument order.
** The test reads the values' own bytes through the pointers an rt_access
** handed out (no rebuild moves them), on the thread that holds both locks. */
struct seam_value {
    int64_t n;
    unsigned char pad[192]; /* big enough for a copy on the heap */
};

static struct {
    rt_shared *first, *second;
    const struct seam_value *pf, *ps;
    int64_t first_new, second_old;
    int calls, as_promised;
} seam;

static void address_of(const void *value, void *ctx)
{
    *(const void **)ctx = value;
}

static void seam_hook(rt_shared *first, rt_shared *second)
{
    seam.calls++;
    if (first == seam.first && second == seam.second && seam.pf->n == seam.first_new &&
        seam.ps->n == seam.second_old && rt__shared_locked(first) && rt__shared_locked(second))
        seam.as_promised++;
}

static void move_ten(void *va, void *vb, void *ctx)
{
    (void)ctx;
    ((struct seam_value *)va)->n -= 10;
    ((struct seam_value *)vb)->n += 10;
}

static void seam_between_write_backs(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    for (int size = 0; size < 2; size++) {
        /* a copy on the door's stack (8 bytes), and on the heap */
        struct seam_value init;
        size_t bytes = size == 0 ? sizeof(int64_t) : sizeof init;
        memset(&init, 0, sizeof init);
        init.n = 100;
        rt_shared *x = rt_shared_new(RT_COPY, bytes, &init, 1 * KIB); /* made first */
        init.n = 0;
        rt_shared *y = rt_shared_new(RT_COPY, bytes, &init, 1 * KIB);
        const struct seam_value *px = NULL, *py = NULL;
        NEED(rt_access(x, address_of, &px) == RT_OK && rt_access(y, address_of, &py) == RT_OK);

        memset(&seam, 0, sizeof seam);
        seam.first = x;
        seam.second = y;
        seam.pf = px;
        seam.ps = py;
        rt__shared_between_writebacks = seam_hook;
        /* x passed first: x -10 is written, y still 0 */
        seam.first_new = 90;
        seam.second_old = 0;
        NEED(rt_update_all(x, y, move_ten, NULL) == RT_OK);
        /* y passed first, x still locked first: x +10 written, y still 10 */
        seam.first_new = 100;
        seam.second_old = 10;
        NEED(rt_update_all(y, x, move_ten, NULL) == RT_OK);
        rt__shared_between_writebacks = NULL;
        NEED(seam.calls == 2 && seam.as_promised == 2);
        NEED(px->n == 100 && py->n == 0);
        rt_shared_free(x);
        rt_shared_free(y);
    }
}

START_TEST(the_seam_between_write_backs_sees_the_first_value_written_and_the_second_not_yet)
{
    run_ok(seam_between_write_backs, NULL);
}
END_TEST

/* Each copy is written back by its own size and not a byte more, also
** when the value ends its block (a size whose chunk fills a block of
** exactly that chunk: the next byte is past the block's memory) and when
** its copy is the stack copy's full 128 bytes or on the heap: every pair
** of such sizes, each value locked first and second, passed as a and as b.
** Under ASan a byte more is a write past the block (or a read past the
** copy). */
static const size_t edge_sizes[] = {1, 8, 24, 120, 128, 129, 136, 1000};

struct edge_fill {
    size_t za, zb;
    unsigned char ba, bb;
};

static void fill_edges(void *va, void *vb, void *ctx)
{
    struct edge_fill *f = ctx;
    memset(va, f->ba, f->za);
    memset(vb, f->bb, f->zb);
}

static void value_is(rt_shared *s, size_t size, unsigned char b)
{
    unsigned char out[1000 + 16];
    memset(out, 0xcc, sizeof out);
    NEED(rt_get(s, out) == RT_OK);
    for (size_t i = 0; i < size; i++)
        NEED(out[i] == b);
    for (size_t i = size; i < sizeof out; i++)
        NEED(out[i] == 0xcc);
    NEED(rt_shared_held(s) == chunk_for(size));
}

static void copies_to_the_edge(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    unsigned char zero[1000] = {0};
    for (size_t i = 0; i < sizeof edge_sizes / sizeof edge_sizes[0]; i++)
        for (size_t j = 0; j < sizeof edge_sizes / sizeof edge_sizes[0]; j++) {
            size_t zx = edge_sizes[i], zy = edge_sizes[j];
            rt_shared *x = rt_shared_new(RT_COPY, zx, zero, chunk_for(zx)); /* locked first */
            rt_shared *y = rt_shared_new(RT_COPY, zy, zero, chunk_for(zy));
            struct edge_fill xy = {zx, zy, 0x11, 0x22}, yx = {zy, zx, 0x33, 0x44};
            NEED(rt_update_all(x, y, fill_edges, &xy) == RT_OK);
            value_is(x, zx, 0x11);
            value_is(y, zy, 0x22);
            NEED(rt_update_all(y, x, fill_edges, &yx) == RT_OK);
            value_is(y, zy, 0x33);
            value_is(x, zx, 0x44);
            rt_shared_free(x);
            rt_shared_free(y);
        }
}

START_TEST(update_all_writes_each_copy_back_by_its_own_size_to_the_end_of_its_block)
{
    run_ok(copies_to_the_edge, NULL);
}
END_TEST

/* ---- where a build allocates, and the door's fn after it --------------- */

/* A supervised value's build allocates from its fresh block if the value
** is RT_OWNED and from the task's block if it is RT_COPY (rt_alloc's rule:
** only a door in place uses a value's block), in the first build (on main,
** on a task, inside an update in place of a value made earlier, whose
** block it must not touch) and in a rebuild in every door (rt_update,
** rt_access, rt_get, rt_update_all as a and as b beside an RT_OWNED
** partner), on main and on a task. A rebuild's build reads its value's
** figure as the fresh block's: the value's chunk alone before it
** allocates. After the rebuild the door's fn allocates where its row says:
** an RT_OWNED update from the fresh block, every other door from the task's. */
#define WB_ALLOC 40
#define WB_FN_ALLOC 100

struct wb_build {
    rt_kind kind;
    rt_shared *self; /* NULL in the first build: the value is not made yet */
    unsigned builds;
    size_t task_delta, self_before, self_delta;
};

static void wb_build(void *value, void *ctx)
{
    struct wb_build *b = ctx;
    (void)value;
    b->builds++;
    size_t task = rt_held(), self = b->self != NULL ? rt_shared_held(b->self) : 0;
    void *p = rt_alloc(WB_ALLOC);
    NEED(p != NULL);
    b->task_delta = rt_held() - task;
    b->self_before = self;
    b->self_delta = b->self != NULL ? rt_shared_held(b->self) - self : 0;
    if (b->kind == RT_COPY)
        rt_free(p); /* the task's, given back: the build leaves the task as it was */
}

/* The build allocated where its kind says. */
static void wb_built_in_its_place(const struct wb_build *b)
{
    if (b->kind == RT_OWNED)
        NEED(b->task_delta == 0 && (b->self == NULL || b->self_delta == chunk_for(WB_ALLOC)));
    else
        NEED(b->task_delta == chunk_for(WB_ALLOC) && b->self_delta == 0);
    NEED(b->self == NULL || b->self_before == chunk_for(8));
}

static size_t wb_held(rt_kind kind)
{
    return chunk_for(8) + (kind == RT_OWNED ? chunk_for(WB_ALLOC) : 0);
}

enum wb_door { WB_UPDATE, WB_ACCESS, WB_GET, WB_ALL_A, WB_ALL_B, WB_DOORS };

struct wb_run {
    rt_shared *s, *partner, *outer;
    enum wb_door door;
    struct wb_build *b;
    size_t fn_task, fn_self, fn_partner; /* what fn's rt_alloc moved */
    rt_status st;
};

static void wb_fn_alloc(struct wb_run *r)
{
    size_t task = rt_held(), self = rt_shared_held(r->s), partner = rt_shared_held(r->partner);
    void *p = rt_alloc(WB_FN_ALLOC);
    NEED(p != NULL);
    r->fn_task = rt_held() - task;
    r->fn_self = rt_shared_held(r->s) - self;
    r->fn_partner = rt_shared_held(r->partner) - partner;
    rt_free(p); /* freed where it came from */
}
static void wb_update_fn(void *v, void *ctx) { (void)v; wb_fn_alloc(ctx); }
static void wb_access_fn(const void *v, void *ctx) { (void)v; wb_fn_alloc(ctx); }
static void wb_pair_fn(void *va, void *vb, void *ctx) { (void)va, (void)vb; wb_fn_alloc(ctx); }

static void wb_door(struct wb_run *r)
{
    int64_t out;
    switch (r->door) {
    case WB_UPDATE: r->st = rt_update(r->s, wb_update_fn, r); break;
    case WB_ACCESS: r->st = rt_access(r->s, wb_access_fn, r); break;
    case WB_GET: r->st = rt_get(r->s, &out); break;
    case WB_ALL_A: r->st = rt_update_all(r->s, r->partner, wb_pair_fn, r); break;
    default: r->st = rt_update_all(r->partner, r->s, wb_pair_fn, r); break;
    }
}

static void *wb_door_task(void *arg)
{
    wb_door(arg);
    return NULL;
}

static void wb_make_in_update(void *value, void *ctx)
{
    struct wb_run *r = ctx;
    size_t outer = rt_shared_held(r->outer);
    (void)value;
    r->s = (rt_shared_supervised)(r->b->kind, 8, wb_build, r->b, 1 * KIB);
    NEED(rt_shared_held(r->outer) == outer); /* the outer door's block untouched */
}

static void *wb_make_task(void *arg)
{
    struct wb_run *r = arg;
    r->s = (rt_shared_supervised)(r->b->kind, 8, wb_build, r->b, 1 * KIB);
    NEED(rt_held() == 0);
    return NULL;
}

static void builds_allocate_in_their_place(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    quiet_panics();
    int64_t zero = 0;
    for (int kind = RT_COPY; kind <= RT_OWNED; kind++) {
        /* the first build: on main, on a task, inside an update in place */
        for (int where = 0; where < 3; where++) {
            struct wb_build b = {(rt_kind)kind, NULL, 0, 0, 0, 0};
            struct wb_run r = {NULL, NULL, NULL, WB_UPDATE, &b, 0, 0, 0, RT_OK};
            if (where == 0) {
                r.s = (rt_shared_supervised)(b.kind, 8, wb_build, &b, 1 * KIB);
            } else if (where == 1) {
                NEED(run_task(wb_make_task, &r) == RT_OK);
            } else {
                r.outer = rt_shared_new(RT_OWNED, 8, &zero, 1 * KIB);
                size_t outer = rt_shared_held(r.outer);
                NEED(rt_update(r.outer, wb_make_in_update, &r) == RT_OK);
                NEED(rt_shared_held(r.outer) == outer);
                rt_shared_free(r.outer);
            }
            NEED(b.builds == 1);
            wb_built_in_its_place(&b);
            NEED(rt_shared_held(r.s) == wb_held(b.kind) && rt_held() == 0);
            (rt_shared_free)(r.s);
        }
        /* a rebuild in every door, on main and on a task */
        for (int door = 0; door < WB_DOORS; door++)
            for (int on_task = 0; on_task < 2; on_task++) {
                struct wb_build b = {(rt_kind)kind, NULL, 0, 0, 0, 0};
                struct wb_run r = {NULL, NULL, NULL, (enum wb_door)door, &b, 0, 0, 0, RT_CLOSED};
                r.s = rt_shared_supervised(b.kind, 8, wb_build, &b, 1 * KIB);
                r.partner = rt_shared_new(RT_OWNED, 8, &zero, 1 * KIB);
                size_t partner = rt_shared_held(r.partner);
                b.self = r.s;
                poison(r.s);
                if (on_task)
                    NEED(run_task(wb_door_task, &r) == RT_OK);
                else
                    wb_door(&r);
                NEED(r.st == RT_OK && b.builds == 2 && !rt_poisoned(r.s));
                wb_built_in_its_place(&b);
                NEED(rt_shared_held(r.s) == wb_held(b.kind) && rt_held() == 0);
                NEED(rt_shared_held(r.partner) == partner);
                /* fn, after the rebuild */
                if (door == WB_UPDATE && kind == RT_OWNED) {
                    NEED(r.fn_task == 0 && r.fn_self == chunk_for(WB_FN_ALLOC));
                    NEED(r.fn_partner == 0);
                } else if (door == WB_UPDATE || door == WB_ACCESS) {
                    NEED(r.fn_task == chunk_for(WB_FN_ALLOC) && r.fn_self == 0);
                    NEED(r.fn_partner == 0);
                } else if (door == WB_ALL_A && kind == RT_OWNED) {
                    NEED(r.fn_task == 0 && r.fn_self == chunk_for(WB_FN_ALLOC));
                    NEED(r.fn_partner == 0);
                } else if (door != WB_GET) {
                    /* a's block: the partner's when it is a, or s is a copy */
                    NEED(r.fn_task == 0 && r.fn_self == 0);
                    NEED(r.fn_partner == chunk_for(WB_FN_ALLOC));
                }
                rt_shared_free(r.s);
                rt_shared_free(r.partner);
            }
    }
    NEED(rt_held() == 0 && rt__blocks_live() == 1);
}

START_TEST(a_build_allocates_from_the_block_its_kind_names_and_fn_after_it_from_its_doors)
{
    run_ok(builds_allocate_in_their_place, NULL);
}
END_TEST

/* ---- the copy counter on every path ------------------------------------ */

/* RT_COST_SHARED_COPIED counts the bytes an RT_COPY door copies in and
** writes back, and what rt_get copies out (docs/budgets.md): exactly, on
** every path, on main and on a task. An RT_COPY update that returns: 2 x
** size; that panics: 1 x size (the copy, no write-back); refused on a
** poisoned value: 0; after the rebuild of a supervised one: 2 x size (the
** build writes the fresh value itself). rt_update_all over two copies of
** two sizes: 2 x (both), in either argument order; panicking: 1 x (both);
** with a poisoned one: 0; over a copy and an owned value, returning or
** panicking: 0. An update in place, an access (returning or panicking): 0.
** rt_get: size; of a poisoned value: 0. Sizes 8 (copies on the stack) and
** 200 (malloc'ed). */
struct cc_run {
    rt_shared *a, *b;
    int what;
    bool panics;
    rt_status st; /* what the door must return */
};

enum { CC_UPDATE, CC_ACCESS, CC_GET, CC_ALL };

static void cc_update_fn(void *v, void *ctx)
{
    struct cc_run *r = ctx;
    ((unsigned char *)v)[0] ^= 1;
    if (r->panics)
        rt_panic("the counted door panics");
}
static void cc_access_fn(const void *v, void *ctx)
{
    struct cc_run *r = ctx;
    (void)v;
    if (r->panics)
        rt_panic("the counted door panics");
}
static void cc_pair_fn(void *va, void *vb, void *ctx)
{
    ((unsigned char *)vb)[0] ^= 1;
    cc_update_fn(va, ctx);
}

static rt_status cc_door(struct cc_run *r)
{
    unsigned char out[256];
    switch (r->what) {
    case CC_UPDATE: return rt_update(r->a, cc_update_fn, r);
    case CC_ACCESS: return rt_access(r->a, cc_access_fn, r);
    case CC_GET: return rt_get(r->a, out);
    default: return rt_update_all(r->a, r->b, cc_pair_fn, r);
    }
}

static void *cc_task(void *arg)
{
    struct cc_run *r = arg;
    NEED(cc_door(r) == r->st);
    NEED(!r->panics);
    return NULL;
}

/* The counter's move over one door; st is what the door returned (on a
** task that panicked, RT_PANICKED). */
static unsigned long cc_counted(rt_shared *a, rt_shared *b, int what, bool panics,
                                bool on_task, rt_status st)
{
    struct cc_run r = {a, b, what, panics, st};
    unsigned long before = rt__cost(RT_COST_SHARED_COPIED);
    if (on_task || panics)
        NEED(run_task(cc_task, &r) == (panics ? RT_PANICKED : RT_OK));
    else
        NEED(cc_door(&r) == st);
    return rt__cost(RT_COST_SHARED_COPIED) - before;
}

static void cc_build(void *value, void *ctx)
{
    memset(value, 0x5a, *(size_t *)ctx);
}

static void copies_counted_on_every_path(void *unused)
{
    (void)unused;
    init_fixed(64 * KIB);
    quiet_panics();
    static const unsigned char zero[256];
    static const size_t sizes[] = {8, 200};
    for (int zi = 0; zi < 2; zi++)
        for (int on_task = 0; on_task < 2; on_task++) {
            size_t z = sizes[zi], zo = sizes[1 - zi];
            rt_shared *c = rt_shared_new(RT_COPY, z, zero, 1 * KIB);
            rt_shared *c2 = rt_shared_new(RT_COPY, zo, zero, 1 * KIB);
            rt_shared *o = rt_shared_new(RT_OWNED, z, zero, 1 * KIB);
            rt_shared *sup = rt_shared_supervised(RT_COPY, z, cc_build, &z, 1 * KIB);

            NEED(cc_counted(c, NULL, CC_UPDATE, false, on_task, RT_OK) == 2 * z);
            NEED(cc_counted(c, NULL, CC_UPDATE, true, on_task, RT_OK) == z);
            NEED(cc_counted(c, NULL, CC_ACCESS, false, on_task, RT_OK) == 0);
            NEED(cc_counted(c, NULL, CC_ACCESS, true, on_task, RT_OK) == 0);
            NEED(cc_counted(c, NULL, CC_GET, false, on_task, RT_OK) == z);
            NEED(cc_counted(c, c2, CC_ALL, false, on_task, RT_OK) == 2 * (z + zo));
            NEED(cc_counted(c2, c, CC_ALL, false, on_task, RT_OK) == 2 * (z + zo));
            NEED(cc_counted(c, c2, CC_ALL, true, on_task, RT_OK) == z + zo);
            NEED(cc_counted(c2, c, CC_ALL, true, on_task, RT_OK) == z + zo);
            NEED(!rt_poisoned(c) && !rt_poisoned(c2));
            NEED(cc_counted(o, NULL, CC_UPDATE, false, on_task, RT_OK) == 0);
            NEED(cc_counted(o, NULL, CC_ACCESS, false, on_task, RT_OK) == 0);
            NEED(cc_counted(o, NULL, CC_ACCESS, true, on_task, RT_OK) == 0);
            NEED(cc_counted(c, o, CC_ALL, false, on_task, RT_OK) == 0);
            NEED(cc_counted(o, c, CC_ALL, false, on_task, RT_OK) == 0);
            NEED(cc_counted(o, c, CC_ALL, true, on_task, RT_OK) == 0);
            /* that poisoned both: every door on them is refused, counting nothing */
            NEED(rt_poisoned(o) && rt_poisoned(c));
            NEED(cc_counted(c, NULL, CC_UPDATE, false, on_task, RT_POISONED) == 0);
            NEED(cc_counted(c, NULL, CC_GET, false, on_task, RT_POISONED) == 0);
            NEED(cc_counted(c, c2, CC_ALL, false, on_task, RT_POISONED) == 0);
            NEED(cc_counted(c2, c, CC_ALL, false, on_task, RT_POISONED) == 0);
            NEED(cc_counted(o, NULL, CC_UPDATE, false, on_task, RT_POISONED) == 0);
            /* a supervised copy, poisoned: rebuilt, then copied in and back */
            poison(sup);
            NEED(cc_counted(sup, NULL, CC_UPDATE, false, on_task, RT_OK) == 2 * z);
            NEED(!rt_poisoned(sup));
            poison(sup);
            NEED(cc_counted(sup, NULL, CC_GET, false, on_task, RT_OK) == z);
            poison(sup);
            NEED(cc_counted(sup, c2, CC_ALL, false, on_task, RT_OK) == 2 * (z + zo));
            rt_shared_free(c);
            rt_shared_free(c2);
            rt_shared_free(o);
            rt_shared_free(sup);
        }
}

START_TEST(the_copy_counter_counts_exactly_what_each_door_copies_on_every_path)
{
    run_ok(copies_counted_on_every_path, NULL);
}
END_TEST

/* Each test in a test case of its own, so that each result line names it.
** The timeout bounds no figure: it ends a scenario that a deliberate fault
** has deadlocked in a minute rather than the 300 s of testutil's guard. */
#define ADD_TEST(s, t)                                                               \
    do {                                                                             \
        TCase *tc_ = tcase_create(#t);                                               \
        tcase_set_timeout(tc_, 60);                                                  \
        tcase_add_test(tc_, t);                                                      \
        rt_add_case((s), tc_, #t);                                                   \
    } while (0)

Suite *make_suite(void)
{
    Suite *s = suite_create("doors");
    ADD_TEST(s, update_all_runs_fn_on_a_and_b_in_argument_order_and_keeps_its_rules_in_every_combination);
    ADD_TEST(s, update_and_access_keep_their_rules_in_every_combination);
    ADD_TEST(s, get_copies_exactly_the_value_out_on_every_kind_size_and_state);
    ADD_TEST(s, a_value_fits_a_block_of_exactly_its_chunk_and_not_one_byte_less);
    ADD_TEST(s, an_argument_refused_on_sight_is_refused_before_the_call_changes_anything);
    ADD_TEST(s, the_seam_between_write_backs_sees_the_first_value_written_and_the_second_not_yet);
    ADD_TEST(s, update_all_writes_each_copy_back_by_its_own_size_to_the_end_of_its_block);
    ADD_TEST(s, a_build_allocates_from_the_block_its_kind_names_and_fn_after_it_from_its_doors);
    ADD_TEST(s, the_copy_counter_counts_exactly_what_each_door_copies_on_every_path);
    return s;
}
