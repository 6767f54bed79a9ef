/*
** prop.h: one operation interpreter and one reference model for the
** runtime's allocator API, shared by three drivers: the Check property
** tests (check_properties.c), libFuzzer and AFL++ (fuzz/).
**
** An input is a string of 7-byte records: a kind byte, then the arguments
** sel (1 byte), x and y (2 bytes each, little-endian) and v (1 byte). A
** short last record reads its missing bytes as zero. Decoding is total:
** every byte string is a sequence of operations, and the interpreter skips
** an operation whose preconditions do not hold (a close with no region
** open, an allocation that would not fit), so it never asks the runtime to
** trap or abort. All-zero bytes decode to the simplest sequence: regions
** opened one inside the other.
**
** The kind byte is taken modulo PROP_SLOTS; slots with no operation yet are
** skipped, so an input keeps its meaning when operations are added in the
** free slots. An operation that
** makes a thread (a thread, a spawn) answers to its own byte only, not to its aliases modulo
** PROP_SLOTS (those decode to PROP_SKIP): a thread costs more than all the
** rest of a typical input, and a fuzzer should spend most of its time on
** the allocator, not in clone().
**
** The model knows, for every chunk the interpreter can see, which of its
** bytes have a known value and what it is, the LIFO stack of chunks the
** thread keeps, and each region's bump; for main's task and the spawned
** one, every value they hold, its bytes, and what they hold in all; each
** channel's queue; each shared value's bytes and whether it is poisoned
** (prop_task.c). Every result is checked against
** it; the first difference stops the run with a report that names the
** operation, what the model expected and what the runtime did.
*/
#ifndef REFRT_PROP_H
#define REFRT_PROP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROP_RECORD 7   /* bytes an operation takes in an input */
#define PROP_SLOTS 32   /* kind bytes are read modulo this */

/* The contract's numbers, written out rather than taken from refrt.h, so a
** header that states them wrongly is caught, not copied. */
#define PROP_CHUNK_SIZE 65536u
#define PROP_SLOTS_KEPT 16u

/* Bounds of what one run may hold, past the 16 the cache keeps. */
#define PROP_MAX_DEPTH 40 /* regions open at once */
#define PROP_MAX_RAW 24   /* chunks taken with rt_chunk_take and not given */

enum prop_kind {
    PROP_REGION_OPEN = 0,  /* opens a region inside the innermost one */
    PROP_REGION_ALLOC = 1, /* sel: region (0 innermost), y x x bytes of fill v */
    PROP_REGION_CLOSE = 2, /* closes the innermost region */
    PROP_REGION_CHECK = 3, /* sel: region; reads its whole chunk back */
    PROP_CHUNK_TAKE = 4,   /* rt_chunk_take */
    PROP_CHUNK_FILL = 5,   /* sel: taken chunk; bytes [x, x + y) set to v */
    PROP_CHUNK_GIVE = 6,   /* sel: taken chunk; rt_chunk_give(base, base + min(x + y, 64 KiB)) */
    PROP_CHUNK_CHECK = 7,  /* sel: taken chunk; reads it back */
    PROP_THREAD = 8,       /* a thread takes 1 + sel % 20 chunks, fills x bytes of
                              each with v, gives them back and ends; joined */
    /* The task operations act on the current task: the spawned one while
    ** it runs, else main's (prop_task.c). */
    PROP_ALLOC = 9,        /* rt_alloc of x bytes (sel 0x40: what is left, 0x80: one
                              byte more than the budget takes), filled with v */
    PROP_REALLOC = 10,     /* sel: block value; rt_realloc to x bytes, refilled with v */
    PROP_FREE = 11,        /* sel: value (even: a block one, odd: an outside one) */
    PROP_OUTSIDE = 12,     /* rt_alloc_outside of x bytes (sel 0x80: one more than the
                              budget takes), filled with v */
    PROP_CLONE = 13,       /* sel: value (as PROP_FREE); rt_clone_outside of its bytes */
    PROP_HAND_OVER = 14,   /* sel: outside value (0x80: a block value, refused) */
    PROP_SPAWN = 15,       /* a task with a block of 512 * (1 + x % 128) bytes (sel
                              odd: the default strategy's, on machine x % 7) */
    PROP_JOIN = 16,        /* the task returns outside value sel / 2 if sel is odd,
                              else NULL; rt_join */
    PROP_PANIC = 17,       /* the task panics (sel odd: in a region of x bytes of v) */
    PROP_SEND = 18,        /* sel: outside value (0x80: a block value, refused);
                              channel y % 2 */
    PROP_RECV = 19,        /* channel y % 2 */
    PROP_CLOSE = 20,       /* rt_chan_close of channel y % 2 */
    PROP_SHARED = 21,      /* a shared value: sel bit 0 RT_OWNED, bit 1 supervised;
                              1 + x % 64 bytes of v, a block of its chunk + y % 4096;
                              build allocates 24 * (sel >> 2) bytes (y bit 14: an
                              outside value, bit 13: cloned; x bit 6: grown; y bit
                              12: handed over; x bit 7: sent), receives (x bit 8),
                              works in a region (x bit 9), and in a rebuild opens a
                              door of kind x bits 11, 12 on the value made next (x
                              bit 10; bit 13: its panic inside); y bit 15: the
                              first build panics (the spawned task) */
    PROP_UPDATE = 22,      /* sel: value; fn writes v, stores outside value y >> 4
                              (y bit 2, RT_OWNED), allocates x % 4096 - 1 bytes
                              (none if 0) and frees them, unstores stored value
                              y >> 4 (y bit 3); y bit 0: then panics, bit 1: a
                              rebuild's build panics; y bits 12 to 15: the door's
                              allocation an outside value (cloned, grown, handed
                              over; without bit 15, bit 14 a block value grown);
                              x bits 12 to 15: fn opens a door (y bits 8, 9: get,
                              access, update, update_all; y bit 7: the panic inside
                              it) on the value made next, receives, sends, works in
                              a region (docs/fuzzing.md) */
    PROP_UPDATE_ALL = 23,  /* sel and sel / 4: values; as PROP_UPDATE, b gets ~v */
    PROP_ACCESS = 24,      /* sel: value; reads it, allocates x % 4096 - 1 bytes and
                              more as PROP_UPDATE (y bit 0: then panics) */
    PROP_GET = 25,         /* sel: value; rt_get */
    PROP_REGION_EDGE = 26, /* sel: region; a count and a size at a boundary of its
                              state: x % PROP_EDGES which, y a distance (prop_run.c) */
    PROP_KINDS,            /* slots PROP_KINDS to PROP_SLOTS - 1 are free */
    PROP_SKIP = 255        /* an alias of a thread's or a spawn's byte: does nothing */
};

struct prop_op {
    uint8_t kind;
    uint8_t sel;
    uint16_t x;
    uint16_t y;
    uint8_t v;
};

/* What a failed check says: the operation (its index in the run, or the
** teardown after the last one) and the difference. */
struct prop_report {
    int failed;
    size_t op;        /* index of the operation that failed */
    char msg[512];
};

/* ---- decoding (prop_codec.c) ---------------------------------------------- */

/* The operation in the record at data[0..size): missing bytes read as 0. */
struct prop_op prop_decode_one(const uint8_t *data, size_t size);
/* Decodes up to max operations; returns how many the input holds. */
size_t prop_decode(const uint8_t *data, size_t size, struct prop_op *ops, size_t max);
/* The exact input that decodes to ops: n * PROP_RECORD bytes. */
size_t prop_encode(const struct prop_op *ops, size_t n, uint8_t *out);
/* A short description, e.g. "region_alloc(r1, 3 x 16, fill 0xa5)". */
void prop_describe(const struct prop_op *op, char *buf, size_t len);
/* Prints ops as a C array and the call that replays them. */
void prop_print_snippet(FILE *f, const struct prop_op *ops, size_t n);

/* ---- running (prop_run.c) ----------------------------------------------- */

/* Runs ops against the runtime on the calling thread, checking each result
** against the model, then tears down through checked operations (closes
** every region, gives every chunk back, reads every chunk kept). Every run
** starts with 16 chunks kept, known to the model by address and order
** only, and a correct runtime ends it so: runs do not depend on each
** other. Returns 0 when every check held, else 1 with rep filled. */
int prop_run(const struct prop_op *ops, size_t n, struct prop_report *rep);
/* The same for an undecoded input. */
int prop_run_bytes(const uint8_t *data, size_t size, struct prop_report *rep);

/* Does once what the first run would: rt_init, 16 chunks in the calling
** thread's cache, and (glibc) a trim threshold so that the chunks a deep
** run mallocs and frees do not hand the heap back to the kernel each time.
** A fuzzer calls it before its forkserver starts, so that no input pays
** for it. prop_run calls it when nobody has. */
void prop_prepare(void);

/* If set, prop_run stores the index of the operation it is about to run
** here, so a driver that watches a child can name the operation a crash
** happened in. */
extern volatile size_t *prop_progress;

/* A driver that sees every free (a -Wl,--wrap=free wrapper, prop_wrap.c)
** sets prop_sees_frees and calls prop_note_free(p) before each free: then
** the thread operation also checks that every chunk a thread used was
** freed, cleared, by the time it was joined. Without it, that check is
** LeakSanitizer's (the libFuzzer build). */
extern int prop_sees_frees;
void prop_note_free(void *p);

/* The physical memory, in pages, that sysconf(_SC_PHYS_PAGES) answers
** while a default-strategy spawn sizes its block; 0 is the real machine's
** answer, -1 a sysconf that fails. Only drivers linked with prop_machine.c
** and -Wl,--wrap=sysconf see it (all of this tree's do). */
extern long prop_machine_pages;

/* How many boundaries PROP_REGION_EDGE draws from. */
#define PROP_EDGES 16

/* If set, a PROP_REGION_EDGE whose call must trap is made with a SIGILL
** handler installed around it, which must run; else it is skipped. The
** Check driver sets it; the fuzzers leave it unset, so that their own
** handlers see every signal. */
extern int prop_checks_traps;

/* If set, called after each operation with its index: a test of the
** oracle itself uses it to break the runtime's memory behind its back. */
extern void (*prop_after_step)(size_t index);

/* ---- generating and shrinking (prop_gen.c) ------------------------------ */

/* What a generated sequence leans towards. */
enum prop_profile {
    PROP_MIXED,    /* every operation */
    PROP_FILLS,    /* regions at several depths, many allocations and reads */
    PROP_REUSE,    /* open, fill, close, again: chunks come back */
    PROP_DEEP,     /* nesting and takes past the 16 the cache keeps */
    PROP_HELD,     /* allocations, reallocations, frees, outside values, near budgets */
    PROP_PANICS,   /* tasks that hold things and panic */
    PROP_CHANNELS, /* values sent and received between main and a task */
    PROP_DOORS,    /* shared values, doors with and without panics */
    PROP_BUILDS,   /* supervised values poisoned, rebuilt, their builds at work */
    PROP_PROFILES
};
extern const char *const prop_profile_names[PROP_PROFILES];

/* A sequence of at most max operations from seed; returns its length.
** The same seed and profile always give the same sequence. The drivers
** name a sequence by one number, PROP_SEED(profile, n), whose top byte is
** the profile. */
#define PROP_SEED(profile, n) ((uint64_t)(profile) << 56 | (uint64_t)(n))
#define PROP_SEED_PROFILE(seed) ((enum prop_profile)(((seed) >> 56) % PROP_PROFILES))
size_t prop_generate(uint64_t seed, enum prop_profile profile, struct prop_op *ops, size_t max);

/* Whether ops still fail, for the shrinker. */
typedef int (*prop_fails_fn)(const struct prop_op *ops, size_t n, void *ctx);

/* Shrinks a failing sequence in place: drops operations (halves, then
** quarters, ... then one at a time), then moves each argument towards zero,
** keeping every change after which fails() still holds. At most budget
** calls to fails(). Returns the new length. */
size_t prop_shrink(struct prop_op *ops, size_t n, prop_fails_fn fails, void *ctx,
                   unsigned budget);

#endif
