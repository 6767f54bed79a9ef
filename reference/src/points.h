/*
** points.h: named points in the runtime's critical windows, for tests.
**
** RT_POINT("chan.send.before_enqueue") marks a place where the outcome
** depends on what another thread does at that instant: a window that only
** a race would otherwise show. In a test build (RT_TESTING, every build
** but RELEASE=1) a point calls the hook a test installed, with the point's
** name, on the thread that reached it; the hook may record the passage,
** or park the thread until the test has driven another thread through a
** chosen path (reference/tests/check_interleave.c, docs/conventions.md:
** "Forced interleavings"). In a release build a point is nothing at all.
**
** A point adds no synchronisation of its own: with no hook installed it
** is one relaxed load, which makes no happens-before edge, so a test run
** under SANITIZE=thread judges the runtime's own memory orders, not the
** point's. What a hook adds (a mutex, a condition) is the test's choice.
**
** Names are "<file>.<function or window>.<where>"; each is used once in
** the runtime and by at least one test (a point no test uses is a window
** no test forces).
*/
#ifndef REFRT_POINTS_H
#define REFRT_POINTS_H

#if defined(RT_TESTING) && RT_TESTING

/* The hook: NULL outside the tests. Set it with __atomic_store_n(...,
** __ATOMIC_RELAXED) before the threads it concerns start, or while they
** are parked; it may run on any thread, several at once. */
typedef void (*rt__point_fn)(const char *name);
extern rt__point_fn rt__point_hook;

static inline void rt__point(const char *name)
{
    rt__point_fn f = __atomic_load_n(&rt__point_hook, __ATOMIC_RELAXED);
    if (RT_UNLIKELY(f != NULL))
        f(name);
}

#define RT_POINT(name) rt__point(name)

#else

#define RT_POINT(name) ((void)0)

#endif

#endif /* REFRT_POINTS_H */
