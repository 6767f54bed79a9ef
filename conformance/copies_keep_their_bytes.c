/*
** copies_keep_their_bytes.c: every copy the contract makes or allows keeps
** every byte, in whatever build the library is (the release build, whose
** copies are plain memcpy, is judged by these programs alone): a clone of
** an outside value (D7: the one explicit copy), a block value grown past
** its chunk (so it moves), an outside value grown and shrunk, a shared
** value's initial bytes, an RT_COPY update's bytes written back and read
** with rt_get and rt_access, and an update of two copies. Sizes 1 to 300,
** every byte a different value.
**
** expect: exit == 0
** expect: prog.clones_intact == 1
** expect: prog.block_moves_intact == 1
** expect: prog.outside_reallocs_intact == 1
** expect: prog.shared_init_intact == 1
** expect: prog.copy_updates_intact == 1
** expect: prog.update_all_intact == 1
** expect: prog.held_end == 0
*/
#include <stdio.h>
#include <string.h>

#include "refrt.h"

#define MAX 300

static unsigned char pattern(size_t i, unsigned salt)
{
    return (unsigned char)(i * 131u + salt * 7u + 1u);
}

static void fill(unsigned char *p, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(i, salt);
}

static int intact(const unsigned char *p, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(i, salt))
            return 0;
    return 1;
}

static int clones(void)
{
    int ok = 1;
    for (size_t n = 1; n <= MAX; n++) {
        unsigned char *v = rt_alloc_outside(n);
        fill(v, n, (unsigned)n);
        unsigned char *c = rt_clone_outside(v, n);
        ok &= c != v && intact(c, n, (unsigned)n) && intact(v, n, (unsigned)n);
        rt_free(c);
        rt_free(v);
    }
    return ok;
}

static int block_moves(void)
{
    int ok = 1;
    for (size_t n = 1; n <= MAX; n++) {
        unsigned char *v = rt_alloc(n);
        fill(v, n, (unsigned)n);
        void *fence = rt_alloc(8); /* v cannot grow in place */
        unsigned char *w = rt_realloc(v, n + 200);
        ok &= intact(w, n, (unsigned)n);
        rt_free(fence);
        rt_free(w);
    }
    return ok;
}

static int outside_reallocs(void)
{
    int ok = 1;
    for (size_t n = 2; n <= MAX; n++) {
        unsigned char *v = rt_alloc_outside(n);
        fill(v, n, (unsigned)n);
        v = rt_realloc(v, n * 40); /* malloc moves it, most sizes */
        ok &= intact(v, n, (unsigned)n);
        v = rt_realloc(v, n / 2);
        ok &= intact(v, n / 2, (unsigned)n);
        rt_free(v);
    }
    return ok;
}

struct check {
    size_t n;
    unsigned salt;
    int ok;
};

static void rewrite(void *v, void *ctx)
{
    struct check *c = ctx;
    c->ok &= intact(v, c->n, c->salt);
    fill(v, c->n, c->salt + 1);
}

static void reads(const void *v, void *ctx)
{
    struct check *c = ctx;
    c->ok &= intact(v, c->n, c->salt);
}

static void rewrite_both(void *va, void *vb, void *ctx)
{
    struct check *c = ctx;
    c->ok &= intact(va, c->n, c->salt) && intact(vb, c->n, c->salt + 50);
    fill(va, c->n, c->salt + 2);
    fill(vb, c->n, c->salt + 52);
}

int main(void)
{
    unsigned char init[MAX], out[MAX];
    int shared_init = 1, copy_updates = 1, update_all = 1;

    rt_set_strategy(rt_fixed_strategy(256 * 1024));
    rt_init();
    printf("observe clones_intact %d\n", clones());
    printf("observe block_moves_intact %d\n", block_moves());
    printf("observe outside_reallocs_intact %d\n", outside_reallocs());

    for (size_t n = 1; n <= MAX; n += 7) {
        fill(init, n, (unsigned)n);
        rt_shared *s = rt_shared_new(RT_COPY, n, init, 4096);
        memset(out, 0, sizeof out);
        shared_init &= rt_get(s, out) == RT_OK && intact(out, n, (unsigned)n);

        struct check c = {n, (unsigned)n, 1};
        copy_updates &= rt_update(s, rewrite, &c) == RT_OK && c.ok;
        memset(out, 0, sizeof out);
        c.salt = (unsigned)n + 1;
        copy_updates &= rt_get(s, out) == RT_OK && intact(out, n, c.salt);
        copy_updates &= rt_access(s, reads, &c) == RT_OK && c.ok;

        fill(init, n, (unsigned)n + 51);
        rt_shared *t = rt_shared_new(RT_COPY, n, init, 4096);
        struct check both = {n, (unsigned)n + 1, 1};
        update_all &= rt_update_all(s, t, rewrite_both, &both) == RT_OK && both.ok;
        update_all &= rt_get(s, out) == RT_OK && intact(out, n, (unsigned)n + 3);
        update_all &= rt_get(t, out) == RT_OK && intact(out, n, (unsigned)n + 53);
        rt_shared_free(t);
        rt_shared_free(s);
    }
    printf("observe shared_init_intact %d\n", shared_init);
    printf("observe copy_updates_intact %d\n", copy_updates);
    printf("observe update_all_intact %d\n", update_all);
    printf("observe held_end %zu\n", rt_held());
    return 0;
}
