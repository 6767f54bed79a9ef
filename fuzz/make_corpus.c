/*
** make_corpus.c: writes the seed corpus: one input a generated sequence
** (each profile, a few seeds), encoded exactly as the fuzzers read it.
** Run by `make fuzz-corpus`; the files are kept in fuzz/corpus/.
**
**   make_corpus DIR COUNT   COUNT sequences a profile
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "prop.h"

#define MAX_OPS 512

int main(int argc, char **argv)
{
    static struct prop_op ops[MAX_OPS];
    static uint8_t bytes[MAX_OPS * PROP_RECORD];
    unsigned count = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 8;

    if (argc < 2) {
        fprintf(stderr, "usage: make_corpus DIR [COUNT]\n");
        return 2;
    }
    for (int p = 0; p < PROP_PROFILES; p++)
        for (unsigned i = 1; i <= count; i++) {
            uint64_t seed = PROP_SEED(p, i);
            size_t n = prop_generate(seed, (enum prop_profile)p, ops, MAX_OPS);
            char path[4096];
            FILE *f;
            snprintf(path, sizeof path, "%s/%s-%02u", argv[1], prop_profile_names[p], i);
            f = fopen(path, "wb");
            if (f == NULL) {
                perror(path);
                return 1;
            }
            fwrite(bytes, 1, prop_encode(ops, n, bytes), f);
            fclose(f);
        }
    return 0;
}
