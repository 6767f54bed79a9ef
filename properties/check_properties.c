/*
** check_properties.c: the property tests (Check).
**
** Each property runs thousands of generated sequences through the
** interpreter (prop_run.c), every result checked against its model. The
** sequences run in one worker process, which records the seed it is on in
** shared memory: when a check fails or the runtime crashes (a trap, an
** abort, a sanitizer), the test knows the seed, shrinks the sequence (each
** candidate in a child of its own, so a crash is a failure like any other),
** prints the seed and the shrunk sequence as a C snippet on stderr, writes
** the shrunk input where REFRT_PROP_OUT says (a fuzzer regression input),
** and fails naming the operation, what was expected and what came.
**
**   REFRT_SEED=0x0100000000000123   replays that one sequence
**   REFRT_PROP_RUNS=100000          sequences a property (default 4000; 400 under TSan)
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "prop.h"
#include "prop_spans.h"
#include "refrt.h"
#include <check.h>

#include "testmain.h"

/* The Check main (reference/tests/testmain.c) runs this. */
Suite *make_suite(void);

#define MAX_OPS 512
#define SHRINK_BUDGET 3000

/* What a worker or a child tells its parent. */
struct shared {
    uint64_t seed;         /* the sequence being run */
    size_t op;             /* the operation being run */
    uint64_t runs;         /* sequences that passed */
    struct prop_report rep;
};

static struct shared *shared_new(void)
{
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(sh != MAP_FAILED, "mmap: %s", strerror(errno));
    memset(sh, 0, sizeof *sh);
    return sh;
}

/* A panic prints its line on stderr, as the contract says: thousands of
** sequences that panic on purpose would bury make check's output, so the
** worker and the shrinker's children write stderr to /dev/null, and only
** the shrunk sequence's own run (report_failure) speaks. */
static void quiet(void)
{
    if (freopen("/dev/null", "w", stderr) == NULL)
        _exit(3);
}

/* Runs ops in a child (stderr silenced if hush). 0 if every check held;
** else 1, with sh->rep saying why (a check that failed, or the signal the
** child died of and the operation it was running). */
static int run_isolated(const struct prop_op *ops, size_t n, struct shared *sh, int hush)
{
    int status;
    pid_t pid;

    memset(&sh->rep, 0, sizeof sh->rep);
    sh->op = 0;
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (hush)
            quiet();
        prop_progress = &sh->op;
        _exit(prop_run(ops, n, &sh->rep) == 0 ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (!sh->rep.failed) {
        sh->rep.failed = 1;
        sh->rep.op = sh->op;
        snprintf(sh->rep.msg, sizeof sh->rep.msg, "op %zu: the runtime %s %d", sh->op,
                 WIFSIGNALED(status) ? "died of signal" : "exited with status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    return 1;
}

static int fails_isolated(const struct prop_op *ops, size_t n, void *ctx)
{
    return run_isolated(ops, n, ctx, 1);
}

/* Writes the input that replays ops to $REFRT_PROP_OUT/seed-<seed>.bin. */
static void save_input(uint64_t seed, const struct prop_op *ops, size_t n)
{
    static uint8_t bytes[MAX_OPS * PROP_RECORD];
    const char *dir = getenv("REFRT_PROP_OUT");
    char path[4096];
    FILE *f;

    if (dir == NULL)
        return;
    snprintf(path, sizeof path, "%s/seed-%016" PRIx64 ".bin", dir, seed);
    f = fopen(path, "wb");
    if (f == NULL)
        return;
    fwrite(bytes, 1, prop_encode(ops, n, bytes), f);
    fclose(f);
    fprintf(stderr, "as a fuzzer input: %s\n", path);
}

/* The seed failed: shrink it, print it, fail the test. */
static void report_failure(uint64_t seed, struct shared *sh)
{
    static struct prop_op ops[MAX_OPS];
    enum prop_profile profile = PROP_SEED_PROFILE(seed);
    size_t n = prop_generate(seed, profile, ops, MAX_OPS), shrunk;
    struct prop_report first = sh->rep;

    shrunk = prop_shrink(ops, n, fails_isolated, sh, SHRINK_BUDGET);
    run_isolated(ops, shrunk, sh, 0); /* the shrunk sequence's own report, and its stderr */
    fprintf(stderr,
            "\nrefrt properties: seed 0x%016" PRIx64 " (%s) fails: %s\n"
            "shrunk from %zu operations to %zu, which fail with: %s\n"
            "replay: REFRT_SEED=0x%016" PRIx64 " <this binary>, or in a test:\n",
            seed, prop_profile_names[profile], first.msg, n, shrunk, sh->rep.msg, seed);
    prop_print_snippet(stderr, ops, shrunk);
    save_input(seed, ops, shrunk);
    ck_abort_msg("seed 0x%016" PRIx64 " (%s): %s [shrunk to %zu ops: %s]", seed,
                 prop_profile_names[profile], first.msg, shrunk, sh->rep.msg);
}

/* Under ThreadSanitizer every byte the runtime clears or fills costs ~30
** times more, so a tenth of the sequences. mk/properties.mk passes the same
** figures; a run of this program alone (the mutant driver's first try of
** one case) gets them from here, and its case must take the time it took
** in the suite's run. */
#if defined(__SANITIZE_THREAD__)
#define PROP_RUNS_DEFAULT 400
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROP_RUNS_DEFAULT 400
#endif
#endif
#ifndef PROP_RUNS_DEFAULT
#define PROP_RUNS_DEFAULT 4000
#endif

static uint64_t runs_wanted(void)
{
    const char *s = getenv("REFRT_PROP_RUNS");
    return s != NULL && *s != '\0' ? strtoull(s, NULL, 0) : PROP_RUNS_DEFAULT;
}

/* Runs `count` sequences from first on in one worker; shrinks and reports
** the first that fails. */
static void run_seeds(uint64_t first, uint64_t count)
{
    static struct prop_op ops[MAX_OPS];
    struct shared *sh = shared_new();
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        quiet();
        prop_progress = &sh->op;
        for (uint64_t s = first; s < first + count; s++) {
            size_t n;
            sh->seed = s;
            n = prop_generate(s, PROP_SEED_PROFILE(s), ops, MAX_OPS);
            if (prop_run(ops, n, &sh->rep) != 0)
                _exit(1);
            sh->runs++;
        }
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        if (!sh->rep.failed)
            snprintf(sh->rep.msg, sizeof sh->rep.msg, "op %zu: the runtime %s %d", sh->op,
                     WIFSIGNALED(status) ? "died of signal" : "exited with status",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        report_failure(sh->seed, sh);
    }
    ck_assert_uint_eq(sh->runs, count);
    munmap(sh, sizeof *sh);
}

/* The task profiles spawn a thread or two a sequence and hand every step
** of it to that thread and back: a sequence costs several times one of
** the region profiles, so they run a quarter as many (1000 by default). */
static void run_profile(enum prop_profile profile)
{
    uint64_t runs = runs_wanted();
    run_seeds(PROP_SEED(profile, 1), profile >= PROP_HELD ? (runs + 3) / 4 : runs);
}

/* ---- the properties ------------------------------------------------------ */

/* Regions at several depths, many allocations: each allocation lands at
** the aligned bump and every byte of every region reads its own fill. */
START_TEST(every_region_reads_its_own_fill)
{
    run_profile(PROP_FILLS);
}
END_TEST

/* Regions and taken chunks used and given back again and again: a chunk
** taken back reads zero wherever it was used, never an earlier fill. */
START_TEST(a_reused_chunk_never_shows_earlier_bytes)
{
    run_profile(PROP_REUSE);
}
END_TEST

/* Nesting and takes past 16: rt_chunk_kept() follows the model, never
** more than 16, and takes pop the chunk given last. */
START_TEST(kept_never_exceeds_16_and_take_is_lifo)
{
    run_profile(PROP_DEEP);
}
END_TEST

/* Tasks allocating, reallocating and freeing block and outside values,
** near their budgets: after every operation rt_held() of each task is the
** model's live bytes; an allocation that cannot fit the room left panics,
** one that fits past the live chunks does not. */
START_TEST(held_equals_the_models_live_bytes)
{
    run_profile(PROP_HELD);
}
END_TEST

/* Tasks that hold block and outside values, a region, a door, and panic:
** the join says RT_PANICKED, every value they held is freed (prop_wrap.c
** sees every free), their block is gone, their region's chunk was freed
** cleared, and values they sent still arrive. */
START_TEST(a_panic_frees_everything_its_task_held)
{
    run_profile(PROP_PANICS);
}
END_TEST

/* Values sent from main and from a task, received by either, one channel
** of one slot and one of three: each arrives once, at the head, intact, in
** order; a receiver it does not fit panics and the value stays; the bytes
** move from the sender's count to the receiver's at rt_recv. */
START_TEST(channel_values_arrive_once_intact_in_order)
{
    run_profile(PROP_CHANNELS);
}
END_TEST

/* Shared values of both kinds, supervised or not, doors with and without
** panics: each value is poisoned exactly when the model says (D11), reads
** what the model says, and a door's allocations use the block the rules
** name. */
START_TEST(poisoned_exactly_when_the_model_says)
{
    run_profile(PROP_DOORS);
}
END_TEST

/* Supervised values poisoned by a spawned task and rebuilt by a later
** door, on the next spawned task or on main's: each build, the first and
** every rebuild, does what the model planned (stores, allocates in the
** fresh block or past it, grows, clones, hands over, sends, receives,
** works in a region, opens a door of its own, panics), reads what the
** model says as it goes, and leaves the value rebuilt or still poisoned,
** as the model says. */
START_TEST(builds_and_rebuilds_match_the_model)
{
    run_profile(PROP_BUILDS);
}
END_TEST

/* Every operation, free slots included, in any order. */
START_TEST(mixed_sequences_match_the_model)
{
    run_profile(PROP_MIXED);
}
END_TEST

/* ---- the interpreter itself ------------------------------------------------ */

/* Decoding is total: random byte strings of any length run to the end with
** every check holding (on a correct runtime), none crashes. */
START_TEST(any_byte_string_is_a_valid_sequence)
{
    static uint8_t buf[2000];
    uint64_t s = 42;
    struct prop_report rep;

    if (freopen("/dev/null", "w", stderr) == NULL) /* the panics' lines (quiet()) */
        ck_abort_msg("cannot silence stderr");
    for (int i = 0; i < 300; i++) {
        size_t len = (size_t)(s % sizeof buf);
        for (size_t k = 0; k < len; k++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            buf[k] = (uint8_t)(s >> 56);
        }
        ck_assert_msg(prop_run_bytes(buf, len, &rep) == 0, "input %d: %s", i, rep.msg);
    }
}
END_TEST

/* All zeros is the simplest sequence: regions opened one in the other,
** with every argument zero, the last record padded. */
START_TEST(zero_bytes_decode_to_nested_opens)
{
    static const uint8_t zeros[7 * 20 + 3];
    struct prop_op ops[32];
    struct prop_report rep;
    size_t n = prop_decode(zeros, sizeof zeros, ops, 32);

    ck_assert_uint_eq(n, 21);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(ops[i].kind, PROP_REGION_OPEN);
        ck_assert_uint_eq(ops[i].sel | ops[i].x | ops[i].y | ops[i].v, 0);
    }
    ck_assert_uint_eq(prop_decode(zeros, 0, ops, 32), 0);
    ck_assert_msg(prop_run_bytes(zeros, sizeof zeros, &rep) == 0, "%s", rep.msg);
}
END_TEST

/* Whether two sequences are the same operations, field by field: struct
** prop_op has padding, which memcmp would read (and which differs at -O0). */
static int same_ops(const struct prop_op *a, const struct prop_op *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].kind != b[i].kind || a[i].sel != b[i].sel || a[i].x != b[i].x ||
            a[i].y != b[i].y || a[i].v != b[i].v)
            return 0;
    return 1;
}

START_TEST(encoding_is_the_inverse_of_decoding)
{
    static struct prop_op ops[MAX_OPS], back[MAX_OPS];
    static uint8_t bytes[MAX_OPS * PROP_RECORD];

    for (uint64_t s = 0; s < 200; s++) {
        size_t n = prop_generate(PROP_SEED(s % PROP_PROFILES, s), s % PROP_PROFILES, ops, MAX_OPS);
        size_t len = prop_encode(ops, n, bytes);
        ck_assert_uint_eq(len, n * PROP_RECORD);
        ck_assert_uint_eq(prop_decode(bytes, len, back, MAX_OPS), n);
        ck_assert(same_ops(ops, back, n));
    }
}
END_TEST

/* The same seed gives the same sequence; different seeds differ. */
START_TEST(generation_is_deterministic)
{
    static struct prop_op a[MAX_OPS], b[MAX_OPS];
    size_t na = prop_generate(PROP_SEED(PROP_MIXED, 7), PROP_MIXED, a, MAX_OPS);
    size_t nb = prop_generate(PROP_SEED(PROP_MIXED, 7), PROP_MIXED, b, MAX_OPS);

    ck_assert_uint_eq(na, nb);
    ck_assert(same_ops(a, b, na));
    nb = prop_generate(PROP_SEED(PROP_MIXED, 8), PROP_MIXED, b, MAX_OPS);
    ck_assert(na != nb || !same_ops(a, b, na));
}
END_TEST

/* A stand-in for a failing runtime: fails when an open comes before a give
** whose end is at least 40. */
static int fails_on_open_then_give_40(const struct prop_op *ops, size_t n, void *ctx)
{
    int opened = 0;
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind == PROP_REGION_OPEN)
            opened = 1;
        else if (opened && ops[i].kind == PROP_CHUNK_GIVE && ops[i].x + ops[i].y >= 40)
            return 1;
    }
    return 0;
}

START_TEST(the_shrinker_finds_the_smallest_failure)
{
    static struct prop_op ops[MAX_OPS];
    size_t n = 0;

    for (uint64_t s = 1; n < 50; s++) /* a long failing sequence */
        n = prop_generate(PROP_SEED(PROP_MIXED, s), PROP_MIXED, ops, MAX_OPS);
    ops[n++] = (struct prop_op){PROP_REGION_OPEN, 9, 9, 9, 9};
    ops[n++] = (struct prop_op){PROP_CHUNK_GIVE, 200, 5000, 700, 0x33};
    ck_assert(fails_on_open_then_give_40(ops, n, NULL));
    n = prop_shrink(ops, n, fails_on_open_then_give_40, NULL, 100000);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ops[0].kind, PROP_REGION_OPEN);
    ck_assert_uint_eq(ops[0].sel | ops[0].x | ops[0].y | ops[0].v, 0);
    ck_assert_uint_eq(ops[1].kind, PROP_CHUNK_GIVE);
    ck_assert_uint_eq(ops[1].sel, 0);
    ck_assert_uint_eq(ops[1].x + ops[1].y, 40);
    ck_assert_uint_eq(ops[1].v, 0);
}
END_TEST

/* Corrupts one byte of the innermost region after op 1, as a runtime that
** wrote where it should not would. */
static void corrupt_after_op_1(size_t index)
{
    if (index == 1)
        rt_hot()->innermost->base[3] = 0x77;
}

/* A failed check names the operation, what was expected and what came. */
START_TEST(a_failure_names_the_op_expected_and_got)
{
    const struct prop_op ops[] = {
        {PROP_REGION_OPEN, 0, 0, 0, 0},
        {PROP_REGION_ALLOC, 0, 16, 2, 0xa5},
        {PROP_REGION_CHECK, 0, 0, 0, 0},
    };
    struct prop_report rep;

    prop_after_step = corrupt_after_op_1;
    ck_assert_int_eq(prop_run(ops, 3, &rep), 1);
    prop_after_step = NULL;
    ck_assert_uint_eq(rep.op, 2);
    ck_assert_msg(strncmp(rep.msg, "op 2 (region_check(region 0 from the innermost)): a region "
                          "does not read its own fills: byte 3 of chunk ", 99) == 0, "%s", rep.msg);
    ck_assert_msg(strstr(rep.msg, "reads 0x77, the model expects 0xa5") != NULL, "%s", rep.msg);
}
END_TEST

/* Where the runs of known bytes and a plain byte model (a value and a
** known flag a byte) disagree, or break their own invariants; "" if
** nowhere. One check at the end of a loop: Check's assertions write to a
** pipe each, too slow for every byte. */
static const char *runs_disagree(const struct prop_spans *k, const unsigned char *val,
                                 const unsigned char *known, size_t bytes)
{
    static char why[200];
    size_t at = 0;

    for (unsigned i = 0; i < k->n; i++) {
        const struct prop_span *r = &k->s[i];
        if (r->from >= r->to || r->from < at)
            return snprintf(why, sizeof why, "run %u is empty, overlaps or is out of order", i), why;
        if (i > 0 && r->from == at && r->v == k->s[i - 1].v)
            return snprintf(why, sizeof why, "runs %u and %u touch and agree", i - 1, i), why;
        for (size_t b = at; b < r->from; b++)
            if (known[b])
                return snprintf(why, sizeof why, "byte %zu is known but in no run", b), why;
        for (size_t b = r->from; b < r->to; b++)
            if (!known[b] || val[b] != r->v)
                return snprintf(why, sizeof why, "byte %zu is 0x%02x in a run, %s 0x%02x in the "
                                "byte model", b, r->v, known[b] ? "known" : "unknown", val[b]), why;
        at = r->to;
    }
    for (size_t b = at; b < bytes; b++)
        if (known[b])
            return snprintf(why, sizeof why, "byte %zu is known but in no run", b), why;
    return "";
}

/* The model's runs of known bytes agree with the plainest model there is
** after every one of many random sets. */
START_TEST(the_runs_of_known_bytes_agree_with_a_byte_model)
{
    enum { BYTES = 4096 };
    static struct prop_spans k;
    static unsigned char val[BYTES], known[BYTES];
    const char *why = "";
    int round, set = 0;
    uint64_t s = 7;

    for (round = 0; round < 100 && *why == '\0'; round++) {
        k.n = 0;
        memset(known, 0, sizeof known);
        for (set = 0; set < 200 && k.n + 2 <= PROP_MAX_SPANS && *why == '\0'; set++) {
            size_t from, to;
            unsigned char v;
            s = s * 6364136223846793005u + 1442695040888963407u;
            from = (s >> 8) % 4 == 0 ? 0 : (s >> 20) % BYTES; /* from 0: a give */
            to = from + (s >> 40) % (1 + ((s >> 4) % 2 ? 16 : BYTES));
            if (to > BYTES)
                to = BYTES;
            v = (unsigned char)((s >> 12) % 3); /* few values, so runs touch and agree */
            prop_spans_set(&k, from, to, v);
            memset(val + from, v, to - from);
            memset(known + from, 1, to - from);
            why = runs_disagree(&k, val, known, BYTES);
        }
    }
    ck_assert_msg(*why == '\0', "round %d, set %d: %s", round - 1, set - 1, why);
}
END_TEST

/* ---- REFRT_SEED ------------------------------------------------------------ */

START_TEST(replay_seed)
{
    uint64_t seed = strtoull(getenv("REFRT_SEED"), NULL, 0);
    fprintf(stderr, "refrt properties: replaying seed 0x%016" PRIx64 " (%s)\n", seed,
            prop_profile_names[PROP_SEED_PROFILE(seed)]);
    run_seeds(seed, 1);
}
END_TEST

/* One test case a test, so the results name each property. */
static void add(Suite *s, const char *name, const TTest *test)
{
    TCase *tc = tcase_create(name);
    /* A guard against a hang, not a speed bound: the counts bound the work. */
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test);
    rt_add_case(s, tc, name);
}

#define ADD(s, test) add((s), #test, test)

/* Run by the Check main every suite shares, reference/tests/testmain.c. */
Suite *make_suite(void)
{
    prop_checks_traps = 1; /* a call that must trap is made, and its trap caught */
    Suite *s = suite_create("properties");

    if (getenv("REFRT_SEED") != NULL)
        ADD(s, replay_seed);
    else {
        ADD(s, any_byte_string_is_a_valid_sequence);
        ADD(s, zero_bytes_decode_to_nested_opens);
        ADD(s, encoding_is_the_inverse_of_decoding);
        ADD(s, generation_is_deterministic);
        ADD(s, the_shrinker_finds_the_smallest_failure);
        ADD(s, a_failure_names_the_op_expected_and_got);
        ADD(s, the_runs_of_known_bytes_agree_with_a_byte_model);
        ADD(s, every_region_reads_its_own_fill);
        ADD(s, a_reused_chunk_never_shows_earlier_bytes);
        ADD(s, kept_never_exceeds_16_and_take_is_lifo);
        ADD(s, mixed_sequences_match_the_model);
        ADD(s, held_equals_the_models_live_bytes);
        ADD(s, a_panic_frees_everything_its_task_held);
        ADD(s, channel_values_arrive_once_intact_in_order);
        ADD(s, poisoned_exactly_when_the_model_says);
        ADD(s, builds_and_rebuilds_match_the_model);
    }
    return s;
}
