/*
** budgets_hand_over.c: D8 in C. A value built outside the block is handed
** to a foreign owner at the address it was built at, stops counting
** against the task, and the owner's free() releases it. A block value is
** refused: NULL, errno EINVAL, nothing changed, and the message names the
** explicit copy, rt_clone_outside, which the program then writes.
**
** expect: exit == 0
** expect: stderr contains refrt: rt_hand_over:
** expect: stderr contains rt_clone_outside
** expect: prog.same_address == 1
** expect: prog.held_while_built == 300
** expect: prog.held_after_hand_over == 0
** expect: prog.refused == 1
** expect: prog.einval == 1
** expect: prog.block_value_intact == 1
** expect: prog.copy_is_new == 1
** expect: prog.copy_handed_over == 1
** expect: prog.held_end == 0
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

/* A foreign owner: takes the pointer and frees it with free(). */
static void *owned;
static void foreign_take(void *p)
{
    owned = p;
}

int main(void)
{
    rt_set_strategy(rt_fixed_strategy(65536));
    rt_init();

    char *built = rt_alloc_outside(300);
    strcpy(built, "built outside the block");
    printf("observe held_while_built %zu\n", rt_held());
    foreign_take(rt_hand_over(built));
    printf("observe same_address %d\n", owned == built);
    printf("observe held_after_hand_over %zu\n", rt_held());
    free(owned);

    char *in_block = rt_alloc(40);
    strcpy(in_block, "in the block");
    size_t before = rt_held();
    errno = 0;
    void *r = rt_hand_over(in_block);
    printf("observe refused %d\n", r == NULL && rt_held() == before);
    printf("observe einval %d\n", errno == EINVAL);
    printf("observe block_value_intact %d\n", strcmp(in_block, "in the block") == 0);
    char *copy = rt_clone_outside(in_block, 40);
    printf("observe copy_is_new %d\n", copy != in_block && strcmp(copy, in_block) == 0);
    foreign_take(rt_hand_over(copy));
    printf("observe copy_handed_over %d\n", owned == copy);
    free(owned);
    rt_free(in_block);
    printf("observe held_end %zu\n", rt_held());
    return 0;
}
