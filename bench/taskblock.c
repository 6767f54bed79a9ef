/*
** taskblock.c: the seed's taskblock workload (seed 002, step 1) over one
** allocator, picked at build time with -DALLOC=<n>, so that the binaries
** differ only in the allocator and no call goes through a pointer.
**
**   taskblock short N   N short tasks, each: its block made, a request read
**                       and a response written with 22 allocations and 7
**                       reallocations, its block emptied. No thread per task:
**                       what differs between binaries is the allocator.
**   taskblock long N    one long task (a connection loop) serving N requests
**                       under a 64 KiB budget, freeing each request's values.
**
** Every binary prints the same digest of the responses, so they are proven
** to do the same work. N = 0 measures start-up alone, which the driver
** (taskblock.py) subtracts.
*/
#include "internal.h"

#include <stdio.h>

#define ALLOC_MALLOC 1     /* glibc malloc, realloc, free */
#define ALLOC_BUDGET 2     /* malloc, each task's bytes counted against 64 KiB */
#define ALLOC_BUMP 3       /* a 64 KiB block, a bump pointer, emptied whole */
#define ALLOC_BLOCK 4      /* refrt's block (block.c), emptied whole */
#define ALLOC_BLOCK_FREE 5 /* refrt's block, each value freed, then emptied */
#define ALLOC_API 6        /* rt_alloc/rt_realloc/rt_free in main's task, each value freed */

/* The allocator's entry points: never inlined, all named tb_*, and none
** calls another, so callgrind --toggle-collect='tb_*' counts exactly what
** the allocator does (block made, the calls, block emptied). */
#define TB __attribute__((noinline))

#define BUDGET 65536u
#define VALUES 22

static RT_COLD _Noreturn __attribute__((unused)) void out_of_budget(const char *what, unsigned long request)
{
    printf("taskblock: %s: out of its 64 KiB budget at request %lu\n", what, request);
    exit(2);
}

static unsigned long request_no;

/* ---- the allocators ---------------------------------------------------- */

#if ALLOC == ALLOC_MALLOC || ALLOC == ALLOC_BUDGET
#if ALLOC == ALLOC_BUDGET
static size_t held; /* the check D5 makes, without a block */
#define COUNT(delta)                                                                     \
    do {                                                                                 \
        held += (delta);                                                                 \
        if (RT_UNLIKELY(held > BUDGET))                                                  \
            out_of_budget("budget", request_no);                                         \
    } while (0)
#define UNCOUNT(n) (held -= (n))
#else
#define COUNT(delta) ((void)(delta))
#define UNCOUNT(n) ((void)(n))
#endif
static TB void tb_task_begin(void)
{
    __asm__ volatile(""); /* kept: every variant makes the same calls */
}
static TB void *tb_alloc(size_t n)
{
    COUNT(n);
    return malloc(n);
}
static TB void *tb_realloc(void *p, size_t old, size_t n)
{
    COUNT(n - old);
    return realloc(p, n);
}
static TB void tb_free(void *p, size_t n)
{
    UNCOUNT(n);
    free(p);
}
static TB void tb_task_close(void)
{
    __asm__ volatile("");
}
#define FREES_EACH 1 /* malloc has no block to empty: each value is freed */

#elif ALLOC == ALLOC_BUMP
static unsigned char *bump_base, *bump, *bump_end;
static TB void tb_task_begin(void)
{
    bump_base = bump = malloc(BUDGET);
    bump_end = bump_base + BUDGET;
}
static inline size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}
static inline void *bump_take(size_t n)
{
    unsigned char *p = bump;
    if (RT_UNLIKELY(round16(n) > (size_t)(bump_end - bump)))
        out_of_budget("bump", request_no);
    bump += round16(n);
    return p;
}
static TB void *tb_alloc(size_t n)
{
    return bump_take(n);
}
static TB void *tb_realloc(void *p, size_t old, size_t n)
{
    void *q;
    if ((unsigned char *)p + round16(old) == bump && round16(n) - round16(old) <= (size_t)(bump_end - bump)) {
        bump = (unsigned char *)p + round16(n); /* the top grows in place */
        return p;
    }
    q = bump_take(n);
    memcpy(q, p, old);
    return q;
}
static TB void tb_free(void *p, size_t n)
{
    (void)p, (void)n; /* a bump block never reuses */
    __asm__ volatile("");
}
static TB void tb_task_close(void)
{
    free(bump_base);
}
#define FREES_EACH 0

#elif ALLOC == ALLOC_BLOCK || ALLOC == ALLOC_BLOCK_FREE
static struct rt_block *block;
static TB void tb_task_begin(void)
{
    block = rt__block_new(BUDGET);
}
static TB void *tb_alloc(size_t n)
{
    void *p = rt__block_alloc(block, n);
    if (RT_UNLIKELY(p == NULL))
        out_of_budget("block", request_no);
    return p;
}
static TB void *tb_realloc(void *p, size_t old, size_t n)
{
    bool held;
    (void)old;
    p = rt__block_realloc(block, p, n, &held);
    if (RT_UNLIKELY(p == NULL))
        out_of_budget("block", request_no);
    return p;
}
static TB void tb_free(void *p, size_t n)
{
    (void)n;
    rt__block_free(block, p);
}
static TB void tb_task_close(void)
{
    rt__block_delete(block);
}
#define FREES_EACH (ALLOC == ALLOC_BLOCK_FREE)
#elif ALLOC == ALLOC_API
/* The public API: one task (main's, a 64 KiB block by rt_fixed_strategy)
** whose values are freed one by one, since only a task's end empties its
** block. What it adds to block-free is the way in: the thread's state,
** the task check, the door check. */
static TB void tb_task_begin(void)
{
    __asm__ volatile("");
}
static TB void *tb_alloc(size_t n)
{
    return rt_alloc(n);
}
static TB void *tb_realloc(void *p, size_t old, size_t n)
{
    (void)old;
    return rt_realloc(p, n);
}
static TB void tb_free(void *p, size_t n)
{
    (void)n;
    rt_free(p);
}
static TB void tb_task_close(void)
{
    __asm__ volatile("");
}
#define FREES_EACH 1
#else
#error "build with -DALLOC=1..6"
#endif

/* ---- the workload ------------------------------------------------------ */

static const char TEXT[] =
    "GET /api/v1/orders/4711/items?expand=price&currency=EUR HTTP/1.1\r\n"
    "Host: shop.example.org\r\nUser-Agent: taskblock/1.0 (seed 002)\r\n"
    "Accept: application/json, text/plain;q=0.9, */*;q=0.1\r\n"
    "Accept-Language: de-CH, de;q=0.9, en;q=0.7\r\nAccept-Encoding: gzip, br\r\n"
    "Cookie: session=8f2e6c0d5a7b49e1b3c4d5e6f708192a; theme=dark\r\n"
    "X-Request-Id: 0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f\r\nConnection: keep-alive\r\n\r\n";

static inline uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* A copy of n bytes of TEXT from offset at, NUL-terminated. */
static inline char *copy_text(size_t at, size_t n, void **v, size_t *sizes, int *k)
{
    char *p = tb_alloc(n + 1);
    memcpy(p, TEXT + at % (sizeof TEXT - n - 1), n);
    p[n] = '\0';
    v[*k] = p;
    sizes[(*k)++] = n + 1;
    return p;
}

struct digest {
    uint64_t sum, bytes;
};

/* One request read and one response written: 22 allocations and 7
** reallocations, the values listed in v/sizes for task_end. */
static void serve(uint32_t seed, struct digest *d, void **v, size_t *sizes)
{
    uint32_t s = seed;
    int k = 0;
    size_t len = 0, cap, n;
    char *req, *path, *body, *trailer, *resp;
    char **hdr;
    uint64_t h = 0;

    /* read the request in four pieces, growing the buffer each time */
    n = 40 + next(&s) % 80;
    cap = n;
    req = tb_alloc(cap);
    memcpy(req, TEXT, n);
    len = n;
    for (int piece = 1; piece < 4; piece++) {
        n = 40 + next(&s) % 80;
        size_t old = cap;
        cap = len + n;
        req = tb_realloc(req, old, cap);
        memcpy(req + len, TEXT + len % 200, n);
        len += n;
    }
    v[k] = req;
    sizes[k++] = cap;

    /* parse: a path and eight headers, each a name and a value */
    path = copy_text(4, 20 + next(&s) % 30, v, sizes, &k);
    hdr = tb_alloc(4 * 2 * sizeof *hdr);
    for (int i = 0; i < 8; i++) {
        if (i == 4) {
            hdr = tb_realloc(hdr, 4 * 2 * sizeof *hdr, 8 * 2 * sizeof *hdr);
        }
        hdr[2 * i] = copy_text(next(&s) % 300, 4 + next(&s) % 12, v, sizes, &k);
        hdr[2 * i + 1] = copy_text(next(&s) % 300, 8 + next(&s) % 40, v, sizes, &k);
    }
    v[k] = hdr;
    sizes[k++] = 8 * 2 * sizeof *hdr;

    /* the response: a body, a trailer, and the text written in four steps */
    body = copy_text(next(&s) % 200, 60 + next(&s) % 200, v, sizes, &k);
    trailer = copy_text(next(&s) % 100, 16, v, sizes, &k);
    size_t rcap = 64, rlen;
    resp = tb_alloc(rcap);
    rlen = (size_t)snprintf(resp, rcap, "HTTP/1.1 200 OK\r\nX-Path: ");
    size_t parts[3] = {strlen(path) + 2, 0, strlen(body) + strlen(trailer)};
    for (int i = 0; i < 8; i++)
        parts[1] += strlen(hdr[2 * i]) + strlen(hdr[2 * i + 1]) + 4;
    for (int step = 0; step < 3; step++) {
        size_t old = rcap;
        rcap = rlen + parts[step] + 1;
        resp = tb_realloc(resp, old, rcap);
        char *w = resp + rlen;
        if (step == 0) {
            w += sprintf(w, "%s\r\n", path);
        } else if (step == 1) {
            for (int i = 0; i < 8; i++)
                w += sprintf(w, "%s: %s\r\n", hdr[2 * i], hdr[2 * i + 1]);
        } else {
            w += sprintf(w, "%s%s", body, trailer);
        }
        rlen = (size_t)(w - resp);
    }
    v[k] = resp;
    sizes[k++] = rcap;
    if (k != VALUES)
        abort();

    for (size_t i = 0; i + 8 <= rlen; i += 8) {
        uint64_t w;
        memcpy(&w, resp + i, 8);
        h = (h ^ w) * 0x100000001B3u;
    }
    d->sum += h ^ rlen;
    d->bytes += rlen;
}

int main(int argc, char **argv)
{
    struct digest d = {0, 0};
    void *v[VALUES];
    size_t sizes[VALUES];
    unsigned long n;
    int long_task;

    if (argc != 3 || (strcmp(argv[1], "short") != 0 && strcmp(argv[1], "long") != 0)) {
        fprintf(stderr, "usage: %s short|long N\n", argv[0]);
        return 1;
    }
    long_task = strcmp(argv[1], "long") == 0;
#if ALLOC == ALLOC_API
    rt_set_strategy(rt_fixed_strategy(BUDGET));
    rt_init();
    if (rt_budget() != BUDGET)
        abort();
#endif
    n = strtoul(argv[2], NULL, 10);
    if (!long_task) {
        for (request_no = 0; request_no < n; request_no++) {
            tb_task_begin();
            serve((uint32_t)request_no, &d, v, sizes);
            if (FREES_EACH)
                for (int i = 0; i < VALUES; i++)
                    tb_free(v[i], sizes[i]);
            tb_task_close();
        }
    } else {
        size_t peak = 0;
        tb_task_begin();
        for (request_no = 0; request_no < n; request_no++) {
            serve((uint32_t)request_no, &d, v, sizes);
#if ALLOC == ALLOC_BLOCK || ALLOC == ALLOC_BLOCK_FREE
            if (rt__block_held(block) > peak)
                peak = rt__block_held(block);
#endif
            for (int i = 0; i < VALUES; i++)
                tb_free(v[i], sizes[i]);
        }
#if ALLOC == ALLOC_BLOCK || ALLOC == ALLOC_BLOCK_FREE
        if (rt__block_held(block) != 0)
            abort(); /* everything was freed: held is back to nothing */
        printf("taskblock: long peak-held %zu of %zu\n", peak, rt__block_size(block));
#endif
        (void)peak;
        tb_task_close();
    }
    printf("taskblock: %s %lu digest %016llx bytes %llu\n", argv[1], n,
           (unsigned long long)d.sum, (unsigned long long)d.bytes);
    return 0;
}
