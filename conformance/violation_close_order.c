/*
** violation_close_order.c: the contract's error shape, seen from outside.
**
** Closing a region that is not the thread's innermost open one is a
** contract violation: "refrt: rt_region_close: ..." on stderr, then abort.
** The two chunks were taken and none was freed when it died.
**
** expect: signal == SIGABRT
** expect: stderr contains refrt: rt_region_close:
** expect: stderr contains is not this thread's innermost open region
** expect: shim.mallocs == 2
** expect: shim.frees == 0
*/
#include "refrt.h"

int main(void)
{
    rt_region outer, inner;

    rt_init();
    rt_region_open(&outer);
    rt_region_open(&inner);
    rt_region_close(&outer);
    return 0; /* not reached */
}
