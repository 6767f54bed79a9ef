/*
** budgets_main_panics.c: a panic in main's task exits the process with
** status 101 after the contract's message (D6), closing the region main
** left open first.
**
** expect: exit == 101
** expect: stderr contains refrt: task 0 panicked: out of patience
** expect: shim.mallocs == 1
*/
#include "refrt.h"

int main(void)
{
    rt_region r;

    rt_init();
    rt_region_open(&r);
    rt_region_alloc(&r, 10, 10, 7);
    rt_panic("out of patience");
}
