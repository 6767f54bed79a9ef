/*
** gcov_flush.c: coverage counts survive an abort or a trap.
**
** A death test's child ends with abort() (a contract violation) or SIGILL
** (a trap), or with _exit(), and gcov writes its counts only at exit():
** the lines the child ran would show as never run. Linked into every
** binary of the coverage build (mk/coverage.mk), this catches those
** signals, dumps the counts, and hands the signal on to whatever handled
** it before (the conformance shim reports on SIGABRT and SIGILL), so the
** process dies of the same signal as without it.
*/
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

void __gcov_dump(void);

static const int sigs[] = {SIGABRT, SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGTRAP};
static struct sigaction before[sizeof sigs / sizeof sigs[0]];

/* A test that caps its address space to make malloc fail (the injection
** tests) leaves gcov no room to write: the soft limit is lifted first. */
static void lift_address_space_cap(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_AS, &r);
    }
}

/* The unit binaries' fault injection (testutil.h): a trap can come before
** the allocation a test armed to fail, and gcov's own malloc would take
** that failure. Weak: most binaries have no injection. */
void fail_nth(unsigned long n) __attribute__((weak));

static volatile sig_atomic_t dumping;

static void dump_and_die(int sig)
{
    /* A fault inside the dump itself (gcov out of memory) must not come
    ** back here: __gcov_dump holds its lock, and waiting on it would hang
    ** the test until its timeout. The second signal dies without counts. */
    if (!dumping) {
        dumping = 1;
        if (fail_nth)
            fail_nth(0);
        lift_address_space_cap();
        __gcov_dump();
    }
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigs[i] == sig)
            sigaction(sig, &before[i], NULL);
    raise(sig);
}

/* A child that ends with _exit() (run_child in testutil.c does, after
** the function under test returned) skips the exit handlers that write
** the counts: the coverage build links with -Wl,--wrap=_exit, so those
** calls come here first. */
_Noreturn void __real__exit(int status);
_Noreturn void __wrap__exit(int status);

void __wrap__exit(int status)
{
    lift_address_space_cap();
    __gcov_dump();
    __real__exit(status);
}

__attribute__((constructor)) static void install(void)
{
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = dump_and_die;
        sigaction(sigs[i], &sa, &before[i]);
    }
}
