/*
** prop_machine.c: the machine the interpreter's default-strategy tasks run
** on, for drivers linked with -Wl,--wrap=sysconf (every driver of the
** interpreter: the property tests, the replay, libFuzzer, AFL++).
**
** The default strategy sizes a block from sysconf(_SC_PHYS_PAGES)
** (docs/budgets.md). On the real machine that is 1/128 of its memory for
** a task spawned beside main: 192 MiB on 24 GiB. glibc maps such a block
** and never touches it, but ASan poisons its shadow when it is mapped and
** again when it is freed, 24 MiB of memset each way, which made a
** default spawn cost the fuzzer 25 times an ordinary input. So the spawn
** operation picks a machine (prop_machine_pages, prop.h): sizes at which
** the formula's rounding and its 64 KiB floor show, and one whose sysconf
** fails. The runtime and the model both read the same answer, through
** this wrapper. 0 is the real machine.
*/
#include <unistd.h>

#include "prop.h"

long __real_sysconf(int name);
long __wrap_sysconf(int name);

long __wrap_sysconf(int name)
{
    long pages = __atomic_load_n(&prop_machine_pages, __ATOMIC_RELAXED);

    if (name == _SC_PHYS_PAGES && pages != 0)
        return pages;
    return __real_sysconf(name);
}
