/*
** afl_main.c: the AFL++ driver of fuzz_ops.c.
**
** Built with afl-clang-fast it runs in persistent mode: the forkserver
** forks once, then the loop takes each test case from shared memory
** (__AFL_FUZZ_TESTCASE_BUF) without a fork, a read or an exec, up to
** 100000 a child. Every run starts from the same state (16 chunks kept,
** every task joined, every value, channel and shared value freed: prop.h),
** so the loop stays stable; prop_prepare() makes that state once, before
** the forkserver starts.
**
** With FUZZ_FORK_MODE (or built without AFL++'s compiler) it reads one test
** case from stdin or from the file named by its argument and exits: the
** same harness in fork mode, for the speed comparison and for afl-tmin.
*/
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX_BYTES (1u << 20)

#if defined(__AFL_FUZZ_TESTCASE_LEN) && !defined(FUZZ_FORK_MODE)

__AFL_FUZZ_INIT();

int main(void)
{
    unsigned char *buf;

    prop_prepare();
    __AFL_INIT();
    buf = __AFL_FUZZ_TESTCASE_BUF; /* after __AFL_INIT, as AFL++ requires */
    while (__AFL_LOOP(100000))
        LLVMFuzzerTestOneInput(buf, (size_t)__AFL_FUZZ_TESTCASE_LEN);
    return 0;
}

#else

int main(int argc, char **argv)
{
    static uint8_t buf[INPUT_MAX_BYTES];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
    size_t n;

    if (f == NULL) {
        perror(argv[1]);
        return 2;
    }
    n = fread(buf, 1, sizeof buf, f);
    if (f != stdin)
        fclose(f);
    return LLVMFuzzerTestOneInput(buf, n);
}

#endif
