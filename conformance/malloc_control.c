/*
** malloc_control.c: the nested loop on plain malloc/free, the control.
**
** What every region did before the chunk cache (seed 000 §1): malloc 64 KiB
** on the way in, free on the way out. It shows that each measurement the
** runner takes can fail: strace sees glibc give the top of the heap back
** and take it again (the seed measured 80,003 brk calls; glibc 2.36 here
** makes the same), the shim counts every chunk, and it finds every one
** freed dirty, since nothing clears them. Built without the runtime and
** without sanitizers: it measures glibc, not refrt.
**
** build: plain
** expect: exit == 0
** expect: strace.brk >= 40000
** expect: shim.mallocs == 60000
** expect: shim.frees == 60000
** expect: shim.dirty == 60000
*/
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20000
#define CHUNK 65536

/* Writes n bytes and tells the compiler they are read, so the malloc/free
** pair is not deleted as dead. */
static unsigned char *take(size_t n, int fill)
{
    unsigned char *p = malloc(CHUNK);
    if (p == NULL)
        abort();
    memset(p, fill, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
    return p;
}

int main(void)
{
    for (int round = 0; round < ROUNDS; round++) {
        unsigned char *a = take(100, 0xA1);
        unsigned char *b = take(1000, 0xB2);
        unsigned char *c = take(4000, 0xC3);
        free(c);
        free(b);
        free(a);
    }
    return 0;
}
