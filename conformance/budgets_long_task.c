/*
** budgets_long_task.c: a long task that allocates and frees a kilobyte a
** thousand times under a 64 KiB budget does not panic (seed 002 step 9,
** D10: a budget counts what is held, not what was allocated).
**
** expect: exit == 0
** expect: prog.status == 0
** expect: prog.rounds == 1000
** expect: prog.held_in_task_end == 0
** expect: prog.main_held == 0
*/
#include <stdio.h>
#include <string.h>

#include "refrt.h"

static size_t held_at_end;
static unsigned rounds;

static void *connection_loop(void *unused)
{
    (void)unused;
    for (unsigned i = 0; i < 1000; i++) {
        unsigned char *kib = rt_alloc(1024);
        memset(kib, (int)i, 1024);
        char *line = rt_realloc(rt_alloc(16), 100 + i % 800);
        memset(line, 'l', 100);
        rt_free(line);
        rt_free(kib);
        rounds++;
    }
    held_at_end = rt_held();
    return NULL;
}

int main(void)
{
    rt_set_strategy(rt_fixed_strategy(65536));
    rt_init();
    rt_status s = rt_join(rt_spawn(connection_loop, NULL), NULL);
    printf("observe status %d\n", (int)s);
    printf("observe rounds %u\n", rounds);
    printf("observe held_in_task_end %zu\n", held_at_end);
    printf("observe main_held %zu\n", rt_held());
    return 0;
}
