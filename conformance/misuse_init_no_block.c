/*
** misuse_init_no_block.c: rt_init cannot make main's block.
**
** A strategy set before rt_init that asks for more than any block can be
** (SIZE_MAX bytes) leaves main without a block: rt_init reports it as a
** contract violation, "refrt: rt_init: ...", then aborts (docs/misuse.md).
** The block is refused by its size, before malloc is asked, so the
** program runs the same under every sanitizer.
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_init: no memory for main's block
*/
#include <stdint.h>
#include <stdio.h>

#include "refrt.h"

int main(void)
{
    rt_set_strategy(rt_fixed_strategy(SIZE_MAX));
    rt_init();
    printf("observe after_violation 1\n");
    return 0;
}
