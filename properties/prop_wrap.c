/*
** prop_wrap.c: lets the interpreter see every free, for drivers linked
** with -Wl,--wrap=free (the property tests, the replay): the thread
** operation then checks that a thread's chunks were freed, cleared, when
** it ended (prop.h, prop_note_free).
*/
#include "prop.h"

void __real_free(void *p);
void __wrap_free(void *p);

void __wrap_free(void *p)
{
    if (p != NULL)
        prop_note_free(p);
    __real_free(p);
}

__attribute__((constructor)) static void sees_frees(void)
{
    prop_sees_frees = 1;
}
