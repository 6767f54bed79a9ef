/*
** prop_codec.c: bytes to operations and back, and how an operation reads.
**
** The decoder is total and has no state: any byte string is a sequence of
** 7-byte records, a short last record padded with zeros. Encoding is its
** exact inverse for kinds below PROP_SLOTS, so a sequence the generator or
** the shrinker made can be written out as a fuzzer input.
*/
#include "prop.h"

#include <string.h>

static const char *const kind_names[PROP_KINDS] = {
    [PROP_REGION_OPEN] = "region_open",   [PROP_REGION_ALLOC] = "region_alloc",
    [PROP_REGION_CLOSE] = "region_close", [PROP_REGION_CHECK] = "region_check",
    [PROP_CHUNK_TAKE] = "chunk_take",     [PROP_CHUNK_FILL] = "chunk_fill",
    [PROP_CHUNK_GIVE] = "chunk_give",     [PROP_CHUNK_CHECK] = "chunk_check",
    [PROP_THREAD] = "thread",             [PROP_ALLOC] = "alloc",
    [PROP_REALLOC] = "realloc",           [PROP_FREE] = "free",
    [PROP_OUTSIDE] = "alloc_outside",     [PROP_CLONE] = "clone_outside",
    [PROP_HAND_OVER] = "hand_over",       [PROP_SPAWN] = "spawn",
    [PROP_JOIN] = "join",                 [PROP_PANIC] = "panic",
    [PROP_SEND] = "send",                 [PROP_RECV] = "recv",
    [PROP_CLOSE] = "chan_close",          [PROP_SHARED] = "shared_new",
    [PROP_UPDATE] = "update",             [PROP_UPDATE_ALL] = "update_all",
    [PROP_ACCESS] = "access",             [PROP_GET] = "get",
    [PROP_REGION_EDGE] = "region_edge",
};

static const char *const kind_enums[PROP_KINDS] = {
    [PROP_REGION_OPEN] = "PROP_REGION_OPEN",   [PROP_REGION_ALLOC] = "PROP_REGION_ALLOC",
    [PROP_REGION_CLOSE] = "PROP_REGION_CLOSE", [PROP_REGION_CHECK] = "PROP_REGION_CHECK",
    [PROP_CHUNK_TAKE] = "PROP_CHUNK_TAKE",     [PROP_CHUNK_FILL] = "PROP_CHUNK_FILL",
    [PROP_CHUNK_GIVE] = "PROP_CHUNK_GIVE",     [PROP_CHUNK_CHECK] = "PROP_CHUNK_CHECK",
    [PROP_THREAD] = "PROP_THREAD",             [PROP_ALLOC] = "PROP_ALLOC",
    [PROP_REALLOC] = "PROP_REALLOC",           [PROP_FREE] = "PROP_FREE",
    [PROP_OUTSIDE] = "PROP_OUTSIDE",           [PROP_CLONE] = "PROP_CLONE",
    [PROP_HAND_OVER] = "PROP_HAND_OVER",       [PROP_SPAWN] = "PROP_SPAWN",
    [PROP_JOIN] = "PROP_JOIN",                 [PROP_PANIC] = "PROP_PANIC",
    [PROP_SEND] = "PROP_SEND",                 [PROP_RECV] = "PROP_RECV",
    [PROP_CLOSE] = "PROP_CLOSE",               [PROP_SHARED] = "PROP_SHARED",
    [PROP_UPDATE] = "PROP_UPDATE",             [PROP_UPDATE_ALL] = "PROP_UPDATE_ALL",
    [PROP_ACCESS] = "PROP_ACCESS",             [PROP_GET] = "PROP_GET",
    [PROP_REGION_EDGE] = "PROP_REGION_EDGE",
};

struct prop_op prop_decode_one(const uint8_t *data, size_t size)
{
    uint8_t r[PROP_RECORD] = {0};
    struct prop_op op;

    memcpy(r, data, size < PROP_RECORD ? size : PROP_RECORD);
    op.kind = (uint8_t)(r[0] % PROP_SLOTS);
    if ((op.kind == PROP_THREAD || op.kind == PROP_SPAWN) && r[0] != op.kind)
        op.kind = PROP_SKIP; /* a thread answers to its own byte only (prop.h) */
    op.sel = r[1];
    op.x = (uint16_t)(r[2] | r[3] << 8);
    op.y = (uint16_t)(r[4] | r[5] << 8);
    op.v = r[6];
    return op;
}

size_t prop_decode(const uint8_t *data, size_t size, struct prop_op *ops, size_t max)
{
    size_t n = 0;

    for (size_t at = 0; at < size && n < max; at += PROP_RECORD, n++)
        ops[n] = prop_decode_one(data + at, size - at);
    return n;
}

size_t prop_encode(const struct prop_op *ops, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t *r = out + i * PROP_RECORD;
        r[0] = ops[i].kind;
        r[1] = ops[i].sel;
        r[2] = (uint8_t)ops[i].x;
        r[3] = (uint8_t)(ops[i].x >> 8);
        r[4] = (uint8_t)ops[i].y;
        r[5] = (uint8_t)(ops[i].y >> 8);
        r[6] = ops[i].v;
    }
    return n * PROP_RECORD;
}

/* The door a door's fn (x bit 12 and y bits 8, 9) or a rebuild (x bit 10
** and bits 11, 12 of PROP_SHARED) opens on the value made next. */
static const char *const nest_names[4] = {"gets", "accesses", "updates",
                                          "updates (update_all, with the one after it)"};

static void describe_nest(const struct prop_op *op, char *buf, size_t len)
{
    if (op->x & 0x1000)
        snprintf(buf, len, ", %s the value made next%s", nest_names[(op->y >> 8) & 3],
                 (op->y & 0x81) == 0x81 ? " (its panic inside)" : "");
}

void prop_describe(const struct prop_op *op, char *buf, size_t len)
{
    switch (op->kind) {
    case PROP_REGION_OPEN:
    case PROP_REGION_CLOSE:
    case PROP_CHUNK_TAKE:
        snprintf(buf, len, "%s()", kind_names[op->kind]);
        break;
    case PROP_REGION_ALLOC:
        snprintf(buf, len, "region_alloc(region %u from the innermost, %u x %u bytes, fill 0x%02x)",
                 op->sel, op->y, op->x, op->v);
        break;
    case PROP_REGION_CHECK:
        snprintf(buf, len, "region_check(region %u from the innermost)", op->sel);
        break;
    case PROP_CHUNK_FILL:
        snprintf(buf, len, "chunk_fill(taken chunk %u, [%u, %u + %u), 0x%02x)", op->sel, op->x,
                 op->x, op->y, op->v);
        break;
    case PROP_CHUNK_GIVE:
        snprintf(buf, len, "chunk_give(taken chunk %u, end %u + %u)", op->sel, op->x, op->y);
        break;
    case PROP_CHUNK_CHECK:
        snprintf(buf, len, "chunk_check(taken chunk %u)", op->sel);
        break;
    case PROP_THREAD:
        snprintf(buf, len, "thread(%u chunks, %u bytes of 0x%02x each)", 1 + op->sel % 20,
                 op->x, op->v);
        break;
    case PROP_ALLOC:
        if (op->sel & 0x40)
            snprintf(buf, len, "alloc(what the budget has left, fill 0x%02x)", op->v);
        else if (op->sel & 0x80)
            snprintf(buf, len, "alloc(a chunk more than the budget has left, fill 0x%02x)", op->v);
        else
            snprintf(buf, len, "alloc(%u bytes, fill 0x%02x)", op->x, op->v);
        break;
    case PROP_REALLOC:
        snprintf(buf, len, "realloc(%s value %u, %u bytes, fill 0x%02x)",
                 op->sel & 1 ? "outside" : "block", op->sel >> 1, op->x, op->v);
        break;
    case PROP_FREE:
    case PROP_CLONE:
        snprintf(buf, len, "%s(%s value %u)", kind_names[op->kind],
                 op->sel & 1 ? "outside" : "block", op->sel >> 1);
        break;
    case PROP_OUTSIDE:
        if (op->sel & 0x80)
            snprintf(buf, len, "alloc_outside(a byte more than the budget has left)");
        else
            snprintf(buf, len, "alloc_outside(%u bytes, fill 0x%02x)", op->x, op->v);
        break;
    case PROP_HAND_OVER:
        snprintf(buf, len, "hand_over(%s value %u)", op->sel & 0x80 ? "block" : "outside",
                 op->sel & 0x7f);
        break;
    case PROP_SPAWN:
        if (op->sel & 1)
            snprintf(buf, len, "spawn(the default strategy's block)");
        else
            snprintf(buf, len, "spawn(a block of %u bytes)", 512 * (1 + op->x % 128));
        break;
    case PROP_JOIN:
        if (op->sel & 1)
            snprintf(buf, len, "join(the task returns outside value %u)", op->sel >> 1);
        else
            snprintf(buf, len, "join(the task returns NULL)");
        break;
    case PROP_PANIC:
        if (op->sel & 1)
            snprintf(buf, len, "panic(in a region of %u bytes of 0x%02x)", op->x, op->v);
        else
            snprintf(buf, len, "panic()");
        break;
    case PROP_SEND:
        snprintf(buf, len, "send(%s value %u, channel %u)", op->sel & 0x80 ? "block" : "outside",
                 op->sel & 0x7f, op->y & 1);
        break;
    case PROP_RECV:
    case PROP_CLOSE:
        snprintf(buf, len, "%s(channel %u)", kind_names[op->kind], op->y & 1);
        break;
    case PROP_SHARED: {
        char build[320] = "";
        if (op->sel & 2) /* what build does: sel bits 2 to 7, x bits 6 to 13, y bits 12 to 14 */
            snprintf(build, sizeof build, ", build %s%u bytes%s%s%s%s%s%s%s%s%s%s%s",
                     op->sel >> 2 != 0 ? "allocates " : "allocates nothing: ",
                     (unsigned)(op->sel >> 2) * 24, op->y & 0x4000 ? " outside" : "",
                     (op->y & 0x4000) && (op->y & 0x2000) ? ", cloned" : "",
                     op->x & 0x40 ? ", grown" : "", op->y & 0x1000 ? ", handed over" : "",
                     op->x & 0x80 ? ", sent on channel 0" : "",
                     op->x & 0x100 ? ", receives from channel 1" : "",
                     op->x & 0x200 ? ", in a region" : "",
                     op->x & 0x400 ? ", then (rebuilds) " : "",
                     op->x & 0x400 ? nest_names[(op->x >> 11) & 3] : "",
                     op->x & 0x400 ? " the value made next" : "",
                     (op->x & 0x400) && (op->x & 0x2000) ? " (a build's panic inside)" : "");
        snprintf(buf, len, "shared_new(%s%s, %u bytes of 0x%02x, block of %u + value's chunk%s%s)",
                 op->sel & 1 ? "RT_OWNED" : "RT_COPY", op->sel & 2 ? ", supervised" : "",
                 1 + op->x % 64, op->v, op->y % 4096, build,
                 (op->sel & 2) && (op->y & 0x8000) ? ", the first build panics" : "");
        break;
    }
    case PROP_UPDATE:
    case PROP_UPDATE_ALL: {
        char outside[96] = "", nest[96] = "";
        describe_nest(op, nest, sizeof nest);
        if (op->y & 0x8000) /* y bits 12 to 15: the allocation an outside value */
            snprintf(outside, sizeof outside, " (an outside value%s%s%s)",
                     op->y & 0x2000 ? ", cloned" : "", op->y & 0x4000 ? ", grown to 2n + 1" : "",
                     op->y & 0x1000 ? ", handed over" : "");
        else if (op->y & 0x5000)
            snprintf(outside, sizeof outside, " (a block value%s%s)",
                     op->y & 0x4000 ? ", grown" : "", op->y & 0x1000 ? ", its hand-over refused" : "");
        snprintf(buf, len, "%s(value %u%s, writes 0x%02x, %s%s%u bytes allocated in the door%s%s%s%s%s%s%s)",
                 kind_names[op->kind], op->sel,
                 op->kind == PROP_UPDATE_ALL ? " and another" : "", op->v,
                 (op->y & 4) ? (op->kind == PROP_UPDATE_ALL && (op->y & 0x800)
                                    ? "stores an outside value (into the other, if both own), "
                                    : "stores an outside value, ")
                             : "",
                 op->x % 4096 ? "" : "no allocation: ", op->x % 4096 ? op->x % 4096 - 1 : 0,
                 op->x % 4096 ? outside : "",
                 (op->y & 8) ? (op->x & 0x8000 ? ", unstores one, in a region" : ", unstores one")
                             : (op->x & 0x8000 ? ", in a region" : ""),
                 op->x & 0x4000 ? ", sends its outside value on channel 0" : "",
                 op->x & 0x2000 ? ", receives from channel 1" : "", nest,
                 op->y & 1 ? ", then panics" : "",
                 (op->y & 2) ? ", a rebuild's build panics" : "");
        break;
    }
    case PROP_ACCESS: {
        char nest[96] = "";
        describe_nest(op, nest, sizeof nest);
        snprintf(buf, len, "access(value %u, %s%u bytes allocated in the door%s%s%s%s%s%s)", op->sel,
                 op->x % 4096 ? "" : "no allocation: ", op->x % 4096 ? op->x % 4096 - 1 : 0,
                 op->x % 4096 && (op->y & 0x8000) ? " (an outside value)"
                 : op->x % 4096 && (op->y & 0x4000) ? " (grown)" : "",
                 op->x & 0x8000 ? ", in a region" : "",
                 op->x & 0x4000 ? ", sends its outside value on channel 0" : "",
                 op->x & 0x2000 ? ", receives from channel 1" : "", nest,
                 op->y & 1 ? ", then panics" : "");
        break;
    }
    case PROP_GET:
        snprintf(buf, len, "get(value %u)", op->sel);
        break;
    case PROP_REGION_EDGE: {
        static const char *const edges[PROP_EDGES] = {
            "0 x 0", "1 x 1", "1 x (align - 1)", "align x 1", "1 x (room - 1)", "1 x room",
            "(room + 1) x 1", "(room / align) x align", "(room / align + 1) x align",
            "1 x (SIZE_MAX - k)", "(SIZE_MAX - k) x 1", "2 x (SIZE_MAX / 2 + 1 + k % 1024)",
            "(SIZE_MAX / align + 1) x align", "2 x (SIZE_MAX / 2)", "0 x (SIZE_MAX - k)",
            "(k % (room + 2)) x 1"};
        snprintf(buf, len, "region_edge(region %u from the innermost, %s, k %u, fill 0x%02x)",
                 op->sel, edges[op->x % PROP_EDGES], op->y, op->v);
        break;
    }
    case PROP_SKIP:
        snprintf(buf, len, "skip");
        break;
    default:
        snprintf(buf, len, "slot_%u (free slot, skipped)", op->kind);
        break;
    }
}

void prop_print_snippet(FILE *f, const struct prop_op *ops, size_t n)
{
    char what[320];

    fprintf(f, "static const struct prop_op ops[] = {\n");
    for (size_t i = 0; i < n; i++) {
        prop_describe(&ops[i], what, sizeof what);
        if (ops[i].kind < PROP_KINDS)
            fprintf(f, "    { %s, %u, %u, %u, 0x%02x }, /* %zu: %s */\n", kind_enums[ops[i].kind],
                    ops[i].sel, ops[i].x, ops[i].y, ops[i].v, i, what);
        else
            fprintf(f, "    { %u, %u, %u, %u, 0x%02x }, /* %zu: %s */\n", ops[i].kind, ops[i].sel,
                    ops[i].x, ops[i].y, ops[i].v, i, what);
    }
    fprintf(f, "};\n"
               "struct prop_report rep;\n"
               "ck_assert_msg(prop_run(ops, sizeof ops / sizeof ops[0], &rep) == 0, \"%%s\", rep.msg);\n");
}
