/*
** prop_spans.h: what the model knows of one chunk's bytes, as runs.
**
** A sorted list of disjoint runs [from, to) whose bytes all read v; a byte
** in no run is unknown. Setting a range cuts the runs it overlaps and
** merges neighbours that touch and agree, so a region's allocations (each
** past the last) and a give's clearing of [0, end) keep the list short.
** Header-only so that the model (prop_run.c) and its own test
** (check_properties.c) share it.
*/
#ifndef REFRT_PROP_SPANS_H
#define REFRT_PROP_SPANS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs one chunk's model can hold: plenty for 64 KiB touched by a run of a
** few hundred operations; past it the interpreter skips what it could not
** follow. */
#define PROP_MAX_SPANS 1024

struct prop_span {
    uint32_t from, to;
    uint8_t v;
};

struct prop_spans {
    unsigned n;
    struct prop_span s[PROP_MAX_SPANS]; /* sorted, disjoint, none empty */
};

/* Appends a run, merged with the last one when they touch and agree. */
static inline void prop_spans_push(struct prop_span *out, unsigned *n, uint32_t from,
                                   uint32_t to, uint8_t v)
{
    if (from == to)
        return;
    if (*n > 0 && out[*n - 1].to == from && out[*n - 1].v == v)
        out[*n - 1].to = to;
    else
        out[(*n)++] = (struct prop_span){from, to, v};
}

/* Bytes [from, to) now read v. Adds at most two runs; the caller keeps
** room for them. */
static inline void prop_spans_set(struct prop_spans *k, size_t from, size_t to, unsigned char v)
{
    static struct prop_span out[PROP_MAX_SPANS + 2];
    unsigned n = 0;

    if (k->n == 0 || k->s[k->n - 1].to <= from) {
        /* Past every known byte: a region's next allocation. */
        prop_spans_push(k->s, &k->n, (uint32_t)from, (uint32_t)to, v);
        return;
    }
    for (unsigned i = 0; i < k->n; i++) {
        const struct prop_span *s = &k->s[i];
        if (s->from < from) /* before, or the part of it that is */
            prop_spans_push(out, &n, s->from, s->to < from ? s->to : (uint32_t)from, s->v);
    }
    prop_spans_push(out, &n, (uint32_t)from, (uint32_t)to, v);
    for (unsigned i = 0; i < k->n; i++) {
        const struct prop_span *s = &k->s[i];
        if (s->to > to) /* after, or the part of it that is */
            prop_spans_push(out, &n, s->from > to ? s->from : (uint32_t)to, s->to, s->v);
    }
    if (n > PROP_MAX_SPANS)
        abort(); /* the caller did not keep room */
    memcpy(k->s, out, n * sizeof out[0]);
    k->n = n;
}

/* One past the last known byte. */
static inline size_t prop_spans_end(const struct prop_spans *k)
{
    return k->n > 0 ? k->s[k->n - 1].to : 0;
}

#endif
