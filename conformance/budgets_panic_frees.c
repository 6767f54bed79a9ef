/*
** budgets_panic_frees.c: a panicking task's open regions and outside
** values are freed, seen by the chunk-counting shim (D6, D9).
**
** The task opens two regions (two chunks) and builds three outside values
** of a chunk's size (so the shim counts them too), then panics. The
** regions are closed (cleared and kept), the outside values freed, and the
** kept chunks go with the thread before rt_join returns: nothing of the
** task is live at the join.
**
** expect: exit == 0
** expect: stderr contains refrt: task 1 panicked: on purpose
** expect: prog.status == 1
** expect: shim.mallocs == 5
** expect: shim.frees == 5
** expect: shim.joined == 1
** expect: shim.live_at_join == 0
** expect: shim.main.mallocs == 0
*/
#include <stdio.h>
#include <string.h>

#include "refrt.h"

static void *panics_holding_things(void *unused)
{
    rt_region a, b;
    (void)unused;
    for (int i = 0; i < 3; i++)
        memset(rt_alloc_outside(RT_CHUNK_SIZE), 0, 64);
    rt_region_open(&a);
    rt_region_open(&b);
    rt_region_alloc(&a, 1, 3000, 0x77);
    rt_region_alloc(&b, 1, 5000, 0x66);
    rt_alloc(1000);
    rt_panic("on purpose");
}

int main(void)
{
    rt_set_strategy(rt_fixed_strategy(262144 * 2));
    rt_init();
    printf("observe status %d\n", (int)rt_join(rt_spawn(panics_holding_things, NULL), NULL));
    return 0;
}
