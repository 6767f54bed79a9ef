/*
** block.c: the block a task (or a shared value) allocates from (D5, D10).
**
** One malloc per block: the struct, then an arena of exactly `size` bytes.
** The arena is carved into chunks by a bump pointer. A chunk is an 8-byte
** header and its payload; chunk sizes are multiples of 16 and the arena
** starts 8 bytes past a 16-byte boundary, so every payload is aligned to
** alignof(max_align_t) while a header costs only 8 bytes.
**
** Freed chunks are allocated again (D10): chunks up to SMALL_MAX bytes go
** to a free list per size class (16, 32, ..., 1024), larger ones to one
** first-fit list that splits; a chunk freed right below the bump pointer
** gives its bytes back to the bump. When the bump and the lists cannot
** serve a request, adjacent freed chunks are coalesced (one walk over the
** arena) before the block is called full, so sizes that drift do not
** strand the budget in lists of the wrong size. What is held is the chunk
** bytes live plus what the owner charged for values held outside the
** block; the block keeps `room`, its size minus what is held, so the budget
** check is one compare. A full block returns NULL: the
** caller decides whether that panics a task or poisons a value.
**
** The header is the chunk's size in 16-byte granules (high 32 bits) and a
** check word (low 32 bits) made from the payload's address, the block's
** cookie and the chunk's state. rt__block_free and rt__block_realloc read
** it only after checking the pointer lies inside the arena, so a pointer
** the block does not hold is reported, never followed.
*/
#include "internal.h"

#include <stdalign.h>

#include "costs.h"

#define GRANULE 16u
#define HEADER 8u
#define SMALL_MAX 1024u
#define SMALL_CLASSES (SMALL_MAX / GRANULE)
/* The largest block: a chunk as big as the whole arena is 2^32 - 1 granules,
** the most the header's 32 bits of size can say (2^32 would read as 0). */
#define MAX_BLOCK (((size_t)1 << 36) - GRANULE)
#define LIVE 0u
#define FREED 0xA5A5A5A5u

struct rt_block {
    unsigned char *bump; /* the next chunk's header; [arena, bump) was carved */
    unsigned char *end;  /* arena + size */
    size_t room;         /* size - held; held: live chunks plus charged outside bytes */
    size_t size;         /* the budget: the arena's bytes, a multiple of 16 */
    uint32_t cookie;
    unsigned char *arena;
    unsigned char *large;                /* freed chunks > SMALL_MAX, first fit */
    unsigned char *small[SMALL_CLASSES]; /* freed chunks of 16 * (i + 1) bytes */
};

RT_COST_SIZEOF(block, struct rt_block);

/* ---- chunks ------------------------------------------------------------ */

static inline uint32_t check_word(const struct rt_block *b, const unsigned char *chunk,
                                  uint32_t state)
{
    return (uint32_t)((uintptr_t)chunk >> 3) ^ b->cookie ^ state;
}

static inline void set_header(const struct rt_block *b, unsigned char *chunk, size_t bytes,
                              uint32_t state)
{
    uint64_t h = (uint64_t)(bytes / GRANULE) << 32 | check_word(b, chunk, state);
    memcpy(chunk, &h, sizeof h);
}

static inline uint64_t header_of(const unsigned char *chunk)
{
    uint64_t h;
    memcpy(&h, chunk, sizeof h);
    return h;
}

static inline size_t chunk_bytes(uint64_t h)
{
    return (size_t)(h >> 32) * GRANULE;
}

/* The next pointer of a freed chunk lives in its payload. */
static inline unsigned char *next_of(const unsigned char *chunk)
{
    unsigned char *n;
    memcpy(&n, chunk + HEADER, sizeof n);
    return n;
}

static inline void set_next(unsigned char *chunk, unsigned char *n)
{
    memcpy(chunk + HEADER, &n, sizeof n);
}

/* The chunk that holds n bytes of payload; n at most the block's size
** (itself at most MAX_BLOCK), so the sum cannot wrap. */
static inline size_t chunk_for(size_t n)
{
    return (n + HEADER + GRANULE - 1) & ~(size_t)(GRANULE - 1);
}

/* The live chunk whose payload is p, or NULL if p is not one. Reads a
** header only inside [arena, bump), so it never faults. */
static unsigned char *live_chunk(const struct rt_block *b, const void *p)
{
    const unsigned char *q = p;
    unsigned char *chunk;
    uint64_t h;
    size_t bytes;

    if (q < b->arena + HEADER || q >= b->bump)
        return NULL;
    if ((size_t)(q - b->arena - HEADER) % GRANULE != 0)
        return NULL;
    chunk = (unsigned char *)q - HEADER;
    h = header_of(chunk);
    bytes = chunk_bytes(h);
    if ((uint32_t)h != check_word(b, chunk, LIVE) || bytes == 0 ||
        bytes > (size_t)(b->bump - chunk))
        return NULL;
    return chunk;
}

/* ---- making and deleting ----------------------------------------------- */

/* Blocks made and not yet deleted, for tests that prove none leaks. */
static size_t blocks_live;

size_t rt__blocks_live(void)
{
    return __atomic_load_n(&blocks_live, __ATOMIC_RELAXED);
}

/* Moved once for every block made, by any thread: the part of the cookie
** that differs between blocks made one after another at one address. */
static uint32_t made;

#if RT_TESTING
/* Where it is, for the test that stops a thread at its update
** (check_interleave.c, with a hardware watchpoint). */
uint32_t *const rt__block_made = &made;
#endif

struct rt_block *rt__block_new(size_t bytes)
{
    size_t size = bytes & ~(size_t)(GRANULE - 1);
    size_t head = (sizeof(struct rt_block) + GRANULE - 1) & ~(size_t)(GRANULE - 1);
    struct rt_block *b;

    if (size > MAX_BLOCK)
        return NULL;
    /* head + HEADER puts the arena 8 bytes past a 16-byte boundary, so
    ** payloads are 16-aligned; malloc's own alignment is 16 on x86-64. */
    _Static_assert(alignof(max_align_t) <= GRANULE, "payloads must be max_align_t aligned");
    b = malloc(head + HEADER + size);
    if (b == NULL)
        return NULL;
    RT_COST_BYTES(RT_COST_BYTES_BLOCK, b);
    memset(b, 0, sizeof *b);
    b->arena = (unsigned char *)b + head + HEADER;
    b->bump = b->arena;
    b->end = b->arena + size;
    b->size = size;
    b->room = size;
    __atomic_add_fetch(&blocks_live, 1, __ATOMIC_RELAXED);
    /* Different for every block, so a header copied from another block
    ** (or a stale pointer into a deleted one) does not check. */
    b->cookie = (uint32_t)((uintptr_t)b >> 4) * 0x9E3779B1u ^ __atomic_add_fetch(&made, 0x6A09E667u, __ATOMIC_RELAXED);
    return b;
}

void rt__block_delete(struct rt_block *b)
{
    __atomic_sub_fetch(&blocks_live, 1, __ATOMIC_RELAXED);
    free(b);
}

size_t rt__block_size(const struct rt_block *b)
{
    return b->size;
}

size_t rt__block_held(const struct rt_block *b)
{
    return b->size - b->room;
}

bool rt__block_owns(const struct rt_block *b, const void *p)
{
    const unsigned char *q = p;
    return q >= b->arena && q < b->end;
}

bool rt__block_charge(struct rt_block *b, size_t bytes)
{
    if (bytes > b->room)
        return false;
    b->room -= bytes;
    return true;
}

void rt__block_uncharge(struct rt_block *b, size_t bytes)
{
    b->room += bytes;
}

/* ---- allocating -------------------------------------------------------- */

/* Puts a freed chunk on the list of its size. */
static void push_freed(struct rt_block *b, unsigned char *chunk, size_t bytes)
{
    unsigned char **list = bytes <= SMALL_MAX ? &b->small[bytes / GRANULE - 1] : &b->large;
    set_header(b, chunk, bytes, FREED);
    set_next(chunk, *list);
    *list = chunk;
}

/* Takes the freed chunk at *link for `bytes`, splitting off the rest (sizes
** are multiples of 16, so any rest can stand as a freed chunk). */
static unsigned char *take(struct rt_block *b, unsigned char **link, size_t bytes)
{
    unsigned char *c = *link;
    size_t have = chunk_bytes(header_of(c));

    *link = next_of(c);
    if (have > bytes)
        push_freed(b, c + bytes, have - bytes);
    return c;
}

/* Merges every run of adjacent freed chunks into one and rebuilds the free
** lists; a run that ends at the bump goes back to the bump. The arena is
** carved without gaps, so walking the headers from its start visits every
** chunk. Linear in the chunks: run only when an allocation finds no room. */
static RT_COLD void coalesce(struct rt_block *b)
{
    unsigned char *c = b->arena, *run = NULL;
    size_t run_bytes = 0;

    RT_COST(RT_COST_COALESCES, 1);
    memset(b->small, 0, sizeof b->small);
    b->large = NULL;
    while (c < b->bump) {
        uint64_t h = header_of(c);
        size_t bytes = chunk_bytes(h);
        RT_COST(RT_COST_COALESCE_CHUNKS, 1);
        if ((uint32_t)h == check_word(b, c, FREED)) {
            if (run == NULL)
                run = c, run_bytes = 0;
            run_bytes += bytes;
        } else if (run != NULL) {
            push_freed(b, run, run_bytes);
            run = NULL;
        }
        c += bytes;
    }
    if (run != NULL)
        b->bump = run;
}

/* The bump cannot serve this size, or the size is large: a freed large
** chunk (first fit), else the bump, else a freed chunk of a bigger small
** class; failing all three, the freed chunks are coalesced and all three
** tried again, with the size's own class too. Returns a chunk of exactly
** `bytes`, or NULL: the block is full. */
static RT_COLD unsigned char *alloc_slow(struct rt_block *b, size_t bytes)
{
    unsigned char *c;

    for (int pass = 0; pass < 2; pass++) {
        for (unsigned char **link = &b->large; *link != NULL;
             link = (unsigned char **)(*link + HEADER)) {
            RT_COST(RT_COST_FREE_STEPS, 1);
            if (chunk_bytes(header_of(*link)) >= bytes)
                return take(b, link, bytes);
        }
        if ((size_t)(b->end - b->bump) >= bytes) {
            c = b->bump;
            b->bump += bytes;
            return c;
        }
        /* the first time, the bigger classes (the fast path found its own
        ** empty); after the coalesce its own as well, where a run merged to
        ** exactly this size went */
        for (size_t i = bytes / GRANULE - (size_t)pass; bytes <= SMALL_MAX && i < SMALL_CLASSES;
             i++) {
            RT_COST(RT_COST_FREE_STEPS, 1);
            if (b->small[i] != NULL)
                return take(b, &b->small[i], bytes);
        }
        if (pass == 0)
            coalesce(b);
    }
    return NULL;
}

void *rt__block_alloc(struct rt_block *b, size_t n)
{
    size_t bytes;
    unsigned char *c;

    RT_COST(RT_COST_BLOCK_ALLOCS, 1);
    if (RT_UNLIKELY(n > b->size))
        return NULL; /* also keeps chunk_for from wrapping */
    bytes = chunk_for(n);
    if (RT_UNLIKELY(bytes > b->room))
        return NULL; /* over budget */
    if (RT_LIKELY(bytes <= SMALL_MAX)) {
        unsigned char **list = &b->small[bytes / GRANULE - 1];
        RT_COST(RT_COST_FREE_STEPS, 1);
        if ((c = *list) != NULL) {
            *list = next_of(c);
            goto got;
        }
        if (RT_LIKELY((size_t)(b->end - b->bump) >= bytes)) {
            c = b->bump;
            b->bump += bytes;
            goto got;
        }
    }
    c = alloc_slow(b, bytes);
    if (c == NULL)
        return NULL;
got:
    set_header(b, c, bytes, LIVE);
    b->room -= bytes;
    return c + HEADER;
}

/* ---- freeing ----------------------------------------------------------- */

static void release(struct rt_block *b, unsigned char *chunk, size_t bytes)
{
    b->room += bytes;
    if (chunk + bytes == b->bump) {
        b->bump = chunk; /* the top goes back to the bump */
        set_header(b, chunk, bytes, FREED);
        return;
    }
    push_freed(b, chunk, bytes);
}

bool rt__block_free(struct rt_block *b, void *p)
{
    unsigned char *chunk = live_chunk(b, p);

    if (chunk == NULL)
        return false;
    release(b, chunk, chunk_bytes(header_of(chunk)));
    return true;
}

size_t rt__block_chunk(const struct rt_block *b, const void *p)
{
    unsigned char *chunk = live_chunk(b, p);
    return chunk != NULL ? chunk_bytes(header_of(chunk)) : 0;
}

void *rt__block_realloc(struct rt_block *b, void *p, size_t n, bool *held)
{
    unsigned char *chunk = live_chunk(b, p), *q;
    size_t have, want;

    *held = chunk != NULL;
    if (chunk == NULL || n > b->size)
        return NULL;
    have = chunk_bytes(header_of(chunk));
    want = chunk_for(n);
    if (want <= have)
        return p; /* it fits where it is; the chunk keeps its size */
    if (chunk + have == b->bump && want - have <= b->room &&
        want - have <= (size_t)(b->end - b->bump)) {
        b->bump += want - have; /* the top chunk grows in place */
        b->room -= want - have;
        set_header(b, chunk, want, LIVE);
        return p;
    }
    q = rt__block_alloc(b, n);
    if (q == NULL)
        return NULL;
    RT_COST_COPY(RT_COST_BLOCK_COPIED, q, p, have - HEADER);
    release(b, chunk, have);
    return q;
}
