/*
** fuzz_ops.c: the fuzz target. The input is a sequence of operations
** (properties/prop.h); every result is checked against the model, and a
** failed check aborts with its report, so libFuzzer and AFL++ both see it
** as a crash. Built for libFuzzer as is, and for AFL++ with afl_main.c.
*/
#include <stdio.h>
#include <stdlib.h>

#include "prop.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    prop_prepare();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct prop_report rep;

    if (prop_run_bytes(data, size, &rep) != 0) {
        fprintf(stderr, "refrt fuzz: %s\n", rep.msg);
        abort();
    }
    return 0;
}
